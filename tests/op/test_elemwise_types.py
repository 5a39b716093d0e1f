"""Type relations of the operators of relay/op/elemwise.py.

Tables of argument types and attributes -> the result type (concrete, symbolic and ``Any``
dimensions, dtype variables) or the exact error message; results flowing back to unknown
arguments and errors with their spans in text programs. Hypothesis properties: on random
concrete inputs a relation accepts exactly what the numpy reference runs and gives the type of
the reference's output, and symbolic shapes give the concrete result once substituted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any as TypingAny

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import relay
from relay.errors import TypeCheckError
from relay.ir.types import DTYPES, Any, Kind, TensorType, TupleType, Type, TypeVar
from relay.op import get_op, list_ops
from relay.typecheck import infer_call_type
from tests.type_helpers import T, checked, checked_error, error, infer

n = TypeVar("n", Kind.SHAPE)
m = TypeVar("m", Kind.SHAPE)
d = TypeVar("d", Kind.BASE_TYPE)

FLOAT_MATH = [
    "exp",
    "log",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "sigmoid",
    "tanh",
    "erf",
    "sin",
    "cos",
    "fast_exp",
    "fast_tanh",
]
NUMERIC_UNARY = ["floor", "ceil", "round", "trunc", "abs", "sign"]
ANY_DTYPE_UNARY = ["copy", "zeros_like", "ones_like"]
TESTS = ["isnan", "isfinite"]
UNARY = [*FLOAT_MATH, *NUMERIC_UNARY, *ANY_DTYPE_UNARY, *TESTS]
ELEMWISE_OPS = sorted(
    [
        *UNARY,
        "clip",
        "cast",
        "cast_like",
        "where",
        "zeros",
        "ones",
        "full",
        "full_like",
        "arange",
    ]
)


def test_every_elemwise_operator_has_a_relation_documented_in_one_line() -> None:
    defined = [
        name
        for name in list_ops()
        if getattr(get_op(name).reference, "__module__", None) == "relay.op.elemwise"
    ]
    assert defined == ELEMWISE_OPS
    for name in defined:
        rel = get_op(name).type_relation
        assert rel is not None, name
        doc = rel.__doc__
        assert doc is not None and "\n" not in doc and doc.endswith("."), (name, doc)


# ---- result types -------------------------------------------------------------------------------

SYMBOLIC_D = TensorType((n,), d)

# the unary operators: (argument, expected result) for each family
FLOAT_ARGS = [
    (T(3, 4), "Tensor[(3, 4), float32]"),
    (T(n, 3, dtype="float16"), "Tensor[(n, 3), float16]"),
    (T(Any, 2, dtype="float64"), "Tensor[(?, 2), float64]"),
    (T(dtype="bfloat16"), "bfloat16"),
    (T(0, n, m), "Tensor[(0, n, m), float32]"),
]
NUMERIC_ARGS = [
    (T(3, 4), "Tensor[(3, 4), float32]"),
    (T(n, dtype="int8"), "Tensor[(n,), int8]"),
    (T(Any, dtype="uint64"), "Tensor[(?,), uint64]"),
    (T(2, m, dtype="float16"), "Tensor[(2, m), float16]"),
]
ANY_ARGS = [
    *NUMERIC_ARGS,
    (SYMBOLIC_D, "Tensor[(n,), d]"),
    (T(n, 2, dtype="bool"), "Tensor[(n, 2), bool]"),
    (T(dtype="int32"), "int32"),
]
TEST_ARGS = [
    (T(3, 4), "Tensor[(3, 4), bool]"),
    (T(n, dtype="int32"), "Tensor[(n,), bool]"),
    (T(Any, 2, dtype="bool"), "Tensor[(?, 2), bool]"),
    (T(dtype="float16"), "bool"),
    (SYMBOLIC_D, "Tensor[(n,), bool]"),
]

UNARY_RESULTS: list[tuple[str, Type, str]] = [
    *[(op, arg, out) for op in FLOAT_MATH for arg, out in FLOAT_ARGS],
    *[(op, arg, out) for op in NUMERIC_UNARY for arg, out in NUMERIC_ARGS],
    *[(op, arg, out) for op in ANY_DTYPE_UNARY for arg, out in ANY_ARGS],
    *[(op, arg, out) for op in TESTS for arg, out in TEST_ARGS],
]


@pytest.mark.parametrize(("op", "arg", "expected"), UNARY_RESULTS)
def test_unary_result_type(op: str, arg: Type, expected: str) -> None:
    assert infer(op, [arg]) == expected


UNARY_ERRORS: list[tuple[str, Type, str]] = [
    *[
        (op, T(3, dtype=dtype), f"{op}: argument must be a float tensor, got Tensor[(3,), {dtype}]")
        for op in FLOAT_MATH
        for dtype in ("int32", "uint8", "bool")
    ],
    *[
        (
            op,
            T(n, 2, dtype="bool"),
            f"{op}: argument must be a numeric tensor, got Tensor[(n, 2), bool]",
        )
        for op in NUMERIC_UNARY
    ],
    *[
        (op, TupleType((T(3),)), f"{op}: argument must be a tensor, got (Tensor[(3,), float32],)")
        for op in [*FLOAT_MATH, *NUMERIC_UNARY, "copy", *TESTS]
    ],
    *[
        (op, TupleType(()), f"{op}: data must be a tensor, got ()")
        for op in ("zeros_like", "ones_like")
    ],
    # a dtype variable may stand for any dtype, so it meets no narrower requirement
    *[
        (op, SYMBOLIC_D, f"{op}: argument must be a float tensor, got Tensor[(n,), d]")
        for op in FLOAT_MATH
    ],
    *[
        (op, SYMBOLIC_D, f"{op}: argument must be a numeric tensor, got Tensor[(n,), d]")
        for op in NUMERIC_UNARY
    ],
]


@pytest.mark.parametrize(("op", "arg", "message"), UNARY_ERRORS)
def test_unary_errors(op: str, arg: Type, message: str) -> None:
    assert error(op, [arg]) == message


def test_the_issue_example_message() -> None:
    assert error("exp", [T(3, dtype="int32")]) == (
        "exp: argument must be a float tensor, got Tensor[(3,), int32]"
    )


RESULTS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # clip: numeric, bounds cast to the dtype
    ("clip", [T(n, 3)], {"a_min": 0.0, "a_max": 6.0}, "Tensor[(n, 3), float32]"),
    ("clip", [T(4, dtype="int8")], {"a_min": -1e9, "a_max": 1e9}, "Tensor[(4,), int8]"),
    ("clip", [T(Any, dtype="uint8")], {"a_min": 3, "a_max": 1}, "Tensor[(?,), uint8]"),
    (
        "clip",
        [T(2, dtype="float16")],
        {"a_min": float("-inf"), "a_max": float("inf")},
        "Tensor[(2,), float16]",
    ),
    # cast: any dtype to the attribute's
    ("cast", [T(n, 3)], {"dtype": "int8"}, "Tensor[(n, 3), int8]"),
    ("cast", [T(Any, dtype="bool")], {"dtype": "float16"}, "Tensor[(?,), float16]"),
    ("cast", [T(dtype="int64")], {"dtype": "bool"}, "bool"),
    ("cast", [T(2, 2, dtype="bfloat16")], {"dtype": "bfloat16"}, "Tensor[(2, 2), bfloat16]"),
    ("cast", [SYMBOLIC_D], {"dtype": "uint32"}, "Tensor[(n,), uint32]"),
    # where: three-way broadcasting, any condition dtype (nonzero selects x)
    ("where", [T(3, 4, dtype="bool"), T(3, 4), T(3, 4)], {}, "Tensor[(3, 4), float32]"),
    ("where", [T(dtype="bool"), T(2, 3), T(3)], {}, "Tensor[(2, 3), float32]"),
    ("where", [T(2, 1, 1, dtype="bool"), T(4, 1), T(5)], {}, "Tensor[(2, 4, 5), float32]"),
    ("where", [T(n, 1, dtype="bool"), T(1, 4), T(4)], {}, "Tensor[(n, 4), float32]"),
    ("where", [T(n, dtype="bool"), T(n), T(1)], {}, "Tensor[(n,), float32]"),
    ("where", [T(1, dtype="int32"), T(m, dtype="int8"), T(dtype="int8")], {}, "Tensor[(m,), int8]"),
    ("where", [T(Any, 3, dtype="bool"), T(4, 1), T(3)], {}, "Tensor[(4, 3), float32]"),
    ("where", [T(Any, dtype="bool"), T(1), T(1)], {}, "Tensor[(?,), float32]"),
    ("where", [T(Any, dtype="bool"), T(n), T(n)], {}, "Tensor[(?,), float32]"),
    ("where", [T(0, dtype="bool"), T(1), T(0)], {}, "Tensor[(0,), float32]"),
    ("where", [TensorType((n,), d), SYMBOLIC_D, SYMBOLIC_D], {}, "Tensor[(n,), d]"),
    # zeros, ones: everything from the attributes
    ("zeros", [], {"shape": [2, 3], "dtype": "float32"}, "Tensor[(2, 3), float32]"),
    ("zeros", [], {"shape": [], "dtype": "int8"}, "int8"),
    ("ones", [], {"shape": [0, 4], "dtype": "bool"}, "Tensor[(0, 4), bool]"),
    ("ones", [], {"shape": [5], "dtype": "uint16"}, "Tensor[(5,), uint16]"),
    # full: the fill value is a scalar of any dtype; an empty dtype is the fill's
    ("full", [T()], {"shape": [2, 3]}, "Tensor[(2, 3), float32]"),
    ("full", [T(dtype="int32")], {"shape": [4], "dtype": "float16"}, "Tensor[(4,), float16]"),
    ("full", [T(dtype="bool")], {}, "bool"),
    ("full", [TensorType((), d)], {"shape": [1]}, "Tensor[(1,), d]"),
    ("full", [TensorType((), d)], {"shape": [1], "dtype": "int8"}, "Tensor[(1,), int8]"),
    # full_like: data's type, a fill value of any dtype
    ("full_like", [T(n, 3), T(dtype="int64")], {}, "Tensor[(n, 3), float32]"),
    ("full_like", [T(Any, dtype="int8"), T()], {}, "Tensor[(?,), int8]"),
    ("full_like", [SYMBOLIC_D, T(dtype="bool")], {}, "Tensor[(n,), d]"),
    # cast_like: data's shape, dtype_like's dtype
    ("cast_like", [T(2, 3, dtype="int32"), T(dtype="float16")], {}, "Tensor[(2, 3), float16]"),
    ("cast_like", [T(n), T(4, dtype="bool")], {}, "Tensor[(n,), bool]"),
    # arange: scalars of the dtype attribute; the length is a run-time value
    ("arange", [T(), T(), T()], {}, "Tensor[(?,), float32]"),
    (
        "arange",
        [T(dtype="int32"), T(dtype="int32"), T(dtype="int32")],
        {"dtype": "int32"},
        "Tensor[(?,), int32]",
    ),
]


@pytest.mark.parametrize(("op", "args", "attrs", "expected"), RESULTS)
def test_result_type(op: str, args: list[Type], attrs: dict[str, object], expected: str) -> None:
    assert infer(op, args, attrs) == expected


def test_result_types_are_equal_values() -> None:
    assert infer_call_type("where", [T(n, 1, dtype="bool"), T(1, 4), T(4)]) == T(n, 4)
    assert infer_call_type("cast", [T(Any)], {"dtype": "int8"}) == T(Any, dtype="int8")
    assert infer_call_type("arange", [T(), T(), T()]) == T(Any)


ERRORS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # clip
    (
        "clip",
        [T(3, dtype="bool")],
        {"a_min": 0, "a_max": 1},
        "clip: argument must be a numeric tensor, got Tensor[(3,), bool]",
    ),
    (
        "clip",
        [SYMBOLIC_D],
        {"a_min": 0, "a_max": 1},
        "clip: argument must be a numeric tensor, got Tensor[(n,), d]",
    ),
    ("clip", [T(3)], {"a_min": float("nan"), "a_max": 1}, "clip: a_min must not be nan"),
    ("clip", [T(3)], {"a_min": 0, "a_max": float("nan")}, "clip: a_max must not be nan"),
    ("clip", [TupleType(())], {"a_min": 0, "a_max": 1}, "clip: argument must be a tensor, got ()"),
    # cast
    (
        "cast",
        [TupleType((T(2),))],
        {"dtype": "int8"},
        "cast: argument must be a tensor, got (Tensor[(2,), float32],)",
    ),
    # where
    (
        "where",
        [T(3, 4, dtype="bool"), T(5), T(1)],
        {},
        "where: incompatible dimensions 4 and 5 in Tensor[(3, 4), bool] and Tensor[(5,), float32]",
    ),
    (
        "where",
        [T(dtype="bool"), T(2, 3), T(4, 1)],
        {},
        "where: incompatible dimensions 2 and 4 in Tensor[(2, 3), float32] and "
        "Tensor[(4, 1), float32]",
    ),
    (
        "where",
        [T(1, 3, dtype="bool"), T(2, 1), T(1, 4)],
        {},
        "where: incompatible dimensions 3 and 4 in Tensor[(1, 3), bool] and "
        "Tensor[(1, 4), float32]",
    ),
    (
        "where",
        [T(n, dtype="bool"), T(m), T(m)],
        {},
        "where: incompatible dimensions n and m in Tensor[(n,), bool] and Tensor[(m,), float32]",
    ),
    (
        "where",
        [T(dtype="bool"), T(3), T(3, dtype="int32")],
        {},
        "where: x and y must have the same dtype, got Tensor[(3,), float32] and "
        "Tensor[(3,), int32]",
    ),
    ("where", [TupleType(()), T(3), T(3)], {}, "where: condition must be a tensor, got ()"),
    ("where", [T(3), TupleType(()), T(3)], {}, "where: x must be a tensor, got ()"),
    ("where", [T(3), T(3), TupleType(())], {}, "where: y must be a tensor, got ()"),
    # zeros, ones, full
    (
        "zeros",
        [],
        {"shape": [2, -1], "dtype": "float32"},
        "zeros: shape (2, -1) has a negative dimension",
    ),
    ("ones", [], {"shape": [-3], "dtype": "int8"}, "ones: shape (-3,) has a negative dimension"),
    ("full", [T()], {"shape": [-1, 2]}, "full: shape (-1, 2) has a negative dimension"),
    (
        "full",
        [T(2)],
        {"shape": [2]},
        "full: fill_value must be a scalar (rank 0), got Tensor[(2,), float32]",
    ),
    (
        "full",
        [T(n)],
        {"shape": [2], "dtype": "int8"},
        "full: fill_value must be a scalar (rank 0), got Tensor[(n,), float32]",
    ),
    ("full", [TupleType(())], {"dtype": "int8"}, "full: fill_value must be a tensor, got ()"),
    # full_like
    (
        "full_like",
        [T(3), T(1)],
        {},
        "full_like: fill_value must be a scalar (rank 0), got Tensor[(1,), float32]",
    ),
    ("full_like", [TupleType(()), T()], {}, "full_like: data must be a tensor, got ()"),
    ("full_like", [T(3), TupleType(())], {}, "full_like: fill_value must be a tensor, got ()"),
    # arange
    (
        "arange",
        [T(1), T(), T()],
        {},
        "arange: start must be a scalar (rank 0), got Tensor[(1,), float32]",
    ),
    ("arange", [T(), T(dtype="int32"), T()], {}, "arange: stop must have dtype float32, got int32"),
    (
        "arange",
        [T(dtype="int64"), T(dtype="int64"), T(dtype="int32")],
        {"dtype": "int64"},
        "arange: step must have dtype int64, got int32",
    ),
    ("arange", [T(), T(), TupleType(())], {}, "arange: step must be a tensor, got ()"),
    # results must be tensors that can exist: rank at most 64, at most 2**63 - 1 bytes
    (
        "zeros",
        [],
        {"shape": [1] * 65, "dtype": "int8"},
        "zeros: the result would have rank 65, above the maximum rank 64",
    ),
    (
        "ones",
        [],
        {"shape": [2**62, 2], "dtype": "int8"},
        "ones: the result shape (4611686018427387904, 2) of int8 is too big "
        "(more than 2**63 - 1 bytes)",
    ),
    (
        "full",
        [T()],
        {"shape": [2**61, 0, 2]},
        "full: the result shape (2305843009213693952, 0, 2) of float32 is too big "
        "(more than 2**63 - 1 bytes)",
    ),
]


@pytest.mark.parametrize(("op", "args", "attrs", "message"), ERRORS)
def test_error(op: str, args: list[Type], attrs: dict[str, object], message: str) -> None:
    assert error(op, args, attrs) == message


def test_attributes_are_validated_before_the_relation_runs() -> None:
    assert error("cast", [T(3)], {"dtype": "float8"}) == (
        "attribute dtype of cast must be one of 'bool', 'int8', 'int16', 'int32', 'int64', "
        "'uint8', 'uint16', 'uint32', 'uint64', 'float16', 'float32', 'float64', 'bfloat16', "
        "got 'float8'"
    )
    assert error("zeros", [], {"shape": [2]}) == "zeros requires attribute dtype"


# ---- whole programs: information flowing back, spans -------------------------------------------


TEXT: list[tuple[str, str]] = [
    # a known result gives an unknown argument its type...
    (
        "fn (%x) -> Tensor[(3, 4), float32] { exp(%x) }",
        "fn (Tensor[(3, 4), float32]) -> Tensor[(3, 4), float32]",
    ),
    (
        "fn (%x) -> Tensor[(n, 2), int8] { abs(clip(%x, a_min=0, a_max=3)) }",
        "fn [n: Shape](Tensor[(n, 2), int8]) -> Tensor[(n, 2), int8]",
    ),
    (
        "fn (%x, %v: int32) -> Tensor[(2,), bool] { full_like(zeros_like(%x), %v) }",
        "fn (Tensor[(2,), bool], int32) -> Tensor[(2,), bool]",
    ),
    # ... as far as it determines it: arange's dtype attribute, cast's result shape
    (
        'fn (%a, %b, %c) { arange(%a, %b, %c, dtype="int32") }',
        "fn (int32, int32, int32) -> Tensor[(?,), int32]",
    ),
    (
        'fn (%x: Tensor[(_, 4), int32]) -> Tensor[(3, 4), int8] { cast(%x, dtype="int8") }',
        "fn (Tensor[(3, 4), int32]) -> Tensor[(3, 4), int8]",
    ),
    (
        "fn (%x: Tensor[(2, _), bool]) -> Tensor[(2, 5), bool] { isnan(%x) }",
        "fn (Tensor[(2, 5), bool]) -> Tensor[(2, 5), bool]",
    ),
    # creation and broadcasting in a program
    (
        "fn (%c: Tensor[(n, 1), bool], %x: Tensor[(1, 4), float32]) "
        '{ where(%c, %x, full(0f, shape=[4], dtype="float32")) }',
        "fn [n: Shape](Tensor[(n, 1), bool], Tensor[(1, 4), float32]) -> Tensor[(n, 4), float32]",
    ),
    ('ones(shape=[2, 3], dtype="int8")', "Tensor[(2, 3), int8]"),
    ("full(1f, shape=[2])", "Tensor[(2,), float32]"),
    # arange's length is known when its arguments are constants, directly or through a let
    ("arange(0f, 5f, 1f)", "Tensor[(5,), float32]"),
    ("arange(0f, 1f, 0.3f)", "Tensor[(4,), float32]"),
    ('arange(10, 0, -3, dtype="int32")', "Tensor[(4,), int32]"),
    ('arange(5, 0, 1, dtype="int32")', "Tensor[(0,), int32]"),
    ('let %n = 7; arange(2, %n, 1, dtype="int32")', "Tensor[(5,), int32]"),
    ('fn (%n: int32) { arange(0, %n, 1, dtype="int32") }', "fn (int32) -> Tensor[(?,), int32]"),
    (
        "fn (%x: Tensor[(n, 3), float16]) { isfinite(sigmoid(%x)) }",
        "fn [n: Shape](Tensor[(n, 3), float16]) -> Tensor[(n, 3), bool]",
    ),
]


@pytest.mark.parametrize(("src", "expected"), TEXT)
def test_text_program_type(src: str, expected: str) -> None:
    assert checked(src) == expected


def test_arange_with_constant_zero_step_is_a_type_error() -> None:
    err = checked_error('arange(0, 10, 0, dtype="int32")')
    assert err.message == "arange: step must not be zero"


def test_creation_at_the_limits_agrees_with_the_reference() -> None:
    # zero dimensions are left out of the size, as numpy does
    attrs = {"shape": [2**62, 0, 1], "dtype": "int8"}
    assert infer_call_type("zeros", [], attrs) == TensorType((2**62, 0, 1), "int8")
    assert get_op("zeros").reference(**get_op("zeros").validate_attrs(attrs)).shape == (2**62, 0, 1)
    attrs = {"shape": [1] * 64, "dtype": "bool"}
    assert infer_call_type("ones", [], attrs) == TensorType((1,) * 64, "bool")
    assert get_op("ones").reference(**get_op("ones").validate_attrs(attrs)).shape == (1,) * 64


def test_arange_with_a_constant_length_too_big_is_a_type_error() -> None:
    from relay.ir import Call, Op, const
    from relay.ir.attrs import Attrs

    e = Call(Op("arange"), (const(0.0), const(1e30), const(1.0)), Attrs(dtype="float32"))
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(e)
    assert info.value.message == (
        "arange: the result shape (1000000015047466219876688855040,) of float32 is too big "
        "(more than 2**63 - 1 bytes)"
    )


def test_arange_constant_length_matches_the_interpreter() -> None:
    for start, stop, step in [(0.0, 1.0, 0.1), (-2.5, 3.0, 0.75), (1.0, -1.0, -0.3)]:
        e = relay.parse_expr(f"arange({start}f, {stop}f, {step}f)")
        relay.infer_type(e)
        assert e.checked_type.shape == relay.interpret(e).shape


def test_relation_error_carries_the_call_span() -> None:
    src = "fn (%x: Tensor[(3,), int32]) { sqrt(%x) }"
    err = checked_error(src)
    assert err.message == "sqrt: argument must be a float tensor, got Tensor[(3,), int32]"
    assert err.span is not None
    assert src[err.span.column - 1 : err.span.end_column - 1] == "sqrt(%x)"


def test_an_argument_typed_later_is_still_checked() -> None:
    # exp first runs with %x unknown; the annotation on the let then types %x as int32
    err = checked_error("fn (%x) { let %y: Tensor[(3,), int32] = exp(%x); %y }")
    assert err.message == "exp: argument must be a float tensor, got Tensor[(3,), int32]"


def test_a_result_gives_only_the_shape_when_the_dtype_changes() -> None:
    err = checked_error("fn (%x) -> Tensor[(3, 4), bool] { isnan(%x) }")
    assert err.message == "cannot infer the type of %x; annotate it"
    err = checked_error("fn (%v) { full(%v, shape=[2]) }")
    assert err.message == "cannot infer the type of %v; annotate it"


def test_independent_errors_are_all_reported() -> None:
    src = (
        "fn (%x: Tensor[(3,), int32], %c: Tensor[(2,), bool]) "
        '{ (log(%x), where(%c, %x, zeros(shape=[3], dtype="int32"))) }'
    )
    err = checked_error(src)
    assert [e.message for e in err.errors] == [
        "log: argument must be a float tensor, got Tensor[(3,), int32]",
        "where: incompatible dimensions 2 and 3 in Tensor[(2,), bool] and Tensor[(3,), int32]",
    ]


# ---- agreement with the numpy references ---------------------------------------------------------

Draw = st.DrawFn
DTYPE_NAMES = list(DTYPES)


def np_dtype(dtype: str) -> np.dtype[TypingAny]:
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def array(shape: Sequence[int], dtype: str) -> np.ndarray[TypingAny, np.dtype[TypingAny]]:
    """Ones: a value every operator accepts and every dtype represents."""
    return np.ones(tuple(shape), dtype=np_dtype(dtype))


def type_of(x: np.ndarray[TypingAny, np.dtype[TypingAny]]) -> TensorType:
    return TensorType(tuple(int(s) for s in x.shape), str(x.dtype.name))


def agree(op: str, arrays: Sequence[TypingAny], attrs: dict[str, object]) -> None:
    """The relation accepts the arrays' types iff the reference runs, with the same type."""
    reference = get_op(op).reference
    assert reference is not None
    try:
        expected: Type | None = type_of(np.asarray(reference(*arrays, **attrs)))
    except (ValueError, TypeError):
        expected = None
    types = [type_of(np.asarray(a)) for a in arrays]
    if expected is None:
        with pytest.raises(TypeCheckError):
            infer_call_type(op, types, attrs)
        return
    got = infer_call_type(op, types, attrs)
    if op == "arange":
        # the length is a run-time value: the relation gives (?,) of the reference's dtype
        assert isinstance(expected, TensorType) and expected.ndim == 1
        expected = TensorType((Any,), expected.dtype)
    assert got == expected


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
dtypes = st.sampled_from(DTYPE_NAMES)


