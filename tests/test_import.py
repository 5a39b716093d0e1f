"""``import relay`` stays light: no TVM, no lark until they are needed."""

from __future__ import annotations

import json
import subprocess
import sys


def test_import_does_not_load_heavy_dependencies():
    code = (
        "import sys, json, relay\n"
        "print(json.dumps(sorted(m for m in ('tvm', 'lark', 'scipy', 'torch') if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_public_names():
    import relay

    for name in (
        "RelayError",
        "ParseError",
        "FrontendError",
        "TypeCheckError",
        "CompileError",
        "ExecutionError",
        "Module",
        "parse",
        "parse_expr",
        "astext",
        "structural_equal",
        "structural_hash",
        "interpret",
        "prelude",
        "flags",
    ):
        assert hasattr(relay, name), name
