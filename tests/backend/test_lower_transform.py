"""The TVM lowering of the shape and data-movement operators against their numpy references.

Each case compiles one call (``relay.testing.lowering.check_op_lowering``) and compares it
with the operator's reference: same shape, dtype and values, exactly for integers and bools.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from relay.errors import ExecutionError
from relay.testing.lowering import check_op_lowering, run_compiled_op

pytestmark = pytest.mark.tvm

Array = np.ndarray[Any, np.dtype[Any]]


def data(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> Array:
    """Distinct values (so a wrong index shows), negative ones included, of ``dtype``."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return (np.arange(n) * 7 % 3 == 0).reshape(shape)
    rng = np.random.default_rng(seed)
    values = rng.permutation(n) - n // 2
    if dtype.startswith("uint"):
        values = values + n
    if dtype in ("int8", "uint8"):
        values = values % 100 - (0 if dtype == "uint8" else 50)
    out = values.astype(dtype).reshape(shape)
    if dtype.startswith("float") and n >= 3:
        out.flat[1], out.flat[2] = np.nan, -np.inf  # moved like any other value
    return out


def zero(*values: Any) -> Any:
    """A parameter set with a zero-size tensor (kernels get compact strides for them)."""
    return pytest.param(*values, id="zero-size")


DTYPES = ["float64", "float16", "int32", "int8", "uint8", "bool", "int64"]


# ---- reshapes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "newshape", "allowzero"),
    [
        ((2, 3, 4), (4, -1), False),
        ((2, 3, 4), (0, -1), False),
        ((2, 3, 4), (-1,), False),
        ((2, 3, 4), (-2,), False),
        ((2, 3, 4), (0, 0, 1, 4), False),
        ((2, 3, 4), (-3, 4), False),
        ((2, 3, 4), (-4, 1, 2, -3), False),
        ((2, 3, 4), (0, -4, 3, 1, -2), False),
        ((2, 3, 4), (3, 8), False),
        ((2, 3, 4), (1, 24, 1), False),
        ((7,), (7, 1), False),
        ((7, 1), (1, 7), False),
        ((33,), (3, 11), False),
        ((3, 11), (11, 3), False),
        ((1, 1), (), False),
        ((), (1, 1, 1), False),
        zero((0, 3), (0, -1), False),
        zero((0, 3), (3, 0), True),
        zero((6, 0), (0, 2, 3), True),
    ],
)
def test_reshape(shape: tuple[int, ...], newshape: tuple[int, ...], allowzero: bool) -> None:
    check_op_lowering("reshape", data(shape), newshape=newshape, allowzero=allowzero)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_dtypes(dtype: str) -> None:
    check_op_lowering("reshape", data((3, 5, 2), dtype), newshape=(5, -1))


@pytest.mark.parametrize(
    ("shape", "like", "bounds"),
    [
        ((2, 3, 4), (6, 4), {}),
        ((2, 3, 4), (24,), {}),
        ((2, 3, 4), (12, 5), {"lhs_begin": 1, "rhs_begin": 0, "rhs_end": 1}),
        ((2, 3, 4), (7, 4, 3), {"lhs_begin": -2, "lhs_end": None, "rhs_begin": 1}),
        ((7,), (1, 7, 1), {}),
        ((2, 3), (5, 5, 2), {"lhs_begin": 0, "lhs_end": -1, "rhs_begin": 2}),
    ],
)
def test_reshape_like(
    shape: tuple[int, ...], like: tuple[int, ...], bounds: dict[str, Any]
) -> None:
    check_op_lowering("reshape_like", data(shape), data(like, "int8"), **bounds)


@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((1, 3, 1), None),
        ((1, 3, 1), (0,)),
        ((1, 3, 1), (-1,)),
        ((1, 3, 1), (0, 2)),
        ((1, 3, 1), (2, -3)),
        ((1, 3, 1), ()),
        ((1, 1), None),
        ((7,), None),
        ((33, 1, 1, 5), (1, 2)),
    ],
)
def test_squeeze(shape: tuple[int, ...], axis: tuple[int, ...] | None) -> None:
    check_op_lowering("squeeze", data(shape), axis=axis)


@pytest.mark.parametrize(
    ("shape", "axis", "num_newaxis"),
    [
        ((2, 3), 0, 1),
        ((2, 3), 1, 2),
        ((2, 3), 2, 1),
        ((2, 3), -1, 1),
        ((2, 3), -3, 3),
        ((2, 3), 1, 0),
        ((), 0, 2),
        ((7,), -2, 1),
    ],
)
def test_expand_dims(shape: tuple[int, ...], axis: int, num_newaxis: int) -> None:
    check_op_lowering("expand_dims", data(shape, "int32"), axis=axis, num_newaxis=num_newaxis)


