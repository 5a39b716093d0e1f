"""Type relations of the operators of relay/op/tensor.py: broadcasting arithmetic, comparisons,
logical operators, ``negative`` and ``logical_not``.

Tables of argument types -> the result type (concrete shapes, rank extension, shape variables,
dimension expressions, unknown ``_`` and run-time ``?`` dimensions, dtype variables) or the
exact error message, and text programs with spans. Hypothesis properties: on random concrete
shapes and dtypes the relation accepts exactly what the numpy reference runs (Relay being
stricter in two documented ways) with the type of the reference's output, and symbolic shapes
give the concrete result once substituted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any as TypingAny

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from relay.errors import TypeCheckError
from relay.ir import dim
from relay.ir.types import (
    DTYPES,
    Any,
    IncompleteType,
    Kind,
    TensorType,
    TupleType,
    Type,
    TypeVar,
)
from relay.op import get_op, list_ops
from relay.typecheck import infer_call_type
from tests.type_helpers import T, checked, checked_error, error, infer

n = TypeVar("n", Kind.SHAPE)
m = TypeVar("m", Kind.SHAPE)
d = TypeVar("d", Kind.BASE_TYPE)

ARITH = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "power",
    "mod",
    "floor_mod",
    "maximum",
    "minimum",
]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
BINARY = [*ARITH, *COMPARE, *LOGICAL]
# the bitwise operators have their relations tested in tests/op/test_bitwise.py
BITWISE = ["right_shift", "left_shift", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"]
TENSOR_OPS = sorted([*BINARY, "negative", "logical_not", *BITWISE])


def test_every_tensor_operator_has_a_relation() -> None:
    defined = [
        name
        for name in list_ops()
        if getattr(get_op(name).reference, "__module__", None) == "relay.op.tensor"
    ]
    assert defined == TENSOR_OPS
    assert all(get_op(name).type_relation is not None for name in defined)


# ---- result types -------------------------------------------------------------------------------

U = IncompleteType(Kind.SHAPE)  # an unknown dimension, bound by the relation

# (lhs, rhs, the result's shape as text): the same for every broadcasting operator
SHAPES: list[tuple[TensorType, TensorType, str]] = [
    # concrete, with rank extension on either side
    (T(3, 4), T(3, 4), "(3, 4)"),
    (T(3, 4), T(4), "(3, 4)"),
    (T(4), T(3, 4), "(3, 4)"),
    (T(2, 1, 3), T(4, 1), "(2, 4, 3)"),
    (T(), T(2, 3), "(2, 3)"),
    (T(5), T(), "(5,)"),
    (T(), T(), "()"),
    (T(1, 1), T(1), "(1, 1)"),
    (T(0, 3), T(1, 3), "(0, 3)"),
    (T(0), T(1), "(0,)"),
    # shape variables and dimension expressions
    (T(n, 4), T(4), "(n, 4)"),
    (T(n, 1), T(1, m), "(n, m)"),
    (T(n, 3), T(n, 3), "(n, 3)"),
    (T(1), T(n), "(n,)"),
    (T(n, m), T(m), "(n, m)"),
    (T(dim.mul(n, 3)), T(dim.mul(3, n)), "(n * 3,)"),
    (T(dim.add(n, 1), 2), T(1, 1), "(n + 1, 2)"),
    (T(dim.add(n, m)), T(dim.add(m, n)), "(m + n,)"),
    # Any: a known size above 1 wins, otherwise the result is Any
    (T(Any, 4), T(3, 4), "(3, 4)"),
    (T(3, 4), T(Any, 4), "(3, 4)"),
    (T(Any), T(1), "(?,)"),
    (T(1), T(Any), "(?,)"),
    (T(Any), T(n), "(?,)"),
    (T(Any), T(Any), "(?,)"),
    (T(2, Any), T(Any, 3), "(2, 3)"),
    (T(Any, 1), T(5), "(?, 5)"),
    # an unknown dimension is taken to equal a known one
    (T(U, 4), T(3, 4), "(3, 4)"),
]


def tensor_text(shape: str, dtype: str) -> str:
    """The text of a tensor type (a rank-0 one prints as its dtype)."""
    return dtype if shape == "()" else f"Tensor[{shape}, {dtype}]"


SHAPE_RESULTS: list[tuple[str, TensorType, TensorType, str]] = [
    *[(op, a, b, tensor_text(shape, "float32")) for op in ARITH for a, b, shape in SHAPES],
    *[(op, a, b, tensor_text(shape, "bool")) for op in COMPARE for a, b, shape in SHAPES],
]


@pytest.mark.parametrize(("op", "lhs", "rhs", "expected"), SHAPE_RESULTS)
def test_broadcast_shape(op: str, lhs: TensorType, rhs: TensorType, expected: str) -> None:
    assert infer(op, [lhs, rhs]) == expected


BOOL_PAIR: list[Type] = [T(n, 1, dtype="bool"), T(4, dtype="bool")]

RESULTS: list[tuple[str, list[Type], str]] = [
    # dtypes: kept by arithmetic, bool from comparisons, bool for logical operators
    ("add", [T(2, dtype="int8"), T(2, dtype="int8")], "Tensor[(2,), int8]"),
    ("divide", [T(2, dtype="uint16"), T(dtype="uint16")], "Tensor[(2,), uint16]"),
    ("power", [T(n, dtype="float16"), T(n, dtype="float16")], "Tensor[(n,), float16]"),
    ("maximum", [T(2, dtype="bfloat16"), T(1, dtype="bfloat16")], "Tensor[(2,), bfloat16]"),
    ("add", [T(3, dtype="bool"), T(3, dtype="bool")], "Tensor[(3,), bool]"),
    ("less", [T(n, dtype="int32"), T(dtype="int32")], "Tensor[(n,), bool]"),
    ("equal", [T(2, dtype="bool"), T(2, dtype="bool")], "Tensor[(2,), bool]"),
    *[(op, BOOL_PAIR, "Tensor[(n, 4), bool]") for op in LOGICAL],
    # dtype variables
    ("add", [TensorType((n,), d), TensorType((1,), d)], "Tensor[(n,), d]"),
    ("greater", [TensorType((n,), d), TensorType((n,), d)], "Tensor[(n,), bool]"),
    # the unary operators give their argument's type
    ("negative", [T(n, 3)], "Tensor[(n, 3), float32]"),
    ("negative", [T(Any, dtype="int8")], "Tensor[(?,), int8]"),
    ("logical_not", [T(n, dtype="bool")], "Tensor[(n,), bool]"),
]


@pytest.mark.parametrize(("op", "args", "expected"), RESULTS)
def test_result_type(op: str, args: list[Type], expected: str) -> None:
    assert infer(op, args) == expected


def test_result_types_are_equal_values() -> None:
    assert infer_call_type("add", [T(n, 1), T(1, m)]) == T(n, m)
    assert infer_call_type("less", [T(Any), T(1)]) == T(Any, dtype="bool")


ERRORS: list[tuple[str, list[Type], str]] = [
    # the example
    (
        "add",
        [T(3, 4), T(5)],
        "broadcast: incompatible dimensions 4 and 5 in Tensor[(3, 4), float32] and "
        "Tensor[(5,), float32]",
    ),
    (
        "less",
        [T(2, 3), T(3, 1, 2)],
        "broadcast: incompatible dimensions 3 and 2 in Tensor[(2, 3), float32] and "
        "Tensor[(3, 1, 2), float32]",
    ),
    (
        "multiply",
        [T(n), T(m)],
        "broadcast: incompatible dimensions n and m in Tensor[(n,), float32] and "
        "Tensor[(m,), float32]",
    ),
    (
        "subtract",
        [T(n, 2), T(5, 2)],
        "broadcast: incompatible dimensions n and 5 in Tensor[(n, 2), float32] and "
        "Tensor[(5, 2), float32]",
    ),
    (
        "add",
        [T(dim.mul(n, 3)), T(dim.mul(n, 2))],
        "broadcast: incompatible dimensions n * 3 and n * 2 in Tensor[(n * 3,), float32] and "
        "Tensor[(n * 2,), float32]",
    ),
    # dtypes must match (no implicit promotion, as in Relay)
    (
        "add",
        [T(3), T(3, dtype="int32")],
        "add: dtypes differ: Tensor[(3,), float32] and Tensor[(3,), int32]",
    ),
    (
        "less",
        [T(dtype="int8"), T(dtype="int16")],
        "less: dtypes differ: int8 and int16",
    ),
    (
        "power",
        [TensorType((2,), d), T(2)],
        "power: dtypes differ: Tensor[(2,), d] and Tensor[(2,), float32]",
    ),
    # logical operators need bool
    (
        "logical_and",
        [T(2, dtype="int32"), T(2, dtype="int32")],
        "logical_and: arguments must be bool, got Tensor[(2,), int32] and Tensor[(2,), int32]",
    ),
    (
        "logical_xor",
        [T(n), T(n)],
        "logical_xor: arguments must be bool, got Tensor[(n,), float32] and Tensor[(n,), float32]",
    ),
    (
        "logical_not",
        [T(2, dtype="int32")],
        "logical_not: argument must be bool, got Tensor[(2,), int32]",
    ),
    # a dtype variable may stand for any dtype, not only bool
    (
        "logical_or",
        [TensorType((2,), d), TensorType((2,), d)],
        "logical_or: arguments must be bool, got Tensor[(2,), d] and Tensor[(2,), d]",
    ),
    (
        "logical_not",
        [TensorType((2,), d)],
        "logical_not: argument must be bool, got Tensor[(2,), d]",
    ),
    (
        "subtract",
        [TensorType((2,), d), TensorType((2,), d)],
        "subtract: arguments must be numeric, got Tensor[(2,), d] and Tensor[(2,), d]",
    ),
    # tensors only
    ("add", [TupleType((T(3),)), T(3)], "add: lhs must be a tensor, got (Tensor[(3,), float32],)"),
    ("equal", [T(3), TupleType(())], "equal: rhs must be a tensor, got ()"),
]


@pytest.mark.parametrize(("op", "args", "message"), ERRORS)
def test_error(op: str, args: list[Type], message: str) -> None:
    assert error(op, args) == message


def test_an_unknown_dimension_against_one_stays_unknown() -> None:
    assert error("add", [T(IncompleteType(Kind.SHAPE)), T(1)]) == (
        "add: cannot infer the result type from (Tensor[(_,), float32], Tensor[(1,), float32])"
    )


# ---- whole programs ----------------------------------------------------------------------------


TEXT: list[tuple[str, str]] = [
    (
        "fn (%x: Tensor[(_, 4), float32], %y: Tensor[(3, 4), float32]) { add(%x, %y) }",
        "fn (Tensor[(3, 4), float32], Tensor[(3, 4), float32]) -> Tensor[(3, 4), float32]",
    ),
    (
        "fn (%x: Tensor[(n, 1), int32], %y: Tensor[(m,), int32]) "
        "{ logical_not(less(%x, multiply(%y, %y))) }",
        "fn [n: Shape, m: Shape](Tensor[(n, 1), int32], Tensor[(m,), int32]) "
        "-> Tensor[(n, m), bool]",
    ),
    (
        "fn (%x) -> Tensor[(2,), int8] { negative(%x) }",
        "fn (Tensor[(2,), int8]) -> Tensor[(2,), int8]",
    ),
    (
        "fn (%x: Tensor[(?, 3), float32]) { subtract(%x, 1f) }",
        "fn (Tensor[(?, 3), float32]) -> Tensor[(?, 3), float32]",
    ),
]


@pytest.mark.parametrize(("src", "expected"), TEXT)
def test_text_program_type(src: str, expected: str) -> None:
    assert checked(src) == expected


def test_broadcast_error_carries_the_call_span() -> None:
    src = "fn (%x: Tensor[(3, 4), float32], %y: Tensor[(5,), float32]) { add(%x, %y) }"
    err = checked_error(src)
    assert err.message == (
        "broadcast: incompatible dimensions 4 and 5 in Tensor[(3, 4), float32] and "
        "Tensor[(5,), float32]"
    )
    assert err.span is not None
    assert src[err.span.column - 1 : err.span.end_column - 1] == "add(%x, %y)"


def test_a_broadcast_result_does_not_determine_its_arguments() -> None:
    # %x could be (), (1,) or (3,): the relation waits for it, and it stays unknown
    err = checked_error(
        "fn (%x, %y: Tensor[(3,), float32]) -> Tensor[(3,), float32] { add(%x, %y) }"
    )
    assert err.message == "cannot infer the type of %x; annotate it"


# ---- agreement with the numpy references ---------------------------------------------------------

DTYPE_NAMES = list(DTYPES)
# Relay's rules are stricter than numpy's in two ways: logical operators need bool (numpy
# takes any dtype as truth values), and the two arguments share one dtype (numpy promotes).
BOOL_ARITH = ["add", "multiply", "maximum", "minimum"]


def np_dtype(dtype: str) -> np.dtype[TypingAny]:
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def array(shape: Sequence[int], dtype: str) -> np.ndarray[TypingAny, np.dtype[TypingAny]]:
    """Ones: no division by zero, no negative power, in every dtype."""
    return np.ones(tuple(shape), dtype=np_dtype(dtype))


def type_of(x: np.ndarray[TypingAny, np.dtype[TypingAny]]) -> TensorType:
    return TensorType(tuple(int(s) for s in x.shape), str(x.dtype.name))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)


@st.composite
def binary_cases(draw: st.DrawFn) -> tuple[str, list[tuple[int, ...]], str]:
    """An operator, two shapes (usually broadcastable) and a dtype the relation should take."""
    op = draw(st.sampled_from(BINARY))
    if draw(st.integers(0, 2)):
        found = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
        two = list(found.input_shapes)
    else:
        two = [draw(shapes), draw(shapes)]
    if op in LOGICAL:
        dtype = "bool"
    elif op in ARITH and op not in BOOL_ARITH:
        dtype = draw(st.sampled_from([t for t in DTYPE_NAMES if t != "bool"]))
    else:
        dtype = draw(st.sampled_from(DTYPE_NAMES))
    return op, two, dtype


@settings(max_examples=400)
@given(binary_cases())
def test_binary_relations_agree_with_the_references(
    case: tuple[str, list[tuple[int, ...]], str],
) -> None:
    op, two, dtype = case
    arrays = [array(s, dtype) for s in two]
    reference = get_op(op).reference
    assert reference is not None
    try:
        expected: TensorType | None = type_of(np.asarray(reference(*arrays)))
    except ValueError:  # shapes that do not broadcast
        expected = None
    types = [type_of(a) for a in arrays]
    if expected is None:
        with pytest.raises(TypeCheckError):
            infer_call_type(op, types)
    else:
        assert infer_call_type(op, types) == expected


@settings(max_examples=100)
@given(
    op=st.sampled_from(BINARY),
    dtypes=st.lists(st.sampled_from(DTYPE_NAMES), min_size=2, max_size=2, unique=True),
    two=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
)
def test_different_dtypes_are_rejected(
    op: str, dtypes: list[str], two: hnp.BroadcastableShapes
) -> None:
    a, b = (TensorType(s, t) for s, t in zip(two.input_shapes, dtypes, strict=True))
    assert error(op, [a, b]) in (
        f"{op}: dtypes differ: {a} and {b}",
        f"{op}: arguments must be bool, got {a} and {b}",
    )


@settings(max_examples=200)
@given(
    op=st.sampled_from(BINARY),
    two=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4),
)
def test_symbolic_shapes_substitute_to_the_concrete_result(
    op: str, two: hnp.BroadcastableShapes
) -> None:
    # every size other than 1 becomes a shape variable, one per size
    sizes = {s for shape in two.input_shapes for s in shape if s != 1}
    names = {s: TypeVar(f"s{s}", Kind.SHAPE) for s in sizes}
    back = {v: s for s, v in names.items()}
    dtype = "bool" if op in LOGICAL else "int32"
    args = [
        TensorType(tuple(1 if s == 1 else names[s] for s in shape), dtype)
        for shape in two.input_shapes
    ]
    got = infer_call_type(op, args)
    assert isinstance(got, TensorType)
    concrete = tuple(back[s] if isinstance(s, TypeVar) else s for s in got.shape)
    assert concrete == np.broadcast_shapes(*two.input_shapes)
    assert got.dtype == ("bool" if op in COMPARE or op in LOGICAL else "int32")
