"""Unary elementwise math, ``clip``, ``cast``, ``where`` and the tensor-creation operators.

Each operator is registered with Relay's attribute names, its numpy reference (the
interpreter's semantics) and its fusion pattern as Relay had it; a builder function of the
same name makes the call (``exp(x)``, ``cast(x, "int8")``, ``zeros((2, 3), "float32")``).

Semantics, where numpy and Relay (TVM's topi kernels) differ, follow Relay:

* Float dtypes are preserved: ``exp`` of float16 is float16. Narrow floats (float16,
  bfloat16) are computed in float32 and rounded back, as numpy's float16 loops do. The
  transcendental operators (exp, log, log2, log10, sqrt, rsqrt, sigmoid, tanh, erf, sin,
  cos, fast_exp, fast_tanh) need a float tensor; an integer or bool input is a
  ``ValueError``. Overflow, division by zero and domain errors give inf/nan silently.
* ``fast_exp`` and ``fast_tanh`` are the exact ``exp`` and ``tanh`` here; compiled code
  replaces them by polynomial approximations (TVM's ``topi.fast_exp``/``fast_tanh``, for
  float32), so compiled results agree only to within the approximation's error.
* ``erf`` is Python's ``math.erf`` applied in float64 and rounded to the input dtype.
* ``round`` rounds halves away from zero (TVM lowers ``tir.round`` to ``llvm.round`` and
  CUDA ``round``), not to even as ``numpy.round`` does: ``round(2.5) == 3``,
  ``round(-0.5) == -1``. ``floor``, ``ceil``, ``trunc`` and ``round`` of integers are the
  identity.
* ``sign`` is topi's ``x > 0 ? 1 : (x < 0 ? -1 : 0)``: ``sign(nan) == 0``, ``sign(-0.0) == 0``.
* ``clip(x, a_min, a_max)`` is ``max(min(x, a_max), a_min)`` with both bounds first cast to
  x's dtype (so ``a_min > a_max`` gives ``a_min``). For integer tensors the bounds are
  truncated toward zero and saturated to the dtype's range (an infinite bound is no bound).
* ``cast`` truncates floats toward zero on conversion to integers; a value that is nan,
  infinite or outside the target range (undefined behaviour in compiled code) is a
  ``ValueError``. Integer narrowing wraps around; a cast to bool is ``x != 0``.
* ``where(cond, x, y)`` broadcasts all three; a nonzero ``cond`` selects ``x``; ``x`` and
  ``y`` must share a dtype.
* ``full``/``full_like`` take the fill value as a rank-0 tensor, cast (as by ``cast``) to the
  result dtype; ``full``'s empty ``dtype`` means the fill value's dtype.
* ``arange(start, stop, step)`` takes three rank-0 tensors of the attribute ``dtype`` and
  gives ``max(ceil((stop - start) / step), 0)`` elements ``start + i * step`` computed in
  that dtype; ``step == 0`` is a ``ValueError``.

The type relations accept what the references run: the float-only operators reject integer
and bool tensors, ``abs``, ``sign``, ``clip`` and the rounding operators reject bool, and the
rest take any dtype. ``arange``'s length depends on its arguments' values: when the program
gives all three as constants (directly or through a ``let``) the result is
``Tensor[(count,), dtype]``, otherwise ``Tensor[(?,), dtype]``, the length being known at
run time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.dim import Dim, dim_str
from relay.ir.expr import Call, Expr, const
from relay.ir.types import DTYPES, Any as AnyDim, DType, IncompleteType, Kind, TensorType, Type
from relay.op.registry import (
    OpPattern,
    attr,
    get_op,
    gradient_rule,
    jvp_rule,
    non_differentiable,
    register_op,
)
from relay.op.tensor import carries_gradient, jvp_fit, jvp_sum, linear_jvp
from relay.op.transform import check_shape_limits
from relay.typecheck.relation import (
    RelationError,
    RelationFunc,
    Reporter,
    broadcast_dim,
    forward,
    is_dtype,
    shape_str,
    tensor_arg,
)

Array = np.ndarray[Any, np.dtype[Any]]

_FLOAT_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16"})
_DTYPE_CHOICES = tuple(DTYPES)


def _arr(x: object) -> Array:
    return np.asarray(x)


def _numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype of a Relay dtype name (bfloat16 comes from ``ml_dtypes``)."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}")
    if dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - ml_dtypes comes with TVM
            raise ValueError("bfloat16 tensors need the ml_dtypes package") from None
        bf16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bf16
    return np.dtype(dtype)


def _dtype_name(x: Array) -> str:
    return str(x.dtype.name)


def _is_float(x: Array) -> bool:
    return _dtype_name(x) in _FLOAT_DTYPES


def _is_integer(x: Array) -> bool:
    return bool(np.issubdtype(x.dtype, np.integer))


def _compute_view(x: Array) -> Array:
    """``x`` in the dtype its math is done in: float32 for float16/bfloat16."""
    return x.astype(np.float32) if x.dtype.itemsize < 4 else x


# -- unary math --------------------------------------------------------------------------------


def _sigmoid(x: Array) -> Array:
    # exp of a non-positive argument never overflows; both branches are exact rearrangements
    e = np.exp(-np.abs(x))
    return _arr(np.where(x >= 0, 1 / (1 + e), e / (1 + e)))


def _erf(x: Array) -> Array:
    wide = x.astype(np.float64)
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(wide), dtype=np.float64)


def _rsqrt(x: Array) -> Array:
    return _arr(np.reciprocal(np.sqrt(x)))


def _float_unary(name: str, fn: Callable[[Array], Any]) -> Callable[[Array], Array]:
    """The reference of a float-only operator computing ``fn`` with the dtype preserved."""

    def reference(data: Array) -> Array:
        x = _arr(data)
        if not _is_float(x):
            raise ValueError(f"{name} needs a floating-point tensor, got {_dtype_name(x)}")
        with np.errstate(all="ignore"):
            out = np.asarray(fn(_compute_view(x)))
            return _arr(out.astype(x.dtype, copy=False))

    reference.__name__ = f"{name}_reference"
    return reference


def _require_numeric(name: str, x: Array) -> None:
    if _dtype_name(x) == "bool":
        raise ValueError(f"{name} needs a numeric tensor, got bool")


def _rounding(name: str, fn: Callable[[Array], Any]) -> Callable[[Array], Array]:
    """A rounding operator: ``fn`` on floats, the identity on integers."""

    def reference(data: Array) -> Array:
        x = _arr(data)
        _require_numeric(name, x)
        if not _is_float(x):
            return x.copy()
        with np.errstate(all="ignore"):
            out = np.asarray(fn(_compute_view(x)))
            return _arr(out.astype(x.dtype, copy=False))

    reference.__name__ = f"{name}_reference"
    return reference


def _round_half_away(x: Array) -> Array:
    # x - trunc(x) is exact, so the half-way test is exact (x + 0.5 is not: it rounds)
    whole = np.trunc(x)
    frac = np.abs(x - whole)
    return _arr(np.where(frac >= 0.5, whole + np.sign(x), whole))


def _abs(data: Array) -> Array:
    x = _arr(data)
    _require_numeric("abs", x)
    return _arr(np.abs(x))


def _sign(data: Array) -> Array:
    x = _arr(data)
    _require_numeric("sign", x)
    one = np.ones((), dtype=x.dtype)
    zero = np.zeros((), dtype=x.dtype)
    if np.issubdtype(x.dtype, np.unsignedinteger):
        return _arr(np.where(x > 0, one, zero))
    minus_one = np.asarray(-1).astype(x.dtype)
    return _arr(np.where(x > 0, one, np.where(x < 0, minus_one, zero)))


def _clip_bound(x: Array, bound: float, which: str) -> Array:
    if math.isnan(bound):
        raise ValueError(f"clip: {which} is nan")
    if _is_integer(x):
        info = np.iinfo(x.dtype)
        if math.isinf(bound):
            value = int(info.min) if bound < 0 else int(info.max)
        else:
            value = min(max(math.trunc(bound), int(info.min)), int(info.max))
        return np.asarray(value, dtype=x.dtype)
    with np.errstate(all="ignore"):
        return np.asarray(bound, dtype=np.float64).astype(x.dtype)


def _clip(data: Array, a_min: float, a_max: float) -> Array:
    x = _arr(data)
    _require_numeric("clip", x)
    lo = _clip_bound(x, a_min, "a_min")
    hi = _clip_bound(x, a_max, "a_max")
    return _arr(np.maximum(np.minimum(x, hi), lo).astype(x.dtype, copy=False))


def _copy(data: Array) -> Array:
    return np.array(data, copy=True)


def _isnan(data: Array) -> Array:
    x = _arr(data)
    if not _is_float(x):
        return np.zeros(x.shape, dtype=np.bool_)
    return _arr(np.isnan(_compute_view(x)))


def _isfinite(data: Array) -> Array:
    x = _arr(data)
    if not _is_float(x):
        return np.ones(x.shape, dtype=np.bool_)
    return _arr(np.isfinite(_compute_view(x)))


# -- cast --------------------------------------------------------------------------------------


def _cast_array(x: Array, dtype: str, who: str) -> Array:
    """``x`` converted to ``dtype`` with Relay's (C's) conversion rules; see the module doc."""
    target = _numpy_dtype(dtype)
    if _is_float(x) and np.issubdtype(target, np.integer):
        wide = x.astype(np.float64)
        info = np.iinfo(target)
        # -2**(bits-1) and 2**bits are exact in float64, unlike the largest integer
        lo, hi_excl = float(int(info.min)), float(int(info.max) + 1)
        with np.errstate(all="ignore"):
            whole = np.trunc(wide)
            bad = ~np.isfinite(whole) | (whole < lo) | (whole >= hi_excl)
        if np.any(bad):
            value = float(wide[bad].flat[0])
            raise ValueError(f"{who}: {value!r} cannot be represented in {dtype}")
        return _arr(whole.astype(target))
    if dtype == "bool":
        return _arr(x != 0)
    with np.errstate(all="ignore"):
        return _arr(x.astype(target))


def _cast(data: Array, dtype: str) -> Array:
    return _cast_array(_arr(data), dtype, "cast")


def _cast_like(data: Array, dtype_like: Array) -> Array:
    like = _arr(dtype_like)
    return _cast_array(_arr(data), _dtype_name(like), "cast_like")


def _cast_like_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(shape, any dtype), (any shape, d) -> (shape, d)."""
    data = tensor_arg(args[0], "cast_like", "data")
    like = tensor_arg(args[1], "cast_like", "dtype_like")
    return TensorType(data.shape, like.dtype)


