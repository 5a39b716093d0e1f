"""The kernel cache: compiled libraries kept in memory and on disk.

A library is keyed by a SHA-256 digest of its primitive functions' text, the target and
the relay and TVM versions (:func:`relay.backend.compiler.library_key`). Lookups try the
process's memory first, then the disk; a miss compiles, and the result is stored in both.

On disk (``$RELAY_CACHE_DIR``, else ``$XDG_CACHE_HOME/relay/kernels``, else
``~/.cache/relay/kernels``, created with mode 0700), an entry is two files:

* ``<key>-<sha>.so``: the shared library, named by its own content digest;
* ``<key>.json``: the entry's metadata: the library's file name, byte size and SHA-256,
  and the kernels' symbols and argument types;

and a whole program built by :func:`relay.build` (what a ``@relay`` function's first call
builds) is one more file, ``P<key>.json``: its graph plan, constants and library key,
keyed by the text of its typed functions, the target, the opt level and the relay sources
(:func:`program_key`). A second process calling the same function then skips the
optimization pipeline, fusion and lowering as well as compilation: a hit costs reading
the record and loading the library.

Both are written to temporary files in the same directory and renamed into place
(``os.replace`` is atomic), the library first, so a reader sees a whole entry or none, and
two processes writing the same entry at once each leave a consistent one. Each JSON file
carries the SHA-256 of its own text (:func:`sealed`), and a reader checks it, then the
library's size and digest against the metadata, before using either: a truncated or
corrupted entry (or one of an older format) is removed and recompiled, never loaded. A
program record that passes its checksum is still checked against its library's kernels
before it runs (:func:`relay.backend.plan_check.check_plan`). Each hit refreshes the entry's
modification time; when the directory grows past ``RELAY_CACHE_MB`` megabytes the least
recently used entries are removed. ``RELAY_CACHE=0`` turns the disk cache off; a directory
that cannot be written is used read-only, with a message at ``RELAY_DEBUG=1``.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import io
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from relay import flags
from relay.backend.compiler import Kernel, KernelLibrary
from relay.ir.span import Span
from relay.ir.types import Any as AnyDim, Kind, TensorType, TypeVar

FORMAT = 2
"""The metadata format version; entries of another version are misses (2: the metadata
carries its own checksum, :func:`sealed`)."""

MEMORY_ENTRIES = 512
"""Libraries kept loaded per process (least recently used go first)."""

WRITE_DELAY = 1.0
"""Seconds at most that a disk write waits for the first run of what was just compiled
(:meth:`KernelCache.store`)."""


def default_directory() -> Path:
    """Where the disk cache lives when ``RELAY_CACHE_DIR`` is not set."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "relay" / "kernels"


def _type_json(t: TensorType, names: dict[int, str] | None = None) -> list[Any]:
    """A kernel's tensor type; a ``?`` dimension (a dynamic kernel's size) is null, a
    symbolic one its text over the kernel's shape variables, named by ``names`` (by id)."""
    from relay.ir.dim import dim_str, is_symbolic

    def dim(d: Any) -> Any:
        if isinstance(d, int):
            return d
        if names is not None and is_symbolic(d):
            return dim_str(d, lambda v: names[id(v)])
        return None

    return [[dim(d) for d in t.shape], str(t.dtype)]


def _type_from_json(j: list[Any], variables: dict[str, TypeVar] | None = None) -> TensorType:
    from relay.ir.dim import parse_dim

    def dim(d: Any) -> Any:
        if d is None:
            return AnyDim
        if isinstance(d, str) and variables is not None:
            return parse_dim(d, variables.__getitem__)
        return int(d)

    return TensorType(tuple(dim(d) for d in j[0]), str(j[1]))


def _kernel_json(k: Kernel) -> dict[str, Any]:
    names = {id(v): f"s{i}" for i, v in enumerate(k.shape_vars)}
    return {
        "name": k.name,
        "inputs": [_type_json(t, names) for t in k.inputs],
        "outputs": [_type_json(t, names) for t in k.outputs],
        "constants": [array_json(c) for c in k.constants],
        "anchor": k.anchor,
        "checks": [[message, _span_json(span)] for message, span in k.checks],
        "calls": k.calls,
        "shape_vars": [[f"s{i}", v.name_hint] for i, v in enumerate(k.shape_vars)],
        "device": k.device,
    }


