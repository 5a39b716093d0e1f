"""Gradient rules of the shape (transform) family, checked against central differences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.backend.interpreter import interpret
from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Function, Op, Tuple, Var, const
from relay.ir.types import TensorType
from relay.op import transform
from relay.op.registry import MissingRuleError, get_op
from relay.testing import check_op_gradient
from relay.testing.gradients import numerical_gradient
from relay.typecheck.checker import infer_type


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + len(shape)).standard_normal(shape)


CASES: list[tuple[str, list[Any], dict[str, object]]] = [
    ("reshape", [_x(2, 3, 4)], {"newshape": [6, -1]}),
    ("reshape", [_x(2, 3, 4)], {"newshape": [0, -3]}),
    ("reshape", [_x(6)], {"newshape": [-4, 2, -1]}),
    ("reshape_like", [_x(2, 6), _x(3, 4)], {}),
    ("reshape_like", [_x(2, 6), _x(3, 2)], {"lhs_begin": 1, "rhs_begin": 0}),
    ("transpose", [_x(2, 3, 4)], {}),
    ("transpose", [_x(2, 3, 4)], {"axes": [1, -1, 0]}),
    ("transpose", [_x(2, 3, 4, 5)], {"axes": [3, 1, 0, 2]}),
    ("expand_dims", [_x(2, 3)], {"axis": 1}),
    ("expand_dims", [_x(2, 3)], {"axis": -1, "num_newaxis": 2}),
    ("expand_dims", [_x()], {"axis": 0}),
    ("squeeze", [_x(2, 1, 3, 1)], {}),
    ("squeeze", [_x(2, 1, 3, 1)], {"axis": [-1]}),
    ("broadcast_to", [_x(3, 1)], {"shape": [2, 3, 4]}),
    ("broadcast_to", [_x()], {"shape": [2, 3]}),
    ("broadcast_to", [_x(3)], {"shape": [3]}),
    ("broadcast_to_like", [_x(1, 4), _x(2, 3, 4)], {}),
    ("collapse_sum_like", [_x(2, 3, 4), _x(3, 1)], {}),
    ("collapse_sum_like", [_x(2, 3), _x()], {}),
    ("split", [_x(6, 4)], {"indices_or_sections": [1, 4], "axis": 0}),
    ("split", [_x(6, 4)], {"indices_or_sections": 2, "axis": -1}),
    ("split", [_x(3, 6)], {"indices_or_sections": 3, "axis": 1}),
    ("strided_slice", [_x(7, 8)], {"begin": [1, 2], "end": [6, 7]}),
    ("strided_slice", [_x(7, 8)], {"begin": [1, -2], "end": [6, 0], "strides": [2, -3]}),
    ("strided_slice", [_x(7, 8)], {"begin": [-1], "end": [-8], "strides": [-1]}),
    ("strided_slice", [_x(7, 8)], {"begin": [0], "end": [100], "strides": [3], "axes": [1]}),
    ("strided_slice", [_x(7, 8)], {"begin": [1], "end": [3], "axes": [-1], "slice_mode": "size"}),
    ("strided_slice", [_x(2, 7, 3)], {"begin": [0, 5], "end": [2, 1], "axes": [2, 1]}),
    ("strided_slice", [_x(2, 3, 4)], {"begin": [0, 0, 3], "end": [2, 3, 0], "strides": [1, 2, -2]}),
    ("take", [_x(4, 5), np.array([[0, 2], [1, 2], [3, 0]])], {"axis": 0}),
    ("take", [_x(4, 5), np.array([[0, 2], [19, 21]])], {"mode": "wrap"}),
    ("take", [_x(3, 4, 5), np.array([[0, 2], [1, 2], [4, 4]])], {"axis": -1, "batch_dims": 1}),
    ("take", [_x(3, 4, 5), np.array(2)], {"axis": 1}),
    ("take", [_x(2, 4, 5), np.array([-1, 5, 2])], {"axis": 1, "mode": "clip"}),
    ("take", [_x(2, 4, 5), np.array([-1, 5, 2])], {"axis": 1, "mode": "wrap"}),
    ("take", [_x(2, 4, 5), np.array([3, 0, 3])], {"axis": 1, "mode": "fast"}),
    ("repeat", [_x(2, 3)], {"repeats": 3, "axis": -1}),
    ("repeat", [_x(2, 3, 2)], {"repeats": 2, "axis": 1}),
    ("tile", [_x(2, 3)], {"reps": [2, 1, 3]}),
    ("tile", [_x(2, 3, 2)], {"reps": [2]}),
    ("tile", [_x(2, 3)], {"reps": []}),
    ("reverse", [_x(2, 3)], {"axis": 0}),
    ("reverse", [_x(2, 3, 4)], {"axis": -1}),
    ("layout_transform", [_x(2, 16, 3, 3)], {"src_layout": "NCHW", "dst_layout": "NCHW8c"}),
    ("layout_transform", [_x(2, 3, 4, 5)], {"src_layout": "NCHW", "dst_layout": "NHWC"}),
    (
        "one_hot",
        [np.array([0, 2, 1, 5]), np.array(1.5), np.array(-0.5)],
        {"depth": 3, "dtype": "float64"},
    ),
    (
        "one_hot",
        [np.array([[0, 2], [1, 1]]), np.array(1.0), np.array(0.25)],
        {"depth": 4, "axis": 0, "dtype": "float64"},
    ),
]


@pytest.mark.parametrize(
    ("op", "args", "attrs"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_gradient_matches_finite_differences(
    op: str, args: list[np.ndarray], attrs: dict[str, object]
) -> None:
    wrt = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
    if op in ("reshape_like", "broadcast_to_like", "collapse_sum_like"):
        wrt = [0]  # the second argument only gives a shape
    check_op_gradient(op, args, attrs, wrt=wrt)


@pytest.mark.parametrize(
    ("op", "attrs", "nothing_for"),
    [
        ("reshape_like", {}, 1),
        ("broadcast_to_like", {}, 1),
        ("collapse_sum_like", {}, 1),
        ("take", {"axis": 0}, 1),
        ("one_hot", {"depth": 3, "dtype": "float64"}, 0),
    ],
)
def test_no_gradient_to_shapes_and_indices(
    op: str, attrs: dict[str, object], nothing_for: int
) -> None:
    args = {
        "reshape_like": [_x(2, 6), _x(3, 4)],
        "broadcast_to_like": [_x(1, 4), _x(2, 3, 4)],
        "collapse_sum_like": [_x(2, 3, 4), _x(3, 1)],
        "take": [_x(4, 5), np.array([1, 3])],
        "one_hot": [np.array([0, 2]), np.array(1.0), np.array(0.0)],
    }[op]
    wrt = [i for i in range(len(args)) if i != nothing_for]
    adjoints = check_op_gradient(op, args, attrs, wrt=wrt)
    assert adjoints[nothing_for] is None


def test_take_of_integer_data_has_no_gradient() -> None:
    data = Var("d", TensorType((4,), "int32"))
    idx = Var("i", TensorType((2,), "int32"))
    call = transform.take(data, idx, axis=0)
    assert get_op("take").rule("gradient")(call, const(np.zeros(2, "int32"))) == [None, None]


# -- operators taking a tuple: check_op_gradient takes tensors, so these are checked here ---------


def _check_tuple_input(op: str, parts: Sequence[np.ndarray], attrs: dict[str, object]) -> None:
    opdef = get_op(op)
    validated = opdef.validate_attrs(dict(attrs))
    params = tuple(Var(f"p{i}", TensorType(p.shape, str(p.dtype))) for i, p in enumerate(parts))
    call = Call(Op.get(op), (Tuple(params),), Attrs(dict(validated.items())))
    reference = opdef.reference
    assert reference is not None
    primal = reference(tuple(parts), **dict(validated.items()))
    ct = np.random.default_rng(1).standard_normal(primal.shape)
    (adjoint,) = opdef.rule("gradient")(call, const(ct))
    fn = Function(params, adjoint)
    infer_type(fn)
    for k, p in enumerate(params):
        assert fn.checked_type.ret_type.fields[k] == p.type_annotation  # type: ignore[attr-defined]
    got = interpret(fn, *parts)
    numeric = numerical_gradient(
        lambda *xs: float(np.sum(reference(tuple(xs), **dict(validated.items())) * ct)),
        list(parts),
        range(len(parts)),
    )
    for k, (g, n) in enumerate(zip(got, numeric, strict=True)):
        np.testing.assert_allclose(g, n, rtol=1e-5, atol=1e-6, err_msg=f"{op}: part {k}")


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [
        ([(2, 3), (4, 3)], 0),
        ([(2, 3), (2, 1), (2, 5)], 1),
        ([(2, 3), (2, 1), (2, 5)], -1),
        ([(3, 2, 2)], 1),
    ],
)
def test_concatenate_gradient(shapes: list[tuple[int, ...]], axis: int) -> None:
    _check_tuple_input(
        "concatenate", [_x(*s, seed=k) for k, s in enumerate(shapes)], {"axis": axis}
    )


@pytest.mark.parametrize(
    ("shape", "n", "axis"), [((2, 3), 2, 0), ((2, 3), 3, -1), ((4,), 1, 1), ((), 2, 0)]
)
def test_stack_gradient(shape: tuple[int, ...], n: int, axis: int) -> None:
    _check_tuple_input("stack", [_x(*shape, seed=k) for k in range(n)], {"axis": axis})


# -- random shapes ---------------------------------------------------------------------------------

_shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


@settings(max_examples=25, deadline=None)
@given(shape=_shapes, data=st.data())
def test_random_transpose_reverse_and_slices(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = _x(*shape)
    perm = data.draw(st.permutations(range(len(shape))))
    check_op_gradient("transpose", [x], {"axes": list(perm)})
    ax = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_op_gradient("reverse", [x], {"axis": ax})
    n = shape[ax]
    b = data.draw(st.integers(-n - 1, n + 1))
    e = data.draw(st.integers(-n - 1, n + 1))
    s = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
    check_op_gradient(
        "strided_slice", [x], {"begin": [b], "end": [e], "strides": [s], "axes": [ax]}
    )
    reps = data.draw(st.lists(st.integers(1, 3), max_size=3))
    check_op_gradient("tile", [x], {"reps": reps})


# -- non-differentiable operators and completeness -----------------------------------------------


def test_shape_of_is_not_differentiable() -> None:
    x = Var("x", TensorType((2, 3), "float32"))
    call = transform.shape_of(x)
    with pytest.raises(MissingRuleError) as info:
        get_op("shape_of").rule("gradient")(call, const(np.zeros(2, "int32")))
    assert (
        "cannot differentiate through shape_of: its result is the integer shape of its input"
        in str(info.value)
    )


def test_every_transform_operator_has_a_gradient_rule() -> None:
    missing = [name for name in transform._DEFS if get_op(name).gradient is None]
    assert missing == []


def test_a_symbolic_extent_is_a_compile_error() -> None:
    import relay
    from relay.errors import CompileError
    from relay.ir import Call, Var
    from relay.ir.types import Kind, TensorType, TypeVar
    from relay.op.registry import get_op

    n = TypeVar("n", Kind.SHAPE)
    x = Var("x", TensorType((n,), "float32"))
    call = relay.op.strided_slice(x, [0], [1])
    assert isinstance(call, Call)
    relay.infer_type(relay.ir.Function((x,), call, type_params=(n,)))
    with pytest.raises(CompileError, match="needs a known extent, got n"):
        get_op("strided_slice").rule("gradient")(call, call)
