"""Shape and data-movement operators (Relay's ``transform`` family) with numpy references.

Every operator here moves or copies elements without arithmetic (except
``collapse_sum_like``, the adjoint of broadcasting, which sums). The references follow
Relay's definitions; where Relay's C++ had an inconsistency the choice made here is noted:

* ``reshape``'s ``newshape`` takes Relay's special values: ``0`` copies the input dimension
  at the same position (unless ``allowzero``, where it is a literal 0), ``-1`` infers one
  dimension, ``-2`` copies all remaining input dimensions, ``-3`` merges the next two input
  dimensions, ``-4 a b`` splits the next input dimension into ``a`` and ``b`` (one of which
  may be ``-1``). Every special value but ``-2`` consumes one input position (``-3`` two),
  so a later ``0`` copies the dimension at the matching place. The ``-1`` dimension is the
  product of the unconsumed input dimensions divided by the explicit output dimensions (as
  Relay computes it), so ``reshape(x: (0, 3), newshape=[0, -1])`` is well defined.
* ``strided_slice`` canonicalizes each begin and end as Relay does (negative indices count
  from the end, then clamp to ``[0, n]``, or ``[-1, n - 1]`` for a negative stride), which is
  Python's slicing; a begin at or past the end for the stride's direction selects nothing and
  gives a 0-length axis, as numpy does (Relay rejected a begin past the end). In
  ``slice_mode="size"`` strides are ignored and ``end`` holds sizes (``-1``: to the end); the
  size counts from the canonicalized begin (Relay adds it to the raw begin, which rejects
  ``begin=-1, size=1``). Axes left out when ``axes`` is None take their whole extent.
* ``take`` in mode ``"clip"`` clamps indices to ``[0, n - 1]`` (negative indices become 0,
  as in TVM), ``"wrap"`` takes them modulo ``n``, and ``"fast"`` (unchecked in TVM) raises
  for an index outside ``[0, n)`` so that the reference never reads an arbitrary element.
* ``layout_transform`` works on layouts written as Relay writes them: upper-case primal axes
  and ``<factor><lower-case>`` sub-axes (``NCHW``, ``NHWC``, ``NCHW8c``, ``NCW4c``...). The
  data is first brought to its primal form (each primal axis followed by its sub-axis, merged),
  then split by the destination's factors and permuted. A factor must divide its axis (Relay
  would pad; here it is an error).
* ``one_hot``'s ``axis`` may be any of ``-(rank + 1) .. rank`` (Relay only defines ``-1`` among
  negatives, meaning last); indices outside ``[0, depth)`` give rows of ``off_value``.

No relation accepts a result that no numpy array can be: a rank above :data:`MAX_RANK` (64,
numpy's limit) or more than :data:`MAX_BYTES` (``2**63 - 1``) bytes, zero dimensions left out as
numpy counts (:func:`shape_limit_error`); the creation operators of :mod:`relay.op.elemwise` and
the ``nn`` relations check their results the same way, so that a huge count attribute
(``expand_dims``'s ``num_newaxis``, ``tile``'s ``reps``, a padding) is a type error rather than a
crash.

Attribute values that are wrong whatever the inputs (a zero stride, ``repeats=0``, a malformed
layout) are rejected by the builders with :class:`~relay.op.registry.AttrValidationError`;
attribute values that do not fit the inputs (an axis out of range, an incompatible reshape)
raise ``ValueError`` from the reference, which the interpreter reports at the call's span.

Each operator's type relation computes its result type from the argument types with the
shape logic the reference uses (:func:`reshape_dims`, :func:`reshape_like_shape`,
:func:`may_broadcast`, :func:`split_extents`, :func:`strided_slice_shape`,
:func:`layout_transform_shape`), written over symbolic dimensions (:mod:`relay.ir.dim`):
``reshape`` of ``(n, 784)`` to ``[-1, 28, 28]`` gives ``(n, 28, 28)``, ``concatenate`` of
``(n, 3)`` and ``(m, 3)`` gives ``(m + n, 3)``, ``split`` of ``(2n, 4)`` into 2 gives pieces
``(n, 4)``. Where a result depends on a run-time size (a partial ``strided_slice`` of a
symbolic axis) it is ``Any``. With concrete shapes a relation accepts exactly the calls the
reference runs (but ``take`` rejects bool indices, which the reference reads as 0 and 1), and
with symbolic ones it rejects only what is provably wrong (``squeeze`` of an axis ``n`` and
``reshape`` of ``(n, 6)`` to ``[-1, 4]`` are left to run time; ``squeeze`` without axes of a
symbolic dimension is an error, as the result's rank would depend on it) and binds unknown dimensions
where an equation determines them. Dimensions that must be equal (``concatenate`` off its axis,
``stack``, ``take``'s batch dimensions) are unified as types are: distinct shape variables
differ.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar as PyTypeVar

import numpy as np

from relay.errors import CompileError
from relay.ir import dim
from relay.ir.attrs import Attrs
from relay.ir.dim import Dim
from relay.ir.expr import Call, Expr, Tuple, TupleGetItem, const
from relay.ir.types import (
    DTYPES,
    Any as AnyDim,
    IncompleteType,
    TensorType,
    TupleType,
    Type,
    _AnyDim,
)
from relay.op.registry import (
    AttrValidationError,
    OpDef,
    OpPattern,
    attr,
    gradient_rule,
    jvp_rule,
    non_differentiable,
    op_call,
    register_op,
)
from relay.op.tensor import (
    carries_gradient,
    known_extent,
    known_type,
    linear_in_first_jvp,
    linear_jvp,
    tuple_fields,
)
from relay.typecheck.relation import (
    ForwardRule,
    RelationError,
    RelationFunc,
    Reporter,
    forward,
    is_dtype,
    is_known,
    normalize_axis,
    shape_str,
    tensor_arg,
    tuple_of_tensors,
)

Array = np.ndarray
_D = PyTypeVar("_D")  # a dimension: an int in the references, a Dim in the relations

__all__ = [
    "MAX_BYTES",
    "MAX_RANK",
    "broadcast_to",
    "broadcast_to_like",
    "check_shape_limits",
    "collapse_sum_axes",
    "collapse_sum_like",
    "concatenate",
    "expand_dims",
    "infer_reshape",
    "layout_transform",
    "layout_transform_shape",
    "may_broadcast",
    "one_hot",
    "parse_layout",
    "repeat",
    "reshape",
    "reshape_dims",
    "reshape_like",
    "reshape_like_shape",
    "reverse",
    "shape_limit_error",
    "shape_of",
    "split",
    "split_extents",
    "squeeze",
    "stack",
    "strided_slice",
    "strided_slice_shape",
    "take",
    "tile",
    "transpose",
]


# ---- shared helpers -----------------------------------------------------------------------------


def _list_str(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _norm_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` (negative counts from the end) as an index into ``ndim`` dimensions."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _norm_insert_axis(axis: int, ndim: int) -> int:
    """``axis`` as a position to insert a new dimension among ``ndim`` (``-1``: last)."""
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(
            f"axis {axis} is out of range for inserting a dimension into a tensor of rank {ndim}"
        )
    return axis + ndim + 1 if axis < 0 else axis


def _tensors(data: object, what: str) -> tuple[Array, ...]:
    """The fields of a tuple input (concatenate, stack) as arrays."""
    if isinstance(data, np.ndarray):
        raise ValueError(f"{what} takes a tuple of tensors, not a tensor")
    if not isinstance(data, tuple | list) or not all(
        isinstance(a, np.ndarray | np.generic) for a in data
    ):
        raise ValueError(f"{what} takes a tuple of tensors")
    arrays = tuple(np.asarray(a) for a in data)
    if not arrays:
        raise ValueError(f"{what} needs at least one tensor")
    dtypes = {str(a.dtype) for a in arrays}
    if len(dtypes) > 1:
        raise ValueError(f"{what} needs tensors of one dtype, got {', '.join(sorted(dtypes))}")
    return arrays


def _ints(value: object) -> tuple[int, ...]:
    """An ``ints`` attribute value, typed."""
    assert isinstance(value, tuple) and all(isinstance(v, int) for v in value)
    return tuple(int(v) for v in value)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AttrValidationError(message)


MAX_RANK = 64
"""The largest rank of a tensor (numpy's limit): a relation rejects a result of a higher rank."""

MAX_BYTES = 2**63 - 1
"""The largest size of a tensor in bytes (numpy's limit on ``size * itemsize``, zero dimensions
left out): a relation rejects a result whose known dimensions make it bigger."""


def _itemsize(dtype: object) -> int:
    """The bytes per element of a dtype name (1 when the dtype is not known yet)."""
    if not isinstance(dtype, str) or dtype == "bool":
        return 1
    bits = re.search(r"\d+", dtype)
    return int(bits.group()) // 8 if bits else 1


def shape_limit_error(shape: Sequence[Dim], dtype: object = None) -> str | None:
    """Why no tensor of ``shape`` (and ``dtype``) can exist, or None: a rank above
    :data:`MAX_RANK`, or integer dimensions whose product (zeros left out, as numpy does)
    times the element size exceeds :data:`MAX_BYTES`. Symbolic dimensions count as unknown."""
    if len(shape) > MAX_RANK:
        return f"the result would have rank {len(shape)}, above the maximum rank {MAX_RANK}"
    size = _itemsize(dtype)
    for d in shape:
        if isinstance(d, int) and d > 0:
            size *= d
            if size > MAX_BYTES:
                of = f" of {dtype}" if isinstance(dtype, str) else ""
                return (
                    f"the result shape {shape_str(shape)}{of} is too big "
                    f"(more than 2**63 - 1 bytes)"
                )
    return None


def check_shape_limits(op: str, t: Type) -> Type:
    """``t``, or a RelationError when a tensor in it breaks :func:`shape_limit_error`."""
    for ty in t.fields if isinstance(t, TupleType) else (t,):
        if isinstance(ty, TensorType):
            why = shape_limit_error(ty.shape, ty.dtype)
            if why is not None:
                raise RelationError(f"{op}: {why}")
    return t


# ---- reshape ------------------------------------------------------------------------------------


def _check_newshape(attrs: Attrs) -> None:
    newshape = _ints(attrs["newshape"])
    minus_ones = 0
    i = 0
    while i < len(newshape):
        v = newshape[i]
        _check(v >= -4, f"reshape: invalid newshape value {v} (special values are 0, -1 .. -4)")
        minus_ones += v == -1
        if v == -4:
            _check(
                i + 2 < len(newshape),
                "reshape: -4 in newshape must be followed by two dimensions",
            )
            a, b = newshape[i + 1], newshape[i + 2]
            _check(
                (a > 0 or a == -1) and (b > 0 or b == -1) and (a, b) != (-1, -1),
                f"reshape: -4 splits into two dimensions, positive or one -1, got {a} and {b}",
            )
            i += 2
        i += 1
    _check(minus_ones <= 1, f"reshape: newshape {_list_str(newshape)} has more than one -1")


class _NewshapeError(ValueError):
    """A ``newshape`` that does not fit the input: the message names the input shape and
    ``newshape`` (the reference's error), ``reason`` says why in a relation's message."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def reshape_dims(
    shape: Sequence[Dim], newshape: Sequence[int], allowzero: bool = False
) -> tuple[Dim, ...]:
    """The dimensions Relay's ``reshape`` gives a tensor of ``shape`` for ``newshape``.

    Dimensions may be symbolic (:mod:`relay.ir.dim`): ``0`` copies, ``-3`` multiplies
    and ``-1`` divides them (``(n, 784)`` with ``[-1, 28, 28]`` gives ``(n, 28, 28)``).
    Raises ``ValueError`` when ``newshape`` does not fit the rank of ``shape`` or a
    division is provably inexact; the total element count is not checked (see
    :func:`infer_reshape`).

    >>> reshape_dims((2, 3, 4), [0, -1])
    (2, 12)
    """
    given = _list_str(newshape)
    out: list[Dim] = []
    used_in: set[int] = set()
    inferred: set[int] = set()  # output positions with their extent taken from the input
    src = 0
    infer_at = -1
    i = 0
    while i < len(newshape):
        v = int(newshape[i])
        if v > 0 or (v == 0 and allowzero):
            out.append(v)
            src += 1
        elif v == 0:
            if src >= len(shape):
                raise _NewshapeError(
                    f"newshape {given} copies input dimension {src} with 0, "
                    f"but the input shape {shape_str(shape)} has rank {len(shape)}",
                    f"0 copies input dimension {src}, but the rank is {len(shape)}",
                )
            used_in.add(src)
            inferred.add(len(out))
            out.append(shape[src])
            src += 1
        elif v == -1:
            if infer_at >= 0:
                raise _NewshapeError(f"newshape {given} has more than one -1", "more than one -1")
            infer_at = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            for d in range(src, len(shape)):
                used_in.add(d)
                inferred.add(len(out))
                out.append(shape[d])
            src = max(src, len(shape))
        elif v == -3:
            if src + 1 >= len(shape):
                raise _NewshapeError(
                    f"newshape {given} merges input dimensions {src} and {src + 1} with -3, "
                    f"but the input shape {shape_str(shape)} has rank {len(shape)}",
                    f"-3 merges input dimensions {src} and {src + 1}, but the rank is {len(shape)}",
                )
            used_in.update((src, src + 1))
            inferred.add(len(out))
            out.append(dim.mul(shape[src], shape[src + 1]))
            src += 2
        elif v == -4:
            if i + 2 >= len(newshape):
                raise _NewshapeError(
                    f"newshape {given}: -4 must be followed by two dimensions",
                    "-4 must be followed by two dimensions",
                )
            if src >= len(shape):
                raise _NewshapeError(
                    f"newshape {given} splits input dimension {src} with -4, "
                    f"but the input shape {shape_str(shape)} has rank {len(shape)}",
                    f"-4 splits input dimension {src}, but the rank is {len(shape)}",
                )
            d0 = shape[src]
            a, b = int(newshape[i + 1]), int(newshape[i + 2])
            if (a, b) == (-1, -1) or a == 0 or b == 0 or a < -1 or b < -1:
                reason = f"-4 splits into two dimensions, positive or one -1, got {a} and {b}"
                raise _NewshapeError(f"newshape {given}: {reason}", reason)
            da: Dim = _exact_div(d0, b, given) if a == -1 else a
            db: Dim = _exact_div(d0, a, given) if b == -1 else b
            if dim.equal(dim.mul(da, db), d0) is False:
                split = f"{dim.dim_str(da)} x {dim.dim_str(db)}"
                raise _NewshapeError(
                    f"newshape {given} splits input dimension {src} of size {dim.dim_str(d0)} "
                    f"into {split} with -4",
                    f"-4 splits input dimension {src} of size {dim.dim_str(d0)} into {split}",
                )
            used_in.add(src)
            inferred.update((len(out), len(out) + 1))
            out.extend((da, db))
            src += 1
            i += 2
        else:
            raise _NewshapeError(f"newshape {given} has invalid value {v}", f"invalid value {v}")
        i += 1
    if infer_at >= 0:
        rest_in = dim.product([d for k, d in enumerate(shape) if k not in used_in])
        rest_out = dim.product(
            [d for k, d in enumerate(out) if k not in inferred and k != infer_at]
        )
        if rest_out == 0:
            raise _NewshapeError(
                f"cannot infer the -1 of newshape {given} for input shape {shape_str(shape)}: "
                "another output dimension is 0",
                "the -1 cannot be inferred: another output dimension is 0",
            )
        assert isinstance(rest_out, int)  # a product of newshape's literal values
        out[infer_at] = _exact_div(rest_in, rest_out, given)
    return tuple(out)


def infer_reshape(
    shape: Sequence[Dim], newshape: Sequence[int], allowzero: bool = False
) -> tuple[Dim, ...]:
    """The output shape of Relay's ``reshape`` of a tensor of ``shape`` to ``newshape``.

    >>> infer_reshape((2, 3, 4), [0, -1])
    (2, 12)
    >>> infer_reshape((2, 3, 4), [-4, 1, 2, -3])
    (1, 2, 12)

    Raises ``ValueError`` when ``newshape`` does not fit ``shape``: see :func:`reshape_dims`;
    with symbolic dimensions, the element counts differ only when that is decidable.
    """
    out = reshape_dims(shape, newshape, allowzero)
    size_in, size_out = dim.product(list(shape)), dim.product(out)
    if dim.equal(size_in, size_out) is False:
        raise ValueError(
            f"cannot reshape a tensor of shape {shape_str(shape)} ({dim.dim_str(size_in)} "
            f"elements) to newshape {_list_str(newshape)} (shape {shape_str(out)}, "
            f"{dim.dim_str(size_out)} elements)"
        )
    return out


def _exact_div(a: Dim, b: int, given: str) -> Dim:
    """``a // b``, or a ValueError when ``b`` provably does not divide ``a``."""
    remainder = dim.floormod(a, b) if b else 1
    if isinstance(remainder, int) and remainder:
        raise _NewshapeError(
            f"newshape {given}: cannot divide a dimension of {dim.dim_str(a)} by {b}",
            f"{dim.dim_str(a)} is not a multiple of {b}",
        )
    return dim.floordiv(a, b)


def _concrete(shape: Sequence[Dim]) -> tuple[int, ...]:
    """A shape computed from integers, as integers."""
    assert all(isinstance(d, int) for d in shape)
    return tuple(d for d in shape if isinstance(d, int))


def _reshape(data: Array, *, newshape: tuple[int, ...], allowzero: bool) -> Array:
    _check_newshape(Attrs(newshape=newshape))
    return np.reshape(data, _concrete(infer_reshape(data.shape, newshape, allowzero)))


def reshape_like_shape(
    lhs_shape: Sequence[_D],
    rhs_shape: Sequence[_D],
    lhs_begin: int = 0,
    lhs_end: int | None = None,
    rhs_begin: int = 0,
    rhs_end: int | None = None,
) -> tuple[_D, ...]:
    """``lhs_shape`` with ``lhs_shape[lhs_begin:lhs_end]`` replaced by
    ``rhs_shape[rhs_begin:rhs_end]`` (negative bounds count from the end), as Relay's
    ``reshape_like`` computes its shape.

    The dimensions may be integers or symbolic; raises ``ValueError`` for a bound out of range.
    """

    def bound(value: int | None, default: int, n: int, what: str) -> int:
        v = default if value is None else value + n if value < 0 else value
        if not 0 <= v <= n:
            raise ValueError(f"{what} {value} is out of range for a tensor of rank {n}")
        return v

    nl, nr = len(lhs_shape), len(rhs_shape)
    lb, le = bound(lhs_begin, 0, nl, "lhs_begin"), bound(lhs_end, nl, nl, "lhs_end")
    rb, re_ = bound(rhs_begin, 0, nr, "rhs_begin"), bound(rhs_end, nr, nr, "rhs_end")
    if lb > le:
        raise ValueError(f"lhs_begin {lhs_begin} is after lhs_end {lhs_end}")
    if rb > re_:
        raise ValueError(f"rhs_begin {rhs_begin} is after rhs_end {rhs_end}")
    return (*lhs_shape[:lb], *rhs_shape[rb:re_], *lhs_shape[le:])


def _reshape_like(
    data: Array,
    shape_like: Array,
    *,
    lhs_begin: int,
    lhs_end: int | None,
    rhs_begin: int,
    rhs_end: int | None,
) -> Array:
    shape: tuple[int, ...] = reshape_like_shape(
        data.shape, shape_like.shape, lhs_begin, lhs_end, rhs_begin, rhs_end
    )
    if math.prod(shape) != data.size:
        raise ValueError(
            f"cannot reshape a tensor of shape {shape_str(data.shape)} ({data.size} elements) "
            f"to shape {shape_str(shape)} ({math.prod(shape)} elements)"
        )
    return np.reshape(data, shape)


# ---- axis permutations and insertions -----------------------------------------------------------


def _transpose(data: Array, *, axes: tuple[int, ...] | None) -> Array:
    if axes is None:
        return np.transpose(data)
    if len(axes) != data.ndim:
        raise ValueError(
            f"transpose axes {_list_str(axes)} must name each of the {data.ndim} axes once"
        )
    perm = [_norm_axis(a, data.ndim) for a in axes]
    if sorted(perm) != list(range(data.ndim)):
        raise ValueError(f"transpose axes {_list_str(axes)} are not a permutation")
    return np.transpose(data, perm)


def _check_expand_dims(attrs: Attrs) -> None:
    n = attrs["num_newaxis"]
    assert isinstance(n, int)
    _check(n >= 0, f"expand_dims: num_newaxis must be >= 0, got {n}")
    _check(n <= MAX_RANK, f"expand_dims: num_newaxis {n} is above the maximum rank {MAX_RANK}")


def _expand_dims(data: Array, *, axis: int, num_newaxis: int) -> Array:
    _check_expand_dims(Attrs(num_newaxis=num_newaxis))
    at = _norm_insert_axis(axis, data.ndim)
    return np.reshape(data, (*data.shape[:at], *([1] * num_newaxis), *data.shape[at:]))


def _squeeze(data: Array, *, axis: tuple[int, ...] | None) -> Array:
    if axis is None:
        return np.reshape(data, tuple(d for d in data.shape if d != 1))
    axes = [_norm_axis(a, data.ndim) for a in axis]
    if len(set(axes)) != len(axes):
        raise ValueError(f"squeeze axis {_list_str(axis)} repeats an axis")
    for a in axes:
        if data.shape[a] != 1:
            raise ValueError(
                f"cannot squeeze axis {a} of shape {shape_str(data.shape)}: its size is "
                f"{data.shape[a]}, not 1"
            )
    return np.reshape(data, tuple(d for k, d in enumerate(data.shape) if k not in axes))


# ---- broadcasting and its adjoint ---------------------------------------------------------------


def may_broadcast(src: Sequence[Dim], dst: Sequence[Dim]) -> bool:
    """Whether a tensor of shape ``src`` may broadcast to ``dst`` (numpy rules): False when it
    provably cannot (a dimension that is neither 1 nor the target's), else True."""
    if len(src) > len(dst):
        return False
    return not any(
        dim.equal(s, 1) is False and dim.equal(s, t) is False
        for s, t in zip(src[::-1], dst[::-1], strict=False)
    )


def _broadcast(data: Array, shape: Sequence[int]) -> Array:
    shape = tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"broadcast_to shape {shape_str(shape)} has a negative dimension")
    if not may_broadcast(data.shape, shape):
        raise ValueError(
            f"cannot broadcast a tensor of shape {shape_str(data.shape)} to {shape_str(shape)}"
        )
    return np.array(np.broadcast_to(data, shape))


