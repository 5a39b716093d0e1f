"""The TVM lowering of the convolutions, poolings and padding (``relay.op.lowering.nn_conv``)
against their numpy references, and the CPU schedule of groups anchored on ``nn.conv2d``
(``relay.backend.schedule.conv``) with their fused epilogues.

Each case compiles one call and compares it with the operator's reference: same shape, dtype
and values (exactly for integers and bools, NaN where the reference has NaN). The cases of a
test are compiled together, in one library (a compilation costs 0.1-0.3 s; one per case would
not fit the time budget), and every failing case is reported by its arguments. The schedule
cases compile primitive functions of a convolution and its epilogue, compare them with the
references composed in numpy, and check whether the tiled schedule applies (rather than the
generic fallback) where it should.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from relay import flags
from relay.backend.target import Target

pytestmark = pytest.mark.tvm

Array = np.ndarray[Any, np.dtype[Any]]
Case = tuple[tuple[Array, ...], dict[str, Any]]
"""One call: its tensor arguments and attributes."""


@pytest.fixture(autouse=True)
def _no_disk_cache() -> Iterator[None]:
    """Kernels are compiled but not linked into the disk cache (0.1-0.2 s each)."""
    with flags.override(cache=False):
        yield


def rand(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> Array:
    """Random values of ``dtype``: normal floats, small integers of both signs (unsigned:
    nonnegative), or bools."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.3
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    lo = 0 if dtype.startswith("uint") else -9
    return rng.integers(lo, 10, size=shape).astype(dtype)


def tol(dtype: str) -> dict[str, float]:
    if dtype == "float16":
        return {"rtol": 2e-2, "atol": 2e-2}
    if dtype == "float64":
        return {"rtol": 1e-10, "atol": 1e-10}
    if dtype.startswith("float"):
        return {"rtol": 1e-4, "atol": 1e-4}
    return {"rtol": 0.0, "atol": 0.0}


def reference(name: str, args: Sequence[Array], attrs: dict[str, Any]) -> Array:
    from relay.op.registry import get_op

    opdef = get_op(name)
    assert opdef.reference is not None
    full = dict(opdef.validate_attrs(attrs).items())
    return np.asarray(opdef.reference(*args, **full) if full else opdef.reference(*args))


