"""The TVM lowering of the convolutions, poolings and padding against their numpy references,
and the CPU schedule of groups anchored on ``nn.conv2d`` (with its fused epilogue).

Each operator case compiles one call (``relay.testing.lowering.check_op_lowering``) and
compares it with the operator's reference: same shape, dtype and values (exactly for integers
and bools). The schedule cases compile primitive functions of a convolution and its epilogue
and compare them with the references composed in numpy; the schedule is checked to apply
(not to fall back to the generic one) where it should.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relay.testing.lowering import check_op_lowering

pytestmark = pytest.mark.tvm

Array = np.ndarray[Any, np.dtype[Any]]


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


ZERO_SIZE = pytest.mark.xfail(
    raises=ValueError,
    strict=False,
    reason="the kernel runtime passes zero-size numpy arrays with strides TVM rejects as "
    "not compact (relay.backend.runtime; it depends on the array's address)",
)
"""A case with a zero-size tensor: the lowering handles it, the kernel call may not."""


def tol(dtype: str) -> dict[str, float]:
    if dtype == "float16":
        return {"rtol": 2e-2, "atol": 2e-2}
    if dtype == "float64":
        return {"rtol": 1e-10, "atol": 1e-10}
    return {"rtol": 1e-4, "atol": 1e-4}


# ---- nn.conv2d ----------------------------------------------------------------------------------

# (data NCHW, (out channels, kernel h, kernel w), attributes)
CONV_CASES: list[tuple[tuple[int, int, int, int], tuple[int, int, int], dict[str, Any]]] = [
    ((1, 3, 7, 7), (4, 3, 3), {}),
    ((2, 3, 7, 9), (5, 3, 3), {"padding": 1}),
    ((1, 4, 9, 7), (4, 1, 1), {}),
    ((1, 4, 9, 7), (4, 1, 1), {"strides": 2}),
    ((1, 3, 33, 7), (2, 5, 5), {"padding": 2}),
    ((1, 3, 8, 8), (4, 3, 3), {"strides": 2, "padding": 1}),
    ((1, 3, 7, 8), (4, 3, 3), {"strides": (2, 1), "padding": (1, 0)}),
    ((1, 3, 7, 7), (4, 3, 2), {"padding": (0, 1, 2, 1)}),
    ((1, 3, 9, 9), (4, 3, 3), {"dilation": 2, "padding": 2}),
    ((1, 3, 9, 11), (4, 3, 3), {"dilation": (2, 3), "strides": 2, "padding": (1, 2, 0, 3)}),
    ((1, 4, 7, 7), (6, 3, 3), {"groups": 2, "padding": 1}),
    ((2, 6, 7, 5), (6, 3, 3), {"groups": 6, "padding": 1}),
    ((1, 6, 7, 7), (12, 3, 3), {"groups": 6, "strides": 2}),
    ((1, 4, 1, 1), (3, 1, 1), {}),
    ((1, 2, 1, 1), (3, 3, 3), {"padding": 1}),
    ((1, 1, 5, 5), (1, 5, 5), {}),
    ((1, 16, 14, 14), (32, 3, 3), {"padding": 1}),
    ((1, 32, 9, 7), (16, 3, 3), {"padding": 1, "strides": 2}),
    ((1, 16, 7, 7), (16, 1, 1), {}),
    ((1, 16, 5, 5), (32, 3, 3), {"padding": 1, "dilation": 2}),
    ((1, 16, 6, 6), (32, 3, 3), {"padding": 1, "groups": 2}),
    pytest.param((0, 3, 5, 5), (2, 3, 3), {"padding": 1}, marks=ZERO_SIZE),
]


@pytest.mark.parametrize(("shape", "kernel", "attrs"), CONV_CASES)
def test_conv2d(
    shape: tuple[int, int, int, int], kernel: tuple[int, int, int], attrs: dict[str, Any]
) -> None:
    o, kh, kw = kernel
    groups = attrs.get("groups", 1)
    x = rand(shape)
    w = rand((o, shape[1] // groups, kh, kw), seed=1)
    check_op_lowering("nn.conv2d", x, w, **attrs, **tol("float32"))


def _to(a: Array, src: str, dst: str) -> Array:
    return np.ascontiguousarray(np.transpose(a, [src.index(c) for c in dst]))


@pytest.mark.parametrize(
    ("data_layout", "kernel_layout", "out_layout"),
    [
        ("NHWC", "HWIO", ""),
        ("NHWC", "OHWI", ""),
        ("NCHW", "HWOI", "NHWC"),
        ("NHWC", "IOHW", "NCHW"),
        ("NCHW", "IHWO", ""),
    ],
)
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_layouts(data_layout: str, kernel_layout: str, out_layout: str, groups: int) -> None:
    x = _to(rand((2, 4, 7, 5)), "NCHW", data_layout)
    w = _to(rand((6, 4 // groups, 3, 2), seed=1), "OIHW", kernel_layout)
    check_op_lowering(
        "nn.conv2d",
        x,
        w,
        padding=(1, 0, 1, 1),
        strides=(1, 2),
        groups=groups,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        **tol("float32"),
    )


@pytest.mark.parametrize(
    ("dtype", "out_dtype"),
    [
        ("float64", ""),
        ("float16", ""),
        ("float16", "float32"),
        ("float32", "float64"),
        ("int32", ""),
        ("int8", ""),
        ("int8", "int32"),
        ("uint8", "int32"),
        ("uint8", ""),
        ("int32", "float32"),
        ("int64", ""),
    ],
)
def test_conv2d_dtypes(dtype: str, out_dtype: str) -> None:
    x = rand((1, 4, 6, 5), dtype)
    w = rand((4, 2, 3, 3), dtype, seed=1)
    if dtype in ("int8", "uint8"):  # sums past the 8-bit range wrap, as the reference's astype
        x = (x * 3).astype(dtype)
    check_op_lowering(
        "nn.conv2d", x, w, padding=1, groups=2, out_dtype=out_dtype, **tol(out_dtype or dtype)
    )


def test_conv2d_nonfinite() -> None:
    x = rand((1, 2, 5, 5))
    x[0, 0, 1, 1], x[0, 1, 3, 2], x[0, 0, 4, 4] = np.nan, np.inf, -np.inf
    check_op_lowering("nn.conv2d", x, rand((2, 2, 3, 3), seed=1), padding=1, **tol("float32"))


@ZERO_SIZE
def test_conv2d_zero_weight_channels() -> None:
    x = np.zeros((1, 0, 5, 5), "float32")
    check_op_lowering("nn.conv2d", x, np.zeros((3, 0, 3, 3), "float32"), padding=1)


# ---- nn.conv2d_transpose ------------------------------------------------------------------------

# (data NCHW, (out channels per group, kernel h, kernel w), attributes)
CONV_T_CASES: list[tuple[tuple[int, int, int, int], tuple[int, int, int], dict[str, Any]]] = [
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
    pytest.param((0, 2, 3, 3), (2, 3, 3), {"strides": 2}, marks=ZERO_SIZE),
]


@pytest.mark.parametrize(("shape", "kernel", "attrs"), CONV_T_CASES)
def test_conv2d_transpose(
    shape: tuple[int, int, int, int], kernel: tuple[int, int, int], attrs: dict[str, Any]
) -> None:
    og, kh, kw = kernel
    x = rand(shape)
    w = rand((shape[1], og, kh, kw), seed=1)
    check_op_lowering("nn.conv2d_transpose", x, w, **attrs, **tol("float32"))


@pytest.mark.parametrize(
    ("data_layout", "kernel_layout", "out_layout"),
    [("NHWC", "HWOI", ""), ("NCHW", "OIHW", "NHWC"), ("NHWC", "IHWO", "NCHW")],
)
def test_conv2d_transpose_layouts(data_layout: str, kernel_layout: str, out_layout: str) -> None:
    x = _to(rand((1, 4, 5, 4)), "NCHW", data_layout)
    w = _to(rand((4, 3, 3, 2), seed=1), "IOHW", kernel_layout)
    check_op_lowering(
        "nn.conv2d_transpose",
        x,
        w,
        strides=2,
        padding=(1, 0),
        output_padding=(1, 0),
        groups=2,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
        **tol("float32"),
    )


@pytest.mark.parametrize(
    ("dtype", "out_dtype"),
    [("float64", ""), ("float16", ""), ("int32", ""), ("int8", ""), ("int8", "int32")],
)
def test_conv2d_transpose_dtypes(dtype: str, out_dtype: str) -> None:
    x = rand((1, 2, 4, 4), dtype)
    w = rand((2, 3, 3, 3), dtype, seed=1)
    if dtype == "int8":
        x = (x * 5).astype(dtype)
    check_op_lowering(
        "nn.conv2d_transpose",
        x,
        w,
        strides=2,
        padding=1,
        out_dtype=out_dtype,
        **tol(out_dtype or dtype),
    )


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
]


@pytest.mark.parametrize("attrs", POOL_CASES)
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 2, 11, 6)])
def test_max_pool2d(attrs: dict[str, Any], shape: tuple[int, int, int, int]) -> None:
    check_op_lowering("nn.max_pool2d", rand(shape), **attrs)


@pytest.mark.parametrize("attrs", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d(attrs: dict[str, Any], count_include_pad: bool) -> None:
    x = rand((2, 3, 7, 9))
    check_op_lowering("nn.avg_pool2d", x, count_include_pad=count_include_pad, **attrs)


POOL_DTYPE_ATTRS = {"pool_size": 3, "strides": 2, "padding": (1, 0, 1, 2), "ceil_mode": True}


@pytest.mark.parametrize(
    "dtype", ["float64", "float16", "int32", "int8", "uint8", "int64", "uint32", "bool"]
)
def test_max_pool2d_dtypes(dtype: str) -> None:
    x = rand((1, 2, 7, 6), dtype)
    if dtype == "int8":
        x[0, 0, :2, :2] = -128  # the padding (the lowest value) ties with the data
    check_op_lowering("nn.max_pool2d", x, **POOL_DTYPE_ATTRS)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int8", "uint8", "int64"])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d_dtypes(dtype: str, count_include_pad: bool) -> None:
    x = rand((1, 2, 7, 6), dtype)
    if dtype in ("int8", "uint8"):  # 8-bit sums wrap as the reference's; negatives truncate
        x = (x * 14).astype(dtype)
    check_op_lowering(
        "nn.avg_pool2d",
        x,
        count_include_pad=count_include_pad,
        **POOL_DTYPE_ATTRS,
        **tol(dtype),
    )


def test_max_pool2d_nonfinite() -> None:
    x = rand((1, 2, 6, 6))
    x[0, 0, 1, 1] = np.nan  # propagates to every window that holds it
    x[0, 1, :3, :3] = -np.inf  # a window of -inf and padding
    x[0, 1, 4, 4] = np.inf
    check_op_lowering("nn.max_pool2d", x, pool_size=3, strides=2, padding=1, ceil_mode=True)


def test_avg_pool2d_nonfinite() -> None:
    x = rand((1, 2, 6, 6))
    x[0, 0, 1, 1], x[0, 1, 4, 4], x[0, 1, 0, 0] = np.nan, np.inf, -np.inf
    check_op_lowering("nn.avg_pool2d", x, pool_size=3, strides=2, padding=1)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_nhwc(kind: str) -> None:
    x = rand((2, 7, 9, 3))
    extra = {"count_include_pad": True} if kind == "avg" else {}
    check_op_lowering(
        f"nn.{kind}_pool2d",
        x,
        pool_size=(3, 2),
        strides=2,
        padding=(1, 0, 1, 1),
        ceil_mode=True,
        layout="NHWC",
        **extra,
    )


@ZERO_SIZE
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_empty(kind: str) -> None:
    check_op_lowering(f"nn.{kind}_pool2d", np.zeros((0, 2, 5, 5), "float32"), pool_size=2)


# ---- pooling gradients --------------------------------------------------------------------------


def _pooled_shape(name: str, x: Array, attrs: dict[str, Any]) -> tuple[int, ...]:
    from relay.op.registry import get_op

    opdef = get_op(name)
    assert opdef.reference is not None
    full = dict(opdef.validate_attrs(attrs).items())
    return tuple(opdef.reference(x, **full).shape)


@pytest.mark.parametrize("attrs", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_grad(attrs: dict[str, Any], kind: str) -> None:
    x = rand((2, 3, 7, 9))
    if kind == "max":
        x = np.round(x).astype("float32")  # ties: the window's first maximum takes it all
    g = rand(_pooled_shape(f"nn.{kind}_pool2d", x, attrs), seed=1)
    check_op_lowering(f"nn.{kind}_pool2d_grad", g, x, **attrs)


@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d_grad_count(count_include_pad: bool) -> None:
    attrs = {"pool_size": 3, "strides": 2, "padding": (1, 2, 0, 1), "ceil_mode": True}
    x = rand((1, 2, 8, 7))
    g = rand(_pooled_shape("nn.avg_pool2d", x, attrs), seed=1)
    check_op_lowering("nn.avg_pool2d_grad", g, x, count_include_pad=count_include_pad, **attrs)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_pool2d_grad_dtypes(kind: str, dtype: str) -> None:
    attrs = {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True}
    x = rand((1, 2, 7, 6), dtype)
    g = rand(_pooled_shape(f"nn.{kind}_pool2d", x, attrs), dtype, seed=1)
    check_op_lowering(f"nn.{kind}_pool2d_grad", g, x, **attrs, **tol(dtype))


def test_max_pool2d_grad_nonfinite_and_ties() -> None:
    attrs = {"pool_size": 3, "strides": 1, "padding": 1}
    x = np.zeros((1, 3, 5, 5), "float32")  # channel 0: all ties
    x[0, 1, 2, 2] = np.nan  # NaN is the maximum of its windows (numpy's argmax)
    x[0, 1, 0, 3] = np.nan
    x[0, 2] = -np.inf  # windows of -inf and padding: the first tap, maybe padding, takes it
    x[0, 2, 4, 4] = 1.0
    g = rand((1, 3, 5, 5), seed=1)
    check_op_lowering("nn.max_pool2d_grad", g, x, **attrs)


def test_pool2d_grad_nhwc() -> None:
    attrs = {"pool_size": 2, "strides": 2, "padding": (0, 1), "ceil_mode": True, "layout": "NHWC"}
    x = np.round(rand((1, 7, 6, 3)) * 2).astype("float32")
    for kind in ("max", "avg"):
        g = rand(_pooled_shape(f"nn.{kind}_pool2d", x, attrs), seed=1)
        check_op_lowering(f"nn.{kind}_pool2d_grad", g, x, **attrs)


# ---- adaptive and global average pooling --------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "output_size"),
    [
        ((2, 3, 7, 9), (3, 4)),
        ((1, 2, 7, 9), 1),
        ((1, 2, 7, 9), (7, 9)),
        ((1, 2, 7, 9), None),
        ((1, 2, 5, 3), (9, 7)),
        ((1, 2, 33, 7), (5, 2)),
        ((1, 2, 1, 1), 3),
    ],
)
def test_adaptive_avg_pool2d(shape: tuple[int, int, int, int], output_size: Any) -> None:
    check_op_lowering("nn.adaptive_avg_pool2d", rand(shape), output_size=output_size)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int8", "uint8"])
def test_adaptive_avg_pool2d_dtypes(dtype: str) -> None:
    x = rand((1, 2, 7, 5), dtype)
    if dtype in ("int8", "uint8"):
        x = (x * 14).astype(dtype)
    check_op_lowering("nn.adaptive_avg_pool2d", x, output_size=(3, 2), **tol(dtype))


def test_adaptive_avg_pool2d_nhwc() -> None:
    x = rand((2, 7, 9, 3))
    check_op_lowering("nn.adaptive_avg_pool2d", x, output_size=(2, 4), layout="NHWC")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int8", "uint8"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_avg_pool2d(dtype: str, layout: str) -> None:
    x = rand((2, 3, 7, 5), dtype)
    if dtype in ("int8", "uint8"):
        x = (x * 14).astype(dtype)
    if layout == "NHWC":
        x = _to(x, "NCHW", "NHWC")
    check_op_lowering("nn.global_avg_pool2d", x, layout=layout, **tol(dtype))


def test_global_avg_pool2d_nonfinite() -> None:
    x = rand((1, 3, 4, 4))
    x[0, 0, 1, 1], x[0, 1, 2, 2], x[0, 2, 0, 0], x[0, 2, 3, 3] = np.nan, np.inf, np.inf, -np.inf
    check_op_lowering("nn.global_avg_pool2d", x)


# ---- nn.pad -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize(
    ("shape", "widths"),
    [
        ((7,), ((2, 3),)),
        ((1,), ((0, 0),)),
        ((3, 4), ((1, 2), (0, 3))),
        ((2, 3, 5, 7), ((0, 0), (1, 1), (2, 0), (3, 4))),
        ((4, 33), ((3, 3), (32, 1))),
    ],
)
def test_pad(mode: str, shape: tuple[int, ...], widths: tuple[tuple[int, int], ...]) -> None:
    x = rand(shape)
    check_op_lowering("nn.pad", x, np.asarray(2.5, "float32"), pad_width=widths, pad_mode=mode)


@pytest.mark.parametrize(
    ("shape", "widths"),
    [
        ((5, 6), ((-1, 2), (3, -4))),  # negative widths crop
        ((5, 6), ((-5, 1), (0, 0))),  # the data cropped away entirely
        pytest.param((0, 3), ((2, 1), (1, 0)), marks=ZERO_SIZE),  # empty data, value only
        pytest.param((3, 0), ((0, 0), (0, 0)), marks=ZERO_SIZE),
        ((), ()),
    ],
)
def test_pad_constant_edges(shape: tuple[int, ...], widths: tuple[tuple[int, int], ...]) -> None:
    x = rand(shape)
    check_op_lowering("nn.pad", x, np.asarray(-1.0, "float32"), pad_width=widths)


@pytest.mark.parametrize("mode", ["edge", "reflect"])
def test_pad_rank0(mode: str) -> None:
    x = np.asarray(3.0, "float32")
    check_op_lowering("nn.pad", x, np.asarray(0.0, "float32"), pad_width=(), pad_mode=mode)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("int32", np.asarray(7, "int32")),
        ("int8", np.asarray(-3.7, "float32")),  # cast to the data dtype: truncated
        ("uint8", np.asarray(-1.0, "float64")),  # through int64, as numpy: 255
        ("float16", np.asarray(0.1, "float64")),
        ("float64", np.asarray(np.nan, "float32")),
        ("bool", np.asarray(True)),
        ("bool", np.asarray(0.5, "float32")),  # nonzero: True
        ("float32", np.asarray(-np.inf, "float32")),
        ("int64", np.asarray(True)),
    ],
)
@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_dtypes(dtype: str, value: Array, mode: str) -> None:
    x = rand((3, 4), dtype)
    check_op_lowering("nn.pad", x, value, pad_width=((1, 2), (2, 1)), pad_mode=mode)


# ---- the conv2d schedule ------------------------------------------------------------------------


def _conv_group(
    shape: tuple[int, int, int, int],
    kernel: tuple[int, int, int],
    attrs: dict[str, Any],
    epilogue: str,
) -> tuple[Any, list[Array], Array]:
    """A primitive function ``conv2d`` + epilogue (``""``, ``"bias_relu"``: add a bias
    broadcast as (O, 1, 1) and relu; ``"residual"``: bias_add, add the residual, relu), its
    arguments and the expected result (the references composed)."""
    from relay.ir.attrs import Attrs
    from relay.ir.expr import Call, Function, Var, const
    from relay.ir.types import TensorType
    from relay.op.registry import get_op
    from relay.typecheck.checker import infer_type

    def call(name: str, *args: Any, **kw: Any) -> Call:
        opdef = get_op(name)
        return Call(opdef.op, tuple(args), opdef.validate_attrs(kw))

    def ref(name: str, *args: Any, **kw: Any) -> Array:
        opdef = get_op(name)
        assert opdef.reference is not None
        full = dict(opdef.validate_attrs(kw).items())
        return np.asarray(opdef.reference(*args, **full) if full else opdef.reference(*args))

    o, kh, kw = kernel
    groups = attrs.get("groups", 1)
    x = rand(shape)
    w = rand((o, shape[1] // groups, kh, kw), seed=1) * 0.2
    b = rand((o,), seed=2)
    px = Var("x", TensorType(x.shape, "float32"))  # type: ignore[arg-type]
    pw = Var("w", TensorType(w.shape, "float32"))  # type: ignore[arg-type]
    pb = Var("b", TensorType(b.shape, "float32"))  # type: ignore[arg-type]
    params = [px, pw, pb]
    args = [x, w, b]
    body: Any = call("nn.conv2d", px, pw, **attrs)
    expected = ref("nn.conv2d", x, w, **attrs)
    if epilogue == "bias_relu":
        bias = call("expand_dims", pb, axis=1, num_newaxis=2)
        body = call("nn.relu", call("add", body, bias))
        expected = np.maximum(expected + b[:, None, None], 0)
    elif epilogue == "residual":
        r = rand(expected.shape, seed=3)
        pr = Var("r", TensorType(r.shape, "float32"))  # type: ignore[arg-type]
        params.append(pr)
        args.append(r)
        body = call("nn.bias_add", body, pb, axis=1)
        body = call("nn.relu", call("add", body, pr))
        expected = np.maximum(expected + b[:, None, None] + r, 0)
    else:
        params.pop()
        args.pop()
    del const
    func = infer_type(Function(tuple(params), body, attrs=Attrs({"Primitive": 1})))
    assert isinstance(func, Function)
    return func, args, expected.astype("float32")


def _scheduled(func: Any) -> bool:
    """Whether the conv2d schedule applies to ``func`` (lowered) without falling back."""
    from relay.backend.lower import lower_primitive
    from relay.backend.runtime import tvm
    from relay.backend.schedule.conv import schedule_conv2d_group

    lowered = lower_primitive(func)
    sch = tvm().s_tir.Schedule(lowered.prim_func)
    try:
        schedule_conv2d_group(sch, lowered)
    except Exception:
        return False
    return True


SCHEDULE_CASES: list[
    tuple[tuple[int, int, int, int], tuple[int, int, int], dict[str, Any], bool]
] = [
    # (data, (out channels, kh, kw), attributes, whether the tiled schedule applies)
    ((1, 64, 56, 56), (64, 3, 3), {"padding": 1}, True),
    ((1, 16, 14, 14), (32, 3, 3), {"padding": 1}, True),
    ((2, 16, 9, 13), (32, 3, 3), {"padding": 1}, True),
    ((1, 8, 15, 11), (16, 3, 3), {"padding": 1, "strides": 2}, True),
    ((1, 16, 7, 7), (48, 1, 1), {}, True),
    ((1, 16, 12, 12), (32, 5, 5), {"padding": (2, 1, 0, 3)}, True),
    ((1, 16, 11, 11), (16, 3, 3), {"padding": 2, "dilation": 2}, True),
    ((1, 3, 17, 17), (16, 3, 3), {}, True),
    ((1, 16, 7, 31), (64, 3, 3), {"padding": 1}, True),
    ((1, 16, 8, 8), (32, 3, 3), {"padding": 1, "groups": 2}, False),
    ((1, 16, 8, 8), (16, 3, 3), {"padding": 1, "groups": 16}, False),
    ((1, 8, 9, 9), (12, 3, 3), {"padding": 1}, False),
]


@pytest.mark.parametrize(("shape", "kernel", "attrs", "applies"), SCHEDULE_CASES)
@pytest.mark.parametrize("epilogue", ["", "bias_relu", "residual"])
def test_conv2d_schedule(
    shape: tuple[int, int, int, int],
    kernel: tuple[int, int, int],
    attrs: dict[str, Any],
    applies: bool,
    epilogue: str,
) -> None:
    from relay.backend.compiler import compile_functions
    from relay.backend.target import Target

    if shape[1] == 64 and epilogue == "":
        pytest.skip("the large case runs with its epilogues only")
    func, args, expected = _conv_group(shape, kernel, attrs, epilogue)
    assert _scheduled(func) == applies
    lib, (symbol,) = compile_functions([func], Target.of(None))
    (got,) = lib[symbol](*args)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
