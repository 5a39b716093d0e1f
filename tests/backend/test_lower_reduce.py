"""Compiled reductions (``relay/op/lowering/reduce.py``) against their numpy references.

Every reduction (sum, prod, max, min, mean, argmax, argmin, logsumexp, variance) and
``collapse_sum_like`` is compiled as a single call and compared with the reference: axes
(None, int, lists, negative), keepdims, exclude (including nothing left to reduce), the
dtypes each accepts, nan/inf, ties, integer wrap-around, empty reductions, float16.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import relay
from relay.backend.target import Target
from relay.testing.lowering import check_op_lowering, primitive_op_function, run_compiled_op

pytestmark = pytest.mark.tvm

Array = np.ndarray[Any, np.dtype[Any]]

EXACT = Target("llvm", fast_math=False)
"""fast_math off: logsumexp's exponential is the exact one."""


def _data(shape: tuple[int, ...], dtype: str, seed: int = 0) -> Array:
    """Random data of ``dtype``: normal floats, integers over the dtype's range, bools."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.standard_normal(shape) > 0
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -(2**20)), min(int(info.max), 2**20)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def _tol(dtype: str) -> dict[str, float]:
    return {"rtol": 1e-2, "atol": 1e-2} if dtype == "float16" else {"rtol": 1e-5, "atol": 1e-5}


def _keep_mean(x: Array, axes: tuple[int, ...]) -> Array:
    """A mean of ``x``'s dtype with keepdims (variance's second input)."""
    return np.asarray(np.mean(x, axis=axes, keepdims=True)).astype(x.dtype)


def _compact_empty(shape: tuple[int, ...], dtype: str) -> Array:
    """An empty array with the compact strides and 64-byte alignment TVM's argument check
    insists on (numpy gives empty arrays strides of 0, which the kernels reject)."""
    itemsize = np.dtype(dtype).itemsize
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    buf = np.zeros(128, np.uint8)
    offset = -buf.ctypes.data % 64
    base = buf[offset : offset + 64].view(dtype)
    return as_strided(base, shape, tuple(reversed(strides)))


# ---- axes, keepdims, exclude --------------------------------------------------------------------

ONE_INPUT = ["sum", "prod", "max", "min", "mean", "argmax", "argmin", "logsumexp"]

AXES = [
    {"axis": None},
    {"axis": 1},
    {"axis": -1, "keepdims": True},
    {"axis": [0, 2]},
    {"axis": [-1, 0], "keepdims": True},
    {"axis": [1], "exclude": True},
    {"axis": [-3, 2], "exclude": True, "keepdims": True},
    {"axis": [0, 1, 2], "exclude": True},  # nothing left to reduce
]


@pytest.mark.parametrize("attrs", AXES, ids=str)
@pytest.mark.parametrize("op", ONE_INPUT)
def test_axes(op: str, attrs: dict[str, Any]) -> None:
    check_op_lowering(op, _data((3, 7, 5), "float32"), rtol=1e-5, atol=1e-5, **attrs)


@pytest.mark.parametrize("op", ["sum", "max", "mean", "logsumexp"])
def test_rank0_is_identity(op: str) -> None:
    check_op_lowering(op, np.array(-2.5, np.float32))


@pytest.mark.parametrize("axis", [None, 0, [0, 3], [-2]])
def test_rank4_odd_sizes(axis: Any) -> None:
    x = _data((2, 1, 33, 3), "float32", seed=3)
    check_op_lowering("sum", x, axis=axis, rtol=1e-5, atol=1e-5)
    check_op_lowering("argmin", x, axis=axis, keepdims=True)


# ---- dtypes -------------------------------------------------------------------------------------

DTYPE_AXES: dict[str, dict[str, Any]] = {
    "float64": {"axis": 0},
    "float16": {"axis": 1},
    "int32": {"axis": None, "keepdims": True},
    "int8": {"axis": 0},
    "uint8": {"axis": -1, "keepdims": True},
    "int64": {"axis": [0, 1]},
    "bool": {"axis": 0},
}


@pytest.mark.parametrize("dtype", list(DTYPE_AXES))
@pytest.mark.parametrize("op", ONE_INPUT)
def test_dtypes(op: str, dtype: str) -> None:
    if op == "mean" and dtype == "bool":
        pytest.skip("the type relation rejects a bool mean")
    if op == "logsumexp" and not dtype.startswith("float"):
        pytest.skip("logsumexp needs floats")
    x = _data((7, 33), dtype, seed=1)
    if op == "prod" and dtype.startswith("float"):
        x = (1 + 0.1 * x).astype(dtype)  # a product of 33 values near 1 stays in range
    check_op_lowering(op, x, **DTYPE_AXES[dtype], **_tol(dtype))


def test_bool_sum_prod_are_or_and() -> None:
    x = np.array([[True, True, False], [False, False, False], [True, True, True]])
    assert run_compiled_op("sum", x, axis=1).tolist() == [True, False, True]
    assert run_compiled_op("prod", x, axis=1).tolist() == [False, False, True]
    assert run_compiled_op("max", x, axis=0).tolist() == [True, True, True]
    assert run_compiled_op("min", x, axis=0).tolist() == [False, False, False]
    check_op_lowering("sum", x, axis=1)
    check_op_lowering("prod", x, axis=[0, 1])


# ---- integers: wrap-around and truncating means -------------------------------------------------


@pytest.mark.parametrize(
    ("op", "x"),
    [
        ("sum", np.full((3, 100), 100, np.int8)),  # wraps around in int8
        ("sum", np.full((2, 5), 2**30, np.int32)),
        ("sum", np.full((2, 9), 200, np.uint8)),
        ("prod", np.full((2, 7), 3, np.int8)),
        ("prod", np.full((2, 40), -3, np.int32)),
        ("mean", np.full((3, 100), 100, np.int8)),  # the int8 sum wraps, then divides
        ("mean", np.full((3, 300), -7, np.int8)),  # a count (300) outside int8
        ("mean", np.full((2, 300), 255, np.uint8)),
        ("mean", np.array([[-7, 2, 0], [7, -2, 0], [-1, -1, 1]], np.int32)),  # toward zero
        ("mean", np.array([[-128, -128], [127, 127]], np.int8)),
        ("mean", np.array([[2**40, 3, 7], [2**62, 2**61, 5]], np.uint64)),  # divides in uint64
        ("max", np.array([[-128, -128], [127, -128]], np.int8)),
        ("min", np.array([[0, 255], [255, 255]], np.uint8)),
    ],
)
def test_integer_semantics(op: str, x: Array) -> None:
    check_op_lowering(op, x, axis=1)


def test_integer_mean_truncates_toward_zero() -> None:
    x = np.array([[-7, 2, 0], [7, -2, 0]], np.int32)  # sums -5, 5; counts 3
    assert run_compiled_op("mean", x, axis=1).tolist() == [-1, 1]


# ---- nan, inf, ties -----------------------------------------------------------------------------


def _specials() -> Array:
    x = _data((7, 9), "float32", seed=2)
    x[0, 3] = np.nan  # one nan
    x[1, :] = -np.inf  # all -inf
    x[2, 4] = np.inf
    x[3, 0], x[3, 5] = np.nan, np.inf
    x[4, 2], x[4, 6] = np.nan, np.nan  # two nans (argmax: the first, or the last)
    x[5, :] = np.inf
    x[6, 1], x[6, 7] = -np.inf, np.inf
    return x


@pytest.mark.parametrize("target", [None, EXACT], ids=["fast_math", "exact"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean", "logsumexp"])
def test_nan_inf(op: str, axis: int, target: Any) -> None:
    check_op_lowering(op, _specials(), axis=axis, target=target)


@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_nan_inf(op: str, axis: Any, last: bool) -> None:
    check_op_lowering(op, _specials(), axis=axis, select_last_index=last)


def test_max_propagates_nan() -> None:
    x = np.array([[np.nan, 1.0, 2.0], [1.0, 2.0, np.nan], [1.0, np.nan, -np.inf]], np.float32)
    for op in ("max", "min"):
        assert np.isnan(run_compiled_op(op, x, axis=1)).all()
    assert run_compiled_op("argmax", x, axis=1).tolist() == [0, 2, 1]
    assert run_compiled_op("argmin", x, axis=1, select_last_index=True).tolist() == [0, 2, 1]


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("axis", [1, [0, 2]])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_ties(op: str, axis: Any, last: bool, dtype: str) -> None:
    x = np.random.default_rng(4).integers(0, 2, (3, 7, 5)).astype(dtype)
    check_op_lowering(op, x, axis=axis, select_last_index=last)


@pytest.mark.parametrize(
    ("op", "x"),
    [
        ("argmax", np.full((2, 5), -128, np.int8)),  # every value is the identity's
        ("argmin", np.full((2, 5), 127, np.int8)),
        ("argmax", np.full((2, 5), -np.inf, np.float32)),
        ("argmin", np.full((2, 5), np.inf, np.float32)),
        ("argmax", np.zeros((2, 5), bool)),
        ("argmin", np.full((2, 5), 65535, np.uint16)),
    ],
)
@pytest.mark.parametrize("last", [False, True])
def test_arg_extreme_values(op: str, x: Array, last: bool) -> None:
    got = check_op_lowering(op, x, axis=1, select_last_index=last)
    assert got.tolist() == [4 if last else 0] * 2


def test_argmax_flat_index_over_several_axes() -> None:
    x = np.zeros((2, 3, 4), np.float32)
    x[1, 2, 1] = 5.0  # flat over axes (1, 2): 2 * 4 + 1 = 9
    x[0, 0, 3] = 5.0  # 3
    assert run_compiled_op("argmax", x, axis=[1, 2]).tolist() == [3, 9]
    # exclude: over axes (0, 2) for each of axis 1
    assert run_compiled_op("argmax", x, axis=[1], exclude=True).tolist() == [3, 0, 5]


# ---- logsumexp ----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [None, EXACT], ids=["fast_math", "exact"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_logsumexp_is_stable(dtype: str, target: Any) -> None:
    scale = {"float16": 1000.0, "float32": 300.0, "float64": 3000.0}[dtype]
    x = (_data((5, 33), "float64", seed=5) * scale).astype(dtype)  # exp alone would overflow
    got = check_op_lowering("logsumexp", x, axis=1, target=target, **_tol(dtype))
    assert np.isfinite(got).all()


def test_logsumexp_special_rows() -> None:
    x = np.array(
        [[-np.inf] * 3, [np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0], [-np.inf, 0.0, -np.inf]],
        np.float32,
    )
    got = run_compiled_op("logsumexp", x, axis=1)
    assert got[0] == -np.inf and got[1] == np.inf and np.isnan(got[2]) and got[3] == 0.0


# ---- mean, variance -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int8", "uint8"])
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_dtypes(dtype: str, unbiased: bool) -> None:
    x = _data((7, 33), dtype, seed=6)
    if dtype in ("int8", "uint8"):
        x = (x % 16).astype(dtype)  # squares that stay small (and some that wrap in int8)
    check_op_lowering("variance", x, _keep_mean(x, (1,)), axis=1, unbiased=unbiased, **_tol(dtype))


@pytest.mark.parametrize(
    "attrs",
    [
        {"axis": None},
        {"axis": 0, "keepdims": True},
        {"axis": [0, -1]},
        {"axis": [1], "exclude": True, "keepdims": True},
        {"axis": [0, 1, 2], "exclude": True},  # nothing reduced: (x - m)^2 / (1 - unbiased)
    ],
    ids=str,
)
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_axes(attrs: dict[str, Any], unbiased: bool) -> None:
    x = _data((3, 7, 5), "float32", seed=7)
    from relay.op.reduce import reduce_axes

    axis = attrs["axis"]
    axes = reduce_axes(3, (axis,) if isinstance(axis, int) else axis, bool(attrs.get("exclude")))
    mean = _keep_mean(x, axes) if axes else x[:1]  # broadcast along axis 0 when nothing reduced
    check_op_lowering("variance", x, mean, unbiased=unbiased, **attrs)


def test_variance_of_a_given_mean() -> None:
    x = _data((4, 6), "float32", seed=8)
    m = np.full((1, 1), 0.5, np.float32)  # not the data's mean, broadcast on both axes
    check_op_lowering("variance", x, m, axis=1, unbiased=True)
    check_op_lowering("variance", x, np.zeros((4, 1), np.float32), axis=[0, 1])


def test_unbiased_variance_of_one_element() -> None:
    x = np.array([[1.0], [np.nan], [np.inf]], np.float32)
    m = np.array([[1.0], [0.0], [1.0]], np.float32)
    got = check_op_lowering("variance", x, m, axis=1, unbiased=True)  # 0 / 0, nan / 0, inf / 0
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == np.inf


def test_mean_float16_in_float32() -> None:
    x = np.full((2, 4096), 1.0, np.float16)  # a float16 running sum would stop at 2048
    got = check_op_lowering("mean", x, axis=1)
    assert got.tolist() == [1.0, 1.0]


def test_sum_float16_accumulates_in_float32() -> None:
    # numpy's float16 sum rounds each step along a strided axis (2048 + 1 == 2048) but not
    # along a contiguous one (pairwise in float32); the compiled sum is 4096 both ways
    x = np.ones((4096, 3), np.float16)
    assert run_compiled_op("sum", x, axis=0).tolist() == [4096.0] * 3
    check_op_lowering("sum", x.T.copy(), axis=1)


# ---- empty reductions ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "mean", "logsumexp"])
def test_empty_reduction(op: str, dtype: str) -> None:
    if (op == "mean" and dtype == "bool") or (op == "logsumexp" and dtype != "float32"):
        pytest.skip("rejected by the type relation")
    if op == "mean" and dtype == "int8":
        pytest.skip("an integer mean over no element is a type error")
    check_op_lowering(op, _compact_empty((5, 0), dtype), axis=1)
    check_op_lowering(op, _compact_empty((0, 3), dtype), axis=0, keepdims=True)


@pytest.mark.parametrize("unbiased", [False, True])
def test_empty_variance(unbiased: bool) -> None:
    x = _compact_empty((3, 0, 2), "float32")
    check_op_lowering("variance", x, np.zeros((3, 1, 2), np.float32), axis=1, unbiased=unbiased)


def test_empty_output() -> None:
    check_op_lowering("sum", _compact_empty((0, 3), "float32"), axis=1)
    check_op_lowering("argmax", _compact_empty((0, 3), "float32"), axis=1)


# ---- collapse_sum_like --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((3, 7, 5), (7, 5)),
        ((3, 7, 5), (7, 1)),
        ((3, 7, 5), (1, 7, 1)),
        ((3, 7, 5), ()),
        ((3, 7, 5), (3, 7, 5)),
        ((3, 1, 5), (1, 5)),
        ((33,), (1,)),
        ((2, 1, 1), (1, 1)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_collapse_sum_like(shape: tuple[int, ...], target: tuple[int, ...], dtype: str) -> None:
    x = _data(shape, dtype, seed=9)
    check_op_lowering("collapse_sum_like", x, np.zeros(target, dtype), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bool", "float64", "uint8"])
def test_collapse_sum_like_dtypes(dtype: str) -> None:
    x = _data((4, 7, 3), dtype, seed=10)
    check_op_lowering("collapse_sum_like", x, np.zeros((7, 1), dtype), **_tol(dtype))


# ---- structure ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "args", "attrs"),
    [
        ("sum", 1, {"axis": 1}),
        ("prod", 1, {"axis": 0}),
        ("max", 1, {"axis": None}),
        ("min", 1, {"axis": [0, 1]}),
        ("mean", 1, {"axis": 1}),
        ("argmax", 1, {"axis": 1}),
        ("argmin", 1, {"axis": 0}),
        ("logsumexp", 1, {"axis": 1}),
        ("variance", 2, {"axis": 1}),
        ("collapse_sum_like", 2, {}),
    ],
)
def test_lowered_as_reduction_blocks(op: str, args: int, attrs: dict[str, Any]) -> None:
    """Each reduction is a block with reduction iterators (what the schedules look for); a
    float max or min for the CPU is two (the values and the nan flags), logsumexp two (the
    maximum and the sum)."""
    from relay.backend.lower import lower_primitive
    from relay.backend.runtime import tvm
    from relay.backend.schedule.cpu import is_reduction

    x = _data((6, 8), "float32")
    second = np.zeros((6, 1) if op == "variance" else (8,), np.float32)
    func = primitive_op_function(op, (x, second)[:args], attrs)
    sch = tvm().s_tir.Schedule(lower_primitive(func).prim_func)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    reductions = [sch.get(b).name_hint for b in blocks if is_reduction(sch, b)]
    assert len(reductions) == (2 if op in ("logsumexp", "max", "min") else 1), reductions


@pytest.mark.parametrize("op", ["sum", "max", "min", "mean", "prod"])
@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((129, 1024), 0),  # chunks of 64 columns, a bias's gradient
        ((300, 96), 0),  # chunks of 32
        ((40, 48), 0),  # chunks of 16, one thread
        ((5, 130, 64), 1),  # an outer axis kept: its chunks run in parallel too
        ((9, 7, 80), [0, 1]),  # two outer axes reduced
        ((64, 20), 0),  # columns not a multiple of 16: the untiled loop
    ],
)
def test_column_reductions(op: str, shape: tuple[int, ...], axis: Any) -> None:
    """Reductions over outer axes of a row-major input, each chunk of columns accumulated
    in registers (``_schedule_columns``), against the reference; a NaN in a column of a max
    or min is that column's result."""
    x = _data(shape, "float32", seed=len(shape) + shape[-1])
    if op == "prod":
        x = (1 + x / 64).astype(np.float32)  # products of hundreds of values stay finite
    if op in ("max", "min"):
        x[3 % shape[0], ..., 17 % shape[-1]] = np.nan
    check_op_lowering(op, x, axis=axis, rtol=2e-5, atol=2e-5)