def check_cases(name: str, cases: Sequence[Case], rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Compile the calls ``name(*args, **attrs)`` of ``cases`` together and compare each with
    the operator's reference (shape, dtype, values: exactly for integers and bools); the
    failures are reported together, each with its case."""
    from relay.backend.compiler import compile_functions
    from relay.testing.lowering import primitive_op_function

    funcs = [primitive_op_function(name, args, attrs) for args, attrs in cases]
    lib, symbols = compile_functions(funcs, Target.of(None))
    failures = []
    for (args, attrs), symbol in zip(cases, symbols, strict=True):
        where = f"{name}{tuple(a.shape for a in args)} {attrs}"
        expected = reference(name, args, attrs)
        (got,) = lib[symbol](*args)
        try:
            assert got.shape == expected.shape, f"shape {got.shape}, expected {expected.shape}"
            assert got.dtype == expected.dtype, f"dtype {got.dtype}, expected {expected.dtype}"
            if expected.dtype.kind in "biu":
                np.testing.assert_array_equal(got, expected)
            else:
                np.testing.assert_allclose(
                    got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol
                )
        except AssertionError as err:
            failures.append(f"{where}: {err}")
    assert not failures, "\n\n".join(failures)


def _to(a: Array, src: str, dst: str) -> Array:
    return np.ascontiguousarray(np.transpose(a, [src.index(c) for c in dst]))


# ---- nn.conv2d ----------------------------------------------------------------------------------

ConvCase = tuple[tuple[int, int, int, int], tuple[int, int, int], dict[str, Any]]
"""Data shape (NCHW), (output channels, kernel height, kernel width), attributes."""

CONV_CASES: dict[str, list[ConvCase]] = {
    "plain": [
        ((1, 3, 7, 7), (4, 3, 3), {}),
        ((2, 3, 7, 9), (5, 3, 3), {"padding": 1}),
        ((1, 4, 1, 1), (3, 1, 1), {}),
        ((1, 2, 1, 1), (3, 3, 3), {"padding": 1}),
    ],
    "kernels": [
        ((1, 4, 9, 7), (4, 1, 1), {}),
        ((1, 4, 9, 7), (4, 1, 1), {"strides": 2}),
        ((1, 3, 33, 7), (2, 5, 5), {"padding": 2}),
        ((1, 1, 5, 5), (1, 5, 5), {}),
    ],
    "strides_padding": [
        ((1, 3, 8, 8), (4, 3, 3), {"strides": 2, "padding": 1}),
        ((1, 3, 7, 8), (4, 3, 3), {"strides": (2, 1), "padding": (1, 0)}),
        ((1, 3, 7, 7), (4, 3, 2), {"padding": (0, 1, 2, 1)}),
        ((1, 3, 8, 7), (4, 3, 3), {"strides": 3, "padding": (2, 0, 0, 2)}),
    ],
    "dilation": [
        ((1, 3, 9, 9), (4, 3, 3), {"dilation": 2, "padding": 2}),
        ((1, 3, 9, 11), (4, 3, 3), {"dilation": (2, 3), "strides": 2, "padding": (1, 2, 0, 3)}),
    ],
    "groups": [
        ((1, 4, 7, 7), (6, 3, 3), {"groups": 2, "padding": 1}),
        ((2, 6, 7, 5), (6, 3, 3), {"groups": 6, "padding": 1}),  # depthwise
        ((1, 6, 7, 7), (12, 3, 3), {"groups": 6, "strides": 2}),  # depthwise, multiplier 2
        ((1, 16, 6, 6), (32, 3, 3), {"padding": 1, "groups": 2}),
    ],
    "tiled": [  # shapes the conv2d schedule tiles
        ((1, 16, 14, 14), (32, 3, 3), {"padding": 1}),
        ((1, 32, 9, 7), (16, 3, 3), {"padding": 1, "strides": 2}),
        ((1, 16, 7, 7), (16, 1, 1), {}),
        ((1, 16, 5, 5), (32, 3, 3), {"padding": 1, "dilation": 2}),
    ],
}


def conv_args(shape: tuple[int, int, int, int], kernel: tuple[int, int, int], groups: int) -> Any:
    o, kh, kw = kernel
    return rand(shape), rand((o, shape[1] // groups, kh, kw), seed=1)


@pytest.mark.parametrize("family", list(CONV_CASES))
def test_conv2d(family: str) -> None:
    cases = [
        (conv_args(shape, kernel, attrs.get("groups", 1)), attrs)
        for shape, kernel, attrs in CONV_CASES[family]
    ]
    check_cases("nn.conv2d", cases, **tol("float32"))


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_layouts(groups: int) -> None:
    layouts = [
        ("NHWC", "HWIO", ""),
        ("NHWC", "OHWI", ""),
        ("NCHW", "HWOI", "NHWC"),
        ("NHWC", "IOHW", "NCHW"),
        ("NCHW", "IHWO", ""),
    ]
    x, w = conv_args((2, 4, 7, 5), (6, 3, 2), groups)
    cases: list[Case] = []
    for data_layout, kernel_layout, out_layout in layouts:
        attrs = {
            "padding": (1, 0, 1, 1),
            "strides": (1, 2),
            "groups": groups,
            "data_layout": data_layout,
            "kernel_layout": kernel_layout,
            "out_layout": out_layout,
        }
        args = (_to(x, "NCHW", data_layout), _to(w, "OIHW", kernel_layout))
        cases.append((args, attrs))
    check_cases("nn.conv2d", cases, **tol("float32"))


@pytest.mark.parametrize(
    ("dtype", "out_dtypes"),
    [
        ("float64", ["", "float32"]),
        ("float16", ["", "float32"]),
        ("float32", ["float64", "float16"]),
        ("int32", ["", "float32", "int64"]),
        ("int8", ["", "int32", "int16"]),  # 8-bit results wrap, as the reference's astype
        ("uint8", ["", "int32", "uint16"]),
        ("int64", [""]),
    ],
)
def test_conv2d_dtypes(dtype: str, out_dtypes: list[str]) -> None:
    x = rand((1, 4, 6, 5), dtype)
    w = rand((4, 2, 3, 3), dtype, seed=1)
    if dtype in ("int8", "uint8"):
        x = (x * 3).astype(dtype)
    cases: list[Case] = [
        ((x, w), {"padding": 1, "groups": 2, "out_dtype": out}) for out in out_dtypes
    ]
    check_cases(
        "nn.conv2d", cases, **tol("float16" if "float16" in (dtype, *out_dtypes) else dtype)
    )


def test_conv2d_nonfinite() -> None:
    x = rand((1, 2, 5, 5))
    x[0, 0, 1, 1], x[0, 1, 3, 2], x[0, 0, 4, 4] = np.nan, np.inf, -np.inf
    w = rand((2, 2, 3, 3), seed=1)
    w[1, 0, 1, 1] = 0.0  # inf * 0: NaN
    check_cases("nn.conv2d", [((x, w), {"padding": 1})], **tol("float32"))


def test_conv2d_empty() -> None:
    cases: list[Case] = [
        ((np.zeros((0, 3, 5, 5), "float32"), rand((2, 3, 3, 3))), {"padding": 1}),
        ((np.zeros((1, 0, 5, 5), "float32"), np.zeros((3, 0, 3, 3), "float32")), {"padding": 1}),
    ]
    check_cases("nn.conv2d", cases)


# ---- nn.conv2d_transpose ------------------------------------------------------------------------

CONV_T_CASES: list[ConvCase] = [  # (data, (out channels per group, kh, kw), attributes)
    ((1, 3, 5, 5), (4, 3, 3), {}),
    ((2, 3, 5, 7), (2, 3, 3), {"strides": 2}),
    ((1, 3, 5, 5), (2, 3, 3), {"strides": 2, "padding": 1, "output_padding": 1}),
    ((1, 2, 4, 6), (3, 4, 4), {"strides": (2, 3), "padding": (1, 2), "output_padding": (1, 2)}),
    ((1, 2, 5, 4), (3, 3, 2), {"padding": (0, 1, 2, 0)}),
    ((1, 2, 5, 5), (3, 3, 3), {"dilation": 2, "padding": 1}),
    ((1, 2, 5, 5), (3, 3, 3), {"dilation": (2, 1), "strides": 2, "padding": 3}),
    ((1, 4, 5, 5), (3, 3, 3), {"groups": 2, "strides": 2, "padding": 1}),
    ((1, 4, 5, 3), (1, 3, 3), {"groups": 4, "padding": 1}),
    ((1, 3, 1, 1), (2, 1, 1), {}),
    ((1, 3, 7, 7), (2, 1, 1), {"strides": 2, "output_padding": 1}),
    ((1, 2, 3, 3), (2, 5, 5), {"strides": 3, "padding": 4, "output_padding": 2}),
]


def conv_t_args(shape: tuple[int, int, int, int], kernel: tuple[int, int, int]) -> Any:
    og, kh, kw = kernel
    return rand(shape), rand((shape[1], og, kh, kw), seed=1)


@pytest.mark.parametrize("part", [0, 1])
def test_conv2d_transpose(part: int) -> None:
    cases = [(conv_t_args(s, k), a) for s, k, a in CONV_T_CASES[part::2]]
    check_cases("nn.conv2d_transpose", cases, **tol("float32"))


def test_conv2d_transpose_layouts() -> None:
    layouts = [("NHWC", "HWOI", ""), ("NCHW", "OIHW", "NHWC"), ("NHWC", "IHWO", "NCHW")]
    x, w = conv_t_args((1, 4, 5, 4), (3, 3, 2))
    cases: list[Case] = []
    for data_layout, kernel_layout, out_layout in layouts:
        attrs = {
            "strides": 2,
            "padding": (1, 0),
            "output_padding": (1, 0),
            "groups": 2,
            "data_layout": data_layout,
            "kernel_layout": kernel_layout,
            "out_layout": out_layout,
        }
        cases.append(((_to(x, "NCHW", data_layout), _to(w, "IOHW", kernel_layout)), attrs))
    check_cases("nn.conv2d_transpose", cases, **tol("float32"))


@pytest.mark.parametrize(
    ("dtype", "out_dtypes"),
    [("float64", [""]), ("float16", ["", "float32"]), ("int32", [""]), ("int8", ["", "int32"])],
)
def test_conv2d_transpose_dtypes(dtype: str, out_dtypes: list[str]) -> None:
    x = rand((1, 2, 4, 4), dtype)
    w = rand((2, 3, 3, 3), dtype, seed=1)
    if dtype == "int8":
        x = (x * 5).astype(dtype)
    cases: list[Case] = [
        ((x, w), {"strides": 2, "padding": 1, "out_dtype": out}) for out in out_dtypes
    ]
    check_cases("nn.conv2d_transpose", cases, **tol(dtype))


def test_conv2d_transpose_empty() -> None:
    x, w = np.zeros((0, 2, 3, 3), "float32"), rand((2, 2, 3, 3))
    check_cases("nn.conv2d_transpose", [((x, w), {"strides": 2})])


# ---- pooling ------------------------------------------------------------------------------------

POOL_CASES: list[dict[str, Any]] = [
    {"pool_size": 1},
    {"pool_size": 2, "strides": 2},
    {"pool_size": 3, "strides": 1, "padding": 1},
    {"pool_size": 3, "strides": 2, "padding": 1},
    {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True},
    {"pool_size": 2, "strides": 2, "ceil_mode": True},
    {"pool_size": (3, 2), "strides": (2, 3), "padding": (0, 1, 2, 1)},
    {"pool_size": (2, 3), "strides": (3, 2), "padding": (1, 0, 1, 2), "ceil_mode": True},
    {"pool_size": 3, "dilation": 2, "padding": 2},
    {"pool_size": 2, "dilation": (2, 3), "strides": 2, "ceil_mode": True, "padding": 1},
    {"pool_size": 5, "strides": 3, "padding": 2, "ceil_mode": True},
    {"pool_size": (1, 7), "strides": (1, 3), "ceil_mode": True},
]


def test_max_pool2d() -> None:
    x = rand((2, 3, 11, 9))
    check_cases("nn.max_pool2d", [((x,), attrs) for attrs in POOL_CASES])


@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d(count_include_pad: bool) -> None:
    x = rand((2, 3, 7, 9))
    cases: list[Case] = [
        ((x,), {**attrs, "count_include_pad": count_include_pad}) for attrs in POOL_CASES
    ]
    check_cases("nn.avg_pool2d", cases)


POOL_DTYPE_ATTRS: list[dict[str, Any]] = [
    {"pool_size": 3, "strides": 2, "padding": (1, 0, 1, 2), "ceil_mode": True},
    {"pool_size": 2, "dilation": 2, "padding": 1},
]


@pytest.mark.parametrize(
    "dtype", ["float64", "float16", "int32", "int8", "uint8", "int64", "uint32", "bool"]
)
def test_max_pool2d_dtypes(dtype: str) -> None:
    x = rand((1, 2, 7, 6), dtype)
    if dtype == "int8":
        x[0, 0, :2, :2] = -128  # the padding (the lowest value) ties with the data
    check_cases("nn.max_pool2d", [((x,), attrs) for attrs in POOL_DTYPE_ATTRS])


@pytest.mark.parametrize(
    "dtype", ["float64", "float16", "int32", "int8", "uint8", "int64", "uint64"]
)
def test_avg_pool2d_dtypes(dtype: str) -> None:
    x = rand((1, 2, 7, 6), dtype)
    if dtype in ("int8", "uint8"):  # 8-bit sums wrap as the reference's; negatives truncate
        x = (x * 14).astype(dtype)
    cases: list[Case] = [
        ((x,), {**attrs, "count_include_pad": include})
        for attrs in POOL_DTYPE_ATTRS
        for include in (False, True)
    ]
    check_cases("nn.avg_pool2d", cases, **tol(dtype))


def test_pool2d_nonfinite() -> None:
    x = rand((1, 3, 6, 6))
    x[0, 0, 1, 1] = np.nan  # propagates to every window that holds it
    x[0, 1, :3, :3] = -np.inf  # a window of -inf and padding
    x[0, 1, 4, 4] = np.inf
    x[0, 2, 0, 0], x[0, 2, 5, 5] = np.inf, -np.inf
    attrs = {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True}
    check_cases("nn.max_pool2d", [((x,), attrs)])
    check_cases("nn.avg_pool2d", [((x,), attrs)])


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_nhwc(kind: str) -> None:
    x = rand((2, 7, 9, 3))
    extra = {"count_include_pad": True} if kind == "avg" else {}
    attrs = {"pool_size": (3, 2), "strides": 2, "padding": (1, 0, 1, 1), "layout": "NHWC"}
    cases: list[Case] = [((x,), {**attrs, **extra}), ((x,), {**attrs, "ceil_mode": True})]
    check_cases(f"nn.{kind}_pool2d", cases)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_empty(kind: str) -> None:
    check_cases(f"nn.{kind}_pool2d", [((np.zeros((0, 2, 5, 5), "float32"),), {"pool_size": 2})])


# ---- pooling gradients --------------------------------------------------------------------------


def grad_case(kind: str, x: Array, attrs: dict[str, Any], seed: int = 1) -> Case:
    """``(out_grad, data)`` for the gradient of ``nn.<kind>_pool2d`` at ``x``."""
    pooled = reference(f"nn.{kind}_pool2d", [x], attrs)
    return (rand(pooled.shape, str(x.dtype), seed), x), attrs


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_grad(kind: str) -> None:
    x = rand((2, 3, 7, 9))
    if kind == "max":
        x = np.round(x).astype("float32")  # ties: the window's first maximum takes it all
    check_cases(f"nn.{kind}_pool2d_grad", [grad_case(kind, x, attrs) for attrs in POOL_CASES])


def test_avg_pool2d_grad_count() -> None:
    attrs = {"pool_size": 3, "strides": 2, "padding": (1, 2, 0, 1), "ceil_mode": True}
    x = rand((1, 2, 8, 7))
    cases = [grad_case("avg", x, {**attrs, "count_include_pad": c}) for c in (False, True)]
    check_cases("nn.avg_pool2d_grad", cases)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_pool2d_grad_dtypes(dtype: str) -> None:
    attrs = {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True}
    x = rand((1, 2, 7, 6), dtype)
    for kind in ("max", "avg"):
        check_cases(f"nn.{kind}_pool2d_grad", [grad_case(kind, x, attrs)], **tol(dtype))


def test_max_pool2d_grad_nonfinite_and_ties() -> None:
    x = np.zeros((1, 3, 5, 5), "float32")  # channel 0: all ties
    x[0, 1, 2, 2] = np.nan  # NaN is the maximum of its windows (numpy's argmax)
    x[0, 1, 0, 3] = np.nan
    x[0, 2] = -np.inf  # windows of -inf and padding: the first tap, maybe padding, takes it
    x[0, 2, 4, 4] = 1.0
    cases = [
        grad_case("max", x, {"pool_size": 3, "strides": 1, "padding": 1}),
        grad_case("max", x, {"pool_size": 2, "strides": 2, "ceil_mode": True}),
    ]
    check_cases("nn.max_pool2d_grad", cases)


def test_pool2d_grad_nhwc() -> None:
    attrs = {"pool_size": 2, "strides": 2, "padding": (0, 1), "ceil_mode": True, "layout": "NHWC"}
    x = np.round(rand((1, 7, 6, 3)) * 2).astype("float32")
    for kind in ("max", "avg"):
        check_cases(f"nn.{kind}_pool2d_grad", [grad_case(kind, x, attrs)])


# ---- adaptive and global average pooling --------------------------------------------------------


def test_adaptive_avg_pool2d() -> None:
    cases: list[Case] = [
        ((rand((2, 3, 7, 9)),), {"output_size": (3, 4)}),
        ((rand((1, 2, 7, 9)),), {"output_size": 1}),
        ((rand((1, 2, 7, 9)),), {"output_size": (7, 9)}),
        ((rand((1, 2, 7, 9)),), {"output_size": None}),
        ((rand((1, 2, 5, 3)),), {"output_size": (9, 7)}),  # windows overlap
        ((rand((1, 2, 33, 7)),), {"output_size": (5, 2)}),  # windows of 7 and 8 rows
        ((rand((1, 2, 1, 1)),), {"output_size": 3}),
        ((_to(rand((2, 3, 7, 9)), "NCHW", "NHWC"),), {"output_size": (2, 4), "layout": "NHWC"}),
    ]
    check_cases("nn.adaptive_avg_pool2d", cases)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int8", "uint8"])
def test_adaptive_avg_pool2d_dtypes(dtype: str) -> None:
    x = rand((1, 2, 7, 5), dtype)
    if dtype in ("int8", "uint8"):
        x = (x * 14).astype(dtype)
    check_cases("nn.adaptive_avg_pool2d", [((x,), {"output_size": (3, 2)})], **tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int8", "uint8"])
def test_global_avg_pool2d(dtype: str) -> None:
    x = rand((2, 3, 7, 5), dtype)
    if dtype in ("int8", "uint8"):
        x = (x * 14).astype(dtype)
    cases: list[Case] = [((x,), {}), ((_to(x, "NCHW", "NHWC"),), {"layout": "NHWC"})]
    if dtype == "float32":
        y = rand((1, 3, 4, 4))
        y[0, 0, 1, 1], y[0, 1, 2, 2], y[0, 2, 0, 0], y[0, 2, 3, 3] = np.nan, np.inf, np.inf, -np.inf
        cases.append(((y,), {}))
    check_cases("nn.global_avg_pool2d", cases, **tol(dtype))


# ---- nn.pad -------------------------------------------------------------------------------------

PAD_CASES: list[tuple[tuple[int, ...], tuple[tuple[int, int], ...]]] = [
    ((7,), ((2, 3),)),
    ((1,), ((0, 0),)),
    ((3, 4), ((1, 2), (0, 3))),
    ((2, 3, 5, 7), ((0, 0), (1, 1), (2, 0), (3, 4))),
    ((4, 33), ((3, 3), (32, 1))),
]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode: str) -> None:
    value = np.asarray(2.5, "float32")
    cases: list[Case] = [
        ((rand(shape), value), {"pad_width": widths, "pad_mode": mode})
        for shape, widths in PAD_CASES
    ]
    if mode == "constant":  # negative widths crop, to nothing at all
        cases.append(((rand((5, 6)), value), {"pad_width": ((-1, 2), (3, -4))}))
        cases.append(((rand((5, 6)), value), {"pad_width": ((-5, 1), (0, 0))}))
    cases.append(((np.asarray(3.0, "float32"), value), {"pad_width": (), "pad_mode": mode}))
    check_cases("nn.pad", cases)


def test_pad_empty() -> None:
    value = np.asarray(-1.0, "float32")
    cases: list[Case] = [
        ((np.zeros((0, 3), "float32"), value), {"pad_width": ((2, 1), (1, 0))}),
        ((np.zeros((3, 0), "float32"), value), {"pad_width": ((0, 0), (0, 0))}),
    ]
    check_cases("nn.pad", cases)


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("int32", [np.asarray(7, "int32"), np.asarray(-2.9, "float64")]),  # truncated
        ("int8", [np.asarray(-3.7, "float32"), np.asarray(True)]),
        ("uint8", [np.asarray(-1.0, "float64"), np.asarray(300, "int32")]),  # wrap: 255, 44
        ("float16", [np.asarray(0.1, "float64"), np.asarray(np.nan, "float32")]),
        ("float64", [np.asarray(-np.inf, "float32"), np.asarray(3, "int8")]),
        ("bool", [np.asarray(True), np.asarray(0.5, "float32"), np.asarray(np.nan, "float32")]),
        ("int64", [np.asarray(-5, "int64")]),
    ],
)
def test_pad_dtypes(dtype: str, values: list[Array]) -> None:
    x = rand((3, 4), dtype)
    cases: list[Case] = [((x, v), {"pad_width": ((1, 2), (2, 1))}) for v in values]
    for mode in ("edge", "reflect"):
        cases.append(((x, values[0]), {"pad_width": ((1, 2), (2, 1)), "pad_mode": mode}))
    check_cases("nn.pad", cases)


# ---- the conv2d schedule ------------------------------------------------------------------------


def _conv_group(
    shape: tuple[int, int, int, int],
    kernel: tuple[int, int, int],
    attrs: dict[str, Any],
    epilogue: str,
) -> tuple[Any, list[Array], Array]:
    """A primitive function: ``conv2d`` followed by the ``epilogue`` (``""``; ``"bias_relu"``:
    add the bias broadcast along the channels, relu; ``"residual"``: bias_add, add a residual,
    relu), its arguments and the expected result (the references composed)."""
    from relay.ir.attrs import Attrs
    from relay.ir.expr import Call, Function, Var
    from relay.ir.types import TensorType
    from relay.op.registry import get_op
    from relay.typecheck.checker import infer_type

    def call(name: str, *args: Any, **kw: Any) -> Call:
        opdef = get_op(name)
        return Call(opdef.op, tuple(args), opdef.validate_attrs(kw))

    def var(name: str, a: Array) -> Var:
        return Var(name, TensorType(a.shape, str(a.dtype)))

    x, w = conv_args(shape, kernel, attrs.get("groups", 1))
    w *= 0.2
    b = rand((kernel[0],), seed=2)
    params, args = [var("x", x), var("w", w)], [x, w]
    body: Any = call("nn.conv2d", *params, **attrs)
    expected = reference("nn.conv2d", [x, w], attrs)
    if epilogue:
        params.append(var("b", b))
        args.append(b)
    nhwc = (attrs.get("out_layout") or attrs.get("data_layout", "NCHW")) == "NHWC"
    along = b if nhwc else b[:, None, None]
    if epilogue == "bias_relu":
        bias = params[2] if nhwc else call("expand_dims", params[2], axis=1, num_newaxis=2)
        body = call("nn.relu", call("add", body, bias))
        expected = np.maximum(expected + along, 0)
    elif epilogue == "residual":
        r = rand(expected.shape, seed=3)
        params.append(var("r", r))
        args.append(r)
        body = call("nn.bias_add", body, params[2], axis=3 if nhwc else 1)
        body = call("nn.relu", call("add", body, params[3]))
        expected = np.maximum(expected + along + r, 0)
    func = infer_type(Function(tuple(params), body, attrs=Attrs({"Primitive": 1})))
    assert isinstance(func, Function)
    return func, args, expected.astype("float32")


def schedule_kind(func: Any) -> str:
    """Which schedule the conv2d rule gives the primitive function ``func``: ``"tiles"``,
    ``"rows"`` (its fallback) or ``"generic"`` (the rule declines)."""
    from relay.backend.lower import lower_primitive
    from relay.backend.runtime import tvm
    from relay.backend.schedule.conv import NotApplicable, schedule_conv2d_group, tile_plan

    lowered = lower_primitive(func)
    sch = tvm().s_tir.Schedule(lowered.prim_func)
    try:
        schedule_conv2d_group(sch, lowered)
    except NotApplicable:
        return "generic"
    sch = tvm().s_tir.Schedule(lowered.prim_func)
    try:
        tile_plan(sch, sch.get_sblock(lowered.anchor_ops[0]))
    except NotApplicable:
        return "rows"
    return "tiles"


ScheduleCase = tuple[tuple[int, int, int, int], tuple[int, int, int], dict[str, Any], str, str]
"""Data, (out channels, kh, kw), attributes, epilogue, the schedule that applies."""

SCHEDULE_CASES: dict[str, list[ScheduleCase]] = {
    "conv_block": [  # the reference workload's two groups
        ((1, 64, 56, 56), (64, 3, 3), {"padding": 1}, "bias_relu", "tiles"),
        ((1, 64, 56, 56), (64, 3, 3), {"padding": 1}, "residual", "tiles"),
    ],
    "shapes": [
        ((1, 16, 14, 14), (32, 3, 3), {"padding": 1}, "", "tiles"),
        ((2, 16, 9, 13), (32, 3, 3), {"padding": 1}, "residual", "tiles"),
        ((1, 8, 15, 11), (16, 3, 3), {"padding": 1, "strides": 2}, "bias_relu", "tiles"),
        ((1, 16, 7, 7), (48, 1, 1), {}, "residual", "tiles"),
        ((1, 16, 12, 12), (32, 5, 5), {"padding": (2, 1, 0, 3)}, "bias_relu", "tiles"),
        ((1, 16, 11, 11), (16, 3, 3), {"padding": 2, "dilation": 2}, "residual", "tiles"),
        ((1, 3, 17, 17), (16, 3, 3), {}, "bias_relu", "tiles"),
    ],
    "partial_blocks": [
        ((1, 16, 7, 31), (64, 3, 3), {"padding": 1}, "residual", "tiles"),  # 31 = 14 + 14 + 3
        ((1, 8, 5, 33), (32, 3, 3), {"padding": (0, 1), "strides": (1, 2)}, "bias_relu", "tiles"),
        ((1, 8, 9, 9), (12, 3, 3), {"padding": 1}, "residual", "tiles"),  # 12-lane vectors
        ((1, 8, 9, 9), (3, 3, 3), {"padding": 1}, "bias_relu", "tiles"),
    ],
    "groups": [
        ((1, 16, 8, 8), (32, 3, 3), {"padding": 1, "groups": 2}, "residual", "tiles"),
        ((1, 16, 8, 8), (32, 3, 3), {"padding": 1, "groups": 8}, "bias_relu", "tiles"),
        ((1, 16, 8, 8), (16, 3, 3), {"padding": 1, "groups": 16}, "bias_relu", "rows"),
        ((1, 16, 8, 8), (16, 3, 3), {"padding": 1, "groups": 8}, "residual", "rows"),
    ],
    "other_layouts": [
        ((1, 16, 6, 6), (32, 3, 3), {"padding": 1, "out_layout": "NHWC"}, "", "rows"),
        ((1, 16, 6, 5), (32, 3, 3), {"padding": 1, "out_layout": "NHWC"}, "residual", "rows"),
    ],
}


@pytest.mark.parametrize("family", list(SCHEDULE_CASES))
def test_conv2d_schedule(family: str) -> None:
    from relay.backend.compiler import compile_functions

    groups = [_conv_group(s, k, a, e) for s, k, a, e, _ in SCHEDULE_CASES[family]]
    for (func, _, _), (*_, kind) in zip(groups, SCHEDULE_CASES[family], strict=True):
        assert schedule_kind(func) == kind
    lib, symbols = compile_functions([g[0] for g in groups], Target.of(None))
    for (_, args, expected), symbol in zip(groups, symbols, strict=True):
        (got,) = lib[symbol](*args)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("data_layout", "kernel_layout", "dtype", "groups", "kind"),
    [
        ("NCHW", "HWIO", "float32", 1, "tiles"),  # any kernel layout: the packing reads it
        ("NCHW", "OHWI", "float32", 2, "tiles"),
        ("NHWC", "HWIO", "float32", 1, "rows"),
        ("NHWC", "HWOI", "float32", 16, "rows"),  # depthwise
        ("NHWC", "OIHW", "float32", 4, "rows"),
        ("NCHW", "OIHW", "float64", 1, "rows"),
        ("NCHW", "OIHW", "float16", 1, "generic"),  # accumulates in float32, then a cast
        ("NCHW", "OIHW", "int32", 1, "generic"),
    ],
)
def test_conv2d_schedule_kinds(
    data_layout: str, kernel_layout: str, dtype: str, groups: int, kind: str
) -> None:
    """Layouts, groups and dtypes the tiles do not handle get the rows, or the generic
    schedule; all compute the reference's result."""
    from relay.testing.lowering import primitive_op_function

    x = _to(rand((1, 16, 7, 6), dtype), "NCHW", data_layout)
    w = _to(rand((32, 16 // groups, 3, 3), dtype, seed=1), "OIHW", kernel_layout)
    attrs = {
        "padding": (1, 0, 2, 1),
        "groups": groups,
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
    }
    assert schedule_kind(primitive_op_function("nn.conv2d", (x, w), attrs)) == kind
    cases: list[Case] = [((x, w), attrs), ((x, w), {**attrs, "strides": 2, "dilation": (1, 2)})]
    check_cases("nn.conv2d", cases, **tol(dtype))
