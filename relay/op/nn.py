"""Neural-network operators (Relay's ``nn.*`` family) with numpy references.

Each operator is registered under Relay's name (``nn.conv2d``...) with Relay's attribute
names and defaults (those of the C++ attribute nodes, which is what a text call without the
attribute means; a builder's defaults are those of Relay's Python API, and differ for
``nn.batch_matmul``'s ``transpose_b`` (True) and ``nn.leaky_relu``'s ``alpha`` (0.01)).

Algorithms and semantics:

* Convolution (``nn.conv2d``) is im2col: the padded input is sliced once per kernel tap
  ``(i, j)`` (offset ``i * dilation``, step ``stride``) into a patch tensor
  ``(N, C, KH, KW, OH, OW)``, which one ``einsum`` contracts with the kernel per group.
  ``OH = (H + pad_top + pad_bottom - ((KH - 1) * dilation + 1)) // stride + 1``. Padding takes
  1 value (all sides), 2 (``[pad_h, pad_w]``, both sides) or 4 (``[top, left, bottom,
  right]``), as in Relay. Layouts: data ``NCHW``/``NHWC``; kernel ``OIHW``, ``HWIO``,
  ``OHWI``, ``HWOI``, ``IOHW`` or ``IHWO`` (the letters name the axes, so any of them reads
  the same kernel); ``out_layout`` empty (the data layout) or ``NCHW``/``NHWC``.
* ``nn.conv2d_transpose`` scatters: input pixel ``(y, x)`` adds ``data * kernel[i, j]`` at
  ``(y * stride + i * dilation, x * stride + j * dilation)`` of a canvas, which is then cropped
  by the padding (and extended by ``output_padding`` zeros at the bottom/right), so
  ``OH = (H - 1) * stride + (KH - 1) * dilation + 1 - pad_top - pad_bottom + output_padding``.
  It is the adjoint of ``nn.conv2d`` with the same weight array. The kernel is ``IOHW``
  (``I`` = the data's channels, ``O`` = output channels per group); the output has
  ``O * groups`` channels (Relay's type relation said ``O`` when ``channels`` was not given,
  which disagrees with its own compute for ``groups > 1``).
* Pooling follows ``topi.nn.pool2d``: ``ceil_mode`` adds ``stride - 1`` to the numerator of the
  output size (no clamping, so a last window may start in the padding); ``max`` pads with
  the dtype's lowest value; ``avg`` divides the window's sum by the number of in-bounds
  elements (``count_include_pad=False``) or of elements inside the explicitly padded input
  (``True``, the ceil-mode extension not counted), at least 1. Integer averages truncate.
  ``nn.adaptive_avg_pool2d`` averages rows ``floor(i * H / OH) .. ceil((i + 1) * H / OH)``.
* ``nn.dense(data, weight)`` is ``data @ weight.T`` (weight ``(units, in)``);
  ``nn.matmul`` transposes the last two axes of ``tensor_a`` and/or the 2-d ``tensor_b`` on
  request; ``nn.batch_matmul`` multiplies rank-3 tensors, broadcasting a batch of 1.
  Products accumulate in float32 (float16 inputs), the float dtype, or 64-bit integers
  wrapped to ``out_dtype`` (empty: the data dtype), so integer results wrap as compiled code.
* ``nn.softmax``/``nn.log_softmax`` subtract the maximum first; ``nn.gelu`` (absent in Relay)
  is the exact ``x * (1 + erf(x / sqrt 2)) / 2``.
* ``nn.batch_norm`` is the inference form: ``(x - moving_mean) / sqrt(moving_var + epsilon) *
  gamma + beta`` along ``axis``, returning ``(out, moving_mean, moving_var)`` as Relay's
  compute did; ``center``/``scale`` False drop ``beta``/``gamma``. ``nn.layer_norm``
  normalizes over ``axis`` with the biased variance. ``nn.dropout`` is the inference
  identity, returning ``(data, ones)`` (the mask of kept elements).
* ``nn.pad`` takes ``pad_value`` as a rank-0 second input (cast to the data dtype);
  ``constant`` mode allows negative widths (cropping, as topi's pad does) while ``edge`` and
  ``reflect`` need widths ``>= 0`` (and ``reflect`` widths below the axis extent).
* ``nn.cross_entropy(p, t)`` is ``-sum(log(p) * t) / batch`` and
  ``nn.cross_entropy_with_logits(p, t)`` is ``-sum(p * t) / batch``, rank-0.

Attribute values that are wrong whatever the inputs (a zero stride, three padding values)
are rejected by the builders and by the references with
:class:`~relay.op.registry.AttrValidationError`; values that do not fit the inputs (an axis
out of range, a kernel whose channels do not match) raise ``ValueError`` from the reference,
which the interpreter reports at the call's span.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relay.ir.expr import Call, Expr, const
from relay.op.registry import AttrValidationError, OpDef, OpPattern, attr, register_op

Array = np.ndarray

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_flatten",
    "batch_matmul",
    "batch_norm",
    "bias_add",
    "conv2d",
    "conv2d_transpose",
    "cross_entropy",
    "cross_entropy_with_logits",
    "dense",
    "dropout",
    "gelu",
    "global_avg_pool2d",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "matmul",
    "max_pool2d",
    "pad",
    "prelu",
    "relu",
    "softmax",
]


# ---- shared helpers -----------------------------------------------------------------------------


def _shape_str(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _norm_axis(op: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def _as_ints(value: object) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,)
    assert isinstance(value, tuple)
    return tuple(int(v) for v in value)


def _pair(op: str, name: str, value: object, minimum: int = 1) -> tuple[int, int]:
    """A 2-d window attribute (``strides``, ``dilation``...): one value for both, or two."""
    vals = _as_ints(value)
    if len(vals) not in (1, 2):
        raise AttrValidationError(f"{op}: {name} takes 1 or 2 values, got {list(vals)}")
    if any(v < minimum for v in vals):
        bound = "positive" if minimum == 1 else "non-negative"
        raise AttrValidationError(f"{op}: {name} must be {bound}, got {list(vals)}")
    return (vals[0], vals[-1])


def _padding4(op: str, value: object) -> tuple[int, int, int, int]:
    """Relay's 2-d padding as ``(top, left, bottom, right)`` from 1, 2 or 4 values."""
    vals = _as_ints(value)
    if any(v < 0 for v in vals):
        raise AttrValidationError(f"{op}: padding must be non-negative, got {list(vals)}")
    if len(vals) == 1:
        return (vals[0], vals[0], vals[0], vals[0])
    if len(vals) == 2:
        return (vals[0], vals[1], vals[0], vals[1])
    if len(vals) == 4:
        return (vals[0], vals[1], vals[2], vals[3])
    raise AttrValidationError(f"{op}: padding takes 1, 2 or 4 values, got {list(vals)}")


def _need_float(op: str, *xs: Array) -> None:
    for x in xs:
        if not np.issubdtype(x.dtype, np.floating):
            raise ValueError(f"{op} needs floating-point tensors, got {x.dtype}")


