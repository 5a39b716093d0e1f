"""Reductions (Relay's ``reduce`` family) with numpy references.

Every reduction takes Relay's ``axis`` (None, an int or a list of ints), ``keepdims`` and
``exclude`` attributes; ``argmax``/``argmin`` add ``select_last_index`` and ``variance`` adds
``unbiased``. The reduced axes are computed as Relay's type relation computes them
(``GetReduceAxes``):

* ``axis`` None or empty reduces every axis, whatever ``exclude`` says;
* otherwise negative axes count from the end, an axis out of range or given twice is a
  ``ValueError``, and ``exclude=True`` reduces the axes *not* listed;
* when no axis is left to reduce (a rank-0 input, or ``exclude`` listing every axis) the
  result is the input unchanged (Relay computes ``identity``); for ``argmax``/``argmin``,
  which need rank >= 1, it is a tensor of zeros (each element is its own extreme).

Results keep the input dtype (``sum`` of int32 is int32 and wraps around, as compiled code
does); ``argmax``/``argmin`` give int32 indices, flattened row-major over the reduced axes
when there are several (TVM's ``CommReduceIdx``). ``mean`` of integers divides the integer
sum by the count truncating toward zero, as ``topi.divide`` does; float16 means and
variances are computed in float32 and rounded back. ``max``/``min`` of an empty reduction
give the dtype's lowest/highest value (the reduction's initial value in TVM: -inf/+inf for
floats); ``argmax``/``argmin`` of one is a ``ValueError``.

``variance(data, mean)`` takes the mean as a second input, as Relay's operator did (the
builder computes it with ``mean(data, axis, keepdims=True, exclude)`` unless ``with_mean`` is
given): it is ``sum((data - mean)^2) / (n - unbiased)`` over the reduced axes, ``mean``
broadcasting to ``data`` (same rank, each dimension 1 or the data's). ``logsumexp`` (a composite in Relay's Python API,
an operator here) is ``m + log(sum(exp(x - m)))`` with ``m`` the maximum, replaced by 0 where
it is infinite so that all ``-inf`` gives ``-inf`` rather than nan.

The type relations follow the references: the result keeps the data's dtype (int32 for
``argmax``/``argmin``) and its shape loses the reduced axes (or has 1 there with
``keepdims``); kept dimensions pass through as they are, symbolic or ``Any``. They reject
statically what the reference rejects at run time: axes out of range or repeated, bool data
for ``mean``/``variance``, non-float data for ``logsumexp``, rank-0 data for
``argmax``/``argmin``/``variance``, and, when the reduced extent is a known constant, an
empty ``argmax``/``argmin`` and an integer ``mean``/``variance`` dividing by zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relay.ir import dim
from relay.ir.attrs import Attrs
from relay.ir.dim import Dim
from relay.ir.expr import Call, Expr, const
from relay.ir.types import TensorType, Type
from relay.op.registry import (
    OpDef,
    OpPattern,
    attr,
    get_op,
    gradient_rule,
    jvp_rule,
    non_differentiable,
    op_call,
    register_op,
)
from relay.op.tensor import carries_gradient, known_type, linear_jvp, truncate_divide
from relay.typecheck.relation import (
    RelationError,
    RelationFunc,
    Reporter,
    forward,
    is_dtype,
    normalize_axis,
    shape_str,
    tensor_arg,
)

Array = np.ndarray

__all__ = [
    "argmax",
    "argmin",
    "logsumexp",
    "max",
    "mean",
    "min",
    "prod",
    "reduce_axes",
    "sum",
    "variance",
]


def reduce_axes(ndim: int, axis: int | Sequence[int] | None, exclude: bool) -> tuple[int, ...]:
    """The axes, sorted, that a reduction with ``axis`` and ``exclude`` reduces over ``ndim``.

    >>> reduce_axes(3, [-1], False)
    (2,)
    >>> reduce_axes(3, [1], True)
    (0, 2)
    >>> reduce_axes(3, None, True)
    (0, 1, 2)
    """
    if axis is None:
        return tuple(range(ndim))
    given = (axis,) if isinstance(axis, int) else tuple(axis)
    if not given:
        return tuple(range(ndim))
    seen: set[int] = set()
    for a in given:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for a tensor of rank {ndim}")
        n = a + ndim if a < 0 else a
        if n in seen:
            raise ValueError(f"axis {a} is given twice (axes {list(given)}, rank {ndim})")
        seen.add(n)
    if exclude:
        return tuple(i for i in range(ndim) if i not in seen)
    return tuple(sorted(seen))


def _axes(x: Array, axis: object, exclude: bool) -> tuple[int, ...]:
    assert axis is None or isinstance(axis, int | tuple)
    return reduce_axes(x.ndim, axis, exclude)


def _is_float(x: Array) -> bool:
    # (ml_dtypes' bfloat16 is a numpy dtype of kind "V", not a subtype of np.floating)
    return bool(np.issubdtype(x.dtype, np.floating)) or x.dtype.name == "bfloat16"


def _need_numeric(name: str, x: Array) -> None:
    if x.dtype == np.bool_:
        raise ValueError(f"{name} needs a numeric tensor, got bool")


def _need_float(name: str, x: Array) -> None:
    if not _is_float(x):
        raise ValueError(f"{name} needs a floating-point tensor, got {x.dtype}")


def _compute_dtype(x: Array) -> np.dtype[Any]:
    """The dtype float math on ``x`` is done in: float32 for narrow floats."""
    return np.dtype(np.float32) if x.dtype.itemsize < 4 else x.dtype


def _count(shape: Sequence[int], axes: Sequence[int]) -> int:
    n = 1
    for a in axes:
        n *= int(shape[a])
    return n


def _truncdiv(total: Array, count: int, what: str) -> Array:
    """Integer ``total / count`` rounded toward zero, in ``total``'s dtype."""
    if count == 0:
        raise ZeroDivisionError(f"integer {what} divides by a count of zero")
    wide = np.dtype(np.uint64 if total.dtype == np.uint64 else np.int64)
    if count < 0 and wide == np.uint64:  # (an empty unbiased variance: every sum is 0)
        return np.zeros_like(total)
    return np.asarray(truncate_divide(total.astype(wide), wide.type(count)).astype(total.dtype))


