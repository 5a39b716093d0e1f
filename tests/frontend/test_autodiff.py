"""relay.grad on @relay functions: every kind of Python the frontend understands, argnums,
nested differentiation inside @relay code, the numerical checker, and training a small
classifier on real data (Fashion-MNIST)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relay
from relay import Tensor, float32, float64
from relay.testing import check_grad, numerical_gradient

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
    with pytest.raises(relay.FrontendError) as info:
        relay.grad(f, argnums=2)
    assert info.value.message == (
        "relay.grad of f: argnums 2 is out of range for a function of 2 parameters"
    )
    _, dy3 = relay.grad(f, argnums=np.int64(1))(X, Y)  # any integer type
    np.testing.assert_allclose(dy3, 2 * X * Y)
    with pytest.raises(relay.FrontendError, match=r"argnums must be an int or a tuple of ints"):
        relay.grad(f, argnums=1.0)


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
    assert g.checked_type == ty
    _, (dx,) = g.interpret(X)
    np.testing.assert_allclose(dx, 3 * X**2)


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


def test_unannotated_functions_are_specialised_per_signature() -> None:
    @relay
    def f(x, y):  # type: ignore[no-untyped-def]
        return np.tanh(x) * y

    _, (dx, dy) = relay.grad(f)(X, Y)
    np.testing.assert_allclose(dx, (1 - np.tanh(X) ** 2) * Y)
    np.testing.assert_allclose(dy, np.tanh(X))
    x32 = np.ones((2, 2), "float32")
    _, (dx32, _) = relay.grad(f)(x32, x32)
    assert dx32.dtype == np.float32 and dx32.shape == (2, 2)


def test_a_function_differentiating_itself_is_an_error() -> None:
    with pytest.raises(relay.FrontendError) as info:

        @relay
        def selfish(x: V) -> V:
            return relay.grad(selfish, argnums=0)(x)[1]

    assert info.value.message == (
        "relay.grad of selfish inside selfish: the function differentiated calls, through its "
        "callees, a derivative of itself"
    )


@relay
def ping(x: V) -> V:
    return relay.grad(pong, argnums=0)(x)[1]


@relay
def pong(x: V) -> V:
    return ping(x) * x


def test_mutual_recursion_through_a_derivative_is_an_error() -> None:
    with pytest.raises(relay.FrontendError, match=r"pong_grad: the function differentiated calls"):
        ping(X)


S = Tensor[float64, ()]


@relay.adt
class Expr:
    Num: Tensor[float64, ()]
    X: ()
    Mul: (Expr, Expr)


@relay
def evaluate(e: Expr, x: S) -> S:
    match e:
        case Expr.Num(v):
            return v
        case Expr.X():
            return x
        case Expr.Mul(a, b):
            return evaluate(a, x) * evaluate(b, x)


@relay
def c_x_squared(x: S, c: S) -> S:
    return evaluate(Expr.Mul(Expr.Num(c), Expr.Mul(Expr.X(), Expr.X())), x)


def test_a_user_data_type_with_tensor_fields() -> None:
    x, c = np.float64(0.7), np.float64(1.3)
    value, (dx, dc) = relay.grad(c_x_squared)(x, c)
    np.testing.assert_allclose([value, dx, dc], [c * x * x, 2 * c * x, x * x])
    _, tangent = relay.jvp(c_x_squared)(x, c, np.float64(1.0), np.float64(0.0))
    np.testing.assert_allclose(tangent, 2 * c * x)


@relay
def pw(x: V, n: int) -> V:
    if n == 0:
        return x / x
    return x * pw(x, n - 1)


@relay
def pw_sin(x: V) -> V:
    return pw(x, 3) * np.sin(x)


@relay
def pw_plus(x: V) -> V:
    return pw(x, 2) + x


@relay
def two_derivatives(x: V) -> V:
    # both derivatives rewrite @pw: the rewritten globals must not clash
    a = relay.grad(pw_sin, argnums=0)(x)[1]
    b = relay.grad(pw_plus, argnums=0)(x)[1]
    c = relay.grad(pw_sin)(x)[1][0]
    return a * b + c


def test_several_derivatives_sharing_a_callee() -> None:
    d_sin = 3 * X**2 * np.sin(X) + X**3 * np.cos(X)
    np.testing.assert_allclose(two_derivatives(X), d_sin * (2 * X + 1) + d_sin)


@relay
def stack_of_layers(ws: relay.List[V], x: V) -> V:
    match ws:
        case relay.Cons(w, rest):
            return np.tanh(w * stack_of_layers(rest, x))
        case relay.Nil():
            return x


def test_gradient_with_respect_to_a_list_of_weights() -> None:
    w0, w1 = np.array([0.5, 1.0, -1.0]), np.array([2.0, 0.3, 0.1])
    x = np.array([1.0, 2.0, 3.0])

    def forward(w0: np.ndarray, w1: np.ndarray, x: np.ndarray) -> float:
        return float(np.sum(np.tanh(w0 * np.tanh(w1 * x))))

    value, (gws, gx) = relay.grad(stack_of_layers)(relay.Cons(w0, relay.Cons(w1, relay.Nil())), x)
    np.testing.assert_allclose(np.sum(value), forward(w0, w1, x))
    g0, g1, g2 = numerical_gradient(forward, [w0, w1, x], range(3))
    assert isinstance(gws, relay.Cons) and isinstance(gws.fields[1], relay.Cons)
    np.testing.assert_allclose(gws.fields[0], g0, rtol=1e-6)
    np.testing.assert_allclose(gws.fields[1].fields[0], g1, rtol=1e-6)
    np.testing.assert_allclose(gx, g2, rtol=1e-6)
    # with respect to the list alone: the conversion globals are in the module
    d = relay.grad(stack_of_layers, argnums=0)
    _, only = d(relay.Cons(w0, relay.Nil()), x)
    np.testing.assert_allclose(only.fields[0], x * (1 - np.tanh(w0 * x) ** 2))
    assert {"List_rev_lift", "List_adjoint"} <= {g.name_hint for g in d.module.functions}


def test_jvp_with_a_list_of_weights() -> None:
    w0, x = np.array([0.5, 1.0, -1.0]), np.array([1.0, 2.0, 3.0])
    t0, tx = np.array([1.0, 0.0, 2.0]), np.array([0.5, -1.0, 0.0])
    ws, dws = relay.Cons(w0, relay.Nil()), relay.Cons(t0, relay.Nil())
    _, tangent = relay.jvp(stack_of_layers)(ws, x, dws, tx)
    np.testing.assert_allclose(tangent, (1 - np.tanh(w0 * x) ** 2) * (t0 * x + w0 * tx))


@relay
def scaled(x: V, c: V) -> V:
    return np.tanh(x * c)


@relay
def scaled_dir(x: V, c: V, v: V) -> V:
    return relay.jvp(scaled, argnums=0)(x, c, v)[1]


def test_jvp_with_respect_to_selected_arguments() -> None:
    c, v = np.array([0.5, 2.0, -1.0]), np.array([1.0, -2.0, 0.5])
    d = relay.jvp(scaled, argnums=0)
    value, tangent = d(X, c, v)
    want = (1 - np.tanh(X * c) ** 2) * c * v
    np.testing.assert_allclose(value, np.tanh(X * c))
    np.testing.assert_allclose(tangent, want)
    # the same as the full JVP with a zero tangent for c, and without computing it
    np.testing.assert_allclose(relay.jvp(scaled)(X, c, v, np.zeros(3))[1], want)
    assert str(d).startswith(
        '#[version = "0.0.5"]\ndef @scaled_jvp(%x: Tensor[(3,), float64], %c: Tensor[(3,), '
        "float64], %dx: Tensor[(3,), float64])"
    )
    np.testing.assert_allclose(d.interpret(X, c, v)[1], want)
    np.testing.assert_allclose(d(X, c, v)[1], want)  # the compiled fast path
    # tangents come in argnums' order
    _, both = relay.jvp(scaled, argnums=(1, 0))(X, c, np.zeros(3), v)
    np.testing.assert_allclose(both, want)
    np.testing.assert_allclose(scaled_dir(X, c, v), want)  # inside a @relay function
    with pytest.raises(
        relay.TypeCheckError, match=r"scaled_jvp takes 3 arguments \(2 primals, then 1 tangents\)"
    ):
        d(X, c)
    with pytest.raises(
        relay.FrontendError, match=r"relay.jvp of scaled: argnums 2 is out of range"
    ):
        relay.jvp(scaled, argnums=2)


def test_jvp_argnums_and_data_types() -> None:
    w0, x = np.array([0.5, 1.0, -1.0]), np.array([1.0, 2.0, 3.0])
    tx = np.array([0.5, -1.0, 0.0])
    ws = relay.Cons(w0, relay.Nil())
    _, tangent = relay.jvp(stack_of_layers, argnums=(0, 1))(
        ws, x, relay.Cons(np.zeros(3), relay.Nil()), tx
    )
    np.testing.assert_allclose(tangent, (1 - np.tanh(w0 * x) ** 2) * w0 * tx)
    with pytest.raises(
        relay.CompileError, match="parameter %ws holds a data type with floating-point values"
    ):
        relay.jvp(stack_of_layers, argnums=1)(ws, x, tx)


@relay
def tanh_sum(w: Tensor[float64, (3, 3)], x: V) -> float64:
    return np.sum(np.tanh(w @ x))


@relay
def tanh_sum_grad_w(w: Tensor[float64, (3, 3)], x: V) -> Tensor[float64, (3, 3)]:
    return relay.grad(tanh_sum, argnums=0)(w, x)[1]


def test_jvp_argnums_across_calls_computes_nothing_for_the_others() -> None:
    # forward over reverse: the Hessian-vector product in direction dw, x held fixed. The
    # callees are inlined before differentiating, so x's zero tangent is known to be zero
    # everywhere: no product with it is left in the program
    w = np.array([[0.5, -1.0, 0.25], [0.1, 0.2, -0.3], [1.0, 0.0, 0.5]])
    dw = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.0], [0.0, 2.0, 1.0]])
    d = relay.jvp(tanh_sum_grad_w, argnums=0)
    assert d.astext().count("nn.matmul(") == 4  # w @ x, dw @ x and two outer products
    _, hvp = d(w, X, dw)
    t = np.tanh(w @ X)
    dt = (1 - t**2) * (dw @ X)
    np.testing.assert_allclose(hvp, np.outer(-2 * t * dt, X))


def dense_mlp_loss(w1, b1, w2, b2, x, y):
    h = relay.nn.relu(relay.nn.dense(x, w1) + b1)
    return -np.sum(relay.nn.log_softmax(relay.nn.dense(h, w2) + b2) * y) / 4.0


def mlp_loss_and_grad_by_hand(w1, b1, w2, b2, x, y):
    h = relay.nn.relu(relay.nn.dense(x, w1) + b1)
    logp = relay.nn.log_softmax(relay.nn.dense(h, w2) + b2)
    d2 = (np.exp(logp) * np.sum(y, axis=1, keepdims=True) - y) / 4.0
    d1 = np.where(h > 0.0, d2 @ w2, 0.0)
    grads = (d1.T @ x, np.sum(d1, axis=0), d2.T @ h, np.sum(d2, axis=0))
    return -np.sum(logp * y) / 4.0, grads


def test_the_mlp_gradient_compiles_to_no_more_kernels_than_written_by_hand() -> None:
    # issue 6: the first-order gradient fuses and compiles as well as hand-written backward
    # code (benchmarks/autodiff.py times the two at the workloads' size)
    rng = np.random.default_rng(0)
    shapes = [(8, 6), (8,), (3, 8), (3,), (4, 6)]
    args = [rng.standard_normal(s).astype("float32") for s in shapes]
    args.append(np.eye(3, dtype="float32")[[0, 2, 1, 2]])
    derived = relay.grad(relay.function(dense_mlp_loss), argnums=(0, 1, 2, 3))
    by_hand = relay.function(mlp_loss_and_grad_by_hand)
    (loss, grads), (loss_by_hand, grads_by_hand) = derived(*args), by_hand(*args)
    np.testing.assert_allclose(loss, loss_by_hand, rtol=1e-6)
    for a, b in zip(grads, grads_by_hand, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    built = [relay.build(f) for f in (derived, by_hand)]
    assert [b.kind for b in built] == ["graph", "graph"]
    # relu's gradient tests relu's result, so relu fuses into the dense before it
    assert built[0].kernels[0] == "fused_dense_add_relu_0"
    # the transposes written by hand (d1.T @ x) fold into the products' flags, as AD's do;
    # AD's seed of the loss, y * -1/4, is one kernel more: two consumers read it (the loss's
    # sum takes its negation and mean in one kernel in both: a reduction's epilogue)
    assert (len(built[0].kernels), len(built[1].kernels)) == (12, 11)
    assert not [k for k in built[1].kernels if "transpose" in k]
