"""The operators of relay/op/elemwise.py: references against independent computations.

Each reference runs on random arrays (hypothesis over shapes, dtypes and values) and is
compared with numpy evaluated in float64, or with an element-by-element Python computation
where Relay's semantics differ from numpy's (round halves away from zero, topi's sign,
clip's bound casting, C conversions in cast). Every operator also runs through the
interpreter from its builder, parses from text with its attributes, and round-trips
print -> parse.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import relay
from relay.errors import ExecutionError, ParseError
from relay.ir import Call, Function, Var, const
from relay.op import OpPattern, elemwise as E, get_op
from relay.op.registry import AttrValidationError

FLOAT_DTYPES = ["float16", "float32", "float64"]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]

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
ROUNDING = ["floor", "ceil", "trunc", "round"]
UNARY_NO_ATTRS = [
    *FLOAT_MATH,
    *ROUNDING,
    "abs",
    "sign",
    "copy",
    "isnan",
    "isfinite",
    "zeros_like",
    "ones_like",
]


def ref(name: str) -> Callable[..., Any]:
    reference = get_op(name).reference
    assert reference is not None, name
    return reference


def check_array(result: object, expected: np.ndarray) -> None:
    assert type(result) is np.ndarray
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


def float_arrays(
    dtypes: list[str] = FLOAT_DTYPES, lo: float = -20.0, hi: float = 20.0
) -> st.SearchStrategy[np.ndarray]:
    """Float arrays of rank 0 to 3 with values in ``[lo, hi]`` exactly representable in float16."""

    @st.composite
    def build(draw: st.DrawFn) -> np.ndarray:
        dtype = draw(st.sampled_from(dtypes))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
        elements = st.floats(lo, hi, width=16)
        return np.asarray(draw(hnp.arrays(dtype, shape, elements=elements)), dtype=dtype)

    return build()


def int_arrays(dtypes: list[str] = INT_DTYPES) -> st.SearchStrategy[np.ndarray]:
    """Integer arrays over each dtype's whole range."""

    @st.composite
    def build(draw: st.DrawFn) -> np.ndarray:
        dtype = draw(st.sampled_from(dtypes))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4))
        return np.asarray(draw(hnp.arrays(dtype, shape)), dtype=dtype)

    return build()


def elementwise(fn: Callable[..., object], *arrays: np.ndarray, dtype: Any) -> np.ndarray:
    """``fn`` applied element by element in Python (with broadcasting)."""
    b = np.broadcast_arrays(*arrays)
    out = [fn(*(a.flat[i].item() for a in b)) for i in range(b[0].size if b else 1)]
    return np.asarray(out, dtype=dtype).reshape(b[0].shape)


def run(call_of: Callable[..., Call], *inputs: np.ndarray) -> Any:
    """Build a call of fresh parameters with ``call_of`` and run it with the interpreter."""
    params = [Var(f"p{i}") for i in range(len(inputs))]
    return relay.interpret(Function(tuple(params), call_of(*params)), *inputs)


# -- the registry entries ----------------------------------------------------------------------