def _accumulator(x: Array) -> np.dtype[Any]:
    """The dtype a sum or a product of ``x`` accumulates in: float32 for bfloat16 (rounded
    once at the end, as the kernels, JAX and PyTorch do; ml_dtypes' own loop rounds each
    step to bfloat16: a sum of 20 normal values was 3 bfloat16 steps off), else ``x``'s
    (numpy's float16 loops accumulate in float32 along the innermost axis themselves)."""
    return np.dtype(np.float32) if x.dtype.name == "bfloat16" else x.dtype


def _sum_ref(data: Array, *, axis: object, keepdims: bool, exclude: bool) -> Array:
    x = np.asarray(data)
    axes = _axes(x, axis, exclude)
    if not axes:
        return x.copy()
    with np.errstate(all="ignore"):
        total = np.sum(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x))
        return np.asarray(np.asarray(total).astype(x.dtype))


def _prod_ref(data: Array, *, axis: object, keepdims: bool, exclude: bool) -> Array:
    x = np.asarray(data)
    axes = _axes(x, axis, exclude)
    if not axes:
        return x.copy()
    with np.errstate(all="ignore"):
        total = np.prod(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x))
        return np.asarray(np.asarray(total).astype(x.dtype))


def _extreme(x: Array, lowest: bool) -> object:
    """The lowest (or highest) value of ``x``'s dtype: a max's (min's) initial value."""
    if x.dtype == np.bool_:
        return not lowest
    if _is_float(x):
        return -np.inf if lowest else np.inf
    info = np.iinfo(x.dtype)
    return info.min if lowest else info.max


def _max_ref(data: Array, *, axis: object, keepdims: bool, exclude: bool) -> Array:
    x = np.asarray(data)
    axes = _axes(x, axis, exclude)
    if not axes:
        return x.copy()
    init = _extreme(x, lowest=True)
    return np.asarray(np.max(x, axis=axes, keepdims=keepdims, initial=init))  # type: ignore[call-overload]


def _min_ref(data: Array, *, axis: object, keepdims: bool, exclude: bool) -> Array:
    x = np.asarray(data)
    axes = _axes(x, axis, exclude)
    if not axes:
        return x.copy()
    init = _extreme(x, lowest=False)
    return np.asarray(np.min(x, axis=axes, keepdims=keepdims, initial=init))  # type: ignore[call-overload]