def _kernel_from_json(r: dict[str, Any]) -> Kernel:
    variables = {n: TypeVar(hint, Kind.SHAPE) for n, hint in r.get("shape_vars", [])}
    return Kernel(
        r["name"],
        [_type_from_json(t, variables) for t in r["inputs"]],
        [_type_from_json(t, variables) for t in r["outputs"]],
        [array_from_json(c) for c in r["constants"]],
        r.get("anchor", ""),
        checks=[(message, _span_from_json(span)) for message, span in r.get("checks", [])],
        calls=dict(r.get("calls", {})),
        shape_vars=list(variables.values()),
        device=r.get("device", "cpu"),
    )


def array_json(a: np.ndarray[Any, Any]) -> str:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode()


def array_from_json(s: str) -> np.ndarray[Any, Any]:
    out: np.ndarray[Any, Any] = np.load(io.BytesIO(base64.b64decode(s)), allow_pickle=False)
    return out


def library_metadata(lib: KernelLibrary) -> list[dict[str, Any]]:
    """The kernels of ``lib`` as JSON-able records (for the cache and exported files)."""
    return [_kernel_json(k) for k in lib.kernels.values()]


def kernels_from_metadata(records: list[dict[str, Any]]) -> dict[str, Kernel]:
    """The inverse of :func:`library_metadata` (functions not yet bound)."""
    return {r["name"]: _kernel_from_json(r) for r in records}


def _span_json(span: Span | None) -> list[Any] | None:
    if span is None:
        return None
    return [span.source, span.line, span.column, span.end_line, span.end_column]


def _span_from_json(j: list[Any] | None) -> Span | None:
    return None if j is None else Span(str(j[0]), int(j[1]), int(j[2]), int(j[3]), int(j[4]))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_SEAL = b'{"checksum": "'
"""How a sealed JSON file begins (:func:`sealed`)."""


def sealed(text: bytes) -> bytes:
    """``text``, the JSON text of a non-empty object, with its SHA-256 put in front as the
    object's first member, ``"checksum"``: still a JSON object, whose text without that
    member is ``text`` again, byte for byte (:func:`unsealed`), so that checking it costs
    one digest of the bytes read and no second serialization."""
    if not text.startswith(b'{"'):
        raise ValueError("only the compact text of a non-empty JSON object can be sealed")
    return _SEAL + _digest(text).encode() + b'", ' + text[1:]


def unsealed(data: bytes) -> bytes | None:
    """The JSON text that :func:`sealed` made ``data`` from, or None when ``data`` is not
    sealed (an entry of an older format) or its checksum does not match its text (a
    damaged or truncated one)."""
    start = len(_SEAL) + 64
    if not data.startswith(_SEAL) or data[start : start + 3] != b'", ':
        return None
    text = b"{" + data[start + 3 :]
    if _digest(text).encode() != data[len(_SEAL) : start]:
        return None
    return text


def _checked_json(data: bytes) -> dict[str, Any] | None:
    """The JSON object sealed in ``data`` (:func:`sealed`), or None when its checksum fails
    or it holds no object."""
    text = unsealed(data)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:  # (a sealed text that is not JSON: written so, never damaged so)
        return None
    return value if isinstance(value, dict) else None


