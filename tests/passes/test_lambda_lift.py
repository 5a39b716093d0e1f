"""LambdaLift: closed and capturing local functions, nesting, recursion, polymorphism,
idempotence, random programs, and a 100,000-binding program."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.analysis import check_well_formed
from relay.ir.expr import Call, Expr, Function, Let, Op, Var, children, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.passes.lambda_lift import LambdaLift, lambda_lift
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"


def mod(text: str) -> Module:
    return relay.parse(HEAD + text)


def local_functions(m: Module) -> list[Function]:
    """The ``fn`` nodes inside globals, other than a global's ``Closure=1`` body."""
    out: list[Function] = []
    for func in m.functions.values():
        body = func.body
        if isinstance(body, Function) and body.attrs.get("Closure") == 1:
            body = body.body
        stack: list[Expr] = [body]
        while stack:
            node = stack.pop()
            if isinstance(node, Function):
                out.append(node)
            stack.extend(children(node))
    return out


def check(before: str, expected: str, *args: np.ndarray) -> Module:
    """lambda_lift(before) equals expected, has no local functions left, is well formed,
    type-checks and computes the same."""
    b = mod(before)
    after = lambda_lift(b)
    relay.assert_structural_equal(after, mod(expected), map_free_vars=True)
    assert local_functions(after) == []
    check_well_formed(after)
    relay.infer_type(after)
    if args:
        np.testing.assert_allclose(relay.interpret(after, *args), relay.interpret(b, *args))
    return after


X = np.array([1.0, -2.0], "float32")


def test_a_closed_function_becomes_a_global() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{ let %k = fn (%y) {{ add(%y, 1f) }}; %k(%x) }}
        """,
        f"""
        def @main(%x: {T}) -> {T} {{ let %k = @main_lifted0; %k(%x) }}
        def @main_lifted0(%y: {T}) -> {T} {{ add(%y, 1f) }}
        """,
        X,
    )


def test_a_capturing_function_becomes_a_global_returning_the_closure() -> None:
    check(
        f"""
        def @main(%x: {T}, %s: float32) -> {T} {{
          let %k = fn (%y: {T}) {{ multiply(add(%y, %x), %s) }};
          %k(%x)
        }}
        """,
        f"""
        def @main(%x: {T}, %s: float32) -> {T} {{ let %k = @main_lifted0(%x, %s); %k(%x) }}
        def @main_lifted0(%x: {T}, %s: float32) -> fn ({T}) -> {T} {{
          fn (%y: {T}, Closure=1) -> {T} {{ multiply(add(%y, %x), %s) }}
        }}
        """,
        X,
        np.array(3.0, "float32"),
    )


def test_nested_functions_are_lifted_innermost_first() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %c = fn (%y: {T}) {{
            let %h = fn (%z: {T}) {{ multiply(%z, %x) }};
            %h(add(%y, %x))
          }};
          %c(%x)
        }}
        """,
        f"""
        def @main(%x: {T}) -> {T} {{ let %c = @main_lifted1(%x); %c(%x) }}
        def @main_lifted0(%x: {T}) -> fn ({T}) -> {T} {{
          fn (%z: {T}, Closure=1) -> {T} {{ multiply(%z, %x) }}
        }}
        def @main_lifted1(%x: {T}) -> fn ({T}) -> {T} {{
          fn (%y: {T}, Closure=1) -> {T} {{ let %h = @main_lifted0(%x); %h(add(%y, %x)) }}
        }}
        """,
        X,
    )


def test_a_recursive_local_function_calls_its_global() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %loop = fn (%i: int32, %acc: {T}) -> {T} {{
            if (less(%i, 3)) {{ %loop(add(%i, 1), add(%acc, %x)) }} else {{ %acc }}
          }};
          %loop(0, %x)
        }}
        """,
        f"""
        def @main(%x: {T}) -> {T} {{ let %loop = @main_lifted0(%x); %loop(0, %x) }}
        def @main_lifted0(%x: {T}) -> fn (int32, {T}) -> {T} {{
          fn (%i: int32, %acc: {T}, Closure=1) -> {T} {{
            if (less(%i, 3)) {{ @main_lifted0(%x)(add(%i, 1), add(%acc, %x)) }} else {{ %acc }}
          }}
        }}
        """,
        X,
    )


def test_a_recursive_closed_function_refers_to_its_global() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %f = fn (%i: int32, %y: {T}) -> {T} {{
            if (less(%i, 1)) {{ %y }} else {{ %f(subtract(%i, 1), add(%y, 1f)) }}
          }};
          %f(4, %x)
        }}
        """,
        f"""
        def @main(%x: {T}) -> {T} {{ let %f = @main_lifted0; %f(4, %x) }}
        def @main_lifted0(%i: int32, %y: {T}) -> {T} {{
          if (less(%i, 1)) {{ %y }} else {{ @main_lifted0(subtract(%i, 1), add(%y, 1f)) }}
        }}
        """,
        X,
    )