def _broadcast_to(data: Array, *, shape: tuple[int, ...]) -> Array:
    return _broadcast(data, shape)


def _broadcast_to_like(data: Array, broadcast_type: Array) -> Array:
    return _broadcast(data, broadcast_type.shape)


def collapse_sum_axes(data_shape: Sequence[Dim], target: Sequence[Dim]) -> tuple[int, ...]:
    """The axes of ``data_shape`` that ``collapse_sum`` to ``target`` sums over; raises
    ``ValueError`` unless ``target`` may broadcast to ``data_shape`` (:func:`may_broadcast`).

    With symbolic dimensions, the axes are those known to be summed: the leading ones and
    those where ``target`` has a 1 and ``data_shape`` a dimension that is not provably 1.
    """
    if not may_broadcast(target, data_shape):
        raise ValueError(
            f"cannot collapse a tensor of shape {shape_str(data_shape)} to "
            f"{shape_str(target)}: the target does not broadcast to it"
        )
    lead = len(data_shape) - len(target)
    kept = (
        lead + k
        for k, t in enumerate(target)
        if dim.equal(t, 1) is True and dim.equal(data_shape[lead + k], 1) is not True
    )
    return (*range(lead), *kept)


def _collapse_sum_like(data: Array, collapse_type: Array) -> Array:
    target = collapse_type.shape
    axes = collapse_sum_axes(data.shape, target)
    summed = np.sum(data, axis=axes, dtype=data.dtype) if axes else data
    return np.reshape(np.asarray(summed, dtype=data.dtype), target)