@pytest.mark.parametrize(
    "shape", [(2, 3, 4), (7,), (3, 1, 5), (1, 33), zero((0, 4)), zero((4, 0, 2))]
)
def test_batch_flatten(shape: tuple[int, ...]) -> None:
    check_op_lowering("nn.batch_flatten", data(shape))


@pytest.mark.parametrize("dtype", ["float16", "int8", "bool"])
def test_squeeze_expand_flatten_dtypes(dtype: str) -> None:
    check_op_lowering("squeeze", data((1, 3, 1), dtype), axis=(0,))
    check_op_lowering("expand_dims", data((3, 2), dtype), axis=1)
    check_op_lowering("nn.batch_flatten", data((2, 3, 2), dtype))


# ---- transpose, reverse, repeat, tile -----------------------------------------------------------


@pytest.mark.parametrize("axes", list(itertools.permutations(range(3))))
def test_transpose_rank3(axes: tuple[int, ...]) -> None:
    x = data((2, 3, 5))
    check_op_lowering("transpose", x, axes=axes)
    # the same permutation written with negative axes
    check_op_lowering("transpose", x, axes=tuple(a - 3 for a in axes))


@pytest.mark.parametrize(
    ("shape", "axes"),
    [
        ((2, 3, 5), None),
        ((7,), None),
        ((7,), (0,)),
        ((), None),
        ((1, 7, 1, 3), (3, 0, 1, 2)),
        ((2, 1, 3, 33), (0, 3, -2, 1)),
        zero((0, 3), (1, 0)),
    ],
)
def test_transpose(shape: tuple[int, ...], axes: tuple[int, ...] | None) -> None:
    check_op_lowering("transpose", data(shape), axes=axes)


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((128, 160), None), ((2, 96, 128), (0, 2, 1)), ((130, 160), None), ((64, 2, 160), (2, 1, 0))],
)
def test_large_transposes(shape: tuple[int, ...], axes: tuple[int, ...] | None) -> None:
    # from 16,384 elements a transposing block runs in 16 x 16 tiles when its last two
    # extents allow (the first two shapes), else row by row
    check_op_lowering("transpose", data(shape), axes=axes)
    check_op_lowering("transpose", data(shape, "int8"), axes=axes)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_dtypes(dtype: str) -> None:
    check_op_lowering("transpose", data((3, 1, 7), dtype), axes=(2, 0, 1))


@pytest.mark.parametrize("axis", [-3, -2, -1, 0, 1, 2])
def test_reverse(axis: int) -> None:
    check_op_lowering("reverse", data((2, 3, 5)), axis=axis)


@pytest.mark.parametrize(("shape", "dtype"), [((7,), "int8"), ((1,), "bool"), ((33, 1), "float16")])
def test_reverse_shapes_dtypes(shape: tuple[int, ...], dtype: str) -> None:
    check_op_lowering("reverse", data(shape, dtype), axis=0)


@pytest.mark.parametrize("repeats", [1, 2, 3, 7])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_repeat(repeats: int, axis: int) -> None:
    check_op_lowering("repeat", data((3, 5)), repeats=repeats, axis=axis)


@pytest.mark.parametrize(
    ("shape", "dtype"), [((1,), "bool"), ((7,), "int32"), zero((0, 2), "int8")]
)
def test_repeat_shapes_dtypes(shape: tuple[int, ...], dtype: str) -> None:
    check_op_lowering("repeat", data(shape, dtype), repeats=3, axis=0)


@pytest.mark.parametrize(
    ("shape", "reps"),
    [
        ((2, 3), ()),
        ((2, 3), (1, 1)),
        ((2, 3), (3,)),
        ((2, 3), (2, 1)),
        ((2, 3), (2, 1, 3)),
        ((2, 3), (2, 2, 2, 2)),
        ((), (3, 2)),
        ((1, 7), (3, 1)),
        ((7,), (5,)),
        ((2, 1, 3), (2,)),
        zero((0, 3), (2, 2)),
    ],
)
def test_tile(shape: tuple[int, ...], reps: tuple[int, ...]) -> None:
    check_op_lowering("tile", data(shape), reps=reps)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float64"])
def test_tile_dtypes(dtype: str) -> None:
    check_op_lowering("tile", data((3, 2), dtype), reps=(2, 3))


