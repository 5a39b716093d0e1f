"""EliminateCommonSubexpr, more cases: graph form, let bindings, scopes (functions, branches,
clauses), effects and closures never merged, fskip, small literals, the interpreter before and
after, random programs, and a 100,000-binding chain."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir.expr import Call, Expr, Function, Let, Op, Var, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.passes.common_subexpr import EliminateCommonSubexpr, eliminate_common_subexpr
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"


def mod(text: str) -> Module:
    return relay.parse(HEAD + text)


def func(m: Module, name: str = "main") -> Function:
    return m.functions[m.get_global_var(name)]


def check(before: str, expected: str) -> Module:
    """EliminateCommonSubexpr(before) equals expected, type-checks and computes the same."""
    b = mod(before)
    after = EliminateCommonSubexpr()(b)
    relay.assert_structural_equal(after, mod(expected), map_free_vars=True)
    relay.infer_type(after)
    x, y = np.array([1.5, -2.0], "float32"), np.array([0.5, 3.0], "float32")
    np.testing.assert_allclose(relay.interpret(after, x, y), relay.interpret(b, x, y))
    return after


def test_graph_form_calls_merge_transitively() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = add(%x, %y);
          %1 = add(%x, %y);
          %2 = exp(%0);
          %3 = exp(%1);
          multiply(%2, %3)
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = add(%x, %y);
          %1 = exp(%0);
          multiply(%1, %1)
        }}
        """,
    )


def test_a_let_with_an_available_value_is_replaced_by_the_earlier_variable() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %a = add(%x, %y);
          let %b = add(%x, %y);
          let %c = exp(%b);
          multiply(%c, exp(%a))
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %a = add(%x, %y);
          let %c = exp(%a);
          multiply(%c, %c)
        }}
        """,
    )


def test_different_attributes_or_operators_do_not_merge() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = sum(%x, axis=[0], keepdims=True);
          %1 = sum(%x, axis=[0], keepdims=False);
          %2 = subtract(%x, %y);
          %3 = subtract(%y, %x);
          %4 = add(%2, %3);
          add(add(%4, %0), %1)
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = sum(%x, axis=[0], keepdims=True);
          %1 = sum(%x, axis=[0], keepdims=False);
          %2 = subtract(%x, %y);
          %3 = subtract(%y, %x);
          %4 = add(%2, %3);
          add(add(%4, %0), %1)
        }}
        """,
    )


def test_outer_values_are_reused_inside_functions_but_not_the_other_way() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %a = add(%x, %y);
          let %f = fn (%z: {T}) -> {T} {{
            let %b = add(%x, %y);
            let %c = multiply(%b, %z);
            %c
          }};
          let %d = multiply(%x, %x);
          let %g = fn (%w: {T}) -> {T} {{ multiply(%x, %x) }};
          let %e = %g(%d);
          %f(%e)
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %a = add(%x, %y);
          let %f = fn (%z: {T}) -> {T} {{
            let %c = multiply(%a, %z);
            %c
          }};
          let %d = multiply(%x, %x);
          let %g = fn (%w: {T}) -> {T} {{ %d }};
          let %e = %g(%d);
          %f(%e)
        }}
        """,
    )
    # A value first computed (and let-bound) inside a function is not visible after it.
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %f = fn (%z: {T}) -> {T} {{ let %b = multiply(%x, %y); add(%b, %z) }};
          let %c = multiply(%x, %y);
          add(%f(%c), %c)
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %f = fn (%z: {T}) -> {T} {{ let %b = multiply(%x, %y); add(%b, %z) }};
          let %c = multiply(%x, %y);
          add(%f(%c), %c)
        }}
        """,
    )


def test_branches_are_scopes() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = less(sum(%x), 0f);
          let %r = if (%0) {{
            let %a = exp(%x);
            add(%a, exp(%x))
          }} else {{
            exp(%x)
          }};
          add(%r, exp(%x))
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = less(sum(%x), 0f);
          let %r = if (%0) {{
            let %a = exp(%x);
            add(%a, %a)
          }} else {{
            exp(%x)
          }};
          add(%r, exp(%x))
        }}
        """,
    )


def test_effects_and_closure_calls_are_never_merged() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %r1 = ref(%x);
          let %r2 = ref(%x);
          let %u = ref_write(%r1, %y);
          let %f = fn (%z: {T}) -> {T} {{ add(%z, ref_read(%r2)) }};
          let %a = %f(%x);
          let %b = %f(%x);
          add(add(%a, %b), add(ref_read(%r1), ref_read(%r2)))
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %r1 = ref(%x);
          let %r2 = ref(%x);
          let %u = ref_write(%r1, %y);
          let %f = fn (%z: {T}) -> {T} {{ add(%z, ref_read(%r2)) }};
          let %a = %f(%x);
          let %b = %f(%x);
          add(add(%a, %b), add(ref_read(%r1), ref_read(%r2)))
        }}
        """,
    )


