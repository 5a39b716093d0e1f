"""First-order reverse-mode AD: the generated IR, its values against central differences,
the nodes no adjoint reaches, and the programs it leaves to the higher-order mode."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import relay
from relay.errors import CompileError
from relay.ir import Expr, Function, Let, TensorType, Var
from relay.op.registry import MissingRuleError
from relay.passes.gradient import first_order_gradient
from relay.testing import numerical_gradient

T23 = "Tensor[(2, 3), float64]"


def function(src: str) -> Function:
    f = relay.parse_expr(src.replace("T23", T23))
    assert isinstance(f, Function)
    return f


def check(f: Function, reference: object, *args: np.ndarray) -> None:
    g = first_order_gradient(f)
    relay.infer_type(g)
    value, grads = relay.interpret(g, *args)
    np.testing.assert_allclose(value, reference(*args), rtol=1e-12)  # type: ignore[operator]
    numeric = numerical_gradient(
        lambda *xs: float(np.sum(reference(*xs))),  # type: ignore[operator]
        list(args),
        range(len(args)),
    )
    assert len(grads) == len(args)
    for got, want in zip(grads, numeric, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


RNG = np.random.default_rng(0)
X, Y, Z = RNG.standard_normal((2, 3)), RNG.standard_normal(3), RNG.standard_normal((2, 3))


def test_a_let_chain_with_broadcasting_and_tuples() -> None:
    f = function(
        """fn (%x: T23, %y: Tensor[(3,), float64]) {
          let %a = multiply(%x, %y);
          let %b = exp(%a);
          %0 = (%b, %x);
          add(%0.0, %0.1)
        }"""
    )
    check(f, lambda x, y: np.exp(x * y) + x, X, Y)


def test_shared_nodes_accumulate() -> None:
    f = function("fn (%x: T23) { %0 = tanh(%x); %1 = multiply(%0, %0); add(%1, %0) }")
    check(f, lambda x: np.tanh(x) ** 2 + np.tanh(x), X)


def test_a_condition_without_a_gradient_is_never_asked_for_one() -> None:
    f = function("fn (%x: T23, %z: T23) { where(less(%x, %z), %x, multiply(%z, %z)) }")
    check(f, lambda x, z: np.where(x < z, x, z * z), X, Z)


def test_an_unused_parameter_gets_zeros() -> None:
    f = function("fn (%x: T23, %z: T23) { exp(%x) }")
    g = first_order_gradient(f)
    _, (gx, gz) = relay.interpret(g, X, Z)
    np.testing.assert_allclose(gx, np.exp(X))
    np.testing.assert_array_equal(gz, np.zeros((2, 3)))


def test_the_generated_ir() -> None:
    f = function("fn (%x: T23) { let %a = exp(%x); multiply(%a, %x) }")
    expected = function(
        """fn (%x: T23) {
          let %a = exp(%x);
          let %s1 = multiply(%a, %x);
          let %s2 = ones_like(%s1);
          %2 = multiply(%s2, %a);
          %3 = collapse_sum_like(%2, %x);
          %4 = multiply(%s2, %x);
          %5 = collapse_sum_like(%4, %a);
          %6 = multiply(%5, %a);
          %7 = add(%3, %6);
          (%s1, (%7,))
        }"""
    )
    relay.assert_structural_equal(first_order_gradient(f), expected)


def test_shared_values_are_bound_once() -> None:
    # graph form shares nodes, but the interpreter evaluates a node at each use: without
    # bindings a chain's backward code would recompute the forward exponentially often
    x = Var("x", TensorType((2,), "float64"))
    body: Expr = x
    for _ in range(40):
        body = relay.op.multiply(body, body)
    g = first_order_gradient(Function((x,), body))
    value, (dx,) = relay.interpret(g, np.array([1.0, 1.0]))
    np.testing.assert_allclose(value, [1.0, 1.0])
    np.testing.assert_allclose(dx, [2.0**40, 2.0**40])


def test_a_non_differentiable_operator_on_the_path_is_named() -> None:
    f = function("fn (%x: T23) { multiply(floor_divide(%x, 2f64), %x) }")
    with pytest.raises(MissingRuleError, match="cannot differentiate through floor_divide"):
        first_order_gradient(f)


def test_an_integer_result_stops_the_gradient() -> None:
    # argmax has no gradient, but none flows into it: cast from an integer carries none
    f = function(
        'fn (%x: T23) { multiply(cast(argmax(%x, axis=[1], keepdims=True), dtype="float64"), %x) }'
    )
    check(f, lambda x: np.argmax(x, axis=1)[:, None].astype("float64") * x, X)


@pytest.mark.parametrize(
    ("src", "construct"),
    [
        ("fn (%x: T23, %c: bool) { if (%c) { %x } else { exp(%x) } }", "If"),
        ("fn (%x: T23) { %0 = fn (%y: T23) { exp(%y) }; %0(%x) }", "calls of functions"),
        ("fn (%x: T23) { let %r = ref(%x); ref_read(%r) }", "RefRead"),
    ],
)
def test_programs_for_the_higher_order_mode(src: str, construct: str) -> None:
    with pytest.raises(CompileError, match=construct):
        first_order_gradient(function(src))


def test_the_result_must_be_a_float_tensor() -> None:
    with pytest.raises(CompileError, match="must return a floating-point tensor, got"):
        first_order_gradient(function("fn (%x: T23) { (%x, %x) }"))
    with pytest.raises(CompileError, match=r"floating-point tensor, got Tensor\[\(2, 3\), bool\]"):
        first_order_gradient(function("fn (%x: T23) { %x > %x }"))


def test_100000_bindings() -> None:
    x = Var("x", TensorType((2,), "float64"))
    names = [Var(f"v{i}") for i in range(100_000)]
    body: Expr = names[-1]
    for i in reversed(range(100_000)):
        prev = names[i - 1] if i else x
        body = Let(names[i], relay.op.add(prev, relay.const(np.float64(1.0))), body)
    limit = sys.getrecursionlimit()
    g = first_order_gradient(Function((x,), body))
    assert sys.getrecursionlimit() == limit
    value, (gx,) = relay.interpret(g, np.zeros(2))
    np.testing.assert_array_equal(value, np.full(2, 100_000.0))
    np.testing.assert_array_equal(gx, np.ones(2))


def test_the_gradient_fuses_like_hand_written_backward_code() -> None:
    from relay.passes import FuseOps, PassContext, standard_pipeline
    from relay.passes.gradient import gradient

    t3 = "Tensor[(3,), float32]"
    head = '#[version = "0.0.5"]\n'
    mod = relay.parse(head + f"def @main(%x: {t3}, %y: {t3}) -> {t3} {{ tanh(%x) * %y }}")
    mod.add("main_grad", gradient("main", mod))
    hand = relay.parse(
        head
        + f"""def @main_grad(%x: {t3}, %y: {t3}) {{
          %0 = tanh(%x);
          %1 = subtract(ones_like(%0), multiply(%0, %0));
          (multiply(%0, %y), (multiply(%y, %1), %0))
        }}"""
    )
    with PassContext(opt_level=3):
        derived = FuseOps()(standard_pipeline(["main_grad"])(mod))
        written = FuseOps()(standard_pipeline(["main_grad"])(hand))
    relay.assert_structural_equal(derived["main_grad"], written["main_grad"])
    text = relay.astext(derived["main_grad"])
    assert text.count("Primitive=1") == 3  # tanh, the product, the whole backward expression
