"""The bit operators of relay/op/tensor.py (``right_shift``, ``left_shift``, ``bitwise_and``,
``bitwise_or``, ``bitwise_xor``, ``bitwise_not``): registry entries, numpy references (numpy
2.x's results, shift counts outside ``[0, bits)`` included), type relations with their exact
errors, the text format and the interpreter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import relay
from relay.errors import TypeCheckError
from relay.ir import Call, Var
from relay.ir.attrs import Attrs
from relay.ir.types import Kind, TensorType, TypeVar
from relay.op import OpPattern, get_op
from relay.op.registry import MissingRuleError
from tests.type_helpers import T, error, infer

Array = np.ndarray[Any, np.dtype[Any]]

SHIFTS: dict[str, Callable[..., Any]] = {"right_shift": np.right_shift, "left_shift": np.left_shift}
LOGIC: dict[str, Callable[..., Any]] = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
BINARY = {**SHIFTS, **LOGIC}
ALL = [*BINARY, "bitwise_not"]
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = SIGNED + UNSIGNED


def ref(name: str) -> Callable[..., Any]:
    reference = get_op(name).reference
    assert reference is not None, name
    return reference


def check_array(result: object, expected: Array) -> None:
    """``result`` is an array (never a numpy scalar) equal to ``expected``, of its dtype."""
    assert type(result) is np.ndarray
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


# ---- the registry entries ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_registry_entries(name: str) -> None:
    opdef = get_op(name)
    unary = name == "bitwise_not"
    assert opdef.num_inputs == (1 if unary else 2)
    assert opdef.pattern is (OpPattern.ELEMWISE if unary else OpPattern.BROADCAST)
    assert opdef.doc and opdef.type_relation is not None and opdef.lowering is not None


@pytest.mark.parametrize("name", ALL)
def test_no_derivative(name: str) -> None:
    arity = get_op(name).num_inputs
    args = tuple(Var(f"x{i}", TensorType((2,), "int32")) for i in range(arity))
    call = Call(get_op(name).op, args, Attrs({}))
    message = f"cannot differentiate through {name}: it computes on the bits of integers"
    for slot, seed in (("gradient", Var("g", TensorType((2,), "int32"))), ("jvp", [None])):
        with pytest.raises(MissingRuleError) as info:
            get_op(name).rule(slot)(call, seed)
        assert info.value.message == message


# ---- references: exact values ----------------------------------------------------------------------

# (operator, dtype, x, count, numpy's result)
VALUES: list[tuple[str, str, int, int, int]] = [
    ("left_shift", "int8", 100, 1, -56),  # wraps
    ("left_shift", "int8", 1, 7, -128),
    ("left_shift", "int8", -3, 1, -6),
    ("left_shift", "int8", 1, 8, 0),  # count == bits
    ("left_shift", "int8", 1, -1, 0),  # a negative count is a huge unsigned one
    ("left_shift", "int32", 3, 31, -(2**31)),
    ("left_shift", "int32", 3, 32, 0),
    ("left_shift", "int64", -1, 63, -(2**63)),
    ("left_shift", "int64", -1, 64, 0),
    ("left_shift", "uint8", 200, 1, 144),
    ("left_shift", "uint8", 255, 255, 0),
    ("left_shift", "uint64", 1, 63, 2**63),
    ("left_shift", "uint64", 1, 2**63, 0),
    ("right_shift", "int8", -3, 1, -2),  # arithmetic: rounds toward -infinity
    ("right_shift", "int8", -128, 7, -1),
    ("right_shift", "int8", -3, 8, -1),  # out of range: the sign fill
    ("right_shift", "int8", 5, 8, 0),
    ("right_shift", "int8", -3, -1, -1),
    ("right_shift", "int8", 5, -128, 0),
    ("right_shift", "int32", -(2**31), 31, -1),
    ("right_shift", "int32", 2**31 - 1, 30, 1),
    ("right_shift", "int32", 2**31 - 1, 100, 0),
    ("right_shift", "int64", -5, 64, -1),
    ("right_shift", "int64", -5, -(2**63), -1),
    ("right_shift", "uint8", 200, 7, 1),
    ("right_shift", "uint8", 200, 8, 0),
    ("right_shift", "uint32", 2**32 - 1, 31, 1),
    ("right_shift", "uint32", 2**32 - 1, 32, 0),
    ("right_shift", "uint64", 2**64 - 1, 63, 1),
    ("right_shift", "uint64", 2**64 - 1, 2**64 - 1, 0),
    ("bitwise_and", "int8", -1, 0x55, 0x55),
    ("bitwise_and", "int16", -4, 7, 4),
    ("bitwise_or", "uint8", 0xF0, 0x0F, 0xFF),
    ("bitwise_or", "int32", -(2**31), 1, -(2**31) + 1),
    ("bitwise_xor", "int64", -1, 2**62, -1 - 2**62),
    ("bitwise_xor", "uint16", 0xFFFF, 0x00FF, 0xFF00),
]


@pytest.mark.parametrize(("name", "dtype", "x", "count", "expected"), VALUES)
def test_values(name: str, dtype: str, x: int, count: int, expected: int) -> None:
    a, b = np.array(x, dtype), np.array(count, dtype)
    check_array(ref(name)(a, b), np.array(expected, dtype))
    check_array(ref(name)(a, b), np.asarray(BINARY[name](a, b)))  # and numpy agrees


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("name", list(SHIFTS))
def test_shifts_of_every_8_bit_pair(name: str, dtype: str) -> None:
    values = np.arange(256, dtype=np.uint8).view(dtype)
    x, count = values[:, None], values[None, :]
    check_array(ref(name)(x, count), np.asarray(SHIFTS[name](x, count)))


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_not(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 0, 1, 5], dtype)
    check_array(ref("bitwise_not")(x), np.invert(x))
    check_array(ref("bitwise_not")(np.array(3, dtype)), np.asarray(np.invert(np.array(3, dtype))))


def test_bool_in_bool_out() -> None:
    a = np.array([[True], [False]])
    b = np.array([True, False, True])
    for name, fn in LOGIC.items():
        check_array(ref(name)(a, b), fn(a, b))
    check_array(ref("bitwise_not")(b), np.array([False, True, False]))


@pytest.mark.parametrize("name", list(SHIFTS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bool"])
def test_shift_references_reject_floats_and_bool(name: str, dtype: str) -> None:
    x = np.ones(3, dtype)
    with pytest.raises(TypeError, match=f"{name}: arguments must be integers"):
        ref(name)(x, x)


# ---- references: properties ------------------------------------------------------------------------


@st.composite
def shift_operands(draw: st.DrawFn) -> tuple[Array, Array]:
    """An integer dtype, ``x`` of any values and counts of broadcastable shapes, about half of
    them in ``[-2, bits + 2]`` and the others anywhere in the dtype."""
    dtype = draw(st.sampled_from(INTS))
    info = np.iinfo(dtype)
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3))
    anything = st.integers(int(info.min), int(info.max))
    near = st.integers(max(int(info.min), -2), info.bits + 2)
    x = draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=anything))
    count = draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=near | anything))
    return np.asarray(x), np.asarray(count)


@settings(max_examples=300)
@given(args=shift_operands(), name=st.sampled_from(list(SHIFTS)))
def test_shifts_match_numpy(args: tuple[Array, Array], name: str) -> None:
    check_array(ref(name)(*args), np.asarray(SHIFTS[name](*args)))


@settings(max_examples=200)
@given(data=st.data(), name=st.sampled_from(list(LOGIC)))
def test_bitwise_logic_matches_numpy(data: st.DataObject, name: str) -> None:
    dtype = data.draw(st.sampled_from([*INTS, "bool"]))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3))
    a, b = (np.asarray(data.draw(hnp.arrays(dtype, s))) for s in shapes.input_shapes)
    check_array(ref(name)(a, b), np.asarray(LOGIC[name](a, b)))
    check_array(ref("bitwise_not")(a), np.asarray(np.invert(a)))


# ---- type relations --------------------------------------------------------------------------------

n = TypeVar("n", Kind.SHAPE)
d = TypeVar("d", Kind.BASE_TYPE)

RESULTS: list[tuple[str, list[TensorType], str]] = [
    ("right_shift", [T(3, 4, dtype="int32"), T(4, dtype="int32")], "Tensor[(3, 4), int32]"),
    ("left_shift", [T(dtype="uint8"), T(n, dtype="uint8")], "Tensor[(n,), uint8]"),
    ("right_shift", [T(2, 1, dtype="int64"), T(1, 5, dtype="int64")], "Tensor[(2, 5), int64]"),
    ("bitwise_and", [T(3, dtype="int8"), T(3, dtype="int8")], "Tensor[(3,), int8]"),
    ("bitwise_or", [T(n, 1, dtype="bool"), T(4, dtype="bool")], "Tensor[(n, 4), bool]"),
    ("bitwise_xor", [T(dtype="uint64"), T(2, dtype="uint64")], "Tensor[(2,), uint64]"),
    ("bitwise_not", [T(n, 3, dtype="int16")], "Tensor[(n, 3), int16]"),
    ("bitwise_not", [T(2, dtype="bool")], "Tensor[(2,), bool]"),
]


@pytest.mark.parametrize(("op", "args", "expected"), RESULTS)
def test_result_types(op: str, args: list[TensorType], expected: str) -> None:
    assert infer(op, args) == expected


ERRORS: list[tuple[str, list[TensorType], str]] = [
    (
        "right_shift",
        [T(2), T(2)],
        "right_shift: arguments must be integers, "
        "got Tensor[(2,), float32] and Tensor[(2,), float32]",
    ),
    (
        "left_shift",
        [T(2, dtype="bool"), T(dtype="bool")],
        "left_shift: arguments must be integers, got Tensor[(2,), bool] and bool",
    ),
    (
        "right_shift",
        [TensorType((2,), d), TensorType((2,), d)],
        "right_shift: arguments must be integers, got Tensor[(2,), d] and Tensor[(2,), d]",
    ),
    (
        "bitwise_and",
        [T(2, dtype="float16"), T(2, dtype="float16")],
        "bitwise_and: arguments must be integers or bool, "
        "got Tensor[(2,), float16] and Tensor[(2,), float16]",
    ),
    (
        "bitwise_xor",
        [TensorType((2,), d), TensorType((2,), d)],
        "bitwise_xor: arguments must be integers or bool, got Tensor[(2,), d] and Tensor[(2,), d]",
    ),
    (
        "bitwise_not",
        [T(2, dtype="float64")],
        "bitwise_not: argument must be integer or bool, got Tensor[(2,), float64]",
    ),
    (
        "bitwise_not",
        [TensorType((2,), d)],
        "bitwise_not: argument must be integer or bool, got Tensor[(2,), d]",
    ),
    (
        "right_shift",
        [T(2, dtype="int8"), T(2, dtype="int32")],
        "right_shift: dtypes differ: Tensor[(2,), int8] and Tensor[(2,), int32]",
    ),
    (
        "bitwise_or",
        [T(2, dtype="int32"), T(2, dtype="bool")],
        "bitwise_or: dtypes differ: Tensor[(2,), int32] and Tensor[(2,), bool]",
    ),
    (
        "left_shift",
        [T(3, dtype="int32"), T(4, dtype="int32")],
        "broadcast: incompatible dimensions 3 and 4 in Tensor[(3,), int32] and Tensor[(4,), int32]",
    ),
]


@pytest.mark.parametrize(("op", "args", "message"), ERRORS)
def test_type_errors(op: str, args: list[TensorType], message: str) -> None:
    assert error(op, args) == message


@pytest.mark.parametrize("name", ALL)
def test_every_integer_dtype_is_accepted_and_kept(name: str) -> None:
    kinds = INTS if name in SHIFTS else [*INTS, "bool"]
    for dtype in kinds:
        args = [T(2, dtype=dtype)] * get_op(name).num_inputs
        assert infer(name, args) == f"Tensor[(2,), {dtype}]"


def test_type_rules_in_one_line() -> None:
    rules = {name: get_op(name).type_relation.__doc__ for name in ALL}  # type: ignore[union-attr]
    assert rules == {
        "right_shift": "(s1, integer d), (s2, integer d) -> (broadcast of s1 and s2, d).",
        "left_shift": "(s1, integer d), (s2, integer d) -> (broadcast of s1 and s2, d).",
        "bitwise_and": "(s1, integer or bool d), (s2, integer or bool d) -> "
        "(broadcast of s1 and s2, d).",
        "bitwise_or": "(s1, integer or bool d), (s2, integer or bool d) -> "
        "(broadcast of s1 and s2, d).",
        "bitwise_xor": "(s1, integer or bool d), (s2, integer or bool d) -> "
        "(broadcast of s1 and s2, d).",
        "bitwise_not": "(shape, integer or bool dtype) -> same.",
    }


# ---- the text format and the interpreter -------------------------------------------------------------

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 4), int32], %k: Tensor[(4,), int32], %b: Tensor[(4,), bool]) {
  %0 = add(%x, 4);
  %1 = right_shift(%0, 3);
  %2 = left_shift(%1, %k);
  %3 = bitwise_and(%2, 255);
  %4 = bitwise_or(%3, 1);
  %5 = bitwise_xor(%4, %k);
  %6 = bitwise_not(%5);
  %7 = bitwise_not(%b);
  %8 = bitwise_and(%b, %7);
  (%6, %8)
}
"""


