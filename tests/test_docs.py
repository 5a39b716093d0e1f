"""The runnable documentation runs: docs/tour.py executes without error."""

from __future__ import annotations

import runpy
from pathlib import Path


def test_tour_runs(capsys):
    runpy.run_path(str(Path(__file__).resolve().parent.parent / "docs" / "tour.py"))
    out = capsys.readouterr().out
    assert "0 + 1 + 2 + 3 + 4 = 10" in out


DOCS = Path(__file__).resolve().parent.parent / "docs"


def python_examples(name: str) -> list[str]:
    """The ```python blocks of a docs page."""
    text = (DOCS / name).read_text()
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def test_type_system_examples_print_what_they_say(capsys):
    for block in python_examples("type-system.md"):
        expected = [
            line.strip()[2:] for line in block.splitlines() if line.strip().startswith("# ")
        ]
        exec(compile(block, "type-system.md", "exec"), {})
        assert capsys.readouterr().out.splitlines() == expected


def test_type_system_error_example_is_what_the_checker_says():
    import relay

    text = (DOCS / "type-system.md").read_text()
    shown = text.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    program = shown[1]
    try:
        relay.infer_type(relay.parse_expr(program))
    except relay.TypeCheckError as err:
        assert str(err).splitlines() == shown
    else:
        raise AssertionError("the example must not type-check")
