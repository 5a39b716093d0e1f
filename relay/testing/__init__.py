"""Testing helpers for users and for relay's own tests: numerical checks of the operators'
gradient and JVP rules."""

from relay.testing.check_grad import check_grad
from relay.testing.gradients import check_op_gradient, check_op_jvp, numerical_gradient

__all__ = ["check_grad", "check_op_gradient", "check_op_jvp", "numerical_gradient"]
