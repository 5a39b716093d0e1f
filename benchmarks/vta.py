"""The VTA target end to end: a CNN for scikit-learn's digits, trained in float with
relay.grad, quantized to int8, run on the simulated VTA accelerator; per-layer report.

    .venv/bin/python benchmarks/vta.py              # train, quantize, run, report
    .venv/bin/python benchmarks/vta.py --epochs 10  # train longer

The network and the data split are relay.testing.digits. The quantization is calibrated on
512 training images, in batches of 64; the test images run in batches of 64 (320 of the 360). The script prints the accuracy
of the float model, of its simulated quantization (float arithmetic), of the int8 program on
the CPU and on VTA (the last two must agree exactly), then the VTA layers' report: the cycle
estimate of docs/vta.md, the GEMM core's utilization, and the DRAM traffic of each layer.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import relay
from relay.backend.vta.build import report
from relay.passes.quantize import quantize
from relay.testing import digits


def main() -> None:
    """Run the workload and print the report (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    data = digits.load(args.seed)
    t0 = time.perf_counter()
    params = digits.train(data, epochs=args.epochs, seed=args.seed)
    trained = time.perf_counter() - t0
    net = relay.function(digits.forward)
    weights = [params[k] for k in digits.PARAMS]
    float_logits = net(*weights, data.test_x)
    float_acc = digits.accuracy(float_logits, data.test_y)

    # calibrated on training images in batches of 64: the quantized programs take 64 images
    calibration = [(data.train_x[i : i + 64],) for i in range(0, 512, 64)]
    t0 = time.perf_counter()
    simulated = quantize(net, params, calibration, mode="simulated")
    q = quantize(net, params, calibration)
    quantized = time.perf_counter() - t0
    n = (len(data.test_y) // 64) * 64
    labels = data.test_y[:n]

    def run(exe: relay.Executable) -> tuple[np.ndarray, float]:
        t = time.perf_counter()
        outs = [exe(data.test_x[i : i + 64]) for i in range(0, n, 64)]
        return np.concatenate(outs), time.perf_counter() - t

    sim_logits, _ = run(relay.build(simulated.module))
    cpu_logits, cpu_s = run(relay.build(q.module))
    exe = relay.build(q.module, target="vta")
    vta_logits, vta_s = run(exe)

    print(f"training: {args.epochs} epochs in {trained:.1f} s; quantization {quantized:.2f} s")
    print(q)
    float_same = digits.accuracy(float_logits[:n], labels)
    print(
        f"accuracy on {n} test images: float {float_same:.4f} (all {len(data.test_y)}: {float_acc:.4f})"
    )
    print(f"  simulated int8 (float arithmetic) {digits.accuracy(sim_logits, labels):.4f}")
    print(f"  int8 on the CPU                   {digits.accuracy(cpu_logits, labels):.4f}")
    print(f"  int8 on VTA                       {digits.accuracy(vta_logits, labels):.4f}")
    same = np.array_equal(cpu_logits, vta_logits)
    print(f"  VTA and CPU int8 results identical: {same}")
    print(f"  wall time: CPU {cpu_s * 1e3:.0f} ms, VTA simulator {vta_s * 1e3:.0f} ms")
    print()
    print("VTA layers, last batch of 64 images:")
    print(report(exe))


if __name__ == "__main__":
    main()