SCHEMAS: dict[str, tuple[int, OpPattern, list[tuple[str, str, object]]]] = {
    **{name: (1, OpPattern.ELEMWISE, []) for name in UNARY_NO_ATTRS},
    "clip": (1, OpPattern.ELEMWISE, [("a_min", "float", None), ("a_max", "float", None)]),
    "cast": (1, OpPattern.ELEMWISE, [("dtype", "dtype", None)]),
    "cast_like": (2, OpPattern.ELEMWISE, []),
    "where": (3, OpPattern.BROADCAST, []),
    "zeros": (0, OpPattern.ELEMWISE, [("shape", "ints", None), ("dtype", "dtype", None)]),
    "ones": (0, OpPattern.ELEMWISE, [("shape", "ints", None), ("dtype", "dtype", None)]),
    "full": (1, OpPattern.ELEMWISE, [("shape", "ints", ()), ("dtype", "dtype", "")]),
    "full_like": (2, OpPattern.ELEMWISE, []),
    "arange": (3, OpPattern.OPAQUE, [("dtype", "dtype", "float32")]),
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_registration(name: str) -> None:
    num_inputs, pattern, fields = SCHEMAS[name]
    opdef = get_op(name)
    assert opdef.num_inputs == num_inputs
    assert opdef.pattern is pattern
    assert opdef.reference is not None and opdef.doc
    assert opdef.type_relation is not None
    got = [(f.name, f.kind, None if f.required else f.default) for f in opdef.attrs_schema]
    assert got == fields


# -- float math --------------------------------------------------------------------------------

FLOAT64_MATH: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "fast_exp": np.exp,
    "fast_tanh": np.tanh,
}
RTOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-13}


