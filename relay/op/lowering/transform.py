"""Lowering of the data-movement operators (``relay.op.transform`` and ``nn.batch_flatten``).

Every operator here only moves elements, so every rule is one ``te.compute`` whose body reads
one input element through an *index map* (output index -> input index), TVM's ``topi``
injective pattern (``include/tvm/topi/transform.h``, ``python/tvm/topi/transform.py``):

* reshapes (``reshape``, ``reshape_like``, ``squeeze``, ``expand_dims``,
  ``nn.batch_flatten``) share :func:`_reshape_to`: the output shape is the one the type
  relation computed (``reshape``'s special values are already resolved in ``out_type``). When
  input and output have the same dimensions apart from 1s, the non-unit axes map one to one;
  otherwise the row-major linear index is rebuilt and split again (``topi.reshape``);
* ``transpose``, ``reverse``, ``repeat``, ``tile``, ``broadcast_to(_like)``, ``split`` and
  ``strided_slice`` are affine index maps per axis (``strided_slice`` takes each axis's
  canonical begin from the reference's own helper, :func:`relay.op.transform._slice_range`,
  and reads ``begin + i * stride``);
* ``concatenate`` and ``stack`` pick their input with a chain of ``tirx.if_then_else`` on the
  joined axis (``topi.concatenate``); the branches not taken are not evaluated, so no input is
  read outside its bounds;
* ``take`` reads its index, brings it into range as ``mode`` says (``clip`` clamps to
  ``[0, n - 1]``, ``wrap`` is a floor modulo) and gathers along ``axis`` (of the flattened
  data when ``axis`` is None), with ``batch_dims`` leading axes shared by data and indices
  (``topi.take``). Mode ``"fast"``, where the reference raises for an index out of range, adds
  a run-time check (``LoweringCall.require``: the executor raises the reference's error) and
  still clamps as ``clip`` does, so no compiled kernel reads out of bounds;
* ``layout_transform`` maps each destination index back to the primal index of each axis
  (``outer * factor + inner``) and splits that by the source's factors, the bijective layout
  map ``topi.layout_transform`` uses (``include/tvm/topi/transform.h``,
  ``src/tir/ir/data_layout.cc``), without its bounds guard (an ``if_then_else`` around every
  read, for padding), as the relation requires each factor to divide its axis;
* ``shape_of`` is a constant tensor of the input's static shape; ``one_hot`` compares the
  index with the position on the new axis (``topi.one_hot``); an index out of ``[0, depth)``
  matches no position and gives ``off_value`` everywhere.

An identity (a reshape to the same shape, a single concatenated tensor) is still a new stage, a
copy the schedule inlines: a rule's result is never one of its inputs. A result with no elements
is a constant compute that reads nothing (its index arithmetic could divide by a zero extent).
Integer indices are taken as int64 as the references do (``astype``): a uint64 index from 2**63
up is negative, a bit cast rather than a TIR cast, which the simplifier assumes nonnegative (it
would drop ``take``'s clamp below 0 and read out of bounds). ``one_hot``'s values are cast to
``dtype`` as numpy's ``astype`` does (to bool: nonzero, NaN included); floats become unsigned
integers through int64, numpy's x86 behaviour for negative values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from relay.ir.types import TensorType, TupleType
from relay.op.lowering.common import out as _out, static as _static, to_bfloat16
from relay.op.registry import LoweringCall, lowering_rule
from relay.op.transform import (
    _norm_axis,
    _norm_insert_axis,
    _slice_range,
    _stride,
    parse_layout,
)

IndexMap = Callable[[Sequence[Any]], Sequence[Any]]
"""Output index (TIR expressions) -> input index."""

_INT32_MAX = 2**31 - 1


# ---- shared helpers -----------------------------------------------------------------------------


def _attr_int(call: LoweringCall, name: str) -> int:
    value = call.attrs[name]
    assert isinstance(value, int)
    return value


def _attr_ints(call: LoweringCall, name: str) -> tuple[int, ...] | None:
    value = call.attrs[name]
    if value is None:
        return None
    assert isinstance(value, tuple)
    return tuple(int(v) for v in value)  # type: ignore[arg-type]


def _filled(shape: tuple[int, ...], dtype: str, name: str) -> Any:
    """A tensor of ``shape`` (with no elements) that reads nothing."""
    from tvm import te, tirx

    return te.compute(shape, lambda *i: tirx.const(0, dtype), name=name)


def _gather(x: Any, shape: tuple[int, ...], index: IndexMap, name: str) -> Any:
    """``out[i] = x[index(i)]`` over ``shape``."""
    from tvm import te

    if math.prod(shape) == 0:
        return _filled(shape, str(x.dtype), name)
    return te.compute(shape, lambda *i: x(*index(i)), name=name)


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _as_int64(index: Any, dtype: str) -> Any:
    """An integer ``index`` of ``dtype`` as int64, as numpy's ``astype(int64)`` does: uint64
    values from 2**63 wrap to negative ones. That is a bit cast, not a TIR cast: the simplifier
    takes ``int64(uint64)`` to be nonnegative and would drop a clamp below 0."""
    from tvm import tirx

    if dtype == "uint64":
        return tirx.reinterpret("int64", index)
    return tirx.Cast("int64", index)


def _cast(value: Any, src: str, dtype: str) -> Any:
    """``value`` (of dtype ``src``) converted to ``dtype`` as numpy's ``astype`` does: a TIR
    cast (to bool: nonzero, NaN included), but floats become unsigned integers through int64."""
    from tvm import tirx

    if src == dtype:
        return value
    if dtype == "bfloat16":
        return to_bfloat16(value)
    if _is_float(src) and dtype in ("uint8", "uint16", "uint32"):
        return tirx.Cast(dtype, tirx.Cast("int64", value))
    return tirx.Cast(dtype, value)


def _nonunit(shape: Sequence[int]) -> list[int]:
    return [k for k, d in enumerate(shape) if d != 1]


def _unravel(flat: Any, shape: Sequence[int]) -> list[Any]:
    """The row-major index into ``shape`` of the linear index ``flat`` (size-1 axes: 0)."""
    from tvm import tirx

    index: list[Any] = [0] * len(shape)
    axes = _nonunit(shape)
    for n, k in enumerate(reversed(axes)):
        if n == len(axes) - 1:
            index[k] = flat
        else:
            index[k] = tirx.floormod(flat, shape[k])
            flat = tirx.floordiv(flat, shape[k])
    return index


def _ravel(index: Sequence[Any], shape: Sequence[int]) -> Any:
    """The row-major linear index of ``index`` into ``shape``."""
    flat: Any = 0
    for k in _nonunit(shape):
        flat = index[k] if isinstance(flat, int) and flat == 0 else flat * shape[k] + index[k]
    return flat


def _reshape_to(x: Any, shape: tuple[int, ...], name: str = "reshape") -> Any:
    """``x`` (row-major) viewed with ``shape`` (the same element count)."""
    src = _static(x.shape)
    if src == shape:
        return _gather(x, shape, list, name)
    s_axes, d_axes = _nonunit(src), _nonunit(shape)
    if [src[k] for k in s_axes] == [shape[k] for k in d_axes]:
        # only size-1 axes differ: the other axes map one to one

        def same(i: Sequence[Any]) -> list[Any]:
            index: list[Any] = [0] * len(src)
            for s, d in zip(s_axes, d_axes, strict=True):
                index[s] = i[d]
            return index

        return _gather(x, shape, same, name)
    return _gather(x, shape, lambda i: _unravel(_ravel(i, shape), src), name)


def _broadcast(x: Any, shape: tuple[int, ...], name: str = "broadcast_to") -> Any:
    """``x`` broadcast to ``shape`` (numpy rules: trailing axes aligned, 1s stretched)."""
    src = _static(x.shape)
    if src == shape:
        return _gather(x, shape, list, name)
    lead = len(shape) - len(src)
    return _gather(
        x, shape, lambda i: [0 if d == 1 else i[lead + k] for k, d in enumerate(src)], name
    )


def _affine(start: Sequence[int], step: Sequence[int]) -> IndexMap:
    """The index map ``i -> start + i * step``, axis by axis."""

    def index(i: Sequence[Any]) -> list[Any]:
        return [
            v if (b, s) == (0, 1) else b + v if s == 1 else b + v * s
            for v, b, s in zip(i, start, step, strict=True)
        ]

    return index


def _chain(cases: Sequence[tuple[Any, Any]], default: Any) -> Any:
    """``if c0: v0 elif c1: v1 ... else: default``, evaluating only the branch taken."""
    from tvm import tirx

    value = default
    for cond, then in reversed(cases):
        value = tirx.if_then_else(cond, then, value)
    return value


# ---- reshapes -----------------------------------------------------------------------------------


@lowering_rule("reshape", "reshape_like", "squeeze", "expand_dims", "nn.batch_flatten")
def _reshape_rule(call: LoweringCall) -> Any:
    shape, _ = _out(call)
    return _reshape_to(call.args[0], shape, call.name.split(".")[-1])


# ---- permutations, broadcasting, repetition -----------------------------------------------------


@lowering_rule("transpose")
def _transpose_rule(call: LoweringCall) -> Any:
    x = call.args[0]
    ndim = len(x.shape)
    axes = _attr_ints(call, "axes")
    perm = list(range(ndim))[::-1] if axes is None else [_norm_axis(a, ndim) for a in axes]
    shape, _ = _out(call)

    def index(i: Sequence[Any]) -> list[Any]:
        out: list[Any] = [0] * ndim
        for k, p in enumerate(perm):
            out[p] = i[k]
        return out

    return _gather(x, shape, index, "transpose")


@lowering_rule("broadcast_to", "broadcast_to_like")
def _broadcast_rule(call: LoweringCall) -> Any:
    shape, _ = _out(call)
    return _broadcast(call.args[0], shape)


@lowering_rule("reverse")
def _reverse_rule(call: LoweringCall) -> Any:
    x = call.args[0]
    src = _static(x.shape)
    ax = _norm_axis(_attr_int(call, "axis"), len(src))
    last = src[ax] - 1
    return _gather(
        x, src, lambda i: [last - v if k == ax else v for k, v in enumerate(i)], "reverse"
    )


@lowering_rule("repeat")
def _repeat_rule(call: LoweringCall) -> Any:
    from tvm import tirx

    x = call.args[0]
    ax = _norm_axis(_attr_int(call, "axis"), len(x.shape))
    repeats = _attr_int(call, "repeats")
    shape, _ = _out(call)
    return _gather(
        x,
        shape,
        lambda i: [tirx.floordiv(v, repeats) if k == ax else v for k, v in enumerate(i)],
        "repeat",
    )


@lowering_rule("tile")
def _tile_rule(call: LoweringCall) -> Any:
    from tvm import tirx

    x = call.args[0]
    src = _static(x.shape)
    shape, _ = _out(call)
    if shape == src:
        return _gather(x, shape, list, "tile")
    lead = len(shape) - len(src)

    def index(i: Sequence[Any]) -> list[Any]:
        return [
            0 if d == 1 else i[lead + k] if shape[lead + k] == d else tirx.floormod(i[lead + k], d)
            for k, d in enumerate(src)
        ]

    return _gather(x, shape, index, "tile")


# ---- joining and splitting ----------------------------------------------------------------------


@lowering_rule("concatenate")
def _concatenate_rule(call: LoweringCall) -> Any:
    from tvm import te

    shape, dtype = _out(call)
    ax = _norm_axis(_attr_int(call, "axis"), len(shape))
    parts = [(t, int(t.shape[ax])) for t in call.args[0] if int(t.shape[ax]) > 0]
    if math.prod(shape) == 0:
        return _filled(shape, dtype, "concatenate")
    if len(parts) == 1:
        return _gather(parts[0][0], shape, list, "concatenate")
    offsets = [0]
    for _, n in parts:
        offsets.append(offsets[-1] + n)

    def read(t: Any, start: int, i: Sequence[Any]) -> Any:
        return t(*[v - start if k == ax else v for k, v in enumerate(i)])

    def body(*i: Any) -> Any:
        cases = [
            (i[ax] < offsets[n + 1], read(t, offsets[n], i)) for n, (t, _) in enumerate(parts[:-1])
        ]
        return _chain(cases, read(parts[-1][0], offsets[-2], i))

    return te.compute(shape, body, name="concatenate")


@lowering_rule("stack")
def _stack_rule(call: LoweringCall) -> Any:
    from tvm import te

    shape, dtype = _out(call)
    tensors = list(call.args[0])
    at = _norm_insert_axis(_attr_int(call, "axis"), len(shape) - 1)
    if math.prod(shape) == 0:
        return _filled(shape, dtype, "stack")

    def body(*i: Any) -> Any:
        rest = [*i[:at], *i[at + 1 :]]
        cases = [(i[at] == n, t(*rest)) for n, t in enumerate(tensors[:-1])]
        return _chain(cases, tensors[-1](*rest))

    return te.compute(shape, body, name="stack")


@lowering_rule("split")
def _split_rule(call: LoweringCall) -> tuple[Any, ...]:
    x = call.args[0]
    ndim = len(x.shape)
    ax = _norm_axis(_attr_int(call, "axis"), ndim)
    out_type = call.out_type
    assert isinstance(out_type, TupleType)
    pieces = []
    start = [0] * ndim
    for n, field in enumerate(out_type.fields):
        assert isinstance(field, TensorType)
        shape = _static(field.shape)
        pieces.append(_gather(x, shape, _affine(start, [1] * ndim), f"split{n}"))
        start = [*start[:ax], start[ax] + shape[ax], *start[ax + 1 :]]
    return tuple(pieces)


# ---- slicing and gathering ----------------------------------------------------------------------


@lowering_rule("strided_slice")
def _strided_slice_rule(call: LoweringCall) -> Any:
    x = call.args[0]
    src = _static(x.shape)
    begin, end = _attr_ints(call, "begin") or (), _attr_ints(call, "end") or ()
    strides, axes = _attr_ints(call, "strides"), _attr_ints(call, "axes")
    mode = str(call.attrs["slice_mode"])
    if axes is None:
        sliced = list(range(max(len(begin), len(end), len(strides or ()))))
    else:
        sliced = [_norm_axis(a, len(src)) for a in axes]
    start, step = [0] * len(src), [1] * len(src)
    for k, ax in enumerate(sliced):
        step[ax] = _stride(k, strides, mode)
        start[ax], _ = _slice_range(src[ax], k, begin, end, step[ax], mode)
    shape, _ = _out(call)
    return _gather(x, shape, _affine(start, step), "strided_slice")


def _in_range(index: Any, dtype: str, n: int, mode: str) -> Any:
    """``index`` (of integer ``dtype``) brought into ``[0, n)`` as take's ``mode`` says."""
    from tvm import tirx

    v = _as_int64(index, dtype)
    if mode == "wrap":
        v = tirx.floormod(v, tirx.const(n, "int64"))
    else:  # "clip", and "fast" (where the reference raises on an index out of range)
        v = tirx.min(tirx.max(v, tirx.const(0, "int64")), tirx.const(n - 1, "int64"))
    return tirx.Cast("int32", v) if n <= _INT32_MAX else v


