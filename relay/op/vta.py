"""The operators VTA runs: an int8 convolution or dense layer with its requantizing epilogue.

``vta.conv2d(data, weight, bias)`` and ``vta.dense(data, weight, bias)`` compute, exactly as
the VTA accelerator does (see ``relay.backend.vta.kernels``)::

    acc = conv2d(data, weight) (or data @ weight.T)  -- int8 x int8 summed in int32, wrapping
    acc = acc + bias                                  -- int32, per output channel, wrapping
    acc = (acc + 2**(shift-1)) >> shift               -- when shift > 0 (round half up)
    out = int8(clip(acc, lo, hi))

They are what :func:`relay.backend.vta.partition.partition_for_vta` turns the quantized
layers of :func:`relay.passes.quantize.quantize` into: ``cast(clip(right_shift(add(add(
nn.conv2d(x, w, out_dtype="int32"), b), 2**(k-1)), k), lo, hi), "int8")``. Their references
(the interpreter's semantics) are the integer references of
:mod:`relay.backend.vta.layout`, which the generated VTA programs match bit for bit. They
are opaque to fusion and have no derivative (integers). The graph executor runs them on VTA
(``relay.build(..., target="vta")``); nothing lowers them to CPU kernels, since the layers
they replace already compile for the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.types import TensorType, Type
from relay.op.registry import OpPattern, attr, non_differentiable, register_op
from relay.typecheck.relation import RelationError, Reporter, forward, tensor_arg

_EPILOGUE = [
    attr("shift", "int", 0),
    attr("lo", "int", -128),
    attr("hi", "int", 127),
]
_CONV_ATTRS = [
    attr("strides", "ints", (1, 1)),
    attr("padding", "ints", (0, 0)),
    *_EPILOGUE,
]


def _static(t: TensorType, op: str, what: str, rank: int, dtype: str) -> tuple[int, ...]:
    if len(t.shape) != rank or not all(isinstance(d, int) for d in t.shape):
        raise RelationError(f"{op}: {what} must have {rank} static dimensions, got {t}")
    if str(t.dtype) != dtype:
        raise RelationError(f"{op}: {what} must be {dtype}, got {t}")
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


def _pair(value: object) -> tuple[int, int]:
    assert isinstance(value, tuple) and len(value) == 2
    a, b = value
    assert isinstance(a, int) and isinstance(b, int)
    return a, b


def _check_epilogue(op: str, attrs: Mapping[str, Any]) -> None:
    shift, lo, hi = attrs["shift"], attrs["lo"], attrs["hi"]
    if not 0 <= shift <= 15:
        raise RelationError(f"{op}: shift must be in 0..15, got {shift}")
    if not -128 <= lo <= hi <= 127:
        raise RelationError(f"{op}: the clip bounds [{lo}, {hi}] are not within int8")


def _bias(args: list[Type], op: str, channels: int) -> None:
    b = _static(tensor_arg(args[2], op, "bias"), op, "bias", 1, "int32")
    if b != (channels,):
        raise RelationError(f"{op}: bias must have shape ({channels},), got {b}")


def _conv2d_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """data (n, c, h, w) int8, weight (o, c, kh, kw) int8, bias (o,) int32 -> (n, o, oh, ow) int8."""
    op = "vta.conv2d"
    n, c, h, w = _static(tensor_arg(args[0], op, "data"), op, "data", 4, "int8")
    o, wc, kh, kw = _static(tensor_arg(args[1], op, "weight"), op, "weight", 4, "int8")
    if wc != c:
        raise RelationError(f"{op}: data has {c} channels but weight expects {wc}")
    _bias(args, op, o)
    _check_epilogue(op, attrs)
    (sh, sw), (ph, pw) = _pair(attrs["strides"]), _pair(attrs["padding"])
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    if min(sh, sw) < 1 or min(ph, pw) < 0 or oh < 1 or ow < 1:
        raise RelationError(
            f"{op}: strides {attrs['strides']} and padding {attrs['padding']} give no output "
            f"for a {kh}x{kw} kernel over {h}x{w}"
        )
    return TensorType((n, o, oh, ow), "int8")


def _dense_rule(args: list[Type], attrs: Attrs, r: Reporter) -> Type:
    """data (n, k) int8, weight (o, k) int8, bias (o,) int32 -> (n, o) int8."""
    op = "vta.dense"
    n, k = _static(tensor_arg(args[0], op, "data"), op, "data", 2, "int8")
    o, wk = _static(tensor_arg(args[1], op, "weight"), op, "weight", 2, "int8")
    if wk != k:
        raise RelationError(f"{op}: data has {k} features but weight expects {wk}")
    _bias(args, op, o)
    _check_epilogue(op, attrs)
    return TensorType((n, o), "int8")


def _requantize(attrs: Mapping[str, Any]) -> Any:
    from relay.backend.vta.layout import Requantize

    return Requantize(shift=attrs["shift"], lo=attrs["lo"], hi=attrs["hi"])


def _conv2d_ref(data: Any, weight: Any, bias: Any, **attrs: Any) -> np.ndarray[Any, Any]:
    from relay.backend.vta.layout import conv2d_reference

    strides, padding = tuple(attrs["strides"]), tuple(attrs["padding"])
    return conv2d_reference(data, weight, bias, _requantize(attrs), strides, padding)


def _dense_ref(data: Any, weight: Any, bias: Any, **attrs: Any) -> np.ndarray[Any, Any]:
    from relay.backend.vta.layout import dense_reference

    return dense_reference(data, weight, bias, _requantize(attrs))


register_op(
    "vta.conv2d",
    3,
    attrs=_CONV_ATTRS,
    reference=_conv2d_ref,
    pattern=OpPattern.OPAQUE,
    doc="int8 NCHW convolution (OIHW weights) with an int32 bias, shift and clip, as VTA computes it.",
    type_relation=forward(_conv2d_rule),
)
register_op(
    "vta.dense",
    3,
    attrs=_EPILOGUE,
    reference=_dense_ref,
    pattern=OpPattern.OPAQUE,
    doc="int8 dense layer with an int32 bias, shift and clip, as VTA computes it.",
    type_relation=forward(_dense_rule),
)
non_differentiable("vta.conv2d", "vta.dense", reason="it computes on integers")
