"""The program cache: a whole program's plan kept on disk beside its kernel library, so that
a second process skips optimization, fusion and lowering as well as compilation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relay
from relay.backend.build import build
from relay.backend.cache import kernel_cache

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


@pytest.mark.parametrize("damage", ["garbage", "other-key", "missing-library"])
def test_damaged_records_are_misses(cache_dir: Path, damage: str) -> None:
    cache = kernel_cache()
    build(program(0.5))
    cache.flush()
    (record,) = cache_dir.glob("P*.json")
    if damage == "garbage":
        record.write_text("{not json")
    elif damage == "other-key":
        data = json.loads(record.read_text())
        data["key"] = "0" * 64
        record.write_text(json.dumps(data))
    else:
        for so in cache_dir.glob("*.so"):
            so.unlink()
        cache.clear_memory()
    hits = cache.program_hits
    check(build(program(0.5)), program(0.5))
    assert cache.program_hits == hits
    cache.flush()
    assert json.loads(record.read_text())["key"] == record.stem[1:]  # written again


def test_no_records_without_the_disk_cache(tmp_path: Path) -> None:
    with relay.flags.override(cache_dir=str(tmp_path / "k"), cache=False):
        check(build(program(0.5)), program(0.5))
    assert not (tmp_path / "k").exists()


CALLER = """
import numpy as np, relay
from relay.backend.cache import kernel_cache

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
from relay.backend.cache import kernel_cache

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
