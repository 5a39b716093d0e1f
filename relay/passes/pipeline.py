"""The standard optimization pipeline.

As in TVM's ``relay.build`` (``src/relay/backend/utils.cc``, ``GetPassPrefix``), the
pipeline is one :class:`Sequential` of passes, each with its own opt level, and the
:class:`PassContext` in force decides which run (``opt_level=2`` by default):

====  ==========================================================================
0     SimplifyInference, SimplifyExpr (and InferType before each pass needing types)
1     + Inline, RemoveUnusedFunctions, ToGraphNormalForm (so that patterns see
        through ``let``, the inlined bindings included), DeadCodeElimination
2     + FoldConstant
3     + EliminateCommonSubexpr, CanonicalizeOps
====  ==========================================================================

``ToGraphNormalForm`` runs early because the pattern-based passes match the dataflow graph
and the ``@relay`` frontend writes ``let`` bindings. ``DivToMul`` is not in the pipeline: it
changes results in the last place, so it is for users to ask for.
"""

from __future__ import annotations

from collections.abc import Iterable

from relay.passes.manager import Pass, Sequential, resolve_pass

# in running order; each pass runs when the context's opt level reaches its own
STANDARD: tuple[str, ...] = (
    "Inline",
    "RemoveUnusedFunctions",
    "ToGraphNormalForm",
    "SimplifyInference",
    "SimplifyExpr",
    "FoldConstant",
    "EliminateCommonSubexpr",
    "CanonicalizeOps",
    "FoldConstant",
    "SimplifyExpr",
    "DeadCodeElimination",
    "InferType",
)


def standard_pipeline(entry_functions: Iterable[str] = ("main",)) -> Sequential:
    """The standard passes in order (the :class:`PassContext` picks them by opt level);
    ``entry_functions`` are the globals RemoveUnusedFunctions keeps with their callees."""
    from relay.passes.remove_unused import RemoveUnusedFunctions

    entries = tuple(entry_functions)
    passes: list[Pass] = [
        RemoveUnusedFunctions(entries) if name == "RemoveUnusedFunctions" else resolve_pass(name)
        for name in STANDARD
    ]
    return Sequential(passes, name="StandardPipeline")
