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
from hypothesis import assume, given, settings, strategies as st

import relay
from relay.backend import compiler, graph_executor
from relay.backend.cache import kernel_cache
from relay.backend.compiler import PRODUCTS, _ops, compile_functions, quick_product
from relay.backend.target import Target
from relay.errors import CompileError
from tests.backend.test_fused_programs import _primitives
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


@pytest.fixture
def no_second_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second tier fails to compile (a CompileError: "no second tier today")."""

    def failing(*_: Any, **__: Any) -> Any:
        raise CompileError("no second tier today")

    monkeypatch.setattr(graph_executor, "compile_plan", failing)


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


@pytest.mark.usefixtures("no_second_tier")
def test_a_second_tier_that_fails_leaves_the_first(
    background: list[Callable[[], None]], capsys: pytest.CaptureFixture[str]
) -> None:
    args = layers_inputs()
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


def test_a_first_tier_saves_its_second(
    tmp_path: Path, background: list[Callable[[], None]]
) -> None:
    # the first tier's library is not exported (its modules at -O0 do not link together):
    # a save compiles the second tier now if it has not started, and saves that
    args = layers_inputs()
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    first = exe(*args)
    assert exe.upgrading and exe.graph.library.quick
    with pytest.raises(CompileError, match="a first tier's kernel library is not exported"):
        exe.graph.library.export(tmp_path / "first.so")
    exe.save(tmp_path / "layers.relay")
    assert not exe.upgrading and not exe.graph.library.quick
    (k1, _), (k2, _) = kernels_of(exe)
    assert k1 != k2
    background.pop()()  # (the background job finds its work done)
    assert kernels_of(exe) == [(k1, []), (k2, [])]
    again = relay.Executable.load(tmp_path / "layers.relay")
    assert kernels_of(again) == kernels_of(exe)
    np.testing.assert_array_equal(again(*args), first)


@pytest.mark.usefixtures("no_second_tier")
def test_a_first_tier_whose_second_failed_saves_itself_compiled_again(
    tmp_path: Path, background: list[Callable[[], None]]
) -> None:
    args = layers_inputs()
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    first = exe(*args)
    background.pop()()
    assert not exe.upgrading and exe.graph.library.quick  # (the first tier stays)
    exe.save(tmp_path / "layers.relay")  # (its kernels shared, at the usual levels)
    assert not exe.graph.library.quick
    (k1, v1), (k2, v2) = kernels_of(exe)
    assert k1 == k2 and (v1, v2) == ([300], [200])
    again = relay.Executable.load(tmp_path / "layers.relay")
    assert kernels_of(again) == kernels_of(exe)
    np.testing.assert_array_equal(again(*args), first)


@pytest.mark.usefixtures("no_second_tier")
def test_a_function_drops_its_fast_path_when_a_save_replaces_a_failed_tier(
    tmp_path: Path, background: list[Callable[[], None]]
) -> None:
    args = layers_inputs()
    f = two_layers()
    first = f(*args)
    exe = f._compiled_for(args).runtime["executable"]
    background.pop()()  # (fails: the first tier stays, and may still be replaced)
    assert not exe.upgrading and exe.replaceable
    np.testing.assert_array_equal(f(*args), first)
    assert f._fast  # (a fast path on the first tier)
    exe.save(tmp_path / "layers.relay")
    assert not exe.replaceable and not f._fast
    np.testing.assert_array_equal(f(*args), first)


def test_a_save_compiles_the_second_tier_under_the_flags_of_its_program(
    tmp_path: Path, background: list[Callable[[], None]]
) -> None:
    built, saved = tmp_path / "built", tmp_path / "saved"
    args = layers_inputs()
    with relay.flags.override(cache_dir=str(built), cache=True):
        exe = relay.build(two_layers().specialize(*args), tiered=True)
        exe(*args)
    with relay.flags.override(cache_dir=str(saved), cache=True):
        exe.save(tmp_path / "layers.relay")
        kernel_cache().flush()
    assert list(built.rglob("*.so")) and list(built.rglob("P*.json"))
    assert not list(saved.rglob("*.so"))


def test_a_save_interrupted_while_it_compiles_the_second_tier_leaves_no_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, background: list[Callable[[], None]]
) -> None:
    compile_plan = graph_executor.compile_plan
    interruptions = [1]

    def interrupted(*a: Any, **k: Any) -> Any:
        if interruptions:
            interruptions.pop()
            raise KeyboardInterrupt
        return compile_plan(*a, **k)

    args = layers_inputs()
    monkeypatch.setattr(graph_executor, "compile_plan", interrupted)
    exe = relay.build(two_layers().specialize(*args), tiered=True)
    first = exe(*args)
    with pytest.raises(KeyboardInterrupt):
        exe.save(tmp_path / "layers.relay")
    assert not exe.upgrading  # (abandoned: the next save does not wait for it)
    exe.save(tmp_path / "layers.relay")
    assert not exe.graph.library.quick
    np.testing.assert_array_equal(relay.Executable.load(tmp_path / "layers.relay")(*args), first)


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


# ---- the first tier's products at -O0 (compiler.quick_product) ------------------------------

_FLOATS = {"float32": "f", "float64": "f64"}


@st.composite
def quick_programs(draw: st.DrawFn) -> tuple[str, str]:
    """A product (dense, matmul or batch_matmul, odd sizes) with an epilogue of
    QUICK_OPS, as relay text, and its dtype."""
    dtype = draw(st.sampled_from(sorted(_FLOATS)))
    c = _FLOATS[dtype]
    sizes = st.one_of(st.integers(1, 40), st.sampled_from([16, 32, 48, 64]))
    m, n, k = (draw(sizes) for _ in range(3))
    kind = draw(st.sampled_from(["nn.dense", "nn.matmul", "nn.batch_matmul"]))
    if kind == "nn.dense":
        a_shape, b_shape, out = (m, k), (n, k), (m, n)
    elif kind == "nn.matmul":
        a_shape, b_shape, out = (m, k), (k, n), (m, n)
    else:
        a_shape, b_shape, out = (2, m, k), (2, k, n), (2, m, n)

    def ty(shape: tuple[int, ...]) -> str:
        return f"Tensor[({', '.join(map(str, shape))},), {dtype}]".replace(",)", ")")

    lines = [f"%0 = {kind}(%a, %b);"]
    steps = draw(
        st.lists(
            st.sampled_from(
                [
                    "add(%{p}, %t)",
                    "subtract(%{p}, %t)",
                    "subtract(%t, %{p})",
                    "multiply(%{p}, %t)",
                    "multiply(%{p}, {s}{c})",
                    "divide(%{p}, %t)",
                    "add(multiply(%{p}, %t), %t)",
                    "subtract(%t, multiply(%{p}, {s}{c}))",
                    "subtract(multiply(%{p}, %t), %t)",
                    "nn.relu(%{p})",
                    "maximum(%{p}, {s}{c})",
                    "minimum(%{p}, %t)",
                    "clip(%{p}, a_min=-1{c}, a_max=2{c})",
                    "where(greater(%{p}, 0{c}), %{p}, zeros_like(%{p}))",
                    'cast(cast(%{p}, dtype="float64"), dtype="{d}")',
                    "exp(%{p})",
                    "sigmoid(%{p})",
                    "multiply(sigmoid(%{p}), %t)",
                    "add(exp(%{p}), %t)",
                    "subtract(%t, multiply(exp(%{p}), {s}{c}))",
                    "subtract(%t, multiply(sigmoid(%{p}), {s}{c}))",
                ]
            ),
            min_size=1,
            max_size=4,
        )
    )
    scale = draw(st.sampled_from(["0.5", "3", "-0.25", "1.5", "-2"]))
    for i, step in enumerate(steps):
        lines.append(f"%{i + 1} = " + step.format(p=i, s=scale, c=c, d=dtype) + ";")
    text = (
        f"def @main(%a: {ty(a_shape)}, %b: {ty(b_shape)}, %t: {ty(out)}) {{\n  "
        + "\n  ".join(lines)
        + f"\n  %{len(steps)}\n}}"
    )
    return text, dtype


def _both_levels(prim: relay.ir.Function, args: list[np.ndarray]) -> tuple[Any, Any]:
    """``prim``'s kernel compiled quick (-O0) and as usual, run on ``args``."""
    target = Target("llvm")
    outs = []
    for quick in (True, False):
        lib, (name,) = compile_functions([prim], target, disk=False, quick=quick)
        assert lib.quick == quick
        (out,) = lib[name](*args)
        outs.append(out)
    return outs[0], outs[1]


