"""Defunctionalization: before/expected, higher-order prelude programs (map over closures,
compose, folds), recursion, globals as values, the errors, random programs, and a
100,000-binding program."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import relay
from relay.analysis import check_well_formed
from relay.errors import CompileError
from relay.ir.expr import (
    Call,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Op,
    Var,
    children,
    const,
)
from relay.ir.module import Module
from relay.ir.types import FuncType, TensorType, TupleType, Type, TypeCall
from relay.passes.defunctionalize import Defunctionalization, defunctionalize
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"
X = np.array([1.0, -2.0], "float32")


def mod(text: str, prelude: bool = False) -> Module:
    return relay.parse(HEAD + text, module=relay.prelude() if prelude else None)


def has_func_type(ty: Type | None) -> bool:
    if isinstance(ty, FuncType):
        return True
    if isinstance(ty, TupleType):
        return any(has_func_type(f) for f in ty.fields)
    if isinstance(ty, TypeCall):
        return any(has_func_type(a) for a in ty.args)
    return False


def assert_first_order(m: Module) -> None:
    """No function values: no ``fn`` inside globals, only direct calls, no function types
    on variables."""
    for gv, func in m.functions.items():
        stack: list[Expr] = [func.body, *func.params]
        while stack:
            node = stack.pop()
            assert not isinstance(node, Function), f"a function value in @{gv.name_hint}"
            if isinstance(node, Call):
                assert isinstance(node.op, GlobalVar | Op | Constructor), gv.name_hint
            if isinstance(node, Var):
                assert not has_func_type(node.type_annotation), node
            stack.extend(children(node))


def check_same(m: Module, *args: np.ndarray) -> Module:
    after = defunctionalize(m)
    assert_first_order(after)
    check_well_formed(after)
    relay.infer_type(after)
    np.testing.assert_allclose(relay.interpret(after, *args), relay.interpret(m, *args))
    return after


def test_a_capturing_closure_becomes_a_constructor_and_an_apply_clause() -> None:
    before = mod(
        f"""
        def @main(%x: {T}, %z: {T}) -> {T} {{
          let %k = fn (%y: {T}) {{ add(%y, %x) }};
          %k(%z)
        }}
        """
    )
    after = check_same(before, X, X * 3)
    expected = mod(
        f"""
        type Fn0 {{ Fn0_0({T}) }}
        def @main(%x: {T}, %z: {T}) -> {T} {{
          let %k: Fn0 = Fn0_0(%x);
          @apply0(%k, %z)
        }}
        def @apply0(%f: Fn0, %a0: {T}) -> {T} {{
          match (%f) {{ Fn0_0(%x1: {T}) => add(%a0, %x1) }}
        }}
        """
    )
    relay.assert_structural_equal(after, expected, map_free_vars=True)


def test_a_first_order_program_is_unchanged() -> None:
    text = f"""
        def @twice(%x: {T}) -> {T} {{ add(%x, %x) }}
        def @main(%x: {T}) -> {T} {{ let %y = @twice(%x); multiply(%y, %x) }}
    """
    relay.assert_structural_equal(defunctionalize(mod(text)), mod(text), map_free_vars=True)


def test_map_over_a_list_of_closures_capturing_tensors() -> None:
    m = mod(
        f"""
        def @main(%x: {T}, %w: {T}) -> List[{T}] {{
          let %k = fn (%y: {T}) {{ add(%y, %w) }};
          let %fs = Cons(%k, Cons(fn (%z: {T}) {{ multiply(%z, %w) }}, Nil));
          @map(fn (%g: fn ({T}) -> {T}) {{ %g(%x) }}, %fs)
        }}
        """,
        prelude=True,
    )
    after = defunctionalize(m)
    assert_first_order(after)
    check_well_formed(after)
    relay.infer_type(after)
    assert "map" not in after and "map_0" in after
    assert after.function("main").ret_type == m.function("main").ret_type
    before_value = relay.interpret(m, X, X + 1)
    after_value = relay.interpret(after, X, X + 1)
    assert after_value == before_value  # exact equality of the list values
    items = []
    while after_value.fields:
        items.append(after_value.fields[0])
        after_value = after_value.fields[1]
    np.testing.assert_allclose(np.stack(items), np.stack([X + X + 1, X * (X + 1)]))


def test_compose_and_a_fold_with_a_lambda() -> None:
    check_same(
        mod(
            f"""
            def @main(%x: {T}) -> {T} {{
              let %inc = fn (%y: {T}) {{ add(%y, 1f) }};
              let %c = @compose(%inc, fn (%y: {T}) {{ multiply(%y, %x) }});
              let %l = Cons(%x, Cons(%c(%x), Nil));
              @foldl(fn (%a: {T}, %b: {T}) {{ add(%a, %c(%b)) }}, %x, %l)
            }}
            """,
            prelude=True,
        ),
        X,
    )


def test_polymorphic_globals_are_specialised_per_instantiation() -> None:
    after = check_same(
        mod(
            f"""
            def @main(%x: {T}, %i: int32) -> {T} {{
              let %n = @foldl(fn (%a: int32, %b: {T}) {{ add(%a, 1) }}, %i, Cons(%x, Nil));
              let %s = @foldl(fn (%a: {T}, %b: {T}) {{ add(%a, %b) }}, %x, Cons(%x, Nil));
              add(%s, cast(%n, dtype="float32"))
            }}
            """,
            prelude=True,
        ),
        X,
        np.array(2, "int32"),
    )
    assert {"foldl_0", "foldl_1"} <= {gv.name_hint for gv in after.functions}


def test_recursive_local_function_rebuilds_its_constructor() -> None:
    check_same(
        mod(
            f"""
            def @main(%x: {T}) -> {T} {{
              let %loop = fn (%i: int32, %acc: {T}) -> {T} {{
                if (less(%i, 3)) {{ %loop(add(%i, 1), add(%acc, %x)) }} else {{ %acc }}
              }};
              %loop(0, %x)
            }}
            """
        ),
        X,
    )


def test_globals_used_as_values_and_higher_order_closures() -> None:
    check_same(
        mod(
            f"""
            def @inc(%y: {T}) -> {T} {{ add(%y, 1f) }}
            def @twice(%f: fn ({T}) -> {T}) -> fn ({T}) -> {T} {{
              fn (%y: {T}) {{ %f(%f(%y)) }}
            }}
            def @main(%x: {T}) -> {T} {{
              let %t = (@inc, @twice(@inc));
              let %r = ref(%t.0);
              ref_write(%r, %t.1);
              ref_read(%r)(%x)
            }}
            """
        ),
        X,
    )


def test_polymorphic_globals_as_values() -> None:
    # @iterate returns @id (a polymorphic global as a value) or a @compose closure.
    after = check_same(
        mod(
            f"""
            def @main(%x: {T}) -> {T} {{
              let %g = @iterate(fn (%e: {T}) {{ multiply(%e, %x) }}, 3);
              let %h: fn ({T}) -> {T} = @id;
              add(%g(%x), %h(%x))
            }}
            """,
            prelude=True,
        ),
        X,
    )
    assert "iterate" not in after and "id" not in after


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("def @main[A](%x: A) -> A { %x }", "monomorphic @main"),
        (
            f"def @main(%x: {T}) -> Option[{T}] {{ let %f = Some; %f(%x) }}",
            "Some is used as a value",
        ),
        (
            f"def @main(%x: {T}) -> {T} {{ let %f = fn [A](%a: A) -> A {{ %a }}; %f(%x) }}",
            "polymorphic function",
        ),
        (
            f"def @ph[A](%a: {T}) -> {T} {{ %a }}\ndef @main(%x: {T}) -> {T} {{ @ph(%x) }}",
            "cannot tell the type arguments A of @ph",
        ),
        (
            f"type Box {{ B(fn ({T}) -> {T}) }}\n"
            f"def @main(%x: {T}) -> {T} {{ match (B(fn (%y: {T}) {{ %y }})) {{ B(%f) => %f(%x) }} }}",
            "constructor B has a field of function type",
        ),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        defunctionalize(mod(text, prelude=True))


def test_the_pass_leaves_its_input_alone() -> None:
    m = mod(f"def @main(%x: {T}) -> {T} {{ let %k = fn (%y: {T}) {{ add(%y, %x) }}; %k(%x) }}")
    before = relay.astext(m)
    out = Defunctionalization()(m)
    assert relay.astext(m) == before and "apply0" in out
    assert Defunctionalization().info.required == ("InferType",)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_random_programs(program: TypedProgram) -> None:
    after = Defunctionalization()(program.module)
    assert_first_order(after)
    check_well_formed(after)
    relay.infer_type(after)
    np.testing.assert_allclose(
        relay.interpret(after, *program.args),
        relay.interpret(program.module, *program.args),
        rtol=1e-5,
        atol=1e-6,
    )


def test_100000_bindings_with_a_closure() -> None:
    n = 100_000
    t = TensorType((2,), "float32")
    x, y = Var("x", t), Var("y", t)
    add = Op.get("add")
    chain = [Var(f"v{i}", t) for i in range(n)]
    body: Expr = chain[-1]
    for i in reversed(range(n)):
        body = Let(chain[i], Call(add, (x if i == 0 else chain[i - 1], const(1.0))), body)
    k = Var("k", FuncType((t,), t))
    body = Let(k, Function((y,), Call(add, (y, x)), t), Call(k, (body,)))
    m = Module()
    m.add("main", Function((x,), body, t))  # fully annotated: no type inference needed
    limit = sys.getrecursionlimit()
    after = defunctionalize(m)
    assert sys.getrecursionlimit() == limit
    assert_first_order(after)
    np.testing.assert_allclose(
        relay.interpret(after, np.zeros(2, "float32")), np.full(2, n, "float32")
    )