# ---- joining and splitting ----------------------------------------------------------------------


def _concatenate(data: tuple[Array, ...], *, axis: int) -> Array:
    arrays = _tensors(data, "concatenate")
    ndim = arrays[0].ndim
    if ndim == 0 or any(a.ndim != ndim for a in arrays):
        ranks = ", ".join(str(a.ndim) for a in arrays)
        raise ValueError(f"concatenate needs tensors of one rank, at least 1, got ranks {ranks}")
    ax = _norm_axis(axis, ndim)
    first = arrays[0].shape
    for a in arrays[1:]:
        if any(d != e for k, (d, e) in enumerate(zip(a.shape, first, strict=True)) if k != ax):
            raise ValueError(
                f"concatenate along axis {ax}: shapes {shape_str(first)} and "
                f"{shape_str(a.shape)} differ on another axis"
            )
    return np.concatenate(arrays, axis=ax)


def _stack(data: tuple[Array, ...], *, axis: int) -> Array:
    arrays = _tensors(data, "stack")
    first = arrays[0].shape
    for a in arrays[1:]:
        if a.shape != first:
            raise ValueError(
                f"stack needs tensors of one shape, got {shape_str(first)} and {shape_str(a.shape)}"
            )
    return np.stack(arrays, axis=_norm_insert_axis(axis, len(first)))


def _check_split(attrs: Attrs) -> None:
    ios = attrs["indices_or_sections"]
    if isinstance(ios, int):
        _check(ios > 0, f"split: the number of sections must be positive, got {ios}")
        return
    indices = _ints(ios)
    _check(
        all(b > a for a, b in zip((0, *indices), indices, strict=False)),
        f"split: indices must be positive and strictly increasing, got {_list_str(indices)}",
    )


def split_extents(n: Dim, indices_or_sections: int | Sequence[int], axis: int) -> list[Dim]:
    """The extents along ``axis`` (of size ``n``) of the pieces ``split`` makes.

    ``n`` may be symbolic: equal sections divide it with :func:`relay.ir.dim.floordiv`, the last
    piece after indices is ``n - index``. Raises ``ValueError`` when sections provably do not
    divide ``n`` or an index is not below a known ``n``.
    """
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        remainder = dim.floormod(n, sections)
        if isinstance(remainder, int) and remainder:
            raise ValueError(
                f"cannot split axis {axis} of size {dim.dim_str(n)} into {sections} equal sections"
            )
        return [dim.floordiv(n, sections)] * sections
    indices = list(indices_or_sections)
    if indices and isinstance(n, int) and indices[-1] >= n:
        raise ValueError(
            f"split indices {_list_str(indices)} must be less than the size {n} of axis {axis}"
        )
    bounds: list[Dim] = [0, *indices, n]
    return [dim.sub(b, a) for a, b in itertools.pairwise(bounds)]


def _split(
    data: Array, *, indices_or_sections: int | tuple[int, ...], axis: int
) -> tuple[Array, ...]:
    _check_split(Attrs(indices_or_sections=indices_or_sections))
    if data.ndim == 0:
        raise ValueError("cannot split a tensor of rank 0")
    ax = _norm_axis(axis, data.ndim)
    split_extents(data.shape[ax], indices_or_sections, ax)
    if isinstance(indices_or_sections, int):
        return tuple(np.split(data, indices_or_sections, axis=ax))
    return tuple(np.split(data, list(indices_or_sections), axis=ax))


# ---- slicing and gathering ----------------------------------------------------------------------


def _check_strided_slice(attrs: Attrs) -> None:
    begin, end, strides, axes = attrs["begin"], attrs["end"], attrs["strides"], attrs["axes"]
    assert isinstance(begin, tuple) and isinstance(end, tuple)
    if strides is not None:
        assert isinstance(strides, tuple)
        _check(all(s != 0 for s in strides), "strided_slice: strides must be nonzero")
    if axes is not None:
        assert isinstance(axes, tuple)
        same = len(begin) == len(end) == len(axes) and (
            strides is None or len(strides) == len(axes)
        )
        _check(same, "strided_slice: begin, end, strides and axes must have the same length")
        _check(len(set(axes)) == len(axes), "strided_slice: axes must be distinct")


def _canonical_index(index: int, extent: int, stride: int) -> int:
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, lo), hi)


_INT32_MAX = 2**31 - 1  # an end this far out means "to the end", as in Relay's frontends


def _stride(k: int, strides: Sequence[int] | None, slice_mode: str) -> int:
    """The stride of the ``k``-th sliced axis (1 when omitted, and always in size mode)."""
    return 1 if slice_mode == "size" or strides is None or k >= len(strides) else strides[k]


def _slice_range(
    n: int,
    k: int,
    begin: Sequence[int],
    end: Sequence[int],
    stride: int,
    slice_mode: str,
) -> tuple[int, int]:
    """The canonical begin and end of the ``k``-th sliced axis, of extent ``n``.

    A slice that selects nothing (a begin at or past the end in the stride's direction) has
    its end moved to its begin, so that ``abs(e - b)`` is 0, as for numpy's empty slices.
    """
    b = 0 if stride > 0 else n - 1
    if k < len(begin):
        b = _canonical_index(begin[k], n, stride)
    if k >= len(end):
        e = n if stride > 0 else -1
    elif slice_mode == "size":
        e = n if end[k] < 0 else min(b + end[k], n)
    else:
        e = _canonical_index(end[k], n, stride)
    if (stride > 0 and b > e) or (stride < 0 and e > b):
        e = b
    return b, e


def _covers_axis(k: int, begin: Sequence[int], end: Sequence[int], stride: int, mode: str) -> bool:
    """Whether the ``k``-th slice takes every ``|stride|``-th element of its axis, whatever
    the axis's extent: begin and end omitted or at the axis's ends."""
    if mode == "size":
        return (k >= len(begin) or begin[k] == 0) and (k >= len(end) or end[k] < 0)
    if stride > 0:
        return (k >= len(begin) or begin[k] == 0) and (k >= len(end) or end[k] >= _INT32_MAX)
    first = k >= len(begin) or begin[k] == -1 or begin[k] >= _INT32_MAX
    return first and (k >= len(end) or end[k] < -_INT32_MAX)


def strided_slice_shape(
    shape: Sequence[Dim],
    sliced: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None,
    slice_mode: str,
) -> tuple[Dim, ...]:
    """The shape of ``strided_slice`` of a tensor of ``shape`` on the axes ``sliced``.

    An integer extent gives the exact size (Relay's canonicalization: negative indices count
    from the end, then clamp). A symbolic extent ``n`` gives ``ceildiv(n, |stride|)`` when the
    slice covers the whole axis (begin and end omitted, at 0 / -1, or beyond int32), and
    ``Any`` otherwise, since the size then depends on clamping to ``n``. A slice that selects
    nothing gives 0, as numpy does.
    """
    out = list(shape)
    for k, ax in enumerate(sliced):
        n = shape[ax]
        stride = _stride(k, strides, slice_mode)
        if isinstance(n, int):
            b, e = _slice_range(n, k, begin, end, stride, slice_mode)
            out[ax] = -(-abs(e - b) // abs(stride))
        elif _covers_axis(k, begin, end, stride, slice_mode):
            out[ax] = dim.ceildiv(n, abs(stride))
        else:
            out[ax] = AnyDim
    return tuple(out)


def _strided_slice(
    data: Array,
    *,
    begin: tuple[int, ...],
    end: tuple[int, ...],
    strides: tuple[int, ...] | None,
    axes: tuple[int, ...] | None,
    slice_mode: str,
) -> Array:
    _check_strided_slice(
        Attrs(begin=begin, end=end, strides=strides, axes=axes, slice_mode=slice_mode)
    )
    ndim = data.ndim
    if axes is None:
        longest = max(len(begin), len(end), len(strides or ()))
        if longest > ndim:
            raise ValueError(
                f"strided_slice of a tensor of rank {ndim} got {longest} begin/end/stride values"
            )
        sliced = list(range(longest))
    else:
        sliced = [_norm_axis(a, ndim) for a in axes]
        if len(set(sliced)) != len(sliced):
            raise ValueError(f"strided_slice axes {_list_str(axes)} repeat an axis")
    index: list[slice] = [slice(None)] * ndim
    for k, ax in enumerate(sliced):
        stride = _stride(k, strides, slice_mode)
        b, e = _slice_range(data.shape[ax], k, begin, end, stride, slice_mode)
        # a canonical index of -1 lies before the first element (negative strides only)
        index[ax] = slice(0, 0) if b < 0 else slice(b, None if e < 0 else e, stride)
    return np.array(data[tuple(index)])


def _take(data: Array, indices: Array, *, batch_dims: int, axis: int | None, mode: str) -> Array:
    if not (np.issubdtype(indices.dtype, np.integer) or indices.dtype == np.bool_):
        raise ValueError(f"take needs integer indices, got {indices.dtype}")
    idx = indices.astype(np.int64)
    if axis is None:
        data = np.reshape(data, (-1,))
        ax, bd = 0, 0
    else:
        ax = _norm_axis(axis, data.ndim)
        bd = batch_dims + idx.ndim if batch_dims < 0 else batch_dims
        if not 0 <= bd <= min(idx.ndim, ax):
            raise ValueError(
                f"take batch_dims {batch_dims} must be in range for indices of rank {idx.ndim} "
                f"and at most the axis {ax}"
            )
        if data.shape[:bd] != idx.shape[:bd]:
            raise ValueError(
                f"take with batch_dims {bd}: data shape {shape_str(data.shape)} and indices "
                f"shape {shape_str(idx.shape)} differ on the batch dimensions"
            )
    n = data.shape[ax]
    if idx.size and n == 0:
        raise ValueError(f"take from axis {ax} of size 0")
    if mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    elif mode == "wrap":
        idx = np.mod(idx, n) if n else idx
    elif idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx[(idx < 0) | (idx >= n)].flat[0])
        raise ValueError(
            f'take index {bad} is out of range for axis {ax} of size {n} (mode "fast")'
        )
    if bd == 0:
        return np.asarray(np.take(data, idx, axis=ax))
    batch = data.shape[:bd]
    out = np.empty((*data.shape[:ax], *idx.shape[bd:], *data.shape[ax + 1 :]), dtype=data.dtype)
    for b in np.ndindex(*batch):
        out[b] = np.take(data[b], idx[b], axis=ax - bd)
    return out


