"""Operators: the registry and the operator definitions (each with all its rules)."""

# Importing the operator families registers their definitions. (Never ``import *``
# from reduce: its sum/max/min would shadow the builtins.)
from relay.op import (  # noqa: F401
    elemwise as _elemwise,
    nn as _nn,
    reduce as _reduce,
    tensor as _tensor,
    transform as _transform,
    vta as _vta,
)
from relay.op.registry import (
    AttrField,
    MissingRuleError,
    OpBuilder,
    OpDef,
    OpPattern,
    attr,
    get_op,
    has_op,
    list_ops,
    register_op,
)

__all__ = [
    "AttrField",
    "MissingRuleError",
    "OpBuilder",
    "OpDef",
    "OpPattern",
    "attr",
    "get_op",
    "has_op",
    "list_ops",
    "register_op",
]


def __getattr__(name: str) -> OpBuilder:
    """``relay.op.<name>``: a builder of calls of the operator ``name`` (see OpBuilder)."""
    if has_op(name):
        return OpBuilder(name)
    raise AttributeError(f"relay.op has no operator {name}")


# the TVM lowering rules (no TVM import until something compiles)
from relay.op import lowering as _lowering  # noqa: E402, F401
