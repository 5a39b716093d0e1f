"""numpy functions, tensor methods, attributes and indexing inside @relay functions agree
with numpy on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import relay

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)
P = np.abs(X) + 0.5
I = np.arange(12, dtype=np.int32).reshape(3, 4)  # noqa: E741


def unary(x, p):
    return (
        np.exp(x),
        np.log(p),
        np.log2(p),
        np.log10(p),
        np.sqrt(p),
        np.tanh(x),
        np.sin(x),
        np.cos(x),
        np.abs(x),
        np.absolute(x),
        np.sign(x),
        np.floor(x),
        np.ceil(x),
        np.trunc(x),
        np.negative(x),
        np.isnan(x),
        np.isfinite(x),
        np.copy(x),
    )


def binary(x, y):
    return (
        np.add(x, y),
        np.subtract(x, y),
        np.multiply(x, y),
        np.divide(x, y + 10),
        np.maximum(x, y),
        np.minimum(x, y),
        np.power(np.abs(x), 2),
        np.equal(x, y),
        np.less(x, y),
        np.greater_equal(x, y),
        np.logical_and(x > 0, y > 0),
        np.logical_or(x > 0, y > 0),
        np.logical_xor(x > 0, y > 0),
        np.logical_not(x > 0),
        np.floor_divide(x, 0.3),
        np.mod(x, 0.3),
        x % 0.7,
        x // 0.7,
    )


def reductions(x):
    return (
        np.sum(x),
        np.sum(x, axis=1),
        np.sum(x, axis=0, keepdims=True),
        np.mean(x, axis=1),
        np.max(x, axis=0),
        np.min(x),
        np.amax(x, axis=1),
        np.prod(x, axis=1),
        np.argmax(x, axis=1),
        np.argmin(x, axis=0),
        np.var(x, axis=1),
        np.std(x),
        x.sum(),
        x.sum(axis=1, keepdims=True),
        x.mean(0),
        x.max(axis=1),
        x.min(),
        x.argmax(axis=0),
        x.var(axis=0),
        x.std(axis=1, ddof=1),
    )


def shapes(x):
    return (
        np.reshape(x, (4, 3)),
        x.reshape(2, 6),
        x.reshape((-1,)),
        np.transpose(x),
        x.T,
        x.transpose(1, 0),
        np.expand_dims(x, 0),
        np.squeeze(np.expand_dims(x, 1), axis=1),
        np.concatenate([x, x], axis=0),
        np.stack((x, x), axis=1),
        np.tile(x, (2, 1)),
        np.repeat(x, 2, axis=1),
        np.flip(x, 1),
        np.broadcast_to(x[0], (2, 4)),
        x.flatten(),
        x.copy(),
        np.clip(x, -0.5, 0.5),
        x.clip(-0.1, 0.1),
        np.where(x > 0, x, 0.0),
    )


def creation(x):
    return (
        np.zeros((2, 3)),
        np.ones(4, dtype=np.int32),
        np.full((2,), 7.0),
        np.zeros_like(x),
        np.ones_like(x),
        np.full_like(x, 3.0),
        np.arange(5),
        np.arange(1.0, 2.0, 0.25),
    )


def casts(x, i):
    return (
        x.astype(np.int32),
        i.astype(np.float32),
        i / 4,
        i * 0.5,
        i + x,
        float(3) * x,
        np.float32(2.5) * x,
        i // 5,
        i % 5,
        -i,
        abs(x),
        max(x[0, 0], 0.1),
        min(i[0, 1], 3),
    )


def attributes(x):
    n, m = x.shape
    return x * n + m + x.ndim + x.size, len(x)


def matmuls(x, y):
    v = x[0]
    return x @ y.T, x.T @ y, v @ v, x @ v, v @ y.T, np.matmul(x, y.T), np.dot(x, y.T), x.dot(y.T)


def batched(a, b):
    return a @ b, a @ b[0]


def indexing(x):
    return (
        x[0],
        x[-1],
        x[1],
        x[:, 0],
        x[:, -1],
        x[1:3],
        x[1:3, :],
        x[:, 1:3],
        x[::-1],
        x[:, ::2],
        x[-2:, -2:],
        x[0, 1],
        x[-1, -1],
        x[..., 0],
        x[1:, ...],
        x[2::-1, ::-2],
    )


def dynamic_index(x, i):
    return x[i], x[:, i], x[i, i]


CASES = [
    (unary, (X, P)),
    (binary, (X, Y)),
    (reductions, (X,)),
    (shapes, (X,)),
    (creation, (X,)),
    (casts, (X, I)),
    (attributes, (X,)),
    (matmuls, (X, Y)),
    (
        batched,
        (
            RNG.standard_normal((2, 3, 4)).astype(np.float32),
            RNG.standard_normal((2, 4, 5)).astype(np.float32),
        ),
    ),
    (indexing, (X,)),
    (dynamic_index, (X, np.int32(2))),
    (dynamic_index, (X, np.int32(-1))),
]


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=2e-5, atol=1e-6
    )


@pytest.mark.parametrize(("fn", "args"), CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_agrees_with_numpy(fn, args):
    _same(relay.function(fn)(*args), fn(*args))
