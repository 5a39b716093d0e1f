"""Type relations of the neural-network operators (relay/op/nn.py).

Tables of argument types and attributes -> the result type (concrete, symbolic and ``Any``
dimensions, every layout) or the exact error message; inference of unknown arguments
(weights from ``channels``/``kernel_size``/``units``, parameters from the data); calls in the
text format with its attribute spellings. Hypothesis properties: on random concrete inputs a
relation accepts exactly what the numpy reference runs and gives the type of the reference's
output, and a relation's symbolic output dims evaluate to the concrete ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any as TypingAny

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.errors import TypeCheckError
from relay.ir import dim
from relay.ir.types import Any, Kind, TensorType, TupleType, Type, TypeVar
from relay.op import get_op, list_ops
from relay.typecheck import infer_call_type
from tests.type_helpers import T, checked, checked_error, error, infer

n = TypeVar("n", Kind.SHAPE)
m = TypeVar("m", Kind.SHAPE)
c = TypeVar("c", Kind.SHAPE)
h = TypeVar("h", Kind.SHAPE)
w = TypeVar("w", Kind.SHAPE)
k = TypeVar("k", Kind.SHAPE)
d = TypeVar("d", Kind.BASE_TYPE)


NN_OPS = [name for name in list_ops() if name.startswith("nn.")]


def test_every_nn_operator_has_a_relation_documented_in_one_line() -> None:
    assert len(NN_OPS) == 25
    for name in NN_OPS:
        rel = get_op(name).type_relation
        assert rel is not None, name
        doc = rel.__doc__
        assert doc is not None and "\n" not in doc and doc.endswith("."), (name, doc)


def _halved(d: TypeVar) -> dim.Dim:
    """``(d - 2) // 2 + 1``: an extent pooled by windows of 2 with stride 2."""
    return dim.add(dim.floordiv(dim.sub(d, 2), 2), 1)


# ---- result types -------------------------------------------------------------------------------

F32 = "float32"

