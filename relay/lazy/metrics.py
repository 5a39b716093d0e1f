"""Counters and timings of lazy execution (``relay.lazy.metrics()``), and the reasons for
each compilation (``relay.lazy.explain_recompiles()``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

SIZES_KEPT = 10_000
"""Graph sizes kept in :attr:`Metrics.graph_sizes`, the latest."""


@dataclass
class Metrics:
    """What lazy execution has done since the process started (or the last ``reset``).

    ``barriers`` counts barriers by reason (``"mark_step"``, ``"sync"``, ``"numpy()"``,
    ``"float()"``, ``"bool()"``, ``"print"``, ``"graph size limit"``, ``"fallback"``, ...)
    and ``barrier_lines`` by the line of the user's program that forced them
    (``file:line``). ``fallbacks`` counts operations run by numpy on materialized values
    because relay has no operator for them, by name. Times are in seconds; graph sizes are
    the operations of each trace run (the last :data:`SIZES_KEPT`)."""

    traces_compiled: int = 0
    traces_generalized: int = 0
    """Of the traces compiled, those compiled for every size of some dimensions
    (:mod:`relay.lazy.shapes`)."""
    cache_hits: int = 0
    cache_misses: int = 0
    compile_time: float = 0.0
    execute_time: float = 0.0
    traces_run: int = 0
    graph_sizes: list[int] = field(default_factory=list)
    barriers: Counter[str] = field(default_factory=Counter)
    barrier_lines: Counter[str] = field(default_factory=Counter)
    fallbacks: Counter[str] = field(default_factory=Counter)
    graph_cuts: int = 0

    def record_size(self, ops: int) -> None:
        """Count a trace of ``ops`` operations run (the list stays bounded: a training loop
        runs a trace per step)."""
        self.graph_sizes.append(ops)
        if len(self.graph_sizes) > SIZES_KEPT:
            del self.graph_sizes[: len(self.graph_sizes) - SIZES_KEPT]

    def __str__(self) -> str:
        sizes = self.graph_sizes
        lines = [
            f"traces run {self.traces_run}, compiled {self.traces_compiled} "
            f"({self.traces_generalized} for symbolic sizes; cache hits {self.cache_hits}, "
            f"misses {self.cache_misses})",
            f"compile time {self.compile_time:.3f} s, execute time {self.execute_time:.3f} s",
            f"graph sizes: last {sizes[-1] if sizes else 0}, largest {max(sizes, default=0)}",
            f"graph cuts {self.graph_cuts}",
            "barriers: " + ", ".join(f"{k} {v}" for k, v in self.barriers.most_common()),
            "barrier lines: " + ", ".join(f"{k} {v}" for k, v in self.barrier_lines.most_common(5)),
            "fallbacks: "
            + (", ".join(f"{k} {v}" for k, v in self.fallbacks.most_common()) or "none"),
        ]
        return "\n".join(lines)


METRICS = Metrics()

RECOMPILES: list[str] = []
"""Why each trace after the first was compiled, in order."""


def metrics() -> Metrics:
    """The counters and timings of lazy execution (see :class:`Metrics`)."""
    return METRICS


def reset_metrics() -> None:
    """Zero the counters and forget the recompile explanations (the compile cache stays)."""
    global METRICS
    fresh = Metrics()
    for name in fresh.__dataclass_fields__:
        setattr(METRICS, name, getattr(fresh, name))
    RECOMPILES.clear()


def explain_recompiles() -> list[str]:
    """Why each compilation happened, in order: for a trace whose operations equal an
    earlier trace's, which inputs' types differ (``"input 2: Tensor[(32, 784), float32]
    before, Tensor[(48, 784), float32] now"``); otherwise that the operations are new."""
    return list(RECOMPILES)
