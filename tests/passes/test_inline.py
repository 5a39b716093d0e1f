"""Inline: before/expected, transitive and recursive cases, polymorphic globals, the
interpreter before and after, random programs, and a 100,000-binding body."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.analysis import check_well_formed
from relay.ir.expr import Call, Expr, Function, Let, Op, Var, const
from relay.ir.module import Module
from relay.ir.types import IncompleteType, TensorType
from relay.passes.inline import Inline, copy_with_fresh_vars, inline, inline_candidates
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"


def mod(text: str) -> Module:
    return relay.parse(HEAD + text)


def check(before: str, expected: str) -> Module:
    """inline(before) equals expected, is well formed, type-checks and computes the same."""
    b = mod(before)
    after = inline(b)
    relay.assert_structural_equal(after, mod(expected), map_free_vars=True)
    check_well_formed(after)
    relay.infer_type(after)
    x = np.array([1.5, -2.0], "float32")
    np.testing.assert_allclose(relay.interpret(after, x), relay.interpret(b, x))
    return after


def test_call_becomes_lets_of_the_arguments_around_the_body() -> None:
    check(
        f"""
        def @sq(%x: {T}, Inline=1) -> {T} {{ multiply(%x, %x) }}
        def @main(%a: {T}) -> {T} {{ @sq(add(%a, 1f)) }}
        """,
        f"""
        def @main(%a: {T}) -> {T} {{
          let %x: {T} = add(%a, 1f);
          multiply(%x, %x)
        }}
        """,
    )


def test_transitive_inlining_with_fresh_binders_at_each_site() -> None:
    after = check(
        f"""
        def @g(%x: {T}, Inline=1) -> {T} {{ let %t = multiply(%x, 2f); add(%t, %x) }}
        def @f(%x: {T}, Inline=1) -> {T} {{ @g(@g(%x)) }}
        def @main(%a: {T}) -> {T} {{ @f(%a) }}
        """,
        f"""
        def @main(%a: {T}) -> {T} {{
          let %x: {T} = %a;
          let %x1: {T} = (let %x2: {T} = %x; let %t = multiply(%x2, 2f); add(%t, %x2));
          let %t1 = multiply(%x1, 2f);
          add(%t1, %x1)
        }}
        """,
    )
    assert [gv.name_hint for gv in after.functions] == ["main"]


def test_arguments_are_evaluated_once_and_in_order() -> None:
    check(
        f"""
        def @twice(%x: {T}, %y: {T}, Inline=1) -> {T} {{ add(add(%y, %x), add(%x, %y)) }}
        def @main(%a: {T}) -> {T} {{ @twice(exp(%a), negative(%a)) }}
        """,
        f"""
        def @main(%a: {T}) -> {T} {{
          let %x: {T} = exp(%a);
          let %y: {T} = negative(%a);
          add(add(%y, %x), add(%x, %y))
        }}
        """,
    )


def test_recursive_globals_are_not_inlined() -> None:
    text = f"""
        def @down(%i: int32, %x: {T}, Inline=1) -> {T} {{
          if (less(%i, 1)) {{ %x }} else {{ @down(subtract(%i, 1), add(%x, 1f)) }}
        }}
        def @ping(%x: {T}, Inline=1) -> {T} {{ @pong(%x) }}
        def @pong(%x: {T}, Inline=1) -> {T} {{ @ping(%x) }}
        def @main(%a: {T}) -> {T} {{ @down(3, %a) }}
    """
    m = mod(text)
    assert inline_candidates(m) == []
    after = inline(m)
    relay.assert_structural_equal(after, mod(text), map_free_vars=True)


def test_a_global_used_as_a_value_is_kept() -> None:
    check(
        f"""
        def @inc(%x: {T}, Inline=1) -> {T} {{ add(%x, 1f) }}
        def @main(%a: {T}) -> {T} {{ let %f = @inc; %f(@inc(%a)) }}
        """,
        f"""
        def @inc(%x: {T}, Inline=1) -> {T} {{ add(%x, 1f) }}
        def @main(%a: {T}) -> {T} {{ let %f = @inc; %f((let %x: {T} = %a; add(%x, 1f))) }}
        """,
    )


def test_unmarked_globals_and_main_stay() -> None:
    text = f"""
        def @keep(%x: {T}) -> {T} {{ add(%x, 1f) }}
        def @main(%a: {T}, Inline=1) -> {T} {{ @keep(%a) }}
    """
    after = inline(mod(text))
    relay.assert_structural_equal(after, mod(text), map_free_vars=True)


def test_polymorphic_global_is_instantiated_by_inference() -> None:
    m = mod(
        f"""
        def @id[A](%x: A, Inline=1) -> A {{ let %y: A = %x; %y }}
        def @main(%a: {T}) -> {T} {{ @id(%a) }}
        """
    )
    after = inline(m)
    body = after.function("main").body
    # A became one unknown at this site, shared by the annotations that mentioned A.
    assert isinstance(body, Let) and isinstance(body.body, Let)
    ann = body.var.type_annotation
    assert isinstance(ann, IncompleteType) and body.body.var.type_annotation is ann
    check_well_formed(after)
    relay.infer_type(after)
    assert body.body.var.checked_type == TensorType((2,), "float32")


def test_match_and_closures_in_the_body_get_fresh_binders() -> None:
    text = f"""
        def @pick(%o: Option[{T}], %d: {T}, Inline=1) -> {T} {{
          let %k = fn (%z: {T}) {{ add(%z, %d) }};
          match (%o) {{ Some(%v) => %k(%v), None => %d }}
        }}
        def @main(%a: {T}) -> {T} {{ add(@pick(Some(%a), %a), @pick(None, %a)) }}
    """
    m = relay.parse(HEAD + text, module=relay.prelude())
    after = inline(m)
    check_well_formed(after)
    relay.infer_type(after)
    assert "pick" not in after
    x = np.array([1.0, 2.0], "float32")
    np.testing.assert_allclose(relay.interpret(after, x), relay.interpret(m, x))


def test_copy_with_fresh_vars_renames_binders_and_substitutes_free_vars() -> None:
    e = relay.parse_expr(f"free_var %z: {T}; fn (%x: {T}) {{ let %y = add(%x, %z); %y }}")
    assert isinstance(e, Function)
    z = relay.analysis.free_vars(e)[0]
    w = relay.ir.expr.Var("w")
    copy = copy_with_fresh_vars(e, {z: w})
    assert isinstance(copy, Function)
    assert copy.params[0] is not e.params[0]
    assert set(relay.analysis.bound_vars(copy)).isdisjoint(relay.analysis.bound_vars(e))
    relay.assert_structural_equal(
        copy,
        relay.parse_expr(f"free_var %w; fn (%x: {T}) {{ let %y = add(%x, %w); %y }}"),
        map_free_vars=True,
    )


def test_the_pass_leaves_its_input_alone() -> None:
    m = mod(
        f"""
        def @sq(%x: {T}, Inline=1) -> {T} {{ multiply(%x, %x) }}
        def @main(%a: {T}) -> {T} {{ @sq(%a) }}
        """
    )
    before = relay.astext(m)
    out = Inline()(m)
    assert relay.astext(m) == before
    assert "sq" not in out and "sq" in m
    assert Inline().info.name == "Inline"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_inlining_every_helper_keeps_the_result(program: TypedProgram) -> None:
    m = program.module.copy()
    for gv, func in program.module.functions.items():
        if gv.name_hint != "main":
            m.update_func(gv, func.with_attr("Inline", 1))
    after = inline(m)
    assert [gv.name_hint for gv in after.functions] == ["main"]
    check_well_formed(after)
    relay.infer_type(after)
    np.testing.assert_allclose(
        relay.interpret(after, *program.args),
        relay.interpret(program.module, *program.args),
        rtol=1e-5,
        atol=1e-6,
    )


def test_100000_binding_body() -> None:
    n = 100_000
    t = TensorType((2,), "float32")
    x, add, one = Var("x", t), Op.get("add"), const(1.0)
    chain = [Var(f"v{i}") for i in range(n)]
    body: Expr = chain[-1]
    for i in reversed(range(n)):
        body = Let(chain[i], Call(add, (x if i == 0 else chain[i - 1], one)), body)
    m = Module()
    deep = m.add("deep", Function((x,), body, t).with_attr("Inline", 1))
    a = Var("a", t)
    m.add("main", Function((a,), Call(deep, (a,)), t))
    limit = sys.getrecursionlimit()
    after = inline(m)
    assert sys.getrecursionlimit() == limit
    assert [gv.name_hint for gv in after.functions] == ["main"]
    np.testing.assert_allclose(
        relay.interpret(after, np.zeros(2, "float32")), np.full(2, n, "float32")
    )
