"""Tiered compilation in a loop: a reference workload called N times from a cold kernel
cache, with and without tiers (docs/backend.md, "Tiered compilation").

Tiers make the first call sooner; the second tier's compilation then takes a core from the
calls that follow. This times both: the elapsed time at the 1st, 10th, 50th, ... call, each
setting in a fresh process with an empty cache directory, the settings alternated::

    python benchmarks/tiers.py mlp_train_step --calls 500 --rounds 3

The first call includes the program's tracing and compilation (not TVM's import).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MARKS = (1, 10, 50, 100, 200, 500, 1000, 2000)


def child(name: str, calls: int) -> None:
    """Call workload ``name`` ``calls`` times; print the elapsed ms at each of MARKS."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import workloads

    (workload,) = [w for w in workloads.WORKLOADS if w.name == name]
    args = workload.inputs()
    program = workloads.relay_programs()[name]
    marks = {}
    start = time.perf_counter()
    for i in range(1, calls + 1):
        program(*args)
        if i in MARKS or i == calls:
            marks[i] = round((time.perf_counter() - start) * 1e3, 1)
    print(json.dumps(marks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", default="mlp_train_step")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.workload, opts.calls)
        return
    settings = {"tiers": "1", "one tier": "0"}
    for r in range(opts.rounds):
        for label, tiers in settings.items():
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "RELAY_TIERS": tiers, "RELAY_CACHE_DIR": cache}
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        opts.workload,
                        "--calls",
                        str(opts.calls),
                        "--child",
                    ],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            marks = json.loads(out.strip().splitlines()[-1])
            shown = "  ".join(f"{k}: {v:.0f}" for k, v in marks.items())
            print(f"round {r + 1} {label:9s} ms at call  {shown}", flush=True)


if __name__ == "__main__":
    main()
