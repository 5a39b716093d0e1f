"""Partial evaluation (relay.passes.partial_eval): each rule before/expected, results equal
to the interpreter's on random programs, termination on recursion over dynamic values, and
the higher-order gradient reduced to dataflow."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.analysis.well_formed import well_formed_errors
from relay.ir import Module
from relay.ir.expr import Function, Let, Var
from relay.ir.types import TensorType
from relay.passes.partial_eval import PartialEvaluate, partial_evaluate
from tests.strategies import TypedProgram, well_typed_programs

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(3,), float32]"
X = np.array([1.0, -2.0, 0.5], np.float32)


def module(text: str) -> Module:
    return relay.infer_type(relay.parse(HEADER + text))  # type: ignore[return-value]


def evaluated(text: str) -> tuple[Module, Module]:
    mod = module(text)
    return mod, PartialEvaluate()(mod)


def expect(out: Module, text: str) -> None:
    relay.assert_structural_equal(out["main"], module(text)["main"])


def test_a_static_condition_picks_its_branch_and_constants_fold() -> None:
    _, out = evaluated(f"""
def @main(%x: {T}) -> {T} {{
  let %c = add(1f, 2f);
  if (greater(%c, 2f)) {{ multiply(%x, %c) }} else {{ %x }}
}}""")
    expect(out, f"def @main(%x: {T}) -> {T} {{ let %y = multiply(%x, 3f); %y }}")


def test_a_static_scrutinee_picks_its_clause() -> None:
    _, out = evaluated(f"""
type Option[A] {{ Some(A), None }}
def @main(%x: {T}) -> {T} {{
  let %o = Some(negative(%x));
  match (%o) {{ Some(%v) => exp(%v), None => %x }}
}}""")
    expect(
        out,
        f"""type Option[A] {{ Some(A), None }}
def @main(%x: {T}) -> {T} {{ let %a = negative(%x); let %b = exp(%a); %b }}""",
    )


def test_known_closures_are_unfolded() -> None:
    _, out = evaluated(f"""
def @main(%x: {T}) -> {T} {{
  let %twice = fn (%f: fn ({T}) -> {T}, %y: {T}) -> {T} {{ %f(%f(%y)) }};
  %twice(fn (%z: {T}) -> {T} {{ add(%z, 1f) }}, %x)
}}""")
    expect(out, f"def @main(%x: {T}) -> {T} {{ let %a = add(%x, 1f); let %b = add(%a, 1f); %b }}")


def test_references_with_a_known_store_are_simulated_and_removed() -> None:
    _mod, out = evaluated(f"""
def @main(%x: {T}) -> {T} {{
  let %r = ref(%x);
  let %a = ref_write(%r, add(ref_read(%r), 1f));
  let %b = ref_write(%r, multiply(ref_read(%r), 2f));
  ref_read(%r)
}}""")
    expect(
        out, f"def @main(%x: {T}) -> {T} {{ let %a = add(%x, 1f); let %b = multiply(%a, 2f); %b }}"
    )
    np.testing.assert_array_equal(relay.interpret(out, X), (X + 1) * 2)


def test_a_reference_that_escapes_keeps_its_effects_in_order() -> None:
    _mod, out = evaluated(f"""
def @main(%x: {T}, %f: fn (ref({T})) -> ()) -> {T} {{
  let %r = ref(%x);
  let %a = %f(%r);
  let %b = ref_write(%r, add(ref_read(%r), 1f));
  ref_read(%r)
}}""")
    text = relay.astext(out["main"])
    # the unknown function may write the cell: the read after it is not simulated
    assert text.index("%f(") < text.index("ref_read(") < text.index("ref_write(")
    assert not well_formed_errors(out)


def test_a_static_loop_bound_unrolls_and_a_dynamic_one_leaves_a_loop() -> None:
    mod, out = evaluated(f"""
