"""Tiered compilation (relay.backend.tiers): a first tier of shared product kernels, the
specialized second tier compiled in the background, the same bits from both."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relay
from relay.backend import graph_executor
from relay.backend.cache import kernel_cache
from relay.errors import CompileError
from tests.backend.test_share import layers_inputs, layers_reference

pytestmark = pytest.mark.tvm


def two_layers() -> Any:
    """A new ``@relay`` function (compiled afresh): two dense layers of depths 300 and 200,
    whose products share a kernel in the first tier."""

    @relay
    def layers(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
        h = np.maximum(relay.nn.dense(x, w1) + b1, 0.0)
        return np.maximum(relay.nn.dense(h, w2) + b2, 0.0)

    return layers


@pytest.fixture
def background(monkeypatch: pytest.MonkeyPatch) -> list[Callable[[], None]]:
    """The second tiers' work, kept here instead of run on a thread: a test runs it. The
    libraries in memory are forgotten first (a program whose second tier is cached
    already gets one tier)."""
    kernel_cache().clear_memory()
    work: list[Callable[[], None]] = []

    def keep(job: Callable[[bool], None], name: str, ready: object) -> None:
        work.append(lambda: job(False))

    monkeypatch.setattr(kernel_cache(), "in_background", keep)
    return work


def kernels_of(exe: Any) -> list[tuple[str, list[int]]]:
    return [(s.kernel, s.values) for s in exe.graph.plan.steps if not s.is_alias]


def test_the_first_tier_shares_the_second_specializes_with_the_same_bits(
    background: list[Callable[[], None]],
) -> None:
    args = layers_inputs()
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    (first_kernel, first_values), (second_kernel, second_values) = kernels_of(exe)
    assert first_kernel == second_kernel and (first_values, second_values) == ([300], [200])
    assert exe.upgrading and len(background) == 1
    first = exe(*args)
    np.testing.assert_allclose(first, layers_reference(*args), rtol=2e-5, atol=2e-5)
    background.pop()()  # the second tier compiles, and takes over
    assert not exe.upgrading
    (k1, v1), (k2, v2) = kernels_of(exe)
    assert k1 != k2 and (v1, v2) == ([], [])
    np.testing.assert_array_equal(exe(*args), first)  # bit for bit


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_both_tiers_give_the_same_bits(seed: int, background: list[Callable[[], None]]) -> None:
    args = layers_inputs(seed)
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    first = exe(*args)
    background.pop()()
    assert kernels_of(exe)[0][0] != kernels_of(exe)[1][0]
    np.testing.assert_array_equal(exe(*args), first)


def test_a_function_moves_its_fast_path_to_the_second_tier(
    background: list[Callable[[], None]],
) -> None:
    args = layers_inputs()
    f = two_layers()
    first = f(*args)
    exe = f._compiled_for(args).runtime["executable"]
    tier_one = exe.graph
    np.testing.assert_array_equal(f(*args), first)
    assert f._fast  # the fast path, on the first tier
    runners = set(map(id, f._fast.values()))
    background.pop()()
    assert exe.graph is not tier_one and not f._fast  # dropped with the first tier
    np.testing.assert_array_equal(f(*args), first)
    assert f._fast and not runners & set(map(id, f._fast.values()))  # the second tier's


def test_the_program_cache_records_the_second_tier(
    tmp_path: Path, background: list[Callable[[], None]]
) -> None:
    args = layers_inputs()
    with relay.flags.override(cache_dir=str(tmp_path), cache=True):
        exe = relay.build(two_layers().specialize(*args), tiered=True)
        exe(*args)
        assert not list(tmp_path.glob("P*.json"))  # (the first tier is not recorded)
        background.pop()()
        kernel_cache().flush()
        assert len(list(tmp_path.glob("P*.json"))) == 1
        hits = kernel_cache().program_hits
        again = relay.build(two_layers().specialize(*args), tiered=True)
    assert kernel_cache().program_hits == hits + 1 and not again.upgrading and not background
    (k1, _), (k2, _) = kernels_of(again)
    assert k1 != k2


def test_a_second_tier_that_fails_leaves_the_first(
    monkeypatch: pytest.MonkeyPatch,
    background: list[Callable[[], None]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    def failing(*_: Any, **__: Any) -> Any:
        raise CompileError("no second tier today")

    args = layers_inputs()
    monkeypatch.setattr(graph_executor, "compile_plan", failing)
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    first = exe(*args)
    listened: list[int] = []
    exe.on_upgrade(lambda: listened.append(1))
    with relay.flags.override(debug=1):
        background.pop()()
    assert "its second tier failed: no second tier today" in capsys.readouterr().err
    assert not exe.upgrading and not listened
    np.testing.assert_array_equal(exe(*args), first)
    assert kernels_of(exe)[0][0] == kernels_of(exe)[1][0]


@pytest.mark.parametrize(
    "case",
    ["relay.build", "RELAY_TIERS=0", "RELAY_SHARE_KERNELS=1", "nothing shared"],
)
def test_programs_with_one_tier(case: str, background: list[Callable[[], None]]) -> None:
    args = layers_inputs()
    flags: dict[str, bool] = {}
    tiered = True
    program = two_layers().specialize(*args)
    if case == "relay.build":
        tiered = False
    elif case == "RELAY_TIERS=0":
        flags["tiers"] = False
    elif case == "RELAY_SHARE_KERNELS=1":
        flags["share_kernels"] = True
    else:

        @relay
        def one_layer(x, w1, b1):  # type: ignore[no-untyped-def]
            return np.maximum(relay.nn.dense(x, w1) + b1, 0.0)

        args = args[:3]
        program = one_layer.specialize(*args)
    with relay.flags.override(**flags):  # type: ignore[arg-type]
        exe = relay.build(program, tiered=tiered)
    assert not exe.upgrading and not background
    steps = kernels_of(exe)
    if case == "nothing shared":
        assert steps == [(steps[0][0], [])]
    else:  # (shared for good, or each product on its own kernel)
        assert (steps[0][0] == steps[1][0]) == (case == "RELAY_SHARE_KERNELS=1")


def test_a_process_leaves_its_second_tier_in_the_cache_as_it_exits(tmp_path: Path) -> None:
    # one call and exit: the second tier compiles while the interpreter shuts down (no
    # ThreadPoolExecutor takes work then), and the next process finds it
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        import relay
        from relay.backend.cache import kernel_cache

        @relay
        def layers(x, w1, b1, w2, b2):
            h = np.maximum(relay.nn.dense(x, w1) + b1, 0.0)
            return np.maximum(relay.nn.dense(h, w2) + b2, 0.0)

        rng = np.random.default_rng(7)
        x = rng.standard_normal((64, 300)).astype(np.float32)
        w1 = rng.standard_normal((200, 300)).astype(np.float32)
        w2 = rng.standard_normal((200, 200)).astype(np.float32)
        b = np.zeros(200, np.float32)
        out = layers(x, w1, b, w2, b)
        exe = layers._compiled_for((x, w1, b, w2, b)).runtime["executable"]
        steps = [s for s in exe.graph.plan.steps if not s.is_alias]
        print(kernel_cache().program_hits, len({s.kernel for s in steps}), out.sum())
        """
    )
    path = tmp_path / "layers.py"
    path.write_text(script)
    env = {"RELAY_CACHE_DIR": str(tmp_path / "cache"), "RELAY_CACHE": "1", "RELAY_DEBUG": "1"}
    env |= {"RELAY_TIERS": "1", "RELAY_SHARE_KERNELS": "0"}
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(path)],
            capture_output=True,
            text=True,
            env={**_environ(), **env},
            timeout=300,
            check=True,
        )
        assert "second tier failed" not in done.stderr, done.stderr
        runs.append(done.stdout.split())
    # the first process ran its first tier (one kernel for both products), the second
    # loaded the second tier from the program cache (two), with the same result
    assert runs[0][:2] == ["0", "1"] and runs[1][:2] == ["1", "2"]
    assert runs[0][2] == runs[1][2]


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_a_save_while_the_second_tier_takes_over_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, background: list[Callable[[], None]]
) -> None:
    # the second tier replaces the graph in the middle of save: the file holds one tier's
    # plan with the same tier's kernels (a plan of one with the other's kernels read past
    # its buffers)
    from relay.backend.graph_executor import GraphPlan

    args = layers_inputs()
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    first = exe(*args)
    to_json = GraphPlan.to_json

    def upgrading_midway(plan: GraphPlan) -> Any:  # (after save read the plan)
        while background:
            background.pop()()
        return to_json(plan)

    monkeypatch.setattr(GraphPlan, "to_json", upgrading_midway)
    exe.save(tmp_path / "layers.relay")
    assert not exe.upgrading
    again = relay.Executable.load(tmp_path / "layers.relay")
    np.testing.assert_array_equal(again(*args), first)


