"""The ``python -m relay`` command line: ``opt``, ``check`` and ``run`` on text-format files.

* ``python -m relay opt prog.rly -p InferType,FoldConstant`` runs passes and prints the
  result (``--print-between-passes``, ``--time-passes``, ``--check``, ``--opt-level``,
  ``-o FILE``); without ``-p`` it runs the standard pipeline of the opt level.
* ``python -m relay check prog.rly`` parses and type-checks, printing every error with its
  caret; the exit status is 1 when there are errors.
* ``python -m relay run prog.rly --args x.npy 3.0`` interprets ``@main`` on the arguments
  (``.npy`` files or numbers) and prints the result (``-o out.npy`` saves a tensor result).

Exit status: 0 on success, 1 when the program has errors (parse, type, execution), 2 for a
bad command line (unknown pass, unreadable file), as Unix tools do.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from relay.errors import RelayError, TypeCheckError
from relay.ir.module import Module


class _UsageError(Exception):
    """A bad command line: reported after the usage line, exit status 2."""


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise _UsageError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise _UsageError(f"cannot read {path}: not UTF-8 text") from None


def _parse(path: str) -> Module:
    from relay.ir.parser import parse

    return parse(_read(path), path)


def _passes(spec: str) -> list[str]:
    from relay.passes import registered_passes

    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise _UsageError("-p needs at least one pass name")
    known = registered_passes()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise _UsageError(
            f"unknown pass{'es' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"the passes are: {', '.join(known)}"
        )
    return names


def _opt(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from relay.passes import (
        CheckInstrument,
        PassContext,
        PassInstrument,
        PassTimingInstrument,
        PrintIR,
        Sequential,
        resolve_pass,
    )
    from relay.passes.pipeline import standard_pipeline

    names = _passes(args.passes) if args.passes is not None else None
    mod = _parse(args.file)
    instruments: list[PassInstrument] = []
    if args.check:
        instruments.append(CheckInstrument())
    if args.print_between_passes:
        instruments.append(PrintIR(after=True, file=err))
    timing = PassTimingInstrument()
    if args.time_passes:
        instruments.append(timing)
    # passes named on the command line run whatever the opt level (they are required below)
    seq = standard_pipeline() if names is None else Sequential([resolve_pass(n) for n in names])
    ctx = PassContext(
        opt_level=args.opt_level,
        required_pass=names or (),
        instruments=instruments,
    )
    with ctx:
        result = seq(mod)
    text = result.astext()
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise _UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    else:
        out.write(text)
    if args.time_passes:
        err.write(timing.render() + "\n")
    return 0


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from relay.analysis.well_formed import well_formed_errors
    from relay.typecheck.checker import check_module

    mod = _parse(args.file)
    problems = well_formed_errors(mod)
    if problems:
        raise TypeCheckError.combine(problems)
    check_module(mod)
    n = len(mod.functions)
    out.write(f"{args.file}: ok ({n} function{'' if n == 1 else 's'})\n")
    return 0


def _argument(text: str) -> object:
    if text.endswith(".npy"):
        try:
            return np.load(text, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise _UsageError(f"cannot load {text}: {e}") from None
    for kind in (int, float):
        try:
            return np.asarray(kind(text), dtype="int32" if kind is int else "float32")
        except ValueError:
            continue
    if text in ("True", "False", "true", "false"):
        return np.asarray(text.lower() == "true")
    raise _UsageError(f"argument {text!r} is neither a .npy file nor a number")


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from relay.backend.interpreter import interpret
    from relay.backend.interpreter.values import format_value
    from relay.typecheck.checker import check_module

    inputs = [_argument(a) for a in args.args]
    mod = _parse(args.file)
    if "main" not in mod:
        raise _UsageError(f"{args.file} defines no @main")
    check_module(mod)
    value = interpret(mod, *inputs)
    if args.output:
        if not isinstance(value, np.ndarray):
            raise _UsageError("-o saves a tensor result, and @main returned another value")
        np.save(args.output, value)
    else:
        out.write(format_value(value) + "\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m relay", description="Optimize, check and run Relay text programs."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="{opt,check,run}")

    opt = sub.add_parser("opt", help="run passes and print the resulting module")
    opt.add_argument("file", help="a module in the Relay text format")
    opt.add_argument(
        "-p", "--passes", help="comma-separated pass names (default: the standard pipeline)"
    )
    opt.add_argument("-O", "--opt-level", type=int, default=2, choices=range(4), metavar="0-3")
    opt.add_argument("--print-between-passes", action="store_true", help="IR after each pass")
    opt.add_argument("--time-passes", action="store_true", help="time each pass (on stderr)")
    opt.add_argument("--check", action="store_true", help="check the IR after every pass")
    opt.add_argument("-o", "--output", help="write the result here instead of stdout")
    opt.set_defaults(run=_opt)

    check = sub.add_parser("check", help="parse and type-check; exit 1 on errors")
    check.add_argument("file")
    check.set_defaults(run=_check)

    run = sub.add_parser("run", help="interpret @main on arguments")
    run.add_argument("file")
    run.add_argument("--args", nargs="*", default=[], help=".npy files or numbers")
    run.add_argument("-o", "--output", help="save a tensor result as .npy")
    run.set_defaults(run=_run)
    return p


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line on ``argv``; returns the exit status."""
    stdout = out if out is not None else sys.stdout
    stderr = err if err is not None else sys.stderr
    parser = _parser()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
            args = parser.parse_args(argv)
    except SystemExit as e:  # argparse reported the problem (or printed --help)
        return int(e.code) if isinstance(e.code, int) else 2
    try:
        status: int = args.run(args, stdout, stderr)
        return status
    except _UsageError as e:
        stderr.write(f"{parser.prog} {args.command}: error: {e}\n")
        return 2
    except RelayError as e:
        stderr.write(f"{e}\n")  # a combined error lists all of them
        return 1
    except RecursionError:
        stderr.write(f"{parser.prog} {args.command}: error: the program is nested too deeply\n")
        return 1
