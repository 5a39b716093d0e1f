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
  from the end, then clamp to ``[0, n]``, or ``[-1, n - 1]`` for a negative stride); a begin
  past the end for the stride's direction is an error, as in Relay. In ``slice_mode="size"``
  strides are ignored and ``end`` holds sizes (``-1``: to the end); the size counts from the
  canonicalized begin (Relay adds it to the raw begin, which rejects ``begin=-1, size=1``).
  Axes left out when ``axes`` is None take their whole extent.
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

Attribute values that are wrong whatever the inputs (a zero stride, ``repeats=0``, a malformed
layout) are rejected by the builders with :class:`~relay.op.registry.AttrValidationError`;
attribute values that do not fit the inputs (an axis out of range, an incompatible reshape)
raise ``ValueError`` from the reference, which the interpreter reports at the call's span.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Expr, Tuple
from relay.op.registry import AttrValidationError, OpDef, OpPattern, attr, register_op

Array = np.ndarray

__all__ = [
    "broadcast_to",
    "broadcast_to_like",
    "collapse_sum_axes",
    "collapse_sum_like",
    "concatenate",
    "expand_dims",
    "infer_reshape",
    "layout_transform",
    "one_hot",
    "parse_layout",
    "repeat",
    "reshape",
    "reshape_like",
    "reshape_like_shape",
    "reverse",
    "shape_of",
    "split",
    "squeeze",
    "stack",
    "strided_slice",
    "take",
    "tile",
    "transpose",
]


# ---- shared helpers -----------------------------------------------------------------------------


def _shape_str(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


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


def infer_reshape(
    shape: Sequence[int], newshape: Sequence[int], allowzero: bool = False
) -> tuple[int, ...]:
    """The output shape of Relay's ``reshape`` of a tensor of ``shape`` to ``newshape``.

    >>> infer_reshape((2, 3, 4), [0, -1])
    (2, 12)
    >>> infer_reshape((2, 3, 4), [-4, 1, 2, -3])
    (1, 2, 12)

    Raises ``ValueError`` when ``newshape`` does not fit ``shape``.
    """
    shape = tuple(int(d) for d in shape)
    given = _list_str(newshape)
    out: list[int] = []
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
                raise ValueError(
                    f"newshape {given} copies input dimension {src} with 0, "
                    f"but the input shape {_shape_str(shape)} has rank {len(shape)}"
                )
            used_in.add(src)
            inferred.add(len(out))
            out.append(shape[src])
            src += 1
        elif v == -1:
            if infer_at >= 0:
                raise ValueError(f"newshape {given} has more than one -1")
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
                raise ValueError(
                    f"newshape {given} merges input dimensions {src} and {src + 1} with -3, "
                    f"but the input shape {_shape_str(shape)} has rank {len(shape)}"
                )
            used_in.update((src, src + 1))
            inferred.add(len(out))
            out.append(shape[src] * shape[src + 1])
            src += 2
        elif v == -4:
            if i + 2 >= len(newshape):
                raise ValueError(f"newshape {given}: -4 must be followed by two dimensions")
            if src >= len(shape):
                raise ValueError(
                    f"newshape {given} splits input dimension {src} with -4, "
                    f"but the input shape {_shape_str(shape)} has rank {len(shape)}"
                )
            d0 = shape[src]
            a, b = int(newshape[i + 1]), int(newshape[i + 2])
            if (a, b) == (-1, -1) or a == 0 or b == 0 or a < -1 or b < -1:
                raise ValueError(
                    f"newshape {given}: -4 splits into two dimensions, positive or one -1, "
                    f"got {a} and {b}"
                )
            if a == -1:
                a = _exact_div(d0, b, given)
            elif b == -1:
                b = _exact_div(d0, a, given)
            if a * b != d0:
                raise ValueError(
                    f"newshape {given} splits input dimension {src} of size {d0} into "
                    f"{a} x {b} with -4"
                )
            used_in.add(src)
            inferred.update((len(out), len(out) + 1))
            out.extend((a, b))
            src += 1
            i += 2
        else:
            raise ValueError(f"newshape {given} has invalid value {v}")
        i += 1
    if infer_at >= 0:
        rest_in = math.prod(d for k, d in enumerate(shape) if k not in used_in)
        rest_out = math.prod(d for k, d in enumerate(out) if k not in inferred and k != infer_at)
        if rest_out == 0:
            raise ValueError(
                f"cannot infer the -1 of newshape {given} for input shape {_shape_str(shape)}: "
                "another output dimension is 0"
            )
        out[infer_at] = _exact_div(rest_in, rest_out, given)
    if math.prod(out) != math.prod(shape):
        raise ValueError(
            f"cannot reshape a tensor of shape {_shape_str(shape)} ({math.prod(shape)} elements) "
            f"to newshape {given} (shape {_shape_str(out)}, {math.prod(out)} elements)"
        )
    return tuple(out)


def _exact_div(a: int, b: int, given: str) -> int:
    if b == 0 or a % b:
        raise ValueError(f"newshape {given}: cannot divide a dimension of {a} by {b}")
    return a // b


def _reshape(data: Array, *, newshape: tuple[int, ...], allowzero: bool) -> Array:
    _check_newshape(Attrs(newshape=newshape))
    return np.reshape(data, infer_reshape(data.shape, newshape, allowzero))


def reshape_like_shape(
    lhs_shape: Sequence[int],
    rhs_shape: Sequence[int],
    lhs_begin: int = 0,
    lhs_end: int | None = None,
    rhs_begin: int = 0,
    rhs_end: int | None = None,
) -> tuple[int, ...]:
    """``lhs_shape`` with ``lhs_shape[lhs_begin:lhs_end]`` replaced by ``rhs_shape[rhs_begin:rhs_end]``
    (negative bounds count from the end), as Relay's ``reshape_like`` computes its shape."""

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
    shape = reshape_like_shape(data.shape, shape_like.shape, lhs_begin, lhs_end, rhs_begin, rhs_end)
    if math.prod(shape) != data.size:
        raise ValueError(
            f"cannot reshape a tensor of shape {_shape_str(data.shape)} ({data.size} elements) "
            f"to shape {_shape_str(shape)} ({math.prod(shape)} elements)"
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


def _expand_dims(data: Array, *, axis: int, num_newaxis: int) -> Array:
    _check(num_newaxis >= 0, f"expand_dims: num_newaxis must be >= 0, got {num_newaxis}")
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
                f"cannot squeeze axis {a} of shape {_shape_str(data.shape)}: its size is "
                f"{data.shape[a]}, not 1"
            )
    return np.reshape(data, tuple(d for k, d in enumerate(data.shape) if k not in axes))


# ---- broadcasting and its adjoint ---------------------------------------------------------------


def _broadcast(data: Array, shape: Sequence[int]) -> Array:
    shape = tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"broadcast_to shape {_shape_str(shape)} has a negative dimension")
    ok = data.ndim <= len(shape) and all(
        s in (1, t) for s, t in zip(data.shape[::-1], shape[::-1], strict=False)
    )
    if not ok:
        raise ValueError(
            f"cannot broadcast a tensor of shape {_shape_str(data.shape)} to {_shape_str(shape)}"
        )
    return np.array(np.broadcast_to(data, shape))


