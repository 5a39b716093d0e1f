"""Elementwise arithmetic, comparison, logical and bitwise operators with numpy broadcasting.

Integer ``divide`` and ``mod`` truncate toward zero (C semantics, as TVM's
``truncdiv``/``truncmod``); ``floor_divide`` and ``floor_mod`` round toward
negative infinity. Integer division by zero raises ``ZeroDivisionError``
(the interpreter reports it as an ``ExecutionError`` at the call's span)
rather than producing numpy's silent zero.

The bitwise operators are numpy's (2.x) on integers: ``bitwise_and``/``or``/``xor``/``not``
also take bool (bool in, bool out, as numpy's bool loops); the shifts take integers only.
numpy reads a shift count as unsigned, so a count that is negative or at least the bit
width shifts every bit out: ``left_shift`` gives 0, ``right_shift`` gives -1 for a negative
signed ``x`` and 0 otherwise. ``left_shift`` wraps around (int8 ``100 << 1`` is -56).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relay.errors import CompileError
from relay.ir.attrs import Attrs
from relay.ir.dim import Dim, dim_str
from relay.ir.expr import Call, Expr, Tuple, TupleGetItem, Var
from relay.ir.types import IncompleteType, TensorType, Type
from relay.op.registry import (
    OpPattern,
    get_op,
    gradient_rule,
    jvp_rule,
    non_differentiable,
    register_op,
)
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


def truncate_divide(a: Any, b: Any) -> Array:
    """The integer quotients ``a / b`` rounded toward zero (C's division), for nonzero ``b``,
    in numpy's result dtype: the floor quotient, plus one where the division is inexact and
    the signs differ. Exact for the most negative integer (whose absolute value does not
    exist in its dtype: the reference once gave -2 for ``-128 / -127`` in int8, found by a
    fuzzing review) and for uint64; ``MIN / -1`` wraps around to ``MIN``, as the kernels'."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        inexact = np.remainder(a, b) != 0
    differ = (np.asarray(a) < 0) != (np.asarray(b) < 0)
    return np.asarray(np.where(inexact & differ, q + 1, q).astype(q.dtype))


def _divide(a: Array, b: Array) -> Array:
    if np.issubdtype(np.result_type(a, b), np.integer):
        _check_int_divisor(b)
        return _arr(truncate_divide(a, b))
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


def _shift_operands(name: str, x: Any, count: Any) -> tuple[Array, Array, np.dtype[Any]]:
    """``x`` and ``count`` as arrays of their common integer dtype (numpy's promotion), and
    that dtype; ``TypeError`` for floats and bool, as numpy's shifts."""
    x, count = _arr(x), _arr(count)
    dtype = np.result_type(x, count)
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"{name}: arguments must be integers, got {x.dtype} and {count.dtype}")
    return x.astype(dtype, copy=False), count.astype(dtype, copy=False), dtype


def _count_in_range(x: Array, count: Array) -> Array:
    """Where ``count`` shifts ``x`` by less than its bit width: numpy reads the count as
    unsigned, so a negative count is out of range too."""
    bits = x.dtype.itemsize * 8
    return _arr((count >= 0) & (count < bits))


def _right_shift(x: Array, count: Array) -> Array:
    """numpy's ``right_shift``, without relying on C's shift of a negative value or by an
    out-of-range count: a negative ``x`` is shifted as ``~(~x >> count)`` (arithmetic
    shift), and a count outside ``[0, bits)`` gives the sign fill (-1 or 0)."""
    x, count, dtype = _shift_operands("right_shift", x, count)
    ok = _count_in_range(x, count)
    by = np.where(ok, count, np.zeros((), dtype))
    if np.issubdtype(dtype, np.unsignedinteger):
        return _arr(np.where(ok, x >> by, np.zeros((), dtype)))
    negative = x < 0
    magnitude = np.where(negative, ~x, x) >> by  # shifts of non-negative values only
    shifted = np.where(negative, ~magnitude, magnitude)
    fill = np.where(negative, np.full((), -1, dtype), np.zeros((), dtype))
    return _arr(np.where(ok, shifted, fill).astype(dtype, copy=False))


def _left_shift(x: Array, count: Array) -> Array:
    """numpy's ``left_shift``, wrapping around: computed on the unsigned integers of the same
    width (no signed overflow), 0 for a count outside ``[0, bits)``."""
    x, count, dtype = _shift_operands("left_shift", x, count)
    unsigned = np.dtype(f"uint{dtype.itemsize * 8}")
    ok = _count_in_range(x, count)
    by = np.where(ok, count, np.zeros((), dtype)).astype(unsigned)
    shifted = (x.astype(unsigned) << by).view(dtype)
    return _arr(np.where(ok, shifted, np.zeros((), dtype)).astype(dtype, copy=False))


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

