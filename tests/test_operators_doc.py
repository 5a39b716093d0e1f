"""docs/operators.md: generated from the operator registry by docs/gen_operators.py, up to date.

The page must be what the generator writes now (regenerate it with
``.venv/bin/python docs/gen_operators.py``), list every registered operator in its family's
section with its signature, fusion pattern and type rule, and the generator's pieces (family
detection, value spelling, Markdown escaping, check mode) must behave.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from relay.ir.attrs import Attrs
from relay.ir.expr import Op
from relay.ir.types import Type
from relay.op import OpDef, OpPattern, attr, get_op, list_ops
from relay.typecheck.relation import Reporter, forward, identity_rel

DOCS = Path(__file__).resolve().parent.parent / "docs"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_operators", DOCS / "gen_operators.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()
PAGE = (DOCS / "operators.md").read_text()


def sections(text: str) -> dict[str, str]:
    """Each operator's section of the page, by operator name."""
    out: dict[str, str] = {}
    for chunk in text.split("\n### `")[1:]:
        name, _, body = chunk.partition("`\n")
        out[name] = body.split("\n## ")[0]
    return out


def test_the_page_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    status = gen.main(["--check"])
    err = capsys.readouterr().err
    assert status == 0, err + "\n(regenerate with .venv/bin/python docs/gen_operators.py)"


def own_ops() -> list[str]:
    """The registered operators but those tests register (named ``test_<module>.<name>``)."""
    return [name for name in list_ops() if not name.startswith("test_")]


def test_every_registered_operator_has_a_section() -> None:
    assert sorted(sections(PAGE)) == own_ops()
    assert gen.relay_ops() == own_ops()


def test_each_section_shows_the_registry_entry() -> None:
    found = sections(PAGE)
    for name in own_ops():
        opdef = get_op(name)
        body = found[name]
        assert f"- signature: `{gen.signature(opdef)}`" in body, name
        assert f"- fusion pattern: `{opdef.pattern.name}`" in body, name
        assert gen.type_rule(opdef) in body, name
        for f in opdef.attrs_schema:
            assert f"| `{f.name}` |" in body, (name, f.name)


def test_operators_appear_under_their_family() -> None:
    headings = [line for line in PAGE.splitlines() if line.startswith(("## ", "### "))]
    family = None
    seen: dict[str, str] = {}
    for line in headings:
        if line.startswith("## "):
            family = line[3:]
        else:
            assert family is not None
            seen[line[5:-1]] = family
    assert seen["add"] == "tensor"
    assert seen["exp"] == "elemwise"
    assert seen["reshape"] == "transform"
    assert seen["sum"] == "reduce"
    assert seen["variance"] == "reduce"
    assert seen["nn.conv2d"] == "nn"
    assert all(seen[name] == gen.family(get_op(name)) for name in own_ops())


def test_the_reductions_show_their_rules() -> None:
    body = sections(PAGE)["sum"]
    assert "- signature: `sum(data, axis=None, keepdims=False, exclude=False)`" in body
    assert (
        "- type rule: `Tensor[s, d] -> Tensor[s without the reduced axes (1 there if keepdims), "
        "d].`" in body
    )
    assert "| `axis` | int_or_ints, or None | `None` |" in body
    assert "- signature: `variance(data, mean, axis=None" in sections(PAGE)["variance"]


def test_check_mode_reports_a_stale_or_missing_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "operators.md"
    assert gen.main(["--check", "--output", str(page)]) == 1
    assert "is out of date; regenerate it with .venv/bin/python docs/gen_operators.py" in (
        capsys.readouterr().err
    )
    assert gen.main(["--output", str(page)]) == 0
    assert page.read_text() == PAGE
    assert gen.main(["--check", "--output", str(page)]) == 0
    page.write_text(PAGE.replace("COMM_REDUCE", "OPAQUE", 1))
    assert gen.main(["--check", "--output", str(page)]) == 1


# ---- the generator's pieces, on operators made up for the test (never registered) --------------


def fake(name: str, num_inputs: int = 1, **fields: Any) -> OpDef:
    return OpDef(name=name, num_inputs=num_inputs, op=Op(name), **fields)


def documented_rule(args: list[Type], attrs: Attrs, reporter: Reporter) -> Type:
    """A | B -> C, with a pipe.

    More lines that the page leaves out.
    """
    raise AssertionError("never run")