def _broadcast_to(data: Array, *, shape: tuple[int, ...]) -> Array:
    return _broadcast(data, shape)


def _broadcast_to_like(data: Array, broadcast_type: Array) -> Array:
    return _broadcast(data, broadcast_type.shape)


def collapse_sum_axes(data_shape: Sequence[int], target: Sequence[int]) -> tuple[int, ...]:
    """The axes of ``data_shape`` that ``collapse_sum`` to ``target`` sums over; raises
    ``ValueError`` unless ``target`` broadcasts to ``data_shape``."""
    lead = len(data_shape) - len(target)
    if lead < 0 or any(t not in (1, d) for t, d in zip(target, data_shape[lead:], strict=True)):
        raise ValueError(
            f"cannot collapse a tensor of shape {_shape_str(data_shape)} to "
            f"{_shape_str(target)}: the target does not broadcast to it"
        )
    kept = (lead + k for k, t in enumerate(target) if t == 1 and data_shape[lead + k] != 1)
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
                f"concatenate along axis {ax}: shapes {_shape_str(first)} and "
                f"{_shape_str(a.shape)} differ on another axis"
            )
    return np.concatenate(arrays, axis=ax)


def _stack(data: tuple[Array, ...], *, axis: int) -> Array:
    arrays = _tensors(data, "stack")
    first = arrays[0].shape
    for a in arrays[1:]:
        if a.shape != first:
            raise ValueError(
                f"stack needs tensors of one shape, got {_shape_str(first)} and "
                f"{_shape_str(a.shape)}"
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


def _split(
    data: Array, *, indices_or_sections: int | tuple[int, ...], axis: int
) -> tuple[Array, ...]:
    _check_split(Attrs(indices_or_sections=indices_or_sections))
    if data.ndim == 0:
        raise ValueError("cannot split a tensor of rank 0")
    ax = _norm_axis(axis, data.ndim)
    n = data.shape[ax]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise ValueError(
                f"cannot split axis {ax} of size {n} into {indices_or_sections} equal sections"
            )
        return tuple(np.split(data, indices_or_sections, axis=ax))
    if indices_or_sections and indices_or_sections[-1] >= n:
        raise ValueError(
            f"split indices {_list_str(indices_or_sections)} must be less than the size {n} "
            f"of axis {ax}"
        )
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
        n = data.shape[ax]
        stride = 1 if slice_mode == "size" or strides is None or k >= len(strides) else strides[k]
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
            raise ValueError(
                f"strided_slice: begin {begin[k] if k < len(begin) else b} and end "
                f"{end[k] if k < len(end) else e} select nothing on axis {ax} of size {n} "
                f"with stride {stride}"
            )
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
                f"take with batch_dims {bd}: data shape {_shape_str(data.shape)} and indices "
                f"shape {_shape_str(idx.shape)} differ on the batch dimensions"
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


def _repeat(data: Array, *, repeats: int, axis: int) -> Array:
    _check(repeats >= 1, f"repeat: repeats must be at least 1, got {repeats}")
    return np.repeat(data, repeats, axis=_norm_axis(axis, data.ndim))


def _tile(data: Array, *, reps: tuple[int, ...]) -> Array:
    _check(all(r >= 1 for r in reps), f"tile: reps must be at least 1, got {_list_str(reps)}")
    return np.array(np.tile(data, reps)) if reps else np.array(data)


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


def _layout_transform(data: Array, *, src_layout: str, dst_layout: str) -> Array:
    _check_layouts(Attrs(src_layout=src_layout, dst_layout=dst_layout))
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    if data.ndim != len(src):
        raise ValueError(
            f"layout {src_layout} has {len(src)} axes but the tensor has rank {data.ndim}"
        )
    where = {ax: k for k, ax in enumerate(src)}
    for (letter, factor), k in where.items():
        if factor and data.shape[k] != factor:
            raise ValueError(
                f"axis {factor}{letter.lower()} of layout {src_layout} has size {data.shape[k]} "
                f"in a tensor of shape {_shape_str(data.shape)}"
            )
    # to the primal form: each primal axis followed by its sub-axis, merged
    primal = [a for a, f in src if f == 0]
    perm: list[int] = []
    extents: list[int] = []
    for letter in primal:
        outer = where[(letter, 0)]
        inner = [k for (a, f), k in where.items() if a == letter and f]
        perm.extend([outer, *inner])
        extents.append(math.prod(data.shape[k] for k in (outer, *inner)))
    flat = np.reshape(np.transpose(data, perm), extents)
    # split by the destination's factors, then permute into its order
    factors = {a: f for a, f in dst if f}
    split_shape: list[int] = []
    names: list[tuple[str, int]] = []
    for letter, extent in zip(primal, extents, strict=True):
        f = factors.get(letter)
        if f is None:
            split_shape.append(extent)
            names.append((letter, 0))
        else:
            if extent % f:
                raise ValueError(
                    f"axis {letter} of size {extent} does not divide into blocks of {f} "
                    f"for layout {dst_layout}"
                )
            split_shape.extend((extent // f, f))
            names.extend(((letter, 0), (letter, f)))
    blocked = np.reshape(flat, split_shape)
    return np.array(np.transpose(blocked, [names.index(ax) for ax in dst]))


# ---- shape queries and one-hot ------------------------------------------------------------------


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
            raise ValueError(f"one_hot {name} must be a scalar, got shape {_shape_str(v.shape)}")
    at = _norm_insert_axis(axis, indices.ndim)
    classes = np.arange(depth).reshape([depth if k == at else 1 for k in range(indices.ndim + 1)])
    hot = np.expand_dims(indices, at) == classes
    on, off = np.asarray(on_value, dtype=dtype), np.asarray(off_value, dtype=dtype)
    return np.asarray(np.where(hot, on, off), dtype=dtype)


# ---- registration -------------------------------------------------------------------------------

_DEFS: dict[str, OpDef] = {}
_STATIC_CHECKS: dict[str, Callable[[Attrs], None]] = {
    "reshape": _check_newshape,
    "split": _check_split,
    "strided_slice": _check_strided_slice,
    "layout_transform": _check_layouts,
    "repeat": lambda a: _check(
        isinstance(a["repeats"], int) and a["repeats"] >= 1,
        f"repeat: repeats must be at least 1, got {a['repeats']}",
    ),
    "tile": lambda a: _check(
        all(r >= 1 for r in _ints(a["reps"])),
        f"tile: reps must be at least 1, got {_list_str(_ints(a['reps']))}",
    ),
    "expand_dims": lambda a: _check(
        isinstance(a["num_newaxis"], int) and a["num_newaxis"] >= 0,
        f"expand_dims: num_newaxis must be >= 0, got {a['num_newaxis']}",
    ),
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
        name, num_inputs, attrs=attrs, reference=reference, pattern=pattern, doc=doc
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
    [attr("depth", "int"), attr("axis", "int", -1), attr("dtype", "dtype", "float32")],
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
