#!/usr/bin/env python3
"""Set up the development environment and run the project's jobs.

    python3.11 dev.py demo    # create .venv, install relay with its pinned dependencies, run the demo
    python3.11 dev.py test    # the same setup, then ruff, ruff format --check, mypy and the test suite

Only the Python standard library is used here, so this works on a fresh machine
that has nothing but Python 3.11. The virtual environment is reinstalled when
pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".relay-install-stamp"


def run(*cmd: str | Path) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT)


def setup() -> None:
    """Create .venv and install relay (editable) with its dev extras, if not done already."""
    if sys.version_info < (3, 11):  # noqa: UP036  (a clear message on an old Python)
        sys.exit("relay needs Python 3.11 or newer")
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if PY.exists() and STAMP.exists() and STAMP.read_text() == digest:
        _bytecode()
        return
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    if run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip") != 0:
        sys.exit("pip upgrade failed")
    if run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]") != 0:
        sys.exit("installing relay failed")
    STAMP.write_text(digest)
    _bytecode()


def _bytecode() -> None:
    """Compile relay's bytecode now (up-to-date files are skipped), as an installed package
    has it: where PYTHONDONTWRITEBYTECODE is set, each process would otherwise compile the
    modules it imports, ~30 ms on a first call that imports the backend."""
    subprocess.call([str(PY), "-m", "compileall", "-q", "relay"], cwd=ROOT)


def demo() -> int:
    """Run the demo program."""
    return run(PY, "examples/demo.py")


def test() -> int:
    """Lint, type-check and run the whole test suite; non-zero if any step fails."""
    steps = [
        (
            "ruff check",
            [BIN / "ruff", "check", "relay", "tests", "examples", "benchmarks", "docs", "dev.py"],
        ),
        (
            "ruff format",
            [
                BIN / "ruff",
                "format",
                "--check",
                "relay",
                "tests",
                "examples",
                "benchmarks",
                "dev.py",
            ],
        ),
        ("mypy", [BIN / "mypy"]),
        ("pytest", [PY, "-m", "pytest", "-q", "-n", str(min(os.cpu_count() or 1, 4))]),
    ]
    failed = [name for name, cmd in steps if run(*cmd) != 0]
    if failed:
        print(f"FAILED: {', '.join(failed)}", flush=True)
        return 1
    print("all checks passed", flush=True)
    return 0


JOBS = {"demo": demo, "test": test, "setup": lambda: 0}


def main() -> int:
    """Entry point: ``dev.py demo|test|setup``."""
    if len(sys.argv) != 2 or sys.argv[1] not in JOBS:
        print(__doc__)
        return 2
    setup()
    return JOBS[sys.argv[1]]()


if __name__ == "__main__":
    sys.exit(main())
