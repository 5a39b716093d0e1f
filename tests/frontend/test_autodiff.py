"""relay.grad on @relay functions: every kind of Python the frontend understands, argnums,
nested differentiation inside @relay code, the numerical checker, and training a small
classifier on real data (Fashion-MNIST)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relay
from relay import Tensor, float32, float64
from relay.testing import check_grad

V = Tensor[float64, (3,)]
X = np.array([0.5, -1.25, 2.0])
Y = np.array([1.5, 0.75, -0.5])


@relay
def power(x: V, n: int) -> V:
    if n == 0:
        return x / x
    return x * power(x, n - 1)


@relay
def cube(x: V) -> V:
    return x * x * x


def test_recursion() -> None:
    value, (dx, dn) = relay.grad(power)(X, 4)
    np.testing.assert_allclose(value, X**4)
    np.testing.assert_allclose(dx, 4 * X**3)
    assert dn == 0


def test_while_loop_with_break() -> None:
    @relay
    def f(x: V, n: int) -> V:
        acc = x
        i = 0
        while True:
            if i >= n:
                break
            acc = np.sin(acc) * x
            i += 1
        return acc

    check_grad(f, X, 3)
    _, (dx, _) = relay.grad(f)(X, 1)
    np.testing.assert_allclose(dx, np.cos(X) * X + np.sin(X))


def test_for_loop_and_early_return() -> None:
    @relay
    def f(x: V, y: V) -> V:
        for _ in range(4):
            if np.sum(x) > 10.0:
                return x
            x = x * y + 1.0
        return x

    check_grad(f, X, Y)
    check_grad(f, 3 * np.abs(X) + 1, np.abs(Y) + 1)  # returns early


def test_data_dependent_branches() -> None:
    @relay
    def f(x: V) -> V:
        if np.sum(x) > 0.0:
            return x * x
        elif np.max(x) > 1.0:
            return np.exp(x)
        return -x

    for x in (X, -X, np.array([-3.0, -2.0, 1.5])):
        check_grad(f, x)


def test_closures_and_captured_mutation() -> None:
    @relay
    def f(x: V, y: V) -> V:
        total = x
        scale = lambda v: v * y  # noqa: E731

        def add(v: V) -> None:
            nonlocal total
            total = total + scale(v)

        add(x)
        add(np.tanh(x))
        return total

    _, (dx, dy) = relay.grad(f)(X, Y)
    np.testing.assert_allclose(dx, 1 + Y + Y * (1 - np.tanh(X) ** 2))
    np.testing.assert_allclose(dy, X + np.tanh(X))


def test_lists_and_calls_of_other_functions() -> None:
    @relay
    def total(xs: relay.List[V]) -> V:
        match xs:
            case relay.Cons(head, rest):
                return head + total(rest)
            case relay.Nil():
                return np.zeros(3, np.float64)

    @relay
    def f(x: V, y: V) -> V:
        return total(relay.Cons(x, relay.Cons(x * y, relay.Cons(cube(y), relay.Nil()))))

    _, (dx, dy) = relay.grad(f)(X, Y)
    np.testing.assert_allclose(dx, 1 + Y)
    np.testing.assert_allclose(dy, X + 3 * Y**2)


def test_argnums() -> None:
    @relay
    def f(x: V, y: V) -> V:
        return x * y * y

    _, dy = relay.grad(f, argnums=1)(X, Y)
    np.testing.assert_allclose(dy, 2 * X * Y)
    _, (dy2, dx2) = relay.grad(f, argnums=(1, 0))(X, Y)
    np.testing.assert_allclose(dy2, 2 * X * Y)
    np.testing.assert_allclose(dx2, Y * Y)
    with pytest.raises(
        relay.FrontendError, match=r"argnums 2 is out of range for f, which takes 2"
    ):
        relay.grad(f, argnums=2)


dcube = relay.grad(cube, argnums=0)


@relay
def second(x: V) -> V:
    _, g = dcube(x)
    return g


@relay
def sin_prime(x: V) -> V:
    return relay.grad(np_sin, argnums=0)(x)[1]


@relay
def np_sin(x: V) -> V:
    return np.sin(x)


def test_nested_grad_inside_relay_functions() -> None:
    np.testing.assert_allclose(second(X), 3 * X**2)
    _, (d2,) = relay.grad(second)(X)
    np.testing.assert_allclose(d2, 6 * X)
    np.testing.assert_allclose(sin_prime(X), np.cos(X))
    _, d3 = relay.grad(sin_prime, argnums=0)(X)
    np.testing.assert_allclose(d3, -np.sin(X))


def test_third_derivative_through_recursion() -> None:
    @relay
    def p4(x: V) -> V:
        return power(x, 4)

    @relay
    def d1(x: V) -> V:
        return relay.grad(p4, argnums=0)(x)[1]

    @relay
    def d2(x: V) -> V:
        return relay.grad(d1, argnums=0)(x)[1]

    _, d3 = relay.grad(d2, argnums=0)(X)
    np.testing.assert_allclose(d3, 24 * X)


def test_the_gradient_function_prints_and_is_typed() -> None:
    g = relay.grad(cube)
    text = str(g)
    assert text.startswith('#[version = "0.0.5"]\ndef @cube_grad(%x: Tensor[(3,), float64])')
    assert "ref(" not in text  # straight-line: the first-order mode
    ty = g.module[g.global_var].checked_type  # type: ignore[union-attr]
    assert str(ty) == (
        "fn (Tensor[(3,), float64]) -> (Tensor[(3,), float64], (Tensor[(3,), float64],))"
    )
    assert "ref(" in str(relay.grad(power))
    assert repr(g) == "<relay gradient of cube>"


def test_errors() -> None:
    @relay
    def ints(x: Tensor[relay.int32, (3,)]) -> Tensor[relay.int32, (3,)]:
        return x + x

    with pytest.raises(relay.CompileError, match=r"must return a floating-point tensor"):
        relay.grad(ints)(np.arange(3, dtype="int32"))

    with pytest.raises(relay.FrontendError, match=r"a local function or lambda cannot"):

        @relay
        def local(x: V) -> V:
            return relay.grad(lambda v: v * v)(x)[0]


def test_check_grad_catches_a_wrong_gradient() -> None:
    @relay
    def f(x: V) -> V:
        return np.sin(x)

    check_grad(f, X)
    from relay.op import registry

    sin = registry.get_op("sin")
    rule = sin.gradient
    sin.gradient = registry.get_op("cos").gradient  # d cos = -sin: wrong for sin
    try:
        with pytest.raises(AssertionError, match=r"gradient of f with respect to argument 0"):
            check_grad(f, X)
    finally:
        sin.gradient = rule


def test_check_grad_in_float32() -> None:
    @relay
    def f(x: Tensor[float32, (4,)], y: Tensor[float32, (4,)]) -> Tensor[float32, ()]:
        return np.sum(np.tanh(x * y) ** 2)

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(4).astype("float32"), rng.standard_normal(4).astype("float32")
    dx, _ = check_grad(f, x, y)
    assert dx.dtype == np.float32


DATA = Path(__file__).parent.parent / "data" / "fashion_mnist_subset.npz"


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


def test_mlp_training_on_fashion_mnist() -> None:
    data = np.load(DATA)
    x = (data["train_images"].reshape(-1, 196) / 255.0).astype("float32")
    y = np.eye(10, dtype="float32")[data["train_labels"]]
    rng = np.random.default_rng(0)
    params = [
        (rng.standard_normal((196, 32)) * np.sqrt(2 / 196)).astype("float32"),
        np.zeros(32, "float32"),
        (rng.standard_normal((32, 10)) * np.sqrt(2 / 32)).astype("float32"),
        np.zeros(10, "float32"),
    ]
    step = relay.grad(mlp_loss, argnums=(0, 1, 2, 3))
    losses = []
    for _ in range(3):  # epochs
        for b in range(0, 500, 100):
            loss, grads = step(*params, x[b : b + 100], y[b : b + 100])
            losses.append(float(loss))
            params = [p - 0.5 * g for p, g in zip(params, grads, strict=True)]
    first, last = np.mean(losses[:5]), np.mean(losses[-5:])  # first and last epoch
    assert last < 0.65 * first, losses
    # held-out accuracy well above chance (10%)
    xt = (data["test_images"].reshape(-1, 196) / 255.0).astype("float32")
    h = np.maximum(xt @ params[0] + params[1], 0)
    accuracy = np.mean(np.argmax(h @ params[2] + params[3], axis=1) == data["test_labels"])
    assert accuracy > 0.5, accuracy


@relay
def smooth(x: V) -> V:
    return np.sin(x) * power(x, 2)


@relay
def smooth_grad(x: V) -> V:
    return relay.grad(smooth, argnums=0)(x)[1]


@relay
def smooth_dir(x: V, v: V) -> V:
    return relay.jvp(smooth)(x, v)[1]


def test_jvp() -> None:
    v = np.array([1.0, -2.0, 0.5])
    value, tangent = relay.jvp(smooth)(X, v)
    np.testing.assert_allclose(value, np.sin(X) * X**2)
    np.testing.assert_allclose(tangent, (np.cos(X) * X**2 + 2 * X * np.sin(X)) * v)
    assert repr(relay.jvp(smooth)) == "<relay JVP of smooth>"
    assert str(relay.jvp(smooth)).startswith(
        '#[version = "0.0.5"]\ndef @smooth_jvp(%x: Tensor[(3,), float64], %dx: Tensor[(3,), '
    )
    with pytest.raises(relay.TypeCheckError, match=r"smooth_jvp takes 2 arguments \(1 primals"):
        relay.jvp(smooth)(X)


def test_hessian_vector_products_forward_over_reverse_and_reverse_over_forward() -> None:
    v = np.array([1.0, -2.0, 0.5])
    hessian_diag = -np.sin(X) * X**2 + 4 * X * np.cos(X) + 2 * np.sin(X)
    _, fwd_rev = relay.jvp(smooth_grad)(X, v)
    _, rev_fwd = relay.grad(smooth_dir, argnums=0)(X, v)
    np.testing.assert_allclose(fwd_rev, hessian_diag * v)
    np.testing.assert_allclose(rev_fwd, fwd_rev)
