"""Elementwise arithmetic, comparison and logical operators with numpy broadcasting.

Integer ``divide`` and ``mod`` truncate toward zero (C semantics, as TVM's
``truncdiv``/``truncmod``); ``floor_divide`` and ``floor_mod`` round toward
negative infinity. Integer division by zero raises ``ZeroDivisionError``
(the interpreter reports it as an ``ExecutionError`` at the call's span)
rather than producing numpy's silent zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.types import IncompleteType, TensorType, Type
from relay.op.registry import OpPattern, register_op
from relay.typecheck.relation import (
    RelationError,
    RelationFunc,
    Reporter,
    broadcast_shapes,
    forward,
    identity_rel,
    is_dtype,
    tensor_arg,
)

Array = np.ndarray


def _arr(x: Any) -> Array:
    return np.asarray(x)


def _check_int_divisor(b: Array) -> None:
    if np.issubdtype(b.dtype, np.integer) and np.any(b == 0):
        raise ZeroDivisionError("integer division by zero")


def _divide(a: Array, b: Array) -> Array:
    if np.issubdtype(np.result_type(a, b), np.integer):
        _check_int_divisor(b)
        if np.issubdtype(a.dtype, np.unsignedinteger):
            return _arr(np.floor_divide(a, b))
        q = np.abs(a) // np.abs(b)
        neg = (a < 0) != (b < 0)
        return _arr(np.where(neg, -q, q).astype(np.result_type(a, b)))
    return _arr(np.divide(a, b))


def _floor_divide(a: Array, b: Array) -> Array:
    if np.issubdtype(np.result_type(a, b), np.integer):
        _check_int_divisor(b)
        return _arr(np.floor_divide(a, b))
    return _arr(np.floor(np.divide(a, b)))


def _mod(a: Array, b: Array) -> Array:
    _check_int_divisor(b)
    return _arr(np.fmod(a, b))


def _floor_mod(a: Array, b: Array) -> Array:
    _check_int_divisor(b)
    return _arr(np.mod(a, b))


def _power(a: Array, b: Array) -> Array:
    if np.issubdtype(a.dtype, np.integer) and np.any(b < 0):
        raise ValueError("integers to negative integer powers are not allowed")
    return _arr(np.power(a, b))


def _binary(fn: Callable[[Array, Array], Any]) -> Callable[[Array, Array], Array]:
    def ref(a: Array, b: Array) -> Array:
        return _arr(fn(_arr(a), _arr(b)))

    ref.__name__ = getattr(fn, "__name__", "binary")
    return ref


def _unary(fn: Callable[[Array], Any]) -> Callable[[Array], Array]:
    def ref(a: Array) -> Array:
        return _arr(fn(_arr(a)))

    ref.__name__ = getattr(fn, "__name__", "unary")
    return ref


_ARITH: dict[str, tuple[Callable[[Array, Array], Any], str]] = {
    "add": (np.add, "Elementwise sum, with broadcasting."),
    "subtract": (np.subtract, "Elementwise difference, with broadcasting."),
    "multiply": (np.multiply, "Elementwise product, with broadcasting."),
    "divide": (_divide, "Elementwise quotient; integers truncate toward zero."),
    "floor_divide": (_floor_divide, "Elementwise quotient rounded toward negative infinity."),
    "power": (_power, "Elementwise power, with broadcasting."),
    "mod": (_mod, "Elementwise remainder with the sign of the dividend (C fmod)."),
    "floor_mod": (_floor_mod, "Elementwise remainder with the sign of the divisor."),
    "maximum": (np.maximum, "Elementwise maximum, with broadcasting."),
    "minimum": (np.minimum, "Elementwise minimum, with broadcasting."),
}

_COMPARE: dict[str, tuple[Callable[[Array, Array], Any], str]] = {
    "equal": (np.equal, "Elementwise ==, giving bool."),
    "not_equal": (np.not_equal, "Elementwise !=, giving bool."),
    "less": (np.less, "Elementwise <, giving bool."),
    "less_equal": (np.less_equal, "Elementwise <=, giving bool."),
    "greater": (np.greater, "Elementwise >, giving bool."),
    "greater_equal": (np.greater_equal, "Elementwise >=, giving bool."),
    "logical_and": (np.logical_and, "Elementwise boolean and."),
    "logical_or": (np.logical_or, "Elementwise boolean or."),
    "logical_xor": (np.logical_xor, "Elementwise boolean exclusive or."),
}

_LOGICAL = ("logical_and", "logical_or", "logical_xor")
# numpy has no bool subtract; bool divide, power and the modulos give float64 or int8
_NO_BOOL = ("subtract", "divide", "floor_divide", "power", "mod", "floor_mod")


def broadcast_rel(name: str, result_dtype: str | None = None) -> RelationFunc:
    """The relation of a broadcasting binary operator ``name``.

    Both arguments are tensors of the same dtype; the result has their numpy
    broadcast shape and ``result_dtype`` (default: the arguments' dtype).
    Logical operators require ``bool``.
    """

    def rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
        a = tensor_arg(args[0], name, "lhs")
        b = tensor_arg(args[1], name, "rhs")
        if a.dtype != b.dtype:
            r.dtype_equal(a.dtype, b.dtype, f"{name}: dtypes differ: {a} and {b}")
        known = a.dtype if not isinstance(a.dtype, IncompleteType) else b.dtype
        if name in _LOGICAL and is_dtype(known, "bool") is False:
            raise RelationError(f"{name}: arguments must be bool, got {a} and {b}")
        if name in _NO_BOOL and is_dtype(known, "float", "int", "uint") is False:
            raise RelationError(f"{name}: arguments must be numeric, got {a} and {b}")
        return TensorType(broadcast_shapes(a, b, r), result_dtype or a.dtype)

    rule.__name__ = f"{name}_rel"
    out = result_dtype or "d"
    kinds = "bool" if name in _LOGICAL else "numeric d" if name in _NO_BOOL else "d"
    rule.__doc__ = f"(s1, {kinds}), (s2, {kinds}) -> (broadcast of s1 and s2, {out})."
    return forward(rule)


for _name, (_fn, _doc) in _ARITH.items():
    register_op(
        _name,
        2,
        reference=_binary(_fn),
        pattern=OpPattern.BROADCAST,
        doc=_doc,
        type_relation=broadcast_rel(_name),
    )
for _name, (_fn, _doc) in _COMPARE.items():
    register_op(
        _name,
        2,
        reference=_binary(_fn),
        pattern=OpPattern.BROADCAST,
        doc=_doc,
        type_relation=broadcast_rel(_name, "bool"),
    )


def _unary_rel(name: str, kinds: tuple[str, ...], noun: str) -> RelationFunc:
    """The relation of a one-tensor operator whose result has its argument's type."""

    def rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        identity_rel(types, attrs, r)
        t = r.resolve(types[0])
        if isinstance(t, IncompleteType):
            return False  # checked once the argument is known
        x = tensor_arg(t, name, "argument")
        if is_dtype(x.dtype, *kinds) is False:
            raise RelationError(f"{name}: argument must be {noun}, got {x}")
        return not isinstance(x.dtype, IncompleteType)

    rel.__name__ = f"{name}_rel"
    rel.__doc__ = f"(shape, {noun} dtype) -> same."
    return rel


register_op(
    "negative",
    1,
    reference=_unary(np.negative),
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise negation.",
    type_relation=_unary_rel("negative", ("float", "int", "uint"), "numeric"),
)
register_op(
    "logical_not",
    1,
    reference=_unary(np.logical_not),
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise boolean not.",
    type_relation=_unary_rel("logical_not", ("bool",), "bool"),
)
