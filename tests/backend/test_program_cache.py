"""The program cache: a whole program's plan kept on disk beside its kernel library, so that
a second process skips optimization, fusion and lowering as well as compilation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relay
from relay.backend.build import build
from relay.backend.cache import _digest, kernel_cache, sealed, unsealed

pytestmark = pytest.mark.tvm


def program(bias: float) -> relay.Module:
    """A dense layer with a constant bias (broadcast: the plan holds no constant, the
    program's text differs with ``bias``)."""
    return relay.parse(
        f"""
        def @main(%x: Tensor[(3, 4), float32], %w: Tensor[(5, 4), float32]) {{
          %0 = nn.dense(%x, %w);
          %1 = add(%0, broadcast_to({bias}f, shape=[5]));
          (nn.relu(%1), sum(%1, axis=[1]))
        }}"""
    )


def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4)).astype("float32"), rng.standard_normal((5, 4)).astype(
        "float32"
    )


def check(exe: relay.backend.build.Executable, mod: relay.Module) -> None:
    x, w = inputs()
    for got, want in zip(exe(x, w), relay.interpret(mod, x, w), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_second_build_is_a_program_cache_hit(cache_dir: Path) -> None:
    cache = kernel_cache()
    mod = program(0.5)
    first = build(mod)
    cache.flush()
    (record,) = cache_dir.glob("P*.json")
    data = json.loads(record.read_text())
    assert data["library"] == first.graph.library.key  # type: ignore[union-attr]
    hits = cache.program_hits
    second = build(program(0.5))  # the same program, parsed again
    assert cache.program_hits == hits + 1
    check(second, mod)
    # the optimized module is made only when asked for, and is the same program
    assert second._module is None
    assert second.astext() == first.astext()
    x, w = inputs()
    np.testing.assert_allclose(second.interpret(x, w)[0], second(x, w)[0], rtol=1e-5)


def test_another_program_or_target_is_a_miss(cache_dir: Path) -> None:
    cache = kernel_cache()
    build(program(0.5))
    cache.flush()
    hits = cache.program_hits
    check(build(program(0.25)), program(0.25))  # a different constant
    check(build(program(0.5), opt_level=2), program(0.5))
    check(build(program(0.5), target=relay.Target("llvm", fast_math=False)), program(0.5))
    assert cache.program_hits == hits
    cache.flush()
    assert len(list(cache_dir.glob("P*.json"))) == 4


def reseal(record: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    """Apply ``edit`` to the record's data and write it with a checksum that matches."""
    data = json.loads(record.read_text())
    del data["checksum"]
    edit(data)
    record.write_bytes(sealed(json.dumps(data).encode()))


def test_records_carry_a_checksum_of_their_text(cache_dir: Path) -> None:
    build(program(0.5))
    kernel_cache().flush()
    (record,) = cache_dir.glob("P*.json")
    text = record.read_bytes()
    data = json.loads(text)
    assert list(data)[:3] == ["checksum", "format", "key"] and data["format"] == 2
    body = unsealed(text)
    assert body is not None and _digest(body) == data["checksum"]
    assert json.loads(body) == {k: v for k, v in data.items() if k != "checksum"}


@pytest.mark.parametrize(
    "damage",
    [
        "garbage",
        "not-an-object",
        "a-changed-digit",
        "truncated",
        "no-checksum",
        "other-key",
        "missing-library",
    ],
)
def test_damaged_records_are_misses(cache_dir: Path, damage: str) -> None:
    cache = kernel_cache()
    build(program(0.5))
    cache.flush()
    (record,) = cache_dir.glob("P*.json")
    text = record.read_text()
    if damage == "garbage":
        record.write_text("{not json")
    elif damage == "not-an-object":
        record.write_text("null")
    elif damage == "a-changed-digit":
        record.write_text(text.replace('"slot_types": [[[3, 4]', '"slot_types": [[[3, 5]', 1))
        assert record.read_text() != text
    elif damage == "truncated":
        record.write_text(text[: len(text) // 2])
    elif damage == "no-checksum":  # (a record of format 1)
        data = json.loads(text)
        del data["checksum"]
        record.write_text(json.dumps(data))
    elif damage == "other-key":
        reseal(record, lambda data: data.update(key="0" * 64))
    else:
        for so in cache_dir.glob("*.so"):
            so.unlink()
        cache.clear_memory()
    key = record.stem[1:]
    if damage == "missing-library":  # (the record is whole: its library's lookup misses)
        assert cache.lookup_program(key) is not None
    else:  # a record that is not one is removed at once
        assert cache.lookup_program(key) is None and not record.exists()
    hits = cache.program_hits
    check(build(program(0.5)), program(0.5))
    assert cache.program_hits == hits
    cache.flush()
    assert json.loads(record.read_text())["key"] == key  # written again
    assert cache.lookup_program(key) is not None


SCALE = """
def @main(%x: Tensor[(300000,), float32]) -> Tensor[(300000,), float32] {
  add(multiply(%x, 2f), 1f)
}"""


SCALER = """
import numpy as np, relay
from relay.backend.cache import kernel_cache

@relay
def f(x):
    return x * 2.0 + 1.0

out = f(np.ones(300000, "f4"))
kernel_cache().flush()
print(kernel_cache().program_hits, float(out.sum()))
"""


def test_a_record_with_a_changed_digit_is_recompiled_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a result of 100000 floats in the record (valid JSON) for a kernel that writes 300000:
    # the next process wrote past the buffer and died of a segmentation fault
    cache_dir = tmp_path / "k"
    monkeypatch.setenv("RELAY_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("RELAY_CACHE", "1")
    script = tmp_path / "scaler.py"  # @relay reads the function's source from its file
    script.write_text(SCALER)

    def run() -> list[str]:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert run() == ["0", "900000.0"]
    (record,) = cache_dir.glob("P*.json")
    text = record.read_text()
    assert text.count("[[300000]") == 2  # (the parameter's slot and the result's)
    record.write_text(text.replace('"float32"], [[300000]', '"float32"], [[100000]'))
    assert run() == ["0", "900000.0"]  # a miss: compiled again
    assert record.read_text() == text  # and written again
    assert run() == ["1", "900000.0"]


def plan_edit(path: list[Any], value: object) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        target = data["plan"]
        for k in path[:-1]:
            target = target[k]
        target[path[-1]] = value

    return edit


def a_reshape_of_another_size(data: dict[str, Any]) -> None:
    plan = data["plan"]
    plan["slot_types"].append([[100], "float32"])
    plan["steps"].append(["", [1], [2], [], []])
    plan["result"] = 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            plan_edit(["slot_types", 1, 0], [100000]),
            "an output of step 0 (fused_multiply_add_0) is slot 1 of type "
            "Tensor[(100000,), float32], not Tensor[(300000,), float32]",
        ),
        (
            plan_edit(["slot_types", 0, 1], "float64"),
            "parameter 0 is slot 0 of type Tensor[(300000,), float64], "
            "not Tensor[(300000,), float32]",
        ),
        (plan_edit(["result"], 7), "the plan has no slot 7"),
        (plan_edit(["result"], [1, [0, 2]]), "the plan has no slot 2"),
        (plan_edit(["steps"], []), "the result slot 1 is never written"),
        (
            plan_edit(["steps", 0, 1], [1]),
            "step 0 (fused_multiply_add_0) reads slot 1 before it is written",
        ),
        (
            plan_edit(["steps", 0, 2], [0]),
            "step 0 (fused_multiply_add_0) writes slot 0 again",
        ),
        (
            plan_edit(["steps", 0, 0], "fused_other"),
            "step 0 (fused_other): the library has no kernel fused_other",
        ),
        (
            plan_edit(["steps", 0, 1], [0, 0]),
            "step 0 (fused_multiply_add_0) passes 2 inputs and 1 outputs to a kernel of 1 and 1",
        ),
        (
            plan_edit(["steps", 0, 3], [0]),
            "step 0 (fused_multiply_add_0) passes sizes the plan does not have: [0]",
        ),
        (
            plan_edit(["steps", 0, 4], [5]),
            "step 0 (fused_multiply_add_0) does not pass its kernel's 0 sizes",
        ),
        (
            a_reshape_of_another_size,
            "step 1 (a reshape) makes a Tensor[(100,), float32] of a Tensor[(300000,), float32]",
        ),
    ],
)
def test_a_record_that_does_not_fit_its_kernels_is_a_miss(
    cache_dir: Path, capsys: pytest.CaptureFixture[str], edit: Any, message: str
) -> None:
    # a record with a checksum that matches, whose plan would write past a buffer (a
    # result of 100000 floats for a kernel of 300000 crashed the process), return nothing
    # (no steps) or read slots the plan does not have: it is never run
    cache = kernel_cache()
    mod = relay.parse(SCALE)
    build(mod)
    cache.flush()
    (record,) = cache_dir.glob("P*.json")
    reseal(record, edit)
    hits = cache.program_hits
    with relay.flags.override(debug=1):
        exe = build(relay.parse(SCALE))
    assert cache.program_hits == hits
    key = record.stem[1:]
    assert f"program cache entry {key[:12]} does not load ({message})" in capsys.readouterr().err
    x = np.linspace(-1, 1, 300000, dtype=np.float32)
    np.testing.assert_allclose(exe(x), x * 2 + 1, rtol=1e-6)
    cache.flush()
    assert cache.lookup_program(key) is not None  # written again, and whole
    assert build(relay.parse(SCALE)) is not None and cache.program_hits == hits + 1


def test_no_records_without_the_disk_cache(tmp_path: Path) -> None:
    with relay.flags.override(cache_dir=str(tmp_path / "k"), cache=False):
        check(build(program(0.5)), program(0.5))
    assert not (tmp_path / "k").exists()


CALLER = """
import numpy as np, relay
from relay.backend.cache import _digest, kernel_cache, sealed, unsealed

@relay
def f(x, w):
    return np.tanh(relay.nn.dense(x, w)) * 2.0

x = np.ones((3, 4), np.float32)
w = np.full((5, 4), 0.25, np.float32)
out = f(x, w)
kernel_cache().flush()
c = kernel_cache()
print(c.program_hits, c.misses, float(out.sum()), f._compiled_for((x, w)).runtime["executable"].kind)
"""


LOOP_CALLER = """
import numpy as np, relay
from relay.backend.cache import _digest, kernel_cache, sealed, unsealed

@relay
def f(x, w):
    h = np.zeros(5, np.float32)
    for _ in range(15):
        h = np.tanh(relay.nn.dense(x, w)).sum(axis=0) * 2.0 / 3.0 + h * 0.0
    return h

x = np.ones((3, 4), np.float32)
w = np.full((5, 4), 0.25, np.float32)
out = f(x, w)
kernel_cache().flush()
c = kernel_cache()
print(c.program_hits, c.misses, float(out.sum()), f._compiled_for((x, w)).runtime["executable"].kind)
"""


@pytest.mark.parametrize("caller", [CALLER, LOOP_CALLER], ids=["graph", "vm"])
def test_a_second_process_compiles_and_optimizes_nothing(
    cache_dir: Path, tmp_path: Path, caller: str
) -> None:
    env = {**os.environ, "RELAY_CACHE_DIR": str(cache_dir), "RELAY_CACHE": "1"}
    script = tmp_path / "caller.py"  # @relay reads the function's source from its file
    script.write_text(caller)
    run = [sys.executable, str(script)]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout.split()
    second = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout.split()
    # compiled: the kernels, and for the loop a library of the kernels and the loop's own
    assert first[:2] == ["0", "1" if caller is CALLER else "2"]
    assert second[:2] == ["1", "0"]  # a program hit: no library lookup missed
    assert first[2] == second[2]
    assert first[3] == second[3] == ("graph" if caller is CALLER else "vm")
    # 15 outputs of 2 tanh(1); the loop's 5 outputs are 3 tanh(1) * 2 / 3
    want = 30 if caller is CALLER else 10
    assert float(first[2]) == pytest.approx(np.tanh(1.0) * want, rel=1e-6)


CALLS = """
def @leaf(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] { tanh(%x) }
def @mid(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] { @leaf(%x) * 2f }
def @other(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] { @leaf(%x) + 1f }
def @main(%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] { @mid(%x) - @other(%x) }
"""


def test_reachable_globals_come_in_the_modules_order() -> None:
    from relay.passes.remove_unused import reachable_globals

    mod = relay.parse(CALLS + "def @unused(%x: Tensor[(4,), float32]) { %x }")
    names = [g.name_hint for g in reachable_globals(mod, ["main"])]
    assert names == ["leaf", "mid", "other", "main"]
    assert [g.name_hint for g in reachable_globals(mod, ["mid"])] == ["leaf", "mid"]


def test_the_program_key_is_the_same_for_the_same_program(cache_dir: Path) -> None:
    # globals are hashed by address: a set of them came out in another order for another
    # parse (or process), the program printed differently and missed the cache
    from relay.backend.build import _program_key
    from relay.backend.target import Target
    from relay.typecheck.checker import infer_type

    keys = set()
    keep = []  # (new parses at new addresses)
    for _ in range(12):
        mod = infer_type(relay.parse(CALLS))
        keep.append(mod)
        keys.add(_program_key(mod, mod.get_global_var("main"), Target(), 2))
    assert len(keys) == 1 and None not in keys
