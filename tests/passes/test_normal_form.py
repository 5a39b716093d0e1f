"""A-normal form, graph normal form and basic-block normal form (relay.passes.normal_form)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import relay
from relay.analysis.well_formed import well_formed_errors
from relay.ir import Module
from relay.ir.expr import Call, Expr, Function, Let, Op, Var
from relay.ir.types import TensorType
from relay.passes.manager import Pass
from relay.passes.normal_form import (
    EffectAnalysis,
    ToANormalForm,
    ToBasicBlockNormalForm,
    ToGraphNormalForm,
    is_a_normal_form,
    is_basic_block_normal_form,
    pure_globals,
    to_a_normal_form,
    to_basic_block_normal_form,
    to_graph_normal_form,
)
from tests.strategies import TypedProgram, expressions, modules, well_typed_programs

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(2,), float32]"


def expr(text: str) -> Expr:
    return relay.parse_expr(text)


def same(actual: Expr, expected_text: str) -> None:
    relay.assert_structural_equal(actual, expr(expected_text), map_free_vars=True)


def close(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.allclose(a, b, equal_nan=True))
    return bool(a == b)


# -- A-normal form: before / expected ---------------------------------------------------------


def test_anf_binds_every_compound_once_in_evaluation_order() -> None:
    before = expr(f"""
        free_var %x: {T};
        %0 = add(%x, 1f);
        %1 = multiply(%0, %0);
        subtract(%1, %0)
    """)
    out = to_a_normal_form(before)
    same(
        out,
        f"""
        free_var %x: {T};
        let %a = add(%x, 1f);
        let %b = multiply(%a, %a);
        let %c = subtract(%b, %a);
        %c
        """,
    )
    assert is_a_normal_form(out)
    assert not is_a_normal_form(before)


def test_anf_binds_a_node_shared_by_two_branches_before_the_if() -> None:
    before = expr(f"""
        free_var %x: {T};
        free_var %c: bool;
        %0 = add(%x, 1f);
        if (%c) {{ negative(%0) }} else {{ %0 }}
    """)
    same(
        to_a_normal_form(before),
        f"""
        free_var %x: {T};
        free_var %c: bool;
        let %s = add(%x, 1f);
        let %r = if (%c) {{
            let %n = negative(%s);
            %n
        }} else {{
            %s
        }};
        %r
        """,
    )


def test_anf_keeps_a_node_used_in_one_branch_inside_it() -> None:
    before = expr(f"""
        free_var %x: {T};
        free_var %c: bool;
        if (%c) {{ %0 = add(%x, 1f); multiply(%0, %0) }} else {{ %x }}
    """)
    same(
        to_a_normal_form(before),
        f"""
        free_var %x: {T};
        free_var %c: bool;
        let %r = if (%c) {{
            let %a = add(%x, 1f);
            let %m = multiply(%a, %a);
            %m
        }} else {{
            %x
        }};
        %r
        """,
    )


def test_anf_binds_let_values_to_their_own_variables() -> None:
    before = expr(f"""
        free_var %x: {T};
        let %y = add(%x, (let %z = negative(%x); %z));
        %y
    """)
    same(
        to_a_normal_form(before),
        f"""
        free_var %x: {T};
        let %z = negative(%x);
        let %y = add(%x, %z);
        %y
        """,
    )


def test_anf_normalizes_function_bodies_and_leaves_functions_as_atoms() -> None:
    before = expr(f"""
        free_var %x: {T};
        %0 = fn (%a: {T}) {{ add(multiply(%a, %a), %x) }};
        %0(negative(%x))
    """)
    same(
        to_a_normal_form(before),
        f"""
        free_var %x: {T};
        let %n = negative(%x);
        let %r = fn (%a: {T}) {{
            let %m = multiply(%a, %a);
            let %s = add(%m, %x);
            %s
        }}(%n);
        %r
        """,
    )


def test_anf_binds_a_shared_function() -> None:
    before = expr(f"""
        free_var %x: {T};
        %0 = fn (%a: {T}) {{ %a }};
        (%0, %0)
    """)
    same(
        to_a_normal_form(before),
        f"""
        free_var %x: {T};
        let %f = fn (%a: {T}) {{ %a }};
        let %t = (%f, %f);
        %t
        """,
    )


def test_anf_of_match_normalizes_each_clause() -> None:
    mod = relay.parse(
        HEADER
        + """
        type List[A] { Cons(A, List[A]), Nil }
        def @sum(%l: List[float32]) -> float32 {
          match (%l) {
            Cons(%h, %t) => add(%h, @sum(%t)),
            Nil => 0f,
          }
        }
        """
    )
    out = ToANormalForm()(mod)
    expected = relay.parse(
        HEADER
        + """
        type List[A] { Cons(A, List[A]), Nil }
        def @sum(%l: List[float32]) -> float32 {
          let %m = match (%l) {
            Cons(%h, %t) => let %r = @sum(%t); let %s = add(%h, %r); %s,
            Nil => 0f,
          };
          %m
        }
        """
    )
    relay.assert_structural_equal(out, expected)
    assert is_a_normal_form(out.function("sum"))
    relay.infer_type(out)
    assert not is_a_normal_form(mod.function("sum"))  # the input is unchanged


def test_anf_keeps_the_order_of_reference_operations() -> None:
    before = expr("""
        let %r = ref(1f);
        (ref_write(%r, 2f), ref_read(%r), ref_write(%r, 3f), ref_read(%r))
    """)
    out = to_a_normal_form(before)
    same(
        out,
        """
        let %r = ref(1f);
        let %a = ref_write(%r, 2f);
        let %b = ref_read(%r);
        let %c = ref_write(%r, 3f);
        let %d = ref_read(%r);
        let %t = (%a, %b, %c, %d);
        %t
        """,
    )
    assert close(relay.interpret(Function((), before)), relay.interpret(Function((), out)))


def test_anf_evaluates_a_shared_effect_at_each_use_as_the_interpreter_does() -> None:
    before = expr("""
        let %r = ref(1f);
        %0 = ref_read(%r);
        (%0, ref_write(%r, 2f), %0)
    """)
    out = to_a_normal_form(before)
    same(
        out,
        """
        let %r = ref(1f);
        let %a = ref_read(%r);
        let %b = ref_write(%r, 2f);
        let %c = ref_read(%r);
        let %t = (%a, %b, %c);
        %t
        """,
    )
    result = relay.interpret(Function((), out))
    assert result == relay.interpret(Function((), before))
    assert isinstance(result, tuple) and result[0] == 1.0 and result[2] == 2.0


def test_copying_shared_effects_is_bounded() -> None:
    # 2**60 evaluations in the interpreter: the shared effect is bound once instead.
    r = Var("r")
    e: Expr = relay.ir.expr.RefRead(r)
    for _ in range(60):
        e = relay.ir.expr.Tuple((e, e))
    out = to_a_normal_form(Let(r, relay.ir.expr.RefCreate(relay.ir.expr.const(1.0)), e))
    assert is_a_normal_form(out)
    count, node = 0, out
    while isinstance(node, Let):
        count, node = count + 1, node.body
    assert count == 62


def test_anf_is_idempotent_on_anf_input() -> None:
    anf = expr(f"""
        free_var %x: {T};
        let %y = %x;
        let %a = add(%y, 1f);
        let %f = fn (%p: {T}) {{ let %q = negative(%p); %q }};
        let %r = %f(%a);
        %r
    """)
    assert is_a_normal_form(anf)
    out = to_a_normal_form(anf)
    relay.assert_structural_equal(out, anf)


def test_anf_leaves_primitive_functions_alone() -> None:
    prim = expr(f"""
        fn (%a: {T}, Primitive=1) {{ add(negative(%a), %a) }}
    """)
    assert isinstance(prim, Function)
    x = Var("x", TensorType((2,), "float32"))
    out = to_a_normal_form(Call(prim, (x,)))
    assert isinstance(out, Let) and isinstance(out.value, Call)
    assert out.value.op is prim


def test_is_a_normal_form_rejects_nested_and_shared_compounds() -> None:
    assert is_a_normal_form(expr("1f"))
    assert not is_a_normal_form(expr("add(1f, 2f)"))  # a compound result must be bound
    assert not is_a_normal_form(expr("let %a = add(negative(1f), 2f); %a"))
    assert not is_a_normal_form(expr("let %a = if (True) { add(1f, 2f) } else { 1f }; %a"))
    shared = Call(Op.get("add"), (relay.ir.expr.const(1.0), relay.ir.expr.const(2.0)))
    v, w = Var("v"), Var("w")
    assert not is_a_normal_form(Let(v, shared, Let(w, shared, w)))


# -- graph normal form ------------------------------------------------------------------------


def test_gnf_inlines_pure_lets_into_a_dag() -> None:
    before = expr(f"""
        free_var %x: {T};
        let %a = add(%x, 1f);
        let %unused = negative(%x);
        let %b = multiply(%a, %a);
        %b
    """)
    out = to_graph_normal_form(before)
    same(out, f"free_var %x: {T}; %0 = add(%x, 1f); multiply(%0, %0)")
    assert isinstance(out, Call) and out.args[0] is out.args[1]  # shared, not copied


def test_gnf_keeps_effectful_and_recursive_lets() -> None:
    before = expr("""
        free_var %x: float32;
        free_var %g: fn (float32) -> float32;
        let %r = ref(%x);
        let %w = ref_write(%r, 5f);
        let %y = %g(%x);
        let %f = fn (%n: float32) -> float32 {
            if (less(%n, 1f)) { %n } else { %f(subtract(%n, 1f)) }
        };
        let %z = add(%y, %y);
        (ref_read(%r), %f(%z))
    """)
    same(
        to_graph_normal_form(before),
        """
        free_var %x: float32;
        free_var %g: fn (float32) -> float32;
        let %r = ref(%x);
        let %w = ref_write(%r, 5f);
        let %y = %g(%x);
        let %f = fn (%n: float32) -> float32 {
            if (less(%n, 1f)) { %n } else { %f(subtract(%n, 1f)) }
        };
        (ref_read(%r), %f(add(%y, %y)))
        """,
    )


def test_gnf_keeps_the_meaning_of_references() -> None:
    # Inlining %r (as TVM does) would allocate a fresh reference at each use: 3f, not 5f.
    mod = relay.parse(
        HEADER
        + """
        def @main(%x: float32) -> float32 {
          let %r = ref(%x);
          let %w = ref_write(%r, 5f);
          ref_read(%r)
        }
        """
    )
    out = ToGraphNormalForm()(mod)
    x = np.float32(3.0)
    assert relay.interpret(mod, x) == relay.interpret(out, x) == 5.0


def test_gnf_inlines_calls_to_pure_globals_only() -> None:
    mod = relay.parse(
        HEADER
        + """
        def @pure(%x: float32) -> float32 { add(%x, 1f) }
        def @loop(%x: float32) -> float32 { if (less(%x, 0f)) { %x } else { @loop(subtract(%x, 1f)) } }
        def @bump(%r: ref(float32)) -> float32 { ref_write(%r, 1f); 0f }
        def @calls_bump(%r: ref(float32)) -> float32 { @bump(%r) }
        def @main(%x: float32) -> float32 {
          let %r = ref(%x);
          let %a = @pure(%x);
          let %b = @loop(%x);
          let %c = @calls_bump(%r);
          add(add(%a, %b), %c)
        }
        """
    )
    pure = pure_globals(mod)
    assert {gv.name_hint for gv in pure} == {"pure", "loop"}
    out = ToGraphNormalForm()(mod)
    expected = relay.parse(
        HEADER
        + """
        def @pure(%x: float32) -> float32 { add(%x, 1f) }
        def @loop(%x: float32) -> float32 { if (less(%x, 0f)) { %x } else { @loop(subtract(%x, 1f)) } }
        def @bump(%r: ref(float32)) -> float32 { ref_write(%r, 1f); 0f }
        def @calls_bump(%r: ref(float32)) -> float32 { @bump(%r) }
        def @main(%x: float32) -> float32 {
          let %r = ref(%x);
          let %c = @calls_bump(%r);
          add(add(@pure(%x), @loop(%x)), %c)
        }
        """
    )
    relay.assert_structural_equal(out, expected)
    x = np.float32(2.0)
    assert relay.interpret(mod, x) == relay.interpret(out, x)


def test_gnf_undoes_anf_on_pure_dags() -> None:
    dag = expr(f"""
        free_var %x: {T};
        free_var %c: bool;
        %0 = add(%x, 1f);
        %1 = multiply(%0, %0);
        (%1, if (%c) {{ %0 }} else {{ negative(%1) }})
    """)
    relay.assert_structural_equal(to_graph_normal_form(to_a_normal_form(dag)), dag)


def test_effect_analysis() -> None:
    eff = EffectAnalysis()
    assert not eff.may_have_effects(expr("add(1f, 2f)"))
    assert eff.may_have_effects(expr("let %r = ref(1f); 2f"))
    assert not eff.may_have_effects(expr("fn () { ref(1f) }"))  # creating a closure is pure
    assert eff.may_have_effects(expr("fn () { ref(1f) }()"))
    assert not eff.may_have_effects(expr("fn (%a: float32) { add(%a, 1f) }(2f)"))
    assert eff.may_have_effects(expr("free_var %f: fn () -> float32; %f()"))
    assert eff.has_direct_effect(expr("if (True) { ref_read(ref(1f)) } else { 1f }"))
    assert not eff.has_direct_effect(expr("add(ref_read(ref(1f)), 1f)"))


# -- basic-block normal form ------------------------------------------------------------------


def test_bbnf_binds_only_what_crosses_blocks() -> None:
    before = expr(f"""
        free_var %x: {T};
        free_var %c: bool;
        %0 = add(%x, 1f);
        %1 = multiply(%0, %0);
        %2 = negative(%x);
        if (%c) {{ subtract(%1, %2) }} else {{ %3 = exp(%0); add(%3, %3) }}
    """)
    out = to_basic_block_normal_form(before)
    same(
        out,
        f"""
        free_var %x: {T};
        free_var %c: bool;
        let %a = add(%x, 1f);
        if (%c) {{
            subtract(multiply(%a, %a), negative(%x))
        }} else {{
            %3 = exp(%a);
            add(%3, %3)
        }}
        """,
    )
    assert is_basic_block_normal_form(out)
    assert not is_basic_block_normal_form(before)
    assert to_basic_block_normal_form(out) is out  # nothing left to do: the same object


def test_bbnf_binds_effects_in_their_order() -> None:
    before = expr(f"""
        free_var %x: {T};
        free_var %c: bool;
        free_var %f: fn ({T}) -> {T};
        %0 = add(%x, 1f);
        (%f(%x), if (%c) {{ %0 }} else {{ negative(%0) }})
    """)
    same(
        to_basic_block_normal_form(before),
        f"""
        free_var %x: {T};
        free_var %c: bool;
        free_var %f: fn ({T}) -> {T};
        let %v = %f(%x);
        let %a = add(%x, 1f);
        (%v, if (%c) {{ %a }} else {{ negative(%a) }})
        """,
    )


def test_bbnf_keeps_lets_and_graph_form_inside_blocks() -> None:
    before = expr(f"""
        free_var %x: {T};
        let %y = add(%x, 1f);
        %0 = multiply(%y, %y);
        add(%0, %0)
    """)
    out = to_basic_block_normal_form(before)
    assert out is before


# -- all three: properties on random programs -------------------------------------------------

NORMAL_FORMS: list[tuple[str, Pass]] = [
    ("anf", ToANormalForm()),
    ("gnf", ToGraphNormalForm()),
    ("bbnf", ToBasicBlockNormalForm()),
]


@pytest.mark.parametrize(("name", "normal_form"), NORMAL_FORMS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_normal_forms_keep_the_result_and_the_types(
    name: str, normal_form: Pass, program: TypedProgram
) -> None:
    before = relay.interpret(program.module, *program.args)
    out = normal_form(program.module)
    relay.infer_type(out)
    assert not well_formed_errors(out)
    after = relay.interpret(out, *program.args)
    assert close(before, after), (name, before, after)
    for gv, func in out.functions.items():
        if name == "anf":
            assert is_a_normal_form(func), gv
        if name == "bbnf":
            assert is_basic_block_normal_form(func), gv


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(e=expressions())
def test_normal_forms_on_random_dags(e: Expr) -> None:
    """Sharing across blocks, matches, references: the outputs are in their forms, well
    formed, and ANF and BBNF are idempotent."""
    anf = to_a_normal_form(e)
    assert is_a_normal_form(anf)
    assert not well_formed_errors(anf)
    relay.assert_structural_equal(to_a_normal_form(anf), anf, map_free_vars=True)
    bbnf = to_basic_block_normal_form(e)
    assert is_basic_block_normal_form(bbnf)
    assert not well_formed_errors(bbnf)
    relay.assert_structural_equal(to_basic_block_normal_form(bbnf), bbnf, map_free_vars=True)
    assert is_basic_block_normal_form(anf)
    gnf = to_graph_normal_form(anf)
    assert not well_formed_errors(gnf)
    relay.assert_structural_equal(to_graph_normal_form(gnf), gnf, map_free_vars=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mod=modules())
def test_normal_form_passes_on_random_modules(mod: Module) -> None:
    for _, normal_form in NORMAL_FORMS:
        out = normal_form(mod)
        assert not well_formed_errors(out)
    for func in ToANormalForm()(mod).functions.values():
        assert is_a_normal_form(func)


REF_PROGRAM = (
    HEADER
    + """
    type List[A] { Cons(A, List[A]), Nil }
    def @sum(%l: List[float32], %acc: ref(float32)) -> float32 {
      match (%l) {
        Cons(%h, %t) => {
          %0 = ref_read(%acc);
          ref_write(%acc, add(%0, multiply(%h, %0)));
          @sum(%t, %acc)
        },
        Nil => ref_read(%acc),
      }
    }
    def @main(%x: float32) -> (float32, float32, float32) {
      let %acc = ref(1f);
      %1 = Cons(%x, Cons(add(%x, 1f), Nil));
      %2 = ref_read(%acc);
      (%2, @sum(%1, %acc), if (less(%x, 0f)) { %2 } else { ref_read(%acc) })
    }
    """
)


@pytest.mark.parametrize(("name", "normal_form"), NORMAL_FORMS)
def test_normal_forms_keep_the_meaning_of_a_program_with_references(
    name: str, normal_form: Pass
) -> None:
    mod = relay.parse(REF_PROGRAM)
    out = normal_form(mod)
    relay.infer_type(out)
    for x in (np.float32(2.0), np.float32(-3.0)):
        assert relay.interpret(mod, x) == relay.interpret(out, x), name


# -- deep programs ----------------------------------------------------------------------------

N = 100_000
T2 = TensorType((2,), "float32")


def let_chain(n: int) -> Function:
    x = Var("x", T2)
    vs = [Var(f"v{i}") for i in range(n)]
    body: Expr = vs[-1]
    for i in reversed(range(n)):
        prev = x if i == 0 else vs[i - 1]
        body = Let(vs[i], Call(Op.get("add"), (prev, relay.ir.expr.const(1.0))), body)
    return Function((x,), body)


def dag(n: int) -> Function:
    x = Var("x", T2)
    e: Expr = x
    for i in range(n):
        e = Call(Op.get("add" if i % 2 else "maximum"), (e, e if i % 3 else x))
    return Function((x,), e)


def test_anf_of_a_100000_node_dag() -> None:
    limit = sys.getrecursionlimit()
    out = to_a_normal_form(dag(N))
    assert sys.getrecursionlimit() == limit
    assert isinstance(out, Function) and is_a_normal_form(out)
    chain = out.body
    count = 0
    while isinstance(chain, Let):
        count += 1
        chain = chain.body
    assert count == N


@pytest.fixture(scope="module")
def chain() -> Function:
    return let_chain(N)


def test_gnf_of_a_100000_let_chain(chain: Function) -> None:
    f = chain
    out = to_graph_normal_form(f)
    assert isinstance(out, Function)
    depth, node = 0, out.body
    while isinstance(node, Call):
        depth, node = depth + 1, node.args[0]
    assert depth == N and node is f.params[0]
    x = np.zeros(2, "float32")
    np.testing.assert_allclose(relay.interpret(out, x), np.full(2, N, "float32"))


def test_anf_and_bbnf_of_a_100000_let_chain(chain: Function) -> None:
    f = chain  # already in ANF (and so in BBNF): both give back the same object
    assert is_a_normal_form(f)
    assert to_a_normal_form(f) is f
    assert to_basic_block_normal_form(f) is f
