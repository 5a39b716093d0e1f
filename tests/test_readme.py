"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path


def test_readme_example_runs(capsys):
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.startswith(
        "fn [n: Shape](%x: Tensor[(n,), float32], %k: int32) -> Tensor[(n,), float32] {"
    )
