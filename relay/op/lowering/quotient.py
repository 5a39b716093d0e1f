"""Products of quotients with one division (fast math, float32).

A fused kernel that multiplies two quotients, ``(a / b) * (c / d)``, divides twice. Computed as
``(a * c) / (b * d)`` it divides once: three operations where there were three, but a
division is the slowest of them (AVX-512's ``vdivps`` takes three micro-operations and
holds the divider for several cycles; an FMA unit takes a product every cycle). Gated
activations multiply two such quotients: WaveNet's ``tanh(a) * sigmoid(b)``, an LSTM's
``sigmoid(o) * tanh(c)``, and ew_chain of the benchmarks, ``tanh(x * y + 1) * (1 / (1 +
exp(-x)))``, whose loop has one ``vdivps`` instead of two: its kernel 1.08-1.11 ms against
1.14-1.19, the benchmark's processes 1-4% faster (docs/performance.md).

Accuracy: in the standard model of floating-point arithmetic (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., section 2.2: each operation returns the exact
result times ``1 + delta``, ``|delta| <= u = 2**-24``), both forms are the exact value times
three such factors, so both stay within about ``3u`` of it; they differ in the last place.
The model holds only while no product overflows or underflows, and the two forms fail there
differently, so a product is merged only when the factors' ranges show that the merged
form does no worse (:func:`mergeable`):

* ``|a| * |c|`` is finite for any values in the numerators' ranges, and so are ``a / b`` and
  ``c / d`` (where one of them overflows, the two divisions give inf, or NaN times 0);
* the denominators are positive with a product of their lower bounds at least
  :data:`MIN_DENOMINATOR_PRODUCT` (``2 ** -16``), so ``b * d`` never underflows and the
  division magnifies a subnormal ``a * c``'s rounding by at most ``2 ** 16``;
* ``b * d`` overflows only where ``b`` or ``d`` is infinite: the product of the upper bounds
  is finite, or one upper bound is at most 1 (``b * d <= d``). Where ``d`` is infinite,
  ``c / d`` was 0 and ``(a * c) / (b * d)`` is 0 too.

A ``tanh`` or ``sigmoid`` whose argument holds bindings of its own (another approximation
computed in the kernel, ``tanh(sigmoid(a))``) is left a division: made again in the product,
its bindings would be nested in another's value (:attr:`Quotient.binds`).

Where ``a * c`` is subnormal it keeps fewer bits: results below 7.7e-34 (``2 ** 16``
times the smallest normal float32) may lose precision that the two divisions kept (tanh
times tanh at 1e-17 and 1e-18 is 1.0000025e-35, 20 ulp off). NaN and infinite arguments give what the two divisions gave.

The quotients (:func:`quotient_of`) are stages of the kernel that the product reads:

* fast ``tanh`` (float32, ``fast_tanh`` always): :func:`~relay.op.lowering.elemwise.
  tanh_quotient`, the fast ``tanh``'s rational function on a clamped argument;
  ``|n| <= d``, ``d`` in [2 ** -8, 0.95];
* fast ``sigmoid``: :func:`~relay.op.lowering.elemwise.sigmoid_quotient`, ``n`` in [0, 1],
  ``d = 1 + exp(-|x|)`` in [1, 2];
* a float32 ``divide`` whose operands have known ranges (:func:`value_range`): constants,
  ``exp`` (at least 0), ``sigmoid``, ``tanh``, and sums of those, so the sigmoid written out,
  ``1 / (1 + exp(-x))``, is one: ``n = 1``, ``d`` in [1, inf].

Where one denominator is ``1 + v`` (``sigmoid``'s ``1 + e``, or the written-out sigmoid's
``1 + exp(-x)``, read as such), the product of the denominators is one fused multiply-add,
``v * d + d`` (:func:`_denominator_product`): one operation and one rounding where the sum
and the product took two of each. ew_chain's loop went from 46 to 45 arithmetic
micro-operations per 16 elements (its kernel with its data in cache, per 4M elements:
1.02-1.04 ms against 1.09-1.13 before; results within 3.9e-7 of float64 numpy over 4M
points with special values, 4.4e-7 before).

The merged product reads the quotients' own arguments and computes each quotient's
numerator and denominator in place of the division (its ``tirx.Let`` bindings as the stage
had them), so the stages themselves are no longer read. Only with fast math: like the
approximations, it changes results in the last place.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from relay.op.lowering.common import out
from relay.op.lowering.elemwise import (
    _F32,
    BINDINGS,
    TANH_DENOMINATOR,
    _can_bind,
    _compute,
    _read,
    sigmoid_quotient,
    tanh_quotient,
)
from relay.op.registry import LoweringCall

Expr = Any
Then = Callable[[Expr, Expr], Expr]
Range = tuple[float, float]

FLOAT32_MAX = float.fromhex("0x1.fffffep127")
FLOAT32_MIN_NORMAL = 2.0**-126


@dataclasses.dataclass(frozen=True)
class Quotient:
    """A stage of a kernel whose value is a quotient ``n / d``: ``build(values, then)`` is
    ``then(n, d)`` from the values of ``sources`` (tensors read at the stage's index, with
    numpy broadcasting); ``n`` is within ``numerator`` and ``d`` within ``denominator``
    (NaN aside)."""

    sources: tuple[Any, ...]
    build: Callable[[Sequence[Expr], Then], Expr]
    numerator: Range
    denominator: Range
    binds: bool = False
    """Whether ``build`` binds its sources' values (``tanh``, ``sigmoid``): then it is made
    again in the product only where they hold no bindings themselves (the stage binds the
    only ones in its expression). A bound value holding bindings is what TVM's LLVM code
    generator simplifies again as it binds it, and ``tanh``'s clamp reads its argument four
    times: ``tanh(sigmoid(a)) * sigmoid(b)`` took 1.2 s to compile merged, 0.1 s as two
    divisions (found by a fuzzing review)."""


def _unary(source: Any, fn: Callable[[Expr, Then], Expr], n: Range, d: Range) -> Quotient:
    return Quotient((source,), lambda values, then: fn(values[0], then), n, d, binds=True)


def quotient_of(t: Any) -> Quotient | None:
    """``t``, an argument of a float32 product under fast math, as a :class:`Quotient`: a
    stage of the kernel computing ``tanh`` or ``sigmoid`` (approximated under fast math), or
    a ``divide`` whose operands have known ranges; else None."""
    from tvm import tirx

    from relay.backend.lower import is_inlined_stage

    if not is_inlined_stage(t) or str(t.dtype) != _F32:
        return None
    name = t.op.name
    if name in ("tanh", "fast_tanh", "sigmoid"):  # (approximated: the product is fast math)
        if len(t.op.input_tensors) != 1:
            return None
        (source,) = t.op.input_tensors
        if str(source.dtype) != _F32:
            return None
        if name == "sigmoid":
            return _unary(
                source,
                lambda x, then: sigmoid_quotient(x, True, True, then),
                (0.0, 1.0),
                (1.0, 2.0),
            )
        lo, hi = TANH_DENOMINATOR
        return _unary(source, lambda x, then: tanh_quotient(x, True, then), (-hi, hi), (lo, hi))
    if name == "divide":
        operands = _loads(t.op.body[0], "Div")
        if operands is None:
            return None
        n, d = operands
        n_range, d_range = value_range(n), value_range(d)
        if n_range is None or d_range is None:
            return None
        v = _one_plus_stage(d)
        if v is not None:  # (d read as 1 + v, for _denominator_product)
            one = tirx.FloatImm(_F32, 1.0)
            return Quotient(
                (n, v), lambda values, then: then(values[0], one + values[1]), n_range, d_range
            )
        return Quotient((n, d), lambda values, then: then(*values), n_range, d_range)
    return None


def _one_plus_stage(d: Any) -> Any:
    """``v`` where ``d`` is a stage of the kernel computing ``1 + v`` (or ``v + 1``) of a
    float32 tensor ``v``, as the sigmoid written out has (``1 / (1 + exp(-x))``); else
    None."""
    from relay.backend.lower import is_inlined_stage

    if not is_inlined_stage(d) or d.op.name != "add":
        return None
    operands = _loads(d.op.body[0], "Add")
    if operands is None:
        return None
    for k, v in (operands, operands[::-1]):
        if _constant_stage(k) == 1.0:
            return v
    return None


def _constant_stage(t: Any) -> float | None:
    """The value of a stage holding one float constant, else None."""
    from tvm import te, tirx

    if not isinstance(t.op, te.ComputeOp):
        return None
    body = t.op.body[0]
    return float(body.value) if isinstance(body, tirx.FloatImm) else None


def _denominator_product(d1: Expr, d2: Expr) -> Expr:
    """``d1 * d2``, as one fused multiply-add ``v * p + p`` where one of them is ``1 + v``
    (``sigmoid``'s, the written-out sigmoid's) and ``p`` the other: one operation and one
    rounding where the sum and the product took two of each (``p`` bound once: it is
    ``tanh``'s polynomial, or another quotient's sum)."""
    from relay.op.lowering.elemwise import _let

    for p, q in ((d1, d2), (d2, d1)):
        v = _one_plus(q)
        if v is not None:
            return _let("d", p, functools.partial(_fused_multiply_add, v))
    return d1 * d2


def _fused_multiply_add(v: Expr, p: Expr) -> Expr:
    """``v * p + p`` rounded once: ``llvm.fma`` on an LLVM CPU with AVX-512 (at every
    optimization level); elsewhere the expression itself, which LLVM contracts where the CPU
    has FMA instructions and CUDA C always (``llvm.fma`` on a CPU without them, as
    ``sandybridge``, was a call of libm's ``fmaf`` per lane: found by a fuzzing review)."""
    from relay.backend.lower import lowering_target, lowering_vector_ldexp
    from relay.op.lowering.elemwise import _pure_llvm

    if lowering_target() == "llvm" and lowering_vector_ldexp():
        return _pure_llvm(_F32, "fma", v, p, p)
    return v * p + p


def _one_plus(e: Expr) -> Expr | None:
    """``v`` where the TIR expression ``e`` is ``1 + v`` or ``v + 1`` (float32), else None."""
    from tvm import tirx

    if not isinstance(e, tirx.Add):
        return None
    for k, v in ((e.a, e.b), (e.b, e.a)):
        if isinstance(k, tirx.FloatImm) and float(k.value) == 1.0:
            return v
    return None


def _loads(body: Expr, kind: str) -> tuple[Any, Any] | None:
    """The two float32 tensors that ``body``, a binary TIR node of type ``kind`` (``Div``,
    ``Add``) of two tensor reads (``te.tensor_load``), reads; else None."""
    from tvm import te, tirx
    from tvm.ir.expr import Call

    if not isinstance(body, getattr(tirx, kind)):
        return None
    tensors = []
    for v in (body.a, body.b):
        if not (isinstance(v, Call) and str(v.op.name) == "te.tensor_load"):
            return None
        tensor = v.args[0]
        if not isinstance(tensor, te.Tensor) or str(tensor.dtype) != _F32:
            return None
        tensors.append(tensor)
    return tensors[0], tensors[1]


_RANGES: dict[str, Range] = {
    "exp": (0.0, math.inf),
    "fast_exp": (0.0, math.inf),
    "sigmoid": (0.0, 1.0),
    "tanh": (-1.0, 1.0),
    "fast_tanh": (-1.0, 1.0),
}
"""The ranges of the operators whose values are bounded whatever their arguments (the
approximations of fast math included)."""


def value_range(t: Any) -> Range | None:
    """Bounds of every value of the float32 tensor ``t`` (NaN aside), where the kernel's
    stages show them: a constant, ``exp`` (at least 0), ``sigmoid`` ([0, 1]), ``tanh`` ([-1,
    1], the approximations included), or the sum of two such; else None."""
    from tvm import te

    if not isinstance(t.op, te.ComputeOp) or str(t.dtype) != _F32:
        return None
    value = _constant_stage(t)
    if value is not None:
        return None if math.isnan(value) else (value, value)
    body = t.op.body[0]
    name = t.op.name
    if name in _RANGES:
        return _RANGES[name]
    if name == "add":
        operands = _loads(body, "Add")
        if operands is None:
            return None
        first, second = (value_range(v) for v in operands)
        if first is None or second is None:
            return None
        (alo, ahi), (blo, bhi) = first, second
        if math.inf in (ahi, bhi) and -math.inf in (alo, blo):
            return None  # (inf - inf)
        return alo + blo, ahi + bhi
    return None


def mergeable(a: Quotient, b: Quotient) -> bool:
    """Whether ``a * b`` may be computed with one division (the conditions of the module
    docstring)."""
    na = max(abs(a.numerator[0]), abs(a.numerator[1]))
    nb = max(abs(b.numerator[0]), abs(b.numerator[1]))
    (alo, ahi), (blo, bhi) = a.denominator, b.denominator
    if alo <= 0 or blo <= 0 or not na * nb <= FLOAT32_MAX:
        return False
    if not (na / alo <= FLOAT32_MAX and nb / blo <= FLOAT32_MAX):
        return False  # (a quotient alone may overflow: inf, or NaN times 0, in two divisions)
    if alo * blo < MIN_DENOMINATOR_PRODUCT:
        return False
    return ahi * bhi <= FLOAT32_MAX or min(ahi, bhi) <= 1.0


MIN_DENOMINATOR_PRODUCT = 2.0**-16
"""The least product of the denominators' lower bounds of a merged product: where ``a * c``
is subnormal, the division by ``b * d`` magnifies its rounding by at most ``2 ** 16``, so
only results below ``2 ** 16`` times the least normal float32 (7.7e-34) may lose bits (tanh
times tanh: (2 ** -8) ** 2, exactly). A constant denominator of 1e-20 times one of 1e-15
gave 0 for 1e-15 (found by a fuzzing review)."""


def quotient_product(call: LoweringCall) -> Any:
    """The float32 product ``call`` (under fast math) of two quotients with one division (see
    the module docstring), or None where its arguments are not two :func:`mergeable`
    quotients.

    The product's bindings are its quotients' own, made again at its index: the lowering
    counts them as the stages' (:data:`relay.op.lowering.elemwise.BINDINGS` is left as it
    was), so that it does not take the product for one more binding operator reading them
    (which would materialize the quotients and defeat the merge)."""
    if len(call.args) != 2 or len(call.bound_depths) != 2 or not _can_bind(call):
        return None
    a, b = (quotient_of(t) for t in call.args)
    if a is None or b is None or not mergeable(a, b):
        return None
    for q, depth in zip((a, b), call.bound_depths, strict=True):
        if q.binds and depth > 1:
            return None  # (its argument holds bindings: see Quotient.binds)
    shape, dtype = out(call)

    def body(index: Sequence[Any]) -> Expr:
        va = [_read(t, shape, index) for t in a.sources]
        vb = [_read(t, shape, index) for t in b.sources]

        def inner(n1: Expr, d1: Expr) -> Expr:
            return b.build(vb, lambda n2, d2: (n1 * n2) / _denominator_product(d1, d2))

        return a.build(va, inner)

    count = BINDINGS.count
    try:
        return _compute(shape, dtype, body, call.name)
    finally:
        BINDINGS.count = count
