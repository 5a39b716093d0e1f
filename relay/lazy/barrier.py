"""Barriers: the pending graph lowered to one IR function, compiled (cached) and run.

At a barrier the pending nodes to compute (every live tensor's, or those ``sync`` names)
are collected with everything pending they depend on, in a deterministic order: the
*trace*. Its data nodes (arrays and the Python numbers mixed in) become the function's
parameters, so a trace that only sees new values -- the next batch, a new learning rate
-- is the same trace. The trace is keyed by its operations (operator, attributes, which
values each reads), which of them are results, and its parameters' types; the key is
looked up in the compile cache, and on a miss the trace is lowered to a relay
``Function`` (a ``let`` chain returning a tuple), compiled with :func:`relay.build` (the
whole pipeline: fusion, kernels, the disk cache) and cached. The compiled program runs on
the parameters' values and the computed nodes become data, dropping their operations.

A miss whose operations equal an earlier trace's is a *recompile*; the input types that
differ are recorded for ``relay.lazy.explain_recompiles()``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from relay import flags
from relay.backend.graph_executor import SymbolicGraphExecutor
from relay.ir.expr import Call, Expr, Function, Let, Tuple, TupleGetItem, Var
from relay.ir.module import Module
from relay.ir.types import Type
from relay.lazy.metrics import METRICS, RECOMPILES
from relay.lazy.shapes import fits, generalize, variables
from relay.lazy.trace import (
    CALL,
    CONFIG,
    GET,
    STATE,
    TUPLE,
    LazyError,
    Node,
    live_pending,
    user_line,
    user_span,
)
from relay.op.registry import get_op


@dataclass
class Trace:
    """The pending computation of some nodes: ``ops`` in dependency order, ``params`` the
    data they read, ``outputs`` the nodes wanted."""

    ops: list[Node]
    params: list[Node]
    outputs: list[Node]
    index: dict[int, tuple[str, int]]

    def structure(self) -> tuple[Any, ...]:
        """The operations, what each reads and which are wanted: equal for two traces
        that differ only in their data."""
        ix = self.index
        ops = tuple((n.op, n.attrs, tuple(ix[i.id] for i in n.inputs)) for n in self.ops)
        return (ops, tuple(ix[o.id] for o in self.outputs), len(self.params))

    def param_types(self) -> tuple[Type, ...]:
        """The parameters' types, in order."""
        return tuple(p.type for p in self.params)