# -- where -------------------------------------------------------------------------------------


def _where(condition: Array, x: Array, y: Array) -> Array:
    c, a, b = _arr(condition), _arr(x), _arr(y)
    if a.dtype != b.dtype:
        raise ValueError(
            f"where: x and y must have the same dtype, got {_dtype_name(a)} and {_dtype_name(b)}"
        )
    try:
        np.broadcast_shapes(c.shape, a.shape, b.shape)
    except ValueError:
        raise ValueError(
            f"where: cannot broadcast shapes {c.shape}, {a.shape} and {b.shape}"
        ) from None
    return _arr(np.where(c != 0, a, b))


# -- creation ----------------------------------------------------------------------------------


def _check_shape(who: str, shape: Sequence[int]) -> tuple[int, ...]:
    for dim in shape:
        # a dimension of the wrong kind is left for the attribute schema to report
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"{who}: shape {tuple(shape)} has a negative dimension")
    return tuple(shape)


def _zeros(shape: tuple[int, ...], dtype: str) -> Array:
    return np.zeros(_check_shape("zeros", shape), dtype=_numpy_dtype(dtype))


def _ones(shape: tuple[int, ...], dtype: str) -> Array:
    return np.ones(_check_shape("ones", shape), dtype=_numpy_dtype(dtype))


