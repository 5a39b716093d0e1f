"""Lowering of the elementwise operators (``relay.op.tensor`` and ``relay.op.elemwise``).

Every rule here is one ``te.compute`` over the result's shape whose body reads one element of
each argument and combines them with a scalar TIR expression, the ``topi`` elementwise and
broadcast pattern (``include/tvm/topi/elemwise.h``, ``include/tvm/topi/broadcast.h``,
``python/tvm/topi/math.py``). The scalar expressions follow the numpy references, which differ
from topi's (and from plain TIR operators) in several places:

* **broadcasting**: an argument is read at the result's index with its missing leading axes
  dropped and its size-1 axes read at 0 (numpy's rule, as ``topi.add`` etc.);
* **narrow floats**: float16 and bfloat16 values are widened to float32, computed on, and
  rounded back once, as the references (numpy's float16 loops) do;
* **integer wrap-around**: int32/int64 ``add``, ``subtract``, ``multiply``, ``negative``,
  ``abs``, ``power`` and ``arange`` are computed on the same bits as uint32/uint64, because
  TVM emits signed 32/64-bit arithmetic with LLVM's ``nsw`` flag (overflow is poison there,
  while numpy wraps);
* **integer division**: ``divide``/``mod`` truncate (``truncdiv``/``truncmod``),
  ``floor_divide``/``floor_mod`` round down (``floordiv``/``floormod``). The divisor is guarded,
  since x86 ``idiv`` traps: a zero divisor gives 0 (the reference raises), and a divisor of -1
  gives the wrapped negation (quotient) or 0 (remainder) without dividing
  (``INT_MIN / -1`` traps as well);
* **floats**: ``mod`` is C's ``fmod`` (TIR ``truncmod``, LLVM ``frem``); ``floor_mod`` is numpy's
  ``npy_divmod`` remainder (``fmod``, then ``+ b`` when the signs differ, a zero taking the
  divisor's sign), since TIR ``floormod`` rejects floats; ``floor_divide`` is ``floor(a / b)``;
  ``maximum``/``minimum`` and ``clip`` propagate NaN (TIR ``max``/``min`` are a plain select,
  which drops a NaN in the first operand); ``not_equal`` and casts to bool count NaN as
  different (TIR's ``!=`` on floats is LLVM's *ordered* comparison, false for NaN, and the
  simplifier rewrites ``!(a == b)`` to it); ``round`` rounds halves away from zero (TIR
  ``round`` is ``nearbyint`` in this TVM, halves to even); ``sign(nan)`` is 0 (topi's select);
* **bool**: ``add``/``maximum`` are ``or``, ``multiply``/``minimum`` ``and`` (numpy's bool
  loops); ordered comparisons of bools compare them as int8 (LLVM has no ordered ``i1``
  comparison in TVM's code generator);
* **power** of integers is exponentiation by squaring over the exponent's bits (numpy's loop,
  wrapping), bound with ``tirx.Let`` so the expression stays linear in size; a negative
  exponent (the reference raises) gives what C's truncating ``1 / a**-b`` gives: 1 for
  ``a == 1``, ``(-1)**b`` for ``a == -1``, else 0;
* **casts** (``cast``, ``cast_like``, ``full``, ``full_like``) convert as numpy's ``astype``: to bool
  is ``x != 0`` (NaN true), floats truncate toward zero into integers (TVM's ``fptosi``/
  ``fptoui``; a value that is NaN, infinite or out of range, where the reference raises, gives
  the hardware's result: the x86 "integer indefinite" ``INT_MIN`` for 32/64-bit targets, the
  low bits of the 32-bit conversion for 8/16-bit ones), narrow floats convert through float32;
* **clip** casts its bounds exactly as the reference does (its own helper computes them);
* **fast math** (``call.fast_math`` and float32): ``exp`` and ``fast_exp`` use Cephes' ``expf``
  (the polynomial of ``topi.fast_exp``) with a two-constant ``ln 2`` reduction and a two-step
  ``2**n`` scaling, so it covers the whole float32 range: ``topi.fast_exp`` clamps its input to
  +-88.376, which gives a finite 2.4e38 instead of inf above it (and a 42% error just below
  ``log(FLT_MAX) = 88.72``), flushes results below 1.2e-38 to 0 and turns NaN into a number.
  ``tanh``/``fast_tanh`` use ``topi.fast_tanh``'s rational approximation (Eigen's, clamped to
  +-9) with NaN passed through; ``sigmoid`` is ``e = exp(-|x|)``, ``1 / (1 + e)`` for
  ``x >= 0`` and ``e / (1 + e)`` below, with the approximate or exact ``exp`` (the reference's
  overflow-free form; topi's ``1 / (1 + exp(-x))`` loses the tiny results below -88).
  ``fast_exp``/``fast_tanh`` approximate float32 always; other dtypes are exact.
  Measured against float64 numpy (tests/backend/test_lower_elemwise.py): fast exp relative
  error below 2.4e-7 where the result is a normal float32 (absolute below 1.5e-45 in the
  subnormal range, exact 0/inf beyond); fast tanh absolute error below 1.2e-7 (relative below
  3e-7); fast sigmoid relative error below 3.6e-7 down to x = -87;
* ``arange`` computes ``start + i * step`` in its dtype (narrow floats rounded after each
  operation, as numpy's float16 arithmetic does); its length must be static (known when the
  program gives the bounds as constants), else lowering raises a CompileError;
* ``zeros``/``ones``/``full`` read nothing but their attributes (and the fill value); a result
  with no elements is a constant compute that reads nothing.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from relay.ir.types import TensorType
from relay.op.registry import LoweringCall, lowering_rule

Expr = Any
"""A TIR scalar expression (``tvm.tirx.PrimExpr``)."""

ScalarFn = Callable[..., Expr]

_NARROW = frozenset({"float16", "bfloat16"})
_F32 = "float32"


# ---- shared helpers -----------------------------------------------------------------------------


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _is_signed(dtype: str) -> bool:
    return dtype.startswith("int")


def _bits(dtype: str) -> int:
    return 1 if dtype == "bool" else int(dtype.lstrip("abcdefghijklmnopqrstuvwxyz"))


def _dt(x: Expr) -> str:
    """The dtype of the TIR expression ``x``."""
    return str(x.ty)


def _const(value: float | int | bool, dtype: str) -> Expr:
    from tvm import tirx

    return tirx.const(value, dtype)


def _out(call: LoweringCall) -> tuple[tuple[int, ...], str]:
    """The result's static shape and dtype; a CompileError when a dimension is unknown."""
    from relay.backend.lower import static_shape
    from relay.errors import CompileError

    ty = call.out_type
    assert isinstance(ty, TensorType)
    try:
        shape = static_shape(ty)
    except CompileError as err:
        raise CompileError(f"cannot lower {call.name}: {err}", call.span) from None
    return shape, str(ty.dtype)