RESULTS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # dense: weight (units, k)
    ("nn.dense", [T(n, 784), T(512, 784)], {}, "Tensor[(n, 512), float32]"),
    ("nn.dense", [T(2, 3), T(4, 3)], {"units": 4}, "Tensor[(2, 4), float32]"),
    ("nn.dense", [T(2, 5, 3), T(4, 3)], {}, "Tensor[(2, 5, 4), float32]"),
    ("nn.dense", [T(3), T(4, 3)], {}, "Tensor[(4,), float32]"),
    ("nn.dense", [T(Any, 784), T(10, 784)], {}, "Tensor[(?, 10), float32]"),
    ("nn.dense", [T(2, Any), T(10, 784)], {}, "Tensor[(2, 10), float32]"),
    ("nn.dense", [T(2, 3), T(Any, 3)], {"units": 7}, "Tensor[(2, 7), float32]"),
    ("nn.dense", [T(n, k), T(m, k)], {}, "Tensor[(n, m), float32]"),
    (
        "nn.dense",
        [T(2, 3, dtype="int8"), T(4, 3, dtype="int8")],
        {"out_dtype": "int32"},
        "Tensor[(2, 4), int32]",
    ),
    (
        "nn.dense",
        [T(2, 3, dtype="float16"), T(4, 3, dtype="float32")],
        {"out_dtype": "float32"},
        "Tensor[(2, 4), float32]",
    ),
    # matmul: tensor_b is 2-d; transposes on request
    ("nn.matmul", [T(2, 3), T(3, 4)], {}, "Tensor[(2, 4), float32]"),
    ("nn.matmul", [T(2, 3), T(4, 3)], {"transpose_b": True}, "Tensor[(2, 4), float32]"),
    ("nn.matmul", [T(5, 3, 2), T(3, 4)], {"transpose_a": True}, "Tensor[(5, 2, 4), float32]"),
    (
        "nn.matmul",
        [T(3, 2), T(4, 3)],
        {"transpose_a": True, "transpose_b": True},
        "Tensor[(2, 4), float32]",
    ),
    ("nn.matmul", [T(3), T(3, 4)], {}, "Tensor[(4,), float32]"),
    ("nn.matmul", [T(n, m, 3), T(3, 4)], {"units": 4}, "Tensor[(n, m, 4), float32]"),
    ("nn.matmul", [T(n, Any), T(Any, 4)], {}, "Tensor[(n, 4), float32]"),
    # batch_matmul: the attribute's default transpose_b is False (the builder's is True)
    ("nn.batch_matmul", [T(2, 3, 4), T(2, 4, 5)], {}, "Tensor[(2, 3, 5), float32]"),
    (
        "nn.batch_matmul",
        [T(2, 3, 4), T(2, 5, 4)],
        {"transpose_b": True},
        "Tensor[(2, 3, 5), float32]",
    ),
    (
        "nn.batch_matmul",
        [T(2, 4, 3), T(2, 4, 5)],
        {"transpose_a": True},
        "Tensor[(2, 3, 5), float32]",
    ),
    ("nn.batch_matmul", [T(1, 3, 4), T(6, 4, 5)], {}, "Tensor[(6, 3, 5), float32]"),
    ("nn.batch_matmul", [T(n, 3, 4), T(1, 4, 5)], {}, "Tensor[(n, 3, 5), float32]"),
    ("nn.batch_matmul", [T(n, m, k), T(n, k, 5)], {}, "Tensor[(n, m, 5), float32]"),
    ("nn.batch_matmul", [T(Any, 3, 4), T(6, 4, 5)], {}, "Tensor[(6, 3, 5), float32]"),
    (
        "nn.batch_matmul",
        [T(2, 3, 4, dtype="int8"), T(2, 4, 5, dtype="int8")],
        {"out_dtype": "int32"},
        "Tensor[(2, 3, 5), int32]",
    ),
    # bias_add, activations, softmax
    ("nn.bias_add", [T(n, 64, 8, 8), T(64)], {}, "Tensor[(n, 64, 8, 8), float32]"),
    ("nn.bias_add", [T(2, 3), T(3)], {"axis": -1}, "Tensor[(2, 3), float32]"),
    ("nn.bias_add", [T(n, 8, 8, c), T(c)], {"axis": 3}, "Tensor[(n, 8, 8, c), float32]"),
    ("nn.bias_add", [T(2, Any), T(5)], {}, "Tensor[(2, ?), float32]"),
    ("nn.bias_add", [T(4, dtype="int32"), T(4, dtype="int32")], {"axis": 0}, "Tensor[(4,), int32]"),
    ("nn.relu", [T(n, 3, dtype="int32")], {}, "Tensor[(n, 3), int32]"),
    ("nn.relu", [T(Any)], {}, "Tensor[(?,), float32]"),
    ("nn.leaky_relu", [T(n, 3)], {"alpha": 0.1}, "Tensor[(n, 3), float32]"),
    ("nn.prelu", [T(n, 3, 4), T(3)], {}, "Tensor[(n, 3, 4), float32]"),
    ("nn.prelu", [T(n, 3, 4), T(4)], {"axis": -1}, "Tensor[(n, 3, 4), float32]"),
    ("nn.gelu", [T(2, dtype="float16")], {}, "Tensor[(2,), float16]"),
    ("nn.gelu", [T(dtype="float64")], {}, "float64"),
    ("nn.softmax", [T(n, 10)], {}, "Tensor[(n, 10), float32]"),
    ("nn.softmax", [T(n, 10)], {"axis": 0}, "Tensor[(n, 10), float32]"),
    ("nn.log_softmax", [T(Any, 10)], {"axis": -2}, "Tensor[(?, 10), float32]"),
    # conv2d
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 3, 3, 3)],
        {"padding": [1, 1]},
        "Tensor[(1, 64, 32, 32), float32]",
    ),
    (
        "nn.conv2d",
        [T(n, 3, h, w), T(16, 3, 3, 3)],
        {"strides": 2, "padding": 1},
        "Tensor[(n, 16, (h - 1) // 2 + 1, (w - 1) // 2 + 1), float32]",
    ),
    (
        "nn.conv2d",
        [T(n, 3, h, w), T(16, 3, 3, 3)],
        {"padding": [1, 1], "channels": 16, "kernel_size": [3, 3]},
        "Tensor[(n, 16, h, w), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 10, 10), T(8, 3, 3, 3)],
        {"padding": [1, 2, 3, 4]},
        "Tensor[(1, 8, 12, 14), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 10, 10), T(8, 3, 3, 3)],
        {"padding": 1, "strides": [2, 3], "dilation": [2, 1]},
        "Tensor[(1, 8, 4, 4), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 32, 8, 8), T(32, 1, 3, 3)],
        {"groups": 32},
        "Tensor[(1, 32, 6, 6), float32]",
    ),
    ("nn.conv2d", [T(1, 4, 8, 8), T(6, 2, 3, 3)], {"groups": 2}, "Tensor[(1, 6, 6, 6), float32]"),
    (
        "nn.conv2d",
        [T(1, 32, 32, 3), T(3, 3, 3, 16)],
        {"data_layout": "NHWC", "kernel_layout": "HWIO", "padding": [1, 1]},
        "Tensor[(1, 32, 32, 16), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8), T(4, 3, 3, 3)],
        {"out_layout": "NHWC"},
        "Tensor[(1, 6, 6, 4), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8), T(4, 1, 3, 3)],
        {"kernel_layout": "OHWI"},
        "Tensor[(1, 4, 8, 6), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8, dtype="int8"), T(4, 3, 3, 3, dtype="int8")],
        {"out_dtype": "int32"},
        "Tensor[(1, 4, 6, 6), int32]",
    ),
    ("nn.conv2d", [T(Any, 3, Any, 32), T(8, 3, 3, 3)], {}, "Tensor[(?, 8, ?, 30), float32]"),
    ("nn.conv2d", [T(1, c, 8, 8), T(8, c, 3, 3)], {}, "Tensor[(1, 8, 6, 6), float32]"),
    ("nn.conv2d", [T(1, Any, 8, 8), T(8, 3, 3, 3)], {}, "Tensor[(1, 8, 6, 6), float32]"),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8), T(8, 3, 3, 3)],
        {"channels": 8, "kernel_size": 3, "strides": 3, "out_dtype": "float64"},
        "Tensor[(1, 8, 2, 2), float64]",
    ),
    ("nn.conv2d", [T(1, 3, h, w), T(8, 3, h, w)], {}, "Tensor[(1, 8, 1, 1), float32]"),
    # conv2d_transpose: kernel IOHW, output channels O * groups
    (
        "nn.conv2d_transpose",
        [T(1, 3, 8, 8), T(3, 4, 3, 3)],
        {"strides": [2, 2], "padding": [1, 1], "output_padding": [1, 1]},
        "Tensor[(1, 4, 16, 16), float32]",
    ),
    (
        "nn.conv2d_transpose",
        [T(n, 3, h, w), T(3, 4, 3, 3)],
        {"strides": 2, "padding": 1, "output_padding": 1},
        "Tensor[(n, 4, h * 2, w * 2), float32]",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 4, 5, 5), T(4, 3, 3, 3)],
        {"groups": 2, "channels": 6, "kernel_size": 3},
        "Tensor[(1, 6, 7, 7), float32]",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 5, 5, 4), T(3, 3, 4, 2)],
        {"data_layout": "NHWC", "kernel_layout": "HWIO", "dilation": 2},
        "Tensor[(1, 9, 9, 2), float32]",
    ),
    ("nn.conv2d_transpose", [T(1, 3, Any, 4), T(3, 4, 3, 3)], {}, "Tensor[(1, 4, ?, 6), float32]"),
    # pooling
    (
        "nn.max_pool2d",
        [T(1, 3, 32, 32)],
        {"pool_size": [2, 2], "strides": [2, 2]},
        "Tensor[(1, 3, 16, 16), float32]",
    ),
    (
        "nn.max_pool2d",
        [T(1, 3, 7, 7)],
        {"pool_size": 2, "strides": 2, "ceil_mode": True},
        "Tensor[(1, 3, 4, 4), float32]",
    ),
    (
        "nn.max_pool2d",
        [T(1, 3, 7, 7)],
        {"pool_size": 2, "strides": 2},
        "Tensor[(1, 3, 3, 3), float32]",
    ),
    (
        "nn.max_pool2d",
        [T(1, 3, 7, 7)],
        {"pool_size": [3, 3], "padding": [1, 1]},
        "Tensor[(1, 3, 7, 7), float32]",
    ),
    (
        "nn.max_pool2d",
        [T(1, 32, 32, 3, dtype="bool")],
        {"pool_size": 2, "strides": 2, "layout": "NHWC"},
        "Tensor[(1, 16, 16, 3), bool]",
    ),
    (
        "nn.max_pool2d",
        [T(n, c, h, w)],
        {"pool_size": 2, "strides": 2},
        "Tensor[(n, c, (h - 2) // 2 + 1, (w - 2) // 2 + 1), float32]",
    ),
    (
        "nn.avg_pool2d",
        [T(n, c, h, w, dtype="int32")],
        {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True},
        "Tensor[(n, c, h // 2 + 1, w // 2 + 1), int32]",
    ),
    (
        "nn.avg_pool2d",
        [T(1, 3, 9, 9)],
        {"pool_size": 3, "dilation": 2, "padding": [1, 0, 2, 1], "count_include_pad": True},
        "Tensor[(1, 3, 8, 6), float32]",
    ),
    ("nn.global_avg_pool2d", [T(n, 64, 7, 7)], {}, "Tensor[(n, 64, 1, 1), float32]"),
    (
        "nn.global_avg_pool2d",
        [T(n, h, w, 64)],
        {"layout": "NHWC", "out_layout": "NHWC"},
        "Tensor[(n, 1, 1, 64), float32]",
    ),
    (
        "nn.adaptive_avg_pool2d",
        [T(n, 3, h, w)],
        {"output_size": [3, 2]},
        "Tensor[(n, 3, 3, 2), float32]",
    ),
    (
        "nn.adaptive_avg_pool2d",
        [T(n, 3, 9, 9)],
        {"output_size": 4},
        "Tensor[(n, 3, 4, 4), float32]",
    ),
    ("nn.adaptive_avg_pool2d", [T(n, 3, h, w)], {}, "Tensor[(n, 3, h, w), float32]"),
    # pooling gradients: out_grad has the pooled type, the result the data's
    (
        "nn.max_pool2d_grad",
        [T(1, 3, 4, 4), T(1, 3, 7, 7)],
        {"pool_size": 2, "strides": 2, "ceil_mode": True},
        "Tensor[(1, 3, 7, 7), float32]",
    ),
    (
        "nn.max_pool2d_grad",
        [T(n, _halved(h), _halved(w), c), T(n, h, w, c)],
        {"pool_size": 2, "strides": 2, "layout": "NHWC"},
        "Tensor[(n, h, w, c), float32]",
    ),
    (
        "nn.avg_pool2d_grad",
        [T(1, 3, 8, 6, dtype="float64"), T(1, 3, 9, 9, dtype="float64")],
        {"pool_size": 3, "dilation": 2, "padding": [1, 0, 2, 1], "count_include_pad": True},
        "Tensor[(1, 3, 9, 9), float64]",
    ),
    (
        "nn.adaptive_avg_pool2d",
        [T(n, 3, 5, 6)],
        {"output_size": []},
        "Tensor[(n, 3, 5, 6), float32]",
    ),
    (
        "nn.adaptive_avg_pool2d",
        [T(1, 9, 9, 3)],
        {"output_size": [1], "layout": "NHWC"},
        "Tensor[(1, 1, 1, 3), float32]",
    ),
    # pad, batch_flatten
    ("nn.pad", [T(n, 3), T()], {"pad_width": [[1, 2], [0, 1]]}, "Tensor[(n + 3, 4), float32]"),
    (
        "nn.pad",
        [T(2, 3, dtype="int32"), T()],
        {"pad_width": [[-1, 1], [1, -2]]},
        "Tensor[(2, 2), int32]",
    ),
    (
        "nn.pad",
        [T(4, Any), T()],
        {"pad_width": [[1, 1], [2, 2]], "pad_mode": "reflect"},
        "Tensor[(6, ?), float32]",
    ),
    ("nn.pad", [T(), T(dtype="int8")], {"pad_width": []}, "float32"),
    ("nn.batch_flatten", [T(n, 3, 4, 5)], {}, "Tensor[(n, 60), float32]"),
    ("nn.batch_flatten", [T(2)], {}, "Tensor[(2, 1), float32]"),
    ("nn.batch_flatten", [T(n, c, h, w)], {}, "Tensor[(n, c * h * w), float32]"),
    ("nn.batch_flatten", [T(n, 3, Any, 5)], {}, "Tensor[(n, ?), float32]"),
    # normalization, dropout, losses
    (
        "nn.batch_norm",
        [T(n, 3, 4, 5), T(3), T(3), T(3), T(3)],
        {},
        "(Tensor[(n, 3, 4, 5), float32], Tensor[(3,), float32], Tensor[(3,), float32])",
    ),
    (
        "nn.batch_norm",
        [T(n, h, w, c), T(c), T(c), T(c), T(c)],
        {"axis": -1, "epsilon": 1e-3, "center": False},
        "(Tensor[(n, h, w, c), float32], Tensor[(c,), float32], Tensor[(c,), float32])",
    ),
    (
        "nn.batch_norm",
        [T(2, Any, dtype="float16"), *[T(8, dtype="float16")] * 4],
        {},
        "(Tensor[(2, ?), float16], Tensor[(8,), float16], Tensor[(8,), float16])",
    ),
    # the training form: the same types; a symbolic or unknown batch may hold one value
    (
        "nn.batch_norm",
        [T(n, 3, 4, 5), T(3), T(3), T(3), T(3)],
        {"training": True, "momentum": 0.5},
        "(Tensor[(n, 3, 4, 5), float32], Tensor[(3,), float32], Tensor[(3,), float32])",
    ),
    (
        "nn.batch_norm",
        [T(Any, 1, 1, c, dtype="float64"), *[T(c, dtype="float64")] * 4],
        {"axis": 3, "training": True},
        "(Tensor[(?, 1, 1, c), float64], Tensor[(c,), float64], Tensor[(c,), float64])",
    ),
    (
        "nn.batch_norm",
        [T(2, 1), *[T(1)] * 4],
        {"training": True, "momentum": 1.0, "center": False, "scale": False},
        "(Tensor[(2, 1), float32], Tensor[(1,), float32], Tensor[(1,), float32])",
    ),
    ("nn.layer_norm", [T(n, 10), T(10), T(10)], {}, "Tensor[(n, 10), float32]"),
    ("nn.layer_norm", [T(n, 4, 10), T(4), T(4)], {"axis": 1}, "Tensor[(n, 4, 10), float32]"),
    (
        "nn.dropout",
        [T(n, 3, dtype="int32")],
        {"rate": 0.25},
        "(Tensor[(n, 3), int32], Tensor[(n, 3), int32])",
    ),
    ("nn.cross_entropy", [T(n, 10), T(n, 10)], {}, "float32"),
    ("nn.cross_entropy", [T(Any, 10), T(4, Any)], {}, "float32"),
    (
        "nn.cross_entropy_with_logits",
        [T(4, 10, dtype="float64"), T(4, 10, dtype="float64")],
        {},
        "float64",
    ),
]