def _scalar_fill(who: str, fill_value: Array, dtype: str) -> Array:
    value = _arr(fill_value)
    if value.ndim != 0:
        raise ValueError(f"{who}: fill_value must be a scalar (rank 0), got shape {value.shape}")
    return _cast_array(value, dtype, who)


def _full(fill_value: Array, shape: tuple[int, ...], dtype: str) -> Array:
    out_shape = _check_shape("full", shape)
    value = _scalar_fill("full", fill_value, dtype or _dtype_name(_arr(fill_value)))
    return np.full(out_shape, value, dtype=value.dtype)


def _zeros_like(data: Array) -> Array:
    return np.zeros_like(_arr(data))


def _ones_like(data: Array) -> Array:
    return np.ones_like(_arr(data))


def _full_like(data: Array, fill_value: Array) -> Array:
    x = _arr(data)
    value = _scalar_fill("full_like", fill_value, _dtype_name(x))
    return np.full(x.shape, value, dtype=x.dtype)


def _arange_count(first: Array, last: Array, delta: Array) -> int:
    """How many elements ``arange`` gives: ``max(ceil((stop - start) / step), 0)``."""
    if delta == 0:
        raise ValueError("arange: step must not be zero")
    with np.errstate(all="ignore"):
        span = (float(last) - float(first)) / float(delta)
    if not math.isfinite(span):
        raise ValueError(f"arange: cannot count the elements from {first} to {last} by {delta}")
    return max(math.ceil(span), 0)


def _arange(start: Array, stop: Array, step: Array, dtype: str) -> Array:
    target = _numpy_dtype(dtype)
    args = {"start": _arr(start), "stop": _arr(stop), "step": _arr(step)}
    for name, value in args.items():
        if value.ndim != 0:
            raise ValueError(f"arange: {name} must be a scalar (rank 0), got shape {value.shape}")
        if value.dtype != target:
            raise ValueError(f"arange: {name} has dtype {_dtype_name(value)}, expected {dtype}")
    first, last, delta = args["start"], args["stop"], args["step"]
    count = _arange_count(first, last, delta)
    with np.errstate(all="ignore"):
        index = np.arange(count).astype(target)
        return _arr((first + index * delta).astype(target, copy=False))


# -- type relations ----------------------------------------------------------------------------
#
# Each relation's docstring is its type rule in one line (docs/operators.md shows it). The dtype
# checks accept what the numpy reference runs. A dtype variable stands for any dtype, so it meets
# only a requirement that every dtype meets (see ``is_dtype``); a dtype still unknown passes for
# now, and a relation whose argument dtype is an unknown stays unsolved so that it checks again
# once the dtype is known.

_FLOAT = ("float",)
_NUMERIC = ("float", "int", "uint")
_KIND_NOUNS = {_FLOAT: "a float", _NUMERIC: "a numeric"}


def _check_kind(op: str, what: str, x: TensorType, kinds: tuple[str, ...] | None) -> None:
    """A RelationError unless ``x``'s dtype is of ``kinds`` (None: any dtype) or unknown."""
    if kinds is not None and is_dtype(x.dtype, *kinds) is False:
        raise RelationError(f"{op}: {what} must be {_KIND_NOUNS[kinds]} tensor, got {x}")


def _settled(x: TensorType) -> bool:
    """Whether the checks made on ``x``'s dtype are final (it is not an unknown)."""
    return not isinstance(x.dtype, IncompleteType)


def _scalar_arg(t: Type, op: str, what: str) -> TensorType:
    """``t`` as a rank-0 tensor, or a RelationError naming ``what``."""
    x = tensor_arg(t, op, what)
    if x.ndim != 0:
        raise RelationError(f"{op}: {what} must be a scalar (rank 0), got {x}")
    return x


def _shape_attr_dims(op: str, attrs: Attrs) -> tuple[int, ...]:
    """The ``shape`` attribute, checked to have no negative dimension."""
    shape = attrs["shape"]
    assert isinstance(shape, tuple)
    dims = tuple(d for d in shape if isinstance(d, int))
    if any(d < 0 for d in dims):
        raise RelationError(f"{op}: shape {shape_str(dims)} has a negative dimension")
    return dims


def _dtype_attr(attrs: Attrs) -> str:
    dtype = attrs["dtype"]
    assert isinstance(dtype, str)
    return dtype