# ---- broadcasting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((), (3,)),
        ((), (2, 3)),
        ((), ()),
        ((1,), (7,)),
        ((1, 3), (4, 2, 3)),
        ((3, 1), (3, 7)),
        ((1, 1), (2, 5)),
        ((2, 1, 3), (2, 33, 3)),
        ((7,), (7,)),
        ((7,), (1, 7)),
        ((1,), (0,)),
        zero((3, 1), (3, 0)),
    ],
)
def test_broadcast_to(shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    x = data(shape) if shape else np.asarray(np.float32(2.5))
    check_op_lowering("broadcast_to", x, shape=target)
    check_op_lowering("broadcast_to_like", x, data(target, "int8"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_to_dtypes(dtype: str) -> None:
    check_op_lowering("broadcast_to", data((3, 1), dtype), shape=(2, 3, 4))


# ---- concatenate, stack, split ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [
        ([(2, 3)], 0),
        ([(2, 3), (5, 3)], 0),
        ([(2, 3), (2, 1), (2, 7)], 1),
        ([(2, 3), (2, 1), (2, 7)], -1),
        ([(2, 3, 4), (2, 1, 4)], -2),
        ([(7,), (33,), (1,)], 0),
        zero([(2, 0), (2, 3), (2, 0)], 1),
        zero([(0, 3), (0, 3)], 0),
        ([(1, 2)] * 5, 0),
    ],
)
def test_concatenate(shapes: list[tuple[int, ...]], axis: int) -> None:
    arrays = tuple(data(s, seed=k) for k, s in enumerate(shapes))
    check_op_lowering("concatenate", arrays, axis=axis)


@pytest.mark.parametrize("dtype", DTYPES)
def test_concatenate_dtypes(dtype: str) -> None:
    arrays = (data((2, 3), dtype, 1), data((2, 1), dtype, 2))
    check_op_lowering("concatenate", arrays, axis=1)


@pytest.mark.parametrize("axis", [-3, -2, -1, 0, 1, 2])
def test_stack(axis: int) -> None:
    arrays = tuple(data((2, 3), seed=k) for k in range(3))
    check_op_lowering("stack", arrays, axis=axis)


@pytest.mark.parametrize(
    ("shape", "count", "axis"), [((), 3, 0), ((), 1, -1), ((7,), 1, 1), zero((0, 2), 2, 1)]
)
def test_stack_shapes(shape: tuple[int, ...], count: int, axis: int) -> None:
    arrays = tuple(np.asarray(data(shape, seed=k)) for k in range(count))
    check_op_lowering("stack", arrays, axis=axis)


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "int64"])
def test_stack_dtypes(dtype: str) -> None:
    check_op_lowering("stack", (data((3,), dtype, 1), data((3,), dtype, 2)), axis=1)


@pytest.mark.parametrize(
    ("shape", "ios", "axis"),
    [
        ((6, 7), 1, 0),
        ((6, 7), 3, 0),
        ((6, 7), 7, -1),
        ((6, 7), (1, 3), 1),
        ((6, 7), (2,), 0),
        ((6, 7), (1, 2, 3, 4, 5), -2),
        ((6, 7), (), 1),
        zero((0, 3), 2, 0),
        ((33,), (16,), 0),
    ],
)
def test_split(shape: tuple[int, ...], ios: int | tuple[int, ...], axis: int) -> None:
    check_op_lowering("split", data(shape), indices_or_sections=ios, axis=axis)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float64"])
def test_split_dtypes(dtype: str) -> None:
    check_op_lowering("split", data((4, 3), dtype), indices_or_sections=(1, 2), axis=1)