COMPARISONS = frozenset(_COMPARE)
"""The elementwise comparison operators (bool results)."""

_LOGICAL = ("logical_and", "logical_or", "logical_xor")
_SHIFTS = ("right_shift", "left_shift")
_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
# numpy has no bool subtract; bool divide, power and the modulos give float64 or int8
_NO_BOOL = ("subtract", "divide", "floor_divide", "power", "mod", "floor_mod")


def broadcast_rel(name: str, result_dtype: str | None = None) -> RelationFunc:
    """The relation of a broadcasting binary operator ``name``.

    Both arguments are tensors of the same dtype; the result has their numpy
    broadcast shape and ``result_dtype`` (default: the arguments' dtype).
    Logical operators require ``bool``, shifts integers, the other bitwise operators
    integers or ``bool``.
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
        if name in _SHIFTS and is_dtype(known, "int", "uint") is False:
            raise RelationError(f"{name}: arguments must be integers, got {a} and {b}")
        if name in _BITWISE and is_dtype(known, "int", "uint", "bool") is False:
            raise RelationError(f"{name}: arguments must be integers or bool, got {a} and {b}")
        return TensorType(broadcast_shapes(a, b, r), result_dtype or a.dtype)

    rule.__name__ = f"{name}_rel"
    out = result_dtype or "d"
    kinds = {
        **dict.fromkeys(_LOGICAL, "bool"),
        **dict.fromkeys(_NO_BOOL, "numeric d"),
        **dict.fromkeys(_SHIFTS, "integer d"),
        **dict.fromkeys(_BITWISE, "integer or bool d"),
    }.get(name, "d")
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


_BITS: dict[str, tuple[Callable[[Array, Array], Any], str]] = {
    "right_shift": (
        _right_shift,
        "Elementwise right shift of integers (arithmetic when signed); a count outside "
        "[0, bits) gives the sign fill, -1 or 0.",
    ),
    "left_shift": (
        _left_shift,
        "Elementwise left shift of integers, wrapping; a count outside [0, bits) gives 0.",
    ),
    "bitwise_and": (np.bitwise_and, "Elementwise bitwise and of integers or bools."),
    "bitwise_or": (np.bitwise_or, "Elementwise bitwise or of integers or bools."),
    "bitwise_xor": (np.bitwise_xor, "Elementwise bitwise exclusive or of integers or bools."),
}
for _name, (_fn, _doc) in _BITS.items():
    register_op(
        _name,
        2,
        reference=_fn if _name in _SHIFTS else _binary(_fn),
        pattern=OpPattern.BROADCAST,
        doc=_doc,
        type_relation=broadcast_rel(_name),
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
register_op(
    "bitwise_not",
    1,
    reference=_unary(np.invert),
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise bitwise not of integers; logical not of bools.",
    type_relation=_unary_rel("bitwise_not", ("int", "uint", "bool"), "integer or bool"),
)


# -- helpers of the derivative rules -------------------------------------------------------------
#
# Used by the gradient and JVP rules of every operator family (they import them from here, the
# family the others already depend on).


def known_type(e: Expr) -> Type | None:
    """The type of a rule's argument ``e``: inferred (``checked_type``, set by type inference in
    the AD passes), else a variable's annotation; None when neither is known."""
    ty = e._checked_type
    if ty is None and isinstance(e, Var):
        ty = e.type_annotation
    return ty


def known_extent(d: Dim, op: str) -> int:
    """The extent ``d`` that the gradient rule of ``op`` needs; CompileError when it is not a
    known integer (a symbolic or ``Any`` dimension)."""
    if not isinstance(d, int):
        raise CompileError(f"the gradient of {op} needs a known extent, got {dim_str(d)}")
    return d


def tuple_fields(e: Expr, n: int) -> tuple[Expr, ...]:
    """The ``n`` fields of the tuple-valued ``e``: its fields when it is a Tuple expression,
    else projections of it."""
    if isinstance(e, Tuple):
        return e.fields
    return tuple(TupleGetItem(e, i) for i in range(n))


def carries_gradient(arg: Expr) -> bool:
    """False when ``arg`` is known (typed, or an annotated variable) to hold a non-float
    tensor: no gradient flows into integers or bools. True when its type is not known."""
    ty = known_type(arg)
    if isinstance(ty, TensorType) and isinstance(ty.dtype, str):
        return ty.dtype.startswith(("float", "bfloat"))
    return True


def linear_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    """The JVP rule of an operator linear in its only argument: the operator applied, with
    the call's attributes, to the argument's tangent."""
    (t,) = tangents
    return None if t is None else Call(call.op, (t,), call.attrs)


