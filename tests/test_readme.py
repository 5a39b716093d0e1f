"""The README's Python example runs as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path


def test_readme_example_runs(capsys, tmp_path):
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2, "README has two python examples"
    for i, block in enumerate(blocks):
        path = tmp_path / f"readme_{i}.py"  # @relay reads the source of what it compiles
        path.write_text(block)
        runpy.run_path(str(path))
    out = capsys.readouterr().out
    assert out.startswith('#[version = "0.0.5"]\ndef @linear_loss(%a: Tensor[(1, 1), float32]')
    assert "fn [n: Shape](%x: Tensor[(n,), float32], %k: int32) -> Tensor[(n,), float32] {" in out
