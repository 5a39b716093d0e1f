"""VTA's tensor layouts and the integer reference of its operators.

VTA moves whole buffer elements: an input element is 16 int8 channels of one pixel (batch
1), a weight element a 16x16 int8 block ``[out][in]``, an accumulator element 16 int32
channels. Tensors are therefore packed at the boundary (as TVM's VTA flow did with its
``NCHW1n16c`` / ``OIHW16o16i`` layouts; Moreau et al., *A Hardware-Software Blueprint for
Flexible Deep Learning Specialization*, IEEE Micro 2019):

* activations ``(N, C, H, W)`` -> ``(N, C/16, H, W, 16)`` (``NCHW1n16c`` with the batch
  block of 1 dropped); matrices ``(N, C)`` -> ``(N, C/16, 16)``;
* weights ``(O, I, KH, KW)`` -> ``(O/16, I/16, KH, KW, 16, 16)`` (``OIHW16o16i``);
  ``(O, I)`` -> ``(O/16, I/16, 16, 16)``;
* a bias ``(O,)`` -> ``(O/16, 16)``.

Channels that are not a multiple of 16 are padded with zeros (zero weights add nothing).

The references compute what the generated programs compute, in int64 numpy with every wrap
made explicit: the products summed into int32 (the accumulator wraps; a sum wrapped once at
the end equals one wrapped at every step, modulo 2**32), the bias added with wrap, the
requantization ``(acc + 2**(shift-1)) >> shift`` (arithmetic, each addition wrapped), the
clip to ``[lo, hi]`` and the final wrap to int8 (VTA's STORE keeps the low 8 bits; the clip
makes that exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from relay.errors import VTAError

BLOCK = 16
"""Channels per VTA element (``BLOCK_IN = BLOCK_OUT``) in the default configuration."""

Array = npt.NDArray[Any]


def blocks(channels: int) -> int:
    """How many 16-channel blocks hold ``channels``."""
    return -(-channels // BLOCK)


def _pad_axis(x: Array, axis: int, to: int) -> Array:
    if x.shape[axis] == to:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, to - x.shape[axis])
    return np.pad(x, widths)


def pack_matrix(x: Array) -> Array:
    """``(N, C)`` -> ``(N, C/16, 16)``, channels zero-padded to a multiple of 16."""
    n, c = x.shape
    return np.ascontiguousarray(_pad_axis(x, 1, blocks(c) * BLOCK).reshape(n, blocks(c), BLOCK))


def pack_dense_weight(w: Array) -> Array:
    """``(O, I)`` -> ``(O/16, I/16, 16, 16)``: block ``[o, i]`` holds ``w[16o + a, 16i + b]``
    at ``[a, b]``."""
    o, i = w.shape
    w = _pad_axis(_pad_axis(w, 0, blocks(o) * BLOCK), 1, blocks(i) * BLOCK)
    return np.ascontiguousarray(w.reshape(blocks(o), BLOCK, blocks(i), BLOCK).transpose(0, 2, 1, 3))


def pack_nchw(x: Array) -> Array:
    """``(N, C, H, W)`` -> ``(N, C/16, H, W, 16)``."""
    n, c, h, w = x.shape
    x = _pad_axis(x, 1, blocks(c) * BLOCK)
    return np.ascontiguousarray(x.reshape(n, blocks(c), BLOCK, h, w).transpose(0, 1, 3, 4, 2))


def unpack_nchw(y: Array, channels: int) -> Array:
    """``(N, C/16, H, W, 16)`` -> ``(N, C, H, W)``, the padding channels dropped."""
    n, cb, h, w, _ = y.shape
    return np.ascontiguousarray(
        y.transpose(0, 1, 4, 2, 3).reshape(n, cb * BLOCK, h, w)[:, :channels]
    )


def unpack_matrix(y: Array, channels: int) -> Array:
    """``(N, C/16, 16)`` -> ``(N, C)``."""
    n, cb, _ = y.shape
    return np.ascontiguousarray(y.reshape(n, cb * BLOCK)[:, :channels])


def pack_oihw(w: Array) -> Array:
    """``(O, I, KH, KW)`` -> ``(O/16, I/16, KH, KW, 16, 16)``."""
    o, i, kh, kw = w.shape
    w = _pad_axis(_pad_axis(w, 0, blocks(o) * BLOCK), 1, blocks(i) * BLOCK)
    return np.ascontiguousarray(
        w.reshape(blocks(o), BLOCK, blocks(i), BLOCK, kh, kw).transpose(0, 2, 4, 5, 1, 3)
    )


def pack_bias(b: Array) -> Array:
    """``(O,)`` int32 -> ``(O/16, 16)``."""
    return np.ascontiguousarray(_pad_axis(b.astype(np.int32), 0, blocks(len(b)) * BLOCK)).reshape(
        -1, BLOCK
    )


@dataclass(frozen=True)
class Requantize:
    """The epilogue VTA's ALU applies to the int32 accumulator before the int8 store: add
    the bias (when the operator has one), add ``2**(shift-1)`` and shift right by ``shift``
    (round half up; ``shift`` 0 does neither), then clip to ``[lo, hi]`` (``relu``: the
    lower bound is at least 0)."""

    shift: int = 0
    relu: bool = False
    lo: int = -128
    hi: int = 127

    def __post_init__(self) -> None:
        if not 0 <= self.shift <= 15:
            raise VTAError(f"a requantization shift must be in 0..15, not {self.shift}")
        if not -128 <= self.lo <= self.hi <= 127:
            raise VTAError(f"the clip bounds [{self.lo}, {self.hi}] are not within int8")

    @property
    def low(self) -> int:
        """The lower clip bound, with the ReLU."""
        return max(self.lo, 0) if self.relu else self.lo


def wrap(x: Array, bits: int) -> Array:
    """``x`` (integers) reduced to signed ``bits``-bit two's complement, as int64."""
    x = np.asarray(x, np.int64)
    half = np.int64(1) << (bits - 1)
    return ((x + half) & ((half << 1) - 1)) - half