def _mean_ref(data: Array, *, axis: object, keepdims: bool, exclude: bool) -> Array:
    x = np.asarray(data)
    _need_numeric("mean", x)
    axes = _axes(x, axis, exclude)
    if not axes:
        return x.copy()
    count = _count(x.shape, axes)
    if not _is_float(x):
        total = np.asarray(np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype))
        return _truncdiv(total, count, "mean")
    with np.errstate(all="ignore"):
        total = np.sum(x, axis=axes, keepdims=keepdims, dtype=_compute_dtype(x))
        return np.asarray(np.asarray(total / count).astype(x.dtype))


def _arg_ref(
    name: str, data: Array, axis: object, keepdims: bool, exclude: bool, last: bool
) -> Array:
    x = np.asarray(data)
    if x.ndim == 0:
        raise ValueError(f"{name} needs a tensor of rank at least 1")
    axes = _axes(x, axis, exclude)
    if not axes:
        return np.zeros(x.shape, dtype=np.int32)
    kept = [i for i in range(x.ndim) if i not in axes]
    extent = _count(x.shape, axes)
    if extent == 0:
        raise ValueError(f"{name} of an empty reduction (a reduced axis has extent 0)")
    flat = np.transpose(x, [*kept, *axes]).reshape([x.shape[i] for i in kept] + [extent])
    pick = np.argmax if name == "argmax" else np.argmin
    idx = extent - 1 - pick(flat[..., ::-1], axis=-1) if last else pick(flat, axis=-1)
    out = np.asarray(idx, dtype=np.int32)
    if keepdims:
        out = out.reshape([1 if i in axes else x.shape[i] for i in range(x.ndim)])
    return np.asarray(out)


def _argmax_ref(
    data: Array, *, axis: object, keepdims: bool, exclude: bool, select_last_index: bool
) -> Array:
    return _arg_ref("argmax", data, axis, keepdims, exclude, select_last_index)


def _argmin_ref(
    data: Array, *, axis: object, keepdims: bool, exclude: bool, select_last_index: bool
) -> Array:
    return _arg_ref("argmin", data, axis, keepdims, exclude, select_last_index)


def _variance_ref(
    data: Array, mean: Array, *, axis: object, keepdims: bool, exclude: bool, unbiased: bool
) -> Array:
    x = np.asarray(data)
    m = np.asarray(mean)
    _need_numeric("variance", x)
    if x.ndim == 0:
        raise ValueError("variance needs a tensor of rank at least 1")
    if m.ndim != x.ndim:
        raise ValueError(
            f"variance: the mean has rank {m.ndim} but the data has rank {x.ndim} "
            "(compute the mean with keepdims=True)"
        )
    if m.dtype != x.dtype:
        raise ValueError(f"variance: the mean is {m.dtype} but the data is {x.dtype}")
    if any(dm not in (1, dx) for dm, dx in zip(m.shape, x.shape, strict=True)):
        raise ValueError(
            f"variance: the mean of shape {m.shape} does not broadcast to the data's {x.shape}"
        )
    axes = _axes(x, axis, exclude)
    count = _count(x.shape, axes) - int(unbiased)
    if not _is_float(x):
        diff = (x - m).astype(x.dtype)
        total = np.asarray(np.sum(diff * diff, axis=axes, keepdims=keepdims, dtype=x.dtype))
        return _truncdiv(total, count, "variance")
    wide = _compute_dtype(x)
    with np.errstate(all="ignore"):
        diff = x.astype(wide) - m.astype(wide)
        total = np.sum(diff * diff, axis=axes, keepdims=keepdims, dtype=wide)
        return np.asarray(np.asarray(total / count).astype(x.dtype))


def _logsumexp_ref(data: Array, *, axis: object, keepdims: bool, exclude: bool) -> Array:
    x = np.asarray(data)
    _need_float("logsumexp", x)
    axes = _axes(x, axis, exclude)
    if not axes:
        return x.copy()
    wide = x.astype(_compute_dtype(x))
    with np.errstate(all="ignore"):
        top = np.max(wide, axis=axes, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(top), top, 0)
        total = np.sum(np.exp(wide - shift), axis=axes, keepdims=True)
        out = np.log(total) + shift
    if not keepdims:
        out = np.squeeze(out, axis=axes)
    return np.asarray(out.astype(x.dtype))


