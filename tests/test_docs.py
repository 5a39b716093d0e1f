"""The runnable documentation runs: docs/tour.py executes without error."""

from __future__ import annotations

import runpy
from pathlib import Path


def test_tour_runs(capsys):
    runpy.run_path(str(Path(__file__).resolve().parent.parent / "docs" / "tour.py"))
    out = capsys.readouterr().out
    assert "0 + 1 + 2 + 3 + 4 = 10" in out
