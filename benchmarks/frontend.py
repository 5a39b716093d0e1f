"""Frontend costs: converting Python to IR, and running decorated loops on the interpreter.

    .venv/bin/python benchmarks/frontend.py

Prints the median of a few runs of: decorating a 1,000-statement function (the source is
read, parsed and converted; the lark parser and the prelude are built once beforehand),
its first call (conversion for the argument types and type inference) and a cached call;
and a 10,000-iteration loop, decorated, against the same function run by Python.
"""

from __future__ import annotations

import importlib.util
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import relay

STATEMENTS = 1000
ITERATIONS = 10_000


def median_ms(fn: Callable[[], object], runs: int = 3) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


SOURCE = (
    "import numpy as np\n\n\n"
    "def big(x, y):\n"
    + "".join(f"    x = np.tanh(x * {i % 7 + 1} + y) * 0.5\n" for i in range(STATEMENTS))
    + "    return x\n\n\n"
    "def loop(x, n):\n"
    "    total = 0\n"
    "    for i in range(n):\n"
    "        if i % 3 == 0:\n"
    "            continue\n"
    "        total = total + x * i\n"
    "    return total\n"
)


def main() -> None:
    """Run and print the measurements."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_programs.py"
        path.write_text(SOURCE)
        spec = importlib.util.spec_from_file_location("bench_programs", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        relay.prelude()  # build the text parser once, as any earlier use would
        relay.function(module.loop)

        x = np.ones(3, np.float32)
        decorate = median_ms(lambda: relay.function(module.big))
        first = median_ms(lambda: relay.function(module.big)(x, x)) - decorate
        f = relay.function(module.big)
        f(x, x)
        cached = median_ms(lambda: f(x, x))
        print(
            f"{STATEMENTS}-statement function: decorate {decorate:.0f} ms, first call "
            f"{first:.0f} ms, cached call {cached:.1f} ms"
        )

        g = relay.function(module.loop)
        g(x, 10)
        ours = median_ms(lambda: g(x, ITERATIONS))
        python = median_ms(lambda: module.loop(x, ITERATIONS))
        print(
            f"{ITERATIONS}-iteration loop: @relay (interpreter) {ours:.0f} ms, Python+numpy "
            f"{python:.0f} ms, ratio {ours / python:.1f}x"
        )


if __name__ == "__main__":
    main()
