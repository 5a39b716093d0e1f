"""Dtype variables (``T: BaseType``) stand for any dtype: operators restricted to some dtypes
reject them, operators that take every dtype accept them; only a dtype still unknown to the
solver is left undecided."""

from __future__ import annotations

import pytest

import relay
from relay.errors import TypeCheckError
from relay.ir.types import IncompleteType, Kind, TypeVar
from relay.typecheck.relation import is_dtype

HEADER = '#[version = "0.0.5"]\n'


def generic(body: str, arg: str = "Tensor[(2,), float32]") -> relay.Module:
    """``@g[T: BaseType]`` applying ``body`` to ``%x: Tensor[(2,), T]``, called by ``@main``."""
    return relay.parse(
        HEADER
        + f"def @g[T: BaseType](%x: Tensor[(2,), T]) {{ {body} }}\n"
        + f"def @main(%a: {arg}) {{ @g(%a) }}\n"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("logical_not(%x)", "logical_not: argument must be bool, got Tensor[(2,), T]"),
        ("exp(%x)", "exp: argument must be a float tensor, got Tensor[(2,), T]"),
        ("sqrt(%x)", "sqrt: argument must be a float tensor, got Tensor[(2,), T]"),
        ("negative(%x)", "negative: argument must be numeric, got Tensor[(2,), T]"),
        (
            "nn.softmax(%x)",
            "nn.softmax: data must be a floating-point tensor, got Tensor[(2,), T]",
        ),
        (
            "logical_and(%x, %x)",
            "logical_and: arguments must be bool, got Tensor[(2,), T] and Tensor[(2,), T]",
        ),
        (
            "nn.dense(reshape(%x, newshape=[1, 2]), reshape(%x, newshape=[1, 2]))",
            "nn.dense: data must be a numeric tensor, got Tensor[(1, 2), T]",
        ),
        ("logsumexp(%x)", "logsumexp: data must be floating-point, got Tensor[(2,), T]"),
    ],
)
def test_restricted_operators_reject_a_dtype_variable(body: str, message: str) -> None:
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(generic(body))
    assert [e.message for e in info.value.errors] == [message]
    assert str(info.value.span).startswith("<string>:2:")  # at the call in @g's body


@pytest.mark.parametrize(
    "body",
    [
        "add(%x, %x)",
        "equal(%x, %x)",
        "reshape(%x, newshape=[2, 1])",
        "concatenate((%x, %x), axis=0)",
        "(%x, zeros_like(%x))",
    ],
)
def test_operators_of_every_dtype_accept_a_dtype_variable(body: str) -> None:
    relay.infer_type(generic(body))


def test_a_restricted_operator_still_accepts_its_dtypes_through_instantiation() -> None:
    mod = relay.parse(
        HEADER
        + "def @g[T: BaseType](%x: Tensor[(2,), T]) -> Tensor[(2,), T] { %x }\n"
        + "def @main(%a: Tensor[(2,), float32]) { exp(@g(%a)) }\n"
    )
    relay.infer_type(mod)
    assert str(mod.get_global_var("main").checked_type) == (
        "fn (Tensor[(2,), float32]) -> Tensor[(2,), float32]"
    )


def test_is_dtype() -> None:
    t = TypeVar("T", Kind.BASE_TYPE)
    assert is_dtype("float16", "float") is True
    assert is_dtype("bfloat16", "float") is True
    assert is_dtype("uint8", "int") is False
    assert is_dtype("uint8", "int", "uint") is True
    # a dtype variable is of the kinds asked only when they cover every dtype
    assert is_dtype(t, "float") is False
    assert is_dtype(t, "float", "int", "uint") is False
    assert is_dtype(t, "bool", "uint", "int", "float") is True
    # an inference variable may still become anything
    assert is_dtype(IncompleteType(Kind.BASE_TYPE), "float") is None