def _group(param: str, body: str, ret: str) -> Any:
    """The typed primitive function ``fn (%p0: param) -> ret { body }``."""
    import relay
    from relay.ir.expr import Call, Function

    mod = relay.infer_type(
        relay.parse(
            f"def @main(%a: {param}) -> {ret} {{\n"
            f"  %0 = fn (%p0: {param}, Primitive=1) -> {ret} {{ {body} }};\n"
            "  %0(%a)\n}"
        )
    )
    call = mod.function("main").body
    assert isinstance(call, Call) and isinstance(call.op, Function)
    return call.op


def _scheduled_group(param: str, body: str, ret: str) -> str:
    """The CPU schedule, as TVMScript, of :func:`_group`."""
    from relay.backend.lower import lower_primitive
    from relay.backend.schedule import schedule_cpu

    return str(schedule_cpu(lower_primitive(_group(param, body, ret))).script())


@pytest.mark.parametrize(
    ("param", "body", "ret"),
    [
        # a sum to one value with a consumer in its kernel (a norm): TVM's rfactor failed on
        # the loop-less consumer, and the kernel ran as one scalar loop
        (
            "Tensor[(65536,), float32]",
            "%0 = multiply(%p0, %p0); %1 = sum(%0); sqrt(%1)",
            "float32",
        ),
        # a sum over two trailing axes, to one value and to rows
        ("Tensor[(256, 512), float32]", "sum(%p0)", "float32"),
        (
            "Tensor[(8, 16, 64), float32]",
            "%0 = sum(%p0, axis=[1, 2]); tanh(%0)",
            "Tensor[(8,), float32]",
        ),
    ],
)
def test_contiguous_reductions_are_factored_and_vectorized(param: str, body: str, ret: str) -> None:
    text = _scheduled_group(param, body, ret)
    assert "_rf" in text and "T.vectorized" in text, text


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((256, 512), None), ((64, 48), None), ((8, 16, 64), [1, 2]), ((3, 5, 32), [1, 2])],
)
def test_sums_over_trailing_axes(shape: tuple[int, ...], axis: Any) -> None:
    x = _data(shape, "float32", seed=shape[0])
    check_op_lowering("sum", x, axis=axis, rtol=2e-5, atol=2e-4)
    check_op_lowering("prod", (1 + x / 256).astype(np.float32), axis=axis, rtol=2e-5, atol=2e-5)


