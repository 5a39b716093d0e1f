"""The errors a user of relay can cause.

Every one derives from :class:`RelayError`, carries an optional :class:`Span`
and renders as ``source:line:col: message`` followed by the source line and a
``^^^`` underline of the offending region::

    >>> relay.parse_expr("add(%x, 32768i16)")
    relay.errors.ParseError: <string>:1:9: literal 32768 out of range for int16
    add(%x, 32768i16)
            ^^^^^^^^
"""

from __future__ import annotations

from relay.ir.span import Span


class RelayError(Exception):
    """Base class of every error relay reports about its input.

    ``message`` is the bare message, ``span`` the region it is about (or None),
    ``notes`` further lines printed after the underline.
    """

    def __init__(self, message: str, span: Span | None = None, notes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.notes = notes
        self.span = span

    @property
    def span(self) -> Span | None:
        """The region of the source this error is about."""
        return self._span

    @span.setter
    def span(self, span: Span | None) -> None:
        # Quote the source now: a later parse may register other text under the same name.
        self._span = span
        self.quoted = span.render() if span is not None else ""

    def __str__(self) -> str:
        if self.span is None:
            head = self.message
            quoted = ""
        else:
            head = f"{self.span}: {self.message}"
            quoted = self.quoted
        parts = [head]
        if quoted:
            parts.append(quoted)
        parts.extend(self.notes)
        return "\n".join(parts)


class ParseError(RelayError):
    """Text that is not valid Relay text format, e.g. ``let %x = ;``."""


class FrontendError(RelayError):
    """Python that the ``@relay`` decorator cannot translate, e.g. a ``try`` statement."""


class TypeCheckError(RelayError):
    """A program that is not well typed, e.g. ``add`` of (3, 4) and (4, 3) tensors.

    The checker reports every independent error it finds: ``errors`` lists
    them all (this one first); ``str()`` shows each with its source line.
    """

    def __init__(self, message: str, span: Span | None = None, notes: tuple[str, ...] = ()) -> None:
        super().__init__(message, span, notes)
        self.errors: list[TypeCheckError] = [self]

    @staticmethod
    def combine(errors: list[TypeCheckError]) -> TypeCheckError:
        """One error reporting all of ``errors`` (in order); ``errors`` must not be empty."""
        if len(errors) == 1:
            return errors[0]
        first = errors[0]
        n = len(errors) - 1
        more = [f"({n} more type error{'s' if n != 1 else ''})"]
        for e in errors[1:]:
            more.append(str(e))
        combined = TypeCheckError(first.message, first.span, (*first.notes, *more))
        combined.errors = list(errors)
        return combined


class CompileError(RelayError):
    """A program that cannot be compiled for the chosen target."""


class ExecutionError(RelayError):
    """A failure while running a program, e.g. no clause of a ``match?`` applies."""


class VTAError(RelayError):
    """An invalid VTA instruction, stream or run (``relay.backend.vta``), e.g.
    ``instruction 5 (GEMM): uop 3 (i=0, j=1): acc row 2048 outside the accumulator (depth 2048)``."""


__all__ = [
    "CompileError",
    "ExecutionError",
    "FrontendError",
    "ParseError",
    "RelayError",
    "TypeCheckError",
    "VTAError",
]