@pytest.mark.parametrize("name", list(FLOAT64_MATH))
@given(x=float_arrays())
def test_float_math_matches_numpy_in_float64(name: str, x: np.ndarray) -> None:
    if name in ("log", "log2", "log10", "sqrt", "rsqrt"):
        x = np.abs(x) + np.asarray(0.5, dtype=x.dtype)  # inside the domain
    result = ref(name)(x)
    with np.errstate(all="ignore"):
        expected = FLOAT64_MATH[name](x.astype(np.float64)).astype(x.dtype).astype(np.float64)
    assert type(result) is np.ndarray and result.dtype == x.dtype and result.shape == x.shape
    np.testing.assert_allclose(result.astype(np.float64), expected, rtol=RTOL[str(x.dtype)])


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sin", "cos"])
@given(x=float_arrays(["float16"], 0.0, 10.0))
def test_float16_math_rounds_like_numpys_float16_loops(name: str, x: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        check_array(ref(name)(x), np.asarray(getattr(np, name)(x)))


def erf_series(x: float) -> float:
    """erf by the series 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (1 3 5 ... (2n+1)).

    Its terms are all of one sign, so it does not cancel as the Maclaurin series does."""
    total, term, n = 0.0, x, 0
    while True:
        total += term
        if abs(term) <= 1e-18 * abs(total):
            return 2.0 / math.sqrt(math.pi) * math.exp(-x * x) * total
        n += 1
        term *= 2 * x * x / (2 * n + 1)


@given(x=float_arrays(lo=-3.0, hi=3.0))
def test_erf_matches_its_series(x: np.ndarray) -> None:
    result = ref("erf")(x)
    assert result.dtype == x.dtype and result.shape == x.shape
    expected = elementwise(erf_series, x, dtype=np.float64)
    atol = {"float16": 1e-3, "float32": 1e-7, "float64": 1e-14}[str(x.dtype)]
    np.testing.assert_allclose(result.astype(np.float64), expected, rtol=0, atol=atol)


def test_erf_limits_and_special_values() -> None:
    x = np.asarray([-np.inf, -10.0, 0.0, 1.0, 10.0, np.inf, np.nan])
    result = ref("erf")(x)
    np.testing.assert_array_equal(result[[0, 1, 2, 4, 5]], [-1.0, -1.0, 0.0, 1.0, 1.0])
    assert result[3] == pytest.approx(0.8427007929497149, rel=1e-15)
    assert np.isnan(result[6])


def test_sigmoid_is_stable_at_extremes() -> None:
    x = np.asarray([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=np.float32)
    result = ref("sigmoid")(x)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, [0.0, 1.9287499e-22, 0.5, 1.0, 1.0], rtol=1e-6)
    assert not np.any(np.isnan(result))


def test_domain_errors_give_nan_and_inf_silently() -> None:
    x = np.asarray([-1.0, 0.0], dtype=np.float32)
    np.testing.assert_array_equal(ref("log")(x), np.asarray([np.nan, -np.inf], np.float32))
    np.testing.assert_array_equal(ref("rsqrt")(x), np.asarray([np.nan, np.inf], np.float32))
    check_array(ref("exp")(np.asarray(100.0, np.float16)), np.asarray(np.inf, np.float16))


@pytest.mark.parametrize("name", FLOAT_MATH)
@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_float_math_rejects_non_float_tensors(name: str, dtype: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} needs a floating-point tensor, got {dtype}$"):
        ref(name)(np.zeros((2,), dtype=dtype))


@pytest.mark.parametrize("name", ["exp", "sigmoid", "erf", "round", "abs", "isnan"])
def test_bfloat16_is_preserved(name: str) -> None:
    x = np.asarray([0.5, -1.5, 2.0], dtype=ml_dtypes.bfloat16)
    result = ref(name)(x)
    assert result.dtype == (np.bool_ if name == "isnan" else x.dtype)


def test_fast_exp_and_fast_tanh_references_are_exact() -> None:
    x = np.linspace(-5, 5, 11, dtype=np.float32)
    check_array(ref("fast_exp")(x), ref("exp")(x))
    check_array(ref("fast_tanh")(x), ref("tanh")(x))


# -- rounding, abs, sign -----------------------------------------------------------------------


def round_half_away(v: float) -> float:
    if not math.isfinite(v):
        return v
    r = float(Decimal(v).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return math.copysign(r, v) if r == 0 else r


PY_ROUNDING: dict[str, Callable[[float], float]] = {
    "floor": lambda v: float(math.floor(v)) if math.isfinite(v) else v,
    "ceil": lambda v: float(math.ceil(v)) if math.isfinite(v) else v,
    "trunc": lambda v: float(math.trunc(v)) if math.isfinite(v) else v,
    "round": round_half_away,
}


@pytest.mark.parametrize("name", ROUNDING)
@given(x=float_arrays(lo=-1000.0, hi=1000.0))
def test_rounding_of_floats(name: str, x: np.ndarray) -> None:
    check_array(ref(name)(x), elementwise(PY_ROUNDING[name], x, dtype=x.dtype))


def test_round_halves_go_away_from_zero() -> None:
    x = np.asarray([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, -0.3, np.inf, 2.0**60])
    expected = np.asarray([1.0, 2.0, 3.0, -1.0, -3.0, 0.0, -0.0, np.inf, 2.0**60])
    result = ref("round")(x)
    check_array(result, expected)
    assert math.copysign(1.0, result[6]) == -1.0  # -0.3 rounds to -0.0, as llvm.round does
    assert np.isnan(ref("round")(np.asarray(np.nan)))


@pytest.mark.parametrize("name", ROUNDING)
@given(x=int_arrays())
def test_rounding_of_integers_is_the_identity(name: str, x: np.ndarray) -> None:
    check_array(ref(name)(x), x)


@given(x=st.one_of(int_arrays(), float_arrays()))
def test_abs(x: np.ndarray) -> None:
    if x.dtype.kind == "f":
        expected = elementwise(math.fabs, x, dtype=x.dtype)
    else:
        info = np.iinfo(x.dtype)
        # the integer minimum wraps around to itself, as in C
        flat = [abs(v) if abs(v) <= info.max else v for v in x.ravel().tolist()]
        expected = np.asarray(flat, dtype=x.dtype).reshape(x.shape)
    check_array(ref("abs")(x), expected)


@given(x=st.one_of(int_arrays(), float_arrays()))
def test_sign(x: np.ndarray) -> None:
    expected = elementwise(lambda v: 1 if v > 0 else (-1 if v < 0 else 0), x, dtype=np.int64)
    check_array(ref("sign")(x), expected.astype(x.dtype))


def test_sign_of_nan_and_negative_zero_is_zero() -> None:
    result = ref("sign")(np.asarray([np.nan, -0.0, -np.inf], dtype=np.float32))
    check_array(result, np.asarray([0.0, 0.0, -1.0], dtype=np.float32))
    assert math.copysign(1.0, result[1]) == 1.0


@pytest.mark.parametrize("name", [*ROUNDING, "abs", "sign"])
def test_numeric_ops_reject_bool(name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} needs a numeric tensor, got bool$"):
        ref(name)(np.asarray([True, False]))


# -- clip --------------------------------------------------------------------------------------


@given(
    x=float_arrays(),
    a=st.floats(-30, 30, width=16),
    b=st.floats(-30, 30, width=16),
)
def test_clip_floats(x: np.ndarray, a: float, b: float) -> None:
    expected = elementwise(lambda v: max(min(v, b), a), x, dtype=x.dtype)
    check_array(ref("clip")(x, a_min=a, a_max=b), expected)


@given(
    x=int_arrays(),
    a=st.floats(-1e20, 1e20) | st.sampled_from([-math.inf, math.inf, -0.5, 2.75]),
    b=st.floats(-1e20, 1e20) | st.sampled_from([-math.inf, math.inf, -0.5, 2.75]),
)
def test_clip_integers_truncates_and_saturates_the_bounds(
    x: np.ndarray, a: float, b: float
) -> None:
    info = np.iinfo(x.dtype)

    def bound(v: float) -> int:
        if math.isinf(v):
            return int(info.min) if v < 0 else int(info.max)
        return min(max(math.trunc(v), int(info.min)), int(info.max))

    lo, hi = bound(a), bound(b)
    expected = elementwise(lambda v: max(min(v, hi), lo), x, dtype=object)
    check_array(ref("clip")(x, a_min=a, a_max=b), expected.astype(x.dtype))


def test_clip_examples() -> None:
    x = np.asarray([0, 1, 5, 3, 4, 2], dtype=np.int32)
    check_array(ref("clip")(x, a_min=1.0, a_max=4.0), np.asarray([1, 1, 4, 3, 4, 2], np.int32))
    check_array(
        ref("clip")(np.asarray([0.0, 10.0], np.float32), a_min=3.0, a_max=1.0),
        np.asarray([3.0, 3.0], np.float32),
    )
    with pytest.raises(ValueError, match=r"^clip: a_min is nan$"):
        ref("clip")(x, a_min=math.nan, a_max=1.0)


# -- cast, copy, isnan, isfinite ----------------------------------------------------------------


@given(x=int_arrays(), to=st.sampled_from([*INT_DTYPES, *FLOAT_DTYPES, "bool"]))
def test_cast_from_integers(x: np.ndarray, to: str) -> None:
    def convert(v: int) -> object:
        if to == "bool":
            return v != 0
        if to.startswith("float"):
            return float(v)
        bits = np.iinfo(to).bits
        w = v % (1 << bits)  # integer conversions wrap around
        return w - (1 << bits) if to.startswith("int") and w >= 1 << (bits - 1) else w

    with np.errstate(over="ignore"):
        expected = np.asarray(elementwise(convert, x, dtype=object).tolist(), dtype=to)
    check_array(ref("cast")(x, dtype=to), expected.reshape(x.shape))


@given(x=float_arrays(lo=-100.0, hi=100.0), to=st.sampled_from(["int8", "int32", "int64"]))
def test_cast_float_to_int_truncates(x: np.ndarray, to: str) -> None:
    expected = elementwise(math.trunc, x, dtype=to)
    check_array(ref("cast")(x, dtype=to), expected)


@pytest.mark.parametrize(
    ("value", "dtype", "shown"),
    [
        (math.nan, "int32", "nan"),
        (math.inf, "int64", "inf"),
        (128.0, "int8", "128.0"),
        (-1.0, "uint8", "-1.0"),
        (2.0**63, "int64", "9.223372036854776e+18"),
    ],
)
def test_cast_of_unrepresentable_values_raises(value: float, dtype: str, shown: str) -> None:
    message = f"^{re.escape(f'cast: {shown} cannot be represented in {dtype}')}$"
    with pytest.raises(ValueError, match=message):
        ref("cast")(np.asarray([0.0, value]), dtype=dtype)


def test_cast_edges() -> None:
    check_array(ref("cast")(np.asarray(-0.99), dtype="uint8"), np.asarray(0, np.uint8))
    like = np.zeros((7, 1), "int8")  # only its dtype matters
    check_array(ref("cast_like")(np.asarray([1.5, -2.5]), like), np.asarray([1, -2], np.int8))
    check_array(ref("cast")(np.asarray(127.9), dtype="int8"), np.asarray(127, np.int8))
    check_array(
        ref("cast")(np.asarray([0.0, np.nan, -2.0]), dtype="bool"),
        np.asarray([False, True, True]),
    )
    check_array(ref("cast")(np.asarray(1e6), dtype="float16"), np.asarray(np.inf, np.float16))
    assert ref("cast")(np.asarray([1.5], np.float32), dtype="bfloat16").dtype == np.dtype(
        ml_dtypes.bfloat16
    )


def test_copy_is_a_fresh_array() -> None:
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    out = ref("copy")(x)
    check_array(out, x)
    assert not np.shares_memory(out, x)


@given(x=st.one_of(int_arrays(), float_arrays()))
def test_isnan_and_isfinite(x: np.ndarray) -> None:
    if x.dtype.kind == "f" and x.size:
        x = x.copy()
        x.flat[0] = [np.nan, np.inf, -np.inf, 0.0][x.size % 4]
    check_array(ref("isnan")(x), elementwise(math.isnan, x, dtype=bool))
    check_array(ref("isfinite")(x), elementwise(math.isfinite, x, dtype=bool))


# -- where -------------------------------------------------------------------------------------


@given(data=st.data())
def test_where_broadcasts(data: st.DataObject) -> None:
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3))
    c_shape, x_shape, y_shape = shapes.input_shapes
    cond = data.draw(hnp.arrays(data.draw(st.sampled_from(["bool", "int32"])), c_shape))
    dtype = data.draw(st.sampled_from(["float32", "int8"]))
    x = data.draw(hnp.arrays(dtype, x_shape, elements=st.integers(-9, 9)))
    y = data.draw(hnp.arrays(dtype, y_shape, elements=st.integers(-9, 9)))
    expected = elementwise(lambda c, a, b: a if c else b, cond, x, y, dtype=dtype)
    check_array(ref("where")(cond, x, y), expected.reshape(shapes.result_shape))