def _require_in_range(call: LoweringCall, indices: Any, dtype: str, flat: int | None) -> None:
    """Mode ``"fast"``: the reference raises for an index outside ``[0, n)``; so does the
    compiled call, through a run-time check (:meth:`LoweringCall.require`)."""
    from tvm import te, tirx

    dshape = _static(call.args[0].shape)
    if flat is None:
        axis = call.attrs["axis"]
        assert isinstance(axis, int)
        ax = _norm_axis(axis, len(dshape))
        n, where = dshape[ax], f"axis {ax} of size {dshape[ax]}"
    else:
        n, where = flat, f"a flattened tensor of size {flat}"

    def bad(*i: Any) -> Any:
        v = _as_int64(indices(*i), dtype)
        return tirx.Or(v < tirx.const(0, "int64"), v >= tirx.const(n, "int64"))

    violated = te.compute(indices.shape, bad, name="take_check")
    call.require(
        violated, f'operator take failed: a take index is out of range for {where} (mode "fast")'
    )


@lowering_rule("take")
def _take_rule(call: LoweringCall) -> Any:
    data, indices = call.args
    dshape, ishape = _static(data.shape), _static(indices.shape)
    shape, _ = _out(call)
    mode, idtype = str(call.attrs["mode"]), str(indices.dtype)
    axis = call.attrs["axis"]
    if mode == "fast":
        _require_in_range(call, indices, idtype, math.prod(dshape) if axis is None else None)
    if axis is None:
        n = math.prod(dshape)
        if math.prod(shape) == 0 or n == 0:
            return _filled(shape, str(data.dtype), "take")
        return _gather(
            data, shape, lambda i: _unravel(_in_range(indices(*i), idtype, n, mode), dshape), "take"
        )
    assert isinstance(axis, int)
    ax = _norm_axis(axis, len(dshape))
    bd = _attr_int(call, "batch_dims")
    bd = bd + len(ishape) if bd < 0 else bd
    n = dshape[ax]
    if n == 0:
        return _filled(shape, str(data.dtype), "take")
    width = len(ishape) - bd  # the output axes that come from the indices

    def index(i: Sequence[Any]) -> list[Any]:
        j = _in_range(indices(*i[:bd], *i[ax : ax + width]), idtype, n, mode)
        return [*i[:ax], j, *i[ax + width :]]

    return _gather(data, shape, index, "take")


