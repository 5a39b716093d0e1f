"""relay.build: executables, saving and loading them elsewhere, RELAY_CHECKS."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relay
from relay import Tensor, float32
from relay.backend.cache import kernel_cache
from relay.errors import CompileError, ExecutionError

pytestmark = pytest.mark.tvm

PROGRAM = """
def @main(%x: Tensor[(8, 16), float32], %w: Tensor[(4, 16), float32]) {
  %0 = nn.dense(%x, %w, units=None);
  %1 = tanh(%0);
  (%1, sum(%1, axis=[1]))
}"""


def test_build_a_module_a_function_and_a_relay_function() -> None:
    mod = relay.parse(PROGRAM)
    x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16)
    w = np.linspace(1, -1, 64, dtype=np.float32).reshape(4, 16)
    want = relay.interpret(mod, x, w)
    for program in (mod, mod.functions[mod.get_global_var("main")]):
        exe = relay.build(program)
        assert isinstance(exe, relay.Executable) and exe.kind == "graph"
        for g, e in zip(exe(x, w), want, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)

    @relay
    def f(x: Tensor[float32, (3,)]) -> Tensor[float32, (3,)]:
        return np.exp(x) * 2.0

    v = np.array([0, 1, 2], np.float32)
    np.testing.assert_allclose(relay.build(f)(v), np.exp(v) * 2, rtol=1e-6)


def test_build_errors() -> None:
    with pytest.raises(CompileError, match="the module has no function @main"):
        relay.build(relay.parse("def @f() { 1f }"))
    with pytest.raises(CompileError, match="cannot build a int"):
        relay.build(3)


def test_executable_text_shows_the_fused_program() -> None:
    exe = relay.build(relay.parse(PROGRAM))
    text = exe.astext()
    assert "Primitive=1" in text and "nn.dense" in text
    assert repr(exe).startswith("<relay Executable @main (")


LOADER = """
import sys, numpy as np, relay
from relay.backend.cache import kernel_cache
exe = relay.Executable.load(sys.argv[1])
x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16)
w = np.linspace(1, -1, 64, dtype=np.float32).reshape(4, 16)
a, b = exe(x, w)
np.save(sys.argv[2], np.concatenate([a.ravel(), b.ravel()]))
c = kernel_cache()
print(exe.kind, c.misses + c.disk_hits + c.hits)
"""


def test_save_and_load_in_a_fresh_process(tmp_path: Path) -> None:
    exe = relay.build(relay.parse(PROGRAM))
    path = tmp_path / "prog.relay"
    exe.save(path)
    env = {**os.environ, "RELAY_CACHE": "0"}
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(path), str(tmp_path / "out.npy")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    assert out == ["graph", "0"]  # nothing compiled, nothing looked up
    x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16)
    w = np.linspace(1, -1, 64, dtype=np.float32).reshape(4, 16)
    a, b = exe(x, w)
    np.testing.assert_array_equal(
        np.load(tmp_path / "out.npy"), np.concatenate([a.ravel(), b.ravel()])
    )


def test_load_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.relay"
    bad.write_bytes(b"not a zip")
    with pytest.raises(CompileError, match="is not a relay executable"):
        relay.Executable.load(bad)


@relay
def scale(x):  # type: ignore[no-untyped-def]
    return x * 2.0 + 1.0


def test_load_reports_damaged_content_as_a_compile_error(tmp_path: Path) -> None:
    # a changed byte in a member's data failed the zip's CRC or its decompression with
    # zipfile's and zlib's own exceptions
    exe = relay.build(scale.specialize(np.ones(1000, "f4")))
    path = tmp_path / "f.relay"
    exe.save(path)
    data = path.read_bytes()
    bad = tmp_path / "bad.relay"
    at = data.index(b"kernels.so") + 200
    flipped = bytearray(data)
    flipped[at] ^= 0x10
    bad.write_bytes(bytes(flipped))
    with pytest.raises(CompileError, match=f"^{re.escape(str(bad))} is not a relay executable: "):
        relay.Executable.load(bad)
    # a change anywhere is found, or changes nothing that matters (a time stamp)
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    loaded = 0
    for at in range(0, len(data), len(data) // 50):
        flipped = bytearray(data)
        flipped[at] ^= 0x01
        bad.write_bytes(bytes(flipped))
        try:
            back = relay.Executable.load(bad)
        except CompileError as err:
            assert err.message.startswith(f"{bad} is not a relay executable: ")
            continue
        np.testing.assert_array_equal(back(x), exe(x))
        loaded += 1
    assert loaded < 10


def rewrite(path: Path, target: Path, edit: Callable[[dict[str, bytes]], object]) -> None:
    """Write ``target``: the members of the zip file ``path``, changed by ``edit``."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    edit(files)
    with zipfile.ZipFile(target, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)


