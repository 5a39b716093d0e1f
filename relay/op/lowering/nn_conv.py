"""Lowering of the convolutions, poolings and padding (``nn.conv2d``, ``nn.conv2d_transpose``,
``nn.max_pool2d``, ``nn.avg_pool2d``, their gradients, ``nn.adaptive_avg_pool2d``,
``nn.global_avg_pool2d``, ``nn.pad``).

Every rule computes on *logical* ``(N, C, H, W)`` (data) and ``(O, I, H, W)`` (kernel)
indices and reads and writes each tensor through its layout string (``NCHW``/``NHWC`` data,
any of the six kernel layouts), so no transpose stage is ever built. The windows follow TVM's
topi compute definitions (``python/tvm/topi/nn/conv2d.py``, ``conv2d_transpose.py``,
``pooling.py``, ``pad.py``; ``include/tvm/topi/nn/pooling.h``):

* ``nn.conv2d`` is topi's direct ``conv2d_nchw``/``group_conv2d_nchw``: a padded-input stage
  (``if_then_else`` on the borders, only the rows and columns the windows read; absent without
  padding), then one reduction over the group's input channels and the kernel window,
  ``out[n, o, y, x] = sum pad[n, g * I + i, y * sh + a * dh, x * sw + b * dw] * w[o, i, a, b]``
  with ``g = o // (O / groups)``. Operands are cast to the accumulation dtype of the reference
  (float32 for float16, 64-bit for integers) and a last stage casts to ``out_dtype`` when that
  differs (integer results wrap, as the reference's ``astype`` does). The reduction stage is
  what the CPU schedule (:mod:`relay.backend.schedule.conv`) tiles.
* ``nn.conv2d_transpose`` is topi's ``conv2d_transpose_nchw`` as one stage and a reduction:
  the input dilated by the stride and padded by ``(K - 1) * d - pad`` (a stage that reads the
  data only where ``(q - offset) % stride == 0``), correlated with the spatially flipped
  kernel, per group (the kernel is ``IOHW``: ``I`` the data channels, ``O`` per group).
  ``output_padding`` needs nothing more: those rows are the same sum, usually empty.
* poolings read the window ``y * s + a * d - pad`` through an in-bounds test (padding is the
  dtype's lowest value for ``max``, zero for ``avg``; ceil mode's extra windows read padding
  only); ``max`` uses a reducer that propagates NaN (TIR's ``max`` drops it; numpy's keeps
  it), ``or`` for bool. ``avg`` sums in the reference's dtype (float32 for float16, the integer
  dtype itself, wrapping) and divides by a closed-form count of the taps in range
  (``count_include_pad``: in the explicitly padded input), integers rounding toward zero.
* ``nn.max_pool2d_grad`` follows topi's ``pool_grad``: a stage finds each window's maximum
  (the NaN-propagating reducer), a second its first tap holding it (the lowest position
  equal to it, or NaN when it is NaN: numpy's ``argmax``), then each input element sums,
  over the taps that can reach it (``(h + pad - a * d) % s == 0``), the out_grad of the
  windows whose first maximum it is. ``nn.avg_pool2d_grad`` sums ``out_grad / count`` the
  same way. The windows are read at clamped indices: TVM merges nested ``if_then_else``
  conditions into one, so a read guarded by the outer test could run out of bounds.
* ``nn.adaptive_avg_pool2d`` (and ``nn.global_avg_pool2d``, its one-window case) reduce over
  the largest window, reading only rows ``floor(i * H / OH) .. ceil((i + 1) * H / OH)``
  (an ``if_then_else``: ``te.sum``'s ``where`` is dropped by ``te.create_prim_func`` in this
  TVM), then divide by the window's size.
* ``nn.pad`` is topi's ``pad``/``mirror_pad`` index map: ``constant`` reads the data where the
  index is inside it (negative widths crop), ``edge`` clamps the index, ``reflect`` mirrors it
  once (widths are below the extent); ``pad_value`` is cast to the data dtype as numpy does.

Results with no elements are constant stages that read nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from relay.ir.types import TensorType
from relay.op.lowering.common import bfloat16_to_float32, to_bfloat16
from relay.op.lowering.elemwise import int_compare
from relay.op.nn import _padding4, _pair
from relay.op.registry import LoweringCall, lowering_rule

Index = Sequence[Any]


# ---- shared helpers -----------------------------------------------------------------------------


def _shape(ty: Any) -> tuple[int, ...]:
    """The static shape of the tensor type ``ty`` (lowering only sees static shapes)."""
    assert isinstance(ty, TensorType)
    dims = tuple(ty.shape)
    assert all(isinstance(d, int) for d in dims)
    return tuple(int(d) for d in dims if isinstance(d, int))


def _dtype(ty: Any) -> str:
    assert isinstance(ty, TensorType)
    return str(ty.dtype)


def _str(call: LoweringCall, name: str) -> str:
    value = call.attrs[name]
    assert isinstance(value, str)
    return value


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _dims(shape: Sequence[int], layout: str, letters: str) -> tuple[int, ...]:
    """The extents of the axes ``letters`` of a tensor of ``shape`` in ``layout``."""
    return tuple(shape[layout.index(c)] for c in letters)


def _at(t: Any, layout: str, **index: Any) -> Any:
    """``t`` read at the logical ``index`` (one entry per letter of ``layout``)."""
    return t(*[index[c] for c in layout])


def _logical(layout: str, idx: Index) -> dict[str, Any]:
    """A physical index of a tensor in ``layout`` as letter -> index."""
    return dict(zip(layout, idx, strict=True))


def _filled(shape: Sequence[int], dtype: str, name: str) -> Any:
    """A tensor of ``shape`` full of zeros: it reads nothing (for results with no elements)."""
    from tvm import te, tirx

    return te.compute(tuple(shape), lambda *i: tirx.const(0, dtype), name=name)


def _zero(dtype: str) -> Any:
    from tvm import tirx

    return tirx.const(0, dtype)


def _dtype_of(e: Any) -> str:
    """The dtype of a TIR expression (``PrimExpr.ty`` in this TVM)."""
    return str(e.ty)


def _cast(value: Any, dtype: str) -> Any:
    """``value`` converted to ``dtype`` as numpy's ``astype`` does (bool: nonzero, NaN true;
    floats become unsigned integers through int64)."""
    from tvm import tirx

    src = _dtype_of(value)
    if src == dtype:
        return value
    if dtype == "bfloat16":
        return to_bfloat16(value)
    if dtype == "bool":
        nonzero = value != tirx.const(0, src)
        return tirx.Or(nonzero, tirx.isnan(value)) if _is_float(src) else nonzero
    if _is_float(src) and dtype.startswith("uint"):
        return tirx.Cast(dtype, tirx.Cast("int64", value))
    return tirx.Cast(dtype, value)


def _acc_dtype(out: str) -> str:
    """The dtype the reference accumulates a product of ``out`` results in."""
    if _is_float(out):
        return "float32" if out in ("float16", "bfloat16") else out
    return "uint64" if out.startswith("uint") else "int64"


def _wide(dtype: str) -> str:
    """The dtype the reference does float math of ``dtype`` data in (integers: their own)."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def _in_range(i: Any, lo: int, hi: int) -> Any:
    """``lo <= i < hi`` (the bounds a plain Python int each)."""
    from tvm import tirx

    return tirx.all(i >= lo, i < hi)


