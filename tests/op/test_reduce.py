"""The reductions of relay/op/reduce.py.

References are checked against independent computations: Python loops over the kept indices
(for the arg-reductions and multi-axis cases), numpy with axes worked out by hand, or
algebraic identities; then through the interpreter (builders and parsed text), attribute
validation, run-time errors with their spans, and print -> parse round trips.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import relay
import relay.op.reduce as R
from relay.errors import ExecutionError, ParseError
from relay.ir import Call, Function, Tuple, Var
from relay.op import OpPattern, get_op
from relay.op.registry import AttrValidationError

REDUCERS = ["sum", "mean", "max", "min", "prod", "logsumexp"]
ALL = [*REDUCERS, "argmax", "argmin", "variance"]


def run(name: str, *args: Any, **attrs: Any) -> Any:
    """The reference of ``name`` called as the interpreter calls it: all attributes given."""
    opdef = get_op(name)
    assert opdef.reference is not None
    return opdef.reference(*args, **opdef.validate_attrs(attrs))


def check(result: object, expected: np.ndarray, exact: bool = True) -> None:
    assert type(result) is np.ndarray
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    if exact:
        np.testing.assert_array_equal(result, expected)
    else:
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def interp(build: Callable[..., Call], *arrays: np.ndarray) -> Any:
    params = tuple(Var(f"x{i}") for i in range(len(arrays)))
    return relay.interpret(Function(params, build(*params)), *arrays)


def loop_reduce(
    x: np.ndarray, axes: tuple[int, ...], keepdims: bool, fn: Callable[[list[Any]], Any]
) -> np.ndarray:
    """Reduce ``x`` over ``axes`` by calling ``fn`` on the list of each group's elements."""
    kept = [i for i in range(x.ndim) if i not in axes]
    out_shape = [x.shape[i] for i in kept]
    out = np.empty(out_shape, dtype=object)
    for idx in itertools.product(*(range(x.shape[i]) for i in kept)):
        group = []
        for red in itertools.product(*(range(x.shape[i]) for i in axes)):
            full = [0] * x.ndim
            for i, v in zip(kept, idx, strict=True):
                full[i] = v
            for i, v in zip(axes, red, strict=True):
                full[i] = v
            group.append(x[tuple(full)])
        out[idx] = fn(group)
    if keepdims:
        out = out.reshape([1 if i in axes else x.shape[i] for i in range(x.ndim)])
    return out


# ---- registry entries ---------------------------------------------------------------------------


def test_patterns_and_schemas() -> None:
    for name in ALL:
        assert get_op(name).pattern == OpPattern.COMM_REDUCE
    base = [("axis", "int_or_ints", None), ("keepdims", "bool", False), ("exclude", "bool", False)]
    for name in REDUCERS:
        assert [(f.name, f.kind, f.default) for f in get_op(name).attrs_schema] == base
    for name in ("argmax", "argmin"):
        fields = [(f.name, f.kind, f.default) for f in get_op(name).attrs_schema]
        assert fields == [*base, ("select_last_index", "bool", False)]
    fields = [(f.name, f.kind, f.default) for f in get_op("variance").attrs_schema]
    assert fields == [*base, ("unbiased", "bool", False)]
    assert get_op("variance").num_inputs == 2
    assert all(get_op(n).num_inputs == 1 for n in ALL if n != "variance")


# ---- reduce_axes --------------------------------------------------------------------------------


def test_reduce_axes_follows_relay() -> None:
    assert R.reduce_axes(3, None, False) == (0, 1, 2)
    assert R.reduce_axes(3, None, True) == (0, 1, 2)  # exclude is ignored without axes
    assert R.reduce_axes(3, [], True) == (0, 1, 2)
    assert R.reduce_axes(3, [2, -3], False) == (0, 2)
    assert R.reduce_axes(3, 1, True) == (0, 2)
    assert R.reduce_axes(3, [0, 1, 2], True) == ()
    assert R.reduce_axes(0, None, False) == ()
    with pytest.raises(ValueError, match=r"^axis 3 is out of range for a tensor of rank 3$"):
        R.reduce_axes(3, [3], False)
    with pytest.raises(ValueError, match=r"^axis -4 is out of range for a tensor of rank 3$"):
        R.reduce_axes(3, -4, False)
    with pytest.raises(ValueError, match=r"axis -1 is given twice \(axes \[2, -1\], rank 3\)"):
        R.reduce_axes(3, [2, -1], False)


