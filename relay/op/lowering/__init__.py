"""TVM lowering rules of the operators, one module per operator family.

Each rule builds the operator's tensor expression (``tvm.te``/``tvm.topi``) computing what
its numpy reference computes, and is registered in the operator's registry entry (the
``lowering`` slot, beside its type relation, reference and gradient) with
:func:`relay.op.registry.lowering_rule`. The rules import TVM inside their bodies, so
importing them (which ``import relay.op`` does) costs nothing until something compiles.
They live apart from the operator definitions because they are target code: what the
backend lowers, not what the language means.
"""

from relay.op.lowering import (  # noqa: F401
    elemwise as _elemwise,
    nn as _nn,
    nn_conv as _nn_conv,
    reduce as _reduce,
    transform as _transform,
)
