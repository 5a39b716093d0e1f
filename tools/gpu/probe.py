"""Elementwise kernels on a GPU, by schedule variant (issue 11's ew_chain goal).

    python3 tools/gpu/probe.py                 # every variant, each in a process of its own
    python3 tools/gpu/probe.py one THREADS PER # one variant (PER 0: dlight's Fallback)
    python3 tools/gpu/probe.py products        # float16 matmul and dense on the tensor cores
    python3 tools/gpu/probe.py tiles           # float32 products by SIMT tile configuration

For each variant of relay's elementwise GPU schedule (threads per block, vectors per
thread; relay.backend.schedule.gpu.schedule_elementwise) and dlight's ``Fallback`` (one
element per thread), ew_chain is built for the GPU, checked against numpy, and timed three
ways: a call's wall time in bursts synchronized at the end (as benchmarks/gpu.py times it),
the GPU's time per call between CUDA events around a burst, and the host's time per call
with nothing synchronized (launch overhead). The floor is three 16 MiB arrays at the
device's copy bandwidth.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

VARIANTS = [(256, 0), (256, 1), (128, 1), (512, 1), (256, 2), (256, 4)]


def one(threads: int, per: int) -> None:
    import torch
    import workloads as W

    import relay
    from relay.backend.schedule import gpu

    if per == 0:
        gpu.schedule_elementwise = lambda sch: False  # type: ignore[assignment]
    else:
        gpu.THREADS, gpu.PER_THREAD = threads, per
    x, y = W.ew_inputs()
    f = W.relay_programs()["ew_chain"]
    exe = relay.build(f.specialize(x, y), target="cuda")
    dx, dy = relay.device_put(x), relay.device_put(y)
    got = exe(dx, dy).numpy()
    np.testing.assert_allclose(got, W.ew_ref(x, y), rtol=2e-5, atol=2e-5)
    sync = torch.cuda.synchronize
    for _ in range(50):
        exe(dx, dy)
    sync()
    n, walls, gpus, hosts = 200, [], [], []
    for _ in range(9):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        sync()
        t0 = time.perf_counter()
        start.record()
        for _ in range(n):
            exe(dx, dy)
        t1 = time.perf_counter()
        end.record()
        sync()
        t2 = time.perf_counter()
        walls.append((t2 - t0) / n * 1e6)
        hosts.append((t1 - t0) / n * 1e6)
        gpus.append(start.elapsed_time(end) / n * 1e3)
    big = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    copies = []
    for _ in range(9):
        sync()
        t0 = time.perf_counter()
        for _ in range(20):
            big.clone()
        sync()
        copies.append((time.perf_counter() - t0) / 20)
    gbs = 2 * big.numel() * 4 / statistics.median(copies) / 1e9
    floor = 3 * x.nbytes / gbs / 1e3
    name = "fallback" if per == 0 else f"{threads}x{per}"
    w, g, h = (statistics.median(v) for v in (walls, gpus, hosts))
    print(
        f"{name:10} wall {w:7.1f} us  gpu {g:7.1f} us  host {h:6.1f} us  "
        f"floor {floor:5.1f} us ({gbs:.0f} GB/s)  wall/floor {w / floor:.2f}"
    )


def products() -> None:
    """Float16 products of 4096 x 4096 matrices on the tensor cores, the second operand
    as nn.matmul takes it (K x N, transposed on its way to shared memory) and as nn.dense
    takes it (N x K)."""
    import torch

    import relay

    n = 4096
    rng = np.random.default_rng(0)
    a = relay.device_put(rng.standard_normal((n, n)).astype(np.float16))
    b = relay.device_put(rng.standard_normal((n, n)).astype(np.float16))
    for op in ("nn.matmul", "nn.dense"):
        text = (
            f"def @main(%x: Tensor[({n}, {n}), float16], %w: Tensor[({n}, {n}), float16]) "
            f"{{ {op}(%x, %w) }}"
        )
        exe = relay.build(relay.parse(text), target="cuda")
        exe(a, b)
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(10):
                exe(a, b)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / 10)
        ms = statistics.median(times) * 1e3
        print(f"{op:10} float16 {n}: {ms:.3f} ms, {2 * n**3 / ms / 1e9:.1f} TFLOP/s")


TILES = [
    {},
    {"block_size_x": 16, "block_size_y": 16, "vector_size": 4},
    {
        "block_size_x": 16,
        "block_size_y": 16,
        "micro_size_x": 8,
        "micro_size_y": 8,
        "vector_size": 4,
    },
    {"block_size_x": 8, "block_size_y": 16, "micro_size_x": 8, "micro_size_y": 8, "vector_size": 4},
    {
        "block_size_x": 16,
        "block_size_y": 8,
        "micro_size_x": 8,
        "micro_size_y": 8,
        "micro_size_k": 8,
    },
    {
        "block_size_x": 16,
        "block_size_y": 16,
        "micro_size_x": 8,
        "micro_size_y": 4,
        "vector_size": 4,
    },
]


def tiles(overrides: dict[str, int]) -> None:
    """float32 products (SIMT) with dlight's Matmul configuration overridden: 4096 x 4096
    as nn.matmul and as nn.dense, and a 128-row dense layer, each checked against PyTorch
    in float32 (no TF32)."""
    import torch

    import relay
    from relay.backend.schedule import gpu

    gpu.MATMUL_TILES = overrides
    torch.backends.cuda.matmul.allow_tf32 = False
    rng = np.random.default_rng(0)
    cases = [("nn.matmul", 4096, 4096, 4096), ("nn.dense", 4096, 4096, 4096)]
    cases.append(("nn.dense", 128, 1024, 1024))
    cells = []
    for op, m, n, k in cases:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n) if op == "nn.matmul" else (n, k)).astype(np.float32)
        text = (
            (
                f"def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[{w.shape}, float32]) "
                f"{{ {op}(%x, %w) }}"
            )
            .replace("[(", "[(")
            .replace(")]", ")]")
        )
        exe = relay.build(relay.parse(text), target="cuda")
        dx, dw = relay.device_put(x), relay.device_put(w)
        got = torch.from_dlpack(exe(dx, dw))
        tw = torch.from_dlpack(dw)
        want = torch.from_dlpack(dx) @ (tw if op == "nn.matmul" else tw.T)
        err = float((got - want).norm() / want.norm())
        reps = 10 if m > 1000 else 200
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                exe(dx, dw)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / reps)
        ms = statistics.median(times) * 1e3
        cells.append(f"{op[3:]} {m}: {ms:.3f} ms {2 * m * n * k / ms / 1e9:.1f} TF err {err:.0e}")
    print(overrides or "dlight", " | ".join(cells))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "tiles":
        if len(sys.argv) > 2:
            tiles(json.loads(sys.argv[2]))
            return
        for overrides in TILES:
            subprocess.run([sys.executable, __file__, "tiles", json.dumps(overrides)], check=False)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "products":
        products()
        return
    if len(sys.argv) > 1 and sys.argv[1] == "one":
        one(int(sys.argv[2]), int(sys.argv[3]))
        return
    for threads, per in VARIANTS:
        subprocess.run([sys.executable, __file__, "one", str(threads), str(per)], check=False)


if __name__ == "__main__":
    main()