def test_a_norm_compiles_to_numpys_value() -> None:
    import relay

    x = _data((65536,), "float32", seed=3)
    exe = relay.build(
        relay.parse(
            "def @main(%x: Tensor[(65536,), float32]) {"
            " %0 = multiply(%x, %x); %1 = sum(%0); sqrt(%1) }"
        )
    )
    assert exe.kernels == ["fused_multiply_sum_sqrt_0"]
    np.testing.assert_allclose(exe(x), np.sqrt(np.sum(x.astype(np.float64) ** 2)), rtol=1e-5)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_column_reductions_accumulate_in_registers(op: str) -> None:
    # a chunk of 64 columns' partial results in a local buffer, vectorized, in parallel
    text = _scheduled_group(
        "Tensor[(512, 1024), float32]", f"{op}(%p0, axis=[0])", "Tensor[(1024,), float32]"
    )
    assert f'{op}_local = T.sblock_alloc_buffer((1024,), scope="local")' in text, text
    assert "T.vectorized(64)" in text and "T.parallel(16)" in text, text


@pytest.mark.parametrize("op", ["max", "min"])
def test_float_extremes_are_factored_and_vectorized(op: str) -> None:
    # the values and the nan flags, each factored by rfactor: no scalar loop over a row
    text = _scheduled_group(
        "Tensor[(64, 1024), float32]", f"{op}(%p0, axis=[1])", "Tensor[(64,), float32]"
    )
    assert f"{op}_rf" in text and f"{op}_flags_rf" in text and "T.vectorized" in text, text


