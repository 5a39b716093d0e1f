"""DeadCodeElimination, more cases: the effect analysis over globals, let-bound functions and
unknown closures, nested scopes, the interpreter before and after, random programs, and a
100,000-binding chain with some bindings kept."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir.expr import Call, Expr, Function, Let, Op, Var, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.passes.dead_code import (
    DeadCodeElimination,
    Effect,
    EffectAnalysis,
    dead_code_elimination,
)
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"


def mod(text: str) -> Module:
    return relay.parse(HEAD + text)


def func(m: Module, name: str = "main") -> Function:
    return m.functions[m.get_global_var(name)]


def check(before: str, expected: str, inline_once: bool = False) -> Module:
    """DeadCodeElimination(before) equals expected, type-checks and computes the same."""
    b = mod(before)
    after = DeadCodeElimination(inline_once)(b)
    relay.assert_structural_equal(after, mod(expected), map_free_vars=True)
    relay.infer_type(after)
    x = np.array([1.5, -2.0], "float32")
    np.testing.assert_allclose(relay.interpret(after, x), relay.interpret(b, x))
    return after


def test_unused_pure_bindings_go_including_chains_that_feed_each_other() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %a = add(%x, 1f);
          let %b = exp(%a);
          let %c = multiply(%x, 2f);
          let %d = negative(%b);
          %c
        }}
        """,
        f"def @main(%x: {T}) -> {T} {{ let %c = multiply(%x, 2f); %c }}",
    )


def test_reference_writes_stay_reads_and_creations_go() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %r = ref(%x);
          let %unused_cell = ref(%x);
          let %w = ref_write(%r, add(%x, 1f));
          let %unused_read = ref_read(%r);
          ref_read(%r)
        }}
        """,
        f"""
        def @main(%x: {T}) -> {T} {{
          let %r = ref(%x);
          let %w = ref_write(%r, add(%x, 1f));
          ref_read(%r)
        }}
        """,
    )


def test_calls_of_globals_are_analysed_transitively() -> None:
    check(
        f"""
        def @pure(%x: {T}) -> {T} {{ exp(%x) }}
        def @calls_pure(%x: {T}) -> {T} {{ @pure(%x) }}
        def @writes(%r: ref({T}), %x: {T}) -> () {{ ref_write(%r, %x) }}
        def @calls_writes(%r: ref({T}), %x: {T}) -> () {{ @writes(%r, %x) }}
        def @main(%x: {T}) -> {T} {{
          let %r = ref(%x);
          let %a = @calls_pure(%x);
          let %b = @calls_writes(%r, negative(%x));
          ref_read(%r)
        }}
        """,
        f"""
        def @pure(%x: {T}) -> {T} {{ exp(%x) }}
        def @calls_pure(%x: {T}) -> {T} {{ @pure(%x) }}
        def @writes(%r: ref({T}), %x: {T}) -> () {{ ref_write(%r, %x) }}
        def @calls_writes(%r: ref({T}), %x: {T}) -> () {{ @writes(%r, %x) }}
        def @main(%x: {T}) -> {T} {{
          let %r = ref(%x);
          let %b = @calls_writes(%r, negative(%x));
          ref_read(%r)
        }}
        """,
    )


def test_recursive_globals_pure_and_effectful() -> None:
    m = mod(
        f"""
        def @loop(%n: int32, %x: {T}) -> {T} {{
          if (less(%n, 1)) {{ %x }} else {{ @loop(subtract(%n, 1), exp(%x)) }}
        }}
        def @even(%n: int32, %r: ref(int32)) -> () {{
          if (less(%n, 1)) {{ ref_write(%r, %n) }} else {{ @odd(subtract(%n, 1), %r) }}
        }}
        def @odd(%n: int32, %r: ref(int32)) -> () {{ @even(subtract(%n, 1), %r) }}
        def @main(%x: {T}) -> {T} {{ %x }}
        """
    )
    effects = EffectAnalysis([], m)
    assert effects.call(func(m, "loop")) == Effect.PURE
    assert effects.call(func(m, "even")) == Effect.EFFECT
    assert effects.call(func(m, "odd")) == Effect.EFFECT
    call = Call(m.get_global_var("odd"), (const(3), Var("r")))
    assert effects.of(call) == Effect.EFFECT


def test_let_bound_closures_known_and_unknown() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %r = ref(%x);
          let %f = fn (%y: {T}) -> {T} {{ add(%y, 1f) }};
          let %g = fn (%y: {T}) -> () {{ ref_write(%r, %y) }};
          let %h = fn (%k: fn ({T}) -> {T}) -> {T} {{ let %unknown = %k(%x); %x }};
          let %a = %f(%x);
          let %b = %g(%x);
          let %c = %h(%f);
          ref_read(%r)
        }}
        """,
        f"""
        def @main(%x: {T}) -> {T} {{
          let %r = ref(%x);
          let %f = fn (%y: {T}) -> {T} {{ add(%y, 1f) }};
          let %g = fn (%y: {T}) -> () {{ ref_write(%r, %y) }};
          let %h = fn (%k: fn ({T}) -> {T}) -> {T} {{ let %unknown = %k(%x); %x }};
          let %b = %g(%x);
          let %c = %h(%f);
          ref_read(%r)
        }}
        """,
    )