def test_where_example_and_errors() -> None:
    x = np.asarray([[1, 2], [3, 4]], np.int32)
    y = np.asarray([[5, 6], [7, 8]], np.int32)
    cond = np.asarray([[0, 1], [-1, 0]], np.int32)
    check_array(ref("where")(cond, x, y), np.asarray([[5, 2], [3, 8]], np.int32))
    with pytest.raises(
        ValueError, match=r"^where: x and y must have the same dtype, got int32 and"
    ):
        ref("where")(cond, x, y.astype(np.float32))
    with pytest.raises(
        ValueError, match=r"^where: cannot broadcast shapes \(3,\), \(2, 2\) and \(2, 2\)$"
    ):
        ref("where")(np.ones(3, bool), x, y)


# -- creation ----------------------------------------------------------------------------------

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
any_dtype = st.sampled_from(["bool", *INT_DTYPES, *FLOAT_DTYPES])


@given(shape=shapes, dtype=any_dtype)
def test_zeros_and_ones(shape: tuple[int, ...], dtype: str) -> None:
    check_array(ref("zeros")(shape=shape, dtype=dtype), np.zeros(shape, dtype))
    check_array(ref("ones")(shape=shape, dtype=dtype), np.ones(shape, dtype))


@given(x=st.one_of(int_arrays(), float_arrays()))
def test_zeros_like_and_ones_like(x: np.ndarray) -> None:
    check_array(ref("zeros_like")(x), np.zeros(x.shape, x.dtype))
    check_array(ref("ones_like")(x), np.ones(x.shape, x.dtype))