@pytest.mark.parametrize(("producer", "reductions"), [("exp(%p0)", 2), ("log(%p0)", 1)])
def test_a_max_reads_an_expensive_input_once(producer: str, reductions: int) -> None:
    # the values and the nan flags both inline the input: a vectorized fast exp is cheap to
    # compute twice, libm's log is not, and keeps the single nan-propagating reduction
    from relay.backend.lower import lower_primitive
    from relay.backend.runtime import tvm
    from relay.backend.schedule.cpu import is_reduction

    group = _group(
        "Tensor[(64, 1024), float32]", f"max({producer}, axis=[1])", "Tensor[(64,), float32]"
    )
    sch = tvm().s_tir.Schedule(lower_primitive(group, fast_math=True).prim_func)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    assert sum(is_reduction(sch, b) for b in blocks) == reductions


@pytest.mark.parametrize(
    ("shape", "parallel"),
    [((128, 10), False), ((1024, 10), False), ((4096, 10), True), ((2048, 24), True)],
)
def test_reductions_run_in_parallel_for_enough_data(shape: tuple[int, int], parallel: bool) -> None:
    # a reduction along rows too short to factor reads 1280 values: one thread (0.37 us a
    # call against 1.34 in parallel); from 16,384 values on, in parallel
    rows, cols = shape
    text = _scheduled_group(
        f"Tensor[({rows}, {cols}), float32]", "max(%p0, axis=[1])", f"Tensor[({rows},), float32]"
    )
    assert ("T.parallel" in text) == parallel, text


