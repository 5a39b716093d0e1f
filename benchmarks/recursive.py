"""tree_rnn written with @relay: a recursive network over a complete binary tree whose
leaves are the rows of ``xs`` (the numpy, JAX and PyTorch versions are ``tree_with`` in
workloads.py). In a module of its own because the recursive function needs annotations,
and the annotations need relay's names at module level; workloads.py imports relay only in
the processes that run it."""

from __future__ import annotations

import numpy as np

import relay
from relay import Tensor, float32

LEAVES = 32
HIDDEN = 128


@relay
def tree_node(
    xs: Tensor[float32, (LEAVES, HIDDEN)],
    w: Tensor[float32, (HIDDEN, HIDDEN)],
    u: Tensor[float32, (HIDDEN, HIDDEN)],
    b: Tensor[float32, (HIDDEN,)],
    lo: int,
    hi: int,
) -> Tensor[float32, (HIDDEN,)]:
    """The state of the subtree over leaves ``lo`` to ``hi``."""
    if hi - lo == 1:
        return np.tanh(w @ xs[lo] + b)
    mid = (lo + hi) // 2
    return np.tanh(u @ (tree_node(xs, w, u, b, lo, mid) + tree_node(xs, w, u, b, mid, hi)) + b)


@relay
def tree_rnn(xs, w, u, b):  # type: ignore[no-untyped-def]
    """The state at the root."""
    return tree_node(xs, w, u, b, 0, LEAVES)
