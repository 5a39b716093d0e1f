"""JVP rules of the reductions against central differences and the gradient rules.

The cases are those of tests/op/test_gradients_reduce.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.ir.expr import Var, const
from relay.ir.types import TensorType
from relay.op import reduce
from relay.op.registry import MissingRuleError, get_op
from relay.testing import check_op_jvp
from tests.op.test_gradients_reduce import REDUCTION_ATTRS, _x

_OPS = ["sum", "mean", "max", "min", "prod", "logsumexp"]


@pytest.mark.parametrize("attrs", REDUCTION_ATTRS)
@pytest.mark.parametrize("op", _OPS)
def test_reduction_jvp(op: str, attrs: dict[str, object]) -> None:
    check_op_jvp(op, [_x(2, 3, 4)], attrs)


@pytest.mark.parametrize("op", _OPS)
@pytest.mark.parametrize("shape", [(), (5,), (1, 3)])
def test_small_ranks(op: str, shape: tuple[int, ...]) -> None:
    check_op_jvp(op, [_x(*shape)], {})


@pytest.mark.parametrize("attrs", REDUCTION_ATTRS)
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_jvp(attrs: dict[str, object], unbiased: bool) -> None:
    if unbiased and attrs == REDUCTION_ATTRS[-1]:
        pytest.skip("an unbiased variance of single elements divides by zero")
    x = _x(2, 3, 4)
    axes = reduce.reduce_axes(3, attrs.get("axis"), bool(attrs.get("exclude", False)))  # type: ignore[arg-type]
    mean = x.mean(axis=axes, keepdims=True) + 0.1
    for wrt in ([0, 1], [0], [1]):
        check_op_jvp("variance", [x, mean], {**attrs, "unbiased": unbiased}, wrt=wrt)


def test_variance_with_a_full_shape_mean() -> None:
    check_op_jvp("variance", [_x(3, 4), _x(3, 4, seed=5)], {"axis": [1]})


@pytest.mark.parametrize("op", ["max", "min"])
def test_ties_average_the_tangents(op: str) -> None:
    # finite differences are not defined at a tie; the gradient divides the adjoint among the
    # tied positions, so the tangent is the mean of theirs (check_op_jvp checks the transpose)
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    if op == "min":
        x = -x
    got = check_op_jvp(op, [x], {"axis": [1]}, numeric=False, seed=7)
    (t,) = [np.random.default_rng(7).standard_normal((2, 3))]
    np.testing.assert_allclose(got, [t[0, 1:].mean(), t[1].mean()])


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), data=st.data())
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
    op = data.draw(st.sampled_from(_OPS))
    check_op_jvp(op, [x], attrs)


def test_integer_reductions_get_no_tangent() -> None:
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert check_op_jvp("mean", [ints], {"axis": [1]}) is None
    assert check_op_jvp("argmax", [_x(2, 3)], {"axis": [1]}) is None  # an integer result


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_are_not_differentiable(op: str) -> None:
    call = getattr(reduce, op)(Var("x", TensorType((2, 3), "float32")), axis=1)
    with pytest.raises(MissingRuleError) as info:
        get_op(op).rule("jvp")(call, [const(np.zeros((2, 3), "float32"))])
    assert f"cannot differentiate through {op}: its result is an integer index" in str(info.value)


def test_prod_tangent_is_exact_at_zeros() -> None:
    from tests.op.test_gradients_reduce import PROD_WITH_ZEROS

    for attrs in ({"axis": [1]}, {"axis": [0]}, {}):
        check_op_jvp("prod", [PROD_WITH_ZEROS], attrs)