@pytest.mark.parametrize(("op", "args", "attrs", "expected"), RESULTS)
def test_result_type(op: str, args: list[Type], attrs: dict[str, object], expected: str) -> None:
    assert infer(op, args, attrs) == expected


def test_result_types_are_values() -> None:
    out = infer_call_type("nn.dense", [T(n, 784), T(512, 784)])
    assert out == TensorType((n, 512), "float32")
    out = infer_call_type("nn.batch_flatten", [T(n, c, 2)])
    assert out == TensorType((n, dim.mul(c, 2)), "float32")
    out = infer_call_type("nn.dropout", [T(2)])
    assert out == TupleType((T(2), T(2)))


# ---- errors -------------------------------------------------------------------------------------

T23 = "Tensor[(2, 3), float32]"

ERRORS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # dense
    (
        "nn.dense",
        [T(n, 784), T(10, 512)],
        {},
        "nn.dense: data has 784 features but weight expects 512",
    ),
    ("nn.dense", [T(n, k), T(10, 512)], {}, "nn.dense: data has k features but weight expects 512"),
    (
        "nn.dense",
        [T(2, 3), T(4, 3)],
        {"units": 10},
        "nn.dense: units=10 but the weight has 4 output units",
    ),
    (
        "nn.dense",
        [T(2, 3), T(3)],
        {},
        "nn.dense: weight must have rank 2, got Tensor[(3,), float32]",
    ),
    ("nn.dense", [T(), T(4, 3)], {}, "nn.dense: data must have rank at least 1, got float32"),
    (
        "nn.dense",
        [T(2, 3), T(4, 3, dtype="float16")],
        {},
        f"nn.dense: data and weight must have one dtype, got {T23} and Tensor[(4, 3), float16]",
    ),
    (
        "nn.dense",
        [T(2, 3, dtype="bool"), T(4, 3, dtype="bool")],
        {},
        "nn.dense: data must be a numeric tensor, got Tensor[(2, 3), bool]",
    ),
    (
        "nn.dense",
        [T(2, 3), T(4, 3, dtype="bool")],
        {"out_dtype": "float32"},
        "nn.dense: weight must be a numeric tensor, got Tensor[(4, 3), bool]",
    ),
    (
        "nn.dense",
        [T(2, 3), T(4, 3)],
        {"out_dtype": "bool"},
        "nn.dense: out_dtype must be numeric, got bool",
    ),
    ("nn.dense", [T(2, 3), T(4, 3)], {"out_dtype": "float"}, "nn.dense: unknown out_dtype 'float'"),
    ("nn.dense", [T(2, 3), T(4, 3)], {"units": 0}, "nn.dense: units must be positive, got 0"),
    (
        "nn.dense",
        [TensorType((2, 3), d), T(4, 3)],
        {},
        "nn.dense: data must be a numeric tensor, got Tensor[(2, 3), d]",
    ),
    # a dtype variable may stand for any dtype, so it meets no narrower requirement
    (
        "nn.dense",
        [TensorType((n, k), d), TensorType((m, k), d)],
        {},
        "nn.dense: data must be a numeric tensor, got Tensor[(n, k), d]",
    ),
    (
        "nn.relu",
        [TensorType((n, 3), d)],
        {},
        "nn.relu: data must be a numeric tensor, got Tensor[(n, 3), d]",
    ),
    (
        "nn.softmax",
        [TensorType((3,), d)],
        {},
        "nn.softmax: data must be a floating-point tensor, got Tensor[(3,), d]",
    ),
    (
        "nn.dense",
        [TupleType((T(2, 3),)), T(4, 3)],
        {},
        f"nn.dense: data must be a tensor, got ({T23},)",
    ),
    # matmul
    (
        "nn.matmul",
        [T(2, 3), T(4, 5)],
        {},
        f"nn.matmul: tensor_a {T23} and tensor_b Tensor[(4, 5), float32] have inner dimensions "
        "3 and 4",
    ),
    (
        "nn.matmul",
        [T(2, 3), T(3, 5)],
        {"transpose_b": True},
        f"nn.matmul: tensor_a {T23} and tensor_b Tensor[(3, 5), float32] have inner dimensions "
        "3 and 5",
    ),
    (
        "nn.matmul",
        [T(3), T(3, 4)],
        {"transpose_a": True},
        "nn.matmul: tensor_a must have rank at least 2, got Tensor[(3,), float32]",
    ),
    (
        "nn.matmul",
        [T(2, 3), T(1, 3, 4)],
        {},
        "nn.matmul: tensor_b must have rank 2, got Tensor[(1, 3, 4), float32]",
    ),
    (
        "nn.matmul",
        [T(2, 3), T(3, 4)],
        {"units": 5},
        "nn.matmul: units=5 but the weight has 4 output units",
    ),
    # batch_matmul
    (
        "nn.batch_matmul",
        [T(2, 3, 4), T(3, 4, 5)],
        {},
        "nn.batch_matmul: batch dimensions 2 and 3 of Tensor[(2, 3, 4), float32] and "
        "Tensor[(3, 4, 5), float32] differ",
    ),
    (
        "nn.batch_matmul",
        [T(2, 3, 4), T(2, 4, 5)],
        {"transpose_b": True},
        "nn.batch_matmul: tensor_a Tensor[(2, 3, 4), float32] and tensor_b "
        "Tensor[(2, 4, 5), float32] have inner dimensions 4 and 5",
    ),
    (
        "nn.batch_matmul",
        [T(3, 4), T(2, 4, 5)],
        {},
        "nn.batch_matmul: tensor_a must have rank 3, got Tensor[(3, 4), float32]",
    ),
    (
        "nn.batch_matmul",
        [T(2, 3, 4), T(2, 4, 5, dtype="int32")],
        {},
        "nn.batch_matmul: tensor_a and tensor_b must have one dtype, got "
        "Tensor[(2, 3, 4), float32] and Tensor[(2, 4, 5), int32]",
    ),
    # bias_add, activations, softmax
    (
        "nn.bias_add",
        [T(n, 64, 8, 8), T(32)],
        {},
        "nn.bias_add: bias must have shape (64,) to match axis 1 of "
        "Tensor[(n, 64, 8, 8), float32], got Tensor[(32,), float32]",
    ),
    (
        "nn.bias_add",
        [T(2, 3), T(1, 3)],
        {},
        f"nn.bias_add: bias must have shape (3,) to match axis 1 of {T23}, "
        "got Tensor[(1, 3), float32]",
    ),
    (
        "nn.bias_add",
        [T(2, c), T(3)],
        {"axis": -1},
        "nn.bias_add: bias must have shape (c,) to match axis -1 of Tensor[(2, c), float32], "
        "got Tensor[(3,), float32]",
    ),
    (
        "nn.bias_add",
        [T(2, 3), T(3)],
        {"axis": 2},
        "nn.bias_add: axis 2 is out of range for a rank-2 tensor",
    ),
    ("nn.bias_add", [T(), T(1)], {}, "nn.bias_add: data must have rank at least 1, got float32"),
    (
        "nn.bias_add",
        [T(2, 3), T(3, dtype="float16")],
        {},
        f"nn.bias_add: data and bias must have one dtype, got {T23} and Tensor[(3,), float16]",
    ),
    (
        "nn.relu",
        [T(3, dtype="bool")],
        {},
        "nn.relu: data must be a numeric tensor, got Tensor[(3,), bool]",
    ),
    ("nn.relu", [TupleType(())], {}, "nn.relu: data must be a tensor, got ()"),
    (
        "nn.leaky_relu",
        [T(3, dtype="int32")],
        {},
        "nn.leaky_relu: data must be a floating-point tensor, got Tensor[(3,), int32]",
    ),
    (
        "nn.gelu",
        [T(3, dtype="uint8")],
        {},
        "nn.gelu: data must be a floating-point tensor, got Tensor[(3,), uint8]",
    ),
    (
        "nn.prelu",
        [T(2, 3), T(2)],
        {},
        f"nn.prelu: alpha must have shape (3,) to match axis 1 of {T23}, got Tensor[(2,), float32]",
    ),
    (
        "nn.prelu",
        [T(2, 3, dtype="int32"), T(3, dtype="int32")],
        {},
        "nn.prelu: data must be a floating-point tensor, got Tensor[(2, 3), int32]",
    ),
    (
        "nn.softmax",
        [T(2, 3)],
        {"axis": 2},
        "nn.softmax: axis 2 is out of range for a rank-2 tensor",
    ),
    ("nn.softmax", [T()], {}, "nn.softmax: axis -1 is out of range for a rank-0 tensor"),
    (
        "nn.log_softmax",
        [T(2, 3, dtype="int64")],
        {},
        "nn.log_softmax: data must be a floating-point tensor, got Tensor[(2, 3), int64]",
    ),
    # conv2d
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 4, 3, 3)],
        {},
        "nn.conv2d: data has 3 channels but weight expects 4 (groups=1)",
    ),
    (
        "nn.conv2d",
        [T(1, 8, 32, 32), T(64, 2, 3, 3)],
        {"groups": 2},
        "nn.conv2d: data has 8 channels but weight expects 4 (groups=2)",
    ),
    (
        "nn.conv2d",
        [T(1, c, 8, 8), T(8, 3, 3, 3)],
        {},
        "nn.conv2d: data has c channels but weight expects 3 (groups=1)",
    ),
    (
        "nn.conv2d",
        [T(1, 8, 8, 3), T(3, 3, 4, 16)],
        {"data_layout": "NHWC", "kernel_layout": "HWIO"},
        "nn.conv2d: data has 3 channels but weight expects 4 (groups=1)",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8), T(6, 1, 3, 3)],
        {"groups": 2},
        "nn.conv2d: data has 3 channels, not divisible by groups=2",
    ),
    (
        "nn.conv2d",
        [T(1, 4, 8, 8), T(5, 2, 3, 3)],
        {"groups": 2},
        "nn.conv2d: weight has 5 output channels, not divisible by groups=2",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8), T(64, 3, 3, 3)],
        {"channels": 32},
        "nn.conv2d: channels=32 but the weight gives 64",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8), T(64, 3, 3, 3)],
        {"kernel_size": [5, 5]},
        "nn.conv2d: kernel_size=[5, 5] but the weight's is [3, 3]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 4, 9), T(64, 3, 3, 3)],
        {"dilation": 2},
        "nn.conv2d: the dilated kernel height (5) exceeds the padded input height (4)",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 9, 3), T(64, 3, 3, 5)],
        {"padding": [1, 0]},
        "nn.conv2d: the dilated kernel width (5) exceeds the padded input width (3)",
    ),
    (
        "nn.conv2d",
        [T(3, 32, 32), T(64, 3, 3, 3)],
        {},
        "nn.conv2d: data must have rank 4 (NCHW), got Tensor[(3, 32, 32), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(3, 3, 3)],
        {"kernel_layout": "HWIO"},
        "nn.conv2d: weight must have rank 4 (HWIO), got Tensor[(3, 3, 3), float32]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 3, 3, 3)],
        {"strides": [0, 1]},
        "nn.conv2d: strides must be positive, got [0, 1]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 3, 3, 3)],
        {"strides": [1, 1, 1]},
        "nn.conv2d: strides takes 1 or 2 values, got [1, 1, 1]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 3, 3, 3)],
        {"padding": [1, 1, 1]},
        "nn.conv2d: padding takes 1, 2 or 4 values, got [1, 1, 1]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 3, 3, 3)],
        {"padding": -1},
        "nn.conv2d: padding must be non-negative, got [-1]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 3, 3, 3)],
        {"groups": 0},
        "nn.conv2d: groups must be positive, got 0",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 32, 32), T(64, 3, 3, 3)],
        {"data_layout": "NCWH"},
        "attribute data_layout of nn.conv2d must be one of 'NCHW', 'NHWC', got 'NCWH'",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8), T(4, 3, 3, 3, dtype="float16")],
        {},
        "nn.conv2d: data and weight must have one dtype, got Tensor[(1, 3, 8, 8), float32] and "
        "Tensor[(4, 3, 3, 3), float16]",
    ),
    (
        "nn.conv2d",
        [T(1, 3, 8, 8, dtype="bool"), T(4, 3, 3, 3, dtype="bool")],
        {},
        "nn.conv2d: data must be a numeric tensor, got Tensor[(1, 3, 8, 8), bool]",
    ),
    # conv2d_transpose
    (
        "nn.conv2d_transpose",
        [T(1, 3, 8, 8), T(4, 3, 3, 3)],
        {},
        "nn.conv2d_transpose: data has 3 channels but weight expects 4",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 3, 8, 8), T(3, 4, 3, 3)],
        {"groups": 2},
        "nn.conv2d_transpose: data has 3 channels, not divisible by groups=2",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 4, 5, 5), T(4, 3, 3, 3)],
        {"groups": 2, "channels": 5},
        "nn.conv2d_transpose: channels=5 is not divisible by groups=2",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 4, 5, 5), T(4, 3, 3, 3)],
        {"groups": 2, "channels": 4},
        "nn.conv2d_transpose: channels=4 but the weight gives 6",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 3, 1, 1), T(3, 4, 1, 1)],
        {"padding": 1},
        "nn.conv2d_transpose: the padding leaves an empty output (-1 x -1)",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 3, 0, 4), T(3, 4, 1, 1)],
        {},
        "nn.conv2d_transpose: data has an empty spatial dimension: Tensor[(1, 3, 0, 4), float32]",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 3, 4, 4), T(3, 4, 1, 1)],
        {"output_padding": -1},
        "nn.conv2d_transpose: output_padding must be non-negative, got [-1]",
    ),
    # output_padding below the strides, as TVM's topi asserts
    (
        "nn.conv2d_transpose",
        [T(1, 1, 4, 4), T(1, 1, 3, 3)],
        {"strides": 2, "output_padding": 2},
        "nn.conv2d_transpose: output_padding must be smaller than strides, got output_padding "
        "[2, 2] and strides [2, 2]",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 1, 4, 4), T(1, 1, 3, 3)],
        {"output_padding": [0, 1]},
        "nn.conv2d_transpose: output_padding must be smaller than strides, got output_padding "
        "[0, 1] and strides [1, 1]",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 1, 4, 4), T(1, 1, 3, 3)],
        {"strides": [3, 2], "output_padding": [1, 2]},
        "nn.conv2d_transpose: output_padding must be smaller than strides, got output_padding "
        "[1, 2] and strides [3, 2]",
    ),
    # results too big to exist
    (
        "nn.conv2d",
        [T(1, 1, 4, 4), T(1, 1, 3, 3)],
        {"padding": [2**62]},
        "nn.conv2d: the result shape (1, 1, 9223372036854775810, 9223372036854775810) of "
        "float32 is too big (more than 2**63 - 1 bytes)",
    ),
    (
        "nn.pad",
        [T(2), T()],
        {"pad_width": [[0, 2**62]]},
        "nn.pad: the result shape (4611686018427387906,) of float32 is too big "
        "(more than 2**63 - 1 bytes)",
    ),
    (
        "nn.conv2d_transpose",
        [T(1, 3, 4, 4), T(3, 4, 1, 1)],
        {"kernel_size": [1, 2]},
        "nn.conv2d_transpose: kernel_size=[1, 2] but the weight's is [1, 1]",
    ),
    # pooling
    (
        "nn.max_pool2d",
        [T(1, 3, 2, 8)],
        {"pool_size": 3},
        "nn.max_pool2d: the dilated pool window height (3) exceeds the padded input height (2)",
    ),
    (
        "nn.avg_pool2d",
        [T(1, 3, 8, 2)],
        {"pool_size": 2, "dilation": 2, "ceil_mode": True},
        "nn.avg_pool2d: the dilated pool window width (3) exceeds the padded input width (2)",
    ),
    (
        "nn.max_pool2d",
        [T(1, 3, 8, 8)],
        {"pool_size": 0},
        "nn.max_pool2d: pool_size must be positive, got [0]",
    ),
    ("nn.max_pool2d", [T(1, 3, 8, 8)], {}, "nn.max_pool2d requires attribute pool_size"),
    (
        "nn.max_pool2d",
        [T(1, 3, 8, 8)],
        {"pool_size": 2, "out_layout": "NHWC"},
        "nn.max_pool2d: out_layout NHWC differs from layout NCHW",
    ),
    (
        "nn.avg_pool2d",
        [T(1, 1, 2, 2, dtype="bool")],
        {"pool_size": 1},
        "nn.avg_pool2d: data must be a numeric tensor, got Tensor[(1, 1, 2, 2), bool]",
    ),
    (
        "nn.max_pool2d_grad",
        [T(1, 3, 4, 4), T(1, 3, 8, 8)],
        {"pool_size": 2, "strides": 2, "padding": 1},
        "nn.max_pool2d_grad: out_grad must have the pooled data's type "
        "Tensor[(1, 3, 5, 5), float32], got Tensor[(1, 3, 4, 4), float32]",
    ),
    (
        "nn.max_pool2d_grad",
        [T(1, 3, 4, 4, dtype="float64"), T(1, 3, 8, 8)],
        {"pool_size": 2, "strides": 2},
        "nn.max_pool2d_grad: out_grad must have the pooled data's type "
        "Tensor[(1, 3, 4, 4), float32], got Tensor[(1, 3, 4, 4), float64]",
    ),
    (
        "nn.avg_pool2d_grad",
        [T(1, 3, 4, 4, dtype="int32"), T(1, 3, 8, 8, dtype="int32")],
        {"pool_size": 2, "strides": 2},
        "nn.avg_pool2d_grad: data must be a floating-point tensor, got Tensor[(1, 3, 8, 8), int32]",
    ),
    (
        "nn.avg_pool2d_grad",
        [T(1, 3, 4, 4), T(1, 3, 8, 8)],
        {"pool_size": 2, "layout": "NHWC", "out_layout": "NCHW"},
        "nn.avg_pool2d_grad: out_layout NCHW differs from layout NHWC",
    ),
    (
        "nn.avg_pool2d",
        [T(1, 2, 2)],
        {"pool_size": 1, "layout": "NHWC"},
        "nn.avg_pool2d: data must have rank 4 (NHWC), got Tensor[(1, 2, 2), float32]",
    ),
    (
        "nn.global_avg_pool2d",
        [T(1, 3, 0, 2)],
        {},
        "nn.global_avg_pool2d: the pooling window is empty for data Tensor[(1, 3, 0, 2), float32]",
    ),
    (
        "nn.global_avg_pool2d",
        [T(1, 3, 2, 2, dtype="bool")],
        {},
        "nn.global_avg_pool2d: data must be a numeric tensor, got Tensor[(1, 3, 2, 2), bool]",
    ),
    (
        "nn.global_avg_pool2d",
        [T(1, 3, 2, 2)],
        {"out_layout": "NHWC"},
        "nn.global_avg_pool2d: out_layout NHWC differs from layout NCHW",
    ),
    (
        "nn.adaptive_avg_pool2d",
        [T(1, 3, 4, 4)],
        {"output_size": [1, 2, 3]},
        "nn.adaptive_avg_pool2d: output_size takes at most 2 values, got [1, 2, 3]",
    ),
    (
        "nn.adaptive_avg_pool2d",
        [T(1, 3, 4, 4)],
        {"output_size": 0},
        "nn.adaptive_avg_pool2d: output_size must be positive, got [0]",
    ),
    (
        "nn.adaptive_avg_pool2d",
        [T(1, 3, 4, 0)],
        {"output_size": 2},
        "nn.adaptive_avg_pool2d: the pooling window is empty for data "
        "Tensor[(1, 3, 4, 0), float32]",
    ),
    # pad, batch_flatten
    (
        "nn.pad",
        [T(2, 3), T()],
        {"pad_width": [[1, 1]]},
        f"nn.pad: pad_width has 1 pairs but the data {T23} has rank 2",
    ),
    (
        "nn.pad",
        [T(2, 3), T(1)],
        {"pad_width": [[1, 1], [0, 0]]},
        "nn.pad: pad_value must be a scalar, got Tensor[(1,), float32]",
    ),
    (
        "nn.pad",
        [T(2, 3), T()],
        {"pad_width": [[-2, -1], [0, 0]]},
        "nn.pad: padding axis 0 of extent 2 by (-2, -1) leaves a negative extent",
    ),
    (
        "nn.pad",
        [T(n, 3), T()],
        {"pad_width": [[0, 0], [0, -1]], "pad_mode": "edge"},
        "nn.pad: edge padding needs non-negative widths, got (0, -1) for axis 1",
    ),
    (
        "nn.pad",
        [T(2, 3), T()],
        {"pad_width": [[2, 0], [0, 0]], "pad_mode": "reflect"},
        "nn.pad: reflect padding of axis 0 by (2, 0) needs widths below its extent 2",
    ),
    (
        "nn.pad",
        [T(0, 3), T()],
        {"pad_width": [[1, 0], [0, 0]], "pad_mode": "edge"},
        "nn.pad: edge padding of the empty axis 0",
    ),
    (
        "nn.pad",
        [T(2, 3), T()],
        {"pad_width": [[1, 2, 3]]},
        "nn.pad: pad_width must be a list of [before, after] integer pairs, got ((1, 2, 3),)",
    ),
    (
        "nn.pad",
        [T(2, 3), T()],
        {"pad_width": [[1, 1], [0, 0]], "pad_mode": "wrap"},
        "attribute pad_mode of nn.pad must be one of 'constant', 'edge', 'reflect', got 'wrap'",
    ),
    (
        "nn.batch_flatten",
        [T()],
        {},
        "nn.batch_flatten: data must have rank at least 1, got float32",
    ),
    # normalization, dropout, losses
    (
        "nn.batch_norm",
        [T(2, 3, dtype="int32"), *[T(3, dtype="int32")] * 4],
        {},
        "nn.batch_norm: data must be a floating-point tensor, got Tensor[(2, 3), int32]",
    ),
    (
        "nn.batch_norm",
        [T(2, 3), T(3), T(3), T(4), T(3)],
        {},
        f"nn.batch_norm: moving_mean must have shape (3,) to match axis 1 of {T23}, "
        "got Tensor[(4,), float32]",
    ),
    (
        "nn.batch_norm",
        [T(2, 3), T(3), T(3), T(3), T(3, dtype="float64")],
        {},
        f"nn.batch_norm: data and moving_var must have one dtype, got {T23} and "
        "Tensor[(3,), float64]",
    ),
    (
        "nn.batch_norm",
        [T(2, 3), TupleType((T(3),)), T(3), T(3), T(3)],
        {},
        "nn.batch_norm: gamma must be a tensor, got (Tensor[(3,), float32],)",
    ),
    (
        "nn.batch_norm",
        [T(2, 3), *[T(3)] * 4],
        {"axis": -3},
        "nn.batch_norm: axis -3 is out of range for a rank-2 tensor",
    ),
    (
        "nn.batch_norm",
        [T(2, 3), *[T(3)] * 4],
        {"training": True, "momentum": 1.5},
        "nn.batch_norm: momentum must be in [0, 1], got 1.5",
    ),
    (
        "nn.batch_norm",
        [T(n, 3), *[T(3)] * 4],
        {"momentum": -0.5},
        "nn.batch_norm: momentum must be in [0, 1], got -0.5",
    ),
    (
        "nn.batch_norm",
        [T(1, 3, 1, 1), *[T(3)] * 4],
        {"training": True},
        "nn.batch_norm: training needs more than one value per channel, got "
        "Tensor[(1, 3, 1, 1), float32]",
    ),
    (
        "nn.batch_norm",
        [T(0, 4), *[T(4)] * 4],
        {"training": True},
        "nn.batch_norm: training needs more than one value per channel, got "
        "Tensor[(0, 4), float32]",
    ),
    (
        "nn.layer_norm",
        [T(2, 3), T(3), T(2)],
        {},
        f"nn.layer_norm: beta must have shape (3,) to match axis -1 of {T23}, "
        "got Tensor[(2,), float32]",
    ),
    (
        "nn.layer_norm",
        [T(2, 3, dtype="float16"), T(3), T(3)],
        {},
        "nn.layer_norm: data and gamma must have one dtype, got Tensor[(2, 3), float16] and "
        "Tensor[(3,), float32]",
    ),
    ("nn.dropout", [T(2, 3)], {"rate": 1.5}, "nn.dropout: rate must be in [0, 1], got 1.5"),
    (
        "nn.dropout",
        [TupleType((T(2),))],
        {},
        "nn.dropout: data must be a tensor, got (Tensor[(2,), float32],)",
    ),
    (
        "nn.cross_entropy",
        [T(2, 3), T(2, 4)],
        {},
        f"nn.cross_entropy: predictions and targets must have one rank-2 shape, got {T23} and "
        "Tensor[(2, 4), float32]",
    ),
    (
        "nn.cross_entropy",
        [T(6), T(6)],
        {},
        "nn.cross_entropy: predictions and targets must have one rank-2 shape, got "
        "Tensor[(6,), float32] and Tensor[(6,), float32]",
    ),
    (
        "nn.cross_entropy_with_logits",
        [T(2, 3, dtype="int32"), T(2, 3, dtype="int32")],
        {},
        "nn.cross_entropy_with_logits: predictions must be a floating-point tensor, got "
        "Tensor[(2, 3), int32]",
    ),
    (
        "nn.cross_entropy",
        [T(2, 3), T(2, 3, dtype="float64")],
        {},
        f"nn.cross_entropy: predictions and targets must have one dtype, got {T23} and "
        "Tensor[(2, 3), float64]",
    ),
]