# ---- strided_slice ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs",
    [
        {"begin": (1,), "end": (5,)},
        {"begin": (0, 1), "end": (7, 4), "strides": (2, 2)},
        {"begin": (6,), "end": (0,), "strides": (-1,)},
        {"begin": (-1, -1, -1), "end": (-8, -6, -4), "strides": (-1, -2, -1)},
        {"begin": (-1,), "end": (-(2**31),), "strides": (-3,)},
        {"begin": (5, -1), "end": (-9, 0), "strides": (-1, -2)},
        {"begin": (-3, 1), "end": (2**31 - 1, 2**31 - 1)},
        {"begin": (-100,), "end": (100,), "strides": (3,)},
        {"begin": (-100,), "end": (0,), "strides": (-1,)},  # begin before the start: empty
        {"begin": (4,), "end": (2,)},  # begin past the end: empty
        {"begin": (2,), "end": (4,), "strides": (-1,)},  # wrong direction: empty
        {"begin": (0, 0, 0), "end": (1,)},  # omitted ends take the whole axis
        {"begin": (1, 2), "end": (3, 4, 3), "strides": (1, 1, 2)},
        {"begin": (1,), "end": (4,), "strides": (2,), "axes": (1,)},
        {"begin": (-1, 2), "end": (-6, 0), "strides": (-2, -1), "axes": (-1, 0)},
        {"begin": (-2,), "end": (-1,), "axes": (2,)},
        {"begin": (1, 0), "end": (3, -1), "slice_mode": "size"},
        {"begin": (-1, -2), "end": (1, 5), "slice_mode": "size"},
        {"begin": (2, 1), "end": (2, 1), "strides": (-1, -1), "slice_mode": "size"},
        {"begin": (1,), "end": (-1,), "axes": (2,), "slice_mode": "size"},
    ],
)
def test_strided_slice(attrs: dict[str, Any]) -> None:
    check_op_lowering("strided_slice", data((7, 5, 3)), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_slice_dtypes(dtype: str) -> None:
    check_op_lowering("strided_slice", data((33,), dtype), begin=(30,), end=(1,), strides=(-4,))


# ---- take ---------------------------------------------------------------------------------------

INDICES = np.array([[0, 4, -1], [-5, 7, 12], [-13, 3, 2]])


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, 2, -3])
def test_take_modes(mode: str, axis: int | None) -> None:
    check_op_lowering("take", data((4, 5, 3)), INDICES, axis=axis, mode=mode)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_fast(axis: int | None) -> None:
    x = data((4, 5, 3))
    n = x.size if axis is None else x.shape[axis]
    check_op_lowering("take", x, np.array([[0, n - 1], [n // 2, 1]]), axis=axis, mode="fast")


@pytest.mark.parametrize("bad", [-7, 5, 100, -1])
def test_take_fast_out_of_range_raises_like_the_reference(bad: int) -> None:
    # a run-time check in the kernel; the gather itself still never reads out of bounds
    x, idx = data((4, 5)), np.array([0, bad, 4])
    with pytest.raises(ExecutionError, match=r"take index is out of range for axis 1 of size 5"):
        run_compiled_op("take", x, idx, axis=1, mode="fast")
    with pytest.raises(ExecutionError, match="out of range for a flattened tensor of size 20"):
        run_compiled_op("take", x, np.array([bad * 4 if bad >= 0 else bad]), mode="fast")


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
@pytest.mark.parametrize(
    ("shape", "ishape", "axis", "batch_dims"),
    [
        ((2, 5), (2, 3), 1, 1),
        ((2, 5), (2, 3), 1, -1),
        ((2, 3, 7, 2), (2, 3, 4), 2, 2),
        ((2, 3, 7, 2), (2, 4, 1), 2, 1),
        ((2, 3, 7, 2), (2, 3), -1, -1),
        ((3, 4), (3,), 1, 1),
        ((2, 3, 7), (2, 3), 2, 0),
    ],
)
def test_take_batch_dims(
    mode: str, shape: tuple[int, ...], ishape: tuple[int, ...], axis: int, batch_dims: int
) -> None:
    n = shape[axis]
    rng = np.random.default_rng(3)
    low, high = (0, n) if mode == "fast" else (-2 * n, 2 * n)
    idx = rng.integers(low, high, size=ishape)
    check_op_lowering("take", data(shape), idx, axis=axis, batch_dims=batch_dims, mode=mode)


@pytest.mark.parametrize(
    "indices",
    [
        np.array([0, -1, 3, 127, -128], dtype="int8"),
        np.array([0, 4, 200, 255], dtype="uint8"),
        np.array([0, 3, 2**40, -(2**40)], dtype="int64"),
        np.array([1, 4, 2**32 - 1], dtype="uint32"),
        np.array([1, 3, 2**64 - 1, 2**63], dtype="uint64"),
        np.array(3, dtype="int32"),
        np.array(-1, dtype="int16"),
        zero(np.zeros((0, 2), dtype="int32")),
    ],
)
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_index_dtypes(indices: Array, mode: str) -> None:
    check_op_lowering("take", data((3, 5)), indices, axis=1, mode=mode)
    check_op_lowering("take", data((3, 5)), indices, axis=None, mode=mode)


@pytest.mark.parametrize("dtype", DTYPES)
def test_take_dtypes(dtype: str) -> None:
    check_op_lowering("take", data((7, 3), dtype), np.array([6, 0, -1, 9]), axis=0, mode="wrap")


@pytest.mark.parametrize(
    ("shape", "indices", "axis"),
    [
        ((), np.array([0, 0, 3]), None),  # a scalar taken as a 1-element vector
        ((1, 1), np.array([[2], [-1]]), None),
        ((33,), np.array(40), 0),
        zero((0, 3), np.zeros((0,), dtype="int32"), 0),
        zero((3, 0), np.array([1, 2]), 0),
    ],
)
def test_take_shapes(shape: tuple[int, ...], indices: Array, axis: int | None) -> None:
    x = data(shape) if shape else np.asarray(np.float32(-4.5))
    check_op_lowering("take", x, indices, axis=axis, mode="clip")


# ---- layout_transform ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "src", "dst"),
    [
        ((2, 16, 3, 5), "NCHW", "NCHW8c"),
        ((2, 16, 3, 5), "NCHW", "NHWC"),
        ((2, 16, 3, 5), "NCHW", "NCHW16c"),
        ((2, 16, 3, 5), "NCHW", "NCHW1c"),
        ((2, 2, 3, 5, 8), "NCHW8c", "NCHW"),
        ((2, 2, 3, 5, 8), "NCHW8c", "NHWC"),
        ((2, 4, 3, 5, 4), "NCHW4c", "NCHW8c"),
        ((2, 2, 3, 5, 8), "NCHW8c", "NCHW2c"),
        ((2, 3, 5, 12), "NHWC", "NCHW4c"),
        ((2, 3, 5, 12), "NHWC", "NC3cHW"),
        ((2, 3, 7, 4), "NCW4c", "NWC"),
        ((7, 4, 6), "NCW", "NCW2c2w"),
        ((7, 2, 3, 2, 2), "NCW2c2w", "NWC"),
        ((3, 4), "NC", "CN"),
    ],
)
def test_layout_transform(shape: tuple[int, ...], src: str, dst: str) -> None:
    check_op_lowering("layout_transform", data(shape), src_layout=src, dst_layout=dst)


@pytest.mark.parametrize("dtype", ["int8", "bool", "float16"])
def test_layout_transform_dtypes(dtype: str) -> None:
    x = data((1, 8, 2, 3), dtype)
    check_op_lowering("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")


# ---- shape_of, one_hot --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (7,), (2, 33, 1), zero((0, 5)), (1, 2, 3, 4, 5)])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_shape_of(shape: tuple[int, ...], dtype: str) -> None:
    x = data(shape, "int8") if shape else np.asarray(np.int8(3))
    check_op_lowering("shape_of", x, dtype=dtype)


ON, OFF = np.float32(2.5), np.float32(-1.0)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2, -3])
def test_one_hot_axes(axis: int) -> None:
    indices = np.array([[0, 3, -1], [4, 2, 7]], dtype="int32")  # -1, 4 and 7 are out of range
    check_op_lowering("one_hot", indices, ON, OFF, depth=4, axis=axis)


@pytest.mark.parametrize(
    ("indices", "depth"),
    [
        (np.array(2, dtype="int64"), 5),
        (np.array(5, dtype="int64"), 5),
        (np.array([0, 1, 255], dtype="uint8"), 1),
        (np.array([-128, 0, 6, 127], dtype="int8"), 7),
        (np.array([2**33, 3, 2**64 - 1], dtype="uint64"), 4),
        (np.arange(-3, 40, dtype="int32").reshape(1, 43), 33),
        zero(np.zeros((0, 3), dtype="int32"), 3),
    ],
)
def test_one_hot_indices(indices: Array, depth: int) -> None:
    check_op_lowering("one_hot", indices, ON, OFF, depth=depth, axis=-1)


@pytest.mark.parametrize(
    ("on", "off", "dtype"),
    [
        (np.float32(2.5), np.float32(-1.5), "int32"),
        (np.float32(0.25), np.float32(0.0), "bool"),
        (np.float32(np.nan), np.float32(-0.0), "bool"),
        (np.int32(-3), np.int32(0), "bool"),
        (np.int64(7), np.int64(-2), "int8"),
        (np.int32(300), np.int32(-1), "uint8"),
        (np.float32(-1.0), np.float32(200.75), "uint8"),
        (np.float32(1.0), np.float32(0.0), "float16"),
        (np.float64(1e-300), np.float64(np.inf), "float32"),
        (np.float32(np.nan), np.float32(-np.inf), "float64"),
        (np.bool_(True), np.bool_(False), "float32"),
        (np.bool_(True), np.bool_(False), "bool"),
        (np.float16(3.0), np.float16(-2.0), "int64"),
        (np.int8(-5), np.int8(5), "uint32"),
    ],
)
def test_one_hot_values(on: Any, off: Any, dtype: str) -> None:
    indices = np.array([[1, 0], [3, -2]], dtype="int32")
    check_op_lowering(
        "one_hot", indices, np.asarray(on), np.asarray(off), depth=3, axis=1, dtype=dtype
    )
