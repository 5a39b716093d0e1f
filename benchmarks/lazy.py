"""Lazy tensors on a training loop over real data.

    .venv/bin/python benchmarks/lazy.py                 # timings (a few seconds)
    .venv/bin/python benchmarks/lazy.py --steps 10000   # and memory over 10,000 lazy steps

An MLP (196-1024-1024-10, ReLU, softmax cross-entropy, SGD with lr 0.05) trains on the
Fashion-MNIST subset in tests/data (1,000 images of 14x14: seven batches of 128 and a last
one of 104 per epoch). The same numpy-style step function (``train_step``: forward,
hand-written backward, update) runs on numpy arrays and on lazy tensors, with
``relay.lazy.mark_step()`` after each step; beside them, the same step written with
``@relay`` and ``relay.grad``. The lazy and ``@relay`` versions run in lockstep (a step of
each in turn), so the machine's noise falls on both alike; numpy runs afterwards, apart
(OpenBLAS's spinning threads slow TVM's kernels when the two alternate). Reported, after one epoch of warm-up: median ms per step
of each, the ratios, the traces compiled during the timed epochs (0 means no recompile, the
last smaller batch included), and the losses of the three versions on the first epoch.
Then the lazy step runs on 40 batch sizes it has not seen (16-127): the trace was
generalized over the batch size in the first epoch, so none compiles (relay.lazy.shapes).
With ``--steps N`` the lazy loop runs N more steps and the process's resident memory is
printed every N/10 steps (it must stay flat).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import relay
import relay.lazy as lz

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "fashion_mnist_subset.npz"
SIZES = [196, 1024, 1024, 10]
BATCH = 128
LR = 0.05


def load() -> tuple[np.ndarray, np.ndarray]:
    d = np.load(DATA)
    x = d["train_images"].reshape(-1, 196).astype(np.float32) / 255.0
    y = np.eye(10, dtype=np.float32)[d["train_labels"]]
    return x, y


def init(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        (
            (rng.standard_normal((m, n)) * np.sqrt(2.0 / m)).astype(np.float32),
            np.zeros(n, np.float32),
        )
        for m, n in itertools.pairwise(SIZES)
    ]


def train_step(params: list[tuple[Any, Any]], x: Any, y: Any, lr: float) -> tuple[Any, Any]:
    """One SGD step, written against numpy only."""
    acts, h = [x], x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = np.maximum(h, 0.0)
        acts.append(h)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.sum(y * np.log(p + 1e-7), axis=1))
    g, new = (p - y) / x.shape[0], []
    for i in range(len(params) - 1, -1, -1):
        w, b = params[i]
        gw, gb = acts[i].T @ g, g.sum(axis=0)
        if i:
            g = (g @ w.T) * (acts[i] > 0)
        new.append((w - lr * gw, b - lr * gb))
    return new[::-1], loss


def relay_step() -> Any:
    """The same step with ``@relay`` and ``relay.grad``: a function of the six weights and
    a batch, returning the new weights and the loss."""

    @relay
    def loss_fn(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
        h1 = np.maximum(x @ w1 + b1, 0.0)
        h2 = np.maximum(h1 @ w2 + b2, 0.0)
        return -np.mean(np.sum(relay.nn.log_softmax(h2 @ w3 + b3) * y, axis=1))

    grads = relay.grad(loss_fn, argnums=(0, 1, 2, 3, 4, 5))

    @relay
    def step(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
        loss, g = grads(w1, b1, w2, b2, w3, b3, x, y)
        return (
            w1 - LR * g[0],
            b1 - LR * g[1],
            w2 - LR * g[2],
            b2 - LR * g[3],
            w3 - LR * g[4],
            b3 - LR * g[5],
            loss,
        )

    return step


def batches(x: np.ndarray, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(x[i : i + BATCH], y[i : i + BATCH]) for i in range(0, len(x), BATCH)]


def run_epochs(
    epochs: int, kinds: tuple[str, ...]
) -> tuple[dict[str, list[float]], dict[str, list[float]], int]:
    """The versions ``kinds`` in lockstep, one step of each in turn (the machine's noise then
    falls on them alike): per-step times of epochs 2.., losses of epoch 1, and the traces
    the lazy version compiled after the first epoch."""
    x, y = load()
    data = batches(x, y)
    start = init()
    step = relay_step()
    everything: dict[str, Any] = {
        "numpy": start,
        "lazy": [(lz.asarray(w), lz.asarray(b)) for w, b in start],
        "relay": [a for wb in start for a in wb],
    }
    state = {k: everything[k] for k in kinds}
    times: dict[str, list[float]] = {k: [] for k in state}
    losses: dict[str, list[float]] = {k: [] for k in state}
    compiled = 0
    for epoch in range(epochs):
        if epoch == 1:
            compiled = lz.metrics().traces_compiled
        for xb, yb in data:
            for kind in state:
                t0 = time.perf_counter()
                if kind == "relay":
                    *state[kind], loss = step(*state[kind], xb, yb)
                elif kind == "lazy":
                    state[kind], loss = train_step(state[kind], lz.asarray(xb), lz.asarray(yb), LR)
                    lz.mark_step()
                else:
                    state[kind], loss = train_step(state[kind], xb, yb, LR)
                if epoch:
                    times[kind].append(time.perf_counter() - t0)
                else:
                    losses[kind].append(float(loss))
    return times, losses, lz.metrics().traces_compiled - compiled


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def memory(steps: int) -> None:
    x, y = load()
    data = batches(x, y)
    params: Any = [(lz.asarray(w), lz.asarray(b)) for w, b in init()]
    for s in range(steps):
        xb, yb = data[s % len(data)]
        params, loss = train_step(params, lz.asarray(xb), lz.asarray(yb), LR)
        lz.mark_step()
        if (s + 1) % max(1, steps // 10) == 0:
            print(f"  step {s + 1:6d}: loss {float(loss):.4f}, resident memory {rss_mb():.0f} MB")


def varying(sizes: list[int]) -> tuple[float, int, int]:
    """The lazy step on batches of each size in ``sizes`` (each new to the trace cache's
    static entries), after one step of 128 and one of 104: median ms per step, and the
    traces compiled and generalized during those steps."""
    x, y = load()
    params: Any = [(lz.asarray(w), lz.asarray(b)) for w, b in init()]
    for n in (BATCH, 104):
        params, _ = train_step(params, lz.asarray(x[:n]), lz.asarray(y[:n]), LR)
        lz.mark_step()
    before = lz.metrics().traces_compiled
    times = []
    for n in sizes:
        t0 = time.perf_counter()
        params, _ = train_step(params, lz.asarray(x[:n]), lz.asarray(y[:n]), LR)
        lz.mark_step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, lz.metrics().traces_compiled - before, len(sizes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=6, help="epochs (the first is warm-up)")
    ap.add_argument("--steps", type=int, default=0, help="lazy steps for the memory check")
    args = ap.parse_args()
    # lazy and @relay in lockstep; numpy apart, afterwards: OpenBLAS's threads spin after
    # each call and slowed TVM's kernels 2-3x when the two were interleaved
    times, losses, recompiled = run_epochs(args.epochs, ("lazy", "relay"))
    numpy_times, numpy_losses, _ = run_epochs(args.epochs, ("numpy",))
    times.update(numpy_times)
    losses.update(numpy_losses)
    ms = {k: statistics.median(t) * 1e3 for k, t in times.items()}
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, Fashion-MNIST subset:")
    for k in ms:
        print(f"  {k:6s} {ms[k]:7.3f} ms per step")
    print(f"  lazy / @relay+relay.grad: {ms['lazy'] / ms['relay']:.2f}x (goal: at most 1.2x)")
    print(f"  numpy / lazy: {ms['numpy'] / ms['lazy']:.2f}x (above 1: lazy is faster)")
    print(f"  lazy traces compiled after the warm-up epoch: {recompiled}")
    first = {k: np.round(v[:3], 4).tolist() for k, v in losses.items()}
    print(f"  first losses: {first}")
    sizes = [int(n) for n in np.random.default_rng(0).permutation(np.arange(16, 128))[:40]]
    ms_varying, compiled, count = varying(sizes)
    print(
        f"  {count} new batch sizes (16-127): {ms_varying:.3f} ms per step, "
        f"{compiled} traces compiled"
    )
    if args.steps:
        memory(args.steps)


if __name__ == "__main__":
    main()