def _unary_rel(
    op: str,
    kinds: tuple[str, ...] | None,
    doc: str,
    out_dtype: Callable[[Attrs], str] | None = None,
    what: str = "argument",
    check_attrs: Callable[[Attrs], None] | None = None,
) -> RelationFunc:
    """The relation of a one-tensor elementwise operator.

    The argument is a tensor whose dtype is of ``kinds`` (None: any); the result has its shape
    and ``out_dtype(attrs)``, or its dtype. Information flows both ways: a known result gives
    an unknown argument its type (only its shape when the dtype changes).
    """

    def rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        if check_attrs is not None:
            check_attrs(attrs)
        data, result = types[0], types[-1]
        if isinstance(data, IncompleteType):
            if out_dtype is None:
                r.unify(data, result)
            elif isinstance(result, TensorType):
                r.unify(data, TensorType(result.shape, IncompleteType(Kind.BASE_TYPE)))
            data = r.resolve(data)
            if isinstance(data, IncompleteType):
                return False
        x = tensor_arg(data, op, what)
        _check_kind(op, what, x, kinds)
        r.unify(result, TensorType(x.shape, x.dtype if out_dtype is None else out_dtype(attrs)))
        return _settled(x)

    rel.__name__ = f"{op}_rel"
    rel.__doc__ = doc
    return rel


def _bool_dtype(attrs: Attrs) -> str:
    return "bool"


def _clip_bounds(attrs: Attrs) -> None:
    for bound in ("a_min", "a_max"):
        value = attrs[bound]
        if isinstance(value, float) and math.isnan(value):
            raise RelationError(f"clip: {bound} must not be nan")


def _broadcast_all(op: str, ts: Sequence[TensorType], r: Reporter) -> tuple[Dim, ...]:
    """The numpy broadcast of the shapes of ``ts`` (aligned at the right), or a RelationError
    naming the two tensors whose dimensions conflict."""
    rank = max(t.ndim for t in ts)
    out: list[Dim] = []
    for i in range(1, rank + 1):
        acc: Dim | None = None
        src = ts[0]
        for t in ts:
            if i > t.ndim:
                continue
            d = t.shape[t.ndim - i]
            if acc is None:
                acc, src = d, t
                continue
            message = (
                f"{op}: incompatible dimensions {dim_str(acc)} and {dim_str(d)} in {src} and {t}"
            )
            new = broadcast_dim(acc, d, r, message)
            if new is not acc:
                acc, src = new, t
        assert acc is not None
        out.append(acc)
    return tuple(reversed(out))


def _where_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """condition (s1, any dtype), x (s2, d), y (s3, d) -> (broadcast of s1, s2 and s3, d)."""
    cond = tensor_arg(args[0], "where", "condition")
    x = tensor_arg(args[1], "where", "x")
    y = tensor_arg(args[2], "where", "y")
    if x.dtype != y.dtype:
        r.dtype_equal(x.dtype, y.dtype, f"where: x and y must have the same dtype, got {x} and {y}")
    return TensorType(_broadcast_all("where", (cond, x, y), r), x.dtype)


def _creation_rel(op: str) -> RelationFunc:
    """The relation of ``zeros``/``ones``: the type is the attributes'."""

    def rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
        return check_shape_limits(op, TensorType(_shape_attr_dims(op, attrs), _dtype_attr(attrs)))

    rule.__name__ = f"{op}_rel"
    rule.__doc__ = "() -> (shape, dtype) from the attributes; no dimension may be negative."
    return forward(rule)


def _full_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """fill_value (rank 0) -> (shape, dtype) of the attributes; an empty dtype is the fill's."""
    shape = _shape_attr_dims("full", attrs)
    dtype: DType = _dtype_attr(attrs)
    fill = types[0]
    known = not isinstance(fill, IncompleteType)
    if known:
        x = _scalar_arg(fill, "full", "fill_value")
        dtype = dtype or x.dtype
    elif dtype == "":
        return False
    r.unify(types[-1], check_shape_limits("full", TensorType(shape, dtype)))
    return known


_full_like_data_rel = _unary_rel("full_like", None, "", what="data")


def _full_like_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """data (shape, dtype), fill_value (rank 0, any dtype) -> (shape, dtype)."""
    fill = types[1]
    fill_known = not isinstance(fill, IncompleteType)
    if fill_known:
        _scalar_arg(fill, "full_like", "fill_value")
    data_solved = _full_like_data_rel([types[0], types[-1]], attrs, r)
    return data_solved and fill_known


def _arange_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """start, stop, step (rank 0, of dtype) -> (count,) when all are constants, else (?,)."""
    dtype = _dtype_attr(attrs)
    for what, t in zip(("start", "stop", "step"), types[:3], strict=True):
        if isinstance(t, IncompleteType):
            r.unify(t, TensorType((), dtype))
            continue
        x = _scalar_arg(t, "arange", what)
        r.dtype_equal(x.dtype, dtype, f"arange: {what} must have dtype {dtype}, got {x}")
    values = [r.arg_value(i) for i in range(3)]
    length: Dim = AnyDim
    if all(v is not None and v.ndim == 0 for v in values):
        try:
            length = _arange_count(*values)  # type: ignore[arg-type]
        except ValueError as err:
            raise RelationError(str(err)) from None
    r.unify(types[-1], check_shape_limits("arange", TensorType((length,), dtype)))
    return True


_FLOAT_DOC = "(shape, float dtype) -> same."
_NUMERIC_DOC = "(shape, numeric dtype) -> same; bool is rejected."
_ANY_DOC = "(shape, any dtype) -> same."
_TEST_DOC = "(shape, any dtype) -> (shape, bool)."


# -- registration ------------------------------------------------------------------------------

