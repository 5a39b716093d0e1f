"""The ndarray API of ``relay.lazy.Tensor`` against numpy's, on random inputs: operators,
ufuncs, methods and functions, indexing, in-place updates, fallbacks and errors. Every
result must have numpy's dtype, shape and values (float transcendental functions within a
small tolerance: compiled kernels use fast approximations)."""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import relay
import relay.lazy as lz
import relay.lazy.numpy as lnp

pytestmark = pytest.mark.tvm

DTYPES = ["float32", "float64", "int32", "int64", "bool"]

Fn = Callable[..., Any]


def line() -> int:
    """The caller's line number."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


# -- inputs and comparisons ----------------------------------------------------------------------


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, role: str = "any") -> Any:
    """A random array. ``role``: "any"; "divisor" (no zeros); "exponent" (0 to 3 for integers
    and booleans, so integer powers neither overflow nor raise); "positive"; "nonneg"."""
    if dtype == "bool":
        if role in ("divisor", "positive"):
            return np.ones(shape, bool)
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        lo = {"exponent": 0, "positive": 1, "nonneg": 0}.get(role, -9)
        hi = 4 if role == "exponent" else 10
        out = rng.integers(lo, hi, shape).astype(dtype)
        if role == "divisor":
            out[out == 0] = 1
        return out
    out = rng.standard_normal(shape) * 4
    if role in ("positive", "nonneg"):
        out = np.abs(out) + 0.01
    return out.astype(dtype)


def builtin_base(err: BaseException) -> type[BaseException]:
    """The first built-in exception class of ``err`` (numpy's ``UFuncTypeError`` is a
    ``TypeError``, its ``AxisError`` a ``ValueError``)."""
    return next(c for c in type(err).__mro__ if c.__module__ == "builtins")


def numpy_outcome(fn: Fn, args: Sequence[Any]) -> tuple[Any, BaseException | None]:
    """``fn(*args)`` run by numpy: its result, or the exception it raised."""
    with np.errstate(all="ignore"):
        try:
            return fn(*args), None
        except Exception as err:
            return None, err


def tolerances(dtype: np.dtype[Any]) -> dict[str, float]:
    """Tolerances for results of fast transcendental kernels (and float sums)."""
    if dtype == np.float16:
        return {"rtol": 2e-3, "atol": 1e-3}
    if dtype == np.float32:
        return {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 1e-10, "atol": 1e-12}


def assert_same(got: Any, want: Any, approx: bool = False, what: str = "") -> None:
    """``got`` is a lazy tensor with ``want``'s dtype and shape, and its values (exactly,
    or within :func:`tolerances` for ``approx`` float results)."""
    want = np.asarray(want)
    assert isinstance(got, lz.Tensor), f"{what}: {type(got).__name__}, not a lazy Tensor"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, numpy's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, numpy's {want.shape}"
    value = got.numpy()
    assert value.dtype == want.dtype and value.shape == want.shape, what
    if approx and want.dtype.kind == "f":
        np.testing.assert_allclose(value, want, err_msg=what, **tolerances(want.dtype))
    else:
        np.testing.assert_array_equal(value, want, err_msg=what, strict=True)


def check(
    fns: dict[str, Fn | tuple[Fn, Fn]],
    np_args: Sequence[Any],
    lz_args: Sequence[Any],
    approx: bool = False,
) -> None:
    """Each of ``fns`` gives numpy's result on the lazy arguments (or raises the built-in
    exception numpy raises); the lazy results are computed together, in one trace. A pair
    of functions is (what numpy runs, what is run on the lazy arguments)."""
    pairs = []
    for what, fn in fns.items():
        np_fn, lz_fn = fn if isinstance(fn, tuple) else (fn, fn)
        want, err = numpy_outcome(np_fn, np_args)
        if err is not None:
            with np.errstate(all="ignore"), pytest.raises(builtin_base(err)):
                lz_fn(*lz_args)
            continue
        with np.errstate(all="ignore"):
            pairs.append((what, lz_fn(*lz_args), want))
    failure = None
    try:
        lz.sync(*[got for _, got, _ in pairs if isinstance(got, lz.Tensor)])
    except relay.RelayError as err:
        failure = f"{type(err).__name__}: {err}"
    if failure is not None:
        # drop the tensors that cannot be computed before failing: kept alive by the
        # traceback (pytest keeps the last in sys.last_traceback) or by hypothesis, they
        # would make the barrier of every later test fail
        pairs.clear()
        raise AssertionError(f"computing {list(fns)} failed: {failure}")
    for what, got, want in pairs:
        assert_same(got, want, approx, what)


def lazy(*arrays: Any) -> tuple[lz.Tensor, ...]:
    """Lazy tensors of ``arrays``."""
    return tuple(lz.asarray(a) for a in arrays)


# -- 1. operators --------------------------------------------------------------------------------

BINARY: dict[str, Fn] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}

ROLE = {"/": "divisor", "//": "divisor", "%": "divisor", "**": "exponent"}
"""What the right operand of an operator must avoid (division by zero, negative integer
powers): numpy's results there are warnings or errors, not values."""

APPROX = {"**"}
"""Operators computed by transcendental kernels for floats."""

