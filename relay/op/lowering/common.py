"""Helpers every family of lowering rules uses: static shapes and the result's type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay.ir.types import TensorType
from relay.op.registry import LoweringCall


def static(shape: Sequence[Any]) -> tuple[Any, ...]:
    """A shape (of a Relay type or a te.Tensor) as ints; in a kernel of symbolic sizes its
    symbolic dimensions are TIR expressions over the kernel's size variables
    (:func:`relay.backend.lower.lowering_dims`), which a rule that needs a constant size
    refuses with a CompileError (``int()`` of one raises)."""
    from relay.backend.lower import lowering_dims

    return lowering_dims(shape)


def tensor_type(ty: Any) -> tuple[tuple[int, ...], str]:
    """A tensor type's static shape and dtype."""
    assert isinstance(ty, TensorType)
    return static(ty.shape), str(ty.dtype)


def out(call: LoweringCall) -> tuple[tuple[int, ...], str]:
    """The (single) result's static shape and dtype."""
    return tensor_type(call.out_type)


VECTOR_LANES = 16
"""The lanes of the CPU schedules' vectorized reductions (one AVX-512 register of float32)."""


def head_and_tail(extent: Any, reducer: Any) -> int | None:
    """Where a reduction along the last axis, of ``extent`` values, splits in two for the
    CPU: the whole vectors of its head (a multiple of :data:`VECTOR_LANES`), or None when it
    does not split.

    The CPU schedule vectorizes a reduction along contiguous memory by splitting it in lanes
    and factoring them out (``rfactor``: :func:`relay.backend.schedule.cpu.schedule_rfactor`),
    which needs a multiple of the lanes: TVM's ``rfactor`` drops the predicate that a split
    with a tail leaves, and the factored loop then reads past each row. A reduction of 1000
    values is therefore two: the head's 992, factored and vectorized, and the tail's 8 on
    one lane, combined after (:func:`in_head_and_tail`; TensorIR's ``create_prim_func`` drops
    the ``init`` a ``te`` reduction may start from). (128, 1000) along rows: a sum
    took 30 us as one scalar reduction, 4.5 in two; a max 112 us, 10. Only TVM's own
    reducers split (``te.sum``, ``te.max``, ``te.min``: ``rfactor`` knows no other), and
    only for the CPU (the GPU's rules reduce across threads, tail included)."""
    from tvm import te

    from relay.backend.lower import lowering_target

    if lowering_target() != "llvm" or not isinstance(extent, int):
        return None
    if reducer not in (te.sum, te.max, te.min):
        return None
    if extent < 2 * VECTOR_LANES or extent % VECTOR_LANES == 0:
        return None
    return extent - extent % VECTOR_LANES


def in_head_and_tail(
    shape: tuple[int, ...],
    extent: int,
    head: int,
    reducer: Any,
    part: Any,
    name: str,
) -> Any:
    """A reduction of ``extent`` values along the last axis as two, over ``[0, head)`` and
    ``[head, extent)`` (:func:`head_and_tail`), combined after: ``part(index, start, stop)``
    is the reduction over that range at the output index."""
    from tvm import te, tirx

    first = te.compute(shape, lambda *i: part(i, 0, head), name=f"{name}_head")
    rest = te.compute(shape, lambda *i: part(i, head, extent), name=f"{name}_tail")

    def combined(*i: Any) -> Any:
        a, b = first(*i), rest(*i)
        if reducer is te.sum:
            return a + b
        return tirx.max(a, b) if reducer is te.max else tirx.min(a, b)

    return te.compute(shape, combined, name=name)


def bfloat16_to_float32(value: Any) -> Any:
    """The float32 of the bfloat16 TIR ``value``, by its bits (the upper half of a
    float32's). TVM's bfloat16 legalization misses a conversion inside a reduction's value:
    ``argmax`` compared a bfloat16's raw bits as unsigned integers (it took a negative value
    over positive ones), and a bfloat16 ``softmax`` was NaN everywhere (both found by fuzzing
    reviews). The bits are those of a value read from one of the kernel's inputs, which TVM
    stores as 16 bits; anything else is converted by a cast: TVM's legalization sees a value
    computed in the kernel (rounded to bfloat16 first: ``elemwise._round_bf16``), and it
    stores a bfloat16 stage materialized in the kernel as float32 (its bits read as 16 were
    an invalid bitcast, found by the fused-program tests)."""
    from tvm import te, tirx

    loaded = getattr(value, "op", None) is not None and str(value.op.name) == "te.tensor_load"
    source = value.args[0] if loaded else None
    if not (isinstance(source, te.Tensor) and isinstance(source.op, te.PlaceholderOp)):
        return tirx.Cast("float32", value)
    bits = tirx.Cast("uint32", tirx.reinterpret("uint16", value))
    return tirx.reinterpret("float32", bits << tirx.const(16, "uint32"))


def to_bfloat16(value: Any) -> Any:
    """The TIR ``value`` (float32, or another dtype through float32, as ml_dtypes converts)
    as bfloat16, rounded to it first (``elemwise._round_bf16``): TVM computes bfloat16 in
    float32 and drops a ``float32(bfloat16(v))`` pair where a fused kernel reads the value
    back, so an unrounded value kept float32's digits (``leaky_relu`` of -1 was -0.1, not
    bfloat16's -0.10009766; found by a fuzzing review)."""
    from tvm import tirx

    from relay.op.lowering.elemwise import _round_bf16

    wide = value if str(value.ty) == "float32" else tirx.Cast("float32", value)
    return tirx.Cast("bfloat16", _round_bf16(wide))