# ---- values against independent computations ----------------------------------------------------


@st.composite
def reduce_case(draw: st.DrawFn, min_side: int = 0) -> tuple[np.ndarray, Any, bool, bool]:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=min_side, max_side=4))
    x = draw(
        hnp.arrays(np.float64, shape, elements=st.floats(-8, 8, allow_nan=False, width=32))
    ).astype(np.float32)
    ndim = len(shape)
    if ndim and draw(st.booleans()):
        picked = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
        axis: Any = [a - ndim if draw(st.booleans()) else a for a in picked]
        if len(axis) == 1 and draw(st.booleans()):
            axis = axis[0]
    else:
        axis = None
    return x, axis, draw(st.booleans()), draw(st.booleans())


def expected_axes(ndim: int, axis: Any, exclude: bool) -> tuple[int, ...]:
    if axis is None or axis == []:
        return tuple(range(ndim))
    listed = {a % ndim for a in ([axis] if isinstance(axis, int) else axis)}
    return tuple(i for i in range(ndim) if (i in listed) != exclude)


FOLDS: dict[str, Callable[[list[Any]], Any]] = {
    "sum": lambda g: math.fsum(float(v) for v in g),
    "mean": lambda g: math.fsum(float(v) for v in g) / len(g) if g else math.nan,
    "max": lambda g: max((float(v) for v in g), default=-math.inf),
    "min": lambda g: min((float(v) for v in g), default=math.inf),
    "prod": lambda g: functools.reduce(operator.mul, (float(v) for v in g), 1.0),
    "logsumexp": lambda g: math.log(math.fsum(math.exp(float(v)) for v in g)) if g else -math.inf,
}


@pytest.mark.parametrize("name", REDUCERS)
@given(case=reduce_case())
def test_float_reductions_match_loops(name: str, case: tuple[np.ndarray, Any, bool, bool]) -> None:
    x, axis, keepdims, exclude = case
    if name == "prod":
        x = x / 8  # products of up to 256 factors stay in float32's range
    axes = expected_axes(x.ndim, axis, exclude)
    out = run(name, x, axis=axis, keepdims=keepdims, exclude=exclude)
    if not axes:
        check(out, x)
        return
    want = loop_reduce(x, axes, keepdims, FOLDS[name]).astype(np.float32)
    assert type(out) is np.ndarray and out.dtype == np.float32 and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(case=reduce_case(min_side=1), last=st.booleans(), ties=st.booleans())
def test_arg_reductions_match_loops(
    name: str, case: tuple[np.ndarray, Any, bool, bool], last: bool, ties: bool
) -> None:
    x, axis, keepdims, exclude = case
    if x.ndim == 0:
        return
    if ties:
        x = np.round(x / 4).astype(np.float32)  # few distinct values: many ties
    axes = expected_axes(x.ndim, axis, exclude)
    out = run(name, x, axis=axis, keepdims=keepdims, exclude=exclude, select_last_index=last)
    if not axes:
        check(out, np.zeros(x.shape, np.int32))
        return

    def pick(group: list[Any]) -> int:
        best = max(group) if name == "argmax" else min(group)
        hits = [i for i, v in enumerate(group) if v == best]
        return hits[-1] if last else hits[0]

    check(out, loop_reduce(x, axes, keepdims, pick).astype(np.int32))


def test_small_examples() -> None:
    x = np.array([[1, 5, 2], [7, 0, 7]], "int32")
    check(run("sum", x, axis=1), np.array([8, 14], "int32"))
    check(run("sum", x), np.asarray(22, "int32"))
    check(run("max", x, axis=[0], keepdims=True), np.array([[7, 5, 7]], "int32"))
    check(run("min", x, axis=[0], exclude=True), np.array([1, 0], "int32"))
    check(run("prod", x, axis=-1), np.array([10, 0], "int32"))
    check(run("argmax", x, axis=1), np.array([1, 0], "int32"))
    check(run("argmax", x, axis=1, select_last_index=True), np.array([1, 2], "int32"))
    check(run("argmin", x), np.asarray(4, "int32"))  # flat index over both axes
    check(run("argmax", x, keepdims=True), np.array([[3]], "int32"))
    # rank-0 results are 0-d arrays, never numpy scalars
    assert type(run("mean", np.ones(3, "float32"))) is np.ndarray


