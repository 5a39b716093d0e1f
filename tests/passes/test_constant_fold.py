"""FoldConstant: before/expected, dtypes and tuples, effects left alone, errors left for run
time, the size cap, the interpreter before and after, random programs, 100,000 bindings."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir.expr import Call, Constant, Expr, Function, Let, Op, Var, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.passes import PassContext
from relay.passes.constant_fold import FoldConstant, fold_constant
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"


def check(before: str, expected: str) -> Expr:
    """fold_constant(before) equals expected, type-checks and computes the same."""
    b = relay.parse_expr(before)
    after = fold_constant(b)
    relay.assert_structural_equal(after, relay.parse_expr(expected), map_free_vars=True)
    relay.infer_type(after)
    if isinstance(b, Function):
        x = np.array([1.5, -2.0], "float32")
        args = [x] * len(b.params)
        np.testing.assert_allclose(relay.interpret(after, *args), relay.interpret(b, *args))
    return after


def test_operator_calls_on_constants_are_evaluated() -> None:
    check(
        f"fn (%x: {T}) {{ add(%x, multiply(add(1f, 2f), 4f)) }}",
        f"fn (%x: {T}) {{ add(%x, 12f) }}",
    )


def test_let_bound_constants_flow_into_their_uses() -> None:
    check(
        f"fn (%x: {T}) {{ let %a = 2f; let %b = add(%a, %a); let %c = multiply(%x, %b); %c }}",
        f"fn (%x: {T}) {{ let %c = multiply(%x, 4f); %c }}",
    )


def test_constant_condition_selects_its_branch() -> None:
    check(
        f"fn (%x: {T}) {{ if (less(1f, 2f)) {{ exp(%x) }} else {{ negative(%x) }} }}",
        f"fn (%x: {T}) {{ exp(%x) }}",
    )
    check(
        f"fn (%x: {T}) {{ if (greater(1f, 2f)) {{ exp(%x) }} else {{ negative(%x) }} }}",
        f"fn (%x: {T}) {{ negative(%x) }}",
    )


def test_projection_of_a_tuple_of_constants() -> None:
    check(
        f"fn (%x: {T}) {{ (1f, exp(%x), 3f).1 }}",
        f"fn (%x: {T}) {{ exp(%x) }}",
    )
    # a field with an effect stays: the projection is kept
    text = f"fn (%x: {T}) {{ let %r = ref(%x); (ref_write(%r, %x), exp(%x)).1 }}"
    check(text, text)


def test_tuple_results_become_tuples_of_constants() -> None:
    e = relay.parse_expr('fn () { split(ones(shape=[4], dtype="float32"), indices_or_sections=2) }')
    out = fold_constant(e)
    assert isinstance(out, Function)
    body = out.body
    assert isinstance(body, relay.ir.expr.Tuple) and len(body.fields) == 2
    for f in body.fields:
        assert isinstance(f, Constant)
        assert f.tensor_type == TensorType((2,), "float32")
        np.testing.assert_array_equal(f.data, np.ones(2, "float32"))
    relay.infer_type(out)


def test_result_dtype_is_the_type_relations() -> None:
    out = fold_constant(relay.parse_expr('cast(3.7f, dtype="int8")'))
    assert isinstance(out, Constant)
    assert out.data.dtype == np.int8 and out.data.shape == () and int(out.data) == 3
    out = fold_constant(relay.parse_expr("less(1f, 2f)"))
    assert isinstance(out, Constant) and out.data.dtype == np.bool_ and bool(out.data)
    out = fold_constant(relay.parse_expr("add(1i64, 2i64)"))
    assert isinstance(out, Constant) and out.data.dtype == np.int64


def test_references_are_never_folded() -> None:
    text = f"fn (%x: {T}) {{ let %r = ref(1f); let %u = ref_write(%r, add(1f, 1f)); ref_read(%r) }}"
    check(text, f"fn (%x: {T}) {{ let %r = ref(1f); let %u = ref_write(%r, 2f); ref_read(%r) }}")


def test_calls_of_globals_and_closures_are_not_folded() -> None:
    m = relay.parse(
        HEAD
        + f"""
        def @two() -> float32 {{ add(1f, 1f) }}
        def @main(%x: {T}) -> {T} {{
          let %f = fn () {{ 3f }};
          add(%x, add(@two(), %f()))
        }}
        """
    )
    out = FoldConstant()(m)
    expected = relay.parse(
        HEAD
        + f"""
        def @two() -> float32 {{ 2f }}
        def @main(%x: {T}) -> {T} {{
          let %f = fn () {{ 3f }};
          add(%x, add(@two(), %f()))
        }}
        """
    )
    relay.assert_structural_equal(out, expected, map_free_vars=True)
    x = np.array([1.0, 2.0], "float32")
    np.testing.assert_allclose(relay.interpret(out, x), relay.interpret(m, x))


def test_a_failing_reference_is_left_for_run_time() -> None:
    text = "fn () { divide(1, 0) }"
    e = relay.parse_expr(text)
    out = fold_constant(e)
    relay.assert_structural_equal(out, e)
    text = 'fn () { take(ones(shape=[2], dtype="float32"), 5, mode="fast") }'
    e = relay.parse_expr(text)
    # whether or not the type relation accepts it, folding must not raise
    fold_constant(e)


def test_size_cap_from_the_argument_and_the_context() -> None:
    text = 'fn () { zeros(shape=[10, 10], dtype="float32") }'
    e = relay.parse_expr(text)
    kept = fold_constant(e, max_elements=99)
    relay.assert_structural_equal(kept, e)
    assert isinstance(fold_constant(e, max_elements=100), Function)
    assert isinstance(fold_constant(e, max_elements=100).body, Constant)  # type: ignore[attr-defined]
    with PassContext(config={"FoldConstant.max_elements": 50}):
        relay.assert_structural_equal(fold_constant(e), e)
        m = relay.parse(
            HEAD
            + 'def @main() -> Tensor[(10, 10), float32] { zeros(shape=[10, 10], dtype="float32") }'
        )
        relay.assert_structural_equal(FoldConstant()(m), m)
    m = relay.parse(
        HEAD + 'def @main() -> Tensor[(10, 10), float32] { zeros(shape=[10, 10], dtype="float32") }'
    )
    main = FoldConstant()(m)["main"]
    assert isinstance(main, Function) and isinstance(main.body, Constant)


def test_global_primitive_functions_are_left_alone() -> None:
    text = f"""
        def @k(%y: {T}, Primitive=1) -> {T} {{ add(%y, add(1f, 1f)) }}
        def @main(%x: {T}) -> {T} {{ @k(add(%x, add(1f, 1f))) }}
    """
    m = relay.parse(HEAD + text)
    out = FoldConstant()(m)
    assert out["k"] is m["k"]
    main = out["main"]
    assert isinstance(main, Function)
    relay.assert_structural_equal(
        main.body,
        relay.parse_expr(f"fn (%x: {T}) {{ @k(add(%x, 2f)) }}").body,  # type: ignore[attr-defined]
        map_free_vars=True,
    )


def test_folding_does_not_mutate_its_input() -> None:
    m = relay.parse(HEAD + f"def @main(%x: {T}) -> {T} {{ add(%x, add(1f, 2f)) }}")
    text = relay.astext(m)
    out = FoldConstant()(m)
    assert relay.astext(m) == text
    assert relay.astext(out) != text


def test_pass_info() -> None:
    p = FoldConstant()
    assert (p.name, p.opt_level, p.required) == ("FoldConstant", 2, ())


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_random_programs_keep_their_results(program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    out = FoldConstant()(program.module)
    relay.infer_type(out)
    after = relay.interpret(out, *program.args)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)


def test_100000_bindings() -> None:
    n = 100_000
    x = Var("x", TensorType((2,), "float32"))
    add = Op.get("add")
    # let %v0 = 1f; let %v1 = add(%v0, 1f); ...; add(%x, %v_last): everything folds to n
    vs = [Var(f"v{i}") for i in range(n)]
    body: Expr = Call(add, (x, vs[-1]))
    for i in range(n - 1, -1, -1):
        value: Expr = const(1.0) if i == 0 else Call(add, (vs[i - 1], const(1.0)))
        body = Let(vs[i], value, body)
    func = Function((x,), body)
    limit = sys.getrecursionlimit()
    out = fold_constant(func)
    assert sys.getrecursionlimit() == limit
    assert isinstance(out, Function)
    relay.assert_structural_equal(
        out, relay.parse_expr(f"fn (%x: {T}) {{ add(%x, {n}f) }}"), map_free_vars=True
    )
    # and a chain that does not fold stays as it is, in linear time
    m = Module()
    chain: Expr = vs[-1]
    for i in range(n - 1, -1, -1):
        chain = Let(vs[i], Call(add, (x if i == 0 else vs[i - 1], const(1.0))), chain)
    m.add("main", Function((x,), chain))
    out_mod = FoldConstant()(m)
    assert out_mod["main"] is m["main"]


def test_a_shared_let_chain_is_rewritten_once() -> None:
    # graph form: the same `let` node is a bound value and the body (found by hypothesis)
    x = Var("x", TensorType((2,), "float32"))
    a, b, c = Var("a"), Var("b"), Var("c")
    shared = Let(a, const(1.0), Let(b, x, Call(Op.get("add"), (b, a))))
    func = Function((x,), Let(c, shared, shared))
    out = fold_constant(func)
    relay.analysis.check_well_formed(out)
    relay.infer_type(out)
    v = np.array([1.0, 2.0], "float32")
    np.testing.assert_allclose(relay.interpret(out, v), relay.interpret(func, v))