BROADCASTS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((4,), (3, 4)),
    ((1, 4), (3, 1)),
    ((2, 3, 4), (1, 4)),
    ((3, 4), ()),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_operators_of_one_dtype_match_numpy(op: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    a = rand(rng, (3, 4), dtype)
    b = rand(rng, (4,), dtype, ROLE.get(op, "any"))
    f = BINARY[op]
    fns = {
        f"tensor {op} tensor": lambda x, y, an, bn: f(x, y),
        f"tensor {op} ndarray": lambda x, y, an, bn: f(x, bn),
        f"ndarray {op} tensor": lambda x, y, an, bn: f(an, y),
    }
    check(fns, (a, b, a, b), (lz.asarray(a), lz.asarray(b), a, b), approx=op in APPROX)


@settings(max_examples=50, deadline=None)
@given(
    op=st.sampled_from(list(BINARY)),
    dtypes=st.tuples(st.sampled_from(DTYPES), st.sampled_from(DTYPES)),
    shapes=st.sampled_from(BROADCASTS),
    form=st.sampled_from(["tensor-tensor", "tensor-ndarray", "ndarray-tensor"]),
    seed=st.integers(0, 2**16),
)
def test_binary_operators_promote_mixed_dtypes_and_broadcast_as_numpy(
    op: str, dtypes: tuple[str, str], shapes: Any, form: str, seed: int
) -> None:
    # a float tensor % a one-element integer tensor: test_float_remainder_by_a_one_element_...
    assume(not (op == "%" and dtypes[0][0] == "f" and dtypes[1][0] == "i" and not shapes[1]))
    rng = np.random.default_rng(seed)
    a = rand(rng, shapes[0], dtypes[0])
    b = rand(rng, shapes[1], dtypes[1], ROLE.get(op, "any"))
    la = lz.asarray(a) if form != "ndarray-tensor" else a
    lb = lz.asarray(b) if form != "tensor-ndarray" else b
    check(
        {f"{form} {a.dtype}{shapes[0]} {op} {b.dtype}{shapes[1]}": BINARY[op]},
        (a, b),
        (la, lb),
        approx=op in APPROX,
    )


PY_SCALARS: list[Any] = [3, -2, 2.5, -0.75, True, False]


def scalar_fits(op: str, s: Any, dtype: str) -> bool:
    """Whether ``tensor op s`` is a value in numpy (no division by zero, no negative
    integer power)."""
    if ROLE.get(op) == "divisor":
        return bool(s)
    if op == "**" and not dtype.startswith("float") and isinstance(s, int):
        return s >= 0
    return True


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(BINARY))
def test_operators_with_python_scalars_are_weakly_typed_as_in_numpy(op: str, dtype: str) -> None:
    rng = np.random.default_rng(2)
    a = rand(rng, (3, 4), dtype)
    b = rand(rng, (3, 4), dtype, ROLE.get(op, "any"))  # the right operand of `s op b`
    f = BINARY[op]
    fns: dict[str, Fn] = {}
    for s in PY_SCALARS:
        if scalar_fits(op, s, dtype):
            fns[f"tensor {op} {s!r}"] = lambda x, y, s=s: f(x, s)
        fns[f"{s!r} {op} tensor"] = lambda x, y, s=s: f(s, y)
    check(fns, (a, b), (lz.asarray(a), lz.asarray(b)), approx=op in APPROX)


@pytest.mark.parametrize("shape", [(), (1, 1)], ids=str)
def test_float_remainder_by_a_one_element_integer_tensor_matches_numpy(
    shape: tuple[int, ...],
) -> None:
    a = rand(np.random.default_rng(1), (3, 4), "float32")
    b = np.full(shape, 3, np.int32)
    check({"x % y": operator.mod}, (a, b), lazy(a, b))


NP_SCALARS: list[Any] = [np.float64(2.5), np.float32(-1.5), np.int64(3), np.int32(-2), np.True_]


@pytest.mark.parametrize("dtype", DTYPES)
def test_operators_with_numpy_scalars_are_strongly_typed_as_in_numpy(dtype: str) -> None:
    rng = np.random.default_rng(3)
    a = rand(rng, (3, 4), dtype)
    e = rand(rng, (3, 4), dtype, "positive")  # the right operand of `s ** e` and `s / e`
    exact: dict[str, Fn | tuple[Fn, Fn]] = {}
    powers: dict[str, Fn | tuple[Fn, Fn]] = {}
    for s in NP_SCALARS:
        for op in ("+", "*", "/", "<", "**"):
            f, fns = BINARY[op], powers if op == "**" else exact
            if not (op == "**" and not dtype.startswith("float") and s < 0):
                fns[f"tensor {op} {s!r}"] = lambda x, y, s=s, f=f: f(x, s)
            fns[f"{s!r} {op} tensor"] = lambda x, y, s=s, f=f: f(s, y)
    check(exact, (a, e), lazy(a, e))
    check(powers, (a, e), lazy(a, e), approx=True)


def test_arithmetic_with_a_python_int_out_of_the_tensors_range_is_numpys() -> None:
    a = np.arange(4, dtype=np.int32)
    check(
        {
            "x + 2**40": lambda x: x + 2**40,  # numpy: OverflowError
            "x * -(2**40)": lambda x: x * -(2**40),
            "x + np.int64(2**40)": lambda x: x + np.int64(2**40),
            "x + 2.0**40": lambda x: x + 2.0**40,
        },
        (a,),
        lazy(a),
    )


def test_comparisons_with_a_python_int_out_of_the_tensors_range_are_numpys() -> None:
    a = np.arange(4, dtype=np.int32)
    check(
        {
            "x < 2**40": lambda x: x < 2**40,
            "x == 2**40": lambda x: x == 2**40,
            "x >= -(2**40)": lambda x: x >= -(2**40),
        },
        (a,),
        lazy(a),
    )


def test_integers_to_a_negative_integer_power_raise_value_error_as_numpy() -> None:
    x = lz.asarray(np.array([-3, 1, 5, 7], np.int32))
    with pytest.raises(ValueError, match="negative integer powers"):
        np.asarray(x**-1)


@pytest.mark.parametrize("op", ["//", "%"])
def test_integer_division_by_zero_gives_zero_as_numpy(op: str) -> None:
    a = np.array([-3, 0, 5, 7], np.int32)
    b = np.array([0, 0, 0, 2], np.int32)
    check({f"x {op} y": BINARY[op]}, (a, b), lazy(a, b))


@pytest.mark.parametrize("op", ["/", "//", "%"])
def test_float_division_by_zero_is_ieee_as_numpy(op: str) -> None:
    a = np.array([-3, 0, 5, 7], np.float32)
    b = np.array([0, 0, 0, 2], np.float32)
    check({f"x {op} y": BINARY[op]}, (a, b), lazy(a, b))


