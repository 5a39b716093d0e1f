"""Gradient rules of the neural-network (nn) family, checked against central differences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import relay
from relay import Tensor, float64
from relay.backend.interpreter import interpret
from relay.errors import CompileError
from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Function, Op, Tuple, TupleGetItem, Var, const
from relay.ir.types import Kind, TensorType, TypeVar
from relay.op import nn
from relay.op.registry import get_op, list_ops
from relay.passes.first_order_ad import first_order_gradient
from relay.testing import check_grad, check_op_gradient
from relay.testing.gradients import numerical_gradient
from relay.typecheck.checker import infer_type


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).standard_normal(shape)


def _positive(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).uniform(0.2, 1.5, shape)


_CONV = "nn.conv2d"
_CONV_T = "nn.conv2d_transpose"

# (op, args, attrs, wrt): wrt None checks every float argument
CASES: list[tuple[str, list[Any], dict[str, object], list[int] | None]] = [
    # dense, matmul, batch_matmul
    ("nn.dense", [_x(3, 4), _x(5, 4)], {}, None),
    ("nn.dense", [_x(2, 3, 4), _x(5, 4)], {"units": 5}, None),
    ("nn.dense", [_x(4), _x(2, 4)], {}, None),
    ("nn.matmul", [_x(3, 4), _x(4, 2)], {}, None),
    ("nn.matmul", [_x(4, 3), _x(4, 2)], {"transpose_a": True}, None),
    ("nn.matmul", [_x(3, 4), _x(2, 4)], {"transpose_b": True}, None),
    ("nn.matmul", [_x(2, 4, 3), _x(2, 4)], {"transpose_a": True, "transpose_b": True}, None),
    ("nn.matmul", [_x(2, 2, 3, 4), _x(4, 5)], {}, None),
    ("nn.matmul", [_x(4), _x(4, 3)], {}, None),
    ("nn.batch_matmul", [_x(2, 3, 4), _x(2, 4, 5)], {}, None),
    ("nn.batch_matmul", [_x(2, 3, 4), _x(2, 5, 4)], {"transpose_b": True}, None),
    ("nn.batch_matmul", [_x(2, 4, 3), _x(2, 4, 5)], {"transpose_a": True}, None),
    (
        "nn.batch_matmul",
        [_x(1, 4, 3), _x(3, 5, 4)],
        {"transpose_a": True, "transpose_b": True},
        None,
    ),
    ("nn.batch_matmul", [_x(3, 3, 4), _x(1, 4, 2)], {}, None),
    # activations, softmax, bias_add
    ("nn.relu", [_x(3, 4)], {}, None),
    ("nn.leaky_relu", [_x(3, 4)], {"alpha": 0.2}, None),
    ("nn.leaky_relu", [_x(2, 3, 2)], {"alpha": -1.5}, None),
    ("nn.prelu", [_x(2, 3, 4), _x(3)], {}, None),
    ("nn.prelu", [_x(2, 3, 4), _x(4)], {"axis": -1}, None),
    ("nn.prelu", [_x(5), _x(5)], {"axis": 0}, None),
    ("nn.gelu", [_x(3, 4) * 2], {}, None),
    ("nn.softmax", [_x(3, 4)], {}, None),
    ("nn.softmax", [_x(2, 3, 4)], {"axis": 1}, None),
    ("nn.log_softmax", [_x(3, 4)], {}, None),
    ("nn.log_softmax", [_x(2, 3, 4)], {"axis": 0}, None),
    ("nn.bias_add", [_x(2, 3, 4, 5), _x(3)], {}, None),
    ("nn.bias_add", [_x(2, 3, 4), _x(4)], {"axis": -1}, None),
    ("nn.bias_add", [_x(3), _x(3)], {"axis": 0}, None),
    # convolution: strides, padding (1, 2 and 4 values), dilation, groups, layouts
    (_CONV, [_x(2, 3, 5, 5), _x(4, 3, 3, 3)], {}, None),
    (_CONV, [_x(1, 2, 6, 7), _x(3, 2, 3, 2)], {"strides": 2, "padding": 1}, None),
    (_CONV, [_x(2, 2, 7, 6), _x(2, 2, 2, 3)], {"strides": [3, 2], "padding": [0, 1, 2, 0]}, None),
    (_CONV, [_x(1, 2, 7, 7), _x(2, 2, 3, 2)], {"dilation": [2, 3], "padding": [2, 1]}, None),
    (_CONV, [_x(1, 2, 8, 8), _x(2, 2, 2, 2)], {"strides": 3, "dilation": 2}, None),
    (_CONV, [_x(2, 4, 5, 5), _x(6, 2, 3, 3)], {"groups": 2, "padding": 1}, None),
    (_CONV, [_x(1, 3, 6, 5), _x(3, 1, 3, 2)], {"groups": 3, "strides": [2, 1], "padding": 1}, None),
    (
        _CONV,
        [_x(2, 4, 6, 6), _x(4, 2, 2, 3)],
        {"groups": 2, "strides": 2, "dilation": [1, 2], "padding": [1, 0, 0, 2]},
        None,
    ),
    (
        _CONV,
        [_x(1, 5, 6, 3), _x(3, 2, 3, 4)],
        {"data_layout": "NHWC", "kernel_layout": "HWIO", "strides": 2, "padding": 1},
        None,
    ),
    (
        _CONV,
        [_x(2, 3, 5, 4), _x(4, 3, 2, 3)],
        {"kernel_layout": "OHWI", "out_layout": "NHWC", "padding": [1, 0]},
        None,
    ),
    (
        _CONV,
        [_x(1, 5, 5, 4), _x(3, 2, 4, 2)],
        {"data_layout": "NHWC", "kernel_layout": "HWOI", "groups": 2},
        None,
    ),
    (
        _CONV,
        [_x(1, 4, 5, 5), _x(2, 4, 3, 2)],
        {"kernel_layout": "IOHW", "groups": 2, "strides": 2, "out_layout": "NHWC"},
        None,
    ),
    (
        _CONV,
        [_x(1, 4, 4, 5), _x(5, 3, 2, 4)],
        {"data_layout": "NHWC", "kernel_layout": "IHWO", "dilation": 2, "padding": 1},
        None,
    ),
    # transposed convolution
    (_CONV_T, [_x(2, 3, 3, 4), _x(3, 2, 3, 3)], {}, None),
    (_CONV_T, [_x(1, 2, 3, 3), _x(2, 3, 3, 2)], {"strides": 2, "padding": 1}, None),
    (
        _CONV_T,
        [_x(1, 2, 3, 4), _x(2, 2, 2, 3)],
        {"strides": [2, 3], "output_padding": [1, 2], "padding": [0, 1, 1, 0]},
        None,
    ),
    (_CONV_T, [_x(1, 2, 3, 3), _x(2, 1, 2, 2)], {"dilation": [2, 1], "strides": 2}, None),
    (
        _CONV_T,
        [_x(2, 4, 3, 3), _x(4, 3, 3, 2)],
        {"groups": 2, "strides": 2, "padding": [1, 0], "output_padding": 1},
        None,
    ),
    (
        _CONV_T,
        [_x(1, 3, 4, 2), _x(3, 3, 2, 2)],
        {"data_layout": "NHWC", "kernel_layout": "HWIO", "strides": 2},
        None,
    ),
    (
        _CONV_T,
        [_x(1, 2, 3, 3), _x(2, 2, 3, 3)],
        {"kernel_layout": "OIHW", "out_layout": "NHWC", "padding": 1, "dilation": 2},
        None,
    ),
    # pooling: ceil_mode (windows past the data), padding, dilation, count_include_pad, NHWC
    ("nn.max_pool2d", [_x(2, 2, 4, 4)], {"pool_size": 2, "strides": 2}, None),
    ("nn.max_pool2d", [_x(1, 2, 5, 6)], {"pool_size": 3, "padding": 1}, None),
    (
        "nn.max_pool2d",
        [_x(1, 2, 5, 5)],
        {"pool_size": [3, 2], "strides": 2, "padding": [1, 0, 0, 1], "ceil_mode": True},
        None,
    ),
    ("nn.max_pool2d", [_x(1, 2, 7, 7)], {"pool_size": 2, "dilation": 2, "strides": [1, 2]}, None),
    (
        "nn.max_pool2d",
        [_x(1, 5, 6, 2)],
        {"pool_size": 2, "strides": 2, "ceil_mode": True, "layout": "NHWC"},
        None,
    ),
    ("nn.avg_pool2d", [_x(2, 2, 4, 4)], {"pool_size": 2, "strides": 2}, None),
    ("nn.avg_pool2d", [_x(1, 2, 5, 6)], {"pool_size": 3, "padding": 1}, None),
    (
        "nn.avg_pool2d",
        [_x(1, 2, 5, 6)],
        {"pool_size": 3, "padding": 1, "count_include_pad": True},
        None,
    ),
    (
        "nn.avg_pool2d",
        [_x(1, 2, 5, 6)],
        {"pool_size": [3, 2], "strides": 2, "padding": [1, 0, 0, 1], "ceil_mode": True},
        None,
    ),
    (
        "nn.avg_pool2d",
        [_x(1, 2, 5, 5)],
        {"pool_size": 2, "strides": 3, "padding": 1, "ceil_mode": True, "count_include_pad": True},
        None,
    ),
    (
        "nn.avg_pool2d",
        [_x(1, 7, 6, 2)],
        {"pool_size": 2, "dilation": [2, 1], "layout": "NHWC", "count_include_pad": True},
        None,
    ),
    ("nn.global_avg_pool2d", [_x(2, 3, 4, 5)], {}, None),
    ("nn.global_avg_pool2d", [_x(2, 4, 5, 3)], {"layout": "NHWC"}, None),
    ("nn.adaptive_avg_pool2d", [_x(2, 2, 5, 7)], {"output_size": [2, 3]}, None),
    ("nn.adaptive_avg_pool2d", [_x(1, 2, 4, 4)], {"output_size": 3}, None),
    ("nn.adaptive_avg_pool2d", [_x(1, 2, 3, 5)], {"output_size": [6, 1]}, None),
    ("nn.adaptive_avg_pool2d", [_x(1, 2, 3, 4)], {}, None),
    ("nn.adaptive_avg_pool2d", [_x(1, 5, 4, 2)], {"output_size": 2, "layout": "NHWC"}, None),
    # the pooling gradients themselves (second derivatives): linear in out_grad
    (
        "nn.max_pool2d_grad",
        [_x(1, 2, 3, 4), _x(1, 2, 5, 6)],
        {"pool_size": [3, 2], "strides": 2, "padding": 1, "ceil_mode": True},
        None,
    ),
    ("nn.max_pool2d_grad", [_x(1, 2, 5, 5), _x(1, 2, 7, 7)], {"pool_size": 2, "dilation": 2}, None),
    (
        "nn.max_pool2d_grad",
        [_x(1, 3, 3, 2), _x(1, 5, 6, 2)],
        {"pool_size": 2, "strides": 2, "ceil_mode": True, "layout": "NHWC"},
        None,
    ),
    (
        "nn.avg_pool2d_grad",
        [_x(1, 2, 3, 4), _x(1, 2, 5, 6)],
        {"pool_size": [3, 2], "strides": 2, "padding": 1, "ceil_mode": True},
        [0],
    ),
    (
        "nn.avg_pool2d_grad",
        [_x(1, 3, 3, 2), _x(1, 5, 6, 2)],
        {"pool_size": 3, "padding": 1, "strides": 2, "count_include_pad": True, "layout": "NHWC"},
        [0],
    ),
    # pad: negative widths crop; edge and reflect fold the padding back
    ("nn.pad", [_x(3, 4), np.array(0.5)], {"pad_width": [[1, 2], [0, 3]]}, None),
    ("nn.pad", [_x(3, 4), np.array(-1.0)], {"pad_width": [[-1, 2], [2, -2]]}, None),
    ("nn.pad", [_x(), np.array(2.0)], {"pad_width": []}, None),
    ("nn.pad", [_x(3, 4), np.array(0.0)], {"pad_width": [[2, 1], [1, 3]], "pad_mode": "edge"}, [0]),
    ("nn.pad", [_x(1, 3), np.array(0.0)], {"pad_width": [[2, 1], [0, 0]], "pad_mode": "edge"}, [0]),
    (
        "nn.pad",
        [_x(3, 4, 2), np.array(0.0)],
        {"pad_width": [[2, 1], [1, 3], [0, 1]], "pad_mode": "reflect"},
        [0],
    ),
    # batch_flatten, normalization, dropout, losses
    ("nn.batch_flatten", [_x(2, 3, 4)], {}, None),
    ("nn.batch_flatten", [_x(3)], {}, None),
    ("nn.batch_norm", [_x(2, 3, 4), _x(3), _x(3), _x(3), _positive(3)], {}, None),
    ("nn.batch_norm", [_x(2, 3, 2, 4), _x(4), _x(4), _x(4), _positive(4)], {"axis": -1}, None),
    ("nn.batch_norm", [_x(5), _x(5), _x(5), _x(5), _positive(5)], {"axis": 0}, None),
    (
        "nn.batch_norm",
        [_x(2, 3), _x(3), _x(3), _x(3), _positive(3)],
        {"center": False, "scale": False, "epsilon": 0.1},
        [0, 3, 4],
    ),
    # the training form: through the batch statistics, and the updated moving statistics
    (
        "nn.batch_norm",
        [_x(2, 3, 4, 5), _x(3), _x(3), _x(3), _positive(3)],
        {"training": True},
        None,
    ),
    (
        "nn.batch_norm",
        [_x(2, 4, 5, 3), _x(3), _x(3), _x(3), _positive(3)],
        {"axis": 3, "training": True, "momentum": 0.25},
        None,
    ),
    (
        "nn.batch_norm",
        [_x(6, 4), _x(4), _x(4), _x(4), _positive(4)],
        {"training": True, "momentum": 1.0, "epsilon": 0.01},
        None,
    ),
    (
        "nn.batch_norm",
        [_x(5, 3), _x(3), _x(3), _x(3), _positive(3)],
        {"training": True, "center": False, "scale": False, "momentum": 0.0},
        [0, 3, 4],
    ),
    (
        "nn.batch_norm",
        [_x(3, 2, 4), _x(4), _x(4), _x(4), _positive(4)],
        {"axis": -1, "training": True, "scale": False, "momentum": 0.5},
        [0, 2, 3, 4],
    ),
    ("nn.layer_norm", [_x(2, 3, 4), _x(4), _x(4)], {}, None),
    ("nn.layer_norm", [_x(2, 3, 4), _x(3), _x(3)], {"axis": 1, "epsilon": 0.01}, None),
    ("nn.layer_norm", [_x(5), _x(5), _x(5)], {}, None),
    ("nn.layer_norm", [_x(3, 4), _x(4), _x(4)], {"center": False, "scale": False}, [0]),
    ("nn.dropout", [_x(3, 4)], {"rate": 0.25}, None),
    ("nn.cross_entropy", [_positive(3, 4), _x(3, 4)], {}, None),
    ("nn.cross_entropy_with_logits", [_x(3, 4), _x(3, 4)], {}, None),
]


@pytest.mark.parametrize(
    ("op", "args", "attrs", "wrt"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_gradient_matches_finite_differences(
    op: str, args: list[np.ndarray], attrs: dict[str, object], wrt: list[int] | None
) -> None:
    check_op_gradient(op, args, attrs, wrt=wrt)


def test_every_operator_of_the_family_is_checked() -> None:
    family = {name for name in list_ops() if name.startswith("nn.")}
    assert len(family) == 25
    assert {op for op, *_ in CASES} == family


def test_float32_adjoints_have_float32_types() -> None:
    rng = np.random.default_rng(3)
    f32 = [
        ("nn.conv2d", [rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((2, 2, 3, 3))]),
        ("nn.layer_norm", [rng.standard_normal((2, 3)), np.ones(3), np.zeros(3)]),
        ("nn.gelu", [rng.standard_normal((2, 3))]),
        ("nn.adaptive_avg_pool2d", [rng.standard_normal((1, 2, 5, 4))]),
        ("nn.batch_norm", [rng.standard_normal((4, 3)), *rng.uniform(0.5, 1.5, (4, 3))]),
    ]
    attrs: dict[str, dict[str, object]] = {
        "nn.adaptive_avg_pool2d": {"output_size": 2},
        "nn.batch_norm": {"training": True},
    }
    for op, args in f32:
        check_op_gradient(
            op, [a.astype(np.float32) for a in args], attrs.get(op), rtol=2e-3, atol=2e-3
        )


# -- what gets no adjoint ---------------------------------------------------------------------------


def _adjoints(op: str, types: list[TensorType], **attrs: object) -> list[Any]:
    opdef = get_op(op)
    params = [Var(f"x{i}", t) for i, t in enumerate(types)]
    call = Call(Op.get(op), tuple(params), opdef.validate_attrs(attrs))
    ct = Var("ct")
    adjoints: list[Any] = opdef.rule("gradient")(call, ct)
    return adjoints


@pytest.mark.parametrize(
    ("op", "types", "attrs"),
    [
        ("nn.relu", [TensorType((2, 3), "int32")], {}),
        ("nn.bias_add", [TensorType((2, 3), "int8"), TensorType((3,), "int8")], {}),
        ("nn.max_pool2d", [TensorType((1, 1, 4, 4), "int32")], {"pool_size": 2}),
        ("nn.avg_pool2d", [TensorType((1, 1, 4, 4), "int32")], {"pool_size": 2}),
        ("nn.global_avg_pool2d", [TensorType((1, 1, 4, 4), "int32")], {}),
        ("nn.adaptive_avg_pool2d", [TensorType((1, 1, 4, 4), "int32")], {"output_size": 2}),
        ("nn.pad", [TensorType((2,), "int32"), TensorType((), "int32")], {"pad_width": [[1, 1]]}),
        ("nn.dropout", [TensorType((2,), "int32")], {}),
        (
            "nn.dense",
            [TensorType((2, 3), "int8"), TensorType((4, 3), "int8")],
            {"out_dtype": "int32"},
        ),
        (
            "nn.conv2d",
            [TensorType((1, 2, 4, 4), "float32"), TensorType((2, 2, 3, 3), "float32")],
            {"out_dtype": "int32"},
        ),
    ],
)
def test_no_gradient_into_integers(
    op: str, types: list[TensorType], attrs: dict[str, object]
) -> None:
    assert _adjoints(op, types, **attrs) == [None] * len(types)


def test_no_gradient_to_unused_or_shape_only_arguments() -> None:
    x = [TensorType((2, 3), "float64"), TensorType((3,), "float64")]
    for training in (False, True):
        bn = _adjoints(
            "nn.batch_norm", [x[0], *[x[1]] * 4], center=False, scale=False, training=training
        )
        assert bn[1] is None and bn[2] is None
        assert all(a is not None for a in (bn[0], bn[3], bn[4]))
    edge = _adjoints(
        "nn.pad", [x[0], TensorType((), "float64")], pad_width=[[1, 1], [0, 2]], pad_mode="edge"
    )
    assert edge[0] is not None and edge[1] is None
    pooled = TensorType((1, 1, 2, 2), "float64")
    avg = _adjoints(
        "nn.avg_pool2d_grad", [pooled, TensorType((1, 1, 4, 4), "float64")], pool_size=2, strides=2
    )
    assert avg[0] is not None and avg[1] is None


# the products and convolutions, with the shapes of their arguments: the mixed precision cases
# (float16 arguments, out_dtype float32) of the gradient and JVP tests
MIXED_PRECISION: list[tuple[str, list[tuple[int, ...]]]] = [
    ("nn.dense", [(2, 3), (4, 3)]),
    ("nn.matmul", [(2, 3), (3, 4)]),
    ("nn.batch_matmul", [(2, 2, 3), (1, 3, 4)]),
    ("nn.conv2d", [(1, 2, 5, 5), (3, 2, 3, 3)]),
    ("nn.conv2d_transpose", [(1, 2, 3, 3), (2, 3, 3, 3)]),
]


def test_mixed_precision_adjoints_keep_the_argument_dtypes() -> None:
    # float16 inputs with a float32 result: each adjoint is computed with out_dtype float16
    for op, shapes in MIXED_PRECISION:
        types = [TensorType(shape, "float16") for shape in shapes]
        opdef = get_op(op)
        params = [Var(f"x{i}", t) for i, t in enumerate(types)]
        validated = opdef.validate_attrs({"out_dtype": "float32"})
        call = Call(Op.get(op), tuple(params), validated)
        primal = Function(tuple(params), call)
        infer_type(primal)
        ct = Var("ct", primal.checked_type.ret_type)  # type: ignore[attr-defined]
        assert ct.type_annotation.dtype == "float32"  # type: ignore[union-attr]
        fn = Function((*params, ct), Tuple(tuple(opdef.rule("gradient")(call, ct))))
        infer_type(fn)
        assert list(fn.checked_type.ret_type.fields) == types, op  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("op", "types", "attrs"),
    [
        (
            "nn.conv2d",
            [TensorType((1, 2, TypeVar("h", Kind.SHAPE), 4)), TensorType((2, 2, 3, 3))],
            {},
        ),
        (
            "nn.adaptive_avg_pool2d",
            [TensorType((1, 2, TypeVar("h", Kind.SHAPE), 4))],
            {"output_size": 2},
        ),
        (
            "nn.pad",
            [TensorType((TypeVar("n", Kind.SHAPE), 3)), TensorType(())],
            {"pad_width": [[1, 1], [0, 0]], "pad_mode": "edge"},
        ),
        (
            "nn.matmul",
            [TensorType((2, 3, 4)), TensorType((4, TypeVar("n", Kind.SHAPE)))],
            {},
        ),
    ],
)
def test_unknown_extents_raise_compile_errors(
    op: str, types: list[TensorType], attrs: dict[str, object]
) -> None:
    with pytest.raises(CompileError, match=f"the gradient of {op} needs a known extent"):
        _adjoints(op, types, **attrs)


def test_symbolic_batch_and_spatial_extents_need_no_known_shape() -> None:
    # cross_entropy divides by the batch read with shape_of; global_avg_pool2d counts with a sum
    n, h = TypeVar("n", Kind.SHAPE), TypeVar("h", Kind.SHAPE)
    cases: list[tuple[str, list[TensorType], list[np.ndarray], dict[str, object]]] = [
        (
            "nn.cross_entropy",
            [TensorType((n, 3), "float64")] * 2,
            [_positive(2, 3), _x(2, 3)],
            {},
        ),
        (
            "nn.global_avg_pool2d",
            [TensorType((n, 2, h, 3), "float64")],
            [_x(2, 2, 4, 3)],
            {},
        ),
    ]
    for op, types, arrays, attrs in cases:
        opdef = get_op(op)
        params = [Var(f"x{i}", t) for i, t in enumerate(types)]
        call = Call(Op.get(op), tuple(params), opdef.validate_attrs(attrs))
        ref = opdef.reference
        assert ref is not None
        ct = np.random.default_rng(0).standard_normal(
            np.shape(ref(*arrays, **dict(opdef.validate_attrs(attrs).items())))
        )
        grads = opdef.rule("gradient")(call, const(ct))
        fn = Function(tuple(params), Tuple(tuple(grads)), None, (n, h))
        infer_type(fn)
        got = interpret(fn, *arrays)
        concrete = [Var(f"y{i}", TensorType(a.shape, "float64")) for i, a in enumerate(arrays)]
        call = Call(Op.get(op), tuple(concrete), opdef.validate_attrs(attrs))
        fn = Function(tuple(concrete), Tuple(tuple(opdef.rule("gradient")(call, const(ct)))))
        want = interpret(fn, *arrays)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=op)


def test_batch_norm_training_counts_a_symbolic_batch_at_run_time() -> None:
    # the values per channel (for 1 / n and 1 / (n - 1)) are read with shape_of when unknown
    n = TypeVar("n", Kind.SHAPE)
    op = "nn.batch_norm"
    opdef = get_op(op)
    attrs = opdef.validate_attrs({"training": True, "momentum": 0.3})
    rng = np.random.default_rng(4)
    arrays = [_x(4, 3, 2), _x(3), _x(3), _x(3), _positive(3)]
    cotangents = [rng.standard_normal(a.shape) for a in (arrays[0], arrays[3], arrays[4])]
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    inputs = [*arrays, *cotangents, *tangents]

    def run(x_type: TensorType, type_params: tuple[TypeVar, ...]) -> list[np.ndarray]:
        p_type = TensorType((3,), "float64")
        types = [x_type, *[p_type] * 4, x_type, p_type, p_type, x_type, *[p_type] * 4]
        params = [Var(f"v{i}", t) for i, t in enumerate(types)]
        call = Call(Op.get(op), tuple(params[:5]), attrs)
        grads = opdef.rule("gradient")(call, Tuple(tuple(params[5:8])))
        tangent = opdef.rule("jvp")(call, params[8:])
        fn = Function(tuple(params), Tuple((*grads, tangent)), None, type_params)
        infer_type(fn)
        got = interpret(fn, *inputs)
        return [*got[:5], *got[5]]

    symbolic = run(TensorType((n, 3, 2), "float64"), (n,))
    concrete = run(TensorType((4, 3, 2), "float64"), ())
    for g, w in zip(symbolic, concrete, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


# -- max pooling's ties and the pooling gradient operators ------------------------------------------


def test_max_pool_gradient_goes_to_the_first_maximum_of_each_window() -> None:
    # as topi's pool_grad: ties send the whole adjoint to the first maximum in window order
    data = np.array([[[[1.0, 1.0, 0.0], [1.0, 0.0, 2.0], [2.0, 2.0, 0.0]]]])
    ct = np.array([[[[1.0, 10.0], [100.0, 1000.0]]]])
    ref = get_op("nn.max_pool2d_grad").reference
    assert ref is not None
    got = ref(
        ct,
        data,
        pool_size=(2, 2),
        strides=(1, 1),
        dilation=(1, 1),
        padding=(0, 0),
        layout="NCHW",
        out_layout="",
        ceil_mode=False,
    )
    want = np.array([[[[1.0, 0.0, 0.0], [0.0, 0.0, 10.0 + 1000.0], [100.0, 0.0, 0.0]]]])
    np.testing.assert_array_equal(got, want)


def test_max_pool_gradient_of_gradient_agrees_with_the_reference_at_ties() -> None:
    # the gather of max_pool2d_grad's adjoint picks the same first maxima as the operator
    data = np.array([[[[1.0, 1.0, 0.0], [1.0, 0.0, 2.0], [2.0, 2.0, 0.0]]]])
    attrs = {"pool_size": [2, 2], "padding": [1, 0, 0, 1]}
    opdef = get_op("nn.max_pool2d_grad")
    out = get_op("nn.max_pool2d").reference
    assert out is not None and opdef.reference is not None
    validated = opdef.validate_attrs(attrs)
    pooled_shape = out(data, **dict(validated.items())).shape
    g = Var("g", TensorType(pooled_shape, "float64"))
    x = Var("x", TensorType(data.shape, "float64"))
    call = Call(Op.get("nn.max_pool2d_grad"), (g, x), validated)
    h = np.random.default_rng(0).standard_normal(data.shape)
    gather, _ = opdef.rule("gradient")(call, const(h))
    fn = Function((g, x), gather)
    infer_type(fn)
    got = interpret(fn, np.zeros(pooled_shape), data)
    # <max_pool2d_grad(e_w, x), h> for each unit adjoint e_w of the pooled output
    want = np.zeros(pooled_shape)
    for idx in np.ndindex(*pooled_shape):
        unit = np.zeros(pooled_shape)
        unit[idx] = 1.0
        want[idx] = np.sum(opdef.reference(unit, data, **dict(validated.items())) * h)
    np.testing.assert_allclose(got, want)


def test_pooling_gradient_operators_build_and_print() -> None:
    g, x = Var("g", TensorType((1, 2, 2, 2))), Var("x", TensorType((1, 2, 4, 4)))
    call = nn.max_pool2d_grad(g, x, pool_size=2, strides=2)
    fn = Function((g, x), call)
    infer_type(fn)
    assert fn.checked_type.ret_type == x.type_annotation  # type: ignore[attr-defined]
    assert "nn.max_pool2d_grad(%g, %x, pool_size=2, strides=2" in str(fn)
    call = nn.avg_pool2d_grad(g, x, pool_size=2, strides=2, count_include_pad=True)
    assert call.attrs["count_include_pad"] is True
    assert Attrs(dict(call.attrs.items())) == call.attrs


# -- random shapes ----------------------------------------------------------------------------------
#
# The random cases are drawn and checked by helpers that take the checker, check_op_gradient
# here and check_op_jvp in tests/op/test_jvp_nn.py.

_small = st.integers(1, 3)
_shapes = st.lists(_small, min_size=1, max_size=3).map(tuple)

Checker = Callable[..., Any]


def check_activations_and_normalizations(
    check: Checker, shape: tuple[int, ...], data: st.DataObject
) -> None:
    """Check the activations, softmaxes, bias_add, prelu and the normalizations with ``check``
    on data of ``shape`` along a random axis."""
    seed = data.draw(st.integers(0, 1000))
    x = _x(*shape, seed=seed)
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    c = shape[ax]
    for op in ("nn.relu", "nn.gelu"):
        check(op, [x], {})
    check("nn.leaky_relu", [x], {"alpha": data.draw(st.floats(-2.0, 2.0))})
    check("nn.softmax", [x], {"axis": ax})
    check("nn.log_softmax", [x], {"axis": ax})
    check("nn.bias_add", [x, _x(c, seed=seed + 1)], {"axis": ax})
    check("nn.prelu", [x, _x(c, seed=seed + 2)], {"axis": ax})
    params = [_x(c, seed=seed + 3), _x(c, seed=seed + 4)]
    if c > 1:  # a single element normalizes to 0 whatever it is, and its variance is 0
        check("nn.layer_norm", [x, *params], {"axis": ax})
    stats = [_x(c, seed=seed + 5), _positive(c, seed=seed)]
    check("nn.batch_norm", [x, *params, *stats], {"axis": ax})
    if x.size // c > 1:  # the training form needs an unbiased variance
        momentum = data.draw(st.floats(0.0, 1.0))
        attrs = {"axis": ax, "training": True, "momentum": momentum}
        check("nn.batch_norm", [x, *params, *stats], attrs)


@settings(max_examples=20, deadline=None)
@given(shape=_shapes, data=st.data())
def test_random_activations_and_normalizations(shape: tuple[int, ...], data: st.DataObject) -> None:
    check_activations_and_normalizations(check_op_gradient, shape, data)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_random_products_with_broadcast_batches(data: st.DataObject) -> None:
    m, k, n = data.draw(_small), data.draw(_small), data.draw(_small)
    lead = tuple(data.draw(st.lists(_small, max_size=2)))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    a_shape = (*lead, k, m) if ta else (*lead, m, k)
    b_shape = (n, k) if tb else (k, n)
    check_op_gradient(
        "nn.matmul", [_x(*a_shape), _x(*b_shape, seed=1)], {"transpose_a": ta, "transpose_b": tb}
    )
    check_op_gradient("nn.dense", [_x(*lead, k), _x(n, k, seed=2)], {})
    batch = data.draw(_small)
    batch_a, batch_b = data.draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    a3 = (batch_a, k, m) if ta else (batch_a, m, k)
    b3 = (batch_b, n, k) if tb else (batch_b, k, n)
    check_op_gradient(
        "nn.batch_matmul", [_x(*a3), _x(*b3, seed=3)], {"transpose_a": ta, "transpose_b": tb}
    )


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_random_pads(data: st.DataObject) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    x = _x(*shape, seed=data.draw(st.integers(0, 100)))
    widths = [[data.draw(st.integers(-n + 1, 2)), data.draw(st.integers(-1, 2))] for n in shape]
    widths = [[b, max(a, -(n + b) + 1)] for (b, a), n in zip(widths, shape, strict=True)]
    check_op_gradient("nn.pad", [x, np.array(0.3)], {"pad_width": widths})
    mode = data.draw(st.sampled_from(["edge", "reflect"]))
    limit = (lambda n: n - 1) if mode == "reflect" else (lambda n: 3)
    widths = [
        [data.draw(st.integers(0, limit(n))), data.draw(st.integers(0, limit(n)))] for n in shape
    ]
    check_op_gradient(
        "nn.pad", [x, np.array(0.0)], {"pad_width": widths, "pad_mode": mode}, wrt=[0]
    )


@st.composite
def _conv_setups(draw: st.DrawFn) -> tuple[str, list[np.ndarray], dict[str, object]]:
    """A random nn.conv2d or nn.conv2d_transpose call: the operator, arguments and attributes
    (any layouts, groups, strides, dilation and padding; the window may not fit)."""
    transposed = draw(st.booleans())
    groups = draw(st.sampled_from([1, 2]))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kh, kw = draw(_small), draw(_small)
    strides = [draw(_small), draw(_small)]
    dilation = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    padding = [draw(st.integers(0, 2)) for _ in range(4)]
    h, w = draw(st.integers(2, 6)), draw(st.integers(2, 6))
    data_layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    kernel_layout = draw(st.sampled_from(["OIHW", "HWIO", "OHWI", "HWOI", "IOHW", "IHWO"]))
    out_layout = draw(st.sampled_from(["", "NCHW", "NHWC"]))
    attrs: dict[str, object] = {
        "strides": strides,
        "dilation": dilation,
        "padding": padding,
        "groups": groups,
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        "out_layout": out_layout,
    }
    if transposed:
        op = _CONV_T
        attrs["output_padding"] = [draw(st.integers(0, s - 1)) for s in strides]
        sizes = {"I": cg * groups, "O": og, "H": kh, "W": kw}
    else:
        op = _CONV
        sizes = {"O": og * groups, "I": cg, "H": kh, "W": kw}
    dims = {"N": draw(st.integers(1, 2)), "C": cg * groups, "H": h, "W": w}
    x = _x(*[dims[a] for a in data_layout], seed=draw(st.integers(0, 100)))
    weight = _x(*[sizes[a] for a in kernel_layout], seed=1)
    return op, [x, weight], attrs


def check_convolution(
    check: Checker, setup: tuple[str, list[np.ndarray], dict[str, object]]
) -> None:
    """Check a convolution drawn by ``_conv_setups`` with ``check``, rejecting the setups whose
    window does not fit."""
    op, args, attrs = setup
    reference = get_op(op).reference
    assert reference is not None
    try:
        reference(*args, **dict(get_op(op).validate_attrs(attrs).items()))
    except ValueError:
        assume(False)  # the window does not fit, or the padding leaves nothing
    check(op, args, attrs)


@settings(max_examples=40, deadline=None)
@given(setup=_conv_setups())
def test_random_convolutions(setup: tuple[str, list[np.ndarray], dict[str, object]]) -> None:
    check_convolution(check_op_gradient, setup)


def draw_pool(data: st.DataObject) -> tuple[np.ndarray, dict[str, object], np.ndarray]:
    """A random nn.max_pool2d input, attributes and result (rejecting windows that do not
    fit); the JVP tests draw theirs here too."""
    layout = data.draw(st.sampled_from(["NCHW", "NHWC"]))
    h, w = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    shape = (1, 2, h, w) if layout == "NCHW" else (1, h, w, 2)
    x = _x(*shape, seed=data.draw(st.integers(0, 100)))
    attrs: dict[str, object] = {
        "pool_size": [data.draw(_small), data.draw(_small)],
        "strides": [data.draw(_small), data.draw(_small)],
        "dilation": [data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))],
        "padding": [data.draw(st.integers(0, 1)) for _ in range(4)],
        "ceil_mode": data.draw(st.booleans()),
        "layout": layout,
    }
    reference = get_op("nn.max_pool2d").reference
    assert reference is not None
    try:
        pooled = reference(x, **dict(get_op("nn.max_pool2d").validate_attrs(attrs).items()))
    except ValueError:
        assume(False)
        raise
    return x, attrs, pooled


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_pools(data: st.DataObject) -> None:
    x, attrs, pooled = draw_pool(data)
    if np.isfinite(pooled).all():  # no window lies wholly in the padding
        check_op_gradient("nn.max_pool2d", [x], attrs)
        check_op_gradient("nn.max_pool2d_grad", [_x(*pooled.shape, seed=5), x], attrs)
    avg = {**attrs, "count_include_pad": data.draw(st.booleans())}
    check_op_gradient("nn.avg_pool2d", [x], avg)
    check_op_gradient("nn.avg_pool2d_grad", [_x(*pooled.shape, seed=6), x], avg, wrt=[0])
    out_size = [data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7))]
    check_op_gradient(
        "nn.adaptive_avg_pool2d", [x], {"output_size": out_size, "layout": attrs["layout"]}
    )


# -- through the AD pass ------------------------------------------------------------------------------


def test_a_small_network_differentiates_end_to_end() -> None:
    rng = np.random.default_rng(11)
    arrays = {
        "x": rng.standard_normal((2, 1, 6, 6)),
        "w": rng.standard_normal((3, 1, 3, 3)),
        "b": rng.standard_normal(3),
        "gamma": rng.uniform(0.5, 1.5, 3),
        "beta": rng.standard_normal(3),
        "d": rng.standard_normal((4, 27)),
        "t": rng.uniform(0.0, 1.0, (2, 4)),
    }
    params = {k: Var(k, TensorType(v.shape, "float64")) for k, v in arrays.items()}
    p = params
    y = nn.conv2d(p["x"], p["w"], padding=1)
    y = nn.bias_add(y, p["b"])
    stats = (const(np.zeros(3)), const(np.ones(3)))
    y = nn.batch_norm(y, p["gamma"], p["beta"], *stats)
    y = nn.relu(TupleGetItem(y, 0))
    y = TupleGetItem(nn.dropout(y), 0)
    y = nn.max_pool2d(y, pool_size=2, strides=2)
    y = nn.avg_pool2d(y, pool_size=2, strides=2, padding=1, ceil_mode=True)
    y = nn.batch_flatten(y)
    y = nn.dense(y, p["d"])
    y = nn.log_softmax(y)
    loss = nn.cross_entropy_with_logits(y, p["t"])
    fn = Function(tuple(params.values()), loss)
    grad_fn = first_order_gradient(fn)
    _, grads = interpret(grad_fn, *arrays.values())

    def value(*xs: np.ndarray) -> float:
        return float(interpret(fn, *xs))

    wrt = [i for i, k in enumerate(arrays) if k != "t"]
    numeric = numerical_gradient(value, list(arrays.values()), wrt)
    for i, num in zip(wrt, numeric, strict=True):
        np.testing.assert_allclose(grads[i], num, rtol=1e-5, atol=1e-7, err_msg=list(arrays)[i])


_BN_X = Tensor[float64, (4, 3, 2, 2)]
_BN_P = Tensor[float64, (3,)]


@relay
def _batch_norm_loss(x: _BN_X, g: _BN_P, b: _BN_P, m: _BN_P, v: _BN_P, w: _BN_X) -> float64:
    y = relay.nn.batch_norm(x, g, b, m, v, axis=1, training=True)[0]
    stats = relay.nn.batch_norm(x, g, b, m, v, axis=1, training=True, momentum=0.2)
    return np.sum(np.tanh(y) * w) + np.sum(stats[1] * stats[2])


def test_batch_norm_training_differentiates_end_to_end() -> None:
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((2, 4, 3, 2, 2))
    g, b, m = rng.standard_normal((3, 3))
    v = rng.uniform(0.5, 1.5, 3)
    args = [x, g, b, m, v, w]
    grads = check_grad(_batch_norm_loss, *args)  # relay.grad against central differences
    value, again = relay.grad(_batch_norm_loss)(*args)
    for got, want in zip(again, grads, strict=True):
        np.testing.assert_array_equal(got, want)
    # the value: PyTorch's training batch_norm in numpy
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-5) * g[:, None, None] + b[:, None, None]
    moved = 0.8 * m + 0.2 * mean.ravel(), 0.8 * v + 0.2 * x.var(axis=(0, 2, 3), ddof=1)
    np.testing.assert_allclose(value, np.sum(np.tanh(y) * w) + np.sum(moved[0] * moved[1]))
    # forward mode agrees: J v = <gradient, v>
    directions = [rng.standard_normal(np.shape(a)) for a in args]
    _, tangent = relay.jvp(_batch_norm_loss)(*args, *directions)
    want = sum(float(np.sum(gr * d)) for gr, d in zip(grads, directions, strict=True))
    np.testing.assert_allclose(tangent, want, rtol=1e-10)
