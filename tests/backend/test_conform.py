"""Run-time argument checks at the interpreter's entry (relay.backend.interpreter.conform):
what the static checker defers (``?`` dims, shape variables) is checked when values arrive."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay.backend.interpreter import from_python_list
from relay.errors import ExecutionError
from relay.ir.parser import parse
from relay.std import prelude_text

SRC = """
def @main[n: Shape](%x: Tensor[(?, 4), float32], %y: Tensor[(n, 4), float32],
                    %z: Tensor[(n * 2,), float32]) {
  add(%x, %y)
}
"""


def f32(*shape: int) -> np.ndarray:
    return np.ones(shape, "float32")


def test_conforming_arguments_run() -> None:
    mod = parse(SRC)
    assert relay.interpret(mod, f32(1, 4), f32(5, 4), f32(10)).shape == (5, 4)
    assert relay.interpret(mod, f32(3, 4), f32(3, 4), f32(6)).shape == (3, 4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            (f32(3, 5), f32(3, 4), f32(6)),
            "argument 0 of @main (%x) does not match its type Tensor[(?, 4), float32]: "
            "got Tensor[(3, 5), float32] (dimension 1 is 5, not 4)",
        ),
        (
            (f32(3, 4), f32(3, 4), f32(7)),
            "argument 2 of @main (%z) does not match its type Tensor[(n * 2,), float32]: "
            "got Tensor[(7,), float32] (dimension 0 is 7, not n * 2 = 6)",
        ),
        (
            (f32(3, 4), f32(3, 4, 1), f32(6)),
            "argument 1 of @main (%y) does not match its type Tensor[(n, 4), float32]: "
            "got Tensor[(3, 4, 1), float32] (rank 3, not 2)",
        ),
        (
            (np.ones((3, 4)), f32(3, 4), f32(6)),
            "argument 0 of @main (%x) does not match its type Tensor[(?, 4), float32]: "
            "got Tensor[(3, 4), float64] (dtype float64, not float32)",
        ),
        (
            ((f32(3, 4),), f32(3, 4), f32(6)),
            "argument 0 of @main (%x) does not match its type Tensor[(?, 4), float32]: "
            "got a tuple of 1 field (not a tensor)",
        ),
    ],
)
def test_mismatch_names_parameter_type_and_value(args: tuple[object, ...], message: str) -> None:
    mod = parse(SRC, "conform.rly")
    with pytest.raises(ExecutionError) as info:
        relay.interpret(mod, *args)
    assert info.value.message == message
    span = info.value.span
    line = 3 if message.startswith("argument 2") else 2  # %z is declared on the next line
    assert span is not None and (span.source, span.line) == ("conform.rly", line)


def test_shape_variable_bound_once() -> None:
    mod = parse(
        """
def @main[n: Shape](%a: Tensor[(n, 2), float32], %b: Tensor[(2, n), float32]) {
  nn.matmul(%a, %b)
}"""
    )
    assert relay.interpret(mod, f32(3, 2), f32(2, 3)).shape == (3, 3)
    with pytest.raises(ExecutionError) as info:
        relay.interpret(mod, f32(3, 2), f32(2, 4))
    assert info.value.message == (
        "argument 1 of @main (%b) does not match its type Tensor[(2, n), float32]: "
        "got Tensor[(2, 4), float32] (dimension 1 is 4, but n is 3 elsewhere)"
    )


def test_dtype_variable_bound_once() -> None:
    mod = parse(
        """
def @main[T: BaseType](%a: Tensor[(2,), T], %b: Tensor[(2,), T]) {
  add(%a, %b)
}"""
    )
    assert relay.interpret(mod, np.ones(2, "int32"), np.ones(2, "int32")).dtype == "int32"
    with pytest.raises(ExecutionError, match=r"dtype float32, but T is int32 elsewhere"):
        relay.interpret(mod, np.ones(2, "int32"), f32(2))


def test_tuples_and_data_types() -> None:
    mod = parse(
        prelude_text()
        + """
def @main(%p: (Tensor[(2,), float32], List[Tensor[(), int32]])) {
  @length(%p.1)
}"""
    )
    ok = (f32(2), from_python_list(mod, [1, 2, 3]))
    assert int(relay.interpret(mod, ok)) == 3
    with pytest.raises(ExecutionError, match=r"\(field 0: dimension 0 is 3, not 2\)"):
        relay.interpret(mod, (f32(3), from_python_list(mod, [])))
    with pytest.raises(ExecutionError, match=r"\(field 1: not a constructor value\)"):
        relay.interpret(mod, (f32(2), f32(2)))
    with pytest.raises(ExecutionError, match=r"\(2 fields, not 3\)|\(1 fields?, not 2\)"):
        relay.interpret(mod, (f32(2),))


def test_function_program_checked_too() -> None:
    fn = relay.ir.parser.parse_expr("fn (%x: Tensor[(2,), float32]) { %x }")
    with pytest.raises(ExecutionError, match=r"argument 0 of the function \(%x\)"):
        relay.interpret(fn, f32(3))
