"""Elementwise kernels on a GPU, by schedule variant (issue 11's ew_chain goal).

    python3 tools/gpu/probe.py                 # every variant, each in a process of its own
    python3 tools/gpu/probe.py one THREADS PER # one variant (PER 0: dlight's Fallback)
    python3 tools/gpu/probe.py products        # float16 matmul and dense on the tensor cores
    python3 tools/gpu/probe.py tiles           # float32 products by SIMT tile configuration
    python3 tools/gpu/probe.py simt            # relay's SIMT product schedule, by variant
    python3 tools/gpu/probe.py small           # mlp-sized float32 products, by schedule

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
from typing import Any

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


def burst_ms(call: Any, reps: int, *args: Any) -> float:
    """Median milliseconds per call of ``call(*args)`` over 5 bursts of ``reps`` calls, the
    GPU synchronized around each burst."""
    import torch

    times = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            call(*args)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times) * 1e3


def products() -> None:
    """Float16 products of 4096 x 4096 matrices on the tensor cores, the second operand
    as nn.matmul takes it (K x N, transposed on its way to shared memory) and as nn.dense
    takes it (N x K)."""

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
        ms = burst_ms(exe, 10, a, b)
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
        ms = burst_ms(exe, reps, dx, dw)
        cells.append(f"{op[3:]} {m}: {ms:.3f} ms {2 * m * n * k / ms / 1e9:.1f} TF err {err:.0e}")
    print(overrides or "dlight", " | ".join(cells))


SIMT = [
    {"pipeline": "registers", "step": 8},
    {"pipeline": "registers", "step": 16},
    {"pipeline": "shared", "step": 8},
    {"pipeline": "shared", "step": 16},
    {"pipeline": "none", "step": 8},
    {"pipeline": "registers", "step": 8, "threads_y": 8},
    {"dlight": 1},  # dlight's Matmul, relay's schedule off
]

SIMT_CHECKS = [
    "def @main(%x: Tensor[(1000, 1022), float32], %w: Tensor[(1022, 1000), float32]) "
    "{ nn.matmul(%x, %w) }",
    "def @main(%x: Tensor[(1023, 1021), float32], %w: Tensor[(1019, 1021), float32], "
    "%b: Tensor[(1019,), float32]) { nn.relu(add(nn.dense(%x, %w), %b)) }",
    "def @main(%x: Tensor[(4, 256, 320), float32], %w: Tensor[(4, 320, 384), float32]) "
    "{ nn.batch_matmul(%x, %w) }",
    "def @main(%x: Tensor[(512, 256), float32], %w: Tensor[(256, 512), float32]) "
    "{ transpose(nn.matmul(%x, %w)) }",
    "def @main(%x: Tensor[(129, 67), float32], %w: Tensor[(67, 131), float32]) "
    "{ nn.matmul(%x, %w) }",
]


def simt(overrides: dict[str, Any]) -> None:
    """relay's SIMT product schedule (relay.backend.schedule.gpu_matmul) with ``overrides``
    of its tiles: odd-shaped products checked against numpy (every product on this schedule),
    then float32 4096 x 4096 as nn.matmul and nn.dense timed and checked against PyTorch in
    float32 (no TF32); ``{"dlight": 1}`` times dlight's Matmul instead."""
    import torch

    import relay
    from relay.backend.schedule import gpu_matmul

    torch.backends.cuda.matmul.allow_tf32 = False
    rng = np.random.default_rng(0)
    cells: list[str] = []
    record: dict[str, Any] = {"tiles": overrides, "checks": True}
    if "dlight" in overrides:
        gpu_matmul.MIN_BLOCKS = gpu_matmul.MIN_SMALL_BLOCKS = 1 << 30
    else:
        gpu_matmul.TILES = gpu_matmul.Tiles(**overrides)
        gpu_matmul.MIN_BLOCKS = 1
        bad = []
        for text in SIMT_CHECKS:
            mod = relay.parse(text)
            args = [
                rng.standard_normal([int(d) for d in p.checked_type.shape]).astype(np.float32)
                for p in relay.infer_type(mod)["main"].params
            ]
            try:
                got = relay.build(mod, target="cuda")(*args).numpy()
                want = np.asarray(relay.build(mod)(*args))
                err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
                if not err < 1e-5:
                    bad.append(f"{text[text.index('{') :]}: error {err:.1e}")
            except Exception as exc:
                bad.append(f"{text[text.index('{') :]}: {type(exc).__name__}: {exc}"[:300])
        cells.append("checks ok" if not bad else "CHECKS FAILED " + " / ".join(bad))
        record["checks"] = not bad
        gpu_matmul.MIN_BLOCKS = 128
    n = 4096
    for op in ("nn.matmul", "nn.dense"):
        x = rng.standard_normal((n, n)).astype(np.float32)
        w = rng.standard_normal((n, n)).astype(np.float32)
        text = (
            f"def @main(%x: Tensor[({n}, {n}), float32], %w: Tensor[({n}, {n}), float32]) "
            f"{{ {op}(%x, %w) }}"
        )
        t0 = time.perf_counter()
        exe = relay.build(relay.parse(text), target="cuda")
        build_s = time.perf_counter() - t0
        dx, dw = relay.device_put(x), relay.device_put(w)
        got = torch.from_dlpack(exe(dx, dw)).double()
        tw = torch.from_dlpack(dw).double()
        want = torch.from_dlpack(dx).double() @ (tw if op == "nn.matmul" else tw.T)
        err = float((got - want).norm() / want.norm())
        ms = burst_ms(exe, 10, dx, dw)
        cells.append(
            f"{op[3:]}: {ms:.3f} ms {2 * n**3 / ms / 1e9:.1f} TF err {err:.0e} build {build_s:.1f} s"
        )
        record[op[3:]] = ms if err < 1e-5 else None
    xt = torch.from_dlpack(dx)
    wt = torch.from_dlpack(dw)
    xt @ wt  # (cuBLAS's first call sets it up)
    ms = burst_ms(torch.matmul, 10, xt, wt)
    cells.append(f"cuBLAS {ms:.3f} ms {2 * n**3 / ms / 1e9:.1f} TF")
    print(overrides or "default", " | ".join(cells), flush=True)
    print("SIMT_JSON", json.dumps(record), flush=True)