def _dtype(call: LoweringCall, k: int) -> str:
    ty = call.arg_types[k]
    assert isinstance(ty, TensorType)
    return str(ty.dtype)


def _up(value: Expr, dtype: str) -> Expr:
    """``value`` widened to float32 when ``dtype`` is a narrow float."""
    from tvm import tirx

    return tirx.Cast(_F32, value) if dtype in _NARROW else value


def _down(value: Expr, dtype: str) -> Expr:
    """``value`` (computed in ``dtype`` widened) rounded back to ``dtype``."""
    from tvm import tirx

    return tirx.Cast(dtype, value) if dtype in _NARROW else value


def _wide(dtype: str) -> str:
    """The dtype the math of ``dtype`` is done in."""
    return _F32 if dtype in _NARROW else dtype


def _read(t: Any, shape: tuple[int, ...], index: Sequence[Any]) -> Expr:
    """``t`` read at the result index ``index`` under numpy broadcasting to ``shape``."""
    dims = [int(d) for d in t.shape]
    lead = len(shape) - len(dims)
    return t(*[0 if d == 1 else index[lead + k] for k, d in enumerate(dims)])


def _compute(
    shape: tuple[int, ...], dtype: str, body: Callable[[Sequence[Any]], Expr], name: str
) -> Any:
    """``te.compute`` of ``body(index)`` over ``shape``; with no elements, a constant."""
    from tvm import te

    if math.prod(shape) == 0:
        return te.compute(shape, lambda *i: _const(0, dtype), name=name)
    return te.compute(shape, lambda *i: body(i), name=name)


