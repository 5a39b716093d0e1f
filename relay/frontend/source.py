"""The Python source of a decorated function, parsed with :mod:`ast`, and spans into it.

``inspect.getsource`` gives the text of the ``def`` (with its decorators), indented as it is
in its file when the function is nested or a method. The text is dedented and parsed, and
each node's position is mapped back to the file: lines by the offset of the first line,
columns by the indentation removed. ``ast`` columns count UTF-8 bytes; spans count
characters, so a line with non-ASCII text is converted. The whole file is registered as the
span source, so error messages quote the user's own line with a caret underline.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relay.errors import FrontendError
from relay.ir.span import Span, register_source

__all__ = ["FunctionSource", "read_function"]


@dataclass
class FunctionSource:
    """A parsed function definition and the file coordinates of its nodes."""

    filename: str
    node: ast.FunctionDef
    first_line: int  # file line of the source's first line
    indent: int  # characters of indentation removed
    lines: list[str]  # the file's lines

    def span(self, node: ast.AST) -> Span:
        """The file span of ``node``."""
        start: int = getattr(node, "lineno", None) or 1
        stop: int = getattr(node, "end_lineno", None) or start
        line = start + self.first_line - 1
        end_line = stop + self.first_line - 1
        col = self._column(line, getattr(node, "col_offset", 0))
        end_col = self._column(end_line, getattr(node, "end_col_offset", None) or 0)
        if end_line == line and end_col <= col:
            end_col = col + 1
        return Span(self.filename, line, col + 1, end_line, end_col + 1)

    def _column(self, file_line: int, byte_offset: int) -> int:
        """The character column (0-based) of a byte offset into the dedented line."""
        if not 1 <= file_line <= len(self.lines):
            return byte_offset + self.indent
        text = self.lines[file_line - 1][self.indent :]
        raw = text.encode("utf-8")[:byte_offset]
        return len(raw.decode("utf-8", errors="ignore")) + self.indent

    def error(self, message: str, node: ast.AST, hint: str | None = None) -> FrontendError:
        """A FrontendError at ``node``; ``hint`` is printed after the underline."""
        return FrontendError(message, self.span(node), (hint,) if hint else ())


def read_function(fn: Callable[..., Any]) -> FunctionSource:
    """Read and parse the source of ``fn``; FrontendError when it cannot be read."""
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    code = getattr(fn, "__code__", None)
    if code is None:
        raise FrontendError(f"@relay applies to Python functions, not {type(fn).__name__}")
    if code.co_name == "<lambda>":
        raise FrontendError(f"@relay cannot read the source of a lambda ({name}); use a def")
    try:
        src_lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as err:
        raise FrontendError(
            f"cannot read the source of {name}: {err}; @relay needs functions defined in a "
            "file (or a notebook cell)"
        ) from None
    filename = code.co_filename
    file_lines = linecache.getlines(filename)
    if not file_lines:
        file_lines = [""] * (first_line - 1) + src_lines
    register_source(filename, "".join(file_lines))
    text = "".join(src_lines)
    dedented = textwrap.dedent(text)
    indent = _indentation(text) - _indentation(dedented)
    try:
        module = ast.parse(dedented, filename=filename)
    except SyntaxError as err:  # e.g. a def whose body is cut short by getsource
        raise FrontendError(
            f"cannot parse the source of {name}: {err.msg}",
            Span(
                filename,
                (err.lineno or 1) + first_line - 1,
                1,
                (err.lineno or 1) + first_line - 1,
                2,
            ),
        ) from None
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not defs:
        raise FrontendError(f"cannot find the definition of {name} in its source")
    node = defs[0]
    lines = [line.rstrip("\n") for line in file_lines]
    if isinstance(node, ast.AsyncFunctionDef):
        probe = FunctionSource(filename, None, first_line, indent, lines)  # type: ignore[arg-type]
        raise FrontendError("@relay cannot compile an async function", probe.span(node))
    source = FunctionSource(filename, node, first_line, indent, lines)
    return source


def _indentation(text: str) -> int:
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0
