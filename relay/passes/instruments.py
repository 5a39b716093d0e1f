"""Pass instruments: hooks that observe every pass a :class:`PassContext` runs.

The interface is TVM's ``PassInstrument`` (``include/tvm/ir/instrument.h``):
``enter_pass_ctx``/``exit_pass_ctx`` as the context is entered and left, ``should_run``
(any instrument may veto a pass), then ``run_before_pass`` and ``run_after_pass`` around
it. The instruments here:

* :class:`PrintIR` prints the module before and/or after each pass (or selected passes);
* :class:`PassTimingInstrument` measures each pass's wall time;
* :class:`CheckInstrument` re-runs the well-formedness check and type inference after
  every pass and raises :class:`PassCheckError` naming the pass that broke the IR;
* :class:`DumpIR` writes the module after each pass to stderr or to numbered files.

``RELAY_DUMP_IR=stderr|<dir>`` and ``RELAY_CHECKS=1`` add :class:`DumpIR` and
:class:`CheckInstrument` to every context (see :func:`from_flags`).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable
from typing import TextIO

from relay import flags
from relay.errors import CompileError, RelayError
from relay.ir.module import Module
from relay.passes.manager import PassInfo


def _text(mod: Module, show_types: bool = False) -> str:
    """The module's text, ending in one newline."""
    return mod.astext(show_types=show_types).rstrip("\n") + "\n"


class PassCheckError(CompileError):
    """A pass produced a module that is not well formed or not well typed."""


class PassInstrument:
    """Hooks around pass runs; subclass and override the ones needed (all do nothing here)."""

    def enter_pass_ctx(self) -> None:
        """The :class:`PassContext` holding this instrument is entered."""

    def exit_pass_ctx(self) -> None:
        """The :class:`PassContext` holding this instrument is left."""

    def should_run(self, mod: Module, info: PassInfo) -> bool:
        """Whether the pass ``info`` may run on ``mod`` (every instrument must agree)."""
        return True

    def run_before_pass(self, mod: Module, info: PassInfo) -> None:
        """Called with the input, just before the pass runs."""

    def run_after_pass(self, mod: Module, info: PassInfo) -> None:
        """Called with the output, just after the pass ran."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PrintIR(PassInstrument):
    """Print the module in the text format before and/or after each pass.

    ``passes`` limits it to the passes of those names; ``file`` defaults to stderr.
    """

    def __init__(
        self,
        before: bool = False,
        after: bool = True,
        passes: Iterable[str] | None = None,
        file: TextIO | None = None,
        show_types: bool = False,
    ) -> None:
        self.before = before
        self.after = after
        self.passes = frozenset(passes) if passes is not None else None
        self.file = file
        self.show_types = show_types

    def _print(self, when: str, mod: Module, info: PassInfo) -> None:
        if self.passes is not None and info.name not in self.passes:
            return
        out = self.file if self.file is not None else sys.stderr
        out.write(f"// IR {when} {info.name}\n{_text(mod, self.show_types)}")

    def run_before_pass(self, mod: Module, info: PassInfo) -> None:
        """Print the input when ``before``."""
        if self.before:
            self._print("before", mod, info)

    def run_after_pass(self, mod: Module, info: PassInfo) -> None:
        """Print the output when ``after``."""
        if self.after:
            self._print("after", mod, info)


class PassTimingInstrument(PassInstrument):
    """Measure the wall time of each pass; :meth:`render` makes a table of it."""

    def __init__(self) -> None:
        self.timings: list[tuple[str, float]] = []
        self._started: list[float] = []

    def enter_pass_ctx(self) -> None:
        """Start a fresh record."""
        self.timings = []

    def run_before_pass(self, mod: Module, info: PassInfo) -> None:
        """Note the start time."""
        self._started.append(time.perf_counter())

    def run_after_pass(self, mod: Module, info: PassInfo) -> None:
        """Record the pass's time."""
        self.timings.append((info.name, time.perf_counter() - self._started.pop()))

    def render(self) -> str:
        """One line per pass run, its time in milliseconds, and the total."""
        if not self.timings:
            return "no passes ran"
        width = max(len(name) for name, _ in self.timings)
        lines = [f"{name:<{width}}  {secs * 1e3:9.3f} ms" for name, secs in self.timings]
        total = sum(secs for _, secs in self.timings)
        lines.append(f"{'total':<{width}}  {total * 1e3:9.3f} ms")
        return "\n".join(lines)


class CheckInstrument(PassInstrument):
    """Check well-formedness and types after every pass, and the input of the first.

    A failure raises :class:`PassCheckError` naming the pass (or the input) and quoting the
    first problem found.
    """

    def __init__(self) -> None:
        self._checked: Module | None = None

    @staticmethod
    def _problem(mod: Module) -> RelayError | None:
        from relay.analysis.well_formed import well_formed_errors
        from relay.typecheck.checker import check_module

        errors = well_formed_errors(mod)
        if errors:
            return errors[0]
        try:
            check_module(mod)
        except RelayError as e:
            return e
        return None

    def _check(self, mod: Module, blame: str) -> None:
        problem = self._problem(mod)
        if problem is not None:
            rest = len(getattr(problem, "errors", ())) - 1
            more = (f"({rest} more error{'s' if rest > 1 else ''})",) if rest > 0 else ()
            raise PassCheckError(f"{blame}: {problem.message}", problem.span, more)
        self._checked = mod

    def run_before_pass(self, mod: Module, info: PassInfo) -> None:
        """Check an input not already checked (the first pass's, or one changed outside)."""
        if mod is not self._checked:
            self._check(mod, f"the input of pass {info.name} is not valid")

    def run_after_pass(self, mod: Module, info: PassInfo) -> None:
        """Check the pass's output."""
        self._check(mod, f"pass {info.name} produced an invalid module")


class DumpIR(PassInstrument):
    """Write the module after each pass to stderr (``target="stderr"``) or to numbered files
    ``NNN-<pass>.rly`` in the directory ``target`` (created if missing)."""

    def __init__(self, target: str = "stderr") -> None:
        self.target = target
        self.count = 0

    def run_after_pass(self, mod: Module, info: PassInfo) -> None:
        """Write the output."""
        text = _text(mod)
        if self.target == "stderr":
            sys.stderr.write(f"// IR after {info.name}\n{text}")
            return
        os.makedirs(self.target, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", info.name)
        path = os.path.join(self.target, f"{self.count:03d}-{safe}.rly")
        self.count += 1
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def __repr__(self) -> str:
        return f"DumpIR({self.target!r})"


_flag_instruments: dict[tuple[str, bool], list[PassInstrument]] = {}


def from_flags() -> list[PassInstrument]:
    """The instruments ``RELAY_DUMP_IR`` and ``RELAY_CHECKS`` ask for (one set per setting,
    so a dump directory's numbering runs on across contexts)."""
    f = flags.get()
    key = (f.dump_ir, f.checks)
    found = _flag_instruments.get(key)
    if found is None:
        found = []
        if f.checks:
            found.append(CheckInstrument())
        if f.dump_ir:
            found.append(DumpIR(f.dump_ir))
        _flag_instruments[key] = found
    return found
