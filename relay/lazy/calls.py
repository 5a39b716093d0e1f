"""``@relay`` functions called on lazy tensors: recorded as one call.

A ``@relay`` function is specialized to its arguments' types (the same specialization a
call on numpy arrays makes) and recorded as a single node calling the specialized global.
At the barrier the trace's function calls that global, and the program built holds the
function's module: the loops and recursion inside it stay loops in the IR (the compiler
decides, as for any program, whether the call is inlined, unrolled or run by the VM),
instead of being unrolled into the trace by running its Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from relay.errors import TypeCheckError
from relay.ir.types import TensorType, TupleType, Type
from relay.lazy import ops
from relay.lazy.trace import (
    CALL,
    LazyError,
    Node,
    copied_node,
    count_recorded,
    project,
    user_span,
)

if TYPE_CHECKING:
    from relay.frontend.function import RelayFunction


class Callee:
    """A specialized ``@relay`` function in a trace (compared and hashed by identity, so
    a trace calling it keys the cache by this specialization)."""

    __slots__ = ("compiled",)

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Callee) and other.compiled is self.compiled

    def __hash__(self) -> int:
        return id(self.compiled)

    def __repr__(self) -> str:
        return f"@{self.compiled.global_var.name_hint}"


_CALLEES: dict[int, Callee] = {}


def record_call(fn: RelayFunction, args: tuple[Any, ...]) -> Any:
    """``fn(*args)`` recorded: a lazy tensor, or a tuple of them for a tuple result."""
    compiled = fn._compiled_for(args)
    func = compiled.module.functions[compiled.global_var]
    nodes = []
    for i, (a, p) in enumerate(zip(args, func.params, strict=True)):
        want = p.checked_type
        if not isinstance(want, TensorType):
            raise LazyError(
                f"{fn.__name__}: argument {i} is a {want}; a @relay function called on lazy "
                "tensors takes tensors and numbers",
                user_span(),
            )
        if ops.is_tensor(a):
            if a.type != want:
                raise TypeCheckError(
                    f"argument {i} of {fn.__name__} must be {want}, got {a.type}", user_span()
                )
            nodes.append(a.node)
        elif isinstance(a, np.ndarray | np.generic | int | float | bool):
            node = copied_node(a, str(want.dtype))
            if node.type != want:
                raise TypeCheckError(
                    f"argument {i} of {fn.__name__} must be {want}, got {node.type}",
                    user_span(),
                )
            nodes.append(node)
        else:
            raise LazyError(
                f"{fn.__name__}: argument {i} is a {type(a).__name__}; a @relay function "
                "called on lazy tensors takes tensors and numbers",
                user_span(),
            )
    callee = _CALLEES.setdefault(id(compiled), Callee(compiled))
    ret = func.checked_type.ret_type  # type: ignore[attr-defined]
    _check_result(fn, ret)
    node = Node(ret, CALL, tuple(nodes), (("function", callee),))
    count_recorded(node)
    return _results(node)


def _check_result(fn: RelayFunction, ty: Type) -> None:
    if isinstance(ty, TupleType):
        for f in ty.fields:
            _check_result(fn, f)
    elif not isinstance(ty, TensorType):
        raise LazyError(
            f"{fn.__name__} returns a {ty}: called on lazy tensors, a @relay function must "
            "return tensors or tuples of them",
            user_span(),
        )


def _results(node: Node) -> Any:
    if isinstance(node.type, TupleType):
        return tuple(_results(project(node, i)) for i in range(len(node.type.fields)))
    return ops.wrap(node)