def @main(%x: {T}, %n: int32) -> {T} {{
  let %unrolled = fn (%i: int32, %acc: {T}) -> {T} {{
    if (less(%i, 3)) {{ %unrolled(add(%i, 1), multiply(%acc, 2f)) }} else {{ %acc }}
  }};
  let %looped = fn (%i: int32, %acc: {T}) -> {T} {{
    if (less(%i, %n)) {{ %looped(add(%i, 1), add(%acc, 1f)) }} else {{ %acc }}
  }};
  %looped(0, %unrolled(0, %x))
}}""")
    text = relay.astext(out["main"])
    assert text.count("multiply(") == 3  # three iterations, unrolled
    assert text.count("fn (%i: int32") == 1  # the dynamic loop, residual (its first step peeled)
    for n in (0, 1, 4):
        np.testing.assert_array_equal(
            relay.interpret(out, X, np.int32(n)), relay.interpret(mod, X, np.int32(n))
        )


def test_recursion_on_dynamic_values_terminates_and_on_static_ones_unrolls() -> None:
    _mod, out = evaluated(f"""
def @pow(%x: {T}, %n: int32) -> {T} {{
  if (equal(%n, 0)) {{ ones_like(%x) }} else {{ multiply(%x, @pow(%x, subtract(%n, 1))) }}
}}
def @main(%x: {T}, %n: int32) -> ({T}, {T}) {{
  (@pow(%x, 3), @pow(%x, %n))
}}""")
    text = relay.astext(out["main"])
    assert text.count("@pow(") == 1  # the dynamic one: a residual call after one unfolding
    for n in (0, 2, 5):
        got = relay.interpret(out, X, np.int32(n))
        np.testing.assert_allclose(got[0], X**3, rtol=1e-6)
        np.testing.assert_allclose(got[1], X**n, rtol=1e-6)


def test_fuel_bounds_unfolding() -> None:
    mod = module(f"""
def @main(%x: {T}) -> {T} {{
  let %loop = fn (%i: int32, %acc: {T}) -> {T} {{
    if (less(%i, 100000)) {{ %loop(add(%i, 1), add(%acc, 1f)) }} else {{ %acc }}
  }};
  %loop(0, %x)
}}""")
    func = partial_evaluate(mod["main"], mod, fuel=50)
    text = relay.astext(func)
    assert text.count("add(") < 120 and "fn (" in text  # 50 unrolled, then a residual loop


def test_the_higher_order_gradient_becomes_dataflow_fused_like_the_first_order_one() -> None:
    from relay.passes import FuseOps, PassContext, standard_pipeline
    from relay.passes.gradient import gradient

    mod = module("""