def _same_dtype(op: str, a: Array, b: Array, what_a: str, what_b: str) -> None:
    if a.dtype != b.dtype:
        raise ValueError(f"{op}: {what_a} is {a.dtype} but {what_b} is {b.dtype}")


def _out_dtype(op: str, out_dtype: object, x: Array) -> np.dtype[Any]:
    assert isinstance(out_dtype, str)
    if not out_dtype:
        return x.dtype
    try:
        return np.dtype(out_dtype)
    except TypeError:
        raise ValueError(f"{op}: unknown out_dtype {out_dtype!r}") from None


def _acc_dtype(op: str, out: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype a product of ``out`` results accumulates in (wraps back to ``out`` exactly)."""
    if out.kind == "f":
        return np.dtype(np.float32) if out.itemsize < 4 else out
    if out.kind == "i":
        return np.dtype(np.int64)
    if out.kind == "u":
        return np.dtype(np.uint64)
    raise ValueError(f"{op} needs numeric tensors, got {out}")


def _wide(x: Array) -> Array:
    """``x`` in the dtype float math is done in (float32 for narrow floats)."""
    return x.astype(np.float32) if x.dtype.itemsize < 4 else x


def _truncdiv(total: Array, count: Array | int) -> Array:
    """Integer ``total / count`` (count > 0) rounded toward zero, in ``total``'s dtype."""
    q = np.abs(total.astype(np.int64)) // count
    return np.asarray(np.where(total < 0, -q, q).astype(total.dtype))


def _to_nchw(op: str, x: Array, layout: object, what: str = "data") -> Array:
    if x.ndim != 4:
        raise ValueError(f"{op}: {what} must have rank 4 ({layout}), got {_shape_str(x.shape)}")
    return x if layout == "NCHW" else np.transpose(x, (0, 3, 1, 2))


def _from_nchw(x: Array, layout: object) -> Array:
    return x if layout == "NCHW" else np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))


def _kernel_to(op: str, w: Array, layout: object, target: str) -> Array:
    assert isinstance(layout, str)
    if w.ndim != 4:
        raise ValueError(f"{op}: weight must have rank 4 ({layout}), got {_shape_str(w.shape)}")
    return np.transpose(w, [layout.index(c) for c in target])


def _check_out_layout(op: str, out_layout: object, layout: object) -> None:
    if out_layout not in ("", layout):
        raise AttrValidationError(f"{op}: out_layout {out_layout} differs from layout {layout}")


# ---- dense, matmul, batch_matmul ----------------------------------------------------------------


def _matmul_core(
    op: str, a: Array, b: Array, out_dtype: object, what: tuple[str, str]
) -> tuple[Array, Array, np.dtype[Any], np.dtype[Any]]:
    if not out_dtype:
        _same_dtype(op, a, b, *what)
    out = _out_dtype(op, out_dtype, a)
    acc = _acc_dtype(op, out)
    _acc_dtype(op, a.dtype)
    _acc_dtype(op, b.dtype)
    return a.astype(acc), b.astype(acc), acc, out


def _matmul_ref(
    tensor_a: Array,
    tensor_b: Array,
    *,
    units: int | None,
    out_dtype: str,
    transpose_a: bool,
    transpose_b: bool,
    op: str = "nn.matmul",
) -> Array:
    a, b = np.asarray(tensor_a), np.asarray(tensor_b)
    if a.ndim < (2 if transpose_a else 1):
        raise ValueError(f"{op}: tensor_a of shape {_shape_str(a.shape)} has too low a rank")
    if b.ndim != 2:
        raise ValueError(f"{op}: the weight must have rank 2, got {_shape_str(b.shape)}")
    a_k = a.shape[-2] if transpose_a else a.shape[-1]
    b_k, b_n = (b.shape[1], b.shape[0]) if transpose_b else b.shape
    if a_k != b_k:
        if op == "nn.dense":
            raise ValueError(f"{op}: data has {a_k} features but weight expects {b_k}")
        raise ValueError(
            f"{op}: tensor_a {_shape_str(a.shape)} and tensor_b {_shape_str(b.shape)} "
            f"have inner dimensions {a_k} and {b_k}"
        )
    if units is not None and units != b_n:
        raise ValueError(f"{op}: units={units} but the weight has {b_n} output units")
    wa, wb, _, out = _matmul_core(op, a, b, out_dtype, ("tensor_a", "tensor_b"))
    if transpose_a:
        wa = np.swapaxes(wa, -1, -2)
    if transpose_b:
        wb = wb.T
    return np.asarray(np.matmul(wa, wb).astype(out))


def _dense_ref(data: Array, weight: Array, *, units: int | None, out_dtype: str) -> Array:
    return _matmul_ref(
        data,
        weight,
        units=units,
        out_dtype=out_dtype,
        transpose_a=False,
        transpose_b=True,
        op="nn.dense",
    )


def _batch_matmul_ref(
    tensor_a: Array, tensor_b: Array, *, out_dtype: str, transpose_a: bool, transpose_b: bool
) -> Array:
    op = "nn.batch_matmul"
    a, b = np.asarray(tensor_a), np.asarray(tensor_b)
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(
            f"{op} needs rank-3 tensors, got {_shape_str(a.shape)} and {_shape_str(b.shape)}"
        )
    if a.shape[0] != b.shape[0] and 1 not in (a.shape[0], b.shape[0]):
        raise ValueError(f"{op}: batch dimensions {a.shape[0]} and {b.shape[0]} do not match")
    wa, wb, _, out = _matmul_core(op, a, b, out_dtype, ("tensor_a", "tensor_b"))
    if transpose_a:
        wa = np.swapaxes(wa, 1, 2)
    if transpose_b:
        wb = np.swapaxes(wb, 1, 2)
    if wa.shape[2] != wb.shape[1]:
        raise ValueError(
            f"{op}: tensor_a {_shape_str(a.shape)} and tensor_b {_shape_str(b.shape)} "
            f"have inner dimensions {wa.shape[2]} and {wb.shape[1]}"
        )
    return np.asarray(np.matmul(wa, wb).astype(out))


# ---- elementwise activations, bias_add ----------------------------------------------------------


def _relu_ref(data: Array) -> Array:
    x = np.asarray(data)
    if x.dtype == np.bool_:
        raise ValueError("nn.relu needs a numeric tensor, got bool")
    return np.asarray(np.maximum(x, np.zeros((), dtype=x.dtype)))


def _leaky_relu_ref(data: Array, *, alpha: float) -> Array:
    x = np.asarray(data)
    _need_float("nn.leaky_relu", x)
    w = _wide(x)
    return np.asarray(np.where(w > 0, w, w * np.asarray(alpha, w.dtype)).astype(x.dtype))