def test_dtypes_follow_relay() -> None:
    big = np.full(3, 2**30, "int32")
    check(run("sum", big), np.asarray(-(2**30), "int32"))  # wraps in int32 like compiled code
    check(run("prod", np.array([3, 4], "int8")), np.asarray(12, "int8"))
    check(run("mean", np.array([-3, 2], "int32")), np.asarray(0, "int32"))  # -1/2 truncates
    check(run("mean", np.array([-7, 0], "int32")), np.asarray(-3, "int32"))
    check(run("mean", np.array([7, 0], "int64")), np.asarray(3, "int64"))
    half = np.full(4096, 1.5, "float16")
    check(run("mean", half), np.asarray(1.5, "float16"))  # accumulated in float32
    check(run("sum", np.array([True, True])), np.asarray(True))


def test_empty_and_rank0_reductions() -> None:
    empty = np.zeros((2, 0), "float32")
    check(run("sum", empty, axis=1), np.zeros(2, "float32"))
    check(run("prod", empty, axis=1), np.ones(2, "float32"))
    check(run("max", empty, axis=1), np.full(2, -np.inf, "float32"))
    check(run("min", np.zeros((0,), "int8")), np.asarray(127, "int8"))
    check(run("max", np.zeros((0,), "int16")), np.asarray(-32768, "int16"))
    check(run("logsumexp", empty, axis=1), np.full(2, -np.inf, "float32"))
    assert np.isnan(run("mean", empty, axis=1)).all()
    with pytest.raises(ZeroDivisionError, match=r"integer mean divides by a count of zero"):
        run("mean", np.zeros((0,), "int32"))
    with pytest.raises(ValueError, match=r"^argmax of an empty reduction"):
        run("argmax", empty, axis=1)
    scalar = np.asarray(2.5, "float32")
    for name in REDUCERS:
        check(run(name, scalar), scalar)
    with pytest.raises(ValueError, match=r"^argmin needs a tensor of rank at least 1$"):
        run("argmin", scalar)
    # exclude listing every axis reduces nothing
    x = np.arange(6, dtype="float32").reshape(2, 3)
    check(run("sum", x, axis=[0, 1], exclude=True, keepdims=True), x)


def test_logsumexp_is_stable() -> None:
    x = np.array([[1000.0, 1000.0], [-1000.0, -np.inf]], "float32")
    check(
        run("logsumexp", x, axis=1),
        np.array([1000 + math.log(2), -1000], "float32"),
        exact=False,
    )
    check(run("logsumexp", np.full(3, -np.inf, "float32")), np.asarray(-np.inf, "float32"))
    with pytest.raises(ValueError, match=r"^logsumexp needs a floating-point tensor, got int32$"):
        run("logsumexp", np.ones(2, "int32"))


@given(case=reduce_case(min_side=1), unbiased=st.booleans())
def test_variance_against_numpy(case: tuple[np.ndarray, Any, bool, bool], unbiased: bool) -> None:
    x, axis, keepdims, exclude = case
    if x.ndim == 0:
        return
    x = x.astype(np.float64)
    axes = expected_axes(x.ndim, axis, exclude)
    mean = run("mean", x, axis=axis, keepdims=True, exclude=exclude)
    out = run("variance", x, mean, axis=axis, keepdims=keepdims, exclude=exclude, unbiased=unbiased)
    n = math.prod(x.shape[a] for a in axes)
    if unbiased and n == 1:
        return
    want = np.var(x, axis=axes, keepdims=keepdims, ddof=int(unbiased))
    check(out, np.asarray(want), exact=False)


