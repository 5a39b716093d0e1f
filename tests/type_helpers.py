"""Shared helpers for the type-relation tests: build tensor types, infer a call's type or its
error, and type-check a program in the text format."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import relay
from relay.errors import TypeCheckError
from relay.ir.types import Dim, TensorType, Type
from relay.typecheck import infer_call_type


def T(*shape: Dim, dtype: str = "float32") -> TensorType:
    """``Tensor[shape, dtype]`` (float32 unless said)."""
    return TensorType(tuple(shape), dtype)


def infer(op: str, args: Sequence[Type], attrs: dict[str, object] | None = None) -> str:
    """The printed result type of ``op`` applied to arguments of ``args``."""
    return str(infer_call_type(op, args, attrs))


def error(op: str, args: Sequence[Type], attrs: dict[str, object] | None = None) -> str:
    """The message of the type error that ``op`` applied to ``args`` must raise."""
    with pytest.raises(TypeCheckError) as info:
        infer_call_type(op, args, attrs)
    return info.value.message


def checked(src: str) -> str:
    """The printed checked type of the expression ``src`` in the text format."""
    e = relay.parse_expr(src)
    relay.infer_type(e)
    return str(e.checked_type)


def checked_error(src: str) -> TypeCheckError:
    """The type error that checking the expression ``src`` must raise."""
    e = relay.parse_expr(src)
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(e)
    return info.value
