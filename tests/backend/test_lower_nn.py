"""The TVM lowering of the dense-layer operators (``relay.op.lowering.nn``) against their numpy
references: the matrix products, the activations, softmax, the normalizations, dropout and the
losses.

Each case compiles one call (``relay.testing.lowering.check_op_lowering``) and compares it
with the operator's reference: same shape, dtype and values (exactly for integers and bools,
NaN where the reference has NaN). Products are also checked for the block structure the
matmul schedule relies on.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import relay
from relay import flags
from relay.backend.runtime import numpy_dtype
from relay.backend.target import Target
from relay.testing.lowering import check_op_lowering, primitive_op_function, run_compiled_op

pytestmark = pytest.mark.tvm

Array = np.ndarray[Any, np.dtype[Any]]


@pytest.fixture(autouse=True)
def _no_disk_cache() -> Iterator[None]:
    """Kernels are compiled but not linked into the disk cache (0.1-0.2 s each)."""
    with flags.override(cache=False):
        yield


EXACT = Target("llvm", fast_math=False)
FAST = Target("llvm", fast_math=True)


def normal(*shape: int, dtype: str = "float32", seed: int = 0) -> Array:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def ints(*shape: int, dtype: str = "int8", seed: int = 0) -> Array:
    """Integers over the whole range of ``dtype`` (products overflow and wrap)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)


def with_specials(x: Array) -> Array:
    """``x`` with NaN, infinities, zeros of both signs and huge values planted in it."""
    x = x.copy()
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 60000.0, -60000.0, 1e-7]
    for k, v in enumerate(specials[: x.size]):
        x.flat[(k * 7) % x.size] = v
    return x


# ---- matrix products ----------------------------------------------------------------------------

MNK = [(1, 7, 9), (33, 17, 40), (128, 64, 96)]


def product_tol(k: int) -> dict[str, float]:
    """Tolerances for sums of ``k`` products of standard normal values."""
    return {"rtol": 1e-5, "atol": 1e-5 * max(1.0, k**0.5)}


@pytest.mark.parametrize("mnk", MNK)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dense(mnk: tuple[int, int, int], dtype: str) -> None:
    m, n, k = mnk
    x, w = normal(m, k, dtype=dtype), normal(n, k, dtype=dtype, seed=1)
    check_op_lowering("nn.dense", x, w, units=n, **product_tol(k))


@pytest.mark.parametrize("shape", [(3, 5, 40), (2, 1, 3, 40), (40,)])
def test_dense_data_ranks(shape: tuple[int, ...]) -> None:
    check_op_lowering("nn.dense", normal(*shape), normal(17, 40, seed=1), **product_tol(40))


@pytest.mark.parametrize("mnk", MNK)
def test_dense_int8_to_int32(mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    check_op_lowering("nn.dense", ints(m, k), ints(n, k, seed=1), out_dtype="int32")


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype", "out_dtype"),
    [
        ("int8", "int8", ""),  # accumulates modulo 2**8, as the reference's int64 wrapped
        ("int32", "int32", ""),
        ("int64", "int64", ""),
        ("uint8", "uint8", ""),
        ("uint32", "uint32", ""),
        ("int8", "uint8", "int32"),
        ("int32", "int32", "int8"),
        ("int8", "int8", "uint16"),
        ("int16", "int16", "float64"),
    ],
)
def test_dense_integer_wrapping(a_dtype: str, b_dtype: str, out_dtype: str) -> None:
    check_op_lowering(
        "nn.dense",
        ints(33, 40, dtype=a_dtype),
        ints(17, 40, dtype=b_dtype, seed=1),
        out_dtype=out_dtype,
    )


@pytest.mark.parametrize("out_dtype", ["int8", "uint8", "int32", "int64"])
def test_dense_float_to_integer(out_dtype: str) -> None:
    # floats become integers through int64 (truncation toward zero), then products wrap
    x = np.round(normal(33, 40) * 300, 1)
    w = np.round(normal(17, 40, seed=1) * 3, 1)
    check_op_lowering("nn.dense", x, w, out_dtype=out_dtype)