# ---- repetition and reversal --------------------------------------------------------------------


def _check_repeat(attrs: Attrs) -> None:
    repeats = attrs["repeats"]
    assert isinstance(repeats, int)
    _check(repeats >= 1, f"repeat: repeats must be at least 1, got {repeats}")
    _check(repeats <= MAX_BYTES, f"repeat: repeats must be at most 2**63 - 1, got {repeats}")


def _check_tile(attrs: Attrs) -> None:
    reps = _ints(attrs["reps"])
    _check(all(r >= 1 for r in reps), f"tile: reps must be at least 1, got {_list_str(reps)}")
    _check(
        len(reps) <= MAX_RANK,
        f"tile: reps has {len(reps)} values, above the maximum rank {MAX_RANK}",
    )


def _fits(op: str, shape: Sequence[int], data: Array) -> None:
    """A ValueError when no array of ``shape`` and ``data``'s dtype can exist (checked before
    numpy computes it: its size arithmetic may overflow, and ``np.repeat`` then writes past
    the array it allocated)."""
    why = shape_limit_error(shape, str(data.dtype))
    if why is not None:
        raise ValueError(f"{op}: {why}")


def _repeat(data: Array, *, repeats: int, axis: int) -> Array:
    _check_repeat(Attrs(repeats=repeats))
    ax = _norm_axis(axis, data.ndim)
    _fits("repeat", [d * repeats if k == ax else d for k, d in enumerate(data.shape)], data)
    return np.repeat(data, repeats, axis=ax)


def _tile(data: Array, *, reps: tuple[int, ...]) -> Array:
    _check_tile(Attrs(reps=reps))
    if not reps:
        return np.array(data)
    rank = max(len(reps), data.ndim)
    full = (1,) * (rank - len(reps)) + reps
    shape = (1,) * (rank - data.ndim) + data.shape
    _fits("tile", [d * k for d, k in zip(shape, full, strict=True)], data)
    return np.array(np.tile(data, reps))


def _reverse(data: Array, *, axis: int) -> Array:
    return np.flip(data, _norm_axis(axis, data.ndim))


# ---- layouts ------------------------------------------------------------------------------------

_LAYOUT_AXIS = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> tuple[tuple[str, int], ...]:
    """The axes of a Relay layout: ``(letter, 0)`` for a primal (upper-case) axis,
    ``(letter, factor)`` for a sub-axis, upper-cased: ``"NCHW8c"`` gives
    ``(("N", 0), ("C", 0), ("H", 0), ("W", 0), ("C", 8))``.

    Raises :class:`~relay.op.registry.AttrValidationError` for a malformed layout.
    """
    axes: list[tuple[str, int]] = []
    pos = 0
    while pos < len(layout):
        m = _LAYOUT_AXIS.match(layout, pos)
        _check(m is not None, f"invalid layout {layout!r}: unexpected {layout[pos]!r}")
        assert m is not None
        digits, letter = m.groups()
        if letter.isupper():
            _check(not digits, f"invalid layout {layout!r}: primal axis {letter} has a factor")
            axes.append((letter, 0))
        else:
            _check(
                bool(digits) and int(digits) > 0,
                f"invalid layout {layout!r}: sub-axis {letter} needs a positive factor",
            )
            axes.append((letter.upper(), int(digits)))
        pos = m.end()
    seen_primal = {a for a, f in axes if f == 0}
    _check(
        len(seen_primal) == sum(1 for _, f in axes if f == 0),
        f"invalid layout {layout!r}: a primal axis appears twice",
    )
    subs = [a for a, f in axes if f]
    _check(len(set(subs)) == len(subs), f"invalid layout {layout!r}: a sub-axis appears twice")
    for a in subs:
        _check(a in seen_primal, f"invalid layout {layout!r}: sub-axis {a.lower()} has no {a}")
    return tuple(axes)


def _check_layouts(attrs: Attrs) -> None:
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    assert isinstance(src, str) and isinstance(dst, str)
    s, d = parse_layout(src), parse_layout(dst)
    _check(
        {a for a, f in s if f == 0} == {a for a, f in d if f == 0},
        f"layout_transform: layouts {src} and {dst} have different primal axes",
    )


@dataclass(frozen=True, slots=True)
class _LayoutPlan:
    """How ``layout_transform`` moves a tensor: transpose by ``perm`` and reshape to
    ``extents`` (the primal form), reshape to ``blocked`` (the destination's axes in primal
    order), then transpose by ``order``."""

    perm: tuple[int, ...]
    extents: tuple[Dim, ...]
    blocked: tuple[Dim, ...]
    order: tuple[int, ...]


def _layout_plan(shape: Sequence[Dim], src_layout: str, dst_layout: str) -> _LayoutPlan:
    """The plan of moving a tensor of ``shape`` (maybe symbolic) between two layouts.

    Raises ``ValueError`` when the rank differs from the source layout's, a sub-axis's size
    provably differs from its factor, or a factor provably does not divide its axis.
    """
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    if len(shape) != len(src):
        raise ValueError(
            f"layout {src_layout} has {len(src)} axes but the tensor has rank {len(shape)}"
        )
    where = {ax: k for k, ax in enumerate(src)}
    for (letter, factor), k in where.items():
        if factor and dim.equal(shape[k], factor) is False:
            raise ValueError(
                f"axis {factor}{letter.lower()} of layout {src_layout} has size "
                f"{dim.dim_str(shape[k])} in a tensor of shape {shape_str(shape)}"
            )
    # to the primal form: each primal axis followed by its sub-axis, merged
    primal = [a for a, f in src if f == 0]
    perm: list[int] = []
    extents: list[Dim] = []
    for letter in primal:
        outer = where[(letter, 0)]
        inner = [k for (a, f), k in where.items() if a == letter and f]
        perm.extend([outer, *inner])
        extents.append(dim.product([shape[k] for k in (outer, *inner)]))
    # split by the destination's factors, then permute into its order
    factors = {a: f for a, f in dst if f}
    blocked: list[Dim] = []
    names: list[tuple[str, int]] = []
    for letter, extent in zip(primal, extents, strict=True):
        f = factors.get(letter)
        if f is None:
            blocked.append(extent)
            names.append((letter, 0))
        else:
            remainder = dim.floormod(extent, f)
            if isinstance(remainder, int) and remainder:
                raise ValueError(
                    f"axis {letter} of size {dim.dim_str(extent)} does not divide into blocks "
                    f"of {f} for layout {dst_layout}"
                )
            blocked.extend((dim.floordiv(extent, f), f))
            names.extend(((letter, 0), (letter, f)))
    order = tuple(names.index(ax) for ax in dst)
    return _LayoutPlan(tuple(perm), tuple(extents), tuple(blocked), order)


def layout_transform_shape(
    shape: Sequence[Dim], src_layout: str, dst_layout: str
) -> tuple[Dim, ...]:
    """The shape of a tensor of ``shape`` in ``src_layout`` moved to ``dst_layout``: ``(n, c,
    h, w)`` from ``NCHW`` to ``NCHW16c`` gives ``(n, c // 16, h, w, 16)``.

    Dimensions may be symbolic; raises ``ValueError`` as :func:`parse_layout` does and when
    the shape provably does not fit the layouts.
    """
    plan = _layout_plan(shape, src_layout, dst_layout)
    return tuple(plan.blocked[k] for k in plan.order)


def _layout_transform(data: Array, *, src_layout: str, dst_layout: str) -> Array:
    _check_layouts(Attrs(src_layout=src_layout, dst_layout=dst_layout))
    plan = _layout_plan(data.shape, src_layout, dst_layout)
    flat = np.reshape(np.transpose(data, plan.perm), _concrete(plan.extents))
    blocked = np.reshape(flat, _concrete(plan.blocked))
    return np.array(np.transpose(blocked, plan.order))


# ---- shape queries and one-hot ------------------------------------------------------------------