# ---- type relations -----------------------------------------------------------------------------

_INT32_MAX = 2**31 - 1


def _axis_attr(value: object) -> tuple[int, ...]:
    """The ``axis`` attribute as a tuple (empty for None)."""
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    assert isinstance(value, tuple) and all(isinstance(a, int) for a in value)
    return tuple(value)


def _checked_axes(op: str, x: TensorType, attrs: Attrs) -> tuple[int, ...]:
    """The axes ``op`` reduces of ``x`` (as :func:`reduce_axes`), or a RelationError."""
    given = _axis_attr(attrs["axis"])
    seen: list[int] = []
    for a in given:
        n = normalize_axis(a, x.ndim, op)
        if n in seen:
            raise RelationError(
                f"{op}: axes {list(given)} name axis {n} twice for a rank-{x.ndim} tensor"
            )
        seen.append(n)
    return reduce_axes(x.ndim, given or None, bool(attrs["exclude"]))


def _reduced_shape(x: TensorType, axes: tuple[int, ...], keepdims: bool) -> tuple[Dim, ...]:
    """``x``'s shape without the reduced ``axes`` (1 there with ``keepdims``)."""
    if not axes:
        return x.shape
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _extent(x: TensorType, axes: tuple[int, ...]) -> Dim:
    """How many elements each reduction over ``axes`` combines (symbolic when unknown)."""
    return dim.product([x.shape[i] for i in axes])


def _where(x: TensorType, axes: tuple[int, ...]) -> str:
    return f"over axes {shape_str(axes)} of {x}"


def _check_rank(op: str, x: TensorType) -> None:
    if x.ndim == 0:
        raise RelationError(f"{op}: data must have rank at least 1, got {x}")


def _check_numeric(op: str, x: TensorType) -> None:
    if is_dtype(x.dtype, "float", "int", "uint") is False:
        raise RelationError(f"{op}: data must be numeric, got {x}")


def _is_integer(x: TensorType) -> bool:
    return bool(is_dtype(x.dtype, "int", "uint"))


def _reduce_rel(op: str, doc: str) -> RelationFunc:
    """The relation of reduction ``op`` whose result keeps the data's dtype."""

    def rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
        x = tensor_arg(args[0], op)
        if op == "mean":
            _check_numeric(op, x)
        if op == "logsumexp" and is_dtype(x.dtype, "float") is False:
            raise RelationError(f"{op}: data must be floating-point, got {x}")
        axes = _checked_axes(op, x, attrs)
        if op == "mean" and axes and _is_integer(x) and _extent(x, axes) == 0:
            raise RelationError(
                f"{op}: the integer mean {_where(x, axes)} divides by zero (no elements)"
            )
        return TensorType(_reduced_shape(x, axes, bool(attrs["keepdims"])), x.dtype)

    rule.__name__ = f"{op}_rel"
    rule.__doc__ = doc
    return forward(rule)


def _arg_reduce_rel(op: str, doc: str) -> RelationFunc:
    """The relation of ``argmax``/``argmin``: int32 indices."""

    def rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
        x = tensor_arg(args[0], op)
        _check_rank(op, x)
        axes = _checked_axes(op, x, attrs)
        extent = _extent(x, axes)
        if axes and isinstance(extent, int):
            if extent == 0:
                raise RelationError(f"{op}: the reduction {_where(x, axes)} has no elements")
            if extent > _INT32_MAX:
                raise RelationError(
                    f"{op}: the reduction {_where(x, axes)} has {extent} elements, "
                    "too many for an int32 index"
                )
        return TensorType(_reduced_shape(x, axes, bool(attrs["keepdims"])), "int32")

    rule.__name__ = f"{op}_rel"
    rule.__doc__ = doc
    return forward(rule)