@pytest.mark.parametrize(
    ("dtype", "out_dtype"), [("float16", ""), ("float32", "float16"), ("float16", "float32")]
)
def test_dense_half(dtype: str, out_dtype: str) -> None:
    # float16 results accumulate in float32 and are rounded once
    x, w = normal(33, 40, dtype=dtype), normal(17, 40, dtype=dtype, seed=1)
    check_op_lowering("nn.dense", x, w, out_dtype=out_dtype, rtol=2e-3, atol=2e-2)


def test_dense_zero_rows() -> None:
    check_op_lowering("nn.dense", normal(0, 5), normal(4, 5))


def test_dense_zero_depth() -> None:
    out = check_op_lowering("nn.dense", normal(3, 0), normal(4, 0))
    assert (out == 0).all()


def test_dense_specials() -> None:
    x = with_specials(normal(7, 9))
    check_op_lowering("nn.dense", x, normal(5, 9, seed=1), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize(
    ("ta", "tb", "batch"),
    [(ta, tb, (3,)) for ta, tb in itertools.product([False, True], repeat=2)]
    + [(False, False, ()), (True, True, ())],
)
def test_matmul(ta: bool, tb: bool, batch: tuple[int, ...]) -> None:
    m, n, k = 33, 17, 40
    a = normal(*batch, *((k, m) if ta else (m, k)))
    b = normal(*((n, k) if tb else (k, n)), seed=1)
    check_op_lowering("nn.matmul", a, b, transpose_a=ta, transpose_b=tb, **product_tol(k))


@pytest.mark.parametrize("m", [1, 33, 128])
@pytest.mark.parametrize(
    ("n", "k", "tb"), [(1, 64, False), (10, 64, True), (10, 64, False), (3, 40, True)]
)
def test_products_with_few_columns(m: int, n: int, k: int, tb: bool) -> None:
    # N < 16 read along k (a single column, or B transposed) takes the matrix-vector
    # schedule; B read across k, or k not a multiple of 16, the tiled one
    a = normal(m, k)
    b = normal(*((n, k) if tb else (k, n)), seed=1)
    check_op_lowering("nn.matmul", a, b, transpose_b=tb, **product_tol(k))
    if tb:
        check_op_lowering("nn.dense", a, b, **product_tol(k))


@pytest.mark.parametrize("tb", [False, True])
def test_matmul_vector(tb: bool) -> None:
    b = normal(*((7, 9) if tb else (9, 7)), seed=1)
    check_op_lowering("nn.matmul", normal(9), b, transpose_b=tb, units=7)


@pytest.mark.parametrize("mnk", MNK)
@pytest.mark.parametrize("dtype", ["float64", "int8"])
def test_matmul_dtypes(mnk: tuple[int, int, int], dtype: str) -> None:
    m, n, k = mnk
    if dtype == "int8":
        a, b, out = ints(m, k), ints(k, n, seed=1), "int32"
    else:
        a, b, out = normal(m, k, dtype=dtype), normal(k, n, dtype=dtype, seed=1), ""
    check_op_lowering("nn.matmul", a, b, out_dtype=out, **product_tol(k))


@pytest.mark.parametrize(
    ("ta", "tb", "ba", "bb"),
    [(ta, tb, 3, 3) for ta, tb in itertools.product([False, True], repeat=2)]
    + [(False, True, 1, 3), (True, False, 3, 1), (True, True, 1, 1)],
)
def test_batch_matmul(ta: bool, tb: bool, ba: int, bb: int) -> None:
    m, n, k = 33, 17, 40
    a = normal(ba, *((k, m) if ta else (m, k)))
    b = normal(bb, *((n, k) if tb else (k, n)), seed=1)
    check_op_lowering("nn.batch_matmul", a, b, transpose_a=ta, transpose_b=tb, **product_tol(k))


@pytest.mark.parametrize("mnk", MNK)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
def test_batch_matmul_sizes(mnk: tuple[int, int, int], dtype: str) -> None:
    m, n, k = mnk
    if dtype == "int8":
        a, b, out = ints(3, m, k), ints(3, n, k, seed=1), "int32"
    else:
        a, b, out = normal(3, m, k, dtype=dtype), normal(3, n, k, dtype=dtype, seed=1), ""
    check_op_lowering("nn.batch_matmul", a, b, transpose_b=True, out_dtype=out, **product_tol(k))


def test_batch_matmul_int_wrapping() -> None:
    check_op_lowering("nn.batch_matmul", ints(3, 7, 9, dtype="int32"), ints(1, 9, 5, dtype="int32"))


@pytest.mark.parametrize(
    ("name", "shapes", "attrs", "batch"),
    [
        ("nn.dense", [(33, 40), (17, 40)], {}, 0),
        ("nn.dense", [(2, 33, 40), (17, 40)], {}, 1),
        ("nn.matmul", [(40, 33), (40, 17)], {"transpose_a": True}, 0),
        ("nn.matmul", [(3, 33, 40), (17, 40)], {"transpose_b": True}, 1),
        ("nn.batch_matmul", [(1, 33, 40), (3, 40, 17)], {}, 1),
        (
            "nn.batch_matmul",
            [(3, 40, 33), (3, 17, 40)],
            {"transpose_a": True, "transpose_b": True},
            1,
        ),
        ("nn.dense", [(33, 40), (17, 40)], {"out_dtype": "int32"}, 0),
    ],
)
def test_product_block_structure(
    name: str, shapes: list[tuple[int, ...]], attrs: dict[str, Any], batch: int
) -> None:
    """The product is the returned stage: one block over (batch..., i, j, k), reading the left
    operand first and the right one second, as the matmul schedule expects."""
    from relay.backend.lower import lower_primitive
    from relay.backend.runtime import tvm

    dtype = "int8" if attrs.get("out_dtype") else "float32"
    args = [np.zeros(s, dtype) for s in shapes]
    lowered = lower_primitive(primitive_op_function(name, tuple(args), attrs))
    sch = tvm().s_tir.Schedule(lowered.prim_func)
    block = sch.get(sch.get_sblock(lowered.anchor_ops[0]))
    kinds = [int(iv.iter_type) for iv in block.iter_vars]
    data_par, reduce = tvm().tirx.IterVar.DataPar, tvm().tirx.IterVar.CommReduce
    assert kinds == [data_par] * (batch + 2) + [reduce]
    assert [r.source.name for r in block.reads] == ["p0", "p1"]


# ---- softmax ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["nn.softmax", "nn.log_softmax"])
@pytest.mark.parametrize(
    ("shape", "axis", "target"),
    [
        ((7, 33), -1, EXACT),
        ((7, 33), -1, FAST),
        ((7, 33), 0, FAST),
        ((3, 7, 5), 1, EXACT),
        ((3, 7, 5), -3, FAST),
        ((33,), 0, EXACT),
        ((4, 1), 1, FAST),
    ],
    ids=str,
)
def test_softmax(name: str, shape: tuple[int, ...], axis: int, target: Target) -> None:
    x = normal(*shape) * 4
    check_op_lowering(name, x, axis=axis, target=target, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["nn.softmax", "nn.log_softmax"])
@pytest.mark.parametrize("target", [EXACT, FAST], ids=["exact", "fast"])
def test_softmax_specials(name: str, target: Target) -> None:
    """Rows with NaN (all NaN), +inf (all NaN), all -inf (NaN), some -inf (exp 0), huge
    values (max-subtracted: finite) and values whose differences overflow."""
    x = normal(7, 9)
    x[0, 3] = np.nan
    x[1, 4] = np.inf
    x[2, :] = -np.inf
    x[3, 2] = -np.inf
    x[4] *= 1000
    x[5, 1], x[5, 2] = 3e38, -3e38
    x[6] = 88.0
    check_op_lowering(name, x, target=target, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["nn.softmax", "nn.log_softmax"])
def test_softmax_of_rows_in_a_head_and_a_tail(name: str) -> None:
    # rows of 100: the statistics' reductions are a head of whole vectors and a tail of 4
    x = normal(9, 100) * 4
    x[0, 98] = np.nan  # in the tail
    x[1, 2] = np.nan  # in the head
    x[2, 99] = 80.0  # the row's maximum in the tail
    x[3, :] = -np.inf
    x[4, 97] = np.inf
    check_op_lowering(name, x, target=FAST, rtol=1e-5, atol=1e-6)
    check_op_lowering(name, x, target=EXACT, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["nn.softmax", "nn.log_softmax"])
@pytest.mark.parametrize(("dtype", "tol"), [("float64", 1e-12), ("float16", 2e-3)])
def test_softmax_dtypes(name: str, dtype: str, tol: float) -> None:
    x = normal(5, 33, dtype=dtype) * 3
    check_op_lowering(name, x, axis=1, target=EXACT, rtol=tol, atol=tol)
    check_op_lowering(name, x, axis=0, target=FAST, rtol=max(tol, 1e-6), atol=max(tol, 1e-6))


def test_softmax_fast_math_error() -> None:
    """The fast exp adds no measurable error to softmax: both stay within the float32
    rounding of ``x - max`` and of the sum (measured 1.9e-6 relative for both)."""
    x = normal(64, 257) * 8
    ref = np.exp(x - x.max(1, keepdims=True)).astype(np.float64)  # numpy's float32 rounding
    ref /= ref.sum(1, keepdims=True)
    for target in (EXACT, FAST):
        out = run_compiled_op("nn.softmax", x, target=target)
        assert np.max(np.abs(out - ref) / ref) < 4e-6


def test_log_softmax_takes_each_rows_log_once() -> None:
    # the log of a row's sum is a stage of its own (a barrier the schedules keep): inlined
    # into the last stage, libm's log ran once per element ((128, 1000): 344 -> 227 us)
    from relay.backend.lower import lower_primitive
    from relay.backend.schedule import schedule_cpu
    from relay.testing.lowering import primitive_op_function

    func = primitive_op_function("nn.log_softmax", (np.zeros((128, 1000), np.float32),), {})
    text = schedule_cpu(lower_primitive(func, fast_math=True)).script()
    logs = [line for line in text.splitlines() if "T.log(" in line]
    assert len(logs) == 1 and logs[0].strip().startswith("relay_barrier[v_i0] = T.log(")


def test_softmax_zero_size() -> None:
    check_op_lowering("nn.softmax", normal(0, 5), axis=0)


# ---- activations, bias_add ----------------------------------------------------------------------


FLOATS = ["float32", "float64", "float16"]


def float_tol(dtype: str) -> dict[str, float]:
    return {"rtol": 1e-3, "atol": 1e-3} if dtype == "float16" else {"rtol": 1e-6, "atol": 1e-7}


@pytest.mark.parametrize("dtype", [*FLOATS, "int8", "int32", "uint8", "int64"])
def test_relu(dtype: str) -> None:
    floats = dtype in FLOATS
    x = with_specials(normal(7, 33, dtype=dtype)) if floats else ints(7, 33, dtype=dtype)
    out = check_op_lowering("nn.relu", x)
    if dtype in FLOATS:
        assert np.isnan(out.flat[0])  # NaN propagates, as np.maximum


@pytest.mark.parametrize("dtype", [*FLOATS, "bfloat16"])
def test_relu_of_negative_zero_is_positive_zero(dtype: str) -> None:
    # np.maximum(-0.0, 0.0) is the second argument, +0.0 (so 1 / relu(x) is +inf), in the
    # vectorized loop and its scalar tail, compiled and in the reference (whose float16
    # maximum alone would keep the -0.0)
    x = np.array([-0.0, 0.0, -1.0, 2.0] * 9, np.float32).astype(numpy_dtype(dtype))
    exe = relay.build(relay.parse(f"def @main(%x: Tensor[(36,), {dtype}]) {{ nn.relu(%x) }}"))
    for got in (np.asarray(exe(x), np.float32), np.asarray(exe.interpret(x), np.float32)):
        np.testing.assert_array_equal(got, np.maximum(x.astype(np.float32), 0))
        assert not np.signbit(got).any()


@pytest.mark.parametrize(
    ("dtype", "alpha"),
    [("float32", a) for a in (0.25, 0.01, 0.0, -0.5, 2.0)]
    + [("float64", 0.0), ("float16", 0.0), ("float64", 0.3), ("float16", 0.1)],
)
def test_leaky_relu(dtype: str, alpha: float) -> None:
    x = with_specials(normal(7, 33, dtype=dtype))
    out = check_op_lowering("nn.leaky_relu", x, alpha=alpha, **float_tol(dtype))
    if alpha == 0.0:  # -inf * 0 is NaN, -1 * 0 is -0.0 (TVM would fold x * 0 to 0)
        with np.errstate(invalid="ignore"):
            expected = np.where(x > 0, x, x * np.asarray(alpha, dtype))
        finite = ~np.isnan(expected)
        np.testing.assert_array_equal(np.signbit(out[finite]), np.signbit(expected[finite]))


@pytest.mark.parametrize(
    ("dtype", "shape", "axis"),
    [
        ("float32", (3, 7, 5), 1),
        ("float32", (3, 7, 5), -1),
        ("float32", (7, 33), 0),
        ("float32", (33,), 0),
        ("float64", (3, 7, 5), 1),
        ("float16", (3, 7, 5), -2),
    ],
)
def test_prelu(dtype: str, shape: tuple[int, ...], axis: int) -> None:
    x = with_specials(normal(*shape, dtype=dtype))
    alpha = normal(shape[axis], dtype=dtype, seed=1)
    check_op_lowering("nn.prelu", x, alpha, axis=axis, **float_tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu_exact(dtype: str) -> None:
    """Without fast math gelu runs in float64 with libm's erf: the reference's rounding."""
    x = with_specials(normal(7, 33, dtype=dtype) * 3)
    x.flat[-4:] = [-5.0, -8.0, -12.0, 30.0]  # far tails: 1 + erf cancels
    tol = {"rtol": 1e-3, "atol": 1e-7} if dtype == "float16" else {"rtol": 1e-7, "atol": 0.0}
    check_op_lowering("nn.gelu", x, target=EXACT, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gelu_fast(dtype: str) -> None:
    """With fast math float32 gelu uses TVM's float32 erf: absolute error below 5e-7."""
    x = with_specials(normal(7, 33, dtype=dtype) * 3)
    x.flat[-4:] = [-5.0, -8.0, -12.0, 30.0]
    tol = {"rtol": 1e-3, "atol": 1e-6} if dtype == "float16" else {"rtol": 1e-5, "atol": 5e-7}
    check_op_lowering("nn.gelu", x, target=FAST, **tol)


@pytest.mark.parametrize(
    ("dtype", "shape", "axis"),
    [
        (dt, (3, 7, 5), 1)
        for dt in ("float32", "float64", "float16", "int32", "int8", "uint8", "int64", "bool")
    ]
    + [("float32", (3, 7, 5), -1), ("int8", (3, 7, 5), 0), ("float32", (33,), 0)],
)
def test_bias_add(dtype: str, shape: tuple[int, ...], axis: int) -> None:
    n = shape[axis]
    if dtype == "bool":
        x, b = normal(*shape) > 0, normal(n, seed=1) > 0  # numpy's add: logical or
    elif dtype in FLOATS:
        x, b = with_specials(normal(*shape, dtype=dtype)), normal(n, dtype=dtype, seed=1)
    else:
        x, b = ints(*shape, dtype=dtype), ints(n, dtype=dtype, seed=1)  # wraps
    check_op_lowering("nn.bias_add", x, b, axis=axis)


# ---- normalization ------------------------------------------------------------------------------


def norm_tol(dtype: str) -> dict[str, float]:
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == "float16" else {"rtol": 1e-5, "atol": 1e-5}


@pytest.mark.parametrize(
    ("shape", "axis", "center", "scale"),
    [
        ((7, 33), -1, True, True),
        ((7, 33), 0, True, True),
        ((3, 7, 5), 1, True, True),
        ((1,), 0, True, True),
        ((4, 1), 1, True, True),
        ((3, 7, 5), -2, True, False),
        ((3, 7, 5), -2, False, True),
        ((3, 7, 5), -2, False, False),
    ],
)
def test_layer_norm(shape: tuple[int, ...], axis: int, center: bool, scale: bool) -> None:
    x = normal(*shape) * 3 + 1
    n = shape[axis]
    gamma, beta = normal(n, seed=1), normal(n, seed=2)
    check_op_lowering(
        "nn.layer_norm",
        x,
        gamma,
        beta,
        axis=axis,
        center=center,
        scale=scale,
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("epsilon", [1e-5, 0.5])
def test_layer_norm_dtypes(dtype: str, epsilon: float) -> None:
    x = normal(5, 33, dtype=dtype)
    x[0] = 2.0  # a constant row: zero variance, divided by sqrt(epsilon)
    gamma, beta = normal(33, dtype=dtype, seed=1), normal(33, dtype=dtype, seed=2)
    check_op_lowering("nn.layer_norm", x, gamma, beta, epsilon=epsilon, **norm_tol(dtype))


def test_layer_norm_specials() -> None:
    x = normal(6, 9)
    x[0, 1], x[1, 2], x[2] = np.nan, np.inf, 1e30  # NaN rows; a huge constant row
    check_op_lowering(
        "nn.layer_norm", x, normal(9, seed=1), normal(9, seed=2), rtol=1e-5, atol=1e-5
    )


def bn_args(shape: tuple[int, ...], axis: int, dtype: str = "float32") -> list[Array]:
    c = shape[axis]
    x = normal(*shape, dtype=dtype) * 2 + 0.5
    params = [normal(c, dtype=dtype, seed=s) for s in (1, 2, 3)]
    var = (np.abs(normal(c, seed=4)) + 0.1).astype(dtype)
    return [x, *params, var]


@pytest.mark.parametrize(
    ("shape", "axis", "center", "scale"),
    [
        ((3, 7, 5), 1, True, True),
        ((3, 7, 5), -1, True, True),
        ((7, 33), 0, True, True),
        ((2, 3, 4, 5), 1, True, True),
        ((3, 7, 5), 1, True, False),
        ((3, 7, 5), 1, False, True),
        ((3, 7, 5), 1, False, False),
    ],
)
def test_batch_norm_inference(shape: tuple[int, ...], axis: int, center: bool, scale: bool) -> None:
    check_op_lowering(
        "nn.batch_norm",
        *bn_args(shape, axis),
        axis=axis,
        center=center,
        scale=scale,
        epsilon=1e-3,
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    ("shape", "axis", "momentum"),
    [
        ((3, 7, 5), 1, 0.1),
        ((3, 7, 5), -1, 0.1),
        ((7, 33), 0, 0.1),
        ((2, 3, 4, 5), 1, 0.1),
        ((2, 1), 1, 0.1),
        ((3, 7, 5), 1, 0.0),
        ((3, 7, 5), 1, 1.0),
    ],
)
def test_batch_norm_training(shape: tuple[int, ...], axis: int, momentum: float) -> None:
    check_op_lowering(
        "nn.batch_norm",
        *bn_args(shape, axis),
        axis=axis,
        training=True,
        momentum=momentum,
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    ("center", "scale", "training", "dtype"),
    [
        (True, True, False, "float64"),
        (True, True, True, "float64"),
        (True, True, False, "float16"),
        (False, False, True, "float16"),
    ],
)
def test_batch_norm_dtypes(center: bool, scale: bool, training: bool, dtype: str) -> None:
    check_op_lowering(
        "nn.batch_norm",
        *bn_args((3, 7, 5), 1, dtype),
        center=center,
        scale=scale,
        training=training,
        momentum=0.25,
        **norm_tol(dtype),
    )


@pytest.mark.parametrize(
    ("shape", "training"), [((2, 0, 3), False), ((2, 0, 3), True), ((0, 3), False)]
)
def test_batch_norm_zero_size(shape: tuple[int, ...], training: bool) -> None:
    check_op_lowering("nn.batch_norm", *bn_args(shape, 1), training=training)


# ---- dropout, losses ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "rate"),
    [(dt, 0.5) for dt in ("float32", "float16", "float64", "int32", "uint8", "bool")]
    + [("float32", 0.0), ("float32", 1.0)],
)
def test_dropout(dtype: str, rate: float) -> None:
    if dtype == "bool":
        x = normal(3, 7, 5) > 0
    elif dtype in FLOATS:
        x = with_specials(normal(3, 7, 5, dtype=dtype))
    else:
        x = ints(3, 7, 5, dtype=dtype)
    out, mask = check_op_lowering("nn.dropout", x, rate=rate)
    np.testing.assert_array_equal(out, x)  # bit for bit, NaN included
    assert mask.dtype == x.dtype and (mask == 1).all()


@pytest.mark.parametrize("name", ["nn.cross_entropy", "nn.cross_entropy_with_logits"])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((7, 33), "float32"),
        ((7, 33), "float64"),
        ((7, 33), "float16"),
        ((1, 1), "float32"),
        ((33, 7), "float32"),
    ],
)
def test_cross_entropy(name: str, shape: tuple[int, ...], dtype: str) -> None:
    p = np.abs(normal(*shape, dtype=dtype)) + np.asarray(0.01, dtype)
    if name == "nn.cross_entropy_with_logits":
        p = np.log(p)
    t = normal(*shape, dtype=dtype, seed=1)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype == "float16" else {"rtol": 1e-5, "atol": 1e-6}
    check_op_lowering(name, p, t, **tol)


@pytest.mark.parametrize("name", ["nn.cross_entropy", "nn.cross_entropy_with_logits"])
@pytest.mark.parametrize(
    ("p", "t"),
    [
        ([[0.0, 1.0]], [[1.0, 0.0]]),  # log 0 = -inf: +inf (or -inf for with_logits 0 * 1)
        ([[0.0, 0.5]], [[0.0, 1.0]]),  # 0 * log 0: NaN
        ([[np.nan, 0.5]], [[1.0, 1.0]]),
        ([[-1.0, 0.5]], [[1.0, 1.0]]),  # log of a negative: NaN
    ],
)
def test_cross_entropy_specials(name: str, p: list[list[float]], t: list[list[float]]) -> None:
    check_op_lowering(name, np.array(p, "float32"), np.array(t, "float32"))


@pytest.mark.parametrize("name", ["nn.cross_entropy", "nn.cross_entropy_with_logits"])
def test_cross_entropy_empty(name: str) -> None:
    out = check_op_lowering(name, normal(0, 5), normal(0, 5))
    assert np.isnan(out)  # -0 / 0
    out = check_op_lowering(name, normal(3, 0), normal(3, 0))
    assert out == 0  # an empty sum


def test_schedules_skip_tvms_argument_type_checks_without_changing_the_result() -> None:
    from relay.backend.lower import lower_primitive
    from relay.backend.runtime import tvm
    from relay.backend.schedule import cpu
    from relay.backend.schedule.matmul import schedule_matmul_group

    func = primitive_op_function("nn.dense", (normal(24, 40), normal(48, 40)), {})
    scheduled = cpu.schedule_cpu(lower_primitive(func))
    checked = tvm().s_tir.Schedule(lower_primitive(func).prim_func)
    schedule_matmul_group(checked, lower_primitive(func))  # TVM's own type-checked methods
    tvm().ir.assert_structural_equal(scheduled, checked.mod["main"])
    sch = cpu.Unchecked(checked)
    assert sch.split.func is type(checked).split.__wrapped__  # the primitive, unwrapped
    assert sch.mod.same_as(checked.mod)  # what is not a checked primitive is the schedule's own


def test_each_thread_packs_the_column_panels_it_computes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from relay.backend.lower import lower_primitive
    from relay.backend.schedule import matmul
    from relay.backend.schedule.cpu import schedule_cpu
    from relay.backend.schedule.matmul import PANELS_PER_THREAD

    monkeypatch.setattr(matmul, "available_cores", lambda: 2)

    def scheduled(n: int) -> str:
        func = primitive_op_function("nn.matmul", (normal(16, 64), normal(64, n)), {})
        return str(schedule_cpu(lower_primitive(func)).script())

    # 16 panels of 32 columns: the pack of each panel is inside the parallel panel loop
    wide = scheduled(512)
    assert "for i1_0 in T.parallel(16):\n        for ax0, ax1 in T.grid(64, 32):" in wide
    assert PANELS_PER_THREAD * 2 <= 16
    # 2 panels: B is packed in a parallel pass first, then the tiles run in parallel
    narrow = scheduled(64)
    assert "for ax0 in T.parallel(64):" in narrow  # the pack, over the rows of B
    assert "for i1_0_i0_0_fused in T.parallel(4):" in narrow  # 2 panels x 2 row tiles
    for n in (512, 64, 400):  # 400: 13 panels, the last padded
        a, b = normal(16, 64), normal(64, n, seed=1)
        np.testing.assert_allclose(run_compiled_op("nn.matmul", a, b), a @ b, rtol=1e-5, atol=1e-5)
