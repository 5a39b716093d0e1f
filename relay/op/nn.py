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
  by the padding (and extended by ``output_padding`` zeros at the bottom/right, which must be
  below the stride, as TVM's topi asserts), so
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
* ``nn.softmax``/``nn.log_softmax`` subtract the maximum first (a zero-size tensor gives an
  empty result of its shape, as numpy's elementwise operations do); ``nn.gelu`` (absent in Relay)
  is the exact ``x * (1 + erf(x / sqrt 2)) / 2``.
* ``nn.batch_norm`` is the inference form: ``(x - moving_mean) / sqrt(moving_var + epsilon) *
  gamma + beta`` along ``axis``, returning ``(out, moving_mean, moving_var)`` as Relay's
  compute did; ``center``/``scale`` False drop ``beta``/``gamma``. ``nn.layer_norm``
  normalizes over ``axis`` with the biased variance. ``nn.dropout`` is the inference
  identity, returning ``(data, ones)`` (the mask of kept elements).
* ``nn.pad`` takes ``pad_value`` as a rank-0 second input (cast to the data dtype);
  ``constant`` mode allows negative widths (cropping, as topi's pad does) while ``edge`` and
  ``reflect`` need widths ``>= 0`` (and ``reflect`` widths below the axis extent). A rank-0
  tensor takes ``pad_width=[]`` and is returned as is, whatever the mode.
* ``nn.cross_entropy(p, t)`` is ``-sum(log(p) * t) / batch`` and
  ``nn.cross_entropy_with_logits(p, t)`` is ``-sum(p * t) / batch``, rank-0.

Type relations (the section before the registrations) check on types what the references
check on arrays (ranks, dtypes, feature and channel counts, window fits, attribute values) and
compute result shapes with :mod:`relay.ir.dim`, so symbolic dims (``(h - 1) // 2 + 1``) and
``Any`` flow through. As in Relay, an unknown weight is inferred from the data and the
``units`` (dense, matmul) or ``channels`` and ``kernel_size`` (convolutions) attributes, and an
unknown per-channel parameter (bias, alpha, gamma...) from the data's axis.

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

from relay.ir import dim
from relay.ir.attrs import Attrs, AttrValue
from relay.ir.dim import Dim
from relay.ir.expr import Call, Expr, const
from relay.ir.types import DTYPES, DType, IncompleteType, TensorType, TupleType, Type, _AnyDim
from relay.op.registry import AttrValidationError, OpDef, OpPattern, attr, register_op
from relay.op.transform import check_shape_limits
from relay.typecheck.relation import (
    RelationError,
    RelationFunc,
    Reporter,
    broadcast_dim,
    forward,
    is_dtype,
    is_known,
    normalize_axis,
    tensor_arg,
)

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
    if x.size == 0:  # nothing to normalize (numpy's max has no identity to reduce with)
        return np.array(x)
    w = _wide(x)
    with np.errstate(all="ignore"):
        e = np.exp(w - np.max(w, axis=ax, keepdims=True))
        return np.asarray((e / np.sum(e, axis=ax, keepdims=True)).astype(x.dtype))


def _log_softmax_ref(data: Array, *, axis: int) -> Array:
    x = np.asarray(data)
    _need_float("nn.log_softmax", x)
    ax = _norm_axis("nn.log_softmax", axis, x.ndim)
    if x.size == 0:
        return np.array(x)
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
        oph, opw = _pair(op, "output_padding", attrs["output_padding"], minimum=0)
        sh, sw = _pair(op, "strides", attrs["strides"])
        if oph >= sh or opw >= sw:
            raise AttrValidationError(
                f"{op}: output_padding must be smaller than strides, got output_padding "
                f"{[oph, opw]} and strides {[sh, sw]}"
            )


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
    # A stride or dilation past the rows counts as any other that large (and may not fit int64)
    s = min(s, max(hi - lo + 2 + head, 1))
    d = min(d, max(hi + head + 1, 1))
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
        # out[i] = x[i - before] where that is inside x, else the value (topi's pad), so a
        # negative width crops and the extent is always size + before + after.
        out = np.full(
            [size + b + a for (b, a), size in zip(widths, x.shape, strict=True)],
            v.astype(x.dtype),
        )
        src: list[slice] = []
        dst: list[slice] = []
        for (b, _), size, extent in zip(widths, x.shape, out.shape, strict=True):
            lo, hi = max(0, b), min(extent, size + b)
            src.append(slice(lo - b, max(lo, hi) - b))
            dst.append(slice(lo, max(lo, hi)))
        out[tuple(dst)] = x[tuple(src)]
        return out
    if not widths:  # a rank-0 tensor: nothing to pad (np.pad rejects an empty pad_width)
        return np.array(x)
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


# ---- type relations -----------------------------------------------------------------------------
#
# Each relation's docstring is its type rule on one line (docs/operators.md is generated from
# them); shapes are written for NCHW data and OIHW kernels, other layouts name the same axes.
# Relations check what the references check, on types: a call the relation accepts with
# concrete shapes is one the reference runs, and the result type is the reference's.


def _check_attr_values(op: str, attrs: Attrs) -> None:
    """The builders' attribute value checks, for calls made without a builder (parsed text)."""
    check = _STATIC_CHECKS.get(op)
    if check is not None:
        try:
            check(attrs)
        except AttrValidationError as e:
            raise RelationError(str(e)) from None


def _ranked(
    t: Type, op: str, what: str, rank: int | None = None, min_rank: int = 0, layout: str = ""
) -> TensorType:
    """``t`` as a tensor of the given rank (or at least ``min_rank``), else a RelationError."""
    x = tensor_arg(t, op, what)
    if rank is not None and x.ndim != rank:
        suffix = f" ({layout})" if layout else ""
        raise RelationError(f"{op}: {what} must have rank {rank}{suffix}, got {x}")
    if x.ndim < min_rank:
        raise RelationError(f"{op}: {what} must have rank at least {min_rank}, got {x}")
    return x


_FLOAT = ("float",)
_NUMERIC = ("float", "int", "uint")


def _need_dtype(x: TensorType, op: str, what: str, kinds: tuple[str, ...]) -> None:
    if is_dtype(x.dtype, *kinds) is False:
        noun = "a floating-point" if kinds == _FLOAT else "a numeric"
        raise RelationError(f"{op}: {what} must be {noun} tensor, got {x}")


def _one_dtype(
    r: Reporter, op: str, a: TensorType, b: TensorType, what_a: str, what_b: str
) -> None:
    message = f"{op}: {what_a} and {what_b} must have one dtype, got {a} and {b}"
    r.dtype_equal(a.dtype, b.dtype, message)


def _result_dtype(op: str, out_dtype: AttrValue, default: DType) -> DType:
    """``out_dtype`` when given (it must be a numeric dtype), else ``default``."""
    if not out_dtype:
        return default
    if not isinstance(out_dtype, str) or out_dtype not in DTYPES:
        raise RelationError(f"{op}: unknown out_dtype {out_dtype!r}")
    if is_dtype(out_dtype, *_NUMERIC) is False:
        raise RelationError(f"{op}: out_dtype must be numeric, got {out_dtype}")
    return out_dtype


def _settled(*ts: TensorType) -> bool:
    """Whether every dtype is known, so that the dtype checks made on them are final."""
    return not any(isinstance(t.dtype, IncompleteType) for t in ts)


def _ds(d: Dim) -> str:
    return dim.dim_str(d)


def _int_attr(attrs: Attrs, name: str) -> int:
    value = attrs[name]
    assert isinstance(value, int)
    return value


def _str_attr(attrs: Attrs, name: str) -> str:
    value = attrs[name]
    assert isinstance(value, str)
    return value


def _axes(shape: Sequence[Dim], layout: str, names: str) -> tuple[Dim, ...]:
    """The dims of ``shape`` (in ``layout``) named by the letters of ``names``, in that order."""
    return tuple(shape[layout.index(a)] for a in names)


def _param_rel(
    op: str, r: Reporter, x: TensorType, ax: int, axis: int, t: Type, what: str
) -> TensorType:
    """The type of the 1-d parameter ``t`` of ``x``'s axis ``ax``: checked, or set if unknown."""
    c = x.shape[ax]
    if isinstance(t, IncompleteType):
        expected = TensorType((c,), x.dtype)
        r.unify(t, expected)
        return expected
    p = tensor_arg(t, op, what)
    message = f"{op}: {what} must have shape ({_ds(c)},) to match axis {axis} of {x}, got {p}"
    if p.ndim != 1:
        raise RelationError(message)
    r.dim_equal(p.shape[0], c, message)
    _one_dtype(r, op, x, p, "data", what)
    return TensorType((p.shape[0] if isinstance(c, _AnyDim) else c,), x.dtype)


# dense, matmul, batch_matmul


def _dense_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """Data (d..., k), weight (units, k) -> (d..., units); dtype out_dtype, else the data's."""
    op = "nn.dense"
    _check_attr_values(op, attrs)
    if not is_known(types[0]):
        return False
    x = _ranked(types[0], op, "data", min_rank=1)
    _need_dtype(x, op, "data", _NUMERIC)
    units = attrs["units"]
    assert units is None or isinstance(units, int)
    weight = types[1]
    if isinstance(weight, IncompleteType):
        if units is None:
            return False
        weight = TensorType((units, x.shape[-1]), x.dtype)
        r.unify(types[1], weight)
    w = _ranked(weight, op, "weight", rank=2)
    _need_dtype(w, op, "weight", _NUMERIC)
    out_dtype = _result_dtype(op, attrs["out_dtype"], x.dtype)
    if not attrs["out_dtype"]:
        _one_dtype(r, op, x, w, "data", "weight")
    k, wk = x.shape[-1], w.shape[1]
    r.dim_equal(k, wk, f"{op}: data has {_ds(k)} features but weight expects {_ds(wk)}")
    n = w.shape[0]
    if units is not None:
        r.dim_equal(n, units, f"{op}: units={units} but the weight has {_ds(n)} output units")
        n = units
    r.unify(types[-1], TensorType((*x.shape[:-1], n), out_dtype))
    return _settled(x, w)


def _matmul_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """A (d..., m, k), b (k, n), each transposed on request -> (d..., m, n); a may be (k,)."""
    op = "nn.matmul"
    _check_attr_values(op, attrs)
    if not is_known(types[0]):
        return False
    ta, tb = bool(attrs["transpose_a"]), bool(attrs["transpose_b"])
    a = _ranked(types[0], op, "tensor_a", min_rank=2 if ta else 1)
    _need_dtype(a, op, "tensor_a", _NUMERIC)
    ak = a.shape[-2] if ta else a.shape[-1]
    units = attrs["units"]
    assert units is None or isinstance(units, int)
    tensor_b = types[1]
    if isinstance(tensor_b, IncompleteType):
        if units is None:
            return False
        tensor_b = TensorType((units, ak) if tb else (ak, units), a.dtype)
        r.unify(types[1], tensor_b)
    b = _ranked(tensor_b, op, "tensor_b", rank=2)
    _need_dtype(b, op, "tensor_b", _NUMERIC)
    out_dtype = _result_dtype(op, attrs["out_dtype"], a.dtype)
    if not attrs["out_dtype"]:
        _one_dtype(r, op, a, b, "tensor_a", "tensor_b")
    bk, n = (b.shape[1], b.shape[0]) if tb else (b.shape[0], b.shape[1])
    r.dim_equal(
        ak, bk, f"{op}: tensor_a {a} and tensor_b {b} have inner dimensions {_ds(ak)} and {_ds(bk)}"
    )
    if units is not None:
        r.dim_equal(n, units, f"{op}: units={units} but the weight has {_ds(n)} output units")
        n = units
    shape = (*a.shape[:-2], a.shape[-1], n) if ta else (*a.shape[:-1], n)
    r.unify(types[-1], TensorType(shape, out_dtype))
    return _settled(a, b)


def _batch_matmul_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """A (b, m, k), b (b, k, n), each transposed on request -> (b, m, n); batch 1 broadcasts."""
    op = "nn.batch_matmul"
    a = _ranked(args[0], op, "tensor_a", rank=3)
    b = _ranked(args[1], op, "tensor_b", rank=3)
    _need_dtype(a, op, "tensor_a", _NUMERIC)
    _need_dtype(b, op, "tensor_b", _NUMERIC)
    out_dtype = _result_dtype(op, attrs["out_dtype"], a.dtype)
    if not attrs["out_dtype"]:
        _one_dtype(r, op, a, b, "tensor_a", "tensor_b")
    (a0, a1, a2), (b0, b1, b2) = a.shape, b.shape
    batch = broadcast_dim(
        a0, b0, r, lambda: f"{op}: batch dimensions {_ds(a0)} and {_ds(b0)} of {a} and {b} differ"
    )
    m, ak = (a2, a1) if attrs["transpose_a"] else (a1, a2)
    bk, n = (b2, b1) if attrs["transpose_b"] else (b1, b2)
    r.dim_equal(
        ak, bk, f"{op}: tensor_a {a} and tensor_b {b} have inner dimensions {_ds(ak)} and {_ds(bk)}"
    )
    return TensorType((batch, m, n), out_dtype)


# elementwise activations, softmax, bias_add, prelu


def _elemwise_rel(
    op: str, kinds: tuple[str, ...] | None, doc: str, axis: bool = False
) -> RelationFunc:
    """The relation of a one-input operator whose result has its input's type."""

    def rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        data = types[0]
        if isinstance(data, IncompleteType):
            r.unify(data, types[-1])
            data = r.resolve(data)
            if isinstance(data, IncompleteType):
                return False
        x = tensor_arg(data, op)
        if kinds is not None:
            _need_dtype(x, op, "data", kinds)
        if axis:
            normalize_axis(_int_attr(attrs, "axis"), x.ndim, op)
        r.unify(types[-1], x)
        return _settled(x)

    rel.__name__ = f"{op.removeprefix('nn.')}_rel"
    rel.__doc__ = doc
    return rel


def _channel_rel(op: str, what: str, kinds: tuple[str, ...] | None, doc: str) -> RelationFunc:
    """The relation of ``op(data, param, axis)`` with a 1-d ``param`` along ``axis``."""

    def rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        if not is_known(types[0]):
            return False
        x = _ranked(types[0], op, "data", min_rank=1)
        if kinds is not None:
            _need_dtype(x, op, "data", kinds)
        axis = _int_attr(attrs, "axis")
        p = _param_rel(op, r, x, normalize_axis(axis, x.ndim, op), axis, types[1], what)
        r.unify(types[-1], x)
        return _settled(x, p)

    rel.__name__ = f"{op.removeprefix('nn.')}_rel"
    rel.__doc__ = doc
    return rel


# convolution


def _conv_out_dim(op: str, what: str, size: Dim, pad: int, k: Dim, d: int, s: int) -> Dim:
    """``(size + pad - ((k - 1) * d + 1)) // s + 1``, or an error if the window does not fit."""
    window = dim.add(dim.mul(dim.sub(k, 1), d), 1)
    padded = dim.add(size, pad)
    num = dim.sub(padded, window)
    if isinstance(num, int) and num < 0:
        raise RelationError(
            f"{op}: the dilated kernel {what} ({_ds(window)}) exceeds the padded input {what} "
            f"({_ds(padded)})"
        )
    return dim.add(dim.floordiv(num, s), 1)


def _kernel_size_check(op: str, r: Reporter, attrs: Attrs, kh: Dim, kw: Dim) -> None:
    if attrs["kernel_size"] is None:
        return
    ks = _pair(op, "kernel_size", attrs["kernel_size"])
    message = f"{op}: kernel_size={list(ks)} but the weight's is [{_ds(kh)}, {_ds(kw)}]"
    r.dim_equal(kh, ks[0], message)
    r.dim_equal(kw, ks[1], message)


def _not_divisible(d: Dim, groups: int) -> bool:
    rem = dim.floormod(d, groups)
    return isinstance(rem, int) and rem != 0


def _conv_weight(
    op: str, r: Reporter, types: list[Type], attrs: Attrs, dims: dict[str, Dim], dtype: DType
) -> Type | None:
    """The weight's type; set from ``channels`` and ``kernel_size`` if unknown (None: wait)."""
    weight = types[1]
    if not isinstance(weight, IncompleteType):
        return weight
    if attrs["channels"] is None or attrs["kernel_size"] is None:
        return None
    kh, kw = _pair(op, "kernel_size", attrs["kernel_size"])
    layout = _str_attr(attrs, "kernel_layout")
    inferred = TensorType(tuple({**dims, "H": kh, "W": kw}[a] for a in layout), dtype)
    r.unify(types[1], inferred)
    return inferred


def _conv_data(
    op: str, types: list[Type], attrs: Attrs
) -> tuple[TensorType, str, tuple[Dim, Dim, Dim, Dim], int, int | None] | None:
    """A convolution's data checked: (data, layout, its (N, C, H, W) dims, groups, channels),
    or None while the data type is unknown."""
    _check_attr_values(op, attrs)
    if not is_known(types[0]):
        return None
    layout = _str_attr(attrs, "data_layout")
    x = _ranked(types[0], op, "data", rank=4, layout=layout)
    _need_dtype(x, op, "data", _NUMERIC)
    n, c, h, wd = _axes(x.shape, layout, "NCHW")
    groups = _int_attr(attrs, "groups")
    channels = attrs["channels"]
    assert channels is None or isinstance(channels, int)
    if _not_divisible(c, groups):
        raise RelationError(f"{op}: data has {_ds(c)} channels, not divisible by groups={groups}")
    return x, layout, (n, c, h, wd), groups, channels


def _conv_kernel(
    op: str, r: Reporter, types: list[Type], attrs: Attrs, dims: dict[str, Dim], x: TensorType
) -> tuple[TensorType, DType] | None:
    """A convolution's weight (inferred from ``dims`` where unknown) checked against the data
    ``x``, and the result dtype; None while the weight cannot be known yet."""
    weight = _conv_weight(op, r, types, attrs, dims, x.dtype)
    if weight is None:
        return None
    w = _ranked(weight, op, "weight", rank=4, layout=_str_attr(attrs, "kernel_layout"))
    _need_dtype(w, op, "weight", _NUMERIC)
    out_dtype = _result_dtype(op, attrs["out_dtype"], x.dtype)
    if not attrs["out_dtype"]:
        _one_dtype(r, op, x, w, "data", "weight")
    return w, out_dtype


def _conv2d_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """(n, c, h, w) * (o, c/g, kh, kw) -> (n, o, (h + pt + pb - dh*(kh-1) - 1) // sh + 1, ..)."""
    op = "nn.conv2d"
    data = _conv_data(op, types, attrs)
    if data is None:
        return False
    x, layout, (n, c, h, wd), groups, channels = data
    dims = {"O": channels or 0, "I": dim.floordiv(c, groups)}
    kernel = _conv_kernel(op, r, types, attrs, dims, x)
    if kernel is None:
        return False
    w, out_dtype = kernel
    o, i, kh, kw = _axes(w.shape, _str_attr(attrs, "kernel_layout"), "OIHW")
    if _not_divisible(o, groups):
        raise RelationError(
            f"{op}: weight has {_ds(o)} output channels, not divisible by groups={groups}"
        )
    expects = dim.mul(i, groups)
    r.dim_equal(
        expects,
        c,
        f"{op}: data has {_ds(c)} channels but weight expects {_ds(expects)} (groups={groups})",
    )
    if channels is not None:
        r.dim_equal(o, channels, f"{op}: channels={channels} but the weight gives {_ds(o)}")
        o = channels
    _kernel_size_check(op, r, attrs, kh, kw)
    sh, sw = _pair(op, "strides", attrs["strides"])
    dh, dw = _pair(op, "dilation", attrs["dilation"])
    pt, pl, pb, pr = _padding4(op, attrs["padding"])
    out = {
        "N": n,
        "C": o,
        "H": _conv_out_dim(op, "height", h, pt + pb, kh, dh, sh),
        "W": _conv_out_dim(op, "width", wd, pl + pr, kw, dw, sw),
    }
    out_layout = _str_attr(attrs, "out_layout") or layout
    r.unify(types[-1], TensorType(tuple(out[a] for a in out_layout), out_dtype))
    return _settled(x, w)


def _conv2d_transpose_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """(n, c, h, w) * (c, o/g, kh, kw) -> (n, o, (h-1)*sh + dh*(kh-1) + 1 - pt - pb + oph, ..)."""
    op = "nn.conv2d_transpose"
    data = _conv_data(op, types, attrs)
    if data is None:
        return False
    x, layout, (n, c, h, wd), groups, channels = data
    if channels is not None and channels % groups:
        raise RelationError(f"{op}: channels={channels} is not divisible by groups={groups}")
    dims = {"I": c, "O": (channels or 0) // groups}
    kernel = _conv_kernel(op, r, types, attrs, dims, x)
    if kernel is None:
        return False
    w, out_dtype = kernel
    i, og, kh, kw = _axes(w.shape, _str_attr(attrs, "kernel_layout"), "IOHW")
    r.dim_equal(i, c, f"{op}: data has {_ds(c)} channels but weight expects {_ds(i)}")
    o = dim.mul(og, groups)
    if channels is not None:
        r.dim_equal(o, channels, f"{op}: channels={channels} but the weight gives {_ds(o)}")
        o = channels
    _kernel_size_check(op, r, attrs, kh, kw)
    if dim.equal(h, 0) or dim.equal(wd, 0):
        raise RelationError(f"{op}: data has an empty spatial dimension: {x}")
    sh, sw = _pair(op, "strides", attrs["strides"])
    dh, dw = _pair(op, "dilation", attrs["dilation"])
    oph, opw = _pair(op, "output_padding", attrs["output_padding"], minimum=0)
    pt, pl, pb, pr = _padding4(op, attrs["padding"])

    def extent(size: Dim, k: Dim, s: int, d: int, pad: int, extra: int) -> Dim:
        full = dim.add(dim.add(dim.mul(dim.sub(size, 1), s), dim.mul(dim.sub(k, 1), d)), 1)
        return dim.add(full, extra - pad)

    oh = extent(h, kh, sh, dh, pt + pb, oph)
    ow = extent(wd, kw, sw, dw, pl + pr, opw)
    if any(isinstance(e, int) and e <= 0 for e in (oh, ow)):
        raise RelationError(f"{op}: the padding leaves an empty output ({_ds(oh)} x {_ds(ow)})")
    out = {"N": n, "C": o, "H": oh, "W": ow}
    out_layout = _str_attr(attrs, "out_layout") or layout
    r.unify(types[-1], TensorType(tuple(out[a] for a in out_layout), out_dtype))
    return _settled(x, w)


# pooling


def _pool_out_dim(
    op: str, what: str, size: Dim, k: int, s: int, d: int, pad: int, ceil: bool
) -> Dim:
    window = (k - 1) * d + 1
    padded = dim.add(size, pad)
    num = dim.add(dim.sub(padded, window), s - 1 if ceil else 0)
    if isinstance(num, int) and num < 0:
        raise RelationError(
            f"{op}: the dilated pool window {what} ({window}) exceeds the padded input {what} "
            f"({_ds(padded)})"
        )
    return dim.add(dim.floordiv(num, s), 1)


def _pool2d_rel(kind: str, doc: str) -> RelationFunc:
    op = f"nn.{kind}_pool2d"

    def rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
        _check_attr_values(op, attrs)
        layout = _str_attr(attrs, "layout")
        x = _ranked(args[0], op, "data", rank=4, layout=layout)
        if kind == "avg":
            _need_dtype(x, op, "data", _NUMERIC)
        n, c, h, wd = _axes(x.shape, layout, "NCHW")
        kh, kw = _pair(op, "pool_size", attrs["pool_size"])
        sh, sw = _pair(op, "strides", attrs["strides"])
        dh, dw = _pair(op, "dilation", attrs["dilation"])
        pt, pl, pb, pr = _padding4(op, attrs["padding"])
        ceil = bool(attrs["ceil_mode"])
        out = {
            "N": n,
            "C": c,
            "H": _pool_out_dim(op, "height", h, kh, sh, dh, pt + pb, ceil),
            "W": _pool_out_dim(op, "width", wd, kw, sw, dw, pl + pr, ceil),
        }
        return TensorType(tuple(out[a] for a in layout), x.dtype)

    rule.__name__ = f"{kind}_pool2d_rel"
    rule.__doc__ = doc
    return forward(rule)


def _empty_window(op: str, x: TensorType, h: Dim, wd: Dim) -> None:
    if dim.equal(h, 0) or dim.equal(wd, 0):
        raise RelationError(f"{op}: the pooling window is empty for data {x}")


def _global_avg_pool2d_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """Numeric (n, c, h, w) -> (n, c, 1, 1), in the data's layout."""
    op = "nn.global_avg_pool2d"
    _check_attr_values(op, attrs)
    layout = _str_attr(attrs, "layout")
    x = _ranked(args[0], op, "data", rank=4, layout=layout)
    _need_dtype(x, op, "data", _NUMERIC)
    n, c, h, wd = _axes(x.shape, layout, "NCHW")
    _empty_window(op, x, h, wd)
    out = {"N": n, "C": c, "H": 1, "W": 1}
    return TensorType(tuple(out[a] for a in layout), x.dtype)


def _adaptive_avg_pool2d_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """Numeric (n, c, h, w) -> (n, c, oh, ow) for output_size (oh, ow) (None: (h, w))."""
    op = "nn.adaptive_avg_pool2d"
    _check_attr_values(op, attrs)
    layout = _str_attr(attrs, "layout")
    x = _ranked(args[0], op, "data", rank=4, layout=layout)
    _need_dtype(x, op, "data", _NUMERIC)
    n, c, h, wd = _axes(x.shape, layout, "NCHW")
    size = attrs["output_size"]
    vals = () if size is None else _as_ints(size)
    oh, ow = (vals[0], vals[-1]) if vals else (h, wd)
    if vals:
        _empty_window(op, x, h, wd)
    out = {"N": n, "C": c, "H": oh, "W": ow}
    return TensorType(tuple(out[a] for a in layout), x.dtype)


# pad, batch_flatten


def _pad_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """(d0, .., dk) with pad_width [[b0, a0], ..] and a scalar pad_value -> (d0 + b0 + a0, ..)."""
    op = "nn.pad"
    _check_attr_values(op, attrs)
    if not is_known(types[0]):
        return False
    x = tensor_arg(types[0], op)
    widths = _pad_widths(attrs["pad_width"])
    mode = attrs["pad_mode"]
    if len(widths) != x.ndim:
        raise RelationError(
            f"{op}: pad_width has {len(widths)} pairs but the data {x} has rank {x.ndim}"
        )
    value = types[1]
    if isinstance(value, IncompleteType):
        value = TensorType((), x.dtype)
        r.unify(types[1], value)
    v = tensor_arg(value, op, "pad_value")
    if v.ndim != 0:
        raise RelationError(f"{op}: pad_value must be a scalar, got {v}")
    shape: list[Dim] = []
    for axis, ((before, after), size) in enumerate(zip(widths, x.shape, strict=True)):
        if mode != "constant" and (before < 0 or after < 0):
            raise RelationError(
                f"{op}: {mode} padding needs non-negative widths, got ({before}, {after}) "
                f"for axis {axis}"
            )
        new = dim.add(size, before + after)
        if isinstance(new, int) and new < 0:
            raise RelationError(
                f"{op}: padding axis {axis} of extent {_ds(size)} by ({before}, {after}) "
                "leaves a negative extent"
            )
        if before + after > 0 and isinstance(size, int):
            if mode == "reflect" and (before >= size or after >= size):
                raise RelationError(
                    f"{op}: reflect padding of axis {axis} by ({before}, {after}) needs widths "
                    f"below its extent {size}"
                )
            if mode == "edge" and size == 0:
                raise RelationError(f"{op}: edge padding of the empty axis {axis}")
        shape.append(new)
    r.unify(types[-1], TensorType(tuple(shape), x.dtype))
    return _settled(x, v)


def _batch_flatten_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """(n, d1, .., dk) -> (n, d1 * .. * dk)."""
    x = _ranked(args[0], "nn.batch_flatten", "data", min_rank=1)
    return TensorType((x.shape[0], dim.product(x.shape[1:])), x.dtype)


# normalization, dropout, losses


def _batch_norm_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """Float data, gamma, beta, moving_mean, moving_var (c,) for axis -> (data, (c,), (c,))."""
    op = "nn.batch_norm"
    if not is_known(types[0]):
        return False
    x = _ranked(types[0], op, "data", min_rank=1)
    _need_dtype(x, op, "data", _FLOAT)
    axis = _int_attr(attrs, "axis")
    ax = normalize_axis(axis, x.ndim, op)
    names = ("gamma", "beta", "moving_mean", "moving_var")
    params = [
        _param_rel(op, r, x, ax, axis, t, what) for t, what in zip(types[1:5], names, strict=True)
    ]
    r.unify(types[-1], TupleType((x, params[2], params[3])))
    return _settled(x)


def _layer_norm_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """Float data, gamma and beta (c,) for axis -> data's type."""
    op = "nn.layer_norm"
    if not is_known(types[0]):
        return False
    x = _ranked(types[0], op, "data", min_rank=1)
    _need_dtype(x, op, "data", _FLOAT)
    axis = _int_attr(attrs, "axis")
    ax = normalize_axis(axis, x.ndim, op)
    for t, what in zip(types[1:3], ("gamma", "beta"), strict=True):
        _param_rel(op, r, x, ax, axis, t, what)
    r.unify(types[-1], x)
    return _settled(x)


def _dropout_rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
    """A tensor t -> (t, t): the output and the mask of kept elements."""
    op = "nn.dropout"
    _check_attr_values(op, attrs)
    data = types[0]
    if isinstance(data, IncompleteType):
        r.unify(TupleType((data, data)), types[-1])
        data = r.resolve(data)
        if isinstance(data, IncompleteType):
            return False
    x = tensor_arg(data, op)
    r.unify(types[-1], TupleType((x, x)))
    return True


def _loss_rel(op: str, doc: str) -> RelationFunc:
    def rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        if not is_known(types[0]):
            return False
        p = tensor_arg(types[0], op, "predictions")
        if isinstance(types[1], IncompleteType):
            r.unify(types[1], p)
        t = tensor_arg(r.resolve(types[1]), op, "targets")
        message = f"{op}: predictions and targets must have one rank-2 shape, got {p} and {t}"
        if p.ndim != 2 or t.ndim != 2:
            raise RelationError(message)
        for dp, dt in zip(p.shape, t.shape, strict=True):
            r.dim_equal(dp, dt, message)
        _need_dtype(p, op, "predictions", _FLOAT)
        _one_dtype(r, op, p, t, "predictions", "targets")
        r.unify(types[-1], TensorType((), p.dtype))
        return _settled(p, t)

    rel.__name__ = f"{op.removeprefix('nn.')}_rel"
    rel.__doc__ = doc
    return rel


_RELATIONS: dict[str, RelationFunc] = {
    "nn.dense": _dense_rel,
    "nn.matmul": _matmul_rel,
    "nn.batch_matmul": forward(_batch_matmul_rule),
    "nn.bias_add": _channel_rel(
        "nn.bias_add", "bias", None, "Data (.., c, ..) with c at axis, bias (c,) -> data's type."
    ),
    "nn.relu": _elemwise_rel("nn.relu", _NUMERIC, "A numeric tensor -> its type."),
    "nn.leaky_relu": _elemwise_rel("nn.leaky_relu", _FLOAT, "A float tensor -> its type."),
    "nn.prelu": _channel_rel(
        "nn.prelu",
        "alpha",
        _FLOAT,
        "Float data (.., c, ..) with c at axis, alpha (c,) -> data's type.",
    ),
    "nn.gelu": _elemwise_rel("nn.gelu", _FLOAT, "A float tensor -> its type."),
    "nn.softmax": _elemwise_rel(
        "nn.softmax", _FLOAT, "A float tensor with axis in range -> its type.", axis=True
    ),
    "nn.log_softmax": _elemwise_rel(
        "nn.log_softmax", _FLOAT, "A float tensor with axis in range -> its type.", axis=True
    ),
    "nn.conv2d": _conv2d_rel,
    "nn.conv2d_transpose": _conv2d_transpose_rel,
    "nn.max_pool2d": _pool2d_rel(
        "max",
        "(n, c, h, w) -> (n, c, (h + pt + pb - dh*(kh-1) - 1 [+ sh-1 if ceil]) // sh + 1, ..).",
    ),
    "nn.avg_pool2d": _pool2d_rel(
        "avg",
        "Numeric (n, c, h, w) -> (n, c, (h + pt + pb - dh*(kh-1) - 1 [+ sh-1]) // sh + 1, ..).",
    ),
    "nn.global_avg_pool2d": forward(_global_avg_pool2d_rule),
    "nn.adaptive_avg_pool2d": forward(_adaptive_avg_pool2d_rule),
    "nn.pad": _pad_rel,
    "nn.batch_flatten": forward(_batch_flatten_rule),
    "nn.batch_norm": _batch_norm_rel,
    "nn.layer_norm": _layer_norm_rel,
    "nn.dropout": _dropout_rel,
    "nn.cross_entropy": _loss_rel(
        "nn.cross_entropy", "Float predictions (b, k), targets (b, k) of one dtype -> a scalar."
    ),
    "nn.cross_entropy_with_logits": _loss_rel(
        "nn.cross_entropy_with_logits",
        "Float predictions (b, k), targets (b, k) of one dtype -> a scalar.",
    ),
}


def _limited(op: str, rel: RelationFunc) -> RelationFunc:
    """``rel`` whose result must be a tensor (or tuple of tensors) that can exist: not above
    the maximum rank nor too big (:func:`relay.op.transform.check_shape_limits`), as an
    attribute such as a huge padding could make it."""

    def limited(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        solved = rel(types, attrs, r)
        check_shape_limits(op, r.resolve(types[-1]))
        return solved

    limited.__name__ = rel.__name__
    limited.__doc__ = rel.__doc__
    return limited


_RELATIONS = {name: _limited(name, rel) for name, rel in _RELATIONS.items()}


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
        name,
        num_inputs,
        attrs=attrs,
        reference=reference,
        pattern=pattern,
        doc=doc,
        type_relation=_RELATIONS[name],
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