_FLOAT_MATH: dict[str, tuple[Callable[[Array], Any], str]] = {
    "exp": (np.exp, "Elementwise e**x."),
    "log": (np.log, "Elementwise natural logarithm (nan below zero, -inf at zero)."),
    "log2": (np.log2, "Elementwise base-2 logarithm."),
    "log10": (np.log10, "Elementwise base-10 logarithm."),
    "sqrt": (np.sqrt, "Elementwise square root (nan below zero)."),
    "rsqrt": (_rsqrt, "Elementwise reciprocal square root 1 / sqrt(x)."),
    "sigmoid": (_sigmoid, "Elementwise logistic function 1 / (1 + exp(-x))."),
    "tanh": (np.tanh, "Elementwise hyperbolic tangent."),
    "erf": (_erf, "Elementwise Gauss error function."),
    "sin": (np.sin, "Elementwise sine."),
    "cos": (np.cos, "Elementwise cosine."),
    "fast_exp": (np.exp, "e**x; compiled code approximates it (the reference is exact)."),
    "fast_tanh": (np.tanh, "tanh(x); compiled code approximates it (the reference is exact)."),
}

for _name, (_fn, _doc) in _FLOAT_MATH.items():
    register_op(
        _name,
        1,
        reference=_float_unary(_name, _fn),
        pattern=OpPattern.ELEMWISE,
        doc=_doc,
        type_relation=_unary_rel(_name, _FLOAT, _FLOAT_DOC),
    )

_ROUNDING: dict[str, tuple[Callable[[Array], Any], str]] = {
    "floor": (np.floor, "Elementwise round toward negative infinity."),
    "ceil": (np.ceil, "Elementwise round toward positive infinity."),
    "trunc": (np.trunc, "Elementwise round toward zero."),
    "round": (_round_half_away, "Elementwise round to nearest, halves away from zero."),
}

for _name, (_fn, _doc) in _ROUNDING.items():
    register_op(
        _name,
        1,
        reference=_rounding(_name, _fn),
        pattern=OpPattern.ELEMWISE,
        doc=_doc,
        type_relation=_unary_rel(_name, _NUMERIC, _NUMERIC_DOC),
    )

_OTHER_UNARY: dict[str, tuple[Callable[[Array], Array], str]] = {
    "abs": (_abs, "Elementwise absolute value (integers wrap at the minimum)."),
    "sign": (_sign, "Elementwise sign: 1, -1 or 0 (0 for nan)."),
    "copy": (_copy, "A copy of the tensor."),
    "isnan": (_isnan, "Elementwise test for nan, giving bool."),
    "isfinite": (_isfinite, "Elementwise test for a finite value, giving bool."),
    "zeros_like": (_zeros_like, "Zeros of the input's shape and dtype."),
    "ones_like": (_ones_like, "Ones of the input's shape and dtype."),
}

_OTHER_UNARY_RELS: dict[str, RelationFunc] = {
    "abs": _unary_rel("abs", _NUMERIC, _NUMERIC_DOC),
    "sign": _unary_rel("sign", _NUMERIC, _NUMERIC_DOC),
    "copy": _unary_rel("copy", None, _ANY_DOC),
    "isnan": _unary_rel("isnan", None, _TEST_DOC, out_dtype=_bool_dtype),
    "isfinite": _unary_rel("isfinite", None, _TEST_DOC, out_dtype=_bool_dtype),
    "zeros_like": _unary_rel("zeros_like", None, _ANY_DOC, what="data"),
    "ones_like": _unary_rel("ones_like", None, _ANY_DOC, what="data"),
}

for _name, (_ref, _doc) in _OTHER_UNARY.items():
    register_op(
        _name,
        1,
        reference=_ref,
        pattern=OpPattern.ELEMWISE,
        doc=_doc,
        type_relation=_OTHER_UNARY_RELS[_name],
    )

register_op(
    "clip",
    1,
    attrs=[attr("a_min", "float"), attr("a_max", "float")],
    reference=_clip,
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise max(min(x, a_max), a_min), the bounds cast to x's dtype.",
    type_relation=_unary_rel(
        "clip",
        _NUMERIC,
        "(shape, numeric dtype) -> same; a_min and a_max must not be nan.",
        check_attrs=_clip_bounds,
    ),
)
register_op(
    "cast",
    1,
    attrs=[attr("dtype", "dtype", choices=_DTYPE_CHOICES)],
    reference=_cast,
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise conversion to dtype (floats truncate toward zero into integers).",
    type_relation=_unary_rel(
        "cast", None, "(shape, any dtype) -> (shape, the dtype attribute).", out_dtype=_dtype_attr
    ),
)
register_op(
    "cast_like",
    2,
    reference=_cast_like,
    pattern=OpPattern.ELEMWISE,
    doc="Elementwise conversion of data to the dtype of dtype_like (whose values are unused).",
    type_relation=forward(_cast_like_rule),
)
register_op(
    "where",
    3,
    reference=_where,
    pattern=OpPattern.BROADCAST,
    doc="Elementwise x where cond is nonzero, else y, with broadcasting.",
    type_relation=forward(_where_rule),
)
register_op(
    "zeros",
    0,
    attrs=[attr("shape", "ints"), attr("dtype", "dtype", choices=_DTYPE_CHOICES)],
    reference=_zeros,
    pattern=OpPattern.ELEMWISE,
    doc="A tensor of zeros of the given shape and dtype.",
    type_relation=_creation_rel("zeros"),
)
register_op(
    "ones",
    0,
    attrs=[attr("shape", "ints"), attr("dtype", "dtype", choices=_DTYPE_CHOICES)],
    reference=_ones,
    pattern=OpPattern.ELEMWISE,
    doc="A tensor of ones of the given shape and dtype.",
    type_relation=_creation_rel("ones"),
)
register_op(
    "full",
    1,
    attrs=[attr("shape", "ints", ()), attr("dtype", "dtype", "", choices=("", *_DTYPE_CHOICES))],
    reference=_full,
    pattern=OpPattern.ELEMWISE,
    doc="A tensor of the given shape filled with a scalar (dtype '' is the scalar's).",
    type_relation=_full_rel,
)
register_op(
    "full_like",
    2,
    reference=_full_like,
    pattern=OpPattern.ELEMWISE,
    doc="A tensor of data's shape and dtype filled with a scalar.",
    type_relation=_full_like_rel,
)
register_op(
    "arange",
    3,
    attrs=[attr("dtype", "dtype", "float32", choices=_DTYPE_CHOICES)],
    reference=_arange,
    pattern=OpPattern.OPAQUE,
    doc="Evenly spaced values start + i * step below stop (three scalar inputs).",
    type_relation=_arange_rel,
)