@pytest.mark.parametrize(("op", "args", "attrs", "message"), ERRORS)
def test_error_message(op: str, args: list[Type], attrs: dict[str, object], message: str) -> None:
    assert error(op, args, attrs) == message


def test_every_operator_is_covered_by_the_tables() -> None:
    assert {op for op, *_ in RESULTS} == set(NN_OPS)
    assert {op for op, *_ in ERRORS} == set(NN_OPS)


# ---- inference of unknown arguments, text format, spans -----------------------------------------


X = "%x: Tensor[(1, 3, 32, 32), float32]"

TEXT: list[tuple[str, str]] = [
    # the example: text attribute spellings (lists) type-check
    (
        f"fn ({X}, %w: Tensor[(64, 3, 3, 3), float32]) "
        "{ nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3]) }",
        "fn (Tensor[(1, 3, 32, 32), float32], Tensor[(64, 3, 3, 3), float32]) "
        "-> Tensor[(1, 64, 32, 32), float32]",
    ),
    # a weight is inferred from channels and kernel_size, in the kernel layout
    (
        f"fn ({X}, %w) {{ nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3]) }}",
        "fn (Tensor[(1, 3, 32, 32), float32], Tensor[(64, 3, 3, 3), float32]) "
        "-> Tensor[(1, 64, 32, 32), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 8, 8, 4), float16], %w) { nn.conv2d(%x, %w, channels=6, "
        'kernel_size=[3, 1], groups=2, data_layout="NHWC", kernel_layout="HWIO") }',
        "fn (Tensor[(1, 8, 8, 4), float16], Tensor[(3, 1, 2, 6), float16]) "
        "-> Tensor[(1, 6, 8, 6), float16]",
    ),
    (
        f"fn ({X}, %w) {{ nn.conv2d_transpose(%x, %w, channels=8, kernel_size=2, strides=2) }}",
        "fn (Tensor[(1, 3, 32, 32), float32], Tensor[(3, 8, 2, 2), float32]) "
        "-> Tensor[(1, 8, 64, 64), float32]",
    ),
    # and from units
    (
        "fn [n: Shape](%x: Tensor[(n, 784), float32], %w) { nn.dense(%x, %w, units=512) }",
        "fn [n: Shape](Tensor[(n, 784), float32], Tensor[(512, 784), float32]) "
        "-> Tensor[(n, 512), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 5), float32], %w) { nn.matmul(%x, %w, units=3, transpose_b=True) }",
        "fn (Tensor[(2, 5), float32], Tensor[(3, 5), float32]) -> Tensor[(2, 3), float32]",
    ),
    # parameters from the data's channel axis
    (
        "fn (%x: Tensor[(8, 64, 7, 7), float32], %g, %b, %m, %v) "
        "{ nn.batch_norm(%x, %g, %b, %m, %v).0 }",
        "fn (Tensor[(8, 64, 7, 7), float32], Tensor[(64,), float32], Tensor[(64,), float32], "
        "Tensor[(64,), float32], Tensor[(64,), float32]) -> Tensor[(8, 64, 7, 7), float32]",
    ),
    (
        "fn (%x: Tensor[(8, 7, 7, 64), float32], %g, %b, %m, %v) "
        "{ nn.batch_norm(%x, %g, %b, %m, %v, axis=3, training=True, momentum=0.01f) }",
        "fn (Tensor[(8, 7, 7, 64), float32], Tensor[(64,), float32], Tensor[(64,), float32], "
        "Tensor[(64,), float32], Tensor[(64,), float32]) -> (Tensor[(8, 7, 7, 64), float32], "
        "Tensor[(64,), float32], Tensor[(64,), float32])",
    ),
    (
        "fn (%x: Tensor[(8, 64), float32], %b) { nn.bias_add(%x, %b) }",
        "fn (Tensor[(8, 64), float32], Tensor[(64,), float32]) -> Tensor[(8, 64), float32]",
    ),
    (
        "fn (%x: Tensor[(8, 64), float32], %g, %b) { nn.layer_norm(%x, %g, %b) }",
        "fn (Tensor[(8, 64), float32], Tensor[(64,), float32], Tensor[(64,), float32]) "
        "-> Tensor[(8, 64), float32]",
    ),
    (
        "fn (%x: Tensor[(8, 6), float32], %a) { nn.prelu(%x, %a, axis=0) }",
        "fn (Tensor[(8, 6), float32], Tensor[(8,), float32]) -> Tensor[(8, 6), float32]",
    ),
    (
        "fn (%p: Tensor[(4, 10), float32], %t) { nn.cross_entropy(%p, %t) }",
        "fn (Tensor[(4, 10), float32], Tensor[(4, 10), float32]) -> float32",
    ),
    (
        "fn (%x: Tensor[(4, 10), int8], %v) { nn.pad(%x, %v, pad_width=[[0, 0], [1, 1]]) }",
        "fn (Tensor[(4, 10), int8], int8) -> Tensor[(4, 12), int8]",
    ),
    # elementwise results flow back to their argument
    (
        "fn (%x) -> Tensor[(3, 4), float32] { nn.relu(%x) }",
        "fn (Tensor[(3, 4), float32]) -> Tensor[(3, 4), float32]",
    ),
    (
        "fn (%x) -> Tensor[(3, 4), float32] { nn.softmax(nn.gelu(%x), axis=0) }",
        "fn (Tensor[(3, 4), float32]) -> Tensor[(3, 4), float32]",
    ),
    (
        "fn (%x) -> (Tensor[(3,), int32], Tensor[(3,), int32]) { nn.dropout(%x) }",
        "fn (Tensor[(3,), int32]) -> (Tensor[(3,), int32], Tensor[(3,), int32])",
    ),
    # text spellings of the other attributes
    (
        "fn (%x: Tensor[(1, 3, 7, 7), float32]) "
        "{ nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=True) }",
        "fn (Tensor[(1, 3, 7, 7), float32]) -> Tensor[(1, 3, 4, 4), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 7, 7, 3), float32]) "
        '{ nn.adaptive_avg_pool2d(%x, output_size=[2, 3], layout="NHWC") }',
        "fn (Tensor[(1, 7, 7, 3), float32]) -> Tensor[(1, 2, 3, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3, 4), float32], %y: Tensor[(2, 5, 4), float32]) "
        "{ nn.batch_matmul(%x, %y, transpose_b=True) }",
        "fn (Tensor[(2, 3, 4), float32], Tensor[(2, 5, 4), float32]) -> Tensor[(2, 3, 5), float32]",
    ),
    # a whole small network
    (
        "fn (%x: Tensor[(n, 1, 28, 28), float32], %w: Tensor[(8, 1, 3, 3), float32], "
        "%b: Tensor[(8,), float32], %d: Tensor[(10, 1568), float32]) { "
        "%0 = nn.conv2d(%x, %w, padding=[1, 1]); %1 = nn.relu(nn.bias_add(%0, %b)); "
        "%2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]); "
        "nn.log_softmax(nn.dense(nn.batch_flatten(%2), %d)) }",
        "fn [n: Shape](Tensor[(n, 1, 28, 28), float32], Tensor[(8, 1, 3, 3), float32], "
        "Tensor[(8,), float32], Tensor[(10, 1568), float32]) -> Tensor[(n, 10), float32]",
    ),
]