def test_a_runner_made_while_the_second_tier_takes_over_is_dropped(
    background: list[Callable[[], None]],
) -> None:
    from relay.frontend.function import fast_call, remember_fast

    args = layers_inputs()
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    exe(*args)
    made = exe.matched

    def upgrading_midway(a: Any) -> Any:
        runner = made(a)  # (the first tier's)
        background.pop()()
        return runner

    exe.matched = upgrading_midway  # type: ignore[method-assign]
    fast: dict[Any, Any] = {}
    remember_fast(fast, {"fast": exe}, args)
    assert fast == {}  # the next call takes the full path, and the second tier
    # a runner that returns after the runners were dropped does not come back
    key = tuple((a.dtype, a.shape) for a in args)

    def runner(*a: Any) -> Any:
        fast.clear()
        return 1

    runner.exact = True  # type: ignore[attr-defined]
    fast[key] = runner
    assert fast_call(fast, args) == 1 and None not in fast


def test_a_second_tier_runs_under_the_flags_of_its_program(tmp_path: Path) -> None:
    import threading

    seen: list[tuple[str, bool]] = []
    ready = threading.Event()

    def work(exiting: bool) -> None:
        flags = relay.flags.get()
        seen.append((flags.cache_dir, exiting))

    with relay.flags.override(cache_dir=str(tmp_path)):
        kernel_cache().in_background(work, "relay-test-tier", ready)
    assert relay.flags.get().cache_dir != str(tmp_path)
    ready.set()
    kernel_cache().flush()
    assert seen == [(str(tmp_path), False)]