def _map(call: LoweringCall, fn: ScalarFn, *, widen: bool = True) -> Any:
    """The elementwise result ``fn(*args)`` with numpy broadcasting. With ``widen``, narrow
    float arguments are widened to float32 and a narrow float result rounded back once."""
    from tvm import tirx

    shape, dtype = _out(call)
    dtypes = [_dtype(call, k) for k in range(len(call.args))]

    def body(index: Sequence[Any]) -> Expr:
        values = [_read(t, shape, index) for t in call.args]
        if widen:
            values = [_up(v, d) for v, d in zip(values, dtypes, strict=True)]
        out = fn(*values)
        if _dt(out) != dtype:
            out = tirx.Cast(dtype, out)
        return out

    return _compute(shape, dtype, body, call.name.replace(".", "_"))


_ARITH: dict[str, Callable[[Expr, Expr], Expr]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
}


def _wrapping(kind: str, a: Expr, b: Expr, dtype: str) -> Expr:
    """``a + b``, ``a - b`` or ``a * b`` (``kind`` "add", "subtract", "multiply") on integers of
    ``dtype``, wrapping around on overflow as numpy does.

    TVM's simplifier takes integer arithmetic not to overflow (it folds ``x + 1 < x`` to false,
    and ``0 - x`` of unsigned ``x`` to 0) and its LLVM code marks signed 32/64-bit arithmetic
    ``nsw``. Narrower integers are therefore computed in int64 (uint64 for a uint32 product)
    and truncated back; uint64 subtracts by adding the two's complement; int64 arithmetic is
    left as TVM emits it (no wider type exists)."""
    from tvm import tirx

    op = _ARITH[kind]
    if dtype == "uint64" and kind == "subtract":
        return a + (tirx.bitwise_not(b) + _const(1, dtype))
    if dtype in ("int64", "uint64"):
        return op(a, b)
    wide = "uint64" if kind == "multiply" and dtype == "uint32" else "int64"
    return tirx.Cast(dtype, op(tirx.Cast(wide, a), tirx.Cast(wide, b)))


def _negate(x: Expr, dtype: str) -> Expr:
    """``-x``, wrapping for integers."""
    if _is_float(dtype):
        return -x
    return _wrapping("subtract", _const(0, dtype), x, dtype)


def _nonzero(x: Expr, dtype: str) -> Expr:
    """``x != 0`` as numpy's (NaN is nonzero); ``x`` already widened when narrow."""
    from tvm import tirx

    if dtype == "bool":
        return x
    nonzero = tirx.NE(x, _const(0, _wide(dtype)))
    return tirx.Or(nonzero, tirx.isnan(x)) if _is_float(dtype) else nonzero


def _convert(x: Expr, src: str, dst: str) -> Expr:
    """``x`` (a value of ``src``) converted to ``dst`` as numpy's ``astype`` (see the module
    doc: bool is nonzero, floats truncate into integers, narrow floats go through float32)."""
    from tvm import tirx

    if src == dst:
        return x
    if dst == "bool":
        return _nonzero(_up(x, src), src)
    if src in _NARROW and (dst in _NARROW or not _is_float(dst)):
        x = tirx.Cast(_F32, x)  # exact
    elif src == "bool" and dst in _NARROW:
        x = tirx.Cast(_F32, x)
    return tirx.Cast(dst, x)


# ---- fast math ----------------------------------------------------------------------------------

# Cephes expf (the polynomial topi.fast_exp uses), with ln 2 split in two for the reduction
_EXP_POLY = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_LOG2E = 1.44269504088896341
# exp(89) overflows float32 (log(FLT_MAX) = 88.72); exp(-104) is below half the least subnormal
_EXP_HI = 89.0
_EXP_LO = -104.0

# topi.fast_tanh (Eigen's rational approximation of tanh on [-9, 9])
_TANH_ALPHA = (
    -2.76076847742355e-16,
    2.00018790482477e-13,
    -8.60467152213735e-11,
    5.12229709037114e-08,
    1.48572235717979e-05,
    6.37261928875436e-04,
    4.89352455891786e-03,
)
_TANH_BETA = (
    1.19825839466702e-06,
    1.18534705686654e-04,
    2.26843463243900e-03,
    4.89352518554385e-03,
)
_TANH_CLAMP = 9.0


def _horner(x: Expr, coefficients: Sequence[float]) -> Expr:
    acc = _const(coefficients[0], _F32)
    for c in coefficients[1:]:
        acc = acc * x + _const(c, _F32)
    return acc


