"""Errors render ``source:line:col: message``, the source line and a caret underline."""

from __future__ import annotations

import pytest

import relay
from relay.errors import CompileError, ExecutionError, FrontendError, ParseError, TypeCheckError
from relay.ir.span import Span, register_source


@pytest.mark.parametrize(
    "cls", [ParseError, FrontendError, TypeCheckError, CompileError, ExecutionError]
)
def test_hierarchy_and_exports(cls):
    assert issubclass(cls, relay.RelayError)
    assert getattr(relay, cls.__name__) is cls


def test_render_with_source():
    register_source("prog.rly", "def @f() {\n  add(%x, 1)\n}\n")
    err = TypeCheckError("unknown variable %x", Span("prog.rly", 2, 7, 2, 9))
    assert str(err) == "prog.rly:2:7: unknown variable %x\n  add(%x, 1)\n      ^^"
    assert err.message == "unknown variable %x"


def test_render_multiline_span_underlines_to_end_of_line():
    register_source("m.rly", "let %x = (1,\n 2);")
    err = ParseError("bad", Span("m.rly", 1, 10, 2, 4))
    assert str(err) == "m.rly:1:10: bad\nlet %x = (1,\n         ^^^"


def test_render_without_span_or_source():
    assert str(ExecutionError("boom")) == "boom"
    assert str(ExecutionError("boom", Span("nowhere.py", 3, 1, 3, 2))) == "nowhere.py:3:1: boom"


def test_notes_follow_the_underline():
    register_source("n.rly", "%y")
    err = ParseError("unknown variable %y", Span("n.rly", 1, 1, 1, 3), ("did you mean %x?",))
    assert str(err) == "n.rly:1:1: unknown variable %y\n%y\n^^\ndid you mean %x?"


def test_empty_span_gets_one_caret():
    register_source("e.rly", "abc")
    assert str(ParseError("x", Span("e.rly", 1, 4, 1, 4))) == "e.rly:1:4: x\nabc\n   ^"


def test_span_merge():
    a = Span("s", 1, 5, 1, 8)
    b = Span("s", 2, 1, 2, 3)
    assert a.merge(b) == Span("s", 1, 5, 2, 3)
    assert b.merge(a) == Span("s", 1, 5, 2, 3)


def test_the_source_is_quoted_when_the_error_is_made():
    register_source("again.rly", "first text")
    err = ParseError("oops", Span("again.rly", 1, 1, 1, 6))
    register_source("again.rly", "other text")
    assert str(err) == "again.rly:1:1: oops\nfirst text\n^^^^^"
    err.span = Span("again.rly", 1, 7, 1, 11)
    assert str(err) == "again.rly:1:7: oops\nother text\n      ^^^^"


@pytest.mark.parametrize(
    ("count", "note"), [(2, "(1 more type error)"), (3, "(2 more type errors)")]
)
def test_combined_type_errors_count_the_others_in_singular_or_plural(count, note):
    errors = [TypeCheckError(f"error {i}") for i in range(count)]
    combined = TypeCheckError.combine(errors)
    assert combined.errors == errors
    assert str(combined).split("\n") == ["error 0", note, *(f"error {i}" for i in range(1, count))]
    assert TypeCheckError.combine(errors[:1]) is errors[0]