@given(shape=shapes, value=st.integers(-100, 100), dtype=st.sampled_from(["", "int8", "float16"]))
def test_full(shape: tuple[int, ...], value: int, dtype: str) -> None:
    fill = np.asarray(value + 0.75, dtype=np.float32)
    out_dtype = dtype or "float32"
    expected_value = math.trunc(value + 0.75) if dtype == "int8" else value + 0.75
    expected = np.full(shape, expected_value, dtype=out_dtype)
    check_array(ref("full")(fill, shape=shape, dtype=dtype), expected)


@given(x=st.one_of(int_arrays(["int16", "uint8"]), float_arrays()), value=st.integers(0, 100))
def test_full_like(x: np.ndarray, value: int) -> None:
    fill = np.asarray(value, dtype=np.int64)
    check_array(ref("full_like")(x, fill), np.full(x.shape, value, dtype=x.dtype))


def test_creation_errors() -> None:
    with pytest.raises(ValueError, match=r"^zeros: shape \(2, -1\) has a negative dimension$"):
        ref("zeros")(shape=(2, -1), dtype="float32")
    with pytest.raises(
        ValueError, match=r"^full: fill_value must be a scalar \(rank 0\), got shape \(1,\)$"
    ):
        ref("full")(np.ones(1, np.float32), shape=(2,), dtype="")
    with pytest.raises(
        ValueError, match=r"^full_like: fill_value must be a scalar \(rank 0\), got shape \(2,\)$"
    ):
        ref("full_like")(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=r"^full: 300\.0 cannot be represented in int8$"):
        ref("full")(np.asarray(300.0), shape=(2,), dtype="int8")


