"""Operators: the registry and the operator definitions (each with all its rules)."""

from relay.op import tensor as _tensor  # noqa: F401  (registers the elementwise operators)
from relay.op.registry import (
    AttrField,
    MissingRuleError,
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
    "OpDef",
    "OpPattern",
    "attr",
    "get_op",
    "has_op",
    "list_ops",
    "register_op",
]
