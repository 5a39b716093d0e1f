"""The ``python -m relay`` command line, end to end: opt, check, run, and bad command lines."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relay.cli import main

PROG = """#[version = "0.0.5"]
def @main(%x: Tensor[(2,), float32], %y: Tensor[(2,), float32]) -> Tensor[(2,), float32] {
  add(%x, %y)
}
"""

BAD = """#[version = "0.0.5"]
def @f(%x: Tensor[(2,), float32]) {
  add(%x, 1)
}
def @g(%x: Tensor[(2,), float32]) -> Tensor[(3,), float32] {
  %x
}
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    path = tmp_path / "prog.rly"
    path.write_text(PROG)
    return path


def test_opt_prints_the_result(prog: Path) -> None:
    status, out, err = run("opt", str(prog), "-p", "InferType")
    assert (status, out, err) == (0, PROG, "")


def test_opt_time_print_and_check(prog: Path) -> None:
    status, out, err = run(
        "opt", str(prog), "-p", "InferType", "--time-passes", "--print-between-passes", "--check"
    )
    assert status == 0 and out == PROG
    lines = err.splitlines()
    assert lines[0] == "// IR after InferType"
    assert "\n".join(lines[1:5]) + "\n" == PROG
    assert lines[5].split()[0] == "InferType" and lines[6].split()[0] == "total"


def test_opt_writes_an_output_file(prog: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.rly"
    assert run("opt", str(prog), "-p", "InferType", "-o", str(target)) == (0, "", "")
    assert target.read_text() == PROG


def test_opt_default_pipeline(prog: Path) -> None:
    status, out, _ = run("opt", str(prog), "-O", "3")
    assert status == 0 and out == PROG


def test_unknown_pass_is_a_usage_error(prog: Path) -> None:
    status, out, err = run("opt", str(prog), "-p", "InferType,Nope,Nada")
    assert (status, out) == (2, "")
    assert err.startswith("python -m relay opt: error: unknown passes Nope, Nada; the passes are: ")
    assert run("opt", str(prog), "-p", ",")[2] == (
        "python -m relay opt: error: -p needs at least one pass name\n"
    )


def test_missing_file_and_bad_options(tmp_path: Path) -> None:
    missing = tmp_path / "none.rly"
    assert run("check", str(missing)) == (
        2,
        "",
        f"python -m relay check: error: cannot read {missing}: No such file or directory\n",
    )
    status, _, err = run("opt", str(missing), "-O", "7")
    assert status == 2 and "argument -O/--opt-level: invalid choice" in err
    status, _, err = run()
    assert status == 2 and "the following arguments are required" in err


def test_check_ok_and_errors(prog: Path, tmp_path: Path) -> None:
    assert run("check", str(prog)) == (0, f"{prog}: ok (1 function)\n", "")
    bad = tmp_path / "bad.rly"
    bad.write_text(BAD)
    status, out, err = run("check", str(bad))
    assert (status, out) == (1, "")
    assert err == (
        f"{bad}:3:3: add: dtypes differ: Tensor[(2,), float32] and int32\n"
        "  add(%x, 1)\n"
        "  ^^^^^^^^^^\n"
        "(1 more type error)\n"
        f"{bad}:5:38: the function body does not match its result type: cannot unify "
        "Tensor[(2,), float32] with Tensor[(3,), float32]: dimension 0 differs (2 vs 3)\n"
        "def @g(%x: Tensor[(2,), float32]) -> Tensor[(3,), float32] {\n"
        "                                     ^^^^^^^^^^^^^^^^^^^^^\n"
    )


def test_check_reports_parse_errors(tmp_path: Path) -> None:
    bad = tmp_path / "syntax.rly"
    bad.write_text('#[version = "0.0.5"]\ndef @main( { 1 }\n')
    status, out, err = run("check", str(bad))
    assert (status, out) == (1, "")
    assert err.startswith(f"{bad}:2:")


def test_run_on_npy_files_and_numbers(prog: Path, tmp_path: Path) -> None:
    a = tmp_path / "a.npy"
    np.save(a, np.array([1.0, 2.0], dtype="float32"))
    assert run("run", str(prog), "--args", str(a), str(a)) == (0, "[2., 4.]\n", "")
    target = tmp_path / "r.npy"
    assert run("run", str(prog), "--args", str(a), str(a), "-o", str(target)) == (0, "", "")
    np.testing.assert_array_equal(np.load(target), np.array([2.0, 4.0], dtype="float32"))
    scalar = tmp_path / "s.rly"
    scalar.write_text('#[version = "0.0.5"]\ndef @main(%n: int32, %x: float32) { (%n, %x) }\n')
    assert run("run", str(scalar), "--args", "3", "2.5") == (0, "(3, 2.5)\n", "")


def test_run_errors(prog: Path, tmp_path: Path) -> None:
    status, _, err = run("run", str(prog), "--args", "1.0", "2.0")
    assert status == 1
    assert err.startswith(
        f"{prog}:2:11: argument 0 of @main (%x) does not match its type Tensor[(2,), float32]"
    )
    assert run("run", str(prog), "--args", "abc") == (
        2,
        "",
        "python -m relay run: error: argument 'abc' is neither a .npy file nor a number\n",
    )
    nomain = tmp_path / "nomain.rly"
    nomain.write_text('#[version = "0.0.5"]\ndef @f() { 1 }\n')
    assert run("run", str(nomain)) == (
        2,
        "",
        f"python -m relay run: error: {nomain} defines no @main\n",
    )


def test_python_dash_m_relay(prog: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "relay", "check", str(prog)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{prog}: ok (1 function)\n", "")
