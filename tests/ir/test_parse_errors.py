"""Parse errors: the exact message, the span, and the rendered ``file:line:col: message``, source
line and caret underline, for a table of malformed inputs (syntax, literals, names, arities,
attributes, metadata, headers and comments)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import relay
from relay.ir.parser import parse, parse_expr, parse_type
from relay.op import registry
from relay.op.registry import attr, register_op

SOURCE = "bad.rly"
LIST = "type List[A] { Cons(A, List[A]), Nil }\n"

PARSERS: dict[str, Callable[[str, str], object]] = {
    "expr": parse_expr,
    "module": parse,
    "type": parse_type,
}


@pytest.fixture(autouse=True)
def ops_with_attributes() -> Iterator[None]:
    """Operators with attribute schemas, registered for these tests only."""
    register_op(
        "test_errors.conv",
        2,
        attrs=[
            attr("padding", "ints", (0, 0)),
            attr("data_layout", "str", "NCHW", choices=("NCHW", "NHWC")),
            attr("groups", "int", 1),
        ],
    )
    register_op("test_errors.sum", 1, attrs=[attr("axis", "int")])
    try:
        yield
    finally:
        del registry._REGISTRY["test_errors.conv"]
        del registry._REGISTRY["test_errors.sum"]


# (parser, text, message, line, column, underline of that line)
CASES: list[tuple[str, str, str, int, int, str]] = [
    # -- syntax --------------------------------------------------------------------------------
    (
        "expr",
        "free_var %x; (%x, 1",
        'unexpected end of input; expected one of: ")", ","',
        1,
        20,
        "                   ^",
    ),
    ("expr", "let %x = ; %x", 'unexpected ";"; expected an expression', 1, 10, "         ^"),
    ("expr", "fn (%x) { %x", 'unexpected end of input; expected "}"', 1, 13, "            ^"),
    ("expr", "1 +", "unexpected end of input; expected an expression", 1, 4, "   ^"),
    (
        "expr",
        "1 $ 2",
        'unexpected character "$"; expected one of: "(", "-", ".", ";", a metadata section, '
        "an operator, end of input",
        1,
        3,
        "  ^",
    ),
    (
        "module",
        "def @f() { 1 }\nlet",
        'unexpected "let"; expected one of: "def", "extern", "type", a metadata section, '
        "end of input",
        2,
        1,
        "^^^",
    ),
    (
        "module",
        "def @f(%x: Tensor[(1), float32) { %x }",
        'unexpected ")"; expected "]"',
        1,
        31,
        "                              ^",
    ),
    (
        "expr",
        "free_var %x; match (%x) { _ %x }",
        'unexpected "%x"; expected "=>"',
        1,
        29,
        "                            ^^",
    ),
    (
        "expr",
        "if (True) { 1 }",
        'unexpected end of input; expected "else"',
        1,
        16,
        "               ^",
    ),
    (
        "type",
        "Tensor[(1), float32",
        'unexpected end of input; expected "]"',
        1,
        20,
        "                   ^",
    ),
    (
        "expr",
        "free_var %x; %x.y",
        "unknown variable %x.y",
        1,
        14,
        "             ^^^^",
    ),
    (
        "expr",
        "free_var %x; %x.0.a",
        'unexpected "a"; expected a tuple index',
        1,
        19,
        "                  ^",
    ),
    ("expr", 'fn (a="abc) { 1 }', "unterminated string", 1, 7, "      ^"),
    ("expr", "/* a /* nested */ comment", "unterminated block comment", 1, 1, "^^"),
    (
        "module",
        '#[version = "0.0.4"]\ndef @f() { 1 }',
        'unsupported text format version "0.0.4"; relay reads version "0.0.5"',
        1,
        1,
        "^^^^^^^^^^^^^^^^^^^^",
    ),
    (
        "module",
        "#[foo]\ndef @f() { 1 }",
        'unsupported header #[foo]; expected #[version = "0.0.5"] or #[metadata]',
        1,
        1,
        "^^^^^^",
    ),
    # -- literals ------------------------------------------------------------------------------
    (
        "expr",
        "add(1, 32768i16)",
        "literal 32768 out of range for int16",
        1,
        8,
        "       ^^^^^^^^",
    ),
    ("expr", "-129i8", "literal -129 out of range for int8", 1, 1, "^^^^^^"),
    ("expr", "256u8", "literal 256 out of range for uint8", 1, 1, "^^^^^"),
    ("expr", "(1, -1u8)", "literal -1 out of range for uint8", 1, 5, "    ^^^^"),
    ("expr", "2147483648", "literal 2147483648 out of range for int32", 1, 1, "^^^^^^^^^^"),
    (
        "expr",
        "18446744073709551616u64",
        "literal 18446744073709551616 out of range for uint64",
        1,
        1,
        "^^^^^^^^^^^^^^^^^^^^^^^",
    ),
    ("expr", "1e39f", "literal 1e39 out of range for float32", 1, 1, "^^^^^"),
    ("expr", "70000f16", "literal 70000 out of range for float16", 1, 1, "^^^^^^^^"),
    ("expr", "1e309f64", "literal 1e309 out of range for float64", 1, 1, "^^^^^^^^"),
    ("expr", "1x", "unknown literal suffix x in 1x", 1, 1, "^^"),
    ("expr", "1.5i32", "integer suffix i32 on non-integral literal 1.5", 1, 1, "^^^^^^"),
    ("type", "Tensor[(1.5), float32]", "invalid dimension 1.5", 1, 9, "        ^^^"),
    # -- names ---------------------------------------------------------------------------------
    ("expr", "add(%y, 1)", "unknown variable %y", 1, 5, "    ^^"),
    (
        "expr",
        "if (True) { %0 = 1; %0 } else { %0 }",
        "unknown variable %0",
        1,
        33,
        "                                ^^",
    ),
    (
        "module",
        "def @f(%x: int32) {\n  %x + @g(%x)\n}",
        "unknown global @g",
        2,
        8,
        "       ^^",
    ),
    ("expr", "nn.foo(1)", "unknown operator nn.foo", 1, 1, "^^^^^^"),
    ("expr", "Foo(1)", "unknown constructor Foo", 1, 1, "^^^"),
    (
        "module",
        LIST + "def @f() {\n  match (Nil) {\n    Cons(%x, Nill) => %x,\n  }\n}",
        "unknown constructor Nill",
        4,
        14,
        "             ^^^^",
    ),
    ("expr", "fn (%x: Lst[int32]) { %x }", "unknown type Lst", 1, 9, "        ^^^"),
    (
        "expr",
        "fn (%x: Tensor[(1), foo]) { %x }",
        "unknown dtype foo",
        1,
        21,
        "                    ^^^",
    ),
    (
        "expr",
        "fn [A](%x: Tensor[(1), A]) { %x }",
        "unknown dtype A",
        1,
        24,
        "                       ^",
    ),
    (
        "expr",
        "fn [n: Dim](%x) { %x }",
        "unknown kind Dim; expected Type, Shape or BaseType",
        1,
        8,
        "       ^^^",
    ),
    # -- duplicates ----------------------------------------------------------------------------
    (
        "module",
        "def @f() { 1 }\n\ndef @f() { 2 }",
        "duplicate definition of global @f",
        3,
        5,
        "    ^^",
    ),
    (
        "module",
        "type T { A }\ntype T { B }",
        "duplicate definition of type T",
        2,
        6,
        "     ^",
    ),
    (
        "module",
        "type T { A }\nextern type T",
        "duplicate definition of type T",
        2,
        13,
        "            ^",
    ),
    (
        "module",
        "type T { A, B }\ntype U { B }",
        "duplicate definition of constructor B",
        2,
        10,
        "         ^",
    ),
    ("expr", "fn (%x, %x) { %x }", "duplicate parameter %x", 1, 9, "        ^^"),
    ("expr", "fn [A, A](%x: A) { %x }", "duplicate type parameter A", 1, 8, "       ^"),
    (
        "expr",
        "free_var %x; match (%x) { (%y, %y) => %y }",
        "duplicate pattern variable %y",
        1,
        32,
        "                               ^^",
    ),
    (
        "expr",
        "free_var %x; free_var %x; %x",
        "duplicate free variable %x",
        1,
        23,
        "                      ^^",
    ),
    ("expr", "fn (a=1, a=2) { 1 }", "duplicate attribute a", 1, 10, "         ^"),
    # -- arities -------------------------------------------------------------------------------
    (
        "module",
        LIST + "def @f() { Cons(1) }",
        "constructor Cons takes 2 arguments, got 1",
        2,
        12,
        "           ^^^^^^^",
    ),
    (
        "module",
        LIST + "def @f(%l: List[int32]) {\n  match (%l) { Cons(%x) => 1, Nil => 2 }\n}",
        "constructor Cons takes 2 arguments, got 1",
        3,
        16,
        "               ^^^^^^^^",
    ),
    (
        "module",
        LIST + "def @f(%l: List[int32]) {\n  match (%l) { Nil(_) => 1 }\n}",
        "constructor Nil takes 0 arguments, got 1",
        3,
        16,
        "               ^^^^^^",
    ),
    (
        "module",
        LIST + "def @f(%x: (int32, List[int32, int32])) { %x }",
        "type List takes 1 type argument, got 2",
        2,
        20,
        "                   ^^^^^^^^^^^^^^^^^^",
    ),
    ("type", "float32[int32]", "dtype float32 takes no type arguments", 1, 1, "^^^^^^^^^^^^^^"),
    # -- attributes ----------------------------------------------------------------------------
    (
        "expr",
        "test_errors.conv(1, 2, padding=1)",
        "attribute padding of test_errors.conv must be a list of ints, got 1",
        1,
        24,
        "                       ^^^^^^^^^",
    ),
    (
        "expr",
        "test_errors.conv(1, 2, groups=1, pad=[1, 1])",
        "test_errors.conv has no attribute pad",
        1,
        34,
        "                                 ^^^^^^^^^^",
    ),
    (
        "expr",
        'test_errors.conv(1, 2, data_layout="NCWH")',
        "attribute data_layout of test_errors.conv must be one of 'NCHW', 'NHWC', got 'NCWH'",
        1,
        24,
        "                       ^^^^^^^^^^^^^^^^^^",
    ),
    (
        "expr",
        "test_errors.sum(1)",
        "test_errors.sum requires attribute axis",
        1,
        1,
        "^^^^^^^^^^^^^^^",
    ),
    ("expr", "add(1, 2, a=1)", "add has no attribute a", 1, 11, "          ^^^"),
    (
        "expr",
        "add(1, a=1, 2)",
        "positional argument after attributes",
        1,
        13,
        "            ^",
    ),
    (
        "expr",
        "fn (%x, Primitive=1, %y) { %x }",
        "parameter %y after attributes",
        1,
        22,
        "                     ^^",
    ),
    ("expr", "fn (a=foo) { 1 }", "invalid attribute value foo", 1, 7, "      ^^^"),
    ("expr", "fn (a=1x) { 1 }", "unknown literal suffix x in 1x", 1, 7, "      ^^"),
    # -- metadata ------------------------------------------------------------------------------
    (
        "expr",
        "meta[relay.Constant][0]",
        "meta[relay.Constant][0] used without a #[metadata] section",
        1,
        1,
        "^^^^^^^^^^^^^^^^^^^^^^^",
    ),
    (
        "expr",
        '(1, meta[relay.Constant][1])\n#[metadata]\n{"relay.Constant": '
        '[{"dtype": "int32", "shape": [], "data": "AQAAAA=="}]}',
        "meta[relay.Constant][1] is out of range: the metadata section has 1 constant",
        1,
        5,
        "    ^^^^^^^^^^^^^^^^^^^^^^^",
    ),
    ("expr", "meta[relay.Foo][0]", "unsupported metadata kind relay.Foo", 1, 6, "     ^^^^^^^^^"),
    (
        "expr",
        'meta[relay.Constant][0]\n#[metadata]\n{"relay.Constant": [}',
        "invalid metadata section: Expecting value",
        3,
        21,
        "                    ^",
    ),
    (
        "expr",
        'meta[relay.Constant][0]\n#[metadata]\n{"relay.Constant": '
        '[{"dtype": "float8", "shape": [], "data": ""}]}',
        "invalid metadata constant 0: unknown dtype float8",
        2,
        1,
        "^^^^^^^^^^^",
    ),
    (
        "expr",
        'meta[relay.Constant][0]\n#[metadata]\n{"relay.Constant": '
        '[{"dtype": "float32", "shape": [2], "data": "AAAA"}]}',
        "invalid metadata constant 0: 3 bytes of data for a float32 tensor of shape [2] "
        "(expected 8)",
        2,
        1,
        "^^^^^^^^^^^",
    ),
    (
        "expr",
        'meta[relay.Constant][0]\n#[metadata]\n{"relay.Graph": []}',
        "unsupported metadata kind relay.Graph",
        2,
        1,
        "^^^^^^^^^^^",
    ),
]


@pytest.mark.parametrize(
    ("kind", "text", "message", "line", "column", "underline"),
    CASES,
    ids=[f"{i}-{c[2][:40]}" for i, c in enumerate(CASES)],
)
def test_error_message_span_and_rendering(
    kind: str, text: str, message: str, line: int, column: int, underline: str
) -> None:
    with pytest.raises(relay.ParseError) as info:
        PARSERS[kind](text, SOURCE)
    err = info.value
    assert err.message == message
    assert err.span is not None
    assert (err.span.source, err.span.line, err.span.column) == (SOURCE, line, column)
    source_line = text.splitlines()[line - 1]
    assert str(err) == f"{SOURCE}:{line}:{column}: {message}\n{source_line}\n{underline}"


def test_error_on_empty_input_has_no_source_line_to_quote() -> None:
    with pytest.raises(relay.ParseError) as info:
        parse_expr("", SOURCE)
    assert str(info.value) == (
        f'{SOURCE}:1:1: unexpected end of input; expected one of: "free_var", "let", '
        "a version header, an expression"
    )


def test_multi_line_span_is_underlined_to_the_end_of_its_first_line() -> None:
    text = "(1,\n 2, 32768i16,\n 3)"
    with pytest.raises(relay.ParseError) as info:
        parse_expr(text, SOURCE)
    assert str(info.value) == (
        f"{SOURCE}:2:5: literal 32768 out of range for int16\n 2, 32768i16,\n    ^^^^^^^^"
    )
    text = "type List[A] { Cons(A, List[A]), Nil }\ndef @f() {\n  Cons(1,\n    2, Nil)\n}"
    with pytest.raises(relay.ParseError) as info:
        parse(text, SOURCE)
    assert info.value.span == relay.ir.Span(SOURCE, 3, 3, 4, 12)
    assert str(info.value).endswith("\n  Cons(1,\n  ^^^^^^^")


def test_errors_are_parse_errors_and_relay_errors_never_lark_errors() -> None:
    from lark.exceptions import LarkError

    for text in ["(", ")", "fn", "%", "@", "1 2", "let", "match", '"', "#", "meta[", "\x00"]:
        with pytest.raises(relay.ParseError) as info:
            parse_expr(text, SOURCE)
        assert isinstance(info.value, relay.RelayError)
        assert not isinstance(info.value, LarkError)
        assert info.value.__cause__ is None


def test_absurdly_nested_attribute_value_is_a_parse_error() -> None:
    depth = 5000
    text = "fn (a=" + "[" * depth + "]" * depth + ") { 1 }"
    with pytest.raises(relay.ParseError) as info:
        parse_expr(text, SOURCE)
    assert info.value.message == "attribute value nested too deeply"
    assert info.value.span == relay.ir.Span(SOURCE, 1, 1, 1, len(text) + 1)