@pytest.mark.parametrize(("src", "expected"), TEXT)
def test_text_program_type(src: str, expected: str) -> None:
    assert checked(src) == expected


def test_unknown_weight_without_channels_cannot_be_inferred() -> None:
    err = checked_error(f"fn ({X}, %w) {{ nn.conv2d(%x, %w, kernel_size=[3, 3]) }}")
    assert err.message == "cannot infer the type of %w; annotate it"
    err = checked_error("fn (%x: Tensor[(2, 3), float32], %w) { nn.dense(%x, %w) }")
    assert err.message == "cannot infer the type of %w; annotate it"


def test_relation_error_carries_the_call_span() -> None:
    src = "fn (%x: Tensor[(4, 784), float32], %w: Tensor[(10, 512), float32]) { nn.dense(%x, %w) }"
    err = checked_error(src)
    assert err.message == "nn.dense: data has 784 features but weight expects 512"
    assert err.span is not None
    assert src[err.span.column - 1 : err.span.end_column - 1] == "nn.dense(%x, %w)"


def test_attribute_values_are_checked_for_text_calls() -> None:
    err = checked_error(f"fn ({X}) {{ nn.avg_pool2d(%x, pool_size=[2, 2], strides=[2, 0]) }}")
    assert err.message == "nn.avg_pool2d: strides must be positive, got [2, 0]"


