"""EliminateCommonSubexpr: before/expected in graph form and across lets, scopes (branches,
clauses, functions), effects never merged, fskip, the interpreter before and after, random
programs, 100,000 bindings."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir.expr import Call, Expr, Function, Let, Op, Var, const
from relay.ir.module import Module
from relay.ir.types import TensorType, TupleType, Type
from relay.passes.common_subexpr import (
    EliminateCommonSubexpr,
    eliminate_common_subexpr,
    is_pure_op,
)
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"
B = "bool"


def arg_for(ty: Type | None) -> object:
    """An argument of type ``ty`` (tensors of small values, tuples of them)."""
    if isinstance(ty, TupleType):
        return tuple(arg_for(f) for f in ty.fields)
    assert isinstance(ty, TensorType)
    shape = ty.concrete_shape()
    if ty.dtype == "bool":
        return np.ones(shape, "bool")
    return np.linspace(-2, 2, num=int(np.prod(shape))).reshape(shape).astype(str(ty.dtype))


def assert_same(a: object, b: object) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
        np.testing.assert_allclose(a, b)


def check(before: str, expected: str) -> Expr:
    """eliminate_common_subexpr(before) equals expected, type-checks and computes the same."""
    b = relay.parse_expr(before)
    after = eliminate_common_subexpr(b)
    relay.assert_structural_equal(after, relay.parse_expr(expected), map_free_vars=True)
    relay.infer_type(after)
    assert isinstance(b, Function)
    args = [arg_for(p.type_annotation) for p in b.params]
    assert_same(relay.interpret(after, *args), relay.interpret(b, *args))
    return after


def test_graph_form_calls_merge() -> None:
    after = check(
        f"fn (%x: {T}, %y: {T}) {{ multiply(add(%x, %y), add(%x, %y)) }}",
        f"fn (%x: {T}, %y: {T}) {{ %0 = add(%x, %y); multiply(%0, %0) }}",
    )
    assert isinstance(after, Function) and isinstance(after.body, Call)
    assert after.body.args[0] is after.body.args[1]


def test_merging_is_bottom_up_and_constants_count_by_value() -> None:
    after = check(
        f"fn (%x: {T}) {{ subtract(exp(add(%x, 1f)), exp(add(%x, 1f))) }}",
        f"fn (%x: {T}) {{ %0 = exp(add(%x, 1f)); subtract(%0, %0) }}",
    )
    assert isinstance(after, Function) and isinstance(after.body, Call)
    assert after.body.args[0] is after.body.args[1]


def test_different_attributes_do_not_merge() -> None:
    text = (
        "fn (%x: Tensor[(2, 3), float32]) "
        "{ (sum(%x, axis=[0]), sum(%x, axis=[1]), sum(%x, axis=[0], keepdims=True)) }"
    )
    check(text, text)
    check(
        "fn (%x: Tensor[(2, 3), float32]) { (sum(%x, axis=[0]), sum(%x, axis=[0])) }",
        "fn (%x: Tensor[(2, 3), float32]) { %0 = sum(%x, axis=[0]); (%0, %0) }",
    )


def test_let_bindings_merge_into_the_earlier_one() -> None:
    check(
        f"""fn (%x: {T}, %y: {T}) {{
          let %a = add(%x, %y);
          let %b = add(%x, %y);
          let %c = multiply(add(%x, %y), %b);
          subtract(%c, %b)
        }}""",
        f"""fn (%x: {T}, %y: {T}) {{
          let %a = add(%x, %y);
          let %c = multiply(%a, %a);
          subtract(%c, %a)
        }}""",
    )


def test_chains_of_merges() -> None:
    check(
        f"""fn (%x: {T}) {{
          let %a = exp(%x);
          let %b = negative(%a);
          let %c = exp(%x);
          let %d = negative(%c);
          add(%b, %d)
        }}""",
        f"""fn (%x: {T}) {{
          let %a = exp(%x);
          let %b = negative(%a);
          add(%b, %b)
        }}""",
    )


def test_projections_merge() -> None:
    check(
        f"fn (%t: ({T}, {T})) {{ let %a = %t.0; let %b = %t.0; add(%a, %b) }}",
        f"fn (%t: ({T}, {T})) {{ let %a = %t.0; add(%a, %a) }}",
    )


def test_an_outer_value_is_reused_in_branches_and_functions() -> None:
    check(
        f"""fn (%c: {B}, %x: {T}) {{
          let %a = exp(%x);
          let %f = fn (%y: {T}) {{ add(exp(%x), %y) }};
          if (%c) {{ %f(exp(%x)) }} else {{ negative(exp(%x)) }}
        }}""",
        f"""fn (%c: {B}, %x: {T}) {{
          let %a = exp(%x);
          let %f = fn (%y: {T}) {{ add(%a, %y) }};
          if (%c) {{ %f(%a) }} else {{ negative(%a) }}
        }}""",
    )


def test_values_from_branches_functions_and_clauses_stay_inside() -> None:
    text = f"""fn (%c: {B}, %x: {T}) {{
      let %u = if (%c) {{ let %a = exp(%x); %a }} else {{ %x }};
      let %f = fn () {{ let %b = exp(%x); %b }};
      let %v = match (%c) {{ _ => let %d = exp(%x); %d }};
      let %e = exp(%x);
      add(add(%u, %f()), add(%v, %e))
    }}"""
    check(text, text)
    # in graph form as well: the branches' exp is not shared with the outer one
    after = eliminate_common_subexpr(
        relay.parse_expr(
            f"fn (%c: {B}, %x: {T}) {{ add(if (%c) {{ exp(%x) }} else {{ %x }}, exp(%x)) }}"
        )
    )
    assert isinstance(after, Function) and isinstance(after.body, Call)
    cond, outer = after.body.args
    assert isinstance(cond, relay.ir.expr.If)
    assert cond.true_branch is not outer


def test_a_let_inside_an_argument_does_not_scope_over_its_siblings() -> None:
    text = f"fn (%x: {T}) {{ add((let %a = exp(%x); %a), negative(exp(%x))) }}"
    after = eliminate_common_subexpr(relay.parse_expr(text))
    relay.infer_type(after)
    assert "negative(%a)" not in relay.astext(after)
    x = np.array([0.5, 1.0], "float32")
    np.testing.assert_allclose(
        relay.interpret(after, x), relay.interpret(relay.parse_expr(text), x)
    )


def test_shared_node_across_scopes_is_not_rewritten_to_an_inner_variable() -> None:
    x = Var("x", TensorType((2,), "float32"))
    a = Var("a")
    exp = Op.get("exp")
    shared = Call(Op.get("negative"), (Call(exp, (x,)),))
    # (let %a = exp(%x); add(%a, negative(exp(%x))))  and  negative(exp(%x)) outside, shared
    inner = Let(a, Call(exp, (x,)), Call(Op.get("add"), (a, shared)))
    func = Function((x,), Call(Op.get("multiply"), (inner, shared)))
    out = eliminate_common_subexpr(func)
    relay.infer_type(out)
    assert isinstance(out, Function) and isinstance(out.body, Call)
    outside = out.body.args[1]
    assert a not in relay.ir.analysis.free_vars(outside)
    v = np.array([0.5, 1.0], "float32")
    np.testing.assert_allclose(relay.interpret(out, v), relay.interpret(func, v))


def test_reference_operations_are_never_merged() -> None:
    text = f"""fn (%x: {T}) {{
      let %r = ref(%x);
      let %s = ref(%x);
      let %u = ref_write(%r, exp(%x));
      let %p = ref_read(%r);
      let %q = ref_read(%r);
      (%p, %q, ref_read(%s))
    }}"""
    after = check(text, text.replace("exp(%x)", "exp(%x)"))
    assert relay.astext(after).count("ref(") == 2


def test_calls_of_closures_globals_and_constructors_are_not_merged() -> None:
    m = relay.parse(
        HEAD
        + f"""
        def @g(%x: {T}) -> {T} {{ exp(%x) }}
        def @main(%x: {T}) -> {T} {{
          let %f = fn (%y: {T}) {{ negative(%y) }};
          add(add(@g(%x), @g(%x)), add(%f(%x), %f(%x)))
        }}
        """
    )
    out = EliminateCommonSubexpr()(m)
    relay.assert_structural_equal(out, m, map_free_vars=True)


def test_calls_on_a_shared_reference_read_are_not_merged() -> None:
    # graph form: the ref_read node is shared, but evaluated at each use
    x = Var("x", TensorType((), "float32"))
    r = Var("r")
    read = relay.ir.expr.RefRead(r)
    add = Op.get("add")
    first = Var("first")
    body = Let(
        first,
        Call(add, (read, const(1.0))),
        Let(
            Var("w"),
            relay.ir.expr.RefWrite(r, const(5.0)),
            Call(Op.get("subtract"), (Call(add, (read, const(1.0))), first)),
        ),
    )
    func = Function((x,), Let(r, relay.ir.expr.RefCreate(x), body))
    out = eliminate_common_subexpr(func)
    v = np.array(1.0, "float32")
    assert float(relay.interpret(func, v)) == 4.0
    assert float(relay.interpret(out, v)) == 4.0


def test_fskip_keeps_calls_apart() -> None:
    text = f"fn (%x: {T}) {{ add(exp(%x), exp(%x)) }}"

    def skip_exp(e: Expr) -> bool:
        return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "exp"

    out = eliminate_common_subexpr(relay.parse_expr(text), fskip=skip_exp)
    relay.assert_structural_equal(out, relay.parse_expr(text))
    assert isinstance(out, Function) and isinstance(out.body, Call)
    assert out.body.args[0] is not out.body.args[1]
    m = relay.parse(HEAD + f"def @main(%x: {T}) -> {T} {{ add(exp(%x), exp(%x)) }}")
    main = EliminateCommonSubexpr(fskip=skip_exp)(m)["main"]
    assert isinstance(main, Function)
    body = main.body
    assert isinstance(body, Call) and body.args[0] is not body.args[1]


def test_purity_of_operators() -> None:
    assert is_pure_op(Op.get("add"))
    assert is_pure_op(Op.get("nn.dropout"))


def test_pass_info_and_input_unchanged() -> None:
    p = EliminateCommonSubexpr()
    assert (p.name, p.opt_level, p.required) == ("EliminateCommonSubexpr", 3, ())
    m = relay.parse(
        HEAD + f"def @main(%x: {T}) -> {T} {{ let %a = exp(%x); let %b = exp(%x); add(%a, %b) }}"
    )
    text = relay.astext(m)
    out = p(m)
    assert relay.astext(m) == text
    expected = relay.parse(HEAD + f"def @main(%x: {T}) -> {T} {{ let %a = exp(%x); add(%a, %a) }}")
    relay.assert_structural_equal(out, expected, map_free_vars=True)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_random_programs_keep_their_results(program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    out = EliminateCommonSubexpr()(program.module)
    relay.infer_type(out)
    relay.analysis.check_well_formed(out)
    after = relay.interpret(out, *program.args)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)


def test_100000_bindings() -> None:
    n = 100_000
    x = Var("x", TensorType((2,), "float32"))
    add = Op.get("add")
    # pairs of equal bindings: let %a_i = add(%a_{i-1}, 1f); let %b_i = add(%a_{i-1}, 1f)
    a_vars = [Var(f"a{i}") for i in range(n // 2)]
    b_vars = [Var(f"b{i}") for i in range(n // 2)]
    body: Expr = Call(add, (a_vars[-1], b_vars[-1]))
    for i in range(n // 2 - 1, -1, -1):
        prev = x if i == 0 else b_vars[i - 1]
        body = Let(b_vars[i], Call(add, (prev, const(1.0))), body)
        prev_a = x if i == 0 else a_vars[i - 1]
        body = Let(a_vars[i], Call(add, (prev_a, const(1.0))), body)
    func = Function((x,), body)
    limit = sys.getrecursionlimit()
    out = eliminate_common_subexpr(func)
    assert sys.getrecursionlimit() == limit
    chain, tail = relay.ir.functor.flatten_let(out.body)  # type: ignore[attr-defined]
    assert len(chain) == n // 2
    assert isinstance(tail, Call) and tail.args[0] is tail.args[1]
    m = Module()
    m.add("main", out)  # type: ignore[arg-type]
    v = np.zeros(2, "float32")
    np.testing.assert_allclose(relay.interpret(m, v), np.full(2, n, "float32"))


def test_a_shared_let_chain_is_rewritten_once() -> None:
    # graph form: the same `let` node is a bound value and the body (found by hypothesis)
    x = Var("x", TensorType((2,), "float32"))
    a, b, c = Var("a"), Var("b"), Var("c")
    exp = Op.get("exp")
    shared = Let(a, Call(exp, (x,)), Let(b, Call(exp, (x,)), Call(Op.get("add"), (a, b))))
    func = Function((x,), Let(c, shared, Call(Op.get("multiply"), (shared, Call(exp, (x,))))))
    out = eliminate_common_subexpr(func)
    relay.analysis.check_well_formed(out)
    relay.infer_type(out)
    v = np.array([1.0, 2.0], "float32")
    np.testing.assert_allclose(relay.interpret(out, v), relay.interpret(func, v))
