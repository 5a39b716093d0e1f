"""The result type of one operator call, from its argument types.

:func:`infer_call_type` validates the attributes, checks the number of
arguments and solves the operator's type relation alone; it is what the
checker does for each call, usable directly to query or test a rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relay.errors import TypeCheckError
from relay.ir.span import Span
from relay.ir.types import Type
from relay.op.registry import AttrValidationError, get_op
from relay.typecheck.relation import is_complete
from relay.typecheck.solver import Solver


def infer_call_type(
    op: str,
    arg_types: Sequence[Type],
    attrs: Mapping[str, object] | None = None,
    span: Span | None = None,
) -> Type:
    """The type of ``op(args..., **attrs)`` for arguments of ``arg_types``.

    Raises :class:`TypeCheckError` (all errors combined) when the relation
    rejects the arguments or cannot determine the result.
    """
    opdef = get_op(op)
    try:
        validated = opdef.validate_attrs(dict(attrs or {}))
    except AttrValidationError as e:
        raise TypeCheckError(str(e), span) from None
    if opdef.num_inputs >= 0 and len(arg_types) != opdef.num_inputs:
        raise TypeCheckError(
            f"{op} expects {opdef.num_inputs} argument{'s' if opdef.num_inputs != 1 else ''}, "
            f"got {len(arg_types)}",
            span,
        )
    relation = opdef.rule("type_relation", span)
    solver = Solver()
    out = solver.fresh()
    solver.add_relation(op, relation, [*arg_types, out], validated, span)
    solver.solve()
    if solver.errors:
        raise TypeCheckError.combine(solver.errors)
    result = solver.resolve(out)
    if not is_complete(result):
        args = ", ".join(str(solver.resolve(t)) for t in arg_types)
        raise TypeCheckError(f"{op}: cannot infer the result type from ({args})", span)
    return result