def edit_meta(change: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, bytes]], None]:
    def edit(files: dict[str, bytes]) -> None:
        meta = json.loads(files["executable.json"])
        change(meta)
        files["executable.json"] = json.dumps(meta).encode()

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda files: files.pop("kernels.so"), "it has no kernels.so"),
        (lambda files: files.pop("executable.json"), "it has no executable.json"),
        (
            lambda files: files.update({"executable.json": b"[]"}),
            "its executable.json is no object",
        ),
        (
            edit_meta(lambda meta: meta["plan"]["slot_types"][1][0].__setitem__(0, 100)),
            "an output of step 0 (fused_multiply_add_0) is slot 1 of type "
            "Tensor[(100,), float32], not Tensor[(1000,), float32]",
        ),
        (
            edit_meta(lambda meta: meta["plan"].update(steps=[])),
            "the result slot 1 is never written",
        ),
        (
            edit_meta(lambda meta: meta.pop("entry")),
            "its executable.json has a missing or malformed field (KeyError: 'entry')",
        ),
        (
            edit_meta(lambda meta: meta.update(target=3)),
            "its executable.json has a missing or malformed field (AttributeError: 'int' "
            "object has no attribute 'get')",
        ),
    ],
)
def test_load_refuses_a_file_whose_parts_do_not_fit(
    tmp_path: Path, edit: Callable[[dict[str, bytes]], object], message: str
) -> None:
    exe = relay.build(scale.specialize(np.ones(1000, "f4")))
    exe.save(tmp_path / "f.relay")
    bad = tmp_path / "bad.relay"
    rewrite(tmp_path / "f.relay", bad, edit)
    with pytest.raises(CompileError) as info:
        relay.Executable.load(bad)
    assert info.value.message == f"{bad} is not a relay executable: {message}"


def test_interpreted_executables_save_too(tmp_path: Path) -> None:
    # a `?` argument passed where a size is declared: checked at run time, so interpreted
    mod = relay.parse(
        """
def @f(%x: Tensor[(3,), float32]) -> Tensor[(3,), float32] { negative(%x) }
def @main(%x: Tensor[(?,), float32], %c: bool) -> Tensor[(3,), float32] {
  if (%c) { @f(%x) } else { @f(%x) }
}"""
    )
    exe = relay.build(mod)
    assert exe.kind == "interpreter"
    exe.save(tmp_path / "i.relay")
    back = relay.Executable.load(tmp_path / "i.relay")
    assert back.kind == "interpreter"
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(back(x, True), -x)


