"""Run-time checks inside a program where the type checker let a ``?`` dimension pass for a
size: arguments of calls of annotated functions (global or closure) and results of functions
with a declared result type. Only those calls and functions are checked."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay.backend.interpreter import Interpreter
from relay.backend.interpreter.conform import call_needs_check, result_needs_check
from relay.errors import ExecutionError
from relay.ir.expr import Call
from relay.ir.parser import parse

HEADER = '#[version = "0.0.5"]\n'


def f32(*shape: int) -> np.ndarray:
    return np.ones(shape, "float32")


def run(src: str, *args: object) -> object:
    mod = parse(HEADER + src)
    relay.infer_type(mod)
    return relay.interpret(mod, *args)


def failure(src: str, *args: object) -> ExecutionError:
    with pytest.raises(ExecutionError) as info:
        run(src, *args)
    return info.value


G3 = "def @g(%a: Tensor[(3,), float32]) { %a }\n"


def test_a_run_time_dimension_passed_to_a_sized_parameter_is_checked_at_the_call() -> None:
    src = G3 + "def @main(%x: Tensor[(?,), float32]) { @g(%x) }"
    assert run(src, f32(3)).shape == (3,)  # type: ignore[attr-defined]
    err = failure(src, f32(5))
    assert err.message == (
        "argument 0 of @g (%a) does not match its type Tensor[(3,), float32]: "
        "got Tensor[(5,), float32] (dimension 0 is 5, not 3)"
    )
    assert err.span is not None and (err.span.line, err.span.column) == (3, 40)  # @g(%x)


def test_shape_variables_bind_across_the_arguments_of_a_call() -> None:
    src = (
        "def @g(%a: Tensor[(n,), float32], %b: Tensor[(n,), float32]) { add(%a, %b) }\n"
        "def @main(%x: Tensor[(?,), float32], %y: Tensor[(3,), float32]) { @g(%x, %y) }"
    )
    assert run(src, f32(3), f32(3)).shape == (3,)  # type: ignore[attr-defined]
    assert failure(src, f32(5), f32(3)).message == (
        "argument 1 of @g (%b) does not match its type Tensor[(n,), float32]: "
        "got Tensor[(3,), float32] (dimension 0 is 3, but n is 5 elsewhere)"
    )


def test_closures_are_checked_too() -> None:
    local = (
        "def @main(%x: Tensor[(?,), float32]) "
        "{ let %f = fn (%a: Tensor[(3,), float32]) { %a }; %f(%x) }"
    )
    assert failure(local, f32(5)).message.startswith("argument 0 of %f (%a) does not match")
    # called through a function type that lets any size pass
    higher = (
        "def @app(%f: fn (Tensor[(?,), float32]) -> Tensor[(?,), float32], "
        "%x: Tensor[(5,), float32]) { %f(%x) }\n"
        "def @main(%x: Tensor[(5,), float32]) { @app(fn (%a: Tensor[(3,), float32]) { %a }, %x) }"
    )
    assert failure(higher, f32(5)).message == (
        "argument 0 of %f (%a) does not match its type Tensor[(3,), float32]: "
        "got Tensor[(5,), float32] (dimension 0 is 5, not 3)"
    )


def test_a_result_with_a_run_time_dimension_is_checked_against_the_declared_type() -> None:
    src = (
        "def @g(%a: Tensor[(?,), float32], %b: Tensor[(n,), float32]) -> Tensor[(n,), float32] "
        "{ %a }\n"
        "def @main(%x: Tensor[(?,), float32], %y: Tensor[(2,), float32]) { @g(%x, %y) }"
    )
    assert run(src, f32(2), f32(2)).shape == (2,)  # type: ignore[attr-defined]
    err = failure(src, f32(4), f32(2))
    assert err.message == (
        "the result of @g does not match its type Tensor[(n,), float32]: "
        "got Tensor[(4,), float32] (dimension 0 is 4, but n is 2 elsewhere)"
    )
    assert err.span is not None and (err.span.line, err.span.column) == (2, 65)  # -> its type
    main = "def @main(%x: Tensor[(?,), float32]) -> Tensor[(3,), float32] { %x }"
    assert failure(main, f32(4)).message.startswith("the result of @main does not match")


def test_a_shape_variable_instantiated_at_a_run_time_dimension() -> None:
    src = (
        "def @g(%a: Tensor[(n,), float32]) -> Tensor[(n,), float32] { %a }\n"
        "def @main(%x: Tensor[(?,), float32]) { @g(%x) }"
    )
    assert run(src, f32(7)).shape == (7,)  # type: ignore[attr-defined]


def test_only_calls_and_functions_with_a_deferred_check_are_checked() -> None:
    mod = parse(
        HEADER
        + G3
        + "def @h(%b: Tensor[(?,), float32]) -> Tensor[(?,), float32] { %b }\n"
        + "def @main(%x: Tensor[(?,), float32], %y: Tensor[(3,), float32]) "
        + "{ (@g(%x), @g(%y), @h(%x), @h(%y)) }"
    )
    relay.infer_type(mod)
    main = mod.function("main")
    calls = [f for f in main.body.fields]  # type: ignore[attr-defined]
    assert all(isinstance(c, Call) for c in calls)
    g, h = mod.function("g"), mod.function("h")
    assert [call_needs_check(c, f) for c, f in zip(calls, (g, g, h, h), strict=True)] == [
        True,
        False,
        False,
        False,
    ]
    assert [result_needs_check(f) for f in (g, h, main)] == [False, False, False]
    # a program that was not type-checked has nothing known to check
    unchecked = parse(HEADER + G3 + "def @main(%x: Tensor[(?,), float32]) { @g(%x) }")
    call = unchecked.function("main").body
    assert isinstance(call, Call) and not call_needs_check(call, unchecked.function("g"))
    assert relay.interpret(unchecked, f32(5)).shape == (5,)  # type: ignore[attr-defined]


def test_a_program_without_run_time_dimensions_checks_nothing() -> None:
    mod = parse(
        HEADER
        + "def @loop(%i: int32, %acc: int32) -> int32 {\n"
        + "  if (equal(%i, 0)) { %acc } else { @loop(subtract(%i, 1), add(%acc, %i)) }\n"
        + "}\n"
        + "def @main(%n: int32) -> int32 { @loop(%n, 0) }"
    )
    relay.infer_type(mod)
    interp = Interpreter(mod)
    assert int(interp.call(interp.global_closure("main"), [np.int32(100)])) == 5050
    # functions of scalars: no `?` can break them, so no call is even looked at
    assert interp._guards == {mod.function("loop"): False, mod.function("main"): False}
    assert interp._call_checks == {}
    assert interp.global_closure("loop").guard is False