def _np_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype of a Relay dtype name (bfloat16 is ``ml_dtypes``')."""
    if name == "bfloat16":
        import ml_dtypes

        bf16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bf16
    return np.dtype(name)


def _shape_of(data: Array, *, dtype: str) -> Array:
    return np.asarray(data.shape, dtype=dtype).reshape((data.ndim,))


def _one_hot(
    indices: Array, on_value: Array, off_value: Array, *, depth: int, axis: int, dtype: str
) -> Array:
    _check(depth > 0, f"one_hot: depth must be positive, got {depth}")
    if not np.issubdtype(indices.dtype, np.integer):
        raise ValueError(f"one_hot needs integer indices, got {indices.dtype}")
    for name, v in (("on_value", on_value), ("off_value", off_value)):
        if np.ndim(v) != 0:
            raise ValueError(f"one_hot {name} must be a scalar, got shape {shape_str(v.shape)}")
    at = _norm_insert_axis(axis, indices.ndim)
    out_dtype = _np_dtype(dtype)
    on, off = np.asarray(on_value, dtype=out_dtype), np.asarray(off_value, dtype=out_dtype)
    # Only the result is allocated (depth may be large): off_value everywhere, then on_value at
    # each index in range, with the new axis last; then that axis is moved to its place.
    flat = np.full((indices.size, depth), off, dtype=out_dtype)
    idx = indices.reshape(-1).astype(np.int64)
    rows = np.flatnonzero((idx >= 0) & (idx < depth))
    flat[rows, idx[rows]] = on
    out = np.moveaxis(flat.reshape((*indices.shape, depth)), -1, at)
    return np.ascontiguousarray(out)


# ---- type relations -----------------------------------------------------------------------------
#
# Each relation's docstring is its type rule on one line (docs/operators.md is generated from
# them). Relations check on types what the references check on arrays, sharing their shape
# logic (reshape_dims, reshape_like_shape, may_broadcast, split_extents, strided_slice_shape,
# layout_transform_shape) extended to symbolic dimensions: a call a relation accepts with
# concrete shapes is one the reference runs, and the result type is that of the reference's
# output. With symbolic dimensions a relation rejects only what is provably wrong, binds
# unknown dimensions where an equation determines them, and leaves the rest to run time;
# dimensions that must be equal (concatenate, stack, take's batch) are unified as types are.


def _check_attr_values(op: str, attrs: Attrs) -> None:
    """The builders' attribute value checks, for calls made without a builder (parsed text)."""
    check = _STATIC_CHECKS.get(op)
    if check is not None:
        try:
            check(attrs)
        except AttrValidationError as e:
            raise RelationError(str(e)) from None


def _int(attrs: Attrs, name: str) -> int:
    value = attrs[name]
    assert isinstance(value, int)
    return value


def _opt_ints(attrs: Attrs, name: str) -> tuple[int, ...] | None:
    value = attrs[name]
    return None if value is None else _ints(value)


def _str(attrs: Attrs, name: str) -> str:
    value = attrs[name]
    assert isinstance(value, str)
    return value


def _has_unknowns(*dims: Dim) -> bool:
    return any(isinstance(v, IncompleteType) for d in dims for v in dim.dim_vars(d))


def _require_equal(r: Reporter, a: Dim, b: Dim, message: str) -> None:
    """``a == b`` where the op needs it: an error when provably false, binding unknown
    dimensions where the equation determines them, otherwise left to run time."""
    same = dim.equal(a, b)
    if same is False:
        raise RelationError(message)
    if same is None and _has_unknowns(a, b):
        r.dim_equal(a, b, message)


def _same_size(r: Reporter, op: str, x: TensorType, shape: Sequence[Dim], extra: str = "") -> None:
    """The element counts of ``x`` and ``shape`` agree (as far as decidable)."""
    size_in, size_out = dim.product(x.shape), dim.product(list(shape))
    message = (
        f"{op}: cannot reshape {x} ({dim.dim_str(size_in)} elements) to {shape_str(shape)} "
        f"({dim.dim_str(size_out)} elements{extra})"
    )
    _require_equal(r, size_in, size_out, message)


def _dtypes_settled(args: Sequence[Type]) -> bool:
    """Whether the dtypes of the tensor arguments are known, so that checks on them are final."""
    return not any(isinstance(t, TensorType) and isinstance(t.dtype, IncompleteType) for t in args)


def _checking_dtypes(rule: ForwardRule) -> RelationFunc:
    """:func:`forward` for a rule that checks dtypes: it runs again until they are known."""
    once = forward(rule)

    def rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        return once(types, attrs, r) and _dtypes_settled(types[:-1])

    rel.__name__ = once.__name__
    rel.__doc__ = once.__doc__
    return rel


def _reshape_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d...) -> newshape (0 copies, -1 infers, -2 copies rest, -3 merges, -4 splits), same size."""
    op = "reshape"
    _check_attr_values(op, attrs)
    x = tensor_arg(args[0], op)
    newshape = _ints(attrs["newshape"])
    try:
        out = reshape_dims(x.shape, newshape, bool(attrs["allowzero"]))
    except _NewshapeError as e:
        message = f"{op}: cannot reshape {x} to newshape {_list_str(newshape)}: {e.reason}"
        raise RelationError(message) from None
    special = any(v <= 0 for v in newshape)
    _same_size(r, op, x, out, f"; newshape {_list_str(newshape)}" if special else "")
    return TensorType(out, x.dtype)


def _reshape_like_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """Data a, shape_like b -> a[:lhs_begin] + b[rhs_begin:rhs_end] + a[lhs_end:] of a's size."""
    op = "reshape_like"
    x = tensor_arg(args[0], op, "data")
    like = tensor_arg(args[1], op, "shape_like")
    lhs_end, rhs_end = attrs["lhs_end"], attrs["rhs_end"]
    assert (lhs_end is None or isinstance(lhs_end, int)) and (
        rhs_end is None or isinstance(rhs_end, int)
    )
    bounds = (_int(attrs, "lhs_begin"), lhs_end, _int(attrs, "rhs_begin"), rhs_end)
    try:
        shape = reshape_like_shape(x.shape, like.shape, *bounds)
    except ValueError as e:
        raise RelationError(f"{op}: {e}") from None
    _same_size(r, op, x, shape)
    return TensorType(shape, x.dtype)


def _transpose_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d0, .., dk) -> (d[axes[0]], .., d[axes[k]]), axes a permutation (reversed when None)."""
    op = "transpose"
    x = tensor_arg(args[0], op)
    axes = _opt_ints(attrs, "axes")
    if axes is None:
        return TensorType(x.shape[::-1], x.dtype)
    if len(axes) != x.ndim:
        raise RelationError(
            f"{op}: axes {_list_str(axes)} must name each of the {x.ndim} axes of {x} once"
        )
    perm = [normalize_axis(a, x.ndim, op) for a in axes]
    if sorted(perm) != list(range(x.ndim)):
        raise RelationError(
            f"{op}: axes {_list_str(axes)} are not a permutation of the axes of {x}"
        )
    return TensorType(tuple(x.shape[a] for a in perm), x.dtype)


def _insert_position(op: str, axis: int, x: TensorType) -> int:
    """``axis`` as a position to insert dimensions into ``x`` (``-1``: after the last)."""
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise RelationError(
            f"{op}: axis {axis} is out of range for inserting a dimension into a "
            f"rank-{x.ndim} tensor"
        )
    return axis + x.ndim + 1 if axis < 0 else axis


def _expand_dims_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d...) -> d with num_newaxis dims of size 1 inserted at axis (-1: after the last)."""
    op = "expand_dims"
    _check_attr_values(op, attrs)
    x = tensor_arg(args[0], op)
    at = _insert_position(op, _int(attrs, "axis"), x)
    count = _int(attrs, "num_newaxis")
    if x.ndim + count > MAX_RANK:  # before building the shape
        why = f"the result would have rank {x.ndim + count}, above the maximum rank {MAX_RANK}"
        raise RelationError(f"{op}: {why}")
    ones = (1,) * count
    return TensorType((*x.shape[:at], *ones, *x.shape[at:]), x.dtype)


def _squeeze_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d...) -> d without the listed axes, each 1 (when None: without the dims that are 1)."""
    op = "squeeze"
    x = tensor_arg(args[0], op)
    axis = _opt_ints(attrs, "axis")
    if axis is None:
        for k, d in enumerate(x.shape):
            if dim.equal(d, 1) is None:  # the result's rank would depend on the run-time size
                raise RelationError(
                    f"{op}: cannot tell whether dimension {k} ({dim.dim_str(d)}) of {x} is 1; "
                    "give the axes to squeeze"
                )
        return TensorType(tuple(d for d in x.shape if dim.equal(d, 1) is False), x.dtype)
    axes = [normalize_axis(a, x.ndim, op) for a in axis]
    if len(set(axes)) != len(axes):
        raise RelationError(f"{op}: axis {_list_str(axis)} repeats an axis of {x}")
    for a in axes:
        d = x.shape[a]
        message = f"{op}: cannot squeeze axis {a} of {x}: its size is {dim.dim_str(d)}, not 1"
        _require_equal(r, d, 1, message)
    return TensorType(tuple(d for k, d in enumerate(x.shape) if k not in axes), x.dtype)


def _broadcast_dims(src: Sequence[Dim], dst: Sequence[Dim]) -> tuple[Dim, ...]:
    """``dst``, with an ``Any`` made definite where ``src`` has a known size other than 1."""
    lead = len(dst) - len(src)
    out = list(dst)
    for k, s in enumerate(src):
        if isinstance(out[lead + k], _AnyDim) and isinstance(s, int) and s != 1:
            out[lead + k] = s
    return tuple(out)


def _broadcast_to_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d...) -> shape, of data's dtype; d broadcasts to shape (numpy rules)."""
    op = "broadcast_to"
    x = tensor_arg(args[0], op)
    shape = _ints(attrs["shape"])
    if any(d < 0 for d in shape):
        raise RelationError(f"{op}: shape {shape_str(shape)} has a negative dimension")
    if not may_broadcast(x.shape, shape):
        raise RelationError(f"{op}: cannot broadcast {x} to {shape_str(shape)}")
    return TensorType(shape, x.dtype)


def _broadcast_to_like_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """Data (d...), broadcast_type (s...) -> (s...), of data's dtype; d broadcasts to s."""
    op = "broadcast_to_like"
    x = tensor_arg(args[0], op, "data")
    like = tensor_arg(args[1], op, "broadcast_type")
    if not may_broadcast(x.shape, like.shape):
        raise RelationError(f"{op}: cannot broadcast {x} to the shape of {like}")
    return TensorType(_broadcast_dims(x.shape, like.shape), x.dtype)


def _collapse_sum_like_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """Data (d...), collapse_type (s...) -> (s...), of data's dtype; s broadcasts to d."""
    op = "collapse_sum_like"
    x = tensor_arg(args[0], op, "data")
    like = tensor_arg(args[1], op, "collapse_type")
    try:
        collapse_sum_axes(x.shape, like.shape)
    except ValueError:
        raise RelationError(
            f"{op}: cannot collapse {x} to the shape of {like}, which does not broadcast to it"
        ) from None
    return TensorType(like.shape, x.dtype)


def _joined(op: str, args: list[Type], r: Reporter) -> list[TensorType]:
    """The tensors of a tuple argument, checked to have one dtype and one rank."""
    ts = tuple_of_tensors(args[0], op)
    first = ts[0]
    for t in ts[1:]:
        message = f"{op}: tensors must have one dtype, got {first} and {t}"
        r.dtype_equal(first.dtype, t.dtype, message)
        if t.ndim != first.ndim:
            raise RelationError(f"{op}: tensors must have one rank, got {first} and {t}")
    return ts


def _concatenate_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """A tuple of (.., n_i, ..), one dtype, equal off axis -> (.., n_1 + .. + n_k, ..)."""
    op = "concatenate"
    ts = _joined(op, args, r)
    first = ts[0]
    if first.ndim == 0:
        raise RelationError(f"{op}: cannot concatenate rank-0 tensors, got {first}")
    ax = normalize_axis(_int(attrs, "axis"), first.ndim, op)
    out = list(first.shape)
    for t in ts[1:]:
        for k, d in enumerate(t.shape):
            if k == ax:
                out[k] = dim.add(out[k], d)
                continue
            message = f"{op}: along axis {ax}, {first} and {t} differ on axis {k}"
            r.dim_equal(out[k], d, message)
            if isinstance(out[k], _AnyDim):
                out[k] = d
    return TensorType(tuple(out), first.dtype)


