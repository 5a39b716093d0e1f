"""Post-training int8 quantization: layer discovery, calibration and exponents, the int8 and
simulated realizations against a numpy emulation of the same integer arithmetic, and the
digits network end to end on the CPU and on VTA."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import relay
from relay import Tensor
from relay.errors import CompileError
from relay.ir.expr import Call, Function, Op
from relay.passes.quantize import _exponent, find_layers, quantize

RNG = np.random.default_rng(3)


def _net(  # type: ignore[no-untyped-def]  # a @relay program
    x: Tensor[relay.float32, (2, 3, 5, 5)],
    w1: Tensor[relay.float32, (16, 3, 3, 3)],
    b1: Tensor[relay.float32, (16,)],
    w2: Tensor[relay.float32, (4, 400)],
    b2: Tensor[relay.float32, (4,)],
):
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b1))
    return relay.nn.dense(relay.nn.batch_flatten(h), w2) + b2


def _params() -> dict[str, np.ndarray]:
    return {
        "w1": (RNG.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32),
        "b1": (RNG.standard_normal(16) * 0.1).astype(np.float32),
        "w2": (RNG.standard_normal((4, 16 * 5 * 5)) * 0.05).astype(np.float32),
        "b2": (RNG.standard_normal(4) * 0.1).astype(np.float32),
    }


def _data(n: int = 4) -> list[tuple[np.ndarray]]:
    return [(RNG.standard_normal((2, 3, 5, 5)).astype(np.float32),) for _ in range(n)]


def _round(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _emulate(q: Any, params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The quantized network in numpy integers, from the decisions ``q.layers``."""
    conv, dense = q.layers
    xq = np.clip(_round(x * 2.0**conv.input_exp), -127, 127).astype(np.int64)
    wq = np.clip(_round(params["w1"] * 2.0**conv.weight_exp), -127, 127).astype(np.int64)
    bq = _round(params["b1"] * 2.0 ** (conv.input_exp + conv.weight_exp)).astype(np.int64)
    xp = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((x.shape[0], 16, 5, 5), np.int64)
    for ky in range(3):
        for kx in range(3):
            acc += np.einsum("nchw,oc->nohw", xp[:, :, ky : ky + 5, kx : kx + 5], wq[:, :, ky, kx])
    acc += bq[None, :, None, None]
    if conv.shift:
        acc = (acc + (1 << (conv.shift - 1))) >> conv.shift
    h = np.clip(acc, 0, 127)  # ReLU: the lower bound is 0
    assert dense.input_exp == conv.output_exp  # the int8 value passes straight on
    wq2 = np.clip(_round(params["w2"] * 2.0**dense.weight_exp), -127, 127).astype(np.int64)
    bq2 = _round(params["b2"] * 2.0 ** (dense.input_exp + dense.weight_exp)).astype(np.int64)
    acc2 = h.reshape(x.shape[0], -1) @ wq2.T + bq2
    if dense.shift:
        acc2 = (acc2 + (1 << (dense.shift - 1))) >> dense.shift
    return (np.clip(acc2, -127, 127) * 2.0**-dense.output_exp).astype(np.float32)


def test_the_exponent_keeps_the_magnitude_within_int8() -> None:
    assert _exponent(127.0, "x") == 0
    assert _exponent(1.0, "x") == 6  # 1 * 2**6 = 64 <= 127 < 128
    assert _exponent(0.99, "x") == 7
    assert _exponent(128.0, "x") == -1
    assert _exponent(0.0, "x") == 0
    with pytest.raises(
        CompileError, match="quantize: a layer input reached inf during calibration"
    ):
        _exponent(float("inf"), "a layer input")


def test_layers_take_their_bias_and_relu() -> None:
    q = quantize(relay.function(_net), _params(), _data())
    conv, dense = q.layers
    assert (conv.op, conv.bias, conv.relu) == ("nn.conv2d", True, True)
    assert (dense.op, dense.bias, dense.relu) == ("nn.dense", True, False)
    for layer in q.layers:
        assert (
            layer.input_max * 2.0**layer.input_exp
            <= 127
            < layer.input_max * 2.0 ** (layer.input_exp + 1)
        )
        assert 0 <= layer.shift <= 15
        assert layer.output_exp == layer.input_exp + layer.weight_exp - layer.shift
    text = str(q).splitlines()
    assert text[0] == "2 layers quantized (int8)"
    assert text[2].split() == [
        "0", "nn.conv2d", str(conv.input_exp), str(conv.weight_exp), str(conv.output_exp),
        str(conv.shift), "bias+relu",
    ]  # fmt: skip