SMALL = [
    ("dense_bias_relu 128x784x1024", "nn.relu(add(nn.dense(%x, %w), %b))", (128, 784), (1024, 784)),
    ("dense 128x1024x1024", "nn.dense(%x, %w)", (128, 1024), (1024, 1024)),
    ("weight grad 1024x128x1024", "nn.matmul(transpose(%x), %w)", (128, 1024), (128, 1024)),
    ("dense 512x1024x1024", "nn.dense(%x, %w)", (512, 1024), (1024, 1024)),
]


def small() -> None:
    """mlp-sized float32 products (mlp_train_step's, and one of 512 rows), each timed between
    CUDA events over a burst, under dlight's Matmul and under relay's schedule with tiles
    of its own choice, and of 128 x 128, 64 x 128 and 64 x 64 (MIN_BLOCKS 1), each checked
    against numpy."""
    import torch

    import relay
    from relay.backend.schedule import gpu_matmul

    variants: list[tuple[str, dict[str, int], int]] = [
        ("dlight", {}, 1 << 30),
        ("default", {}, 0),
        ("128x128", {}, 1),
        ("64x128", {"threads_y": 8}, 1),
        ("64x64", {"virtual_y": 1, "virtual_x": 1}, 1),
    ]
    rng = np.random.default_rng(0)
    for label, body, xs, ws in SMALL:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        b = rng.standard_normal(ws[0]).astype(np.float32)
        params = f"%x: Tensor[{xs}, float32], %w: Tensor[{ws}, float32]"
        args = [x, w]
        if "%b" in body:
            params += f", %b: Tensor[({ws[0]},), float32]"
            args.append(b)
        mod = relay.parse(f"def @main({params}) {{ {body} }}")
        want = np.asarray(relay.build(mod)(*args))
        dev = [relay.device_put(a) for a in args]
        cells = []
        for name, tiles, min_blocks in variants:
            # (min_blocks 0: relay's own choice of tiles, by size)
            gpu_matmul.TILES = gpu_matmul.Tiles(**tiles)
            gpu_matmul.MIN_BLOCKS = min_blocks or 128
            gpu_matmul.MIN_SMALL_BLOCKS = 1 << 30 if min_blocks > 1 else 32
            exe = relay.build(mod, target="cuda")
            got = exe(*dev).numpy()
            err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            for _ in range(20):
                exe(*dev)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(200):
                exe(*dev)
            end.record()
            torch.cuda.synchronize()
            us = start.elapsed_time(end) / 200 * 1e3
            cells.append(f"{name} {us:.1f} us" + ("" if err < 1e-5 else f" ERR {err:.0e}"))
        print(f"{label:28}", " | ".join(cells), flush=True)
    gpu_matmul.TILES, gpu_matmul.MIN_BLOCKS, gpu_matmul.MIN_SMALL_BLOCKS = (
        gpu_matmul.Tiles(),
        128,
        32,
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "small":
        small()
        return
    sweeps: dict[str, tuple[Any, Any]] = {
        "simt": (simt, SIMT),
        "tiles": (tiles, TILES),
    }
    if len(sys.argv) > 1 and sys.argv[1] in sweeps:
        run, variants = sweeps[sys.argv[1]]
        if len(sys.argv) > 2:
            run(json.loads(sys.argv[2]))
            return
        for overrides in variants:  # (each in a process of its own)
            subprocess.run(
                [sys.executable, __file__, sys.argv[1], json.dumps(overrides)], check=False
            )
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