def test_type_variables_of_the_enclosing_global_become_type_parameters() -> None:
    after = check(
        """
        def @poly[A](%a: A) -> A { let %f = fn () { %a }; %f() }
        def @keep[B](%b: B) -> B { let %g = fn [C](%c: C) -> C { %c }; %g(%b) }
        """,
        """
        def @poly[A](%a: A) -> A { let %f = @poly_lifted0(%a); %f() }
        def @keep[B](%b: B) -> B { let %g = @keep_lifted0; %g(%b) }
        def @poly_lifted0[A](%a: A) -> fn () -> A { fn (Closure=1) -> A { %a } }
        def @keep_lifted0[C](%c: C) -> C { %c }
        """,
    )
    assert len(after.function("poly_lifted0").type_params) == 1


def test_holes_in_annotations_take_the_inferred_types() -> None:
    # holes (`_`, as inlining a polymorphic function leaves where its type parameter was):
    # the lifted global's signature, checked on its own, gets the types inference found
    m = mod(
        f"""
        def @main(%x: {T}) -> {T} {{
          let %f = fn (%y: _, %z: Tensor[(_,), float32]) -> _ {{ add(add(%y, %x), %z) }};
          %f(%x, %x)
        }}
        """
    )
    relay.infer_type(m)
    after = lambda_lift(m)
    lifted = after.function("main_lifted0")
    inner = lifted.body
    assert isinstance(inner, Function)
    assert [str(p.type_annotation) for p in inner.params] == [T, T]
    assert str(inner.ret_type) == T
    relay.infer_type(after)
    np.testing.assert_allclose(relay.interpret(after, X), relay.interpret(m, X))


def test_functions_in_the_prelude_are_lifted_and_keep_their_results() -> None:
    m = relay.parse(
        HEAD
        + f"""
        def @main(%x: {T}) -> {T} {{
          let %l = Cons(%x, Cons(negative(%x), Nil));
          let %m = @map(fn (%y: {T}) {{ multiply(%y, %x) }}, %l);
          @foldl(fn (%a: {T}, %b: {T}) {{ add(%a, %b) }}, %x, %m)
        }}
        """,
        module=relay.prelude(),
    )
    after = lambda_lift(m)
    assert local_functions(after) == []
    check_well_formed(after)
    relay.infer_type(after)
    np.testing.assert_allclose(relay.interpret(after, X), relay.interpret(m, X))


def test_idempotent_and_primitive_functions_stay() -> None:
    text = f"""
        def @main(%x: {T}) -> {T} {{
          let %p = fn (%y: {T}, Primitive=1) {{ exp(%y) }};
          let %k = fn (%y: {T}) {{ add(%y, %x) }};
          %k(%p(%x))
        }}
    """
    once = lambda_lift(mod(text))
    assert len(local_functions(once)) == 1  # the primitive one
    relay.assert_structural_equal(lambda_lift(once), once, map_free_vars=True)


def test_the_pass_leaves_its_input_alone() -> None:
    m = mod(f"def @main(%x: {T}) -> {T} {{ let %k = fn (%y: {T}) {{ add(%y, %x) }}; %k(%x) }}")
    before = relay.astext(m)
    out = LambdaLift()(m)
    assert relay.astext(m) == before and len(out.functions) == 2
    assert LambdaLift().info.required == ("InferType",)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_random_programs(program: TypedProgram) -> None:
    after = LambdaLift()(program.module)
    assert local_functions(after) == []
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
    chain = [Var(f"v{i}") for i in range(n)]
    body: Expr = chain[-1]
    for i in reversed(range(n)):
        body = Let(chain[i], Call(add, (x if i == 0 else chain[i - 1], const(1.0))), body)
    k = Var("k")
    body = Let(k, Function((y,), Call(add, (y, x)), t), Call(k, (body,)))
    m = Module()
    m.add("main", Function((x,), body, t))  # annotated: lifting needs no type inference
    limit = sys.getrecursionlimit()
    after = lambda_lift(m)
    assert sys.getrecursionlimit() == limit
    assert len(after.functions) == 2
    np.testing.assert_allclose(
        relay.interpret(after, np.zeros(2, "float32")), np.full(2, n, "float32")
    )
