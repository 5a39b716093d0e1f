"""Testing helpers for users and for relay's own tests: numerical checks of the operators'
gradient and JVP rules, and of their compiled kernels against their references."""

from relay.testing.check_grad import check_grad
from relay.testing.gradients import check_op_gradient, check_op_jvp, numerical_gradient
from relay.testing.lowering import check_op_lowering, run_compiled_op

__all__ = [
    "check_grad",
    "check_op_gradient",
    "check_op_jvp",
    "check_op_lowering",
    "numerical_gradient",
    "run_compiled_op",
]