UNARY: dict[str, Fn] = {
    "-x": operator.neg,
    "+x": operator.pos,
    "abs(x)": abs,
    "~x": operator.invert,
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", [o for o in UNARY if o != "abs(x)"])
def test_unary_operators_match_numpy(op: str, dtype: str) -> None:
    a = rand(np.random.default_rng(4), (2, 3, 4), dtype)
    check({op: UNARY[op]}, (a,), (lz.asarray(a),))


@pytest.mark.parametrize("dtype", DTYPES)
def test_abs_matches_numpy(dtype: str) -> None:
    a = rand(np.random.default_rng(4), (2, 3, 4), dtype)
    check({"abs(x)": abs, "np.abs(x)": np.abs}, (a,), (lz.asarray(a),))


@pytest.mark.parametrize("dtype", ["float32", "bool"])
@pytest.mark.parametrize("op", [o for o in UNARY if o != "abs(x)"])
def test_unary_operators_of_a_0d_tensor_match_numpy(op: str, dtype: str) -> None:
    a = rand(np.random.default_rng(4), (), dtype)
    check({op: UNARY[op]}, (a,), (lz.asarray(a),))


def test_invert_of_a_0d_integer_tensor_is_a_lazy_tensor() -> None:
    assert_same(~lz.asarray(np.int32(5)), ~np.int32(5))


MATMUL_SHAPES = [
    ((3, 4), (4,)),
    ((4,), (4, 3)),
    ((4,), (4,)),
    ((3, 4), (4, 2)),
    ((2, 3, 4), (4, 2)),
    ((3, 4), (2, 4, 3)),
    ((2, 3, 4), (2, 4, 3)),
    ((1, 3, 4), (2, 4, 3)),
    ((2, 2, 3, 4), (4, 3)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_matmul_and_dot_match_numpy(dtype: str, shapes: Any) -> None:
    rng = np.random.default_rng(5)
    a, b = rand(rng, shapes[0], dtype), rand(rng, shapes[1], dtype)
    fns: dict[str, Fn] = {
        "x @ y": operator.matmul,
        "x @ ndarray": lambda x, y: x @ b,
        "ndarray @ y": lambda x, y: a @ y,
        "np.matmul(x, y)": np.matmul,
    }
    if len(shapes[0]) <= 2 and len(shapes[1]) <= 2:
        fns["x.dot(y)"] = lambda x, y: x.dot(y)
        fns["np.dot(x, y)"] = np.dot
    check(fns, (a, b), (lz.asarray(a), lz.asarray(b)), approx=True)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((2, 3, 4), (4, 2))], ids=str)
def test_matmul_of_bool_tensors_matches_numpy(shapes: Any) -> None:
    rng = np.random.default_rng(5)
    a, b = rand(rng, shapes[0], "bool"), rand(rng, shapes[1], "bool")
    check({"x @ y": operator.matmul}, (a, b), lazy(a, b))


def test_matmul_of_mixed_dtypes_promotes_as_numpy() -> None:
    rng = np.random.default_rng(6)
    a, b = rand(rng, (3, 4), "int32"), rand(rng, (4, 2), "float32")
    check(
        {"x @ y": operator.matmul, "y.T @ x.T": lambda x, y: y.T @ x.T},
        (a, b),
        lazy(a, b),
        approx=True,
    )


def test_matmul_errors_are_numpys() -> None:
    x = lz.asarray(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError):
        x @ np.float32(2)
    with pytest.raises((ValueError, relay.TypeCheckError)):
        x @ x


# -- 2. ufuncs -----------------------------------------------------------------------------------

UFUNCS: dict[str, tuple[str, bool]] = {
    # name: (the role of the inputs, computed by fast transcendental kernels)
    "exp": ("any", True),
    "log": ("positive", True),
    "tanh": ("any", True),
    "sqrt": ("nonneg", True),
    "sin": ("any", True),
    "cos": ("any", True),
    "abs": ("any", False),
    "negative": ("any", False),
    "floor": ("any", False),
    "ceil": ("any", False),
    "sign": ("any", False),
    "square": ("any", False),
    "logical_not": ("any", False),
    "maximum": ("any", False),
    "minimum": ("any", False),
    "power": ("any", True),
}


@pytest.mark.parametrize(("name", "dtype"), [(n, d) for n in UFUNCS for d in DTYPES])
def test_numpy_ufuncs_on_lazy_tensors_and_lnp_on_arrays_match_numpy(name: str, dtype: str) -> None:
    rng = np.random.default_rng(7)
    role, approx = UFUNCS[name]
    a = rand(rng, (3, 4), dtype, role)
    b = rand(rng, (4,), dtype, "exponent" if name == "power" else role)
    f, lf = getattr(np, name), getattr(lnp, name)
    args = (a, b) if f.nin == 2 else (a,)
    fns: dict[str, Fn | tuple[Fn, Fn]] = {
        f"np.{name}(tensor)": lambda x, y, an, bn: f(*(x, y)[: f.nin]),
        f"lnp.{name}(ndarray)": (
            lambda x, y, an, bn: f(*args),
            lambda x, y, an, bn: lf(*(an, bn)[: f.nin]),
        ),
        f"lnp.{name}(tensor)": (
            lambda x, y, an, bn: f(*args),
            lambda x, y, an, bn: lf(*(x, y)[: f.nin]),
        ),
    }
    if f.nin == 2:
        fns[f"np.{name}(tensor, ndarray)"] = lambda x, y, an, bn: f(x, bn)
        fns[f"np.{name}(ndarray, tensor)"] = lambda x, y, an, bn: f(an, y)
    check(fns, (a, b, a, b), (*lazy(a, b), a, b), approx=approx)


def test_a_ufunc_with_arguments_relay_does_not_take_falls_back_to_numpy() -> None:
    lz.reset_metrics()
    a = rand(np.random.default_rng(8), (3, 4), "float32")
    mask = a > 0
    x = lz.asarray(a)
    check(
        {
            "np.add(x, 1, where=mask)": lambda x: np.add(x, 1, where=mask, out=np.zeros_like(a)),
            "np.add.reduce(x, axis=0)": lambda x: np.add.reduce(x, axis=0),
            "np.add.accumulate(x, axis=1)": lambda x: np.add.accumulate(x, axis=1),
            "np.arctan2(x, x)": lambda x: np.arctan2(x, x),
        },
        (a,),
        (x,),
    )
    assert sum(lz.metrics().fallbacks.values()) == 4, lz.metrics().fallbacks
    assert lz.metrics().fallbacks["arctan2"] == 1


def test_a_ufunc_fallback_is_counted_under_the_ufuncs_name() -> None:
    lz.reset_metrics()
    x = lz.asarray(np.ones((3, 4), np.float32))
    np.add(x, 1, where=np.ones((3, 4), bool), out=np.zeros((3, 4), np.float32))
    assert lz.metrics().fallbacks == {"add": 1}


# -- 3. methods and functions --------------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "prod", "max", "min", "argmax", "argmin"]
AXES: list[Any] = [None, 0, 2, -1, -3, (0, 2), (-1, 1), (0, 1, 2), 3, -4]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_match_numpy_for_every_axis_and_keepdims(name: str, dtype: str) -> None:
    a = rand(np.random.default_rng(9), (2, 3, 4), dtype)
    fns: dict[str, Fn | tuple[Fn, Fn]] = {}
    for axis in AXES:
        for keepdims in (False, True):
            kw = {"axis": axis, "keepdims": keepdims}
            fns[f"x.{name}(**{kw})"] = lambda x, kw=kw: getattr(x, name)(**kw)
            fns[f"np.{name}(x, **{kw})"] = lambda x, kw=kw: getattr(np, name)(x, **kw)
    fns[f"x.{name}()"] = lambda x: getattr(x, name)()
    fns[f"lnp.{name}(x, 1)"] = (
        lambda x: getattr(np, name)(x, 1),
        lambda x: getattr(lnp, name)(x, 1),
    )
    check(fns, (a,), (lz.asarray(a),), approx=name in ("sum", "mean", "prod"))


@pytest.mark.parametrize("dtype", ["int32", "bool", "float32"])
@pytest.mark.parametrize("name", ["sum", "mean", "prod"])
def test_reductions_accumulate_in_the_dtype_asked_for(name: str, dtype: str) -> None:
    a = rand(np.random.default_rng(10), (3, 4), dtype)
    fns: dict[str, Fn | tuple[Fn, Fn]] = {
        f"x.{name}(dtype={d})": lambda x, d=d: getattr(x, name)(axis=0, dtype=d)
        for d in ("float64", "int64", "float32")
    }
    check(fns, (a,), (lz.asarray(a),), approx=True)


@pytest.mark.parametrize("name", ["sum", "max"])
def test_a_reduction_over_no_axes_reduces_nothing(name: str) -> None:
    a = rand(np.random.default_rng(10), (3, 4), "float32")
    check({f"x.{name}(axis=())": lambda x: getattr(x, name)(axis=())}, (a,), lazy(a))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_var_and_std_match_numpy_with_ddof(dtype: str) -> None:
    a = rand(np.random.default_rng(11), (2, 3, 4), dtype)
    fns: dict[str, Fn | tuple[Fn, Fn]] = {}
    for axis in (0, -1, (0, 2)):
        for ddof in (0, 1):
            kw = {"axis": axis, "ddof": ddof, "keepdims": axis == 0}
            fns[f"x.var(**{kw})"] = lambda x, kw=kw: x.var(**kw)
            fns[f"x.std(**{kw})"] = lambda x, kw=kw: x.std(**kw)
            fns[f"np.var(x, **{kw})"] = lambda x, kw=kw: np.var(x, **kw)
            fns[f"np.std(x, **{kw})"] = lambda x, kw=kw: np.std(x, **kw)
    check(fns, (a,), (lz.asarray(a),), approx=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_var_and_std_of_all_elements_are_lazy_tensors(dtype: str) -> None:
    a = rand(np.random.default_rng(11), (2, 3, 4), dtype)
    fns: dict[str, Fn | tuple[Fn, Fn]] = {
        "x.var()": lambda x: x.var(),
        "x.std(ddof=1)": lambda x: x.std(ddof=1),
        "np.var(x)": np.var,
    }
    check(fns, (a,), (lz.asarray(a),), approx=True)


def test_operations_with_numpy_float64_scalars_are_recorded_not_run_by_numpy() -> None:
    lz.reset_metrics()
    x = lz.asarray(np.ones((3, 4), np.float32))
    y = lz.asarray(np.ones((3, 4), np.float64))
    r = x * np.float64(2.5), y.var(axis=0)
    assert all(t.pending for t in r)
    assert not lz.metrics().fallbacks


SHAPE_CASES: dict[str, Fn] = {
    "x.reshape(-1)": lambda x: x.reshape(-1),
    "x.reshape((4, 6))": lambda x: x.reshape((4, 6)),
    "x.reshape([6, 4])": lambda x: x.reshape([6, 4]),
    "x.reshape(4, -1)": lambda x: x.reshape(4, -1),
    "x.reshape(2, 3, 2, 2)": lambda x: x.reshape(2, 3, 2, 2),
    "x.reshape(2, 3, 4)": lambda x: x.reshape(2, 3, 4),
    "np.reshape(x, (-1, 3))": lambda x: np.reshape(x, (-1, 3)),
    "x.transpose()": lambda x: x.transpose(),
    "x.transpose(2, 0, 1)": lambda x: x.transpose(2, 0, 1),
    "x.transpose((1, 0, 2))": lambda x: x.transpose((1, 0, 2)),
    "x.transpose(-1, 0, 1)": lambda x: x.transpose(-1, 0, 1),
    "np.transpose(x, (0, 2, 1))": lambda x: np.transpose(x, (0, 2, 1)),
    "x.T": lambda x: x.T,
    "x[0].T": lambda x: x[0].T,
    "x.flatten()": lambda x: x.flatten(),
    "x.ravel()": lambda x: x.ravel(),
    "np.ravel(x.T)": lambda x: np.ravel(x.T),
    "x.reshape(2, 1, 3, 4).squeeze()": lambda x: x.reshape(2, 1, 3, 4).squeeze(),
    "x.reshape(1, 2, 1, 12).squeeze(2)": lambda x: x.reshape(1, 2, 1, 12).squeeze(2),
    "x.reshape(1, 2, 1, 12).squeeze((0, -2))": lambda x: x.reshape(1, 2, 1, 12).squeeze((0, -2)),
    "np.squeeze(x[:1])": lambda x: np.squeeze(x[:1]),
    "x.copy()": lambda x: x.copy(),
    "np.copy(x)": lambda x: np.copy(x),
    "x.clip(-1, 2)": lambda x: x.clip(-1, 2),
    "x.clip(None, 1)": lambda x: x.clip(None, 1),
    "x.clip(0, None)": lambda x: x.clip(0, None),
    "np.clip(x, -1.5, 1.5)": lambda x: np.clip(x, -1.5, 1.5),
    "np.clip(x, x[0], 3)": lambda x: np.clip(x, x[0], 3),
    "np.expand_dims(x, 0)": lambda x: np.expand_dims(x, 0),
    "np.expand_dims(x, -1)": lambda x: np.expand_dims(x, -1),
    "np.expand_dims(x, 2)": lambda x: np.expand_dims(x, 2),
    "np.zeros_like(x)": lambda x: np.zeros_like(x),
    "np.ones_like(x)": lambda x: np.ones_like(x),
    "np.ones_like(x, dtype=np.float32)": lambda x: np.ones_like(x, dtype=np.float32),
    "np.full_like(x, 7)": lambda x: np.full_like(x, 7),
    "np.full_like(x, 2.5)": lambda x: np.full_like(x, 2.5),
    "np.full_like(x, 2.5, dtype=np.float64)": lambda x: np.full_like(x, 2.5, dtype=np.float64),
    "np.broadcast_to(x, (2, 2, 3, 4))": lambda x: np.broadcast_to(x, (2, 2, 3, 4)),
    "np.broadcast_to(x[:, :1], (2, 3, 4))": lambda x: np.broadcast_to(x[:, :1], (2, 3, 4)),
    "np.concatenate([x, x], 0)": lambda x: np.concatenate([x, x], 0),
    "np.concatenate([x, x[:, :1]], axis=1)": lambda x: np.concatenate([x, x[:, :1]], axis=1),
    "np.concatenate((x, x), axis=-1)": lambda x: np.concatenate((x, x), axis=-1),
    "np.concatenate([x, x[0]], axis=None)": lambda x: np.concatenate([x, x[0]], axis=None),
    "np.concatenate([x, np.ones((2, 3, 1))], 2)": lambda x: np.concatenate(
        [x, np.ones((2, 3, 1))], 2
    ),
    "np.stack([x, x])": lambda x: np.stack([x, x]),
    "np.stack([x, x + 1], axis=1)": lambda x: np.stack([x, x + 1], axis=1),
    "np.stack((x, x), axis=-1)": lambda x: np.stack((x, x), axis=-1),
    "np.where(x > 0, x, 0)": lambda x: np.where(x > 0, x, 0),
    "np.where(x > 0, 1.5, x)": lambda x: np.where(x > 0, 1.5, x),
    "np.where(x < 1, x, x[0])": lambda x: np.where(x < 1, x, x[0]),
    "np.where(np.arange(4) > 1, x, -x)": lambda x: np.where(np.arange(4) > 1, x, -x),
}


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("case", list(SHAPE_CASES))
def test_shape_methods_and_array_functions_match_numpy(case: str, dtype: str) -> None:
    a = rand(np.random.default_rng(12), (2, 3, 4), dtype)
    check({case: SHAPE_CASES[case]}, (a,), (lz.asarray(a),))


@pytest.mark.parametrize("src", DTYPES)
def test_astype_converts_as_numpy(src: str) -> None:
    a = rand(np.random.default_rng(13), (3, 4), src)
    if src.startswith("float"):
        a[0, :3] = [0.0, -0.0, 0.5]
    fns: dict[str, Fn | tuple[Fn, Fn]] = {
        f"x.astype({d})": lambda x, d=d: x.astype(d) for d in DTYPES
    }
    fns["x.astype(np.int8)"] = lambda x: x.astype(np.int8)
    fns["x.astype(float)"] = lambda x: x.astype(float)
    check(fns, (a,), (lz.asarray(a),))


def test_concatenate_and_stack_of_mixed_dtypes_promote_as_numpy() -> None:
    rng = np.random.default_rng(14)
    a, b, c = rand(rng, (3, 4), "int32"), rand(rng, (3, 4), "float32"), rand(rng, (3, 4), "bool")
    check(
        {
            "np.concatenate([int32, float32])": lambda x, y, z: np.concatenate([x, y]),
            "np.concatenate([bool, int32], axis=1)": lambda x, y, z: np.concatenate([z, x], axis=1),
            "np.stack([float32, bool])": lambda x, y, z: np.stack([y, z]),
            "np.where(bool, int32, float32)": lambda x, y, z: np.where(z, x, y),
        },
        (a, b, c),
        lazy(a, b, c),
    )


def test_creation_functions_of_lnp_match_numpys() -> None:
    cases: list[tuple[str, Any, Any]] = [
        ("zeros((3, 4))", lnp.zeros((3, 4)), np.zeros((3, 4))),
        ("zeros(5, dtype=int32)", lnp.zeros(5, dtype=np.int32), np.zeros(5, dtype=np.int32)),
        ("ones((2, 3), bool)", lnp.ones((2, 3), bool), np.ones((2, 3), bool)),
        ("ones([4])", lnp.ones([4]), np.ones([4])),
        ("full((2, 3), 7)", lnp.full((2, 3), 7), np.full((2, 3), 7)),
        (
            "full((2, 3), 2.5, float32)",
            lnp.full((2, 3), 2.5, np.float32),
            np.full((2, 3), 2.5, np.float32),
        ),
        ("full(4, True)", lnp.full(4, True), np.full(4, True)),
        (
            "full((3,), 2.5, dtype=int64)",
            lnp.full((3,), 2.5, dtype=np.int64),
            np.full((3,), 2.5, dtype=np.int64),
        ),
        ("arange(5)", lnp.arange(5), np.arange(5)),
        ("arange(1, 10, 2)", lnp.arange(1, 10, 2), np.arange(1, 10, 2)),
        ("arange(0, 1, 0.25)", lnp.arange(0, 1, 0.25), np.arange(0, 1, 0.25)),
        (
            "arange(6, dtype=float32)",
            lnp.arange(6, dtype=np.float32),
            np.arange(6, dtype=np.float32),
        ),
        ("eye(3)", lnp.eye(3), np.eye(3)),
        (
            "eye(3, 4, k=1, dtype=int32)",
            lnp.eye(3, 4, k=1, dtype=np.int32),
            np.eye(3, 4, k=1, dtype=np.int32),
        ),
    ]
    lz.mark_step()
    for what, got, want in cases:
        assert_same(got, want, what=what)


def test_shape_dtype_ndim_size_and_len_are_known_without_computing() -> None:
    a = rand(np.random.default_rng(15), (2, 3, 4), "int32")
    t = (lz.asarray(a) * 2.5).reshape(6, 4).T[1:]
    want = (a * 2.5).reshape(6, 4).T[1:]
    assert t.pending
    assert t.shape == want.shape == (3, 6)
    assert t.dtype == want.dtype == np.float64
    assert t.ndim == 2 and t.size == 18 and len(t) == 3
    assert t.itemsize == 8 and t.nbytes == 144
    assert np.shape(t) == (3, 6) and np.ndim(t) == 2 and np.size(t) == 18 and np.size(t, 1) == 6
    assert t.pending, "reading metadata computed the tensor"
    s = t.sum()
    assert s.shape == () and s.ndim == 0 and s.size == 1 and s.pending
    with pytest.raises(TypeError, match="len"):
        len(s)
    assert s.pending
    np.testing.assert_array_equal(t.numpy(), want, strict=True)


# -- 4. indexing ---------------------------------------------------------------------------------

KEYS: dict[str, Any] = {
    "x[2]": 2,
    "x[-1]": -1,
    "x[1, 2]": (1, 2),
    "x[-1, -2, -3]": (-1, -2, -3),
    "x[np.int64(3)]": np.int64(3),
    "x[1:4]": slice(1, 4),
    "x[::2]": slice(None, None, 2),
    "x[::-1]": slice(None, None, -1),
    "x[5:1:-2]": slice(5, 1, -2),
    "x[-2:]": slice(-2, None),
    "x[1:100]": slice(1, 100),
    "x[:, ::-2]": (slice(None), slice(None, None, -2)),
    "x[:, 1:4, -1]": (slice(None), slice(1, 4), -1),
    "x[None]": None,
    "x[None, 1:, ::2]": (None, slice(1, None), slice(None, None, 2)),
    "x[..., -1]": (Ellipsis, -1),
    "x[...]": Ellipsis,
    "x[1, ..., None]": (1, Ellipsis, None),
    "x[:, None, 2, ::-1]": (slice(None), None, 2, slice(None, None, -1)),
    "x[[2, 0]]": [2, 0],
    "x[[-1, 0, -1]]": [-1, 0, -1],
    "x[:, [1, 1, 0]]": (slice(None), [1, 1, 0]),
    "x[:, :, [3, 0]]": (slice(None), slice(None), [3, 0]),
    "x[[2, 0], 1:]": ([2, 0], slice(1, None)),
    "x[[2, 0], :, ::-1]": ([2, 0], slice(None), slice(None, None, -1)),
    "x[4:2]": slice(4, 2),
    "x[10:20, 1]": (slice(10, 20), 1),
    "x[:, 3:3]": (slice(None), slice(3, 3)),
    "x[np.array([2, 0])]": np.array([2, 0]),
    "x[np.array([[0, 1], [5, 4]])]": np.array([[0, 1], [5, 4]]),
    "x[:, np.array([1, 1, 0])]": (slice(None), np.array([1, 1, 0])),
    "x[np.array([3])]": np.array([3]),
}


@pytest.mark.parametrize("key", list(KEYS))
def test_indexing_reads_match_numpy(key: str) -> None:
    a = rand(np.random.default_rng(16), (6, 5, 4), "float32")
    check({key: lambda x: x[KEYS[key]]}, (a,), (lz.asarray(a),))


def test_an_integer_tensor_index_reads_as_numpy() -> None:
    a = rand(np.random.default_rng(16), (6, 5, 4), "int64")
    idx = np.array([3, -1, 0])
    check(
        {"x[idx]": lambda x, i: x[i], "x[:, idx]": lambda x, i: x[:, i]},
        (a, idx),
        lazy(a, idx),
    )


@st.composite
def basic_keys(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A basic index of an array of ``shape``: integers, slices, ``None`` and at most one
    ``...``."""
    items: list[Any] = []
    dims = draw(st.integers(0, len(shape)))
    least = min(shape)  # an integer index of any axis (a `...` shifts the axes indexed)
    for n in shape[:dims]:
        if draw(st.booleans()):
            items.append(draw(st.integers(-least, least - 1)))
        else:
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])
            items.append(slice(draw(bound), draw(bound), draw(step)))
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if dims < len(shape) and draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items)


@settings(max_examples=40, deadline=None)
@given(key=basic_keys((6, 5, 4)))
def test_random_basic_indexing_reads_match_numpy(key: tuple[Any, ...]) -> None:
    a = np.arange(120, dtype=np.int32).reshape(6, 5, 4)
    # an empty result of an index with an integer and None: test_an_empty_slice_with_...
    assume(not (0 in a[key].shape and None in key and any(isinstance(k, int) for k in key)))
    check({f"x[{key}]": lambda x: x[key]}, (a,), (lz.asarray(a),))


@pytest.mark.parametrize(
    "key", [(None, slice(5, 5), 0), (0, slice(5, 5), None), (None, None, slice(5, 5), 1)], ids=str
)
def test_an_empty_slice_with_an_integer_and_a_new_axis_reads_as_numpy(key: Any) -> None:
    a = np.arange(120, dtype=np.int32).reshape(6, 5, 4)
    check({f"x[{key}]": lambda x: x[key]}, (a,), (lz.asarray(a),))


def test_a_boolean_list_mask_read_falls_back_to_numpy() -> None:
    lz.reset_metrics()
    a = rand(np.random.default_rng(17), (3, 4), "float32")
    x = lz.asarray(a)
    check({"x[[True, False, True]]": lambda x: x[[True, False, True]]}, (a,), (x,))
    assert lz.metrics().fallbacks.total() == 1, lz.metrics().fallbacks


def test_a_boolean_mask_read_falls_back_to_numpy() -> None:
    lz.reset_metrics()
    a = rand(np.random.default_rng(17), (3, 4), "float32")
    x = lz.asarray(a)
    check(
        {
            "x[x > 0]": lambda x: x[x > 0],
            "x[ndarray mask]": lambda x: x[a < 1],
            "x[row mask]": lambda x: x[np.array([True, False, True])],
        },
        (a,),
        (x,),
    )
    assert lz.metrics().fallbacks.total() == 3, lz.metrics().fallbacks


OUT_OF_RANGE: dict[str, Any] = {
    "x[6]": 6,
    "x[-7]": -7,
    "x[:, 5]": (slice(None), 5),
    "x[0, 0, 4]": (0, 0, 4),
    "x[1, 2, 3, 0]": (1, 2, 3, 0),
    "x[..., ...]": (Ellipsis, Ellipsis),
    "x[[0, 6]]": [0, 6],
    "x[:, [-6]]": (slice(None), [-6]),
    "x[1.5]": 1.5,
}


@pytest.mark.parametrize("key", list(OUT_OF_RANGE))
def test_a_bad_index_raises_index_error_as_numpy(key: str) -> None:
    a = np.zeros((6, 5, 4), np.float32)
    with pytest.raises(IndexError):
        a[OUT_OF_RANGE[key]]
    with pytest.raises(IndexError):
        lz.asarray(a)[OUT_OF_RANGE[key]]


def test_an_out_of_range_tensor_index_raises_when_computed() -> None:
    # a lazy index's values are known only at the barrier: the error comes from there
    x = lz.asarray(np.arange(6, dtype=np.float32))
    with pytest.raises(relay.ExecutionError, match="out of range for axis 0 of size 6"):
        x[lz.asarray(np.array([6]))].numpy()
    np.testing.assert_array_equal(x[lz.asarray(np.array([-1, 0]))].numpy(), [5.0, 0.0])


# -- 5. in-place updates -------------------------------------------------------------------------


def iadd(x: Any, y: Any) -> Any:
    x += y
    return x


def isub(x: Any, y: Any) -> Any:
    x -= y
    return x


def imul(x: Any, y: Any) -> Any:
    x *= y
    return x


def idiv(x: Any, y: Any) -> Any:
    x /= y
    return x


def ipow(x: Any, y: Any) -> Any:
    x **= y
    return x


def ifloordiv(x: Any, y: Any) -> Any:
    x //= y
    return x


def imod(x: Any, y: Any) -> Any:
    x %= y
    return x


def imatmul(x: Any, y: Any) -> Any:
    x @= y
    return x


def setitem(key: Any, value: Any) -> Fn:
    def run(x: Any, y: Any) -> Any:
        x[key] = y if value is None else value
        return x

    return run


IN_PLACE: dict[str, tuple[str, Fn]] = {
    # what: (x's dtype, the update of x (y: a (4,) float32 array, a tensor on the lazy side))
    "float32 x += 1": ("float32", lambda x, y: iadd(x, 1)),
    "float32 x *= 2.5": ("float32", lambda x, y: imul(x, 2.5)),
    "float32 x -= y": ("float32", lambda x, y: isub(x, y)),
    "float32 x /= 3": ("float32", lambda x, y: idiv(x, 3)),
    "float32 x **= 2": ("float32", lambda x, y: ipow(x, 2)),
    "float64 x += y": ("float64", lambda x, y: iadd(x, y)),
    "float32 x @= eye": ("float32", lambda x, y: imatmul(x, np.eye(4, dtype=np.float32))),
    "int32 x += 1": ("int32", lambda x, y: iadd(x, 1)),
    "int32 x *= True": ("int32", lambda x, y: imul(x, True)),
    "int64 x -= np.int32(2)": ("int64", lambda x, y: isub(x, np.int32(2))),
    "int32 x += 1.5": ("int32", lambda x, y: iadd(x, 1.5)),
    "int32 x += y (float32)": ("int32", lambda x, y: iadd(x, y)),
    "int32 x /= 2": ("int32", lambda x, y: idiv(x, 2)),
    "bool x += True": ("bool", lambda x, y: iadd(x, True)),
    "bool x -= True": ("bool", lambda x, y: isub(x, True)),
    "bool x *= 2": ("bool", lambda x, y: imul(x, 2)),
    "float32 x (3, 4) += (2, 3, 4)": ("float32", lambda x, y: iadd(x, np.ones((2, 3, 4)))),
    "x[1] = 0": ("float32", setitem(1, 0)),
    "x[-1] = 7.5": ("float32", setitem(-1, 7.5)),
    "int32 x[1] = 2.7": ("int32", setitem(1, 2.7)),
    "x[:, 0] = np.arange(3)": ("float32", setitem((slice(None), 0), np.arange(3))),
    "x[1:3] = y": ("float32", setitem(slice(1, 3), None)),
    "x[0] = [1, 2, 3, 4]": ("float32", setitem(0, [1, 2, 3, 4])),
    "x[..., 1] = -1": ("float32", setitem((Ellipsis, 1), -1)),
    "x[1:, 2:] = 5": ("float32", setitem((slice(1, None), slice(2, None)), 5)),
    "x[0, 0] = 9": ("int64", setitem((0, 0), 9)),
    "x[None, 1] = 4": ("float32", setitem((None, 1), 4)),
    "x[::2] = 5": ("float32", setitem(slice(None, None, 2), 5)),
    "x[:, ::-1] = y": ("float32", setitem((slice(None), slice(None, None, -1)), None)),
    "x[[0, 2]] = 1": ("float32", setitem([0, 2], 1)),
    "x[x > 0] = 0": ("float32", lambda x, y: setitem(x > 0, 0)(x, y)),
    "x[1:3] = np.ones((3, 4))": ("float32", setitem(slice(1, 3), np.ones((3, 4)))),
    "x[:1] = np.ones((2, 4))": ("float32", setitem(slice(None, 1), np.ones((2, 4)))),
    "x[1:] = x[:-1] (overlapping)": ("float32", lambda x, y: setitem(slice(1, None), x[:-1])(x, y)),
    "x[1:3] = x[:2] * 2 + y": ("int64", lambda x, y: setitem(slice(1, 3), x[:2] * 2 + y)(x, y)),
    "x[5:] = 1": ("float32", setitem(slice(5, None), 1)),
    "x[3] = 1": ("float32", setitem(3, 1)),
    "np.add(x, 1, out=x)": ("float32", lambda x, y: np.add(x, 1, out=x)),
    "np.multiply(x, y, out=(x,))": ("float32", lambda x, y: np.multiply(x, y, out=(x,))),
    "np.negative(x, out=x)": ("int64", lambda x, y: np.negative(x, out=x)),
    "int32 np.add(x, 1.5, out=x)": ("int32", lambda x, y: np.add(x, 1.5, out=x)),
    "np.add(x, y, out=x) (3, 4) into (4,)": ("float32", lambda x, y: np.add(y, x, out=y)),
}


@pytest.mark.parametrize("case", list(IN_PLACE))
def test_in_place_updates_match_numpy(case: str) -> None:
    dtype, update = IN_PLACE[case]
    rng = np.random.default_rng(18)
    a, b = rand(rng, (3, 4), dtype), rand(rng, (4,), "float32")
    before = a.copy()
    want, err = numpy_outcome(update, (a, b.copy()))
    x, y = lazy(before, b)
    if err is not None:
        with pytest.raises(builtin_base(err)):
            update(x, y)
        assert_same(x, before, what=f"{case}: x changed by an update that raised")
        return
    got = update(x, y)
    assert (got is x) == (want is a), f"{case}: is the result the tensor updated in place?"
    assert_same(x, a, what=case)


def test_an_update_through_out_reaches_a_numpy_array() -> None:
    a = rand(np.random.default_rng(19), (3, 4), "float32")
    buf = np.zeros((3, 4), np.float32)
    out = np.add(lz.asarray(a), 1, out=buf)
    assert out is buf
    np.testing.assert_array_equal(buf, a + 1)


@pytest.mark.parametrize(
    "update",
    [ifloordiv, imod, lambda x, y: operator.iand(x, y), lambda x, y: operator.ixor(x, y)],
    ids=["//=", "%=", "&=", "^="],
)
def test_the_other_augmented_assignments_update_in_place(update: Fn) -> None:
    a = rand(np.random.default_rng(20), (3, 4), "int32", "divisor")
    x = lz.asarray(a)
    row = x[0]
    got = update(x, 3)
    want = update(a.copy(), 3)
    assert got is x
    assert_same(row, want[0])


def test_integer_floor_division_in_place_by_a_float_raises_type_error() -> None:
    x = lz.asarray(np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError):
        ifloordiv(x, 2.5)


# -- 6. fallbacks --------------------------------------------------------------------------------


def test_functions_relay_has_no_operator_for_run_in_numpy_and_are_counted() -> None:
    lz.reset_metrics()
    a = rand(np.random.default_rng(21), (3, 4), "int32")
    x = lz.asarray(a)
    results = {
        "np.cumsum(x)": (np.cumsum(x), np.cumsum(a)),
        "np.sort(x, axis=1)": (np.sort(x, axis=1), np.sort(a, axis=1)),
        "np.gcd(x, 6)": (np.gcd(x, 6), np.gcd(a, 6)),
        "np.lcm(5, x)": (np.lcm(5, x), np.lcm(5, a)),
        "lnp.cumsum(x, axis=0)": (lnp.cumsum(x, axis=0), np.cumsum(a, axis=0)),
    }
    assert lz.metrics().fallbacks == {"cumsum": 2, "sort": 1, "gcd": 1, "lcm": 1}
    for what, (got, want) in results.items():
        assert_same(got, want, what=what)
    # a fallback's result records like any tensor
    y = np.sort(x, axis=1) * 2 + x
    assert y.pending
    assert_same(y, np.sort(a, axis=1) * 2 + a)
    assert lz.metrics().fallbacks["sort"] == 2


# -- 7. errors -----------------------------------------------------------------------------------


def test_a_shape_mismatch_raises_type_check_error_at_the_line_of_the_operation() -> None:
    a, b = lz.asarray(np.ones((3, 4), np.float32)), lz.asarray(np.ones(5, np.float32))
    with pytest.raises(relay.TypeCheckError) as err:
        where = line() + 1
        a + b  # the operation
    span = err.value.span
    assert span is not None and span.line == where and span.source == __file__
    text = str(err.value)
    assert "a + b  # the operation\n" in text and "^" in text
    assert text.splitlines()[-1].strip().startswith("^")


@pytest.mark.parametrize(
    "shape", [(5, 5), (7, -1), (-1, -1), (-1, 5), (25,), (2, 3, 4, 2)], ids=str
)
def test_reshape_to_an_impossible_shape_raises_value_error(shape: tuple[int, ...]) -> None:
    a = np.zeros((3, 4, 2), np.float32)
    with pytest.raises(ValueError):
        a.reshape(shape)
    with pytest.raises(ValueError):
        lz.asarray(a).reshape(shape)
    with pytest.raises(ValueError):
        lz.asarray(a).reshape(*shape)


BAD_CALLS: dict[str, Fn] = {
    "x.transpose(0, 0, 1)": lambda x: x.transpose(0, 0, 1),
    "x.transpose(1, 0)": lambda x: x.transpose(1, 0),
    "x.squeeze(0)": lambda x: x.squeeze(0),
    "np.expand_dims(x, 4)": lambda x: np.expand_dims(x, 4),
    "x.sum(axis=3)": lambda x: x.sum(axis=3),
    "x.argmax(axis=(0, 1))": lambda x: x.argmax(axis=(0, 1)),
    "np.broadcast_to(x, (3, 4))": lambda x: np.broadcast_to(x, (3, 4)),
    "x - True (bool)": lambda x: x.astype(bool) - True,
    "-x (bool)": lambda x: -x.astype(bool),
    "~x (float)": lambda x: ~x,
    "x / 'a'": lambda x: x / "a",
}


@pytest.mark.parametrize(
    "case",
    BAD_CALLS,
)
def test_bad_calls_raise_numpys_exception_type(case: str) -> None:
    a = np.zeros((2, 3, 4), np.float32)
    _, err = numpy_outcome(BAD_CALLS[case], (a,))
    assert err is not None
    with pytest.raises(builtin_base(err)):
        BAD_CALLS[case](lz.asarray(a))