def test_nested_scopes_are_cleaned() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %f = fn (%y: {T}) -> {T} {{ let %dead = exp(%y); %y }};
          %0 = less(sum(%x), 0f);
          let %r = if (%0) {{ let %d1 = exp(%x); %x }} else {{ let %d2 = negative(%x); %f(%x) }};
          %r
        }}
        """,
        f"""
        def @main(%x: {T}) -> {T} {{
          let %f = fn (%y: {T}) -> {T} {{ %y }};
          %0 = less(sum(%x), 0f);
          let %r = if (%0) {{ %x }} else {{ %f(%x) }};
          %r
        }}
        """,
    )


def test_match_clauses_are_cleaned() -> None:
    prelude_free = mod(
        f"""
        type Opt {{ Some({T}), No }}
        def @main(%x: {T}) -> {T} {{
          match (Some(%x)) {{
            Some(%v) => {{ let %dead = exp(%v); %v }},
            No => {{ %x }},
          }}
        }}
        """
    )
    out = DeadCodeElimination()(prelude_free)
    expected = mod(
        f"""
        type Opt {{ Some({T}), No }}
        def @main(%x: {T}) -> {T} {{
          match (Some(%x)) {{
            Some(%v) => {{ %v }},
            No => {{ %x }},
          }}
        }}
        """
    )
    relay.assert_structural_equal(out, expected, map_free_vars=True)


def test_without_a_module_a_global_call_is_assumed_to_write() -> None:
    m = mod(
        f"""
        def @pure(%x: {T}) -> {T} {{ exp(%x) }}
        def @main(%x: {T}) -> {T} {{ let %a = @pure(%x); %x }}
        """
    )
    e = func(m, "main")
    assert dead_code_elimination(e) is e
    out = dead_code_elimination(e, m)
    assert isinstance(out, Function) and out.body is e.params[0]


def test_nothing_dead_returns_the_same_node() -> None:
    e = func(mod(f"def @main(%x: {T}) -> {T} {{ let %a = add(%x, 1f); multiply(%a, %a) }}"))
    assert dead_code_elimination(e) is e
    assert dead_code_elimination(e, inline_once=True) is e  # %a is used twice


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
    for inline_once in (False, True):
        out = DeadCodeElimination(inline_once)(program.module)
        relay.infer_type(out)
        assert close(before, relay.interpret(out, *program.args))


def chain(n: int, x: Var, keep_every: int) -> Expr:
    """let %v0 = add(%x, 1f); let %v1 = add(%v0, 1f); ...; the body uses the last one and
    some are also unused side branches (multiply) that must go."""
    vs = [Var(f"v{i}") for i in range(n)]
    add, mul, one = Op.get("add"), Op.get("multiply"), const(1.0)
    body: Expr = vs[-1]
    for i in reversed(range(n)):
        if i % keep_every == 1:
            body = Let(Var(f"dead{i}"), Call(mul, (vs[i - 1], one)), body)
        body = Let(vs[i], Call(add, (vs[i - 1] if i else x, one)), body)
    return body


def test_100000_bindings() -> None:
    x = Var("x", TensorType((2,), "float32"))
    e = chain(100_000, x, keep_every=4)
    limit = sys.getrecursionlimit()
    out = dead_code_elimination(e)
    inlined = dead_code_elimination(e, inline_once=True)
    assert sys.getrecursionlimit() == limit
    n = 0
    node = out
    while isinstance(node, Let):
        assert node.var.name_hint.startswith("v")
        n += 1
        node = node.body
    assert n == 100_000
    assert isinstance(inlined, Call)  # one nested expression
    fn = Function((x,), out)
    np.testing.assert_allclose(relay.interpret(fn, np.zeros(2, "float32")), [1e5, 1e5])