def _variance_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    # The docstring (the rule in one line) is set below, beside the other reductions' rules.
    op = "variance"
    x = tensor_arg(args[0], op)
    mean = tensor_arg(args[1], op, "mean")
    _check_numeric(op, x)
    _check_rank(op, x)
    if mean.ndim != x.ndim:
        raise RelationError(
            f"{op}: mean {mean} has rank {mean.ndim} but data {x} has rank {x.ndim} "
            "(compute the mean with keepdims=True)"
        )
    if mean.dtype != x.dtype:
        r.dtype_equal(x.dtype, mean.dtype, f"{op}: data {x} and mean {mean} differ in dtype")
    for i, (dx, dm) in enumerate(zip(x.shape, mean.shape, strict=True)):
        if dm == 1 or dim.equal(dm, dx):
            continue
        message = (
            f"{op}: mean {mean} does not broadcast to data {x} "
            f"(axis {i}: {dim.dim_str(dm)} is neither 1 nor {dim.dim_str(dx)})"
        )
        if isinstance(dm, int) and isinstance(dx, int):
            raise RelationError(message)
        r.dim_equal(dm, dx, message)
    axes = _checked_axes(op, x, attrs)
    count = _extent(x, axes)
    unbiased = bool(attrs["unbiased"])
    if _is_integer(x) and isinstance(count, int) and count == int(unbiased):
        raise RelationError(
            f"{op}: the integer variance {_where(x, axes)} divides by zero "
            f"({count} element{'s' if count != 1 else ''}, unbiased={unbiased})"
        )
    return TensorType(_reduced_shape(x, axes, bool(attrs["keepdims"])), x.dtype)


_RESULT = "Tensor[s without the reduced axes (1 there if keepdims), {}]"
_RULE = "Tensor[s, d] -> " + _RESULT
_RELATIONS: dict[str, RelationFunc] = {
    "sum": _reduce_rel("sum", _RULE.format("d") + "."),
    "mean": _reduce_rel("mean", _RULE.format("d") + " for numeric d."),
    "max": _reduce_rel("max", _RULE.format("d") + "."),
    "min": _reduce_rel("min", _RULE.format("d") + "."),
    "prod": _reduce_rel("prod", _RULE.format("d") + "."),
    "logsumexp": _reduce_rel("logsumexp", _RULE.format("d") + " for floating-point d."),
    "argmax": _arg_reduce_rel("argmax", _RULE.format("int32") + " for rank >= 1."),
    "argmin": _arg_reduce_rel("argmin", _RULE.format("int32") + " for rank >= 1."),
}
_variance_rule.__doc__ = (
    "(Tensor[s, d], mean Tensor[m, d]) -> "
    + _RESULT.format("d")
    + " for numeric d, rank >= 1, m of the same rank broadcasting to s."
)
_RELATIONS["variance"] = forward(_variance_rule)


# ---- registration -------------------------------------------------------------------------------

_REDUCE_ATTRS = (
    attr("axis", "int_or_ints", None, optional=True),
    attr("keepdims", "bool", False),
    attr("exclude", "bool", False),
)
_ARG_ATTRS = (*_REDUCE_ATTRS, attr("select_last_index", "bool", False))
_VARIANCE_ATTRS = (*_REDUCE_ATTRS, attr("unbiased", "bool", False))

_DEFS: dict[str, OpDef] = {}

_SPECS: tuple[tuple[str, int, Callable[..., Array], tuple[Any, ...], str], ...] = (
    ("sum", 1, _sum_ref, _REDUCE_ATTRS, "Sum over the reduced axes, in the input dtype."),
    ("mean", 1, _mean_ref, _REDUCE_ATTRS, "Mean over the reduced axes (integers truncate)."),
    ("max", 1, _max_ref, _REDUCE_ATTRS, "Maximum over the reduced axes."),
    ("min", 1, _min_ref, _REDUCE_ATTRS, "Minimum over the reduced axes."),
    ("prod", 1, _prod_ref, _REDUCE_ATTRS, "Product over the reduced axes, in the input dtype."),
    (
        "argmax",
        1,
        _argmax_ref,
        _ARG_ATTRS,
        "Index (int32) of the maximum over the reduced axes; first one, or last if asked.",
    ),
    (
        "argmin",
        1,
        _argmin_ref,
        _ARG_ATTRS,
        "Index (int32) of the minimum over the reduced axes; first one, or last if asked.",
    ),
    (
        "variance",
        2,
        _variance_ref,
        _VARIANCE_ATTRS,
        "Variance of data about the given mean over the reduced axes (n - 1 if unbiased).",
    ),
    (
        "logsumexp",
        1,
        _logsumexp_ref,
        _REDUCE_ATTRS,
        "log(sum(exp(x))) over the reduced axes, computed stably.",
    ),
)

