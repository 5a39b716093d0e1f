"""Type relations of the shape operators (relay/op/transform.py).

Tables of argument types and attributes -> the result type (concrete, symbolic and ``Any``
dimensions) or the exact error message; unknown dimensions bound by the relations; calls in
the text format. Hypothesis properties: on random concrete inputs a relation accepts exactly
what the numpy reference runs and gives the type of the reference's output, and the same call
with its dimensions made symbolic is accepted and gives a type that instantiates to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any as TypingAny

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.errors import TypeCheckError
from relay.ir import dim
from relay.ir.dim import Dim
from relay.ir.types import (
    DTYPES as RELAY_DTYPES,
    Any,
    IncompleteType,
    Kind,
    TensorType,
    TupleType,
    Type,
    TypeVar,
    _AnyDim,
)
from relay.op import get_op, transform as transform_ops
from relay.typecheck import infer_call_type
from tests.type_helpers import T, checked, checked_error, error, infer

n = TypeVar("n", Kind.SHAPE)
m = TypeVar("m", Kind.SHAPE)
c = TypeVar("c", Kind.SHAPE)
h = TypeVar("h", Kind.SHAPE)
w = TypeVar("w", Kind.SHAPE)
d = TypeVar("d", Kind.BASE_TYPE)


def I(*shape: Dim, dtype: str = "int32") -> TensorType:  # noqa: E743
    return TensorType(tuple(shape), dtype)


def Tup(*fields: Type) -> TupleType:
    return TupleType(tuple(fields))


OPS = [
    "reshape",
    "reshape_like",
    "transpose",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "broadcast_to_like",
    "collapse_sum_like",
    "concatenate",
    "stack",
    "split",
    "strided_slice",
    "take",
    "repeat",
    "tile",
    "reverse",
    "layout_transform",
    "shape_of",
    "one_hot",
]

BIG = 2**31 - 1  # "to the end" for strided_slice
DTYPE_CHOICES = ", ".join(repr(t) for t in RELAY_DTYPES)


def test_every_transform_operator_has_a_relation_documented_in_one_line() -> None:
    for name in OPS:
        rel = get_op(name).type_relation
        assert rel is not None, name
        doc = rel.__doc__
        assert doc is not None and "\n" not in doc and doc.endswith("."), (name, doc)


# ---- result types -------------------------------------------------------------------------------

RESULTS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # reshape: Relay's special values, symbolic and Any dims
    ("reshape", [T(2, 3, 4)], {"newshape": [6, 1, -1]}, "Tensor[(6, 1, 4), float32]"),
    ("reshape", [T(2, 3, 4)], {"newshape": [0, -1]}, "Tensor[(2, 12), float32]"),
    ("reshape", [T(2, 3, 4)], {"newshape": [-4, 1, 2, -3]}, "Tensor[(1, 2, 12), float32]"),
    ("reshape", [T(n, 784)], {"newshape": [-1, 28, 28]}, "Tensor[(n, 28, 28), float32]"),
    ("reshape", [T(n, 3, 4)], {"newshape": [0, -1]}, "Tensor[(n, 12), float32]"),
    ("reshape", [T(n, 3, 4)], {"newshape": [-1]}, "Tensor[(n * 12,), float32]"),
    ("reshape", [T(n, m)], {"newshape": [-3]}, "Tensor[(m * n,), float32]"),
    ("reshape", [T(2, n, 4)], {"newshape": [2, -2]}, "Tensor[(2, n, 4), float32]"),
    ("reshape", [T(n, 12)], {"newshape": [0, -4, 3, -1]}, "Tensor[(n, 3, 4), float32]"),
    ("reshape", [T(n, 6)], {"newshape": [-4, 2, -1, -2]}, "Tensor[(2, n // 2, 6), float32]"),
    ("reshape", [T(dim.mul(n, 4))], {"newshape": [-1, 2]}, "Tensor[(n * 2, 2), float32]"),
    ("reshape", [T(Any, 784)], {"newshape": [-1, 28, 28]}, "Tensor[(?, 28, 28), float32]"),
    ("reshape", [T(Any, 3)], {"newshape": [0, 3, -1]}, "Tensor[(?, 3, 1), float32]"),
    ("reshape", [T(0, 3)], {"newshape": [3, 0], "allowzero": True}, "Tensor[(3, 0), float32]"),
    ("reshape", [T()], {"newshape": [1, 1]}, "Tensor[(1, 1), float32]"),
    ("reshape", [TensorType((n, 2), d)], {"newshape": [-1]}, "Tensor[(n * 2,), d]"),
    ("reshape", [T(2, 3, dtype="int8")], {"newshape": [6]}, "Tensor[(6,), int8]"),
    # element counts that are not decidable are left to run time
    ("reshape", [T(n, 3)], {"newshape": [0, 4]}, "Tensor[(n, 4), float32]"),
    ("reshape", [T(n, 6)], {"newshape": [-1, 4]}, "Tensor[((n * 6) // 4, 4), float32]"),
    # reshape_like
    ("reshape_like", [T(2, 3), I(3, 2, dtype="int8")], {}, "Tensor[(3, 2), float32]"),
    (
        "reshape_like",
        [T(1, 2, 3, 4), T(6, 2, 2, 3)],
        {"lhs_begin": 1, "rhs_end": 3},
        "Tensor[(1, 6, 2, 2), float32]",
    ),
    ("reshape_like", [T(n, 6), T(n, 2, 3)], {}, "Tensor[(n, 2, 3), float32]"),
    ("reshape_like", [T(n, 6), T(2, 3)], {"lhs_begin": 1}, "Tensor[(n, 2, 3), float32]"),
    ("reshape_like", [T(Any, 6), T(3, 4)], {}, "Tensor[(3, 4), float32]"),
    # transpose
    ("transpose", [T(2, 3, 4)], {}, "Tensor[(4, 3, 2), float32]"),
    ("transpose", [T(2, 3, 4)], {"axes": [0, 2, 1]}, "Tensor[(2, 4, 3), float32]"),
    ("transpose", [T(2, 3, 4)], {"axes": [-1, 0, 1]}, "Tensor[(4, 2, 3), float32]"),
    ("transpose", [T(n, m)], {"axes": [1, 0]}, "Tensor[(m, n), float32]"),
    ("transpose", [T(Any, 3)], {}, "Tensor[(3, ?), float32]"),
    ("transpose", [T()], {"axes": []}, "float32"),
    # expand_dims
    ("expand_dims", [T(2, 3)], {"axis": 1}, "Tensor[(2, 1, 3), float32]"),
    ("expand_dims", [T(2, 3)], {"axis": -1, "num_newaxis": 2}, "Tensor[(2, 3, 1, 1), float32]"),
    ("expand_dims", [T(2, 3)], {"axis": -3}, "Tensor[(1, 2, 3), float32]"),
    ("expand_dims", [T(2, 3)], {"axis": 0, "num_newaxis": 0}, "Tensor[(2, 3), float32]"),
    ("expand_dims", [T(n)], {"axis": 0}, "Tensor[(1, n), float32]"),
    ("expand_dims", [T()], {"axis": 0}, "Tensor[(1,), float32]"),
    # squeeze
    ("squeeze", [T(1, 3, 1)], {}, "Tensor[(3,), float32]"),
    ("squeeze", [T(1, 3, 1)], {"axis": [0]}, "Tensor[(3, 1), float32]"),
    ("squeeze", [T(1, 3, 1)], {"axis": [-1, 0]}, "Tensor[(3,), float32]"),
    ("squeeze", [T(1, 1)], {}, "float32"),
    ("squeeze", [T(n, 1, 3)], {"axis": [1]}, "Tensor[(n, 3), float32]"),
    ("squeeze", [T(n, 1)], {"axis": [0]}, "Tensor[(1,), float32]"),  # n = 1 checked at run time
    ("squeeze", [T(Any, 1)], {"axis": [0]}, "Tensor[(1,), float32]"),
    # broadcast_to
    ("broadcast_to", [T(3, 1)], {"shape": [2, 3, 4]}, "Tensor[(2, 3, 4), float32]"),
    ("broadcast_to", [T()], {"shape": [2]}, "Tensor[(2,), float32]"),
    ("broadcast_to", [T(n, 1)], {"shape": [5, 4]}, "Tensor[(5, 4), float32]"),
    ("broadcast_to", [T(Any)], {"shape": [3]}, "Tensor[(3,), float32]"),
    ("broadcast_to", [T(1, dtype="bool")], {"shape": [0]}, "Tensor[(0,), bool]"),
    # broadcast_to_like
    ("broadcast_to_like", [T(3, 1), I(2, 3, 4)], {}, "Tensor[(2, 3, 4), float32]"),
    ("broadcast_to_like", [T(1), T(n, m)], {}, "Tensor[(n, m), float32]"),
    ("broadcast_to_like", [T(3, 1), T(Any, Any, 5)], {}, "Tensor[(?, 3, 5), float32]"),
    # collapse_sum_like
    ("collapse_sum_like", [T(2, 3, 4), T(3, 1)], {}, "Tensor[(3, 1), float32]"),
    ("collapse_sum_like", [T(n, 3), I(3)], {}, "Tensor[(3,), float32]"),
    ("collapse_sum_like", [T(n, m), T(1, m)], {}, "Tensor[(1, m), float32]"),
    ("collapse_sum_like", [T(2, 3), T()], {}, "float32"),
    ("collapse_sum_like", [T(Any, 3), T(Any, 1)], {}, "Tensor[(?, 1), float32]"),
    # concatenate
    ("concatenate", [Tup(T(2, 3), T(4, 3))], {}, "Tensor[(6, 3), float32]"),
    ("concatenate", [Tup(T(2, 3), T(2, 5))], {"axis": -1}, "Tensor[(2, 8), float32]"),
    ("concatenate", [Tup(T(n, 3), T(m, 3))], {"axis": 0}, "Tensor[(m + n, 3), float32]"),
    ("concatenate", [Tup(T(n, 3), T(n, 3), T(1, 3))], {}, "Tensor[(n * 2 + 1, 3), float32]"),
    ("concatenate", [Tup(T(Any, 3), T(2, 3))], {}, "Tensor[(?, 3), float32]"),
    ("concatenate", [Tup(T(Any, 3), T(2, 4))], {"axis": 1}, "Tensor[(2, 7), float32]"),
    ("concatenate", [Tup(T(n, 3))], {}, "Tensor[(n, 3), float32]"),
    (
        "concatenate",
        [Tup(TensorType((2,), d), TensorType((n,), d))],
        {},
        "Tensor[(n + 2,), d]",
    ),
    # stack
    ("stack", [Tup(T(2, 3), T(2, 3))], {}, "Tensor[(2, 2, 3), float32]"),
    ("stack", [Tup(T(2, 3), T(2, 3))], {"axis": -1}, "Tensor[(2, 3, 2), float32]"),
    ("stack", [Tup(T(2, 3), T(2, 3))], {"axis": 1}, "Tensor[(2, 2, 3), float32]"),
    ("stack", [Tup(T(n, 3), T(n, 3), T(n, 3))], {"axis": 1}, "Tensor[(n, 3, 3), float32]"),
    ("stack", [Tup(T(Any, 3), T(2, 3))], {}, "Tensor[(2, 2, 3), float32]"),
    ("stack", [Tup(T())], {}, "Tensor[(1,), float32]"),
    # split: a TupleType
    (
        "split",
        [T(6, 4)],
        {"indices_or_sections": 3},
        "(Tensor[(2, 4), float32], Tensor[(2, 4), float32], Tensor[(2, 4), float32])",
    ),
    (
        "split",
        [T(2, 7)],
        {"indices_or_sections": [2, 5], "axis": 1},
        "(Tensor[(2, 2), float32], Tensor[(2, 3), float32], Tensor[(2, 2), float32])",
    ),
    (
        "split",
        [T(dim.mul(n, 2), 4)],
        {"indices_or_sections": 2},
        "(Tensor[(n, 4), float32], Tensor[(n, 4), float32])",
    ),
    (
        "split",
        [T(n, 6)],
        {"indices_or_sections": 2},
        "(Tensor[(n // 2, 6), float32], Tensor[(n // 2, 6), float32])",
    ),
    (
        "split",
        [T(n, 6)],
        {"indices_or_sections": 3, "axis": -1},
        "(Tensor[(n, 2), float32], Tensor[(n, 2), float32], Tensor[(n, 2), float32])",
    ),
    (
        "split",
        [T(n)],
        {"indices_or_sections": [3]},
        "(Tensor[(3,), float32], Tensor[(n - 3,), float32])",
    ),
    (
        "split",
        [T(Any, 6)],
        {"indices_or_sections": 2},
        "(Tensor[(?, 6), float32], Tensor[(?, 6), float32])",
    ),
    ("split", [T(6)], {"indices_or_sections": 1}, "(Tensor[(6,), float32],)"),
    ("split", [T(6)], {"indices_or_sections": []}, "(Tensor[(6,), float32],)"),
    # strided_slice: exact on integer dims
    ("strided_slice", [T(5, 6)], {"begin": [1], "end": [4]}, "Tensor[(3, 6), float32]"),
    (
        "strided_slice",
        [T(5, 6)],
        {"begin": [0, 0], "end": [5, 6], "strides": [2, 4]},
        "Tensor[(3, 2), float32]",
    ),
    (
        "strided_slice",
        [T(5)],
        {"begin": [-1], "end": [-6], "strides": [-1]},
        "Tensor[(5,), float32]",
    ),
    (
        "strided_slice",
        [T(5)],
        {"begin": [3], "end": [0], "strides": [-2]},
        "Tensor[(2,), float32]",
    ),
    ("strided_slice", [T(5)], {"begin": [7], "end": [9]}, "Tensor[(0,), float32]"),
    # an empty selection inside the axis is a 0-length axis too, as in numpy
    ("strided_slice", [T(5, 7)], {"begin": [3], "end": [1]}, "Tensor[(0, 7), float32]"),
    ("strided_slice", [T(4, 3)], {"begin": [3], "end": [1]}, "Tensor[(0, 3), float32]"),
    ("strided_slice", [T(1)], {"begin": [1], "end": [-1]}, "Tensor[(0,), float32]"),
    ("strided_slice", [T(4)], {"begin": [1], "end": [3], "strides": [-1]}, "Tensor[(0,), float32]"),
    ("strided_slice", [T(2, 3)], {"begin": [3], "end": [5]}, "Tensor[(0, 3), float32]"),
    (
        "strided_slice",
        [T(5, 7)],
        {"begin": [0, 1], "end": [5, 3], "strides": [1, -1]},
        "Tensor[(5, 0), float32]",
    ),
    (
        "strided_slice",
        [T(0)],
        {"begin": [-1], "end": [-9], "strides": [-1]},
        "Tensor[(0,), float32]",
    ),
    ("strided_slice", [T(n, 6)], {"begin": [3], "end": [1]}, "Tensor[(?, 6), float32]"),
    ("strided_slice", [T(5)], {"begin": [-3], "end": [BIG]}, "Tensor[(3,), float32]"),
    (
        "strided_slice",
        [T(5, 6)],
        {"begin": [1, 2], "end": [2, -1], "slice_mode": "size"},
        "Tensor[(2, 4), float32]",
    ),
    (
        "strided_slice",
        [T(5, 6)],
        {"begin": [4], "end": [3], "slice_mode": "size", "strides": [-1]},
        "Tensor[(1, 6), float32]",
    ),
    (
        "strided_slice",
        [T(5, 6)],
        {"begin": [1], "end": [5], "strides": [2], "axes": [1]},
        "Tensor[(5, 2), float32]",
    ),
    (
        "strided_slice",
        [T(5, 6)],
        {"begin": [1, 0], "end": [3, 2], "axes": [-1, 0]},
        "Tensor[(2, 2), float32]",
    ),
    ("strided_slice", [T(5, 6)], {"begin": [], "end": []}, "Tensor[(5, 6), float32]"),
    # strided_slice: a whole symbolic axis is exact, a part of one is ?
    (
        "strided_slice",
        [T(n, 6)],
        {"begin": [0, 1], "end": [BIG, 5]},
        "Tensor[(n, 4), float32]",
    ),
    (
        "strided_slice",
        [T(n, 6)],
        {"begin": [0], "end": [BIG], "strides": [2]},
        "Tensor[((n + 1) // 2, 6), float32]",
    ),
    ("strided_slice", [T(n)], {"begin": [], "end": [], "strides": [-1]}, "Tensor[(n,), float32]"),
    (
        "strided_slice",
        [T(n)],
        {"begin": [-1], "end": [-BIG - 1], "strides": [-3]},
        "Tensor[((n + 2) // 3,), float32]",
    ),
    (
        "strided_slice",
        [T(n)],
        {"begin": [0], "end": [-1], "slice_mode": "size"},
        "Tensor[(n,), float32]",
    ),
    ("strided_slice", [T(n, 6)], {"begin": [1], "end": [3]}, "Tensor[(?, 6), float32]"),
    ("strided_slice", [T(n, 6)], {"begin": [-1], "end": [BIG]}, "Tensor[(?, 6), float32]"),
    (
        "strided_slice",
        [T(n, 6)],
        {"begin": [0], "end": [2], "slice_mode": "size"},
        "Tensor[(?, 6), float32]",
    ),
    ("strided_slice", [T(Any, 6)], {"begin": [0, 1], "end": [3, 3]}, "Tensor[(?, 2), float32]"),
    # take
    ("take", [T(5, 6), I(3)], {}, "Tensor[(3,), float32]"),
    ("take", [T(5, 6), I(3)], {"axis": 0}, "Tensor[(3, 6), float32]"),
    ("take", [T(5, 6), I(2, 4)], {"axis": 1}, "Tensor[(5, 2, 4), float32]"),
    ("take", [T(5, 6), I(2, 4)], {"axis": -1}, "Tensor[(5, 2, 4), float32]"),
    ("take", [T(5, 6), I()], {"axis": 0}, "Tensor[(6,), float32]"),
    ("take", [T(2, 5, 6), I(2, 3)], {"axis": 1, "batch_dims": 1}, "Tensor[(2, 3, 6), float32]"),
    ("take", [T(2, 5, 6), I(2, 3)], {"axis": 2, "batch_dims": -1}, "Tensor[(2, 5, 3), float32]"),
    ("take", [T(n, 5), I(m)], {"axis": 0}, "Tensor[(m, 5), float32]"),
    ("take", [T(n, 5), I(n, 2)], {"axis": 1, "batch_dims": 1}, "Tensor[(n, 2), float32]"),
    ("take", [T(Any, 5), I(2, 3)], {"axis": 1, "batch_dims": 1}, "Tensor[(?, 3), float32]"),
    ("take", [T(5, dtype="int8"), I(2, dtype="uint8")], {}, "Tensor[(2,), int8]"),
    ("take", [T(0, 3), I(0)], {"axis": 0, "mode": "fast"}, "Tensor[(0, 3), float32]"),
    # repeat
    ("repeat", [T(2, 3)], {"repeats": 2, "axis": 1}, "Tensor[(2, 6), float32]"),
    ("repeat", [T(n, 3)], {"repeats": 3, "axis": 0}, "Tensor[(n * 3, 3), float32]"),
    ("repeat", [T(n, 3)], {"repeats": 1, "axis": -2}, "Tensor[(n, 3), float32]"),
    ("repeat", [T(Any)], {"repeats": 2, "axis": 0}, "Tensor[(?,), float32]"),
    # tile
    ("tile", [T(2, 3)], {"reps": [2]}, "Tensor[(2, 6), float32]"),
    ("tile", [T(2, 3)], {"reps": [2, 1, 3]}, "Tensor[(2, 2, 9), float32]"),
    ("tile", [T(2, 3)], {"reps": []}, "Tensor[(2, 3), float32]"),
    ("tile", [T(n, 3)], {"reps": [2, 2]}, "Tensor[(n * 2, 6), float32]"),
    ("tile", [T()], {"reps": [3]}, "Tensor[(3,), float32]"),
    # reverse
    ("reverse", [T(2, 3)], {"axis": -1}, "Tensor[(2, 3), float32]"),
    ("reverse", [T(n, Any)], {"axis": 0}, "Tensor[(n, ?), float32]"),
    # layout_transform
    (
        "layout_transform",
        [T(1, 32, 8, 8)],
        {"src_layout": "NCHW", "dst_layout": "NCHW16c"},
        "Tensor[(1, 2, 8, 8, 16), float32]",
    ),
    (
        "layout_transform",
        [T(1, 3, 4, 5)],
        {"src_layout": "NCHW", "dst_layout": "NHWC"},
        "Tensor[(1, 4, 5, 3), float32]",
    ),
    (
        "layout_transform",
        [T(1, 2, 8, 8, 16)],
        {"src_layout": "NCHW16c", "dst_layout": "NCHW"},
        "Tensor[(1, 32, 8, 8), float32]",
    ),
    (
        "layout_transform",
        [T(1, 4, 8, 8, 8)],
        {"src_layout": "NCHW8c", "dst_layout": "NCHW4c"},
        "Tensor[(1, 8, 8, 8, 4), float32]",
    ),
    (
        "layout_transform",
        [T(n, c, h, w)],
        {"src_layout": "NCHW", "dst_layout": "NCHW16c"},
        "Tensor[(n, c // 16, h, w, 16), float32]",
    ),
    (
        "layout_transform",
        [T(n, 32, h, w)],
        {"src_layout": "NCHW", "dst_layout": "NHWC4c"},
        "Tensor[(n, h, w, 8, 4), float32]",
    ),
    (
        "layout_transform",
        [T(n, c, h, w, 4)],
        {"src_layout": "NCHW4c", "dst_layout": "NHWC"},
        "Tensor[(n, h, w, c * 4), float32]",
    ),
    (
        "layout_transform",
        [T(Any, 16, 2, 2)],
        {"src_layout": "NCHW", "dst_layout": "NCHW8c"},
        "Tensor[(?, 2, 2, 2, 8), float32]",
    ),
    # shape_of
    ("shape_of", [T(n, 3)], {}, "Tensor[(2,), int32]"),
    ("shape_of", [T()], {"dtype": "int64"}, "Tensor[(0,), int64]"),
    ("shape_of", [T(Any, Any, Any)], {}, "Tensor[(3,), int32]"),
    # one_hot
    ("one_hot", [I(n, 3), T(), T()], {"depth": 5}, "Tensor[(n, 3, 5), float32]"),
    ("one_hot", [I(n, 3), T(), T()], {"depth": 5, "axis": 0}, "Tensor[(5, n, 3), float32]"),
    ("one_hot", [I(n, 3), T(), T()], {"depth": 5, "axis": -2}, "Tensor[(n, 5, 3), float32]"),
    (
        "one_hot",
        [I(4, dtype="int64"), I(), I()],
        {"depth": 2, "dtype": "int32"},
        "Tensor[(4, 2), int32]",
    ),
    ("one_hot", [I(), T(), T()], {"depth": 3}, "Tensor[(3,), float32]"),
]


@pytest.mark.parametrize(("op", "args", "attrs", "expected"), RESULTS)
def test_result_type(op: str, args: list[Type], attrs: dict[str, object], expected: str) -> None:
    assert infer(op, args, attrs) == expected


def test_result_types_are_values() -> None:
    assert infer_call_type("reshape", [T(n, 784)], {"newshape": [-1, 28, 28]}) == T(n, 28, 28)
    assert infer_call_type("concatenate", [Tup(T(n, 3), T(m, 3))], {}) == T(dim.add(n, m), 3)
    assert infer_call_type("split", [T(6)], {"indices_or_sections": 2}) == Tup(T(3), T(3))


# ---- errors -------------------------------------------------------------------------------------

F = "Tensor[(2, 3), float32]"

ERRORS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # reshape
    (
        "reshape",
        [T(2, 3)],
        {"newshape": [4, 2]},
        f"reshape: cannot reshape {F} (6 elements) to (4, 2) (8 elements)",
    ),
    (
        "reshape",
        [T(2, 3)],
        {"newshape": [0, 4]},
        f"reshape: cannot reshape {F} (6 elements) to (2, 4) (8 elements; newshape [0, 4])",
    ),
    (
        "reshape",
        [T(2, 3)],
        {"newshape": [4, -1]},
        f"reshape: cannot reshape {F} to newshape [4, -1]: 6 is not a multiple of 4",
    ),
    (
        "reshape",
        [T(2, 3)],
        {"newshape": [0, 0, 0]},
        f"reshape: cannot reshape {F} to newshape [0, 0, 0]: 0 copies input dimension 2, "
        "but the rank is 2",
    ),
    (
        "reshape",
        [T(6)],
        {"newshape": [-3]},
        "reshape: cannot reshape Tensor[(6,), float32] to newshape [-3]: -3 merges input "
        "dimensions 0 and 1, but the rank is 1",
    ),
    (
        "reshape",
        [T(6)],
        {"newshape": [6, -4, 1, 1]},
        "reshape: cannot reshape Tensor[(6,), float32] to newshape [6, -4, 1, 1]: -4 splits "
        "input dimension 1, but the rank is 1",
    ),
    (
        "reshape",
        [T(6)],
        {"newshape": [-4, 2, 2]},
        "reshape: cannot reshape Tensor[(6,), float32] to newshape [-4, 2, 2]: -4 splits "
        "input dimension 0 of size 6 into 2 x 2",
    ),
    (
        "reshape",
        [T(6)],
        {"newshape": [-4, 4, -1]},
        "reshape: cannot reshape Tensor[(6,), float32] to newshape [-4, 4, -1]: 6 is not a "
        "multiple of 4",
    ),
    (
        "reshape",
        [T(dim.add(dim.mul(n, 2), 1))],
        {"newshape": [-4, 2, -1]},
        "reshape: cannot reshape Tensor[(n * 2 + 1,), float32] to newshape [-4, 2, -1]: "
        "n * 2 + 1 is not a multiple of 2",
    ),
    (
        "reshape",
        [T(3, 0)],
        {"newshape": [-1, 0], "allowzero": True},
        "reshape: cannot reshape Tensor[(3, 0), float32] to newshape [-1, 0]: the -1 cannot be "
        "inferred: another output dimension is 0",
    ),
    ("reshape", [T(6)], {"newshape": [-1, -1]}, "reshape: newshape [-1, -1] has more than one -1"),
    (
        "reshape",
        [T(6)],
        {"newshape": [1, -5]},
        "reshape: invalid newshape value -5 (special values are 0, -1 .. -4)",
    ),
    (
        "reshape",
        [T(6)],
        {"newshape": [-4, 2]},
        "reshape: -4 in newshape must be followed by two dimensions",
    ),
    (
        "reshape",
        [Tup(T(2))],
        {"newshape": [2]},
        "reshape: data must be a tensor, got (Tensor[(2,), float32],)",
    ),
    # reshape_like
    (
        "reshape_like",
        [T(1, 2, 3, 4), T(6, 2, 2, 3)],
        {"lhs_begin": 1, "lhs_end": 2, "rhs_end": 1},
        "reshape_like: cannot reshape Tensor[(1, 2, 3, 4), float32] (24 elements) to "
        "(1, 6, 3, 4) (72 elements)",
    ),
    (
        "reshape_like",
        [T(1, 2, 3, 4), T(6)],
        {"lhs_end": 5},
        "reshape_like: lhs_end 5 is out of range for a tensor of rank 4",
    ),
    (
        "reshape_like",
        [T(1, 2, 3, 4), T(6)],
        {"rhs_begin": -2},
        "reshape_like: rhs_begin -2 is out of range for a tensor of rank 1",
    ),
    (
        "reshape_like",
        [T(1, 2, 3, 4), T(6)],
        {"lhs_begin": 2, "lhs_end": 1},
        "reshape_like: lhs_begin 2 is after lhs_end 1",
    ),
    (
        "reshape_like",
        [T(2), Tup()],
        {},
        "reshape_like: shape_like must be a tensor, got ()",
    ),
    # transpose
    (
        "transpose",
        [T(2, 3)],
        {"axes": [0]},
        f"transpose: axes [0] must name each of the 2 axes of {F} once",
    ),
    (
        "transpose",
        [T(2, 3)],
        {"axes": [0, 2]},
        "transpose: axis 2 is out of range for a rank-2 tensor",
    ),
    (
        "transpose",
        [T(2, 3)],
        {"axes": [0, -2]},
        f"transpose: axes [0, -2] are not a permutation of the axes of {F}",
    ),
    # expand_dims
    (
        "expand_dims",
        [T(2, 3)],
        {"axis": 3},
        "expand_dims: axis 3 is out of range for inserting a dimension into a rank-2 tensor",
    ),
    (
        "expand_dims",
        [T(2, 3)],
        {"axis": -4},
        "expand_dims: axis -4 is out of range for inserting a dimension into a rank-2 tensor",
    ),
    (
        "expand_dims",
        [T(2, 3)],
        {"axis": 0, "num_newaxis": -1},
        "expand_dims: num_newaxis must be >= 0, got -1",
    ),
    # squeeze
    (
        "squeeze",
        [T(2, 3)],
        {"axis": [1]},
        f"squeeze: cannot squeeze axis 1 of {F}: its size is 3, not 1",
    ),
    (
        "squeeze",
        [T(n, 0)],
        {"axis": [1]},
        "squeeze: cannot squeeze axis 1 of Tensor[(n, 0), float32]: its size is 0, not 1",
    ),
    (
        "squeeze",
        [T(1, 3)],
        {"axis": [0, -2]},
        "squeeze: axis [0, -2] repeats an axis of Tensor[(1, 3), float32]",
    ),
    ("squeeze", [T(1)], {"axis": [1]}, "squeeze: axis 1 is out of range for a rank-1 tensor"),
    (
        "squeeze",
        [T(n, 1, 3)],
        {},
        "squeeze: cannot tell whether dimension 0 (n) of Tensor[(n, 1, 3), float32] is 1; "
        "give the axes to squeeze",
    ),
    (
        "squeeze",
        [T(2, Any)],
        {},
        "squeeze: cannot tell whether dimension 1 (?) of Tensor[(2, ?), float32] is 1; "
        "give the axes to squeeze",
    ),
    # broadcast_to, broadcast_to_like, collapse_sum_like
    (
        "broadcast_to",
        [T(3, 2)],
        {"shape": [3, 4]},
        "broadcast_to: cannot broadcast Tensor[(3, 2), float32] to (3, 4)",
    ),
    (
        "broadcast_to",
        [T(3)],
        {"shape": []},
        "broadcast_to: cannot broadcast Tensor[(3,), float32] to ()",
    ),
    (
        "broadcast_to",
        [T(1)],
        {"shape": [2, -1]},
        "broadcast_to: shape (2, -1) has a negative dimension",
    ),
    (
        "broadcast_to_like",
        [T(3, 2), T(3, 4)],
        {},
        "broadcast_to_like: cannot broadcast Tensor[(3, 2), float32] to the shape of "
        "Tensor[(3, 4), float32]",
    ),
    (
        "broadcast_to_like",
        [T(3, 2), T(3)],
        {},
        "broadcast_to_like: cannot broadcast Tensor[(3, 2), float32] to the shape of "
        "Tensor[(3,), float32]",
    ),
    (
        "collapse_sum_like",
        [T(2, 3), T(2)],
        {},
        f"collapse_sum_like: cannot collapse {F} to the shape of Tensor[(2,), float32], "
        "which does not broadcast to it",
    ),
    (
        "collapse_sum_like",
        [T(3), T(2, 3)],
        {},
        f"collapse_sum_like: cannot collapse Tensor[(3,), float32] to the shape of {F}, "
        "which does not broadcast to it",
    ),
    # concatenate
    (
        "concatenate",
        [T(2, 3)],
        {},
        f"concatenate: data must be a tuple of tensors, got {F}",
    ),
    ("concatenate", [Tup()], {}, "concatenate: data must not be empty"),
    (
        "concatenate",
        [Tup(T(2), Tup())],
        {},
        "concatenate: data[1] must be a tensor, got ()",
    ),
    (
        "concatenate",
        [Tup(T(2), I(2))],
        {},
        "concatenate: tensors must have one dtype, got Tensor[(2,), float32] and "
        "Tensor[(2,), int32]",
    ),
    (
        "concatenate",
        [Tup(T(2, 3), T(2))],
        {},
        f"concatenate: tensors must have one rank, got {F} and Tensor[(2,), float32]",
    ),
    (
        "concatenate",
        [Tup(T(), T())],
        {},
        "concatenate: cannot concatenate rank-0 tensors, got float32",
    ),
    (
        "concatenate",
        [Tup(T(2, 3), T(2, 3))],
        {"axis": 2},
        "concatenate: axis 2 is out of range for a rank-2 tensor",
    ),
    (
        "concatenate",
        [Tup(T(2, 3), T(2, 4))],
        {"axis": 0},
        f"concatenate: along axis 0, {F} and Tensor[(2, 4), float32] differ on axis 1",
    ),
    (
        "concatenate",
        [Tup(T(n, 3), T(m, 3))],
        {"axis": 1},
        "concatenate: along axis 1, Tensor[(n, 3), float32] and Tensor[(m, 3), float32] "
        "differ on axis 0",
    ),
    # stack
    (
        "stack",
        [Tup(T(2), T(3))],
        {},
        "stack: tensors must have one shape, got Tensor[(2,), float32] and Tensor[(3,), float32]",
    ),
    (
        "stack",
        [Tup(T(2), T(2, dtype="float16"))],
        {},
        "stack: tensors must have one dtype, got Tensor[(2,), float32] and Tensor[(2,), float16]",
    ),
    (
        "stack",
        [Tup(T(2), T(2))],
        {"axis": 2},
        "stack: axis 2 is out of range for inserting a dimension into a rank-1 tensor",
    ),
    ("stack", [T(2)], {}, "stack: data must be a tuple of tensors, got Tensor[(2,), float32]"),
    # split
    (
        "split",
        [T(2, 3)],
        {"indices_or_sections": 2, "axis": 1},
        f"split: cannot split axis 1 of size 3 into 2 equal sections (in {F})",
    ),
    (
        "split",
        [T(dim.add(dim.mul(n, 4), 2))],
        {"indices_or_sections": 4},
        "split: cannot split axis 0 of size n * 4 + 2 into 4 equal sections "
        "(in Tensor[(n * 4 + 2,), float32])",
    ),
    (
        "split",
        [T(3)],
        {"indices_or_sections": [1, 3]},
        "split: indices [1, 3] must be less than the size 3 of axis 0 (in Tensor[(3,), float32])",
    ),
    (
        "split",
        [T()],
        {"indices_or_sections": 1},
        "split: axis 0 is out of range for a rank-0 tensor",
    ),
    (
        "split",
        [T(4)],
        {"indices_or_sections": 0},
        "split: the number of sections must be positive, got 0",
    ),
    (
        "split",
        [T(4)],
        {"indices_or_sections": [2, 2]},
        "split: indices must be positive and strictly increasing, got [2, 2]",
    ),
    # strided_slice
    (
        "strided_slice",
        [T(5, 7)],
        {"begin": [0, 0, 0], "end": [1]},
        "strided_slice: 3 begin/end/stride values for Tensor[(5, 7), float32]",
    ),
    (
        "strided_slice",
        [T(5, 7)],
        {"begin": [0], "end": [1], "axes": [2]},
        "strided_slice: axis 2 is out of range for a rank-2 tensor",
    ),
    (
        "strided_slice",
        [T(5, 7)],
        {"begin": [0, 0], "end": [1, 1], "axes": [1, -1]},
        "strided_slice: axes [1, -1] repeat an axis of Tensor[(5, 7), float32]",
    ),
    (
        "strided_slice",
        [T(5, 7)],
        {"begin": [0], "end": [1], "strides": [0]},
        "strided_slice: strides must be nonzero",
    ),
    (
        "strided_slice",
        [T(5, 7)],
        {"begin": [0], "end": [1, 2], "axes": [0]},
        "strided_slice: begin, end, strides and axes must have the same length",
    ),
    # take
    (
        "take",
        [T(5), T(3)],
        {},
        "take: indices must be an integer tensor, got Tensor[(3,), float32]",
    ),
    (
        "take",
        [T(5), T(3, dtype="bool")],
        {},
        "take: indices must be an integer tensor, got Tensor[(3,), bool]",
    ),
    ("take", [T(2, 3), I(2)], {"axis": 2}, "take: axis 2 is out of range for a rank-2 tensor"),
    (
        "take",
        [T(2, 5, 6), I(2, 3)],
        {"axis": 1, "batch_dims": 2},
        "take: batch_dims 2 is out of range for axis 1 of Tensor[(2, 5, 6), float32] and "
        "indices Tensor[(2, 3), int32] (it must be at most both the axis and the rank of the "
        "indices)",
    ),
    (
        "take",
        [T(2, 5, 6), I(2, 3)],
        {"axis": 1, "batch_dims": -3},
        "take: batch_dims -3 is out of range for axis 1 of Tensor[(2, 5, 6), float32] and "
        "indices Tensor[(2, 3), int32] (it must be at most both the axis and the rank of the "
        "indices)",
    ),
    (
        "take",
        [T(2, 5, 6), I(3, 3)],
        {"axis": 1, "batch_dims": 1},
        "take: data Tensor[(2, 5, 6), float32] and indices Tensor[(3, 3), int32] differ on "
        "batch dimension 0",
    ),
    (
        "take",
        [T(0, 3), I(2)],
        {"axis": 0},
        "take: cannot take from axis 0 of size 0 of Tensor[(0, 3), float32]",
    ),
    (
        "take",
        [T(2, 0), I(1)],
        {},
        "take: cannot take from axis 0 of size 0 of Tensor[(2, 0), float32]",
    ),
    ("take", [Tup(), I(1)], {}, "take: data must be a tensor, got ()"),
    # repeat, tile, reverse
    ("repeat", [T(2, 3)], {"repeats": 0, "axis": 0}, "repeat: repeats must be at least 1, got 0"),
    (
        "repeat",
        [T(2, 3)],
        {"repeats": 2, "axis": 2},
        "repeat: axis 2 is out of range for a rank-2 tensor",
    ),
    ("tile", [T(2, 3)], {"reps": [2, 0]}, "tile: reps must be at least 1, got [2, 0]"),
    ("reverse", [T(2, 3)], {"axis": -3}, "reverse: axis -3 is out of range for a rank-2 tensor"),
    ("reverse", [T()], {"axis": 0}, "reverse: axis 0 is out of range for a rank-0 tensor"),
    ("reverse", [Tup()], {"axis": 0}, "reverse: data must be a tensor, got ()"),
    # layout_transform
    (
        "layout_transform",
        [T(1, 3, 4)],
        {"src_layout": "NCHW", "dst_layout": "NHWC"},
        "layout_transform: cannot move Tensor[(1, 3, 4), float32] from NCHW to NHWC: layout "
        "NCHW has 4 axes but the tensor has rank 3",
    ),
    (
        "layout_transform",
        [T(1, 2, 4, 4, 4)],
        {"src_layout": "NCHW8c", "dst_layout": "NCHW"},
        "layout_transform: cannot move Tensor[(1, 2, 4, 4, 4), float32] from NCHW8c to NCHW: "
        "axis 8c of layout NCHW8c has size 4 in a tensor of shape (1, 2, 4, 4, 4)",
    ),
    (
        "layout_transform",
        [T(n, 3, h, w)],
        {"src_layout": "NCHW", "dst_layout": "NCHW2c"},
        "layout_transform: cannot move Tensor[(n, 3, h, w), float32] from NCHW to NCHW2c: "
        "axis C of size 3 does not divide into blocks of 2 for layout NCHW2c",
    ),
    (
        "layout_transform",
        [T(1, 3, 4, 4)],
        {"src_layout": "NCHW", "dst_layout": "NCW"},
        "layout_transform: layouts NCHW and NCW have different primal axes",
    ),
    (
        "layout_transform",
        [T(1, 3, 4, 4)],
        {"src_layout": "NCHW", "dst_layout": "NCHWc"},
        "invalid layout 'NCHWc': sub-axis c needs a positive factor",
    ),
    # shape_of
    ("shape_of", [Tup()], {}, "shape_of: data must be a tensor, got ()"),
    # one_hot
    (
        "one_hot",
        [T(3), T(), T()],
        {"depth": 2},
        "one_hot: indices must be an integer tensor, got Tensor[(3,), float32]",
    ),
    (
        "one_hot",
        [I(3), T(1), T()],
        {"depth": 2},
        "one_hot: on_value must be a scalar, got Tensor[(1,), float32]",
    ),
    (
        "one_hot",
        [I(3), T(), Tup()],
        {"depth": 2},
        "one_hot: off_value must be a tensor, got ()",
    ),
    (
        "one_hot",
        [I(3), T(), T()],
        {"depth": 2, "axis": 2},
        "one_hot: axis 2 is out of range for inserting a dimension into a rank-1 tensor",
    ),
    ("one_hot", [I(3), T(), T()], {"depth": 0}, "one_hot: depth must be positive, got 0"),
    ("one_hot", [I(3), T(), T()], {"depth": -2}, "one_hot: depth must be positive, got -2"),
    # a dtype attribute must name a dtype
    (
        "one_hot",
        [I(3), T(), T()],
        {"depth": 2, "dtype": "foo"},
        f"attribute dtype of one_hot must be one of {DTYPE_CHOICES}, got 'foo'",
    ),
    (
        "one_hot",
        [I(3), T(), T()],
        {"depth": 2, "dtype": ""},
        f"attribute dtype of one_hot must be one of {DTYPE_CHOICES}, got ''",
    ),
    # results must be tensors that can exist: rank at most 64, at most 2**63 - 1 bytes
    (
        "expand_dims",
        [T(2)],
        {"axis": 0, "num_newaxis": 99999999999999999999},
        "expand_dims: num_newaxis 99999999999999999999 is above the maximum rank 64",
    ),
    (
        "expand_dims",
        [T(2)],
        {"axis": 0, "num_newaxis": 10**8},
        "expand_dims: num_newaxis 100000000 is above the maximum rank 64",
    ),
    (
        "expand_dims",
        [T(*[2] * 60)],
        {"axis": 0, "num_newaxis": 5},
        "expand_dims: the result would have rank 65, above the maximum rank 64",
    ),
    (
        "tile",
        [T(3)],
        {"reps": [1] * 65},
        "tile: reps has 65 values, above the maximum rank 64",
    ),
    (
        "tile",
        [T(3)],
        {"reps": [10**30]},
        "tile: the result shape (3000000000000000000000000000000,) of float32 is too big "
        "(more than 2**63 - 1 bytes)",
    ),
    (
        "tile",
        [T(2, 3)],
        {"reps": [2**40, 2**40]},
        "tile: the result shape (2199023255552, 3298534883328) of float32 is too big "
        "(more than 2**63 - 1 bytes)",
    ),
    (
        "repeat",
        [T(3)],
        {"repeats": 2**63, "axis": 0},
        "repeat: repeats must be at most 2**63 - 1, got 9223372036854775808",
    ),
    (
        "repeat",
        [T(4, dtype="int8")],
        {"repeats": 2**62, "axis": 0},
        "repeat: the result shape (18446744073709551616,) of int8 is too big "
        "(more than 2**63 - 1 bytes)",
    ),
    (
        "one_hot",
        [I(3), T(), T()],
        {"depth": 2**62},
        "one_hot: the result shape (3, 4611686018427387904) of float32 is too big "
        "(more than 2**63 - 1 bytes)",
    ),
    (
        "one_hot",
        [I(*[1] * 64), T(), T()],
        {"depth": 2},
        "one_hot: the result would have rank 65, above the maximum rank 64",
    ),
    (
        "broadcast_to",
        [T(1)],
        {"shape": [1] * 65},
        "broadcast_to: the result would have rank 65, above the maximum rank 64",
    ),
    (
        "reshape",
        [T(1)],
        {"newshape": [1] * 65},
        "reshape: the result would have rank 65, above the maximum rank 64",
    ),
    (
        "take",
        [T(*[1] * 40), I(*[1] * 30)],
        {"axis": 0},
        "take: the result would have rank 69, above the maximum rank 64",
    ),
    (
        "stack",
        [Tup(T(*[1] * 64), T(*[1] * 64))],
        {"axis": 0},
        "stack: the result would have rank 65, above the maximum rank 64",
    ),
]


@pytest.mark.parametrize(("op", "args", "attrs", "message"), ERRORS)
def test_error_message(op: str, args: list[Type], attrs: dict[str, object], message: str) -> None:
    assert error(op, args, attrs) == message


LIMIT_CASES: list[tuple[str, list[np.ndarray], dict[str, object]]] = [
    # the largest rank numpy has
    ("expand_dims", [np.zeros((2,) * 4, "float32")], {"axis": 0, "num_newaxis": 60}),
    ("tile", [np.zeros(3, "int8")], {"reps": [1] * 64}),
    ("reshape", [np.zeros(1, "float32")], {"newshape": [1] * 64}),
    (
        "one_hot",
        [np.zeros((1,) * 63, "int32"), np.ones((), "float32"), np.zeros((), "float32")],
        {"depth": 2},
    ),
    # dimensions too big for memory are fine next to a zero (numpy leaves zeros out)
    ("repeat", [np.zeros(0, "float32")], {"repeats": 2**63 - 1, "axis": 0}),
    ("tile", [np.zeros((0, 1), "int8")], {"reps": [3, 2**62]}),
    (
        "one_hot",
        [np.zeros(0, "int32"), np.ones((), "int8"), np.zeros((), "int8")],
        {"depth": 2**62, "dtype": "int8"},
    ),
]


@pytest.mark.parametrize(("op", "arrays", "attrs"), LIMIT_CASES)
def test_results_at_the_limits_agree_with_the_references(
    op: str, arrays: list[np.ndarray], attrs: dict[str, object]
) -> None:
    inferred = infer_call_type(op, [type_of(a) for a in arrays], attrs)
    assert inferred == type_of(run(op, arrays, attrs))


def test_one_hot_takes_every_dtype() -> None:
    indices, on, off = np.array([0, 2, 5], "int32"), np.ones((), "float32"), np.zeros((), "float32")
    for dtype in RELAY_DTYPES:
        attrs = {"depth": 3, "dtype": dtype}
        inferred = infer_call_type("one_hot", [type_of(indices), T(), T()], attrs)
        assert (
            inferred
            == TensorType((3, 3), dtype)
            == type_of(run("one_hot", [indices, on, off], attrs))
        )


def test_bad_dtype_attribute_through_infer_type() -> None:
    from relay.ir import Call, Function, Op, Var, const
    from relay.ir.attrs import Attrs

    i = Var("i", I(3))
    call = Call(Op("one_hot"), (i, const(1.0), const(0.0)), Attrs(depth=2, dtype="foo"))
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(Function((i,), call))
    assert info.value.message == (
        f"attribute dtype of one_hot must be one of {DTYPE_CHOICES}, got 'foo'"
    )


def test_every_operator_is_covered_by_the_tables() -> None:
    assert {op for op, *_ in RESULTS} == set(OPS)
    assert {op for op, *_ in ERRORS} == set(OPS)


# ---- programs in the text format ----------------------------------------------------------------


TEXT: list[tuple[str, str]] = [
    (
        "fn (%x: Tensor[(n, 784), float32]) { reshape(%x, newshape=[-1, 28, 28]) }",
        "fn [n: Shape](Tensor[(n, 784), float32]) -> Tensor[(n, 28, 28), float32]",
    ),
    (
        "fn (%x: Tensor[(n, 3), float32], %y: Tensor[(m, 3), float32]) "
        "{ concatenate((%x, %y), axis=0) }",
        "fn [n: Shape, m: Shape](Tensor[(n, 3), float32], Tensor[(m, 3), float32]) "
        "-> Tensor[(m + n, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(n, 7), float32]) { %0 = split(%x, indices_or_sections=[2, 5], axis=1); "
        "%0.1 }",
        "fn [n: Shape](Tensor[(n, 7), float32]) -> Tensor[(n, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(n, 32, 8, 8), float32]) "
        '{ layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c") }',
        "fn [n: Shape](Tensor[(n, 32, 8, 8), float32]) -> Tensor[(n, 2, 8, 8, 16), float32]",
    ),
    (
        "fn (%x: Tensor[(n, 10), float32]) "
        "{ strided_slice(%x, begin=[0, 2], end=[2147483647, 6], strides=[1, 2]) }",
        "fn [n: Shape](Tensor[(n, 10), float32]) -> Tensor[(n, 2), float32]",
    ),
    (
        "fn (%e: Tensor[(1000, 64), float32], %i: Tensor[(n, 5), int64]) { take(%e, %i, axis=0) }",
        "fn [n: Shape](Tensor[(1000, 64), float32], Tensor[(n, 5), int64]) "
        "-> Tensor[(n, 5, 64), float32]",
    ),
    (
        "fn (%i: Tensor[(n,), int32]) { one_hot(%i, 1f, 0f, depth=10) }",
        "fn [n: Shape](Tensor[(n,), int32]) -> Tensor[(n, 10), float32]",
    ),
    (
        'fn (%x: Tensor[(n, 3), float32]) { shape_of(%x, dtype="int64") }',
        "fn [n: Shape](Tensor[(n, 3), float32]) -> Tensor[(2,), int64]",
    ),
    (
        "fn (%x: Tensor[(n, 1, 3), float32]) "
        "{ transpose(expand_dims(squeeze(%x, axis=[1]), axis=0), axes=[2, 1, 0]) }",
        "fn [n: Shape](Tensor[(n, 1, 3), float32]) -> Tensor[(3, n, 1), float32]",
    ),
    (
        "fn (%x: Tensor[(n, 3), float32]) { stack((%x, %x), axis=1) }",
        "fn [n: Shape](Tensor[(n, 3), float32]) -> Tensor[(n, 2, 3), float32]",
    ),
    # the result's type reaches reverse's argument
    (
        "fn (%x) -> Tensor[(2, 3), float32] { reverse(%x, axis=1) }",
        "fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32]",
    ),
]


@pytest.mark.parametrize(("src", "expected"), TEXT)
def test_text_program_type(src: str, expected: str) -> None:
    assert checked(src) == expected


def test_relation_error_carries_the_call_span() -> None:
    src = "fn (%x: Tensor[(2, 3), float32]) { reshape(%x, newshape=[4, 2]) }"
    err = checked_error(src)
    assert err.message == (
        "reshape: cannot reshape Tensor[(2, 3), float32] (6 elements) to (4, 2) (8 elements)"
    )
    assert err.span is not None
    assert src[err.span.column - 1 : err.span.end_column - 1] == "reshape(%x, newshape=[4, 2])"


def test_reverse_checks_the_axis_against_the_result_type() -> None:
    err = checked_error("fn (%x) -> Tensor[(2, 3), float32] { reverse(%x, axis=2) }")
    assert err.message == "reverse: axis 2 is out of range for a rank-2 tensor"


def test_independent_errors_are_all_reported() -> None:
    err = checked_error(
        "fn (%x: Tensor[(2, 3), float32]) { (reshape(%x, newshape=[5]), squeeze(%x, axis=[0])) }"
    )
    text = str(err)
    assert (
        "reshape: cannot reshape Tensor[(2, 3), float32] (6 elements) to (5,) (5 elements)" in text
    )
    assert "squeeze: cannot squeeze axis 0 of Tensor[(2, 3), float32]: its size is 2, not 1" in text


BINDINGS: list[tuple[str, str]] = [
    # the element count determines the unknown
    (
        "fn (%x: Tensor[(_, 3), float32]) { reshape(%x, newshape=[6]) }",
        "fn (Tensor[(2, 3), float32]) -> Tensor[(6,), float32]",
    ),
    (
        "fn (%x: Tensor[(4, _), float32], %y: Tensor[(2, 6), float32]) { reshape_like(%x, %y) }",
        "fn (Tensor[(4, 3), float32], Tensor[(2, 6), float32]) -> Tensor[(2, 6), float32]",
    ),
    # a squeezed axis is 1
    (
        "fn (%x: Tensor[(_, 3), float32]) { squeeze(%x, axis=[0]) }",
        "fn (Tensor[(1, 3), float32]) -> Tensor[(3,), float32]",
    ),
    # dims that must agree
    (
        "fn (%x: Tensor[(_, 3), float32], %y: Tensor[(2, 5), float32]) "
        "{ concatenate((%x, %y), axis=1) }",
        "fn (Tensor[(2, 3), float32], Tensor[(2, 5), float32]) -> Tensor[(2, 8), float32]",
    ),
    (
        "fn (%x: Tensor[(_, _), float32], %y: Tensor[(2, 5), float32]) { stack((%x, %y)) }",
        "fn (Tensor[(2, 5), float32], Tensor[(2, 5), float32]) -> Tensor[(2, 2, 5), float32]",
    ),
    (
        "fn (%x: Tensor[(4, 5), float32], %i: Tensor[(_, 2), int32]) "
        "{ take(%x, %i, axis=1, batch_dims=1) }",
        "fn (Tensor[(4, 5), float32], Tensor[(4, 2), int32]) -> Tensor[(4, 2), float32]",
    ),
]


@pytest.mark.parametrize(("src", "expected"), BINDINGS)
def test_unknowns_are_bound_by_the_relation(src: str, expected: str) -> None:
    assert checked(src) == expected


def test_unknown_dtypes_are_unified_or_waited_for() -> None:
    unknown = IncompleteType(Kind.BASE_TYPE)
    joined = Tup(T(2), TensorType((3,), unknown))
    assert infer_call_type("concatenate", [joined], {}) == T(5)
    # take cannot check indices of an unknown dtype yet; the result is known all the same
    assert infer_call_type("take", [T(5), TensorType((3,), unknown)], {}) == T(3)


# ---- properties: the relations agree with the references ----------------------------------------


def run(op: str, arrays: Sequence[TypingAny], attrs: dict[str, object]) -> TypingAny:
    opdef = get_op(op)
    assert opdef.reference is not None
    return opdef.reference(*arrays, **opdef.validate_attrs(attrs))


def type_of(value: TypingAny) -> Type:
    if isinstance(value, tuple):
        return TupleType(tuple(type_of(v) for v in value))
    value = np.asarray(value)
    return TensorType(value.shape, str(value.dtype))


Case = tuple[str, list[TypingAny], dict[str, object]]
Draw = Callable[[st.SearchStrategy[TypingAny]], TypingAny]

DTYPES = st.sampled_from(["float32", "int32", "int8", "bool"])


def small_shape(draw: Draw, min_rank: int = 0, max_rank: int = 4, lo: int = 0) -> list[int]:
    rank = draw(st.integers(min_rank, max_rank))
    return [draw(st.integers(lo, 4)) for _ in range(rank)]


def zeros(shape: Sequence[int], dtype: str = "float32") -> np.ndarray:
    return np.zeros(tuple(shape), dtype=dtype)


def axis_for(draw: Draw, rank: int, slack: int = 1) -> int:
    axis: int = draw(st.integers(-rank - slack, rank - 1 + slack))
    return axis


@st.composite
def reshape_cases(draw: Draw) -> Case:
    shape = small_shape(draw, lo=1 if draw(st.booleans()) else 0)
    size = int(np.prod(shape))
    tokens: list[int] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["dim", "dim", "0", "-1", "-2", "-3", "-4"]))
        if kind == "dim":
            divisors = [k for k in range(1, size + 1) if size % k == 0] or [1, 2]
            tokens.append(draw(st.sampled_from(divisors)))
        elif kind == "-4":
            a = draw(st.sampled_from([-1, 1, 2, 3]))
            tokens.extend([-4, a, draw(st.sampled_from([1, 2] if a == -1 else [-1, 1, 2]))])
        else:
            tokens.append(int(kind))
    attrs: dict[str, object] = {"newshape": tokens}
    if draw(st.integers(0, 4)) == 0:
        attrs["allowzero"] = True
    return "reshape", [zeros(shape, draw(DTYPES))], attrs


@st.composite
def reshape_like_cases(draw: Draw) -> Case:
    a, b = small_shape(draw, lo=1), small_shape(draw, lo=1)
    attrs: dict[str, object] = {}
    for name, rank in (("lhs_begin", len(a)), ("lhs_end", len(a))):
        if draw(st.booleans()):
            attrs[name] = draw(st.integers(-rank - 1, rank + 1))
    for name, rank in (("rhs_begin", len(b)), ("rhs_end", len(b))):
        if draw(st.booleans()):
            attrs[name] = draw(st.integers(-rank - 1, rank + 1))
    if draw(st.booleans()):  # data shaped like the whole of shape_like
        a = list(draw(st.permutations(b)))
        attrs = {}
    return "reshape_like", [zeros(a), zeros(b, "int8")], attrs


@st.composite
def transpose_cases(draw: Draw) -> Case:
    shape = small_shape(draw)
    choice = draw(st.sampled_from(["none", "perm", "random"]))
    axes: list[int] | None = None
    if choice == "perm":
        axes = [
            a - len(shape) if draw(st.booleans()) else a
            for a in draw(st.permutations(range(len(shape))))
        ]
    elif choice == "random":
        axes = [axis_for(draw, len(shape)) for _ in range(draw(st.integers(0, 4)))]
    return "transpose", [zeros(shape)], {"axes": axes}


@st.composite
def expand_dims_cases(draw: Draw) -> Case:
    shape = small_shape(draw)
    attrs = {"axis": axis_for(draw, len(shape) + 1), "num_newaxis": draw(st.integers(0, 2))}
    return "expand_dims", [zeros(shape)], attrs


@st.composite
def squeeze_cases(draw: Draw) -> Case:
    shape = [draw(st.sampled_from([1, 1, 2, 0])) for _ in range(draw(st.integers(0, 4)))]
    axis = None
    if draw(st.booleans()):
        axis = [axis_for(draw, len(shape)) for _ in range(draw(st.integers(0, 3)))]
    return "squeeze", [zeros(shape)], {"axis": axis}


def broadcast_target(draw: Draw, src: list[int]) -> list[int]:
    lead = small_shape(draw, max_rank=2)
    out = lead + [draw(st.sampled_from([d, d, 3])) if d == 1 else d for d in src]
    if draw(st.integers(0, 2)) == 0 and src:  # perhaps break it (where src has a dim)
        k = draw(st.integers(len(lead), len(out) - 1))
        out[k] = draw(st.integers(0, 5))
    if draw(st.integers(0, 5)) == 0:  # or make it too short
        out = out[len(lead) + 1 :]
    return out


@st.composite
def broadcast_cases(draw: Draw) -> Case:
    src = [draw(st.sampled_from([1, 2, 3])) for _ in range(draw(st.integers(0, 3)))]
    dst = broadcast_target(draw, src)
    op = draw(st.sampled_from(["broadcast_to", "broadcast_to_like", "collapse_sum_like"]))
    if op == "broadcast_to":
        return op, [zeros(src)], {"shape": dst}
    if op == "broadcast_to_like":
        return op, [zeros(src, "int32"), zeros(dst)], {}
    return op, [zeros(dst, "int32"), zeros(src)], {}


@st.composite
def join_cases(draw: Draw) -> Case:
    op = draw(st.sampled_from(["concatenate", "stack"]))
    shape = small_shape(draw, min_rank=0, max_rank=3)
    arrays = []
    dtype = draw(DTYPES)
    for _ in range(draw(st.integers(1, 3))):
        s = list(shape)
        if op == "concatenate" and s and draw(st.booleans()):
            s[draw(st.integers(0, len(s) - 1))] = draw(st.integers(0, 3))
        if draw(st.integers(0, 5)) == 0:
            s = small_shape(draw, max_rank=3)
        arrays.append(zeros(s, dtype if draw(st.integers(0, 5)) else "float16"))
    return op, [tuple(arrays)], {"axis": axis_for(draw, len(shape) + (op == "stack"))}


@st.composite
def split_cases(draw: Draw) -> Case:
    shape = small_shape(draw, min_rank=1, max_rank=3)
    ax = axis_for(draw, len(shape), slack=0)
    ios: object
    if draw(st.booleans()):
        ios = draw(st.integers(1, 4))
    else:
        ios = sorted(set(draw(st.lists(st.integers(1, 5), max_size=3))))
    return "split", [zeros(shape)], {"indices_or_sections": ios, "axis": ax}


@st.composite
def strided_slice_cases(draw: Draw) -> Case:
    shape = small_shape(draw, min_rank=1, max_rank=3)
    rank = len(shape)
    k = draw(st.integers(0, rank))
    index = st.integers(-6, 6) | st.sampled_from([BIG, -BIG - 1])
    attrs: dict[str, object] = {
        "begin": [draw(index) for _ in range(k)],
        "end": [
            draw(index) for _ in range(k if draw(st.integers(0, 3)) else draw(st.integers(0, k)))
        ],
    }
    if draw(st.booleans()):
        attrs["strides"] = [draw(st.sampled_from([1, 2, 3, -1, -2])) for _ in range(k)]
    if draw(st.booleans()):
        axes = draw(st.permutations(range(rank)))[:k]
        attrs["axes"] = [a - rank if draw(st.booleans()) else a for a in axes]
        attrs["end"] = [draw(index) for _ in range(k)]
    if draw(st.integers(0, 3)) == 0:
        attrs["slice_mode"] = "size"
    return "strided_slice", [zeros(shape)], attrs


@st.composite
def take_cases(draw: Draw) -> Case:
    data = small_shape(draw, max_rank=3)
    axis = None
    if data and draw(st.integers(0, 3)):
        axis = axis_for(draw, len(data), slack=1 if draw(st.integers(0, 5)) == 0 else 0)
    batch_dims = draw(st.sampled_from([0, 0, 1, 2, -1]))
    idx = small_shape(draw, max_rank=2)
    if draw(st.booleans()):  # indices sharing the batch dimensions
        idx = data[: max(0, batch_dims)] + idx
    attrs: dict[str, object] = {
        "axis": axis,
        "batch_dims": batch_dims,
        "mode": draw(st.sampled_from(["clip", "wrap", "fast"])),
    }
    dtype = draw(st.sampled_from(["int32", "int64", "uint8", "float32"]))
    return "take", [zeros(data), zeros(idx, dtype)], attrs


@st.composite
def misc_cases(draw: Draw) -> Case:
    op = draw(st.sampled_from(["repeat", "tile", "reverse", "shape_of", "one_hot"]))
    shape = small_shape(draw, max_rank=3)
    x = zeros(shape, draw(DTYPES))
    if op == "repeat":
        return op, [x], {"repeats": draw(st.integers(1, 3)), "axis": axis_for(draw, len(shape))}
    if op == "tile":
        return op, [x], {"reps": [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 4)))]}
    if op == "reverse":
        return op, [x], {"axis": axis_for(draw, len(shape))}
    if op == "shape_of":
        return op, [x], {"dtype": draw(st.sampled_from(["int32", "int64"]))}
    indices = zeros(shape, draw(st.sampled_from(["int32", "int64", "uint8", "int32", "float32"])))
    on = zeros([] if draw(st.integers(0, 5)) else [1], "float32")
    off = zeros([], draw(st.sampled_from(["float32", "int32"])))
    attrs = {
        "depth": draw(st.integers(1, 3)),
        "axis": axis_for(draw, len(shape) + 1),
        "dtype": draw(st.sampled_from(["float32", "int32"])),
    }
    return op, [indices, on, off], attrs


LAYOUTS: list[tuple[str, list[int]]] = [
    ("NCHW", [2, 8, 3, 4]),
    ("NHWC", [2, 3, 4, 8]),
    ("NCHW4c", [2, 2, 3, 4, 4]),
    ("NCHW2c", [2, 4, 3, 4, 2]),
    ("NHWC8c", [2, 3, 4, 1, 8]),
    ("CHWN", [8, 3, 4, 2]),
]


@st.composite
def layout_cases(draw: Draw) -> Case:
    src, shape = draw(st.sampled_from(LAYOUTS))
    dst, _ = draw(st.sampled_from(LAYOUTS))
    if draw(st.integers(0, 3)) == 0:
        shape = list(shape)
        shape[draw(st.integers(0, len(shape) - 1))] = draw(st.integers(1, 6))
    if draw(st.integers(0, 7)) == 0:
        shape = shape[:-1]
    attrs = {"src_layout": src, "dst_layout": dst}
    return "layout_transform", [zeros(shape)], attrs


ALL_CASES = st.one_of(
    reshape_cases(),
    reshape_like_cases(),
    transpose_cases(),
    expand_dims_cases(),
    squeeze_cases(),
    broadcast_cases(),
    join_cases(),
    split_cases(),
    strided_slice_cases(),
    take_cases(),
    misc_cases(),
    layout_cases(),
)


def agree(op: str, arrays: list[TypingAny], attrs: dict[str, object]) -> Type | None:
    """The relation accepts the arrays' types iff the reference runs, with its output's type;
    the type (None when the reference rejects the call)."""
    types = [type_of(a) for a in arrays]
    try:
        out = run(op, arrays, attrs)
    except ValueError:  # AttrValidationError included
        with pytest.raises(TypeCheckError):
            infer_call_type(op, types, attrs)
        return None
    expected = type_of(out)
    assert infer_call_type(op, types, attrs) == expected
    return expected


@settings(max_examples=600, deadline=None)
@given(ALL_CASES)
def test_relations_agree_with_the_references(case: Case) -> None:
    agree(*case)


def symbolic(t: Type, names: dict[int, TypeVar]) -> Type:
    """``t`` with every dimension above 1 replaced by a shape variable per size."""
    if isinstance(t, TupleType):
        return TupleType(tuple(symbolic(f, names) for f in t.fields))
    assert isinstance(t, TensorType)
    dims = tuple(
        names.setdefault(x, TypeVar(f"n{x}", Kind.SHAPE)) if isinstance(x, int) and x > 1 else x
        for x in t.shape
    )
    return TensorType(dims, t.dtype)


def instantiate(t: Type, values: dict[TypeVar, int], like: Type) -> Type:
    """``t`` with its shape variables replaced by their values (and ``?`` by ``like``'s dims)."""
    if isinstance(t, TupleType):
        assert isinstance(like, TupleType) and len(like.fields) == len(t.fields)
        fields = zip(t.fields, like.fields, strict=True)
        return TupleType(tuple(instantiate(f, values, g) for f, g in fields))
    assert isinstance(t, TensorType) and isinstance(like, TensorType)
    assert len(t.shape) == len(like.shape), (t, like)

    def value(v: dim.DimVar) -> Dim:
        assert isinstance(v, TypeVar)
        return values[v]

    dims = tuple(
        y if isinstance(x, _AnyDim) else dim.substitute(x, value)
        for x, y in zip(t.shape, like.shape, strict=True)
    )
    return TensorType(dims, t.dtype)


@settings(max_examples=400, deadline=None)
@given(ALL_CASES)
def test_symbolic_dims_instantiate_to_the_concrete_result(case: Case) -> None:
    """A valid call with its sizes made shape variables is accepted, and its result
    type with the variables replaced by the sizes is the concrete result type."""
    op, arrays, attrs = case
    try:
        concrete = infer_call_type(op, [type_of(a) for a in arrays], attrs)
    except TypeCheckError:
        return
    names: dict[int, TypeVar] = {}
    types = [symbolic(type_of(a), names) for a in arrays]
    if op == "squeeze" and attrs["axis"] is None and names:
        with pytest.raises(TypeCheckError, match="cannot tell whether dimension"):
            infer_call_type(op, types, attrs)  # the rank would depend on the sizes
        return
    result = infer_call_type(op, types, attrs)
    values = {v: size for size, v in names.items()}
    assert instantiate(result, values, concrete) == concrete


@settings(max_examples=100, deadline=None)
@given(ALL_CASES)
def test_any_dims_are_accepted_where_the_concrete_call_is(case: Case) -> None:
    """With every dimension ``?`` a valid call still type-checks, with the same rank."""
    op, arrays, attrs = case
    try:
        concrete = infer_call_type(op, [type_of(a) for a in arrays], attrs)
    except TypeCheckError:
        return

    def anyfy(t: Type) -> Type:
        if isinstance(t, TupleType):
            return TupleType(tuple(anyfy(f) for f in t.fields))
        assert isinstance(t, TensorType)
        return TensorType(tuple(Any for _ in t.shape), t.dtype)

    if op == "squeeze" and attrs["axis"] is None:
        return  # which dims are 1 is known only at run time: the rank differs
    result = infer_call_type(op, [anyfy(type_of(a)) for a in arrays], attrs)
    assert instantiate(result, {}, concrete) == concrete


def test_reshape_dims_is_shared_with_the_reference() -> None:
    assert transform_ops.infer_reshape((2, 3, 4), [-4, 1, 2, -3]) == (1, 2, 12)
    assert transform_ops.reshape_dims((n, 784), [-1, 28, 28]) == (n, 28, 28)
    assert transform_ops.infer_reshape((n, 3), [0, 4]) == (n, 4)
    assert transform_ops.layout_transform_shape((n, c, h, w), "NCHW", "NHWC") == (n, h, w, c)
    assert transform_ops.split_extents(dim.mul(n, 3), 3, 0) == [n, n, n]
    assert transform_ops.collapse_sum_axes((n, 3, 4), (3, 1)) == (0, 2)
