"""docs/writing-passes.md: each Python example runs and prints what the comment after it says."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "writing-passes.md"


def python_blocks() -> list[str]:
    text = DOC.read_text()
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def test_the_guide_has_its_examples() -> None:
    assert len(python_blocks()) >= 4


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_examples_print_what_they_say(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = python_blocks()[index]
    lines = block.splitlines()
    # the expected output: the comment lines after the last line of code
    start = len(lines)
    while start > 0 and (lines[start - 1].startswith("# ") or lines[start - 1] == "#"):
        start -= 1
    expected = [line[2:] for line in lines[start:]]
    path = tmp_path / f"passes_example_{index}.py"
    path.write_text(block)
    runpy.run_path(str(path))
    assert capsys.readouterr().out.splitlines() == expected