def linear_in_first_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    """The JVP rule of an operator linear in its first argument whose other arguments give only
    a shape, indices or a position (a tangent of theirs does not move the result): the
    operator applied to the first argument's tangent and the other arguments."""
    t = tangents[0]
    return None if t is None else Call(call.op, (t, *call.args[1:]), call.attrs)


# -- gradient rules ------------------------------------------------------------------------------
#
# The math follows TVM's python/tvm/relay/op/_tensor_grad.py. Each adjoint of a broadcasting
# operator is summed back to its argument's shape with ``collapse_sum_like``. Calls are built
# through the registry (not the builders of the other families) so this module imports none of
# them.


def _call(name: str, *args: Expr) -> Call:
    opdef = get_op(name)
    return Call(opdef.op, args, opdef.validate_attrs(None))


def _csl(grad: Expr, arg: Expr) -> Expr:
    return _call("collapse_sum_like", grad, arg)


def _zeros(like: Expr) -> Expr:
    return _call("zeros_like", like)


@gradient_rule("add")
def _add_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    a, b = call.args
    return [_csl(out_grad, a), _csl(out_grad, b)]


@gradient_rule("subtract")
def _subtract_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    a, b = call.args
    return [_csl(out_grad, a), _csl(_call("negative", out_grad), b)]


@gradient_rule("multiply")
def _multiply_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    a, b = call.args
    return [_csl(_call("multiply", out_grad, b), a), _csl(_call("multiply", out_grad, a), b)]


@gradient_rule("divide")
def _divide_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # d(a / b)/db = -(a / b) / b, written with the primal result
    a, b = call.args
    da = _call("divide", out_grad, b)
    db = _call("negative", _call("divide", _call("multiply", out_grad, call), b))
    return [_csl(da, a), _csl(db, b)]


@gradient_rule("power")
def _power_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # d(a**b)/da = b * a**(b - 1), taken as 0 where b == 0 (a**-1 is inf at a == 0);
    # d(a**b)/db = a**b * log(a), with log(0) replaced by 0 (as JAX does): a**b is 0 there
    a, b = call.args
    b_zero = _call("equal", b, _zeros(b))
    slope = _call("multiply", b, _call("power", a, _call("subtract", b, _call("ones_like", b))))
    da = _call("multiply", out_grad, _call("where", b_zero, _zeros(slope), slope))
    if not carries_gradient(b):
        return [_csl(da, a), None]  # an integer exponent; log would not type-check
    safe_a = _call("where", _call("equal", a, _zeros(a)), _call("ones_like", a), a)
    db = _call("multiply", out_grad, _call("multiply", call, _call("log", safe_a)))
    return [_csl(da, a), _csl(db, b)]


@gradient_rule("maximum")
def _maximum_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # ties send the whole adjoint to the first argument
    a, b = call.args
    first = _call("greater_equal", a, b)
    zero = _zeros(out_grad)
    return [
        _csl(_call("where", first, out_grad, zero), a),
        _csl(_call("where", first, zero, out_grad), b),
    ]


@gradient_rule("minimum")
def _minimum_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # ties send the whole adjoint to the first argument
    a, b = call.args
    first = _call("less_equal", a, b)
    zero = _zeros(out_grad)
    return [
        _csl(_call("where", first, out_grad, zero), a),
        _csl(_call("where", first, zero, out_grad), b),
    ]


def _mod_grad(rounding: str) -> Callable[[Call, Expr], list[Expr | None]]:
    # mod(a, b) = a - q * b with q = trunc(a / b) (floor(a / b) for floor_mod), q piecewise
    # constant: d/da = 1, d/db = -q away from the jumps where a / b is an integer
    def rule(call: Call, out_grad: Expr) -> list[Expr | None]:
        a, b = call.args
        q = _call(rounding, _call("divide", a, b))
        return [_csl(out_grad, a), _csl(_call("negative", _call("multiply", out_grad, q)), b)]

    return rule


gradient_rule("mod")(_mod_grad("trunc"))
gradient_rule("floor_mod")(_mod_grad("floor"))


@gradient_rule("negative")
def _negative_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [_call("negative", out_grad)]


non_differentiable(
    "floor_divide",
    reason="its result is piecewise constant (steps of an integer quotient)",
)
non_differentiable(
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    reason="its result is a bool comparison",
)
non_differentiable(
    "logical_and", "logical_or", "logical_xor", "logical_not", reason="its result is bool"
)
non_differentiable(
    "right_shift",
    "left_shift",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    reason="it computes on the bits of integers",
)