def _lowest(dtype: str) -> Any:
    """The padding of max pooling: -inf, the integer minimum, or False."""
    from tvm import tirx

    if dtype == "bool":
        return tirx.const(False, "bool")
    if _is_float(dtype):
        return tirx.const(float("-inf"), dtype)
    return tirx.min_value(dtype)


def _padded(
    x: Any, layout: str, before: tuple[int, int], extent: tuple[int, int], value: Any, name: str
) -> Any:
    """The stage holding ``x`` (``layout``) shifted by ``before`` rows and columns and padded
    with ``value`` to ``extent`` (height, width); ``x`` itself when that changes nothing."""
    from tvm import te, tirx

    shape = [int(d) for d in x.shape]
    h, w = _dims(shape, layout, "HW")
    top, left = before
    if top == 0 and left == 0 and extent[0] <= h and extent[1] <= w:
        return x
    for letter, e in zip("HW", extent, strict=True):
        shape[layout.index(letter)] = e

    def body(*idx: Any) -> Any:
        at = _logical(layout, idx)
        y, xx = at["H"] - top, at["W"] - left
        inside = tirx.all(_in_range(y, 0, h), _in_range(xx, 0, w))
        return tirx.if_then_else(inside, _at(x, layout, **{**at, "H": y, "W": xx}), value)

    return te.compute(tuple(shape), body, name=name)


