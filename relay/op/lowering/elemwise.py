"""Lowering of the elementwise operators (``relay.op.tensor``, ``relay.op.elemwise``).

Every rule is one ``te.compute`` over the result's shape whose body reads one element of each
argument and combines them with a scalar TIR expression: topi's elementwise and broadcast
pattern (``include/tvm/topi/elemwise.h``, ``include/tvm/topi/broadcast.h``,
``python/tvm/topi/math.py``), except integer ``power``, a reduction over the exponent's bits.
The scalar expressions follow the numpy references where they and topi (or plain TIR, or
TVM 0.27's code generation) differ:

* **broadcasting**: an argument is read at the result's index with its missing leading axes
  dropped and its size-1 axes read at 0 (numpy's rule, as ``topi.add``);
* **narrow floats**: float16/bfloat16 values are widened to float32, computed on and rounded
  back once, as the references do; ``floor_divide`` rounds the quotient first, and
  ``arange`` after each operation, as numpy's float16 arithmetic. bfloat16 is rounded (to
  nearest even) on the bits before the cast, since TVM computes bfloat16 in float32 and drops
  a ``float32(bfloat16(x))`` pair in a fused kernel;
* **integer wrap-around**: TVM's simplifier takes integer arithmetic not to overflow (it folds
  ``x + 1 < x`` to false and the unsigned ``0 - x`` to 0) and its LLVM code marks signed
  32/64-bit arithmetic ``nsw``; so integers narrower than 64 bits add, subtract and multiply in
  int64 (uint64 for a uint32 product) and truncate, uint64 subtracts by adding the two's
  complement, and int64 is left as TVM emits it (overflow formally undefined there);
* **integer division**: ``divide``/``mod`` truncate (``truncdiv``/``truncmod``),
  ``floor_divide``/``floor_mod`` round down (``floordiv``/``floormod``). The divisor is guarded,
  since x86 ``idiv`` traps (SIGFPE), and checked at run time: a zero divisor raises the
  reference's ``ExecutionError`` (the guarded quotient is never returned), and a
  divisor of -1 gives the wrapped negation (quotient) or 0 (remainder) without dividing
  (``INT_MIN / -1`` traps too);
* **integer power** is square-and-multiply over the exponent's bits, a ``te.comm_reducer``
  whose state is (product, square, started): as a ``tirx.Let`` chain its compile time doubled
  per bit. A negative exponent, where the reference raises, gives C's truncated
  ``1 / a**-b``: 1 for ``a == 1``, ``(-1)**b`` for ``a == -1``, else 0;
* **floats**: ``mod`` is C's ``fmod`` (TIR ``truncmod``, LLVM ``frem``); ``floor_mod`` is numpy's
  ``npy_divmod`` remainder (TIR ``floormod`` rejects floats); ``floor_divide`` is
  ``floor(a / b)``; ``maximum``/``minimum``/``clip`` use LLVM's NaN-propagating
  ``llvm.maximum``/``llvm.minimum`` (TIR's max/min are a select that drops a NaN);
  ``not_equal`` and conversions to bool count NaN as different (TIR's ``!=`` is LLVM's
  *ordered* comparison and the simplifier rewrites ``!(a == b)`` into it); ``isnan``/
  ``isfinite`` test the bits (``tirx.isnan`` is a call the vectorizer scalarizes, and
  ``x != x`` folds to false); ``round`` is ``llvm.round``, halves away from zero (TIR's round
  is ``nearbyint``, halves to even); ``sign(nan)`` is 0 (topi's select);
* **IEEE floats and TVM's simplifier**: TVM's simplifier cancels ``x - x``, ``(x + y) - x``,
  ``x == x``, ``x * 0``, ``x < y || x >= y``, ``!(x <= y)`` for floats as for integers, wrong
  for NaN, infinities and -0; :func:`_ieee_guarded` hides one operand of a float
  subtraction or comparison whose operands share an input, and a zero constant of a product
  or quotient, behind :func:`_opaque`; bools combine by bitwise operators (TIR's ``||`` and
  ``!`` have such rules);
* **bool**: ``add``/``maximum`` are ``or``, ``multiply``/``minimum`` ``and`` (numpy's bool loops);
  comparisons of bools compare them as int8 (TVM emits float comparisons for ``bool``);
  ``bitwise_and``/``or``/``xor``/``not`` of bools are lowered as the logical operators;
* **shifts**: LLVM's shift by a count outside ``[0, bits)`` is poison (and x86 masks the
  count), so the count is guarded by a select and such a count gives numpy's result (which
  reads the count as unsigned): 0 for ``left_shift`` and an unsigned ``right_shift``, and a
  signed ``right_shift`` shifts by ``bits - 1`` instead (the sign fill, -1 or 0). The test
  of the count masks its high bits (see ``_count_in_range``). A signed ``left_shift`` shifts
  the unsigned integers of the same width and casts back: it wraps around as numpy's, and
  the CUDA C of a GPU target has no signed overflow (undefined behaviour in C);
* **casts** (``cast``, ``cast_like``, ``full``, ``full_like``) convert as numpy's ``astype``: to
  bool is ``x != 0``; floats truncate toward zero into integers, and a value that is NaN,
  infinite or out of range (the reference raises) gives x86's conversion: the "integer
  indefinite" ``INT_MIN`` for int32/int64, the maximum for uint32/uint64 (negative values
  included), the low bits of the int32 conversion for 8/16-bit targets (NaN gives 0); float64 to float16 rounds once (numpy), anything to
  bfloat16 goes through float32 (ml_dtypes);
* **clip** bounds are computed by the reference's own helper (cast, truncated, saturated);
* **fast math**: for a float32 operator with ``call.fast_math``, ``exp`` and ``sigmoid`` use
  ``fast_exp_f32`` and ``tanh`` ``fast_tanh_f32``; ``fast_exp``/``fast_tanh`` of float32 use
  them always; other dtypes are exact (``tirx.exp``, libm's ``tanh``: TVM's own LLVM
  ``tanh`` is ``(1 - exp(-2x)) / (1 + exp(-2x))``, relative error 1e-4 near 0). ``fast_exp_f32``
  is a polynomial of degree 6 (six multiply-adds) with ``ln 2`` split in two for the
  reduction and ``2**n`` applied by one AVX-512 ``vscalefps`` (which rounds a subnormal
  result once; relay's ``relay.x86_scalef`` operator, taking ``n`` as a float, rounded by a
  multiply-add; CUDA C and older CPUs multiply by two normal factors), so that it covers the
  whole float32 range: ``topi.fast_exp`` returns inf from x = 88.38 (exp is finite up to
  88.72) and 0 below -87.3 (flushing the subnormal results). ``fast_tanh_f32`` is
  ``x * P(x^2) / Q(x^2)`` with ``P`` and ``Q`` of degree 4 (relay's minimax fit, one
  operation fewer than ``topi.fast_tanh``'s Eigen function of degrees 6 and 3), exactly
  +-1 from ``|x| >= 7.99`` on (never beyond +-1: checked over every float32), NaN failing
  both tests. ``exp`` clamps
  its argument with selects that keep a NaN (``_clamp_keep_nan``), so NaN passes through
  without a test of its own: on ew_chain (two ``exp``, a ``tanh``) the loop went from 88 to
  66 vector instructions per 16 elements, 2.36 -> 2.10 ms in a same-process A/B (48 now,
  with the rounding by a multiply-add and ``exp(-v)`` folding its negation). ``sigmoid``
  is computed as the reference,
  ``e = exp(-|x|)``, ``1 / (1 + e)`` for ``x >= 0`` and ``e / (1 + e)`` below: it never
  overflows, and keeps the tiny results below -88 that ``1 / (1 + exp(-x))`` loses. NaN
  passes through all three. Measured against float64 numpy over 10**6 points
  (tests/backend/test_lower_elemwise.py asserts the bounds with a margin): fast exp on
  [-90, 90], relative error 8.5e-8 where the result is a normal float32 (1.07e-7 on a CPU
  without FMA), absolute 1.25e-45 (one step) among subnormal results, inf exactly where float32 overflows; fast tanh on [-20, 20],
  absolute (and relative) error 2.7e-7 (3.18e-7 over every float32, and ``tanh(x)`` is
  ``x`` up to 2e-4, subnormals included); fast sigmoid on [-20, 20] (and [-100, 100]),
  relative error 1.8e-7 down to x = -87. A product of two quotients (``tanh``, ``sigmoid``,
  a ``divide`` of known ranges) divides once (:mod:`relay.op.lowering.quotient`);
* **arange** computes ``start + i * step`` in its dtype (LLVM may fuse the float32/float64
  multiply-add: 1 ulp from the reference); its length must be static (the type checker knows
  it when the bounds are constants), else a CompileError;
* ``zeros``/``ones``/``full`` read nothing but their attributes (and the fill value); a result
  with no elements is a constant compute that reads nothing.

Code size: an operator that uses an input more than once binds it with ``tirx.Let`` (see
``_let``), so a fused chain does not repeat its producers, and the fast ``exp`` and ``tanh``
bind their intermediate values too. TVM's passes still substitute each bound value into its
uses, so compile time grows exponentially with the depth of a fused chain of such operators
(without barriers: 5 nested fast ``tanh`` took 8.7 s, 6 took 176 s); the lowering
therefore materializes a value :data:`relay.backend.lower.MAX_BOUND_DEPTH` binding
operators deep when another binding operator reads it, and an operator that binds a chain (fast ``exp``, ``sigmoid``:
:data:`relay.backend.lower.CHAIN_BINDINGS`) reads another chain's result materialized
(first calls, measured: 5 nested ``tanh`` 0.04 s, 5 nested ``exp`` or ``sigmoid`` 0.08 s;
``sigmoid(sigmoid(x))`` in one expression took 6.7 s). ``maximum``, ``round`` and the other
single-use operators stay linear.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relay.ir.types import TensorType
from relay.op.lowering.common import to_bfloat16
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


def _out(call: LoweringCall) -> tuple[tuple[Any, ...], str]:
    """The result's shape and dtype; a CompileError when a dimension is unknown (a ``?`` is
    the size variable in a function lowered with one, :func:`relay.backend.lower.
    kernel_shape`)."""
    from relay.backend.lower import kernel_shape
    from relay.errors import CompileError

    ty = call.out_type
    assert isinstance(ty, TensorType)
    try:
        shape = kernel_shape(ty)
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

    if dtype == "bfloat16":
        return to_bfloat16(value)
    return tirx.Cast(dtype, value) if dtype in _NARROW else value


def _round_bf16(x: Expr) -> Expr:
    """The float32 value ``x`` rounded to the nearest bfloat16 (ties to even), still float32.

    TVM computes bfloat16 in float32 and drops a ``float32(bfloat16(x))`` pair, which would
    keep ``x`` unrounded inside a fused kernel; rounded first, the pair is exact.

    An operator of relay's own, :data:`ROUND_BF16_OP`, which TVM's intrinsic lowering turns
    into bit operations after vectorization (:func:`_lower_round_bf16`): they read ``x``
    three times, and a ``tirx.Let`` in ``x`` (``floor_mod``'s) repeated that way was bound
    twice by the vectorizer, which rejects it (a bfloat16 ``where`` of a ``floor_mod``, found
    by a fuzzing review)."""
    from tvm import tirx

    x = _constant_load(x)
    if isinstance(x, tirx.FloatImm):  # (a constant rounded here)
        from ml_dtypes import bfloat16

        return _const(float(np.float32(x.value).astype(bfloat16)), _F32)
    _register_op(ROUND_BF16_OP, "relay_round_bf16", _lower_round_bf16, ("llvm", "cuda"))
    BINDINGS.roundings += 1
    return tirx.call_intrin(_F32, ROUND_BF16_OP, x)


ROUND_BF16_OP = "relay.round_bf16"
"""relay's TIR operator rounding float32 values to bfloat16 (see :func:`_round_bf16`)."""


def _lower_round_bf16(call: Any) -> Any:
    """:data:`ROUND_BF16_OP` as bit operations at its width: the bits plus 0x7FFF plus the
    lowest bit kept (ties to even), the low 16 bits cleared; a NaN unchanged."""
    import tvm
    from tvm import tirx

    (value,) = call.args
    lanes = tvm.DataType(str(call.ty)).lanes
    # (bound once: read three times, a chain of roundings would grow threefold per operator)
    x = tirx.Var("unrounded", str(call.ty))

    def typed(base: str) -> str:
        return base if lanes == 1 else f"{base}x{lanes}"

    def const(value: int, base: str) -> Any:
        c = tirx.const(value, base)
        return c if lanes == 1 else tirx.Broadcast(c, lanes)

    bits = tirx.reinterpret(typed("uint32"), x)
    lsb = tirx.bitwise_and(tirx.shift_right(bits, const(16, "uint32")), const(1, "uint32"))
    total = bits + const(0x7FFF, "uint32") + lsb
    rounded = tirx.bitwise_and(total, const(0xFFFF0000, "uint32"))
    magnitude = tirx.bitwise_and(tirx.reinterpret(typed("int32"), x), const(0x7FFFFFFF, "int32"))
    nan = magnitude > const(0x7F800000, "int32")
    return tirx.Let(x, value, tirx.Select(nan, x, tirx.reinterpret(typed(_F32), rounded)))


def _let(name: str, value: Expr, body: Callable[[Expr], Expr], bind: bool = True) -> Expr:
    """``body(v)`` with ``v`` bound to ``value`` by a ``tirx.Let``, so that ``value`` (which
    holds the inlined producers of a fused kernel) is emitted once however often ``body`` uses
    it; with ``bind`` false (a cheap ``value``, or a bfloat16 one: TVM's bfloat16 legalization
    mishandles casts inside a ``Let`` value), ``value`` itself is substituted.

    One binding per operator at most: TVM's LLVM code generator re-simplifies a bound value
    when it binds it, so nested ``Let`` values cost twice per level of a fused chain."""
    from tvm import te, tirx

    if not bind:
        return body(value)
    BINDINGS.count += 1
    var = te.var(name, _dt(value))
    return tirx.Let(var, value, body(var))


class _Bindings(threading.local):
    count = 0
    roundings = 0


BINDINGS = _Bindings()
"""How many ``Let`` bindings the rules have made (on this thread), and how many bfloat16
roundings (:func:`_round_bf16`, bound once lowered): the lowering reads both around each
rule to know which operators bind their input (see
:data:`relay.backend.lower.MAX_BOUND_DEPTH` and :data:`relay.backend.lower.MAX_ROUNDINGS`)."""


def _can_bind(call: LoweringCall) -> bool:
    """Whether ``call``'s arguments may be bound by ``tirx.Let``: not when a bfloat16 tensor is
    read or computed upstream in the kernel. TVM's bfloat16 legalization misses a cast inside
    a ``Let`` value: an inlined cast to bfloat16 there was a compile error, and a bfloat16
    input read there lost its conversion to float32 (its bits read as an integer: the fast
    ``exp`` of 1.0 gave inf, found by a fuzzing review)."""
    return all(str(t.dtype) != "bfloat16" for t in _upstream(_flatten(call.args)).values())


def materialize_bfloat16_reads(call: LoweringCall) -> None:
    """Ask for ``call``'s arguments materialized where a bfloat16 value is read or computed
    upstream of them in the kernel (see
    :meth:`~relay.op.registry.LoweringCall.materialize`), for a rule whose value is a tuple
    reduction (a ``te.comm_reducer`` of several values: integer ``power``, ``argmax``): TVM's
    bfloat16 legalization does not reach the loads inlined into such a reduction, which read
    a bfloat16 value's bits as its conversion (``power(cast(x, "int32"), 2)`` of a bfloat16
    ``x = 1.0`` gave 264257536, ``argmax`` of the same cast took -2 for the largest) or
    stopped TVM ("BF16 needs to be storaged lowered first"; found by a fuzzing review).
    Materialized, the conversion is a stage of its own and the reduction reads its buffer."""
    if not _can_bind(call):
        for i in range(len(call.args)):
            call.materialize(i)


def _upstream(args: Sequence[Any]) -> dict[Any, Any]:
    """The stages that the tensors among ``args`` are computed from, themselves included and
    the inputs (placeholders): each stage's operation mapped to the first of its tensors
    reached."""
    from tvm import te

    found: dict[Any, Any] = {}  # (TVM objects hash and compare by identity of the node)
    stack = [t for t in args if isinstance(t, te.Tensor)]
    while stack:
        t = stack.pop()
        if t.op not in found:
            found[t.op] = t
            stack.extend(t.op.input_tensors)
    return found


def _flatten(args: Any) -> list[Any]:
    if isinstance(args, tuple | list):
        return [t for a in args for t in _flatten(a)]
    return [args]


def _llvm(name: str, *args: Expr) -> Expr:
    """The pure LLVM intrinsic ``llvm.<name>`` on ``args`` (of the result's dtype); for a GPU
    target (no LLVM intrinsics in CUDA C), the same function in CUDA terms: ``maximum`` and
    ``minimum`` propagate a NaN by testing the bits, ``round`` is CUDA's ``round``/``roundf``
    (halves away from zero, as ``llvm.round``)."""
    from tvm import tirx

    from relay.backend.lower import lowering_target

    if lowering_target() == "llvm":
        return _pure_llvm(_dt(args[0]), name, *args)
    dtype = _dt(args[0])
    if name == "round":
        return tirx.call_pure_extern(dtype, "roundf" if dtype == "float32" else "round", *args)
    a, b = args
    pick = tirx.max(a, b) if name == "maximum" else tirx.min(a, b)
    return tirx.Select(_isnan(a), a, tirx.Select(_isnan(b), b, pick))


def _wide(dtype: str) -> str:
    """The dtype the math of ``dtype`` is done in."""
    return _F32 if dtype in _NARROW else dtype


def _reinterpret(dtype: str, x: Expr) -> Expr:
    """``x``'s bits as ``dtype``; a constant's folded here (TVM's CUDA C for the
    reinterpretation of a constant takes the address of a literal, which nvcc rejects)."""
    from tvm import tirx

    x = _constant_load(x)
    if isinstance(x, tirx.FloatImm | tirx.IntImm):
        from relay.backend.runtime import numpy_dtype

        value = np.array(x.value, dtype=numpy_dtype(_dt(x))).view(numpy_dtype(dtype))
        return tirx.const(value.item(), dtype)
    return tirx.reinterpret(dtype, x)


def _constant_load(x: Expr) -> Expr:
    """``x``, or the constant it reads when it reads a stage holding one value everywhere
    (a scalar constant of the group: :func:`relay.backend.lower._filled`), which the schedule
    inlines only after lowering: ``maximum(x, 0.5f)`` for CUDA reinterpreted the literal
    itself, and nvcc rejected ``&(0x1p-1f)``."""
    from tvm import te, tirx
    from tvm.ir.expr import Call

    if isinstance(x, Call) and str(x.op.name) == "te.tensor_load":
        op = x.args[0].op
        if isinstance(op, te.ComputeOp) and len(op.body) == 1:
            body = op.body[0]
            if isinstance(body, tirx.FloatImm | tirx.IntImm):
                return body
    return x


def _float_bits(x: Expr) -> tuple[Expr, int, int]:
    """The bits of the float32/float64 value ``x`` without the sign, as a (non-negative)
    signed integer, and the exponent mask. Signed: TVM's simplifier rewrote an unsigned
    ``bits < mask`` under a select of it into a subtraction from ``0u``, which it then rejects
    (``where(isfinite(x), cast(isfinite(x), "int32"), y)``, found by a fuzzing review)."""
    if _dt(x) == "float64":
        i64 = "int64"
        bits = _reinterpret(i64, x) & _const(0x7FFFFFFFFFFFFFFF, i64)
        return bits, 0x7FF0000000000000, 64
    bits = _reinterpret("int32", x) & _const(0x7FFFFFFF, "int32")
    return bits, 0x7F800000, 32


def _isnan(x: Expr) -> Expr:
    """Whether the float32/float64 value ``x`` is NaN, on its bits: TVM's vectorizer
    scalarizes ``tirx.isnan`` (a call), and its simplifier folds ``x != x`` to false."""
    bits, exponent, width = _float_bits(x)
    return bits > _const(exponent, f"int{width}")


def _isfinite(x: Expr) -> Expr:
    """Whether the float32/float64 value ``x`` is finite (see _isnan)."""
    bits, exponent, width = _float_bits(x)
    return bits < _const(exponent, f"int{width}")


def _read(t: Any, shape: tuple[Any, ...], index: Sequence[Any]) -> Expr:
    """``t`` read at the result index ``index`` under numpy broadcasting to ``shape`` (the
    size variable of a dynamic function is never 1)."""
    from relay.backend.lower import static_dim

    dims = [static_dim(d) for d in t.shape]
    lead = len(shape) - len(dims)
    return t(*[0 if d == 1 else index[lead + k] for k, d in enumerate(dims)])


def _empty(shape: Sequence[Any]) -> bool:
    """A static shape with no elements (the size variable of a dynamic function is not 0)."""
    return all(isinstance(d, int) for d in shape) and math.prod(shape) == 0


def _compute(
    shape: tuple[Any, ...], dtype: str, body: Callable[[Sequence[Any]], Expr], name: str
) -> Any:
    """``te.compute`` of ``body(index)`` over ``shape``; with no elements, a constant."""
    from tvm import te

    if _empty(shape):
        return te.compute(shape, lambda *i: _const(0, dtype), name=name)
    return te.compute(shape, lambda *i: body(i), name=name)


def _map(call: LoweringCall, fn: ScalarFn, *, widen: bool = True) -> Any:
    """The elementwise result ``fn(*args)`` with numpy broadcasting. With ``widen``, narrow
    float arguments are widened to float32 and a narrow float result rounded back once.

    A bfloat16 result is rounded before its cast (``common.to_bfloat16``): TVM computes
    bfloat16 in float32 and drops the cast pair where a fused kernel reads the value back,
    so ``floor(x - 0.001)`` of a bfloat16 ``x = 1`` was 0 (``1 - 0.001`` is 1 in bfloat16)
    and ``tanh(x)`` cast to float32 kept float32's digits (found by a fuzzing review)."""
    from tvm import tirx

    shape, dtype = _out(call)
    dtypes = [_dtype(call, k) for k in range(len(call.args))]
    rounded = dtype == "bfloat16" and not (
        call.name in _EXACT_IN_ITS_DTYPE and all(d == dtype for d in dtypes)
    )

    def body(index: Sequence[Any]) -> Expr:
        values = [_read(t, shape, index) for t in call.args]
        if widen:
            values = [_up(v, d) for v, d in zip(values, dtypes, strict=True)]
        out = fn(*values)
        if _dt(out) != dtype:
            out = to_bfloat16(out) if rounded else tirx.Cast(dtype, out)
        return out

    return _compute(shape, dtype, body, call.name.replace(".", "_"))


_EXACT_IN_ITS_DTYPE = frozenset(
    {"negative", "abs", "sign", "floor", "ceil", "trunc", "round", "maximum", "minimum"}
)
"""Operators whose result is a value of their arguments' float type (a sign changed, one
of the arguments, an integer, -1, 0 or 1): a bfloat16 one is cast without rounding. Each
rounding reads its value three times, bound by a ``tirx.Let`` whose value holds the
roundings before it, and TVM's LLVM code generator simplifies each bound value as it binds
it: a bfloat16 ``exp(negative(...))`` chained 4 deep took 52 s to compile (3 deep 0.6 s)."""


_ARITH: dict[str, Callable[[Expr, Expr], Expr]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
}


def _wrapping(kind: str, a: Expr, b: Expr, dtype: str) -> Expr:
    """``a + b``, ``a - b`` or ``a * b`` (``kind`` "add", "subtract", "multiply") on integers of
    ``dtype``, wrapping around on overflow as numpy does.

    TVM's simplifier takes integer arithmetic not to overflow (it folds ``x + 1 < x`` to false,
    and ``0 - x`` of unsigned ``x`` to 0) and its LLVM code marks 32/64-bit arithmetic ``nsw``
    (signed) or ``nuw`` (unsigned), poison where it overflows. An integer is therefore
    computed from its bits zero-extended to the unsigned type of twice its width (uint128 for
    64 bits), where no result overflows (a difference is ``a + (~b + 1)``), and the low bits
    are kept; LLVM narrows the arithmetic back (an int32 ``x * 3 + y`` is ``vpslld``,
    ``vpaddd``, ``vpaddd``). uint64 arithmetic in 64 bits gave poison: ``x - 0`` (``~0 + 1``
    overflows) was wrong, and LLVM dropped the zero test of a divisor that was a ``nuw``
    product, so the process died of SIGFPE (found by a fuzzing review). For CUDA, whose C
    wraps unsigned arithmetic, 64-bit integers are computed in 64 bits (int64 overflow is
    undefined there, as in C).

    No conversion here is a cast to or from int32 or int64 (TVM's index types). The simplifier
    revisits the operand of such a cast (``CanonicalSimplifier``'s cast rule mutates it, then
    the rewriter mutates it again), so a chain of them compiled in time exponential in its
    depth: an int32 ``x * 3 + x`` nested 6 deep took 85 s. It also takes a truncation to int32
    to keep the value, and folded ``(x * 3) % 3`` to 0 where ``x * 3`` wraps (found by a
    fuzzing review). The signed operands and the signed result therefore go through
    :func:`_int_reinterpret`."""
    from tvm import tirx

    from relay.backend.lower import lowering_target

    op = _ARITH[kind]
    if dtype in ("int64", "uint64") and lowering_target() != "llvm":
        # CUDA C: unsigned arithmetic wraps; int64 overflow is left undefined, as C does
        if dtype == "uint64" and kind == "subtract":
            return a + (tirx.bitwise_not(b) + _const(1, dtype))
        return op(a, b)
    bits = _bits(dtype)
    unsigned, wide, mask = f"uint{bits}", f"uint{2 * bits}", (1 << bits) - 1

    def widen(x: Expr, negate: bool = False) -> Expr:  # the bits of x (or of -x) in wide
        if isinstance(x, tirx.IntImm):
            return _const((-int(x.value) if negate else int(x.value)) & mask, wide)
        u = _int_reinterpret(x, unsigned) if _is_signed(dtype) else x
        if negate:
            return tirx.Cast(wide, tirx.bitwise_not(u)) + _const(1, wide)
        return tirx.Cast(wide, u)

    if isinstance(a, tirx.IntImm) and isinstance(b, tirx.IntImm):
        low = _const(op(int(a.value), int(b.value)) & mask, unsigned)
    else:
        total = widen(a) + widen(b, negate=True) if kind == "subtract" else op(widen(a), widen(b))
        low = tirx.Cast(unsigned, tirx.bitwise_and(total, _const(mask, wide)))
    return _int_reinterpret(low, dtype) if _is_signed(dtype) else low


def _int_reinterpret(v: Expr, dtype: str) -> Expr:
    """The integer ``v`` reinterpreted as the integer ``dtype`` of its width (int32 as
    uint32 and back), in a form TVM's simplifier does not look into: on the CPU a funnel
    shift of ``v`` (and 0) by 0, ``llvm.fshl``, which LLVM folds away; on CUDA, for 32 bits,
    ``__funnelshift_l``, and for 64 bits ``__double_as_longlong(__longlong_as_double(v))``.
    (A cast would not do: see :func:`_wrapping`; and TVM fails on the cast of a negative
    constant to an unsigned type, which the simplifier can make: on CUDA, an int64 ``x - x
    - 1`` converted to uint64 ran on the CPU.) CUDA's 8- and 16-bit values convert by a
    cast, which the simplifier leaves alone: it substitutes constants and reasons about
    truncations only for int32 and int64.

    A reinterpretation to float32 and back, tried first as the int32 barrier, failed to
    compile where the simplifier folded ``v`` to the constant 0 (``x - x``): TVM's LLVM code
    generator rejects a reinterpretation of the literal 0, and nvcc takes no address of a
    literal."""
    from tvm import tirx

    from relay.backend.lower import lowering_target

    src = _dt(v)
    if isinstance(v, tirx.IntImm) and src != dtype:  # the bits read back as dtype
        bits = _bits(dtype)
        value = int(v.value) & ((1 << bits) - 1)
        return _const(value - (value >> (bits - 1) << bits) if _is_signed(dtype) else value, dtype)
    zero = _const(0, src)  # (v once: a chain of integer operators must not double)
    if lowering_target() == "llvm":  # fshl(a, b, 0) is a
        return _pure_llvm(dtype, "fshl", v, zero, zero)
    if _bits(dtype) == 32:
        return tirx.call_pure_extern(dtype, "__funnelshift_l", zero, v, zero)  # (hi: v)
    if _bits(dtype) == 64:  # (no 64-bit funnel shift: the bits through a double, two moves)
        to_bits, to_double = _CUDA_BITS["float64"]
        as_double = tirx.call_pure_extern("float64", to_double, v)
        signed = tirx.call_pure_extern("int64", to_bits, as_double)
        return signed if dtype == "int64" else tirx.Cast(dtype, signed)  # (C's unsigned)
    return tirx.Cast(dtype, v)


def int_compare(op: Callable[[Expr, Expr], Expr], a: Expr, b: Expr) -> Expr:
    """The comparison ``op(a, b)`` of two values, with int32 operands hidden from TVM's
    simplifier (:func:`_int_reinterpret`): it folds ``x == -2**31`` and ``x <= -2**31`` of
    an int32 ``x`` to false (found by a fuzzing review; int64 and the other comparisons are
    right). LLVM folds the hiding away; the constant may also come from a scalar stage
    inlined after lowering, or from a select or a minimum that the simplifier folds."""
    if _dt(a) in ("int32", "int64"):
        a, b = _int_reinterpret(a, _dt(a)), _int_reinterpret(b, _dt(b))
    return op(a, b)


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
    if _is_float(dtype):  # any bit but the sign set: NaN counts (TIR's != is ordered)
        bits, _, width = _float_bits(x)
        return tirx.NE(bits, _const(0, f"int{width}"))
    return tirx.NE(x, _const(0, dtype))


def _convert(x: Expr, src: str, dst: str) -> Expr:
    """``x`` (a value of ``src``) converted to ``dst`` as numpy's ``astype`` (see the module
    doc: bool is nonzero, floats truncate into integers, narrow floats go through float32)."""
    from tvm import tirx

    if src == dst:
        return x
    if dst == "bool":
        return _nonzero(_up(x, src), src)
    if src in _NARROW:
        x, src = _up(x, src), _F32  # exact
    if dst == "bfloat16":  # through float32, as ml_dtypes converts
        return _down(x if src == _F32 else tirx.Cast(_F32, x), dst)
    if dst == "float16" and src == "bool":
        x = tirx.Cast(_F32, x)
    if _is_int(src) and _is_int(dst):
        return _int_convert(x, src, dst)
    if not _is_float(src) and dst in ("float16", "float32", "float64"):
        # the integer or bool may be a constant only TVM's simplifier finds (``less(i, i)``),
        # and the float is then folded into its consumer as a literal (see _ieee_guarded)
        return _opaque(tirx.Cast(dst, x))
    return tirx.Cast(dst, x)  # float64 to float16 rounds once, as numpy does


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _int_convert(x: Expr, src: str, dst: str) -> Expr:
    """The integer ``x`` of ``src`` as the integer ``dst``, numpy's way: sign- or
    zero-extended when wider, its low bits when narrower. A change of signedness goes
    through :func:`_int_reinterpret`: TVM's bound analysis takes a cast of an unsigned value
    to a signed type to be non-negative (``abs(cast(x, "int32"))`` of a uint32 ``x`` gave
    negative values, ``less(cast(x, "int64"), 0)`` was false), and TVM fails on the cast of a
    negative constant to an unsigned type (``cast(clip(x, -2, -2), "uint32")``); both found
    by a fuzzing review. A narrowing keeps the low bits by a mask first, so that a constant
    out of ``dst``'s range never reaches a cast either."""
    from tvm import tirx

    sbits, dbits = _bits(src), _bits(dst)
    if dbits > sbits:  # extend in src's signedness, then reinterpret
        wide = f"{'int' if _is_signed(src) else 'uint'}{dbits}"
        x = tirx.Cast(wide, x)
        return x if wide == dst else _int_reinterpret(x, dst)
    unsigned = f"uint{sbits}"
    u = _int_reinterpret(x, unsigned) if _is_signed(src) else x
    if dbits < sbits:
        u = tirx.Cast(f"uint{dbits}", tirx.bitwise_and(u, _const((1 << dbits) - 1, unsigned)))
    return u if _dt(u) == dst else _int_reinterpret(u, dst)


# ---- fast math ----------------------------------------------------------------------------------

# exp(r) for r in [-ln 2 / 2, ln 2 / 2], highest degree first: a polynomial of degree 6
# fitted to exp's relative error there (Lawson's iterations of weighted least squares on
# Chebyshev nodes, rounded to float32; 2.0e-9 before rounding), evaluated by Horner's rule
_EXP_POLY = (
    0.001384611940011382,
    0.00837414339184761,
    0.041667960584163666,
    0.16666431725025177,
    0.4999999403953552,
    1.0,
    1.0,
)
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_LOG2E = 1.44269504088896341
# exp(89) overflows float32 (log(FLT_MAX) = 88.72); exp(-104) is below half the least subnormal
_EXP_HI = 89.0
_EXP_LO = -104.0

# tanh(x) = x * P(x^2) / Q(x^2) on [-7.99, 7.99], P and Q of degree 4: the minimax rational
# function of the relative error (Lawson's iteration on 10^5 points, float64: 6.6e-9; 2.9e-8
# with the coefficients rounded to float32), with P(0) = Q(0) = 1 (tanh(x) is x for tiny x)
_TANH_ALPHA = (
    1.5312094703290313e-08,
    2.1951906091999263e-05,
    0.003575047943741083,
    0.1344740390777588,
    1.0,
)
_TANH_BETA = (
    8.555282988709223e-07,
    0.0003416946856305003,
    0.02617756463587284,
    0.4678073227405548,
    1.0,
)
_TANH_QUOTIENT_SCALE = 2.0**-8
"""The factor of both polynomials in :func:`tanh_quotient`, exact (a power of two): its ``Q``
runs from ``2^-8`` at 0 to 0.94 at the clamp, the range products of quotients need
(:data:`TANH_DENOMINATOR`). The standalone ``tanh`` keeps ``P(0) = Q(0) = 1``, so that
``x * P`` does not underflow for tiny ``x`` (``tanh(1e-45)`` is 1e-45)."""
_TANH_ONE = 7.99
"""Where ``fast_tanh_f32`` is exactly +-1: its rational function is 0.9999998 at 7.99,
reaches 1.0 at 8.013 and overshoots from 8.121 (float32; never beyond 1 below 7.99, every
input checked); true tanh there is 1 - 2.3e-7."""


def _horner(x: Expr, coefficients: Sequence[float], negated: bool = False) -> Expr:
    """The polynomial of ``coefficients`` (highest degree first) at ``x`` by Horner's rule;
    ``negated``: at ``-x``, as ``c - a * x`` (rounded as ``a * (-x) + c``)."""
    acc = _const(coefficients[0], _F32)
    for c in coefficients[1:]:
        acc = _const(c, _F32) - acc * x if negated else acc * x + _const(c, _F32)
    return acc


def _pow2(n: Expr) -> Expr:
    """``2.0 ** n`` as float32, for an int32 ``n`` in [-126, 127]."""
    from tvm import tirx

    return tirx.reinterpret(_F32, (n + _const(127, "int32")) << _const(23, "int32"))


def _ldexp(x: Expr, n: Expr) -> Expr:
    """``x * 2.0 ** n`` for float32 ``x`` in [0.5, 2) and an int32 ``n`` in [-150, 128],
    rounded once (subnormal results included), where the CPU has no ``vscalefps`` (an LLVM
    CPU without AVX-512, or CUDA C; with AVX-512 the fast ``exp`` uses :func:`_scalef`):
    ``2 ** n`` as two normal factors ``2 ** (n // 2) * 2 ** (n - n // 2)``, the first product
    exact. LLVM turns a vector ``llvm.ldexp`` into a call of libm's ``ldexpf`` per lane
    without AVX-512, and CUDA C has no spelling of it."""
    half = n >> _const(1, "int32")
    return x * _pow2(half) * _pow2(n - half)


def _clamp_keep_nan(x: Expr, lo: float, hi: float) -> Expr:
    """``x`` clamped to ``[lo, hi]`` (float32 constants), a NaN ``x`` left NaN: each bound is
    a select that keeps ``x`` when the comparison fails, which LLVM emits as one
    ``vminps``/``vmaxps`` with ``x`` as the operand x86 returns for a NaN (``tirx.min``'s
    order returns the bound, so a NaN needed a test of its own)."""
    from tvm import tirx

    top, bottom = _const(hi, _F32), _const(lo, _F32)
    below = tirx.Select(top < x, top, x)
    return tirx.Select(below < bottom, bottom, below)


def fast_exp_f32(
    x: Expr,
    bind: bool = True,
    then: Callable[[Expr], Expr] | None = None,
    negate: bool = False,
) -> Expr:
    """An approximation of ``exp`` of the float32 value ``x`` (relative error below 1e-7
    where the result is a normal float32; inf above log(FLT_MAX), subnormals and 0 below, NaN
    kept), vectorizable: no libm call. ``bind``: see _let; with ``bind`` the clamped
    argument, ``n`` and ``r`` are bound too, in a chain of ``Let`` in the body of ``x``'s.
    ``negate``: ``exp(-x)``, with the bits of ``exp`` of ``-x`` but for a NaN's sign (see below).

    ``exp(x) = 2 ** n * exp(r)`` with ``n`` the integer nearest ``x / ln 2`` and
    ``r = x - n ln 2`` in [-ln 2 / 2, ln 2 / 2] (``ln 2`` split in two, Cody and Waite's
    reduction, so that the first product is exact), where a polynomial of degree 6
    (:data:`_EXP_POLY`) approximates ``exp(r)``: six multiply-adds. Cephes' ``expf``
    (``topi.fast_exp``'s), ``1 + r + r**2 P(r)`` with ``P`` of degree 5, took eight
    operations for the same error (8.3e-8 against 8.5e-8 with FMA; without FMA, 7.9e-8
    against 1.1e-7).

    Rounding ``x / ln 2`` to ``n``: for an LLVM CPU with AVX-512, ``x * log2(e) + 1.5 * 2**23``
    in one multiply-add, rounded to an integer by the addition itself (the sum is in
    [2**23, 2**24), where floats are integers), less ``1.5 * 2**23`` again (the multiply-add
    is ``llvm.fma``: one rounding at every optimization level, and a call TVM's simplifier
    does not look into, so that it does not cancel the two), and the result scaled by ``2 ** n`` with ``n`` as a float (:func:`_scalef`, one ``vscalefps``):
    two instructions for the rounding where converting to an int32 and back took three.
    Elsewhere ``n`` is rounded straight to an int32 (:func:`_round_to_int32`), made a float
    once for the reduction, and the same int32 scales the result (:func:`_ldexp`).

    ``negate`` folds a negation into the constants: the argument is clamped to the negated
    bounds, ``n`` rounds ``x * -log2(e)``, and with ``r = -(x + n ln 2)`` the polynomial is
    evaluated at ``-r`` by multiply-subtracts (``c - a * r``), each rounded as the
    multiply-add at ``r`` is: the same bits as ``exp(-x)`` without the ``-x`` (a
    ``vxorps``; ``exp(-y * y)`` and ``sigmoid`` have one).

    ``then``: ``then(e)`` with the result bound to ``e``, at the end of the same chain (a
    caller using ``exp(x)`` more than once, as ``sigmoid``, which otherwise repeats the
    chain or binds it inside another binding's value).

    Each use of a bound value counts: TVM's simplifier substitutes bound values into their
    uses, so a deep chain whose values are used often is a large expression to it again
    (``r`` is used 6 times): the chain stays short, and values are not bound inside other
    values (ew_chain's kernel compiled in 1.4 s with ``r`` unbound, in 0.03 s now)."""
    from tvm import tirx

    from relay.backend.lower import lowering_target, lowering_vector_ldexp

    f32 = _F32
    sign = -1.0 if negate else 1.0
    lo, hi = (-_EXP_HI, -_EXP_LO) if negate else (_EXP_LO, _EXP_HI)
    scalef = lowering_target() == "llvm" and lowering_vector_ldexp()

    def from_r(scale: Callable[[Expr], Expr]) -> Callable[[Expr], Expr]:
        def poly(r: Expr) -> Expr:
            p = _horner(r, _EXP_POLY, negate)
            e = scale(p)  # (n in [-150, 128])
            return e if then is None else _let("e", e, then, bind)

        return poly

    def reduce(xc: Expr, nf: Expr, scale: Callable[[Expr], Expr]) -> Expr:
        # r = x - n ln 2 in two steps (the first product is exact); negated: -r
        hi_, lo_ = nf * _const(_LN2_HI, f32), nf * _const(_LN2_LO, f32)
        r = xc + hi_ + lo_ if negate else xc - hi_ - lo_
        return _let("r", r, from_r(scale), bind)

    def from_xc(xc: Expr) -> Expr:
        log2e = _const(sign * _LOG2E, f32)
        if scalef:  # (llvm.fma: one rounding at every optimization level)
            rounder = _const(_ROUNDER, f32)
            nf = _pure_llvm(f32, "fma", xc, log2e, rounder) - rounder

            def by_float(n: Expr) -> Expr:
                return reduce(xc, n, lambda p: _scalef(p, n))

            return _let("n", nf, by_float, bind)

        def by_int(n: Expr) -> Expr:
            return reduce(xc, tirx.Cast(f32, n), lambda p: _ldexp(p, n))

        return _let("n", _round_to_int32(xc * log2e), by_int, bind)  # round(x / ln 2)

    def from_x(xv: Expr) -> Expr:
        return _let("xc", _clamp_keep_nan(xv, lo, hi), from_xc, bind)

    return _let("x", x, from_x, bind)


_ROUNDER = 12582912.0
"""1.5 * 2 ** 23: ``v + _ROUNDER - _ROUNDER`` is ``v`` rounded to the nearest integer (ties to
even) for ``|v| < 2 ** 22``, since floats in [2 ** 23, 2 ** 24) are the integers."""


def _scalef(x: Expr, n: Expr) -> Expr:
    """``x * 2.0 ** n`` for float32 ``x`` and an integral float32 ``n`` in [-150, 128],
    rounded once (subnormal results included), for an LLVM CPU with AVX-512: the operator
    :data:`SCALEF_OP`, one ``vscalefps`` once vectorized 16 wide."""
    from tvm import tirx

    _register_op(SCALEF_OP, "relay_x86_scalef", _lower_scalef)
    return tirx.call_intrin(_F32, SCALEF_OP, x, n)


SCALEF_OP = "relay.x86_scalef"
"""A TIR operator of relay's own: ``x * 2 ** n`` of float32 values (see :func:`_scalef`).

LLVM's ``llvm.ldexp`` takes an integer exponent (``vcvtdq2ps`` then ``vscalefps`` on x86),
and AVX-512's ``vscalefps`` intrinsic takes a write mask and a rounding mode, scalar
operands that TVM's vectorizer would widen to vectors with the rest. So the operator is
vectorized as any elementwise call (``TVectorizable``), and only TVM's intrinsic lowering,
after vectorization, turns it into LLVM's intrinsic for its width
(:func:`_lower_scalef`)."""


def _pure_llvm(dtype: str, name: str, *args: Expr) -> Expr:
    """LLVM's pure intrinsic ``llvm.<name>`` of ``args``, with result ``dtype``, as relay's
    TIR operator ``relay.llvm_<name>`` (dots as underscores; :data:`PURE_LLVM_PREFIX`),
    which TVM's intrinsic lowering turns into ``tirx.call_llvm_pure_intrin`` after
    vectorization.

    Not ``call_llvm_pure_intrin`` itself: TVM's vectorizer rebuilds such a call at every
    visit, vector or not (its first argument, the intrinsic's name, is set apart and the
    argument list made anew), so a product of two loop-invariant values over one counts as
    changed, and the vectorizer then visits the product's operands a second time; a
    ``tirx.Let`` among them (fast ``exp``'s) is then bound twice, which its check rejects
    ("Let cannot bind the same var to two different values"). ``2 * exp(c) + a`` with
    ``c`` broadcast along the vectorized axis failed to compile so (found by a fuzzing
    review). An operator of relay's own is rebuilt only when an argument changes."""
    from tvm import tirx

    op = PURE_LLVM_PREFIX + name.replace(".", "_")
    _register_op(op, op.replace(".", "_"), functools.partial(_lower_pure_llvm, name))
    return tirx.call_intrin(dtype, op, *args)


PURE_LLVM_PREFIX = "relay.llvm_"
"""The names of the operators of :func:`_pure_llvm`."""


def _lower_pure_llvm(name: str, call: Any) -> Any:
    """An operator of :func:`_pure_llvm` as the LLVM intrinsic it stands for, at its width."""
    from tvm import tirx

    return tirx.call_llvm_pure_intrin(str(call.ty), f"llvm.{name}", *call.args)


_OPS_LOCK = threading.Lock()
_OPS_REGISTERED: set[str] = set()


def _register_op(
    op: str, printed: str, lower: Callable[[Any], Any], targets: Sequence[str] = ("llvm",)
) -> None:
    """Register relay's pure, vectorizable TIR operator ``op`` with TVM (once per process):
    printed as ``T.<printed>`` by ``.script()``, lowered for ``targets`` by ``lower`` (a call
    to the operator, after vectorization, to the expression that computes it)."""
    with _OPS_LOCK:
        if op in _OPS_REGISTERED:
            return
        from tvm import tirx
        from tvm.ir import register_op_attr

        register_op_attr(op, "TCallEffectKind", tirx.CallEffectKind.Pure.value)
        register_op_attr(op, "TVectorizable", True)
        register_op_attr(op, "TScriptPrinterName", printed)
        for target in targets:
            tirx.register_intrin_lowering(op, target, f=lower, level=10)
        _OPS_REGISTERED.add(op)


def _lower_scalef(call: Any) -> Any:
    """:data:`SCALEF_OP` as LLVM intrinsics, for its vector width: AVX-512's
    ``vscalefps`` on 16 lanes (all lanes written, the current rounding mode); otherwise
    (the scalar tail of a loop that does not divide by 16, another width) ``llvm.ldexp`` of
    ``n`` converted to int32, which is exact for an integral ``n``."""
    import tvm
    from tvm import tirx

    x, n = call.args
    dtype = str(call.ty)
    lanes = tvm.DataType(dtype).lanes
    if lanes == 16:
        return tirx.call_llvm_pure_intrin(
            dtype, "llvm.x86.avx512.mask.scalef.ps.512", x, n, x,
            _const(-1, "int16"), _const(4, "int32"),
        )  # fmt: skip
    ints = "int32" if lanes == 1 else f"int32x{lanes}"
    return tirx.call_llvm_pure_intrin(dtype, "llvm.ldexp", x, tirx.Cast(ints, n))


def _round_to_int32(v: Expr) -> Expr:
    """The int32 nearest the float32 ``v`` (|v| < 2 ** 31): ``llvm.lrint`` for LLVM, one
    conversion instruction under the default rounding mode (``cvtps2dq`` on x86, ``frintx``
    and ``fcvtzs`` on AArch64); ``floor(v + 0.5)`` converted for CUDA C."""
    from tvm import tirx

    from relay.backend.lower import lowering_target

    if lowering_target() == "llvm":
        return _pure_llvm("int32", "lrint", v)
    return tirx.Cast("int32", tirx.floor(v + _const(0.5, _F32)))


def fast_tanh_f32(x: Expr, bind: bool = True) -> Expr:
    """An approximation of ``tanh`` of the float32 value ``x`` (absolute error below
    3.2e-7), never beyond +-1, NaN kept. ``bind``: see _let.

    The rational function of :data:`_TANH_ALPHA` and :data:`_TANH_BETA` on ``x`` itself, and
    exactly +-1 from ``|x| >=`` :data:`_TANH_ONE` on: the function overshoots 1.0 from 8.121
    (measured over every float32), so beyond 7.99 it is replaced rather than clamped
    afterwards (as Eigen does), which would need its value bound once more: TVM's simplifier
    substitutes bound values into their uses, so each nested binding multiplies the
    expression it sees (4 levels took 0.2 s to compile, these 2 take 0.02). A NaN fails both
    comparisons and stays NaN; an infinite ``x`` makes the function NaN, replaced by +-1."""
    from tvm import tirx

    one = _const(1.0, _F32)
    edge = _const(_TANH_ONE, _F32)

    def from_x(xv: Expr) -> Expr:
        def ratio(x2: Expr) -> Expr:
            n, d = _tanh_terms(xv, x2, 1.0)
            return tirx.Select(edge <= xv, one, tirx.Select(xv <= -edge, -one, n / d))

        return _let("x2", xv * xv, ratio, bind)

    return _let("x", x, from_x, bind)


def _tanh_terms(x: Expr, x2: Expr, scale: float) -> tuple[Expr, Expr]:
    """The numerator and denominator of the rational function for ``tanh`` at ``x``
    (``x2 = x * x``; :data:`_TANH_ALPHA`, :data:`_TANH_BETA`), both times ``scale``, a power
    of two: every value of Horner's rule is scaled exactly, so the quotient's bits are the
    same whatever the scale, where nothing underflows."""
    alpha = [c * scale for c in _TANH_ALPHA]
    beta = [c * scale for c in _TANH_BETA]
    return _horner(x2, alpha) * x, _horner(x2, beta)


def tanh_quotient(x: Expr, bind: bool, then: Callable[[Expr, Expr], Expr]) -> Expr:
    """``then(n, d)`` where ``n / d`` approximates ``tanh`` of the float32 value ``x`` (for
    :mod:`relay.op.lowering.quotient`): the rational function of :func:`fast_tanh_f32` at
    ``x`` clamped to ``[-c, c]``, ``c =`` :data:`_TANH_ONE`, NaN kept. Within 1.8e-7 of
    :func:`fast_tanh_f32` (where that one is exactly +-1, this one is the function at
    ``+-c``: 0.9999998, 1 - 2.3e-7 being ``tanh(c)``); ``|n| <= d`` and ``d`` is in
    :data:`TANH_DENOMINATOR`. The clamp is two ``vminps``/``vmaxps`` where the selects of
    :func:`fast_tanh_f32` are two comparisons and two blends."""
    edge = _TANH_ONE

    def from_x(xv: Expr) -> Expr:
        def from_xc(xc: Expr) -> Expr:
            def scaled(x2: Expr) -> Expr:
                return then(*_tanh_terms(xc, x2, _TANH_QUOTIENT_SCALE))

            return _let("x2", xc * xc, scaled, bind)

        return _let("xc", _clamp_keep_nan(xv, -edge, edge), from_xc, bind)

    return _let("x", x, from_x, bind)


TANH_DENOMINATOR = (0.00390625, 0.95)
"""Bounds of the denominator of :func:`tanh_quotient` (``2 ** -8`` at 0, rising with ``x * x``
to 0.9401 at the clamp), whose numerator is at most the denominator in magnitude: a
product of two merges (``(2 ** -8) ** 2`` is :data:`relay.op.lowering.quotient.
MIN_DENOMINATOR_PRODUCT`)."""


def exp_expr(x: Expr, fast: bool, bind: bool = True) -> Expr:
    """``exp(x)`` of a float value; approximated (``fast_exp_f32``) when ``fast`` (which the
    caller sets only for float32 operators)."""
    from tvm import tirx

    return fast_exp_f32(x, bind) if fast else tirx.exp(x)


def tanh_expr(x: Expr, fast: bool, bind: bool = True) -> Expr:
    """``tanh(x)`` of a float value; approximated (``fast_tanh_f32``) when ``fast``."""
    from tvm import tirx

    if fast:
        return fast_tanh_f32(x, bind)
    dtype = _dt(x)
    # libm's: TVM legalizes tirx.tanh for LLVM as (1 - exp(-2x)) / (1 + exp(-2x)), whose
    # relative error near 0 reaches 1e-4 (and tanh(1e-30) is 0)
    return tirx.call_pure_extern(dtype, "tanhf" if dtype == _F32 else "tanh", x)


def sigmoid_expr(x: Expr, fast: bool, bind: bool = True) -> Expr:
    """``1 / (1 + exp(-x))`` of a float value without overflow, as the reference: with
    ``e = exp(-|x|)``, ``1 / (1 + e)`` for ``x >= 0`` and ``e / (1 + e)`` below."""
    return sigmoid_quotient(x, fast, bind, lambda n, d: n / d)


def sigmoid_quotient(x: Expr, fast: bool, bind: bool, then: Callable[[Expr, Expr], Expr]) -> Expr:
    """``then(n, d)`` where ``n / d`` is :func:`sigmoid_expr` of ``x``: ``n`` (``1`` or
    ``e``) in [0, 1] and ``d = 1 + e`` in [1, 2], NaN kept."""
    from tvm import tirx

    dtype = _dt(x)
    one, zero = _const(1.0, dtype), _const(0.0, dtype)

    def from_x(xv: Expr) -> Expr:
        def from_e(e: Expr) -> Expr:
            return then(tirx.Select(xv >= zero, one, e), one + e)

        if fast:  # e bound at the end of exp's own chain (see fast_exp_f32)
            return fast_exp_f32(tirx.abs(xv), bind, then=from_e, negate=True)
        return from_e(tirx.exp(-tirx.abs(xv)))  # (a call: cheap to repeat)

    return _let("x", x, from_x, bind)


# ---- unary math -----------------------------------------------------------------------------------


def _float_math(call: LoweringCall) -> dict[str, ScalarFn]:
    """The scalar functions of the float-only operators, for ``call``'s options (the
    approximations apply to float32 operators only)."""
    from tvm import tirx

    dtype = _dtype(call, 0)
    f32 = dtype == _F32
    fast = call.fast_math and f32
    bind = _can_bind(call)  # see _let
    return {
        "exp": lambda x: exp_expr(x, fast, bind),
        "fast_exp": lambda x: exp_expr(x, f32, bind),
        "tanh": lambda x: tanh_expr(x, fast, bind),
        "fast_tanh": lambda x: tanh_expr(x, f32, bind),
        "sigmoid": lambda x: sigmoid_expr(x, fast, bind),
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
    fast = call.fast_math or call.name == "fast_exp"
    exact_tanh = call.name == "tanh" and not (call.fast_math and _dtype(call, 0) == _F32)
    if exact_tanh and call.bound_depths and call.bound_depths[0] > 0:
        # libm's tanh is a call TVM's vectorizer does not vectorize; a value holding
        # bindings read by it (and another such call in the same product) was visited by the
        # vectorizer twice and its Let bound twice ("Let cannot bind the same var to two
        # different values": tanh(tanh(b)) * tanh(fast_tanh(a)) with fast math off, found by
        # a fuzzing review): the value is read materialized
        call.materialize(0)
    if call.name in ("exp", "fast_exp") and _dtype(call, 0) == _F32 and fast:
        source = _negated(call.args[0])
        if source is not None and _can_bind(call):
            # exp(-v) from v: the negation folded into the approximation's constants. Only
            # where the argument is bound: unbound (a bfloat16 kernel), the approximation
            # repeats it, and the lowering decides what to materialize by the reads of the
            # call's own argument, here bypassed (exp(-exp(-x)) of a bfloat16 x took 38 s
            # to compile instead of 0.15; found by a fuzzing review)
            negated = dataclasses.replace(call, args=(source,))
            return _map(negated, lambda v: fast_exp_f32(v, True, negate=True))
    return _map(call, _float_math(call)[call.name])


def _negated(t: Any) -> Any:
    """``v`` where ``t`` is this kernel's float32 ``negative`` stage of ``v`` (the same
    shape, so read at the same index), else None."""
    from tvm import te

    from relay.backend.lower import static_dim

    if not (isinstance(t, te.Tensor) and isinstance(t.op, te.ComputeOp)):
        return None
    if t.op.name != "negative" or str(t.dtype) != _F32 or len(t.op.input_tensors) != 1:
        return None
    (v,) = t.op.input_tensors
    same = [static_dim(d) for d in v.shape] == [static_dim(d) for d in t.shape]
    return v if same and str(v.dtype) == _F32 else None


@lowering_rule("floor", "ceil", "trunc", "round")
def _rounding(call: LoweringCall) -> Any:
    from tvm import tirx

    fns: dict[str, ScalarFn] = {
        "floor": tirx.floor,
        "ceil": tirx.ceil,
        "trunc": tirx.trunc,
        "round": lambda x: _llvm("round", x),  # halves away from zero
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
    dtype = _dtype(call, 0)
    if not _is_float(dtype):
        result = call.name == "isfinite"
        return _map(call, lambda x: _const(result, "bool"))
    return _map(call, _isnan if call.name == "isnan" else _isfinite)


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
        bound = _clip_bound(like, value, which)  # (an int exactly: int64 bounds are not floats)
        bounds.append(_const(bound.item() if _is_float(src) else int(bound), dtype))
    lo, hi = bounds

    if _is_float(src):  # LLVM's minimum/maximum propagate NaN, as numpy's
        return _map(call, lambda x: _llvm("maximum", _llvm("minimum", x, hi), lo))
    return _map(call, lambda x: tirx.max(tirx.min(x, hi), lo))


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

    def fn(c: Expr, x: Expr, y: Expr) -> Expr:
        # a select of a float constant is that constant where TVM's simplifier finds the
        # condition constant, or the other branch equal (0.0 and -0.0 included); a constant
        # is then folded into the select's consumer (see _ieee_guarded): hidden, the second
        # in another form (the simplifier finds fences of 0.0 and of -0.0 equal)
        if _float_constant(x) or _computed_constant(x):
            x = _opaque(x)
        if _float_constant(y) or _computed_constant(y):
            y = _opaque(_opaque(y))
        return tirx.Select(_nonzero(_up(c, cond), cond), x, y)

    return _map(call, fn, widen=False)


# ---- binary operators -----------------------------------------------------------------------------


def _int_division(op: Callable[[Expr, Expr], Expr], remainder: bool, dtype: str) -> ScalarFn:
    """An integer division or remainder ``op`` with its divisor guarded (see the module doc):
    0 for a zero divisor; for -1, ``-a`` or 0 without dividing.

    The guards use the divisor five times: :func:`_binary` has a divisor computed in the
    kernel materialized (:meth:`LoweringCall.materialize`)."""
    from tvm import tirx

    zero, one = _const(0, dtype), _const(1, dtype)

    def fn(a: Expr, b: Expr) -> Expr:
        if not _is_signed(dtype):
            return tirx.Select(tirx.EQ(b, zero), zero, op(a, tirx.Select(tirx.EQ(b, zero), one, b)))
        lowest = -(1 << (_bits(dtype) - 1))
        divisor = _constant_load(b)
        if isinstance(divisor, tirx.IntImm) and int(divisor.value) == lowest:
            # TVM's floordiv/floormod by a constant negate it: out of range for the lowest
            b = _int_reinterpret(divisor, dtype)
        minus = _const(-1, dtype)
        safe = tirx.Select(tirx.Or(tirx.EQ(b, zero), tirx.EQ(b, minus)), one, b)
        special = zero if remainder else tirx.Select(b == zero, zero, _negate(a, dtype))
        return tirx.Select(tirx.Or(tirx.EQ(b, zero), tirx.EQ(b, minus)), special, op(a, safe))

    return fn


def _float_floor_mod(a: Expr, b: Expr, bind: bool = True) -> Expr:
    """numpy's float remainder (``npy_divmod``): fmod, plus ``b`` when it is nonzero and of the
    other sign than ``b``; a zero remainder takes ``b``'s sign. ``bind``: see _let."""
    from tvm import tirx

    dtype = _dt(a)
    zero = _const(0.0, dtype)
    udt = f"uint{_bits(dtype)}"
    # copysign(0, b) on the bits (tirx.copysign is not vectorized, and the simplifier merges
    # a select between the constants 0.0 and -0.0)
    sign_bit = _const(1 << (_bits(dtype) - 1), udt)
    signed_zero = tirx.reinterpret(dtype, _reinterpret(udt, b) & sign_bit)

    def from_m(m: Expr) -> Expr:
        # (b < 0) != (m < 0) for a nonzero m (TVM cannot compare two float tests)
        moved = tirx.Or(tirx.And(b < zero, m > zero), tirx.And(b > zero, m < zero))
        return tirx.Select(tirx.EQ(m, zero), signed_zero, tirx.Select(moved, m + b, m))

    # the dividend is bound, not the remainder: LLVM's code generator analyzes a bound
    # value's integer range, and a float remainder by a loop-invariant divisor made it take
    # an integer absolute value of a float ("Integer absolute value requires an integer
    # type"); the repeated frem of the same operands is one instruction after LLVM's CSE
    return _let("a", a, lambda av: from_m(tirx.truncmod(av, b)), bind)


def _int_power(call: LoweringCall) -> Any:
    """``a ** b`` on integers, wrapping: square-and-multiply over the bits of ``b``, as a
    reduction over the bit index whose state is (product, square, started). (An expression of
    ``tirx.Let``-bound squares would do, but TVM's passes revisit a bound value at each use of
    its variable: compile time doubles per bit.) A negative ``b`` gives C's truncated
    ``1 / a**-b``: 1 for ``a == 1``, ``(-1)**b`` for ``a == -1``, else 0."""
    from tvm import te, tirx

    shape, dtype = _out(call)
    if _empty(shape):
        return _compute(shape, dtype, lambda i: _const(0, dtype), call.name)
    materialize_bfloat16_reads(call)
    zero, one = _const(0, dtype), _const(1, dtype)

    def combine(x: Sequence[Expr], y: Sequence[Expr]) -> tuple[Expr, Expr, Expr]:
        acc, square, started = x
        bit, base, _ = y
        square = tirx.Select(
            tirx.NE(started, zero), _wrapping("multiply", square, square, dtype), base
        )
        acc = tirx.Select(tirx.NE(bit, zero), _wrapping("multiply", acc, square, dtype), acc)
        return acc, square, one

    def identity(*dtypes: str) -> tuple[Expr, Expr, Expr]:
        return one, zero, zero

    reducer = te.comm_reducer(combine, identity, name="int_power")
    a_t, b_t = call.args
    k = te.reduce_axis((0, _bits(dtype) - (1 if _is_signed(dtype) else 0)), name="k")

    def step(*index: Any) -> Any:
        b = _read(b_t, shape, index)
        bit = (b >> tirx.Cast(dtype, k.var)) & one
        return reducer((bit, _read(a_t, shape, index), one), axis=k)

    steps = te.compute(shape, step, name="power_steps")[0]
    if not _is_signed(dtype):
        return steps
    minus = _const(-1, dtype)

    def body(index: Sequence[Any]) -> Expr:
        a, b = _read(a_t, shape, index), _read(b_t, shape, index)
        odd = tirx.NE(b & one, zero)
        unit = tirx.Select(tirx.EQ(a, minus), tirx.Select(odd, minus, one), zero)
        negative_power = tirx.Select(tirx.EQ(a, one), one, unit)
        return tirx.Select(b < zero, negative_power, steps(*index))

    return _compute(shape, dtype, body, call.name)


def _count_in_range(count: Expr, dtype: str) -> Expr:
    """Whether the shift count ``count`` (of ``dtype``) is in ``[0, bits)``: whether its bits
    above the low ``log2(bits)`` are clear (a negative count has the sign bit set). Not
    ``count < bits``: for a uint32/uint64 count, TVM's canonical simplifier, simplifying that
    test inside a select on the same test, folds ``0U - 32U`` and fails its check ("will
    cause a negative uint"): a compile error."""
    from tvm import tirx

    bits = _bits(dtype)
    high = ~(bits - 1) if _is_signed(dtype) else (1 << bits) - bits  # the bits above
    return tirx.EQ(tirx.bitwise_and(count, _const(high, dtype)), _const(0, dtype))


def _right_shift(dtype: str) -> ScalarFn:
    """numpy's ``right_shift`` of integers of ``dtype`` (see the module doc).

    The count is used more than once but never bound by ``tirx.Let`` (see _let): TVM 0.27's
    integer bound analysis fails on a bound integer count computed in the kernel (a cast
    from a narrower type: "Detected bound for count conflicts with memorization"). The
    repeated count is one value again after LLVM's CSE."""
    from tvm import tirx

    bits, zero = _bits(dtype), _const(0, dtype)

    def fn(x: Expr, count: Expr) -> Expr:
        ok = _count_in_range(count, dtype)
        if _is_signed(dtype):  # shifting by bits - 1 leaves the sign in every bit
            return x >> tirx.Select(ok, count, _const(bits - 1, dtype))
        return tirx.Select(ok, x >> tirx.Select(ok, count, zero), zero)

    return fn


def _left_shift(dtype: str) -> ScalarFn:
    """numpy's ``left_shift`` of integers of ``dtype``, wrapping (see the module doc; the
    count is not bound, as in _right_shift)."""
    from tvm import tirx

    unsigned, zero = f"uint{_bits(dtype)}", _const(0, dtype)

    def fn(x: Expr, count: Expr) -> Expr:
        ok = _count_in_range(count, dtype)
        # the count's low bits: the count where ok, and never a negative constant, which TVM
        # fails to reinterpret as unsigned (left_shift(x, -1) of int64 for CUDA)
        by = tirx.bitwise_and(count, _const(_bits(dtype) - 1, dtype))
        if _is_signed(dtype):
            bits = _int_reinterpret(x, unsigned) << _int_reinterpret(by, unsigned)
            shifted = _int_reinterpret(bits, dtype)
        else:
            shifted = x << by
        return tirx.Select(ok, shifted, zero)

    return fn


def _compare(op: Callable[[Expr, Expr], Expr], dtype: str) -> ScalarFn:
    """A comparison of values of ``dtype``; bools are compared as int8 (TVM's code generator
    emits float comparisons for bool operands)."""
    from tvm import tirx

    if dtype != "bool":
        return op
    return lambda a, b: op(tirx.Cast("int8", a), tirx.Cast("int8", b))


def _binary_fn(name: str, narrow: str, bind: bool = True) -> ScalarFn:
    """The scalar function of the binary operator ``name`` on values of ``narrow`` (widened to
    float32 when a narrow float); ``bind``: see _let."""
    from tvm import tirx

    dtype = _wide(narrow)
    fns: dict[str, ScalarFn]
    # bools are combined by the bitwise operators, not TIR's Or and And: TVM's simplifier
    # rewrites an Or of two comparisons as if no operand were NaN (``x < y || x >= y`` is
    # true, ``x == y || x != y`` too)
    either: ScalarFn = tirx.bitwise_or
    both: ScalarFn = tirx.bitwise_and
    if dtype == "bool":  # numpy's bool loops; subtract and the divisions reject bool
        fns = {"add": either, "maximum": either, "multiply": both, "minimum": both}
    elif _is_float(dtype):
        fns = {
            **_ARITH,
            "divide": operator.truediv,
            # the quotient rounded to dtype first, as numpy's float16 loop does
            "floor_divide": lambda a, b: tirx.floor(_up(_down(a / b, narrow), narrow)),
            "mod": tirx.truncmod,  # C's fmod (LLVM frem)
            "floor_mod": functools.partial(_float_floor_mod, bind=bind),
            "power": tirx.power,
            # LLVM's maximum/minimum propagate NaN, as numpy's do (TIR's max/min do not)
            "maximum": lambda a, b: _llvm("maximum", a, b),
            "minimum": lambda a, b: _llvm("minimum", a, b),
            # NaN differs from everything: not ==, written as an exclusive or (TVM's
            # simplifier turns !(a == b) into the ordered !=, false for NaN)
            "not_equal": lambda a, b: tirx.bitwise_xor(tirx.EQ(a, b), _const(True, "bool")),
        }
    else:
        fns = {
            **{k: functools.partial(_wrapping, k, dtype=dtype) for k in _ARITH},
            "divide": _int_division(tirx.truncdiv, False, dtype),
            "floor_divide": _int_division(tirx.floordiv, False, dtype),
            "mod": _int_division(tirx.truncmod, True, dtype),
            "floor_mod": _int_division(tirx.floormod, True, dtype),
            "maximum": tirx.max,
            "minimum": tirx.min,
            "right_shift": _right_shift(dtype),
            "left_shift": _left_shift(dtype),
            "bitwise_and": tirx.bitwise_and,
            "bitwise_or": tirx.bitwise_or,
            "bitwise_xor": tirx.bitwise_xor,
        }
    compare: dict[str, Callable[[Expr, Expr], Expr]] = {
        name: functools.partial(int_compare, op)
        for name, op in (
            ("equal", tirx.EQ),
            ("not_equal", tirx.NE),
            ("less", tirx.LT),
            ("less_equal", tirx.LE),
            ("greater", tirx.GT),
            ("greater_equal", tirx.GE),
            ("logical_xor", tirx.NE),
        )
    }
    fns["logical_and"], fns["logical_or"] = both, either
    if dtype == "bool":
        name = _BOOL_BITWISE.get(name, name)
    if name in fns:
        return fns[name]
    return _compare(compare[name], dtype)


_BINARY = (
    "add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power",
    "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "right_shift", "left_shift",
    "bitwise_and", "bitwise_or", "bitwise_xor",
)  # fmt: skip

_BOOL_BITWISE = {
    "bitwise_and": "logical_and",
    "bitwise_or": "logical_or",
    "bitwise_xor": "logical_xor",
}
"""The bitwise operators of bools, lowered as the logical ones that they equal on bools
(numpy's bool loops), so that bool code goes through one path."""


_DIVISIONS = frozenset({"divide", "floor_divide", "mod", "floor_mod"})


@lowering_rule(*_BINARY)
def _binary(call: LoweringCall) -> Any:
    dtype = _dtype(call, 0)
    if call.name == "power" and not _is_float(dtype):
        return _int_power(call)
    if call.name in _DIVISIONS and dtype != "bool" and not _is_float(dtype):
        _require_nonzero_divisor(call, dtype)
        # the guards repeat the divisor (see _int_division): nested remainders compiled in
        # exponential time (floor_mod(x, floor_mod(x, floor_mod(x, x))) of int32: over a
        # minute; a tirx.Let would not do, since the divisor's check reads it in a block of
        # its own and TVM rejects a variable bound to two values)
        call.materialize(1)
    if call.name == "multiply" and call.fast_math and dtype == _F32:
        from relay.op.lowering.quotient import quotient_product

        merged = quotient_product(call)
        if merged is not None:
            return merged
    fn = _binary_fn(call.name, dtype, _can_bind(call))
    if _is_float(dtype):
        fn = _ieee_guarded(call, fn)
    return _map(call, fn)


_CANCELLING = frozenset(
    {"subtract", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
)
"""Float operators whose operands TVM's simplifier cancels when they share a term."""

_ARITHMETIC = frozenset(
    {"add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod"}
)
"""Float operators that TVM's simplifier folds with a zero constant operand."""


def _ieee_guarded(call: LoweringCall, fn: ScalarFn) -> ScalarFn:
    """``fn`` (the float binary operator ``call``) kept from the rewrites of TVM's simplifier
    that hold for integers but not for IEEE floats, which TVM applies to floats too:

    * cancellations: ``x - x`` to 0, ``(x + y) - x`` to ``y``, ``x - (x + y)`` to ``-y``,
      ``x == x`` to true (so ``x != x`` to false), ``select(c, y, z) - z`` to ``select(c,
      y - z, 0)``, ``x <= y || y < x`` to true, each wrong for NaN or infinities (and the
      second for rounding: ``(x + 1) - 1`` is not ``x`` for ``x = 1e-8``). They need the
      operands to share a term, so where the operands of a subtraction or a comparison read
      a tensor in common (after fusion, the inlined expressions may meet), the right one is
      made opaque (:func:`_opaque`): the right one, or the left of ``>`` and ``>=``, which
      TVM turns around (``x >= y`` is ``y <= x``), so that ``x < y || x >= y`` stays two
      different comparisons (the same operand made opaque in both would match the rule);
      Where the two operands of a subtraction may be the same value (:func:`_maybe_equal`),
      the left one is made opaque too, in another form (two fences): LLVM fused a product
      on the left with the subtraction into a multiply-add, and ``m - m`` of ``m = x * w``
      was the rounding error of ``x * w``, not 0. (Not for any shared input: ew_chain's
      final ``t * s - e`` is one ``vfmsub`` that way, one instruction fewer);
    * constant folds: ``x * 0`` to 0 (NaN and infinities give NaN, negative numbers -0),
      ``0 / x`` to 0 (0 and NaN give NaN), ``x + 0`` to ``x`` (-0 gives 0), and ``x / 0``
      (also in ``floor_divide``, ``mod``, ``floor_mod``) stops TVM with an internal check
      (numpy gives infinities): a zero constant operand of an arithmetic operator is made
      opaque. A zero the simplifier computes counts too: ``cast(less(i, i), "float32")``, or
      ``where(c, 0f, -0f)``; so a conversion of an integer or bool to a float
      (:func:`_convert`) and a constant branch of ``where`` are opaque in the first place.

    Reported by fuzzing reviews (2026-11-28): ``t != t``, ``t - t`` and ``t * 0`` gave
    False and 0 for NaN, ``(x + y) - x`` gave ``y`` for an infinite ``x``; ``x / cast(less(i,
    i))`` did not compile, ``x * cast(less(i, i))`` was 0 for NaN."""

    def zero(v: Expr) -> Expr:
        return _opaque(v) if _zero_constant(v) is not None or _computed_constant(v) else v

    shared = call.name in _CANCELLING and _share_input(call.args[0], call.args[1])
    if call.name == "subtract" and shared:
        if _maybe_equal(call.args[0], call.args[1]):
            return lambda a, b: fn(_opaque(_opaque(a)), _opaque(b))
        return lambda a, b: fn(zero(a), _opaque(b))
    if call.name in _ARITHMETIC:
        return lambda a, b: fn(zero(a), zero(b))
    if shared:
        if call.name in ("greater", "greater_equal"):  # (see below)
            return lambda a, b: fn(_opaque(a), b)
        return lambda a, b: fn(a, _opaque(b))
    return fn


def _float_constant(v: Expr) -> bool:
    """Whether ``v`` is a float32/float64 constant, in the expression or read from a stage
    that holds it everywhere (:func:`_constant_load`)."""
    from tvm import tirx

    return _dt(v) in ("float32", "float64") and isinstance(_constant_load(v), tirx.FloatImm)


def _zero_constant(v: Expr) -> bool | None:
    """Where ``v`` is a float constant 0 or -0, cast or not, in the expression or read from
    a stage that holds it everywhere (:func:`_constant_load`), whether it is -0; else None."""
    from tvm import tirx

    while isinstance(v, tirx.Cast):
        v = v.value
    v = _constant_load(v)
    if isinstance(v, tirx.FloatImm) and v.value == 0:
        return bool(math.copysign(1.0, v.value) < 0)
    return None


def _computed_constant(v: Expr) -> bool:
    """Whether ``v`` (cast or not) reads a float stage computed in the kernel from no input:
    a constant that TVM's simplifier finds once it inlines the stage (``negative(zeros_like(x))``
    is -0; found by a fuzzing review), unlike a stage holding a literal
    (:func:`_constant_load`), which is seen here already."""
    from tvm import te, tirx
    from tvm.ir.expr import Call

    while isinstance(v, tirx.Cast):
        v = v.value
    if not (isinstance(v, Call) and str(v.op.name) == "te.tensor_load"):
        return False
    tensor = v.args[0]
    if not _is_float(str(tensor.dtype)) or _constant_load(v) is not v:
        return False
    return not any(isinstance(op, te.PlaceholderOp) for op in _upstream([tensor]))


def _maybe_equal(a: Any, b: Any) -> bool:
    """Whether the tensors ``a`` and ``b`` may hold the same values: they are one tensor, or
    computed by stages of the same operator from the same tensors (``x * w`` and ``w * x``,
    or two copies that a program at ``opt_level`` below 3 keeps)."""
    from tvm import te

    if not (isinstance(a, te.Tensor) and isinstance(b, te.Tensor)):
        return False
    if a.op == b.op:
        return bool(a.value_index == b.value_index)
    inputs = [{t.op for t in x.op.input_tensors} for x in (a, b)]
    return bool(a.op.name == b.op.name and inputs[0] == inputs[1])


def _share_input(a: Any, b: Any) -> bool:
    """Whether the tensors ``a`` and ``b`` (or scalars) are computed from a tensor in common
    (one of them, or one they read, directly or not)."""
    return bool(_upstream([a]).keys() & _upstream([b]).keys())


def _opaque(v: Expr) -> Expr:
    """``v`` unchanged, in a form TVM's simplifier does not look into: for LLVM, the
    ``llvm.arithmetic.fence`` intrinsic, which compiles to nothing and keeps LLVM from fusing
    a multiply and an add across it at every optimization level alike (so a first tier's
    -O0 kernels keep the bits of -O2, :func:`relay.backend.compiler.quick_product`); in CUDA
    C, the float's bits as an integer and back by CUDA's functions (``__float_as_int``,
    ``__int_as_float``). Not TIR's reinterpretation: its CUDA C takes the address of its
    operand, and nvcc rejects the address of a literal, which the simplifier may fold the
    operand to (``cast(equal(i, i), "float32")`` is ``1.0f``; found by a fuzzing review)."""
    from tvm import tirx

    from relay.backend.lower import lowering_target

    dtype = _dt(v)
    if lowering_target() == "llvm":
        return _pure_llvm(dtype, "arithmetic.fence", v)
    if dtype not in _CUDA_BITS:
        return tirx.reinterpret(dtype, tirx.reinterpret(f"int{_bits(dtype)}", v))
    to_bits, back = _CUDA_BITS[dtype]
    return tirx.call_pure_extern(
        dtype, back, tirx.call_pure_extern(f"int{_bits(dtype)}", to_bits, v)
    )


_CUDA_BITS = {
    "float16": ("__half_as_short", "__short_as_half"),
    "float32": ("__float_as_int", "__int_as_float"),
    "float64": ("__double_as_longlong", "__longlong_as_double"),
}
"""CUDA's functions from a float to the integer of its bits, and back (see _opaque)."""


def _require_nonzero_divisor(call: LoweringCall, dtype: str) -> None:
    """An integer division by zero raises the reference's ExecutionError (a run-time check
    beside the guarded division, which computes 0 there rather than trap)."""
    from tvm import te, tirx

    shape, _ = _out(call)
    divisor = call.args[1]
    if _empty(shape) or not isinstance(divisor, te.Tensor):
        return
    zero = _const(0, dtype)
    violated = te.compute(
        divisor.shape, lambda *i: tirx.EQ(divisor(*i), zero), name=f"{call.name}_check"
    )
    call.require(violated, f"operator {call.name} failed: integer division by zero")


def _not(x: Expr) -> Expr:
    """The negation of the bool ``x``, as an exclusive or: TVM's simplifier turns ``!(a <=
    b)`` into ``b < a``, false where a float operand is NaN."""
    from tvm import tirx

    return tirx.bitwise_xor(x, _const(True, "bool"))


@lowering_rule("logical_not")
def _logical_not(call: LoweringCall) -> Any:
    return _map(call, _not)


@lowering_rule("bitwise_not")
def _bitwise_not(call: LoweringCall) -> Any:
    from tvm import tirx

    return _map(call, _not if _dtype(call, 0) == "bool" else tirx.bitwise_not)