def @main(%w1: Tensor[(8, 6), float32], %b1: Tensor[(8,), float32],
          %w2: Tensor[(3, 8), float32], %x: Tensor[(4, 6), float32],
          %y: Tensor[(4, 3), float32]) -> float32 {
  %0 = nn.relu(add(nn.dense(%x, %w1), %b1));
  negative(sum(multiply(nn.log_softmax(nn.dense(%0, %w2)), %y)))
}""")
    kernels = {}
    outs = {}
    for mode in ("higher_order", "first_order"):
        m = mod.copy()
        m.add("main_grad", gradient("main", m, mode=mode))
        m = relay.infer_type(m)
        if mode == "higher_order":
            m = PartialEvaluate()(m)
            text = relay.astext(m["main_grad"])
            assert "ref" not in text and text.count("fn (") == 1  # no cells, no closures
        with PassContext(opt_level=3):
            fused = FuseOps()(standard_pipeline(["main_grad"])(m))
        kernels[mode] = relay.astext(fused["main_grad"]).count("Primitive=1")
        outs[mode] = m
    assert kernels["higher_order"] == kernels["first_order"]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(tuple(p.type_annotation.shape)).astype(np.float32)
            for p in mod["main"].params]  # fmt: skip
    a = relay.build(outs["higher_order"], entry="main_grad")
    b = relay.build(outs["first_order"], entry="main_grad")
    assert a.kind == "graph"
    for u, v in zip(a(*args)[1], b(*args)[1], strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_a_10000_binding_program_needs_no_recursion() -> None:
    x = Var("x", TensorType((3,), "float32"))
    vs = [Var(f"v{i}") for i in range(10_000)]
    body: relay.ir.Expr = vs[-1]
    for i in reversed(range(10_000)):
        prev = vs[i - 1] if i else x
        body = Let(vs[i], relay.op.add(prev, relay.const(np.float32(1))), body)
    mod = Module()
    main = relay.infer_type(Function((x,), body))
    assert isinstance(main, Function)
    limit = sys.getrecursionlimit()
    out = partial_evaluate(main, mod)
    assert sys.getrecursionlimit() == limit
    np.testing.assert_allclose(relay.interpret(out, X), X + 10_000)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs(references=True))
def test_keeps_the_interpreters_result(program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    out = PartialEvaluate()(program.module)
    assert not well_formed_errors(out)
    after = relay.interpret(out, *program.args)
    for a, b in zip(_leaves(before), _leaves(after), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _leaves(v: object) -> list[object]:
    return [x for f in v for x in _leaves(f)] if isinstance(v, tuple) else [v]


def test_the_gradient_of_a_static_loop_compiles_to_dataflow() -> None:
    # relay.build applies the pass to programs that make reference cells: the higher-order
    # gradient of a loop with a static bound unrolls into the graph executor's dataflow
    @relay.function
    def rnn(xs: relay.Tensor[relay.float32, (4, 5)], w: relay.Tensor[relay.float32, (5, 5)]):
        h = np.zeros(5, dtype=np.float32)
        for t in range(4):
            h = np.tanh(w @ xs[t] + h)
        return np.sum(h)

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 5)).astype(np.float32) / 3
    w = rng.standard_normal((5, 5)).astype(np.float32) / 3
    grad = relay.grad(rnn, argnums=1)
    got = grad(xs, w)
    want = grad.interpret(xs, w)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    assert relay.build(grad).kind == "graph"
    with relay.flags.override(cache=False):
        from relay.backend.build import build

        assert build(grad.module, entry=grad.global_var.name_hint, opt_level=1).kind == "vm"


def test_a_data_dependent_branch_in_a_gradient_leaves_no_tape() -> None:
    # each branch pushes its own backward step: the code after the if (seeding and running
    # the tape) is evaluated in each branch, where the tape is still known
    from relay.testing import check_grad

    @relay.function
    def f(x: relay.Tensor[relay.float64, (3,)], y: relay.Tensor[relay.float64, (3,)]):
        if np.sum(x) > 0:
            return np.sum(np.tanh(x) * y)
        return np.sum(x * x + y)

    grad = relay.grad(f)
    x, y = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])
    grad(x, y)
    out = PartialEvaluate()(relay.infer_type(grad.module))
    text = relay.astext(out[grad.global_var.name_hint])
    assert "ref(" not in text and text.count("fn (") == 1
    for args in ((x, y), (-x, y)):
        check_grad(f, *args)
        got = relay.interpret(out[grad.global_var.name_hint], *args, mod=out)
        want = grad.interpret(*args)
        for a, b in zip(got[1], want[1], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10)


@relay.function
def tree_node(
    xs: relay.Tensor[relay.float32, (4, 3)],
    w: relay.Tensor[relay.float32, (3, 3)],
    lo: int,
    hi: int,
) -> relay.Tensor[relay.float32, (3,)]:
    if hi - lo == 1:
        return np.tanh(w @ xs[lo])
    mid = (lo + hi) // 2
    return np.tanh(w @ (tree_node(xs, w, lo, mid) + tree_node(xs, w, mid, hi)))


@relay.function
def tree(xs, w):  # type: ignore[no-untyped-def]
    return tree_node(xs, w, 0, 4)


def test_recursion_over_static_arguments_unrolls_into_dataflow() -> None:
    # relay.build tries partial evaluation on a program whose global calls itself, and
    # keeps it when the recursion unfolds completely (the tree's shape is in the arguments)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3)).astype(np.float32) / 2

    def reference(lo: int, hi: int) -> np.ndarray:
        if hi - lo == 1:
            return np.tanh(w @ xs[lo])
        mid = (lo + hi) // 2
        return np.tanh(w @ (reference(lo, mid) + reference(mid, hi)))

    np.testing.assert_allclose(tree(xs, w), reference(0, 4), rtol=1e-5, atol=1e-6)
    assert relay.build(tree).kind == "graph"
    # with the bounds as arguments the recursion is dynamic: it stays on the VM
    np.testing.assert_allclose(tree_node(xs, w, 0, 4), reference(0, 4), rtol=1e-5, atol=1e-6)
    assert relay.build(tree_node).kind == "vm"
