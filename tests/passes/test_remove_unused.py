"""RemoveUnusedFunctions: reachability through calls, values and other globals; entries;
random programs; a 100,000-binding module."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir.expr import Call, Expr, Function, Let, Op, Var, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.passes.remove_unused import (
    RemoveUnusedFunctions,
    reachable_globals,
    remove_unused_functions,
)
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"

PROGRAM = f"""
def @called(%x: {T}) -> {T} {{ @via_called(%x) }}
def @via_called(%x: {T}) -> {T} {{ %x }}
def @as_value(%x: {T}) -> {T} {{ %x }}
def @in_closure(%x: {T}) -> {T} {{ %x }}
def @dead(%x: {T}) -> {T} {{ @dead_too(%x) }}
def @dead_too(%x: {T}) -> {T} {{ @dead(%x) }}
def @other(%x: {T}) -> {T} {{ %x }}
def @main(%x: {T}) -> {T} {{
  let %f = @as_value;
  let %g = fn (%y: {T}) {{ @in_closure(%y) }};
  %g(%f(@called(%x)))
}}
"""


def names(m: Module) -> list[str]:
    return [gv.name_hint for gv in m.functions]


def test_keeps_what_main_reaches_through_calls_values_and_closures() -> None:
    m = relay.parse(HEAD + PROGRAM)
    out = remove_unused_functions(m)
    assert names(out) == ["called", "via_called", "as_value", "in_closure", "main"]
    expected = relay.parse(
        HEAD
        + "\n".join(
            line for line in PROGRAM.splitlines() if "@dead" not in line and "@other" not in line
        )
    )
    relay.assert_structural_equal(out, expected, map_free_vars=True)
    x = np.ones(2, "float32")
    np.testing.assert_allclose(relay.interpret(out, x), relay.interpret(m, x))
    assert len(m.functions) == 8  # the input is untouched


def test_several_entries_and_missing_entries() -> None:
    m = relay.parse(HEAD + PROGRAM)
    out = remove_unused_functions(m, ("main", "dead", "no_such_function"))
    assert set(names(out)) == set(names(m)) - {"other"}
    assert reachable_globals(m, ["other"]) == [m.get_global_var("other")]
    assert reachable_globals(m, []) == []


def test_type_definitions_stay() -> None:
    m = relay.parse(HEAD + PROGRAM, module=relay.prelude())
    out = RemoveUnusedFunctions()(m)
    assert "List" in out and "map" not in out and "map" in m
    assert RemoveUnusedFunctions(["map"])(m).global_vars()[0].name_hint in {"map"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_random_programs_keep_their_result(program: TypedProgram) -> None:
    out = RemoveUnusedFunctions()(program.module)
    used = {g.name_hint for f in out.functions.values() for g in relay.analysis.global_vars(f)}
    assert used <= set(names(out))
    relay.infer_type(out)
    np.testing.assert_allclose(
        relay.interpret(out, *program.args), relay.interpret(program.module, *program.args)
    )


def test_100000_bindings() -> None:
    n = 100_000
    t = TensorType((2,), "float32")
    x = Var("x", t)
    chain = [Var(f"v{i}") for i in range(n)]
    body: Expr = chain[-1]
    for i in reversed(range(n)):
        body = Let(chain[i], Call(Op.get("add"), (x if i == 0 else chain[i - 1], const(1.0))), body)
    m = Module()
    m.add("unused", Function((Var("y", t),), const(np.zeros(2, "float32")), t))
    m.add("main", Function((x,), body, t))
    limit = sys.getrecursionlimit()
    out = remove_unused_functions(m)
    assert sys.getrecursionlimit() == limit
    assert names(out) == ["main"]


def test_a_module_without_the_entries_is_left_alone() -> None:
    mod = relay.parse('#[version = "0.0.5"]\ndef @f(%x: float32) { %x }\n')
    out = remove_unused_functions(mod)
    assert out is not mod and [gv.name_hint for gv in out.global_vars()] == ["f"]
