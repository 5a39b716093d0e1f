"""The kernel cache: memory and disk, atomic entries, corruption, concurrency, eviction."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relay
from relay.backend import cache as cache_module, compiler
from relay.backend.cache import kernel_cache
from relay.backend.target import Target
from relay.testing.lowering import primitive_op_function

pytestmark = pytest.mark.tvm


def compile_functions(funcs, target):  # type: ignore[no-untyped-def]
    """Compile, then wait for the background write of the disk entry."""
    out = compiler.compile_functions(funcs, target)
    kernel_cache().flush()
    return out


def func(n: int) -> relay.ir.Function:
    return primitive_op_function("negative", (np.zeros(n, np.float32),), {})


def entries(d: Path) -> tuple[list[Path], list[Path]]:
    return sorted(d.glob("*.json")), sorted(d.glob("*.so"))


def run(lib, symbol: str, n: int) -> np.ndarray:
    x = np.arange(n, dtype=np.float32)
    (out,) = lib[symbol](x)
    return out


def test_disk_entry_is_written_privately_and_reloaded(cache_dir: Path) -> None:
    compile_functions([func(37)], Target())
    metas, libs = entries(cache_dir)
    assert len(metas) == 1 and len(libs) == 1
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(libs[0].stat().st_mode) == 0o600
    meta = json.loads(metas[0].read_text())
    assert meta["library"] == libs[0].name and meta["size"] == libs[0].stat().st_size
    assert list(meta)[:2] == ["checksum", "format"] and meta["format"] == 2
    assert cache_module.unsealed(metas[0].read_bytes()) is not None
    cache = kernel_cache()
    cache.clear_memory()
    before = cache.disk_hits
    lib2, (sym2,) = compile_functions([func(37)], Target())
    assert cache.disk_hits == before + 1
    np.testing.assert_array_equal(run(lib2, sym2, 37), -np.arange(37, dtype=np.float32))


def test_memory_hit_returns_the_same_library(cache_dir: Path) -> None:
    lib1, _ = compile_functions([func(38)], Target())
    lib2, _ = compile_functions([func(38)], Target())
    assert lib1 is lib2


def test_sealed_json_keeps_its_text_and_detects_any_change() -> None:
    from relay.backend.cache import _digest, sealed, unsealed

    text = b'{"format": 2, "size": 300000}'
    data = sealed(text)
    assert data == b'{"checksum": "' + _digest(text).encode() + b'", "format": 2, "size": 300000}'
    assert json.loads(data) == {"checksum": _digest(text), "format": 2, "size": 300000}
    assert unsealed(data) == text
    for damaged in (
        data.replace(b"300000", b"100000"),  # one digit
        data[:-1],  # truncated
        data + b" ",
        data.replace(b'"checksum"', b'"Checksum"'),
        text,  # never sealed: an entry of format 1
        b"[]",
        b"",
    ):
        assert unsealed(damaged) is None
    for not_an_object in (b"[]", b"{}", b"null"):
        with pytest.raises(
            ValueError, match=r"^only the compact text of a non-empty JSON object can be sealed$"
        ):
            sealed(not_an_object)


@pytest.mark.parametrize(
    "damage",
    [
        "truncate",
        "flip",
        "delete-library",
        "garbage-json",
        "not-an-object",
        "null",
        "no-checksum",
        "a-changed-digit",
    ],
)
def test_corrupt_entries_are_recompiled(cache_dir: Path, damage: str) -> None:
    compile_functions([func(39)], Target())
    (meta,), (so,) = entries(cache_dir)
    if damage == "truncate":
        so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])
    elif damage == "flip":
        data = bytearray(so.read_bytes())
        data[len(data) // 2] ^= 0xFF
        so.write_bytes(bytes(data))
    elif damage == "delete-library":
        so.unlink()
    elif damage == "garbage-json":
        meta.write_text("{not json")
    elif damage == "not-an-object":  # (parsed, then crashed every later run)
        meta.write_text("[]")
    elif damage == "null":
        meta.write_text("null")
    elif damage == "no-checksum":  # (an entry of format 1)
        record = json.loads(meta.read_text())
        del record["checksum"]
        meta.write_text(json.dumps({**record, "format": 1}))
    else:  # the kernel's input size, which its callers would trust
        text = meta.read_text()
        meta.write_text(text.replace('"inputs": [[[39]', '"inputs": [[[93]', 1))
        assert meta.read_text() != text
    cache = kernel_cache()
    cache.clear_memory()
    assert cache.lookup(meta.stem) is None
    # a damaged entry is removed, its library too; a missing library is only a miss
    assert entries(cache_dir) == (([meta], []) if damage == "delete-library" else ([], []))
    misses = cache.misses
    lib, (sym,) = compile_functions([func(39)], Target())
    assert cache.misses == misses + 1
    np.testing.assert_array_equal(run(lib, sym, 39), -np.arange(39, dtype=np.float32))
    # the damaged entry was replaced by a good one
    cache.clear_memory()
    hits = cache.disk_hits
    compile_functions([func(39)], Target())
    assert cache.disk_hits == hits + 1


def test_read_only_directory_still_compiles(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    if os.access(ro, os.W_OK):  # running as root: permissions do not stop writes
        pytest.skip("the test runs as a user that can write anywhere")
    with relay.flags.override(cache_dir=str(ro), cache=True):
        kernel_cache().clear_memory()
        lib, (sym,) = compile_functions([func(40)], Target())
    np.testing.assert_array_equal(run(lib, sym, 40), -np.arange(40, dtype=np.float32))
    assert list(ro.iterdir()) == []


def test_unwritable_path_still_compiles(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with relay.flags.override(cache_dir=str(blocker / "kernels"), cache=True):
        kernel_cache().clear_memory()
        lib, (sym,) = compile_functions([func(41)], Target())
    np.testing.assert_array_equal(run(lib, sym, 41), -np.arange(41, dtype=np.float32))


def test_disabled_disk_cache_writes_nothing(tmp_path: Path) -> None:
    d = tmp_path / "off"
    with relay.flags.override(cache_dir=str(d), cache=False):
        kernel_cache().clear_memory()
        compile_functions([func(42)], Target())
    assert not d.exists()


def test_eviction_keeps_the_directory_bounded(cache_dir: Path) -> None:
    for n in range(50, 56):
        compile_functions([func(n)], Target())
    assert len(list(cache_dir.glob("*.so"))) == 6
    with relay.flags.override(cache_mb=0):
        kernel_cache().evict(cache_dir)
    assert list(cache_dir.glob("*.so")) == []


def test_eviction_removes_least_recently_used_first(cache_dir: Path) -> None:
    for n in (60, 61, 62):
        compile_functions([func(n)], Target())
    metas = {
        json.loads(p.read_text())["kernels"][0]["inputs"][0][0][0]: p
        for p in cache_dir.glob("*.json")
    }
    # make 60 the oldest, 62 the newest
    for age, n in enumerate((60, 61, 62)):
        for p in cache_dir.glob(metas[n].stem + "*"):
            os.utime(p, (1_000_000 + age, 1_000_000 + age))
    sizes = sum(p.stat().st_size for p in cache_dir.iterdir())
    cache = kernel_cache()
    # a bound just below the total: the oldest entry goes first
    cache.evict_to(cache_dir, sizes - 1)
    remaining = {p.stem for p in cache_dir.glob("*.json")}
    assert metas[60].stem not in remaining
    assert metas[62].stem in remaining


WRITER = """
import sys, numpy as np
from relay.backend.compiler import compile_functions
from relay.backend.target import Target
from relay.testing.lowering import primitive_op_function
f = primitive_op_function("negative", (np.zeros(77, np.float32),), {})
lib, (sym,) = compile_functions([f], Target())
(out,) = lib[sym](np.arange(77, dtype=np.float32))
assert (out == -np.arange(77, dtype=np.float32)).all()
from relay.backend.cache import kernel_cache
c = kernel_cache()
print(c.disk_hits, c.misses)
"""


def test_concurrent_processes_and_a_warm_second_process(cache_dir: Path) -> None:
    env = {**os.environ, "RELAY_CACHE_DIR": str(cache_dir), "RELAY_CACHE": "1"}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
    metas, libs = entries(cache_dir)
    assert len(metas) == 1 and len(libs) >= 1
    # a later process compiles nothing
    out = subprocess.run(
        [sys.executable, "-c", WRITER], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["1", "0"]


def test_a_failed_write_leaves_no_entry_and_the_kernel_works(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(directory: Path, name: str, data: bytes) -> None:
        raise PermissionError(13, "Permission denied", str(directory / name))

    monkeypatch.setattr(cache_module, "_atomic_write", refuse)
    with relay.flags.override(debug=1):
        lib, (sym,) = compile_functions([func(43)], Target())
    np.testing.assert_array_equal(run(lib, sym, 43), -np.arange(43, dtype=np.float32))
    assert list(cache_dir.glob("*.json")) == [] and list(cache_dir.glob("*.so")) == []
    assert "is read-only here" in capsys.readouterr().err


def test_kernels_compiled_in_parts_export_as_one_library(cache_dir: Path) -> None:
    from relay.backend.compiler import _parts

    dense = primitive_op_function(
        "nn.dense", (np.zeros((4, 32), np.float32), np.zeros((8, 32), np.float32)), {}
    )
    big = 1 << 15  # (an elementwise kernel of fewer elements is small: -O0)
    funcs = [func(40), dense, func(41), func(big), func(big + 1)]
    parts = _parts(funcs, cores=2)
    # the product at -O2, the large elementwise kernels at -O1, the small ones at -O0, each
    # level in one part (the weight of a product makes a part worth its module); the
    # heaviest part first
    assert [(p.opt_level, p.checked, [i for i, _ in p.funcs]) for p in parts] == [
        (2, False, [1]),
        (1, False, [3, 4]),
        (0, False, [0, 2]),
    ]
    assert [(p.opt_level, len(p.funcs)) for p in _parts(funcs, cores=1)] == [
        (2, 1),
        (1, 2),
        (0, 2),
    ]
    # one level alone spreads over the cores; one module at -O0 (those at -O0 each define
    # TVM's startup function, and their library did not link)
    small = [func(40), func(41), func(42)]
    alone = _parts(small, cores=2)
    assert [(p.opt_level, [i for i, _ in p.funcs]) for p in alone] == [(0, [0, 2]), (1, [1])]
    compile_functions(small, Target())
    assert len(list(cache_dir.glob("*.so"))) == 1
    lib, symbols = compile_functions(funcs, Target())
    assert list(lib.kernels) == symbols
    kernel_cache().clear_memory()
    reloaded, again = compile_functions(funcs, Target())  # from the one shared object
    assert reloaded is not lib and again == symbols and len(list(cache_dir.glob("*.so"))) == 2
    np.testing.assert_array_equal(run(reloaded, again[2], 41), -np.arange(41, dtype=np.float32))
    np.testing.assert_array_equal(
        run(reloaded, again[4], big + 1), -np.arange(big + 1, dtype=np.float32)
    )
    x, w = np.ones((4, 32), np.float32), np.full((8, 32), 0.5, np.float32)
    (out,) = reloaded[again[1]](x, w)
    np.testing.assert_array_equal(out, np.full((4, 8), 16.0, np.float32))


def test_only_kernels_of_a_symbolic_size_keep_tvms_argument_checks(cache_dir: Path) -> None:
    from relay.backend.compiler import _parts
    from relay.backend.vm.dynamic import elementwise_variant
    from relay.ir.types import Any

    dynamic = primitive_op_function("negative", (np.zeros(5, np.float32),), {})
    variant = elementwise_variant(dynamic, (True,), (Any, 16), parallel=0)  # a (?, 16) block
    assert variant is not None
    funcs = [func(40), variant]
    parts = _parts(funcs, cores=1)
    assert [(p.opt_level, p.checked, [i for i, _ in p.funcs]) for p in parts] == [
        (1, True, [1]),
        (0, False, [0]),  # (small: -O0)
    ]
    lib, (static, sized) = compile_functions(funcs, Target())
    # the static kernel trusts its callers; its Python entry checks shapes itself
    with pytest.raises(TypeError, match=r"input 0 has shape \(41,\), not \(40,\)$"):
        lib[static](np.zeros(41, np.float32))
    with pytest.raises(TypeError, match=r"input 0 has shape \(3, 8\), not \('\?', 16\)$"):
        lib[sized](np.zeros((3, 8), np.float32))
    # the sized kernel reads its size from its input: an output of another size is refused
    # by TVM's checks instead of being written past its end
    x = np.zeros((3, 16), np.float32)
    with pytest.raises(Exception, match="shape"):
        lib[sized].func(x, np.empty((2, 16), np.float32))
    out = np.empty_like(x)
    lib[sized].func(x + 1, out)
    np.testing.assert_array_equal(out, -(x + 1))


def test_a_kernel_for_every_size_is_cached_with_its_unknown_dimension(cache_dir: Path) -> None:
    from relay.backend.vm.dynamic import elementwise_variant
    from relay.ir.types import Any

    dynamic = primitive_op_function("negative", (np.zeros(5, np.float32),), {})
    variant = elementwise_variant(dynamic, (True,), (Any, 16), parallel=0)  # a (?, 16) block
    assert variant is not None
    compile_functions([variant], Target())
    kernel_cache().clear_memory()
    lib, (sym,) = compile_functions([variant], Target())
    assert kernel_cache().disk_hits >= 1
    assert [tuple(t.shape) for t in lib[sym].inputs] == [(Any, 16)]
    x = np.arange(48, dtype=np.float32).reshape(3, 16)
    out = np.empty_like(x)
    lib[sym].func(x, out)
    np.testing.assert_array_equal(out, -x)


SM90 = Target("cuda", arch="sm_90")


def needs_nvcc() -> None:
    from relay.backend import cuda

    if cuda.nvcc() is None:
        pytest.skip("nvcc (the CUDA toolkit) is not installed")


def test_gpu_libraries_stay_off_the_disk_where_tvm_cannot_load_them(cache_dir: Path) -> None:
    needs_nvcc()
    if compiler.cuda_runtime():
        pytest.skip("TVM's runtime here has CUDA")
    lib, _ = compile_functions([func(4096)], SM90)
    assert entries(cache_dir) == ([], [])  # kept in memory only
    again, _ = compile_functions([func(4096)], SM90)
    assert again is lib


def test_gpu_libraries_go_to_disk_with_their_ptx_where_tvm_has_cuda(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_nvcc()
    has_cuda = compiler.cuda_runtime()
    monkeypatch.setattr(compiler, "cuda_runtime", lambda: True)
    lib, _ = compile_functions([func(4096)], SM90)
    (meta_path,), (_library,) = entries(cache_dir)
    meta = json.loads(meta_path.read_text())
    assert [k["device"] for k in meta["kernels"]] == ["cuda"]
    assert "".join(meta["device_code"]).encode() == b"".join(lib.device_code)
    assert ".entry" in meta["device_code"][0]
    cache = kernel_cache()
    cache.clear_memory()
    misses = cache.misses
    again, _ = compile_functions([func(4096)], SM90)
    if has_cuda:  # loaded, with its PTX
        assert cache.misses == misses and again.device_code == lib.device_code
    else:  # the entry does not load here: compiled again (nvcc's PTX from the disk cache)
        assert cache.misses == misses + 1 and again is not lib
        assert [k.device for k in again.kernels.values()] == ["cuda"]
        assert again.device_code == lib.device_code


def _wait_for(predicate, seconds: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@relay
def tanh_and_more(x):  # type: ignore[no-untyped-def]
    return np.tanh(x) * 3.0 + x


def test_the_disk_write_waits_for_the_first_run(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from relay.backend import cache

    monkeypatch.setattr(cache, "WRITE_DELAY", 600.0)

    x = np.linspace(-2, 2, 29, dtype=np.float32)
    exe = relay.build(tanh_and_more.specialize(x))
    time.sleep(0.3)
    assert entries(cache_dir)[1] == []  # compiled, not yet run: nothing written
    np.testing.assert_allclose(exe(x), np.tanh(x) * 3 + x, rtol=1e-6, atol=1e-6)
    assert _wait_for(lambda: len(entries(cache_dir)[1]) == 1)  # the run let it go
    assert _wait_for(lambda: any(cache_dir.glob("P*.json")))  # and the program's record


def test_the_disk_write_goes_after_the_delay_or_a_flush(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relay.backend import cache

    monkeypatch.setattr(cache, "WRITE_DELAY", 0.2)
    compiler.compile_functions([func(41)], Target())  # never run
    assert _wait_for(lambda: len(entries(cache_dir)[1]) == 1)
    monkeypatch.setattr(cache, "WRITE_DELAY", 600.0)
    compiler.compile_functions([func(43)], Target())
    kernel_cache().flush()  # starts the write and waits for it
    assert len(entries(cache_dir)[1]) == 2


TWO_LIBRARIES = """
import numpy as np, relay
@relay
def f(x, big):
    return np.exp(x) * 2.0, np.tanh(big) + 1.0
@relay
def g(x, big):
    return np.log(np.abs(x)) * 2.0, np.sin(big) + 1.0
x, big = np.ones(100, np.float32), np.ones(1 << 16, np.float32)
f(x, big); g(x, big)
print("done")
"""


def test_libraries_with_a_module_at_o0_load_quietly(cache_dir: Path) -> None:
    # each library has a small kernel (-O0) and a large one (-O1); with the -O0 module
    # last, TVM's export made it a "system library" that registered itself in a table the
    # other overwrote, with a warning, when the second process loaded both
    env = {**os.environ, "RELAY_CACHE_DIR": str(cache_dir), "RELAY_CACHE": "1"}
    script = cache_dir.parent / "two_libraries.py"  # (@relay reads its functions' source)
    script.write_text(TWO_LIBRARIES)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
        assert done.stderr == ""


def test_heavy_small_kernels_keep_their_optimization() -> None:
    from relay.backend.compiler import _parts

    conv = primitive_op_function(
        "nn.conv2d",
        (np.zeros((1, 16, 16, 16), np.float32), np.zeros((16, 16, 3, 3), np.float32)),
        {"padding": [1, 1]},
    )
    assert [p.opt_level for p in _parts([conv, func(40)], cores=2)] == [1, 0]