@settings(max_examples=300)
@given(
    op=st.sampled_from([*UNARY, "clip", "cast"]),
    shape=shapes,
    dtype=dtypes,
    target=dtypes,
    bounds=st.tuples(st.floats(allow_nan=False), st.floats(allow_nan=False)),
)
def test_unary_relations_agree_with_the_references(
    op: str, shape: tuple[int, ...], dtype: str, target: str, bounds: tuple[float, float]
) -> None:
    attrs: dict[str, object] = {}
    if op == "clip":
        attrs = {"a_min": bounds[0], "a_max": bounds[1]}
    elif op == "cast":
        attrs = {"dtype": target}
    agree(op, [array(shape, dtype)], attrs)


@st.composite
def where_cases(draw: Draw) -> tuple[list[tuple[int, ...]], list[str]]:
    """Three shapes, usually mutually broadcastable, and three dtypes, x's and y's usually one."""
    if draw(st.integers(0, 3)):
        found = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
        three = list(found.input_shapes)
    else:
        three = [draw(shapes) for _ in range(3)]
    x_dtype = draw(dtypes)
    y_dtype = draw(st.sampled_from([x_dtype, x_dtype, x_dtype, *DTYPE_NAMES]))
    return three, [draw(dtypes), x_dtype, y_dtype]


