"""Recording: the pending graph of lazy tensors.

A lazy tensor holds a :class:`Node`. A node is either *data* (a numpy array it owns: an
array the user handed over, a Python number mixed into the computation, or the result of
an earlier barrier) or *pending*: an operator of relay's registry applied to other nodes,
with its attributes. Recording an operation makes a pending node and infers its type at
once with the operator's type relation (:func:`relay.typecheck.calls.infer_call_type`,
memoized per operator, argument types and attributes), so a tensor's ``shape`` and
``dtype`` are known without running anything, and a shape error is reported at the line
that recorded it.

The tensors alive in the program are tracked with weak references: a barrier
(:mod:`relay.lazy.barrier`) computes the pending nodes of the live tensors and turns
them into data; pending nodes no tensor can reach any more are freed by Python. When the
number of operations recorded since the last barrier passes ``max_graph_size``, the
graph is cut: a barrier runs by itself, so a loop that never calls ``mark_step`` neither
grows its graph without bound nor compiles ever-larger programs.

This is the recording half of LazyTensor (Suhan et al., *LazyTensor: combining eager
execution with domain-specific compilers*, 2021, arXiv 2102.13267), with relay's IR in the
place of XLA's.
"""

from __future__ import annotations

import itertools
import os
import sys
import weakref
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

import numpy as np

from relay.errors import RelayError, TypeCheckError
from relay.ir.span import Span, register_source, source_text
from relay.ir.types import TensorType, TupleType, Type
from relay.typecheck.calls import infer_call_type

if TYPE_CHECKING:
    from relay.lazy.tensor import Tensor

_IDS = itertools.count()

GET = "#get"
"""The pseudo-operator of a projection from a tuple-valued node (``attrs``: the index)."""

TUPLE = "#tuple"
"""The pseudo-operator making a tuple of its inputs (what ``concatenate`` reads)."""

CALL = "#call"
"""A call of a ``@relay`` function (``attrs``: the specialized function, a
:class:`relay.lazy.calls.Callee`)."""


class Node:
    """One value of the lazy graph: data (``value`` set) or an operation pending."""

    __slots__ = ("__weakref__", "attrs", "error", "id", "inputs", "op", "span", "type", "value")

    def __init__(
        self,
        ty: Type,
        op: str | None = None,
        inputs: tuple[Node, ...] = (),
        attrs: tuple[tuple[str, Any], ...] = (),
        value: np.ndarray[Any, Any] | None = None,
        span: Span | None = None,
    ) -> None:
        self.id = next(_IDS)
        self.type = ty
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.value = value
        self.span = span
        self.error: Exception | None = None
        """Why computing this node failed at a barrier (it is then no longer pending: the
        error is raised again where its value is needed)."""

    @property
    def pending(self) -> bool:
        """Whether this node still has to be computed."""
        return self.value is None and self.error is None

    def materialize(self, value: np.ndarray[Any, Any]) -> None:
        """Become data: the operation and its inputs are dropped (and freed when nothing
        else holds them)."""
        self.value = value
        self.op = None
        self.inputs = ()
        self.attrs = ()

    def __repr__(self) -> str:
        what = "data" if self.value is not None else self.op
        return f"Node({self.id}, {what}, {self.type})"


def data_node(value: np.ndarray[Any, Any]) -> Node:
    """A node holding ``value`` (owned by the node from now on)."""
    return Node(tensor_type(value), value=value)


def copied_node(value: Any, dtype: Any = None) -> Node:
    """A node holding a read-only copy of ``value`` (an array, a number; in ``dtype``):
    later changes to the caller's array do not reach the trace."""
    arr = np.array(value, dtype=dtype, copy=True, order="C")
    arr.flags.writeable = False
    return data_node(arr)


_TENSOR_TYPES: dict[tuple[tuple[int, ...], np.dtype[Any]], TensorType] = {}


def tensor_type(value: np.ndarray[Any, Any]) -> TensorType:
    """The relay type of a numpy array."""
    key = (value.shape, value.dtype)
    ty = _TENSOR_TYPES.get(key)
    if ty is None:
        ty = _TENSOR_TYPES[key] = TensorType(tuple(int(d) for d in value.shape), str(value.dtype))
    return ty


# -- configuration -------------------------------------------------------------------------------


@dataclass
class Config:
    """Settings of lazy execution (``relay.lazy.config``)."""

    max_graph_size: int = 20_000
    """Operations recorded since the last barrier before the graph is cut (0: never)."""
    warn_fallbacks: bool = False
    """Warn (``RuntimeWarning``) each time an operation falls back to numpy."""
    target: str = "llvm"
    """What barriers compile for."""
    symbolic_shapes: bool = True
    """Compile a trace whose operations come back with other sizes once more for every
    size of the dimensions that changed (:mod:`relay.lazy.shapes`); False: per shape."""