def test_variance_takes_the_given_mean() -> None:
    x = np.array([[1.0, 3.0], [5.0, 9.0]], "float32")
    about_zero = np.zeros((1, 1), "float32")
    check(run("variance", x, about_zero), np.asarray(29.0, "float32"))
    check(run("variance", x, about_zero, unbiased=True), np.asarray(116 / 3, "float32"), False)
    check(
        run("variance", np.array([1, 4], "int32"), np.zeros(1, "int32")),
        np.asarray(8, "int32"),
    )
    with pytest.raises(ValueError, match=r"^variance: the mean has rank 1 but the data has rank 2"):
        run("variance", x, np.zeros(2, "float32"))
    with pytest.raises(
        ValueError, match=r"^variance: the mean is float64 but the data is float32$"
    ):
        run("variance", x, np.zeros((1, 1)))
    with pytest.raises(ValueError, match=r"does not broadcast to the data's \(2, 2\)$"):
        run("variance", x, np.zeros((3, 1), "float32"))
    with pytest.raises(ValueError, match=r"^variance needs a tensor of rank at least 1$"):
        run("variance", np.asarray(1.0), np.asarray(1.0))


# ---- through the interpreter --------------------------------------------------------------------


def test_builders_through_the_interpreter() -> None:
    x = np.arange(24, dtype="float32").reshape(2, 3, 4) - 10
    check(interp(lambda v: R.sum(v, 1), x), x.sum(axis=1))
    check(interp(lambda v: R.mean(v, [0, 2], keepdims=True), x), x.mean(axis=(0, 2), keepdims=True))
    check(interp(lambda v: R.max(v, 1, exclude=True), x), x.max(axis=(0, 2)))
    check(interp(lambda v: R.min(v), x), np.asarray(x.min()))
    check(interp(lambda v: R.prod(v, -1), x[:, :, :2]), x[:, :, :2].prod(axis=-1))
    check(interp(lambda v: R.argmax(v, 2), x), np.full((2, 3), 3, "int32"))
    check(interp(lambda v: R.argmin(v, [1, 2], keepdims=True), x), np.zeros((2, 1, 1), "int32"))
    check(
        interp(lambda v: R.logsumexp(v, 0), x),
        np.log(np.exp(x).sum(axis=0)).astype("float32"),
        exact=False,
    )
    check(interp(lambda v: R.variance(v, 2, unbiased=True), x), x.var(axis=2, ddof=1), False)
    m = np.zeros((1, 1, 1), "float32")
    check(interp(lambda v, w: R.variance(v, with_mean=w), x, m), np.asarray((x**2).mean()), False)


def test_variance_builder_computes_the_mean_as_relay() -> None:
    x = Var("x")
    call = R.variance(x, axis=1, exclude=True, unbiased=True)
    assert call.op == get_op("variance").op
    mean = call.args[1]
    assert isinstance(mean, Call) and mean.op == get_op("mean").op
    assert dict(mean.attrs) == {"axis": (1,), "keepdims": True, "exclude": True}
    assert dict(call.attrs) == {"axis": (1,), "keepdims": False, "exclude": True, "unbiased": True}


def test_interpreter_reports_bad_axes_at_the_call() -> None:
    fn = relay.parse_expr("fn (%x) {\n  sum(%x, axis=[2])\n}")
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    with pytest.raises(ExecutionError) as info:
        relay.interpret(fn, np.zeros((2, 3), "float32"))
    assert (
        info.value.message == "operator sum failed: axis 2 is out of range for a tensor of rank 2"
    )
    assert info.value.span == fn.body.span


def test_builders_validate_attribute_kinds() -> None:
    x = Var("x")
    with pytest.raises(AttrValidationError) as info:
        R.sum(x, axis=1.5)  # type: ignore[arg-type]
    assert str(info.value) == "attribute axis of sum must be an int or a list of ints, got 1.5"
    with pytest.raises(AttrValidationError) as info:
        R.argmax(x, select_last_index=2)  # type: ignore[arg-type]
    assert str(info.value) == "attribute select_last_index of argmax must be a bool, got 2"
    with pytest.raises(AttrValidationError, match=r"mean has no attribute unbiased"):
        get_op("mean").validate_attrs({"unbiased": True})


# ---- text format --------------------------------------------------------------------------------

