"""JVP rules of relay/op/tensor.py and relay/op/elemwise.py against central differences.

Every gradient case of tests/op/test_gradients_elemwise.py is also a JVP case:
``relay.testing.check_op_jvp`` type-checks the rule's tangent, compares it with the central
difference along a random tangent, and checks it is the transpose of the gradient rule
(``<ct, J v> == <J^T ct, v>``), which also pins the conventions at ties and kinks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from relay.ir import Call, Var
from relay.ir.attrs import Attrs
from relay.ir.types import TensorType
from relay.op import get_op
from relay.op.registry import MissingRuleError
from relay.testing import check_op_jvp
from tests.op.test_gradients_elemwise import (
    _CASES,
    _NON_DIFFERENTIABLE,
    Maker,
    _apart,
    _divide,
    _normal,
    _power,
)

Array = np.ndarray[Any, np.dtype[Any]]


@pytest.mark.parametrize(
    ("op", "maker", "attrs"),
    _CASES,
    ids=[f"{op}-{i}" for i, (op, _, _) in enumerate(_CASES)],
)
def test_jvp_matches_central_differences(op: str, maker: Maker, attrs: dict[str, object]) -> None:
    args = maker(np.random.default_rng(len(op)))
    check_op_jvp(op, args, attrs)


@pytest.mark.parametrize("op", ["sign", "floor", "ceil", "round", "trunc"])
def test_piecewise_constant_operators_have_a_zero_tangent(op: str) -> None:
    assert check_op_jvp(op, [np.array([0.3, -1.7, 2.2])]) is None


@pytest.mark.parametrize("wrt", [0, 1])
@pytest.mark.parametrize(
    "op", ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "mod"]
)
def test_one_arguments_tangent_is_broadcast_to_the_result(op: str, wrt: int) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 2.0, (2, 1, 3)) + 0.1, rng.uniform(1.0, 2.0, (4, 1)) * 1.7
    if op == "mod":
        x, y = np.floor(x * 4) + 0.3, np.array([[2.0], [-1.0], [1.0], [-2.0]])
    got = check_op_jvp(op, [x, y] if wrt else [y, x], wrt=[wrt])
    assert got is not None and got.shape == (2, 4, 3)


def test_maximum_and_minimum_give_a_tie_the_first_arguments_tangent() -> None:
    a, b = np.array([1.0, 2.0]), np.array([1.0, 3.0])
    got = check_op_jvp("maximum", [a, b], numeric=False, seed=4)
    rng = np.random.default_rng(4)
    ta, tb = rng.standard_normal(2), rng.standard_normal(2)
    np.testing.assert_allclose(got, [ta[0], tb[1]])


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (np.array([0.0, 1.5, 2.0]), np.array([2.0, 0.0, 3.0])),
        (np.array([0.0, 0.0]), np.array([3.0, 2.0])),
    ],
)
def test_power_is_finite_where_the_base_or_exponent_is_zero(a: Array, b: Array) -> None:
    got = check_op_jvp("power", [a, b], numeric=False)
    assert got is not None and np.all(np.isfinite(got))


def test_an_integer_power_is_not_differentiated() -> None:
    ints = np.array([[1, 2], [3, 4]], dtype=np.int32)
    assert check_op_jvp("power", [ints, np.array(3, dtype=np.int32)]) is None


@pytest.mark.parametrize(
    ("sc", "sx", "sy"),
    [((2, 3), (2, 3), (2, 3)), ((3,), (2, 3), (1,)), ((2, 1), (3,), ()), ((), (5,), (5,))],
)
def test_where_takes_each_branchs_tangent(
    sc: tuple[int, ...], sx: tuple[int, ...], sy: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(2)
    cond = rng.integers(0, 2, sc).astype(bool)
    check_op_jvp("where", [cond, rng.standard_normal(sx), rng.standard_normal(sy)])


def test_cast_like_ignores_the_dtype_source() -> None:
    rng = np.random.default_rng(1)
    check_op_jvp("cast_like", [rng.standard_normal((2, 3)), np.zeros((4,))])


@pytest.mark.parametrize(
    ("fill", "attrs"),
    [
        (np.array(1.5), {"shape": (2, 3), "dtype": "float64"}),
        (np.array(-0.5), {"shape": (4,), "dtype": ""}),
        (np.array(2.0), {"shape": (), "dtype": "float64"}),
    ],
)
def test_full_spreads_the_fill_values_tangent(fill: Array, attrs: dict[str, object]) -> None:
    check_op_jvp("full", [fill], attrs)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_full_like_and_the_like_constructors(shape: tuple[int, ...]) -> None:
    data = np.random.default_rng(0).standard_normal(shape)
    check_op_jvp("full_like", [data, np.array(0.25)])
    assert check_op_jvp("zeros_like", [data]) is None
    assert check_op_jvp("ones_like", [data]) is None


@pytest.mark.parametrize(
    ("start", "stop", "step"),
    [(0.0, 5.5, 1.0), (1.25, 4.0, 0.5), (3.0, -2.0, -0.75), (0.5, 7.3, 2.0)],
)
def test_arange_follows_start_and_step(start: float, stop: float, step: float) -> None:
    check_op_jvp("arange", [np.array(v) for v in (start, stop, step)], {"dtype": "float64"})


@pytest.mark.parametrize(
    ("op", "args", "attrs"),
    [
        ("cast", [np.array([[1, 2], [3, 4]], dtype=np.int32)], {"dtype": "float64"}),
        ("full", [np.array(3, dtype=np.int32)], {"shape": (2,), "dtype": "float64"}),
        ("arange", [np.array(v, dtype=np.int32) for v in (0, 7, 2)], {"dtype": "int32"}),
        ("zeros", [], {"shape": (2, 3), "dtype": "float64"}),
        ("cast", [np.ones((2,))], {"dtype": "int32"}),
    ],
)
def test_no_rule_is_called_without_a_float_tangent_or_result(
    op: str, args: list[Array], attrs: dict[str, object]
) -> None:
    assert check_op_jvp(op, args, attrs) is None


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(
    ("op", "maker", "attrs"),
    [c for c in _CASES if c[0] != "cast"][::5],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_tangents_keep_narrower_float_dtypes(
    dtype: str, op: str, maker: Maker, attrs: dict[str, object]
) -> None:
    args = [a.astype(dtype) for a in maker(np.random.default_rng(3))]
    got = check_op_jvp(op, args, attrs, numeric=False, transpose=False)  # the type only
    assert got is None or got.dtype == np.dtype(dtype)


@settings(max_examples=30, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    op=st.sampled_from(["add", "subtract", "multiply", "divide", "power", "maximum", "minimum"]),
    seed=st.integers(0, 2**16),
)
def test_binary_jvps_over_random_broadcast_shapes(shapes: Any, op: str, seed: int) -> None:
    sa, sb = shapes.input_shapes
    makers = {"divide": _divide, "power": _power, "maximum": _apart, "minimum": _apart}
    maker = makers.get(op, _normal)(sa, sb)
    check_op_jvp(op, maker(np.random.default_rng(seed)), seed=seed)


@pytest.mark.parametrize("op", sorted(_NON_DIFFERENTIABLE))
def test_non_differentiable_operators_say_why(op: str) -> None:
    dtype, arity, reason = _NON_DIFFERENTIABLE[op]
    args = tuple(Var(f"x{i}", TensorType((2, 3), dtype)) for i in range(arity))
    call = Call(get_op(op).op, args, Attrs({}))
    with pytest.raises(MissingRuleError, match=f"cannot differentiate through {op}: {reason}"):
        get_op(op).rule("jvp")(call, list(args))