@settings(max_examples=300)
@given(where_cases())
def test_where_relation_agrees_with_the_reference(
    case: tuple[list[tuple[int, ...]], list[str]],
) -> None:
    three, dts = case
    agree("where", [array(s, t) for s, t in zip(three, dts, strict=True)], {})


@settings(max_examples=200)
@given(
    op=st.sampled_from(["zeros", "ones", "full", "full_like", "arange"]),
    shape=st.lists(st.integers(-1, 3), max_size=3).map(tuple),
    dtype=dtypes,
    other=st.sampled_from(["", *DTYPE_NAMES]),
    ints=st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(1, 3)),
)
def test_creation_relations_agree_with_the_references(
    op: str,
    shape: tuple[int, ...],
    dtype: str,
    other: str,
    ints: tuple[int, int, int],
) -> None:
    if op in ("zeros", "ones"):
        agree(op, [], {"shape": shape, "dtype": dtype})
    elif op == "full":
        agree(op, [array((), dtype)], {"shape": shape, "dtype": other})
    elif op == "full_like":
        fill = other or dtype
        agree(op, [array(tuple(abs(s) for s in shape), dtype), array((), fill)], {})
    else:
        # bool has no arange (no step that moves); its three scalars of other dtypes still agree
        target = "int32" if dtype == "bool" else dtype
        given_dtypes = [target, target, other or target]
        scalars = [
            np.asarray(v).astype(np_dtype(t)) for v, t in zip(ints, given_dtypes, strict=True)
        ]
        agree(op, scalars, {"dtype": target})