def requantize_reference(acc: Array, bias: Array | None, rq: Requantize) -> Array:
    """``acc`` (int64, already wrapped to int32) through the epilogue, as int8. ``bias`` is
    broadcast against ``acc`` by the caller."""
    x = acc
    if bias is not None:
        x = wrap(x + bias, 32)
    if rq.shift:
        x = wrap(x + (1 << (rq.shift - 1)), 32) >> rq.shift
    x = np.clip(x, rq.low, rq.hi)
    return wrap(x, 8).astype(np.int8)


def dense_reference(x: Array, w: Array, bias: Array | None, rq: Requantize) -> Array:
    """int8 ``x (N, I)`` times int8 ``w (O, I)`` transposed, through the epilogue: ``(N, O)``
    int8."""
    acc = wrap(x.astype(np.int64) @ w.astype(np.int64).T, 32)
    return requantize_reference(acc, None if bias is None else bias.astype(np.int64), rq)


def conv2d_reference(
    x: Array,
    w: Array,
    bias: Array | None,
    rq: Requantize,
    strides: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
) -> Array:
    """int8 NCHW ``x`` convolved with int8 OIHW ``w`` (zero padding ``(ph, pw)`` on both
    sides), through the epilogue: NCHW int8."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    sh, sw = strides
    ph, pw = padding
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (wd + 2 * pw - kw) // sw + 1
    acc = np.zeros((n, o, oh, ow), np.int64)
    w64 = w.astype(np.int64)
    for ky in range(kh):
        for kx in range(kw):
            window = xp[:, :, ky : ky + sh * (oh - 1) + 1 : sh, kx : kx + sw * (ow - 1) + 1 : sw]
            acc += np.einsum("nchw,oc->nohw", window, w64[:, :, ky, kx])
    acc = wrap(acc, 32)
    b = None if bias is None else bias.astype(np.int64)[None, :, None, None]
    return requantize_reference(acc, b, rq)