for _name, _n, _ref, _attrs, _doc in _SPECS:
    _DEFS[_name] = register_op(
        _name,
        _n,
        attrs=_attrs,
        reference=_ref,
        pattern=OpPattern.COMM_REDUCE,
        doc=_doc,
        type_relation=_RELATIONS[_name],
    )


# ---- builders -----------------------------------------------------------------------------------

AxisArg = int | Sequence[int] | None


def _axis_value(axis: AxisArg) -> object:
    if isinstance(axis, int):
        return [axis]
    return list(axis) if isinstance(axis, Sequence) else axis


def _call(name: str, args: Sequence[Expr], attrs: Mapping[str, object]) -> Call:
    opdef = _DEFS[name]
    return Call(opdef.op, tuple(args), opdef.validate_attrs(dict(attrs)))


def _reduce(name: str, data: Expr, axis: AxisArg, keepdims: bool, exclude: bool) -> Call:
    attrs = {"axis": _axis_value(axis), "keepdims": keepdims, "exclude": exclude}
    return _call(name, [data], attrs)


def sum(data: Expr, axis: AxisArg = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """``sum(data, axis=..., keepdims=..., exclude=...)``: the sum over the reduced axes
    (all of them when ``axis`` is None; those not in ``axis`` when ``exclude``)."""
    return _reduce("sum", data, axis, keepdims, exclude)


def mean(data: Expr, axis: AxisArg = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """``mean(data, axis=..., keepdims=..., exclude=...)``: the mean over the reduced axes."""
    return _reduce("mean", data, axis, keepdims, exclude)


def max(data: Expr, axis: AxisArg = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """``max(data, axis=..., keepdims=..., exclude=...)``: the maximum over the reduced axes."""
    return _reduce("max", data, axis, keepdims, exclude)


def min(data: Expr, axis: AxisArg = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """``min(data, axis=..., keepdims=..., exclude=...)``: the minimum over the reduced axes."""
    return _reduce("min", data, axis, keepdims, exclude)


def prod(data: Expr, axis: AxisArg = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """``prod(data, axis=..., keepdims=..., exclude=...)``: the product over the reduced axes."""
    return _reduce("prod", data, axis, keepdims, exclude)


def logsumexp(
    data: Expr, axis: AxisArg = None, keepdims: bool = False, exclude: bool = False
) -> Call:
    """``logsumexp(data, axis=..., keepdims=...)``: ``log(sum(exp(data)))`` over the reduced
    axes, computed without overflow."""
    return _reduce("logsumexp", data, axis, keepdims, exclude)


def _arg_reduce(
    name: str, data: Expr, axis: AxisArg, keepdims: bool, exclude: bool, select_last_index: bool
) -> Call:
    attrs = {
        "axis": _axis_value(axis),
        "keepdims": keepdims,
        "exclude": exclude,
        "select_last_index": select_last_index,
    }
    return _call(name, [data], attrs)


def argmax(
    data: Expr,
    axis: AxisArg = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Call:
    """``argmax(data, axis=...)``: the int32 index of the maximum over the reduced axes
    (row-major over them when several); the last maximum when ``select_last_index``."""
    return _arg_reduce("argmax", data, axis, keepdims, exclude, select_last_index)


def argmin(
    data: Expr,
    axis: AxisArg = None,
    keepdims: bool = False,
    exclude: bool = False,
    select_last_index: bool = False,
) -> Call:
    """``argmin(data, axis=...)``: the int32 index of the minimum over the reduced axes
    (row-major over them when several); the last minimum when ``select_last_index``."""
    return _arg_reduce("argmin", data, axis, keepdims, exclude, select_last_index)


def variance(
    data: Expr,
    axis: AxisArg = None,
    keepdims: bool = False,
    exclude: bool = False,
    unbiased: bool = False,
    with_mean: Expr | None = None,
) -> Call:
    """``variance(data, mean, axis=..., ...)``: the variance over the reduced axes.

    As in Relay, the operator takes the mean as its second input: ``with_mean`` if given,
    else ``mean(data, axis, keepdims=True, exclude=exclude)``. Divides by ``n - 1`` when
    ``unbiased``.
    """
    m = mean(data, axis, True, exclude) if with_mean is None else with_mean
    attrs = {
        "axis": _axis_value(axis),
        "keepdims": keepdims,
        "exclude": exclude,
        "unbiased": unbiased,
    }
    return _call("variance", [data, m], attrs)


# ---- gradient rules -----------------------------------------------------------------------------
#
# The math follows TVM's python/tvm/relay/op/_tensor_grad.py. A reduction's adjoint is the output
# adjoint given back its reduced axes (``expand_dims`` unless ``keepdims``) and broadcast to the
# data: ``sum`` passes it on, ``mean`` divides by the count, ``max``/``min`` send it to the
# positions equal to the result, divided evenly among ties (as TVM does; the one-sided
# derivatives at a tie differ, and this is their average over the tied positions), ``prod``
# multiplies by ``prod / x`` (TVM's formula: inf or nan where an element is 0), ``logsumexp``
# by ``softmax = exp(x - logsumexp)``. Counts are computed as sums of ones, so no rule needs a
# concrete shape, only the data's rank.


def _rank(e: Expr) -> int:
    ty = known_type(e)
    if not isinstance(ty, TensorType):
        raise ValueError(f"the gradient rule needs the tensor type of {e}, got {ty}")
    return len(ty.shape)


def _reduced(call: Call) -> tuple[int, ...]:
    x = call.args[0]
    exclude = call.attrs["exclude"]
    assert isinstance(exclude, bool)
    return reduce_axes(_rank(x), _axis_attr(call.attrs["axis"]) or None, exclude)


def _unreduce(call: Call, value: Expr) -> Expr:
    """``value``, of the reduction's result shape, with the reduced axes back (size 1)."""
    if call.attrs["keepdims"]:
        return value
    for a in _reduced(call):
        value = op_call("expand_dims", value, axis=a)
    return value


def _spread(call: Call, value: Expr) -> Expr:
    """``value`` broadcast from the reduction's result back to the data's shape."""
    return op_call("broadcast_to_like", _unreduce(call, value), call.args[0])


def _sum_kept(call: Call, value: Expr) -> Expr:
    """``value``, of the data's shape, summed over the reduced axes with keepdims (an empty
    ``axis`` list would sum over every axis, so reducing nothing returns ``value``)."""
    axes = _reduced(call)
    return op_call("sum", value, axis=list(axes), keepdims=True) if axes else value


def _reduced_count(call: Call, x: Expr) -> Expr:
    """How many elements each reduction combines, as a keepdims tensor of ``x``'s dtype."""
    return _sum_kept(call, op_call("ones_like", x))


@gradient_rule("sum")
def _sum_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [_spread(call, out_grad)]


@gradient_rule("mean")
def _mean_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    x = call.args[0]
    if not carries_gradient(x):
        return [None]
    return [op_call("divide", _spread(call, out_grad), _reduced_count(call, x))]


def _extreme_share(call: Call) -> Expr:
    """d max / d x (or min's), of the data's shape: 1 / (the number of ties) at the positions
    equal to the result, 0 elsewhere."""
    x = call.args[0]
    hit = op_call("cast_like", op_call("equal", x, _spread(call, call)), x)
    return op_call("divide", hit, _sum_kept(call, hit))


def _extreme_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [op_call("multiply", _extreme_share(call), _spread(call, out_grad))]


gradient_rule("max", "min")(_extreme_grad)


def _prod_others(call: Call) -> Expr:
    """For each element of a ``prod`` reduction, the product of the other elements it is
    reduced with (d prod / d x_i), exact where elements are zero: with no zero in the
    reduction it is prod / x_i; with exactly one, it is the product of the nonzeros at the
    zero and 0 elsewhere; with more, 0 everywhere."""
    x = call.args[0]
    zero = op_call("zeros_like", x)
    is_zero = op_call("equal", x, zero)
    nonzero = op_call("where", is_zero, op_call("ones_like", x), x)
    product = _spread(call, Call(call.op, (nonzero,), call.attrs))  # of the nonzeros
    zeros = op_call("broadcast_to_like", _sum_kept(call, op_call("cast_like", is_zero, x)), x)
    at_zero = op_call("where", op_call("equal", zeros, op_call("ones_like", x)), product, zero)
    elsewhere = op_call(
        "where", op_call("equal", zeros, zero), op_call("divide", product, nonzero), zero
    )
    return op_call("where", is_zero, at_zero, elsewhere)


@gradient_rule("prod")
def _prod_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [op_call("multiply", _spread(call, out_grad), _prod_others(call))]


def _logsumexp_softmax(call: Call) -> Expr:
    """d logsumexp / d x: ``exp(x - logsumexp)``, the softmax over the reduced axes."""
    return op_call("exp", op_call("subtract", call.args[0], _spread(call, call)))


@gradient_rule("logsumexp")
def _logsumexp_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [op_call("multiply", _spread(call, out_grad), _logsumexp_softmax(call))]


def _variance_slope(call: Call) -> Expr:
    """d variance / d x, of the data's shape: ``2 (x - m) / N`` (``N - 1`` if unbiased) for
    the ``N`` elements each variance combines; d / dm is its negation."""
    x, m = call.args
    count = _reduced_count(call, x)
    if call.attrs["unbiased"]:
        count = op_call("subtract", count, op_call("ones_like", count))
    two = op_call("cast_like", const(np.array(2.0)), x)
    diff = op_call("subtract", x, m)
    return op_call("divide", op_call("multiply", two, diff), count)


@gradient_rule("variance")
def _variance_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # var = sum((x - m)^2) / N: d/dx = 2 (x - m) / N, d/dm = -sum of the same over m's shape
    x, m = call.args
    if not carries_gradient(x):
        return [None, None]
    dx = op_call("multiply", _spread(call, out_grad), _variance_slope(call))
    dm = op_call("collapse_sum_like", op_call("negative", dx), m)
    return [dx, dm]


non_differentiable("argmax", "argmin", reason="its result is an integer index")


# ---- JVP rules ----------------------------------------------------------------------------------
#
# The forward-mode counterparts of the gradient rules above (the contract is in
# relay/op/registry.py): ``sum`` and ``mean`` are linear, so they reduce the tangent; the others
# reduce, with ``sum`` over the same axes (the call's own ``axis``, ``keepdims`` and
# ``exclude``), the tangent times the weights their gradient spreads: the share of each tied
# extreme (the tangent of a max is the mean of the tangents at its tied positions), ``prod / x``,
# the softmax, ``2 (x - m) / N``.


def _reduce_like(call: Call, value: Expr) -> Call:
    """``value`` (of the data's shape) summed over the axes ``call`` reduces, as it does."""
    opdef = get_op("sum")
    attrs: dict[str, object] = {k: call.attrs[k] for k in ("axis", "keepdims", "exclude")}
    return Call(opdef.op, (value,), opdef.validate_attrs(attrs))


jvp_rule("sum", "mean")(linear_jvp)


def _weighted_jvp(
    slope: Callable[[Call], Expr],
) -> Callable[[Call, list[Expr | None]], Expr | None]:
    """The JVP rule of a one-argument reduction whose derivative is ``slope(call)`` (of the
    data's shape): the tangent times it, reduced as the call reduces."""

    def rule(call: Call, tangents: list[Expr | None]) -> Expr | None:
        (t,) = tangents
        return None if t is None else _reduce_like(call, op_call("multiply", slope(call), t))

    return rule


jvp_rule("max", "min")(_weighted_jvp(_extreme_share))
jvp_rule("prod")(_weighted_jvp(_prod_others))
jvp_rule("logsumexp")(_weighted_jvp(_logsumexp_softmax))


@jvp_rule("variance")
def _variance_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    # var = sum((x - m)^2) / N: d var = sum(2 (x - m) (dx - dm)) / N
    tx, tm = tangents
    if tx is None and tm is None:
        return None
    diff_t: Expr
    if tx is None:
        assert tm is not None
        diff_t = op_call("negative", tm)
    elif tm is None:
        diff_t = tx
    else:
        diff_t = op_call("subtract", tx, tm)
    return _reduce_like(call, op_call("multiply", _variance_slope(call), diff_t))