def _stack_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """A tuple of k tensors (d...) of one shape and dtype -> d with k inserted at axis."""
    op = "stack"
    ts = _joined(op, args, r)
    first = ts[0]
    out = list(first.shape)
    for t in ts[1:]:
        for k, d in enumerate(t.shape):
            message = f"{op}: tensors must have one shape, got {first} and {t}"
            r.dim_equal(out[k], d, message)
            if isinstance(out[k], _AnyDim):
                out[k] = d
    at = _insert_position(op, _int(attrs, "axis"), first)
    return TensorType((*out[:at], len(ts), *out[at:]), first.dtype)


def _split_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(.., n, ..) -> a tuple of s (.., n // s, ..) for s sections, else the pieces at indices."""
    op = "split"
    _check_attr_values(op, attrs)
    x = tensor_arg(args[0], op)
    ax = normalize_axis(_int(attrs, "axis"), x.ndim, op)
    ios = attrs["indices_or_sections"]
    assert isinstance(ios, int | tuple)
    try:
        extents = split_extents(x.shape[ax], ios if isinstance(ios, int) else _ints(ios), ax)
    except ValueError as e:
        raise RelationError(f"{op}: {str(e).removeprefix('split ')} (in {x})") from None
    pieces = (TensorType((*x.shape[:ax], e, *x.shape[ax + 1 :]), x.dtype) for e in extents)
    return TupleType(tuple(pieces))


def _strided_slice_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d...) -> d sliced on axes: exact on ints, ceil(n / stride) on a whole symbolic n, else ?."""
    op = "strided_slice"
    _check_attr_values(op, attrs)
    x = tensor_arg(args[0], op)
    begin, end = _ints(attrs["begin"]), _ints(attrs["end"])
    strides, axes = _opt_ints(attrs, "strides"), _opt_ints(attrs, "axes")
    if axes is None:
        longest = max(len(begin), len(end), len(strides or ()))
        if longest > x.ndim:
            raise RelationError(f"{op}: {longest} begin/end/stride values for {x}")
        sliced = list(range(longest))
    else:
        sliced = [normalize_axis(a, x.ndim, op) for a in axes]
        if len(set(sliced)) != len(sliced):
            raise RelationError(f"{op}: axes {_list_str(axes)} repeat an axis of {x}")
    try:
        shape = strided_slice_shape(x.shape, sliced, begin, end, strides, _str(attrs, "slice_mode"))
    except ValueError as e:
        raise RelationError(f"{e} (in {x})") from None
    return TensorType(shape, x.dtype)


def _take_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """Data d, int indices i -> i (axis None), else d[:axis] + i[batch_dims:] + d[axis + 1:]."""
    op = "take"
    x = tensor_arg(args[0], op, "data")
    idx = tensor_arg(args[1], op, "indices")
    if is_dtype(idx.dtype, "int", "uint") is False:
        raise RelationError(f"{op}: indices must be an integer tensor, got {idx}")
    axis = attrs["axis"]
    if axis is None:
        extent: Dim = dim.product(x.shape)
        out: tuple[Dim, ...] = idx.shape
        ax = 0
    else:
        assert isinstance(axis, int)
        ax = normalize_axis(axis, x.ndim, op)
        batch_dims = _int(attrs, "batch_dims")
        bd = batch_dims + idx.ndim if batch_dims < 0 else batch_dims
        if not 0 <= bd <= min(idx.ndim, ax):
            raise RelationError(
                f"{op}: batch_dims {batch_dims} is out of range for axis {ax} of {x} and "
                f"indices {idx} (it must be at most both the axis and the rank of the indices)"
            )
        for k in range(bd):
            message = f"{op}: data {x} and indices {idx} differ on batch dimension {k}"
            r.dim_equal(x.shape[k], idx.shape[k], message)
        extent = x.shape[ax]
        out = (*x.shape[:ax], *idx.shape[bd:], *x.shape[ax + 1 :])
    if extent == 0 and dim.equal(dim.product(idx.shape), 0) is False:
        raise RelationError(f"{op}: cannot take from axis {ax} of size 0 of {x}")
    return TensorType(out, x.dtype)


def _repeat_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(.., n, ..) -> (.., n * repeats, ..) with n at axis."""
    op = "repeat"
    _check_attr_values(op, attrs)
    x = tensor_arg(args[0], op)
    ax = normalize_axis(_int(attrs, "axis"), x.ndim, op)
    out = list(x.shape)
    out[ax] = dim.mul(out[ax], _int(attrs, "repeats"))
    return TensorType(tuple(out), x.dtype)


def _tile_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d...) -> (d_i * reps_i ...), the shorter of d and reps padded with leading 1s."""
    op = "tile"
    _check_attr_values(op, attrs)
    x = tensor_arg(args[0], op)
    reps = _ints(attrs["reps"])
    if not reps:
        return x
    rank = max(len(reps), x.ndim)
    shape = (1,) * (rank - x.ndim) + x.shape
    full = (1,) * (rank - len(reps)) + reps
    return TensorType(tuple(dim.mul(d, k) for d, k in zip(shape, full, strict=True)), x.dtype)


def _reverse_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """A tensor with axis in range -> its type."""
    op = "reverse"
    known = types[0] if is_known(types[0]) else types[-1]
    r.unify(types[0], types[-1])
    if not is_known(known):
        return False
    x = tensor_arg(known, op)
    normalize_axis(_int(attrs, "axis"), x.ndim, op)
    return True


def _layout_transform_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(d...) in src_layout -> dst_layout: NCHW (n, c, h, w) -> NCHW16c (n, c // 16, h, w, 16)."""
    op = "layout_transform"
    _check_attr_values(op, attrs)
    x = tensor_arg(args[0], op)
    src, dst = _str(attrs, "src_layout"), _str(attrs, "dst_layout")
    try:
        shape = layout_transform_shape(x.shape, src, dst)
    except ValueError as e:
        raise RelationError(f"{op}: cannot move {x} from {src} to {dst}: {e}") from None
    return TensorType(shape, x.dtype)


def _shape_of_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """A rank-k tensor -> Tensor[(k,), dtype]."""
    x = tensor_arg(args[0], "shape_of")
    return TensorType((x.ndim,), _str(attrs, "dtype"))


def _one_hot_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """Int indices (i...), scalar on_value, off_value -> i with depth inserted at axis, of dtype."""
    op = "one_hot"
    _check_attr_values(op, attrs)
    idx = tensor_arg(args[0], op, "indices")
    if is_dtype(idx.dtype, "int", "uint") is False:
        raise RelationError(f"{op}: indices must be an integer tensor, got {idx}")
    for t, what in ((args[1], "on_value"), (args[2], "off_value")):
        if tensor_arg(t, op, what).ndim != 0:
            raise RelationError(f"{op}: {what} must be a scalar, got {t}")
    at = _insert_position(op, _int(attrs, "axis"), idx)
    depth = _int(attrs, "depth")
    return TensorType((*idx.shape[:at], depth, *idx.shape[at:]), _str(attrs, "dtype"))


