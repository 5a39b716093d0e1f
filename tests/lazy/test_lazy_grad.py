"""``relay.lazy.grad`` / ``value_and_grad``: numpy-style functions differentiated by relay's AD
pass, checked against central differences in float64."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relay.lazy as lz

pytestmark = pytest.mark.tvm


def numeric_grad(f: Callable[..., Any], args: list[np.ndarray], i: int) -> np.ndarray:
    """d f / d args[i] by central differences (float64)."""
    eps = 1e-6
    out = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        step = np.zeros_like(args[i])
        step[idx] = eps
        hi = [a + step if k == i else a for k, a in enumerate(args)]
        lo = [a - step if k == i else a for k, a in enumerate(args)]
        out[idx] = (f(*hi) - f(*lo)) / (2 * eps)
    return out


def mse(w: Any, b: Any, x: Any, y: Any) -> Any:
    h = np.tanh(x @ w + b)
    return np.mean((h - y) ** 2)


def softmax_xent(w: Any, x: Any, labels: Any) -> Any:
    logits = np.maximum(x @ w, 0.0) * 1.5
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -np.sum(logp * labels) / x.shape[0]


RNG = np.random.default_rng(0)
W, B = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
XS, YS = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 3))
LABELS = np.eye(3)[RNG.integers(0, 3, 5)]


@pytest.mark.parametrize("argnum", [0, 1, 2])
def test_gradients_match_central_differences(argnum: int) -> None:
    args = [W, B, XS, YS]
    value, g = lz.value_and_grad(mse, argnums=argnum)(*args)
    assert isinstance(g, lz.Tensor) and g.shape == args[argnum].shape
    np.testing.assert_allclose(float(value), mse(*args), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), numeric_grad(mse, args, argnum), rtol=1e-6, atol=1e-8)


def test_several_argnums_give_a_tuple_and_reductions_with_keepdims_differentiate() -> None:
    gw, gx = lz.grad(softmax_xent, argnums=(0, 1))(W, XS, LABELS)
    args = [W, XS, LABELS]
    np.testing.assert_allclose(gw.numpy(), numeric_grad(softmax_xent, args, 0), atol=1e-7)
    np.testing.assert_allclose(gx.numpy(), numeric_grad(softmax_xent, args, 1), atol=1e-7)


def test_a_second_call_with_the_same_types_reuses_the_compiled_gradient() -> None:
    f = lz.grad(mse)
    for k in range(3):
        np.testing.assert_allclose(
            f(W * (k + 1), B, XS, YS).numpy(),
            numeric_grad(mse, [W * (k + 1), B, XS, YS], 0),
            rtol=1e-6,
            atol=1e-8,
        )
    assert lz.metrics().traces_compiled <= 1 and lz.metrics().cache_hits >= 2


def test_an_argument_the_result_does_not_read_has_a_zero_gradient() -> None:
    g = lz.grad(lambda w, unused: np.sum(w * w), argnums=1)(W, np.ones(3))
    np.testing.assert_array_equal(g.numpy(), np.zeros(3))


def test_a_value_read_inside_the_function_is_an_error_at_its_line() -> None:
    def f(w: Any) -> Any:
        h = w * 2.0
        if float(h.sum()) > 0:  # a barrier: the gradient would stop here
            return np.sum(h)
        return np.sum(-h)

    with pytest.raises(lz.LazyError, match=r"float\(\) needs a value while a function is being"):
        lz.grad(f)(W)


def test_a_fallback_inside_the_function_is_an_error() -> None:
    with pytest.raises(lz.LazyError, match="cumsum has no relay operator"):
        lz.grad(lambda w: np.sum(np.cumsum(w)))(W)


def test_the_result_must_be_a_floating_point_scalar() -> None:
    with pytest.raises(
        lz.LazyError, match=r"must return a floating-point scalar, got Tensor\[\(4, 3\)"
    ):
        lz.grad(lambda w: w * 2.0)(W)
    with pytest.raises(lz.LazyError, match="argument 0 must be floating point, got int64"):
        lz.grad(lambda w: np.sum(w))(np.arange(3))