def _inputs(prim: relay.ir.Function, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal([int(d) for d in p.checked_type.shape]).astype(p.checked_type.dtype)
        for p in prim.params
    ]


@settings(max_examples=40, deadline=None)
@given(program=quick_programs(), seed=st.integers(0, 3))
def test_quick_products_compute_the_bits_of_optimized_ones(
    program: tuple[str, str], seed: int
) -> None:
    text, dtype = program
    exe = relay.build(relay.parse(text))
    (prim,) = [p for p in _primitives(exe.module) if set(_ops(p)) & PRODUCTS]
    # (a product minus a value reading one of its inputs is not quick: see
    # test_a_product_minus_a_value_it_reads_is_not_quick; the steps can make one)
    assume(quick_product(prim))
    quick, optimized = _both_levels(prim, _inputs(prim, seed))
    bits = {"float16": np.int16, "float32": np.int32, "float64": np.int64}[dtype]
    np.testing.assert_array_equal(quick.view(bits), optimized.view(bits))


NEGATED = """def @main(%a: Tensor[(64, 48), float32], %b: Tensor[(32, 48), float32],
          %t: Tensor[(64, 32), float32]) {
  add(multiply(multiply(nn.dense(%a, %b), %t), -1f), %t)
}"""


SCALED_MINUS_SHARED = """def @main(%a: Tensor[(1, 4), float32], %b: Tensor[(4, 4), float32],
          %t: Tensor[(1, 4), float32]) {
  nn.relu(subtract(multiply(nn.relu(nn.dense(%a, %b)), %t), %t))
}"""


