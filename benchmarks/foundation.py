"""Compile-time and interpreter costs of the foundation, on programs of 100,000 nodes.

    .venv/bin/python benchmarks/foundation.py

Prints the median of a few runs for: parsing the prelude, parsing/printing a 100,000-binding
graph, structural equality and hashing of it, and the reference interpreter running the
prelude's ``length`` on a 100,000-element list.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

import relay
from relay.backend.interpreter import Interpreter
from relay.ir import Call, Constructor, const
from relay.std import prelude_text

N = 100_000


def median_ms(fn: Callable[[], object], runs: int = 3) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    """Run and print the measurements."""
    relay.parse("def @warm() { () }")  # build the lark parser once
    text = prelude_text()
    print(
        f"parse prelude ({len(text.splitlines())} lines): {median_ms(lambda: relay.parse(text)):.1f} ms"
    )

    graph = "fn (%x: float32) {\n" + "".join(
        f"  %{i} = add({'%x' if i == 0 else f'%{i - 1}'}, 1f);\n" for i in range(N - 1)
    )
    graph += f"  %{N - 2}\n}}"
    parsed = relay.parse_expr(graph)
    print(f"parse {N}-binding graph: {median_ms(lambda: relay.parse_expr(graph), 1):.0f} ms")
    print(f"print it: {median_ms(lambda: relay.astext(parsed)):.0f} ms")
    other = relay.parse_expr(graph)
    print(f"structural_equal: {median_ms(lambda: relay.structural_equal(parsed, other)):.0f} ms")
    print(f"structural_hash: {median_ms(lambda: relay.structural_hash(parsed)):.0f} ms")

    mod = relay.prelude()
    cons = mod.get_constructor("Cons")
    nil: Constructor = mod.get_constructor("Nil")
    lst = Call(nil, ())
    for i in range(N):
        lst = Call(cons, (const(i), lst))
    machine = Interpreter(mod)
    value = machine.evaluate(lst)
    length = machine.global_closure(mod.get_global_var("length"))
    ms = median_ms(lambda: machine.call(length, [value]))
    assert int(np.asarray(machine.call(length, [value]))) == N
    print(f"interpret @length of a {N}-element list: {ms:.0f} ms")


if __name__ == "__main__":
    main()