def test_independent_errors_are_all_reported() -> None:
    err = checked_error(
        "fn (%x: Tensor[(2, 3), float32], %w: Tensor[(4, 5), float32]) "
        "{ (nn.dense(%x, %w), nn.softmax(%x, axis=3)) }"
    )
    assert err.message == "nn.dense: data has 3 features but weight expects 5"
    assert "nn.softmax: axis 3 is out of range for a rank-2 tensor" in str(err)


def test_dimension_unknowns_are_bound_by_the_relation() -> None:
    # Tensor[(_, _), float32]: the weight's dims are solved from the data and units.
    src = (
        "fn (%x: Tensor[(2, 5), float32], %w: Tensor[(_, _), float32]) "
        "{ nn.dense(%x, %w, units=3) }"
    )
    assert checked(src) == (
        "fn (Tensor[(2, 5), float32], Tensor[(3, 5), float32]) -> Tensor[(2, 3), float32]"
    )
    src = (
        "fn (%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(6, _, 3, 3), float32]) "
        "{ nn.conv2d(%x, %w, groups=2) }"
    )
    assert checked(src) == (
        "fn (Tensor[(1, 4, 8, 8), float32], Tensor[(6, 2, 3, 3), float32]) "
        "-> Tensor[(1, 6, 6, 6), float32]"
    )