def _atomic_write(directory: Path, name: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, directory / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


PROGRAM_FORMAT = 2
"""The program records' format version (2: a record carries its own checksum,
:func:`sealed`; the version is part of :func:`program_key`, so an older record is never
looked up)."""


@functools.cache
def program_version() -> str:
    """A digest of everything that decides what a program compiles to: the TVM version and
    every source file of the relay package, by name, size and modification time (cheap:
    this is on the path of a warm first call; reading the 1.5 MB of sources would cost
    several milliseconds)."""
    from relay.backend.runtime import tvm

    h = hashlib.sha256(str(tvm().__version__).encode())
    root = Path(__file__).resolve().parent.parent
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".rly")):
                st = os.stat(os.path.join(directory, name))
                rel = os.path.relpath(os.path.join(directory, name), root)
                h.update(f"{rel} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def program_key(text: str, target: Any, opt_level: int) -> str:
    """The program cache's key: a program's text (its typed functions), the target, the
    opt level, whether loops compile into kernels, whether products share kernels for good
    (``RELAY_SHARE_KERNELS``), and :func:`program_version`."""
    from relay import flags

    loops = "native-loops" if flags.get().native_loops else "vm-loops"
    shared = " shared-products" if flags.get().share_kernels else ""
    h = hashlib.sha256()
    h.update(
        f"program {PROGRAM_FORMAT} {program_version()} {target.key} {opt_level} {loops}"
        f"{shared}\n".encode()
    )
    h.update(text.encode())
    return h.hexdigest()


class KernelCache:
    """Memory and disk caches of compiled libraries (see the module docstring)."""

    def __init__(self) -> None:
        self.memory: OrderedDict[str, KernelLibrary] = OrderedDict()
        self.lock = threading.Lock()
        self._pending: list[threading.Thread] = []
        """Threads writing libraries (:meth:`store`)."""
        self._pending_programs: list[threading.Thread] = []
        """Threads writing program records, each after the libraries (:meth:`store_program`)."""
        self._pending_builds: list[threading.Thread] = []
        """Threads compiling programs' second tiers (:meth:`in_background`)."""
        self._ran = threading.Event()
        """Set when what was compiled last has run (:meth:`ran`): the disk writes go."""
        self._ready: set[threading.Event] = set()
        """What the pending background work waits for (:meth:`in_background`)."""
        self._exiting = False
        # at exit, before Python waits for the writing threads, they are let go
        getattr(threading, "_register_atexit", lambda f: None)(self._at_exit)
        self.hits = 0
        self.disk_hits = 0
        self.misses = 0
        self.program_hits = 0
        self._warned: set[str] = set()

    # -- settings ------------------------------------------------------------------------------

    def directory(self, create: bool = False) -> Path | None:
        """The disk cache directory in force (None when the disk cache is off)."""
        f = flags.get()
        if not f.cache:
            return None
        path = Path(f.cache_dir) if f.cache_dir else default_directory()
        if create and not path.is_dir():
            try:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as err:
                self._warn(str(path), f"cannot create the kernel cache {path}: {err}")
                return None
        return path

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            flags.debug_print(1, message)

    # -- lookups -------------------------------------------------------------------------------

    def lookup(self, key: str, disk: bool = True) -> KernelLibrary | None:
        """The library stored under ``key``, from memory or (``disk``) disk, or None."""
        with self.lock:
            lib = self.memory.get(key)
            if lib is not None:
                self.memory.move_to_end(key)
                self.hits += 1
                return lib
        lib = self._load(key) if disk else None
        if lib is None:
            self.misses += 1
            return None
        self.disk_hits += 1
        self._remember(lib)
        return lib

    def _load(self, key: str) -> KernelLibrary | None:
        directory = self.directory()
        if directory is None:
            return None
        meta_path = directory / f"{key}.json"
        try:
            meta = _checked_json(meta_path.read_bytes())
        except OSError:
            return None
        lib_name = meta.get("library") if meta is not None else None
        if (
            meta is None
            or meta.get("format") != FORMAT
            or meta.get("key") != key
            or not isinstance(lib_name, str)
            or not lib_name.startswith(f"{key}-")
            or Path(lib_name).name != lib_name
        ):  # damaged, or of an older format: the library it names is not trusted either
            self._remove(
                f"kernel cache entry {key[:12]}", meta_path, *directory.glob(f"{key}-*.so")
            )
            return None
        lib_path = directory / lib_name
        try:
            data = lib_path.read_bytes()
        except OSError:
            return None
        if len(data) != meta.get("size") or _digest(data) != meta.get("sha256"):
            self._remove(f"kernel cache entry {key[:12]}", meta_path, lib_path)
            return None
        try:
            kernels = kernels_from_metadata(meta["kernels"])
            device_code = [str(code).encode() for code in meta.get("device_code", [])]
            from relay.backend.runtime import tvm

            module = tvm().runtime.load_module(str(lib_path))
        except Exception as err:
            flags.debug_print(1, f"kernel cache entry {key[:12]} does not load ({err})")
            return None
        with contextlib.suppress(OSError):
            os.utime(meta_path)
            os.utime(lib_path)
        return KernelLibrary(kernels, module, key, data, device_code)

    def _remove(self, what: str, *paths: Path) -> None:
        """Remove the files of a damaged entry (it is compiled and written again)."""
        flags.debug_print(1, f"{what} is corrupt; recompiling")
        for p in paths:
            with contextlib.suppress(OSError):
                p.unlink()

    # -- stores --------------------------------------------------------------------------------

    def store(self, lib: KernelLibrary, disk: bool = True, ran: bool = False) -> None:
        """Keep ``lib`` in memory, and (``disk``) on disk when the disk cache is on and
        writable (``ran``: the program has run already, and the write need not wait: a
        second tier's library, :mod:`relay.backend.tiers`).

        The disk write (which generates the machine code again and links a shared object
        with the system compiler: ~0.2 s of CPU for mlp_train_step) runs on a background
        thread, so the first call does not wait for it. Nor does it compete with that call:
        it starts once the program has run (:meth:`ran`, which the executable's first call
        signals), or after :data:`WRITE_DELAY` seconds without a run. On two cores, a write
        started at once took the core that half of each kernel's parallel loop needed, and
        the first run of mlp_train_step took 34-40 ms instead of ~10. The process waits for
        pending writes before it exits, and :meth:`flush` starts and waits for them now."""
        self._remember(lib)
        directory = self.directory(create=True) if disk else None
        if directory is None:
            return
        lib.bind()  # the module's code is generated before another thread exports it
        if not ran:
            self._ran.clear()
        settings = flags.get()
        thread = threading.Thread(
            target=self._store_on_disk,
            args=(directory, lib, settings, ran),
            name="relay-kernel-cache",
            daemon=False,  # (not a daemon's, even when started by one: the process waits)
        )
        with self.lock:
            self._pending = [t for t in self._pending if t.is_alive()]
            self._pending.append(thread)
        _start(thread)

    def _store_on_disk(
        self, directory: Path, lib: KernelLibrary, settings: flags.Flags, ran: bool
    ) -> None:
        if not ran:
            self._ran.wait(WRITE_DELAY)
        _lower_priority()  # (the program's own work goes first)
        with flags.pinned(settings):
            try:
                self._write(directory, lib)
            except OSError as err:
                self._warn(str(directory), f"kernel cache {directory} is read-only here: {err}")
                return
            except Exception as err:  # a failed link must not take the program down
                flags.debug_print(1, f"kernel cache: could not store {lib.key[:12]}: {err}")
                return
            self.evict(directory)

    def ran(self) -> None:
        """Say that the program compiled last has run: its disk writes may start now."""
        self._ran.set()

    def in_background(
        self, work: Callable[[bool], None], name: str, ready: threading.Event
    ) -> None:
        """Run ``work`` on a thread of its own at a low priority, once ``ready`` is set (the
        program that asks for it has run) or after :data:`WRITE_DELAY` seconds, as the disk
        writes wait (see :meth:`store`), under this thread's flags (:func:`relay.flags.
        pinned`): a program's second tier (:mod:`relay.backend.tiers`). ``work(exiting)``:
        whether the process has begun to exit. :meth:`flush` waits for it, and so does the
        process before it exits (``ready`` is set then)."""
        settings = flags.get()

        def run() -> None:
            ready.wait(WRITE_DELAY)
            with self.lock:
                self._ready.discard(ready)
            _lower_priority()
            with flags.pinned(settings):
                work(self._exiting)

        thread = threading.Thread(target=run, name=name, daemon=False)
        with self.lock:
            self._pending_builds = [t for t in self._pending_builds if t.is_alive()]
            self._pending_builds.append(thread)
            self._ready.add(ready)
        _start(thread)

    def _at_exit(self) -> None:
        """The process begins to exit: the pending work goes now."""
        self._exiting = True
        self._release()

    def _release(self) -> None:
        """Let all pending background work and disk writes go."""
        self._ran.set()
        with self.lock:
            ready, self._ready = list(self._ready), set()
        for event in ready:
            event.set()

    def flush(self) -> None:
        """Start the pending background work (second tiers, disk writes) and wait for it."""
        self._release()
        self._join(self._pending_builds)  # (they store libraries and program records)
        self._join(self._pending)
        self._join(self._pending_programs)

    def _join(self, threads: list[threading.Thread]) -> None:
        with self.lock:
            pending = list(threads)
        for t in pending:
            if t is not threading.current_thread():
                t.join()

    def _remember(self, lib: KernelLibrary) -> None:
        with self.lock:
            self.memory[lib.key] = lib
            self.memory.move_to_end(lib.key)
            while len(self.memory) > MEMORY_ENTRIES:
                self.memory.popitem(last=False)

    def _write(self, directory: Path, lib: KernelLibrary) -> None:
        with tempfile.TemporaryDirectory(dir=directory, prefix=".build-") as tmp:
            so = Path(tmp) / "lib.so"
            lib.export(so)
            data = so.read_bytes()
        sha = _digest(data)
        lib_name = f"{lib.key}-{sha[:16]}.so"
        _atomic_write(directory, lib_name, data)
        meta = {
            "format": FORMAT,
            "key": lib.key,
            "library": lib_name,
            "size": len(data),
            "sha256": sha,
            "kernels": library_metadata(lib),
        }
        if lib.device_code:  # a GPU library's PTX (inside the library too), for .ptx()
            meta["device_code"] = [code.decode() for code in lib.device_code]
        _atomic_write(directory, f"{lib.key}.json", sealed(json.dumps(meta).encode()))

    def evict(self, directory: Path) -> None:
        """Remove least recently used entries until the directory fits ``RELAY_CACHE_MB``."""
        self.evict_to(directory, flags.get().cache_mb * (1 << 20))

    def evict_to(self, directory: Path, limit: int) -> None:
        """Remove least recently used entries (a key's metadata and libraries together)
        until ``directory`` holds at most ``limit`` bytes (down to 80% of it, so that
        eviction does not run on every store)."""
        entries: dict[str, list[tuple[Path, os.stat_result]]] = {}
        try:
            for p in directory.iterdir():
                if p.suffix in (".so", ".json", ".ptx") and not p.name.startswith("."):
                    key = p.name.split("-", 1)[0].split(".", 1)[0]
                    entries.setdefault(key, []).append((p, p.stat()))
        except OSError:
            return
        total = sum(st.st_size for files in entries.values() for _, st in files)
        if total <= limit:
            return
        by_age = sorted(entries.values(), key=lambda fs: max(st.st_mtime for _, st in fs))
        for files in by_age:
            if total <= limit * 0.8:
                break
            for p, st in files:
                with contextlib.suppress(OSError):
                    p.unlink()
                    total -= st.st_size

    # -- programs ------------------------------------------------------------------------------

    def lookup_program(self, key: str) -> dict[str, Any] | None:
        """The record stored by :meth:`store_program` under ``key`` (from disk), or None; a
        record whose checksum fails, or that is not one, is removed."""
        directory = self.directory()
        if directory is None:
            return None
        path = directory / f"P{key}.json"
        try:
            record = _checked_json(path.read_bytes())
        except OSError:
            return None
        if record is None or record.get("format") != PROGRAM_FORMAT or record.get("key") != key:
            self._remove(f"program cache entry {key[:12]}", path)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return record

    def store_program(self, key: str, record: dict[str, Any]) -> None:
        """Write a program record (``P<key>.json``: the graph plan, its constants and its
        library's key), on a background thread after the library's own write."""
        directory = self.directory(create=True)
        if directory is None:
            return
        data = sealed(json.dumps({"format": PROGRAM_FORMAT, "key": key, **record}).encode())

        def write() -> None:
            self._join(self._pending)  # the libraries first: a record never points at a missing one
            try:
                _atomic_write(directory, f"P{key}.json", data)
            except OSError as err:
                self._warn(str(directory), f"kernel cache {directory} is read-only here: {err}")

        thread = threading.Thread(target=write, name="relay-program-cache", daemon=False)
        with self.lock:
            self._pending_programs = [t for t in self._pending_programs if t.is_alive()]
            self._pending_programs.append(thread)
        _start(thread)

    # -- device code ---------------------------------------------------------------------------

    def lookup_device_code(self, key: str) -> bytes | None:
        """The device code stored by :meth:`store_device_code` under ``key`` (from disk), or
        None; a corrupt entry is removed."""
        directory = self.directory()
        if directory is None:
            return None
        path = directory / f"D{key}.ptx"
        try:
            data = path.read_bytes()
        except OSError:
            return None
        header, _, code = data.partition(b"\n")
        if header != f"// relay sha256={_digest(code)}".encode():
            flags.debug_print(1, f"device code cache entry {key[:12]} is corrupt; recompiling")
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        self.disk_hits += 1
        return code

    def store_device_code(self, key: str, code: bytes) -> None:
        """Write device code (``D<key>.ptx``, a checksum on its first line) when the disk
        cache is on and writable."""
        directory = self.directory(create=True)
        if directory is None:
            return
        try:
            _atomic_write(
                directory, f"D{key}.ptx", f"// relay sha256={_digest(code)}\n".encode() + code
            )
        except OSError as err:
            self._warn(str(directory), f"kernel cache {directory} is read-only here: {err}")
            return
        self.evict(directory)

    def clear_memory(self) -> None:
        """Forget the libraries loaded in this process (the disk cache stays)."""
        with self.lock:
            self.memory.clear()

    def forget(self, key: str) -> None:
        """Forget the library ``key`` in memory (a first tier, replaced by its second)."""
        with self.lock:
            self.memory.pop(key, None)


_cache = KernelCache()


def _lower_priority() -> None:
    """This thread at a low priority (nice 10, where the system allows it)."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


def _start(thread: threading.Thread) -> None:
    """Start ``thread``, or run its work on this thread where no thread can start: Python
    3.12 starts none once the interpreter has begun to exit, when a program's second tier
    may still be writing (:mod:`relay.backend.tiers`)."""
    try:
        thread.start()
    except RuntimeError:
        thread.run()


def kernel_cache() -> KernelCache:
    """The process's kernel cache."""
    return _cache
