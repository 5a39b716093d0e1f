"""Testing helpers for users and for relay's own tests: numerical gradient checks."""

from relay.testing.gradients import check_op_gradient, numerical_gradient

__all__ = ["check_op_gradient", "numerical_gradient"]
