"""Bit operators on lazy tensors: ``>> << & | ^ ~``, their in-place forms and numpy's bitwise
ufuncs are recorded as relay's operators (no fallback) and give numpy's results, dtypes and
errors, shift counts out of range included."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

import relay.lazy as lz
import relay.lazy.numpy as lnp
from tests.lazy.test_api import Fn, check, lazy, numpy_outcome

pytestmark = pytest.mark.tvm

DTYPES = ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "bool"]

BINARY: dict[str, Fn] = {
    "x >> y": operator.rshift,
    "x << y": operator.lshift,
    "x & y": operator.and_,
    "x | y": operator.or_,
    "x ^ y": operator.xor,
    "x >> 2": lambda x, y: x >> 2,
    "1 << y": lambda x, y: 1 << y,
    "x & 5": lambda x, y: x & 5,
    "6 | x": lambda x, y: 6 | x,
    "x ^ True": lambda x, y: x ^ True,
    "~x": lambda x, y: ~x,
    "np.right_shift(x, y)": lambda x, y: np.right_shift(x, y),
    "np.left_shift(x, y)": lambda x, y: np.left_shift(x, y),
    "np.bitwise_and(x, y)": lambda x, y: np.bitwise_and(x, y),
    "np.bitwise_or(x, y)": lambda x, y: np.bitwise_or(x, y),
    "np.bitwise_xor(x, y)": lambda x, y: np.bitwise_xor(x, y),
    "np.invert(x)": lambda x, y: np.invert(x),
    "np.bitwise_not(y)": lambda x, y: np.bitwise_not(y),
}


def operands(dtype: str, seed: int) -> tuple[Any, Any]:
    """``x`` of shape (3, 8) over the dtype's range and counts ``y`` of shape (8,) in and out of
    ``[0, bits)``."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random((3, 8)) < 0.5, rng.random(8) < 0.5
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (3, 8), dtype=dtype, endpoint=True)
    low = -2 if dtype.startswith("int") else 0
    y = np.array([low, 0, 1, info.bits - 1, info.bits, info.bits + 3, 3, info.max], dtype)
    return x, y


@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_and_ufuncs_match_numpy_without_fallback(dtype: str) -> None:
    a, b = operands(dtype, 1)
    check(BINARY, (a, b), lazy(a, b))
    assert not lz.metrics().fallbacks


def _lnp_pair(name: str, on_tensors: bool) -> tuple[Fn, Fn]:
    """(numpy's ``name`` on the arrays, ``lnp``'s on the lazy tensors or on the arrays)."""
    f, lf = getattr(np, name), getattr(lnp, name)
    if on_tensors:
        return (lambda x, y, an, bn: f(an, bn), lambda x, y, an, bn: lf(x, y))
    return (lambda x, y, an, bn: f(an, bn), lambda x, y, an, bn: lf(an, bn))


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64"])
def test_lnp_functions_on_lazy_tensors_and_arrays(dtype: str) -> None:
    a, b = operands(dtype, 2)
    fns: dict[str, Fn | tuple[Fn, Fn]] = {
        f"lnp.{name}({'tensor' if on_tensors else 'ndarray'})": _lnp_pair(name, on_tensors)
        for name in ("right_shift", "left_shift", "bitwise_and", "bitwise_or", "bitwise_xor")
        for on_tensors in (True, False)
    }
    check(fns, (a, b, a, b), (*lazy(a, b), a, b))


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint64"])
def test_in_place_operators(dtype: str) -> None:
    a, b = operands(dtype, 3)
    x = lz.asarray(a.copy())
    want = a.copy()
    for op in ("__irshift__", "__ilshift__", "__iand__", "__ior__", "__ixor__"):
        getattr(want, op)(b)
        assert getattr(x, op)(lz.asarray(b)) is x
    np.testing.assert_array_equal(x.numpy(), want, strict=True)


def test_errors_are_numpys() -> None:
    f = np.ones((2, 3), np.float32)
    i = np.ones(3, np.int32)
    cases: dict[str, Fn] = {
        "~f": lambda f, i, b: ~f,
        "f >> 1": lambda f, i, b: f >> 1,
        "i << f": lambda f, i, b: i << f,
        "f & i": lambda f, i, b: f & i,
        "b >>= 1": lambda f, i, b: operator.irshift(b, 1),
    }
    for what, fn in cases.items():
        _, err = numpy_outcome(fn, (f, i, np.ones(3, bool)))
        assert isinstance(err, TypeError), what
        with pytest.raises(TypeError):
            fn(lz.asarray(f), lz.asarray(i), lz.asarray(np.ones(3, bool)))
