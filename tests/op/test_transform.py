"""The shape and data-movement operators of relay/op/transform.py.

Each reference is checked against an independent computation (element-by-element index
arithmetic, Python slicing, numpy routines other than the one the reference uses, or an
algebraic property such as collapse_sum being the adjoint of broadcasting), on random shapes
and attributes where hypothesis fits; then through the interpreter (calls built with the
builders, and parsed from text), the attribute validation of the builders and the parser,
and the run-time errors with their spans.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import relay
import relay.op.transform as T
from relay.errors import ExecutionError, ParseError
from relay.ir import Call, Function, Tuple, TupleGetItem, Var
from relay.op import OpPattern, get_op
from relay.op.registry import AttrValidationError


def ref(name: str) -> Callable[..., Any]:
    reference = get_op(name).reference
    assert reference is not None, name
    return reference


def run(name: str, *args: Any, **attrs: Any) -> Any:
    """The reference of ``name`` called as the interpreter calls it: all attributes given."""
    validated = get_op(name).validate_attrs(attrs)
    return ref(name)(*args, **validated)


def check(result: object, expected: np.ndarray) -> None:
    assert type(result) is np.ndarray
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


def arange(shape: tuple[int, ...], dtype: str = "int32") -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def interp(build: Callable[..., Call], *arrays: np.ndarray) -> Any:
    """Run ``build(*vars)`` as a function of fresh variables on ``arrays``."""
    params = tuple(Var(f"x{i}") for i in range(len(arrays)))
    return relay.interpret(Function(params, build(*params)), *arrays)


small_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)


# ---- registry entries ---------------------------------------------------------------------------

PATTERNS = {
    "reshape": OpPattern.INJECTIVE,
    "reshape_like": OpPattern.INJECTIVE,
    "transpose": OpPattern.INJECTIVE,
    "expand_dims": OpPattern.BROADCAST,
    "squeeze": OpPattern.INJECTIVE,
    "broadcast_to": OpPattern.BROADCAST,
    "broadcast_to_like": OpPattern.BROADCAST,
    "collapse_sum_like": OpPattern.COMM_REDUCE,
    "concatenate": OpPattern.INJECTIVE,
    "stack": OpPattern.INJECTIVE,
    "split": OpPattern.INJECTIVE,
    "strided_slice": OpPattern.INJECTIVE,
    "take": OpPattern.INJECTIVE,
    "repeat": OpPattern.BROADCAST,
    "tile": OpPattern.BROADCAST,
    "reverse": OpPattern.INJECTIVE,
    "layout_transform": OpPattern.INJECTIVE,
    "shape_of": OpPattern.OPAQUE,
    "one_hot": OpPattern.OUT_ELEMWISE_FUSABLE,
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_registered_with_relay_pattern_and_a_reference(name: str) -> None:
    opdef = get_op(name)
    assert opdef.pattern == PATTERNS[name]
    assert opdef.reference is not None
    assert opdef.doc


def test_attribute_schemas_use_relay_names_and_defaults() -> None:
    def schema(name: str) -> list[tuple[str, str, object]]:
        return [
            (f.name, f.kind, None if f.required else f.default) for f in get_op(name).attrs_schema
        ]

    assert schema("reshape") == [("newshape", "ints", None), ("allowzero", "bool", False)]
    assert schema("reshape_like") == [
        ("lhs_begin", "int", 0),
        ("lhs_end", "int", None),
        ("rhs_begin", "int", 0),
        ("rhs_end", "int", None),
    ]
    assert schema("strided_slice") == [
        ("begin", "ints", None),
        ("end", "ints", None),
        ("strides", "ints", None),
        ("axes", "ints", None),
        ("slice_mode", "str", "end"),
    ]
    assert schema("take") == [
        ("batch_dims", "int", 0),
        ("axis", "int", None),
        ("mode", "str", "clip"),
    ]
    assert schema("split") == [("indices_or_sections", "int_or_ints", None), ("axis", "int", 0)]
    assert schema("one_hot") == [
        ("depth", "int", None),
        ("axis", "int", -1),
        ("dtype", "dtype", "float32"),
    ]
    assert schema("shape_of") == [("dtype", "dtype", "int32")]
    assert schema("expand_dims") == [("axis", "int", None), ("num_newaxis", "int", 1)]
    assert [f.num_inputs for f in map(get_op, ("concatenate", "stack", "one_hot", "take"))] == [
        1,
        1,
        3,
        2,
    ]


# ---- reshape ------------------------------------------------------------------------------------

RELAY_RESHAPE_EXAMPLES = [
    # the examples of Relay's reshape documentation
    ((2, 3, 4), [6, 1, -1], (6, 1, 4)),
    ((2, 3, 4), [3, -1, 8], (3, 1, 8)),
    ((2, 3, 4), [-1], (24,)),
    ((2, 3, 4), [4, 0, 2], (4, 3, 2)),
    ((2, 3, 4), [2, 0, 0], (2, 3, 4)),
    ((2, 3, 4), [-2], (2, 3, 4)),
    ((2, 3, 4), [2, -2], (2, 3, 4)),
    ((2, 3, 4), [-2, 1, 1], (2, 3, 4, 1, 1)),
    ((2, 3, 4), [-3, 4], (6, 4)),
    ((2, 3, 4, 5), [-3, -3], (6, 20)),
    ((2, 3, 4), [0, -3], (2, 12)),
    ((2, 3, 4), [-3, -2], (6, 4)),
    ((2, 3, 4), [-4, 1, 2, -2], (1, 2, 3, 4)),
    ((2, 3, 4), [2, -4, -1, 3, -2], (2, 1, 3, 4)),
    # -1 after consumed positions, and the inference that survives zero-size inputs
    ((2, 3, 4), [-1, 0], (8, 3)),
    ((0, 3), [0, -1], (0, 3)),
    ((2, 3, 4), [-4, 2, -1, -1], (2, 1, 12)),
    ((), [1, 1], (1, 1)),
    ((1,), [], ()),
]


@pytest.mark.parametrize(("shape", "newshape", "expected"), RELAY_RESHAPE_EXAMPLES)
def test_reshape_special_values(
    shape: tuple[int, ...], newshape: list[int], expected: tuple[int, ...]
) -> None:
    assert T.infer_reshape(shape, newshape) == expected
    data = arange(shape)
    check(run("reshape", data, newshape=newshape), data.ravel().reshape(expected))


def test_reshape_allowzero_makes_zero_literal() -> None:
    data = np.zeros((0, 3), "float32")
    check(run("reshape", data, newshape=[3, 0], allowzero=True), np.zeros((3, 0), "float32"))
    with pytest.raises(ValueError, match=r"cannot reshape a tensor of shape \(0, 3\)"):
        run("reshape", data, newshape=[3, 0])  # 0 copies 3: 9 elements
    # without allowzero the copied 0 does not block inferring -1; with it, it does
    check(run("reshape", np.zeros((3, 0)), newshape=[-1, 0]), np.zeros((3, 0)))
    with pytest.raises(ValueError) as info:
        run("reshape", np.zeros((3, 0)), newshape=[-1, 0], allowzero=True)
    assert str(info.value) == (
        "cannot infer the -1 of newshape [-1, 0] for input shape (3, 0): another output "
        "dimension is 0"
    )


@given(st.data())
def test_reshape_minus_one_agrees_with_numpy(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    size = int(np.prod(shape))
    first = data.draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
    target = data.draw(st.permutations([first, size // first, 1]))
    newshape = list(target)
    newshape[data.draw(st.integers(0, 2))] = -1
    x = arange(shape, "float32")
    check(run("reshape", x, newshape=newshape), np.reshape(x, newshape))
    check(run("reshape", x, newshape=newshape), x.ravel().reshape(target))


@pytest.mark.parametrize(
    ("shape", "newshape", "message"),
    [
        (
            (2, 3),
            [4, -1],
            "newshape [4, -1]: cannot divide a dimension of 6 by 4",
        ),
        (
            (2, 3),
            [5],
            "cannot reshape a tensor of shape (2, 3) (6 elements) to newshape [5] "
            "(shape (5,), 5 elements)",
        ),
        (
            (2, 3),
            [0, 0, 0],
            "newshape [0, 0, 0] copies input dimension 2 with 0, but the input shape (2, 3) "
            "has rank 2",
        ),
        (
            (6,),
            [-3],
            "newshape [-3] merges input dimensions 0 and 1 with -3, but the input shape (6,) "
            "has rank 1",
        ),
        (
            (6,),
            [-4, 4, -1],
            "newshape [-4, 4, -1]: cannot divide a dimension of 6 by 4",
        ),
        (
            (6,),
            [-4, 2, 2],
            "newshape [-4, 2, 2] splits input dimension 0 of size 6 into 2 x 2 with -4",
        ),
        (
            (0, 3),
            [0, -1, 0],
            "newshape [0, -1, 0] copies input dimension 2 with 0, but the input shape (0, 3) "
            "has rank 2",
        ),
    ],
)
def test_reshape_errors(shape: tuple[int, ...], newshape: list[int], message: str) -> None:
    with pytest.raises(ValueError) as info:
        run("reshape", np.zeros(shape), newshape=newshape)
    assert str(info.value) == message


def test_reshape_builder_rejects_malformed_newshape() -> None:
    x = Var("x")
    cases = {
        (1, -5): "reshape: invalid newshape value -5 (special values are 0, -1 .. -4)",
        (-1, 2, -1): "reshape: newshape [-1, 2, -1] has more than one -1",
        (-4, 2): "reshape: -4 in newshape must be followed by two dimensions",
        (-4, -1, -1): "reshape: -4 splits into two dimensions, positive or one -1, got -1 and -1",
        (-4, 0, 3): "reshape: -4 splits into two dimensions, positive or one -1, got 0 and 3",
    }
    for newshape, message in cases.items():
        with pytest.raises(AttrValidationError) as info:
            T.reshape(x, newshape)
        assert str(info.value) == message
    # the -1 inside a -4 is not the inferred dimension
    assert T.reshape(x, [-4, -1, 2, -1]).attrs["newshape"] == (-4, -1, 2, -1)
    assert T.reshape(x, 6).attrs["newshape"] == (6,)


@given(st.data())
def test_reshape_like(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    x = arange(shape)
    like = np.zeros((*reversed(shape), 1), "float32")
    check(run("reshape_like", x, like), x.reshape(like.shape))
    # replacing dimensions [1:] of data with those of like[:-1]
    y = np.zeros((7, *reversed(shape)), "int8")
    out = run("reshape_like", x, y, lhs_begin=0, lhs_end=None, rhs_begin=1, rhs_end=None)
    check(out, x.reshape(tuple(reversed(shape))))


def test_reshape_like_ranges() -> None:
    x = arange((1, 2, 3, 4))
    like = np.zeros((6, 2, 2, 3))
    # Relay's documentation example
    check(run("reshape_like", x, like, lhs_begin=1, rhs_end=3), x.reshape((1, 6, 2, 2)))
    check(
        run("reshape_like", x, like, lhs_begin=-3, lhs_end=-1, rhs_begin=0, rhs_end=1),
        x.reshape((1, 6, 4)),
    )
    with pytest.raises(ValueError) as info:
        run("reshape_like", x, like, lhs_begin=1, lhs_end=2, rhs_begin=0, rhs_end=1)
    assert str(info.value) == (
        "cannot reshape a tensor of shape (1, 2, 3, 4) (24 elements) to shape "
        "(1, 6, 3, 4) (72 elements)"
    )
    with pytest.raises(ValueError, match="lhs_end 5 is out of range for a tensor of rank 4"):
        run("reshape_like", x, like, lhs_end=5)


# ---- transpose, expand_dims, squeeze ------------------------------------------------------------


@given(st.data())
def test_transpose_moves_each_element(data: st.DataObject) -> None:
    shape = data.draw(small_shapes)
    x = arange(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    negative = [p - len(shape) if data.draw(st.booleans()) else p for p in perm]
    out = run("transpose", x, axes=negative)
    assert out.shape == tuple(shape[p] for p in perm)
    for idx in itertools.islice(np.ndindex(*out.shape), 50):
        source = [0] * len(shape)
        for k, p in enumerate(perm):
            source[p] = idx[k]
        assert out[idx] == x[tuple(source)]
    check(run("transpose", x), x.transpose(tuple(reversed(range(len(shape))))))


def test_transpose_errors() -> None:
    x = np.zeros((2, 3))
    with pytest.raises(
        ValueError, match=r"^transpose axes \[0\] must name each of the 2 axes once$"
    ):
        run("transpose", x, axes=[0])
    with pytest.raises(ValueError, match=r"^transpose axes \[0, -2\] are not a permutation$"):
        run("transpose", x, axes=[0, -2])
    with pytest.raises(ValueError, match=r"^axis 2 is out of range for a tensor of rank 2$"):
        run("transpose", x, axes=[0, 2])


@given(small_shapes, st.data())
def test_expand_dims(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = np.ones(shape, "float16")
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    num = data.draw(st.integers(0, 3))
    at = axis + len(shape) + 1 if axis < 0 else axis
    expected = x
    for _ in range(num):
        expected = np.expand_dims(expected, at)
    check(run("expand_dims", x, axis=axis, num_newaxis=num), expected)


def test_expand_dims_errors() -> None:
    with pytest.raises(ValueError) as info:
        run("expand_dims", np.zeros((2,)), axis=2)
    assert str(info.value) == (
        "axis 2 is out of range for inserting a dimension into a tensor of rank 1"
    )
    with pytest.raises(AttrValidationError, match="num_newaxis must be >= 0, got -1"):
        T.expand_dims(Var("x"), 0, -1)


@given(st.data())
def test_squeeze(data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=5, min_side=1, max_side=3))
    x = arange(shape)
    check(run("squeeze", x), np.squeeze(x))
    ones = [k for k, d in enumerate(shape) if d == 1]
    chosen = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    check(run("squeeze", x, axis=chosen), np.squeeze(x, axis=tuple(chosen)))


def test_squeeze_errors_and_empty_axis() -> None:
    x = np.zeros((1, 3, 1))
    check(run("squeeze", x, axis=[]), x)
    check(run("squeeze", x, axis=[-1]), np.zeros((1, 3)))
    with pytest.raises(ValueError) as info:
        run("squeeze", x, axis=[1])
    assert str(info.value) == "cannot squeeze axis 1 of shape (1, 3, 1): its size is 3, not 1"
    with pytest.raises(ValueError, match=r"^squeeze axis \[0, -3\] repeats an axis$"):
        run("squeeze", x, axis=[0, -3])


# ---- broadcasting and collapse_sum_like ---------------------------------------------------------


@given(hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=0, max_dims=4))
def test_broadcast_to(shapes: Any) -> None:
    (shape,), target = shapes.input_shapes, shapes.result_shape
    x = arange(shape, "float32")
    out = run("broadcast_to", x, shape=target)
    assert out.shape == target and out.flags.writeable
    # each output element is the input element at the index with broadcast axes at 0
    lead = len(target) - len(shape)
    for idx in itertools.islice(np.ndindex(*target), 50):
        src = tuple(0 if d == 1 else i for i, d in zip(idx[lead:], shape, strict=True))
        assert out[idx] == x[src]
    check(run("broadcast_to_like", x, np.zeros(target, "int8")), out)


def test_broadcast_to_errors() -> None:
    with pytest.raises(
        ValueError, match=r"^cannot broadcast a tensor of shape \(3, 2\) to \(3, 4\)$"
    ):
        run("broadcast_to", np.zeros((3, 2)), shape=[3, 4])
    with pytest.raises(ValueError, match=r"^cannot broadcast a tensor of shape \(3,\) to \(\)$"):
        run("broadcast_to_like", np.zeros((3,)), np.zeros(()))


@given(hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=0, max_dims=4), st.data())
def test_collapse_sum_like_is_the_adjoint_of_broadcast(shapes: Any, data: st.DataObject) -> None:
    (target,), full = shapes.input_shapes, shapes.result_shape
    x = data.draw(hnp.arrays("float64", full, elements=st.integers(-9, 9).map(float)))
    y = data.draw(hnp.arrays("float64", target, elements=st.integers(-9, 9).map(float)))
    collapsed = run("collapse_sum_like", x, np.zeros(target, "int32"))
    assert collapsed.shape == target and collapsed.dtype == np.float64
    # <collapse(x), y> == <x, broadcast(y)>, with exact integer-valued floats
    assert float(np.sum(collapsed * y)) == float(np.sum(x * np.broadcast_to(y, full)))


def test_collapse_sum_like_examples() -> None:
    x = arange((2, 3, 4), "int8")
    check(run("collapse_sum_like", x, np.zeros((3, 1))), np.asarray([[60], [92], [124]], "int8"))
    # the sum keeps the data's dtype and wraps as it does: 276 = 256 + 20
    check(run("collapse_sum_like", x, np.zeros(())), np.asarray(20, "int8"))
    check(run("collapse_sum_like", x, np.zeros((2, 3, 4))), x)
    with pytest.raises(ValueError) as info:
        run("collapse_sum_like", x, np.zeros((2, 4)))
    assert str(info.value) == (
        "cannot collapse a tensor of shape (2, 3, 4) to (2, 4): the target does not broadcast to it"
    )


# ---- concatenate, stack, split ------------------------------------------------------------------


@given(st.data())
def test_concatenate_and_split_round_trip(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ax = axis % len(shape)
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    parts = tuple(arange((*shape[:ax], n, *shape[ax + 1 :])) + 100 * k for k, n in enumerate(sizes))
    out = run("concatenate", parts, axis=axis)
    assert out.shape[ax] == sum(sizes)
    offset = 0
    for part, n in zip(parts, sizes, strict=True):
        np.testing.assert_array_equal(np.take(out, range(offset, offset + n), axis=ax), part)
        offset += n
    cuts = list(itertools.accumulate(sizes))[:-1]
    if all(b > a for a, b in zip([0, *cuts], cuts, strict=False)) and (
        not cuts or cuts[-1] < out.shape[ax]
    ):
        pieces = run("split", out, indices_or_sections=cuts, axis=axis)
        assert isinstance(pieces, tuple) and len(pieces) == len(sizes)
        for piece, part in zip(pieces, parts, strict=True):
            check(piece, part)


@given(st.data())
def test_split_into_sections(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    ax = data.draw(st.integers(0, len(shape) - 1))
    sections = data.draw(st.sampled_from([d for d in range(1, 5) if shape[ax] % d == 0]))
    x = arange(shape)
    pieces = run("split", x, indices_or_sections=sections, axis=ax)
    step = shape[ax] // sections
    assert len(pieces) == sections
    for k, piece in enumerate(pieces):
        index = [slice(None)] * len(shape)
        index[ax] = slice(k * step, (k + 1) * step)
        check(piece, x[tuple(index)])


def test_split_and_concatenate_errors() -> None:
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"^cannot split axis 1 of size 3 into 2 equal sections$"):
        run("split", x, indices_or_sections=2, axis=1)
    with pytest.raises(ValueError) as info:
        run("split", x, indices_or_sections=[1, 4])
    assert str(info.value) == "split indices [1, 4] must be less than the size 4 of axis 0"
    with pytest.raises(AttrValidationError) as info2:
        T.split(Var("x"), [2, 2])
    assert str(info2.value) == "split: indices must be positive and strictly increasing, got [2, 2]"
    with pytest.raises(AttrValidationError, match="number of sections must be positive, got 0"):
        T.split(Var("x"), 0)
    check(run("split", x, indices_or_sections=[])[0], x)
    with pytest.raises(ValueError) as info:
        run("concatenate", (np.zeros((2, 3)), np.zeros((2, 4))), axis=0)
    assert str(info.value) == (
        "concatenate along axis 0: shapes (2, 3) and (2, 4) differ on another axis"
    )
    with pytest.raises(
        ValueError, match=r"^concatenate needs tensors of one dtype, got float32, int32$"
    ):
        run("concatenate", (np.zeros(2, "float32"), np.zeros(2, "int32")))
    with pytest.raises(ValueError, match=r"^stack takes a tuple of tensors, not a tensor$"):
        run("stack", np.zeros(2))
    with pytest.raises(ValueError, match=r"^concatenate takes a tuple of tensors$"):
        run("concatenate", ((np.zeros(2),),))
    with pytest.raises(ValueError, match=r"^concatenate needs at least one tensor$"):
        run("concatenate", ())
    with pytest.raises(
        ValueError, match=r"^concatenate needs tensors of one rank, at least 1, got ranks 0$"
    ):
        run("concatenate", (np.zeros(()),))
    with pytest.raises(
        ValueError, match=r"^stack needs tensors of one shape, got \(2,\) and \(3,\)$"
    ):
        run("stack", (np.zeros(2), np.zeros(3)))


@given(st.data())
def test_stack(data: st.DataObject) -> None:
    shape = data.draw(small_shapes)
    count = data.draw(st.integers(1, 3))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    parts = tuple(arange(shape) * 10 + k for k in range(count))
    out = run("stack", parts, axis=axis)
    ax = axis % (len(shape) + 1)
    for k, part in enumerate(parts):
        check(np.asarray(np.take(out, k, axis=ax)), part)


# ---- strided_slice ------------------------------------------------------------------------------


@given(st.data())
def test_strided_slice_matches_python_slicing(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    x = arange(shape)
    rank = data.draw(st.integers(0, len(shape)))
    idx = st.integers(-6, 6)
    begin = data.draw(st.lists(idx, min_size=rank, max_size=rank))
    end = data.draw(st.lists(idx, min_size=rank, max_size=rank))
    strides = data.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=rank, max_size=rank))
    expected = x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides, strict=True))]
    # an empty selection (a begin past the end) is a 0-length axis, as in Python slicing
    check(run("strided_slice", x, begin=begin, end=end, strides=strides), expected)


@given(st.data())
def test_strided_slice_with_axes_and_size_mode(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    x = arange(shape)
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    begin = [data.draw(st.integers(0, shape[a] - 1)) for a in axes]
    sizes = [data.draw(st.integers(-1, shape[a] - b)) for a, b in zip(axes, begin, strict=True)]
    out = run("strided_slice", x, begin=begin, end=sizes, axes=axes, slice_mode="size")
    index = [slice(None)] * len(shape)
    for a, b, n in zip(axes, begin, sizes, strict=True):
        index[a] = slice(b, None if n < 0 else b + n)
    check(out, x[tuple(index)])


def test_strided_slice_examples() -> None:
    x = arange((3, 4))
    check(run("strided_slice", x, begin=[1], end=[3]), x[1:3])
    check(run("strided_slice", x, begin=[-1], end=[1], axes=[1], slice_mode="size"), x[:, 3:])
    check(run("strided_slice", x, begin=[2], end=[-10], strides=[-1], axes=[-1]), x[:, 2::-1])
    check(run("strided_slice", x, begin=[0, 3], end=[3, -5], strides=[2, -2]), x[0:3:2, 3::-2])
    # strides is ignored in size mode; a size of -1 runs to the end
    check(
        run("strided_slice", x, begin=[1, 1], end=[-1, 2], strides=[5, 5], slice_mode="size"),
        x[1:, 1:3],
    )
    # empty selections, inside the axis or past its end, give a 0-length axis as in numpy
    check(run("strided_slice", x, begin=[2], end=[1]), x[2:1])
    check(run("strided_slice", x, begin=[1], end=[3], strides=[-1], axes=[1]), x[:, 1:3:-1])
    check(run("strided_slice", x, begin=[5], end=[9]), x[5:9])
    check(run("strided_slice", x, begin=[-1], end=[-9], strides=[-2], axes=[1]), x[:, -1:-9:-2])
    check(run("strided_slice", arange((1,)), begin=[1], end=[-1]), arange((1,))[1:-1])
    assert run("strided_slice", x, begin=[2], end=[1]).shape == (0, 4)
    with pytest.raises(
        ValueError, match=r"^strided_slice of a tensor of rank 2 got 3 begin/end/stride values$"
    ):
        run("strided_slice", x, begin=[0, 0, 0], end=[1, 1, 1])
    with pytest.raises(ValueError, match=r"^axis 2 is out of range for a tensor of rank 2$"):
        run("strided_slice", x, begin=[0], end=[1], axes=[2])


def test_count_attributes_are_bounded() -> None:
    x = Var("x")
    with pytest.raises(AttrValidationError) as info:
        T.expand_dims(x, 0, 99999999999999999999)
    assert str(info.value) == (
        "expand_dims: num_newaxis 99999999999999999999 is above the maximum rank 64"
    )
    with pytest.raises(AttrValidationError) as info:
        T.tile(x, [1] * 65)
    assert str(info.value) == "tile: reps has 65 values, above the maximum rank 64"
    with pytest.raises(AttrValidationError) as info:
        T.repeat(x, 2**63, 0)
    assert str(info.value) == "repeat: repeats must be at most 2**63 - 1, got 9223372036854775808"
    with pytest.raises(AttrValidationError, match=r"^attribute dtype of one_hot must be one of "):
        T.one_hot(x, x, x, 2, dtype="foo")
    # the references check the same (without building a huge shape first)
    with pytest.raises(AttrValidationError, match=r"^expand_dims: num_newaxis 100000000 is above"):
        run("expand_dims", np.zeros(2), axis=0, num_newaxis=10**8)
    check(run("expand_dims", np.zeros(2), axis=0, num_newaxis=63), np.zeros((1,) * 63 + (2,)))


def test_one_hot_of_no_indices_and_other_dtypes() -> None:
    on, off = np.array(1.0, "float32"), np.array(0.0, "float32")
    out = run("one_hot", np.zeros((0, 2), "int32"), on, off, depth=2**40, axis=1, dtype="int8")
    assert out.shape == (0, 2**40, 2) and out.dtype == np.int8
    out = run("one_hot", np.array([1, 0]), on, off, depth=2, dtype="bfloat16")
    assert str(out.dtype) == "bfloat16" and out.astype("float32").tolist() == [[0, 1], [1, 0]]


def test_strided_slice_builder_validation() -> None:
    x = Var("x")
    with pytest.raises(AttrValidationError, match=r"^strided_slice: strides must be nonzero$"):
        T.strided_slice(x, [0], [1], strides=[0])
    with pytest.raises(AttrValidationError) as info:
        T.strided_slice(x, [0, 0], [1], axes=[0, 1])
    assert (
        str(info.value) == "strided_slice: begin, end, strides and axes must have the same length"
    )
    with pytest.raises(AttrValidationError) as info:
        T.strided_slice(x, [0], [1], slice_mode="stop")
    assert str(info.value) == (
        "attribute slice_mode of strided_slice must be one of 'end', 'size', got 'stop'"
    )


# ---- take ---------------------------------------------------------------------------------------


def take_by_loops(
    data: np.ndarray, indices: np.ndarray, axis: int | None, batch_dims: int, mode: str
) -> np.ndarray:
    if axis is None:
        data, axis, batch_dims = data.ravel(), 0, 0
    axis %= data.ndim
    n = data.shape[axis]
    shape = (*data.shape[:axis], *indices.shape[batch_dims:], *data.shape[axis + 1 :])
    out = np.zeros(shape, data.dtype)
    k = indices.ndim - batch_dims
    for o in np.ndindex(*shape):
        pre, mid, post = o[:axis], o[axis : axis + k], o[axis + k :]
        i = int(indices[(*pre[:batch_dims], *mid)])
        i = min(max(i, 0), n - 1) if mode == "clip" else i % n
        out[o] = data[(*pre, i, *post)]
    return out


@given(st.data())
def test_take(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    x = arange(shape, "float32")
    mode = data.draw(st.sampled_from(["clip", "wrap", "fast"]))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    n = x.size if axis is None else shape[axis]
    lo, hi = (0, n - 1) if mode == "fast" else (-2 * n, 2 * n)
    batch_dims = 0 if axis is None else data.draw(st.integers(0, axis % len(shape)))
    ishape = (*shape[:batch_dims], *data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)))
    indices = data.draw(hnp.arrays("int32", ishape, elements=st.integers(lo, hi)))
    out = run("take", x, indices, axis=axis, batch_dims=batch_dims, mode=mode)
    check(out, take_by_loops(x, indices, axis, batch_dims, mode))


def test_take_examples_and_errors() -> None:
    x = arange((2, 3))
    check(run("take", x, np.asarray([-1, 7, 2])), np.asarray([0, 5, 2], "int32"))
    check(run("take", x, np.asarray(-1), axis=1, mode="wrap"), np.asarray([2, 5], "int32"))
    check(
        run("take", x, np.asarray([[1], [0]]), axis=1, batch_dims=1),
        np.asarray([[1], [3]], "int32"),
    )
    with pytest.raises(ValueError) as info:
        run("take", x, np.asarray([0, 3]), axis=1, mode="fast")
    assert str(info.value) == 'take index 3 is out of range for axis 1 of size 3 (mode "fast")'
    with pytest.raises(ValueError, match=r"^take needs integer indices, got float32$"):
        run("take", x, np.asarray([0.0], "float32"))
    with pytest.raises(ValueError) as info:
        run("take", x, np.asarray([[0], [1]]), axis=0, batch_dims=1)
    assert str(info.value) == (
        "take batch_dims 1 must be in range for indices of rank 2 and at most the axis 0"
    )
    with pytest.raises(ValueError, match=r"^take from axis 0 of size 0$"):
        run("take", np.zeros((0, 2)), np.asarray([0]), axis=0)


# ---- repeat, tile, reverse ----------------------------------------------------------------------


@given(st.data())
def test_repeat(data: st.DataObject) -> None:
    shape = data.draw(nonempty_shapes)
    x = arange(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    repeats = data.draw(st.integers(1, 3))
    out = run("repeat", x, repeats=repeats, axis=axis)
    ax = axis % len(shape)
    for k in range(shape[ax]):
        for r in range(repeats):
            np.testing.assert_array_equal(
                np.take(out, k * repeats + r, axis=ax), np.take(x, k, axis=ax)
            )
    assert out.shape[ax] == shape[ax] * repeats


@given(small_shapes, st.lists(st.integers(1, 3), max_size=4))
def test_tile(shape: tuple[int, ...], reps: list[int]) -> None:
    x = arange(shape)
    out = run("tile", x, reps=reps)
    rank = max(len(shape), len(reps))
    full_shape = (1,) * (rank - len(shape)) + tuple(shape)
    full_reps = (1,) * (rank - len(reps)) + tuple(reps)
    assert out.shape == tuple(d * r for d, r in zip(full_shape, full_reps, strict=True))
    xs = x.reshape(full_shape)
    for idx in itertools.islice(np.ndindex(*out.shape), 50):
        assert out[idx] == xs[tuple(i % d for i, d in zip(idx, full_shape, strict=True))]


def test_repeat_tile_reverse_errors() -> None:
    with pytest.raises(AttrValidationError, match=r"^repeat: repeats must be at least 1, got 0$"):
        T.repeat(Var("x"), 0, 0)
    with pytest.raises(AttrValidationError, match=r"^tile: reps must be at least 1, got \[2, 0\]$"):
        T.tile(Var("x"), [2, 0])
    with pytest.raises(ValueError, match=r"^axis -2 is out of range for a tensor of rank 1$"):
        run("reverse", np.zeros(3), axis=-2)
    with pytest.raises(ValueError, match=r"^axis 0 is out of range for a tensor of rank 0$"):
        run("repeat", np.zeros(()), repeats=2, axis=0)


@given(nonempty_shapes, st.data())
def test_reverse(shape: tuple[int, ...], data: st.DataObject) -> None:
    x = arange(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = [slice(None)] * len(shape)
    index[axis] = slice(None, None, -1)
    check(run("reverse", x, axis=axis), x[tuple(index)])


# ---- layout_transform ---------------------------------------------------------------------------


def test_layout_nchw_nhwc() -> None:
    x = arange((2, 3, 4, 5))
    nhwc = run("layout_transform", x, src_layout="NCHW", dst_layout="NHWC")
    for n, c, h, w in np.ndindex(*x.shape):
        assert nhwc[n, h, w, c] == x[n, c, h, w]
    check(run("layout_transform", nhwc, src_layout="NHWC", dst_layout="NCHW"), x)


@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2]), st.data())
def test_layout_blocked(block: int, outer: int, data: st.DataObject) -> None:
    h, w = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    x = arange((2, block * outer * 2, h, w))
    blocked = run("layout_transform", x, src_layout="NCHW", dst_layout=f"NCHW{block}c")
    assert blocked.shape == (2, outer * 2, h, w, block)
    for n, co, i, j, ci in np.ndindex(*blocked.shape):
        assert blocked[n, co, i, j, ci] == x[n, co * block + ci, i, j]
    check(run("layout_transform", blocked, src_layout=f"NCHW{block}c", dst_layout="NCHW"), x)
    nhwc = x.transpose(0, 2, 3, 1)
    check(run("layout_transform", blocked, src_layout=f"NCHW{block}c", dst_layout="NHWC"), nhwc)
    if block % 2 == 0:
        halves = run(
            "layout_transform", blocked, src_layout=f"NCHW{block}c", dst_layout=f"NCHW{block // 2}c"
        )
        check(
            halves, run("layout_transform", x, src_layout="NCHW", dst_layout=f"NCHW{block // 2}c")
        )


def test_layout_errors() -> None:
    x = np.zeros((1, 6, 2, 2))
    with pytest.raises(ValueError) as info:
        run("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    assert str(info.value) == "axis C of size 6 does not divide into blocks of 4 for layout NCHW4c"
    with pytest.raises(ValueError, match=r"^layout NCW has 3 axes but the tensor has rank 4$"):
        run("layout_transform", x, src_layout="NCW", dst_layout="NWC")
    with pytest.raises(ValueError) as info:
        run("layout_transform", np.zeros((1, 1, 2, 2, 4)), src_layout="NCHW8c", dst_layout="NCHW")
    assert (
        str(info.value)
        == "axis 8c of layout NCHW8c has size 4 in a tensor of shape (1, 1, 2, 2, 4)"
    )
    bad = {
        ("NCHW", "NCHWc"): "invalid layout 'NCHWc': sub-axis c needs a positive factor",
        ("NCHW", "NCH4W"): "invalid layout 'NCH4W': primal axis W has a factor",
        ("NCHW", "NCHW4d"): "invalid layout 'NCHW4d': sub-axis d has no D",
        ("NCHW", "NCHH"): "invalid layout 'NCHH': a primal axis appears twice",
        ("NC-HW", "NCHW"): "invalid layout 'NC-HW': unexpected '-'",
        ("NCHW", "NCDHW"): "layout_transform: layouts NCHW and NCDHW have different primal axes",
    }
    for (src, dst), message in bad.items():
        with pytest.raises(AttrValidationError) as info2:
            T.layout_transform(Var("x"), src, dst)
        assert str(info2.value) == message
    assert T.parse_layout("NCHW8c") == (("N", 0), ("C", 0), ("H", 0), ("W", 0), ("C", 8))


# ---- shape_of, one_hot --------------------------------------------------------------------------


@given(small_shapes, st.sampled_from(["int32", "int64"]))
def test_shape_of(shape: tuple[int, ...], dtype: str) -> None:
    check(
        run("shape_of", np.zeros(shape, "int8"), dtype=dtype),
        np.asarray(list(shape), dtype).reshape(len(shape)),
    )


def test_shape_of_default_dtype_and_choices() -> None:
    check(run("shape_of", np.zeros((2, 0))), np.asarray([2, 0], "int32"))
    with pytest.raises(AttrValidationError):
        T.shape_of(Var("x"), "float32")


@given(st.data())
def test_one_hot(data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
    depth = data.draw(st.integers(1, 4))
    indices = data.draw(hnp.arrays("int64", shape, elements=st.integers(-1, depth)))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    dtype = data.draw(st.sampled_from(["float32", "int32", "int8"]))
    out = run(
        "one_hot", indices, np.asarray(5.0), np.asarray(-1.0), depth=depth, axis=axis, dtype=dtype
    )
    at = axis % (len(shape) + 1)
    # the classic construction along the last axis, then moved into place
    last = np.where(indices[..., None] == np.arange(depth), 5, -1).astype(dtype)
    check(out, np.moveaxis(last, -1, at))


def test_one_hot_errors() -> None:
    with pytest.raises(ValueError, match=r"^one_hot on_value must be a scalar, got shape \(1,\)$"):
        run("one_hot", np.asarray([0]), np.asarray([1.0]), np.asarray(0.0), depth=2)
    with pytest.raises(AttrValidationError, match=r"^one_hot: depth must be positive, got 0$"):
        T.one_hot(Var("i"), Var("a"), Var("b"), 0)
    with pytest.raises(AttrValidationError, match=r"^one_hot requires attribute depth$"):
        get_op("one_hot").validate_attrs({})


# ---- builders through the interpreter -----------------------------------------------------------


def test_builders_through_the_interpreter() -> None:
    x = arange((2, 3, 4), "float32")
    y = arange((2, 3, 4), "float32") + 100
    check(interp(lambda a: T.reshape(a, [0, -1]), x), x.reshape(2, 12))
    check(interp(lambda a, b: T.reshape_like(a, b), x, np.zeros((4, 6))), x.reshape(4, 6))
    check(interp(lambda a: T.transpose(a, [2, 0, 1]), x), x.transpose(2, 0, 1))
    check(interp(lambda a: T.transpose(a), x), x.transpose())
    check(interp(lambda a: T.expand_dims(a, -1, 2), x), x.reshape(2, 3, 4, 1, 1))
    check(interp(lambda a: T.squeeze(a), x.reshape(1, 24)), x.ravel())
    check(interp(lambda a: T.broadcast_to(a, [5, 2, 3, 4]), x), np.broadcast_to(x, (5, 2, 3, 4)))
    check(interp(lambda a, b: T.broadcast_to_like(a, b), x[:1], y), np.broadcast_to(x[:1], x.shape))
    check(interp(lambda a, b: T.collapse_sum_like(a, b), x, y[0]), x[0] + x[1])
    check(interp(lambda a, b: T.concatenate([a, b], axis=1), x, y), np.concatenate([x, y], 1))
    check(interp(lambda a, b: T.concatenate(Tuple((a, b)), -1), x, y), np.concatenate([x, y], -1))
    check(interp(lambda a, b: T.stack([a, b], axis=3), x, y), np.stack([x, y], 3))
    pieces = interp(lambda a: T.split(a, [1, 3], axis=2), x)
    assert isinstance(pieces, tuple) and [p.shape for p in pieces] == [
        (2, 3, 1),
        (2, 3, 2),
        (2, 3, 1),
    ]
    check(interp(lambda a: TupleGetItem(T.split(a, 3, axis=1), 2), x), x[:, 2:])
    check(interp(lambda a: T.strided_slice(a, [1], [-1], axes=[2]), x), x[:, :, 1:3])
    check(
        interp(lambda a, i: T.take(a, i, axis=1, mode="wrap"), x, np.asarray([4, -1])), x[:, [1, 2]]
    )
    check(interp(lambda a: T.repeat(a, 2, 0), x), np.repeat(x, 2, 0))
    check(interp(lambda a: T.tile(a, [2, 1, 1]), x), np.tile(x, (2, 1, 1)))
    check(interp(lambda a: T.reverse(a, 1), x), x[:, ::-1])
    check(interp(lambda a: T.layout_transform(a, "NCW", "NWC"), x), x.transpose(0, 2, 1))
    check(interp(lambda a: T.shape_of(a, "int64"), x), np.asarray([2, 3, 4], "int64"))
    check(
        interp(
            lambda i, a, b: T.one_hot(i, a, b, 3, 0, "int32"),
            np.asarray([2, 0]),
            np.asarray(1),
            np.asarray(0),
        ),
        np.asarray([[0, 1], [0, 0], [1, 0]], "int32"),
    )


def test_interpreter_reports_bad_attribute_values_at_the_call() -> None:
    fn = relay.parse_expr("fn (%x) {\n  reshape(%x, newshape=[4, -1])\n}")
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    with pytest.raises(ExecutionError) as info:
        relay.interpret(fn, np.zeros((2, 3), "float32"))
    assert info.value.message == (
        "operator reshape failed: newshape [4, -1]: cannot divide a dimension of 6 by 4"
    )
    assert info.value.span == fn.body.span
    # a statically bad attribute parsed from text is caught when the call runs
    fn = relay.parse_expr("fn (%x) { repeat(%x, repeats=0, axis=0) }")
    assert isinstance(fn, Function)
    with pytest.raises(ExecutionError) as info:
        relay.interpret(fn, np.zeros(2))
    assert info.value.message == "operator repeat failed: repeat: repeats must be at least 1, got 0"


# ---- text format --------------------------------------------------------------------------------

TEXT_CALLS = [
    (
        "reshape(%x, newshape=[0, -1, -4, 2, -1])",
        {"newshape": (0, -1, -4, 2, -1), "allowzero": False},
    ),
    ("transpose(%x)", {"axes": None}),
    ("transpose(%x, axes=[1, 0])", {"axes": (1, 0)}),
    ("squeeze(%x, axis=None)", {"axis": None}),
    ("split(%x, indices_or_sections=2, axis=1)", {"indices_or_sections": 2, "axis": 1}),
    ("split(%x, indices_or_sections=[2], axis=1)", {"indices_or_sections": (2,), "axis": 1}),
    (
        'strided_slice(%x, begin=[0, 1], end=[2, -1], strides=[1, 2], axes=[1, 0], slice_mode="size")',
        {"begin": (0, 1), "end": (2, -1), "strides": (1, 2), "axes": (1, 0), "slice_mode": "size"},
    ),
    ('take(%x, %x, axis=0, mode="fast")', {"batch_dims": 0, "axis": 0, "mode": "fast"}),
    (
        'layout_transform(%x, src_layout="NCHW", dst_layout="NCHW8c")',
        {"src_layout": "NCHW", "dst_layout": "NCHW8c"},
    ),
    ('shape_of(%x, dtype="int64")', {"dtype": "int64"}),
    ('one_hot(%x, %x, %x, depth=3, dtype="int32")', {"depth": 3, "axis": -1, "dtype": "int32"}),
    ("concatenate((%x, %x), axis=-1)", {"axis": -1}),
]


@pytest.mark.parametrize(("text", "attrs"), TEXT_CALLS)
def test_parse_text_calls(text: str, attrs: dict[str, object]) -> None:
    fn = relay.parse_expr(f"fn (%x) {{ {text} }}")
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    assert dict(fn.body.attrs) == attrs
    again = relay.parse_expr(relay.astext(fn))
    assert relay.structural_equal(fn, again)


def test_parse_rejects_bad_attributes_at_the_attribute() -> None:
    with pytest.raises(ParseError) as info:
        relay.parse_expr('fn (%x) { take(%x, %x, mode="nearest") }')
    assert info.value.message == (
        "attribute mode of take must be one of 'clip', 'wrap', 'fast', got 'nearest'"
    )
    assert info.value.span is not None and info.value.span.column == 24
    with pytest.raises(ParseError, match="reshape requires attribute newshape"):
        relay.parse_expr("fn (%x) { reshape(%x) }")


@given(st.data())
def test_print_parse_round_trip_of_builder_calls(data: st.DataObject) -> None:
    x = Var("x")
    builders: list[Call] = [
        T.reshape(
            x,
            [
                *data.draw(st.lists(st.integers(-3, 5).filter(lambda v: v != -1), max_size=3)),
                -1,
                -4,
                -1,
                2,
            ],
            data.draw(st.booleans()),
        ),
        T.reshape_like(
            x, x, data.draw(st.integers(-3, 3)), data.draw(st.none() | st.integers(-3, 3)), 1, None
        ),
        T.expand_dims(x, data.draw(st.integers(-3, 3)), data.draw(st.integers(0, 3))),
        T.squeeze(x, data.draw(st.none() | st.lists(st.integers(-3, 3), max_size=3))),
        T.broadcast_to(x, data.draw(st.lists(st.integers(0, 5), max_size=3))),
        T.strided_slice(
            x,
            [1, 2],
            [3, -1],
            data.draw(st.none() | st.just([1, -2])),
            data.draw(st.none() | st.just([0, 2])),
            data.draw(st.sampled_from(["end", "size"])),
        ),
        T.take(
            x,
            x,
            data.draw(st.none() | st.integers(-3, 3)),
            data.draw(st.integers(-1, 2)),
            data.draw(st.sampled_from(["clip", "wrap", "fast"])),
        ),
        T.one_hot(
            x,
            x,
            x,
            data.draw(st.integers(1, 9)),
            data.draw(st.integers(-2, 2)),
            data.draw(st.sampled_from(["float32", "int64", "bool"])),
        ),
        T.split(x, data.draw(st.integers(1, 4) | st.just([1, 3])), data.draw(st.integers(-2, 2))),
        T.stack([x, x, x], data.draw(st.integers(-2, 2))),
    ]
    fn = Function((x,), Tuple(tuple(builders)))
    again = relay.parse_expr(relay.astext(fn))
    assert relay.structural_equal(fn, again)


def test_builders_validate_attribute_kinds() -> None:
    x = Var("x")
    with pytest.raises(AttrValidationError) as info:
        T.transpose(x, ["a"])  # type: ignore[list-item]
    assert str(info.value) == "attribute axes of transpose must be a list of ints, got ('a',)"
    with pytest.raises(AttrValidationError) as info:
        T.take(x, x, axis=1.5)  # type: ignore[arg-type]
    assert str(info.value) == "attribute axis of take must be an int, got 1.5"
