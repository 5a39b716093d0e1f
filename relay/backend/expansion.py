"""How large a kernel's expressions grow once its stages are inlined.

The lowering (:mod:`relay.backend.lower`) builds a kernel as a graph of ``te.compute``
stages, and the schedules inline every elementwise stage into the stages that read it. A
stage that reads another one twice (``sign(x)`` is ``x > 0 ? 1 : (x < 0 ? -1 : 0)``)
therefore holds two copies of the other's expression, and a chain of such stages grows
exponentially with its length. TVM's simplifier takes more than linear time in the size of
an expression, so compile time grows faster still: measured on the 2-core machine, an int32
``sign`` nested 4 deep took 19 s to compile, and ``argmin(sign(sign(sign(x))))`` 60 s (the
argmin's combiner reads its input five times). Found by a fuzzing review.

This module measures the growth on the stage graph, as TVM's inliner would produce it
(``te.schedule.AutoInlineElemWise``, and the ``compute_inline`` of the TensorIR schedules):

* :func:`expanded_selects` is the number of selects (``tirx.Select``, ``if_then_else``, the
  integer ``floordiv``/``floormod``, which TVM lowers to selects, and relay's bfloat16
  rounding) in a stage's expression
  with every inlined stage it reads substituted for the read. Selects, not all nodes, since
  they are what the simplifier's time goes to: it simplifies each branch under its
  condition, and pushes a comparison of a select into its branches. Arithmetic costs little
  (a product of 128 copies of an int32 input compiles in 0.03 s), and a fast ``tanh``, a
  polynomial of ~60 nodes with 2 selects, is read twice by its gradient ``1 - t * t``
  without harm (a barrier there would cost grad_tanh_sum a pass over memory);
* :func:`reads` is how often a stage's expression, so expanded, reads a given stage; a
  reduction counts its input once per use of the combiner's right operand (the value
  combined in), since the combiner is applied to the input expression.

Both are computed by memoized recursion over the graph, in time linear in its size (the
numbers themselves may be exponential). The lowering materializes (computes into a buffer of
its own, a *barrier*) an argument that an operator's lowering reads more than once where
the argument's expanded expression holds :data:`REPEAT_SELECTS` selects or more; the cost is
one more pass over memory, paid only where such an expression would be repeated (none of
the benchmark workloads has one). XLA's fusion weighs the same thing, a producer's
expression duplicated into a consumer that reads it more than once
(``FusionWouldDuplicate`` in ``xla/service/instruction_fusion.cc``), here applied to the
reads inside one operator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

REPEAT_SELECTS = 3
"""Selects in an argument's expanded expression from which an operator that reads it more
than once reads it materialized. ``sign(x)`` of an input has 2, ``sign(sign(x))`` 6, an int
``abs`` 1 (reading ``x`` three times) and two nested 4, ``where(v, v, a)`` of a ``where``
``v`` 3, an int ``divide`` 3 and ``floor_divide`` 4: so chains of ``sign`` or ``abs`` get a
barrier every second level (``sign`` nested 4 deep in int32: 19 s to compile before, 0.04
s). Measured in int32 before, read five times by argmin: ``sign(x)`` 0.14 s (no barrier:
it would cost a pass over memory), ``where(v, v, a)`` 5 s, ``floor_divide`` 0.97 s, ``sign``
three deep 60 s; with barriers 0.05 to 0.2 s."""


_SELECT_CALLS = frozenset({"tirx.if_then_else", "relay.round_bf16"})
"""Calls that count as selects: ``if_then_else``, and relay's bfloat16 rounding
(:data:`relay.op.lowering.elemwise.ROUND_BF16_OP`), lowered to a select of its bits bound by
a ``tirx.Let``: a bfloat16 ``sigmoid``, which cannot bind its argument, repeats it, and
``sigmoid(multiply(sigmoid(multiply(x, y)), y))`` took 3.6 s to compile, its roundings
repeated with it (found by a fuzzing review)."""


def _children(node: Any) -> Iterator[Any]:
    """The sub-expressions of the TIR expression ``node`` (its fields that are expressions,
    or arrays of them); a tensor read (``te.tensor_load``) has its indices."""
    from tvm import te
    from tvm.ir.expr import Expr

    def expression(v: Any) -> bool:
        return isinstance(v, Expr) and not isinstance(v, te.Tensor)

    for field in type(node).__tvm_ffi_type_info__.fields:
        value = getattr(node, field.name)
        if expression(value):
            yield value
        elif isinstance(value, list | tuple) or type(value).__name__ == "Array":
            yield from (v for v in value if expression(v))


def _read_tensor(node: Any) -> Any:
    """The ``te.Tensor`` that ``node`` reads, where it is a tensor read; else None."""
    from tvm import te
    from tvm.ir.expr import Call

    if isinstance(node, Call) and str(node.op.name) == "te.tensor_load":
        tensor = node.args[0]
        return tensor if isinstance(tensor, te.Tensor) else None
    return None


def _inlined(tensor: Any) -> bool:
    """Whether the schedules substitute ``tensor``'s expression for its reads: an
    elementwise stage (see :func:`relay.backend.lower.is_inlined_stage`), not a reduction."""
    from tvm import tirx

    from relay.backend.lower import is_inlined_stage

    return is_inlined_stage(tensor) and not isinstance(tensor.op.body[0], tirx.Reduce)


def expanded_selects(tensor: Any, memo: dict[Any, int] | None = None) -> int:
    """The number of selects in ``tensor``'s expression with the expressions of the inlined
    stages it reads substituted (0 for an input, a barrier or a reduction). ``memo`` keeps
    the counts of stages (by operation) across calls."""
    from tvm import tirx
    from tvm.ir.expr import Call

    if not _inlined(tensor):
        return 0
    memo = {} if memo is None else memo
    if tensor.op in memo:
        return memo[tensor.op]
    counts: dict[Any, int] = {}  # per node object: a node shared in the expression counts twice

    def count(node: Any) -> int:
        if node in counts:
            return counts[node]
        n = sum(count(c) for c in _children(node))
        if isinstance(node, tirx.Select | tirx.FloorDiv | tirx.FloorMod) or (
            isinstance(node, Call) and str(node.op.name) in _SELECT_CALLS
        ):
            n += 1
        read = _read_tensor(node)
        if read is not None:
            n += expanded_selects(read, memo)
        counts[node] = n
        return n

    memo[tensor.op] = sum(count(body) for body in tensor.op.body)
    return memo[tensor.op]


def reads(tensor: Any, source: Any, stop: frozenset[Any] = frozenset()) -> int:
    """How often ``tensor``'s expression, with its inlined stages substituted, reads the
    stage ``source`` (by operation, so any output of a multi-output stage). The search does
    not enter the stages whose operations are in ``stop`` (the other arguments of the rule
    that made ``tensor``: nothing it reads through them is made by the rule)."""
    from tvm import tirx

    memo: dict[Any, int] = {}

    def stage(t: Any) -> int:
        if t.op == source.op:
            return 1
        if t.op in stop or not _is_compute(t):
            return 0
        if t.op not in memo:
            memo[t.op] = sum(count(b) for b in t.op.body)
        return memo[t.op]

    counts: dict[Any, int] = {}

    def count(node: Any) -> int:
        if node in counts:
            return counts[node]
        read = _read_tensor(node)
        n = sum(count(c) for c in _children(node))
        if read is not None:
            n += stage(read)
        if isinstance(node, tirx.Reduce):
            uses = sum(_uses(r, set(node.combiner.rhs)) for r in node.combiner.result)
            n *= max(uses, 1)
        counts[node] = n
        return n

    return stage(tensor) if tensor.op != source.op else 0


def _is_compute(tensor: Any) -> bool:
    from tvm import te

    return isinstance(tensor.op, te.ComputeOp)


def _uses(node: Any, variables: set[Any]) -> int:
    """How often the expression ``node`` reads one of ``variables``, counting repeats."""
    if node in variables:
        return 1
    return sum(_uses(c, variables) for c in _children(node))
