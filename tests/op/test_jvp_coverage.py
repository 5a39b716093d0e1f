"""JVP rules as a whole: every differentiable operator has one (and a JVP case), the
non-differentiable ones refuse with their reason, and ``relay.testing.check_op_jvp`` catches
wrong rules (checked on operators registered here and removed afterwards)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import relay
from relay.ir import Call, Expr, Var
from relay.ir.attrs import Attrs
from relay.ir.span import Span
from relay.ir.types import TensorType, Type
from relay.op import get_op, list_ops, registry
from relay.op.registry import (
    MissingRuleError,
    gradient_rule,
    jvp_rule,
    non_differentiable,
    register_op,
)
from relay.testing import check_op_jvp
from relay.typecheck.relation import Reporter
from tests.op import test_gradients_elemwise, test_gradients_nn, test_gradients_transform


def _relay_ops() -> list[str]:
    """The operators relay.op defines (not those tests register for a while)."""
    return [
        name
        for name in list_ops()
        if getattr(get_op(name).reference, "__module__", "").startswith("relay.op.")
    ]


def _differentiable() -> list[str]:
    return [
        name
        for name in _relay_ops()
        if get_op(name).gradient is not None and "non_differentiable" not in get_op(name).extra
    ]


def _non_differentiable() -> list[str]:
    return [name for name in _relay_ops() if "non_differentiable" in get_op(name).extra]


def test_every_operator_with_a_gradient_has_a_jvp_rule() -> None:
    names = _differentiable()
    assert len(names) > 90
    assert [name for name in names if get_op(name).jvp is None] == []


def test_every_jvp_rule_has_cases() -> None:
    # the gradient tables reused by tests/op/test_jvp_*.py, plus the operators those files
    # check on their own
    tested = {op for op, _, _ in test_gradients_elemwise._CASES}
    tested |= {c[0] for c in test_gradients_transform.CASES}
    tested |= {c[0] for c in test_gradients_nn.CASES}
    tested |= {"sum", "mean", "max", "min", "prod", "logsumexp", "variance"}
    tested |= {"where", "cast_like", "full", "full_like", "arange", "zeros_like", "ones_like"}
    tested |= {"concatenate", "stack", "zeros", "ones"}
    assert sorted(set(_differentiable()) - tested) == []


@pytest.mark.parametrize("op", _non_differentiable())
def test_non_differentiable_operators_refuse_a_jvp(op: str) -> None:
    opdef = get_op(op)
    span = Span("m.rly", 3, 5, 3, 9)
    call = Call(opdef.op, (), Attrs({}), span=span)
    with pytest.raises(MissingRuleError) as info:
        opdef.rule("jvp")(call, [])
    reason = opdef.extra["non_differentiable"]
    assert info.value.message == f"cannot differentiate through {op}: {reason}"
    assert info.value.span == span


def test_the_non_differentiable_operators_are_those_expected() -> None:
    assert set(_non_differentiable()) >= {
        "floor_divide",
        "equal",
        "logical_not",
        "isnan",
        "argmax",
        "argmin",
        "shape_of",
    }


# -- the checker, on operators registered for the purpose -------------------------------------------


def _same_type(types: list[Type], attrs: object, r: Reporter) -> bool:
    r.unify(types[-1], types[0])
    return True


def _square_grad(call: Call, g: Expr) -> list[Expr | None]:
    (x,) = call.args
    return [relay.op.multiply(g, relay.op.add(x, x))]


def _square_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    (x,), (t,) = call.args, tangents
    return None if t is None else relay.op.multiply(t, relay.op.add(x, x))


def _sum_jvp(call: Call, tangents: list[Expr | None]) -> Expr | None:
    (t,) = tangents
    assert t is not None
    return relay.op.sum(t)


@pytest.fixture(scope="module", autouse=True)
def test_operators() -> Iterator[None]:
    ops = {
        "testing_jvp.square": lambda x: x * x,
        "testing_jvp.cube": lambda x: x * x * x,
        "testing_jvp.bad_grad": lambda x: x * x,
        "testing_jvp.bad_type": lambda x: x * x,
        "testing_jvp.step": lambda x: (x > 0).astype(x.dtype),
    }
    for name, ref in ops.items():
        register_op(name, 1, reference=ref, type_relation=_same_type)
    gradient_rule("testing_jvp.square", "testing_jvp.cube")(_square_grad)
    jvp_rule("testing_jvp.square", "testing_jvp.cube")(_square_jvp)  # cube: wrong
    jvp_rule("testing_jvp.bad_grad")(_square_jvp)
    gradient_rule("testing_jvp.bad_grad")(lambda call, g: [g])  # wrong: not 2x
    jvp_rule("testing_jvp.bad_type")(_sum_jvp)
    non_differentiable("testing_jvp.step", reason="it is piecewise constant")
    yield
    for name in ops:
        del registry._REGISTRY[name]


def test_jvp_rule_registers_one_rule_for_several_operators() -> None:
    assert get_op("testing_jvp.square").jvp is get_op("testing_jvp.cube").jvp is _square_jvp


def test_a_right_rule_passes_and_returns_the_tangent() -> None:
    x = np.array([1.0, -2.0, 0.5])
    got = check_op_jvp("testing_jvp.square", [x], seed=3)
    v = np.random.default_rng(3).standard_normal(3)
    np.testing.assert_allclose(got, 2 * x * v)


def test_a_wrong_rule_is_caught_by_central_differences() -> None:
    with pytest.raises(AssertionError, match=r"testing_jvp\.cube: JVP"):
        check_op_jvp("testing_jvp.cube", [np.array([1.0, -2.0, 0.5])])


def test_a_gradient_that_is_not_the_transpose_is_caught() -> None:
    x = np.array([1.0, -2.0, 0.5])
    check_op_jvp("testing_jvp.bad_grad", [x], transpose=False)  # the JVP itself is right
    with pytest.raises(AssertionError, match=r"<ct, J v> from the JVP differs"):
        check_op_jvp("testing_jvp.bad_grad", [x])


def test_a_tangent_of_the_wrong_type_is_caught() -> None:
    with pytest.raises(AssertionError, match=r"tangent has type float64, expected Tensor"):
        check_op_jvp("testing_jvp.bad_type", [np.array([1.0, 2.0])])


def test_no_rule_is_called_without_a_tangent() -> None:
    ints = np.array([1, 2], dtype=np.int32)
    assert check_op_jvp("testing_jvp.bad_type", [ints]) is None
    assert check_op_jvp("testing_jvp.bad_type", [np.ones(2)], wrt=[]) is None


def test_non_differentiable_sets_both_rules() -> None:
    opdef = get_op("testing_jvp.step")
    x = Var("x", TensorType((2,), "float64"))
    call = Call(opdef.op, (x,))
    for slot, seed in (("gradient", x), ("jvp", [x])):
        with pytest.raises(MissingRuleError) as info:
            opdef.rule(slot)(call, seed)
        assert info.value.message == (
            "cannot differentiate through testing_jvp.step: it is piecewise constant"
        )
