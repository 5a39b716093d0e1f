"""Fused functions of integer and boolean scalars, evaluated in Python.

A loop from the frontend carries a counter: each iteration compares it with the bound and
adds one, two fused functions of rank-0 ``int32`` values. A kernel call costs about 1 us,
most of it passing arrays through DLPack; the same arithmetic on Python integers, with the
result put back in a rank-0 array, costs about 0.35 us. So a fused function whose
parameters and result are integer or boolean scalars, and whose operators are all in
:data:`OPERATORS`, is described by a small expression tree (:func:`scalar_tree`, saved with
the program) that the VM turns into Python closures (:func:`evaluator`). Integers wrap
around as in the kernels. A division or remainder by zero gives up (:class:`Defer`) and the
VM runs the kernel, whose run-time check raises the error with its span.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from relay.ir.expr import Call, Constant, Expr, Function, Op, Var
from relay.ir.types import TensorType


class Defer(Exception):
    """The kernel must run instead (a division by zero: its check reports it)."""


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise Defer
    return a // b


def _floormod(a: int, b: int) -> int:
    if b == 0:
        raise Defer
    return a % b


OPERATORS: dict[str, Callable[..., Any] | None] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "floor_divide": _floordiv,
    "floor_mod": _floormod,
    "maximum": max,
    "minimum": min,
    "negative": operator.neg,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
    "logical_not": lambda a: not a,
    "where": lambda c, a, b: a if c else b,
    "copy": lambda a: a,
    "cast": lambda a: a,
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    # (numpy's ~ of a bool is not; Python's ~True is -2)
    "bitwise_not": lambda a: not a if isinstance(a, bool) else ~a,
    "left_shift": None,  # (by the bit width: _shift)
    "right_shift": None,
}
"""The operators evaluated in Python, on Python ints and bools (the result is then wrapped
to its dtype); the shifts' functions depend on the bit width (:func:`_shift`)."""


def _shift(name: str, dtype: str) -> Callable[[int, int], int]:
    """``left_shift`` or ``right_shift`` of ``dtype`` values as the kernels compute them
    (relay.op.tensor): a count outside ``[0, bits)`` shifts every bit out (0; -1 for a
    negative value shifted right); Python's ``>>`` of a negative int is arithmetic, and the
    result of ``<<`` is wrapped to the dtype afterwards."""
    bits = np.iinfo(dtype).bits
    if name == "left_shift":
        return lambda x, n: x << n if 0 <= n < bits else 0
    return lambda x, n: x >> n if 0 <= n < bits else (-1 if x < 0 else 0)


_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
)


def _scalar_dtype(t: Any) -> str | None:
    if isinstance(t, TensorType) and t.shape == () and str(t.dtype) in _DTYPES:
        return str(t.dtype)
    return None


def scalar_tree(func: Function) -> list[Any] | None:
    """The expression tree of ``func`` when it can be evaluated in Python, else None.

    Nodes: ``["param", i]``, ``["const", value, dtype]`` and ``[op, dtype, *args]`` (the
    dtype is the node's result's)."""
    params = {p: i for i, p in enumerate(func.params)}
    if not all(_scalar_dtype(p.checked_type) for p in func.params):
        return None
    if _scalar_dtype(func.checked_type.ret_type) is None:  # type: ignore[attr-defined]
        return None

    def tree(e: Expr) -> list[Any] | None:
        if isinstance(e, Var):
            return ["param", params[e]] if e in params else None
        if isinstance(e, Constant):
            const_dtype = str(e.data.dtype)
            if e.data.shape != () or const_dtype not in _DTYPES:
                return None
            return ["const", e.data.item(), const_dtype]
        if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in OPERATORS:
            dtype = _scalar_dtype(e.checked_type)
            if dtype is None:
                return None
            args = [tree(a) for a in e.args]
            if any(a is None for a in args):
                return None
            return [e.op.name, dtype, *args]
        return None

    return tree(func.body)


def _wrap(dtype: str) -> Callable[[Any], Any]:
    """Python int or bool -> the value the kernel would compute in ``dtype``."""
    if dtype == "bool":
        return bool
    info = np.iinfo(dtype)
    lo, hi, span = int(info.min), int(info.max), 1 << info.bits

    def wrap(v: Any) -> int:
        n = int(v)
        return n if lo <= n <= hi else (n - lo) % span + lo

    return wrap


def evaluator(tree: list[Any]) -> Callable[[tuple[Any, ...]], np.ndarray[Any, Any]]:
    """A function from the arguments (rank-0 arrays) to the result (a new rank-0 array)."""
    dtype = np.dtype(tree[1]) if tree[0] not in ("param", "const") else None

    def build(node: list[Any]) -> Callable[[tuple[Any, ...]], Any]:
        kind = node[0]
        if kind == "param":
            i = node[1]
            return lambda args: args[i].item()
        if kind == "const":
            value = node[1]
            return lambda args: value
        fn: Callable[..., Any] = OPERATORS[kind] or _shift(kind, node[1])
        wrap = _wrap(node[1])
        subs = [build(a) for a in node[2:]]
        if len(subs) == 1:
            (a,) = subs
            return lambda args: wrap(fn(a(args)))
        if len(subs) == 2:
            a, b = subs
            return lambda args: wrap(fn(a(args), b(args)))
        return lambda args: wrap(fn(*[s(args) for s in subs]))

    body = build(tree)
    if dtype is None:  # the body is a parameter or a constant
        dtype = np.dtype(tree[2]) if tree[0] == "const" else None
    out_dtype = dtype

    def run(args: tuple[Any, ...]) -> np.ndarray[Any, Any]:
        v = body(args)
        return np.array(v, out_dtype if out_dtype is not None else args[tree[1]].dtype)

    return run
