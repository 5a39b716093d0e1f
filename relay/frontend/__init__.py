"""The ``@relay`` decorator: Python functions to typed Relay IR, callable on numpy arrays.

See docs/frontend.md for the Python understood and how each construct maps to the IR;
:mod:`relay.frontend.convert` for the algorithm.
"""

from relay.frontend.adt import Cons, List, Nil, Nothing, Option, Rose, Some, Tree, adt
from relay.frontend.annotations import DType, Tensor, TensorSpec
from relay.frontend.autodiff import Derivative, grad, jvp
from relay.frontend.function import RelayFunction, function

__all__ = [
    "Cons",
    "DType",
    "Derivative",
    "List",
    "Nil",
    "Nothing",
    "Option",
    "RelayFunction",
    "Rose",
    "Some",
    "Tensor",
    "TensorSpec",
    "Tree",
    "adt",
    "function",
    "grad",
    "jvp",
]
