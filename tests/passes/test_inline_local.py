"""Inlining local functions called exactly once (relay.passes.inline_local)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.analysis.well_formed import well_formed_errors
from relay.ir import Module
from relay.ir.expr import Call, Function, Let, Tuple, Var
from relay.ir.types import TensorType
from relay.passes import InlineLocalFunctions
from relay.passes.inline_local import inline_local_functions
from tests.strategies import TypedProgram, well_typed_programs

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"


def module(text: str) -> Module:
    return relay.parse(HEADER + text)


def inlined(text: str) -> Module:
    return relay.infer_type(InlineLocalFunctions()(module(text)))  # type: ignore[return-value]


def test_a_join_point_is_inlined_at_its_call() -> None:
    out = inlined(f"""
def @main(%n: int32, %x: {T}) -> {T} {{
  let %loop = fn (%i: int32, %acc: {T}) -> {T} {{
    let %next = add(%i, 1);
    let %join = fn () -> {T} {{ %loop(%next, multiply(%acc, 2f)) }};
    if (greater(%next, %n)) {{ %acc }} else {{ %join() }}
  }};
  %loop(0, %x)
}}""")
    expected = module(f"""
def @main(%n: int32, %x: {T}) -> {T} {{
  let %loop = fn (%i: int32, %acc: {T}) -> {T} {{
    let %next = add(%i, 1);
    if (greater(%next, %n)) {{ %acc }} else {{ %loop(%next, multiply(%acc, 2f)) }}
  }};
  %loop(0, %x)
}}""")
    relay.assert_structural_equal(out["main"], relay.infer_type(expected)["main"])
    x = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(relay.interpret(out, np.int32(3), x), x * 8)


def test_parameters_are_bound_to_the_arguments_in_order() -> None:
    out = inlined(f"""
def @main(%x: {T}) -> {T} {{
  let %f = fn (%a: {T}, %b: {T}) -> {T} {{ subtract(%a, %b) }};
  %f(exp(%x), %x)
}}""")
    expected = module(f"""
def @main(%x: {T}) -> {T} {{
  let %a: {T} = exp(%x);
  let %b: {T} = %x;
  subtract(%a, %b)
}}""")
    relay.assert_structural_equal(out["main"], relay.infer_type(expected)["main"])


def test_a_function_literal_called_where_it_is_made_is_reduced() -> None:
    # graph form writes the join point this way: no binding, the literal is the callee
    x = Var("x", TensorType((2,), "float32"))
    y = Var("y", TensorType((2,), "float32"))
    body = Call(Function((y,), relay.op.negative(y)), (relay.op.exp(x),))
    out = inline_local_functions(Function((x,), body))
    assert isinstance(out, Function) and isinstance(out.body, Let) and out.body.var is y
    v = np.array([0.0, 1.0], np.float32)
    np.testing.assert_allclose(relay.interpret(out, v), -np.exp(v), rtol=1e-6)


def test_a_literal_called_at_two_places_is_left_alone() -> None:
    # one shared node in graph form: reduced at both calls, its body would be one shared
    # node too, evaluated once (a reference written in it would be written once)
    x = Var("x", TensorType((2,), "float32"))
    y = Var("y", TensorType((2,), "float32"))
    f = Function((y,), relay.op.negative(y))
    func = Function((x,), Tuple((Call(f, (x,)), Call(f, (relay.op.exp(x),)))))
    assert inline_local_functions(func) is func


def test_what_is_left_alone() -> None:
    texts = [
        # called twice
        f"def @main(%x: {T}) -> {T} {{ let %f = fn (%a: {T}) -> {T} {{ exp(%a) }}; "
        f"add(%f(%x), %f(%x)) }}",
        # used as a value, not called
        f"def @main(%x: {T}) -> fn ({T}) -> {T} {{ let %f = fn (%a: {T}) -> {T} {{ %a }}; %f }}",
        # recursive: it names itself
        f"def @main(%x: {T}) -> {T} {{ let %f = fn (%a: {T}) -> {T} {{ "
        f"if (less(sum(%a), 0f)) {{ %f(add(%a, 1f)) }} else {{ %a }} }}; %f(%x) }}",
        # polymorphic
        f"def @main(%x: {T}) -> {T} {{ let %f = fn [A](%a: A) -> A {{ %a }}; %f(%x) }}",
    ]
    for text in texts:
        mod = module(text)
        before = mod["main"]
        assert inline_local_functions(before) is before, text


def test_frontend_loops_with_break_lose_their_join_closures() -> None:
    @relay
    def walk(x: relay.Tensor[relay.float32, (3,)], n: int):  # type: ignore[no-untyped-def]
        i = 0
        while i < n:
            i = i + 1
            if i > 4:
                break
            x = x * 0.5
        return x

    x = np.array([1, 2, 3], np.float32)
    walk(x, 2)
    text = relay.astext(walk.module)
    assert "fn () {" in text  # the frontend's join point
    out = relay.astext(InlineLocalFunctions()(walk.module))
    assert "fn () {" not in out
    for n in (0, 2, 9):
        np.testing.assert_allclose(walk(x, n), x * 0.5 ** min(n, 4), rtol=1e-6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_keeps_the_result_and_the_types(program: TypedProgram) -> None:
    # main called once through a let-bound literal wrapping its body: inlined back
    mod = program.module.copy()
    main = mod.function("main")
    params = tuple(Var(p.name_hint, p.type_annotation) for p in main.params)
    inner = Function(main.params, main.body, main.ret_type)
    f = Var("f")
    mod.update_func(
        mod.get_global_var("main"),
        Function(params, Let(f, inner, Call(f, params)), main.ret_type),
    )
    before = relay.interpret(mod, *program.args)
    out = relay.infer_type(InlineLocalFunctions()(mod))
    assert isinstance(out, Module)
    assert "let %f" not in relay.astext(out["main"])
    assert not well_formed_errors(out)
    after = relay.interpret(out, *program.args)
    np.testing.assert_allclose(np.asarray(before), np.asarray(after), rtol=1e-5)