def test_a_product_minus_a_value_it_reads_is_not_quick() -> None:
    # the IEEE guard hides the right operand (it reads %t too), TVM emits no fmuladd, and
    # LLVM fuses the product with the subtraction from -O1 on only: 2 of 4 results an ulp
    # apart (found by test_quick_products_compute_the_bits_of_optimized_ones)
    exe = relay.build(relay.parse(SCALED_MINUS_SHARED))
    (prim,) = [p for p in _primitives(exe.module) if set(_ops(p)) & PRODUCTS]
    assert not quick_product(prim)
    _, optimized = _both_levels(prim, _inputs(prim, 0))
    want = exe.interpret(*_inputs(prim, 0))
    np.testing.assert_allclose(optimized, want, rtol=1e-6, atol=1e-6)


def test_a_negated_product_is_not_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    # LLVM makes the product by -1 a negation from -O1 on, and fuses it with the addition:
    # at -O0 the same kernel rounds twice
    exe = relay.build(relay.parse(NEGATED))
    (prim,) = [p for p in _primitives(exe.module) if set(_ops(p)) & PRODUCTS]
    assert not quick_product(prim)
    monkeypatch.setattr(compiler, "quick_product", lambda f: True)
    quick, optimized = _both_levels(prim, _inputs(prim, 0))
    assert not np.array_equal(quick, optimized)
    np.testing.assert_allclose(quick, optimized, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "epilogue",
    [
        "negative(multiply(%0, %t))",
        "subtract(%t, multiply(tanh(%0), 3f))",
        "full_like(%0, 2f)",
        "multiply(%0, -1f)",
        "add(subtract(-0f, multiply(%0, %t)), %t)",
        'cast(%0, dtype="float16")',
        'add(cast(cast(multiply(%0, %t), dtype="float16"), dtype="float32"), %t)',
        # values TVM's simplifier folds into -1, found by the review
        "add(multiply(multiply(%0, %t), subtract(zeros_like(%t), ones_like(%t))), %t)",
        "add(multiply(multiply(%0, %t), clip(zeros_like(%t), a_min=-1f, a_max=-1f)), %t)",
        'add(multiply(multiply(%0, %t), subtract(cast(not_equal(%t, %t), dtype="float32"), '
        'cast(equal(%t, %t), dtype="float32"))), %t)',
        "add(multiply(multiply(%0, %t), where(greater(%t, %t), %t, "
        "subtract(zeros_like(%t), ones_like(%t)))), %t)",
        "add(multiply(%0, where(greater(%t, %t), 2f, 3f)), %t)",
        # more multiply-adds that only -O2 fuses, found by the second review
        "subtract(divide(%0, 2f), multiply(%t, %t))",
        'add(cast(multiply(cast(%0, dtype="float64"), cast(%t, dtype="float64")), '
        'dtype="float32"), %t)',
    ],
)
def test_products_with_other_epilogues_are_not_quick(epilogue: str) -> None:
    text = NEGATED.replace(
        "add(multiply(multiply(nn.dense(%a, %b), %t), -1f), %t)",
        f"%0 = nn.dense(%a, %b);\n  {epilogue}",
    )
    exe = relay.build(relay.parse(text))
    (prim,) = [p for p in _primitives(exe.module) if set(_ops(p)) & PRODUCTS]
    assert not quick_product(prim)