def _channel_param(op: str, x: Array, p: Array, axis: int, what: str) -> Array:
    """The 1-d parameter ``p`` of ``x``'s ``axis`` reshaped to broadcast along it."""
    ax = _norm_axis(op, axis, x.ndim)
    if p.ndim != 1 or p.shape[0] != x.shape[ax]:
        raise ValueError(
            f"{op}: {what} must have shape ({x.shape[ax]},) to match axis {axis} of "
            f"{_shape_str(x.shape)}, got {_shape_str(p.shape)}"
        )
    _same_dtype(op, x, p, "data", what)
    return p.reshape([-1 if i == ax else 1 for i in range(x.ndim)])


def _prelu_ref(data: Array, alpha: Array, *, axis: int) -> Array:
    x, a = np.asarray(data), np.asarray(alpha)
    _need_float("nn.prelu", x)
    ab = _channel_param("nn.prelu", x, a, axis, "alpha")
    w = _wide(x)
    return np.asarray(np.where(w > 0, w, w * ab).astype(x.dtype))


def _gelu_ref(data: Array) -> Array:
    x = np.asarray(data)
    _need_float("nn.gelu", x)
    wide = x.astype(np.float64)
    erf = np.asarray(np.frompyfunc(math.erf, 1, 1)(wide / math.sqrt(2.0)), dtype=np.float64)
    return np.asarray((0.5 * wide * (1.0 + erf)).astype(x.dtype))


def _bias_add_ref(data: Array, bias: Array, *, axis: int) -> Array:
    x, b = np.asarray(data), np.asarray(bias)
    if x.ndim == 0:
        raise ValueError("nn.bias_add needs data of rank at least 1")
    bb = _channel_param("nn.bias_add", x, b, axis, "bias")
    return np.asarray(np.add(x, bb, dtype=x.dtype))


# ---- softmax ------------------------------------------------------------------------------------


def _softmax_ref(data: Array, *, axis: int) -> Array:
    x = np.asarray(data)
    _need_float("nn.softmax", x)
    ax = _norm_axis("nn.softmax", axis, x.ndim)
    w = _wide(x)
    with np.errstate(all="ignore"):
        e = np.exp(w - np.max(w, axis=ax, keepdims=True))
        return np.asarray((e / np.sum(e, axis=ax, keepdims=True)).astype(x.dtype))


def _log_softmax_ref(data: Array, *, axis: int) -> Array:
    x = np.asarray(data)
    _need_float("nn.log_softmax", x)
    ax = _norm_axis("nn.log_softmax", axis, x.ndim)
    w = _wide(x)
    with np.errstate(all="ignore"):
        shifted = w - np.max(w, axis=ax, keepdims=True)
        out = shifted - np.log(np.sum(np.exp(shifted), axis=ax, keepdims=True))
        return np.asarray(out.astype(x.dtype))


# ---- convolution --------------------------------------------------------------------------------


def _conv_out(op: str, what: str, size: int, pad: int, k: int, d: int, s: int) -> int:
    span = (k - 1) * d + 1
    if size + pad < span:
        raise ValueError(
            f"{op}: the dilated kernel {what} ({span}) exceeds the padded input {what} "
            f"({size + pad})"
        )
    return (size + pad - span) // s + 1


def _check_conv_attrs(op: str, attrs: Mapping[str, object]) -> None:
    _pair(op, "strides", attrs["strides"])
    _pair(op, "dilation", attrs["dilation"])
    _padding4(op, attrs["padding"])
    groups = attrs["groups"]
    assert isinstance(groups, int)
    if groups < 1:
        raise AttrValidationError(f"{op}: groups must be positive, got {groups}")
    channels = attrs["channels"]
    if channels is not None and (not isinstance(channels, int) or channels < 1):
        raise AttrValidationError(f"{op}: channels must be positive, got {channels}")
    if attrs["kernel_size"] is not None:
        _pair(op, "kernel_size", attrs["kernel_size"])
    if "output_padding" in attrs:
        _pair(op, "output_padding", attrs["output_padding"], minimum=0)


def _check_kernel_meta(
    op: str, attrs: Mapping[str, object], out_channels: int, kh: int, kw: int
) -> None:
    channels = attrs["channels"]
    if channels is not None and channels != out_channels:
        raise ValueError(f"{op}: channels={channels} but the weight gives {out_channels}")
    if attrs["kernel_size"] is not None:
        ks = _pair(op, "kernel_size", attrs["kernel_size"])
        if ks != (kh, kw):
            raise ValueError(f"{op}: kernel_size={list(ks)} but the weight's is {[kh, kw]}")