def collect(roots: list[Node]) -> Trace:
    """The trace computing ``roots`` (pending nodes, no duplicates), walked without recursion
    in a fixed order: the same program makes the same trace."""
    ops: list[Node] = []
    params: list[Node] = []
    index: dict[int, tuple[str, int]] = {}
    stack: list[tuple[Node, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if node.id in index:
            continue
        if node.error is not None:  # computing it failed at an earlier barrier
            raise node.error
        if node.value is not None:
            index[node.id] = ("p", len(params))
            params.append(node)
        elif expanded:
            index[node.id] = ("n", len(ops))
            ops.append(node)
        else:
            stack.append((node, True))
            stack.extend((i, False) for i in reversed(node.inputs) if i.id not in index)
    return Trace(ops, params, roots, index)


def lower(trace: Trace, types: tuple[Type, ...] | None = None) -> Function:
    """The trace as a relay function: one parameter per data node, a ``let`` per operation,
    the wanted values returned as a tuple. With ``types`` (generalized by
    :func:`relay.lazy.shapes.generalize`) the parameters have those types, the function
    their shape variables, and the ``let``s no annotations (type inference gives them)."""
    given = types if types is not None else trace.param_types()
    params = [Var(f"p{i}", t) for i, t in enumerate(given)]
    bound: list[Var] = []

    def ref(node: Node) -> Expr:
        kind, i = trace.index[node.id]
        return params[i] if kind == "p" else bound[i]

    values: list[Expr] = []
    for j, node in enumerate(trace.ops):
        args = tuple(ref(i) for i in node.inputs)
        if node.op == GET:
            values.append(TupleGetItem(args[0], int(dict(node.attrs)["index"])))
        elif node.op == TUPLE:
            values.append(Tuple(args))
        elif node.op == CALL:
            values.append(Call(dict(node.attrs)["function"].compiled.global_var, args))
        else:
            opdef = get_op(str(node.op))
            values.append(Call(opdef.op, args, opdef.validate_attrs(dict(node.attrs))))
        bound.append(Var(f"x{j}", node.type if types is None else None))
    body: Expr = Tuple(tuple(ref(o) for o in trace.outputs))
    for var, value in zip(reversed(bound), reversed(values), strict=True):
        body = Let(var, value, body)
    return Function(tuple(params), body, type_params=variables(types) if types else ())


ENTRY = "lazy_trace"
"""The name of a trace's function in the program built."""


def program(trace: Trace, types: tuple[Type, ...] | None = None) -> Module:
    """The module to build for ``trace`` (its parameters of ``types``, see :func:`lower`):
    its function, and the modules of the ``@relay`` functions it calls (a global of the same
    name defined twice differently is an error)."""
    mod = Module()
    for node in trace.ops:
        if node.op != CALL:
            continue
        callee = dict(node.attrs)["function"].compiled.module
        for gv, func in callee.functions.items():
            if gv.name_hint in mod and mod.function(gv.name_hint) is not func:
                raise LazyError(
                    f"two @relay functions called in one trace define @{gv.name_hint} "
                    "differently; rename one"
                )
        mod.import_module(callee)
    if ENTRY in mod:
        raise LazyError(f"a @relay function called on lazy tensors is named {ENTRY}")
    mod.add(ENTRY, lower(trace, types))
    return mod


_CACHE: dict[Any, Any] = {}
"""Compiled traces, by structure and parameter types."""

_SEEN: dict[Any, tuple[Type, ...]] = {}
"""The parameter types each structure was last compiled for (generalized or not)."""

_GENERAL: dict[Any, tuple[tuple[Type, ...], Any]] = {}
"""Per structure, its generalized parameter types and their program (see
:mod:`relay.lazy.shapes`)."""

_STATIC: set[Any] = set()
"""Structures whose generalized program did not compile for the graph executor."""


def barrier(reason: str, nodes: list[Node] | None = None, extra: tuple[Node, ...] = ()) -> None:
    """Compute ``nodes`` (default: every live tensor's pending node, and ``extra``)."""
    for n in (*extra, *(nodes or ())):
        if n.error is not None:
            raise n.error
    roots = _wanted(nodes, extra)
    if not roots:
        return
    if STATE.tracing:
        raise LazyError(
            f"{reason} needs a value while a function is being differentiated: the gradient "
            "cannot flow through a computed value",
            user_span(),
        )
    METRICS.barriers[reason] += 1
    where = user_line()
    METRICS.barrier_lines[where] += 1
    if reason == "graph size limit":
        METRICS.graph_cuts += 1
    run(collect(roots), reason, where)
    if nodes is None:
        STATE.recorded = 0


def _wanted(nodes: list[Node] | None, extra: tuple[Node, ...] = ()) -> list[Node]:
    """The pending nodes to compute: ``nodes``, or every live tensor's and ``extra``; once
    each, oldest first."""
    candidates = live_pending() + list(extra) if nodes is None else nodes
    unique = {n.id: n for n in candidates if n.pending}
    return [unique[k] for k in sorted(unique)]


def run(trace: Trace, reason: str = "", where: str = "") -> None:
    """Compile (or find compiled) and run ``trace``; its outputs become data."""
    structure = trace.structure()
    types = trace.param_types()
    key = (structure, types)
    exe = _CACHE.get(key)
    if exe is None:
        general = _GENERAL.get(structure)
        if general is not None and fits(general[0], types):
            exe = general[1]
    if exe is None:
        METRICS.cache_misses += 1
        exe = _compile(trace, structure, types, reason, where)
    else:
        METRICS.cache_hits += 1
    start = time.perf_counter()
    try:
        outs = exe(*[p.value for p in trace.params])
    except Exception as err:
        # the wanted values cannot be computed: they stop being pending (later barriers
        # leave them out) and raise this error where they are needed
        for node in trace.outputs:
            node.error = err
        raise
    METRICS.execute_time += time.perf_counter() - start
    METRICS.traces_run += 1
    METRICS.record_size(len(trace.ops))
    for node, value in zip(trace.outputs, outs, strict=True):
        node.materialize(value)


def _compile(trace: Trace, structure: Any, types: tuple[Type, ...], reason: str, where: str) -> Any:
    """Compile ``trace``: for its types generalized (:mod:`relay.lazy.shapes`) when the
    same operations were compiled before for other sizes, else for its exact types."""
    import relay

    before = _SEEN.get(structure)
    general = None
    if (
        CONFIG.symbolic_shapes
        and before is not None
        and structure not in _STATIC
        and not any(n.op == CALL for n in trace.ops)
    ):
        general = generalize(before, types)
    start = time.perf_counter()
    exe = None
    if general is not None:
        try:
            exe = relay.build(program(trace, general), target=CONFIG.target, entry=ENTRY)
        except Exception as err:  # whatever fails, the trace still compiles for its shapes
            flags.debug_print(1, f"relay.lazy: the generalized trace does not compile: {err}")
        if exe is not None and not isinstance(exe.graph, SymbolicGraphExecutor):
            exe = None  # it would specialize per shape after all
        if exe is None:
            _STATIC.add(structure)
            general = None
    if exe is None or general is None:
        exe = relay.build(program(trace), target=CONFIG.target, entry=ENTRY)
        _CACHE[(structure, types)] = exe
    else:
        _GENERAL[structure] = (general, exe)
        METRICS.traces_generalized += 1
    METRICS.compile_time += time.perf_counter() - start
    METRICS.traces_compiled += 1
    _explain(before, types, general, trace, reason, where)
    _SEEN[structure] = general or types
    return exe


def _explain(
    before: tuple[Type, ...] | None,
    types: tuple[Type, ...],
    general: tuple[Type, ...] | None,
    trace: Trace,
    reason: str,
    where: str,
) -> None:
    head = f"compile {METRICS.traces_compiled} ({reason} at {where}): "
    if before is None:
        RECOMPILES.append(
            head + f"new operations ({len(trace.ops)} operations, {len(trace.params)} inputs)"
        )
        return
    diffs = [
        f"input {i}: {a} before, {b} now"
        for i, (a, b) in enumerate(zip(before, types, strict=True))
        if a != b
    ]
    text = head + "; ".join(diffs)
    if general is not None:
        names = ", ".join(v.name_hint for v in variables(general))
        shown = "; ".join(
            f"input {i}: {g}" for i, (g, t) in enumerate(zip(general, types, strict=True)) if g != t
        )
        text += f" -- compiled for every size of {names} ({shown})"
    RECOMPILES.append(text)


def clear_cache() -> None:
    """Forget the compiled traces (the kernel cache on disk stays)."""
    _CACHE.clear()
    _SEEN.clear()
    _GENERAL.clear()
    _STATIC.clear()


def pending_function(nodes: list[Node] | None = None) -> Function | None:
    """The function a barrier would compile now (for ``nodes``, default every live tensor's
    pending node), or None when nothing is pending."""
    roots = _wanted(nodes)
    return lower(collect(roots)) if roots else None