def test_arange_with_a_mismatched_dtype_agrees_with_the_reference() -> None:
    scalars = [np.asarray(0, "int32"), np.asarray(3, "int32"), np.asarray(1, "int64")]
    agree("arange", scalars, {"dtype": "int32"})


@st.composite
def symbolic_where(draw: Draw) -> list[tuple[int, ...]]:
    found = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=4))
    return list(found.input_shapes)


@settings(max_examples=200)
@given(symbolic_where())
def test_symbolic_where_substitutes_to_the_concrete_result(three: list[tuple[int, ...]]) -> None:
    # every size other than 1 becomes a shape variable, one per size
    names = {s: TypeVar(f"s{s}", Kind.SHAPE) for shape in three for s in shape if s != 1}
    sizes = {v: s for s, v in names.items()}

    def symbolic(shape: tuple[int, ...], dtype: str) -> TensorType:
        return TensorType(tuple(1 if s == 1 else names[s] for s in shape), dtype)

    args = [symbolic(three[0], "bool"), symbolic(three[1], "int8"), symbolic(three[2], "int8")]
    got = infer_call_type("where", args)
    assert isinstance(got, TensorType)
    concrete = tuple(sizes[s] if isinstance(s, TypeVar) else s for s in got.shape)
    assert concrete == np.broadcast_shapes(*three)
    assert got.dtype == "int8"