def _program_reference(x: Array, k: Array, b: Array) -> tuple[Array, Array]:
    with np.errstate(over="ignore"):
        y = np.left_shift((x + np.int32(4)) >> np.int32(3), k)
    return ~(((y & np.int32(255)) | np.int32(1)) ^ k), b & ~b


def test_the_text_format_round_trips() -> None:
    mod = relay.parse(PROGRAM)
    assert str(mod) == PROGRAM
    assert str(relay.parse(str(mod))) == str(mod)


def test_a_program_type_checks() -> None:
    mod = relay.infer_type(relay.parse(PROGRAM))
    assert str(mod["main"].checked_type) == (
        "fn (Tensor[(2, 4), int32], Tensor[(4,), int32], Tensor[(4,), bool]) "
        "-> (Tensor[(2, 4), int32], Tensor[(4,), bool])"
    )


def test_a_float_shift_in_text_is_a_type_error_at_the_call() -> None:
    src = "fn (%x: Tensor[(2,), float32]) { right_shift(%x, 1f) }"
    e = relay.parse_expr(src)
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(e)
    assert info.value.message == (
        "right_shift: arguments must be integers, got Tensor[(2,), float32] and float32"
    )
    assert info.value.span is not None
    assert src[info.value.span.column - 1 : info.value.span.end_column - 1] == (
        "right_shift(%x, 1f)"
    )


def test_the_interpreter_runs_the_references() -> None:
    x = np.array([[-100, 7, 1000, 2**30], [-1, 0, 1, -(2**31)]], np.int32)
    k = np.array([1, -1, 40, 31], np.int32)
    b = np.array([True, False, True, False])
    got = relay.interpret(relay.parse(PROGRAM), x, k, b)
    for g, w in zip(got, _program_reference(x, k, b), strict=True):
        check_array(np.asarray(g), w)