def test_a_second_tier_started_from_a_daemon_thread_is_waited_for() -> None:
    import threading

    daemons: list[bool] = []
    ready = threading.Event()

    def start() -> None:
        kernel_cache().in_background(lambda exiting: None, "relay-test-daemon", ready)
        daemons.extend(t.daemon for t in threading.enumerate() if t.name == "relay-test-daemon")

    caller = threading.Thread(target=start, daemon=True)
    caller.start()
    caller.join()
    ready.set()
    kernel_cache().flush()
    assert daemons == [False]


def test_a_program_whose_second_tier_is_cached_gets_it_at_once(
    background: list[Callable[[], None]],
) -> None:
    args = layers_inputs()
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    exe(*args)
    background.pop()()
    misses = kernel_cache().misses
    again = relay.build(two_layers().specialize(*args), tiered=True)
    assert not again.upgrading and not background and kernel_cache().misses == misses
    (k1, _), (k2, _) = kernels_of(again)
    assert k1 != k2


def test_listeners_of_an_upgrade_are_kept_once(background: list[Callable[[], None]]) -> None:
    args = layers_inputs()
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    fast: dict[Any, Any] = {"x": 1}
    for _ in range(3):
        exe.on_upgrade(fast.clear)
    assert len(exe._on_upgrade) == 1
    background.pop()()
    assert fast == {} and exe._on_upgrade == []


def test_the_program_key_says_whether_products_share_kernels_for_good() -> None:
    from relay.backend.cache import program_key
    from relay.backend.target import Target

    plain = program_key("text", Target(), 3)
    with relay.flags.override(share_kernels=True):
        assert program_key("text", Target(), 3) != plain
