"""Source spans and the registry of source texts that error messages quote.

A :class:`Span` names a source (a file path, ``"<string>"`` or any label), a
1-based line and column where a construct starts and where it ends (the end
column is exclusive). Spans are attached to IR nodes but never take part in
equality or hashing.
"""

from __future__ import annotations

from dataclasses import dataclass

_SOURCES: dict[str, str] = {}


def register_source(name: str, text: str) -> None:
    """Remember the text of source ``name`` so diagnostics can quote its lines."""
    _SOURCES[name] = text


def source_text(name: str) -> str | None:
    """The registered text of source ``name``, if any."""
    return _SOURCES.get(name)


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source: ``line``/``column`` start it, ``end_line``/``end_column`` end it.

    Lines and columns are 1-based; ``end_column`` is one past the last character.
    """

    source: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"

    def merge(self, other: Span) -> Span:
        """The smallest span covering ``self`` and ``other`` (same source assumed)."""
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(self.source, start[0], start[1], end[0], end[1])

    def render(self, text: str | None = None) -> str:
        """The source line this span starts on with a ``^^^`` underline, or ``""`` if unknown."""
        if text is None:
            text = source_text(self.source)
        if text is None:
            return ""
        lines = text.splitlines()
        if not 1 <= self.line <= len(lines):
            return ""
        line = lines[self.line - 1].rstrip("\n")
        start = max(self.column - 1, 0)
        end = self.end_column - 1 if self.end_line == self.line else len(line)
        end = max(min(end, len(line)), start + 1)
        return f"{line}\n{' ' * start}{'^' * (end - start)}"