# ---- properties: the relations agree with the references ----------------------------------------


def run(op: str, arrays: Sequence[np.ndarray], attrs: dict[str, object]) -> TypingAny:
    opdef = get_op(op)
    assert opdef.reference is not None
    return opdef.reference(*arrays, **opdef.validate_attrs(attrs))


def type_of(value: TypingAny) -> Type:
    if isinstance(value, tuple):
        return TupleType(tuple(type_of(v) for v in value))
    assert isinstance(value, np.ndarray)
    return TensorType(value.shape, str(value.dtype))


def agree(op: str, arrays: Sequence[np.ndarray], attrs: dict[str, object], valid: bool) -> None:
    """The relation accepts the arrays' types iff the reference runs, with its output's type."""
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    try:
        out = run(op, arrays, attrs)
    except ValueError as e:  # AttrValidationError included
        assert not valid, f"the reference rejects a valid case: {e}"
        with pytest.raises(TypeCheckError):
            infer_call_type(op, types, attrs)
        return
    assert infer_call_type(op, types, attrs) == type_of(out)


def test_pad_cropping_past_an_edge_agrees_with_the_relation() -> None:
    out = run("nn.pad", [np.ones(1, "float32"), np.asarray(7, "float32")], {"pad_width": [[-2, 3]]})
    np.testing.assert_array_equal(out, np.array([7, 7], "float32"))
    assert infer_call_type("nn.pad", [T(1), T()], {"pad_width": [[-2, 3]]}) == T(2)


def array(shape: Sequence[int], dtype: str) -> np.ndarray:
    return np.ones(tuple(shape), dtype=dtype)


Draw = Callable[[st.SearchStrategy[TypingAny]], TypingAny]
DTYPES = st.sampled_from(["float32", "float16", "int32", "bool"])


def maybe_list(draw: Draw, values: Sequence[int]) -> object:
    """``values`` as a list, or as one int when they are all equal (both text spellings)."""
    if len(set(values)) == 1 and draw(st.booleans()):
        return values[0]
    return list(values)


def window(draw: Draw, lo: int, hi: int) -> object:
    return pair(draw, lo, hi)[1]


def pad4(values: list[int]) -> tuple[int, int, int, int]:
    """Relay's (top, left, bottom, right) from 1, 2 or 4 padding values."""
    if len(values) == 1:
        return (values[0],) * 4
    if len(values) == 2:
        return (values[0], values[1], values[0], values[1])
    return (values[0], values[1], values[2], values[3])


def pair(draw: Draw, lo: int, hi: int) -> tuple[tuple[int, int], object]:
    """A (height, width) window attribute and one of its text spellings."""
    values = [draw(st.integers(lo, hi)) for _ in range(draw(st.sampled_from([1, 2])))]
    return (values[0], values[-1]), maybe_list(draw, values)


def padding(draw: Draw, hi: int = 2) -> tuple[tuple[int, int, int, int], object]:
    """A (top, left, bottom, right) padding and one of its text spellings (1, 2 or 4 values)."""
    values = [draw(st.integers(0, hi)) for _ in range(draw(st.sampled_from([1, 2, 4])))]
    return pad4(values), maybe_list(draw, values)


def perturb(draw: Draw, shape: list[int]) -> list[int]:
    """``shape`` with one dimension changed (if it has any)."""
    if not shape:
        return shape
    i = draw(st.integers(0, len(shape) - 1))
    out = list(shape)
    out[i] = max(0, out[i] + draw(st.sampled_from([-1, 1, 2])))
    return out


Case = tuple[str, list[np.ndarray], dict[str, object], bool]