CONFIG = Config()


# -- the live tensors ----------------------------------------------------------------------------


class _State:
    """What the recorder knows: the live tensors, and operations since the last barrier."""

    def __init__(self) -> None:
        self.live: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
        self.recorded = 0
        self.cutting = False
        self.tracing = 0  # functions being traced for a gradient (no barrier may run)


STATE = _State()


def track(t: Tensor) -> None:
    """Start tracking tensor ``t`` (every tensor made is tracked while it lives)."""
    STATE.live[id(t)] = t


def live_pending() -> list[Node]:
    """The pending nodes of the live tensors, oldest first (a deterministic order, so the
    same program makes the same trace)."""
    nodes = {t.node.id: t.node for t in list(STATE.live.values()) if t.node.pending}
    return [nodes[k] for k in sorted(nodes)]


# -- recording -----------------------------------------------------------------------------------

_TYPES: dict[tuple[Any, ...], Type] = {}
"""Memoized result types, by (operator, argument types, attributes)."""


def record(op: str, inputs: tuple[Node, ...], attrs: dict[str, Any] | None = None) -> Node:
    """A pending node applying ``op`` to ``inputs``: its type inferred now, a shape error
    raised here (a :class:`TypeCheckError` at the user's line)."""
    items = tuple(sorted(attrs.items())) if attrs else ()
    try:
        key = (op, tuple(n.type for n in inputs), items)
        ty = _TYPES.get(key)
    except TypeError:  # a list among the attributes
        items = _hashable(items)
        key = (op, tuple(n.type for n in inputs), items)
        ty = _TYPES.get(key)
    if ty is None:
        try:
            ty = infer_call_type(op, [n.type for n in inputs], dict(items))
        except TypeCheckError as err:
            raise TypeCheckError(err.message, user_span()) from None
        _TYPES[key] = ty
    for n in inputs:
        if n.error is not None:  # computed from a value that failed: fails the same way
            raise n.error
    node = Node(ty, op, inputs, items)
    count_recorded(node)
    return node


def count_recorded(node: Node) -> None:
    """Count a recorded operation; past ``max_graph_size`` since the last barrier, cut."""
    STATE.recorded += 1
    if (
        CONFIG.max_graph_size
        and STATE.recorded > CONFIG.max_graph_size
        and not (STATE.cutting or STATE.tracing)
    ):
        _cut(node)


def project(node: Node, index: int) -> Node:
    """Field ``index`` of a tuple-valued node."""
    assert isinstance(node.type, TupleType)
    return Node(node.type.fields[index], GET, (node,), (("index", index),))


def make_tuple(nodes: tuple[Node, ...]) -> Node:
    """A tuple of ``nodes``."""
    return Node(TupleType(tuple(n.type for n in nodes)), TUPLE, nodes)


def _cut(node: Node) -> None:
    """Compute the graph so far (with the new ``node``): it grew past ``max_graph_size``."""
    from relay.lazy.barrier import barrier

    STATE.cutting = True
    try:
        barrier("graph size limit", extra=(node,))
    finally:
        STATE.cutting = False


def _hashable(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return tuple(_hashable(x) for x in v)
    return v


# -- where in the user's program -----------------------------------------------------------------

_HERE = os.path.dirname(os.path.abspath(__file__))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))


def user_frame() -> FrameType | None:
    """The innermost frame outside relay.lazy and numpy: the user's line."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if not (name.startswith(_HERE) or name.startswith(_NUMPY)):
            return frame
        frame = frame.f_back
    return None


def user_span() -> Span | None:
    """The span of the expression the user's frame is running (its source registered, so
    errors quote the line with a caret)."""
    frame = user_frame()
    if frame is None:
        return None
    code = frame.f_code
    line, end_line, col, end_col = next(
        itertools.islice(code.co_positions(), frame.f_lasti // 2, None),
        (frame.f_lineno, frame.f_lineno, None, None),
    )
    line = line or frame.f_lineno
    name = code.co_filename
    if source_text(name) is None:
        try:
            with open(name, encoding="utf-8") as f:
                register_source(name, f.read())
        except OSError:
            pass
    if col is None:
        return Span(name, line, 1, line, 1)
    return Span(name, line, col + 1, end_line or line, (end_col or col) + 1)


def user_line() -> str:
    """``file:line`` of the user's frame (what the metrics count barriers by)."""
    frame = user_frame()
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class LazyError(RelayError):
    """A lazy-tensor operation the program asked for that cannot be done (an unsupported
    argument, an in-place update that would change a dtype)."""