def test_int8_program_is_the_integer_arithmetic() -> None:
    params = _params()
    q = quantize(relay.function(_net), params, _data())
    x = _data(1)[0][0]
    want = _emulate(q, params, x)
    np.testing.assert_array_equal(relay.build(q.module)(x), want)
    np.testing.assert_array_equal(relay.interpret(q.module, x), want)
    main = q.module["main"]
    assert isinstance(main, Function)
    from relay.ir.analysis import sub_expressions

    ops = {
        e.op.name
        for e in sub_expressions(main.body)
        if isinstance(e, Call) and isinstance(e.op, Op)
    }
    assert {"nn.conv2d", "nn.dense", "right_shift", "clip", "cast"} <= ops
    convs = [
        e
        for e in sub_expressions(main.body)
        if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in ("nn.conv2d", "nn.dense")
    ]
    assert {str(c.args[1].data.dtype) for c in convs} == {"int8"}  # type: ignore[attr-defined]
    assert {c.attrs["out_dtype"] for c in convs} == {"int32"}


def test_simulated_quantization_agrees_with_int8() -> None:
    params = _params()
    data = _data()
    real = quantize(relay.function(_net), params, data)
    sim = quantize(relay.function(_net), params, data, mode="simulated")
    assert sim.layers == real.layers
    x = _data(1)[0][0]
    a, b = relay.build(real.module)(x), relay.build(sim.module)(x)
    step = 2.0 ** -real.layers[-1].output_exp
    assert np.max(np.abs(a - b)) <= step  # float32 accumulation may round one level off
    assert np.mean(a == b) > 0.9


def _plain_net(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]  # _net without annotations
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b1))
    return relay.nn.dense(relay.nn.batch_flatten(h), w2) + b2


def test_an_unannotated_function_is_typed_by_its_parameters_and_data() -> None:
    params, data = _params(), _data()
    plain = quantize(relay.function(_plain_net), params, data)  # never called before
    typed = quantize(relay.function(_net), params, data)
    assert plain.layers == typed.layers
    x = data[0][0]
    np.testing.assert_array_equal(relay.build(plain.module)(x), relay.build(typed.module)(x))


def test_skipped_layers_stay_in_float() -> None:
    q = quantize(relay.function(_net), _params(), _data(), skip=[1])
    assert [layer.op for layer in q.layers] == ["nn.conv2d"]


def test_quantize_errors() -> None:
    net = relay.function(_net)
    with pytest.raises(
        CompileError, match=re.escape("quantize: the program has no parameter 'w9'")
    ):
        quantize(net, {**_params(), "w9": np.zeros(1)}, _data())
    with pytest.raises(CompileError, match="quantize: the calibration dataset is empty"):
        quantize(net, _params(), [])
    with pytest.raises(
        CompileError,
        match=re.escape("quantize: a calibration sample has 2 arrays for the 1 inputs"),
    ):
        quantize(net, _params(), [(np.zeros((2, 3, 5, 5), np.float32),) * 2])
    with pytest.raises(CompileError, match="quantize: unknown mode 'int4'"):
        quantize(net, _params(), _data(), mode="int4")  # type: ignore[arg-type]


def test_find_layers_stops_where_a_value_is_shared() -> None:
    from relay.passes.quantize import _bind_params

    text = """
    def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(3, 4), float32]) {
      %0 = nn.dense(%x, %w);
      %1 = nn.relu(%0);
      add(%1, %0)
    }
    """
    func = relay.parse(text)["main"]
    assert isinstance(func, Function)
    bound = relay.infer_type(_bind_params(func, {"w": np.ones((3, 4), np.float32)}))
    (layer,) = find_layers(bound.body)
    assert (layer.relu, layer.bias, layer.root is layer.anchor) == (False, None, True)
    unbound = relay.infer_type(func)
    assert find_layers(unbound.body) == []  # a weight that is no constant: no layer
