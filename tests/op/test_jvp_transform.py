"""JVP rules of the shape (transform) family against central differences and the gradients.

Every gradient case of tests/op/test_gradients_transform.py is also a JVP case; the
operators taking a tuple (``concatenate``, ``stack``) get a tuple of tangents.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.ir.expr import Var, const
from relay.ir.types import TensorType
from relay.op import transform
from relay.op.registry import MissingRuleError, get_op
from relay.testing import check_op_jvp
from tests.op.test_gradients_transform import CASES, _x


@pytest.mark.parametrize(
    ("op", "args", "attrs"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_jvp_matches_finite_differences(op: str, args: list[Any], attrs: dict[str, object]) -> None:
    check_op_jvp(op, args, attrs)


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [
        ([(2, 3), (4, 3)], 0),
        ([(2, 3), (2, 1), (2, 5)], 1),
        ([(2, 3), (2, 1), (2, 5)], -1),
        ([(3, 2, 2)], 1),
    ],
)
def test_concatenate_joins_the_tangents(shapes: list[tuple[int, ...]], axis: int) -> None:
    parts = tuple(_x(*s, seed=k) for k, s in enumerate(shapes))
    got = check_op_jvp("concatenate", [parts], {"axis": axis})
    assert got is not None


@pytest.mark.parametrize(
    ("shape", "n", "axis"), [((2, 3), 2, 0), ((2, 3), 3, -1), ((4,), 1, 1), ((), 2, 0)]
)
def test_stack_stacks_the_tangents(shape: tuple[int, ...], n: int, axis: int) -> None:
    check_op_jvp("stack", [tuple(_x(*shape, seed=k) for k in range(n))], {"axis": axis})


def test_split_gives_a_tuple_of_tangents() -> None:
    got = check_op_jvp("split", [_x(6, 4)], {"indices_or_sections": [1, 4], "axis": 0})
    assert isinstance(got, tuple) and [g.shape for g in got] == [(1, 4), (3, 4), (2, 4)]


@pytest.mark.parametrize("op", ["reshape_like", "broadcast_to_like", "collapse_sum_like"])
def test_the_shape_argument_contributes_nothing(op: str) -> None:
    args = {
        "reshape_like": [_x(2, 6), _x(3, 4)],
        "broadcast_to_like": [_x(1, 4), _x(2, 3, 4)],
        "collapse_sum_like": [_x(2, 3, 4), _x(3, 1)],
    }[op]
    assert check_op_jvp(op, args, wrt=[1]) is None
    check_op_jvp(op, args)


def test_one_hot_with_one_fill_values_tangent() -> None:
    idx = np.array([[0, 2], [1, 3]])
    attrs = {"depth": 3, "dtype": "float64"}
    check_op_jvp("one_hot", [idx, np.array(1.5), np.array(-0.5)], attrs, wrt=[2])
    check_op_jvp("one_hot", [idx, np.array(1.5), np.array(-0.5)], attrs, wrt=[1])
    # an integer on_value has no tangent; the float off_value's still flows
    check_op_jvp("one_hot", [idx, np.array(1, dtype=np.int32), np.array(-0.5)], attrs)


def test_integer_data_gets_no_tangent() -> None:
    ints = np.arange(20, dtype=np.int32).reshape(4, 5)
    assert check_op_jvp("take", [ints, np.array([1, 3])], {"axis": 0}) is None


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), data=st.data())
def test_random_transpose_reverse_and_slices(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = _x(*shape)
    perm = data.draw(st.permutations(range(len(shape))))
    check_op_jvp("transpose", [x], {"axes": list(perm)})
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_op_jvp("reverse", [x], {"axis": ax})
    n = shape[ax]
    b = data.draw(st.integers(-n - 1, n + 1))
    e = data.draw(st.integers(-n - 1, n + 1))
    s = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
    attrs = {"begin": [b], "end": [e], "strides": [s], "axes": [ax]}
    check_op_jvp("strided_slice", [x], attrs)
    reps = data.draw(st.lists(st.integers(1, 3), max_size=3))
    check_op_jvp("tile", [x], {"reps": reps})


def test_shape_of_is_not_differentiable() -> None:
    x = Var("x", TensorType((2, 3), "float32"))
    call = transform.shape_of(x)
    with pytest.raises(
        MissingRuleError,
        match="cannot differentiate through shape_of: its result is the integer shape",
    ):
        get_op("shape_of").rule("jvp")(call, [const(np.zeros((2, 3), "float32"))])