# -- builders ----------------------------------------------------------------------------------


def _call(name: str, args: Sequence[Expr], attrs: dict[str, object] | None = None) -> Call:
    opdef = get_op(name)
    return Call(opdef.op, tuple(args), opdef.validate_attrs(attrs))


def exp(data: Expr) -> Call:
    """``exp(data)``: e raised to each element."""
    return _call("exp", [data])


def log(data: Expr) -> Call:
    """``log(data)``: the natural logarithm of each element."""
    return _call("log", [data])


def log2(data: Expr) -> Call:
    """``log2(data)``: the base-2 logarithm of each element."""
    return _call("log2", [data])


def log10(data: Expr) -> Call:
    """``log10(data)``: the base-10 logarithm of each element."""
    return _call("log10", [data])


def sqrt(data: Expr) -> Call:
    """``sqrt(data)``: the square root of each element."""
    return _call("sqrt", [data])


def rsqrt(data: Expr) -> Call:
    """``rsqrt(data)``: one over the square root of each element."""
    return _call("rsqrt", [data])


def sigmoid(data: Expr) -> Call:
    """``sigmoid(data)``: the logistic function 1 / (1 + exp(-x)) of each element."""
    return _call("sigmoid", [data])


def tanh(data: Expr) -> Call:
    """``tanh(data)``: the hyperbolic tangent of each element."""
    return _call("tanh", [data])


def erf(data: Expr) -> Call:
    """``erf(data)``: the Gauss error function of each element."""
    return _call("erf", [data])


def sin(data: Expr) -> Call:
    """``sin(data)``: the sine of each element."""
    return _call("sin", [data])


def cos(data: Expr) -> Call:
    """``cos(data)``: the cosine of each element."""
    return _call("cos", [data])


def fast_exp(data: Expr) -> Call:
    """``fast_exp(data)``: exp, which compiled code may approximate."""
    return _call("fast_exp", [data])


def fast_tanh(data: Expr) -> Call:
    """``fast_tanh(data)``: tanh, which compiled code may approximate."""
    return _call("fast_tanh", [data])


def abs(data: Expr) -> Call:  # shadows the builtin, as Relay's relay.abs does
    """``abs(data)``: the absolute value of each element."""
    return _call("abs", [data])


def sign(data: Expr) -> Call:
    """``sign(data)``: 1, -1 or 0 for each element."""
    return _call("sign", [data])


def floor(data: Expr) -> Call:
    """``floor(data)``: each element rounded toward negative infinity."""
    return _call("floor", [data])


def ceil(data: Expr) -> Call:
    """``ceil(data)``: each element rounded toward positive infinity."""
    return _call("ceil", [data])


def round(data: Expr) -> Call:  # shadows the builtin, as Relay's relay.round does
    """``round(data)``: each element rounded to nearest, halves away from zero."""
    return _call("round", [data])


def trunc(data: Expr) -> Call:
    """``trunc(data)``: each element rounded toward zero."""
    return _call("trunc", [data])


def clip(data: Expr, a_min: float, a_max: float) -> Call:
    """``clip(data, a_min=..., a_max=...)``: each element limited to ``[a_min, a_max]``."""
    return _call("clip", [data], {"a_min": a_min, "a_max": a_max})


def copy(data: Expr) -> Call:
    """``copy(data)``: a copy of the tensor."""
    return _call("copy", [data])


def cast(data: Expr, dtype: str) -> Call:
    """``cast(data, dtype=...)``: each element converted to ``dtype``."""
    return _call("cast", [data], {"dtype": dtype})


def cast_like(data: Expr, dtype_like: Expr) -> Call:
    """``cast_like(data, dtype_like)``: ``data`` converted to the dtype of ``dtype_like``."""
    return _call("cast_like", [data, dtype_like])


def isnan(data: Expr) -> Call:
    """``isnan(data)``: bool, whether each element is nan."""
    return _call("isnan", [data])


def isfinite(data: Expr) -> Call:
    """``isfinite(data)``: bool, whether each element is finite."""
    return _call("isfinite", [data])


def where(condition: Expr, x: Expr, y: Expr) -> Call:
    """``where(condition, x, y)``: ``x`` where ``condition`` is nonzero, else ``y``."""
    return _call("where", [condition, x, y])


def _shape_attr(who: str, shape: int | Sequence[int]) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    return _check_shape(who, dims)


