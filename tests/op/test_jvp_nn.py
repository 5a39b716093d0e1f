"""JVP rules of the neural-network (nn) family against central differences and the gradients.

Every gradient case of tests/op/test_gradients_nn.py is also a JVP case (with a tangent for
every float argument, including those the result does not depend on); ties, the mixed
precision products and the tuple results are checked on their own.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.ir.expr import Call, Function, Op, Var
from relay.ir.types import TensorType
from relay.op.registry import get_op
from relay.testing import check_op_jvp
from relay.typecheck.checker import infer_type
from tests.op.test_gradients_nn import (
    CASES,
    MIXED_PRECISION,
    _conv_setups,
    _positive,
    _shapes,
    _x,
    check_activations_and_normalizations,
    check_convolution,
    draw_pool,
)


@pytest.mark.parametrize(
    ("op", "args", "attrs"),
    [c[:3] for c in CASES],
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_jvp_matches_finite_differences(
    op: str, args: list[np.ndarray], attrs: dict[str, object]
) -> None:
    check_op_jvp(op, args, attrs)


_TRAIN: dict[str, object] = {"training": True, "momentum": 0.3}
_TRAIN_NHWC: dict[str, object] = {"axis": -1, "training": True, "scale": False}


@pytest.mark.parametrize(
    ("op", "args", "attrs", "wrt"),
    [
        ("nn.bias_add", [_x(2, 3, 4), _x(3)], {}, [1]),
        ("nn.prelu", [_x(2, 3, 4), _x(3)], {}, [1]),
        ("nn.pad", [_x(3, 4), np.array(0.5)], {"pad_width": [[1, 2], [0, 3]]}, [1]),
        ("nn.layer_norm", [_x(2, 3, 4), _x(4), _x(4)], {}, [2]),
        ("nn.layer_norm", [_x(2, 3, 4), _x(4), _x(4)], {}, [1]),
        ("nn.batch_norm", [_x(2, 3, 4), _x(3), _x(3), _x(3), _positive(3)], {}, [2]),
        ("nn.batch_norm", [_x(2, 3, 4), _x(3), _x(3), _x(3), _positive(3)], {}, [3]),
        ("nn.batch_norm", [_x(2, 3, 4), _x(3), _x(3), _x(3), _positive(3)], {}, [4]),
        ("nn.batch_norm", [_x(2, 3, 4), _x(3), _x(3), _x(3), _positive(3)], {}, [1, 3]),
        *[
            ("nn.batch_norm", [_x(2, 3, 4), _x(3), _x(3), _x(3), _positive(3)], _TRAIN, wrt)
            for wrt in ([0], [1], [2], [3], [4], [3, 4], [0, 4])
        ],
        ("nn.batch_norm", [_x(2, 2, 3), _x(3), _x(3), _x(3), _positive(3)], _TRAIN_NHWC, [0]),
        ("nn.dense", [_x(3, 4), _x(5, 4)], {}, [1]),
        ("nn.conv2d", [_x(1, 2, 5, 5), _x(3, 2, 3, 3)], {"padding": 1}, [1]),
        ("nn.cross_entropy", [_positive(3, 4), _x(3, 4)], {}, [0]),
    ],
)
def test_a_tangent_of_a_parameter_alone(
    op: str, args: list[np.ndarray], attrs: dict[str, object], wrt: list[int]
) -> None:
    got = check_op_jvp(op, args, attrs, wrt=wrt)
    assert got is not None


def test_unused_parameters_give_a_zero_tangent() -> None:
    args = [_x(2, 3), _x(3), _x(3), _x(3), _positive(3)]
    attrs = {"center": False, "scale": False}
    got = check_op_jvp("nn.batch_norm", args, attrs, wrt=[1, 2])
    assert got is None
    got = check_op_jvp("nn.batch_norm", args, {**attrs, "training": True}, wrt=[1, 2])
    assert got is None
    assert check_op_jvp("nn.layer_norm", [_x(3, 4), _x(4), _x(4)], attrs, wrt=[1, 2]) is None
    avg = {"pool_size": 2, "strides": 2}
    assert (
        check_op_jvp("nn.avg_pool2d_grad", [_x(1, 1, 2, 2), _x(1, 1, 4, 4)], avg, wrt=[1]) is None
    )


def test_batch_norm_passes_the_tangents_of_its_statistics_through() -> None:
    args = [_x(2, 3, 4), _x(3), _x(3), _x(3), _positive(3)]
    out, d_mean, d_var = check_op_jvp("nn.batch_norm", args, {}, seed=3)
    rng = np.random.default_rng(3)
    tangents = [rng.standard_normal(a.shape) for a in args]
    np.testing.assert_array_equal(d_mean, tangents[3])
    np.testing.assert_array_equal(d_var, tangents[4])
    assert out.shape == (2, 3, 4)


@pytest.mark.parametrize("momentum", [0.0, 0.25, 1.0])
def test_batch_norm_training_moves_the_tangents_of_its_statistics(momentum: float) -> None:
    # with tangents for the moving statistics alone, the output's is zero (it normalizes by
    # the batch's) and theirs are scaled by 1 - momentum
    args = [_x(4, 3), _x(3), _x(3), _x(3), _positive(3)]
    attrs = {"training": True, "momentum": momentum}
    out, d_mean, d_var = check_op_jvp("nn.batch_norm", args, attrs, wrt=[3, 4], seed=5)
    rng = np.random.default_rng(5)
    tangents = [rng.standard_normal(a.shape) for a in args]
    np.testing.assert_array_equal(out, np.zeros((4, 3)))
    np.testing.assert_allclose(d_mean, (1 - momentum) * tangents[3], rtol=1e-15)
    np.testing.assert_allclose(d_var, (1 - momentum) * tangents[4], rtol=1e-15)
    # a tangent of the data moves the statistics by momentum times the batch's
    x, t = args[0], tangents[0]
    _, d_mean, d_var = check_op_jvp("nn.batch_norm", args, attrs, wrt=[0], seed=5)
    np.testing.assert_allclose(d_mean, momentum * t.mean(axis=0), atol=1e-15)
    centered = x - x.mean(axis=0)
    want = momentum * 2 * (centered * t).sum(axis=0) / (x.shape[0] - 1)
    np.testing.assert_allclose(d_var, want, rtol=1e-12, atol=1e-15)


def test_dropout_gives_a_zero_tangent_to_its_mask() -> None:
    t, mask = check_op_jvp("nn.dropout", [_x(3, 4)], {"rate": 0.5}, seed=1)
    np.testing.assert_array_equal(mask, np.zeros((3, 4)))
    np.testing.assert_array_equal(t, np.random.default_rng(1).standard_normal((3, 4)))


def test_max_pool_takes_the_tangent_of_each_windows_first_maximum() -> None:
    # finite differences are not defined at a tie; the gradient sends the whole adjoint to
    # the first maximum in window order, so the JVP reads the tangent there
    data = np.array([[[[1.0, 1.0, 0.0], [1.0, 0.0, 2.0], [2.0, 2.0, 0.0]]]])
    attrs = {"pool_size": [2, 2]}
    got = check_op_jvp("nn.max_pool2d", [data], attrs, numeric=False, seed=2)
    t = np.random.default_rng(2).standard_normal(data.shape)[0, 0]
    want = np.array([[t[0, 0], t[1, 2]], [t[2, 0], t[1, 2]]])
    np.testing.assert_array_equal(got[0, 0], want)
    # with padding (-inf) and a window wholly in it (ceil mode), and NHWC
    padded = {"pool_size": [2, 2], "padding": [1, 0, 0, 1], "strides": 2, "ceil_mode": True}
    nchw = check_op_jvp("nn.max_pool2d", [data], padded, numeric=False, seed=2)
    nhwc = {**padded, "layout": "NHWC"}
    moved = check_op_jvp("nn.max_pool2d", [data.transpose(0, 2, 3, 1)], nhwc, numeric=False, seed=2)
    np.testing.assert_array_equal(moved.transpose(0, 3, 1, 2), nchw)
    # a window wholly in the padding is -inf whatever the data: a zero tangent
    edge = check_op_jvp("nn.max_pool2d", [data], {"pool_size": 1, "padding": [0, 0, 1, 0]})
    np.testing.assert_array_equal(edge[0, 0, 3], np.zeros(3))


@pytest.mark.parametrize(
    ("op", "args", "attrs"),
    [
        ("nn.relu", [np.array([[1, -2], [3, 0]], dtype=np.int32)], {}),
        ("nn.dense", [np.ones((2, 3), np.int8), np.ones((4, 3), np.int8)], {"out_dtype": "int32"}),
        ("nn.conv2d", [_x(1, 2, 4, 4), _x(2, 2, 3, 3)], {"out_dtype": "int32"}),
    ],
)
def test_no_rule_is_called_for_integer_inputs_or_results(
    op: str, args: list[np.ndarray], attrs: dict[str, object]
) -> None:
    assert check_op_jvp(op, args, attrs) is None


@pytest.mark.parametrize(("op", "shapes"), MIXED_PRECISION)
def test_mixed_precision_tangents_have_the_result_dtype(
    op: str, shapes: list[tuple[int, ...]]
) -> None:
    # float16 inputs with a float32 result: the tangent is float32 too
    args = [_x(*s).astype(np.float16) for s in shapes]
    got = check_op_jvp(op, args, {"out_dtype": "float32"}, numeric=False, transpose=False)
    assert got is not None and got.dtype == np.float32


def test_float32_tangents_have_float32_types() -> None:
    rng = np.random.default_rng(3)
    cases: list[tuple[str, list[np.ndarray], dict[str, object]]] = [
        ("nn.conv2d", [rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((2, 2, 3, 3))], {}),
        ("nn.layer_norm", [rng.standard_normal((2, 3)), np.ones(3), np.zeros(3)], {}),
        ("nn.gelu", [rng.standard_normal((2, 3))], {}),
        ("nn.max_pool2d", [rng.standard_normal((1, 2, 4, 4))], {"pool_size": 2, "padding": 1}),
        ("nn.adaptive_avg_pool2d", [rng.standard_normal((1, 2, 5, 4))], {"output_size": 2}),
    ]
    for op, args, attrs in cases:
        f32 = [a.astype(np.float32) for a in args]
        got = check_op_jvp(op, f32, attrs, rtol=1e-3, atol=1e-4)
        assert got is not None and got.dtype == np.float32, op


def test_the_pass_contract_typed_arguments_and_a_primal_stand_in() -> None:
    # the rule reads the arguments' checked types and may refer to the call as the output
    x = Var("x", TensorType((2, 3), "float64"))
    call = Call(Op.get("nn.softmax"), (x,), get_op("nn.softmax").validate_attrs({}))
    infer_type(Function((x,), call))
    t = Var("t", TensorType((2, 3), "float64"))
    tangent = get_op("nn.softmax").rule("jvp")(call, [t])
    fn = Function((x, t), tangent)
    infer_type(fn)
    assert fn.checked_type.ret_type == x.type_annotation  # type: ignore[attr-defined]


# -- random shapes (drawn and checked by tests/op/test_gradients_nn.py's helpers) ------------------


@settings(max_examples=15, deadline=None)
@given(shape=_shapes, data=st.data())
def test_random_activations_and_normalizations(shape: tuple[int, ...], data: st.DataObject) -> None:
    check_activations_and_normalizations(check_op_jvp, shape, data)


@settings(max_examples=15, deadline=None)
@given(setup=_conv_setups())
def test_random_convolutions(setup: tuple[str, list[np.ndarray], dict[str, object]]) -> None:
    check_convolution(check_op_jvp, setup)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_random_pools(data: st.DataObject) -> None:
    x, attrs, pooled = draw_pool(data)
    check_op_jvp("nn.max_pool2d", [x], attrs)
    check_op_jvp("nn.max_pool2d_grad", [_x(*pooled.shape, seed=5), x], attrs)
    avg = {**attrs, "count_include_pad": data.draw(st.booleans())}
    check_op_jvp("nn.avg_pool2d", [x], avg)
    check_op_jvp("nn.avg_pool2d_grad", [_x(*pooled.shape, seed=6), x], avg)
