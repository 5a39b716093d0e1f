"""Type relations of the reductions (relay/op/reduce.py).

Tables of argument types and attributes -> the result type (concrete, symbolic and ``Any``
dimensions, every spelling of ``axis``, ``keepdims`` and ``exclude``) or the exact error
message; calls in the text format, with the error's span. Hypothesis properties: on random
concrete inputs a relation accepts exactly what the numpy reference runs and gives the type of
the reference's output, and with some dimensions made symbolic the result is the concrete one
with the same dimensions symbolic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any as TypingAny

import numpy as np
import pytest
from hypothesis import given, strategies as st

import relay
from relay.errors import TypeCheckError
from relay.ir.types import Any, IncompleteType, Kind, TensorType, TupleType, Type, TypeVar
from relay.op import get_op
from relay.typecheck import infer_call_type
from tests.type_helpers import T, checked, error, infer

n = TypeVar("n", Kind.SHAPE)
m = TypeVar("m", Kind.SHAPE)
d = TypeVar("d", Kind.BASE_TYPE)

REDUCE_OPS = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "variance", "logsumexp"]
ONE_INPUT = [op for op in REDUCE_OPS if op != "variance"]
KEEP_DTYPE = ["sum", "mean", "max", "min", "prod", "logsumexp"]


def test_every_reduction_has_a_relation_documented_in_one_line() -> None:
    for name in REDUCE_OPS:
        rel = get_op(name).type_relation
        assert rel is not None, name
        doc = rel.__doc__
        assert doc is not None and "\n" not in doc and doc.endswith("."), (name, doc)
        assert doc.startswith(("Tensor[s, d] -> Tensor[", "(Tensor[s, d], mean")), doc
        assert doc.count("->") == 1, doc
    assert get_op("variance").type_relation.__doc__ == (
        "(Tensor[s, d], mean Tensor[m, d]) -> Tensor[s without the reduced axes (1 there if "
        "keepdims), d] for numeric d, rank >= 1, m of the same rank broadcasting to s."
    )


# ---- result types -------------------------------------------------------------------------------

RESULTS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # axis spellings: None (all), an int, a list, negative, empty (all)
    ("sum", [T(2, 3, 4)], {}, "float32"),
    ("sum", [T(2, 3, 4)], {"axis": None}, "float32"),
    ("sum", [T(2, 3, 4)], {"axis": 1}, "Tensor[(2, 4), float32]"),
    ("sum", [T(2, 3, 4)], {"axis": [1]}, "Tensor[(2, 4), float32]"),
    ("sum", [T(2, 3, 4)], {"axis": -1}, "Tensor[(2, 3), float32]"),
    ("sum", [T(2, 3, 4)], {"axis": [2, 0]}, "Tensor[(3,), float32]"),
    ("sum", [T(2, 3, 4)], {"axis": [-3, -1]}, "Tensor[(3,), float32]"),
    ("sum", [T(2, 3, 4)], {"axis": []}, "float32"),
    ("sum", [T(2, 3, 4)], {"axis": [0, 1, 2]}, "float32"),
    # keepdims puts 1 at the reduced axes
    ("sum", [T(2, 3, 4)], {"axis": 1, "keepdims": True}, "Tensor[(2, 1, 4), float32]"),
    ("sum", [T(2, 3, 4)], {"keepdims": True}, "Tensor[(1, 1, 1), float32]"),
    ("sum", [T(2, 3, 4)], {"axis": [0, 2], "keepdims": True}, "Tensor[(1, 3, 1), float32]"),
    # exclude reduces the other axes; with axis None or empty it reduces all of them
    ("sum", [T(2, 3, 4)], {"axis": 1, "exclude": True}, "Tensor[(3,), float32]"),
    (
        "sum",
        [T(2, 3, 4)],
        {"axis": [0, -1], "exclude": True, "keepdims": True},
        "Tensor[(2, 1, 4), float32]",
    ),
    ("sum", [T(2, 3, 4)], {"exclude": True}, "float32"),
    ("sum", [T(2, 3, 4)], {"axis": [], "exclude": True}, "float32"),
    # nothing left to reduce: the data's type
    ("sum", [T(2, 3)], {"axis": [0, 1], "exclude": True}, "Tensor[(2, 3), float32]"),
    (
        "sum",
        [T(2, 3)],
        {"axis": [1, 0], "exclude": True, "keepdims": True},
        "Tensor[(2, 3), float32]",
    ),
    ("sum", [T()], {}, "float32"),
    ("sum", [T()], {"keepdims": True}, "float32"),
    ("max", [T(dtype="int8")], {"axis": []}, "int8"),
    # dtypes are kept, bool and integers included
    ("sum", [T(2, 3, dtype="int32")], {"axis": 0}, "Tensor[(3,), int32]"),
    ("sum", [T(2, 3, dtype="bool")], {"axis": 0}, "Tensor[(3,), bool]"),
    ("prod", [T(2, 3, dtype="uint8")], {"axis": 1}, "Tensor[(2,), uint8]"),
    ("max", [T(2, 3, dtype="float16")], {"axis": 1}, "Tensor[(2,), float16]"),
    ("min", [T(2, 3, dtype="bool")], {"axis": 1, "keepdims": True}, "Tensor[(2, 1), bool]"),
    ("mean", [T(2, 3, dtype="int64")], {"axis": 1}, "Tensor[(2,), int64]"),
    ("mean", [T(2, 3, dtype="float64")], {}, "float64"),
    ("logsumexp", [T(2, 3, dtype="float16")], {"axis": 1}, "Tensor[(2,), float16]"),
    ("logsumexp", [T(2, 3, dtype="bfloat16")], {"axis": 0}, "Tensor[(3,), bfloat16]"),
    ("logsumexp", [T(2, 3)], {"axis": 1, "keepdims": True}, "Tensor[(2, 1), float32]"),
    # a dtype variable passes through (checks wait for a concrete dtype)
    ("sum", [TensorType((n, 3), d)], {"axis": 1}, "Tensor[(n,), d]"),
    # argmax/argmin give int32 whatever the data's dtype
    ("argmax", [T(2, 3)], {"axis": 1}, "Tensor[(2,), int32]"),
    ("argmin", [T(2, 3, dtype="int64")], {"axis": 0}, "Tensor[(3,), int32]"),
    ("argmax", [T(2, 3, dtype="bool")], {}, "int32"),
    ("argmax", [T(2, 3)], {"axis": -1, "keepdims": True}, "Tensor[(2, 1), int32]"),
    ("argmin", [T(2, 3, 4)], {"axis": [0, 2]}, "Tensor[(3,), int32]"),
    ("argmin", [T(2, 3, 4)], {"axis": 1, "exclude": True}, "Tensor[(3,), int32]"),
    ("argmax", [T(2, 3)], {"axis": 1, "select_last_index": True}, "Tensor[(2,), int32]"),
    ("argmax", [TensorType((n, 3), d)], {"axis": 1}, "Tensor[(n,), int32]"),
    # nothing to reduce: int32 zeros of the data's shape
    ("argmax", [T(2, 3)], {"axis": [0, 1], "exclude": True}, "Tensor[(2, 3), int32]"),
    # variance: the data's reduced shape and dtype
    ("variance", [T(2, 3), T(1, 1)], {}, "float32"),
    ("variance", [T(2, 3), T(2, 1)], {"axis": 1}, "Tensor[(2,), float32]"),
    ("variance", [T(2, 3), T(2, 3)], {"axis": 1, "keepdims": True}, "Tensor[(2, 1), float32]"),
    ("variance", [T(2, 3), T(1, 3)], {"axis": 1, "exclude": True}, "Tensor[(3,), float32]"),
    ("variance", [T(2, 3), T(1, 1)], {"unbiased": True}, "float32"),
    (
        "variance",
        [T(2, 3, dtype="int32"), T(2, 1, dtype="int32")],
        {"axis": 1},
        "Tensor[(2,), int32]",
    ),
    ("variance", [T(2, 3), T(2, 3)], {"axis": [0, 1], "exclude": True}, "Tensor[(2, 3), float32]"),
    # symbolic dims pass through where kept and disappear (or become 1) where reduced
    ("sum", [T(n, 784)], {"axis": 1}, "Tensor[(n,), float32]"),
    ("sum", [T(n, 784)], {"axis": 0}, "Tensor[(784,), float32]"),
    ("mean", [T(n, m, 3)], {"axis": [1], "keepdims": True}, "Tensor[(n, 1, 3), float32]"),
    ("max", [T(n, m, 3)], {"axis": 0, "exclude": True}, "Tensor[(n,), float32]"),
    ("prod", [T(n, m)], {}, "float32"),
    ("logsumexp", [T(n, 10)], {"axis": -1, "keepdims": True}, "Tensor[(n, 1), float32]"),
    ("argmin", [T(n, m)], {"axis": 1}, "Tensor[(n,), int32]"),
    ("argmax", [T(2, n)], {"axis": 1}, "Tensor[(2,), int32]"),
    ("variance", [T(n, m), T(n, 1)], {"axis": 1}, "Tensor[(n,), float32]"),
    ("variance", [T(n, m), T(1, 1)], {"axis": 1, "keepdims": True}, "Tensor[(n, 1), float32]"),
    ("mean", [T(n, 0, dtype="int32")], {"axis": 0}, "Tensor[(0,), int32]"),
    ("mean", [T(n, 3, dtype="int32")], {"axis": 0}, "Tensor[(3,), int32]"),
    # Any dims likewise; the checks that need an extent wait for run time
    ("sum", [T(Any, 3)], {"axis": 1}, "Tensor[(?,), float32]"),
    ("sum", [T(Any, 3)], {"axis": 0}, "Tensor[(3,), float32]"),
    ("max", [T(Any, Any)], {"axis": 0, "keepdims": True}, "Tensor[(1, ?), float32]"),
    ("argmax", [T(2, Any)], {"axis": 1}, "Tensor[(2,), int32]"),
    ("argmin", [T(Any, 0)], {"axis": 0}, "Tensor[(0,), int32]"),
    ("mean", [T(Any, 3, dtype="int32")], {"axis": 0}, "Tensor[(3,), int32]"),
    ("variance", [T(Any, 3), T(1, 3)], {"axis": 0}, "Tensor[(3,), float32]"),
    ("variance", [T(Any, 3), T(Any, 1)], {"axis": 1}, "Tensor[(?,), float32]"),
    ("variance", [T(4, 3), T(Any, 1)], {"axis": 1}, "Tensor[(4,), float32]"),
    (
        "variance",
        [T(1, 3, dtype="int32"), T(1, 1, dtype="int32")],
        {"axis": 0},
        "Tensor[(3,), int32]",
    ),
    (
        "variance",
        [T(Any, 3, dtype="int32"), T(1, 1, dtype="int32")],
        {"axis": 0, "unbiased": True},
        "Tensor[(3,), int32]",
    ),
    # integer reductions over no elements that do not divide: fine
    ("sum", [T(2, 0, dtype="int32")], {"axis": 1}, "Tensor[(2,), int32]"),
    ("mean", [T(2, 0)], {"axis": 1}, "Tensor[(2,), float32]"),
    ("variance", [T(2, 1), T(2, 1)], {"axis": 1, "unbiased": True}, "Tensor[(2,), float32]"),
]


@pytest.mark.parametrize(("op", "args", "attrs", "expected"), RESULTS)
def test_result_type(op: str, args: list[Type], attrs: dict[str, object], expected: str) -> None:
    assert infer(op, args, attrs) == expected


def test_results_compare_equal_as_values() -> None:
    assert infer_call_type("sum", [T(n, 784)], {"axis": 1}) == TensorType((n,), "float32")
    assert infer_call_type("argmax", [T(Any, 5)], {"axis": 1}) == TensorType((Any,), "int32")
    out = infer_call_type("variance", [T(n, m), T(n, 1)], {"axis": [1], "keepdims": True})
    assert out == TensorType((n, 1), "float32")


# ---- errors -------------------------------------------------------------------------------------

TUPLE = TupleType((T(2, 3),))

ERRORS: list[tuple[str, list[Type], dict[str, object], str]] = [
    # axes out of range (for the rank) or repeated; the same rule for every reduction
    ("sum", [T(2, 3)], {"axis": 2}, "sum: axis 2 is out of range for a rank-2 tensor"),
    ("sum", [T(2, 3)], {"axis": [0, -3]}, "sum: axis -3 is out of range for a rank-2 tensor"),
    ("sum", [T()], {"axis": 0}, "sum: axis 0 is out of range for a rank-0 tensor"),
    (
        "mean",
        [T(2, 3)],
        {"axis": [5], "exclude": True},
        "mean: axis 5 is out of range for a rank-2 tensor",
    ),
    ("max", [T(n, m)], {"axis": [-3]}, "max: axis -3 is out of range for a rank-2 tensor"),
    ("min", [T(Any)], {"axis": 1}, "min: axis 1 is out of range for a rank-1 tensor"),
    ("prod", [T(2, 3, 4)], {"axis": [3]}, "prod: axis 3 is out of range for a rank-3 tensor"),
    ("logsumexp", [T(2)], {"axis": -2}, "logsumexp: axis -2 is out of range for a rank-1 tensor"),
    ("argmax", [T(2, 3)], {"axis": 2}, "argmax: axis 2 is out of range for a rank-2 tensor"),
    ("argmin", [T(2, 3)], {"axis": -3}, "argmin: axis -3 is out of range for a rank-2 tensor"),
    (
        "variance",
        [T(2, 3), T(1, 1)],
        {"axis": [2]},
        "variance: axis 2 is out of range for a rank-2 tensor",
    ),
    ("sum", [T(2, 3)], {"axis": [1, 1]}, "sum: axes [1, 1] name axis 1 twice for a rank-2 tensor"),
    (
        "sum",
        [T(2, 3, 4)],
        {"axis": [0, 1, -2], "exclude": True},
        "sum: axes [0, 1, -2] name axis 1 twice for a rank-3 tensor",
    ),
    (
        "mean",
        [T(n, 3)],
        {"axis": [-1, 1]},
        "mean: axes [-1, 1] name axis 1 twice for a rank-2 tensor",
    ),
    (
        "max",
        [T(2, 3)],
        {"axis": [0, -2]},
        "max: axes [0, -2] name axis 0 twice for a rank-2 tensor",
    ),
    ("min", [T(2, 3)], {"axis": [0, 0]}, "min: axes [0, 0] name axis 0 twice for a rank-2 tensor"),
    (
        "prod",
        [T(2, 3)],
        {"axis": [1, -1]},
        "prod: axes [1, -1] name axis 1 twice for a rank-2 tensor",
    ),
    (
        "logsumexp",
        [T(2, 3)],
        {"axis": [0, 0]},
        "logsumexp: axes [0, 0] name axis 0 twice for a rank-2 tensor",
    ),
    (
        "argmax",
        [T(2, 3)],
        {"axis": [1, -1]},
        "argmax: axes [1, -1] name axis 1 twice for a rank-2 tensor",
    ),
    (
        "argmin",
        [T(2, 3)],
        {"axis": [0, -2]},
        "argmin: axes [0, -2] name axis 0 twice for a rank-2 tensor",
    ),
    (
        "variance",
        [T(2, 3), T(2, 1)],
        {"axis": [1, 1]},
        "variance: axes [1, 1] name axis 1 twice for a rank-2 tensor",
    ),
    # the data must be a tensor
    ("sum", [TUPLE], {}, "sum: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    ("mean", [TUPLE], {}, "mean: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    ("max", [TUPLE], {}, "max: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    ("min", [TUPLE], {}, "min: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    ("prod", [TUPLE], {}, "prod: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    ("logsumexp", [TUPLE], {}, "logsumexp: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    ("argmax", [TUPLE], {}, "argmax: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    ("argmin", [TUPLE], {}, "argmin: data must be a tensor, got (Tensor[(2, 3), float32],)"),
    (
        "variance",
        [TUPLE, T(1, 1)],
        {},
        "variance: data must be a tensor, got (Tensor[(2, 3), float32],)",
    ),
    (
        "variance",
        [T(2, 3), TUPLE],
        {},
        "variance: mean must be a tensor, got (Tensor[(2, 3), float32],)",
    ),
    # dtypes
    ("mean", [T(2, 3, dtype="bool")], {}, "mean: data must be numeric, got Tensor[(2, 3), bool]"),
    (
        "variance",
        [T(2, dtype="bool"), T(1, dtype="bool")],
        {},
        "variance: data must be numeric, got Tensor[(2,), bool]",
    ),
    (
        "logsumexp",
        [T(2, dtype="int32")],
        {},
        "logsumexp: data must be floating-point, got Tensor[(2,), int32]",
    ),
    (
        "logsumexp",
        [T(n, dtype="bool")],
        {},
        "logsumexp: data must be floating-point, got Tensor[(n,), bool]",
    ),
    (
        "logsumexp",
        [TensorType((3,), d)],
        {},
        "logsumexp: data must be floating-point, got Tensor[(3,), d]",
    ),
    (
        "variance",
        [T(2, 3), T(2, 1, dtype="float64")],
        {"axis": 1},
        "variance: data Tensor[(2, 3), float32] and mean Tensor[(2, 1), float64] differ in dtype",
    ),
    # rank
    ("argmax", [T()], {}, "argmax: data must have rank at least 1, got float32"),
    (
        "argmin",
        [T(dtype="int32")],
        {"axis": []},
        "argmin: data must have rank at least 1, got int32",
    ),
    (
        "variance",
        [T(), T()],
        {},
        "variance: data must have rank at least 1, got float32",
    ),
    (
        "variance",
        [T(2, 3), T(2)],
        {"axis": 1},
        "variance: mean Tensor[(2,), float32] has rank 1 but data Tensor[(2, 3), float32] "
        "has rank 2 (compute the mean with keepdims=True)",
    ),
    # the mean must broadcast to the data
    (
        "variance",
        [T(2, 2), T(3, 1)],
        {},
        "variance: mean Tensor[(3, 1), float32] does not broadcast to data "
        "Tensor[(2, 2), float32] (axis 0: 3 is neither 1 nor 2)",
    ),
    (
        "variance",
        [T(1, 3), T(2, 3)],
        {"axis": 1},
        "variance: mean Tensor[(2, 3), float32] does not broadcast to data "
        "Tensor[(1, 3), float32] (axis 0: 2 is neither 1 nor 1)",
    ),
    (
        "variance",
        [T(n, 3), T(m, 1)],
        {"axis": 1},
        "variance: mean Tensor[(m, 1), float32] does not broadcast to data "
        "Tensor[(n, 3), float32] (axis 0: m is neither 1 nor n)",
    ),
    (
        "variance",
        [T(n, 3), T(4, 1)],
        {"axis": 1},
        "variance: mean Tensor[(4, 1), float32] does not broadcast to data "
        "Tensor[(n, 3), float32] (axis 0: 4 is neither 1 nor n)",
    ),
    # reductions that fail whatever the values: empty arg-reductions, integer division by 0
    (
        "argmax",
        [T(2, 0)],
        {"axis": 1},
        "argmax: the reduction over axes (1,) of Tensor[(2, 0), float32] has no elements",
    ),
    (
        "argmin",
        [T(0, n)],
        {},
        "argmin: the reduction over axes (0, 1) of Tensor[(0, n), float32] has no elements",
    ),
    (
        "argmax",
        [T(65536, 65536)],
        {},
        "argmax: the reduction over axes (0, 1) of Tensor[(65536, 65536), float32] has "
        "4294967296 elements, too many for an int32 index",
    ),
    (
        "mean",
        [T(2, 0, dtype="int32")],
        {"axis": 1},
        "mean: the integer mean over axes (1,) of Tensor[(2, 0), int32] divides by zero "
        "(no elements)",
    ),
    (
        "mean",
        [T(0, n, dtype="uint8")],
        {},
        "mean: the integer mean over axes (0, 1) of Tensor[(0, n), uint8] divides by zero "
        "(no elements)",
    ),
    (
        "variance",
        [T(2, 1, dtype="int32"), T(2, 1, dtype="int32")],
        {"axis": 1, "unbiased": True},
        "variance: the integer variance over axes (1,) of Tensor[(2, 1), int32] divides by "
        "zero (1 element, unbiased=True)",
    ),
    (
        "variance",
        [T(2, 3, dtype="int64"), T(2, 3, dtype="int64")],
        {"axis": [0, 1], "exclude": True, "unbiased": True},
        "variance: the integer variance over axes () of Tensor[(2, 3), int64] divides by "
        "zero (1 element, unbiased=True)",
    ),
    (
        "variance",
        [T(0, 3, dtype="int32"), T(1, 3, dtype="int32")],
        {"axis": 0},
        "variance: the integer variance over axes (0,) of Tensor[(0, 3), int32] divides by "
        "zero (0 elements, unbiased=False)",
    ),
    # attributes are validated before the relation runs
    (
        "sum",
        [T(2, 3)],
        {"axis": 1.5},
        "attribute axis of sum must be an int or a list of ints, got 1.5",
    ),
    ("argmax", [T(2, 3)], {"keepdims": 2}, "attribute keepdims of argmax must be a bool, got 2"),
    ("mean", [T(2, 3)], {"unbiased": True}, "mean has no attribute unbiased"),
    # arity
    ("variance", [T(2, 3)], {}, "variance expects 2 arguments, got 1"),
    ("sum", [T(2, 3), T(2, 3)], {}, "sum expects 1 argument, got 2"),
]


@pytest.mark.parametrize(("op", "args", "attrs", "message"), ERRORS)
def test_error_message(op: str, args: list[Type], attrs: dict[str, object], message: str) -> None:
    assert error(op, args, attrs) == message


def test_every_reduction_is_covered_by_the_tables() -> None:
    assert {op for op, *_ in RESULTS} == set(REDUCE_OPS)
    assert {op for op, *_ in ERRORS} == set(REDUCE_OPS)


def test_the_reference_also_requires_the_mean_to_broadcast_to_the_data() -> None:
    # (1, 3) and (2, 3) broadcast together, but to (2, 3), not to the data's shape
    data, mean = np.ones((1, 3), "float32"), np.zeros((2, 3), "float32")
    with pytest.raises(ValueError, match=r"^variance: the mean of shape \(2, 3\) does not "):
        run("variance", [data, mean], {"axis": 1})
    out = run("variance", [np.ones((2, 3), "float32"), np.zeros((1, 3), "float32")], {"axis": 1})
    assert out.shape == (2,)


def test_unknown_extents_defer_and_dtype_variables_meet_only_any_dtype() -> None:
    # an integer mean over n elements may divide by zero only at run time
    assert infer("mean", [T(n, dtype="int32")], {}) == "int32"
    assert infer("variance", [T(n, dtype="int32"), T(1, dtype="int32")], {"unbiased": True}) == (
        "int32"
    )
    # a dtype variable may stand for bool, so the numeric reductions reject it
    assert error("mean", [TensorType((n, 3), d)], {"axis": 0}) == (
        "mean: data must be numeric, got Tensor[(n, 3), d]"
    )
    assert error("variance", [TensorType((n, 3), d), TensorType((n, 1), d)], {"axis": 1}) == (
        "variance: data must be numeric, got Tensor[(n, 3), d]"
    )
    # sum, max, min and prod take any dtype, a dtype variable included
    assert infer("sum", [TensorType((n, 3), d)], {"axis": 0}) == "Tensor[(3,), d]"


# ---- inference through programs: unknowns, the text format, spans -------------------------------


TEXT: list[tuple[str, str]] = [
    (
        "fn [n: Shape](%x: Tensor[(n, 784), float32]) { sum(%x, axis=[1]) }",
        "fn [n: Shape](Tensor[(n, 784), float32]) -> Tensor[(n,), float32]",
    ),
    (
        "fn [n: Shape](%x: Tensor[(n, 10), float32]) { argmax(%x, axis=-1, keepdims=True) }",
        "fn [n: Shape](Tensor[(n, 10), float32]) -> Tensor[(n, 1), int32]",
    ),
    (
        "fn (%x: Tensor[(?, 3, 4), float16]) { mean(%x, axis=[0], exclude=True) }",
        "fn (Tensor[(?, 3, 4), float16]) -> Tensor[(?,), float16]",
    ),
    # variance with the mean the builder computes (keepdims=True), then a reduction of it
    (
        "fn [n: Shape](%x: Tensor[(n, 8), float32]) { "
        "variance(%x, mean(%x, axis=[1], keepdims=True), axis=[1], unbiased=True) }",
        "fn [n: Shape](Tensor[(n, 8), float32]) -> Tensor[(n,), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 5), float32]) { subtract(%x, logsumexp(%x, axis=[1], keepdims=True)) }",
        "fn (Tensor[(2, 5), float32]) -> Tensor[(2, 5), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 5), int64]) { max(min(prod(%x, axis=0), axis=[]), keepdims=True) }",
        "fn (Tensor[(2, 5), int64]) -> int64",
    ),
]


@pytest.mark.parametrize(("src", "expected"), TEXT)
def test_text_programs(src: str, expected: str) -> None:
    assert checked(src) == expected


def test_the_result_is_inferred_backwards_into_an_unannotated_use() -> None:
    # %y's type comes from sum's result
    src = "fn (%x: Tensor[(3, 4), float32]) { let %y = sum(%x, axis=[0]); add(%y, %y) }"
    assert checked(src) == "fn (Tensor[(3, 4), float32]) -> Tensor[(4,), float32]"


def test_relation_error_carries_the_call_span() -> None:
    src = "fn (%x: Tensor[(2, 3), float32]) { sum(%x, axis=[2]) }"
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(relay.parse_expr(src))
    err = info.value
    assert err.message == "sum: axis 2 is out of range for a rank-2 tensor"
    assert err.span is not None
    assert src[err.span.column - 1 : err.span.end_column - 1] == "sum(%x, axis=[2])"


def test_independent_errors_are_all_reported() -> None:
    src = (
        "fn (%x: Tensor[(2, 3), float32]) "
        "{ (sum(%x, axis=[2]), argmax(%x, axis=[0, 0]), mean(%x, axis=-1)) }"
    )
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(relay.parse_expr(src))
    text = str(info.value)
    assert "sum: axis 2 is out of range for a rank-2 tensor" in text
    assert "argmax: axes [0, 0] name axis 0 twice for a rank-2 tensor" in text
    assert "mean:" not in text


def test_unknown_data_waits() -> None:
    # the relation runs only once the data is known; an unknown stays an inference error
    with pytest.raises(TypeCheckError) as info:
        infer_call_type("sum", [IncompleteType()], {})
    assert info.value.message == "sum: cannot infer the result type from (_)"


# ---- properties ---------------------------------------------------------------------------------

Draw = Callable[[st.SearchStrategy[TypingAny]], TypingAny]
DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"]
Case = tuple[str, list[np.ndarray], dict[str, object]]


def run(op: str, arrays: Sequence[np.ndarray], attrs: dict[str, object]) -> np.ndarray:
    opdef = get_op(op)
    assert opdef.reference is not None
    out: np.ndarray = opdef.reference(*arrays, **opdef.validate_attrs(attrs))
    return out


@st.composite
def reduce_cases(draw: Draw) -> Case:
    """A reduction call on random arrays and attributes, valid or not."""
    op = draw(st.sampled_from(REDUCE_OPS))
    shape = draw(st.lists(st.integers(0, 3), max_size=4))
    dtype = draw(st.sampled_from(DTYPES))
    x = np.ones(shape, dtype=dtype)
    rank = len(shape)
    lo, hi = -rank - 1, rank
    axis = draw(
        st.one_of(
            st.none(),
            st.integers(lo, hi),
            st.lists(st.integers(lo, hi), max_size=rank + 1),
        )
    )
    attrs: dict[str, object] = {
        "axis": axis,
        "keepdims": draw(st.booleans()),
        "exclude": draw(st.booleans()),
    }
    if op in ("argmax", "argmin"):
        attrs["select_last_index"] = draw(st.booleans())
    arrays = [x]
    if op == "variance":
        attrs["unbiased"] = draw(st.booleans())
        mean_shape = [draw(st.sampled_from([1, s, s + 1])) for s in shape]
        if draw(st.integers(0, 9)) == 0:
            mean_shape = mean_shape[1:]
        mean_dtype = dtype if draw(st.integers(0, 9)) else draw(st.sampled_from(DTYPES))
        arrays.append(np.zeros(mean_shape, dtype=mean_dtype))
    return op, arrays, attrs


@given(reduce_cases())
def test_relations_agree_with_the_references(case: Case) -> None:
    """A relation accepts exactly what the reference runs, with the type of its output."""
    op, arrays, attrs = case
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    try:
        out = run(op, arrays, attrs)
    except (ValueError, ZeroDivisionError) as e:
        with pytest.raises(TypeCheckError):
            infer_call_type(op, types, attrs)
        assert str(e)
        return
    assert infer_call_type(op, types, attrs) == TensorType(out.shape, str(out.dtype))


@given(st.data())
def test_symbolic_dims_give_the_concrete_result_symbolically(data: st.DataObject) -> None:
    """With some data dims made shape variables, each result dim is its concrete value, or the
    variable that stood for it."""
    op = data.draw(st.sampled_from(ONE_INPUT))
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    axis = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    attrs = {
        "axis": axis,
        "keepdims": data.draw(st.booleans()),
        "exclude": data.draw(st.booleans()),
    }
    concrete = infer_call_type(op, [T(*shape)], attrs)
    made = [
        TypeVar(f"s{i}", Kind.SHAPE) if data.draw(st.booleans()) else s for i, s in enumerate(shape)
    ]
    value = {v: s for v, s in zip(made, shape, strict=True) if isinstance(v, TypeVar)}
    symbolic = infer_call_type(op, [T(*made)], attrs)
    assert isinstance(symbolic, TensorType) and isinstance(concrete, TensorType)
    assert symbolic.dtype == concrete.dtype
    assert [value.get(s, s) if isinstance(s, TypeVar) else s for s in symbolic.shape] == list(
        concrete.shape
    )
    any_shape = [Any if isinstance(s, TypeVar) else s for s in made]
    dynamic = infer_call_type(op, [T(*any_shape)], attrs)
    assert isinstance(dynamic, TensorType)
    assert [Any if isinstance(s, TypeVar) else s for s in symbolic.shape] == list(dynamic.shape)