def py_arange(start: float, stop: float, step: float) -> list[float]:
    out, i = [], 0
    while (start + i * step < stop) if step > 0 else (start + i * step > stop):
        out.append(start + i * step)
        i += 1
    return out


@given(
    start=st.integers(-20, 20),
    stop=st.integers(-20, 20),
    step=st.integers(-5, 5).filter(lambda s: s != 0),
    dtype=st.sampled_from(["int32", "int64", "float32", "float64"]),
)
def test_arange(start: int, stop: int, step: int, dtype: str) -> None:
    args = [np.asarray(v, dtype=dtype) for v in (start, stop, step)]
    expected = np.asarray(py_arange(start, stop, step), dtype=dtype)
    check_array(ref("arange")(*args, dtype=dtype), expected)


def test_arange_fractional_steps_count_by_ceiling() -> None:
    args = [np.asarray(v, np.float32) for v in (1.0, 5.0, 1.5)]
    check_array(ref("arange")(*args, dtype="float32"), np.asarray([1.0, 2.5, 4.0], np.float32))


def test_arange_errors() -> None:
    f = np.float32
    with pytest.raises(ValueError, match=r"^arange: step must not be zero$"):
        ref("arange")(np.asarray(0, f), np.asarray(5, f), np.asarray(0, f), dtype="float32")
    with pytest.raises(ValueError, match=r"^arange: stop has dtype int32, expected float32$"):
        ref("arange")(np.asarray(0, f), np.asarray(5, np.int32), np.asarray(1, f), dtype="float32")
    with pytest.raises(
        ValueError, match=r"^arange: start must be a scalar \(rank 0\), got shape \(1,\)$"
    ):
        ref("arange")(np.zeros(1, f), np.asarray(5, f), np.asarray(1, f), dtype="float32")
    with pytest.raises(ValueError, match=r"^arange: cannot count the elements from 0\.0 to inf"):
        ref("arange")(np.asarray(0, f), np.asarray(np.inf, f), np.asarray(1, f), dtype="float32")


