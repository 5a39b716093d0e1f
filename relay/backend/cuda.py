"""CUDA device code: compiling TVM's CUDA C to PTX with nvcc, and the device's limits.

``tvm.compile`` for a CUDA target generates CUDA C for the kernels and hands it to the
function registered as ``tvm_callback_cuda_compile``; TVM's own uses NVRTC through the
``cuda-bindings`` package, which the project does not install. Relay registers its own
(:func:`_compile_callback`): nvcc compiles the source to PTX for the target's architecture
(``nvcc --ptx -arch=sm_90 -O3``), which the CUDA driver compiles to machine code when the
module is loaded, and which runs on that architecture and newer. The PTX is kept in the
disk kernel cache, keyed by the source, the architecture and nvcc's version, so a kernel is
never compiled by nvcc twice. The architecture comes from
:data:`_ARCH`, set around each compilation (compilations run on several threads).

Launch limits (:func:`check_launch`): TVM launches a kernel with the thread extents its
schedule bound, and the driver refuses a launch past the device's limits only when it runs,
on the GPU. Relay checks each scheduled kernel before compiling it, so a schedule that
would not launch is a CompileError on any machine: at most 1,024 threads per block
(``threadIdx.x``/``y`` up to 1,024, ``z`` up to 64), grid dimensions ``y``/``z`` up to
65,535, and 48 KiB of static shared memory (the limit without the opt-in that larger
allocations need). Extents that depend on a symbolic size are checked at run time by the
driver.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from relay.errors import CompileError

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = {"threadIdx.x": 1024, "threadIdx.y": 1024, "threadIdx.z": 64}
MAX_GRID_DIM = {"blockIdx.x": 2**31 - 1, "blockIdx.y": 65535, "blockIdx.z": 65535}
MAX_STATIC_SHARED_BYTES = 48 * 1024

_ARCH: contextvars.ContextVar[str] = contextvars.ContextVar("relay_cuda_arch", default="")
_REGISTERED = threading.Lock()
_registered = False


def nvcc() -> str | None:
    """The path of nvcc (``PATH``, then ``$CUDA_HOME/bin`` and ``/usr/local/cuda/bin``), or
    None."""
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        candidate = Path(home) / "bin" / "nvcc"
        if home and candidate.is_file():
            return str(candidate)
    return None


def compile_ptx(source: str, arch: str) -> bytes:
    """PTX for CUDA C ``source`` on architecture ``arch`` (``sm_90``), by nvcc, or from the
    disk cache (keyed by the source, the architecture and nvcc's version)."""
    from relay.backend.cache import kernel_cache

    path = nvcc()
    if path is None:
        raise CompileError(
            "the CUDA target needs nvcc (the CUDA toolkit's compiler) on PATH or in "
            "$CUDA_HOME/bin to compile its kernels"
        )
    key = hashlib.sha256(f"{arch}\n{nvcc_version(path)}\n{source}".encode()).hexdigest()
    cache = kernel_cache()
    found = cache.lookup_device_code(key)
    if found is not None:
        return found
    ptx = _run_nvcc(path, source, arch)
    cache.store_device_code(key, ptx)
    return ptx


@functools.cache
def nvcc_version(path: str) -> str:
    """The last line of ``nvcc --version`` (its release and build)."""
    done = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def _run_nvcc(path: str, source: str, arch: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="relay-cuda-") as tmp:
        src, out = Path(tmp) / "kernels.cu", Path(tmp) / "kernels.ptx"
        src.write_text(source)
        cmd = [path, "--ptx", f"-arch={arch}", "-O3", "-o", str(out), str(src)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CompileError(f"nvcc failed on the generated CUDA code:\n{done.stderr.strip()}")
        return out.read_bytes()


_COMPILED: contextvars.ContextVar[list[bytes] | None] = contextvars.ContextVar(
    "relay_cuda_compiled", default=None
)


_FAILED: contextvars.ContextVar[list[CompileError] | None] = contextvars.ContextVar(
    "relay_cuda_failed", default=None
)


def _compile_callback(code: str, *_: Any) -> bytes:
    arch = _ARCH.get()
    if not arch:
        raise CompileError("CUDA code compiled outside relay's compiler (no architecture set)")
    try:
        ptx = compile_ptx(code, arch)
    except CompileError as err:
        # TVM calls this from C++ and turns the error into its own: the compiler reports
        # this one instead (arch_scope.errors)
        failed = _FAILED.get()
        if failed is not None:
            failed.append(err)
        raise
    compiled = _COMPILED.get()
    if compiled is not None:
        compiled.append(ptx)
    return ptx


def device_code(executable: Any, arch: str, compiled: list[bytes]) -> bytes:
    """The PTX of a ``tvm.compile`` result for a CUDA target: what TVM had nvcc compile
    (``compiled``, collected by the callback), or, where TVM kept only the CUDA C (a
    runtime without CUDA, on a machine without a GPU), that source compiled by nvcc here,
    so that the code is checked and the PTX is the same either way."""
    if compiled:
        return b"".join(compiled)
    source = "".join(str(m.inspect_source("cuda")) for m in executable.mod.imports)
    if not source.strip():
        raise CompileError("TVM generated no CUDA code")
    return compile_ptx(source, arch)


def register() -> None:
    """Make TVM compile CUDA C with :func:`compile_ptx` (once per process)."""
    global _registered
    with _REGISTERED:
        if _registered:
            return
        import tvm_ffi

        tvm_ffi.register_global_func("tvm_callback_cuda_compile", _compile_callback, override=True)
        _registered = True


class arch_scope:
    """``with arch_scope("sm_90") as scope:`` -- the architecture CUDA code compiles for, on
    this thread; ``scope.compiled`` collects the PTX nvcc made, ``scope.errors`` nvcc's
    failures."""

    def __init__(self, arch: str) -> None:
        self.arch = arch

        self.compiled: list[bytes] = []
        self.errors: list[CompileError] = []
        self.tokens: tuple[Any, Any, Any] | None = None

    def __enter__(self) -> arch_scope:
        register()
        self.tokens = (
            _ARCH.set(self.arch),
            _COMPILED.set(self.compiled),
            _FAILED.set(self.errors),
        )
        return self

    def __exit__(self, *_: object) -> None:
        assert self.tokens is not None
        _ARCH.reset(self.tokens[0])
        _COMPILED.reset(self.tokens[1])
        _FAILED.reset(self.tokens[2])


def check_launch(name: str, func: Any, between_launches: bool = False) -> None:
    """Raise a CompileError when scheduled PrimFunc ``func`` (kernel ``name``) binds more
    threads or static shared memory than a launch may have (see the module docstring); a
    ValueError (or TVM's error) when the schedule cannot be lowered for CUDA at all (an
    intermediate buffer left in global memory, a cross-thread reduction TVM cannot lower).

    ``between_launches``: a global buffer allocated outside every launch (an intermediate
    stage one launch writes and a later one reads, as relay's ``schedule_outputs`` leaves
    them) is allowed. The host allocates it on the device (TVM's
    ``TVMBackendAllocWorkspace`` with the CUDA device type) and frees it after the
    launches; inside a launch no buffer in global memory can be allocated."""
    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    sblock = tvm().s_tir.SBlock
    shared = 0

    def walk(stmt: Any, bound: dict[str, int]) -> None:
        # ``bound``: the thread extents of the enclosing loops, by tag (a loop nested in
        # another may bind the same tag again: the same threads, as in a cooperative fetch)
        nonlocal shared
        if isinstance(stmt, tirx.For) and stmt.kind == tirx.ForKind.THREAD_BINDING:
            tag = str(stmt.thread_binding.thread_tag)
            if isinstance(stmt.extent, tirx.IntImm):
                n = int(stmt.extent)
                limit = {**MAX_BLOCK_DIM, **MAX_GRID_DIM}.get(tag)
                if limit is not None and n > limit:
                    raise CompileError(
                        f"kernel {name}: {tag} extent {n} is past the device limit {limit}"
                    )
                bound = {**bound, tag: max(n, bound.get(tag, 1))}
                threads = 1
                for t, extent in bound.items():
                    if t.startswith("threadIdx"):
                        threads *= extent
                if threads > MAX_THREADS_PER_BLOCK:
                    raise CompileError(
                        f"kernel {name}: {threads} threads per block, past the device "
                        f"limit {MAX_THREADS_PER_BLOCK}"
                    )
        if isinstance(stmt, sblock):
            for buf in stmt.alloc_buffers:
                if str(buf.scope()) == "shared":
                    shared += _static_bytes(buf)
                elif str(buf.scope()) == "global" and not (between_launches and not bound):
                    raise ValueError(
                        f"the schedule keeps {buf.name} in global memory, which a CUDA kernel "
                        "cannot allocate"
                    )
        if isinstance(stmt, tirx.SeqStmt):
            for child in stmt.seq:
                walk(child, bound)
            return
        for attr in ("body", "block", "then_case", "else_case", "init"):
            child = getattr(stmt, attr, None)
            if isinstance(child, tirx.Stmt):
                walk(child, bound)

    # walked as the lowering will see it: each buffer allocated at the block that uses it,
    # shrunk to the region it touches (before these passes they have the whole shape); the
    # passes keep the thread bindings
    st = tvm().s_tir.transform
    passes = [
        st.LowerCrossThreadReduction(),
        st.LowerInitBlock(),
        st.PlanAndUpdateBufferAllocationLocation(),
        st.ConvertBlocksToOpaque(),
        st.CompactBufferAllocation(),
    ]
    mod = tvm().IRModule({"main": func})
    for p in passes:
        mod = p(mod)
        if p is passes[0]:
            _check_combined(mod["main"].body)
    walk(mod["main"].body, {})
    if shared > MAX_STATIC_SHARED_BYTES:
        raise CompileError(
            f"kernel {name}: {shared} bytes of shared memory, past the "
            f"{MAX_STATIC_SHARED_BYTES} a launch may have without opting in"
        )


def thread_scoped(body: Any) -> Iterator[tuple[Any, frozenset[Any]]]:
    """Every statement of ``body`` with the thread-bound loops (``For`` nodes bound to a
    block or thread index) around it."""
    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    stack: list[tuple[Any, frozenset[Any]]] = [(body, frozenset())]
    while stack:
        node, bound = stack.pop()
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.THREAD_BINDING:
            bound = bound | {node}
        yield node, bound
        if isinstance(node, tirx.SeqStmt):
            stack.extend((child, bound) for child in node.seq)
            continue
        for attr in ("body", "block", "then_case", "else_case"):
            child = getattr(node, attr, None)
            if isinstance(child, tirx.Stmt):
                stack.append((child, bound))


def _check_combined(body: Any) -> None:
    """Raise a ValueError where a reduction is still iterated by a thread-bound loop after
    TVM's ``LowerCrossThreadReduction``: TVM did not combine it across the threads, and
    each thread would keep a partial result of its own in one register (seen with a tail
    of both the blocks and the threads of a split reduction: wrong results, no error)."""
    from relay.backend.runtime import tvm

    tirx, s_tir = tvm().tirx, tvm().s_tir
    for node, bound in thread_scoped(body):
        if not isinstance(node, s_tir.SBlockRealize) or node.block.init is None:
            continue
        threads = [f.loop_var for f in bound if str(f.thread_binding.thread_tag)[:9] == "threadIdx"]
        for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True):
            used = tirx.analysis.undefined_vars(value, [])
            if iv.iter_type == tirx.IterVar.CommReduce and any(
                u.same_as(t) for u in used for t in threads
            ):
                raise ValueError(
                    f"TVM did not combine the reduction {node.block.name_hint} across the threads"
                )


def _static_bytes(buf: Any) -> int:
    n = 1
    for d in buf.shape:
        try:
            n *= int(d)
        except TypeError:
            return 0  # a symbolic size: the driver checks it at launch
    from relay.backend.runtime import numpy_dtype

    return n * numpy_dtype(str(buf.dtype)).itemsize
