"""Functions decorated where they are defined: annotations, recursion between globals,
data types and match statements, the module and its text."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay import Cons, List, Nil, Nothing, Option, Some, Tensor, float32


@relay
def is_even(n: int) -> bool:
    if n == 0:
        return True
    return is_odd(n - 1)


@relay
def is_odd(n: int) -> bool:
    if n == 0:
        return False
    return is_even(n - 1)


@relay.adt
class Expr:
    Num: Tensor[float32, ()]
    Add: (Expr, Expr)
    Mul: (Expr, Expr)
    Neg: Expr


@relay
def evaluate(e: Expr) -> float:
    match e:
        case Expr.Num(v):
            return v
        case Expr.Add(a, b):
            return evaluate(a) + evaluate(b)
        case Expr.Mul(a, b):
            return evaluate(a) * evaluate(b)
        case Expr.Neg(a):
            return -evaluate(a)


@relay
def total(xs: List[Tensor[float32, (2,)]]) -> Tensor[float32, (2,)]:
    acc = np.zeros(2, dtype=np.float32)
    rest = xs
    done = False
    while not done:
        match rest:
            case Cons(h, t):
                acc = acc + h
                rest = t
            case Nil():
                done = True
    return acc


@relay
def head_or(xs: List[Tensor[float32, ()]], default: float) -> float:
    match xs:
        case Cons(h, _):
            return h
    return default


@relay
def find_positive(xs: List[Tensor[float32, ()]]) -> Option[Tensor[float32, ()]]:
    match xs:
        case Cons(h, t):
            if h > 0:
                return Some(h)
            return find_positive(t)
        case Nil():
            return Nothing()


@relay
def mlp(
    x: Tensor[float32, ("n", 4)],  # noqa: F821, UP037 - "n" is a shape variable, not a name
    w: Tensor[float32, (4, 3)],
    b: Tensor[float32, (3,)],
) -> Tensor[float32, ("n", 3)]:  # noqa: F821, UP037
    return np.maximum(x @ w + b, 0)


def test_mutual_recursion_between_globals():
    assert bool(is_even(10)) is True
    assert bool(is_odd(7)) is True
    assert bool(is_even(7)) is False
    text = str(is_even)
    assert "def @is_even(%n: int32) -> bool {" in text
    assert "def @is_odd(%n: int32) -> bool {" in text


def test_data_type_and_match():
    e = Expr.Add(
        Expr.Num(np.float32(2)),
        Expr.Mul(Expr.Num(np.float32(3)), Expr.Neg(Expr.Num(np.float32(4)))),
    )
    assert float(evaluate(e)) == -10.0
    assert float(evaluate.__wrapped__(e)) == -10.0


def test_python_lists_become_lists():
    xs = [np.float32([1, 2]), np.float32([3, 4]), np.float32([5, 6])]
    np.testing.assert_array_equal(total(xs), [9, 12])
    np.testing.assert_array_equal(total(Cons(xs[0], Cons(xs[1], Nil()))), [4, 6])
    assert float(head_or([np.float32(7)], 1.0)) == 7.0
    assert float(head_or([], 1.0)) == 1.0


def test_data_type_results_come_back_as_instances():
    out = find_positive([np.float32(-1), np.float32(3), np.float32(4)])
    assert isinstance(out, Some) and float(out.fields[0]) == 3.0
    assert isinstance(find_positive([np.float32(-1)]), Nothing)


def test_shape_variables_in_annotations():
    assert str(mlp.checked_type) == (
        "fn [n: Shape](Tensor[(n, 4), float32], Tensor[(4, 3), float32], Tensor[(3,), float32]) "
        "-> Tensor[(n, 3), float32]"
    )
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    w = np.ones((4, 3), np.float32)
    b = np.float32([-1, 0, 1])
    np.testing.assert_allclose(mlp(x, w, b), np.maximum(x @ w + b, 0), rtol=1e-6)


def test_wrong_arguments_name_the_parameter():
    w = np.ones((4, 3), np.float32)
    b = np.zeros(3, np.float32)
    with pytest.raises(relay.TypeCheckError) as info:
        mlp(np.ones((5, 5), np.float32), w, b)
    assert info.value.message == (
        "argument 0 of mlp (%x) does not match its type Tensor[(n, 4), float32]: "
        "got Tensor[(5, 5), float32] (dimension 1 is 5, not 4)"
    )
    with pytest.raises(relay.TypeCheckError) as info:
        mlp(np.ones((5, 4), np.float64), w, b)
    assert "(dtype float64, not float32)" in info.value.message
    with pytest.raises(relay.TypeCheckError) as info:
        mlp(w, b)
    assert info.value.message == "mlp takes 3 arguments, got 2"


@relay
def any_rows(
    x: Tensor[float32, (relay.Any, 3)], pair: tuple[float, int]
) -> Tensor[float32, (relay.Any, 3)]:
    scale, shift = pair
    return x * scale + shift


def test_any_dimensions_and_tuple_annotations():
    assert str(any_rows.checked_type) == (
        "fn (Tensor[(?, 3), float32], (float32, int32)) -> Tensor[(?, 3), float32]"
    )
    out = any_rows(np.ones((2, 3), np.float32), (2.0, 1))
    np.testing.assert_array_equal(out, np.full((2, 3), 3.0))
    assert any_rows(np.ones((5, 3), np.float32), (1.0, 0)).shape == (5, 3)
    with pytest.raises(relay.TypeCheckError, match=r"dimension 1 is 4, not 3"):
        any_rows(np.ones((5, 4), np.float32), (1.0, 0))


@relay
def scaled(x: Tensor[float32, ("n", 4)], s):  # noqa: F821, UP037 - "n": a shape variable
    return x * s


def test_a_shape_variable_beside_an_unannotated_parameter():
    # the specialisation for s's type dropped the type parameters, and the annotation
    # still named n: "type variable n is not bound" (found by a review)
    np.testing.assert_array_equal(scaled(np.ones((3, 4), np.float32), 2.0), np.full((3, 4), 2.0))
    np.testing.assert_array_equal(scaled(np.ones((5, 4), np.float32), 3.0), np.full((5, 4), 3.0))
    with pytest.raises(relay.TypeCheckError) as info:
        scaled(np.ones((3, 5), np.float32), 2.0)
    assert info.value.message == (
        "argument 0 of scaled (%x) does not match its type Tensor[(n, 4), float32]: "
        "got Tensor[(3, 5), float32] (dimension 1 is 5, not 4)"
    )


@relay
def list_sum(items):
    match items:
        case Cons(h, t):
            return h + list_sum(t)
        case Nil():
            return np.float32(0)


@relay
def multiples(x):
    items = Nil()
    for i in range(4):
        items = Cons(x * i, items)
    return list_sum(items)


def test_a_list_built_in_a_loop_goes_to_an_unannotated_function():
    # the list's type is known only after inference, so list_sum was converted for any
    # argument and could not infer it alone: "cannot infer the type of %items"
    assert float(multiples(np.float32(2.0))) == 12.0
    assert float(multiples.interpret(np.float32(0.5))) == 3.0


@relay
def nest(x, n):
    if n <= 0:
        return x
    return nest((x, x), n - 1)[0]


def test_a_recursive_call_at_ever_larger_types_is_an_error():
    # each call specialises nest for a deeper tuple: conversion never ended, and the
    # interpreter died of a stack overflow (found by a review)
    with pytest.raises(relay.FrontendError) as info:
        nest(np.float32(1), 2)
    assert info.value.message == (
        "nest calls itself at 8 different argument types in a row (at ever larger types, "
        "as f((x, x)) would?); annotate its parameters"
    )
    span = info.value.span
    line = nest.__wrapped__.__code__.co_firstlineno + 4  # (the decorator's line first)
    assert span is not None and (span.line, span.column) == (line, 12)
