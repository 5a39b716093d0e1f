"""A small convolutional network for scikit-learn's digits, trained with ``relay.grad``.

The end-to-end workload of the VTA target (docs/vta.md): 8x8 grey images of handwritten
digits (the UCI dataset that scikit-learn ships, 1797 images), classified by

    conv 1 -> 16, 3x3, pad 1, ReLU       (1 input channel: stays on the CPU)
    conv 16 -> 32, 3x3, pad 1, ReLU      (VTA)
    max pool 2x2                         (CPU)
    conv 32 -> 32, 3x3, pad 1, ReLU      (VTA)
    flatten, dense 512 -> 64, ReLU       (VTA)
    dense 64 -> 10                       (VTA; 10 outputs padded to 16 channels)

trained in float32 with SGD and momentum on a fixed split (the first 1437 images in a
seeded shuffle for training, the rest for testing). Everything is deterministic given the
seed: the initial weights, the shuffle and the batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import relay

Array = np.ndarray[Any, Any]

PARAMS = ("w1", "b1", "w2", "b2", "w3", "b3", "w4", "b4", "w5", "b5")
SHAPES = {
    "w1": (16, 1, 3, 3),
    "b1": (16,),
    "w2": (32, 16, 3, 3),
    "b2": (32,),
    "w3": (32, 32, 3, 3),
    "b3": (32,),
    "w4": (64, 512),
    "b4": (64,),
    "w5": (10, 64),
    "b5": (10,),
}
BATCH = 32


@dataclass(frozen=True)
class Digits:
    """The split dataset: images ``(N, 1, 8, 8)`` float32 in [0, 1], labels int64."""

    train_x: Array
    train_y: Array
    test_x: Array
    test_y: Array


def load(seed: int = 0, train: int = 1437) -> Digits:
    """scikit-learn's digits, shuffled with ``seed`` and split after ``train`` images."""
    from sklearn.datasets import load_digits  # type: ignore[import-untyped]

    d = load_digits()
    x = (d.data.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    return Digits(x[:train], y[:train], x[train:], y[train:])


def forward(w1, b1, w2, b2, w3, b3, w4, b4, w5, b5, x):  # type: ignore[no-untyped-def]
    """The network's logits (a Python function for ``@relay``; see the module docstring)."""
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b1))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(h, w2, padding=(1, 1)), b2))
    h = relay.nn.max_pool2d(h, pool_size=(2, 2), strides=(2, 2))
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(h, w3, padding=(1, 1)), b3))
    h = relay.nn.relu(relay.nn.dense(relay.nn.batch_flatten(h), w4) + b4)
    return relay.nn.dense(h, w5) + b5


def init(seed: int = 0) -> dict[str, Array]:
    """He-initialized weights, zero biases."""
    rng = np.random.default_rng(seed)
    params = {}
    for name in PARAMS:
        shape = SHAPES[name]
        if name.startswith("b"):
            params[name] = np.zeros(shape, np.float32)
        else:
            fan_in = int(np.prod(shape[1:]))
            params[name] = (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    return params


def train(data: Digits, epochs: int = 6, lr: float = 0.05, seed: int = 0) -> dict[str, Array]:
    """The network trained with SGD (momentum 0.9, batches of 32) by a compiled
    ``relay.grad`` step; the parameters by name."""
    net = relay.function(forward)

    @relay.function
    def loss(w1, b1, w2, b2, w3, b3, w4, b4, w5, b5, x, y):  # type: ignore[no-untyped-def]
        logits = net(w1, b1, w2, b2, w3, b3, w4, b4, w5, b5, x)
        return -np.sum(relay.nn.log_softmax(logits) * y) / float(BATCH)

    step = relay.grad(loss, argnums=tuple(range(len(PARAMS))))
    params = init(seed)
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    rng = np.random.default_rng(seed + 1)
    n = len(data.train_y) // BATCH * BATCH
    eye = np.eye(10, dtype=np.float32)
    for _ in range(epochs):
        order = rng.permutation(len(data.train_y))[:n]
        for i in range(0, n, BATCH):
            idx = order[i : i + BATCH]
            _, grads = step(*(params[k] for k in PARAMS), data.train_x[idx], eye[data.train_y[idx]])
            for k, g in zip(PARAMS, grads, strict=True):
                velocity[k] = 0.9 * velocity[k] - lr * np.asarray(g)
                params[k] = params[k] + velocity[k]
    return params


def accuracy(logits: Array, labels: Array) -> float:
    """The fraction of rows whose largest logit is the label."""
    return float(np.mean(np.argmax(np.asarray(logits), axis=1) == labels))
