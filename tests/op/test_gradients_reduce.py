"""Gradient rules of the reductions, checked against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.ir.expr import Var, const
from relay.ir.types import TensorType
from relay.op import reduce
from relay.op.registry import MissingRuleError, get_op
from relay.testing import check_op_gradient


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + len(shape)).standard_normal(shape)


REDUCTION_ATTRS: list[dict[str, object]] = [
    {},
    {"axis": [1]},
    {"axis": [-1]},
    {"axis": [0, 2]},
    {"axis": [1], "keepdims": True},
    {"axis": [-1, 0], "keepdims": True},
    {"axis": [1], "exclude": True},
    {"axis": [0, 2], "exclude": True, "keepdims": True},
    {"keepdims": True},
    {"axis": [0, 1, 2], "exclude": True},  # reduces nothing
]


@pytest.mark.parametrize("attrs", REDUCTION_ATTRS)
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "logsumexp"])
def test_reduction_gradient(op: str, attrs: dict[str, object]) -> None:
    check_op_gradient(op, [_x(2, 3, 4)], attrs)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "logsumexp"])
@pytest.mark.parametrize("shape", [(), (5,), (1, 3)])
def test_small_ranks(op: str, shape: tuple[int, ...]) -> None:
    check_op_gradient(op, [_x(*shape)], {})


@pytest.mark.parametrize("attrs", REDUCTION_ATTRS)
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_gradient(attrs: dict[str, object], unbiased: bool) -> None:
    if unbiased and attrs == REDUCTION_ATTRS[-1]:
        pytest.skip("an unbiased variance of single elements divides by zero")
    x = _x(2, 3, 4)
    axes = reduce.reduce_axes(3, attrs.get("axis"), bool(attrs.get("exclude", False)))  # type: ignore[arg-type]
    mean = x.mean(axis=axes, keepdims=True) + 0.1
    check_op_gradient("variance", [x, mean], {**attrs, "unbiased": unbiased})


def test_variance_with_a_full_shape_mean() -> None:
    check_op_gradient("variance", [_x(3, 4), _x(3, 4, seed=5)], {"axis": [1]})


@pytest.mark.parametrize("op", ["max", "min"])
def test_ties_share_the_adjoint_evenly(op: str) -> None:
    # finite differences are not defined at a tie; TVM's rule divides the adjoint among them
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    if op == "min":
        x = -x
    call = getattr(reduce, op)(Var("x", TensorType((2, 3), "float64")), axis=1)
    (adjoint,) = get_op(op).rule("gradient")(call, const(np.array([1.0, 6.0])))
    from relay.backend.interpreter import interpret
    from relay.ir.expr import Function

    fn = Function(tuple(call.args), adjoint)  # type: ignore[arg-type]
    got = interpret(fn, x)
    np.testing.assert_allclose(got, [[0.0, 0.5, 0.5], [2.0, 2.0, 2.0]])


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_random_shapes_and_axes(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = _x(*shape)
    axis = data.draw(
        st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda a: a % len(shape))
    )
    attrs = {
        "axis": axis or None,
        "keepdims": data.draw(st.booleans()),
        "exclude": data.draw(st.booleans()),
    }
    op = data.draw(st.sampled_from(["sum", "mean", "max", "min", "prod", "logsumexp"]))
    check_op_gradient(op, [x], attrs)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_are_not_differentiable(op: str) -> None:
    call = getattr(reduce, op)(Var("x", TensorType((2, 3), "float32")), axis=1)
    with pytest.raises(MissingRuleError) as info:
        get_op(op).rule("gradient")(call, const(np.zeros(2, "int32")))
    assert f"cannot differentiate through {op}: its result is an integer index" in str(info.value)


def test_integer_mean_and_variance_have_no_gradient() -> None:
    x = Var("x", TensorType((2, 3), "int32"))
    call = reduce.mean(x, axis=1)
    assert get_op("mean").rule("gradient")(call, const(np.zeros(2, "int32"))) == [None]


def test_every_reduction_has_a_gradient_rule() -> None:
    missing = [name for name in reduce._DEFS if get_op(name).gradient is None]
    assert missing == []


PROD_WITH_ZEROS = np.array([[1.5, 0.0, 3.0, -2.0], [0.0, 0.0, 2.0, 1.0], [2.0, 3.0, 4.0, 0.5]])


@pytest.mark.parametrize(
    "attrs", [{"axis": [1]}, {"axis": [0]}, {}, {"axis": [1], "exclude": True}]
)
def test_prod_gradient_is_exact_at_zeros(attrs: dict[str, object]) -> None:
    # one zero in a row: the product of the others there, 0 elsewhere; two zeros: all 0
    grads = check_op_gradient("prod", [PROD_WITH_ZEROS], attrs)
    assert np.isfinite(grads[0]).all()


def test_prod_gradient_values_at_zeros() -> None:
    from relay.backend.interpreter import interpret
    from relay.ir.expr import Function
    from relay.typecheck.checker import infer_type

    x = Var("x", TensorType((3, 4), "float64"))
    call = reduce.prod(x, axis=[1])
    infer_type(Function((x,), call))
    (adjoint,) = get_op("prod").rule("gradient")(call, const(np.ones(3)))
    g = interpret(Function((x,), adjoint), PROD_WITH_ZEROS)
    np.testing.assert_array_equal(
        g, [[0.0, -9.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [6.0, 4.0, 3.0, 24.0]]
    )
