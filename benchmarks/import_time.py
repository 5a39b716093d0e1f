"""Measure ``import relay`` in fresh processes (median of N), beside numpy's for scale.

.venv/bin/python benchmarks/import_time.py [N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys


def measure(module: str, runs: int) -> float:
    """Median seconds to import ``module`` in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times)


def main() -> None:
    """Print the import times."""
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    numpy_s = measure("numpy", runs)
    relay_s = measure("relay", runs)
    print(f"import numpy: {numpy_s * 1000:.1f} ms")
    print(f"import relay: {relay_s * 1000:.1f} ms ({relay_s / numpy_s:.2f}x numpy, includes numpy)")


if __name__ == "__main__":
    main()