def _pow2(n: Expr) -> Expr:
    """``2.0 ** n`` as float32, for an int32 ``n`` in [-126, 127]."""
    from tvm import tirx

    return tirx.reinterpret(_F32, (n + _const(127, "int32")) << _const(23, "int32"))


def fast_exp_f32(x: Expr) -> Expr:
    """An approximation of ``exp`` of the float32 value ``x`` (relative error ~2e-7 where the
    result is normal; inf above log(FLT_MAX), subnormals and 0 below, NaN kept), vectorizable:
    no libm call."""
    from tvm import te, tirx

    f32 = _F32
    xc = tirx.max(tirx.min(x, _const(_EXP_HI, f32)), _const(_EXP_LO, f32))
    n = te.var("n", f32)
    r = te.var("r", f32)
    # n = round(x / ln 2); r = x - n ln 2 in two steps (exact first product)
    reduced = xc - n * _const(_LN2_HI, f32) - n * _const(_LN2_LO, f32)
    poly = _horner(r, _EXP_POLY) * r * r + r + _const(1.0, f32)
    # 2**n with n in [-150, 128] as two factors 2**(n//2) * 2**(n - n//2), each normal
    ni = tirx.Cast("int32", n)
    half = ni >> _const(1, "int32")
    scaled = poly * _pow2(half) * _pow2(ni - half)
    body = tirx.Let(r, reduced, scaled)
    body = tirx.Let(n, tirx.floor(xc * _const(_LOG2E, f32) + _const(0.5, f32)), body)
    return tirx.Select(tirx.isnan(x), x, body)


def fast_tanh_f32(x: Expr) -> Expr:
    """``topi.fast_tanh``'s approximation of ``tanh`` of the float32 value ``x`` (absolute
    error ~1e-7), NaN kept."""
    from tvm import te, tirx

    f32 = _F32
    xc = te.var("xc", f32)
    x2 = te.var("x2", f32)
    p = _horner(x2, _TANH_ALPHA) * xc
    q = _horner(x2, _TANH_BETA)
    body = tirx.Let(x2, xc * xc, p / q)
    clamped = tirx.max(tirx.min(x, _const(_TANH_CLAMP, f32)), _const(-_TANH_CLAMP, f32))
    return tirx.Select(tirx.isnan(x), x, tirx.Let(xc, clamped, body))


def exp_expr(x: Expr, fast: bool) -> Expr:
    """``exp(x)`` of a float value; approximated (``fast_exp_f32``) when ``fast`` and float32."""
    from tvm import tirx

    return fast_exp_f32(x) if fast and _dt(x) == _F32 else tirx.exp(x)


def tanh_expr(x: Expr, fast: bool) -> Expr:
    """``tanh(x)`` of a float value; approximated when ``fast`` and float32."""
    from tvm import tirx

    return fast_tanh_f32(x) if fast and _dt(x) == _F32 else tirx.tanh(x)


def sigmoid_expr(x: Expr, fast: bool) -> Expr:
    """``1 / (1 + exp(-x))`` of a float value without overflow, as the reference: with
    ``e = exp(-|x|)``, ``1 / (1 + e)`` for ``x >= 0``, ``e / (1 + e)`` below."""
    from tvm import te, tirx

    dtype = _dt(x)
    e = te.var("e", dtype)
    one = _const(1.0, dtype)
    if fast and dtype == _F32:
        inv = te.var("inv", dtype)
        body = tirx.Let(inv, one / (one + e), tirx.Select(x >= _const(0.0, dtype), inv, e * inv))
    else:
        body = tirx.Select(x >= _const(0.0, dtype), one / (one + e), e / (one + e))
    return tirx.Let(e, exp_expr(-tirx.abs(x), fast), body)


# ---- unary math -----------------------------------------------------------------------------------


def _round_half_away(x: Expr) -> Expr:
    from tvm import tirx

    dtype = _dt(x)
    whole = tirx.trunc(x)
    up = tirx.Select(x > _const(0.0, dtype), whole + _const(1.0, dtype), whole - _const(1.0, dtype))
    return tirx.Select(tirx.abs(x - whole) >= _const(0.5, dtype), up, whole)


