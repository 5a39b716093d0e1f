"""Lowering of the dense-layer operators of :mod:`relay.op.nn`: the matrix products, the
activations, softmax, the normalizations, dropout and the losses.

Each rule computes what the operator's numpy reference computes (same dtype rules, the same
formula in the same working dtype), following TVM's compute definitions where they agree:

* **Products** (``nn.dense``, ``nn.matmul``, ``nn.batch_matmul``) are one ``te.compute``
  reduction block over ``(batch..., i, j, k)`` that reads the left operand first and the right
  one second, ``C[.., i, j] = sum_k A[.., i, k] * B[.., j, k]`` (or ``B[.., k, j]``), exactly
  the block of ``topi.nn.matmul`` (``python/tvm/topi/nn/dense.py``), which the matmul
  schedule (:mod:`relay.backend.schedule.matmul`) tiles. ``nn.dense`` of data with more than
  two axes keeps the leading axes as batch axes of that block (no reshape around it); a 1-d
  left operand gives a ``(j, k)`` block (a matrix-vector product). Batch axes of extent 1 are
  read at index 0 (``nn.batch_matmul``'s broadcasting). The operands are cast to the
  accumulation dtype inside the block, as topi does with ``out_dtype``: the result dtype for
  integers (the reference accumulates in 64 bits and wraps to the result dtype, which is the
  same arithmetic modulo ``2**bits``), the float result dtype, or float32 for float16/bfloat16
  results, which are then rounded in a separate stage. Floats become integers through int64,
  as in the reference.
* ``nn.softmax`` / ``nn.log_softmax`` subtract the maximum along the axis first, then take
  ``exp(x - max) / sum(exp(x - max))`` or ``x - max - log(sum(exp(x - max)))`` (the stages of
  ``topi.nn.softmax`` / ``topi.nn.log_softmax``, ``python/tvm/topi/nn/softmax.py``). ``exp``
  is exact (libm) unless ``call.fast_math`` is set and the working dtype is float32, where it
  is the elementwise rule's ``fast_exp_f32`` (relative error below 1e-7; ``topi.fast_exp``,
  used before, is written without bindings, and its ``r`` was repeated eight times in the
  kernel's TIR). ``log_softmax`` takes the log of each row's sum once, in a stage of its own
  (a barrier: the schedules would inline it, a libm call per element).
* ``nn.gelu`` is the exact ``x * (1 + erf(x / sqrt 2)) / 2``, as the reference computes it: in
  float64 (libm's ``erf``), except with ``fast_math`` for float16/float32, where it runs in
  float32 with TVM's float32 ``erf`` (a rational approximation, absolute error below 5e-8:
  the result's absolute error is below 5e-7, its relative error below 1e-4 where
  ``|gelu(x)| > 1e-3`` and up to 7% in the far negative tail, where ``1 + erf`` cancels).
* ``nn.relu`` is ``select(x <= 0, 0, x)`` (NaN propagates and -0 becomes +0, as in
  ``np.maximum(x, 0)``; TIR's ``max`` would drop a NaN): a compare and a blend, where
  ``select(x < 0, 0, x)`` was one ``vmaxps`` but kept a -0 (mlp_infer_b128 as fast
  either way); ``nn.leaky_relu`` / ``nn.prelu`` are ``select(x > 0, x, x * alpha)``
  (a constant factor of 0, here and in ``nn.batch_norm``'s momentum, is spelled out with
  IEEE semantics, since TVM's simplifier folds ``x * 0`` to ``0``);
  ``nn.bias_add`` adds the bias along ``axis`` (bool: logical or, as numpy's ``add``).
* ``nn.layer_norm`` and ``nn.batch_norm`` take the mean and then the biased variance of the
  centered data in two passes (the reference's formula; ``topi.nn.layer_norm``'s one-pass
  sum of squares cancels catastrophically), in float32 for half-precision data. The
  inference form of ``nn.batch_norm`` is elementwise with the moving statistics and returns
  them unchanged; the training form reduces over every axis but ``axis`` and returns the
  updated moving statistics (momentum, unbiased variance), in the reference's order of
  operations.
* ``nn.dropout`` is the inference identity with an all-ones mask;
  ``nn.cross_entropy(_with_logits)`` sum ``log(p) * t`` (``p * t``) over both axes, then
  negate and divide by the batch.

A result with no elements is a constant compute that reads nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from relay.op.lowering.common import (
    bfloat16_to_float32,
    head_and_tail,
    in_head_and_tail,
    out as _out,
    static as _static,
    tensor_type as _tensor_type,
    to_bfloat16,
)
from relay.op.nn import _norm_axis
from relay.op.registry import LoweringCall, lowering_rule

_HALF = ("float16", "bfloat16")


# ---- shared helpers -----------------------------------------------------------------------------


def _attr_int(call: LoweringCall, name: str) -> int:
    value = call.attrs[name]
    assert isinstance(value, int)
    return value


def _attr_float(call: LoweringCall, name: str) -> float:
    value = call.attrs[name]
    assert isinstance(value, int | float)
    return float(value)


def _axis(call: LoweringCall, rank: int) -> int:
    return _norm_axis(call.name, _attr_int(call, "axis"), rank)


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _wide(dtype: str) -> str:
    """The dtype the reference does float math of ``dtype`` data in."""
    return "float32" if dtype in _HALF else dtype


def _const(value: float, dtype: str) -> Any:
    from tvm import tirx

    return tirx.const(value, dtype)


def _dtype(value: Any) -> str:
    """The dtype of the TIR expression ``value`` (expressions carry a ``PrimType``)."""
    return str(value.ty)


def _cast(value: Any, dtype: str) -> Any:
    """``value`` converted to the numeric ``dtype`` as numpy's ``astype`` (floats become
    integers through int64)."""
    from tvm import tirx

    src = _dtype(value)
    if src == dtype:
        return value
    if dtype == "bfloat16":
        return to_bfloat16(value)
    if _is_float(src) and not _is_float(dtype):
        value = tirx.Cast("int64", value)
        if dtype == "int64":
            return value
    return tirx.Cast(dtype, value)


def _times(value: Any, factor: float) -> Any:
    """``value * factor`` for a constant ``factor``, with IEEE semantics when it is zero
    (TVM's simplifier folds ``x * 0`` to ``0``; IEEE gives NaN for infinite or NaN ``x`` and
    a zero signed by both operands)."""
    from tvm import tirx

    dtype = _dtype(value)
    if factor != 0:
        return value * _const(factor, dtype)
    zero = tirx.copysign(_const(0.0, dtype), value)
    if math.copysign(1.0, factor) < 0:
        zero = -zero
    return tirx.Select(tirx.isfinite(value), zero, _const(math.nan, dtype))


def _filled(shape: tuple[int, ...], dtype: str, value: float = 0, name: str = "empty") -> Any:
    """A tensor of ``shape`` holding ``value`` everywhere (reads nothing)."""
    from tvm import te

    return te.compute(shape, lambda *i: _const(value, dtype), name=name)


def _is_empty(shape: Sequence[int]) -> bool:
    return math.prod(shape) == 0


def _along(p: Any, ax: int) -> Callable[[Sequence[Any]], Any]:
    """``idx -> p[idx[ax]]``: a 1-d per-channel tensor read at the channel of ``idx``."""
    return lambda idx: p(idx[ax])


def _reduce_along(
    value: Callable[[Sequence[Any]], Any],
    shape: tuple[int, ...],
    axes: Sequence[int],
    reducer: Any,
    name: str,
    dtype: str,
) -> Any:
    """``reducer`` of ``value(index)`` (of ``dtype``) over ``axes`` of ``shape``, those axes
    dropped. Over no elements it is a 0 (an empty sum; a block whose reduction loops run no
    iteration would never run its init and leave the result unwritten)."""
    from tvm import te

    kept = [a for a in range(len(shape)) if a not in axes]
    out_shape = tuple(shape[a] for a in kept)
    if any(shape[a] == 0 for a in axes):
        return _filled(out_shape, dtype, 0, name=name)

    def reduced(idx: Sequence[Any], start: int = 0, stop: int | None = None) -> Any:
        # over ``axes``; along the last one, only its values from ``start`` to ``stop``
        red = [te.reduce_axis((0, shape[a]), name=f"r{a}") for a in axes]
        full: list[Any] = [None] * len(shape)
        for a, i in zip(kept, idx, strict=True):
            full[a] = i
        for a, r in zip(axes, red, strict=True):
            full[a] = r
        if stop is not None:
            red[-1] = te.reduce_axis((0, stop - start), name=f"r{axes[-1]}")
            full[axes[-1]] = red[-1].var + start if start else red[-1].var
        return reducer(value(full), axis=red)

    last = len(shape) - 1
    head = head_and_tail(shape[last], reducer) if tuple(axes) == (last,) else None
    if head is None:
        return te.compute(out_shape, lambda *i: reduced(i), name=name)
    # two reductions, for the CPU's vectorized schedule (see head_and_tail)
    return in_head_and_tail(out_shape, shape[last], head, reducer, reduced, name)


def _drop(idx: Sequence[Any], axes: Sequence[int]) -> list[Any]:
    """``idx`` without the reduced ``axes`` (to read a reduction's result)."""
    return [i for a, i in enumerate(idx) if a not in axes]


# ---- matrix products ----------------------------------------------------------------------------


def _acc_dtype(out: str) -> str:
    """The dtype a product with ``out`` results accumulates in (see the module docstring)."""
    return "float32" if out in _HALF else out


def _product(call: LoweringCall, transpose_a: bool, transpose_b: bool) -> Any:
    """``A @ B`` with the operands transposed on request: ``A`` is ``(batch..., m, k)`` (or
    ``(k,)``: no ``m``), ``B`` is ``(batch..., k, n)``; batch axes align from the right and
    those of extent 1 broadcast (see the module docstring)."""
    from tvm import te

    a, b = call.args
    shape, out_dtype = _out(call)
    a_shape, b_shape = _static(a.shape), _static(b.shape)
    has_m = len(a_shape) >= 2
    depth = a_shape[-2] if transpose_a else a_shape[-1]
    if _is_empty(shape) or depth == 0:  # no product, or an empty sum (see _reduce_along)
        return _filled(shape, out_dtype, name=f"T_{call.name[3:]}")
    acc = _acc_dtype(out_dtype)
    k = te.reduce_axis((0, depth), name="k")
    a_batch = a_shape[:-2] if has_m else ()
    b_batch = b_shape[:-2]
    n_batch = len(shape) - (2 if has_m else 1)

    def batch_index(idx: Sequence[Any], dims: Sequence[int]) -> list[Any]:
        lead = idx[n_batch - len(dims) : n_batch]
        return [0 if d == 1 else i for i, d in zip(lead, dims, strict=True)]

    def body(*idx: Any) -> Any:
        j = idx[-1]
        a_tail: tuple[Any, ...] = (k,)
        if has_m:
            a_tail = (k, idx[-2]) if transpose_a else (idx[-2], k)
        b_tail = (j, k) if transpose_b else (k, j)
        lhs = a(*batch_index(idx, a_batch), *a_tail)
        rhs = b(*batch_index(idx, b_batch), *b_tail)
        return te.sum(_cast(lhs, acc) * _cast(rhs, acc), axis=k)

    layout = ("T" if transpose_a else "N") + ("T" if transpose_b else "N")
    tag = {"nn.dense": "dense", "nn.matmul": "matmul", "nn.batch_matmul": "batch_matmul"}
    prod = te.compute(shape, body, name=f"T_{tag[call.name]}_{layout}", tag=tag[call.name])
    if acc == out_dtype:
        return prod
    return te.compute(shape, lambda *i: _cast(prod(*i), out_dtype), name="T_cast")


@lowering_rule("nn.dense")
def _dense_rule(call: LoweringCall) -> Any:
    return _product(call, False, True)


@lowering_rule("nn.matmul", "nn.batch_matmul")
def _matmul_rule(call: LoweringCall) -> Any:
    return _product(call, bool(call.attrs["transpose_a"]), bool(call.attrs["transpose_b"]))


# ---- activations, bias_add ----------------------------------------------------------------------


def _elementwise(
    call: LoweringCall, fn: Callable[[Any, Sequence[Any]], Any], working: str | None = None
) -> Any:
    """``out[idx] = fn(x[idx] in the working dtype, idx)`` rounded to the result dtype
    (``working`` None: the reference's, float32 for half-precision data)."""
    from tvm import te

    x = call.args[0]
    shape, dtype = _out(call)
    if _is_empty(shape):
        return _filled(shape, dtype, name=call.name[3:])
    work = working or _wide(dtype)
    return te.compute(shape, lambda *i: _cast(fn(_cast(x(*i), work), i), dtype), name=call.name[3:])


def _leaky(w: Any, negative: Any) -> Any:
    """``w`` where it is positive, else ``negative`` (``w`` times the slope)."""
    from tvm import tirx

    return tirx.Select(w > _const(0, _dtype(w)), w, negative)


@lowering_rule("nn.relu")
def _relu_rule(call: LoweringCall) -> Any:
    from tvm import tirx

    def relu(x: Any, _: Sequence[Any]) -> Any:
        zero = _const(0, _dtype(x))
        return tirx.Select(x <= zero, zero, x)  # (+0 for -0, as np.maximum(x, 0))

    return _elementwise(call, relu, working=_out(call)[1])


@lowering_rule("nn.leaky_relu")
def _leaky_relu_rule(call: LoweringCall) -> Any:
    alpha = _attr_float(call, "alpha")
    return _elementwise(call, lambda w, _: _leaky(w, _times(w, alpha)))


@lowering_rule("nn.prelu")
def _prelu_rule(call: LoweringCall) -> Any:
    alpha = _along(call.args[1], _axis(call, len(call.args[0].shape)))
    return _elementwise(call, lambda w, i: _leaky(w, w * _cast(alpha(i), _dtype(w))))


@lowering_rule("nn.gelu")
def _gelu_rule(call: LoweringCall) -> Any:
    from tvm import te

    dtype = _out(call)[1]
    work = "float32" if call.fast_math and dtype in ("float32", *_HALF) else "float64"

    def gelu(w: Any, _: Sequence[Any]) -> Any:
        half, one = _const(0.5, work), _const(1.0, work)
        return half * w * (one + te.erf(w / _const(math.sqrt(2.0), work)))

    return _elementwise(call, gelu, working=work)


@lowering_rule("nn.bias_add")
def _bias_add_rule(call: LoweringCall) -> Any:
    from tvm import tirx

    shape, dtype = _out(call)
    bias = _along(call.args[1], _axis(call, len(shape)))
    if dtype == "bool":
        return _elementwise(call, lambda x, i: tirx.Or(x, bias(i)), working="bool")
    return _elementwise(call, lambda x, i: x + bias(i), working=dtype)


# ---- softmax ------------------------------------------------------------------------------------


def _exp_of(t: Any, fast: bool, bind: bool) -> Any:
    """``exp`` of the tensor ``t``: the elementwise rule's approximation
    (:func:`relay.op.lowering.elemwise.fast_exp_f32`) when ``fast``, else libm's; ``bind``:
    whether it may bind its values (``elemwise._can_bind``: not in a bfloat16 kernel)."""
    from tvm import te

    from relay.op.lowering.elemwise import fast_exp_f32

    if fast:
        return te.compute(t.shape, lambda *i: fast_exp_f32(t(*i), bind), name="T_exp")
    return te.compute(t.shape, lambda *i: te.exp(t(*i)), name="T_exp")


@lowering_rule("nn.softmax", "nn.log_softmax")
def _softmax_rule(call: LoweringCall) -> Any:
    from tvm import te

    from relay.op.lowering.elemwise import _can_bind

    x = call.args[0]
    shape, dtype = _out(call)
    if _is_empty(shape):
        return _filled(shape, dtype, name=call.name[3:])
    work = _wide(dtype)
    ax = _axis(call, len(shape))
    axes = (ax,)

    def w(i: Sequence[Any]) -> Any:
        if str(x.dtype) == "bfloat16":  # (read in reductions: see bfloat16_to_float32)
            return bfloat16_to_float32(x(*i))
        return _cast(x(*i), work)

    peak = _reduce_along(w, shape, axes, te.max, "T_softmax_max", work)
    shifted = te.compute(shape, lambda *i: w(i) - peak(*_drop(i, axes)), name="T_shifted")
    exp = _exp_of(shifted, call.fast_math and work == "float32", _can_bind(call))
    total = _reduce_along(lambda i: exp(*i), shape, axes, te.sum, "T_softmax_expsum", work)
    if call.name == "nn.softmax":

        def out(*i: Any) -> Any:
            return _cast(exp(*i) / total(*_drop(i, axes)), dtype)

    else:
        from relay.backend.lower import BARRIER

        # the log of each row's sum once, in a stage of its own that the schedules keep (a
        # libm call inlined into the last stage ran once per element: (128, 1000) 344 us)
        log_total = te.compute(total.shape, lambda *i: te.log(total(*i)), name=BARRIER)

        def out(*i: Any) -> Any:
            return _cast(shifted(*i) - log_total(*_drop(i, axes)), dtype)

    return te.compute(shape, out, name=call.name[3:])


# ---- normalization ------------------------------------------------------------------------------


def _moments(
    w: Callable[[Sequence[Any]], Any], shape: tuple[int, ...], axes: Sequence[int], work: str
) -> tuple[Any, Any]:
    """The mean and the biased variance of ``w`` over ``axes`` (two passes, as the
    reference: ``mean((w - mean(w)) ** 2)``), as tensors of the other axes."""
    from tvm import te

    count = _const(math.prod(shape[a] for a in axes), work)
    total = _reduce_along(w, shape, axes, te.sum, "T_sum", work)
    mean = te.compute(total.shape, lambda *i: total(*i) / count, name="T_mean")

    def square(i: Sequence[Any]) -> Any:
        d = w(i) - mean(*_drop(i, axes))
        return d * d

    sq = _reduce_along(square, shape, axes, te.sum, "T_sqsum", work)
    var = te.compute(sq.shape, lambda *i: sq(*i) / count, name="T_var")
    return mean, var


def _normalized(
    call: LoweringCall,
    w: Callable[[Sequence[Any]], Any],
    mean: Callable[[Sequence[Any]], Any],
    var: Callable[[Sequence[Any]], Any],
    ax: int,
) -> Any:
    """``(w - mean) / sqrt(var + eps) * gamma + beta`` (``scale``/``center`` decide whether
    ``gamma``/``beta`` apply) in the result dtype; ``mean`` and ``var`` read at an index of
    the data, ``gamma`` and ``beta`` are the call's 2nd and 3rd arguments."""
    from tvm import te

    shape, dtype = _tensor_type(call.arg_types[0])
    work = _wide(dtype)
    eps = _const(_attr_float(call, "epsilon"), work)
    gamma, beta = _along(call.args[1], ax), _along(call.args[2], ax)

    def body(*i: Any) -> Any:
        out = (w(i) - mean(i)) / te.sqrt(var(i) + eps)
        if call.attrs["scale"]:
            out = out * _cast(gamma(i), work)
        if call.attrs["center"]:
            out = out + _cast(beta(i), work)
        return _cast(out, dtype)

    if _is_empty(shape):
        return _filled(shape, dtype, name=call.name[3:])
    return te.compute(shape, body, name=call.name[3:])


def _data(call: LoweringCall) -> tuple[tuple[int, ...], str, Callable[[Sequence[Any]], Any]]:
    """The data's shape, working dtype, and ``index -> data[index]`` in that dtype."""
    x = call.args[0]
    shape, dtype = _tensor_type(call.arg_types[0])
    work = _wide(dtype)
    return shape, work, lambda i: _cast(x(*i), work)


@lowering_rule("nn.layer_norm")
def _layer_norm_rule(call: LoweringCall) -> Any:
    shape, work, w = _data(call)
    ax = _axis(call, len(shape))
    if _is_empty(shape):
        return _normalized(call, w, w, w, ax)
    mean, var = _moments(w, shape, (ax,), work)
    return _normalized(
        call, w, lambda i: mean(*_drop(i, (ax,))), lambda i: var(*_drop(i, (ax,))), ax
    )


@lowering_rule("nn.batch_norm")
def _batch_norm_rule(call: LoweringCall) -> Any:
    from tvm import te

    shape, work, w = _data(call)
    ax = _axis(call, len(shape))
    moving_mean, moving_var = call.args[3], call.args[4]
    if not call.attrs.get("training", False):
        mm, mv = _along(moving_mean, ax), _along(moving_var, ax)
        out = _normalized(call, w, lambda i: _cast(mm(i), work), lambda i: _cast(mv(i), work), ax)
        return out, moving_mean, moving_var  # the lowering copies returned inputs
    channels = shape[ax]
    stat_dtype = str(moving_mean.dtype)
    if _is_empty(shape):
        return (
            _normalized(call, w, w, w, ax),
            _filled((channels,), stat_dtype, name="T_moving_mean"),
            _filled((channels,), stat_dtype, name="T_moving_var"),
        )
    others = tuple(a for a in range(len(shape)) if a != ax)
    mean, var = _moments(w, shape, others, work)
    out = _normalized(call, w, lambda i: mean(i[ax]), lambda i: var(i[ax]), ax)
    momentum = _attr_float(call, "momentum")
    count = math.prod(shape[a] for a in others)
    bessel = _const(count / (count - 1), work)

    def moved(stat: Any, batch: Callable[[Any], Any], name: str) -> Any:
        def body(c: Any) -> Any:
            old = _times(_cast(stat(c), work), 1.0 - momentum)
            return _cast(old + _times(batch(c), momentum), stat_dtype)

        return te.compute((channels,), body, name=name)

    new_mean = moved(moving_mean, lambda c: mean(c), "T_moving_mean")
    new_var = moved(moving_var, lambda c: var(c) * bessel, "T_moving_var")
    return out, new_mean, new_var


# ---- dropout, losses ----------------------------------------------------------------------------


@lowering_rule("nn.dropout")
def _dropout_rule(call: LoweringCall) -> Any:
    shape, dtype = _tensor_type(call.arg_types[0])
    return call.args[0], _filled(shape, dtype, 1, name="T_dropout_mask")


@lowering_rule("nn.cross_entropy", "nn.cross_entropy_with_logits")
def _cross_entropy_rule(call: LoweringCall) -> Any:
    from tvm import te

    p, t = call.args
    shape, dtype = _tensor_type(call.arg_types[0])
    work = _wide(dtype)
    batch = shape[0]
    if batch == 0:  # -0 / 0
        return _filled((), dtype, math.nan, name="T_cross_entropy")

    def term(i: Sequence[Any]) -> Any:
        pi = _cast(p(*i), work)
        if call.name == "nn.cross_entropy":
            pi = te.log(pi)
        return pi * _cast(t(*i), work)

    total = _reduce_along(term, shape, (0, 1), te.sum, "T_sum", work)
    return te.compute(
        (), lambda: _cast(-total() / _const(batch, work), dtype), name="T_cross_entropy"
    )