def zeros(shape: int | Sequence[int], dtype: str) -> Call:
    """``zeros(shape=..., dtype=...)``: a tensor of zeros (an int shape is one dimension)."""
    return _call("zeros", [], {"shape": _shape_attr("zeros", shape), "dtype": dtype})


def ones(shape: int | Sequence[int], dtype: str) -> Call:
    """``ones(shape=..., dtype=...)``: a tensor of ones (an int shape is one dimension)."""
    return _call("ones", [], {"shape": _shape_attr("ones", shape), "dtype": dtype})


def full(fill_value: Expr, shape: int | Sequence[int] = (), dtype: str = "") -> Call:
    """``full(fill_value, shape=..., dtype=...)``: ``shape`` filled with the scalar
    ``fill_value``; the empty dtype means the fill value's."""
    return _call("full", [fill_value], {"shape": _shape_attr("full", shape), "dtype": dtype})


def zeros_like(data: Expr) -> Call:
    """``zeros_like(data)``: zeros of ``data``'s shape and dtype."""
    return _call("zeros_like", [data])


def ones_like(data: Expr) -> Call:
    """``ones_like(data)``: ones of ``data``'s shape and dtype."""
    return _call("ones_like", [data])


def full_like(data: Expr, fill_value: Expr) -> Call:
    """``full_like(data, fill_value)``: ``data``'s shape and dtype filled with a scalar."""
    return _call("full_like", [data, fill_value])


def arange(
    start: Expr | float,
    stop: Expr | float | None = None,
    step: Expr | float | None = None,
    dtype: str = "float32",
) -> Call:
    """``arange(start, stop, step, dtype=...)``: ``start, start + step, ...`` below ``stop``.

    As Relay's ``arange``: with one bound it is ``stop`` and ``start`` is 0; ``step``
    defaults to 1. Python numbers become constants of ``dtype``."""
    opdef = get_op("arange")
    attrs = opdef.validate_attrs({"dtype": dtype})
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    np_dtype = _numpy_dtype(dtype)
    args = tuple(
        v if isinstance(v, Expr) else const(np.asarray(v, dtype=np_dtype))
        for v in (start, stop, step)
    )
    return Call(opdef.op, args, attrs)


# -- derivatives (of the gradient and the JVP rules) -------------------------------------------
#
# A one-argument operator here is elementwise, so its derivative is diagonal: the gradient rule
# multiplies the output adjoint by it and the JVP rule the argument's tangent, with one formula
# (``_UNARY_SLOPES``), so that the two rules are transposes of each other.


def _mul(a: Expr, b: Expr) -> Call:
    return _call("multiply", [a, b])


def _div(a: Expr, b: Expr) -> Call:
    return _call("divide", [a, b])


def _scalar_like(value: float, like: Expr) -> Call:
    """The rank-0 constant ``value`` in ``like``'s dtype (it broadcasts against ``like``)."""
    return cast_like(const(np.asarray(value, dtype=np.float64)), like)


_Slope = Callable[[Call, Expr, Expr], Expr]


def _log_base_slope(ln_base: float) -> _Slope:
    return lambda call, x, v: _div(v, _mul(x, _scalar_like(ln_base, x)))


def _sigmoid_slope(call: Call) -> Expr:
    return _mul(call, _call("subtract", [ones_like(call), call]))


def _erf_slope(x: Expr) -> Expr:
    bump = exp(_call("negative", [_mul(x, x)]))
    return _mul(_scalar_like(2.0 / math.sqrt(math.pi), x), bump)


# ``times_slope(call, x, v)``: ``v`` (an adjoint or a tangent, of the result's shape) times the
# derivative of ``call`` at its argument ``x``
_UNARY_SLOPES: dict[tuple[str, ...], _Slope] = {
    ("exp", "fast_exp"): lambda call, x, v: _mul(v, call),
    ("log",): lambda call, x, v: _div(v, x),
    ("log2",): _log_base_slope(math.log(2.0)),
    ("log10",): _log_base_slope(math.log(10.0)),
    ("sqrt",): lambda call, x, v: _div(v, _mul(_scalar_like(2.0, call), call)),
    # d(x ** -0.5)/dx = -0.5 * x ** -0.5 / x
    ("rsqrt",): lambda call, x, v: _mul(v, _div(_mul(_scalar_like(-0.5, x), call), x)),
    ("sigmoid",): lambda call, x, v: _mul(v, _sigmoid_slope(call)),
    ("tanh", "fast_tanh"): lambda call, x, v: _mul(
        v, _call("subtract", [ones_like(call), _mul(call, call)])
    ),
    ("erf",): lambda call, x, v: _mul(v, _erf_slope(x)),
    ("sin",): lambda call, x, v: _mul(v, cos(x)),
    ("cos",): lambda call, x, v: _call("negative", [_mul(v, sin(x))]),
    # sign(0) == 0: the subgradient at the kink is taken as 0
    ("abs",): lambda call, x, v: _mul(v, sign(x)),
    # passes where clip left x unchanged (a_min <= x <= a_max, as TVM's mask)
    ("clip",): lambda call, x, v: where(_call("equal", [call, x]), v, zeros_like(v)),
}


def _arange_index(call: Call) -> Call:
    """d arange / d step: the index ``i`` of each element (``(out - start) / step``)."""
    start, _stop, step = call.args
    return _div(_call("subtract", [call, start]), step)


