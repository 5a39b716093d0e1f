"""Partitioning for VTA: the quantized layers VTA can run become ``vta.conv2d`` / ``vta.dense``.

:func:`relay.passes.quantize.quantize` writes each int8 layer as standard operators::

    cast(clip(right_shift(add(add(nn.conv2d(x, w, out_dtype="int32"), b), 2**(k-1)), k),
              lo, hi), "int8")

(the bias ``add`` is absent without a bias, the rounding ``add`` and the ``right_shift`` when
``k`` is 0). :func:`partition_for_vta` matches that chain with the dataflow patterns of
:mod:`relay.passes.pattern` (TVM's BYOC flow did the same with ``MergeComposite`` and a
pattern table) and replaces it with one call of the VTA operator (:mod:`relay.op.vta`),
whose semantics are the chain's, bit for bit, when the layer is one VTA runs:

* the data is int8 with static shapes, the weight an int8 constant, the bias an int32
  constant varying along the output channels only;
* a convolution is NCHW/OIHW with one group and no dilation, a 1x1 or 3x3 kernel, input
  channels a multiple of 16 (VTA's block), and symmetric padding of at most 15 and below the
  kernel size (what LOAD's padding can make); a dense layer has input features a multiple
  of 16;
* the rounding constant is ``2**(k-1)`` for a shift ``k`` in 1..15, and the clip bounds are
  int8.

Output channels that are not a multiple of 16 are padded by the VTA kernels. Layers that do
not qualify stay as they are and run on the CPU through the normal llvm path, as do all
other operators: the program becomes heterogeneous, with the boundary at the int8 tensors
(packed to VTA's layouts by the VTA kernels themselves, see :mod:`.device`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relay.ir.expr import Call, Constant, Expr, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.passes.pattern import (
    DFPattern,
    DFPatternCallback,
    NodeMap,
    is_constant,
    is_op,
    rewrite_module,
    wildcard,
)
from relay.passes.quantize import channel_vector

KERNELS = ((1, 1), (3, 3))
"""The convolution kernels VTA runs."""


def _chain(product: DFPattern) -> tuple[DFPattern, DFPattern, DFPattern, DFPattern, DFPattern]:
    """The requantizing epilogue around ``product``: the pattern, and the sub-patterns of the
    bias, the rounding constant, the shift and the clip."""
    bias = is_constant()
    acc = product | is_op("add")(product, bias)
    rounding, shift = is_constant(), is_constant()
    shifted = acc | is_op("right_shift")(is_op("add")(acc, rounding), shift)
    clip = is_op("clip")(shifted)
    return is_op("cast")(clip).has_attr({"dtype": "int8"}), bias, rounding, shift, clip


def _static_int8(e: Expr) -> TensorType | None:
    t = e._checked_type
    if not isinstance(t, TensorType) or str(t.dtype) != "int8":
        return None
    if not all(isinstance(d, int) for d in t.shape):
        return None
    return t


def _int_constant(e: Expr, dtype: str) -> np.ndarray[Any, Any] | None:
    if not isinstance(e, Constant) or str(e.data.dtype) != dtype:
        return None
    return np.asarray(e.data)


def _scalar(e: Expr | None) -> int | None:
    value = None if e is None else _int_constant(e, "int32")
    if value is None or value.size != 1:
        return None
    return int(value.reshape(()))


class _Offload(DFPatternCallback):
    """Replaces a qualifying quantized layer with its VTA operator."""

    def __init__(self, op: str) -> None:
        super().__init__(require_type=True)
        self.op = op
        self.data, self.weight = wildcard(), is_constant()
        self.product = is_op(op)(self.data, self.weight).has_attr({"out_dtype": "int32"})
        self.pattern, self.bias, self.rounding, self.shift, self.clip = _chain(self.product)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
        product = node_map[self.product][0]
        data, weight = node_map[self.data][0], node_map[self.weight][0]
        assert isinstance(product, Call)
        x = _static_int8(data)
        w = _int_constant(weight, "int8")
        if x is None or w is None or not self._layer_ok(product, x, w):
            return None
        channels = w.shape[0]
        bias = np.zeros(channels, np.int32)
        if self.bias in node_map:
            b = _int_constant(node_map[self.bias][0], "int32")
            vec = None if b is None else channel_vector(b, channels, len(x.shape))
            if vec is None:
                return None
            bias = vec
        shift = 0
        if self.shift in node_map:
            shift = _scalar(node_map[self.shift][0]) or 0
            rounding = _scalar(node_map[self.rounding][0])
            if not 1 <= shift <= 15 or rounding != 1 << (shift - 1):
                return None
        clip = node_map[self.clip][0]
        assert isinstance(clip, Call)
        lo, hi = float(clip.attrs["a_min"]), float(clip.attrs["a_max"])  # type: ignore[arg-type]
        if not (-128 <= lo <= hi <= 127 and lo.is_integer() and hi.is_integer()):
            return None
        attrs: dict[str, object] = {"shift": shift, "lo": int(lo), "hi": int(hi)}
        if self.op == "nn.conv2d":
            attrs["strides"] = list(product.attrs["strides"])  # type: ignore[arg-type]
            pad = _padding(product)
            assert pad is not None  # (checked by _layer_ok)
            attrs["padding"] = list(pad)
        from relay.op.registry import get_op

        opdef = get_op("vta." + self.op.split(".")[1])
        return Call(opdef.op, (data, const(w), const(bias)), opdef.validate_attrs(attrs))

    def _layer_ok(self, product: Call, x: TensorType, w: np.ndarray[Any, Any]) -> bool:
        channels = x.shape[1]
        if not isinstance(channels, int) or channels % 16:
            return False
        if self.op == "nn.dense":
            return len(x.shape) == 2 and w.ndim == 2
        a = product.attrs
        if (
            a["groups"] != 1
            or tuple(a["dilation"]) != (1, 1)  # type: ignore[arg-type]
            or a["data_layout"] != "NCHW"
            or a["kernel_layout"] != "OIHW"
            or a["out_layout"] not in ("", "NCHW")
            or tuple(w.shape[2:]) not in KERNELS
        ):
            return False
        pad = _padding(product)
        if pad is None:
            return False
        return all(0 <= p <= 15 and p < k for p, k in zip(pad, w.shape[2:], strict=True))


def _padding(conv: Call) -> tuple[int, int] | None:
    """A convolution's padding as ``(rows, columns)`` on both sides, or None when it is not
    symmetric."""
    value = conv.attrs["padding"]
    assert isinstance(value, tuple)
    pad = [int(p) for p in value]  # type: ignore[arg-type]
    if len(pad) == 1:
        pad = pad * 4
    elif len(pad) == 2:
        pad = [pad[0], pad[1], pad[0], pad[1]]
    top, left, bottom, right = pad
    if top != bottom or left != right:
        return None
    return top, left


def partition_for_vta(mod: Module) -> Module:
    """``mod`` with every quantized layer VTA can run replaced by its VTA operator (see the
    module docstring); ``mod`` itself when there is none."""
    return rewrite_module([_Offload("nn.conv2d"), _Offload("nn.dense")], mod)