def test_equal_small_literals_become_one_node_so_their_calls_merge() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %a = multiply(%x, 2f);
          let %f = fn (%z: {T}) -> {T} {{ add(%z, multiply(%x, 2f)) }};
          add(%f(%a), multiply(%x, 2f))
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %a = multiply(%x, 2f);
          let %f = fn (%z: {T}) -> {T} {{ add(%z, %a) }};
          add(%f(%a), %a)
        }}
        """,
    )
    # Different dtypes or values stay apart.
    e = relay.parse_expr("(add(2f, 2f), add(2f16, 2f16), add(3f, 3f))")
    out = eliminate_common_subexpr(e)
    assert isinstance(out, relay.ir.Tuple)
    calls = [f for f in out.fields if isinstance(f, Call)]
    assert len({id(c.args[0]) for c in calls}) == 3
    assert all(c.args[0] is c.args[1] for c in calls)


def test_projections_merge() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %t = (%x, %y);
          let %a = %t.1;
          let %b = %t.1;
          add(%a, %b)
        }}
        """,
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          let %t = (%x, %y);
          let %a = %t.1;
          add(%a, %a)
        }}
        """,
    )


def test_fskip_keeps_the_skipped_calls() -> None:
    m = mod(f"def @main(%x: {T}) -> {T} {{ add(exp(%x), exp(%x)) }}")

    def skip_exp(e: Expr) -> bool:
        return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "exp"

    out = EliminateCommonSubexpr(fskip=skip_exp)(m)
    relay.assert_structural_equal(out, m)
    merged = EliminateCommonSubexpr()(m)
    relay.assert_structural_equal(
        merged, mod(f"def @main(%x: {T}) -> {T} {{ %0 = exp(%x); add(%0, %0) }}")
    )


def test_nothing_to_merge_returns_the_same_node() -> None:
    e = func(mod(f"def @main(%x: {T}) -> {T} {{ let %a = add(%x, 1f); multiply(%a, %a) }}"))
    assert eliminate_common_subexpr(e) is e


def close(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.dtype == b.dtype and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
    return bool(a == b)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_random_programs_keep_their_result_and_type(program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    out = EliminateCommonSubexpr()(program.module)
    relay.infer_type(out)
    assert close(before, relay.interpret(out, *program.args))


def test_100000_bindings_of_one_value_collapse() -> None:
    """let %v0 = add(%x, 1f); let %v1 = add(%x, 1f); ... : every later binding is %v0's."""
    n = 100_000
    x = Var("x", TensorType((2,), "float32"))
    vs = [Var(f"v{i}") for i in range(n)]
    add, one = Op.get("add"), const(1.0)
    body: Expr = Call(add, (vs[-1], vs[n // 2]))
    for v in reversed(vs):
        body = Let(v, Call(add, (x, one)), body)
    limit = sys.getrecursionlimit()
    out = eliminate_common_subexpr(body)
    assert sys.getrecursionlimit() == limit
    assert isinstance(out, Let) and out.var is vs[0]
    assert isinstance(out.body, Call) and out.body.args == (vs[0], vs[0])
    np.testing.assert_allclose(
        relay.interpret(relay.ir.Function((x,), out), np.zeros(2, "float32")), [2.0, 2.0]
    )


def test_a_let_body_is_a_scope() -> None:
    """In ``(let %a = add(%x, %y); %a, add(%x, %y))`` the second field is outside %a's scope."""
    x, y, a = Var("x"), Var("y"), Var("a")
    add = Op.get("add")
    first = Let(a, Call(add, (x, y)), a)
    second = Call(add, (x, y))
    out = eliminate_common_subexpr(relay.ir.Tuple((first, second)))
    assert isinstance(out, relay.ir.Tuple)
    assert out.fields[0] is first
    assert isinstance(out.fields[1], Call) and out.fields[1].args == (x, y)
