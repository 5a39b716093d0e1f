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