@pytest.mark.parametrize(
    "epilogue",
    [
        "exp(multiply(%0, 40f))",
        "sigmoid(multiply(%0, 40f))",
        "subtract(%t, multiply(exp(multiply(%0, 40f)), 3f))",
        "add(multiply(sigmoid(multiply(%0, 40f)), %t), %t)",
    ],
)
def test_quick_exp_and_sigmoid_epilogues_keep_their_bits_where_they_saturate(
    epilogue: str,
) -> None:
    # products up to ~+-300 after the scaling: exp overflows to inf, underflows through
    # the subnormals to 0, sigmoid reaches 0 and 1 (the clamps of the fast exp)
    text = NEGATED.replace(
        "add(multiply(multiply(nn.dense(%a, %b), %t), -1f), %t)",
        f"%0 = nn.dense(%a, %b);\n  {epilogue}",
    )
    exe = relay.build(relay.parse(text))
    (prim,) = [p for p in _primitives(exe.module) if set(_ops(p)) & PRODUCTS]
    assert quick_product(prim)
    args = _inputs(prim, 1)
    quick, optimized = _both_levels(prim, args)
    np.testing.assert_array_equal(quick.view(np.int32), optimized.view(np.int32))
    scaled = (args[0] @ args[1].T) * 40
    assert scaled.max() > 89 and scaled.min() < -104  # (both ends reached)


def test_small_kernels_are_parted_as_in_the_second_tier(
    monkeypatch: pytest.MonkeyPatch, background: list[Callable[[], None]]
) -> None:
    # the quick products are a group of their own: the small kernels go to the same parts
    # at the same levels in both tiers (a negated product rounds differently at -O0 than
    # at -O1, where the second part of the small kernels goes)
    from relay.backend import runtime

    monkeypatch.setattr(runtime, "available_cores", lambda: 2)
    lines = [
        "%h1 = nn.relu(add(nn.dense(%x, %w1), %b1));",
        "%h2 = nn.relu(add(nn.dense(%h1, %w2), %b2));",
        "%u = sum(%h1, axis=[1]);",
    ]
    lines += [f"%v{i} = sum(multiply(%h2, {i + 1}f), axis=[1]);" for i in range(10)]
    lines += [f"%s{i} = add(negative(multiply(%v{i}, %u)), %u);" for i in range(10)]
    text = (
        "def @main(%x: Tensor[(64, 300), float32], %w1: Tensor[(200, 300), float32], "
        "%b1: Tensor[(200), float32], %w2: Tensor[(200, 200), float32], "
        "%b2: Tensor[(200), float32]) {\n  "
        + "\n  ".join(lines)
        + f"\n  ({', '.join(f'%s{i}' for i in range(10))})\n}}"
    )
    args = layers_inputs()
    exe = relay.build(relay.parse(text), tiered=True)
    assert exe.graph.library.quick
    first = exe(*args)
    background.pop()()
    assert not exe.graph.library.quick
    for a, b in zip(first, exe(*args), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("depth", "quick"), [(1024, True), (1025, False)])
def test_a_product_of_more_than_quick_macs_is_not_quick(depth: int, quick: bool) -> None:
    # (a product that runs longer at -O0 than its compilation at -O2 takes)
    text = f"""def @main(%a: Tensor[(1024, {depth}), float32], %b: Tensor[({depth}, 1024), float32]) {{
  nn.matmul(%a, %b)
}}"""
    exe = relay.build(relay.parse(text))
    (prim,) = _primitives(exe.module)
    assert compiler._macs(prim) == 1024 * depth * 1024
    assert quick_product(prim) == quick


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "nn.log_softmax"])
def test_fast_approximations_give_the_same_bits_at_every_level(op: str) -> None:
    # (small kernels compile at -O0 and larger ones at -O1: the same values, the same bits)
    import tvm

    from relay.backend.compiler import _cpu_prim
    from relay.backend.lower import lower_primitive

    target = Target("llvm")
    exe = relay.build(relay.parse(f"def @main(%x: Tensor[(64, 256), float32]) {{ {op}(%x) }}"))
    (prim,) = _primitives(exe.module)
    lowered = lower_primitive(prim, target="llvm", vector_ldexp=target.vector_ldexp)
    kernel = _cpu_prim(lowered, "k")
    x = (np.random.default_rng(0).standard_normal((64, 256)) * 20).astype(np.float32)
    outs = []
    for level in (0, 1, 2):
        with tvm.transform.PassContext(config={"tirx.disable_assert": True}):
            lib = tvm.compile(tvm.IRModule({"k": kernel}), target=target.tvm_target(level))
        out = tvm.runtime.empty((64, 256), "float32", tvm.cpu())
        lib["k"](tvm.runtime.tensor(x, tvm.cpu()), out)
        outs.append(out.numpy().view(np.int32))
    np.testing.assert_array_equal(outs[0], outs[2])
    np.testing.assert_array_equal(outs[1], outs[2])
