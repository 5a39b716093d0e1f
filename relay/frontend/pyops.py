"""How Python operators, numpy functions and tensor methods map to Relay operators.

The tables here are data: the converter (:mod:`relay.frontend.convert`) looks a Python
operator up by its ``ast`` class, a function by identity (``np.tanh`` is the object the
function's globals bind), a method or attribute by name. Each entry says which Relay
operator implements it and how the Python arguments become the operator's inputs and
attributes.

Semantics follow numpy where Relay has the operation, with two deliberate differences, as in
JAX: floating results are ``float32`` (``np.zeros(3)`` is ``float32``, ``i / j`` of ``int32``
tensors is ``float32``), and Python numbers take the dtype of the tensor they meet.
``np.round`` is not mapped (numpy rounds halves to even; Relay's ``round`` away from zero).
"""

from __future__ import annotations

import ast

import numpy as np

__all__ = [
    "BINARY_OPS",
    "BOOL_SPELLINGS",
    "COMPARE_OPS",
    "FLOAT_RESULTS",
    "NUMPY_BINARY",
    "NUMPY_REDUCE",
    "NUMPY_UNARY",
    "REDUCE_METHODS",
    "UNARY_METHODS",
]

BINARY_OPS: dict[type[ast.operator], str] = {
    ast.Add: "add",
    ast.Sub: "subtract",
    ast.Mult: "multiply",
    ast.Div: "divide",
    ast.FloorDiv: "floor_divide",
    ast.Mod: "floor_mod",
    ast.Pow: "power",
    ast.BitAnd: "bitwise_and",
    ast.BitOr: "bitwise_or",
    ast.BitXor: "bitwise_xor",
    ast.LShift: "left_shift",
    ast.RShift: "right_shift",
    ast.MatMult: "matmul",
}
"""Python binary operators (``%`` is Python's modulo, whose sign follows the divisor; ``&``,
``|`` and ``^`` of bools are the logical operators, see :data:`BOOL_SPELLINGS`)."""

BOOL_SPELLINGS: dict[str, str] = {
    "bitwise_and": "logical_and",
    "bitwise_or": "logical_or",
    "bitwise_xor": "logical_xor",
    "bitwise_not": "logical_not",
}
"""The bitwise operators applied to bool tensors, as the logical operators they equal there
(the spelling the rest of the compiler knows best for bools: e.g. the VM evaluates a loop's
logical conditions in Python)."""

COMPARE_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "equal",
    ast.NotEq: "not_equal",
    ast.Lt: "less",
    ast.LtE: "less_equal",
    ast.Gt: "greater",
    ast.GtE: "greater_equal",
}

NUMPY_UNARY: dict[object, str] = {
    np.exp: "exp",
    np.log: "log",
    np.log2: "log2",
    np.log10: "log10",
    np.sqrt: "sqrt",
    np.tanh: "tanh",
    np.sin: "sin",
    np.cos: "cos",
    np.abs: "abs",
    np.absolute: "abs",
    np.sign: "sign",
    np.floor: "floor",
    np.ceil: "ceil",
    np.trunc: "trunc",
    np.negative: "negative",
    np.isnan: "isnan",
    np.isfinite: "isfinite",
    np.logical_not: "logical_not",
    np.invert: "bitwise_not",  # also np.bitwise_not and np.bitwise_invert
    np.copy: "copy",
}

FLOAT_RESULTS = frozenset({"exp", "log", "log2", "log10", "sqrt", "tanh", "sin", "cos"})
"""Operators whose numpy versions compute integer arguments in floating point."""

NUMPY_BINARY: dict[object, str] = {
    np.add: "add",
    np.subtract: "subtract",
    np.multiply: "multiply",
    np.divide: "divide",
    np.true_divide: "divide",
    np.floor_divide: "floor_divide",
    np.mod: "floor_mod",
    np.remainder: "floor_mod",
    np.power: "power",
    np.maximum: "maximum",
    np.minimum: "minimum",
    np.equal: "equal",
    np.not_equal: "not_equal",
    np.less: "less",
    np.less_equal: "less_equal",
    np.greater: "greater",
    np.greater_equal: "greater_equal",
    np.logical_and: "logical_and",
    np.logical_or: "logical_or",
    np.logical_xor: "logical_xor",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.left_shift: "left_shift",  # also np.bitwise_left_shift
    np.right_shift: "right_shift",  # also np.bitwise_right_shift
    np.matmul: "matmul",
    np.dot: "matmul",
}

NUMPY_REDUCE: dict[object, str] = {
    np.sum: "sum",
    np.mean: "mean",
    np.max: "max",
    np.amax: "max",
    np.min: "min",
    np.amin: "min",
    np.prod: "prod",
    np.argmax: "argmax",
    np.argmin: "argmin",
}

REDUCE_METHODS: dict[str, str] = {
    "sum": "sum",
    "mean": "mean",
    "max": "max",
    "min": "min",
    "prod": "prod",
    "argmax": "argmax",
    "argmin": "argmin",
}

UNARY_METHODS: dict[str, str] = {"copy": "copy"}