def _float_math(call: LoweringCall) -> dict[str, ScalarFn]:
    """The scalar functions of the float-only operators, for ``call``'s options."""
    from tvm import tirx

    fast = call.fast_math
    return {
        "exp": lambda x: exp_expr(x, fast),
        "fast_exp": lambda x: exp_expr(x, True),
        "tanh": lambda x: tanh_expr(x, fast),
        "fast_tanh": lambda x: tanh_expr(x, True),
        "sigmoid": lambda x: sigmoid_expr(x, fast),
        "log": tirx.log,
        "log2": tirx.log2,
        "log10": tirx.log10,
        "sqrt": tirx.sqrt,
        "rsqrt": lambda x: _const(1.0, _dt(x)) / tirx.sqrt(x),
        "erf": tirx.erf,
        "sin": tirx.sin,
        "cos": tirx.cos,
    }


@lowering_rule(
    "exp", "fast_exp", "tanh", "fast_tanh", "sigmoid", "log", "log2", "log10", "sqrt", "rsqrt",
    "erf", "sin", "cos",
)  # fmt: skip
def _float_unary(call: LoweringCall) -> Any:
    return _map(call, _float_math(call)[call.name])


@lowering_rule("floor", "ceil", "trunc", "round")
def _rounding(call: LoweringCall) -> Any:
    from tvm import tirx

    fns: dict[str, ScalarFn] = {
        "floor": tirx.floor,
        "ceil": tirx.ceil,
        "trunc": tirx.trunc,
        "round": _round_half_away,
    }
    if not _is_float(_dtype(call, 0)):
        return _map(call, lambda x: x)
    return _map(call, fns[call.name])


@lowering_rule("abs")
def _abs(call: LoweringCall) -> Any:
    from tvm import tirx

    dtype = _dtype(call, 0)
    if _is_float(dtype):
        return _map(call, tirx.abs)
    if not _is_signed(dtype):
        return _map(call, lambda x: x)
    return _map(call, lambda x: tirx.Select(x < _const(0, dtype), _negate(x, dtype), x))


@lowering_rule("negative")
def _negative(call: LoweringCall) -> Any:
    dtype = _wide(_dtype(call, 0))
    return _map(call, lambda x: _negate(x, dtype))


@lowering_rule("sign")
def _sign(call: LoweringCall) -> Any:
    from tvm import tirx

    dtype = _wide(_dtype(call, 0))
    zero, one = _const(0, dtype), _const(1, dtype)
    if dtype.startswith("uint"):
        return _map(call, lambda x: tirx.Select(x > zero, one, zero))
    minus = _const(-1, dtype)
    return _map(call, lambda x: tirx.Select(x > zero, one, tirx.Select(x < zero, minus, zero)))


@lowering_rule("copy")
def _copy(call: LoweringCall) -> Any:
    return _map(call, lambda x: x, widen=False)


@lowering_rule("isnan", "isfinite")
def _float_test(call: LoweringCall) -> Any:
    from tvm import tirx

    dtype = _dtype(call, 0)
    if not _is_float(dtype):
        result = call.name == "isfinite"
        return _map(call, lambda x: _const(result, "bool"))
    return _map(call, tirx.isnan if call.name == "isnan" else tirx.isfinite)


@lowering_rule("clip")
def _clip(call: LoweringCall) -> Any:
    import numpy as np
    from tvm import tirx

    from relay.op.elemwise import _clip_bound, _numpy_dtype

    src = _dtype(call, 0)
    like = np.zeros((), dtype=_numpy_dtype(src))
    dtype = _wide(src)
    bounds = []
    for which in ("a_min", "a_max"):
        value = call.attrs[which]
        assert isinstance(value, int | float)
        bound = _clip_bound(like, float(value), which)
        bounds.append(_const(bound.item() if _is_float(src) else int(bound), dtype))
    lo, hi = bounds

    def clip(x: Expr) -> Expr:
        out = tirx.max(tirx.min(x, hi), lo)
        return tirx.Select(tirx.isnan(x), x, out) if _is_float(src) else out

    return _map(call, clip)


# ---- casts and creation ---------------------------------------------------------------------------


@lowering_rule("cast", "cast_like")
def _cast(call: LoweringCall) -> Any:
    src = _dtype(call, 0)
    _, dst = _out(call)
    data = call.args[0]
    shape = _out(call)[0]
    return _compute(shape, dst, lambda i: _convert(_read(data, shape, i), src, dst), call.name)


