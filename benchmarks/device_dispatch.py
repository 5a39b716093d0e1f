"""Per-call overhead of the device graph executor, against the CPU's graph executor.

    python benchmarks/device_dispatch.py [--calls N]

A program of three elementwise operators on 16 floats runs many times on both executors,
the device executor on the CPU device (TVM's CPU memory standing in for a GPU's: the same
Python path a GPU program takes per call, without the launches), with its arguments already
device arrays. The kernels take well under a microsecond, so the time per call is the
executor's own: argument checks, result allocation from the pool, kernel dispatch. On a GPU
each launch adds the driver's few microseconds.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import relay
from relay.backend.device import Device, device_put
from relay.backend.device_executor import DeviceGraphExecutor

PROGRAM = """
def @main(%x: Tensor[(16,), float32], %y: Tensor[(16,), float32]) {
  tanh(add(multiply(%x, %y), 1f))
}"""


def per_call_us(call: Any, calls: int) -> float:
    """Median microseconds per call over 5 runs of ``calls`` calls."""
    for _ in range(1000):
        call()
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        runs.append((time.perf_counter() - start) / calls * 1e6)
    return sorted(runs)[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20_000)
    opts = ap.parse_args()
    exe = relay.build(relay.parse(PROGRAM))
    assert exe.graph is not None
    cpu = Device("cpu")
    dev = DeviceGraphExecutor(exe.graph.plan, exe.graph.library, cpu)
    x, y = np.ones(16, np.float32), np.ones(16, np.float32)
    dx, dy = device_put(x, cpu), device_put(y, cpu)
    device = per_call_us(lambda: dev.run_flat([dx, dy]), opts.calls)
    host = per_call_us(lambda: exe(x, y), opts.calls)
    print(f"device graph executor (CPU device, device arrays): {device:.2f} us per call")
    print(f"graph executor (numpy arrays):                    {host:.2f} us per call")


if __name__ == "__main__":
    main()
