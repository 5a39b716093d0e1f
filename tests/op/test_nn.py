"""The neural-network operators of relay/op/nn.py.

Convolution and pooling references (im2col/einsum, window stacking) are checked against
direct loop implementations on small random shapes and attributes (hypothesis), with every
layout; conv2d_transpose also against its defining property, being conv2d's adjoint. The
other operators are checked against formulas evaluated in float64 or Python loops; then the
operators run through the interpreter (builders and parsed text), with attribute validation,
run-time errors and their spans, and print -> parse round trips.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
import relay.op.nn as nn
from relay.errors import ExecutionError, ParseError
from relay.ir import Call, Expr, Function, Tuple, TupleGetItem, Var, const
from relay.ir.types import TensorType
from relay.op import OpPattern, get_op
from relay.op.registry import AttrValidationError
from relay.typecheck import infer_call_type


def run(name: str, *args: Any, **attrs: Any) -> Any:
    """The reference of ``name`` called as the interpreter calls it: all attributes given."""
    opdef = get_op(name)
    assert opdef.reference is not None
    return opdef.reference(*args, **opdef.validate_attrs(attrs))


def check(result: object, expected: np.ndarray, exact: bool = False, tol: float = 1e-5) -> None:
    assert type(result) is np.ndarray
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if exact:
        np.testing.assert_array_equal(result, expected)
    else:
        np.testing.assert_allclose(result, expected, rtol=tol, atol=tol)


def interp(build: Callable[..., Any], *arrays: np.ndarray) -> Any:
    params = tuple(Var(f"x{i}") for i in range(len(arrays)))
    return relay.interpret(Function(params, build(*params)), *arrays)


def rand(rng: np.random.Generator, *shape: int, dtype: str = "float32") -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def pad4(padding: list[int]) -> tuple[int, int, int, int]:
    if len(padding) == 1:
        return (padding[0], padding[0], padding[0], padding[0])
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return (padding[0], padding[1], padding[2], padding[3])


def to_layout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    return np.transpose(x, [src.index(c) for c in dst])


# ---- registry entries ---------------------------------------------------------------------------

PATTERNS = {
    "nn.dense": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.matmul": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.batch_matmul": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.bias_add": OpPattern.BROADCAST,
    "nn.relu": OpPattern.ELEMWISE,
    "nn.leaky_relu": OpPattern.ELEMWISE,
    "nn.prelu": OpPattern.BROADCAST,
    "nn.gelu": OpPattern.ELEMWISE,
    "nn.softmax": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.log_softmax": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.conv2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.conv2d_transpose": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.max_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.global_avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.adaptive_avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.pad": OpPattern.INJECTIVE,
    "nn.batch_flatten": OpPattern.INJECTIVE,
    "nn.batch_norm": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.layer_norm": OpPattern.OPAQUE,
    "nn.dropout": OpPattern.OPAQUE,
    "nn.cross_entropy": OpPattern.OPAQUE,
    "nn.cross_entropy_with_logits": OpPattern.OPAQUE,
}


def test_patterns_and_arity() -> None:
    for name, pattern in PATTERNS.items():
        assert get_op(name).pattern == pattern, name
    arity = {"nn.batch_norm": 5, "nn.layer_norm": 3}
    for name in PATTERNS:
        want = arity.get(name, 1 if name in ONE_INPUT else 2)
        assert get_op(name).num_inputs == want, name


ONE_INPUT = {
    "nn.relu",
    "nn.leaky_relu",
    "nn.gelu",
    "nn.softmax",
    "nn.log_softmax",
    "nn.max_pool2d",
    "nn.avg_pool2d",
    "nn.global_avg_pool2d",
    "nn.adaptive_avg_pool2d",
    "nn.batch_flatten",
    "nn.dropout",
}


def test_schemas_follow_relay() -> None:
    def fields(name: str) -> list[tuple[str, object]]:
        return [(f.name, f.default) for f in get_op(name).attrs_schema]

    assert fields("nn.conv2d") == [
        ("strides", (1, 1)),
        ("padding", (0, 0)),
        ("dilation", (1, 1)),
        ("groups", 1),
        ("channels", None),
        ("kernel_size", None),
        ("data_layout", "NCHW"),
        ("kernel_layout", "OIHW"),
        ("out_layout", ""),
        ("out_dtype", ""),
    ]
    assert fields("nn.conv2d_transpose")[:4] == [
        ("channels", None),
        ("kernel_size", None),
        ("strides", (1, 1)),
        ("output_padding", (0, 0)),
    ]
    assert ("kernel_layout", "IOHW") in fields("nn.conv2d_transpose")
    assert fields("nn.dense") == [("units", None), ("out_dtype", "")]
    assert fields("nn.batch_matmul") == [
        ("out_dtype", ""),
        ("transpose_a", False),
        ("transpose_b", False),
    ]
    assert fields("nn.leaky_relu") == [("alpha", 0.25)]
    assert fields("nn.avg_pool2d")[-1] == ("count_include_pad", False)
    assert fields("nn.batch_norm") == [
        ("axis", 1),
        ("epsilon", 1e-5),
        ("center", True),
        ("scale", True),
        ("training", False),
        ("momentum", 0.1),
    ]
    assert fields("nn.layer_norm")[0] == ("axis", -1)
    assert fields("nn.pad") == [("pad_width", fields("nn.pad")[0][1]), ("pad_mode", "constant")]
    assert get_op("nn.pad").attrs_schema[0].required
    assert get_op("nn.max_pool2d").attrs_schema[0].required


# ---- convolution --------------------------------------------------------------------------------


def conv2d_loop(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilation: tuple[int, int],
    groups: int,
) -> np.ndarray:
    """Direct convolution: NCHW data, OIHW kernel, float64."""
    n, _, h, wd = x.shape
    o, i, kh, kw = w.shape
    pt, pl, pb, pr = pads
    oh = (h + pt + pb - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (wd + pl + pr - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    per_group = o // groups
    for b, oc, y, xx in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // per_group
        acc = 0.0
        for ic, a, bb in itertools.product(range(i), range(kh), range(kw)):
            yy = y * strides[0] + a * dilation[0] - pt
            xi = xx * strides[1] + bb * dilation[1] - pl
            if 0 <= yy < h and 0 <= xi < wd:
                acc += float(x[b, g * i + ic, yy, xi]) * float(w[oc, ic, a, bb])
        out[b, oc, y, xx] = acc
    return out


def conv2d_transpose_loop(
    x: np.ndarray,
    w: np.ndarray,
    strides: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilation: tuple[int, int],
    output_padding: tuple[int, int],
    groups: int,
) -> np.ndarray:
    """Direct transposed convolution by scattering: NCHW data, IOHW kernel, float64."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    pt, pl, pb, pr = pads
    oh = (h - 1) * strides[0] + (kh - 1) * dilation[0] + 1 - pt - pb + output_padding[0]
    ow = (wd - 1) * strides[1] + (kw - 1) * dilation[1] + 1 - pl - pr + output_padding[1]
    out = np.zeros((n, og * groups, oh, ow))
    cg = c // groups
    for b, ic, y, xx, oc, a, bb in itertools.product(
        range(n), range(c), range(h), range(wd), range(og), range(kh), range(kw)
    ):
        yy = y * strides[0] + a * dilation[0] - pt
        xi = xx * strides[1] + bb * dilation[1] - pl
        if 0 <= yy < oh and 0 <= xi < ow:
            out[b, (ic // cg) * og + oc, yy, xi] += float(x[b, ic, y, xx]) * float(w[ic, oc, a, bb])
    return out


@st.composite
def conv_case(draw: st.DrawFn) -> dict[str, Any]:
    groups = draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    npad = draw(st.sampled_from([1, 2, 4]))
    return {
        "n": draw(st.integers(1, 2)),
        "groups": groups,
        "cin": groups * draw(st.integers(1, 2)),
        "cout": groups * draw(st.integers(1, 2)),
        "h": draw(st.integers(1, 6)),
        "w": draw(st.integers(1, 6)),
        "kernel": (kh, kw),
        "strides": [draw(st.integers(1, 3)), draw(st.integers(1, 3))],
        "dilation": [draw(st.integers(1, 2)), draw(st.integers(1, 2))],
        "padding": [draw(st.integers(0, 2)) for _ in range(npad)],
        "data_layout": draw(st.sampled_from(["NCHW", "NHWC"])),
        "kernel_layout": draw(st.sampled_from(["OIHW", "HWIO", "OHWI", "HWOI"])),
        "out_layout": draw(st.sampled_from(["", "NCHW", "NHWC"])),
        "seed": draw(st.integers(0, 2**16)),
    }


@settings(max_examples=60, deadline=None)
@given(case=conv_case())
def test_conv2d_matches_the_direct_loop(case: dict[str, Any]) -> None:
    rng = np.random.default_rng(case["seed"])
    g: int = case["groups"]
    kh, kw = case["kernel"]
    x = rand(rng, case["n"], case["cin"], case["h"], case["w"])
    w = rand(rng, case["cout"], case["cin"] // g, kh, kw)
    pads = pad4(case["padding"])
    attrs = {
        "strides": case["strides"],
        "padding": case["padding"],
        "dilation": case["dilation"],
        "groups": g,
        "data_layout": case["data_layout"],
        "kernel_layout": case["kernel_layout"],
        "out_layout": case["out_layout"],
    }
    xd = to_layout(x, "NCHW", case["data_layout"])
    wd = to_layout(w, "OIHW", case["kernel_layout"])
    span_h = (kh - 1) * case["dilation"][0] + 1
    span_w = (kw - 1) * case["dilation"][1] + 1
    if case["h"] + pads[0] + pads[2] < span_h or case["w"] + pads[1] + pads[3] < span_w:
        with pytest.raises(ValueError, match=r"^nn.conv2d: the dilated kernel"):
            run("nn.conv2d", xd, wd, **attrs)
        return
    want = conv2d_loop(x, w, tuple(case["strides"]), pads, tuple(case["dilation"]), g)
    out_layout = case["out_layout"] or case["data_layout"]
    got = run("nn.conv2d", xd, wd, **attrs)
    check(got, to_layout(want, "NCHW", out_layout).astype("float32"))


@settings(max_examples=60, deadline=None)
@given(case=conv_case(), output_padding=st.tuples(st.integers(0, 2), st.integers(0, 2)))
def test_conv2d_transpose_matches_the_direct_loop(
    case: dict[str, Any], output_padding: tuple[int, int]
) -> None:
    rng = np.random.default_rng(case["seed"])
    g: int = case["groups"]
    kh, kw = case["kernel"]
    x = rand(rng, case["n"], case["cin"], case["h"], case["w"])
    w = rand(rng, case["cin"], case["cout"] // g, kh, kw)
    pads = pad4(case["padding"])
    s: tuple[int, int] = tuple(case["strides"])
    d: tuple[int, int] = tuple(case["dilation"])
    # output_padding must be below the strides (as TVM's topi asserts)
    output_padding = (min(output_padding[0], s[0] - 1), min(output_padding[1], s[1] - 1))
    oh = (case["h"] - 1) * s[0] + (kh - 1) * d[0] + 1 - pads[0] - pads[2] + output_padding[0]
    ow = (case["w"] - 1) * s[1] + (kw - 1) * d[1] + 1 - pads[1] - pads[3] + output_padding[1]
    attrs = {
        "strides": case["strides"],
        "padding": case["padding"],
        "dilation": case["dilation"],
        "output_padding": list(output_padding),
        "groups": g,
        "data_layout": case["data_layout"],
        "out_layout": case["out_layout"],
    }
    xd = to_layout(x, "NCHW", case["data_layout"])
    if oh <= 0 or ow <= 0:
        with pytest.raises(ValueError, match=r"^nn.conv2d_transpose: the padding leaves"):
            run("nn.conv2d_transpose", xd, w, **attrs)
        return
    want = conv2d_transpose_loop(x, w, s, pads, d, output_padding, g)
    out_layout = case["out_layout"] or case["data_layout"]
    check(
        run("nn.conv2d_transpose", xd, w, **attrs),
        to_layout(want, "NCHW", out_layout).astype("float32"),
    )
    if case["kernel_layout"] in ("OIHW", "HWIO"):  # the same kernel in another layout
        layout = case["kernel_layout"].replace("O", "o").replace("I", "O").replace("o", "I")
        other = run(
            "nn.conv2d_transpose", xd, to_layout(w, "IOHW", layout), kernel_layout=layout, **attrs
        )
        check(other, to_layout(want, "NCHW", out_layout).astype("float32"))


@settings(max_examples=40, deadline=None)
@given(case=conv_case())
def test_conv2d_transpose_is_the_adjoint_of_conv2d(case: dict[str, Any]) -> None:
    """<conv2d(y, w), x> == <y, conv2d_transpose(x, w)> with the same weight array."""
    rng = np.random.default_rng(case["seed"])
    g: int = case["groups"]
    kh, kw = case["kernel"]
    pads = pad4(case["padding"])
    s, d = case["strides"], case["dilation"]
    # y: the conv's input (the transpose's output); pick its size so the shapes line up
    h = case["h"] * s[0] + (kh - 1) * d[0] + 1 - pads[0] - pads[2] - s[0]
    wd = case["w"] * s[1] + (kw - 1) * d[1] + 1 - pads[1] - pads[3] - s[1]
    if h <= 0 or wd <= 0:
        return
    x = rand(rng, case["n"], case["cout"], case["h"], case["w"], dtype="float64")
    y = rand(rng, case["n"], case["cin"], h, wd, dtype="float64")
    w = rand(rng, case["cout"], case["cin"] // g, kh, kw, dtype="float64")
    common = {"strides": s, "padding": case["padding"], "dilation": d, "groups": g}
    forward = run("nn.conv2d", y, w, **common)
    assert forward.shape == x.shape
    backward = run("nn.conv2d_transpose", x, w, **common)
    assert backward.shape == y.shape
    assert math.isclose(float(np.sum(forward * x)), float(np.sum(y * backward)), rel_tol=1e-9)


def test_conv2d_integers_and_out_dtype() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 2, 4, 4)).astype("int8")
    w = rng.integers(-128, 128, (3, 2, 3, 3)).astype("int8")
    want = conv2d_loop(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1).astype("int32")
    check(run("nn.conv2d", x, w, padding=[1], out_dtype="int32"), want, exact=True)
    # without out_dtype the result is int8, wrapping as compiled code does
    check(run("nn.conv2d", x, w, padding=1), want.astype("int8"), exact=True)
    with pytest.raises(ValueError, match=r"^nn.conv2d: data is int8 but weight is int16$"):
        run("nn.conv2d", x, w.astype("int16"))
    check(
        run("nn.conv2d", x, w.astype("int16"), out_dtype="int32", padding=[1, 1]),
        want,
        exact=True,
    )


def test_conv2d_checks_channels_and_kernel_size() -> None:
    x = np.zeros((1, 4, 5, 5), "float32")
    w = np.zeros((6, 2, 3, 3), "float32")
    assert run("nn.conv2d", x, w, groups=2, channels=6, kernel_size=[3, 3]).shape == (1, 6, 3, 3)
    with pytest.raises(ValueError, match=r"^nn.conv2d: data has 4 channels but weight expects 2 "):
        run("nn.conv2d", x, w)
    with pytest.raises(ValueError, match=r"^nn.conv2d: channels=8 but the weight gives 6$"):
        run("nn.conv2d", x, w, groups=2, channels=8)
    with pytest.raises(ValueError, match=r"^nn.conv2d: kernel_size=\[2, 2\] but the weight's is"):
        run("nn.conv2d", x, w, groups=2, kernel_size=2)
    with pytest.raises(ValueError, match=r"^nn.conv2d: data has 4 channels, not divisible by"):
        run("nn.conv2d", x, w, groups=3)
    with pytest.raises(ValueError, match=r"^nn.conv2d: data must have rank 4 \(NCHW\), got"):
        run("nn.conv2d", x[0], w)
    with pytest.raises(AttrValidationError, match=r"^nn.conv2d: padding takes 1, 2 or 4 values"):
        run("nn.conv2d", x, w, padding=[1, 1, 1])
    with pytest.raises(AttrValidationError, match=r"^nn.conv2d: strides must be positive, got \[0"):
        nn.conv2d(Var("x"), Var("w"), strides=(0, 1))
    with pytest.raises(AttrValidationError, match=r"^nn.conv2d: groups must be positive, got 0$"):
        nn.conv2d(Var("x"), Var("w"), groups=0)
    with pytest.raises(AttrValidationError, match=r"attribute data_layout of nn.conv2d must be"):
        nn.conv2d(Var("x"), Var("w"), data_layout="NCWH")


# ---- pooling ------------------------------------------------------------------------------------


def pool_loop(
    kind: str,
    x: np.ndarray,
    pool: tuple[int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    pads: tuple[int, int, int, int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> np.ndarray:
    """Direct pooling over NCHW data, following topi.nn.pool2d, in float64."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pads
    dims = []
    for size, k, s, d, head, tail in (
        (h, pool[0], strides[0], dilation[0], pt, pb),
        (w, pool[1], strides[1], dilation[1], pl, pr),
    ):
        num = size + head + tail - ((k - 1) * d + 1) + (s - 1 if ceil_mode else 0)
        dims.append(num // s + 1)
    oh, ow = dims
    out = np.zeros((n, c, oh, ow))
    for b, ch, y, xx in itertools.product(range(n), range(c), range(oh), range(ow)):
        values, in_padded = [], 0
        for a, bb in itertools.product(range(pool[0]), range(pool[1])):
            yy = y * strides[0] - pt + a * dilation[0]
            xi = xx * strides[1] - pl + bb * dilation[1]
            if -pt <= yy <= h + pb - 1 and -pl <= xi <= w + pr - 1:
                in_padded += 1
            if 0 <= yy < h and 0 <= xi < w:
                values.append(float(x[b, ch, yy, xi]))
        if kind == "max":
            out[b, ch, y, xx] = max(values, default=-math.inf)
        else:
            count = in_padded if count_include_pad else len(values)
            out[b, ch, y, xx] = sum(values) / max(count, 1)
    return out


@st.composite
def pool_case(draw: st.DrawFn) -> dict[str, Any]:
    npad = draw(st.sampled_from([1, 2, 4]))
    return {
        "shape": (
            draw(st.integers(1, 2)),
            draw(st.integers(1, 2)),
            draw(st.integers(1, 7)),
            draw(st.integers(1, 7)),
        ),
        "pool": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "strides": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "dilation": (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
        "padding": [draw(st.integers(0, 1)) for _ in range(npad)],
        "ceil_mode": draw(st.booleans()),
        "count_include_pad": draw(st.booleans()),
        "layout": draw(st.sampled_from(["NCHW", "NHWC"])),
        "seed": draw(st.integers(0, 2**16)),
    }


@pytest.mark.parametrize("kind", ["max", "avg"])
@settings(max_examples=60, deadline=None)
@given(case=pool_case())
def test_pool2d_matches_the_direct_loop(kind: str, case: dict[str, Any]) -> None:
    x = rand(np.random.default_rng(case["seed"]), *case["shape"])
    pads = pad4(case["padding"])
    attrs: dict[str, Any] = {
        "pool_size": list(case["pool"]),
        "strides": list(case["strides"]),
        "dilation": list(case["dilation"]),
        "padding": case["padding"],
        "layout": case["layout"],
        "ceil_mode": case["ceil_mode"],
    }
    if kind == "avg":
        attrs["count_include_pad"] = case["count_include_pad"]
    name = f"nn.{kind}_pool2d"
    xd = to_layout(x, "NCHW", case["layout"])
    _, _, h, w = x.shape
    spans = [(k - 1) * d + 1 for k, d in zip(case["pool"], case["dilation"], strict=True)]
    extra = [s - 1 if case["ceil_mode"] else 0 for s in case["strides"]]
    if h + pads[0] + pads[2] + extra[0] < spans[0] or w + pads[1] + pads[3] + extra[1] < spans[1]:
        with pytest.raises(ValueError, match=rf"^{name}: the dilated pool window"):
            run(name, xd, **attrs)
        return
    want = pool_loop(
        kind,
        x,
        case["pool"],
        case["strides"],
        case["dilation"],
        pads,
        case["ceil_mode"],
        case["count_include_pad"],
    )
    check(run(name, xd, **attrs), to_layout(want, "NCHW", case["layout"]).astype("float32"))


def test_pool2d_examples() -> None:
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    check(
        run("nn.max_pool2d", x, pool_size=[2, 2], strides=[2, 2]),
        np.array([[[[5, 7], [13, 15]]]], "float32"),
    )
    # ceil mode: a third window starting at row 4 of a 5-row input (TVM does not clamp)
    y = np.arange(25, dtype="float32").reshape(1, 1, 5, 5)
    out = run("nn.avg_pool2d", y, pool_size=2, strides=2, ceil_mode=True)
    assert out.shape == (1, 1, 3, 3)
    assert out[0, 0, 2, 2] == 24.0  # one in-bounds element
    # ... and the ceil-mode extension is not counted as padding
    out = run("nn.avg_pool2d", y, pool_size=2, strides=2, ceil_mode=True, count_include_pad=True)
    assert out[0, 0, 2, 2] == 24.0
    assert out[0, 0, 0, 0] == (0 + 1 + 5 + 6) / 4
    with_pad = run("nn.avg_pool2d", x, pool_size=3, padding=1, count_include_pad=True)
    assert with_pad[0, 0, 0, 0] == (0 + 1 + 4 + 5) / 9
    without = run("nn.avg_pool2d", x, pool_size=3, padding=1)
    assert without[0, 0, 0, 0] == (0 + 1 + 4 + 5) / 4
    # integers: max pads with the lowest value; averages truncate toward zero
    ints = np.array([[[[-3, -4], [5, 1]]]], "int32")
    check(
        run("nn.max_pool2d", ints, pool_size=2, padding=1),
        np.array([[[[-3, -3, -4], [5, 5, 1], [5, 5, 1]]]], "int32"),
        exact=True,
    )
    check(run("nn.avg_pool2d", ints, pool_size=2), np.array([[[[-0]]]], "int32"), exact=True)
    check(
        run("nn.avg_pool2d", ints, pool_size=[1, 2]),
        np.array([[[[-3], [3]]]], "int32"),
        exact=True,
    )


def test_global_and_adaptive_avg_pool2d() -> None:
    rng = np.random.default_rng(1)
    x = rand(rng, 2, 3, 5, 7)
    check(
        run("nn.global_avg_pool2d", x),
        x.astype("float64").mean(axis=(2, 3), keepdims=True).astype("float32"),
    )
    xh = np.transpose(x, (0, 2, 3, 1))
    check(
        run("nn.global_avg_pool2d", xh, layout="NHWC"),
        x.mean(axis=(2, 3), keepdims=True).transpose(0, 2, 3, 1),
    )
    for out_size in ([3, 4], [2], None, [5, 7], [1, 1]):
        oh, ow = (5, 7) if out_size is None else (out_size[0], out_size[-1])
        want = np.zeros((2, 3, oh, ow))
        for i, j in itertools.product(range(oh), range(ow)):
            r0, r1 = math.floor(i * 5 / oh), math.ceil((i + 1) * 5 / oh)
            c0, c1 = math.floor(j * 7 / ow), math.ceil((j + 1) * 7 / ow)
            want[:, :, i, j] = x[:, :, r0:r1, c0:c1].astype("float64").mean(axis=(2, 3))
        check(run("nn.adaptive_avg_pool2d", x, output_size=out_size), want.astype("float32"))
        check(
            run("nn.adaptive_avg_pool2d", xh, output_size=out_size, layout="NHWC"),
            want.transpose(0, 2, 3, 1).astype("float32"),
        )
    check(
        run("nn.global_avg_pool2d", np.array([[[[1, 2], [2, 2]]]], "int32")),
        np.array([[[[1]]]], "int32"),
        exact=True,
    )
    with pytest.raises(AttrValidationError, match=r"at most 2 values"):
        nn.adaptive_avg_pool2d(Var("x"), [1, 2, 3])
    with pytest.raises(AttrValidationError, match=r"out_layout NHWC differs from layout NCHW"):
        nn.global_avg_pool2d(Var("x"), out_layout="NHWC")
    with pytest.raises(AttrValidationError, match=r"out_layout NCHW differs from layout NHWC"):
        nn.max_pool2d(Var("x"), 2, layout="NHWC", out_layout="NCHW")


# ---- dense, matmul, batch_matmul ----------------------------------------------------------------


@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    k=st.integers(1, 5),
    units=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_dense_and_matmul(batch: list[int], k: int, units: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rand(rng, *batch, k)
    w = rand(rng, units, k)
    want = np.einsum("...k,uk->...u", x.astype("float64"), w.astype("float64"))
    check(run("nn.dense", x, w), want.astype("float32"))
    check(run("nn.dense", x, w, units=units), want.astype("float32"))
    check(run("nn.matmul", x, w.T.copy()), want.astype("float32"))
    check(run("nn.matmul", x, w, transpose_b=True), want.astype("float32"))
    if batch:
        xt = np.swapaxes(x, -1, -2).copy() if len(batch) else x
        if len(batch) >= 1 and x.ndim >= 2:
            check(
                run("nn.matmul", xt, w, transpose_a=True, transpose_b=True), want.astype("float32")
            )


def test_dense_errors_and_dtypes() -> None:
    x = np.ones((2, 784), "float32")
    w = np.ones((10, 512), "float32")
    with pytest.raises(
        ValueError, match=r"^nn.dense: data has 784 features but weight expects 512$"
    ):
        run("nn.dense", x, w)
    with pytest.raises(ValueError, match=r"^nn.dense: units=3 but the weight has 10 output units$"):
        run("nn.dense", x[:, :512], w, units=3)
    a = np.full((1, 2), 100, "int8")
    b = np.full((1, 2), 100, "int8")
    check(run("nn.dense", a, b, out_dtype="int32"), np.array([[20000]], "int32"), exact=True)
    check(run("nn.dense", a, b), np.array([[32]], "int8"), exact=True)  # 20000 wraps in int8
    with pytest.raises(ValueError, match=r"^nn.dense needs numeric tensors, got bool$"):
        run("nn.dense", a.astype(bool), b.astype(bool))
    with pytest.raises(AttrValidationError, match=r"^nn.dense: units must be positive, got 0$"):
        nn.dense(Var("x"), Var("w"), units=0)
    with pytest.raises(ValueError, match=r"^nn.matmul: the weight must have rank 2"):
        run("nn.matmul", x, np.ones((1, 784, 2), "float32"))


@given(
    b=st.sampled_from([(1, 1), (3, 3), (1, 3), (3, 1)]),
    m=st.integers(1, 3),
    k=st.integers(1, 3),
    n=st.integers(1, 3),
    ta=st.booleans(),
    tb=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_batch_matmul(
    b: tuple[int, int], m: int, k: int, n: int, ta: bool, tb: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rand(rng, b[0], m, k)
    y = rand(rng, b[1], k, n)
    want = np.zeros((max(b), m, n))
    for i, r, c in itertools.product(range(max(b)), range(m), range(n)):
        xi, yi = x[min(i, b[0] - 1)], y[min(i, b[1] - 1)]
        want[i, r, c] = sum(float(xi[r, j]) * float(yi[j, c]) for j in range(k))
    xa = np.swapaxes(x, 1, 2).copy() if ta else x
    ya = np.swapaxes(y, 1, 2).copy() if tb else y
    check(run("nn.batch_matmul", xa, ya, transpose_a=ta, transpose_b=tb), want.astype("float32"))


def test_batch_matmul_errors_and_builder_default() -> None:
    with pytest.raises(
        ValueError, match=r"^nn.batch_matmul: batch dimensions 2 and 3 do not match$"
    ):
        run("nn.batch_matmul", np.ones((2, 1, 1)), np.ones((3, 1, 1)))
    with pytest.raises(ValueError, match=r"have inner dimensions 2 and 3$"):
        run("nn.batch_matmul", np.ones((1, 1, 2)), np.ones((1, 3, 1)))
    with pytest.raises(ValueError, match=r"^nn.batch_matmul needs rank-3 tensors"):
        run("nn.batch_matmul", np.ones((1, 2)), np.ones((1, 2, 1)))
    call = nn.batch_matmul(Var("a"), Var("b"))
    assert call.attrs["transpose_b"] is True  # Relay's Python default


# ---- activations, bias_add, softmax -------------------------------------------------------------


@given(seed=st.integers(0, 2**16), shape=st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_activations(seed: int, shape: list[int]) -> None:
    rng = np.random.default_rng(seed)
    x = rand(rng, *shape) * 3
    flat = [float(v) for v in x.ravel()]
    check(run("nn.relu", x), np.array([max(v, 0.0) for v in flat], "float32").reshape(x.shape))
    check(
        run("nn.leaky_relu", x, alpha=0.1),
        np.array([v if v > 0 else 0.1 * v for v in flat], "float32").reshape(x.shape),
    )
    check(
        run("nn.gelu", x),
        np.array([v * (1 + math.erf(v / math.sqrt(2))) / 2 for v in flat], "float32").reshape(
            x.shape
        ),
    )
    axis = int(rng.integers(-x.ndim, x.ndim))
    alpha = rand(rng, x.shape[axis])
    shaped = alpha.reshape([-1 if i == axis % x.ndim else 1 for i in range(x.ndim)])
    check(run("nn.prelu", x, alpha, axis=axis), np.where(x > 0, x, x * shaped))
    check(run("nn.bias_add", x, alpha, axis=axis), x + shaped)
    e = np.exp(x.astype("float64"))
    soft = e / e.sum(axis=axis, keepdims=True)
    check(run("nn.softmax", x, axis=axis), soft.astype("float32"))
    check(run("nn.log_softmax", x, axis=axis), np.log(soft).astype("float32"))


def test_activation_dtypes_and_errors() -> None:
    check(run("nn.relu", np.array([-2, 3], "int8")), np.array([0, 3], "int8"), exact=True)
    check(
        run("nn.bias_add", np.array([[1, 2]], "int32"), np.array([10, 20], "int32"), axis=-1),
        np.array([[11, 22]], "int32"),
        exact=True,
    )
    big = np.array([1000.0, 1000.0, -np.inf], "float32")
    check(run("nn.softmax", big), np.array([0.5, 0.5, 0.0], "float32"))
    check(run("nn.log_softmax", big), np.array([-math.log(2), -math.log(2), -np.inf], "float32"))
    half = np.array([0.5, -1.0], "float16")
    assert run("nn.gelu", half).dtype == np.float16
    with pytest.raises(
        ValueError, match=r"^nn.softmax: axis 1 is out of range for a tensor of rank 1$"
    ):
        run("nn.softmax", big, axis=1)
    with pytest.raises(
        ValueError, match=r"^nn.leaky_relu needs floating-point tensors, got int32$"
    ):
        run("nn.leaky_relu", np.ones(2, "int32"))
    with pytest.raises(
        ValueError,
        match=r"^nn.bias_add: bias must have shape \(3,\) to match axis 1 of \(2, 3\), got \(2,\)$",
    ):
        run("nn.bias_add", np.ones((2, 3), "float32"), np.ones(2, "float32"))
    with pytest.raises(ValueError, match=r"^nn.prelu: data is float32 but alpha is float64$"):
        run("nn.prelu", np.ones((2, 3), "float32"), np.ones(3))
    with pytest.raises(ValueError, match=r"^nn.relu needs a numeric tensor, got bool$"):
        run("nn.relu", np.ones(2, bool))


# ---- pad, batch_flatten -------------------------------------------------------------------------


def pad_loop(x: np.ndarray, widths: list[tuple[int, int]], mode: str, value: float) -> np.ndarray:
    out_shape = [s + b + a for s, (b, a) in zip(x.shape, widths, strict=True)]
    out = np.zeros(out_shape, x.dtype)
    for idx in itertools.product(*(range(s) for s in out_shape)):
        src: list[int] = []
        inside = True
        for i, (b, _) in zip(idx, widths, strict=True):
            j = i - b
            n = x.shape[len(src)]
            if 0 <= j < n:
                src.append(j)
            elif mode == "constant":
                inside = False
                src.append(0)
            elif mode == "edge":
                src.append(0 if j < 0 else n - 1)
            else:  # reflect about the edge elements
                src.append(-j if j < 0 else 2 * (n - 1) - j)
        out[idx] = x[tuple(src)] if inside else value
    return out


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    data=st.data(),
    mode=st.sampled_from(["constant", "edge", "reflect"]),
)
def test_pad_matches_a_loop(shape: list[int], data: st.DataObject, mode: str) -> None:
    x = np.arange(math.prod(shape), dtype="int32").reshape(shape)
    widths = [
        (
            data.draw(st.integers(0, 3 if mode != "reflect" else n - 1)),
            data.draw(st.integers(0, 3 if mode != "reflect" else n - 1)),
        )
        for n in shape
    ]
    out = run("nn.pad", x, np.asarray(-7.9, "float32"), pad_width=widths, pad_mode=mode)
    check(out, pad_loop(x, widths, mode, -7), exact=True)  # the value is cast to int32


def test_pad_negative_widths_crop_and_errors() -> None:
    x = np.arange(6, dtype="float32").reshape(2, 3)
    out = run("nn.pad", x, np.asarray(0.5, "float32"), pad_width=[[-1, 1], [1, -2]])
    check(out, np.array([[0.5, 3.0], [0.5, 0.5]], "float32"), exact=True)
    with pytest.raises(
        ValueError, match=r"^nn.pad: pad_width has 1 pairs but the data has rank 2$"
    ):
        run("nn.pad", x, np.asarray(0.0), pad_width=[[1, 1]])
    with pytest.raises(ValueError, match=r"^nn.pad: reflect padding of axis 0 by"):
        run("nn.pad", x, np.asarray(0.0), pad_width=[[2, 0], [0, 0]], pad_mode="reflect")
    with pytest.raises(ValueError, match=r"^nn.pad: edge padding needs non-negative widths$"):
        run("nn.pad", x, np.asarray(0.0), pad_width=[[-1, 0], [0, 0]], pad_mode="edge")
    with pytest.raises(ValueError, match=r"leaves a negative extent$"):
        run("nn.pad", x, np.asarray(0.0), pad_width=[[-2, -1], [0, 0]])
    with pytest.raises(ValueError, match=r"^nn.pad: pad_value must be a scalar, got shape \(1,\)$"):
        run("nn.pad", x, np.zeros(1), pad_width=[[0, 0], [0, 0]])
    with pytest.raises(AttrValidationError, match=r"pad_width must be a list of"):
        nn.pad(Var("x"), [[1, 2, 3]])
    check(run("nn.batch_flatten", np.zeros((2, 3, 4))), np.zeros((2, 12)), exact=True)
    check(run("nn.batch_flatten", np.zeros((2,))), np.zeros((2, 1)), exact=True)
    with pytest.raises(ValueError, match=r"^nn.batch_flatten needs data of rank at least 1$"):
        run("nn.batch_flatten", np.asarray(1.0))


# ---- normalization, dropout, losses -------------------------------------------------------------


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
    center=st.booleans(),
    scale=st.booleans(),
)
def test_batch_norm_and_layer_norm(shape: list[int], seed: int, center: bool, scale: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rand(rng, *shape)
    axis = int(rng.integers(-len(shape), len(shape)))
    c = shape[axis]
    gamma, beta, mean = rand(rng, c), rand(rng, c), rand(rng, c)
    var = np.abs(rand(rng, c)) + 0.1
    bshape = [-1 if i == axis % len(shape) else 1 for i in range(len(shape))]

    def bc(p: np.ndarray) -> np.ndarray:
        return p.astype("float64").reshape(bshape)

    want = (x - bc(mean)) / np.sqrt(bc(var) + 1e-3)
    want = want * (bc(gamma) if scale else 1) + (bc(beta) if center else 0)
    out = run(
        "nn.batch_norm",
        x,
        gamma,
        beta,
        mean,
        var,
        axis=axis,
        epsilon=1e-3,
        center=center,
        scale=scale,
    )
    assert isinstance(out, tuple) and len(out) == 3
    check(out[0], want.astype("float32"))
    check(out[1], mean, exact=True)
    check(out[2], var, exact=True)
    xd = x.astype("float64")
    mu = xd.mean(axis=axis, keepdims=True)
    norm = (xd - mu) / np.sqrt(xd.var(axis=axis, keepdims=True) + 1e-5)
    want = norm * (bc(gamma) if scale else 1) + (bc(beta) if center else 0)
    got = run("nn.layer_norm", x, gamma, beta, axis=axis, center=center, scale=scale)
    check(got, want.astype("float32"), exact=False, tol=1e-4)  # float32 statistics vs float64


def batch_norm_training_loop(
    x: np.ndarray,
    params: list[np.ndarray],
    axis: int,
    epsilon: float,
    center: bool,
    scale: bool,
    momentum: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``torch.nn.functional.batch_norm(training=True)`` one channel at a time, in float64."""
    gamma, beta, moving_mean, moving_var = (p.astype("float64") for p in params)
    xs = np.moveaxis(x.astype("float64"), axis, 0)
    out = np.empty_like(xs)
    new_mean, new_var = np.empty_like(moving_mean), np.empty_like(moving_var)
    for c in range(xs.shape[0]):
        values = xs[c]
        mean, var = values.mean(), values.var()  # the biased variance normalizes
        y = (values - mean) / math.sqrt(var + epsilon)
        out[c] = y * (gamma[c] if scale else 1) + (beta[c] if center else 0)
        new_mean[c] = (1 - momentum) * moving_mean[c] + momentum * mean
        new_var[c] = (1 - momentum) * moving_var[c] + momentum * values.var(ddof=1)
    return np.moveaxis(out, 0, axis), new_mean, new_var


@given(
    shape=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    seed=st.integers(0, 2**16),
    center=st.booleans(),
    scale=st.booleans(),
    momentum=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    dtype=st.sampled_from(["float32", "float64"]),
)
def test_batch_norm_training(
    shape: list[int], seed: int, center: bool, scale: bool, momentum: float, dtype: str
) -> None:
    rng = np.random.default_rng(seed)
    axis = int(rng.integers(-len(shape), len(shape)))
    if math.prod(shape) // shape[axis] < 2:  # no unbiased variance of one value
        shape[(axis + 1) % len(shape)] += 1
    x = rand(rng, *shape, dtype=dtype) * 3 + 1
    c = shape[axis]
    params = [rand(rng, c, dtype=dtype) for _ in range(3)]
    params.append(np.abs(rand(rng, c, dtype=dtype)) + 0.1)
    attrs = {"epsilon": 1e-3, "center": center, "scale": scale, "momentum": momentum}
    out = run("nn.batch_norm", x, *params, axis=axis, training=True, **attrs)
    want = batch_norm_training_loop(x, params, axis % len(shape), **attrs)
    tol = 1e-4 if dtype == "float32" else 1e-10
    assert isinstance(out, tuple) and len(out) == 3
    for got, w in zip(out, want, strict=True):
        check(got, w.astype(dtype), tol=tol)
    if momentum == 0:  # the moving statistics stay, and normalize nothing
        check(out[1], params[2], exact=True)
        check(out[2], params[3], exact=True)


def test_batch_norm_training_through_the_interpreter_in_float16() -> None:
    rng = np.random.default_rng(5)
    x = rand(rng, 4, 2, 3, 3, dtype="float16")
    params = [rand(rng, 3, dtype="float16") for _ in range(3)]
    params.append(np.ones(3, "float16"))
    attrs = {"epsilon": 1e-5, "center": True, "scale": True, "momentum": 0.1}
    got = interp(lambda *a: nn.batch_norm(*a, axis=-1, training=True, **attrs), x, *params)
    want = batch_norm_training_loop(x, params, 3, **attrs)
    for g, w in zip(got, want, strict=True):
        check(g, w.astype("float16"), tol=2e-2)


def test_batch_norm_training_needs_two_values_per_channel() -> None:
    one = np.ones((1, 3), "float32")
    params = [np.ones(3, "float32")] * 4
    message = (
        r"^nn.batch_norm: training needs more than one value per channel, got data of shape "
        r"\(1, 3\)$"
    )
    with pytest.raises(ValueError, match=message):
        run("nn.batch_norm", one, *params, training=True)
    check(run("nn.batch_norm", one, *params)[0], one, exact=True)  # inference: any batch
    with pytest.raises(ValueError, match=r"^nn.batch_norm: training needs more than one value"):
        run("nn.batch_norm", np.ones((0, 3), "float32"), *params, training=True)


@pytest.mark.parametrize("momentum", [-0.1, 1.5, math.nan])
def test_batch_norm_momentum_must_be_in_0_1(momentum: float) -> None:
    x = Var("x")
    message = rf"^nn.batch_norm: momentum must be in \[0, 1\], got {momentum}$"
    with pytest.raises(AttrValidationError, match=message):
        nn.batch_norm(x, x, x, x, x, training=True, momentum=momentum)
    with pytest.raises(AttrValidationError, match=message):
        run("nn.batch_norm", *[np.ones(2, "float32")] * 5, axis=0, momentum=momentum)


def test_batch_norm_training_attributes_print_and_parse() -> None:
    x = Var("x")
    call = nn.batch_norm(x, x, x, x, x, axis=3, training=True, momentum=0.25)
    text = relay.astext(Function((x,), call))
    assert "axis=3, epsilon=1e-05f, center=True, scale=True, training=True, momentum=0.25f" in text
    parsed = relay.parse_expr(text)
    assert relay.structural_equal(parsed, Function((x,), call))
    assert isinstance(parsed, Function) and isinstance(parsed.body, Call)
    assert parsed.body.attrs["training"] is True and parsed.body.attrs["momentum"] == 0.25
    # the inference form is the default, printed as such
    default = relay.parse_expr("fn (%x) { nn.batch_norm(%x, %x, %x, %x, %x) }")
    assert "training=False, momentum=0.1f" in relay.astext(default)


def test_dropout_and_losses() -> None:
    x = np.array([[0.2, 0.8], [0.5, 0.5]], "float32")
    out, mask = run("nn.dropout", x, rate=0.3)
    check(out, x, exact=True)
    check(mask, np.ones_like(x), exact=True)
    with pytest.raises(
        AttrValidationError, match=r"^nn.dropout: rate must be in \[0, 1\], got 1.5$"
    ):
        nn.dropout(Var("x"), 1.5)
    t = np.array([[0.0, 1.0], [1.0, 0.0]], "float32")
    want = -(math.log(0.8) + math.log(0.5)) / 2
    check(run("nn.cross_entropy", x, t), np.asarray(want, "float32"))
    check(run("nn.cross_entropy_with_logits", x, t), np.asarray(-(0.8 + 0.5) / 2, "float32"))
    with pytest.raises(ValueError, match=r"^nn.cross_entropy needs predictions and targets of one"):
        run("nn.cross_entropy", x, t[0])


# ---- through the interpreter --------------------------------------------------------------------


def test_a_small_network_through_the_interpreter() -> None:
    rng = np.random.default_rng(7)
    arrays = [
        rand(rng, 2, 3, 8, 8),  # data
        rand(rng, 4, 3, 3, 3),  # conv weight
        rand(rng, 4),  # conv bias
        rand(rng, 4),
        rand(rng, 4),
        rand(rng, 4),
        np.abs(rand(rng, 4)) + 0.5,  # batch norm
        rand(rng, 10, 64),  # dense weight
    ]

    def build(x: Var, w: Var, b: Var, g: Var, be: Var, m: Var, v: Var, dw: Var) -> Any:
        y: Expr = nn.conv2d(x, w, padding=(1, 1), channels=4, kernel_size=(3, 3))
        y = nn.bias_add(y, b)
        y = TupleGetItem(nn.batch_norm(y, g, be, m, v), 0)
        y = nn.relu(y)
        y = nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
        y = nn.avg_pool2d(nn.pad(y, [[0, 0], [0, 0], [1, 1], [1, 1]]), 3, padding=0)
        y = nn.batch_flatten(TupleGetItem(nn.dropout(y), 0))
        return nn.log_softmax(nn.dense(y, dw, units=10))

    got = interp(build, *arrays)
    x, w, b, g, be, m, v, dw = arrays
    y = run("nn.conv2d", x, w, padding=[1, 1])
    y = run("nn.bias_add", y, b)
    y = run("nn.batch_norm", y, g, be, m, v)[0]
    y = np.maximum(y, 0)
    y = run("nn.max_pool2d", y, pool_size=2, strides=2)
    y = run("nn.avg_pool2d", np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1))), pool_size=3)
    y = y.reshape(2, -1)
    logits = y.astype("float64") @ dw.T
    want = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    check(got, want.astype("float32"))


def test_more_builders_through_the_interpreter() -> None:
    rng = np.random.default_rng(3)
    x = rand(rng, 1, 2, 5, 5)
    w = rand(rng, 2, 3, 3, 3)
    check(
        interp(
            lambda d, k: nn.conv2d_transpose(d, k, strides=2, padding=1, output_padding=1), x, w
        ),
        run("nn.conv2d_transpose", x, w, strides=[2, 2], padding=[1, 1], output_padding=[1, 1]),
        exact=True,
    )
    check(interp(nn.global_avg_pool2d, x), run("nn.global_avg_pool2d", x), exact=True)
    check(
        interp(lambda d: nn.adaptive_avg_pool2d(d, 2), x),
        run("nn.adaptive_avg_pool2d", x, output_size=[2, 2]),
        exact=True,
    )
    check(interp(lambda d: nn.leaky_relu(d), x), np.where(x > 0, x, np.float32(0.01) * x))
    check(interp(nn.gelu, x), run("nn.gelu", x), exact=True)
    check(interp(lambda d: nn.softmax(d, 1), x), run("nn.softmax", x, axis=1), exact=True)
    a = rand(rng, 2, 3, 4)
    check(interp(nn.batch_matmul, a, a), np.matmul(a, np.swapaxes(a, 1, 2)))
    check(
        interp(lambda p, q: nn.matmul(p, q, transpose_a=True), a[0], a[0]),
        (a[0].T @ a[0]).astype("float32"),
    )
    p = np.abs(rand(rng, 2, 3)) + 0.1
    check(interp(nn.cross_entropy, p, p), run("nn.cross_entropy", p, p), exact=True)
    check(
        interp(nn.cross_entropy_with_logits, p, p),
        run("nn.cross_entropy_with_logits", p, p),
        exact=True,
    )
    g = np.ones(4, "float32")
    check(
        interp(lambda d, gg, bb: nn.layer_norm(d, gg, bb), a, g, g * 0),
        run("nn.layer_norm", a, g, g * 0),
        exact=True,
    )
    check(interp(lambda d, al: nn.prelu(d, al, 2), a, g), np.where(a > 0, a, a))
    # a Python pad value becomes a float32 constant, cast to the data's dtype when run
    ints = np.ones((1, 1), "int32")
    check(
        interp(lambda d: nn.pad(d, [[1, 0], [0, 1]], 3.7), ints),
        np.array([[3, 3], [1, 3]], "int32"),
        exact=True,
    )
    check(
        interp(lambda d: nn.pad(d, [[1, 0], [0, 0]], const(5), "edge"), ints),
        np.array([[1], [1]], "int32"),
        exact=True,
    )


def test_interpreter_reports_errors_at_the_call() -> None:
    fn = relay.parse_expr("fn (%x, %w) {\n  nn.dense(%x, %w)\n}")
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    with pytest.raises(ExecutionError) as info:
        relay.interpret(fn, np.zeros((2, 784), "float32"), np.zeros((10, 512), "float32"))
    assert info.value.message == (
        "operator nn.dense failed: nn.dense: data has 784 features but weight expects 512"
    )
    assert info.value.span == fn.body.span
    # a statically bad attribute parsed from text is caught when the call runs
    fn = relay.parse_expr("fn (%x) { nn.max_pool2d(%x, pool_size=[2, 2, 2]) }")
    assert isinstance(fn, Function)
    with pytest.raises(ExecutionError) as info:
        relay.interpret(fn, np.zeros((1, 1, 4, 4), "float32"))
    assert info.value.message == (
        "operator nn.max_pool2d failed: nn.max_pool2d: pool_size takes 1 or 2 values, got [2, 2, 2]"
    )


# ---- text format --------------------------------------------------------------------------------

TEXT_CALLS = [
    "nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3])",
    'nn.conv2d(%x, %w, strides=[2, 2], data_layout="NHWC", kernel_layout="HWIO", out_dtype="float32")',
    "nn.conv2d_transpose(%x, %w, strides=[2, 2], output_padding=[1, 1], padding=[1, 1, 0, 0])",
    "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=True)",
    "nn.avg_pool2d(%x, pool_size=[2, 2], count_include_pad=True)",
    'nn.global_avg_pool2d(%x, layout="NHWC")',
    "nn.adaptive_avg_pool2d(%x, output_size=[7, 7])",
    "nn.dense(%x, %w, units=10)",
    "nn.matmul(%x, %w, transpose_a=True)",
    "nn.batch_matmul(%x, %w, transpose_b=True)",
    "nn.bias_add(%x, %w, axis=-1)",
    "nn.relu(%x)",
    "nn.leaky_relu(%x, alpha=0.1f)",
    "nn.prelu(%x, %w)",
    "nn.gelu(%x)",
    "nn.softmax(%x, axis=1)",
    "nn.log_softmax(%x)",
    'nn.pad(%x, 0f, pad_width=[[0, 0], [1, 2]], pad_mode="reflect")',
    "nn.batch_flatten(%x)",
    "nn.batch_norm(%x, %w, %w, %w, %w, epsilon=0.001f, center=False)",
    "nn.batch_norm(%x, %w, %w, %w, %w, axis=-1, training=True, momentum=0.25f)",
    "nn.layer_norm(%x, %w, %w, axis=1, scale=False)",
    "nn.dropout(%x, rate=0.2f)",
    "nn.cross_entropy(%x, %w)",
    "nn.cross_entropy_with_logits(%x, %w)",
]


@pytest.mark.parametrize("text", TEXT_CALLS)
def test_parse_text_calls(text: str) -> None:
    fn = relay.parse_expr(f"fn (%x, %w) {{ {text} }}")
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    assert fn.body.op == get_op(text.split("(")[0]).op
    assert relay.structural_equal(fn, relay.parse_expr(relay.astext(fn)))


def test_parsed_attributes() -> None:
    fn = relay.parse_expr(f"fn (%x, %w) {{ {TEXT_CALLS[0]} }}")
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    assert dict(fn.body.attrs) == {
        "strides": (1, 1),
        "padding": (1, 1),
        "dilation": (1, 1),
        "groups": 1,
        "channels": 64,
        "kernel_size": (3, 3),
        "data_layout": "NCHW",
        "kernel_layout": "OIHW",
        "out_layout": "",
        "out_dtype": "",
    }
    fn = relay.parse_expr("fn (%x) { let %t = nn.dropout(%x); %t.0 }")
    check(relay.interpret(fn, np.ones(2, "float32")), np.ones(2, "float32"), exact=True)


def test_parse_rejects_bad_attributes() -> None:
    with pytest.raises(ParseError) as info:
        relay.parse_expr('fn (%x, %w) { nn.conv2d(%x, %w, data_layout="NCWH") }')
    assert info.value.message == (
        "attribute data_layout of nn.conv2d must be one of 'NCHW', 'NHWC', got 'NCWH'"
    )
    with pytest.raises(ParseError, match=r"nn.max_pool2d requires attribute pool_size"):
        relay.parse_expr("fn (%x) { nn.max_pool2d(%x) }")


@given(st.data())
def test_print_parse_round_trip_of_builder_calls(data: st.DataObject) -> None:
    x, w = Var("x"), Var("w")
    ints = st.integers(1, 3)
    pair = ints | st.tuples(ints, ints).map(list)
    padding = (
        st.integers(0, 2)
        | st.lists(st.integers(0, 2), min_size=1, max_size=1)
        | st.lists(st.integers(0, 2), min_size=2, max_size=2)
        | st.lists(st.integers(0, 2), min_size=4, max_size=4)
    )
    flag = st.booleans()
    layout = st.sampled_from(["NCHW", "NHWC"])
    t_strides = data.draw(pair)  # conv2d_transpose's output_padding must be below its strides
    t_output_padding = data.draw(
        st.integers(0, min(t_strides if isinstance(t_strides, list) else [t_strides]) - 1)
    )
    calls: list[Call] = [
        nn.conv2d(
            x,
            w,
            data.draw(pair),
            data.draw(padding),
            data.draw(pair),
            data.draw(ints),
            data.draw(st.none() | ints),
            data.draw(st.none() | pair),
            data.draw(layout),
            data.draw(st.sampled_from(["OIHW", "HWIO"])),
            data.draw(st.sampled_from(["", "NHWC"])),
            data.draw(st.sampled_from(["", "int32", "float16"])),
        ),
        nn.conv2d_transpose(
            x,
            w,
            t_strides,
            data.draw(padding),
            data.draw(pair),
            data.draw(ints),
            data.draw(st.none() | ints),
            data.draw(st.none() | pair),
            data.draw(layout),
            "IOHW",
            "",
            t_output_padding,
            data.draw(st.sampled_from(["", "int32"])),
        ),
        nn.max_pool2d(
            x,
            data.draw(pair),
            data.draw(pair),
            data.draw(pair),
            data.draw(padding),
            "NCHW",
            "",
            data.draw(flag),
        ),
        nn.avg_pool2d(
            x,
            data.draw(pair),
            data.draw(pair),
            data.draw(pair),
            data.draw(padding),
            "NHWC",
            "NHWC",
            data.draw(flag),
            data.draw(flag),
        ),
        nn.adaptive_avg_pool2d(x, data.draw(st.none() | pair)),
        nn.global_avg_pool2d(x, data.draw(layout)),
        nn.dense(x, w, data.draw(st.none() | ints), data.draw(st.sampled_from(["", "int32"]))),
        nn.matmul(x, w, data.draw(st.none() | ints), "", data.draw(flag), data.draw(flag)),
        nn.batch_matmul(x, w, "", data.draw(flag), data.draw(flag)),
        nn.bias_add(x, w, data.draw(st.integers(-3, 3))),
        nn.leaky_relu(x, data.draw(st.floats(0, 1, width=32))),
        nn.prelu(x, w, data.draw(st.integers(-3, 3))),
        nn.softmax(x, data.draw(st.integers(-3, 3))),
        nn.log_softmax(x, data.draw(st.integers(-3, 3))),
        nn.pad(
            x,
            data.draw(st.lists(st.tuples(st.integers(-2, 2), st.integers(0, 2)), max_size=3)),
            data.draw(st.floats(-5, 5, width=32)),
            data.draw(st.sampled_from(["constant", "edge"])),
        ),
        nn.batch_norm(
            x,
            w,
            w,
            w,
            w,
            data.draw(st.integers(-3, 3)),
            data.draw(st.floats(1e-6, 1e-2)),
            data.draw(flag),
            data.draw(flag),
            data.draw(flag),
            data.draw(st.floats(0, 1)),
        ),
        nn.layer_norm(
            x, w, w, data.draw(st.integers(-3, 3)), 1e-5, data.draw(flag), data.draw(flag)
        ),
        nn.dropout(x, data.draw(st.floats(0, 1))),
        nn.relu(x),
        nn.gelu(x),
        nn.batch_flatten(x),
        nn.cross_entropy(x, w),
        nn.cross_entropy_with_logits(x, w),
    ]
    fn = Function((x, w), Tuple(tuple(calls)))
    assert relay.structural_equal(fn, relay.parse_expr(relay.astext(fn)))


# ---- edge cases: rank 0, zero-size axes, output_padding ------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_of_a_rank_0_tensor_is_the_tensor(mode: str) -> None:
    x = np.array(2.5, "float32")
    check(run("nn.pad", x, np.array(0.0, "float32"), pad_width=[], pad_mode=mode), x, exact=True)
    got = interp(lambda d: nn.pad(d, [], pad_value=const(1.0), pad_mode=mode), x)
    check(got, x, exact=True)


@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
@pytest.mark.parametrize(("shape", "axis"), [((2, 0), -1), ((0, 3), -1), ((0,), 0), ((3, 0), 0)])
def test_softmax_of_a_zero_size_tensor_is_empty(op: str, shape: tuple[int, ...], axis: int) -> None:
    x = np.zeros(shape, "float16")
    check(run(op, x, axis=axis), x, exact=True)
    build = nn.softmax if op == "nn.softmax" else nn.log_softmax
    check(interp(lambda d: build(d, axis), x), x, exact=True)


def test_conv2d_transpose_output_padding_must_be_below_the_strides() -> None:
    x, w = Var("x"), Var("w")
    message = (
        r"^nn.conv2d_transpose: output_padding must be smaller than strides, got "
        r"output_padding \[1, 2\] and strides \[2, 2\]$"
    )
    with pytest.raises(AttrValidationError, match=message):
        nn.conv2d_transpose(x, w, strides=2, output_padding=[1, 2])
    with pytest.raises(AttrValidationError, match=message):
        run(
            "nn.conv2d_transpose",
            np.zeros((1, 1, 2, 2), "float32"),
            np.zeros((1, 1, 3, 3), "float32"),
            strides=[2, 2],
            output_padding=[1, 2],
        )
    # the largest output_padding allowed
    got = run(
        "nn.conv2d_transpose",
        np.ones((1, 1, 2, 2), "float32"),
        np.ones((1, 1, 3, 3), "float32"),
        strides=[3, 2],
        output_padding=[2, 1],
    )
    assert got.shape == (1, 1, 8, 6)


def test_avg_pool2d_takes_strides_and_dilations_beyond_int64() -> None:
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    for attrs in ({"strides": [2**63, 10**30]}, {"dilation": [2**63, 2**63], "pool_size": [1, 1]}):
        full = {"pool_size": [2, 2], **attrs}
        got = run("nn.avg_pool2d", x, **full)
        inferred = infer_call_type("nn.avg_pool2d", [TensorType((1, 1, 4, 4), "float32")], full)
        assert inferred == TensorType(got.shape, "float32")
        small = {k: [5, 5] for k in attrs if k != "pool_size"}  # past the input: all the same
        check(got, run("nn.avg_pool2d", x, **{"pool_size": full["pool_size"], **small}), exact=True)