@lowering_rule("zeros", "ones", "zeros_like", "ones_like")
def _constant(call: LoweringCall) -> Any:
    shape, dtype = _out(call)
    value = 1 if call.name.startswith("ones") else 0
    return _compute(shape, dtype, lambda i: _const(value, dtype), call.name)


@lowering_rule("full", "full_like")
def _full(call: LoweringCall) -> Any:
    shape, dtype = _out(call)
    k = 0 if call.name == "full" else 1
    fill, src = call.args[k], _dtype(call, k)
    return _compute(shape, dtype, lambda i: _convert(fill(), src, dtype), call.name)


@lowering_rule("arange")
def _arange(call: LoweringCall) -> Any:
    from tvm import tirx

    shape, dtype = _out(call)
    start, _stop, step = (t() for t in call.args)

    def body(index: Sequence[Any]) -> Expr:
        (i,) = index
        if dtype == "bool":  # bool arithmetic: * is and, + is or
            return tirx.Or(start, tirx.And(tirx.NE(i, _const(0, _dt(i))), step))
        if not _is_float(dtype):
            prod = _wrapping("multiply", tirx.Cast(dtype, i), step, dtype)
            return _wrapping("add", start, prod, dtype)
        # each operation rounds to dtype, as numpy's arithmetic in dtype does
        wide = _wide(dtype)
        position = _down(tirx.Cast(wide, i), dtype)
        prod = _down(_up(position, dtype) * _up(step, dtype), dtype)
        return _down(_up(start, dtype) + _up(prod, dtype), dtype)

    return _compute(shape, dtype, body, call.name)


@lowering_rule("where")
def _where(call: LoweringCall) -> Any:
    from tvm import tirx

    cond = _dtype(call, 0)
    return _map(call, lambda c, x, y: tirx.Select(_nonzero(_up(c, cond), cond), x, y), widen=False)


# ---- binary operators -----------------------------------------------------------------------------


def _int_division(op: Callable[[Expr, Expr], Expr], remainder: bool, dtype: str) -> ScalarFn:
    """An integer division or remainder ``op`` with its divisor guarded (see the module doc):
    0 for a zero divisor; for -1, ``-a`` or 0 without dividing."""
    from tvm import tirx

    zero, one = _const(0, dtype), _const(1, dtype)

    def fn(a: Expr, b: Expr) -> Expr:
        if not _is_signed(dtype):
            return tirx.Select(tirx.EQ(b, zero), zero, op(a, tirx.Select(tirx.EQ(b, zero), one, b)))
        minus = _const(-1, dtype)
        safe = tirx.Select(tirx.Or(tirx.EQ(b, zero), tirx.EQ(b, minus)), one, b)
        special = zero if remainder else tirx.Select(b == zero, zero, _negate(a, dtype))
        return tirx.Select(tirx.Or(tirx.EQ(b, zero), tirx.EQ(b, minus)), special, op(a, safe))

    return fn


def _float_floor_mod(a: Expr, b: Expr) -> Expr:
    """numpy's float remainder (``npy_divmod``): fmod, moved into the divisor's sign."""
    from tvm import tirx

    dtype = _dt(a)
    zero = _const(0.0, dtype)
    m = tirx.truncmod(a, b)
    # a nonzero remainder of the other sign than b (TVM cannot compare two float tests)
    moved = tirx.Or(tirx.And(b < zero, m > zero), tirx.And(b > zero, m < zero))
    m = tirx.Select(moved, m + b, m)
    return tirx.Select(tirx.EQ(m, zero), tirx.copysign(zero, b), m)


def _int_power(dtype: str) -> ScalarFn:
    """``a ** b`` on integers: square-and-multiply over the bits of ``b`` (wrapping)."""
    from tvm import te, tirx

    nbits = _bits(dtype) - (1 if _is_signed(dtype) else 0)
    zero, one = _const(0, dtype), _const(1, dtype)

    def fn(a: Expr, b: Expr) -> Expr:
        bindings: list[tuple[Any, Expr]] = []
        base: Expr = a
        acc: Expr = one
        for k in range(nbits):
            bit = tirx.NE((b >> _const(k, dtype)) & one, zero)
            new_acc = te.var(f"acc{k}", dtype)
            bindings.append(
                (new_acc, tirx.Select(bit, _wrapping("multiply", acc, base, dtype), acc))
            )
            acc = new_acc
            if k + 1 < nbits:
                new_base = te.var(f"base{k}", dtype)
                bindings.append((new_base, _wrapping("multiply", base, base, dtype)))
                base = new_base
        body = acc
        for var, value in reversed(bindings):
            body = tirx.Let(var, value, body)
        if not _is_signed(dtype):
            return body
        minus = _const(-1, dtype)
        odd = tirx.NE(b & one, zero)
        negative_power = tirx.Select(
            tirx.EQ(a, one), one, tirx.Select(tirx.EQ(a, minus), tirx.Select(odd, minus, one), zero)
        )
        return tirx.Select(b < zero, negative_power, body)

    return fn


