"""The reference interpreter: the semantics of every Relay program and every test's oracle.

:mod:`~relay.backend.interpreter.values` holds the run-time values (numpy arrays, tuples,
closures, constructor values, references) and :mod:`~relay.backend.interpreter.machine` the
evaluator, a continuation-stack machine that never recurses in Python, so that programs of
any depth (a 100,000-element list, a 100,000-binding let chain) run within the default
recursion limit.
"""

from relay.backend.interpreter.machine import DEFAULT_MAX_STACK_DEPTH, Interpreter, interpret
from relay.backend.interpreter.values import (
    Closure,
    ConstructorValue,
    Env,
    RefValue,
    Value,
    describe_value,
    format_value,
    from_python_list,
    to_python_list,
    to_value,
    values_equal,
)

__all__ = [
    "DEFAULT_MAX_STACK_DEPTH",
    "Closure",
    "ConstructorValue",
    "Env",
    "Interpreter",
    "RefValue",
    "Value",
    "describe_value",
    "format_value",
    "from_python_list",
    "interpret",
    "to_python_list",
    "to_value",
    "values_equal",
]