def _limited(op: str, rule: ForwardRule) -> ForwardRule:
    """``rule`` whose result must be a tensor that can exist (:func:`check_shape_limits`)."""

    def limited(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
        return check_shape_limits(op, rule(args, attrs, r))

    limited.__name__ = rule.__name__
    limited.__doc__ = rule.__doc__
    return limited


_RELATIONS: dict[str, RelationFunc] = {
    "reshape": forward(_limited("reshape", _reshape_rule)),
    "reshape_like": forward(_limited("reshape_like", _reshape_like_rule)),
    "transpose": forward(_limited("transpose", _transpose_rule)),
    "expand_dims": forward(_limited("expand_dims", _expand_dims_rule)),
    "squeeze": forward(_limited("squeeze", _squeeze_rule)),
    "broadcast_to": forward(_limited("broadcast_to", _broadcast_to_rule)),
    "broadcast_to_like": forward(_limited("broadcast_to_like", _broadcast_to_like_rule)),
    "collapse_sum_like": forward(_limited("collapse_sum_like", _collapse_sum_like_rule)),
    "concatenate": forward(_limited("concatenate", _concatenate_rule)),
    "stack": forward(_limited("stack", _stack_rule)),
    "split": forward(_limited("split", _split_rule)),
    "strided_slice": forward(_limited("strided_slice", _strided_slice_rule)),
    "take": _checking_dtypes(_limited("take", _take_rule)),
    "repeat": forward(_limited("repeat", _repeat_rule)),
    "tile": forward(_limited("tile", _tile_rule)),
    "reverse": _reverse_rel,
    "layout_transform": forward(_limited("layout_transform", _layout_transform_rule)),
    "shape_of": forward(_limited("shape_of", _shape_of_rule)),
    "one_hot": _checking_dtypes(_limited("one_hot", _one_hot_rule)),
}


# ---- registration -------------------------------------------------------------------------------

_DEFS: dict[str, OpDef] = {}
_STATIC_CHECKS: dict[str, Callable[[Attrs], None]] = {
    "reshape": _check_newshape,
    "split": _check_split,
    "strided_slice": _check_strided_slice,
    "layout_transform": _check_layouts,
    "repeat": _check_repeat,
    "tile": _check_tile,
    "expand_dims": _check_expand_dims,
    "one_hot": lambda a: _check(
        isinstance(a["depth"], int) and a["depth"] > 0,
        f"one_hot: depth must be positive, got {a['depth']}",
    ),
}


def _register(
    name: str,
    num_inputs: int,
    reference: Callable[..., Any],
    pattern: OpPattern,
    doc: str,
    attrs: Sequence[Any] = (),
) -> None:
    _DEFS[name] = register_op(
        name,
        num_inputs,
        attrs=attrs,
        reference=reference,
        pattern=pattern,
        doc=doc,
        type_relation=_RELATIONS[name],
    )


_register(
    "reshape",
    1,
    _reshape,
    OpPattern.INJECTIVE,
    "Reshape to newshape (0 copies, -1 infers, -2 copies the rest, -3 merges two, -4 splits one).",
    [attr("newshape", "ints"), attr("allowzero", "bool", False)],
)
_register(
    "reshape_like",
    2,
    _reshape_like,
    OpPattern.INJECTIVE,
    "Reshape data[lhs_begin:lhs_end] to the dimensions shape_like[rhs_begin:rhs_end].",
    [
        attr("lhs_begin", "int", 0),
        attr("lhs_end", "int", None, optional=True),
        attr("rhs_begin", "int", 0),
        attr("rhs_end", "int", None, optional=True),
    ],
)
_register(
    "transpose",
    1,
    _transpose,
    OpPattern.INJECTIVE,
    "Permute the axes (reverse them when axes is None).",
    [attr("axes", "ints", None, optional=True)],
)
_register(
    "expand_dims",
    1,
    _expand_dims,
    OpPattern.BROADCAST,
    "Insert num_newaxis dimensions of size 1 at axis.",
    [attr("axis", "int"), attr("num_newaxis", "int", 1)],
)
_register(
    "squeeze",
    1,
    _squeeze,
    OpPattern.INJECTIVE,
    "Remove the given size-1 axes (all of them when axis is None).",
    [attr("axis", "ints", None, optional=True)],
)
_register(
    "broadcast_to",
    1,
    _broadcast_to,
    OpPattern.BROADCAST,
    "Broadcast to shape (numpy rules).",
    [attr("shape", "ints")],
)
_register(
    "broadcast_to_like",
    2,
    _broadcast_to_like,
    OpPattern.BROADCAST,
    "Broadcast data to the shape of broadcast_type.",
)
_register(
    "collapse_sum_like",
    2,
    _collapse_sum_like,
    OpPattern.COMM_REDUCE,
    "Sum data down to the shape of collapse_type (the adjoint of broadcasting).",
)
_register(
    "concatenate",
    1,
    _concatenate,
    OpPattern.INJECTIVE,
    "Join a tuple of tensors along an existing axis.",
    [attr("axis", "int", 0)],
)
_register(
    "stack",
    1,
    _stack,
    OpPattern.INJECTIVE,
    "Join a tuple of tensors of one shape along a new axis.",
    [attr("axis", "int", 0)],
)
_register(
    "split",
    1,
    _split,
    OpPattern.INJECTIVE,
    "Split into equal sections (an int) or at indices (a list) along axis; gives a tuple.",
    [attr("indices_or_sections", "int_or_ints"), attr("axis", "int", 0)],
)
_register(
    "strided_slice",
    1,
    _strided_slice,
    OpPattern.INJECTIVE,
    "Slice with begin, end and strides (per axis, or on the given axes); end may be sizes.",
    [
        attr("begin", "ints"),
        attr("end", "ints"),
        attr("strides", "ints", None, optional=True),
        attr("axes", "ints", None, optional=True),
        attr("slice_mode", "str", "end", choices=("end", "size")),
    ],
)
_register(
    "take",
    2,
    _take,
    OpPattern.INJECTIVE,
    "Gather elements along axis (of the flattened data when axis is None) at indices.",
    [
        attr("batch_dims", "int", 0),
        attr("axis", "int", None, optional=True),
        attr("mode", "str", "clip", choices=("clip", "wrap", "fast")),
    ],
)
_register(
    "repeat",
    1,
    _repeat,
    OpPattern.BROADCAST,
    "Repeat each element repeats times along axis.",
    [attr("repeats", "int"), attr("axis", "int")],
)
_register(
    "tile",
    1,
    _tile,
    OpPattern.BROADCAST,
    "Repeat the whole tensor reps times along each axis (numpy tile).",
    [attr("reps", "ints")],
)
_register(
    "reverse",
    1,
    _reverse,
    OpPattern.INJECTIVE,
    "Reverse the order of elements along axis.",
    [attr("axis", "int")],
)
_register(
    "layout_transform",
    1,
    _layout_transform,
    OpPattern.INJECTIVE,
    "Move data from src_layout to dst_layout (e.g. NCHW to NHWC or NCHW8c).",
    [attr("src_layout", "str"), attr("dst_layout", "str")],
)
_register(
    "shape_of",
    1,
    _shape_of,
    OpPattern.OPAQUE,
    "The shape of a tensor as a 1-d integer tensor.",
    [attr("dtype", "dtype", "int32", choices=("int32", "int64"))],
)
_register(
    "one_hot",
    3,
    _one_hot,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "A one-hot encoding of indices: on_value where the new axis equals the index, else off_value.",
    [
        attr("depth", "int"),
        attr("axis", "int", -1),
        attr("dtype", "dtype", "float32", choices=DTYPES),
    ],
)


# ---- builders -----------------------------------------------------------------------------------


def _call(name: str, args: Sequence[Expr], attrs: Mapping[str, object] | None = None) -> Call:
    opdef = _DEFS[name]
    validated = opdef.validate_attrs(None if attrs is None else dict(attrs))
    check = _STATIC_CHECKS.get(name)
    if check is not None:
        check(validated)
    return Call(opdef.op, tuple(args), validated)


def _as_tuple(data: Expr | Sequence[Expr]) -> Expr:
    return data if isinstance(data, Expr) else Tuple(tuple(data))


def reshape(data: Expr, newshape: int | Sequence[int], allowzero: bool = False) -> Call:
    """``reshape(data, newshape=..., allowzero=...)``: ``data`` with shape ``newshape``, where
    0 copies the input dimension at that position (a literal 0 with ``allowzero``), -1 infers
    a dimension, -2 copies the remaining input dimensions, -3 merges two input dimensions and
    ``-4, a, b`` splits one into ``a`` and ``b``."""
    shape = [newshape] if isinstance(newshape, int) else list(newshape)
    return _call("reshape", [data], {"newshape": shape, "allowzero": allowzero})


def reshape_like(
    data: Expr,
    shape_like: Expr,
    lhs_begin: int = 0,
    lhs_end: int | None = None,
    rhs_begin: int = 0,
    rhs_end: int | None = None,
) -> Call:
    """``data`` reshaped so that its dimensions ``[lhs_begin, lhs_end)`` become the dimensions
    ``[rhs_begin, rhs_end)`` of ``shape_like`` (by default: ``data`` shaped like ``shape_like``)."""
    attrs = {"lhs_begin": lhs_begin, "lhs_end": lhs_end, "rhs_begin": rhs_begin, "rhs_end": rhs_end}
    return _call("reshape_like", [data, shape_like], attrs)


def transpose(data: Expr, axes: Sequence[int] | None = None) -> Call:
    """``data`` with its axes permuted to ``axes`` (reversed when ``axes`` is None)."""
    return _call("transpose", [data], {"axes": None if axes is None else list(axes)})


def expand_dims(data: Expr, axis: int, num_newaxis: int = 1) -> Call:
    """``data`` with ``num_newaxis`` dimensions of size 1 inserted at ``axis``
    (``-1`` appends them)."""
    return _call("expand_dims", [data], {"axis": axis, "num_newaxis": num_newaxis})


def squeeze(data: Expr, axis: Sequence[int] | None = None) -> Call:
    """``data`` without the size-1 dimensions ``axis`` (all size-1 dimensions when None)."""
    return _call("squeeze", [data], {"axis": None if axis is None else list(axis)})


def broadcast_to(data: Expr, shape: Sequence[int]) -> Call:
    """``data`` broadcast (numpy rules) to ``shape``."""
    return _call("broadcast_to", [data], {"shape": list(shape)})


def broadcast_to_like(data: Expr, broadcast_type: Expr) -> Call:
    """``data`` broadcast to the shape of ``broadcast_type``."""
    return _call("broadcast_to_like", [data, broadcast_type])


def collapse_sum_like(data: Expr, collapse_type: Expr) -> Call:
    """``data`` summed down to the shape of ``collapse_type``, which must broadcast to the
    shape of ``data``: the adjoint (gradient) of broadcasting."""
    return _call("collapse_sum_like", [data, collapse_type])


def concatenate(data: Expr | Sequence[Expr], axis: int = 0) -> Call:
    """The tensors of the tuple ``data`` (a tuple expression or a sequence of expressions)
    joined along ``axis``."""
    return _call("concatenate", [_as_tuple(data)], {"axis": axis})


def stack(data: Expr | Sequence[Expr], axis: int = 0) -> Call:
    """The tensors of the tuple ``data``, all of one shape, joined along a new axis ``axis``."""
    return _call("stack", [_as_tuple(data)], {"axis": axis})


def split(data: Expr, indices_or_sections: int | Sequence[int], axis: int = 0) -> Call:
    """A tuple of pieces of ``data`` along ``axis``: ``indices_or_sections`` equal sections
    (an int), or the pieces between the increasing indices (a list)."""
    ios: int | list[int] = (
        indices_or_sections if isinstance(indices_or_sections, int) else list(indices_or_sections)
    )
    return _call("split", [data], {"indices_or_sections": ios, "axis": axis})


def strided_slice(
    data: Expr,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    slice_mode: str = "end",
) -> Call:
    """``data[begin:end:strides]`` per axis (the leading axes, or those named by ``axes``);
    with ``slice_mode="size"``, ``end`` holds sizes (-1: to the end) and strides are ignored."""
    attrs = {
        "begin": list(begin),
        "end": list(end),
        "strides": None if strides is None else list(strides),
        "axes": None if axes is None else list(axes),
        "slice_mode": slice_mode,
    }
    return _call("strided_slice", [data], attrs)


def take(
    data: Expr, indices: Expr, axis: int | None = None, batch_dims: int = 0, mode: str = "clip"
) -> Call:
    """Elements of ``data`` along ``axis`` (of the flattened ``data`` when None) at ``indices``;
    out-of-range indices clip (``"clip"``), wrap (``"wrap"``) or are an error (``"fast"``)."""
    attrs = {"batch_dims": batch_dims, "axis": axis, "mode": mode}
    return _call("take", [data, indices], attrs)


def repeat(data: Expr, repeats: int, axis: int) -> Call:
    """Each element of ``data`` repeated ``repeats`` times along ``axis``."""
    return _call("repeat", [data], {"repeats": repeats, "axis": axis})


def tile(data: Expr, reps: Sequence[int]) -> Call:
    """``data`` repeated ``reps[i]`` times along each axis (numpy ``tile``)."""
    return _call("tile", [data], {"reps": list(reps)})


def reverse(data: Expr, axis: int) -> Call:
    """``data`` with the order of its elements along ``axis`` reversed."""
    return _call("reverse", [data], {"axis": axis})


def layout_transform(data: Expr, src_layout: str, dst_layout: str) -> Call:
    """``data`` moved from ``src_layout`` to ``dst_layout`` (``"NCHW"``, ``"NHWC"``,
    ``"NCHW8c"``...)."""
    return _call("layout_transform", [data], {"src_layout": src_layout, "dst_layout": dst_layout})


def shape_of(data: Expr, dtype: str = "int32") -> Call:
    """The shape of ``data`` as a 1-d tensor of ``dtype`` (int32 or int64)."""
    return _call("shape_of", [data], {"dtype": dtype})


def one_hot(
    indices: Expr,
    on_value: Expr,
    off_value: Expr,
    depth: int,
    axis: int = -1,
    dtype: str = "float32",
) -> Call:
    """A one-hot encoding of ``indices`` with a new axis of size ``depth`` at ``axis``:
    ``on_value`` where the position on that axis equals the index, else ``off_value``
    (both scalar tensors), as ``dtype``."""
    attrs = {"depth": depth, "axis": axis, "dtype": dtype}
    return _call("one_hot", [indices, on_value, off_value], attrs)


# ---- gradient rules -----------------------------------------------------------------------------
#
# The math follows TVM's python/tvm/relay/op/_tensor_grad.py: a data-movement operator's adjoint
# moves the output adjoint back (reshape_like, the inverse permutation, concatenate for split,
# split for concatenate, collapse_sum_like for broadcasting). Rules that need a shape (the
# extents of a concatenate's parts, a strided slice's positions) read the arguments' types: set
# by type inference in the AD pass, or the annotations of variables. No operator here scatters,
# so ``take``'s adjoint (a scatter-add) is a contraction with ``one_hot`` of the indices and
# ``strided_slice``'s is built from pads.


def _known_type(e: Expr) -> Type:
    """The type of ``e``: inferred, annotated (a variable) or that of a tuple's fields."""
    ty = known_type(e)
    if ty is None and isinstance(e, Tuple):
        ty = TupleType(tuple(_known_type(f) for f in e.fields))
    if ty is None:
        raise CompileError(f"the gradient rule needs the type of {e}, which is not known")
    return ty


def _tensor_type(e: Expr) -> TensorType:
    ty = _known_type(e)
    if not isinstance(ty, TensorType):
        raise CompileError(f"the gradient rule expected a tensor, got {ty}")
    return ty


def _zero_scalar(t: TensorType) -> Expr:
    return const(np.zeros((), dtype=_np_dtype(str(t.dtype))))


@gradient_rule("reshape", "expand_dims", "squeeze")
def _reshape_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [reshape_like(out_grad, call.args[0])]


@gradient_rule("reshape_like")
def _reshape_like_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [reshape_like(out_grad, call.args[0]), None]


@gradient_rule("transpose")
def _transpose_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    axes = _opt_ints(call.attrs, "axes")
    if axes is None:
        return [transpose(out_grad)]
    perm = [_norm_axis(a, len(axes)) for a in axes]
    inverse = [0] * len(perm)
    for k, p in enumerate(perm):
        inverse[p] = k
    return [transpose(out_grad, inverse)]


@gradient_rule("broadcast_to")
def _broadcast_to_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [collapse_sum_like(out_grad, call.args[0])]


@gradient_rule("broadcast_to_like")
def _broadcast_to_like_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [collapse_sum_like(out_grad, call.args[0]), None]


@gradient_rule("collapse_sum_like")
def _collapse_sum_like_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [broadcast_to_like(out_grad, call.args[0]), None]


@gradient_rule("concatenate")
def _concatenate_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    ty = _known_type(call.args[0])
    assert isinstance(ty, TupleType)
    parts = [t for t in ty.fields if isinstance(t, TensorType)]
    ax = _norm_axis(_int(call.attrs, "axis"), len(parts[0].shape))
    if len(parts) == 1:
        return [Tuple((out_grad,))]
    indices = list(
        itertools.accumulate(known_extent(p.shape[ax], "concatenate") for p in parts[:-1])
    )
    pieces = split(out_grad, indices, ax)
    return [Tuple(tuple(TupleGetItem(pieces, i) for i in range(len(parts))))]


@gradient_rule("stack")
def _stack_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    ty = _known_type(call.args[0])
    assert isinstance(ty, TupleType)
    n, axis = len(ty.fields), _int(call.attrs, "axis")
    pieces = split(out_grad, n, axis)
    return [Tuple(tuple(squeeze(TupleGetItem(pieces, i), [axis]) for i in range(n)))]


@gradient_rule("split")
def _split_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    ios = call.attrs["indices_or_sections"]
    n = ios if isinstance(ios, int) else len(_ints(ios)) + 1
    return [concatenate(tuple_fields(out_grad, n), _int(call.attrs, "axis"))]


@gradient_rule("strided_slice")
def _strided_slice_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # Scatter the adjoint back with pads: along each sliced axis (extent n, stride s, m
    # elements from b) a new axis of 1 padded to |s| and merged puts element i at i * |s|;
    # padding b before and n - b - m * |s| after (negative: a crop) moves it to b + i * |s|.
    # A negative stride reverses the adjoint first and starts from the last element taken.
    x = call.args[0]
    t = _tensor_type(x)
    ndim = len(t.shape)
    begin, end = _ints(call.attrs["begin"]), _ints(call.attrs["end"])
    strides, axes = _opt_ints(call.attrs, "strides"), _opt_ints(call.attrs, "axes")
    mode = _str(call.attrs, "slice_mode")
    if axes is None:
        sliced = list(range(max(len(begin), len(end), len(strides or ()))))
    else:
        sliced = [_norm_axis(a, ndim) for a in axes]
    zero = _zero_scalar(t)
    g: Expr = out_grad
    for k, ax in enumerate(sliced):
        n = known_extent(t.shape[ax], "strided_slice")
        stride = _stride(k, strides, mode)
        b, e = _slice_range(n, k, begin, end, stride, mode)
        step = abs(stride)
        m = 0 if b < 0 else -(-abs(e - b) // step)
        if m == 0:
            return [_zeros_like(x)]
        if stride < 0:
            g = reverse(g, ax)
            b -= (m - 1) * step
        if step > 1:
            widths = [[0, 0]] * (ndim + 1)
            widths[ax + 1] = [0, step - 1]
            spread = op_call("nn.pad", expand_dims(g, ax + 1), zero, pad_width=widths)
            g = reshape(spread, [0] * ax + [-3, -2])
        widths = [[0, 0]] * ndim
        widths[ax] = [b, n - b - m * step]
        g = op_call("nn.pad", g, zero, pad_width=widths)
    return [g]


def _zeros_like(x: Expr) -> Call:
    return op_call("zeros_like", x)


@gradient_rule("take")
def _take_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # data[..., idx[j], ...] gathers, so data's adjoint at position p of the axis sums the
    # output adjoint over the j with idx[j] == p: multiply the adjoint (a size-1 axis added
    # after the index axes) by one_hot(idx) (broadcast over data's other axes), sum out the
    # index axes. Indices are first clipped or wrapped as the mode does.
    data, indices = call.args
    if not carries_gradient(data):
        return [None, None]
    t, it = _tensor_type(data), _tensor_type(indices)
    axis = call.attrs["axis"]
    if axis is None:
        n = math.prod(known_extent(d, "take") for d in t.shape)
        ndim, ax, bd = 1, 0, 0
    else:
        ndim = len(t.shape)
        ax = _norm_axis(_int(call.attrs, "axis"), ndim)
        bd = _int(call.attrs, "batch_dims")
        bd = bd + len(it.shape) if bd < 0 else bd
        n = known_extent(t.shape[ax], "take")
    idx: Expr = indices
    mode = _str(call.attrs, "mode")
    if mode == "clip":
        idx = op_call("clip", idx, a_min=0.0, a_max=float(max(n - 1, 0)))
    elif mode == "wrap":
        idx = op_call("floor_mod", idx, const(np.array(n, dtype=_np_dtype(str(it.dtype)))))
    dtype = _np_dtype(str(t.dtype))
    one, zero = const(np.ones((), dtype)), const(np.zeros((), dtype))
    hot: Expr = op_call("one_hot", idx, one, zero, depth=n, axis=-1, dtype=str(t.dtype))
    gathered = len(it.shape) - bd  # the index axes of the output, from ax on
    before, after = ax - bd, ndim - ax - 1
    if before:
        hot = expand_dims(hot, bd, before)
    if after:
        hot = expand_dims(hot, -1, after)
    spread = op_call("multiply", expand_dims(out_grad, ax + gathered), hot)
    if gathered:
        spread = op_call("sum", spread, axis=list(range(ax, ax + gathered)))
    return [reshape_like(spread, data), None]


@gradient_rule("repeat")
def _repeat_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # (.., n * r, ..) -> (.., n, r, ..), summed over the r copies
    ax = _norm_axis(_int(call.attrs, "axis"), len(_tensor_type(call.args[0]).shape))
    r = _int(call.attrs, "repeats")
    split_axis = reshape(out_grad, [0] * ax + [-4, -1, r, -2])
    return [op_call("sum", split_axis, axis=[ax + 1])]


@gradient_rule("tile")
def _tile_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # each output axis of extent k * d becomes (k, d); the k copies are summed
    x = call.args[0]
    reps = _ints(call.attrs["reps"])
    if not reps:
        return [out_grad]
    rank = max(len(reps), len(_tensor_type(x).shape))
    full = (1,) * (rank - len(reps)) + reps
    newshape = [v for k in full for v in (-4, k, -1)]
    pairs = reshape(out_grad, newshape)
    summed = op_call("sum", pairs, axis=list(range(0, 2 * rank, 2)))
    return [reshape_like(summed, x)]


@gradient_rule("reverse")
def _reverse_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [reverse(out_grad, _int(call.attrs, "axis"))]


@gradient_rule("layout_transform")
def _layout_transform_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    src, dst = _str(call.attrs, "src_layout"), _str(call.attrs, "dst_layout")
    return [layout_transform(out_grad, dst, src)]


@gradient_rule("one_hot")
def _one_hot_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # the result is on_value where the index hits, off_value elsewhere: each scalar gets the
    # sum of the adjoint over its positions; no gradient flows to the integer indices
    indices, on, off = call.args
    ones = op_call("ones_like", out_grad)
    attrs = {k: call.attrs[k] for k in ("depth", "axis", "dtype")}
    hit = op_call("one_hot", indices, op_call("ones_like", on), op_call("zeros_like", off), **attrs)
    hit = op_call("cast_like", hit, out_grad)
    miss = op_call("subtract", ones, hit)
    d_on = op_call("cast_like", op_call("sum", op_call("multiply", out_grad, hit)), on)
    d_off = op_call("cast_like", op_call("sum", op_call("multiply", out_grad, miss)), off)
    return [
        None,
        d_on if carries_gradient(on) else None,
        d_off if carries_gradient(off) else None,
    ]


non_differentiable("shape_of", reason="its result is the integer shape of its input")


# ---- JVP rules ----------------------------------------------------------------------------------
#
# The forward-mode counterparts of the gradient rules above (the contract is in
# relay/op/registry.py). Every operator here is linear in its data, so its tangent is the
# operator applied to the data's tangent with the same attributes; the arguments that give
# only a shape or the indices (``reshape_like``'s second, ``take``'s indices...) are passed on
# as they are, and ``one_hot`` is linear in its two fill values together.


jvp_rule(
    "reshape",
    "transpose",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "concatenate",
    "stack",
    "split",
    "strided_slice",
    "repeat",
    "tile",
    "reverse",
    "layout_transform",
)(linear_jvp)


jvp_rule("reshape_like", "broadcast_to_like", "collapse_sum_like", "take")(linear_in_first_jvp)


@jvp_rule("one_hot")
def _one_hot_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    indices, on, off = call.args
    _, t_on, t_off = tangents
    if t_on is None and t_off is None:
        return None
    t_on = _zeros_like(on) if t_on is None else t_on
    t_off = _zeros_like(off) if t_off is None else t_off
    return Call(call.op, (indices, t_on, t_off), call.attrs)