@pytest.mark.parametrize("n", [33, 47, 100, 1000, 1001])
@pytest.mark.parametrize("op", ["sum", "max", "min", "mean"])
def test_rows_of_partial_vectors_reduce_in_a_head_and_a_tail(op: str, n: int) -> None:
    # along rows whose length is not whole vectors: the head's whole vectors factored and
    # vectorized, the tail's rest on one lane, combined after (TVM's rfactor of a split
    # with a tail dropped its predicate and read past the rows)
    text = _scheduled_group(
        f"Tensor[(64, {n}), float32]", f"{op}(%p0, axis=[1])", "Tensor[(64,), float32]"
    )
    assert "_head_rf" in text and "_tail" in text, text
    x = _data((64, n), "float32", seed=n)
    x[3, n - 1] = 1000.0  # in the tail
    x[5, 0] = -1000.0  # in the head
    check_op_lowering(op, x, axis=1, rtol=2e-5, atol=2e-4)


@pytest.mark.parametrize("dtype", ["int32", "float64", "float16"])
def test_partial_vector_rows_of_other_dtypes(dtype: str) -> None:
    x = _data((16, 50), dtype, seed=4)
    for op in ("sum", "max", "min"):
        check_op_lowering(op, x, axis=-1, rtol=1e-3, atol=1e-3)
    x = _data((16, 50), "float32", seed=5)
    x[2, 45], x[7, 3] = np.nan, np.nan  # nan in a tail and in a head propagate
    for op in ("max", "min"):
        check_op_lowering(op, x, axis=1)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_bfloat16_argmax_compares_values_not_bits(name: str) -> None:
    # TVM's bfloat16 legalization dropped the cast inside the tuple reduction, and the raw
    # bits compared as unsigned integers: a negative value won argmax (a fuzzing review)
    text = f"def @main(%x: Tensor[(3, 5), bfloat16]) {{ {name}(%x, axis=[1]) }}"
    x = np.array(
        [[0.5, 3.0, -1.0, 2.0, -0.0], [-4.0, -2.0, 1.0, 0.25, -8.0], [1.0, np.nan, -1.0, 2.0, 0.0]],
        ml_dtypes.bfloat16,
    )
    exe = relay.build(relay.parse(text))
    np.testing.assert_array_equal(exe(x), exe.interpret(x))


def test_float16_prod_multiplies_in_float32() -> None:
    # as numpy along the innermost axis: 300 * 300 overflows float16, the product does not
    # (a fuzzing review found inf); along another axis numpy rounds each step (inf there)
    text = "def @main(%x: Tensor[(2, 4), float16]) { prod(%x, axis=[1]) }"
    x = np.array([[300.0, 300.0, 1e-3, 1e-3], [300.0, 300.0, 0.0, 2.0]], np.float16)
    got = relay.build(relay.parse(text))(x)
    np.testing.assert_array_equal(got, np.prod(x, axis=1))
    np.testing.assert_array_equal(got, np.prod(x.astype(np.float32), axis=1).astype(np.float16))
