"""Random Python programs (straight-line code, branches, loops with break and continue,
early returns) compiled by @relay (run by the VM, or the graph executor when straight-line)
agree with Python running them and with the reference interpreter."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
from hypothesis import given, settings, strategies as st

import relay

VARS = ("a", "b", "c")
_counter = itertools.count()


@st.composite
def expressions(draw: st.DrawFn, depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from([*VARS, "1.5", "2", "0.5", "n"]))
    kind = draw(st.sampled_from(["bin", "bin", "call", "neg"]))
    if kind == "neg":
        return f"(-{draw(expressions(depth - 1))})"
    if kind == "call":
        fn = draw(st.sampled_from(["np.tanh", "np.abs", "np.sin"]))
        return f"{fn}({draw(expressions(depth - 1))})"
    op = draw(st.sampled_from(["+", "-", "*"]))
    return f"({draw(expressions(depth - 1))} {op} {draw(expressions(depth - 1))})"


@st.composite
def statements(draw: st.DrawFn, depth: int, indent: str, in_loop: bool) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["assign", "assign", "if", "for", "while", "jump"]))
        if depth == 0 and kind in ("if", "for", "while"):
            kind = "assign"
        if kind == "assign":
            v = draw(st.sampled_from(VARS))  # the vectors keep their shape (3,)
            out.append(f"{indent}{v} = np.tanh({draw(expressions())}) * 0.5 + {v} * 0.5")
        elif kind == "if":
            cond = f"np.sum({draw(expressions(1))}) > {draw(st.sampled_from(['0', '1', '-1']))}"
            out.append(f"{indent}if {cond}:")
            out += draw(statements(depth - 1, indent + "    ", in_loop))
            if draw(st.booleans()):
                out.append(f"{indent}else:")
                out += draw(statements(depth - 1, indent + "    ", in_loop))
        elif kind == "for":
            out.append(f"{indent}for i in range({draw(st.sampled_from(['n', '3', '1, n']))}):")
            out.append(f"{indent}    a = a + i * 0.25")
            out += draw(statements(depth - 1, indent + "    ", True))
        elif kind == "while":
            w = f"w{next(_counter)}"
            out.append(f"{indent}{w} = 0")
            out.append(f"{indent}while {w} < n:")
            out.append(f"{indent}    {w} = {w} + 1")
            out += draw(statements(depth - 1, indent + "    ", True))
        else:
            choices = ["return"] + (["break", "continue"] if in_loop else [])
            jump = draw(st.sampled_from(choices))
            guard = f"{indent}if np.sum({draw(expressions(1))}) > 0:"
            body = f"{indent}    return a + b, c" if jump == "return" else f"{indent}    {jump}"
            out += [guard, body]
    return out


@st.composite
def programs(draw: st.DrawFn) -> str:
    body = draw(statements(2, "    ", False))
    return "def program(a, b, c, n):\n" + "\n".join(body) + "\n    return a - b, c\n"


def load(source: str, tmp: Path) -> object:
    path = tmp / f"program_{next(_counter)}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program


@settings(max_examples=40, deadline=None)
@given(programs(), st.integers(0, 4))
def test_random_programs_agree_with_python(tmp_path_factory, source: str, n: int) -> None:
    fn = load(source, tmp_path_factory.mktemp("programs"))
    rng = np.random.default_rng(n)
    a, b, c = (rng.standard_normal(3).astype(np.float32) for _ in range(3))
    want = fn(a, b, c, n)
    rf = relay.function(fn)
    got = rf(a, b, c, np.int32(n))  # compiled: the VM when there is control flow
    interpreted = rf.interpret(a, b, c, np.int32(n))
    for g, i, w in zip(got, interpreted, want, strict=True):
        np.testing.assert_allclose(
            np.asarray(g), np.asarray(w, dtype=np.float32), rtol=1e-4, atol=1e-5, err_msg=source
        )
        np.testing.assert_allclose(np.asarray(g), i, rtol=1e-5, atol=1e-6, err_msg=source)
