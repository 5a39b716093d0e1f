"""Pass costs: every registered pass on a 100,000-binding let chain and on a 100,000-node
dataflow graph, both typed first (so required passes have nothing to do).

    .venv/bin/python benchmarks/passes.py

Prints, per pass, the median of three runs in milliseconds and the cost per node in
microseconds. A pass is linear when the per-node cost stays flat as the program grows; run
with ``--nodes 10000`` to compare.
"""

from __future__ import annotations

import argparse
import statistics
import time

import relay
from relay.ir import Expr, Function, Let, Module, TensorType, Var
from relay.passes import InferType, registered_passes, resolve_pass


def let_chain(n: int) -> Module:
    """``let %v_i = add(%v_{i-1}, 1f)`` n times, then the last variable."""
    x = Var("x", TensorType((2,), "float32"))
    one = relay.const(1.0)
    names = [Var(f"v{i}") for i in range(n)]
    body: Expr = names[-1]
    for i in reversed(range(n)):
        body = Let(names[i], relay.op.add(names[i - 1] if i else x, one), body)
    mod = Module()
    mod["main"] = Function((x,), body)
    return InferType()(mod)


def graph(n: int) -> Module:
    """The same computation as a dataflow graph (no lets): nested calls."""
    x = Var("x", TensorType((2,), "float32"))
    one = relay.const(1.0)
    body: Expr = x
    for _ in range(n):
        body = relay.op.add(body, one)
    mod = Module()
    mod["main"] = Function((x,), body)
    return InferType()(mod)


def median_ms(mod: Module, name: str, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        p = resolve_pass(name)
        start = time.perf_counter()
        p(mod)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    args = parser.parse_args()
    n = args.nodes
    programs = {"let chain": let_chain(n), "graph": graph(n)}
    width = max(len(p) for p in registered_passes())
    print(f"{'pass':<{width}}  " + "  ".join(f"{k:>24}" for k in programs))
    for name in registered_passes():
        cells = []
        for mod in programs.values():
            ms = median_ms(mod, name)
            cells.append(f"{ms:9.0f} ms {ms * 1000 / n:6.1f} us/node")
        print(f"{name:<{width}}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
