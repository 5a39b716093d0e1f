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


def _kind_error_program() -> object:
    """``fn [A](%x: Tensor[(A,), float32])`` built in Python (the parser rejects it earlier)."""
    from relay.ir import Function, Var
    from relay.ir.types import TensorType, TypeVar

    a = TypeVar("A")
    x = Var("x", TensorType((a,), "float32"))
    return Function([x], x, type_params=[a])


_PRELUDE = "<prelude>\n"  # replaced by the prelude's text in the programs that use it
ERROR_TABLE_PROGRAMS = {
    "two types that must be equal differ": "def @main(%x: Tensor[(3, 4), float32]) "
    "-> Tensor[(4, 3), float32] { %x }",
    "a function's body against its declared result": "def @main(%x: Tensor[(3, 4), float32]) "
    "-> Tensor[(4, 3), float32] { %x }",
    "an argument against its parameter": "def @f(%x: Tensor[(5, 784), float32]) { %x }\n"
    "def @main(%y: Tensor[(5, 783), float32]) { @f(%y) }",
    "wrong number of arguments": [
        "def @f(%x: int32, %y: int32) { %x }\ndef @main() { @f(1, 2, 3) }",
        "def @main(%x: float32) { add(%x) }",
    ],
    "calling a non-function": "def @main(%x: int32) { %x(1) }",
    "an `if` condition that is not a bool scalar": "def @main(%x: int32) "
    "{ if (%x) { 1 } else { 2 } }",
    "`if` branches of different types": "def @main(%c: bool) { if (%c) { 1f } else { 2 } }",
    "`match` clauses of different types": _PRELUDE + "def @main(%o: Option[int32]) "
    "{ match (%o) { Some(%x) => 1f, None => 2 } }",
    "a pattern of the wrong type": _PRELUDE + "def @main(%o: int32) "
    "{ match (%o) { Some(%x) => 1, None => 2 } }",
    "a missing case": _PRELUDE + "def @main(%o: List[int32]) { match (%o) { Cons(%x, %r) => 1 } }",
    "a projection past the end": "def @main(%t: (int32, float32)) { %t.2 }",
    "an operator's rule": [
        "def @main(%x: Tensor[(3, 4), float32], %y: Tensor[(5,), float32]) { add(%x, %y) }",
        "def @main(%x: Tensor[(8, 784), float32], %w: Tensor[(10, 512), float32]) "
        "{ nn.dense(%x, %w) }",
        "def @main(%x: Tensor[(3,), float32], %y: Tensor[(3,), int32]) { add(%x, %y) }",
    ],
    "bad attributes": 'def @main(%x: Tensor[(3,), float32]) { sum(%x, axis="a") }',
    "an operator used as a tensor-only rule on a type variable": "def @main[A](%x: A) "
    "{ add(%x, %x) }",
    "not enough information": "def @main() { fn (%x) { %x } }",
    "an unknown global": "def @main() { @g(1) }",
    "an ill-kinded type": [
        _PRELUDE + "def @main(%x: List[int32, int32]) { %x }",
        _kind_error_program,
    ],
}


def _error_table() -> dict[str, list[str]]:
    text = (DOCS / "type-system.md").read_text()
    table = text.split("| cause | message |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines():
        cause, message = line.strip("|").split(" | ")
        rows[cause.strip()] = [m for m in message.split("`")[1::2]]
    return rows


def test_type_system_error_table_is_what_the_checker_says():
    """Each message in the docs' error table is produced by a program with that mistake
    (or contains it, for the rows that show the core of a message that a context prefixes;
    a trailing ``...`` stands for the rest of the message)."""
    import relay
    from relay.std import prelude_text

    rows = _error_table()
    assert set(rows) == set(ERROR_TABLE_PROGRAMS)
    for cause, documented in rows.items():
        programs = ERROR_TABLE_PROGRAMS[cause]
        said = []
        for program in programs if isinstance(programs, list) else [programs]:
            try:
                if callable(program):
                    relay.infer_type(program())
                else:
                    text = program.replace(_PRELUDE, prelude_text() + "\n", 1)
                    relay.infer_type(relay.parse(text))
            except relay.RelayError as err:
                said.extend(e.message for e in getattr(err, "errors", [err]))
            else:
                raise AssertionError(f"{cause}: the program must not type-check")
        for message in documented:
            stem = message.removesuffix("...")
            assert any(stem in s for s in said), (cause, message, said)


def test_backend_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (block,) = python_examples("backend.md")
    script = tmp_path / "backend_example.py"  # @relay reads its functions' source file
    script.write_text(block)
    runpy.run_path(str(script))
    assert capsys.readouterr().out.splitlines() == ["['fused_dense_add_relu_0']"]
    assert (tmp_path / "layer.relay").is_file()


def test_partial_evaluation_example_is_what_the_pass_prints():
    import relay
    from relay.passes import PartialEvaluate

    blocks, block = [], None
    for line in (DOCS / "partial-evaluation.md").read_text().splitlines(keepends=True):
        if line.startswith("```"):
            if block is None:
                block = []
            else:
                blocks.append("".join(block))
                block = None
        elif block is not None:
            block.append(line)
    source = next(b for b in blocks if b.startswith("def @main"))
    printed = next(b for b in blocks if b.startswith("fn (%x"))
    mod = relay.infer_type(relay.parse('#[version = "0.0.5"]\n' + source))
    assert relay.astext(PartialEvaluate()(mod)["main"]) + "\n" == printed


def test_lazy_examples_print_what_they_say(capsys):
    import relay.lazy as lz

    blocks = [b for b in python_examples("lazy.md") if "# " in b and "print(" in b]
    assert len(blocks) == 3
    for block in blocks:
        lz.mark_step()
        lz.reset_metrics()
        expected = [
            line.strip()[2:] for line in block.splitlines() if line.strip().startswith("# ")
        ]
        exec(compile(block, "lazy.md", "exec"), {})
        assert capsys.readouterr().out.splitlines() == expected