def _conv2d_ref(data: Array, weight: Array, **attrs: Any) -> Array:
    op = "nn.conv2d"
    _check_conv_attrs(op, attrs)
    x = _to_nchw(op, np.asarray(data), attrs["data_layout"])
    w = _kernel_to(op, np.asarray(weight), attrs["kernel_layout"], "OIHW")
    sh, sw = _pair(op, "strides", attrs["strides"])
    dh, dw = _pair(op, "dilation", attrs["dilation"])
    pt, pl, pb, pr = _padding4(op, attrs["padding"])
    groups: int = attrs["groups"]
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    if c % groups:
        raise ValueError(f"{op}: data has {c} channels, not divisible by groups={groups}")
    if o % groups:
        raise ValueError(f"{op}: weight has {o} output channels, not divisible by groups={groups}")
    if i * groups != c:
        raise ValueError(
            f"{op}: data has {c} channels but weight expects {i * groups} (groups={groups})"
        )
    _check_kernel_meta(op, attrs, o, kh, kw)
    oh = _conv_out(op, "height", h, pt + pb, kh, dh, sh)
    ow = _conv_out(op, "width", wd, pl + pr, kw, dw, sw)
    if not attrs["out_dtype"]:
        _same_dtype(op, x, w, "data", "weight")
    out = _out_dtype(op, attrs["out_dtype"], x)
    acc = _acc_dtype(op, out)
    _acc_dtype(op, x.dtype)
    _acc_dtype(op, w.dtype)
    xp = np.pad(x.astype(acc), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    patches = np.empty((n, c, kh, kw, oh, ow), dtype=acc)
    for a in range(kh):
        for b in range(kw):
            patches[:, :, a, b] = xp[
                :,
                :,
                a * dh : a * dh + sh * (oh - 1) + 1 : sh,
                b * dw : b * dw + sw * (ow - 1) + 1 : sw,
            ]
    g = groups
    res = np.einsum(
        "ngcijhw,gocij->ngohw",
        patches.reshape(n, g, c // g, kh, kw, oh, ow),
        w.astype(acc).reshape(g, o // g, i, kh, kw),
        optimize=True,
    ).reshape(n, o, oh, ow)
    layout = attrs["out_layout"] or attrs["data_layout"]
    return np.asarray(_from_nchw(res.astype(out), layout))


def _conv2d_transpose_ref(data: Array, weight: Array, **attrs: Any) -> Array:
    op = "nn.conv2d_transpose"
    _check_conv_attrs(op, attrs)
    x = _to_nchw(op, np.asarray(data), attrs["data_layout"])
    w = _kernel_to(op, np.asarray(weight), attrs["kernel_layout"], "IOHW")
    sh, sw = _pair(op, "strides", attrs["strides"])
    dh, dw = _pair(op, "dilation", attrs["dilation"])
    oph, opw = _pair(op, "output_padding", attrs["output_padding"], minimum=0)
    pt, pl, pb, pr = _padding4(op, attrs["padding"])
    groups: int = attrs["groups"]
    n, c, h, wd = x.shape
    ci, og, kh, kw = w.shape
    if c % groups:
        raise ValueError(f"{op}: data has {c} channels, not divisible by groups={groups}")
    if ci != c:
        raise ValueError(f"{op}: data has {c} channels but weight expects {ci}")
    o = og * groups
    _check_kernel_meta(op, attrs, o, kh, kw)
    if h == 0 or wd == 0:
        raise ValueError(f"{op}: data has an empty spatial dimension: {_shape_str(x.shape)}")
    full_h = (h - 1) * sh + (kh - 1) * dh + 1
    full_w = (wd - 1) * sw + (kw - 1) * dw + 1
    oh = full_h - pt - pb + oph
    ow = full_w - pl - pr + opw
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: the padding leaves an empty output ({oh} x {ow})")
    if not attrs["out_dtype"]:
        _same_dtype(op, x, w, "data", "weight")
    out = _out_dtype(op, attrs["out_dtype"], x)
    acc = _acc_dtype(op, out)
    _acc_dtype(op, x.dtype)
    _acc_dtype(op, w.dtype)
    g, cg = groups, c // groups
    xg = x.astype(acc).reshape(n, g, cg, h, wd)
    wg = w.astype(acc).reshape(g, cg, og, kh, kw)
    canvas = np.zeros((n, o, max(full_h, pt + oh), max(full_w, pl + ow)), dtype=acc)
    for a in range(kh):
        for b in range(kw):
            contrib = np.einsum("ngchw,gco->ngohw", xg, wg[:, :, :, a, b], optimize=True)
            canvas[
                :,
                :,
                a * dh : a * dh + sh * (h - 1) + 1 : sh,
                b * dw : b * dw + sw * (wd - 1) + 1 : sw,
            ] += contrib.reshape(n, o, h, wd)
    res = canvas[:, :, pt : pt + oh, pl : pl + ow]
    layout = attrs["out_layout"] or attrs["data_layout"]
    return np.asarray(_from_nchw(res.astype(out), layout))


# ---- pooling ------------------------------------------------------------------------------------


def _check_pool_attrs(op: str, attrs: Mapping[str, object]) -> None:
    _pair(op, "pool_size", attrs["pool_size"])
    _pair(op, "strides", attrs["strides"])
    _pair(op, "dilation", attrs["dilation"])
    _padding4(op, attrs["padding"])
    _check_out_layout(op, attrs["out_layout"], attrs["layout"])


def _pool_axis(
    op: str, what: str, size: int, k: int, s: int, d: int, head: int, tail: int, ceil: bool
) -> tuple[int, int]:
    """The output extent along one axis and the extra tail padding ceil mode needs."""
    num = size + head + tail - ((k - 1) * d + 1) + (s - 1 if ceil else 0)
    if num < 0:
        raise ValueError(
            f"{op}: the dilated pool window {what} ({(k - 1) * d + 1}) exceeds the padded "
            f"input {what} ({size + head + tail})"
        )
    out = num // s + 1
    needed = (out - 1) * s + (k - 1) * d + 1
    return out, max(needed - (size + head + tail), 0)


def _windows(
    xp: Array, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, oh: int, ow: int
) -> Array:
    """``(N, C, KH*KW, OH, OW)``: each pool window's elements of the padded input."""
    taps = [
        xp[:, :, a * dh : a * dh + sh * (oh - 1) + 1 : sh, b * dw : b * dw + sw * (ow - 1) + 1 : sw]
        for a in range(kh)
        for b in range(kw)
    ]
    return np.stack(taps, axis=2)


def _in_range_counts(out: int, k: int, s: int, d: int, head: int, lo: int, hi: int) -> Array:
    """For each output position, how many window taps fall in input rows ``lo .. hi``."""
    starts = np.arange(out) * s - head
    taps = starts[:, None] + np.arange(k)[None, :] * d
    return np.asarray(((taps >= lo) & (taps <= hi)).sum(axis=1))


def _pool2d(kind: str, data: Array, attrs: Mapping[str, Any]) -> Array:
    op = f"nn.{kind}_pool2d"
    _check_pool_attrs(op, attrs)
    x = _to_nchw(op, np.asarray(data), attrs["layout"])
    kh, kw = _pair(op, "pool_size", attrs["pool_size"])
    sh, sw = _pair(op, "strides", attrs["strides"])
    dh, dw = _pair(op, "dilation", attrs["dilation"])
    pt, pl, pb, pr = _padding4(op, attrs["padding"])
    ceil = bool(attrs["ceil_mode"])
    _, _, h, wd = x.shape
    oh, extra_h = _pool_axis(op, "height", h, kh, sh, dh, pt, pb, ceil)
    ow, extra_w = _pool_axis(op, "width", wd, kw, sw, dw, pl, pr, ceil)
    pads = ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w))
    if kind == "max":
        if x.dtype == np.bool_:
            low: object = False
        elif np.issubdtype(x.dtype, np.floating):
            low = -np.inf
        else:
            low = np.iinfo(x.dtype).min
        xp = np.pad(x, pads, constant_values=np.asarray(low).astype(x.dtype))
        res = np.max(_windows(xp, kh, kw, sh, sw, dh, dw, oh, ow), axis=2)
        return np.asarray(_from_nchw(res, attrs["layout"]))
    if x.dtype == np.bool_:
        raise ValueError(f"{op} needs a numeric tensor, got bool")
    is_float = np.issubdtype(x.dtype, np.floating)
    acc = _wide(x) if is_float else x
    xp = np.pad(acc, pads)
    total = np.sum(_windows(xp, kh, kw, sh, sw, dh, dw, oh, ow), axis=2, dtype=acc.dtype)
    if attrs["count_include_pad"]:
        ch = _in_range_counts(oh, kh, sh, dh, pt, -pt, h + pb - 1)
        cw = _in_range_counts(ow, kw, sw, dw, pl, -pl, wd + pr - 1)
    else:
        ch = _in_range_counts(oh, kh, sh, dh, pt, 0, h - 1)
        cw = _in_range_counts(ow, kw, sw, dw, pl, 0, wd - 1)
    count = np.maximum(ch[:, None] * cw[None, :], 1)
    res = (total / count).astype(x.dtype) if is_float else _truncdiv(total, count)
    return np.asarray(_from_nchw(res, attrs["layout"]))


def _max_pool2d_ref(data: Array, **attrs: Any) -> Array:
    return _pool2d("max", data, attrs)


def _avg_pool2d_ref(data: Array, **attrs: Any) -> Array:
    return _pool2d("avg", data, attrs)


def _mean_hw(op: str, x: Array, rows: slice, cols: slice) -> Array:
    """The mean of ``x[:, :, rows, cols]`` (NCHW) in ``x``'s dtype (integers truncate)."""
    win = x[:, :, rows, cols]
    count = win.shape[2] * win.shape[3]
    if count == 0:
        raise ValueError(f"{op}: the pooling window is empty")
    if np.issubdtype(x.dtype, np.floating):
        return np.asarray(
            (np.sum(_wide(win), axis=(2, 3), dtype=_wide(win).dtype) / count).astype(x.dtype)
        )
    if x.dtype == np.bool_:
        raise ValueError(f"{op} needs a numeric tensor, got bool")
    return _truncdiv(np.asarray(np.sum(win, axis=(2, 3), dtype=x.dtype)), count)


def _global_avg_pool2d_ref(data: Array, *, layout: str, out_layout: str) -> Array:
    op = "nn.global_avg_pool2d"
    _check_out_layout(op, out_layout, layout)
    x = _to_nchw(op, np.asarray(data), layout)
    res = _mean_hw(op, x, slice(None), slice(None))[:, :, None, None]
    return np.asarray(_from_nchw(res, layout))


def _adaptive_output_size(op: str, value: object, h: int, w: int) -> tuple[int, int]:
    if value is None:
        return h, w
    vals = _as_ints(value)
    if len(vals) > 2:
        raise AttrValidationError(f"{op}: output_size takes at most 2 values, got {list(vals)}")
    if any(v < 1 for v in vals):
        raise AttrValidationError(f"{op}: output_size must be positive, got {list(vals)}")
    if not vals:
        return h, w
    return vals[0], vals[-1]


def _adaptive_avg_pool2d_ref(
    data: Array, *, output_size: object, layout: str, out_layout: str
) -> Array:
    op = "nn.adaptive_avg_pool2d"
    _check_out_layout(op, out_layout, layout)
    x = _to_nchw(op, np.asarray(data), layout)
    n, c, h, w = x.shape
    oh, ow = _adaptive_output_size(op, output_size, h, w)
    res = np.empty((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        rows = slice(i * h // oh, -(-(i + 1) * h // oh))
        for j in range(ow):
            cols = slice(j * w // ow, -(-(j + 1) * w // ow))
            res[:, :, i, j] = _mean_hw(op, x, rows, cols)
    return np.asarray(_from_nchw(res, layout))


# ---- pad, batch_flatten -------------------------------------------------------------------------


def _pad_widths(value: object) -> tuple[tuple[int, int], ...]:
    op = "nn.pad"
    if not isinstance(value, tuple) or not all(
        isinstance(p, tuple)
        and len(p) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in p)
        for p in value
    ):
        raise AttrValidationError(
            f"{op}: pad_width must be a list of [before, after] integer pairs, got {value!r}"
        )
    return tuple((int(p[0]), int(p[1])) for p in value)


def _pad_ref(data: Array, pad_value: Array, *, pad_width: object, pad_mode: str) -> Array:
    op = "nn.pad"
    x, v = np.asarray(data), np.asarray(pad_value)
    widths = _pad_widths(pad_width)
    if len(widths) != x.ndim:
        raise ValueError(f"{op}: pad_width has {len(widths)} pairs but the data has rank {x.ndim}")
    if v.ndim != 0:
        raise ValueError(f"{op}: pad_value must be a scalar, got shape {_shape_str(v.shape)}")
    for axis, ((before, after), size) in enumerate(zip(widths, x.shape, strict=True)):
        if size + before + after < 0:
            raise ValueError(
                f"{op}: padding axis {axis} of extent {size} by ({before}, {after}) "
                "leaves a negative extent"
            )
        if pad_mode != "constant" and (before < 0 or after < 0):
            raise ValueError(f"{op}: {pad_mode} padding needs non-negative widths")
        if pad_mode == "reflect" and (before >= size or after >= size) and before + after > 0:
            raise ValueError(
                f"{op}: reflect padding of axis {axis} by ({before}, {after}) needs widths "
                f"below its extent {size}"
            )
        if pad_mode == "edge" and size == 0 and before + after > 0:
            raise ValueError(f"{op}: edge padding of the empty axis {axis}")
    if pad_mode == "constant":
        crop = tuple(
            slice(max(-b, 0), size - max(-a, 0))
            for (b, a), size in zip(widths, x.shape, strict=True)
        )
        grow = [(max(b, 0), max(a, 0)) for b, a in widths]
        fill = v.astype(x.dtype)
        return np.asarray(np.pad(x[crop], grow, mode="constant", constant_values=fill))
    mode: Any = pad_mode
    return np.asarray(np.pad(x, widths, mode=mode))


def _batch_flatten_ref(data: Array) -> Array:
    x = np.asarray(data)
    if x.ndim == 0:
        raise ValueError("nn.batch_flatten needs data of rank at least 1")
    return np.asarray(x.reshape(x.shape[0], math.prod(x.shape[1:])).copy())


# ---- normalization, dropout, losses -------------------------------------------------------------


def _batch_norm_ref(
    data: Array,
    gamma: Array,
    beta: Array,
    moving_mean: Array,
    moving_var: Array,
    *,
    axis: int,
    epsilon: float,
    center: bool,
    scale: bool,
) -> tuple[Array, Array, Array]:
    op = "nn.batch_norm"
    x = np.asarray(data)
    _need_float(op, x)
    if x.ndim == 0:
        raise ValueError(f"{op} needs data of rank at least 1")
    params = {"gamma": gamma, "beta": beta, "moving_mean": moving_mean, "moving_var": moving_var}
    shaped = {k: _wide(_channel_param(op, x, np.asarray(p), axis, k)) for k, p in params.items()}
    w = _wide(x)
    with np.errstate(all="ignore"):
        out = (w - shaped["moving_mean"]) / np.sqrt(
            shaped["moving_var"] + np.asarray(epsilon, w.dtype)
        )
        if scale:
            out = out * shaped["gamma"]
        if center:
            out = out + shaped["beta"]
    return (
        np.asarray(out.astype(x.dtype)),
        np.asarray(moving_mean).copy(),
        np.asarray(moving_var).copy(),
    )


def _layer_norm_ref(
    data: Array,
    gamma: Array,
    beta: Array,
    *,
    axis: int,
    epsilon: float,
    center: bool,
    scale: bool,
) -> Array:
    op = "nn.layer_norm"
    x = np.asarray(data)
    _need_float(op, x)
    if x.ndim == 0:
        raise ValueError(f"{op} needs data of rank at least 1")
    ax = _norm_axis(op, axis, x.ndim)
    g = _wide(_channel_param(op, x, np.asarray(gamma), axis, "gamma"))
    b = _wide(_channel_param(op, x, np.asarray(beta), axis, "beta"))
    w = _wide(x)
    with np.errstate(all="ignore"):
        mu = np.mean(w, axis=ax, keepdims=True)
        var = np.mean((w - mu) ** 2, axis=ax, keepdims=True)
        out = (w - mu) / np.sqrt(var + np.asarray(epsilon, w.dtype))
        if scale:
            out = out * g
        if center:
            out = out + b
    return np.asarray(out.astype(x.dtype))


def _dropout_ref(data: Array, *, rate: float) -> tuple[Array, Array]:
    _check_rate({"rate": rate})
    x = np.asarray(data)
    return x.copy(), np.ones_like(x)


def _loss_inputs(op: str, predictions: Array, targets: Array) -> tuple[Array, Array]:
    p, t = np.asarray(predictions), np.asarray(targets)
    if p.ndim != 2 or p.shape != t.shape:
        raise ValueError(
            f"{op} needs predictions and targets of one rank-2 shape, got "
            f"{_shape_str(p.shape)} and {_shape_str(t.shape)}"
        )
    _need_float(op, p)
    _same_dtype(op, p, t, "predictions", "targets")
    return p, t


def _cross_entropy_ref(predictions: Array, targets: Array) -> Array:
    p, t = _loss_inputs("nn.cross_entropy", predictions, targets)
    with np.errstate(all="ignore"):
        total = np.sum(np.log(_wide(p)) * _wide(t))
        return np.asarray(np.asarray(-total / p.shape[0]).astype(p.dtype))


def _cross_entropy_with_logits_ref(predictions: Array, targets: Array) -> Array:
    p, t = _loss_inputs("nn.cross_entropy_with_logits", predictions, targets)
    with np.errstate(all="ignore"):
        total = np.sum(_wide(p) * _wide(t))
        return np.asarray(np.asarray(-total / p.shape[0]).astype(p.dtype))


# ---- registration -------------------------------------------------------------------------------

_DATA_LAYOUTS = ("NCHW", "NHWC")
_OUT_LAYOUTS = ("", "NCHW", "NHWC")
_CONV_KERNEL_LAYOUTS = ("OIHW", "HWIO", "OHWI", "HWOI", "IOHW", "IHWO")

_CONV_ATTRS = [
    attr("strides", "int_or_ints", (1, 1)),
    attr("padding", "int_or_ints", (0, 0)),
    attr("dilation", "int_or_ints", (1, 1)),
    attr("groups", "int", 1),
    attr("channels", "int", None, optional=True),
    attr("kernel_size", "int_or_ints", None, optional=True),
    attr("data_layout", "str", "NCHW", choices=_DATA_LAYOUTS),
    attr("kernel_layout", "str", "OIHW", choices=_CONV_KERNEL_LAYOUTS),
    attr("out_layout", "str", "", choices=_OUT_LAYOUTS),
    attr("out_dtype", "dtype", ""),
]
_CONV_T_ATTRS = [
    attr("channels", "int", None, optional=True),
    attr("kernel_size", "int_or_ints", None, optional=True),
    attr("strides", "int_or_ints", (1, 1)),
    attr("output_padding", "int_or_ints", (0, 0)),
    attr("padding", "int_or_ints", (0, 0)),
    attr("dilation", "int_or_ints", (1, 1)),
    attr("groups", "int", 1),
    attr("data_layout", "str", "NCHW", choices=_DATA_LAYOUTS),
    attr("kernel_layout", "str", "IOHW", choices=_CONV_KERNEL_LAYOUTS),
    attr("out_layout", "str", "", choices=_OUT_LAYOUTS),
    attr("out_dtype", "dtype", ""),
]
_POOL_ATTRS = [
    attr("pool_size", "int_or_ints"),
    attr("strides", "int_or_ints", (1, 1)),
    attr("dilation", "int_or_ints", (1, 1)),
    attr("padding", "int_or_ints", (0, 0)),
    attr("layout", "str", "NCHW", choices=_DATA_LAYOUTS),
    attr("out_layout", "str", "", choices=_OUT_LAYOUTS),
    attr("ceil_mode", "bool", False),
]
_LAYOUT_ATTRS = [
    attr("layout", "str", "NCHW", choices=_DATA_LAYOUTS),
    attr("out_layout", "str", "", choices=_OUT_LAYOUTS),
]
_NORM_ATTRS = [
    attr("epsilon", "float", 1e-5),
    attr("center", "bool", True),
    attr("scale", "bool", True),
]

_DEFS: dict[str, OpDef] = {}


def _check_rate(attrs: Mapping[str, object]) -> None:
    rate = attrs["rate"]
    assert isinstance(rate, int | float)
    if not 0.0 <= rate <= 1.0:
        raise AttrValidationError(f"nn.dropout: rate must be in [0, 1], got {rate}")


def _check_units(op: str) -> Callable[[Mapping[str, object]], None]:
    def check(attrs: Mapping[str, object]) -> None:
        units = attrs["units"]
        if units is not None and (not isinstance(units, int) or units < 1):
            raise AttrValidationError(f"{op}: units must be positive, got {units}")

    return check


def _check_layouts(op: str) -> Callable[[Mapping[str, object]], None]:
    def check(attrs: Mapping[str, object]) -> None:
        _check_out_layout(op, attrs["out_layout"], attrs["layout"])
        if "output_size" in attrs:
            _adaptive_output_size(op, attrs["output_size"], 1, 1)

    return check


def _check_pad(attrs: Mapping[str, object]) -> None:
    _pad_widths(attrs["pad_width"])


# Value checks run by the builders on the validated attributes (the references run them too).
_STATIC_CHECKS: dict[str, Callable[[Mapping[str, object]], None]] = {
    "nn.conv2d": lambda a: _check_conv_attrs("nn.conv2d", a),
    "nn.conv2d_transpose": lambda a: _check_conv_attrs("nn.conv2d_transpose", a),
    "nn.max_pool2d": lambda a: _check_pool_attrs("nn.max_pool2d", a),
    "nn.avg_pool2d": lambda a: _check_pool_attrs("nn.avg_pool2d", a),
    "nn.global_avg_pool2d": _check_layouts("nn.global_avg_pool2d"),
    "nn.adaptive_avg_pool2d": _check_layouts("nn.adaptive_avg_pool2d"),
    "nn.pad": _check_pad,
    "nn.dropout": _check_rate,
    "nn.dense": _check_units("nn.dense"),
    "nn.matmul": _check_units("nn.matmul"),
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
    "nn.dense",
    2,
    _dense_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "data @ weight.T with weight of shape (units, in_features).",
    [attr("units", "int", None, optional=True), attr("out_dtype", "dtype", "")],
)
_register(
    "nn.matmul",
    2,
    _matmul_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "tensor_a @ tensor_b, either transposed on request (tensor_b is 2-d).",
    [
        attr("units", "int", None, optional=True),
        attr("out_dtype", "dtype", ""),
        attr("transpose_a", "bool", False),
        attr("transpose_b", "bool", False),
    ],
)
_register(
    "nn.batch_matmul",
    2,
    _batch_matmul_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "Batched matrix product of rank-3 tensors (a batch of 1 broadcasts).",
    [
        attr("out_dtype", "dtype", ""),
        attr("transpose_a", "bool", False),
        attr("transpose_b", "bool", False),
    ],
)
_register(
    "nn.bias_add",
    2,
    _bias_add_ref,
    OpPattern.BROADCAST,
    "Add a 1-d bias along axis.",
    [attr("axis", "int", 1)],
)
_register("nn.relu", 1, _relu_ref, OpPattern.ELEMWISE, "max(x, 0).")
_register(
    "nn.leaky_relu",
    1,
    _leaky_relu_ref,
    OpPattern.ELEMWISE,
    "x if x > 0 else alpha * x.",
    [attr("alpha", "float", 0.25)],
)
_register(
    "nn.prelu",
    2,
    _prelu_ref,
    OpPattern.BROADCAST,
    "x if x > 0 else alpha[c] * x, with a 1-d alpha along axis.",
    [attr("axis", "int", 1)],
)
_register(
    "nn.gelu", 1, _gelu_ref, OpPattern.ELEMWISE, "x * (1 + erf(x / sqrt(2))) / 2 (exact GELU)."
)
_register(
    "nn.softmax",
    1,
    _softmax_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "exp(x) / sum(exp(x)) along axis.",
    [attr("axis", "int", -1)],
)
_register(
    "nn.log_softmax",
    1,
    _log_softmax_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "x - log(sum(exp(x))) along axis.",
    [attr("axis", "int", -1)],
)
_register(
    "nn.conv2d",
    2,
    _conv2d_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "2-d convolution (cross-correlation) with strides, padding, dilation and groups.",
    _CONV_ATTRS,
)
_register(
    "nn.conv2d_transpose",
    2,
    _conv2d_transpose_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "2-d transposed convolution (the adjoint of conv2d); kernel IOHW.",
    _CONV_T_ATTRS,
)
_register(
    "nn.max_pool2d",
    1,
    _max_pool2d_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "2-d max pooling.",
    _POOL_ATTRS,
)
_register(
    "nn.avg_pool2d",
    1,
    _avg_pool2d_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "2-d average pooling.",
    [*_POOL_ATTRS, attr("count_include_pad", "bool", False)],
)
_register(
    "nn.global_avg_pool2d",
    1,
    _global_avg_pool2d_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "Mean over the whole height and width (kept as extent-1 axes).",
    _LAYOUT_ATTRS,
)
_register(
    "nn.adaptive_avg_pool2d",
    1,
    _adaptive_avg_pool2d_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "Average pooling to a given output height and width.",
    [attr("output_size", "int_or_ints", None, optional=True), *_LAYOUT_ATTRS],
)
_register(
    "nn.pad",
    2,
    _pad_ref,
    OpPattern.INJECTIVE,
    "Pad each axis by [before, after] with pad_value (constant), the edge, or a reflection.",
    [
        attr("pad_width", "any"),
        attr("pad_mode", "str", "constant", choices=("constant", "edge", "reflect")),
    ],
)
_register(
    "nn.batch_flatten",
    1,
    _batch_flatten_ref,
    OpPattern.INJECTIVE,
    "Flatten all axes but the first.",
)
_register(
    "nn.batch_norm",
    5,
    _batch_norm_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "Inference batch normalization along axis; gives (out, moving_mean, moving_var).",
    [attr("axis", "int", 1), *_NORM_ATTRS],
)
_register(
    "nn.layer_norm",
    3,
    _layer_norm_ref,
    OpPattern.OPAQUE,
    "Normalize over axis to zero mean and unit variance, then scale and shift.",
    [attr("axis", "int", -1), *_NORM_ATTRS],
)
_register(
    "nn.dropout",
    1,
    _dropout_ref,
    OpPattern.OPAQUE,
    "Dropout at inference: gives (data, ones mask).",
    [attr("rate", "float", 0.5)],
)
_register(
    "nn.cross_entropy",
    2,
    _cross_entropy_ref,
    OpPattern.OPAQUE,
    "-sum(log(predictions) * targets) / batch.",
)
_register(
    "nn.cross_entropy_with_logits",
    2,
    _cross_entropy_with_logits_ref,
    OpPattern.OPAQUE,
    "-sum(predictions * targets) / batch (predictions are log-probabilities).",
)


# ---- builders -----------------------------------------------------------------------------------

IntOrPair = int | Sequence[int]


def _call(name: str, args: Sequence[Expr], attrs: Mapping[str, object] | None = None) -> Call:
    opdef = _DEFS[name]
    validated = opdef.validate_attrs(None if attrs is None else dict(attrs))
    check = _STATIC_CHECKS.get(name)
    if check is not None:
        check(validated)
    return Call(opdef.op, tuple(args), validated)


def _window(value: IntOrPair | None) -> object:
    if value is None or isinstance(value, int):
        return value
    return list(value)


def dense(data: Expr, weight: Expr, units: int | None = None, out_dtype: str = "") -> Call:
    """``nn.dense(data, weight)``: ``data @ weight.T`` with ``weight`` of shape
    ``(units, in_features)``; ``out_dtype`` (empty: the data's) is the result dtype."""
    return _call("nn.dense", [data, weight], {"units": units, "out_dtype": out_dtype})


def matmul(
    tensor_a: Expr,
    tensor_b: Expr,
    units: int | None = None,
    out_dtype: str = "",
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> Call:
    """``nn.matmul(a, b)``: ``a @ b`` with ``a``'s last two axes and/or the 2-d ``b``
    transposed on request."""
    attrs = {
        "units": units,
        "out_dtype": out_dtype,
        "transpose_a": transpose_a,
        "transpose_b": transpose_b,
    }
    return _call("nn.matmul", [tensor_a, tensor_b], attrs)


def batch_matmul(
    tensor_a: Expr,
    tensor_b: Expr,
    out_dtype: str = "",
    transpose_a: bool = False,
    transpose_b: bool = True,
) -> Call:
    """``nn.batch_matmul(a, b)``: per-batch ``a @ b.T`` of rank-3 tensors (Relay's Python
    default ``transpose_b=True``; the attribute's default, in text, is False)."""
    attrs = {"out_dtype": out_dtype, "transpose_a": transpose_a, "transpose_b": transpose_b}
    return _call("nn.batch_matmul", [tensor_a, tensor_b], attrs)


def bias_add(data: Expr, bias: Expr, axis: int = 1) -> Call:
    """``nn.bias_add(data, bias, axis=...)``: ``data`` plus the 1-d ``bias`` along ``axis``."""
    return _call("nn.bias_add", [data, bias], {"axis": axis})


def relu(data: Expr) -> Call:
    """``nn.relu(data)``: ``max(data, 0)``."""
    return _call("nn.relu", [data])


def leaky_relu(data: Expr, alpha: float = 0.01) -> Call:
    """``nn.leaky_relu(data, alpha=...)``: ``x`` if positive, else ``alpha * x``."""
    return _call("nn.leaky_relu", [data], {"alpha": alpha})


def prelu(data: Expr, alpha: Expr, axis: int = 1) -> Call:
    """``nn.prelu(data, alpha, axis=...)``: ``x`` if positive, else ``alpha[c] * x`` with the
    1-d ``alpha`` along ``axis``."""
    return _call("nn.prelu", [data, alpha], {"axis": axis})


def gelu(data: Expr) -> Call:
    """``nn.gelu(data)``: the exact GELU ``x * (1 + erf(x / sqrt(2))) / 2``."""
    return _call("nn.gelu", [data])


def softmax(data: Expr, axis: int = -1) -> Call:
    """``nn.softmax(data, axis=...)``: ``exp(x) / sum(exp(x))`` along ``axis``."""
    return _call("nn.softmax", [data], {"axis": axis})


def log_softmax(data: Expr, axis: int = -1) -> Call:
    """``nn.log_softmax(data, axis=...)``: ``x - log(sum(exp(x)))`` along ``axis``."""
    return _call("nn.log_softmax", [data], {"axis": axis})


def conv2d(
    data: Expr,
    weight: Expr,
    strides: IntOrPair = (1, 1),
    padding: IntOrPair = (0, 0),
    dilation: IntOrPair = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrPair | None = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """``nn.conv2d(data, weight, ...)``: 2-d convolution. ``padding`` takes 1, 2
    (``[pad_h, pad_w]``) or 4 (``[top, left, bottom, right]``) values; ``channels`` and
    ``kernel_size``, when given, must match the weight."""
    attrs = {
        "strides": _window(strides),
        "padding": _window(padding),
        "dilation": _window(dilation),
        "groups": groups,
        "channels": channels,
        "kernel_size": _window(kernel_size),
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        "out_layout": out_layout,
        "out_dtype": out_dtype,
    }
    return _call("nn.conv2d", [data, weight], attrs)


def conv2d_transpose(
    data: Expr,
    weight: Expr,
    strides: IntOrPair = (1, 1),
    padding: IntOrPair = (0, 0),
    dilation: IntOrPair = (1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrPair | None = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str = "",
    output_padding: IntOrPair = (0, 0),
    out_dtype: str = "",
) -> Call:
    """``nn.conv2d_transpose(data, weight, ...)``: 2-d transposed convolution (the adjoint
    of ``nn.conv2d``); ``weight`` is ``(in_channels, out_channels / groups, KH, KW)``."""
    attrs = {
        "channels": channels,
        "kernel_size": _window(kernel_size),
        "strides": _window(strides),
        "output_padding": _window(output_padding),
        "padding": _window(padding),
        "dilation": _window(dilation),
        "groups": groups,
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        "out_layout": out_layout,
        "out_dtype": out_dtype,
    }
    return _call("nn.conv2d_transpose", [data, weight], attrs)


def max_pool2d(
    data: Expr,
    pool_size: IntOrPair = (1, 1),
    strides: IntOrPair = (1, 1),
    dilation: IntOrPair = (1, 1),
    padding: IntOrPair = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """``nn.max_pool2d(data, pool_size=..., ...)``: the maximum over each pool window."""
    attrs = {
        "pool_size": _window(pool_size),
        "strides": _window(strides),
        "dilation": _window(dilation),
        "padding": _window(padding),
        "layout": layout,
        "out_layout": out_layout,
        "ceil_mode": ceil_mode,
    }
    return _call("nn.max_pool2d", [data], attrs)


def avg_pool2d(
    data: Expr,
    pool_size: IntOrPair = (1, 1),
    strides: IntOrPair = (1, 1),
    dilation: IntOrPair = (1, 1),
    padding: IntOrPair = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """``nn.avg_pool2d(data, pool_size=..., ...)``: the mean over each pool window, counting
    the padding when ``count_include_pad``."""
    attrs = {
        "pool_size": _window(pool_size),
        "strides": _window(strides),
        "dilation": _window(dilation),
        "padding": _window(padding),
        "layout": layout,
        "out_layout": out_layout,
        "ceil_mode": ceil_mode,
        "count_include_pad": count_include_pad,
    }
    return _call("nn.avg_pool2d", [data], attrs)


def global_avg_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    """``nn.global_avg_pool2d(data)``: the mean over height and width, kept as 1 x 1."""
    return _call("nn.global_avg_pool2d", [data], {"layout": layout, "out_layout": out_layout})


def adaptive_avg_pool2d(
    data: Expr,
    output_size: IntOrPair | None = None,
    layout: str = "NCHW",
    out_layout: str = "",
) -> Call:
    """``nn.adaptive_avg_pool2d(data, output_size=...)``: average pooling to ``output_size``
    (one value for both; None keeps the input's height and width)."""
    attrs = {"output_size": _window(output_size), "layout": layout, "out_layout": out_layout}
    return _call("nn.adaptive_avg_pool2d", [data], attrs)


def pad(
    data: Expr,
    pad_width: Sequence[Sequence[int]],
    pad_value: float | Expr = 0.0,
    pad_mode: str = "constant",
) -> Call:
    """``nn.pad(data, pad_value, pad_width=..., pad_mode=...)``: pad axis ``i`` by
    ``pad_width[i] = [before, after]``. A Python ``pad_value`` becomes a constant (cast to the
    data's dtype at run time)."""
    value = pad_value if isinstance(pad_value, Expr) else const(pad_value)
    attrs = {"pad_width": [list(p) for p in pad_width], "pad_mode": pad_mode}
    return _call("nn.pad", [data, value], attrs)


def batch_flatten(data: Expr) -> Call:
    """``nn.batch_flatten(data)``: ``data`` reshaped to ``(batch, -1)``."""
    return _call("nn.batch_flatten", [data])


def batch_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    moving_mean: Expr,
    moving_var: Expr,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """``nn.batch_norm(data, gamma, beta, moving_mean, moving_var)``: inference batch
    normalization along ``axis``; the call's value is ``(out, moving_mean, moving_var)``."""
    attrs = {"axis": axis, "epsilon": epsilon, "center": center, "scale": scale}
    return _call("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var], attrs)


def layer_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    axis: int = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """``nn.layer_norm(data, gamma, beta)``: normalize over ``axis``, then scale by ``gamma``
    and shift by ``beta``."""
    attrs = {"axis": axis, "epsilon": epsilon, "center": center, "scale": scale}
    return _call("nn.layer_norm", [data, gamma, beta], attrs)


def dropout(data: Expr, rate: float = 0.5) -> Call:
    """``nn.dropout(data, rate=...)``: at inference the tuple ``(data, ones)``; take field 0
    for the output."""
    return _call("nn.dropout", [data], {"rate": rate})


def cross_entropy(predictions: Expr, targets: Expr) -> Call:
    """``nn.cross_entropy(p, t)``: ``-sum(log(p) * t) / batch`` for probabilities ``p``."""
    return _call("nn.cross_entropy", [predictions, targets])


def cross_entropy_with_logits(predictions: Expr, targets: Expr) -> Call:
    """``nn.cross_entropy_with_logits(p, t)``: ``-sum(p * t) / batch`` for log-probabilities
    ``p``."""
    return _call("nn.cross_entropy_with_logits", [predictions, targets])