# -- JVP rules -----------------------------------------------------------------------------------
#
# The forward-mode counterparts of the gradient rules above (the contract is in
# relay/op/registry.py): each rule multiplies the argument tangents by the same derivatives,
# with the same conventions at kinks and ties, so that it is the transpose of the gradient
# rule. A tangent of an argument smaller than the result is broadcast to the result's shape
# (``jvp_fit``), which the gradient undoes with ``collapse_sum_like``.


def jvp_fit(tangent: Expr, arg: Expr, call: Expr) -> Expr:
    """``tangent`` (of ``arg``'s type) broadcast to the shape of ``call``'s result, unless
    ``arg`` is known to have that shape already."""
    arg_ty, out_ty = known_type(arg), known_type(call)
    if (
        isinstance(arg_ty, TensorType)
        and isinstance(out_ty, TensorType)
        and arg_ty.shape == out_ty.shape
    ):
        return tangent
    return _call("broadcast_to_like", tangent, call)


def jvp_sum(*terms: Expr | None) -> Expr | None:
    """The sum of the terms that are not None (None when all are: a zero tangent). Terms
    must have one shape, or broadcast to the result's."""
    out: Expr | None = None
    for t in terms:
        if t is not None:
            out = t if out is None else _call("add", out, t)
    return out


def _scale(tangent: Expr | None, factor: Expr) -> Expr | None:
    return None if tangent is None else _call("multiply", tangent, factor)


@jvp_rule("add")
def _add_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    (a, b), (ta, tb) = call.args, tangents
    if ta is not None and tb is not None:
        return _call("add", ta, tb)
    if ta is not None:
        return jvp_fit(ta, a, call)
    assert tb is not None
    return jvp_fit(tb, b, call)


@jvp_rule("subtract")
def _subtract_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    (a, b), (ta, tb) = call.args, tangents
    if ta is not None and tb is not None:
        return _call("subtract", ta, tb)
    if ta is not None:
        return jvp_fit(ta, a, call)
    assert tb is not None
    return jvp_fit(_call("negative", tb), b, call)


@jvp_rule("multiply")
def _multiply_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    (a, b), (ta, tb) = call.args, tangents
    return jvp_sum(_scale(ta, b), _scale(tb, a))


@jvp_rule("divide")
def _divide_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    # d(a / b) = (da - (a / b) db) / b
    (_, b), (ta, tb) = call.args, tangents
    db = None if tb is None else _call("negative", _call("multiply", call, tb))
    top = jvp_sum(ta, db)
    return None if top is None else _call("divide", top, b)


@jvp_rule("power")
def _power_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    # the gradient rule's derivatives: b * a**(b - 1) (0 where b == 0) and a**b * log(a)
    # (log(0) taken as 0)
    (a, b), (ta, tb) = call.args, tangents
    da = None
    if ta is not None:
        b_zero = _call("equal", b, _zeros(b))
        slope = _call("multiply", b, _call("power", a, _call("subtract", b, _call("ones_like", b))))
        da = _call("multiply", ta, _call("where", b_zero, _zeros(slope), slope))
    db = None
    if tb is not None:
        safe_a = _call("where", _call("equal", a, _zeros(a)), _call("ones_like", a), a)
        db = _call("multiply", tb, _call("multiply", call, _call("log", safe_a)))
    return jvp_sum(da, db)


def _extreme_jvp(first_wins: str) -> Callable[[Call, list[Expr | None]], Expr | None]:
    # the gradient's convention: a tie takes the first argument's tangent
    def rule(call: Call, tangents: list[Expr | None]) -> Expr | None:
        (a, b), (ta, tb) = call.args, tangents
        first = _call(first_wins, a, b)
        return _call(
            "where",
            first,
            _zeros(a) if ta is None else ta,
            _zeros(b) if tb is None else tb,
        )

    return rule


jvp_rule("maximum")(_extreme_jvp("greater_equal"))
jvp_rule("minimum")(_extreme_jvp("less_equal"))


def _mod_jvp(rounding: str) -> Callable[[Call, list[Expr | None]], Expr | None]:
    # mod(a, b) = a - q * b with q piecewise constant: d = da - q * db
    def rule(call: Call, tangents: list[Expr | None]) -> Expr | None:
        (a, b), (ta, tb) = call.args, tangents
        if tb is None:
            assert ta is not None
            return jvp_fit(ta, a, call)
        q = _call(rounding, _call("divide", a, b))
        qdb = _call("multiply", q, tb)
        if ta is None:
            return _call("negative", qdb)
        return _call("subtract", ta, qdb)

    return rule


jvp_rule("mod")(_mod_jvp("trunc"))
jvp_rule("floor_mod")(_mod_jvp("floor"))


@jvp_rule("negative")
def _negative_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    (t,) = tangents
    return None if t is None else _call("negative", t)
