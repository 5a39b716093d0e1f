"""Automatic differentiation costs: deriving, and running the derivative.

    .venv/bin/python benchmarks/autodiff.py [--ops 5000] [--runs 30]

1. Derivation: the first-order gradient, the higher-order gradient and the forward-mode
   JVP of a straight-line chain of ``--ops`` elementwise operators (``tanh`` and
   ``multiply`` alternating), then type inference of the result; milliseconds and
   microseconds per operator (median of three).
2. Running on the reference interpreter: each derivative of a 500-operator chain over
   float32 vectors of 4096 elements, as a ratio to the forward function's time in the same
   run (the cost of differentiating, independent of the machine's speed).
3. The MLP of the workloads' training step (784-1024-1024-10, batch 128): the loss and
   its gradients from ``relay.grad`` against the same written by hand in relay (forward
   and backward pass), both compiled, and by hand in numpy; the three are checked to give
   the same gradients, then timed interleaved (median of ``--runs``), with the number of
   kernels each relay program compiles to.
4. The same gradient in each mode: first-order, higher-order as derived (closures and
   reference cells, on the VM), and higher-order after ``PartialEvaluate``; kernels,
   executor and time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import relay
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
def mlp_loss(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
    """The loss of the workloads' mlp_train_step (784-1024-1024-10, batch 128)."""
    h1 = relay.nn.relu(relay.nn.dense(x, w1) + b1)
    h2 = relay.nn.relu(relay.nn.dense(h1, w2) + b2)
    logits = relay.nn.dense(h2, w3) + b3
    return -np.sum(relay.nn.log_softmax(logits) * y) / 128.0


@relay
def mlp_loss_and_grad_by_hand(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
    """The same loss and its gradients, the backward pass written by hand in relay."""
    h1 = relay.nn.relu(relay.nn.dense(x, w1) + b1)
    h2 = relay.nn.relu(relay.nn.dense(h1, w2) + b2)
    logp = relay.nn.log_softmax(relay.nn.dense(h2, w3) + b3)
    loss = -np.sum(logp * y) / 128.0
    d3 = (np.exp(logp) * np.sum(y, axis=1, keepdims=True) - y) / 128.0
    d2 = np.where(h2 > 0.0, d3 @ w3, 0.0)
    d1 = np.where(h1 > 0.0, d2 @ w2, 0.0)
    grads = (d1.T @ x, np.sum(d1, axis=0), d2.T @ h1, np.sum(d2, axis=0), d3.T @ h2)
    return loss, (*grads, np.sum(d3, axis=0))


def numpy_loss_and_grad(
    w1: np.ndarray,
    b1: np.ndarray,
    w2: np.ndarray,
    b2: np.ndarray,
    w3: np.ndarray,
    b3: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The same again in numpy (the peer)."""
    h1 = np.maximum(x @ w1.T + b1, 0)
    h2 = np.maximum(h1 @ w2.T + b2, 0)
    logits = h2 @ w3.T + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -np.sum(logp * y) / 128.0
    d3 = (np.exp(logp) * y.sum(axis=1, keepdims=True) - y) / 128.0
    d2 = (d3 @ w3) * (h2 > 0)
    d1 = (d2 @ w2) * (h1 > 0)
    grads = (d1.T @ x, d1.sum(axis=0), d2.T @ h1, d2.sum(axis=0), d3.T @ h2)
    return loss, (*grads, d3.sum(axis=0))


def mlp(runs: int) -> None:
    from workloads import mlp_train_inputs

    args = mlp_train_inputs()
    mlp_loss(*args)  # the parameters' types come from the first call's arguments
    start = time.perf_counter()
    derived = relay.grad(mlp_loss, argnums=(0, 1, 2, 3, 4, 5))
    _ = derived.module
    derive = time.perf_counter() - start
    by_hand = mlp_loss_and_grad_by_hand
    results = [f(*args) for f in (derived, by_hand, numpy_loss_and_grad)]
    for other in results[1:]:  # all three compute the same gradients
        for a, b in zip(results[0][1], other[1], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    kernels = [len(relay.build(f).kernels) for f in (derived, by_hand)]
    times: dict[str, list[float]] = {"derived": [], "by hand": []}
    for _ in range(runs):  # interleaved, so that the machine's noise hits both alike
        for name, f in zip(times, (derived, by_hand), strict=True):
            start = time.perf_counter()
            f(*args)
            times[name].append(time.perf_counter() - start)
    # numpy apart: OpenBLAS's threads keep spinning after a product and would slow TVM's
    times["numpy"] = []
    for _ in range(runs):
        start = time.perf_counter()
        numpy_loss_and_grad(*args)
        times["numpy"].append(time.perf_counter() - start)
    t = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"\nMLP 784-1024-1024-10, batch 128, loss and gradients, compiled (median of {runs}):")
    print(f"  relay.grad        {t['derived'] * 1e3:6.2f} ms  {kernels[0]} kernels")
    print(
        f"  written by hand   {t['by hand'] * 1e3:6.2f} ms  {kernels[1]} kernels"
        f"  (relay.grad's is {t['derived'] / t['by hand']:.2f}x its time)"
    )
    print(f"  numpy by hand     {t['numpy'] * 1e3:6.2f} ms")
    print(f"  deriving the gradient took {derive * 1e3:.1f} ms")


def partially_evaluated(runs: int) -> None:
    """The same MLP's gradient in higher-order mode (closures and reference cells), with and
    without partial evaluation, against the first-order mode's: kernels, executor, time."""
    from workloads import mlp_train_inputs

    from relay.passes import PartialEvaluate

    args = mlp_train_inputs()
    mlp_loss(*args)
    c = mlp_loss._compiled_for(args)
    built = {}
    for name in ("first-order", "higher-order", "higher-order + PE"):
        mod = c.module.copy()
        mode = "first_order" if name == "first-order" else "higher_order"
        gv = mod.add("loss_grad", gradient(c.global_var, mod, mode=mode))
        mod = relay.infer_type(mod)
        if name.endswith("PE"):
            start = time.perf_counter()
            mod = PartialEvaluate()(mod)
            pe_ms = (time.perf_counter() - start) * 1e3
        built[name] = relay.build(mod, entry=gv.name_hint)
    want = built["first-order"](*args)[1]
    for exe in built.values():
        for a, b in zip(exe(*args)[1], want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    times: dict[str, list[float]] = {name: [] for name in built}
    for _ in range(runs):
        for name, exe in built.items():
            start = time.perf_counter()
            exe(*args)
            times[name].append(time.perf_counter() - start)
    print(f"\nthe same gradient by mode, compiled (median of {runs}; PE took {pe_ms:.0f} ms):")
    for name, exe in built.items():
        t = statistics.median(times[name]) * 1e3
        print(f"  {name:20}{t:8.2f} ms  {len(exe.kernels):3} kernels on the {exe.kind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    derivation(args.ops)
    running()
    mlp(args.runs)
    partially_evaluated(args.runs)


if __name__ == "__main__":
    main()
