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
* ``nn.batch_norm`` is by default the inference form: ``(x - moving_mean) / sqrt(moving_var +
  epsilon) * gamma + beta`` along ``axis``, returning ``(out, moving_mean, moving_var)`` as
  Relay's compute did; ``center``/``scale`` False drop ``beta``/``gamma``. ``training=True``
  is ``torch.nn.functional.batch_norm(training=True)``: ``out`` normalizes with the mean and
  the biased variance of ``x`` over every axis but ``axis``, and the 2nd and 3rd results are
  the updated moving statistics ``(1 - momentum) * moving_mean + momentum * mean`` and
  ``(1 - momentum) * moving_var + momentum * var * n / (n - 1)``: the unbiased variance, as
  PyTorch's running variance (``n`` values per channel; ``n < 2`` is rejected, as PyTorch
  rejects one value per channel: no unbiased variance). ``nn.layer_norm``
  normalizes over ``axis`` with the biased variance. ``nn.dropout`` is the inference
  identity, returning ``(data, ones)`` (the mask of kept elements).
* ``nn.pad`` takes ``pad_value`` as a rank-0 second input (cast to the data dtype);
  ``constant`` mode allows negative widths (cropping, as topi's pad does) while ``edge`` and
  ``reflect`` need widths ``>= 0`` (and ``reflect`` widths below the axis extent). A rank-0
  tensor takes ``pad_width=[]`` and is returned as is, whatever the mode.
* ``nn.cross_entropy(p, t)`` is ``-sum(log(p) * t) / batch`` and
  ``nn.cross_entropy_with_logits(p, t)`` is ``-sum(p * t) / batch``, rank-0.
* ``nn.max_pool2d_grad(out_grad, data)`` and ``nn.avg_pool2d_grad(out_grad, data)`` (TVM's
  names, the pooling attributes of the forward operator) are pooling's adjoints, float only:
  each window's ``out_grad`` goes to the window's first maximum (in window order, padding
  included, as ``topi.nn.pool_grad``), or is divided by the window's count and added to each
  of its elements; what lands in the padding is dropped.

Every operator has a reverse-mode gradient rule and a forward-mode JVP rule (the last two
sections; see their comments), which share the derivative helpers of the section before them.

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

from relay.errors import CompileError
from relay.ir import dim
from relay.ir.attrs import Attrs, AttrValue
from relay.ir.dim import Dim
from relay.ir.expr import Call, Expr, Tuple, TupleGetItem, const
from relay.ir.types import DTYPES, DType, IncompleteType, TensorType, TupleType, Type, _AnyDim
from relay.op.registry import (
    AttrValidationError,
    OpDef,
    OpPattern,
    attr,
    gradient_rule,
    jvp_rule,
    op_call,
    register_op,
)
from relay.op.tensor import (
    carries_gradient,
    jvp_sum,
    known_extent,
    known_type,
    linear_in_first_jvp,
    linear_jvp,
    truncate_divide,
    tuple_fields,
)
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
    "avg_pool2d_grad",
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
    "max_pool2d_grad",
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


def _is_float_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` is a float: numpy's floats and bfloat16 (ml_dtypes' type, of kind
    "V", which numpy does not count among its floats), as the type relations accept."""
    return bool(np.issubdtype(dtype, np.floating)) or dtype.name == "bfloat16"


def _need_float(op: str, *xs: Array) -> None:
    """Raise unless each of ``xs`` is a float array (:func:`_is_float_dtype`)."""
    for x in xs:
        if not _is_float_dtype(x.dtype):
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
    if _is_float_dtype(out):
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
    wide = np.dtype(np.uint64 if total.dtype == np.uint64 else np.int64)
    quotient = truncate_divide(total.astype(wide), np.asarray(count).astype(wide))
    return np.asarray(quotient.astype(total.dtype))


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
    out = np.maximum(x, np.zeros((), dtype=x.dtype))
    if x.dtype.kind not in "biu":  # +0 for -0 in every float dtype (numpy's float16
        out = np.where(out == 0, np.zeros((), dtype=x.dtype), out)  # maximum keeps a -0)
    return np.asarray(out)


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


_Pair = tuple[int, int]
_PoolGeometry = tuple[_Pair, _Pair, _Pair, tuple[int, int, int, int], _Pair, _Pair]


def _pool_geometry(op: str, attrs: Mapping[str, Any], h: int, wd: int) -> _PoolGeometry:
    """The windows of the 2-d pooling ``op`` (or of its gradient) over data of height ``h`` and
    width ``wd``: pool size, strides, dilation and padding ``(top, left, bottom, right)`` as
    ``(height, width)`` pairs, the output's height and width, and the rows and columns ceil
    mode reads past the bottom and right padding."""
    kh, kw = _pair(op, "pool_size", attrs["pool_size"])
    sh, sw = _pair(op, "strides", attrs["strides"])
    dh, dw = _pair(op, "dilation", attrs["dilation"])
    pt, pl, pb, pr = _padding4(op, attrs["padding"])
    ceil = bool(attrs["ceil_mode"])
    oh, extra_h = _pool_axis(op, "height", h, kh, sh, dh, pt, pb, ceil)
    ow, extra_w = _pool_axis(op, "width", wd, kw, sw, dw, pl, pr, ceil)
    return (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (oh, ow), (extra_h, extra_w)


def _pool2d(kind: str, data: Array, attrs: Mapping[str, Any]) -> Array:
    op = f"nn.{kind}_pool2d"
    _check_pool_attrs(op, attrs)
    x = _to_nchw(op, np.asarray(data), attrs["layout"])
    _, _, h, wd = x.shape
    (kh, kw), (sh, sw), (dh, dw), padding, (oh, ow), extra = _pool_geometry(op, attrs, h, wd)
    pt, pl, pb, pr = padding
    extra_h, extra_w = extra
    pads = ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w))
    if kind == "max":
        if x.dtype == np.bool_:
            low: object = False
        elif _is_float_dtype(x.dtype):
            low = -np.inf
        else:
            low = np.iinfo(x.dtype).min
        xp = np.pad(x, pads, constant_values=np.asarray(low).astype(x.dtype))
        res = np.max(_windows(xp, kh, kw, sh, sw, dh, dw, oh, ow), axis=2)
        return np.asarray(_from_nchw(res, attrs["layout"]))
    if x.dtype == np.bool_:
        raise ValueError(f"{op} needs a numeric tensor, got bool")
    is_float = _is_float_dtype(x.dtype)
    acc = _wide(x) if is_float else x
    xp = np.pad(acc, pads)
    total = np.sum(_windows(xp, kh, kw, sh, sw, dh, dw, oh, ow), axis=2, dtype=acc.dtype)
    count = _avg_counts(attrs, (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (h, wd))
    res = (total / count).astype(x.dtype) if is_float else _truncdiv(total, count)
    return np.asarray(_from_nchw(res, attrs["layout"]))


def _avg_counts(
    attrs: Mapping[str, Any],
    out: tuple[int, int],
    k: tuple[int, int],
    s: tuple[int, int],
    d: tuple[int, int],
    pads: tuple[int, int, int, int],
    size: tuple[int, int],
) -> Array:
    """``(OH, OW)``: the element count each average pooling window divides by."""
    pt, pl, pb, pr = pads
    if attrs["count_include_pad"]:
        ch = _in_range_counts(out[0], k[0], s[0], d[0], pt, -pt, size[0] + pb - 1)
        cw = _in_range_counts(out[1], k[1], s[1], d[1], pl, -pl, size[1] + pr - 1)
    else:
        ch = _in_range_counts(out[0], k[0], s[0], d[0], pt, 0, size[0] - 1)
        cw = _in_range_counts(out[1], k[1], s[1], d[1], pl, 0, size[1] - 1)
    return np.asarray(np.maximum(ch[:, None] * cw[None, :], 1))


def _max_pool2d_ref(data: Array, **attrs: Any) -> Array:
    return _pool2d("max", data, attrs)


def _avg_pool2d_ref(data: Array, **attrs: Any) -> Array:
    return _pool2d("avg", data, attrs)


def _pool2d_grad(kind: str, out_grad: Array, data: Array, attrs: Mapping[str, Any]) -> Array:
    """The adjoint of ``nn.<kind>_pool2d`` at ``data``: each window's share of ``out_grad``
    (all of it at the window's first maximum, as topi's ``pool_grad``; ``1 / count`` of it at
    each element for averages) added back at the window's elements, padding dropped."""
    op = f"nn.{kind}_pool2d_grad"
    _check_pool_attrs(op, attrs)
    layout = attrs["layout"]
    x = _to_nchw(op, np.asarray(data), layout)
    g = _to_nchw(op, np.asarray(out_grad), layout, "out_grad")
    _need_float(op, x)
    _same_dtype(op, x, g, "data", "out_grad")
    n, c, h, wd = x.shape
    (kh, kw), (sh, sw), (dh, dw), padding, (oh, ow), extra = _pool_geometry(op, attrs, h, wd)
    pt, pl, pb, pr = padding
    extra_h, extra_w = extra
    if g.shape != (n, c, oh, ow):
        pooled = _from_nchw(np.empty((n, c, oh, ow)), layout).shape
        raise ValueError(
            f"{op}: out_grad must have the pooled data's shape {_shape_str(pooled)}, got "
            f"{_shape_str(np.asarray(out_grad).shape)}"
        )
    pads = ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w))
    acc = _wide(g)
    if kind == "max":
        xp = np.pad(x, pads, constant_values=np.asarray(-np.inf).astype(x.dtype))
        first = np.argmax(_windows(xp, kh, kw, sh, sw, dh, dw, oh, ow), axis=2)
        share = acc
    else:
        count = _avg_counts(
            attrs, (oh, ow), (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr), (h, wd)
        )
        share = acc / count
    dxp = np.zeros((n, c, h + pt + pb + extra_h, wd + pl + pr + extra_w), dtype=acc.dtype)
    zero = np.zeros((), dtype=acc.dtype)
    for a in range(kh):
        for b in range(kw):
            part = np.where(first == a * kw + b, share, zero) if kind == "max" else share
            dxp[
                :,
                :,
                a * dh : a * dh + sh * (oh - 1) + 1 : sh,
                b * dw : b * dw + sw * (ow - 1) + 1 : sw,
            ] += part
    dx = dxp[:, :, pt : pt + h, pl : pl + wd].astype(x.dtype)
    return np.asarray(_from_nchw(dx, layout))


def _max_pool2d_grad_ref(out_grad: Array, data: Array, **attrs: Any) -> Array:
    return _pool2d_grad("max", out_grad, data, attrs)


def _avg_pool2d_grad_ref(out_grad: Array, data: Array, **attrs: Any) -> Array:
    return _pool2d_grad("avg", out_grad, data, attrs)


def _mean_hw(op: str, x: Array, rows: slice, cols: slice) -> Array:
    """The mean of ``x[:, :, rows, cols]`` (NCHW) in ``x``'s dtype (integers truncate)."""
    win = x[:, :, rows, cols]
    count = win.shape[2] * win.shape[3]
    if count == 0:
        raise ValueError(f"{op}: the pooling window is empty")
    if _is_float_dtype(x.dtype):
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


def _known_batch_count(shape: Sequence[Dim], ax: int) -> int | None:
    """The number of values each channel's batch statistics are taken over (the product of
    every extent but ``ax``'s), if those extents are known."""
    extents = [d for i, d in enumerate(shape) if i != ax]
    known = [d for d in extents if isinstance(d, int)]
    return math.prod(known) if len(known) == len(extents) else None


def _few_values_message(op: str, data: str) -> str:
    return f"{op}: training needs more than one value per channel, got {data}"


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
    training: bool = False,
    momentum: float = 0.1,
) -> tuple[Array, Array, Array]:
    op = "nn.batch_norm"
    _check_momentum({"momentum": momentum})
    x = np.asarray(data)
    _need_float(op, x)
    if x.ndim == 0:
        raise ValueError(f"{op} needs data of rank at least 1")
    params = {"gamma": gamma, "beta": beta, "moving_mean": moving_mean, "moving_var": moving_var}
    shaped = {k: _wide(_channel_param(op, x, np.asarray(p), axis, k)) for k, p in params.items()}
    w = _wide(x)
    eps = np.asarray(epsilon, w.dtype)
    if not training:
        with np.errstate(all="ignore"):
            out = (w - shaped["moving_mean"]) / np.sqrt(shaped["moving_var"] + eps)
            if scale:
                out = out * shaped["gamma"]
            if center:
                out = out + shaped["beta"]
        return (
            np.asarray(out.astype(x.dtype)),
            np.asarray(moving_mean).copy(),
            np.asarray(moving_var).copy(),
        )
    ax = _norm_axis(op, axis, x.ndim)
    count = _known_batch_count(x.shape, ax)
    assert count is not None
    if count < 2:
        raise ValueError(_few_values_message(op, f"data of shape {_shape_str(x.shape)}"))
    others = tuple(i for i in range(x.ndim) if i != ax)
    with np.errstate(all="ignore"):
        mu = np.mean(w, axis=others, keepdims=True)
        var = np.mean((w - mu) ** 2, axis=others, keepdims=True)
        out = (w - mu) / np.sqrt(var + eps)
        if scale:
            out = out * shaped["gamma"]
        if center:
            out = out + shaped["beta"]
        keep = np.asarray(1.0 - momentum, w.dtype)
        new = np.asarray(momentum, w.dtype)
        unbiased = var * np.asarray(count / (count - 1), w.dtype)
        new_mean = keep * shaped["moving_mean"] + new * mu
        new_var = keep * shaped["moving_var"] + new * unbiased
    dtype = np.asarray(moving_mean).dtype
    return (
        np.asarray(out.astype(x.dtype)),
        np.asarray(new_mean.reshape(-1).astype(dtype)),
        np.asarray(new_var.reshape(-1).astype(dtype)),
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


def _pooled_type(op: str, x: TensorType, attrs: Attrs) -> TensorType:
    """The type of the pooled ``x`` (rank 4, in ``attrs``' layout)."""
    layout = _str_attr(attrs, "layout")
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


def _pool2d_rel(kind: str, doc: str) -> RelationFunc:
    op = f"nn.{kind}_pool2d"

    def rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
        _check_attr_values(op, attrs)
        layout = _str_attr(attrs, "layout")
        x = _ranked(args[0], op, "data", rank=4, layout=layout)
        if kind == "avg":
            _need_dtype(x, op, "data", _NUMERIC)
        return _pooled_type(op, x, attrs)

    rule.__name__ = f"{kind}_pool2d_rel"
    rule.__doc__ = doc
    return forward(rule)


def _pool2d_grad_rel(kind: str, doc: str) -> RelationFunc:
    """The relation of ``nn.<kind>_pool2d_grad(out_grad, data)``: ``out_grad`` has the pooled
    data's type, the result the data's."""
    op = f"nn.{kind}_pool2d_grad"

    def rel(types: list[Type], attrs: Attrs, r: Reporter) -> bool:
        _check_attr_values(op, attrs)
        if not is_known(types[1]):
            return False
        x = _ranked(types[1], op, "data", rank=4, layout=_str_attr(attrs, "layout"))
        _need_dtype(x, op, "data", _FLOAT)
        pooled = _pooled_type(op, x, attrs)
        if isinstance(types[0], IncompleteType):
            r.unify(types[0], pooled)
            g = pooled
        else:
            g = tensor_arg(types[0], op, "out_grad")
            message = f"{op}: out_grad must have the pooled data's type {pooled}, got {g}"
            if g.ndim != 4:
                raise RelationError(message)
            for dg, dp in zip(g.shape, pooled.shape, strict=True):
                r.dim_equal(dg, dp, message)
            r.dtype_equal(g.dtype, x.dtype, message)
        r.unify(types[-1], x)
        return _settled(x, g)

    rel.__name__ = f"{kind}_pool2d_grad_rel"
    rel.__doc__ = doc
    return rel


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
    _check_attr_values(op, attrs)
    if not is_known(types[0]):
        return False
    x = _ranked(types[0], op, "data", min_rank=1)
    _need_dtype(x, op, "data", _FLOAT)
    axis = _int_attr(attrs, "axis")
    ax = normalize_axis(axis, x.ndim, op)
    if attrs.get("training", False):
        count = _known_batch_count(x.shape, ax)
        if count is not None and count < 2:
            raise RelationError(_few_values_message(op, str(x)))
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
    "nn.max_pool2d_grad": _pool2d_grad_rel(
        "max", "Out_grad of max_pool2d(data)'s type, float data (n, c, h, w) -> data's type."
    ),
    "nn.avg_pool2d_grad": _pool2d_grad_rel(
        "avg", "Out_grad of avg_pool2d(data)'s type, float data (n, c, h, w) -> data's type."
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


def _check_momentum(attrs: Mapping[str, object]) -> None:
    momentum = attrs.get("momentum", 0.1)
    assert isinstance(momentum, int | float)
    if not 0.0 <= momentum <= 1.0:
        raise AttrValidationError(f"nn.batch_norm: momentum must be in [0, 1], got {momentum}")


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
    "nn.max_pool2d_grad": lambda a: _check_pool_attrs("nn.max_pool2d_grad", a),
    "nn.avg_pool2d_grad": lambda a: _check_pool_attrs("nn.avg_pool2d_grad", a),
    "nn.global_avg_pool2d": _check_layouts("nn.global_avg_pool2d"),
    "nn.adaptive_avg_pool2d": _check_layouts("nn.adaptive_avg_pool2d"),
    "nn.pad": _check_pad,
    "nn.dropout": _check_rate,
    "nn.batch_norm": _check_momentum,
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
    "nn.max_pool2d_grad",
    2,
    _max_pool2d_grad_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "The gradient of max_pool2d: out_grad sent to each window's first maximum of data.",
    _POOL_ATTRS,
)
_register(
    "nn.avg_pool2d_grad",
    2,
    _avg_pool2d_grad_ref,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    "The gradient of avg_pool2d: out_grad / count spread over each window of data.",
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
    "Batch normalization along axis by the moving statistics, or by the batch's when training "
    "(which updates them); gives (out, moving_mean, moving_var).",
    [
        attr("axis", "int", 1),
        *_NORM_ATTRS,
        attr("training", "bool", False),
        attr("momentum", "float", 0.1),
    ],
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


def _pool_attrs(
    pool_size: IntOrPair,
    strides: IntOrPair,
    dilation: IntOrPair,
    padding: IntOrPair,
    layout: str,
    out_layout: str,
    ceil_mode: bool,
) -> dict[str, object]:
    """The attributes the pooling builders (and their gradients') share."""
    return {
        "pool_size": _window(pool_size),
        "strides": _window(strides),
        "dilation": _window(dilation),
        "padding": _window(padding),
        "layout": layout,
        "out_layout": out_layout,
        "ceil_mode": ceil_mode,
    }


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
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
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
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = count_include_pad
    return _call("nn.avg_pool2d", [data], attrs)


def max_pool2d_grad(
    out_grad: Expr,
    data: Expr,
    pool_size: IntOrPair = (1, 1),
    strides: IntOrPair = (1, 1),
    dilation: IntOrPair = (1, 1),
    padding: IntOrPair = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """``nn.max_pool2d_grad(out_grad, data, ...)``: the gradient of ``nn.max_pool2d`` (same
    attributes) at ``data``: each window's ``out_grad`` goes to its first maximum."""
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    return _call("nn.max_pool2d_grad", [out_grad, data], attrs)


def avg_pool2d_grad(
    out_grad: Expr,
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
    """``nn.avg_pool2d_grad(out_grad, data, ...)``: the gradient of ``nn.avg_pool2d`` (same
    attributes) at ``data``: each window's ``out_grad`` divided by its count, spread over it."""
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = count_include_pad
    return _call("nn.avg_pool2d_grad", [out_grad, data], attrs)


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
    training: bool = False,
    momentum: float = 0.1,
) -> Call:
    """``nn.batch_norm(data, gamma, beta, moving_mean, moving_var)``: batch normalization
    along ``axis``; the call's value is ``(out, moving_mean, moving_var)``.

    By default (inference) ``out`` normalizes with the moving statistics, which are returned
    unchanged. With ``training=True`` (``torch.nn.functional.batch_norm(training=True)``) it
    normalizes with the mean and biased variance of ``data`` over every axis but ``axis``,
    and returns the moving statistics updated as ``(1 - momentum) * moving + momentum *
    batch`` (the variance with the unbiased batch estimate, as PyTorch does)."""
    attrs = {
        "axis": axis,
        "epsilon": epsilon,
        "center": center,
        "scale": scale,
        "training": training,
        "momentum": momentum,
    }
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


# ---- derivative helpers -------------------------------------------------------------------------
#
# What the gradient rules and the JVP rules (the next two sections) both compute, written once:
# the arguments' types, elementwise arithmetic, per-channel parameters broadcast along an axis
# and results summed per channel, the activations' derivatives (diagonal, so the gradient applies
# them to the adjoint and the JVP to the tangent), softmax's sum along its axis, max pooling's
# window taps, and the normalizations' attributes and statistics.


def _arg_type(e: Expr) -> TensorType:
    """The tensor type of a primal argument: inferred, or a variable's annotation."""
    ty = known_type(e)
    if not isinstance(ty, TensorType):
        raise CompileError(f"the rule needs the tensor type of {e}, got {ty}")
    return ty


def _add(a: Expr, b: Expr) -> Call:
    return op_call("add", a, b)


def _sub(a: Expr, b: Expr) -> Call:
    return op_call("subtract", a, b)


def _mul(a: Expr, b: Expr) -> Call:
    return op_call("multiply", a, b)


def _div(a: Expr, b: Expr) -> Call:
    return op_call("divide", a, b)


def _zeros(like: Expr) -> Call:
    return op_call("zeros_like", like)


def _scalar(value: float, like: Expr) -> Call:
    """The rank-0 constant ``value`` in ``like``'s dtype."""
    return op_call("cast_like", const(np.asarray(value, dtype=np.float64)), like)


def _positive(x: Expr) -> Call:
    return op_call("greater", x, _zeros(x))


def _channel_axis(call: Call, x: Expr) -> tuple[int, int]:
    """The rank of ``x`` and the call's ``axis`` normalized for it."""
    rank = len(_arg_type(x).shape)
    axis = _int_attr(call.attrs, "axis")
    return rank, axis + rank if axis < 0 else axis


def _along(p: Expr, ax: int, rank: int) -> Expr:
    """The 1-d ``p`` of axis ``ax`` shaped to broadcast against a rank-``rank`` tensor."""
    trailing = rank - ax - 1
    return op_call("expand_dims", p, axis=1, num_newaxis=trailing) if trailing else p


def _per_channel(e: Expr, ax: int, rank: int) -> Expr:
    """``e`` summed over every axis but ``ax``."""
    return e if rank == 1 else op_call("sum", e, axis=[ax], exclude=True)


def _times_slope(positive: Expr, v: Expr, negative: Expr | None) -> Call:
    """``v`` times the derivative of a piecewise linear activation (relu, leaky_relu, prelu's
    data): 1 where ``positive`` (the data is above 0), ``negative`` elsewhere (0 when None)."""
    return op_call("where", positive, v, _zeros(v) if negative is None else _mul(v, negative))


def _leaky_relu_alpha(call: Call, x: Expr) -> Call:
    """leaky_relu's slope below 0, as a rank-0 tensor of ``x``'s dtype."""
    alpha = call.attrs["alpha"]
    assert isinstance(alpha, int | float)
    return _scalar(float(alpha), x)


def _gelu_slope(x: Expr) -> Call:
    """d/dx x * Phi(x) = Phi(x) + x * phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 the normal cdf
    and phi(x) = exp(-x^2 / 2) / sqrt(2 pi) its density."""
    erf = op_call("erf", _mul(x, _scalar(1.0 / math.sqrt(2.0), x)))
    cdf = _mul(_scalar(0.5, x), _add(op_call("ones_like", x), erf))
    half_sq = _mul(_scalar(-0.5, x), _mul(x, x))
    pdf = _mul(_scalar(1.0 / math.sqrt(2.0 * math.pi), x), op_call("exp", half_sq))
    return _add(cdf, _mul(x, pdf))


def _axis_sum(call: Call, e: Expr) -> Call:
    """``e`` summed along the call's ``axis`` (softmax's), kept as an axis of extent 1."""
    return op_call("sum", e, axis=[_int_attr(call.attrs, "axis")], keepdims=True)


def _pool_taps(
    op: str, attrs: Attrs, h: int, wd: int
) -> tuple[list[list[int]], list[dict[str, list[int]]]]:
    """Max pooling's windows (``attrs`` a max_pool2d's) over data of height ``h`` and width
    ``wd``: the pad widths of the rank-4 data that hold every window (the padding, and the
    rows and columns ceil mode reads past the data), and for each tap of the window, in window
    order, the ``strided_slice`` attributes taking that tap of every window from the padded
    data (a tensor of the result's shape)."""
    layout = _str_attr(attrs, "layout")
    hax, wax = layout.index("H"), layout.index("W")
    (kh, kw), (sh, sw), (dh, dw), padding, (oh, ow), extra = _pool_geometry(op, attrs, h, wd)
    pt, pl, pb, pr = padding
    extra_h, extra_w = extra
    widths = [[0, 0] for _ in range(4)]
    widths[hax], widths[wax] = [pt, pb + extra_h], [pl, pr + extra_w]
    taps = [
        {
            "begin": [a * dh, b * dw],
            "end": [a * dh + sh * (oh - 1) + 1, b * dw + sw * (ow - 1) + 1],
            "strides": [sh, sw],
            "axes": [hax, wax],
        }
        for a in range(kh)
        for b in range(kw)
    ]
    return widths, taps


def _center_scale(call: Call) -> tuple[bool, bool]:
    """A normalization's ``center`` (beta is added) and ``scale`` (gamma multiplies) flags."""
    return bool(call.attrs["center"]), bool(call.attrs["scale"])


def _epsilon(call: Call) -> float:
    eps = call.attrs["epsilon"]
    assert isinstance(eps, int | float)
    return float(eps)


def _is_training(call: Call) -> bool:
    return bool(call.attrs.get("training", False))


def _momentum(call: Call) -> float:
    momentum = call.attrs.get("momentum", 0.1)
    assert isinstance(momentum, int | float)
    return float(momentum)


def _mean_along(e: Expr, ax: int, exclude: bool = False) -> Call:
    """``e`` averaged along axis ``ax`` (``exclude``: along every other axis), the averaged
    axes kept: layer_norm's statistics (``exclude`` False), batch_norm's training form's."""
    return op_call("mean", e, axis=[ax], exclude=exclude, keepdims=True)


def _layer_norm_stats(call: Call, x: Expr, ax: int) -> tuple[Expr, Expr]:
    """layer_norm's ``(inv, xhat)`` along ``ax``: ``inv = (var + eps)^-1/2`` with the biased
    variance, ``xhat = (x - mean) * inv``."""
    centered = _sub(x, _mean_along(x, ax))
    var = _mean_along(_mul(centered, centered), ax)
    inv = op_call("rsqrt", _add(var, _scalar(_epsilon(call), x)))
    return inv, _mul(centered, inv)


def _inference_stats(
    call: Call, x: Expr, mean: Expr, var: Expr, ax: int, rank: int
) -> tuple[Expr, Expr, Expr, Expr]:
    """batch_norm's inference form, with the statistics ``mean`` and ``var`` of the channels
    (axis ``ax`` of ``x``): ``shifted = var + eps`` and ``inv = shifted^-1/2`` per channel,
    ``inv`` broadcast along ``ax``, and ``xhat = (x - mean) * inv``."""
    shifted = _add(var, _scalar(_epsilon(call), var))
    inv = op_call("rsqrt", shifted)
    inv_along = _along(inv, ax, rank)
    return shifted, inv, inv_along, _mul(_sub(x, _along(mean, ax, rank)), inv_along)


def _batch_ratio(x: Expr, ax: int, rank: int, numerator: float, offset: int) -> Expr:
    """``numerator / (count - offset)`` as a rank-0 tensor of ``x``'s dtype, where ``count`` is
    the number of values per channel of ``x`` (every axis but ``ax``); read from the shape at
    run time when an extent is not known."""
    known = _known_batch_count(_arg_type(x).shape, ax)
    if known is not None:
        return _scalar(numerator / (known - offset), x)
    others = [i for i in range(rank) if i != ax]
    index = const(np.asarray(others, dtype=np.int32))
    extents = op_call("take", op_call("shape_of", x), index, axis=0)
    count = op_call("cast_like", op_call("prod", extents), x)
    return _div(_scalar(numerator, x), _sub(count, _scalar(float(offset), x)))


def _batch_stats(call: Call, x: Expr, ax: int) -> tuple[Expr, Expr, Expr]:
    """The training form's ``(x - mean, inv, xhat)``: the batch mean and the biased variance
    over every axis but ``ax`` (kept as axes of extent 1, so they broadcast against ``x``),
    ``inv = (var + eps)^-1/2`` and ``xhat = (x - mean) * inv``."""
    over = {"axis": [ax], "exclude": True, "keepdims": True}
    mean = op_call("mean", x, **over)
    var = op_call("variance", x, mean, **over)
    inv = op_call("rsqrt", _add(var, _scalar(_epsilon(call), x)))
    centered = _sub(x, mean)
    return centered, inv, _mul(centered, inv)


# ---- gradient rules -----------------------------------------------------------------------------
#
# A rule maps the primal call and the adjoint of its result to an adjoint per argument
# (relay.op.registry); the math follows TVM's python/tvm/relay/op/_tensor_grad.py where TVM has
# the operator. Calls are built through the registry (``op_call``), so this module imports no
# other family's builders. Integer and bool arguments, and every argument of a call whose
# ``out_dtype`` is not a float, get no adjoint. Rules that need an extent (an output padding, the
# length of a row, an averaging matrix) read the arguments' types and raise CompileError when it
# is not known.
#
# * Convolution: conv2d's data adjoint is conv2d_transpose of the adjoint with the same weight
#   array (its kernel layout read with O and I swapped), with the output padding that restores
#   the rows no window reached; conv2d_transpose's is conv2d. Both weight adjoints are one
#   grouped conv2d correlating the data with the adjoint: batch and channels trade places and
#   strides and dilation swap (TVM's conv2d_grad), cropped to the kernel's extent.
# * Pooling: max_pool2d's and avg_pool2d's adjoints are the operators nn.max_pool2d_grad and
#   nn.avg_pool2d_grad (overlapping windows that may reach into the padding or past the data
#   in ceil mode, with counts that depend on both, have no cheap exact composition). Both are
#   linear in out_grad: avg_pool2d_grad's adjoint is avg_pool2d; max_pool2d_grad's gathers the
#   adjoint at each window's first maximum, one strided slice per window tap. Global and
#   adaptive average pooling are compositions: a broadcast divided by the count, and products
#   with the constant averaging matrices of rows and of columns.
# * softmax: s * (g - sum(g * s)); log_softmax: g - exp(out) * sum(g) (sums along the axis).
# * batch_norm's inference form (the statistics are inputs): its result is affine in the data,
#   each parameter's adjoint is a per-channel sum, and the moving statistics also take the
#   adjoints of the 2nd and 3rd results, which they are. The training form differentiates
#   through the batch statistics, dx = gamma * inv / n * (n g - sum(g) - xhat * sum(g * xhat))
#   over the n values of each channel, and adds the updated statistics' linear shares: their
#   adjoints times (1 - momentum) to the moving statistics, and through the batch mean and
#   variance (times momentum) to the data. n is read from the shape at run time if unknown.
# * layer_norm: dx = (dy - mean(dy) - xhat * mean(dy * xhat)) / std with dy = g * gamma.
# * pad: constant padding's data adjoint is the adjoint padded by the negated widths (a crop,
#   or zeros where the padding cropped); pad_value's is the adjoint's sum over the padding.
#   edge and reflect padding fold the adjoint of the padding back onto the elements it copies.
# * dropout is the inference identity: the adjoint of its result times the (all ones) mask.


def _known_axes(e: Expr, layout: str, names: str, op: str) -> tuple[int, ...]:
    return tuple(known_extent(d, op) for d in _axes(_arg_type(e).shape, layout, names))


def _transpose(e: Expr, axes: Sequence[int]) -> Expr:
    return e if list(axes) == sorted(axes) else op_call("transpose", e, axes=list(axes))


def _swap_last(e: Expr, rank: int) -> Expr:
    return _transpose(e, [*range(rank - 2), rank - 1, rank - 2])


def _permute(e: Expr, src: str, dst: str) -> Expr:
    """``e`` with axes named by the letters of ``src`` reordered as ``dst``."""
    return _transpose(e, [src.index(a) for a in dst])


def _swap_oi(layout: str) -> str:
    """A kernel layout with O and I exchanged: how the transposed operator reads the array."""
    return layout.translate(str.maketrans("OI", "IO"))


def _result_is_float(call: Call) -> bool:
    """Whether the result can carry a gradient: not an integer ``out_dtype``."""
    out_dtype = call.attrs.get("out_dtype", "")
    return not out_dtype or str(out_dtype).startswith(("float", "bfloat"))


_GradientRule = Callable[[Call, Expr], list[Expr | None]]


def _product_gradient_rule(name: str) -> Callable[[_GradientRule], _GradientRule]:
    """Register the decorated function as the gradient rule of the two-argument product or
    convolution ``name``, called only when the result can carry a gradient: a call with an
    integer ``out_dtype`` gives neither argument an adjoint."""

    def wrap(rule: _GradientRule) -> _GradientRule:
        def guarded(call: Call, out_grad: Expr) -> list[Expr | None]:
            return rule(call, out_grad) if _result_is_float(call) else [None, None]

        gradient_rule(name)(guarded)
        return rule

    return wrap


def _odt(call: Call, arg: Expr) -> str:
    """The ``out_dtype`` an adjoint computation needs: ``arg``'s dtype where the primal call
    changed the dtype (its adjoint has the result's), else empty (that of the inputs)."""
    return str(_arg_type(arg).dtype) if call.attrs["out_dtype"] else ""


def _rows(e: Expr, rank: int, last: Dim, op: str) -> Expr:
    """``e`` as a matrix: its leading axes flattened into rows of length ``last``."""
    return e if rank == 2 else op_call("reshape", e, newshape=[-1, known_extent(last, op)])


def _layout_to_nchw(e: Expr, layout: str) -> Expr:
    return _permute(e, layout, "NCHW")


def _layout_from_nchw(e: Expr, layout: str) -> Expr:
    return _permute(e, "NCHW", layout)


def _transpose_flags(call: Call) -> tuple[bool, bool]:
    """A product's ``transpose_a`` and ``transpose_b``."""
    return bool(call.attrs["transpose_a"]), bool(call.attrs["transpose_b"])


@_product_gradient_rule("nn.dense")
def _dense_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # out = x @ w.T: dx = g @ w; dw = g.T @ x over every leading axis of x
    x, w = call.args
    rank = len(_arg_type(x).shape)
    units, k = _arg_type(w).shape
    dx = dw = None
    if carries_gradient(x):
        dx = op_call("nn.matmul", out_grad, w, out_dtype=_odt(call, x))
    if carries_gradient(w):
        g_rows = _rows(out_grad, rank, units, "nn.dense")
        x_rows = _rows(x, rank, k, "nn.dense")
        dw = op_call("nn.matmul", g_rows, x_rows, transpose_a=True, out_dtype=_odt(call, w))
    return [dx, dw]


@_product_gradient_rule("nn.matmul")
def _matmul_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # out = A @ B with A = a (a's last two axes swapped if transpose_a), B = b (or b.T):
    # dA = g @ B.T; dB = A.T @ g over every leading axis (A and g flattened to rows)
    a, b = call.args
    ta, tb = _transpose_flags(call)
    rank = len(_arg_type(a).shape)
    b0, b1 = _arg_type(b).shape
    k, n = (b1, b0) if tb else (b0, b1)
    da: Expr | None = None
    db: Expr | None = None
    if carries_gradient(a):
        da = op_call("nn.matmul", out_grad, b, transpose_b=not tb, out_dtype=_odt(call, a))
        if ta:
            da = _swap_last(da, rank)
    if carries_gradient(b):
        a_rows = _rows(_swap_last(a, rank) if ta else a, rank, k, "nn.matmul")
        g_rows = _rows(out_grad, rank, n, "nn.matmul")
        first, second = (g_rows, a_rows) if tb else (a_rows, g_rows)
        db = op_call("nn.matmul", first, second, transpose_a=True, out_dtype=_odt(call, b))
    return [da, db]


@_product_gradient_rule("nn.batch_matmul")
def _batch_matmul_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # out = A @ B per batch (A = a or a^T, B = b or b^T): dA = g @ B^T, dB = A^T @ g, each
    # written as one batch_matmul with the transposes folded into its flags; an argument whose
    # batch of 1 was broadcast sums its adjoint over the batch
    a, b = call.args
    ta, tb = _transpose_flags(call)
    batch_a, batch_b = _arg_type(a).shape[0], _arg_type(b).shape[0]

    def product(x: Expr, y: Expr, tx: bool, ty: bool, like: Expr) -> Expr:
        out = op_call(
            "nn.batch_matmul", x, y, transpose_a=tx, transpose_b=ty, out_dtype=_odt(call, like)
        )
        mine, other = (batch_a, batch_b) if like is a else (batch_b, batch_a)
        if mine == 1 and other != 1:
            return op_call("collapse_sum_like", out, like)
        return out

    da = db = None
    if carries_gradient(a):
        da = product(b, out_grad, tb, True, a) if ta else product(out_grad, b, False, not tb, a)
    if carries_gradient(b):
        db = product(out_grad, a, True, ta, b) if tb else product(a, out_grad, not ta, False, b)
    return [da, db]


@gradient_rule("nn.bias_add")
def _bias_add_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    x, _ = call.args
    if not carries_gradient(x):
        return [None, None]
    rank, ax = _channel_axis(call, x)
    return [out_grad, _per_channel(out_grad, ax, rank)]


@gradient_rule("nn.relu")
def _relu_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    (x,) = call.args
    if not carries_gradient(x):
        return [None]
    # relu(x) > 0 exactly where x > 0: testing the result lets fusion fold relu into the
    # producer of x, whose unactivated output then need not be kept for the backward pass
    return [_times_slope(_positive(call), out_grad, None)]


@gradient_rule("nn.leaky_relu")
def _leaky_relu_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    (x,) = call.args
    return [_times_slope(_positive(x), out_grad, _leaky_relu_alpha(call, x))]


@gradient_rule("nn.prelu")
def _prelu_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    x, alpha = call.args
    rank, ax = _channel_axis(call, x)
    positive = _positive(x)
    dx = _times_slope(positive, out_grad, _along(alpha, ax, rank))
    slope = op_call("where", positive, _zeros(out_grad), _mul(out_grad, x))
    return [dx, _per_channel(slope, ax, rank)]


@gradient_rule("nn.gelu")
def _gelu_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [_mul(out_grad, _gelu_slope(call.args[0]))]


@gradient_rule("nn.softmax")
def _softmax_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [_mul(call, _sub(out_grad, _axis_sum(call, _mul(out_grad, call))))]


@gradient_rule("nn.log_softmax")
def _log_softmax_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [_sub(out_grad, _mul(op_call("exp", call), _axis_sum(call, out_grad)))]


def _conv_weight_grad(
    data: Expr,
    out_grad: Expr,
    data_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int, int, int],
    groups: int,
    out_dtype: str,
) -> Expr:
    """The adjoint of the OIHW weight of ``conv2d(data, weight)`` (NCHW ``data`` of
    ``data_shape`` and adjoint ``out_grad`` of ``out_shape``):
    ``dw[o, i, a, b] = sum over n, y, x of g[n, o, y, x] * xp[n, c(o, i), y*s + a*d, ..]`` is a
    grouped conv2d of the data, channels as its batch and batch as its channels, with the
    adjoint as the kernel: strides and dilation exchange roles."""
    n, c, h, wd = data_shape
    _, _, oh, ow = out_shape
    kh, kw = kernel
    (sh, sw), (dh, dw) = strides, dilation
    pt, pl, _, _ = padding
    cg = c // groups
    if groups == 1:
        batch: Expr = _transpose(data, [1, 0, 2, 3])  # (c, n, h, w)
    else:  # (cg, groups * n, h, w): group k's channels n at k * n ..
        split = op_call("reshape", data, newshape=[n, groups, cg, h, wd])
        moved = _transpose(split, [2, 1, 0, 3, 4])
        batch = op_call("reshape", moved, newshape=[cg, groups * n, h, wd])
    weight = _transpose(out_grad, [1, 0, 2, 3])  # (o, n, oh, ow)
    # pad the bottom and right only as far as the kernel's last row and column need
    pb = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h - pt)
    pr = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - wd - pl)
    res: Expr = op_call(
        "nn.conv2d",
        batch,
        weight,
        strides=[dh, dw],
        padding=[pt, pl, pb, pr],
        dilation=[sh, sw],
        groups=groups,
        out_dtype=out_dtype,
    )
    full_h = (h + pt + pb - (oh - 1) * sh - 1) // dh + 1
    full_w = (wd + pl + pr - (ow - 1) * sw - 1) // dw + 1
    res = _transpose(res, [1, 0, 2, 3])
    if (full_h, full_w) != (kh, kw):
        res = op_call("strided_slice", res, begin=[0, 0], end=[kh, kw], axes=[2, 3])
    return res


_ConvGeometry = tuple[
    tuple[int, int], tuple[int, int], tuple[int, int, int, int], int, str, str, str
]


def _conv_geometry(op: str, call: Call) -> _ConvGeometry:
    """A convolution's strides, dilation, padding, groups and data, kernel and out layouts."""
    attrs = call.attrs
    data_layout = _str_attr(attrs, "data_layout")
    return (
        _pair(op, "strides", attrs["strides"]),
        _pair(op, "dilation", attrs["dilation"]),
        _padding4(op, attrs["padding"]),
        _int_attr(attrs, "groups"),
        data_layout,
        _str_attr(attrs, "kernel_layout"),
        _str_attr(attrs, "out_layout") or data_layout,
    )


def _conv_data_adjoint(
    adjoint_op: str, call: Call, out_grad: Expr, geometry: _ConvGeometry, **extra: object
) -> Call:
    """The data adjoint of the convolution ``call`` (of ``geometry``): ``adjoint_op``, the other
    of conv2d and conv2d_transpose (its adjoint with the same weight array), applied to
    ``out_grad`` with the same strides, padding, dilation and groups, the kernel layout read
    with O and I swapped and the data and out layouts exchanged; ``extra`` are further
    attributes (conv2d_transpose's ``output_padding``)."""
    strides, dilation, pads, groups, layout, kernel_layout, out_layout = geometry
    x, w = call.args
    return op_call(
        adjoint_op,
        out_grad,
        w,
        strides=list(strides),
        padding=list(pads),
        dilation=list(dilation),
        groups=groups,
        data_layout=out_layout,
        kernel_layout=_swap_oi(kernel_layout),
        out_layout=layout,
        out_dtype=_odt(call, x),
        **extra,
    )


@_product_gradient_rule("nn.conv2d")
def _conv2d_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    op = "nn.conv2d"
    x, w = call.args
    geometry = _conv_geometry(op, call)
    (sh, sw), (dh, dw), pads, groups, layout, kernel_layout, out_layout = geometry
    pt, pl, pb, pr = pads
    n, c, h, wd = _known_axes(x, layout, "NCHW", op)
    o, _, kh, kw = _known_axes(w, kernel_layout, "OIHW", op)
    # the rows and columns past the last window get no adjoint: the output padding restores them
    rest_h = h + pt + pb - (kh - 1) * dh - 1
    rest_w = wd + pl + pr - (kw - 1) * dw - 1
    dx = dweight = None
    if carries_gradient(x):
        padding = [rest_h % sh, rest_w % sw]
        dx = _conv_data_adjoint(
            "nn.conv2d_transpose", call, out_grad, geometry, output_padding=padding
        )
    if carries_gradient(w):
        grad = _conv_weight_grad(
            _layout_to_nchw(x, layout),
            _layout_to_nchw(out_grad, out_layout),
            (n, c, h, wd),
            (n, o, rest_h // sh + 1, rest_w // sw + 1),
            (kh, kw),
            (sh, sw),
            (dh, dw),
            pads,
            groups,
            _odt(call, w),
        )
        dweight = _permute(grad, "OIHW", kernel_layout)
    return [dx, dweight]


@_product_gradient_rule("nn.conv2d_transpose")
def _conv2d_transpose_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # conv2d_transpose is the adjoint of conv2d with the same weight, so its data adjoint is
    # that conv2d, and its weight adjoint is conv2d's with the roles of data and result swapped
    op = "nn.conv2d_transpose"
    x, w = call.args
    geometry = _conv_geometry(op, call)
    strides, dilation, pads, groups, layout, kernel_layout, out_layout = geometry
    dx = dweight = None
    if carries_gradient(x):
        dx = _conv_data_adjoint("nn.conv2d", call, out_grad, geometry)
    if carries_gradient(w):
        n, c, h, wd = _known_axes(x, layout, "NCHW", op)
        _, og, kh, kw = _known_axes(w, kernel_layout, "IOHW", op)
        oph, opw = _pair(op, "output_padding", call.attrs["output_padding"], minimum=0)
        pt, pl, pb, pr = pads
        oh = (h - 1) * strides[0] + (kh - 1) * dilation[0] + 1 - pt - pb + oph
        ow = (wd - 1) * strides[1] + (kw - 1) * dilation[1] + 1 - pl - pr + opw
        grad = _conv_weight_grad(
            _layout_to_nchw(out_grad, out_layout),
            _layout_to_nchw(x, layout),
            (n, og * groups, oh, ow),
            (n, c, h, wd),
            (kh, kw),
            strides,
            dilation,
            pads,
            groups,
            _odt(call, w),
        )
        dweight = _permute(grad, "IOHW", kernel_layout)
    return [dx, dweight]


def _pooling_grad(adjoint_op: str) -> Callable[[Call, Expr], list[Expr | None]]:
    """The gradient rule of a pooling whose adjoint is the operator ``adjoint_op`` (called with
    the pooling's attributes)."""

    def rule(call: Call, out_grad: Expr) -> list[Expr | None]:
        (x,) = call.args
        if not carries_gradient(x):
            return [None]
        return [op_call(adjoint_op, out_grad, x, **dict(call.attrs.items()))]

    return rule


gradient_rule("nn.max_pool2d")(_pooling_grad("nn.max_pool2d_grad"))
gradient_rule("nn.avg_pool2d")(_pooling_grad("nn.avg_pool2d_grad"))


@gradient_rule("nn.avg_pool2d_grad")
def _avg_pool2d_grad_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # linear in out_grad, as the transpose of avg_pool2d; data only gives the shape
    return [op_call("nn.avg_pool2d", out_grad, **dict(call.attrs.items())), None]


@gradient_rule("nn.max_pool2d_grad")
def _max_pool2d_grad_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # linear in out_grad: its adjoint reads out_grad's adjoint at each window's first maximum
    # (as max_pool2d_grad writes it there), one tap of the windows at a time; piecewise
    # constant in data
    op = "nn.max_pool2d_grad"
    x = call.args[1]
    attrs = call.attrs
    h, wd = _known_axes(x, _str_attr(attrs, "layout"), "HW", op)
    widths, taps = _pool_taps(op, attrs, h, wd)
    lowest = op_call("nn.pad", x, const(np.asarray(-np.inf)), pad_width=widths)
    adjoint = op_call("nn.pad", out_grad, const(np.asarray(0.0)), pad_width=widths)
    peak = op_call("nn.max_pool2d", x, **dict(attrs.items()))
    zero = _zeros(peak)
    taken: Expr | None = None
    total: Expr | None = None
    for i, window in enumerate(taps):
        hit: Expr = op_call("equal", op_call("strided_slice", lowest, **window), peak)
        if taken is None:
            taken = hit
        else:
            hit = op_call("logical_and", hit, op_call("logical_not", taken))
            if i < len(taps) - 1:
                taken = op_call("logical_or", taken, hit)
        tap = op_call("strided_slice", adjoint, **window)
        term = op_call("where", hit, tap, zero)
        total = term if total is None else _add(total, term)
    assert total is not None
    return [total, _zeros(x)]


@gradient_rule("nn.global_avg_pool2d")
def _global_avg_pool2d_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    (x,) = call.args
    if not carries_gradient(x):
        return [None]
    layout = _str_attr(call.attrs, "layout")
    h, wd = _axes(_arg_type(x).shape, layout, "HW")
    if isinstance(h, int) and isinstance(wd, int):
        count: Expr = _scalar(float(h * wd), x)
    else:
        axes = [layout.index("H"), layout.index("W")]
        count = op_call("sum", op_call("ones_like", x), axis=axes, keepdims=True)
    return [_div(op_call("broadcast_to_like", out_grad, x), count)]


def _averaging_matrix(out: int, size: int) -> Array:
    """``(out, size)``: row ``i`` averages adaptive pooling's window ``i`` of ``size`` rows."""
    m = np.zeros((out, size))
    for i in range(out):
        lo, hi = i * size // out, -(-(i + 1) * size // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


@gradient_rule("nn.adaptive_avg_pool2d")
def _adaptive_avg_pool2d_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # out = R_h @ x @ R_w.T per image (R the averaging matrices): dx = R_h.T @ g @ R_w
    op = "nn.adaptive_avg_pool2d"
    (x,) = call.args
    if not carries_gradient(x):
        return [None]
    layout = _str_attr(call.attrs, "layout")
    h, wd = _known_axes(x, layout, "HW", op)
    oh, ow = _adaptive_output_size(op, call.attrs["output_size"], h, wd)
    if (oh, ow) == (h, wd):
        return [out_grad]
    rows = op_call("cast_like", const(_averaging_matrix(oh, h)), x)
    cols = op_call("cast_like", const(_averaging_matrix(ow, wd)), x)
    spread_w = op_call("nn.matmul", _layout_to_nchw(out_grad, layout), cols)  # (n, c, oh, w)
    spread = op_call("nn.matmul", spread_w, rows, transpose_a=True)  # (n, c, w, h)
    return [_layout_from_nchw(_swap_last(spread, 4), layout)]


def _fold_padding(g: Expr, ax: int, rank: int, n: int, before: int, after: int, mode: str) -> Expr:
    """The adjoint of ``edge`` or ``reflect`` padding of one axis of extent ``n``: the middle
    of ``g`` plus each padding's adjoint added where the padding copied from."""

    def piece(lo: int, hi: int) -> Expr:
        return op_call("strided_slice", g, begin=[lo], end=[hi], axes=[ax])

    def place(e: Expr, lo: int, hi: int) -> Expr:
        widths = [[0, 0] for _ in range(rank)]
        widths[ax] = [lo, hi]
        return op_call("nn.pad", e, const(np.asarray(0.0)), pad_width=widths)

    out: Expr = piece(before, before + n)
    for lo, hi, start in ((0, before, True), (before + n, before + n + after, False)):
        if lo == hi:
            continue
        part = piece(lo, hi)
        if mode == "edge":  # every element copies the first (last) one
            summed = op_call("sum", part, axis=[ax], keepdims=True)
            out = _add(out, place(summed, 0, n - 1) if start else place(summed, n - 1, 0))
        else:  # reflect: the padding mirrors elements 1 .. before (n - 1 - after .. n - 2)
            mirrored = op_call("reverse", part, axis=ax)
            width = hi - lo
            spots = (1, n - 1 - width) if start else (n - 1 - width, 1)
            out = _add(out, place(mirrored, *spots))
    return out


@gradient_rule("nn.pad")
def _pad_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    x, value = call.args
    if not carries_gradient(x):
        return [None, None]
    widths = _pad_widths(call.attrs["pad_width"])
    mode = _str_attr(call.attrs, "pad_mode")
    if mode == "constant":
        zero, one = const(np.asarray(0.0)), const(np.asarray(1.0))
        dx = op_call("nn.pad", out_grad, zero, pad_width=[[-b, -a] for b, a in widths])
        if not carries_gradient(value):
            return [dx, None]
        padding = op_call("nn.pad", _zeros(x), one, pad_width=[list(p) for p in widths])
        total = op_call("sum", _mul(out_grad, padding))
        return [dx, op_call("cast_like", total, value)]
    shape = _arg_type(x).shape
    g: Expr = out_grad
    for ax, (before, after) in enumerate(widths):
        if before or after:
            n = known_extent(shape[ax], "nn.pad")
            g = _fold_padding(g, ax, len(shape), n, before, after, mode)
    return [g, None]  # the value is not used


@gradient_rule("nn.batch_flatten")
def _batch_flatten_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    return [op_call("reshape_like", out_grad, call.args[0])]


def _batch_norm_training_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # out = xhat * gamma + beta with the batch statistics: dx = gamma * inv / n *
    # (n g - sum(g) - xhat * sum(g * xhat)); the updated statistics (1 - m) * moving + m * batch
    # add m g_mean / n (d mean / dx = 1 / n) and 2 m g_var (x - mean) / (n - 1) (the unbiased
    # variance's d / dx; the mean's share cancels as sum(x - mean) = 0)
    x, gamma, _, _, _ = call.args
    g, g_mean, g_var = tuple_fields(out_grad, 3)
    rank, ax = _channel_axis(call, x)
    center, scale = _center_scale(call)
    m = _momentum(call)

    def along(p: Expr) -> Expr:
        return _along(p, ax, rank)

    centered, inv, xhat = _batch_stats(call, x, ax)
    g_sum = _per_channel(g, ax, rank)
    g_xhat = _per_channel(_mul(g, xhat), ax, rank)
    per_value = _batch_ratio(x, ax, rank, 1.0, 0)
    spread = _sub(g, along(_mul(g_sum, per_value)))
    slope = _mul(inv, along(gamma)) if scale else inv
    dx: Expr = _mul(slope, _sub(spread, _mul(xhat, along(_mul(g_xhat, per_value)))))
    if m:
        dx = _add(dx, along(_mul(g_mean, _batch_ratio(x, ax, rank, m, 0))))
        dx = _add(dx, _mul(centered, along(_mul(g_var, _batch_ratio(x, ax, rank, 2 * m, 1)))))
    keep = _scalar(1.0 - m, x)
    return [
        dx,
        g_xhat if scale else None,
        g_sum if center else None,
        _mul(g_mean, keep),
        _mul(g_var, keep),
    ]


@gradient_rule("nn.batch_norm")
def _batch_norm_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # inference: out = (x - mean) * inv * gamma + beta with inv = (var + eps)^-1/2, per channel
    if _is_training(call):
        return _batch_norm_training_grad(call, out_grad)
    x, gamma, _, mean, var = call.args
    g, g_mean, g_var = tuple_fields(out_grad, 3)
    rank, ax = _channel_axis(call, x)
    center, scale = _center_scale(call)
    shifted, inv, _, xhat = _inference_stats(call, x, mean, var, ax, rank)
    slope = _mul(gamma, inv) if scale else inv  # d out / d x, per channel
    g_sum = _per_channel(g, ax, rank)
    g_xhat = _per_channel(_mul(g, xhat), ax, rank)
    # d out / d var = -(x - mean) * gamma / 2 (var + eps)^3/2 = -xhat * gamma / 2 (var + eps)
    var_slope = _div(_mul(_scalar(-0.5, var), _mul(gamma, g_xhat) if scale else g_xhat), shifted)
    return [
        _mul(g, _along(slope, ax, rank)),
        g_xhat if scale else None,
        g_sum if center else None,
        _sub(g_mean, _mul(g_sum, slope)),
        _add(g_var, var_slope),
    ]


@gradient_rule("nn.layer_norm")
def _layer_norm_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # xhat = (x - mu) * inv along the axis; dx = inv * (dy - mean(dy) - xhat * mean(dy * xhat))
    # with dy = g * gamma, the adjoint of xhat
    x, gamma, _ = call.args
    rank, ax = _channel_axis(call, x)
    center, scale = _center_scale(call)
    inv, xhat = _layer_norm_stats(call, x, ax)
    dy = _mul(out_grad, _along(gamma, ax, rank)) if scale else out_grad
    spread = _mul(xhat, _mean_along(_mul(dy, xhat), ax))
    dx = _mul(inv, _sub(_sub(dy, _mean_along(dy, ax)), spread))
    return [
        dx,
        _per_channel(_mul(out_grad, xhat), ax, rank) if scale else None,
        _per_channel(out_grad, ax, rank) if center else None,
    ]


@gradient_rule("nn.dropout")
def _dropout_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    (x,) = call.args
    if not carries_gradient(x):
        return [None]
    g, _ = tuple_fields(out_grad, 2)
    return [_mul(g, TupleGetItem(call, 1))]  # the mask is an output, not a function of x


def _batch_size(p: Expr) -> Expr:
    """The extent of ``p``'s first axis as a rank-0 tensor of its dtype."""
    batch = _arg_type(p).shape[0]
    if isinstance(batch, int):
        return _scalar(float(batch), p)
    index = const(np.asarray(0, dtype=np.int32))
    extent = op_call("take", op_call("shape_of", p), index, axis=0)
    return op_call("cast_like", extent, p)


def _loss_scale(p: Expr, out_grad: Expr) -> Call:
    """``-g / b`` (``b`` the batch of the predictions ``p``): both losses are ``-sum(..) / b``."""
    return op_call("negative", _div(out_grad, _batch_size(p)))


@gradient_rule("nn.cross_entropy")
def _cross_entropy_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # -sum(log(p) * t) / b: dp = -g t / (p b), dt = -g log(p) / b
    p, t = call.args
    scale = _loss_scale(p, out_grad)
    return [_div(_mul(scale, t), p), _mul(scale, op_call("log", p))]


@gradient_rule("nn.cross_entropy_with_logits")
def _cross_entropy_with_logits_grad(call: Call, out_grad: Expr) -> list[Expr | None]:
    # -sum(p * t) / b: dp = -g t / b, dt = -g p / b
    p, t = call.args
    scale = _loss_scale(p, out_grad)
    return [_mul(scale, t), _mul(scale, p)]


# -- JVP rules ------------------------------------------------------------------------------------
#
# The forward-mode counterparts of the gradient rules (the contract is in relay/op/registry.py),
# with the same conventions at kinks and ties. Calls are built through the registry
# (``op_call``). Products (dense, matmul, batch_matmul, the convolutions, the losses) are
# bilinear: the operator applied to (tangent, other) plus (one, tangent's other), with the same
# attributes. The average poolings, pad, batch_flatten and the pooling gradients (in out_grad)
# are linear, so they apply themselves to the tangent. max_pool2d takes the tangent at each
# window's first maximum, as its gradient sends the adjoint there: a running comparison over
# the window taps (strided slices of the data padded with -inf and of the tangent padded with
# zeros), an exact composition. The normalizations differentiate their formulas:
# layer_norm's d xhat = inv * (dc - xhat * mean(xhat * dc)) with dc = dx - mean(dx), and
# batch_norm's (inference form) d xhat = (dx - d mean) * inv - xhat * d var / 2 (var + eps);
# its 2nd and 3rd results are its moving statistics, whose tangents pass through. The training
# form's d xhat is layer_norm's over the batch axes, and its updated statistics move by
# (1 - momentum) times their tangents plus momentum times those of the batch statistics.

JvpTangents = list[Expr | None]


def _bilinear_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    a, b = call.args
    ta, tb = tangents
    return jvp_sum(
        None if ta is None else Call(call.op, (ta, b), call.attrs),
        None if tb is None else Call(call.op, (a, tb), call.attrs),
    )


jvp_rule(
    "nn.dense",
    "nn.matmul",
    "nn.batch_matmul",
    "nn.conv2d",
    "nn.conv2d_transpose",
    "nn.cross_entropy_with_logits",
)(_bilinear_jvp)


jvp_rule(
    "nn.avg_pool2d",
    "nn.global_avg_pool2d",
    "nn.adaptive_avg_pool2d",
    "nn.batch_flatten",
)(linear_jvp)

# linear in out_grad; in data piecewise constant (max) or unused (avg)
jvp_rule("nn.max_pool2d_grad", "nn.avg_pool2d_grad")(linear_in_first_jvp)


@jvp_rule("nn.pad")
def _pad_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    # linear in the data and the pad value together
    x, value = call.args
    tx, tv = tangents
    if tx is None and tv is None:
        return None
    tx = _zeros(x) if tx is None else tx
    tv = _zeros(value) if tv is None else tv
    return Call(call.op, (tx, tv), call.attrs)


@jvp_rule("nn.bias_add")
def _bias_add_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    x, _ = call.args
    tx, tb = tangents
    if tb is None:
        return tx
    return Call(call.op, (_zeros(x) if tx is None else tx, tb), call.attrs)


@jvp_rule("nn.relu")
def _relu_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    (t,) = tangents
    if t is None:
        return None
    return _times_slope(_positive(call.args[0]), t, None)


@jvp_rule("nn.leaky_relu")
def _leaky_relu_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    (t,) = tangents
    if t is None:
        return None
    x = call.args[0]
    return _times_slope(_positive(x), t, _leaky_relu_alpha(call, x))


@jvp_rule("nn.prelu")
def _prelu_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    x, alpha = call.args
    tx, ta = tangents
    rank, ax = _channel_axis(call, x)
    positive = _positive(x)
    dx = None
    if tx is not None:
        dx = _times_slope(positive, tx, _along(alpha, ax, rank))
    da = None
    if ta is not None:
        slope = _mul(x, _along(ta, ax, rank))
        da = op_call("where", positive, _zeros(x), slope)
    return jvp_sum(dx, da)


@jvp_rule("nn.gelu")
def _gelu_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    (t,) = tangents
    return None if t is None else _mul(t, _gelu_slope(call.args[0]))


@jvp_rule("nn.softmax")
def _softmax_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    # s * (t - sum(s * t))
    (t,) = tangents
    if t is None:
        return None
    return _mul(call, _sub(t, _axis_sum(call, _mul(call, t))))


@jvp_rule("nn.log_softmax")
def _log_softmax_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    # t - sum(softmax * t), softmax = exp(log_softmax)
    (t,) = tangents
    if t is None:
        return None
    softmax = op_call("exp", call)
    return _sub(t, _axis_sum(call, _mul(softmax, t)))


@jvp_rule("nn.max_pool2d")
def _max_pool2d_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    (t,) = tangents
    if t is None:
        return None
    op = "nn.max_pool2d"
    x = call.args[0]
    attrs = call.attrs
    shape = _arg_type(x).shape
    h, wd = _axes(shape, _str_attr(attrs, "layout"), "HW")
    if not isinstance(h, int) or not isinstance(wd, int):
        raise CompileError(f"the JVP of {op} needs a known height and width, got {shape}")
    widths, taps = _pool_taps(op, attrs, h, wd)
    data: Expr = x
    tangent: Expr = t
    if any(w != [0, 0] for w in widths):
        data = op_call("nn.pad", x, const(np.asarray(-np.inf)), pad_width=widths)
        tangent = op_call("nn.pad", t, const(np.asarray(0.0)), pad_width=widths)
    # a running maximum over the taps; a later tap wins only when strictly greater, so ties
    # keep the first maximum's tangent (the gradient's convention)
    best: Expr | None = None
    out: Expr | None = None
    for i, window in enumerate(taps):
        value = op_call("strided_slice", data, **window)
        tap = op_call("strided_slice", tangent, **window)
        if best is None or out is None:
            best, out = value, tap
            continue
        wins = op_call("greater", value, best)
        out = op_call("where", wins, tap, out)
        if i < len(taps) - 1:
            best = op_call("maximum", best, value)
    return out


def _normalized_jvp(
    tx: Expr, xhat: Expr, inv: Expr, ax: int, exclude: bool, gamma: Expr | None
) -> Expr:
    """The tangent of ``xhat * gamma`` (``gamma`` None: of ``xhat``) for a tangent ``tx`` of the
    data, where ``xhat = (x - mean(x)) * inv`` and ``inv = (mean((x - mean(x))^2) + eps)^-1/2``
    with the means along ``ax`` (``exclude``: along every other axis, the batch statistics of
    batch_norm's training form): ``d xhat = inv * (dc - xhat * mean(xhat * dc))`` with
    ``dc = tx - mean(tx)``."""

    def mean(e: Expr) -> Call:
        return _mean_along(e, ax, exclude)

    dc = _sub(tx, mean(tx))
    spread = _mul(xhat, mean(_mul(xhat, dc)))
    d_xhat = _mul(inv, _sub(dc, spread))
    return d_xhat if gamma is None else _mul(d_xhat, gamma)


@jvp_rule("nn.layer_norm")
def _layer_norm_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    x, gamma, _ = call.args
    tx, tg, tb = tangents
    rank, ax = _channel_axis(call, x)
    center, scale = _center_scale(call)
    inv, xhat = _layer_norm_stats(call, x, ax)
    d_out: Expr | None = None
    if tx is not None:
        gamma_along = _along(gamma, ax, rank) if scale else None
        d_out = _normalized_jvp(tx, xhat, inv, ax, False, gamma_along)
    if scale and tg is not None:
        d_out = jvp_sum(d_out, _mul(xhat, _along(tg, ax, rank)))
    if center and tb is not None:
        shift = _along(tb, ax, rank)
        d_out = op_call("broadcast_to_like", shift, x) if d_out is None else jvp_sum(d_out, shift)
    return d_out


def _batch_norm_training_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    # out = xhat * gamma + beta with the batch statistics: d xhat = inv * (dc - xhat *
    # mean(xhat * dc)), dc = dx - mean(dx) (layer_norm's, over every axis but the channel's);
    # the updated statistics move by (1 - m) * their tangent + m * d mean, m * d unbiased var
    # with d mean = sum(dx) / n and d unbiased var = 2 sum((x - mean) * dx) / (n - 1)
    x, gamma, _, moving_mean, moving_var = call.args
    tx, tg, tb, t_mean, t_var = tangents
    center, scale = _center_scale(call)
    tg, tb = tg if scale else None, tb if center else None  # unused parameters
    if all(t is None for t in (tx, tg, tb, t_mean, t_var)):
        return None
    rank, ax = _channel_axis(call, x)
    m = _momentum(call)

    def along(p: Expr) -> Expr:
        return _along(p, ax, rank)

    centered, inv, xhat = _batch_stats(call, x, ax)
    d_out: Expr | None = None
    d_mu: Expr | None = None
    d_var: Expr | None = None
    if tx is not None:
        d_out = _normalized_jvp(tx, xhat, inv, ax, True, along(gamma) if scale else None)
        if m:
            d_mu = _mul(_per_channel(tx, ax, rank), _batch_ratio(x, ax, rank, m, 0))
            d_var = _mul(
                _per_channel(_mul(centered, tx), ax, rank), _batch_ratio(x, ax, rank, 2 * m, 1)
            )
    if tg is not None:
        d_out = jvp_sum(d_out, _mul(xhat, along(tg)))
    if tb is not None:
        d_out = jvp_sum(d_out, along(tb))
    if d_out is None:
        d_out = _zeros(x)
    elif tx is None and tg is None:
        d_out = op_call("broadcast_to_like", d_out, x)  # the shift's per-channel term only
    keep = _scalar(1.0 - m, x)

    def moved(t: Expr | None, batch: Expr | None, like: Expr) -> Expr:
        total = jvp_sum(None if t is None or m == 1 else _mul(t, keep), batch)
        return _zeros(like) if total is None else total

    return Tuple((d_out, moved(t_mean, d_mu, moving_mean), moved(t_var, d_var, moving_var)))


@jvp_rule("nn.batch_norm")
def _batch_norm_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    # inference: out = xhat * gamma + beta with xhat = (x - mean) * inv, inv = (var + eps)^-1/2
    # per channel: d xhat = (dx - d mean) * inv - xhat * d var / 2 (var + eps)
    if _is_training(call):
        return _batch_norm_training_jvp(call, tangents)
    x, gamma, _, mean, var = call.args
    tx, tg, tb, t_mean, t_var = tangents
    rank, ax = _channel_axis(call, x)
    center, scale = _center_scale(call)

    def along(p: Expr) -> Expr:
        return _along(p, ax, rank)

    shifted, _, inv, xhat = _inference_stats(call, x, mean, var, ax, rank)
    d_mean = None if t_mean is None else op_call("negative", along(t_mean))
    d_centered = jvp_sum(tx, d_mean)
    d_inv = None
    if t_var is not None:
        d_inv = along(_mul(_scalar(-0.5, var), _div(t_var, shifted)))
    d_xhat = jvp_sum(
        None if d_centered is None else _mul(d_centered, inv),
        None if d_inv is None else _mul(xhat, d_inv),
    )
    if scale and d_xhat is not None:
        d_xhat = _mul(d_xhat, along(gamma))
    d_gamma = None if not scale or tg is None else _mul(xhat, along(tg))
    d_beta = None if not center or tb is None else along(tb)
    d_out = jvp_sum(d_xhat, d_gamma, d_beta)
    if d_out is None:  # no tangent reaches the result (and the statistics have none)
        return None
    if tx is None and d_inv is None and d_gamma is None:
        d_out = op_call("broadcast_to_like", d_out, x)  # per-channel terms only
    return Tuple(
        (
            d_out,
            _zeros(mean) if t_mean is None else t_mean,
            _zeros(var) if t_var is None else t_var,
        )
    )


@jvp_rule("nn.dropout")
def _dropout_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    # the inference identity: the tangent times the (all ones) mask; the mask's tangent is 0
    (t,) = tangents
    if t is None:
        return None
    mask = TupleGetItem(call, 1)
    return Tuple((_mul(t, mask), _zeros(mask)))


@jvp_rule("nn.cross_entropy")
def _cross_entropy_jvp(call: Call, tangents: JvpTangents) -> Expr | None:
    # -sum(log(p) * t) / b: linear in t; in p, d log(p) = dp / p, which
    # cross_entropy_with_logits (-sum(p * t) / b) applies to
    p, target = call.args
    tp, tt = tangents
    return jvp_sum(
        None if tp is None else op_call("nn.cross_entropy_with_logits", _div(tp, p), target),
        None if tt is None else Call(call.op, (p, tt), call.attrs),
    )
