"""docs/frontend.md and docs/autodiff.md: their Python examples run and print what they say;
frontend.md's error example is what the frontend reports."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
DOC = DOCS / "frontend.md"


def python_blocks(page: str = "frontend.md") -> list[str]:
    text = (DOCS / page).read_text()
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


EXAMPLES = [
    (page, index)
    for page in ("frontend.md", "autodiff.md")
    for index in range(len(python_blocks(page)))
]


@pytest.mark.parametrize(("page", "index"), EXAMPLES)
def test_examples_print_what_they_say(page, index, tmp_path, capsys):
    block = python_blocks(page)[index]
    expected = [
        line[2:] if line.startswith("# ") else ""
        for line in block.splitlines()
        if line.startswith("# ") or line == "#"
    ]
    path = tmp_path / f"{page[:-3]}_example_{index}.py"
    path.write_text(block)  # @relay reads the source of the functions it compiles
    runpy.run_path(str(path))
    assert capsys.readouterr().out.splitlines() == expected


def test_the_error_example_is_what_the_frontend_says(tmp_path):
    import relay

    section = DOC.read_text().split("## Errors", 1)[1]
    shown, rest = section.split("```\n", 1)[1].split("```", 1)
    program = rest.split("```\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.py"
    path.write_text(program)
    with pytest.raises(relay.FrontendError) as info:
        runpy.run_path(str(path))
    assert str(info.value).replace(str(path), "example.py") == shown.rstrip("\n")