# -- builders and the interpreter --------------------------------------------------------------

BUILDERS: dict[str, Callable[..., Call]] = {name: getattr(E, name) for name in UNARY_NO_ATTRS}


@pytest.mark.parametrize("name", UNARY_NO_ATTRS)
def test_unary_builders_run_in_the_interpreter(name: str) -> None:
    x = np.asarray([[0.25, 1.5], [2.5, -0.75]], dtype=np.float32)
    if name in ("log", "log2", "log10", "sqrt", "rsqrt"):
        x = np.abs(x)
    call = BUILDERS[name](Var("x"))
    assert call.op is get_op(name).op and len(call.args) == 1 and not call.attrs
    check_array(run(BUILDERS[name], x), ref(name)(x))


def test_attribute_builders_run_in_the_interpreter() -> None:
    x = np.asarray([-2.5, 0.5, 7.0], dtype=np.float32)
    check_array(
        run(lambda v: E.clip(v, 0.0, 6.0), x), np.asarray([0.0, 0.5, 6.0], dtype=np.float32)
    )
    check_array(run(lambda v: E.cast(v, "int8"), x), np.asarray([-2, 0, 7], dtype=np.int8))
    cond = np.asarray([True, False, True])
    check_array(run(E.where, cond, x, -x), np.asarray([-2.5, -0.5, 7.0], np.float32))
    check_array(relay.interpret(E.zeros(3, "int8")), np.zeros(3, np.int8))
    check_array(relay.interpret(E.ones([2, 1], "float16")), np.ones((2, 1), np.float16))
    check_array(run(lambda v: E.full(v, (2, 2)), np.asarray(3, np.int16)), np.full((2, 2), 3, "i2"))
    check_array(run(E.full_like, x, np.asarray(2.0)), np.full(3, 2.0, np.float32))
    check_array(relay.interpret(E.arange(4)), np.asarray([0, 1, 2, 3], np.float32))
    check_array(relay.interpret(E.arange(1, 10, 3, dtype="int64")), np.asarray([1, 4, 7], np.int64))
    start, stop = Var("a"), Var("b")
    f = Function((start, stop), E.arange(start, stop, dtype="int32"))
    check_array(
        relay.interpret(f, np.asarray(2, "i4"), np.asarray(5, "i4")), np.arange(2, 5, dtype="i4")
    )