def _ordered(op: Callable[[Expr, Expr], Expr], dtype: str) -> ScalarFn:
    """An ordered comparison; bools are compared as int8."""
    from tvm import tirx

    if dtype != "bool":
        return op
    return lambda a, b: op(tirx.Cast("int8", a), tirx.Cast("int8", b))


def _nan_select(pick_a: Callable[[Expr, Expr], Expr]) -> ScalarFn:
    """numpy's float maximum/minimum: ``a`` where ``pick_a(a, b)`` or ``a`` is NaN, else ``b``
    (so a NaN in either operand wins)."""
    from tvm import tirx

    return lambda a, b: tirx.Select(tirx.Or(pick_a(a, b), tirx.isnan(a)), a, b)


def _binary_fn(name: str, narrow: str) -> ScalarFn:
    """The scalar function of the binary operator ``name`` on values of ``narrow`` (widened to
    float32 when a narrow float)."""
    from tvm import tirx

    dtype = _wide(narrow)
    is_float, is_bool = _is_float(dtype), dtype == "bool"
    if name in _ARITH:
        if is_bool:  # subtract rejects bool
            return tirx.Or if name == "add" else tirx.And
        return _ARITH[name] if is_float else lambda a, b: _wrapping(name, a, b, dtype)
    if name in ("maximum", "minimum"):
        if is_bool:
            return tirx.Or if name == "maximum" else tirx.And
        if is_float:
            return _nan_select(
                (lambda a, b: a >= b) if name == "maximum" else (lambda a, b: a <= b)
            )
        return tirx.max if name == "maximum" else tirx.min
    if is_float:
        floats: dict[str, ScalarFn] = {
            "divide": lambda a, b: a / b,
            # the quotient rounded to dtype first, as numpy's float16 loop does
            "floor_divide": lambda a, b: tirx.floor(_up(_down(a / b, narrow), narrow)),
            "mod": tirx.truncmod,
            "floor_mod": _float_floor_mod,
            "power": tirx.power,
        }
        if name in floats:
            return floats[name]
    else:
        integers: dict[str, Callable[[], ScalarFn]] = {
            "divide": lambda: _int_division(tirx.truncdiv, False, dtype),
            "floor_divide": lambda: _int_division(tirx.floordiv, False, dtype),
            "mod": lambda: _int_division(tirx.truncmod, True, dtype),
            "floor_mod": lambda: _int_division(tirx.floormod, True, dtype),
            "power": lambda: _int_power(dtype),
        }
        if name in integers:
            return integers[name]()
    compare: dict[str, ScalarFn] = {
        "equal": lambda a, b: tirx.EQ(a, b),
        "less": _ordered(lambda a, b: a < b, dtype),
        "less_equal": _ordered(lambda a, b: a <= b, dtype),
        "greater": _ordered(lambda a, b: a > b, dtype),
        "greater_equal": _ordered(lambda a, b: a >= b, dtype),
        "logical_and": tirx.And,
        "logical_or": tirx.Or,
        "logical_xor": lambda a, b: tirx.NE(a, b),
    }
    if name == "not_equal":
        if is_float:  # NaN differs from everything: the unordered comparison
            return lambda a, b: tirx.Or(tirx.NE(a, b), tirx.Or(tirx.isnan(a), tirx.isnan(b)))
        return lambda a, b: tirx.NE(a, b)
    return compare[name]


_BINARY = (
    "add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power",
    "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor",
)  # fmt: skip


@lowering_rule(*_BINARY)
def _binary(call: LoweringCall) -> Any:
    return _map(call, _binary_fn(call.name, _dtype(call, 0)))


@lowering_rule("logical_not")
def _logical_not(call: LoweringCall) -> Any:
    from tvm import tirx

    return _map(call, tirx.Not)
