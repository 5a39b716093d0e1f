"""Decorated functions agree with the same functions run as plain Python/numpy.

Each program below is an ordinary Python function; ``relay.function`` compiles it and the
test runs both on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import relay

W = np.arange(12, dtype=np.float64).reshape(3, 4) / 10.0


def arith(x, y):
    return (x + y) * 2 - x / 4 + y**2


def chained(x, a, b):
    return np.where(a < x, x, 0.0) + (a < b < 3)


def numpy_calls(x):
    h = np.tanh(x @ W) + np.exp(-x).sum(axis=1, keepdims=True)
    return np.maximum(h, 0.5).mean(axis=0), x.T.reshape(-1), x.astype(np.int32)


def branches(x, n):
    if n > 2:
        y = x * 2
        z = 1.0
    elif n == 2:
        y = x + 1
        z = 2.0
    else:
        y = -x
        z = 3.0
    return y * z


def early_return(x, n):
    if n < 0:
        return x
    y = x + n
    if n == 0:
        return y * 10
    return y


def while_loop(x, n):
    i = 0
    acc = x
    while i < n:
        acc = acc * 0.5 + 1
        i += 1
    return acc, i


def for_break_continue(x, n):
    total = 0
    for i in range(n):
        if i == 7:
            break
        if i % 3 == 0:
            continue
        total = total + x * i
    return total


def loop_with_return(x, n):
    for i in range(1, n):
        x = x * 2
        if x.sum() > 100:
            return x, i
    return x, -1


def nested_loops(n):
    s = 0
    for i in range(n):
        j = 0
        while j < i:
            s = s + i * j
            j += 1
    return s


def closures(x):
    scale = 3.0

    def f(v):
        return v * scale

    g = lambda v: f(v) + 1  # noqa: E731
    return g(x) + f(x)


def counter(n):
    count = 0

    def bump(k):
        nonlocal count
        count = count + k
        return count

    for i in range(n):
        bump(i)
    return count


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def indexing(x):
    return x[0], x[1:3, :], x[:, -1], x[::-1, 1], x[-1]


def tuples(x):
    a, b = x, x * 2
    t = (a, b, 3)
    (p, q), r = (t[0], t[1]), t[2]
    return p + q * r


def ternary(x, n):
    return x if n > 0 else -x


def bool_ops(a, b):
    return (a > 0 and b > 0) or not a < b


def aug(x):
    x += 1
    x *= 2
    x -= 3
    x /= 4
    return x


CASES = [
    (arith, (np.float32([1.5, 2.0]), np.float32([3.0, -1.0]))),
    (chained, (np.float32(2.0), np.float32(1.0), np.float32(2.5))),
    (numpy_calls, (np.arange(6, dtype=np.float32).reshape(2, 3) / 5,)),
    (branches, (np.float32([1.0, 2.0]), 3)),
    (branches, (np.float32([1.0, 2.0]), 2)),
    (branches, (np.float32([1.0, 2.0]), 0)),
    (early_return, (np.float32([1.0]), -1)),
    (early_return, (np.float32([1.0]), 0)),
    (early_return, (np.float32([1.0]), 5)),
    (while_loop, (np.float32([4.0, 8.0]), 5)),
    (for_break_continue, (np.float32([1.0, 2.0]), 5)),
    (for_break_continue, (np.float32([1.0, 2.0]), 20)),
    (loop_with_return, (np.float32([1.0, 2.0]), 10)),
    (loop_with_return, (np.float32([1.0, 2.0]), 3)),
    (nested_loops, (6,)),
    (closures, (np.float32([1.0, 2.0]),)),
    (counter, (5,)),
    (fact, (5,)),
    (indexing, (np.arange(20, dtype=np.float32).reshape(4, 5),)),
    (tuples, (np.float32([1.0, 2.0]),)),
    (ternary, (np.float32([1.0]), 1)),
    (ternary, (np.float32([1.0]), -1)),
    (bool_ops, (np.float32(1.0), np.float32(2.0))),
    (bool_ops, (np.float32(-1.0), np.float32(-2.0))),
    (aug, (np.float32([1.0, 2.0]),)),
]


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
        return
    np.testing.assert_allclose(
        np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-5
    )


DECORATED = {}


def decorated(fn):
    if fn not in DECORATED:
        DECORATED[fn] = relay.function(fn)
    return DECORATED[fn]


@pytest.mark.parametrize(("fn", "args"), CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_agrees_with_python(fn, args):
    _same(decorated(fn)(*args), fn(*args))
