"""relay.testing: central differences and the operator gradient checker, on operators
registered here for the purpose (a right rule, a wrong one, a non-differentiable one) and
removed from the registry afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import relay
from relay.ir import Call, Expr, Var
from relay.ir.types import TensorType, Type
from relay.op import get_op, registry
from relay.op.registry import MissingRuleError, gradient_rule, non_differentiable, register_op
from relay.testing import check_op_gradient, numerical_gradient
from relay.typecheck.relation import Reporter


def _same_type(types: list[Type], attrs: object, r: Reporter) -> bool:
    r.unify(types[-1], types[0])
    return True


def _square_grad(call: Call, g: Expr) -> list[Expr | None]:
    (x,) = call.args
    return [relay.op.multiply(g, relay.op.add(x, x))]


@pytest.fixture(scope="module", autouse=True)
def test_operators() -> Iterator[None]:
    ops = {
        "testing.square": lambda x: x * x,
        "testing.cube": lambda x: x * x * x,
        "testing.step": lambda x: (x > 0).astype(x.dtype),
    }
    for name, ref in ops.items():
        register_op(name, 1, reference=ref, type_relation=_same_type)
    gradient_rule("testing.square")(_square_grad)
    gradient_rule("testing.cube")(_square_grad)  # wrong: d(x^3) is 3x^2, not 2x
    non_differentiable("testing.step", reason="it is piecewise constant")
    yield
    for name in ops:
        del registry._REGISTRY[name]


def test_numerical_gradient_of_a_known_function() -> None:
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    y = np.array([2.0, 1.0])
    gx, gy = numerical_gradient(lambda a, b: float(np.sum(a * a * b)), [x, y], [0, 1])
    np.testing.assert_allclose(gx, 2 * x * y, rtol=1e-7)
    np.testing.assert_allclose(gy, np.sum(x * x, axis=0), rtol=1e-7)


def test_a_right_rule_passes_and_returns_the_adjoints() -> None:
    x = np.array([1.0, -2.0, 0.5])
    (g,) = check_op_gradient("testing.square", [x], seed=3)
    assert g is not None and g.shape == (3,) and g.dtype == np.float64


def test_a_wrong_rule_is_caught() -> None:
    with pytest.raises(AssertionError, match=r"testing\.cube: adjoint of argument 0"):
        check_op_gradient("testing.cube", [np.array([1.0, -2.0, 0.5])])


def test_non_differentiable_operators_say_so() -> None:
    rule = get_op("testing.step").gradient
    assert rule is not None
    x = Var("x", TensorType((2,), "float64"))
    with pytest.raises(MissingRuleError) as info:
        rule(Call(get_op("testing.step").op, (x,)), x)
    assert info.value.message == (
        "cannot differentiate through testing.step: it is piecewise constant"
    )
    assert get_op("testing.step").extra["non_differentiable"] == "it is piecewise constant"
