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
    ast.BitAnd: "logical_and",
    ast.BitOr: "logical_or",
    ast.BitXor: "logical_xor",
    ast.MatMult: "matmul",
}
"""Python binary operators (``%`` is Python's modulo, whose sign follows the divisor)."""

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