# ---- convolutions -------------------------------------------------------------------------------


def _conv_layouts(call: LoweringCall) -> tuple[str, str, str]:
    data = _str(call, "data_layout")
    return data, _str(call, "kernel_layout"), _str(call, "out_layout") or data


def _finish(res: Any, acc: str, out_dtype: str, name: str) -> Any:
    """``res`` (accumulated in ``acc``) as ``out_dtype``: a cast stage when they differ."""
    from tvm import te

    if acc == out_dtype:
        return res
    return te.compute(res.shape, lambda *i: _cast(res(*i), out_dtype), name=f"{name}_cast")


@lowering_rule("nn.conv2d")
def _conv2d_rule(call: LoweringCall) -> Any:
    from tvm import te

    x, w = call.args
    layout, kernel_layout, out_layout = _conv_layouts(call)
    sh, sw = _pair(call.name, "strides", call.attrs["strides"])
    dh, dw = _pair(call.name, "dilation", call.attrs["dilation"])
    pt, pl, _, _ = _padding4(call.name, call.attrs["padding"])
    groups = call.attrs["groups"]
    assert isinstance(groups, int)
    o, i, kh, kw = _dims(_shape(call.arg_types[1]), kernel_layout, "OIHW")
    out_shape, out_dtype = _shape(call.out_type), _dtype(call.out_type)
    if math.prod(out_shape) == 0 or i == 0:  # a sum over no channels: zeros
        return _filled(out_shape, out_dtype, "conv2d")
    oh, ow = _dims(out_shape, out_layout, "HW")
    acc = _acc_dtype(out_dtype)
    need = ((oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1)
    zero = _zero(str(x.dtype))
    padded = _padded(x, layout, (pt, pl), need, zero, "conv2d_pad")
    per_group = o // groups
    rc = te.reduce_axis((0, i), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")

    def body(*idx: Any) -> Any:
        at = _logical(out_layout, idx)
        oc = at["C"]
        c = rc if groups == 1 else (oc // per_group) * i + rc
        pixel = _at(
            padded, layout, N=at["N"], C=c, H=at["H"] * sh + ry * dh, W=at["W"] * sw + rx * dw
        )
        weight = _at(w, kernel_layout, O=oc, I=rc, H=ry, W=rx)
        return te.sum(_cast(pixel, acc) * _cast(weight, acc), axis=[rc, ry, rx])

    res = te.compute(out_shape, body, name="conv2d")
    return _finish(res, acc, out_dtype, "conv2d")


@lowering_rule("nn.conv2d_transpose")
def _conv2d_transpose_rule(call: LoweringCall) -> Any:
    from tvm import te, tirx

    x, w = call.args
    layout, kernel_layout, out_layout = _conv_layouts(call)
    sh, sw = _pair(call.name, "strides", call.attrs["strides"])
    dh, dw = _pair(call.name, "dilation", call.attrs["dilation"])
    pt, pl, _, _ = _padding4(call.name, call.attrs["padding"])
    groups = call.attrs["groups"]
    assert isinstance(groups, int)
    n, c, h, wd = _dims(_shape(call.arg_types[0]), layout, "NCHW")
    _, og, kh, kw = _dims(_shape(call.arg_types[1]), kernel_layout, "IOHW")
    out_shape, out_dtype = _shape(call.out_type), _dtype(call.out_type)
    if math.prod(out_shape) == 0 or c == 0:  # a sum over no channels: zeros
        return _filled(out_shape, out_dtype, "conv2d_transpose")
    oh, ow = _dims(out_shape, out_layout, "HW")
    acc = _acc_dtype(out_dtype)
    cg = c // groups
    # out[y] sums x[iy] * w[a] over iy * s + a * d == y + pad; with a = K - 1 - a', the data
    # is read at q = y + a' * d of the dilated input D[q] = x[(q - off) / s], off = (K-1)d - pad
    off_h, off_w = (kh - 1) * dh - pt, (kw - 1) * dw - pl
    dil_shape = {"N": n, "C": c, "H": oh + (kh - 1) * dh, "W": ow + (kw - 1) * dw}
    zero = _zero(str(x.dtype))

    def dilated(*idx: Any) -> Any:
        at = _logical(layout, idx)
        qy, qx = at["H"] - off_h, at["W"] - off_w
        hit = tirx.all(
            qy >= 0,
            qx >= 0,
            tirx.floormod(qy, sh) == 0,
            tirx.floormod(qx, sw) == 0,
            tirx.floordiv(qy, sh) < h,
            tirx.floordiv(qx, sw) < wd,
        )
        src = _at(x, layout, **{**at, "H": tirx.floordiv(qy, sh), "W": tirx.floordiv(qx, sw)})
        return tirx.if_then_else(hit, src, zero)

    dil = te.compute(tuple(dil_shape[a] for a in layout), dilated, name="conv2d_transpose_dilate")
    rc = te.reduce_axis((0, cg), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")

    def body(*idx: Any) -> Any:
        at = _logical(out_layout, idx)
        oc = at["C"]
        ci = rc if groups == 1 else (oc // og) * cg + rc
        pixel = _at(dil, layout, N=at["N"], C=ci, H=at["H"] + ry * dh, W=at["W"] + rx * dw)
        o = oc if groups == 1 else oc % og
        weight = _at(w, kernel_layout, I=ci, O=o, H=kh - 1 - ry, W=kw - 1 - rx)
        return te.sum(_cast(pixel, acc) * _cast(weight, acc), axis=[rc, ry, rx])

    res = te.compute(out_shape, body, name="conv2d_transpose")
    return _finish(res, acc, out_dtype, "conv2d_transpose")


# ---- pooling ------------------------------------------------------------------------------------


class _Window:
    """A pooling's windows along both axes: size, stride, dilation, leading padding, the
    explicitly padded extent and the data's extent, per axis (height, width)."""

    def __init__(self, call: LoweringCall, data_shape: Sequence[int]) -> None:
        op = call.name
        self.layout = _str(call, "layout")
        self.k = _pair(op, "pool_size", call.attrs["pool_size"])
        self.s = _pair(op, "strides", call.attrs["strides"])
        self.d = _pair(op, "dilation", call.attrs["dilation"])
        pt, pl, pb, pr = _padding4(op, call.attrs["padding"])
        self.before = (pt, pl)
        self.after = (pb, pr)
        self.size = _dims(data_shape, self.layout, "HW")

    def start(self, axis: int, o: Any) -> Any:
        """The data row of window ``o``'s first tap along ``axis`` (may be negative)."""
        return o * self.s[axis] - self.before[axis]

    def count(self, axis: int, o: Any, include_pad: bool) -> Any:
        """How many taps of window ``o`` along ``axis`` fall in the data (``include_pad``: in
        the explicitly padded data), as the reference's ``_in_range_counts``."""
        from tvm import tirx

        k, d = self.k[axis], self.d[axis]
        lo = -self.before[axis] if include_pad else 0
        hi = self.size[axis] + (self.after[axis] if include_pad else 0) - 1
        start = self.start(axis, o)
        # taps a with lo <= start + a * d <= hi: ceil((lo - start) / d) .. floor((hi - start) / d)
        first = tirx.max(tirx.floordiv(lo - start + d - 1, d), 0)
        last = tirx.min(tirx.floordiv(hi - start, d), k - 1)
        return tirx.max(last - first + 1, 0)

    def counts(self, oy: Any, ox: Any, include_pad: bool) -> Any:
        """The element count window ``(oy, ox)`` divides by (at least 1)."""
        from tvm import tirx

        total = self.count(0, oy, include_pad) * self.count(1, ox, include_pad)
        return tirx.max(total, 1)

    def source(self, y: Any, a: Any, axis: int) -> Any:
        """The output window reaching data row ``y`` through tap ``a`` (when it divides)."""
        return y + self.before[axis] - a * self.d[axis]


def _pool_taps(win: _Window) -> tuple[Any, Any]:
    from tvm import te

    return te.reduce_axis((0, win.k[0]), "ry"), te.reduce_axis((0, win.k[1]), "rx")


def _window_read(x: Any, win: _Window, at: dict[str, Any], ry: Any, rx: Any) -> tuple[Any, Any]:
    """Whether tap ``(ry, rx)`` of the window at output ``at`` is in the data, and the read."""
    from tvm import tirx

    y = win.start(0, at["H"]) + ry * win.d[0]
    xx = win.start(1, at["W"]) + rx * win.d[1]
    inside = tirx.all(_in_range(y, 0, win.size[0]), _in_range(xx, 0, win.size[1]))
    return inside, _at(x, win.layout, **{**at, "H": y, "W": xx})


def _max_reducer(dtype: str) -> Any:
    """``max`` that propagates NaN (numpy's), ``or`` for bool."""
    from tvm import te, tirx

    if dtype == "bool":
        return te.comm_reducer(lambda a, b: tirx.Or(a, b), lambda t: tirx.const(False, t))
    if not _is_float(dtype):
        return te.max

    def combine(a: Any, b: Any) -> Any:
        return tirx.Select(tirx.Or(tirx.isnan(a), a > b), a, b)

    return te.comm_reducer(combine, lambda t: tirx.const(float("-inf"), t), name="nan_max")


@lowering_rule("nn.max_pool2d")
def _max_pool2d_rule(call: LoweringCall) -> Any:
    from tvm import te, tirx

    (x,) = call.args
    win = _Window(call, _shape(call.arg_types[0]))
    out_shape, dtype = _shape(call.out_type), _dtype(call.out_type)
    if math.prod(out_shape) == 0:
        return _filled(out_shape, dtype, "max_pool2d")
    ry, rx = _pool_taps(win)
    # bfloat16 in float32 (TVM has no bfloat16 isnan, and its legalization misses the
    # conversion of a value read in a reduction: see bfloat16_to_float32); the maximum is
    # one of the values, so the final conversion is exact
    work = "float32" if dtype == "bfloat16" else dtype
    reducer = _max_reducer(work)

    def body(*idx: Any) -> Any:
        inside, value = _window_read(x, win, _logical(win.layout, idx), ry, rx)
        if work != dtype:
            value = bfloat16_to_float32(value)
        return reducer(tirx.if_then_else(inside, value, _lowest(work)), axis=[ry, rx])

    pooled = te.compute(out_shape, body, name="max_pool2d")
    if work == dtype:
        return pooled
    return te.compute(out_shape, lambda *i: tirx.Cast(dtype, pooled(*i)), name="max_pool2d_cast")


def _mean(total: Any, count: Any, dtype: str) -> Any:
    """``total / count`` as the reference's average of ``dtype`` data: a float division in
    the wide dtype, or for integers the quotient rounded toward zero (``_truncdiv``)."""
    from tvm import tirx

    if _is_float(dtype):
        return _cast(total / tirx.Cast(_dtype_of(total), count), dtype)
    wide = tirx.Cast("int64", total)
    if _dtype_of(total) == "uint64":
        wide = tirx.reinterpret("int64", total)
    q = tirx.floordiv(tirx.abs(wide), tirx.Cast("int64", count))
    signed = tirx.Select(wide < 0, -q, q) if not dtype.startswith("uint") else q
    return tirx.Cast(dtype, signed)


@lowering_rule("nn.avg_pool2d")
def _avg_pool2d_rule(call: LoweringCall) -> Any:
    from tvm import te, tirx

    (x,) = call.args
    win = _Window(call, _shape(call.arg_types[0]))
    out_shape, dtype = _shape(call.out_type), _dtype(call.out_type)
    if math.prod(out_shape) == 0:
        return _filled(out_shape, dtype, "avg_pool2d")
    acc = _wide(dtype)
    ry, rx = _pool_taps(win)
    include_pad = bool(call.attrs["count_include_pad"])

    def total(*idx: Any) -> Any:
        inside, value = _window_read(x, win, _logical(win.layout, idx), ry, rx)
        zero = _zero(acc)
        return te.sum(tirx.if_then_else(inside, _cast(value, acc), zero), axis=[ry, rx])

    sums = te.compute(out_shape, total, name="avg_pool2d_sum")

    def mean(*idx: Any) -> Any:
        at = _logical(win.layout, idx)
        return _mean(sums(*idx), win.counts(at["H"], at["W"], include_pad), dtype)

    return te.compute(out_shape, mean, name="avg_pool2d")


def _pool_grad(
    call: LoweringCall, share: Callable[[dict[str, Any], Any, Any], Any], name: str
) -> Any:
    """The adjoint of a pooling: each data element sums ``share(at, ry, rx)`` over the taps
    ``(ry, rx)`` through which a window ``at`` (logical output index, H and W the window's)
    reads it."""
    from tvm import te, tirx

    win = _Window(call, _shape(call.arg_types[1]))
    out_shape, dtype = _shape(call.out_type), _dtype(call.out_type)
    oh, ow = _dims(_shape(call.arg_types[0]), win.layout, "HW")
    if math.prod(out_shape) == 0:
        return _filled(out_shape, dtype, name)
    acc = _wide(dtype)
    ry, rx = _pool_taps(win)

    def body(*idx: Any) -> Any:
        at = _logical(win.layout, idx)
        qy, qx = win.source(at["H"], ry, 0), win.source(at["W"], rx, 1)
        oy, ox = tirx.floordiv(qy, win.s[0]), tirx.floordiv(qx, win.s[1])
        reaches = tirx.all(
            qy >= 0,
            qx >= 0,
            tirx.floormod(qy, win.s[0]) == 0,
            tirx.floormod(qx, win.s[1]) == 0,
            oy < oh,
            ox < ow,
        )
        # the window read clamped into range: TVM merges nested if_then_else conditions into
        # one (evaluating every read in them), so no read may depend on ``reaches``
        clamped = {**at, "H": _clamp(oy, oh), "W": _clamp(ox, ow)}
        value = share(clamped, ry, rx)
        return te.sum(tirx.if_then_else(reaches, value, _zero(acc)), axis=[ry, rx])

    res = te.compute(out_shape, body, name=name)
    return _finish(res, acc, dtype, name)


def _clamp(i: Any, n: int) -> Any:
    """``i`` brought into ``[0, n)``."""
    from tvm import tirx

    return tirx.min(tirx.max(i, 0), n - 1)


@lowering_rule("nn.max_pool2d_grad")
def _max_pool2d_grad_rule(call: LoweringCall) -> Any:
    from tvm import te, tirx

    g, x = call.args
    win = _Window(call, _shape(call.arg_types[1]))
    g_shape = _shape(call.arg_types[0])
    dtype = _dtype(call.out_type)
    if math.prod(g_shape) == 0:
        return _filled(_shape(call.out_type), dtype, "max_pool2d_grad")
    acc = _wide(dtype)
    reducer = _max_reducer(dtype)

    def tap(idx: Sequence[Any], ry: Any, rx: Any) -> Any:
        inside, value = _window_read(x, win, _logical(win.layout, idx), ry, rx)
        return tirx.if_then_else(inside, value, _lowest(dtype))

    def peak(*idx: Any) -> Any:
        ry, rx = _pool_taps(win)
        return reducer(tap(idx, ry, rx), axis=[ry, rx])

    top = te.compute(g_shape, peak, name="max_pool2d_max")

    def first(*idx: Any) -> Any:
        # the window's first tap holding its maximum (NaN when there is one: numpy's argmax)
        ry, rx = _pool_taps(win)
        value, best = tap(idx, ry, rx), top(*idx)
        hit = tirx.Or(
            int_compare(tirx.EQ, value, best), tirx.And(tirx.isnan(value), tirx.isnan(best))
        )
        position = tirx.Select(hit, ry * win.k[1] + rx, win.k[0] * win.k[1])
        return te.min(position, axis=[ry, rx])

    arg = te.compute(g_shape, first, name="max_pool2d_argmax")

    def share(at: dict[str, Any], ty: Any, tx: Any) -> Any:
        hit = _at(arg, win.layout, **at) == ty * win.k[1] + tx
        return tirx.Select(hit, _cast(_at(g, win.layout, **at), acc), _zero(acc))

    return _pool_grad(call, share, "max_pool2d_grad")


@lowering_rule("nn.avg_pool2d_grad")
def _avg_pool2d_grad_rule(call: LoweringCall) -> Any:
    from tvm import tirx

    g, _ = call.args
    win = _Window(call, _shape(call.arg_types[1]))
    acc = _wide(_dtype(call.out_type))
    include_pad = bool(call.attrs["count_include_pad"])

    def share(at: dict[str, Any], ty: Any, tx: Any) -> Any:
        count = tirx.Cast(acc, win.counts(at["H"], at["W"], include_pad))
        return _cast(_at(g, win.layout, **at), acc) / count

    return _pool_grad(call, share, "avg_pool2d_grad")


def _adaptive_mean(x: Any, layout: str, out_shape: tuple[int, ...], name: str) -> Any:
    """Adaptive average pooling of ``x`` to ``out_shape`` (both in ``layout``)."""
    from tvm import te, tirx

    dtype = str(x.dtype)
    if math.prod(out_shape) == 0:
        return _filled(out_shape, dtype, name)
    h, w = _dims([int(d) for d in x.shape], layout, "HW")
    oh, ow = _dims(out_shape, layout, "HW")

    def bounds(i: Any, n: int, o: int) -> tuple[Any, Any]:
        return tirx.floordiv(i * n, o), tirx.floordiv((i + 1) * n + o - 1, o)

    def widest(n: int, o: int) -> int:
        return max(-(-(i + 1) * n // o) - i * n // o for i in range(o))

    ry = te.reduce_axis((0, widest(h, oh)), "ry")
    rx = te.reduce_axis((0, widest(w, ow)), "rx")
    acc = _wide(dtype)

    def total(*idx: Any) -> Any:
        at = _logical(layout, idx)
        (y0, y1), (x0, x1) = bounds(at["H"], h, oh), bounds(at["W"], w, ow)
        # the read clamped too, so it stays in range whatever TVM makes of the condition
        row, col = tirx.min(y0 + ry, h - 1), tirx.min(x0 + rx, w - 1)
        value = _cast(_at(x, layout, **{**at, "H": row, "W": col}), acc)
        # not te.sum(where=...): te.create_prim_func drops the condition in this TVM
        inside = tirx.all(y0 + ry < y1, x0 + rx < x1)
        return te.sum(tirx.if_then_else(inside, value, _zero(acc)), axis=[ry, rx])

    sums = te.compute(out_shape, total, name=f"{name}_sum")

    def mean(*idx: Any) -> Any:
        at = _logical(layout, idx)
        (y0, y1), (x0, x1) = bounds(at["H"], h, oh), bounds(at["W"], w, ow)
        return _mean(sums(*idx), (y1 - y0) * (x1 - x0), dtype)

    return te.compute(out_shape, mean, name=name)


@lowering_rule("nn.adaptive_avg_pool2d", "nn.global_avg_pool2d")
def _adaptive_avg_pool2d_rule(call: LoweringCall) -> Any:
    (x,) = call.args
    name = call.name.removeprefix("nn.")
    return _adaptive_mean(x, _str(call, "layout"), _shape(call.out_type), name)


# ---- pad ----------------------------------------------------------------------------------------


def _pad_index(mode: str, i: Any, before: int, size: int) -> Any:
    """The data index output index ``i`` reads along an axis (``edge``, ``reflect``)."""
    from tvm import tirx

    j = i - before
    if mode == "edge":
        return tirx.min(tirx.max(j, 0), size - 1)
    # reflect (widths below the extent): one mirror on either side, the edge not repeated
    j = tirx.abs(j)
    return tirx.Select(j >= size, 2 * (size - 1) - j, j)


@lowering_rule("nn.pad")
def _pad_rule(call: LoweringCall) -> Any:
    from tvm import te, tirx

    x, v = call.args
    out_shape, dtype = _shape(call.out_type), _dtype(call.out_type)
    if math.prod(out_shape) == 0:
        return _filled(out_shape, dtype, "pad")
    widths = call.attrs["pad_width"]
    assert isinstance(widths, tuple)
    befores = [int(p[0]) for p in widths]  # type: ignore[index, arg-type]
    sizes = _shape(call.arg_types[0])
    mode = _str(call, "pad_mode")
    if mode != "constant":
        return te.compute(
            out_shape,
            lambda *i: x(*[_pad_index(mode, *a) for a in zip(i, befores, sizes, strict=True)]),
            name="pad",
        )
    fill = _cast(v(), dtype)

    def body(*i: Any) -> Any:
        src = [k - b for k, b in zip(i, befores, strict=True)]
        conds = [_in_range(s, 0, n) for s, n in zip(src, sizes, strict=True)]
        if not conds:
            return x()
        return tirx.if_then_else(tirx.all(*conds), x(*src), fill)

    return te.compute(out_shape, body, name="pad")