# -- gradient rules ----------------------------------------------------------------------------
#
# The math follows TVM's python/tvm/relay/op/_tensor_grad.py. The piecewise-constant operators
# (sign and the rounding operators) give a zero adjoint, as TVM's do; operators whose result
# does not depend on an argument's value (``zeros_like``, ``cast_like``'s ``dtype_like``,
# ``arange``'s ``stop``, ``where``'s condition) give it none; nor do the integer and bool
# inputs of the conversions and constructors (``carries_gradient``), whose adjoint would be
# a float adjoint truncated.


def _total_like(grad: Expr, like: Expr) -> Call:
    """The sum of all of ``grad``, as a rank-0 tensor of ``like``'s dtype."""
    return cast_like(_call("sum", [grad]), like)


def _unary_grad(times_slope: _Slope) -> Callable[[Call, Expr], list[Expr | None]]:
    """The gradient rule of a one-argument operator whose derivative ``times_slope`` applies
    (see _UNARY_SLOPES) to the output adjoint."""

    def rule(call: Call, out_grad: Expr) -> list[Expr | None]:
        return [times_slope(call, call.args[0], out_grad)]

    return rule


for _names, _times_slope in _UNARY_SLOPES.items():
    gradient_rule(*_names)(_unary_grad(_times_slope))


@gradient_rule("sign", "floor", "ceil", "round", "trunc")
def _piecewise_constant_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [zeros_like(call.args[0])]


@gradient_rule("copy")
def _copy_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [out_grad]


@gradient_rule("cast")
def _cast_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    (x,) = call.args
    return [cast_like(out_grad, x) if carries_gradient(x) else None]


@gradient_rule("cast_like")
def _cast_like_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    x = call.args[0]
    return [cast_like(out_grad, x) if carries_gradient(x) else None, None]


@gradient_rule("where")
def _where_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    cond, x, y = call.args
    zero = zeros_like(out_grad)
    return [
        None,
        _call("collapse_sum_like", [where(cond, out_grad, zero), x]),
        _call("collapse_sum_like", [where(cond, zero, out_grad), y]),
    ]


@gradient_rule("zeros_like", "ones_like")
def _like_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [None]


@gradient_rule("zeros", "ones")
def _constant_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return []


@gradient_rule("full")
def _full_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    (fill,) = call.args
    return [_total_like(out_grad, fill) if carries_gradient(fill) else None]


@gradient_rule("full_like")
def _full_like_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    fill = call.args[1]
    return [None, _total_like(out_grad, fill) if carries_gradient(fill) else None]


@gradient_rule("arange")
def _arange_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # out[i] = start + i * step: d/dstart = 1, d/dstep = i; stop sets only the length
    start, _stop, step = call.args
    if not carries_gradient(start):  # an integer arange
        return [None, None, None]
    index = _arange_index(call)
    return [_total_like(out_grad, start), None, _total_like(_mul(out_grad, index), step)]


non_differentiable("isnan", "isfinite", reason="its result is bool")


# -- JVP rules -----------------------------------------------------------------------------------
#
# The forward-mode counterparts of the gradient rules above (the contract is in
# relay/op/registry.py): the tangent times the same derivative, with the same conventions
# (zero for the piecewise-constant operators, sign(0) == 0 for abs, clip passing the tangent
# where it kept x). Operators whose result does not depend on an argument's value ignore its
# tangent.

Jvp = list[Expr | None]


def _unary_jvp(times_slope: _Slope) -> Callable[[Call, Jvp], Expr | None]:
    """The JVP rule of a one-argument operator whose derivative ``times_slope`` applies (see
    _UNARY_SLOPES) to the argument's tangent."""

    def rule(call: Call, tangents: Jvp) -> Expr | None:
        (t,) = tangents
        return None if t is None else times_slope(call, call.args[0], t)

    return rule


for _names, _times_slope in _UNARY_SLOPES.items():
    jvp_rule(*_names)(_unary_jvp(_times_slope))


@jvp_rule("sign", "floor", "ceil", "round", "trunc", "zeros_like", "ones_like", "zeros", "ones")
def _zero_jvp(call: Call, tangents: Jvp) -> Expr | None:
    # piecewise constant, or independent of the argument's value: a zero tangent
    return None


@jvp_rule("copy")
def _copy_jvp(call: Call, tangents: Jvp) -> Expr | None:
    return tangents[0]


jvp_rule("cast", "full")(linear_jvp)


@jvp_rule("cast_like")
def _cast_like_jvp(call: Call, tangents: Jvp) -> Expr | None:
    t = tangents[0]
    return None if t is None else cast_like(t, call.args[1])


@jvp_rule("where")
def _where_jvp(call: Call, tangents: Jvp) -> Expr | None:
    # a branch without a tangent contributes zeros of its own shape, so the result still
    # broadcasts to the call's shape
    cond, x, y = call.args
    _, tx, ty = tangents
    if tx is None and ty is None:
        return None
    return where(cond, zeros_like(x) if tx is None else tx, zeros_like(y) if ty is None else ty)


@jvp_rule("full_like")
def _full_like_jvp(call: Call, tangents: Jvp) -> Expr | None:
    t = tangents[1]
    return None if t is None else full_like(call.args[0], t)


@jvp_rule("arange")
def _arange_jvp(call: Call, tangents: Jvp) -> Expr | None:
    # out[i] = start + i * step: d out[i] = d start + i * d step; stop sets only the length
    start = call.args[0]
    t_start, _, t_step = tangents
    d_start = None if t_start is None else jvp_fit(t_start, start, call)
    d_step = None
    if t_step is not None:
        d_step = _mul(_arange_index(call), t_step)
    return jvp_sum(d_start, d_step)
