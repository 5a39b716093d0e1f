"""Automatic differentiation costs: deriving, and running the derivative.

    .venv/bin/python benchmarks/autodiff.py [--ops 5000]

1. Derivation: the first-order gradient, the higher-order gradient and the forward-mode
   JVP of a straight-line chain of ``--ops`` elementwise operators (``tanh`` and
   ``multiply`` alternating), then type inference of the result; milliseconds and
   microseconds per operator (median of three).
2. Running on the reference interpreter: each derivative of a 500-operator chain over
   float32 vectors of 4096 elements, as a ratio to the forward function's time in the same
   run (the cost of differentiating, independent of the machine's speed).
3. The MLP of the autodiff tests (196-32-10, batch 100): time to derive its gradient
   through ``relay.grad``, the ratio of one gradient step to one forward evaluation, and
   to the same step written by hand in numpy (checked to give the same gradients).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import relay
from relay import Tensor, float32
from relay.ir import Expr, Function, Let, Module, TensorType, Var
from relay.passes.forward_ad import jvp
from relay.passes.gradient import gradient


def chain(n: int, size: int) -> Function:
    x = Var("x", TensorType((size,), "float32"))
    c = relay.const(np.float32(0.999))
    names = [Var(f"v{i}") for i in range(n)]
    body: Expr = names[-1]
    for i in reversed(range(n)):
        prev = names[i - 1] if i else x
        value = relay.op.tanh(prev) if i % 2 else relay.op.multiply(prev, c)
        body = Let(names[i], value, body)
    return Function((x,), body)


def median(f: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


DERIVATIONS: dict[str, Callable[[Function, Module], Function]] = {
    "first-order gradient": lambda f, m: gradient(f, m, mode="first_order"),
    "higher-order gradient": lambda f, m: gradient(f, m, mode="higher_order"),
    "forward-mode JVP": lambda f, m: jvp(f, m),
}


def derivation(n: int) -> None:
    print(f"deriving a {n}-operator chain (median of 3):")
    print(f"  {'':24}{'derive ms':>11}{'us/op':>8}{'infer ms':>11}{'us/op':>8}")
    for name, derive in DERIVATIONS.items():
        mod = Module()
        f = chain(n, 8)
        relay.infer_type(f)
        t_derive = median(lambda: derive(f, mod))  # noqa: B023
        g = derive(f, mod)
        t_infer = median(lambda: relay.infer_type(g, mod))  # noqa: B023
        print(
            f"  {name:24}{t_derive * 1e3:11.1f}{t_derive / n * 1e6:8.1f}"
            f"{t_infer * 1e3:11.1f}{t_infer / n * 1e6:8.1f}"
        )


def running(n: int = 500, size: int = 4096) -> None:
    print(f"\nrunning on the interpreter ({n} operators, float32[{size}]), ratio to forward:")
    f = chain(n, size)
    relay.infer_type(f)
    x = np.random.default_rng(0).standard_normal(size).astype("float32")
    v = np.ones(size, "float32")
    base = median(lambda: relay.interpret(f, x), runs=5)
    print(f"  {'forward':24}{base * 1e3:9.1f} ms   1.00")
    for name, derive in DERIVATIONS.items():
        mod = Module()
        g = derive(f, mod)
        args = (x, v) if "JVP" in name else (x,)
        t = median(lambda: relay.interpret(g, *args, mod=mod), runs=5)  # noqa: B023
        print(f"  {name:24}{t * 1e3:9.1f} ms {t / base:6.2f}")


@relay
def mlp_loss(
    w1: Tensor[float32, (196, 32)],
    b1: Tensor[float32, (32,)],
    w2: Tensor[float32, (32, 10)],
    b2: Tensor[float32, (10,)],
    x: Tensor[float32, (100, 196)],
    y: Tensor[float32, (100, 10)],
) -> Tensor[float32, ()]:
    h = relay.nn.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    return -np.sum(relay.nn.log_softmax(logits) * y) / 100.0


def numpy_step(
    w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray, x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The same loss and its gradients written by hand in numpy (the peer)."""
    pre = x @ w1 + b1
    h = np.maximum(pre, 0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -np.sum(logp * y) / 100.0
    dlogits = (np.exp(logp) * y.sum(axis=1, keepdims=True) - y) / 100.0
    dw2, db2 = h.T @ dlogits, dlogits.sum(axis=0)
    dpre = (dlogits @ w2.T) * (pre > 0)
    return loss, (x.T @ dpre, dpre.sum(axis=0), dw2, db2)


def mlp() -> None:
    rng = np.random.default_rng(0)
    shapes = [(196, 32), (32,), (32, 10), (10,), (100, 196), (100, 10)]
    args = [rng.standard_normal(s).astype("float32") for s in shapes]
    args[5] = np.eye(10, dtype="float32")[rng.integers(0, 10, 100)]
    start = time.perf_counter()
    step = relay.grad(mlp_loss, argnums=(0, 1, 2, 3))
    _ = step.module
    derive = time.perf_counter() - start
    base = median(lambda: mlp_loss(*args), runs=5)
    t = median(lambda: step(*args), runs=5)
    print(f"\nMLP 196-32-10, batch 100: derive {derive * 1e3:.1f} ms; forward {base * 1e3:.2f} ms,")
    print(f"  gradient step {t * 1e3:.2f} ms ({t / base:.2f}x forward) on the interpreter")
    _, ours = step(*args)
    _, theirs = numpy_step(*args)
    for a, b in zip(ours, theirs, strict=True):  # the peer computes the same gradients
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    peer = median(lambda: numpy_step(*args), runs=5)
    print(
        f"  hand-written numpy step {peer * 1e3:.2f} ms ({t / peer:.2f}x: the interpreter's cost)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=5000)
    args = parser.parse_args()
    derivation(args.ops)
    running()
    mlp()


if __name__ == "__main__":
    main()