def test_builder_attributes() -> None:
    x = Var("x")
    assert dict(E.clip(x, 0, 6).attrs) == {"a_min": 0, "a_max": 6}
    assert dict(E.cast(x, "float16").attrs) == {"dtype": "float16"}
    assert dict(E.zeros(5, "int32").attrs) == {"shape": (5,), "dtype": "int32"}
    assert dict(E.full(x).attrs) == {"shape": (), "dtype": ""}
    assert dict(E.arange(x).attrs) == {"dtype": "float32"}
    start, stop, step = E.arange(x).args
    assert isinstance(start, relay.ir.Constant) and start.data.dtype == np.float32
    assert stop is x and isinstance(step, relay.ir.Constant) and step.data.item() == 1.0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: E.cast(Var("x"), "float8"), "attribute dtype of cast must be one of 'bool', "),
        (
            lambda: E.clip(Var("x"), "0", 1.0),  # type: ignore[arg-type]
            "attribute a_min of clip must be a number, got '0'",
        ),
        (lambda: E.clip(Var("x"), True, 1.0), "attribute a_min of clip must be a number, got True"),
        (
            lambda: E.zeros((2, 2.5), "int8"),  # type: ignore[arg-type]
            r"attribute shape of zeros must be a list of ints, got \(2, 2\.5\)",
        ),
        (
            lambda: E.zeros((2, "a"), "int8"),  # type: ignore[arg-type]
            r"attribute shape of zeros must be a list of ints, got \(2, 'a'\)",
        ),
        (lambda: E.ones((-1,), "int8"), r"ones: shape \(-1,\) has a negative dimension"),
        (lambda: E.full(Var("x"), dtype="x"), "attribute dtype of full must be one of '', "),
        (lambda: E.arange(3, dtype="int4"), "attribute dtype of arange must be one of 'bool'"),
    ],
)
def test_builder_validation(make: Callable[[], Call], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_attr_validation_errors_are_attr_validation_errors() -> None:
    with pytest.raises(AttrValidationError, match=r"^cast requires attribute dtype$"):
        get_op("cast").validate_attrs({})
    with pytest.raises(AttrValidationError, match=r"^clip has no attribute a_mid$"):
        get_op("clip").validate_attrs({"a_min": 0.0, "a_max": 1.0, "a_mid": 0.5})


def test_reference_errors_become_execution_errors_with_the_calls_span() -> None:
    f = relay.parse_expr('fn (%x) {\n  cast(%x, dtype="int8")\n}')
    with pytest.raises(ExecutionError) as info:
        relay.interpret(f, np.asarray([1.0, 1000.0]))
    assert str(info.value).splitlines()[0] == (
        "<string>:2:3: operator cast failed: cast: 1000.0 cannot be represented in int8"
    )


# -- text format -------------------------------------------------------------------------------

TEXT_CALLS = [
    *(f"fn (%x) {{ {name}(%x) }}" for name in UNARY_NO_ATTRS),
    "fn (%x) { clip(%x, a_min=-1.5f, a_max=6f) }",
    'fn (%x) { cast(%x, dtype="float16") }',
    "fn (%c, %x, %y) { where(%c, %x, %y) }",
    'zeros(shape=[2, 3], dtype="float32")',
    'ones(shape=[], dtype="bool")',
    'fn (%v) { full(%v, shape=[4], dtype="int8") }',
    "fn (%x, %v) { full_like(%x, %v) }",
    'arange(0, 10, 2, dtype="int32")',
]


@pytest.mark.parametrize("text", TEXT_CALLS)
def test_parse_and_round_trip(text: str) -> None:
    expr = relay.parse_expr(text)
    again = relay.parse_expr(relay.astext(expr))
    relay.assert_structural_equal(expr, again)
    call = expr.body if isinstance(expr, Function) else expr
    assert isinstance(call, Call)
    opdef = get_op(call.op.name)  # type: ignore[attr-defined]
    assert call.attrs == opdef.validate_attrs(call.attrs)  # every schema attribute is present


def test_parsed_calls_fill_defaults_and_print_all_attributes() -> None:
    expr = relay.parse_expr("fn (%v) { full(%v) }")
    assert isinstance(expr, Function) and isinstance(expr.body, Call)
    assert dict(expr.body.attrs) == {"shape": (), "dtype": ""}
    text = relay.astext(E.full(const(1.5), (2, 3), "float64"))
    assert text == 'full(1.5f, shape=[2, 3], dtype="float64")'
    relay.assert_structural_equal(relay.parse_expr(text), E.full(const(1.5), (2, 3), "float64"))
    check_array(relay.interpret(relay.parse_expr(text)), np.full((2, 3), 1.5))


def test_parsed_clip_runs() -> None:
    f = relay.parse_expr("fn (%x) { clip(%x, a_min=0, a_max=6) }")
    x = np.asarray([-1, 3, 9], dtype=np.int32)
    check_array(relay.interpret(f, x), np.asarray([0, 3, 6], dtype=np.int32))


def test_parse_errors_point_at_the_attribute() -> None:
    with pytest.raises(ParseError) as info:
        relay.parse_expr('fn (%x) { clip(%x, a_min=0, a_max="six") }')
    assert str(info.value).splitlines()[0] == (
        "<string>:1:29: attribute a_max of clip must be a number, got 'six'"
    )
    with pytest.raises(ParseError, match="zeros requires attribute dtype"):
        relay.parse_expr("zeros(shape=[1])")