# ---- layouts, shapes, one-hot -------------------------------------------------------------------


@lowering_rule("layout_transform")
def _layout_transform_rule(call: LoweringCall) -> Any:
    from tvm import tirx

    x = call.args[0]
    src = parse_layout(str(call.attrs["src_layout"]))
    dst = parse_layout(str(call.attrs["dst_layout"]))
    shape, _ = _out(call)
    src_factor = {a: f for a, f in src if f}
    dst_factor = {a: f for a, f in dst if f}

    def index(i: Sequence[Any]) -> list[Any]:
        pos = {ax: v for ax, v in zip(dst, i, strict=True)}
        primal: dict[str, Any] = {}
        for letter, factor in dst:
            if factor == 0:
                f = dst_factor.get(letter)
                outer = pos[(letter, 0)]
                primal[letter] = outer if f is None else outer * f + pos[(letter, f)]
        out: list[Any] = []
        for letter, factor in src:
            g = src_factor.get(letter)
            if g is None:
                out.append(primal[letter])
            elif factor == 0:
                out.append(tirx.floordiv(primal[letter], g))
            else:
                out.append(tirx.floormod(primal[letter], g))
        return out

    return _gather(x, shape, index, "layout_transform")


@lowering_rule("shape_of")
def _shape_of_rule(call: LoweringCall) -> Any:
    from tvm import te, tirx

    dims = _static(call.args[0].shape)
    shape, dtype = _out(call)
    if not dims:
        return _filled(shape, dtype, "shape_of")

    def body(i: Any) -> Any:
        cases = [(i == k, tirx.const(d, dtype)) for k, d in enumerate(dims[:-1])]
        return _chain(cases, tirx.const(dims[-1], dtype))

    return te.compute(shape, body, name="shape_of")


@lowering_rule("one_hot")
def _one_hot_rule(call: LoweringCall) -> Any:
    from tvm import te, tirx

    indices, on_value, off_value = call.args
    shape, dtype = _out(call)
    at = _norm_insert_axis(_attr_int(call, "axis"), len(indices.shape))
    idtype, on_dtype, off_dtype = str(indices.dtype), str(on_value.dtype), str(off_value.dtype)
    if math.prod(shape) == 0:
        return _filled(shape, dtype, "one_hot")

    def body(*i: Any) -> Any:
        v = _as_int64(indices(*i[:at], *i[at + 1 :]), idtype)
        hit = v == tirx.Cast("int64", i[at])
        return tirx.Select(
            hit, _cast(on_value(), on_dtype, dtype), _cast(off_value(), off_dtype, dtype)
        )

    return te.compute(shape, body, name="one_hot")
