"""Every registered pass: it keeps the interpreter's result on random well-typed programs,
leaves well-formed, well-typed IR, and handles 100,000-binding programs without recursion."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir import Module
from relay.passes import (
    CheckInstrument,
    InferType,
    PassContext,
    Sequential,
    registered_passes,
    resolve_pass,
    standard_pipeline,
)
from tests.strategies import TypedProgram, well_typed_programs

# Gradient adds a function rather than rewriting one (tests/passes/test_higher_order_ad.py)
PASSES = [name for name in registered_passes() if name != "Gradient"]


def close(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return (
            a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
        )
    return bool(a == b)


def run_checked(name: str, mod: Module) -> Module:
    """The pass (its required passes first) under the checking instrument."""
    with PassContext(opt_level=3, required_pass=[name], instruments=[CheckInstrument()]):
        return Sequential([resolve_pass(name)])(mod)


@pytest.mark.parametrize("name", PASSES)
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_pass_keeps_the_result_and_the_types(name: str, program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    out = run_checked(name, program.module)
    after = relay.interpret(out, *program.args)
    assert close(before, after), (name, before, after)


def deep_module(n: int) -> Module:
    body = "".join(f"  %{i} = add({'%x' if i == 0 else f'%{i - 1}'}, 1f);\n" for i in range(n))
    return relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
        f"{body}  %{n - 1}\n}}\n"
    )


@pytest.fixture(scope="module")
def deep() -> Module:
    return InferType()(deep_module(100_000))


@pytest.mark.parametrize("name", PASSES)
def test_pass_on_100000_bindings(name: str, deep: Module) -> None:
    limit = sys.getrecursionlimit()
    out = resolve_pass(name)(deep)  # typed already, so required passes need not run
    assert sys.getrecursionlimit() == limit
    x = np.zeros(2, "float32")
    np.testing.assert_allclose(relay.interpret(out, x), np.full(2, 100_000, "float32"))


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_the_standard_pipeline_keeps_the_result(opt_level: int, program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    with PassContext(opt_level=opt_level, instruments=[CheckInstrument()]):
        out = standard_pipeline()(program.module)
    after = relay.interpret(out, *program.args)
    assert close(before, after), (opt_level, before, after)


def test_the_pipeline_optimizes() -> None:
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @sq(%x: Tensor[(2,), float32], Inline=1) -> Tensor[(2,), float32] {\n"
        "  multiply(%x, %x)\n"
        "}\n"
        "def @unused(%x: float32) -> float32 { %x }\n"
        "def @main(%a: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
        "  let %c = add(1f, 2f);\n"
        "  let %d = multiply(%a, 1f);\n"
        "  let %e = @sq(%d);\n"
        "  let %f = negative(negative(%e));\n"
        "  let %g = add(%f, %c);\n"
        "  let %h = add(%f, %c);\n"
        "  subtract(%g, %h)\n"
        "}\n"
    )
    with PassContext(opt_level=3):
        out = standard_pipeline()(mod)
    expected = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%a: Tensor[(2,), float32]) -> Tensor[(2,), float32] {\n"
        "  %0 = multiply(%a, %a);\n"
        "  %1 = add(%0, 3f);\n"
        "  subtract(%1, %1)\n"
        "}\n"
    )
    relay.assert_structural_equal(out, expected)
