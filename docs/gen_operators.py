"""Generate docs/operators.md, the operator reference, from the operator registry.

    .venv/bin/python docs/gen_operators.py           # rewrite docs/operators.md
    .venv/bin/python docs/gen_operators.py --check   # exit 1 if docs/operators.md is out of date

Everything on the page comes from the registry (``relay.op.list_ops`` / ``get_op``, less the
operators that tests register, see :func:`is_relay_op`): each operator's description,
attribute schema (name, kind, default, choices), input count, fusion pattern and the first
line of its type relation's docstring, which states the type rule in one line. Operators are
grouped by the module of ``relay.op`` that defines them, found from the ``__module__`` of the
operator's numpy reference (else of its type relation); the test suite
(tests/test_operators_doc.py) fails when the page is out of date.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from relay.ir.printer import format_attr_value
from relay.ir.types import DTYPES
from relay.op import OpDef, OpPattern, get_op, list_ops
from relay.op.registry import AttrField

OUTPUT = Path(__file__).resolve().parent / "operators.md"
COMMAND = ".venv/bin/python docs/gen_operators.py"

FAMILY_ORDER = ("tensor", "elemwise", "transform", "reduce", "nn")
"""The families in page order; any other module of ``relay.op`` follows, alphabetically."""

NO_RELATION = "(no type relation yet)"
UNDOCUMENTED_RELATION = "(type relation without a docstring)"

PATTERNS: dict[str, str] = {
    "ELEMWISE": "each output element depends on the input element at the same index",
    "BROADCAST": "elementwise with numpy broadcasting of the inputs",
    "INJECTIVE": "each output element reads one input element (reshapes, slices, gathers)",
    "COMM_REDUCE": "a commutative reduction over some axes; elementwise successors fuse",
    "OUT_ELEMWISE_FUSABLE": "a complex operator whose output may absorb elementwise successors",
    "TUPLE": "builds or projects a tuple",
    "OPAQUE": "never fused",
}
"""One line on each fusion pattern (Relay's ``OpPatternKind``), for the page's legend."""

KINDS: dict[str, str] = {
    "int": "an integer",
    "float": "a number",
    "bool": "`True` or `False`",
    "str": "a string",
    "ints": "a list of integers",
    "floats": "a list of numbers",
    "int_or_ints": "an integer or a list of integers",
    "dtype": 'a dtype name such as `"float32"`',
    "any": "any attribute value (see the description)",
}
"""What each attribute kind accepts, for the page's legend."""


# ---- reading the registry -----------------------------------------------------------------------


def _modules(opdef: OpDef) -> list[str]:
    """The modules defining an operator's rules, most telling first: the numpy reference's,
    the type relation's, then those of the functions the relation closes over (a relation
    built by ``forward(rule)`` lives in relation.py but closes over its rule)."""
    candidates: list[object] = [opdef.reference, opdef.type_relation]
    closure = getattr(opdef.type_relation, "__closure__", None) or ()
    candidates.extend(cell.cell_contents for cell in closure if callable(cell.cell_contents))
    modules = (getattr(c, "__module__", None) for c in candidates if c is not None)
    return [m for m in modules if isinstance(m, str)]


def is_relay_op(opdef: OpDef) -> bool:
    """Whether ``opdef`` is one of relay's operators: its rules are defined in the package.

    Tests register operators of their own (with rules defined in the tests, or none) into the
    same registry; the page leaves those out.
    """
    return any(m == "relay" or m.startswith("relay.") for m in _modules(opdef))


def relay_ops() -> list[str]:
    """The names of relay's registered operators, sorted."""
    return [name for name in list_ops() if is_relay_op(get_op(name))]


def family(opdef: OpDef) -> str:
    """The family (module of ``relay.op``) that defined ``opdef``.

    The first of :func:`_modules` inside ``relay.op``; failing that, ``nn`` for ``nn.*``
    names and ``other`` for the rest.
    """
    for module in _modules(opdef):
        if module.startswith("relay.op."):
            found = module.removeprefix("relay.op.").split(".")[0]
            if found != "registry":
                return found
    return "nn" if opdef.name.startswith("nn.") else "other"


def family_summary(name: str) -> str:
    """The first paragraph of the family module's docstring, on one line ("" if none)."""
    try:
        module = importlib.import_module(f"relay.op.{name}")
    except ImportError:
        return ""
    doc = inspect.cleandoc(module.__doc__ or "")
    return " ".join(doc.split("\n\n")[0].split())


def type_rule(opdef: OpDef) -> str:
    """The first line of the type relation's docstring, or a note that there is none."""
    if opdef.type_relation is None:
        return NO_RELATION
    doc = inspect.cleandoc(getattr(opdef.type_relation, "__doc__", None) or "")
    first = doc.split("\n")[0].strip()
    return first or UNDOCUMENTED_RELATION


def input_names(opdef: OpDef) -> list[str]:
    """Names for the inputs: the reference's leading positional parameters where it has
    enough of them, else ``x1, x2, ...``; ``*args`` for a variadic operator."""
    if opdef.num_inputs < 0:
        return ["*args"]
    positional: list[str] = []
    try:
        params = inspect.signature(opdef.reference).parameters.values() if opdef.reference else []
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        positional.append(p.name)
    if len(positional) >= opdef.num_inputs:
        return positional[: opdef.num_inputs]
    return [f"x{i}" for i in range(1, opdef.num_inputs + 1)]


def format_value(value: object) -> str:
    """An attribute value as the text format writes it (``[1, 1]``, ``"NCHW"``, ``True``)."""
    try:
        return format_attr_value(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return repr(value)


def attr_kind(f: AttrField) -> str:
    """An attribute's kind for the table: ``str: "NCHW" or "NHWC"``, ``int or None``."""
    kind = f.kind
    shown = [c for c in f.choices if not (f.kind == "dtype" and set(DTYPES) <= set(f.choices))]
    if shown:
        kind += ": " + " or ".join(code(format_value(c)) for c in shown)
    if f.optional:
        kind += ", or None"
    return kind


def signature(opdef: OpDef) -> str:
    """``name(inputs..., attr=default, ...)``; a required attribute shows without a default."""
    parts = input_names(opdef)
    for f in opdef.attrs_schema:
        parts.append(f.name if f.required else f"{f.name}={format_value(f.default)}")
    return f"{opdef.name}({', '.join(parts)})"


# ---- markdown -----------------------------------------------------------------------------------


def code(text: str) -> str:
    """``text`` as an inline code span, fenced by more backticks than it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def prose(text: str) -> str:
    """``text`` with the characters Markdown would misread escaped, code spans left alone."""
    pieces = re.split(r"(`+[^`]*`+)", " ".join(text.split()))
    out = []
    for i, piece in enumerate(pieces):
        if i % 2:
            out.append(piece)
        else:
            out.append(re.sub(r"([\\*<\[\]])", r"\\\1", piece))
    return "".join(out)


def cell(text: str) -> str:
    """Table-cell content: pipes escaped (inside code spans too, as GFM requires)."""
    return text.replace("|", "\\|")


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``-``/``_`` dropped."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


def legend(name: str, meanings: dict[str, str]) -> str:
    """A legend entry: the name in code, then its meaning where one is written down."""
    meaning = meanings.get(name)
    return f"- {code(name)}: {meaning}" if meaning else f"- {code(name)}"


def op_section(opdef: OpDef) -> list[str]:
    """The page section of one operator."""
    lines = [f"### {code(opdef.name)}", ""]
    if opdef.doc:
        lines += [prose(opdef.doc), ""]
    rule = type_rule(opdef)
    inputs = "variadic" if opdef.num_inputs < 0 else str(opdef.num_inputs)
    lines += [
        f"- signature: {code(signature(opdef))}",
        f"- inputs: {inputs}",
        f"- fusion pattern: {code(opdef.pattern.name)}",
        f"- type rule: {rule if rule in (NO_RELATION, UNDOCUMENTED_RELATION) else code(rule)}",
        "",
    ]
    if opdef.attrs_schema:
        lines += ["| attribute | kind | default |", "|---|---|---|"]
        for f in opdef.attrs_schema:
            default = "required" if f.required else code(format_value(f.default))
            lines.append(f"| {code(f.name)} | {cell(attr_kind(f))} | {cell(default)} |")
        lines.append("")
    return lines


def render(names: Sequence[str] | None = None, lookup: Callable[[str], OpDef] = get_op) -> str:
    """The whole page for the operators ``names`` (default: :func:`relay_ops`)."""
    ops = [lookup(n) for n in (relay_ops() if names is None else names)]
    groups: dict[str, list[OpDef]] = {}
    for opdef in ops:
        groups.setdefault(family(opdef), []).append(opdef)
    order = [f for f in FAMILY_ORDER if f in groups]
    order += sorted(f for f in groups if f not in FAMILY_ORDER)
    with_rule = sum(1 for o in ops if o.type_relation is not None)

    lines = [
        "# Operator reference",
        "",
        f"<!-- Generated by docs/gen_operators.py from the operator registry; do not edit. "
        f"Regenerate with `{COMMAND}`. -->",
        "",
        f"{len(ops)} operators ({with_rule} with a type relation), grouped by the module of "
        "`relay.op` that defines them. For each: its signature as the text format writes a "
        "call (inputs, then attributes with their defaults), its fusion pattern, its type rule "
        "(the first line of its type relation's docstring) and its attributes. The type "
        "system itself is described in [type-system.md](type-system.md).",
        "",
        "In type rules, `s` is a shape, `d` a dtype and `(n, c, h, w)` a tensor of that shape; "
        "every dimension may be symbolic (`n`, `n * 3`) or `?` (known at run time only).",
        "",
    ]
    lines += ["| family | operators |", "|---|---|"]
    for f in order:
        lines.append(f"| [{f}](#{anchor(f)}) | {len(groups[f])} |")
    lines += ["", "Fusion patterns:", ""]
    used = {o.pattern.name for o in ops}
    lines += [legend(p.name, PATTERNS) for p in OpPattern if p.name in used]
    lines += ["", "Attribute kinds:", ""]
    lines += [legend(k, KINDS) for k in sorted({f.kind for o in ops for f in o.attrs_schema})]
    lines.append("")

    for f in order:
        lines += [f"## {f}", ""]
        summary = family_summary(f)
        if summary:
            lines += [f"`relay.op.{f}`: {summary}", ""]
        lines += ["| operator | pattern | description |", "|---|---|---|"]
        for o in groups[f]:
            first = prose(o.doc.split("\n")[0]) if o.doc else ""
            link = f"[{code(o.name)}](#{anchor(o.name)})"
            lines.append(f"| {link} | {code(o.pattern.name)} | {cell(first)} |")
        lines.append("")
        for o in groups[f]:
            lines += op_section(o)
    return "\n".join(lines).rstrip("\n") + "\n"


# ---- command line -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Write the page, or with ``--check`` report (exit status 1) whether it is out of date."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the page (%(default)s)")
    args: Any = parser.parse_args(argv)
    text = render()
    path: Path = args.output
    if args.check:
        current = path.read_text() if path.exists() else None
        if current != text:
            print(f"{path} is out of date; regenerate it with {COMMAND}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
