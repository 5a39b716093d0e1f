"""The reference workloads (shared/bench/workloads.md) against numpy, JAX and PyTorch.

    .venv/bin/python benchmarks/workloads.py            # every workload, every peer installed
    .venv/bin/python benchmarks/workloads.py ew_chain matmul_1024 --runs 50

Each (workload, framework) pair runs in a fresh process of its own, so that frameworks'
thread pools never compete (TVM's workers spin after each parallel region and would slow a
BLAS call that follows in the same process) and so that the first call is a real first
call. A child process imports its framework, makes the inputs (fixed seeds, float32),
times the first call (for relay: with a cold kernel cache -- an empty directory -- and
again in later processes with the warm cache the first left), checks the result against
a float64 numpy reference, makes 3 untimed calls, then reports the median of at least
``--runs`` calls made over at least a second (at most 10,000 calls) and its peak resident
memory. A first call is one sample per process, so it is timed in
``--first-samples`` processes (3 by default; each cold one with an empty cache of its own)
and the median reported, the samples in the JSON. The parent byte-compiles relay's modules
first, as pip does on install. The parent writes benchmarks/results/workloads.md (the table, with each
relay time's ratio to each peer: above 1 means relay is faster) and workloads.json, and a
plot (workloads.png) when matplotlib is installed.

Peers are optional: ``pip install -e .[bench]`` installs JAX (jit) and PyTorch (eager).
Relay programs with control flow run on the VM (rnn_loop; tree_rnn's recursion is unfolded
by partial evaluation into dataflow for the graph executor); for those the table
also gives the VM's own cost per instruction executed (its run time less its kernels',
over the instructions it ran; see ``relay.backend.vm.VMExecutor.profile``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
FRAMEWORKS = ("relay", "numpy", "jax", "torch")

Inputs = tuple[Any, ...]


# -- inputs and float64 references ---------------------------------------------------------------


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def ew_inputs() -> Inputs:
    r = _rng()
    n = 4_194_304
    return (r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32))


def ew_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = x.astype(np.float64), y.astype(np.float64)
    return np.tanh(x * y + 1) * (1 / (1 + np.exp(-x))) - np.exp(-y * y)


def small_inputs() -> Inputs:
    return (np.arange(16, dtype=np.float32),)


def small_ref(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.float64) * 2 + 1) * 3 - 4) / 5


def mlp_params() -> list[np.ndarray]:
    r = _rng(1)
    sizes = [(784, 1024), (1024, 1024), (1024, 10)]
    params = []
    for n_in, n_out in sizes:
        params.append((r.standard_normal((n_out, n_in)) * np.sqrt(2 / n_in)).astype(np.float32))
        params.append(np.zeros(n_out, np.float32))
    return params


def mlp_batch(b: int) -> tuple[np.ndarray, np.ndarray]:
    r = _rng(2)
    x = r.random((b, 784), dtype=np.float32)
    labels = r.integers(0, 10, b)
    return x, np.eye(10, dtype=np.float32)[labels]


def mlp_train_inputs() -> Inputs:
    x, y = mlp_batch(128)
    return (*mlp_params(), x, y)


def mlp_forward64(p: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    h = x.astype(np.float64)
    for i in range(0, 6, 2):
        h = h @ p[i].astype(np.float64).T + p[i + 1]
        if i < 4:
            h = np.maximum(h, 0)
    return h


def mlp_train_ref(*args: np.ndarray) -> tuple[np.ndarray, ...]:
    p = [a.astype(np.float64) for a in args[:6]]
    x, y = args[6].astype(np.float64), args[7].astype(np.float64)
    hs = [x]
    h = x
    for i in range(0, 6, 2):
        h = h @ p[i].T + p[i + 1]
        if i < 4:
            h = np.maximum(h, 0)
        hs.append(h)
    z = h - h.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(logp * y).sum() / x.shape[0]
    d = (np.exp(logp) - y) / x.shape[0]
    grads: list[np.ndarray] = [np.empty(0)] * 6
    for layer in (2, 1, 0):
        w = p[2 * layer]
        grads[2 * layer] = d.T @ hs[layer]
        grads[2 * layer + 1] = d.sum(axis=0)
        d = d @ w
        if layer > 0:
            d = d * (hs[layer] > 0)
    return (*[p[i] - 0.01 * grads[i] for i in range(6)], np.float64(loss))


def mlp_infer_inputs(b: int) -> Callable[[], Inputs]:
    return lambda: (*mlp_params(), mlp_batch(b)[0])


def mlp_infer_ref(*args: np.ndarray) -> np.ndarray:
    return mlp_forward64(list(args[:6]), args[6])


def conv_inputs() -> Inputs:
    r = _rng(3)
    x = r.standard_normal((1, 64, 56, 56)).astype(np.float32)
    w1 = (r.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
    w2 = (r.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
    b1 = r.standard_normal(64).astype(np.float32) * 0.1
    b2 = r.standard_normal(64).astype(np.float32) * 0.1
    return (x, w1, b1, w2, b2)


def _conv64(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    _, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i : i + h, j : j + wd] for i in range(3) for j in range(3)], 2)
    return np.einsum("nckhw,ock->nohw", cols, w.reshape(w.shape[0], c, 9))


def conv_ref(
    x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray
) -> np.ndarray:
    x, w1, w2 = x.astype(np.float64), w1.astype(np.float64), w2.astype(np.float64)
    h = np.maximum(_conv64(x, w1) + b1[:, None, None], 0)
    return np.maximum(_conv64(h, w2) + b2[:, None, None] + x, 0)


def rnn_inputs() -> Inputs:
    r = _rng(4)
    xs = r.standard_normal((64, 256)).astype(np.float32)
    w = (r.standard_normal((256, 256)) / 16).astype(np.float32)
    u = (r.standard_normal((256, 256)) / 16).astype(np.float32)
    b = np.zeros(256, np.float32)
    return (xs, w, u, b)


def rnn_ref(xs: np.ndarray, w: np.ndarray, u: np.ndarray, b: np.ndarray) -> np.ndarray:
    h = np.zeros(256)
    for t in range(64):
        h = np.tanh(w.astype(np.float64) @ xs[t] + u.astype(np.float64) @ h + b)
    return h


TREE_LEAVES = 32  # as in recursive.py
TREE_HIDDEN = 128


def tree_inputs() -> Inputs:
    r = _rng(8)
    n, h = TREE_LEAVES, TREE_HIDDEN
    return (
        r.standard_normal((n, h)).astype(np.float32),
        (r.standard_normal((h, h)) / 12).astype(np.float32),
        (r.standard_normal((h, h)) / 12).astype(np.float32),
        (r.standard_normal(h) / 4).astype(np.float32),
    )


def tree_with(tanh: Callable[[Any], Any]) -> Callable[..., Any]:
    """tree_rnn written with ``tanh`` (numpy's, JAX's or PyTorch's): a recursive network over
    a complete binary tree whose leaves are the rows of ``xs``."""

    def tree(xs: Any, w: Any, u: Any, b: Any) -> Any:
        def node(lo: int, hi: int) -> Any:
            if hi - lo == 1:
                return tanh(w @ xs[lo] + b)
            mid = (lo + hi) // 2
            return tanh(u @ (node(lo, mid) + node(mid, hi)) + b)

        return node(0, TREE_LEAVES)

    return tree


def tree_ref(xs: np.ndarray, w: np.ndarray, u: np.ndarray, b: np.ndarray) -> np.ndarray:
    return tree_with(np.tanh)(*(a.astype(np.float64) for a in (xs, w, u, b)))  # type: ignore[no-any-return]


def gts_inputs() -> Inputs:
    r = _rng(5)
    return (
        (r.standard_normal((512, 512)) / 16).astype(np.float32),
        r.standard_normal(512).astype(np.float32),
    )


def gts_grad_ref(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    w64, x64 = w.astype(np.float64), x.astype(np.float64)
    t = np.tanh(w64 @ x64)
    return np.outer(1 - t * t, x64)


def hvp_inputs() -> Inputs:
    w, x = gts_inputs()
    v = _rng(6).standard_normal((512, 512)).astype(np.float32)
    return (w, x, v)


def gts_hvp_ref(w: np.ndarray, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    w64, x64, v64 = (a.astype(np.float64) for a in (w, x, v))
    t = np.tanh(w64 @ x64)
    return np.outer(-2 * t * (1 - t * t) * (v64 @ x64), x64)


def mm_inputs() -> Inputs:
    r = _rng(7)
    return (
        r.standard_normal((1024, 1024)).astype(np.float32),
        r.standard_normal((1024, 1024)).astype(np.float32),
    )


def mm_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) @ b.astype(np.float64)


# -- relay programs -------------------------------------------------------------------------------


def relay_programs() -> dict[str, Callable[..., Any]]:
    import relay

    @relay
    def ew_chain(x, y):  # type: ignore[no-untyped-def]
        return np.tanh(x * y + 1.0) * (1.0 / (1.0 + np.exp(-x))) - np.exp(-y * y)

    @relay
    def small_dispatch(x):  # type: ignore[no-untyped-def]
        return ((x * 2.0 + 1.0) * 3.0 - 4.0) / 5.0

    def forward(w1, b1, w2, b2, w3, b3, x):  # type: ignore[no-untyped-def]
        h1 = relay.nn.relu(relay.nn.dense(x, w1) + b1)
        h2 = relay.nn.relu(relay.nn.dense(h1, w2) + b2)
        return relay.nn.dense(h2, w3) + b3

    mlp_infer = relay(forward)

    @relay
    def mlp_loss(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
        h1 = relay.nn.relu(relay.nn.dense(x, w1) + b1)
        h2 = relay.nn.relu(relay.nn.dense(h1, w2) + b2)
        logits = relay.nn.dense(h2, w3) + b3
        return -np.sum(relay.nn.log_softmax(logits) * y) / 128.0

    loss_grad = relay.grad(mlp_loss, argnums=(0, 1, 2, 3, 4, 5))

    @relay
    def mlp_train_step(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
        loss, g = loss_grad(w1, b1, w2, b2, w3, b3, x, y)
        return (
            w1 - 0.01 * g[0],
            b1 - 0.01 * g[1],
            w2 - 0.01 * g[2],
            b2 - 0.01 * g[3],
            w3 - 0.01 * g[4],
            b3 - 0.01 * g[5],
            loss,
        )

    @relay
    def conv_block(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
        h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b1))
        out = relay.nn.bias_add(relay.nn.conv2d(h, w2, padding=(1, 1)), b2) + x
        return relay.nn.relu(out)

    @relay
    def rnn_loop(xs, w, u, b):  # type: ignore[no-untyped-def]
        h = np.zeros(256, dtype=np.float32)
        for t in range(64):
            h = np.tanh(w @ xs[t] + u @ h + b)
        return h

    from recursive import tree_rnn

    @relay
    def tanh_sum(w, x):  # type: ignore[no-untyped-def]
        return np.sum(np.tanh(w @ x))

    dw = relay.grad(tanh_sum, argnums=0)

    @relay
    def grad_w(w, x):  # type: ignore[no-untyped-def]
        return dw(w, x)[1]

    hvp_fn = relay.jvp(grad_w, argnums=0)  # a tangent for w only, as JAX's jvp below

    def hvp(w, x, v):  # type: ignore[no-untyped-def]
        return hvp_fn(w, x, v)[1]

    hvp.relay_function = hvp_fn  # type: ignore[attr-defined]  # what the report describes

    @relay
    def matmul_1024(a, b):  # type: ignore[no-untyped-def]
        return a @ b

    return {
        "ew_chain": ew_chain,
        "small_dispatch": small_dispatch,
        "mlp_train_step": mlp_train_step,
        "mlp_infer_b1": mlp_infer,
        "mlp_infer_b128": mlp_infer,
        "conv_block": conv_block,
        "rnn_loop": rnn_loop,
        "tree_rnn": tree_rnn,
        "grad_tanh_sum": grad_w,
        "hvp_tanh_sum": hvp,
        "matmul_1024": matmul_1024,
    }


# -- numpy, JAX and PyTorch versions --------------------------------------------------------------


def numpy_programs() -> dict[str, Callable[..., Any]]:
    def sig(x: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-x))

    def mlp_fwd(w1, b1, w2, b2, w3, b3, x):  # type: ignore[no-untyped-def]
        h = np.maximum(x @ w1.T + b1, 0)
        h = np.maximum(h @ w2.T + b2, 0)
        return h @ w3.T + b3

    def train(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
        h1 = np.maximum(x @ w1.T + b1, 0)
        h2 = np.maximum(h1 @ w2.T + b2, 0)
        z = h2 @ w3.T + b3
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = -((z - np.log(s)) * y).sum() / 128
        d3 = (e / s - y) / 128
        d2 = (d3 @ w3) * (h2 > 0)
        d1 = (d2 @ w2) * (h1 > 0)
        return (
            w1 - 0.01 * (d1.T @ x),
            b1 - 0.01 * d1.sum(0),
            w2 - 0.01 * (d2.T @ h1),
            b2 - 0.01 * d2.sum(0),
            w3 - 0.01 * (d3.T @ h2),
            b3 - 0.01 * d3.sum(0),
            loss,
        )

    def rnn(xs, w, u, b):  # type: ignore[no-untyped-def]
        h = np.zeros(256, np.float32)
        for t in range(64):
            h = np.tanh(w @ xs[t] + u @ h + b)
        return h

    def grad_w(w, x):  # type: ignore[no-untyped-def]
        t = np.tanh(w @ x)
        return np.outer(1 - t * t, x)

    def hvp(w, x, v):  # type: ignore[no-untyped-def]
        t = np.tanh(w @ x)
        return np.outer(-2 * t * (1 - t * t) * (v @ x), x)

    def conv(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
        def c(a: np.ndarray, w: np.ndarray) -> np.ndarray:
            ap = np.pad(a[0], ((0, 0), (1, 1), (1, 1)))
            cols = np.lib.stride_tricks.sliding_window_view(ap, (3, 3), axis=(1, 2))
            cols = cols.transpose(0, 3, 4, 1, 2).reshape(64 * 9, 56 * 56)
            return (w.reshape(64, -1) @ cols).reshape(1, 64, 56, 56)

        h = np.maximum(c(x, w1) + b1[:, None, None], 0)
        return np.maximum(c(h, w2) + b2[:, None, None] + x, 0)

    return {
        "ew_chain": lambda x, y: np.tanh(x * y + 1) * sig(x) - np.exp(-y * y),
        "small_dispatch": lambda x: ((x * 2 + 1) * 3 - 4) / 5,
        "mlp_train_step": train,
        "mlp_infer_b1": mlp_fwd,
        "mlp_infer_b128": mlp_fwd,
        "conv_block": conv,
        "rnn_loop": rnn,
        "tree_rnn": tree_with(np.tanh),
        "grad_tanh_sum": grad_w,
        "hvp_tanh_sum": hvp,
        "matmul_1024": lambda a, b: a @ b,
    }


def jax_programs() -> dict[str, Callable[..., Any]]:
    import jax
    import jax.numpy as jnp

    def mlp_fwd(w1, b1, w2, b2, w3, b3, x):  # type: ignore[no-untyped-def]
        h = jax.nn.relu(x @ w1.T + b1)
        h = jax.nn.relu(h @ w2.T + b2)
        return h @ w3.T + b3

    def loss(params, x, y):  # type: ignore[no-untyped-def]
        return -jnp.sum(jax.nn.log_softmax(mlp_fwd(*params, x)) * y) / 128

    @jax.jit
    def train(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
        params = (w1, b1, w2, b2, w3, b3)
        value, g = jax.value_and_grad(loss)(params, x, y)
        return (*[p - 0.01 * gp for p, gp in zip(params, g, strict=True)], value)

    def conv(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
        def c(a, w):  # type: ignore[no-untyped-def]
            return jax.lax.conv_general_dilated(a, w, (1, 1), ((1, 1), (1, 1)))

        h = jax.nn.relu(c(x, w1) + b1[:, None, None])
        return jax.nn.relu(c(h, w2) + b2[:, None, None] + x)

    def rnn(xs, w, u, b):  # type: ignore[no-untyped-def]
        def step(h, x):  # type: ignore[no-untyped-def]
            h = jnp.tanh(w @ x + u @ h + b)
            return h, None

        return jax.lax.scan(step, jnp.zeros(256, jnp.float32), xs)[0]

    def tanh_sum(w, x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.tanh(w @ x))

    grad_w = jax.grad(tanh_sum)

    def hvp(w, x, v):  # type: ignore[no-untyped-def]
        return jax.jvp(lambda w_: grad_w(w_, x), (w,), (v,))[1]

    progs = {
        "ew_chain": lambda x, y: jnp.tanh(x * y + 1) * jax.nn.sigmoid(x) - jnp.exp(-y * y),
        "small_dispatch": lambda x: ((x * 2 + 1) * 3 - 4) / 5,
        "mlp_infer_b1": mlp_fwd,
        "mlp_infer_b128": mlp_fwd,
        "conv_block": conv,
        "rnn_loop": rnn,
        "tree_rnn": tree_with(jnp.tanh),
        "grad_tanh_sum": grad_w,
        "hvp_tanh_sum": hvp,
        "matmul_1024": lambda a, b: a @ b,
    }
    jitted = {k: jax.jit(v) for k, v in progs.items()}
    jitted["mlp_train_step"] = train

    def to_numpy(f: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            out = f(*args)
            return jax.tree_util.tree_map(np.asarray, out)

        return run

    return {k: to_numpy(v) for k, v in jitted.items()}


def jax_inputs(args: Inputs) -> Inputs:
    import jax

    return tuple(jax.device_put(a) for a in args)


def torch_programs(raw: bool = False) -> dict[str, Callable[..., Any]]:
    """The PyTorch versions, taking and returning numpy arrays (``raw``: the functions
    themselves, on tensors)."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(len(os.sched_getaffinity(0)))

    def mlp_fwd(w1, b1, w2, b2, w3, b3, x):  # type: ignore[no-untyped-def]
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        return F.linear(h, w3, b3)

    def train(w1, b1, w2, b2, w3, b3, x, y):  # type: ignore[no-untyped-def]
        params = [p.detach().requires_grad_() for p in (w1, b1, w2, b2, w3, b3)]
        loss = -(F.log_softmax(mlp_fwd(*params, x), 1) * y).sum() / 128
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            return (*[p - 0.01 * g for p, g in zip(params, grads, strict=True)], loss.detach())

    def conv(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
        h = F.relu(F.conv2d(x, w1, b1, padding=1))
        return F.relu(F.conv2d(h, w2, b2, padding=1) + x)

    def rnn(xs, w, u, b):  # type: ignore[no-untyped-def]
        h = torch.zeros(256)
        for t in range(64):
            h = torch.tanh(w @ xs[t] + u @ h + b)
        return h

    def tanh_sum(w, x):  # type: ignore[no-untyped-def]
        return torch.tanh(w @ x).sum()

    def grad_w(w, x):  # type: ignore[no-untyped-def]
        w = w.detach().requires_grad_()
        return torch.autograd.grad(tanh_sum(w, x), w)[0]

    def hvp(w, x, v):  # type: ignore[no-untyped-def]
        return torch.autograd.functional.hvp(lambda w_: tanh_sum(w_, x), w, v)[1]

    progs: dict[str, Callable[..., Any]] = {
        "ew_chain": lambda x, y: torch.tanh(x * y + 1) * torch.sigmoid(x) - torch.exp(-y * y),
        "small_dispatch": lambda x: ((x * 2 + 1) * 3 - 4) / 5,
        "mlp_train_step": train,
        "mlp_infer_b1": mlp_fwd,
        "mlp_infer_b128": mlp_fwd,
        "conv_block": conv,
        "rnn_loop": rnn,
        "tree_rnn": tree_with(torch.tanh),
        "grad_tanh_sum": grad_w,
        "hvp_tanh_sum": hvp,
        "matmul_1024": lambda a, b: a @ b,
    }

    if raw:
        return progs

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            with torch.inference_mode(f is not train and f is not grad_w and f is not hvp):
                out = f(*[torch.from_numpy(a) for a in args])
            if isinstance(out, tuple):
                return tuple(o.detach().numpy() for o in out)
            return out.detach().numpy()

        return run

    return {k: wrap(v) for k, v in progs.items()}


@dataclass(frozen=True)
class Workload:
    """A reference workload: inputs, a float64 reference, tolerances, work done."""

    name: str
    inputs: Callable[[], Inputs]
    reference: Callable[..., Any]
    rtol: float = 1e-4
    atol: float = 1e-4
    flops: float = 0.0


WORKLOADS = [
    Workload("ew_chain", ew_inputs, ew_ref, 1e-5, 1e-5),
    Workload("small_dispatch", small_inputs, small_ref, 1e-6, 1e-6),
    Workload(
        "mlp_train_step",
        mlp_train_inputs,
        mlp_train_ref,
        1e-3,
        1e-4,
        3 * 2 * 128 * (784 * 1024 + 1024 * 1024 + 1024 * 10),
    ),
    Workload("mlp_infer_b1", mlp_infer_inputs(1), mlp_infer_ref, 1e-4, 1e-4),
    Workload(
        "mlp_infer_b128",
        mlp_infer_inputs(128),
        mlp_infer_ref,
        1e-4,
        1e-4,
        2 * 128 * (784 * 1024 + 1024 * 1024 + 1024 * 10),
    ),
    Workload("conv_block", conv_inputs, conv_ref, 1e-4, 1e-4, 2 * 2 * 64 * 64 * 9 * 56 * 56),
    Workload("rnn_loop", rnn_inputs, rnn_ref, 1e-4, 1e-4),
    Workload("tree_rnn", tree_inputs, tree_ref, 1e-4, 1e-4),
    Workload("grad_tanh_sum", gts_inputs, gts_grad_ref, 1e-4, 1e-5),
    Workload("hvp_tanh_sum", hvp_inputs, gts_hvp_ref, 1e-3, 1e-4),
    Workload("matmul_1024", mm_inputs, mm_ref, 1e-4, 2e-3, 2 * 1024**3),
]


# -- one (workload, framework) in this process ---------------------------------------------------


def _check(name: str, got: Any, want: Any, w: Workload) -> None:
    got_l = list(got) if isinstance(got, tuple) else [got]
    want_l = list(want) if isinstance(want, tuple) else [want]
    assert len(got_l) == len(want_l), f"{name}: {len(got_l)} results, expected {len(want_l)}"
    for g, e in zip(got_l, want_l, strict=True):
        np.testing.assert_allclose(
            np.asarray(g, np.float64), e, rtol=w.rtol, atol=w.atol, err_msg=name
        )


WARMUP = 3
"""Untimed calls after the first, before the timed ones."""
MIN_SECONDS = 1.0
"""The timed calls go on for at least this long (up to :data:`MAX_RUNS` calls): a median of
30 calls of a workload of 0.2 ms moved by 5% from one process to the next."""
MAX_RUNS = 10_000


def measure(workload: str, framework: str, runs: int) -> dict[str, Any]:
    """Time one workload on one framework in this process (see the module docstring)."""
    w = next(x for x in WORKLOADS if x.name == workload)
    t0 = time.perf_counter()
    if framework == "relay":
        from relay.backend.runtime import tvm

        tvm()  # like importing jax or torch: part of the setup, not of the first call
        progs = relay_programs()
    elif framework == "numpy":
        progs = numpy_programs()
    elif framework == "jax":
        progs = jax_programs()
    else:
        progs = torch_programs()
    setup = time.perf_counter() - t0
    if workload not in progs:
        return {"skipped": True}
    f = progs[workload]
    args = w.inputs()
    if framework == "jax":
        args = jax_inputs(args)
    t0 = time.perf_counter()
    out = f(*args)
    first = time.perf_counter() - t0
    _check(f"{framework} {workload}", out, w.reference(*w.inputs()), w)
    if framework == "relay":
        # the cold first call's disk-cache write (a second code generation and a link, on a
        # background thread) ends before the timed runs, which measure the steady state
        from relay.backend.cache import kernel_cache

        kernel_cache().flush()
    for _ in range(WARMUP):
        f(*args)
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t0)
        spent = time.perf_counter() - start
        if spent > 20.0 and len(times) >= 5:
            break
        if len(times) >= runs and (spent >= MIN_SECONDS or len(times) >= MAX_RUNS):
            break
    if workload == "small_dispatch":  # per-call latency: many calls per sample
        reps = 2000
        samples = []
        for _ in range(15):
            t0 = time.perf_counter()
            for _ in range(reps):
                f(*args)
            samples.append((time.perf_counter() - t0) / reps)
        times = samples
    result: dict[str, Any] = {
        "median_ms": statistics.median(times) * 1e3,
        "first_ms": first * 1e3,
        "setup_ms": setup * 1e3,
        "peak_mb": _peak_mb(),
        "runs": len(times),
    }
    if framework == "relay" and workload == "ew_chain":
        result.update(_copy_floor(args, f))
    if framework == "relay":
        import relay

        f = getattr(f, "relay_function", f)
        if hasattr(f, "_compiled_for") or isinstance(f, relay.frontend.autodiff.Derivative):
            if hasattr(f, "_compiled_for"):
                compiled = f._compiled_for(args).runtime.get("executable")
            else:  # a relay.grad / relay.jvp: built again, from the caches
                compiled = relay.build(f)
            result["kind"] = compiled.kind if compiled else "interpreter"
            if compiled and compiled.kind in ("graph", "vm"):
                result["kernels"] = len(compiled.kernels)
            if compiled and compiled.kind == "vm":
                repeat = max(5, len(times) // 2)
                loops = [g.name for g in compiled.vm.program.functions if g.native is not None]
                result["vm_native_loops"] = len(loops)
                if loops:  # the VM's own cost, on the same program with its loops stepped
                    with relay.flags.override(native_loops=False):
                        compiled = relay.build(f)
                prof = compiled.vm.profile(list(args), repeat=repeat)
                result["vm_stepped_ms"] = prof.run_ms
                result["vm_instructions"] = prof.instructions
                result["vm_us_per_instruction"] = prof.per_instruction_us
    return result


def _compile_bytecode() -> None:
    """Byte-compile relay's modules, as pip does when it installs a package (the peers'
    wheels were): in a checkout installed in editable mode, with ``PYTHONDONTWRITEBYTECODE``
    set (these machines set it) or after an edit, each process would compile from source
    the modules a first call imports, ~35 ms of a warm first call (2026-11-29: 66-69 ms
    against 30-33 for small_dispatch)."""
    import compileall

    import relay

    compileall.compile_dir(str(Path(relay.__file__).parent), quiet=1)


def _copy_floor(args: Inputs, f: Callable[..., Any]) -> dict[str, float]:
    """ew_chain against a compiled kernel moving the same bytes (read x and y, write one
    array: ``x + y``), the memory-bandwidth floor it is measured against: blocks of calls of
    each, alternated, so that both see the machine in the same state (measured one after
    the other, the floor once came out slower than ew_chain itself). The medians
    (``copy_ms``, ``interleaved_ms``) and their ratio (``copy_ratio``)."""
    from relay.backend.compiler import compile_functions
    from relay.backend.runtime import aligned_empty
    from relay.backend.target import Target
    from relay.testing.lowering import primitive_op_function

    x, y = args
    lib, (sym,) = compile_functions([primitive_op_function("add", (x, y), {})], Target())
    kernel = lib[sym].func
    out = aligned_empty(x.shape, x.dtype)
    kernel(x, y, out)
    copy: list[float] = []
    ew: list[float] = []
    for _ in range(10):
        for run, times in ((lambda: kernel(x, y, out), copy), (lambda: f(*args), ew)):
            for _ in range(20):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
    copy_ms, ew_ms = statistics.median(copy) * 1e3, statistics.median(ew) * 1e3
    return {"copy_ms": copy_ms, "interleaved_ms": ew_ms, "copy_ratio": ew_ms / copy_ms}


def _peak_mb() -> float:
    """The process's peak resident memory (VmHWM), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(workload: str, framework: str, runs: int, cache_dir: str | None) -> dict[str, Any]:
    env = dict(os.environ)
    if cache_dir is not None:
        env["RELAY_CACHE_DIR"] = cache_dir
    cmd = [sys.executable, __file__, "--child", workload, framework, "--runs", str(runs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return {"error": " / ".join(x.strip() for x in lines[-3:])}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def available() -> list[str]:
    found = ["relay", "numpy"]
    for name in ("jax", "torch"):
        try:
            __import__(name)
            found.append(name)
        except ImportError:
            pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workloads", nargs="*", help="names (default: all)")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument(
        "--first-samples",
        type=int,
        default=3,
        help="processes whose first call is timed, the median reported (default 3)",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], args.runs)))
        return
    names = args.workloads or [w.name for w in WORKLOADS]
    frameworks = [f for f in args.frameworks.split(",") if f in available()]
    if "relay" in frameworks:
        _compile_bytecode()
    results: dict[str, dict[str, Any]] = {}
    extra = max(0, args.first_samples - 1)
    for name in names:
        results[name] = {}
        for fw in frameworks:
            if fw == "relay":
                with tempfile.TemporaryDirectory() as cache:
                    cold = child(name, fw, args.runs, cache)
                    warm = [child(name, fw, 1, cache) for _ in range(extra + 1)]
                colds = []
                for _ in range(extra):  # each in an empty cache of its own
                    with tempfile.TemporaryDirectory() as fresh:
                        colds.append(child(name, fw, 1, fresh))
                if "error" not in cold:
                    _first_median(cold, colds)
                    cold["first_warm_ms_samples"] = [w.get("first_ms") for w in warm]
                    cold["first_warm_ms"] = _median_of(cold["first_warm_ms_samples"])
                results[name][fw] = cold
            else:
                results[name][fw] = child(name, fw, args.runs, None)
                if "error" not in results[name][fw]:
                    more = [child(name, fw, 1, None) for _ in range(extra)]
                    _first_median(results[name][fw], more)
            print(f"{name:16s} {fw:6s} {_short(results[name][fw])}", flush=True)
    write_results(results, frameworks)


def _median_of(values: list[Any]) -> float | None:
    found = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(found) if found else None


def _first_median(result: dict[str, Any], others: list[dict[str, Any]]) -> None:
    """``result``'s first call as the median over its process and ``others`` (a first
    call is one sample per process, and these machines are shared), the samples kept."""
    if result.get("skipped"):
        return
    samples = [result.get("first_ms"), *(o.get("first_ms") for o in others)]
    result["first_ms_samples"] = samples
    result["first_ms"] = _median_of(samples)


def _short(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"ERROR {r['error']}"
    if r.get("skipped"):
        return "-"
    extra = f" warm first {r['first_warm_ms']:.0f} ms" if "first_warm_ms" in r else ""
    floor = ""
    if "copy_ratio" in r:
        floor = (
            f"; {r['copy_ratio']:.2f}x the copy floor: {r['interleaved_ms']:.3f} against "
            f"{r['copy_ms']:.3f} ms, alternated"
        )
    return (
        f"{r['median_ms']:.4f} ms (first {r['first_ms']:.0f} ms{extra}, "
        f"peak {r['peak_mb']:.0f} MB{floor})"
    )


def write_results(results: dict[str, dict[str, Any]], frameworks: list[str]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "workloads.json").write_text(json.dumps(results, indent=1))
    peers = [f for f in frameworks if f != "relay"]
    head = "| workload | relay ms | " + " | ".join(f"{p} ms | relay vs {p}" for p in peers)
    head += " | relay first call cold / warm (ms) | relay peak MB | runs on |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, by in results.items():
        r = by.get("relay", {})
        ok = "median_ms" in r
        row = [name, f"{r['median_ms']:.4g}" if ok else str(r.get("error", "-"))]
        for p in peers:
            q = by.get(p, {})
            if "median_ms" in q:
                row.append(f"{q['median_ms']:.4g}")
                row.append(f"{q['median_ms'] / r['median_ms']:.2f}x" if ok else "-")
            else:
                row += ["-", "-"]
        if ok:
            row.append(f"{r['first_ms']:.0f} / {r.get('first_warm_ms') or 0:.0f}")
            row.append(f"{r['peak_mb']:.0f}")
            kind = r.get("kind", "?")
            if r.get("vm_native_loops"):
                kind += (
                    f" ({r['kernels']} kernels, the loop compiled into one of them; its "
                    f"{r['vm_instructions']} instructions run one by one take "
                    f"{r['vm_stepped_ms']:.3g} ms, {r['vm_us_per_instruction']:.2f} us each)"
                )
            elif "vm_us_per_instruction" in r:
                kind += (
                    f" ({r['kernels']} kernels; {r['vm_instructions']} instructions, "
                    f"{r['vm_us_per_instruction']:.2f} us each)"
                )
            elif "kernels" in r:
                kind += f" ({r['kernels']} kernels)"
            row.append(kind)
        else:
            row += ["-", "-", "-"]
        lines.append("| " + " | ".join(row) + " |")
    table = "\n".join(lines)
    floors = [
        f"- {name}: {by['relay']['copy_ratio']:.2f}x the copy floor "
        f"({by['relay']['interleaved_ms']:.3f} ms against {by['relay']['copy_ms']:.3f}, "
        "in alternated blocks of calls)"
        for name, by in results.items()
        if "copy_ratio" in by.get("relay", {})
    ]
    (RESULTS / "workloads.md").write_text(
        "# Reference workloads\n\nMedian ms per call; `relay vs X` is X's time over relay's "
        "(above 1: relay is faster). Written by `benchmarks/workloads.py`.\n\n"
        + table
        + "\n"
        + ("\n" + "\n".join(floors) + "\n" if floors else "")
    )
    print(table)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = [n for n in results if "median_ms" in results[n].get("relay", {})]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / max(1, len(peers))
    for i, p in enumerate(peers):
        ratios = [
            results[n][p]["median_ms"] / results[n]["relay"]["median_ms"]
            if "median_ms" in results[n].get(p, {})
            else 0
            for n in names
        ]
        ax.bar(np.arange(len(names)) + i * width, ratios, width, label=f"{p} time / relay time")
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "workloads.png", dpi=100)


if __name__ == "__main__":
    main()