@st.composite
def conv2d_cases(draw: Draw) -> Case:
    """A conv2d or conv2d_transpose call; valid unless the last field says otherwise."""
    transpose = draw(st.booleans())
    op = "nn.conv2d_transpose" if transpose else "nn.conv2d"
    groups = draw(st.integers(1, 2))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    (sh, sw), strides = pair(draw, 1, 2)
    (dh, dw), dilation = pair(draw, 1, 2)
    (pt, pl, pb, pr), pads = padding(draw)
    hh, ww = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    if transpose:  # the output extent (h-1)*s + (k-1)*d + 1 - pads must be positive
        while (hh - 1) * sh + (kh - 1) * dh + 1 - pt - pb <= 0:
            hh += 1
        while (ww - 1) * sw + (kw - 1) * dw + 1 - pl - pr <= 0:
            ww += 1
    else:  # the dilated kernel must fit the padded input
        hh = max(hh, (kh - 1) * dh + 1 - pt - pb)
        ww = max(ww, (kw - 1) * dw + 1 - pl - pr)
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    kernel_layout = draw(st.sampled_from(["OIHW", "HWIO", "OHWI", "HWOI", "IOHW", "IHWO"]))
    attrs: dict[str, object] = {
        "strides": strides,
        "dilation": dilation,
        "padding": pads,
        "groups": groups,
        "data_layout": layout,
        "kernel_layout": kernel_layout,
        "out_layout": draw(st.sampled_from(["", "NCHW", "NHWC"])),
        "out_dtype": draw(st.sampled_from(["", "", "float32", "int32"])),
    }
    if transpose:
        # below the strides, as TVM's topi requires
        op_h, op_w = draw(st.integers(0, sh - 1)), draw(st.integers(0, sw - 1))
        attrs["output_padding"] = [op_h, op_w] if op_h != op_w else maybe_list(draw, [op_h])
        letters = {"I": cin, "O": cout // groups, "H": kh, "W": kw}
    else:
        letters = {"O": cout, "I": cin // groups, "H": kh, "W": kw}
    if draw(st.booleans()):
        attrs["channels"] = cout
    if draw(st.booleans()):
        attrs["kernel_size"] = maybe_list(draw, [kh, kw])
    data = [1, cin, hh, ww] if layout == "NCHW" else [1, hh, ww, cin]
    weight = [letters[a] for a in kernel_layout]
    dtype = draw(st.sampled_from(["float32", "float16", "int32"]))
    valid = draw(st.integers(0, 3)) != 0
    if not valid:
        choice = draw(st.sampled_from(["weight", "data", "dtype", "padding"]))
        if choice == "weight":
            weight = perturb(draw, weight)
        elif choice == "data":
            data = perturb(draw, data)
        elif choice == "dtype":
            dtype = "bool"
        else:
            attrs["padding"] = draw(st.sampled_from([[9], [0, 0, 0], [-1]]))
    return op, [array(data, dtype), array(weight, dtype)], attrs, valid


@settings(max_examples=150)
@given(conv2d_cases())
def test_conv2d_relations_agree_with_the_references(
    case: Case,
) -> None:
    agree(*case)


@st.composite
def pool_cases(draw: Draw) -> Case:
    """A pooling call; valid unless the last field says otherwise."""
    op = draw(
        st.sampled_from(
            ["nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.adaptive_avg_pool2d"]
        )
    )
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    hh, ww, ch = draw(st.integers(1, 7)), draw(st.integers(1, 7)), draw(st.integers(1, 2))
    attrs: dict[str, object] = {"layout": layout, "out_layout": draw(st.sampled_from(["", layout]))}
    if op in ("nn.max_pool2d", "nn.avg_pool2d"):
        (kh, kw), pool_size = pair(draw, 1, 3)
        (dh, dw), dilation = pair(draw, 1, 2)
        (pt, pl, pb, pr), pads = padding(draw, 1)
        attrs |= {
            "pool_size": pool_size,
            "strides": window(draw, 1, 3),
            "dilation": dilation,
            "padding": pads,
            "ceil_mode": draw(st.booleans()),
        }
        if op == "nn.avg_pool2d":
            attrs["count_include_pad"] = draw(st.booleans())
        hh = max(hh, (kh - 1) * dh + 1 - pt - pb)
        ww = max(ww, (kw - 1) * dw + 1 - pl - pr)
    elif op == "nn.adaptive_avg_pool2d":
        attrs["output_size"] = None if draw(st.booleans()) else window(draw, 1, 4)
    shape = [2, ch, hh, ww] if layout == "NCHW" else [2, hh, ww, ch]
    dtype = draw(st.sampled_from(["float32", "int32", "float16"]))
    valid = draw(st.integers(0, 3)) != 0
    if not valid:
        choice = draw(st.sampled_from(["dtype", "rank", "layout", "shrink"]))
        if choice == "dtype":
            dtype = "bool"
        elif choice == "rank":
            shape = draw(st.sampled_from([shape[:3], [*shape, 1]]))
        elif choice == "layout":
            attrs["out_layout"] = "NHWC" if layout == "NCHW" else "NCHW"
        else:
            shape = [1, 1, 1, 1]
    return op, [array(shape, dtype)], attrs, valid


@settings(max_examples=150)
@given(pool_cases())
def test_pool_relations_agree_with_the_references(
    case: Case,
) -> None:
    agree(*case)


@st.composite
def matmul_cases(draw: Draw) -> Case:
    """A dense, matmul or batch_matmul call; valid unless the last field says otherwise."""
    op = draw(st.sampled_from(["nn.dense", "nn.matmul", "nn.batch_matmul"]))
    mm, kk, nn = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    attrs: dict[str, object] = {"out_dtype": draw(st.sampled_from(["", "", "float32", "int64"]))}
    if op == "nn.dense":
        lead = draw(st.lists(st.integers(1, 3), max_size=2))
        a, b = [*lead, kk], [nn, kk]
    elif op == "nn.matmul":
        attrs |= {"transpose_a": ta, "transpose_b": tb}
        lead = draw(st.lists(st.integers(1, 3), max_size=1))
        a = [*lead, kk, mm] if ta else [*lead, mm, kk]
        if not ta and draw(st.booleans()):
            a = [kk]
        b = [nn, kk] if tb else [kk, nn]
    else:
        attrs |= {"transpose_a": ta, "transpose_b": tb}
        batch = draw(st.integers(1, 3))
        ba, bb = draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
        a = [ba, kk, mm] if ta else [ba, mm, kk]
        b = [bb, nn, kk] if tb else [bb, kk, nn]
    if op != "nn.batch_matmul" and draw(st.booleans()):
        attrs["units"] = nn
    dtype = draw(st.sampled_from(["float32", "int32", "float16"]))
    valid = draw(st.integers(0, 3)) != 0
    if not valid:
        if draw(st.booleans()):
            a = perturb(draw, a)
        else:
            b = perturb(draw, b)
        dtype = draw(st.sampled_from([dtype, "bool"]))
    return op, [array(a, dtype), array(b, dtype)], attrs, valid


@settings(max_examples=150)
@given(matmul_cases())
def test_matmul_relations_agree_with_the_references(
    case: Case,
) -> None:
    agree(*case)


@st.composite
def other_cases(draw: Draw) -> Case:
    """A call of one of the remaining operators; valid unless the last field says otherwise."""
    op = draw(
        st.sampled_from(
            [
                "nn.bias_add",
                "nn.prelu",
                "nn.relu",
                "nn.leaky_relu",
                "nn.gelu",
                "nn.softmax",
                "nn.log_softmax",
                "nn.batch_norm",
                "nn.layer_norm",
                "nn.dropout",
                "nn.batch_flatten",
                "nn.pad",
                "nn.cross_entropy",
                "nn.cross_entropy_with_logits",
            ]
        )
    )
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    if op.startswith("nn.cross_entropy"):
        shape = shape[:2] if len(shape) > 1 else [*shape, 2]
    dtype = draw(st.sampled_from(["float32", "float64", "float16", "int32"]))
    floats_only = op not in ("nn.bias_add", "nn.relu", "nn.dropout", "nn.batch_flatten", "nn.pad")
    valid = not (floats_only and dtype == "int32")
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    attrs: dict[str, object] = {}
    arrays = [array(shape, dtype)]
    params = {"nn.bias_add": 1, "nn.prelu": 1, "nn.batch_norm": 4, "nn.layer_norm": 2}
    if op in params or op.endswith("softmax"):
        attrs["axis"] = axis
    if op in params:
        for _ in range(params[op]):
            pshape, pdtype = [shape[axis]], dtype
            if draw(st.integers(0, 5)) == 0:
                valid = False
                pshape = draw(st.sampled_from([[shape[axis] + 1], [1, shape[axis]], []]))
            if draw(st.integers(0, 5)) == 0:
                pdtype = draw(st.sampled_from(["float32", "float64"]))
                valid = valid and pdtype == dtype
            arrays.append(array(pshape, pdtype))
    if op == "nn.pad":
        mode = draw(st.sampled_from(["constant", "edge", "reflect"]))
        attrs["pad_mode"] = mode
        widths = []
        for size in shape:
            if mode == "reflect":
                widths.append([draw(st.integers(0, size - 1)), draw(st.integers(0, size - 1))])
            elif mode == "edge":
                widths.append([draw(st.integers(0, 2)), draw(st.integers(0, 2))])
            else:  # negative widths crop, down to an empty axis
                before = draw(st.integers(-size, 2))
                widths.append([before, draw(st.integers(-size - before, 2))])
        if draw(st.integers(0, 3)) == 0:
            valid = False
            widths = [[b - 2, a] for b, a in widths]
        attrs["pad_width"] = widths
        arrays.append(array([], draw(DTYPES)))
    if op.startswith("nn.cross_entropy"):
        other = list(shape) if draw(st.integers(0, 3)) else perturb(draw, shape)
        valid = valid and other == shape
        arrays.append(array(other, dtype))
    if op == "nn.dropout":
        attrs["rate"] = draw(st.sampled_from([0.0, 0.5, 1.0]))
    if op == "nn.batch_norm" and draw(st.booleans()):
        attrs["training"] = True
        attrs["momentum"] = draw(st.sampled_from([0.0, 0.1, 1.0, 1.5]))
        valid = valid and attrs["momentum"] != 1.5
        valid = valid and int(np.prod(shape)) // shape[axis] >= 2
    if op == "nn.leaky_relu":
        attrs["alpha"] = 0.2
    if draw(st.integers(0, 7)) == 0:
        valid = False
        arrays[0] = array([], dtype) if draw(st.booleans()) else array(shape, "bool")
    return op, arrays, attrs, valid


@settings(max_examples=300)
@given(other_cases())
def test_other_relations_agree_with_the_references(
    case: Case,
) -> None:
    agree(*case)


# ---- properties: symbolic output dims evaluate to the concrete ones -----------------------------


def evaluate(t: Type, values: dict[TypeVar, int]) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    out = []
    for d in t.shape:
        v = dim.substitute(d, lambda var: values[var] if isinstance(var, TypeVar) else var)
        assert isinstance(v, int), d
        out.append(v)
    return tuple(out)


@settings(max_examples=100)
@given(
    op=st.sampled_from(["nn.conv2d", "nn.conv2d_transpose", "nn.max_pool2d", "nn.avg_pool2d"]),
    size=st.tuples(st.integers(5, 12), st.integers(5, 12)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pads=st.lists(st.integers(0, 1), min_size=4, max_size=4),
    ceil=st.booleans(),
)
def test_symbolic_spatial_dims_evaluate_to_the_concrete_ones(
    op: str,
    size: tuple[int, int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: list[int],
    ceil: bool,
) -> None:
    attrs: dict[str, object] = {"strides": strides, "dilation": dilation, "padding": pads}
    if op.endswith("pool2d"):
        attrs |= {"pool_size": kernel, "ceil_mode": ceil}
        args: list[Type] = [T(n, 3, h, w)]
        concrete: list[Type] = [T(2, 3, *size)]
    else:
        args = [T(n, 3, h, w), T(3, 3, *kernel)]
        concrete = [T(2, 3, *size), T(3, 3, *kernel)]
    symbolic = infer_call_type(op, args, attrs)
    expected = infer_call_type(op, concrete, attrs)
    assert evaluate(symbolic, {n: 2, h: size[0], w: size[1]}) == evaluate(expected, {})


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("nn.dense", [T(2, 3), T(4, 3)]),
        ("nn.matmul", [T(2, 3), T(3, 4)]),
        ("nn.batch_matmul", [T(1, 2, 3), T(1, 4, 3)]),
        ("nn.conv2d", [T(1, 1, 4, 4), T(1, 1, 3, 3)]),
        ("nn.conv2d_transpose", [T(1, 1, 4, 4), T(1, 1, 3, 3)]),
    ],
)
def test_every_out_dtype_attribute_is_checked(op: str, args: list[Type]) -> None:
    assert error(op, args, {"out_dtype": "foo"}) == f"{op}: unknown out_dtype 'foo'"
    assert error(op, args, {"out_dtype": "bool"}) == f"{op}: out_dtype must be numeric, got bool"
