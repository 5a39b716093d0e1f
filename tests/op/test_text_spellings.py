"""Operators accept the attribute spellings that TVM's Relay text printer writes: each call
below (attributes as `tvm.relay` prints them, defaults included) parses and type-checks."""

from __future__ import annotations

import pytest

import relay

CALLS: list[tuple[str, str]] = [
    (
        'fn (%x: Tensor[(1, 3, 8, 8), float32]) { nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2], dilation=[1, 1], padding=[0, 0, 0, 0], layout="NCHW", out_layout="", ceil_mode=False) }',
        "Tensor[(1, 3, 4, 4), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 3, 8, 8), float32]) { nn.avg_pool2d(%x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1], count_include_pad=False, ceil_mode=False) }",
        "Tensor[(1, 3, 8, 8), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 3, 8, 8), float32], %g: Tensor[(3,), float32], %b: Tensor[(3,), float32], %m: Tensor[(3,), float32], %v: Tensor[(3,), float32]) { %0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=1, epsilon=1e-05f, center=True, scale=True); %0.0 }",
        "Tensor[(1, 3, 8, 8), float32]",
    ),
    (
        'fn (%x: Tensor[(2, 4), float32], %w: Tensor[(5, 4), float32]) { nn.dense(%x, %w, units=5, out_dtype="") }',
        "Tensor[(2, 5), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 4), float32], %w: Tensor[(5, 4), float32]) { nn.dense(%x, %w, units=None) }",
        "Tensor[(2, 5), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 4), float32]) { nn.softmax(%x, axis=-1) }",
        "Tensor[(2, 4), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3, 4), float32]) { transpose(%x, axes=[0, 2, 1]) }",
        "Tensor[(2, 4, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 784), float32]) { reshape(%x, newshape=[-1, 28, 28]) }",
        "Tensor[(2, 28, 28), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 784), float32]) { reshape(%x, newshape=[0, -1], allowzero=0) }",
        "Tensor[(2, 784), float32]",
    ),
    (
        'fn (%x: Tensor[(1, 32, 8, 8), float32]) { layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c") }',
        "Tensor[(1, 2, 8, 8, 16), float32]",
    ),
    (
        'fn (%x: Tensor[(2,), float32]) { cast(%x, dtype="float16") }',
        "Tensor[(2,), float16]",
    ),
    (
        "fn (%x: Tensor[(4, 5), float32]) { strided_slice(%x, begin=[0, 1], end=[2, 5], strides=[1, 2], axes=None) }",
        "Tensor[(2, 2), float32]",
    ),
    (
        'fn (%x: Tensor[(4, 5), float32]) { strided_slice(%x, begin=[0], end=[2], strides=[1], slice_mode="end", axes=None) }',
        "Tensor[(2, 5), float32]",
    ),
    (
        'fn (%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d(%x, %w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, channels=4, kernel_size=[3, 3], data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype="") }',
        "Tensor[(1, 4, 8, 8), float32]",
    ),
    (
        'fn (%x: Tensor[(2, 3), float32]) { nn.pad(%x, 0f, pad_width=[[0, 0], [1, 1]], pad_mode="constant") }',
        "Tensor[(2, 5), float32]",
    ),
    (
        "fn (%x: Tensor[(2,), float32]) { clip(%x, a_min=0f, a_max=6f) }",
        "Tensor[(2,), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { sum(%x, axis=[1], keepdims=True, exclude=False) }",
        "Tensor[(2, 1), float32]",
    ),
    (
        'fn (%i: Tensor[(3,), int32]) { one_hot(%i, 1f, 0f, depth=10, axis=-1, dtype="float32") }',
        "Tensor[(3, 10), float32]",
    ),
    (
        'fn (%x: Tensor[(4, 3), float32], %i: Tensor[(2,), int32]) { take(%x, %i, axis=0, batch_dims=0, mode="clip") }',
        "Tensor[(2, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(2,), float32]) { nn.leaky_relu(%x, alpha=0.1f) }",
        "Tensor[(2,), float32]",
    ),
    (
        'fn (%x: Tensor[(1, 3, 8, 8), float32]) { nn.global_avg_pool2d(%x, layout="NCHW", out_layout="") }',
        "Tensor[(1, 3, 1, 1), float32]",
    ),
    (
        'fn (%x: Tensor[(1, 3, 8, 8), float32]) { nn.adaptive_avg_pool2d(%x, output_size=[1, 1], layout="NCHW", out_layout="") }',
        "Tensor[(1, 3, 1, 1), float32]",
    ),
    (
        "fn (%x: Tensor[(2,), float32]) { %0 = nn.dropout(%x, rate=0.5f); %0.0 }",
        "Tensor[(2,), float32]",
    ),
    (
        "fn (%x: Tensor[(2,), float32]) { expand_dims(%x, axis=1, num_newaxis=2) }",
        "Tensor[(2, 1, 1), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 4), float32]) { %0 = split(%x, indices_or_sections=2, axis=1); %0.1 }",
        "Tensor[(2, 2), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 4), float32]) { %0 = split(%x, indices_or_sections=[1, 3], axis=1); %0.2 }",
        "Tensor[(2, 1), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 4), float32], %g: Tensor[(4,), float32], %b: Tensor[(4,), float32]) { nn.layer_norm(%x, %g, %b, axis=-1, epsilon=1e-05f, center=True, scale=True) }",
        "Tensor[(2, 4), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 3, 8, 8), float32], %b: Tensor[(3,), float32]) { nn.bias_add(%x, %b, axis=1) }",
        "Tensor[(1, 3, 8, 8), float32]",
    ),
    (
        'fn (%a: Tensor[(2, 3, 4), float32], %b: Tensor[(2, 5, 4), float32]) { nn.batch_matmul(%a, %b, out_dtype="", transpose_a=False, transpose_b=True) }',
        "Tensor[(2, 3, 5), float32]",
    ),
    (
        'fn (%a: Tensor[(3, 4), float32], %b: Tensor[(4, 5), float32]) { nn.matmul(%a, %b, units=None, out_dtype="", transpose_a=False, transpose_b=False) }',
        "Tensor[(3, 5), float32]",
    ),
    (
        'fn (%v: float32) { full(%v, shape=[2, 3], dtype="float32") }',
        "Tensor[(2, 3), float32]",
    ),
    (
        'zeros(shape=[2], dtype="float32")',
        "Tensor[(2,), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { repeat(%x, repeats=2, axis=0) }",
        "Tensor[(4, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { tile(%x, reps=[2, 1]) }",
        "Tensor[(4, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { reverse(%x, axis=0) }",
        "Tensor[(2, 3), float32]",
    ),
    (
        "fn (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 4), float32]) { concatenate((%a, %b), axis=1) }",
        "Tensor[(2, 7), float32]",
    ),
    (
        "fn (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) { stack((%a, %b), axis=0) }",
        "Tensor[(2, 2, 3), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { %m = mean(%x, axis=[1], keepdims=True); variance(%x, %m, axis=[1], keepdims=False, exclude=False, unbiased=False) }",
        "Tensor[(2,), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { argmax(%x, axis=[1], keepdims=False, exclude=False, select_last_index=False) }",
        "Tensor[(2,), int32]",
    ),
    (
        'fn (%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) { nn.conv2d_transpose(%x, %w, channels=3, kernel_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="IOHW", out_layout="", out_dtype="") }',
        "Tensor[(1, 3, 16, 16), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 3, 8, 8), float32], %a: Tensor[(3,), float32]) { nn.prelu(%x, %a, axis=1) }",
        "Tensor[(1, 3, 8, 8), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 4), float32]) { nn.log_softmax(%x, axis=-1) }",
        "Tensor[(2, 4), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3, 4), float32]) { nn.batch_flatten(%x) }",
        "Tensor[(2, 12), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 3), float32]) { broadcast_to(%x, shape=[2, 3]) }",
        "Tensor[(2, 3), float32]",
    ),
    (
        "fn (%c: Tensor[(2,), bool], %x: Tensor[(2,), float32]) { where(%c, %x, %x) }",
        "Tensor[(2,), float32]",
    ),
    (
        "fn (%x: Tensor[(1, 3), float32]) { squeeze(%x, axis=[0]) }",
        "Tensor[(3,), float32]",
    ),
    (
        'fn (%x: Tensor[(1, 3), float32]) { shape_of(%x, dtype="int32") }',
        "Tensor[(2,), int32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { logsumexp(%x, axis=[1], keepdims=False) }",
        "Tensor[(2,), float32]",
    ),
    (
        "fn (%x: Tensor[(2, 3), float32]) { nn.gelu(%x) }",
        "Tensor[(2, 3), float32]",
    ),
]


@pytest.mark.parametrize(("src", "result"), CALLS)
def test_relay_text_attribute_spellings_type_check(src: str, result: str) -> None:
    fn = relay.parse_expr(src)
    relay.infer_type(fn)
    t = fn.checked_type
    assert str(getattr(t, "ret_type", t)) == result