def test_relay_checks_names_the_kernel_that_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.op.registry import get_op

    opdef = get_op("negative")

    def wrong(call):  # a broken lowering: the identity instead of negation
        from tvm import te

        (x,) = call.args
        return te.compute(x.shape, lambda *i: x(*i), name="T_wrong")

    monkeypatch.setattr(opdef, "lowering", wrong)
    mod = relay.parse(
        """
def @main(%x: Tensor[(13, 7), float32]) {
  %0 = exp(%x);
  negative(%0)
}"""
    )
    x = np.ones((13, 7), np.float32)
    try:
        with relay.flags.override(cache=False):
            kernel_cache().clear_memory()
            exe = relay.build(mod, opt_level=0)  # exp and negative in kernels of their own
            exe(x)  # no checks: the wrong answer goes unnoticed
            with relay.flags.override(checks=True), pytest.raises(ExecutionError) as info:
                exe(x)
    finally:
        kernel_cache().clear_memory()
    message = str(info.value)
    assert "differs from the interpreter" in message
    assert "first differing kernel: fused_negative_1" in message
    assert "negative(%p0)" in message


def test_saved_executables_say_their_format(tmp_path: Path) -> None:
    # format 2: plan steps may pass a shared kernel its sizes, which a reader of format 1
    # would drop (it refuses the file); files of format 1 still load
    import json
    import zipfile

    exe = relay.build(relay.parse(PROGRAM))
    path = tmp_path / "prog.relay"
    exe.save(path)
    with zipfile.ZipFile(path) as z:
        assert json.loads(z.read("executable.json"))["format"] == 2
        files = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(files["executable.json"])
    old = tmp_path / "old.relay"
    for fmt, target in ((1, old), (3, tmp_path / "new.relay")):
        files["executable.json"] = json.dumps({**meta, "format": fmt}).encode()
        with zipfile.ZipFile(target, "w") as z:
            for n, data in files.items():
                z.writestr(n, data)
    x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16)
    w = np.linspace(1, -1, 64, dtype=np.float32).reshape(4, 16)
    for a, b in zip(relay.Executable.load(old)(x, w), exe(x, w), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(CompileError, match="unsupported executable format 3"):
        relay.Executable.load(tmp_path / "new.relay")


def test_checks_trace_a_loaded_executables_kernels(tmp_path: Path) -> None:
    # the first differing kernel is found by replaying the plan on the program's primitive
    # functions, which a loaded executable has as parsed, untyped text
    from relay.backend.checks import _first_bad_kernel

    exe = relay.build(relay.parse(PROGRAM))
    exe.save(tmp_path / "prog.relay")
    loaded = relay.Executable.load(tmp_path / "prog.relay")
    x = np.linspace(-1, 1, 128, dtype=np.float32).reshape(8, 16)
    w = np.linspace(1, -1, 64, dtype=np.float32).reshape(4, 16)
    assert _first_bad_kernel(loaded, (x, w)) is None


def test_relay_checks_accept_a_long_sum_rounded_in_another_order() -> None:
    # a product of depth 2100: the kernel and the interpreter (numpy's BLAS) sum in other
    # orders, and where the terms cancel the results differ by more than rtol=1e-4 of
    # themselves, but by a few 1e-6 of the result's scale (RELAY_CHECKS reported it)
    mod = relay.parse(
        """
def @main(%x: Tensor[(64, 2100), float32], %w: Tensor[(96, 2100), float32]) {
  nn.dense(%x, %w)
}"""
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2100)).astype(np.float32)
    w = rng.standard_normal((96, 2100)).astype(np.float32)
    exe = relay.build(mod)
    got = exe(x, w)
    want = np.asarray(exe.interpret(x, w))
    assert not np.allclose(got, want, rtol=1e-4, atol=1e-5)  # (the old bound's false report)
    with relay.flags.override(checks=True):
        np.testing.assert_array_equal(exe(x, w), got)


def test_relay_checks_report_a_small_error_in_a_result_of_similar_values() -> None:
    from relay.backend.checks import difference

    want = np.full((4, 4), 10.0, np.float32)
    got = want.copy()
    got[1, 2] = 10.01  # 1e-3 of the value and of the scale
    assert difference(got, want) == (
        "result 0 differs at [1, 2]: 10.01 instead of 10.0 (1 of 16 elements differ)"
    )
    got[1, 2] = np.nan
    assert difference(got, want) is not None
    got[1, 2] = 10.00001  # within rtol
    assert difference(got, want) is None
