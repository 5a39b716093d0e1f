"""Every operator has a gradient rule, or says why it has none."""

from __future__ import annotations

from relay.op.registry import get_op, list_ops

# The operators without a gradient, each with the reason AD reports for it.
NON_DIFFERENTIABLE = {
    "argmax": "its result is an integer index",
    "argmin": "its result is an integer index",
    "bitwise_and": "it computes on the bits of integers",
    "bitwise_not": "it computes on the bits of integers",
    "bitwise_or": "it computes on the bits of integers",
    "bitwise_xor": "it computes on the bits of integers",
    "equal": "its result is a bool comparison",
    "floor_divide": "its result is piecewise constant (steps of an integer quotient)",
    "greater": "its result is a bool comparison",
    "greater_equal": "its result is a bool comparison",
    "isfinite": "its result is bool",
    "isnan": "its result is bool",
    "left_shift": "it computes on the bits of integers",
    "less": "its result is a bool comparison",
    "less_equal": "its result is a bool comparison",
    "logical_and": "its result is bool",
    "logical_not": "its result is bool",
    "logical_or": "its result is bool",
    "logical_xor": "its result is bool",
    "not_equal": "its result is a bool comparison",
    "right_shift": "it computes on the bits of integers",
    "shape_of": "its result is the integer shape of its input",
    "vta.conv2d": "it computes on integers",
    "vta.dense": "it computes on integers",
}


def _own_ops() -> list[str]:
    """The registered operators but those tests register (named ``test_<module>.<name>``)."""
    return [name for name in list_ops() if not name.startswith("test_")]


def test_every_operator_has_a_gradient_rule_or_a_reason() -> None:
    missing = [name for name in _own_ops() if get_op(name).gradient is None]
    assert missing == []


def test_the_non_differentiable_operators_and_their_reasons() -> None:
    marked = {
        name: get_op(name).extra["non_differentiable"]
        for name in _own_ops()
        if "non_differentiable" in get_op(name).extra
    }
    assert marked == NON_DIFFERENTIABLE


def test_every_nn_operator_is_differentiable() -> None:
    nn_ops = [name for name in _own_ops() if name.startswith("nn.")]
    assert len(nn_ops) == 25
    assert not [name for name in nn_ops if "non_differentiable" in get_op(name).extra]
