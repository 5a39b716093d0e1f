"""The VTA target end to end: the digits network (relay.testing.digits) trained in float with
relay.grad, quantized to int8, run on VTA with the CPU around it."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay.backend.vta import build as vta_build
from relay.passes.quantize import quantize
from relay.testing import digits

BATCH = 64


@pytest.fixture(scope="module")
def trained() -> tuple[digits.Digits, dict[str, np.ndarray]]:
    data = digits.load(seed=0)
    return data, digits.train(data, epochs=4, seed=0)


def test_the_quantized_network_on_vta_keeps_its_accuracy(
    trained: tuple[digits.Digits, dict[str, np.ndarray]],
) -> None:
    data, params = trained
    net = relay.function(digits.forward)
    n = len(data.test_y) // BATCH * BATCH
    x, labels = data.test_x[:n], data.test_y[:n]
    float_acc = digits.accuracy(net(*(params[k] for k in digits.PARAMS), x), labels)
    assert float_acc > 0.95

    calibration = [(data.train_x[i : i + BATCH],) for i in range(0, 8 * BATCH, BATCH)]
    q = quantize(net, params, calibration)
    assert [(layer.op, layer.relu) for layer in q.layers] == [
        ("nn.conv2d", True),
        ("nn.conv2d", True),
        ("nn.conv2d", True),
        ("nn.dense", True),
        ("nn.dense", False),
    ]
    exe = relay.build(q.module, target="vta")
    layers = vta_build.layers(exe)
    # the first convolution has one input channel: it stays on the CPU
    assert [name.rsplit("_", 1)[0] for name, _ in layers] == [
        "vta_conv2d",
        "vta_conv2d",
        "vta_dense",
        "vta_dense",
    ]
    cpu = relay.build(q.module)
    outs = []
    for i in range(0, n, BATCH):
        batch = x[i : i + BATCH]
        got = exe(batch)
        np.testing.assert_array_equal(got, cpu(batch))  # VTA is the CPU's int8, bit for bit
        outs.append(got)
    vta_acc = digits.accuracy(np.concatenate(outs), labels)
    assert abs(vta_acc - float_acc) <= 0.02, (float_acc, vta_acc)

    # the token scheduler gives the program-order results, whatever module runs first
    first = exe(x[:BATCH])
    for seed in range(3):
        for _, layer in layers:
            layer.order, layer.seed = "tokens", seed
        np.testing.assert_array_equal(exe(x[:BATCH]), first)

    table = vta_build.report(exe).splitlines()
    assert len(table) == 1 + len(layers) + 1
    for line, (_, layer) in zip(table[1:], layers, strict=False):
        assert layer.report is not None
        assert line.split()[-1] == str(len(layer.program.insns))
        assert 0 < layer.report.gemm_utilization <= 1