TEXT_CALLS = [
    ("sum(%x)", {"axis": None, "keepdims": False, "exclude": False}),
    ("mean(%x, axis=1)", {"axis": 1, "keepdims": False, "exclude": False}),
    ("max(%x, axis=[0, -1], keepdims=True)", {"axis": (0, -1), "keepdims": True, "exclude": False}),
    ("logsumexp(%x, axis=[1], exclude=True)", {"axis": (1,), "keepdims": False, "exclude": True}),
    (
        "argmin(%x, axis=[1], select_last_index=True)",
        {"axis": (1,), "keepdims": False, "exclude": False, "select_last_index": True},
    ),
    (
        "variance(%x, %x, axis=[1], unbiased=True)",
        {"axis": (1,), "keepdims": False, "exclude": False, "unbiased": True},
    ),
]


@pytest.mark.parametrize(("text", "attrs"), TEXT_CALLS)
def test_parse_text_calls(text: str, attrs: dict[str, object]) -> None:
    fn = relay.parse_expr(f"fn (%x) {{ {text} }}")
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    assert dict(fn.body.attrs) == attrs
    assert relay.structural_equal(fn, relay.parse_expr(relay.astext(fn)))


def test_parsed_calls_run() -> None:
    fn = relay.parse_expr("fn (%x) { argmax(%x, axis=[0], keepdims=True) }")
    check(relay.interpret(fn, np.array([[1, 9], [4, 2]], "int32")), np.array([[1, 0]], "int32"))


def test_parse_rejects_bad_attributes() -> None:
    with pytest.raises(ParseError) as info:
        relay.parse_expr('fn (%x) { sum(%x, keepdims="yes") }')
    assert info.value.message == "attribute keepdims of sum must be a bool, got 'yes'"


@given(st.data())
def test_print_parse_round_trip_of_builder_calls(data: st.DataObject) -> None:
    x = Var("x")
    axis = data.draw(st.none() | st.integers(-3, 3) | st.lists(st.integers(-3, 3), max_size=3))
    flags = [data.draw(st.booleans()) for _ in range(3)]
    calls: list[Call] = [
        R.sum(x, axis, flags[0], flags[1]),
        R.mean(x, axis, flags[1], flags[2]),
        R.max(x, axis, flags[2], flags[0]),
        R.min(x, axis, flags[0], flags[0]),
        R.prod(x, axis, flags[1], flags[1]),
        R.logsumexp(x, axis, flags[2], flags[2]),
        R.argmax(x, axis, flags[0], flags[1], flags[2]),
        R.argmin(x, axis, flags[2], flags[1], flags[0]),
        R.variance(x, axis, flags[0], flags[1], flags[2]),
    ]
    fn = Function((x,), Tuple(tuple(calls)))
    assert relay.structural_equal(fn, relay.parse_expr(relay.astext(fn)))


@pytest.mark.parametrize("op", ["max", "min", "mean"])
def test_bfloat16_references(op: str) -> None:
    # ml_dtypes' bfloat16 is no numpy floating subtype: the references took it for an
    # integer (max and min asked np.iinfo for it, mean truncated its quotient)
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    x = np.array([[1.5, -2.25, 3.0], [np.nan, 0.5, -1.0]], np.float32).astype(bf16)
    mod = relay.parse(f"def @main(%x: Tensor[(2, 3), bfloat16]) {{ {op}(%x, axis=[1]) }}")
    got = relay.interpret(mod, x)
    want = getattr(np, op)(x.astype(np.float32), axis=1).astype(bf16)
    assert got.dtype == bf16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (np.array([2**63 + 2, 0], np.uint64), 2**62 + 1),  # (a sum at or past 2**63)
        (np.array([-(2**63), 0], np.int64), -(2**62)),  # (the most negative sum)
        (np.array([-128, -100, 5], np.int8), 11),  # (the int8 sum wraps around to 33)
        (np.array([7, -8], np.int8), 0),  # (-1 / 2 truncates toward zero)
    ],
)
def test_integer_mean_of_the_extremes(data: np.ndarray, expected: int) -> None:
    # found by a fuzzing review: the reference took the absolute value of the sum as int64
    got = run("mean", data, axis=None, keepdims=False, exclude=False)
    assert got.dtype == data.dtype and int(got) == expected