def test_family_detection() -> None:
    assert gen.family(get_op("sum")) == "reduce"
    assert gen.family(get_op("add")) == "tensor"
    assert gen.family(get_op("nn.dense")) == "nn"
    # a numpy function as the reference says nothing: the relation's module decides ...
    rel = forward(documented_rule)
    assert gen.family(fake("f", reference=np.exp, type_relation=rel)) == "other"
    # ... or the rule a forward() relation closes over, when it lives in relay.op
    closing = get_op("sum").type_relation
    assert gen.family(fake("g", reference=np.exp, type_relation=closing)) == "reduce"
    assert gen.family(fake("h", type_relation=identity_rel)) == "other"
    assert gen.family(fake("nn.h", reference=np.exp)) == "nn"


def test_operators_registered_by_tests_are_left_out() -> None:
    assert not gen.is_relay_op(fake("test_x.bare"))
    assert not gen.is_relay_op(fake("test_x.local", reference=lambda x: x))
    assert not gen.is_relay_op(fake("test_x.numpy", reference=np.exp))
    assert gen.is_relay_op(fake("y", reference=np.exp, type_relation=identity_rel))
    assert gen.is_relay_op(fake("z", reference=get_op("sum").reference))


def test_type_rule_lines() -> None:
    assert gen.type_rule(fake("a")) == "(no type relation yet)"
    assert gen.type_rule(fake("b", type_relation=lambda *a: True)) == (
        "(type relation without a docstring)"
    )
    assert gen.type_rule(fake("c", type_relation=documented_rule)) == "A | B -> C, with a pipe."


def test_signatures_and_attribute_kinds() -> None:
    def ref(x: object, y: object, *, size: object, mode: object) -> object:
        return x

    op = fake(
        "demo",
        num_inputs=2,
        reference=ref,
        attrs_schema=(
            attr("size", "ints"),
            attr("mode", "str", "fast", choices=["fast", "exact"]),
            attr("dtype", "dtype", "float32", choices=["int32", "int64"]),
            attr("rate", "float", 1e-05),
            attr("axis", "int", None, optional=True),
        ),
    )
    assert gen.signature(op) == (
        'demo(x, y, size, mode="fast", dtype="float32", rate=1e-05f, axis=None)'
    )
    kinds = [gen.attr_kind(f) for f in op.attrs_schema]
    assert kinds == [
        "ints",
        'str: `"fast"` or `"exact"`',
        'dtype: `"int32"` or `"int64"`',
        "float",
        "int, or None",
    ]
    # input names fall back to x1, x2 without a fitting reference; variadic shows *args
    assert gen.signature(fake("bare", num_inputs=3)) == "bare(x1, x2, x3)"
    assert gen.signature(fake("var", num_inputs=-1)) == "var(*args)"
    assert gen.signature(fake("none", num_inputs=0, attrs_schema=(attr("n", "int", 0),))) == (
        "none(n=0)"
    )


def test_markdown_escaping() -> None:
    assert gen.code("a | b") == "`a | b`"
    assert gen.code("x`y") == "``x`y``"
    assert gen.code("`x`") == "`` `x` ``"
    assert gen.prose("x * y < z, a[i], ``keep * this``") == (
        "x \\* y \\< z, a\\[i\\], ``keep * this``"
    )
    assert gen.cell("`a | b`") == "`a \\| b`"
    assert gen.anchor("nn.conv2d") == "nnconv2d"
    assert gen.anchor("floor_divide") == "floor_divide"


def test_a_section_with_a_piped_rule_renders_as_one_list_item() -> None:
    op = fake(
        "piped",
        type_relation=documented_rule,
        pattern=OpPattern.INJECTIVE,
        doc="Does *this*.",
        attrs_schema=(attr("k", "str", "a", choices=["a", "b|c"]),),
    )
    assert gen.op_section(op) == [
        "### `piped`",
        "",
        "Does \\*this\\*.",
        "",
        '- signature: `piped(x1, k="a")`',
        "- inputs: 1",
        "- fusion pattern: `INJECTIVE`",
        "- type rule: `A | B -> C, with a pipe.`",
        "",
        "| attribute | kind | default |",
        "|---|---|---|",
        '| `k` | str: `"a"` or `"b\\|c"` | `"a"` |',
        "",
    ]


def test_render_covers_the_given_operators_only() -> None:
    text = gen.render(["sum", "add"])
    assert sorted(sections(text)) == ["add", "sum"]
    assert "2 operators (2 with a type relation)" in text
    assert text.index("## tensor") < text.index("## reduce")
