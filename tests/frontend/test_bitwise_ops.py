"""Python's bit operators (``>> << & | ^ ~``) and numpy's bitwise functions inside @relay
functions: the operators they become (the logical ones for bools), folding of Python
numbers, and the results against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay import Tensor, bool_, float32, int8, int32

X = np.array([-100, 7, 1000, 2**30, -(2**31), 2**31 - 1], np.int32)
M = np.array([3, -1, 255, 7, 0, 2**20], np.int32)
K = np.array([0, 1, 31, 32, -1, 5], np.int32)
A = np.array([True, False, True, False, True, True])
B = np.array([True, True, False, False, False, True])


@relay
def requantize(x: Tensor[int32, (6,)], m: Tensor[int32, (6,)]):
    return (x >> 3, x & m, ~x, x << 2, x | 5, x ^ m, (x + 4) >> 3)


def test_operators_on_int32_tensors_match_numpy() -> None:
    want = (X >> 3, X & M, ~X, X << 2, X | 5, X ^ M, (X + 4) >> 3)
    with np.errstate(over="ignore"):
        for got, w in zip(requantize(X, M), want, strict=True):
            np.testing.assert_array_equal(got, w, strict=True)


def test_the_operators_become_the_bitwise_operators() -> None:
    text = requantize.astext()
    for op in ("right_shift", "bitwise_and", "bitwise_not", "left_shift", "bitwise_or"):
        assert f"{op}(" in text
    assert "bitwise_xor(%x, %m)" in text
    assert "logical" not in text


def shifts_by_tensors(x, k):
    # numpy updates in place: y and z are copies, so that x keeps its value there too
    y = x + 0
    y >>= 2
    y <<= k
    z = x + 0
    z &= 0x7F
    z |= 1
    z ^= k
    return x >> k, x << k, y, z, 1 << k


def test_counts_in_and_out_of_range_and_augmented_assignment() -> None:
    got = relay.function(shifts_by_tensors)(X, K)
    want = shifts_by_tensors(X, K)  # numpy: counts outside [0, 32) give 0 or -1
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w, strict=True)


def numpy_functions(x, k):
    return (
        np.right_shift(x, k),
        np.left_shift(x, k),
        np.bitwise_and(x, 0xFF),
        np.bitwise_or(x, k),
        np.bitwise_xor(x, k),
        np.invert(x),
        np.bitwise_not(x),
        np.bitwise_left_shift(x, 1),
        np.bitwise_right_shift(x, 1),
        np.bitwise_invert(x),
    )


def test_numpy_functions_match_numpy() -> None:
    got = relay.function(numpy_functions)(X, K)
    for g, w in zip(got, numpy_functions(X, K), strict=True):
        np.testing.assert_array_equal(g, w, strict=True)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint32", "int64", "uint64"])
def test_other_integer_dtypes_keep_their_dtype(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 0, 1, 100], dtype)
    k = np.array([1, info.bits - 1, info.bits, 3, 2], dtype)
    got = relay.function(shifts_by_tensors)(x, k)
    with np.errstate(over="ignore"):
        want = shifts_by_tensors(x, k)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w, strict=True)


@relay
def bools(a: Tensor[bool_, (6,)], b: Tensor[bool_, (6,)]):
    c = a & b
    c |= ~a
    return c, a | b, a ^ b, ~b, np.bitwise_and(a, b), np.invert(a)


def test_bools_stay_logical() -> None:
    text = bools.astext()
    for op in ("logical_and", "logical_or", "logical_xor", "logical_not"):
        assert f"{op}(" in text
    # only np.invert (a numpy function of one argument) keeps its own operator: the same values
    assert [line.split("= ")[1] for line in text.splitlines() if "bitwise" in line] == [
        "bitwise_not(%a);"
    ]
    got = bools(A, B)
    want = ((A & B) | ~A, A | B, A ^ B, ~B, A & B, ~A)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w, strict=True)


def test_a_bool_tensor_meets_an_int_tensor() -> None:
    def f(a, x):
        return a & x, x | a

    got = relay.function(f)(A, X)
    for g, w in zip(got, f(A, X), strict=True):
        np.testing.assert_array_equal(g, w, strict=True)


def python_numbers(x):
    return x + (3 & 5) + (6 | 1) + (6 ^ 3) + (~3) + (1 << 4) + (-9 >> 1)


def test_python_numbers_fold_as_python() -> None:
    f = relay.function(python_numbers)
    np.testing.assert_array_equal(f(X), python_numbers(X), strict=True)
    assert "bitwise" not in f.astext() and "shift" not in f.astext()


def test_a_python_number_takes_the_tensors_dtype() -> None:
    def f(x: Tensor[int8, (4,)]):
        return x >> 1, x << 1, x & 0x0F, ~x

    x = np.array([-128, 100, -3, 127], np.int8)
    got = relay.function(f)(x)
    for g, w in zip(got, f(x), strict=True):
        np.testing.assert_array_equal(g, w, strict=True)


def test_a_float_shift_is_a_type_error_at_the_line() -> None:
    def f(x: Tensor[float32, (3,)]):
        return x >> 1

    with pytest.raises(relay.TypeCheckError) as info:
        relay.function(f)
    assert info.value.message == (
        "right_shift: arguments must be integers, got Tensor[(3,), float32] and float32"
    )
    assert info.value.span is not None and info.value.span.line == f.__code__.co_firstlineno + 1


def test_a_negative_shift_of_python_numbers_is_an_error() -> None:
    def f(x):
        return x + (1 << -1)

    with pytest.raises(relay.FrontendError) as info:
        relay.function(f)(X)
    assert info.value.message == "negative shift count"
