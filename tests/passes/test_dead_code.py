"""DeadCodeElimination: unused pure bindings go, effects stay; inline_once; deep chains."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import given, settings

import relay
from relay.ir import Expr, Function, Let, Module, TensorType, Var
from relay.passes import DeadCodeElimination, PassContext, Sequential
from relay.passes.dead_code import Effect, EffectAnalysis, dead_code_elimination
from tests.strategies import TypedProgram, well_typed_programs

T = "Tensor[(2,), float32]"


PRELUDE = relay.prelude()


def expr(src: str) -> Expr:
    return relay.parse_expr(src.replace("T2", T), module=PRELUDE)


def check(before: str, after: str, inline_once: bool = False) -> None:
    out = dead_code_elimination(expr(before), inline_once=inline_once)
    relay.assert_structural_equal(out, expr(after), map_free_vars=True)


MIXED = """fn (%x: T2, %r: ref(T2)) {
  let %a = add(%x, %x);
  let %b = multiply(%a, %a);
  let %c = ref_write(%r, %x);
  let %d = ref_read(%r);
  let %e = negative(%x);
  let %f = fn (%y: T2) -> T2 { %f(%y) };
  let %g = fn (%y: T2) { ref_write(%r, %y) };
  let %h = %g(%x);
  let %i = %g;
  let %j = subtract(%e, %x);
  %j
}"""


def test_unused_pure_bindings_go_and_effects_stay() -> None:
    check(
        MIXED,
        """fn (%x: T2, %r: ref(T2)) {
          let %c = ref_write(%r, %x);
          let %e = negative(%x);
          let %g = fn (%y: T2) { ref_write(%r, %y) };
          let %h = %g(%x);
          let %j = subtract(%e, %x);
          %j
        }""",
    )


def test_projections_of_tuple_literals() -> None:
    # graph form: (loss, grads).1 is grads, and the loss is no longer computed for it
    check(
        "fn (%x: T2) { %0 = negative(%x); %1 = exp(%x); %2 = (%0, %1); %2.1 }",
        "fn (%x: T2) { exp(%x) }",
    )
    # a field whose evaluation writes a reference keeps the projection
    keep = "fn (%x: T2, %r: ref(T2)) { %0 = ref_write(%r, %x); %1 = (%0, %x); %1.1 }"
    check(keep, keep)
    # reading a reference is not observable: dropping an unused read is allowed
    check(
        "fn (%x: T2, %r: ref(T2)) { %0 = ref_read(%r); %1 = (%0, %x); %1.1 }",
        "fn (%x: T2, %r: ref(T2)) { %x }",
    )


def test_inline_once() -> None:
    check(
        MIXED,
        """fn (%x: T2, %r: ref(T2)) {
          let %c = ref_write(%r, %x);
          let %g = fn (%y: T2) { ref_write(%r, %y) };
          let %h = %g(%x);
          subtract(negative(%x), %x)
        }""",
        inline_once=True,
    )


def test_a_chain_feeding_only_itself_goes_in_one_pass() -> None:
    check(
        "fn (%x: T2) { let %a = exp(%x); let %b = add(%a, %a); let %c = (%b, %a); %x }",
        "fn (%x: T2) { %x }",
    )


def test_nested_scopes_are_cleaned() -> None:
    check(
        """fn (%x: T2, %c: bool, %o: Option[T2]) {
          let %k = fn (%y: T2) { let %u = exp(%y); %y };
          let %v = if (%c) { let %w = log(%x); %x } else { %x };
          let %m = match (%o) { Some(%z) => { let %q = sin(%z); %z }, None => %x };
          (%k(%v), %m)
        }""",
        """fn (%x: T2, %c: bool, %o: Option[T2]) {
          let %k = fn (%y: T2) { %y };
          let %v = if (%c) { %x } else { %x };
          let %m = match (%o) { Some(%z) => %z, None => %x };
          (%k(%v), %m)
        }""",
    )


def test_inline_once_keeps_uses_inside_functions_and_shared_uses() -> None:
    check(
        "fn (%x: T2) { let %a = exp(%x); let %b = add(%x, %x); fn (%y: T2) { add(%a, %y) } }",
        "fn (%x: T2) { let %a = exp(%x); fn (%y: T2) { add(%a, %y) } }",
        inline_once=True,
    )
    check(
        "fn (%x: T2) { let %a = exp(%x); add(%a, %a) }",
        "fn (%x: T2) { let %a = exp(%x); add(%a, %a) }",
        inline_once=True,
    )
    # a read is not moved past a write
    check(
        "fn (%r: ref(T2), %x: T2) { let %a = ref_read(%r); let %w = ref_write(%r, %x); %a }",
        "fn (%r: ref(T2), %x: T2) { let %a = ref_read(%r); let %w = ref_write(%r, %x); %a }",
        inline_once=True,
    )


def test_calls_of_unknown_functions_are_effects() -> None:
    check(
        "fn (%f: fn (T2) -> T2, %x: T2) { let %a = %f(%x); let %b = (%f, %x).0; %x }",
        "fn (%f: fn (T2) -> T2, %x: T2) { let %a = %f(%x); %x }",
    )


MODULE = """#[version = "0.0.5"]
def @pure(%x: T2) -> T2 { if (less(%x, %x).0) { @pure2(%x) } else { %x } }
def @pure2(%x: T2) -> T2 { @pure(negative(%x)) }
def @writes(%r: ref(T2), %x: T2) -> () { @writes2(%r, %x) }
def @writes2(%r: ref(T2), %x: T2) -> () { ref_write(%r, %x) }
def @main(%x: T2) -> T2 {
  let %r = ref(%x);
  let %a = @pure(%x);
  let %b = @writes(%r, negative(%x));
  ref_read(%r)
}
"""


def module() -> Module:
    src = MODULE.replace("T2", T).replace("less(%x, %x).0", "take(less(%x, %x), 0)")
    return relay.parse(src)


def test_globals_are_judged_by_their_bodies() -> None:
    mod = module()
    analysis = EffectAnalysis((), mod)
    assert analysis.call(mod.function("pure")) is Effect.PURE
    assert analysis.call(mod.function("pure2")) is Effect.PURE
    assert analysis.call(mod.function("writes")) is Effect.EFFECT
    out = DeadCodeElimination()(mod)
    expected = relay.parse(
        MODULE.replace("T2", T)
        .replace("less(%x, %x).0", "take(less(%x, %x), 0)")
        .replace("  let %a = @pure(%x);\n", "")
    )
    relay.assert_structural_equal(out, expected)
    x = np.array([1.0, -2.0], "float32")
    np.testing.assert_array_equal(relay.interpret(out, x), -x)
    np.testing.assert_array_equal(relay.interpret(mod, x), -x)
    assert "@pure(%x)" in relay.astext(mod)  # the input is unchanged


def test_without_a_module_a_global_call_is_an_effect() -> None:
    e = module().function("main")
    out = dead_code_elimination(e)
    assert out is e


def test_pass_info() -> None:
    p = DeadCodeElimination(inline_once=True)
    assert (p.name, p.opt_level, p.required) == ("DeadCodeElimination", 1, ())


@settings(max_examples=30)
@given(program=well_typed_programs())
def test_inline_once_keeps_results(program: TypedProgram) -> None:
    with PassContext(required_pass=["DeadCodeElimination"]):
        out = Sequential([DeadCodeElimination(inline_once=True)])(program.module)
    relay.infer_type(out)
    before = relay.interpret(program.module, *program.args)
    after = relay.interpret(out, *program.args)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)


def chain(n: int, used: bool) -> Function:
    """``fn (%x) { let %v0 = add(%x, 1f); ...; %v<n-1> or %x }``, built directly."""
    x = Var("x", TensorType((), "float32"))
    one = relay.const(1.0)
    names = [Var(f"v{i}") for i in range(n)]
    out: Expr = names[-1] if used else x
    for i in reversed(range(n)):
        out = Let(names[i], relay.op.add(names[i - 1] if i else x, one), out)
    return Function((x,), out)


def test_100000_dead_bindings() -> None:
    limit = sys.getrecursionlimit()
    out = dead_code_elimination(chain(100_000, used=False))
    assert sys.getrecursionlimit() == limit
    relay.assert_structural_equal(out, expr("fn (%x: float32) { %x }"), map_free_vars=True)


def test_100000_bindings_inlined_once() -> None:
    out = dead_code_elimination(chain(100_000, used=True), inline_once=True)
    assert isinstance(out, Function) and not isinstance(out.body, relay.ir.Let)
    assert float(relay.interpret(out, np.float32(0.0))) == 100_000.0
