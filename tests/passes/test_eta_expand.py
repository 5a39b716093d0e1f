"""Eta-expansion of globals and constructors used as values (relay.passes.eta_expand)."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.analysis.well_formed import well_formed_errors
from relay.ir import Module
from relay.ir.expr import Call, Expr, Function, GlobalVar, Let, Op, Tuple, Var, const
from relay.ir.types import TensorType
from relay.passes.eta_expand import EtaExpand, eta_expand
from tests.strategies import TypedProgram, well_typed_programs

HEADER = '#[version = "0.0.5"]\n'
PRELUDE = """
type List[A] { Cons(A, List[A]), Nil }
def @id[A](%x: A) -> A { %x }
def @inc(%x: Tensor[(2,), float32]) -> Tensor[(2,), float32] { add(%x, 1f) }
"""
T = "Tensor[(2,), float32]"


def module(main: str) -> Module:
    return relay.parse(HEADER + PRELUDE + main)


MAIN = f"""
def @main(%y: {T}) -> List[{T}] {{
  let %f = @inc;
  let %g = @id;
  let %c = Cons;
  %c(%g(%f(%y)), Cons(@inc(%y), Nil))
}}
"""


def test_expands_globals_used_as_values() -> None:
    out = EtaExpand(expand_global_var=True)(module(MAIN))
    expected = module(f"""
        def @main(%y: {T}) -> List[{T}] {{
          let %f = fn (%p: {T}) -> {T} {{ @inc(%p) }};
          let %g = fn [B](%q: B) -> B {{ @id(%q) }};
          let %c = Cons;
          %c(%g(%f(%y)), Cons(@inc(%y), Nil))
        }}
        """)
    relay.assert_structural_equal(out, expected)
    relay.infer_type(out)


def test_expands_constructors_used_as_values() -> None:
    out = EtaExpand(expand_constructor=True)(module(MAIN))
    expected = module(f"""
        def @main(%y: {T}) -> List[{T}] {{
          let %f = @inc;
          let %g = @id;
          let %c = fn [B](%h: B, %t: List[B]) -> List[B] {{ Cons(%h, %t) }};
          %c(%g(%f(%y)), Cons(@inc(%y), Nil))
        }}
        """)
    relay.assert_structural_equal(out, expected)
    relay.infer_type(out)


def test_both_flags_keep_the_result_and_the_types() -> None:
    mod = module(MAIN)
    out = EtaExpand(expand_constructor=True, expand_global_var=True)(mod)
    relay.infer_type(out)
    assert not well_formed_errors(out)
    y = np.arange(2, dtype="float32")
    assert str(relay.interpret(mod, y)) == str(relay.interpret(out, y))
    # The input module is unchanged.
    main = mod.function("main").body
    assert isinstance(main, Let) and isinstance(main.value, GlobalVar)


def test_without_flags_nothing_changes() -> None:
    mod = module(MAIN)
    out = EtaExpand()(mod)
    for gv, func in mod.functions.items():
        assert out.functions[gv] is func


def test_each_occurrence_gets_its_own_function() -> None:
    mod = module(f"def @main(%y: {T}) {{ (@inc, @inc) }}")
    body = eta_expand(mod.function("main").body, mod, expand_global_var=True)
    assert isinstance(body, Tuple)
    first, second = body.fields
    assert isinstance(first, Function) and isinstance(second, Function)
    assert first is not second and first.params[0] is not second.params[0]
    relay.assert_structural_equal(first, second)


def test_unknown_globals_are_left_alone() -> None:
    gv = GlobalVar("missing")
    assert eta_expand(gv, Module(), expand_global_var=True) is gv


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_keeps_the_result_and_the_types(program: TypedProgram) -> None:
    # Call main through a let-bound value, so that there is a global to expand.
    mod = program.module.copy()
    orig = mod.get_global_var("main")
    main = mod.function("main")
    mod.remove(orig)
    inner = mod.add("orig", main)
    params = tuple(Var(p.name_hint, p.type_annotation) for p in main.params)
    m = Var("m")
    mod.add("main", Function(params, Let(m, inner, Call(m, params)), main.ret_type))
    before = relay.interpret(program.module, *program.args)
    out = EtaExpand(expand_constructor=True, expand_global_var=True)(mod)
    value = out.function("main").body
    assert isinstance(value, Let) and isinstance(value.value, Function)
    relay.infer_type(out)
    assert not well_formed_errors(out)
    after = relay.interpret(out, *program.args)
    np.testing.assert_allclose(np.asarray(before), np.asarray(after), rtol=1e-5)


def test_a_100000_binding_program() -> None:
    mod = module("")
    inc = mod.get_global_var("inc")
    t = TensorType((2,), "float32")
    x = Var("x", t)
    vs = [Var(f"v{i}") for i in range(100_000)]
    f = Var("f")
    body: Expr = Call(f, (vs[-1],))
    for i in reversed(range(len(vs))):
        prev = x if i == 0 else vs[i - 1]
        body = Let(vs[i], Call(Op.get("add"), (prev, const(1.0))), body)
    mod.add("main", Function((x,), Let(f, inc, body)))
    limit = sys.getrecursionlimit()
    out = EtaExpand(expand_global_var=True)(mod)
    assert sys.getrecursionlimit() == limit
    main = out.function("main").body
    assert isinstance(main, Let) and isinstance(main.value, Function)
    np.testing.assert_allclose(
        relay.interpret(out, np.zeros(2, "float32")), np.full(2, 100_001, "float32")
    )
