"""relay.analysis.well_formed: binding once, scoping (DAGs included), globals and constructors.

Ill-formed programs cannot be written in the text format (the parser makes a fresh ``Var`` per
binder and rejects unknown names), so they are built from parsed pieces: a parsed function's
``Var`` reused as the binder of another, a global removed from a parsed module.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.analysis import (
    all_vars,
    bound_vars,
    check_well_formed,
    free_vars,
    global_vars,
    well_formed,
    well_formed_errors,
)
from relay.errors import TypeCheckError
from relay.ir import analysis as ir_analysis
from relay.ir.expr import (
    Call,
    Clause,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    Tuple,
    Var,
    const,
)
from relay.ir.module import Module
from relay.ir.types import GlobalTypeVar
from tests.strategies import expressions, modules

DEEP = 100_000


def messages(obj: Expr | Module, mod: Module | None = None) -> list[str]:
    return [e.message for e in well_formed_errors(obj, mod)]


def add(a: Expr, b: Expr) -> Call:
    return Call(Op.get("add"), (a, b))


def test_reexports() -> None:
    assert free_vars is ir_analysis.free_vars
    assert bound_vars is ir_analysis.bound_vars
    assert all_vars is ir_analysis.all_vars
    assert global_vars is ir_analysis.global_vars
    assert relay.analysis.well_formed is well_formed


# -- well formed --------------------------------------------------------------------------------

WELL_FORMED_EXPRS = [
    "fn (%x: int32) { %x }",
    "free_var %y: int32; fn (%x: int32) { add(%x, %y) }",
    "free_var %y: int32; %y",
    "let %x = 1; let %y = add(%x, %x); (%x, %y)",
    # a recursive closure: the let binder is in scope in its value
    "let %f = fn (%n: int32) -> int32 { %f(%n) }; %f(1)",
    # graph form: %0 is one node used twice
    "free_var %a: int32; %0 = add(%a, 1); (%0, %0)",
    # a shared node inside a function, used in scope at both uses
    "fn (%x: int32) { %0 = add(%x, 1); if (True) { %0 } else { add(%0, %0) } }",
    "free_var %y: int32; match? ((%y, %y)) { (%a, %b) => add(%a, %b) }",
    "match? ((1, 2)) { (%a, _) => %a, (_, %a) => %a }",
]


@pytest.mark.parametrize("src", WELL_FORMED_EXPRS)
def test_well_formed_expressions(src: str) -> None:
    e = relay.parse_expr(src)
    assert well_formed(e)
    assert well_formed_errors(e) == []
    check_well_formed(e)


def test_prelude_is_well_formed() -> None:
    assert well_formed(relay.prelude())


def test_expression_using_module_globals_and_constructors() -> None:
    mod = relay.prelude()
    e = relay.parse_expr("@length(Cons(1, Nil))", module=mod)
    assert well_formed(e, mod)


def test_shared_binder_is_one_binding() -> None:
    # The same function node used twice binds its parameter once.
    f = relay.parse_expr("fn (%x: int32) { %x }")
    assert well_formed(Tuple((f, f)))
    let = relay.parse_expr("let %x = 1; %x")
    assert well_formed(Tuple((let, let)))


# -- ill formed: binding twice ------------------------------------------------------------------


def _param_reused() -> Expr:
    f = relay.parse_expr("fn (%x: int32) { %x }")
    assert isinstance(f, Function)
    return Tuple((f, Function(f.params, f.body)))


def _param_twice() -> Expr:
    x = Var("x")
    return Function((x, x), x)


def _nested_lets() -> Expr:
    x = Var("x")
    return Let(x, const(1), Let(x, const(2), x))


def _pattern_var_twice() -> Expr:
    mod = relay.prelude()
    x = Var("x")
    pattern = PatternConstructor(
        mod.get_constructor("Cons"),
        (
            PatternVar(x),
            PatternConstructor(mod.get_constructor("Cons"), (PatternVar(x), PatternWildcard())),
        ),
    )
    data = relay.parse_expr("Nil", module=mod)
    return Match(data, (Clause(pattern, x),), complete=False)


def _let_and_param() -> Expr:
    x = Var("x")
    return Let(x, const(1), Function((x,), x))


def _outside_let() -> Expr:
    let = relay.parse_expr("let %x = 1; %x")
    assert isinstance(let, Let)
    return Tuple((let, let.var))


def _clause_var_in_other_clause() -> Expr:
    e = relay.parse_expr("match? ((1, 2)) { (%a, _) => %a, _ => 0 }")
    assert isinstance(e, Match)
    a = e.clauses[0].rhs
    return Match(e.data, (e.clauses[0], Clause(PatternWildcard(), a)), complete=False)


def _shared_out_of_scope() -> Expr:
    # %0 = add(%x, 1) is in scope inside the function and used again outside it.
    f = relay.parse_expr("fn (%x: int32) { add(%x, 1) }")
    assert isinstance(f, Function)
    return Tuple((f, f.body))


def _use_before_binding() -> Expr:
    let = relay.parse_expr("let %x = 1; %x")
    assert isinstance(let, Let)
    return Tuple((let.var, let))


ILL_FORMED: list[tuple[str, Callable[[], Expr], list[str]]] = [
    ("param reused", _param_reused, ["variable %x is bound more than once"]),
    ("param twice", _param_twice, ["variable %x is bound more than once"]),
    ("nested lets", _nested_lets, ["variable %x is bound more than once"]),
    ("pattern var twice", _pattern_var_twice, ["variable %x is bound more than once"]),
    ("let and param", _let_and_param, ["variable %x is bound more than once"]),
    ("outside let", _outside_let, ["variable %x is used outside its scope"]),
    ("other clause", _clause_var_in_other_clause, ["variable %a is used outside its scope"]),
    ("shared node", _shared_out_of_scope, ["variable %x is used outside its scope"]),
    ("use before binding", _use_before_binding, ["variable %x is used outside its scope"]),
]


@pytest.mark.parametrize(("name", "build", "expected"), ILL_FORMED, ids=[c[0] for c in ILL_FORMED])
def test_ill_formed_expressions(name: str, build: Callable[[], Expr], expected: list[str]) -> None:
    e = build()
    assert messages(e) == expected
    assert not well_formed(e)
    with pytest.raises(TypeCheckError) as info:
        check_well_formed(e)
    assert info.value.message == expected[0]


def test_binding_twice_points_at_second_binder() -> None:
    f = relay.parse_expr("fn (%x: int32) { %x }", "first.rly")
    g = relay.parse_expr("fn (%y: int32) { %y }", "second.rly")
    assert isinstance(f, Function) and isinstance(g, Function)
    e = Tuple((f, Function(f.params, f.body, span=g.span)))
    [err] = well_formed_errors(e)
    assert err.message == "variable %x is bound more than once"
    assert str(err.span) == "second.rly:1:1"


def test_use_out_of_scope_points_at_use() -> None:
    let = relay.parse_expr("let %x = 1; %x", "let.rly")
    use = relay.parse_expr("free_var %z: int32; add(%z, 2)", "use.rly")
    assert isinstance(let, Let) and isinstance(use, Call)
    e = Tuple((let, Call(use.op, (let.var, use.args[1]), span=use.span)))
    [err] = well_formed_errors(e)
    assert err.message == "variable %x is used outside its scope"
    assert str(err.span) == "use.rly:1:21"


def test_every_error_is_reported() -> None:
    x, y = Var("x"), Var("y")
    e = Tuple((Function((x,), x), Function((x,), x), Let(y, const(1), y), y))
    assert messages(e) == [
        "variable %x is bound more than once",
        "variable %y is used outside its scope",
    ]
    with pytest.raises(TypeCheckError) as info:
        check_well_formed(e)
    assert [err.message for err in info.value.errors] == messages(e)


# -- modules --------------------------------------------------------------------------------------


def test_free_variable_in_global() -> None:
    f = relay.parse_expr("free_var %y: int32; fn (%x: int32) { add(%x, %y) }", "g.rly")
    assert isinstance(f, Function)
    mod = Module({GlobalVar("f"): f})
    [err] = well_formed_errors(mod)
    assert err.message == "free variable %y in global @f"
    assert str(err.span) == "g.rly:1:38"  # the call add(%x, %y)
    assert not well_formed(mod)
    # The same function as a bare expression may use %y.
    assert well_formed(f)


def test_free_variable_reported_once_per_global() -> None:
    f = relay.parse_expr("free_var %y: int32; fn (%x: int32) { add(add(%y, %x), %y) }")
    assert isinstance(f, Function) and isinstance(f.body, Call)
    mod = Module({GlobalVar("f"): f, GlobalVar("g"): Function((), f.body.args[1])})
    assert sorted(messages(mod)) == [
        "free variable %y in global @f",
        "free variable %y in global @g",
    ]


def test_variable_of_another_global() -> None:
    mod = relay.parse("def @f(%x: int32) -> int32 { %x }")
    f = mod.function("f")
    mod.add("g", Function((), f.params[0]))
    assert messages(mod) == ["variable %x is used outside its scope"]


def test_unknown_global() -> None:
    mod = relay.parse(
        "def @g(%x: int32) -> int32 { %x }\ndef @f(%x: int32) -> int32 { @g(@g(%x)) }", "m.rly"
    )
    mod.remove("g")
    [err] = well_formed_errors(mod)
    assert err.message == "unknown global @g"
    assert str(err.span) == "m.rly:2:30"
    # An expression is checked against the module it is given.
    e = mod.function("f").body
    assert messages(e, mod) == ["unknown global @g"]
    assert well_formed(e)  # no module: globals are not checked


def test_unknown_constructor() -> None:
    foo = Constructor("Foo", (), GlobalTypeVar("Thing"))
    mod = relay.prelude()
    call = Match(Call(foo, ()), (Clause(PatternConstructor(foo), const(1)),))
    assert messages(call, mod) == ["unknown constructor Foo"]
    mod.add("h", Function((), call))
    assert messages(mod) == ["unknown constructor Foo"]
    # A constructor that claims a data type of the module without being declared by it.
    fake = Constructor("Maybe", (), mod.get_global_type_var("Option"))
    assert messages(Call(fake, ()), mod) == ["unknown constructor Maybe"]
    assert messages(Call(mod.get_constructor("Nil"), ()), mod) == []


# -- deep programs ----------------------------------------------------------------------------------


def _let_chain(n: int) -> tuple[Expr, list[Var]]:
    vs = [Var(f"x{i}") for i in range(n)]
    body: Expr = vs[-1]
    for i in range(n - 1, 0, -1):
        body = Let(vs[i], add(vs[i - 1], const(1)), body)
    return Let(vs[0], const(0), body), vs


def test_deep_let_chain() -> None:
    e, vs = _let_chain(DEEP)
    assert well_formed(e)
    mod = Module({GlobalVar("main"): Function((), e)})
    assert well_formed(mod)
    bad = Let(vs[DEEP // 2], const(0), e)
    assert messages(bad) == [f"variable %x{DEEP // 2} is bound more than once"]


def test_deep_nesting_and_sharing() -> None:
    x = Var("x")
    body: Expr = x
    for _ in range(DEEP):
        body = add(body, body)  # a DAG: each level uses the one below twice
    assert well_formed(Function((x,), body))
    # the whole DAG used again outside the function's scope
    assert messages(Tuple((Function((x,), body), body))) == [
        "variable %x is used outside its scope"
    ]
    nested: Expr = x
    for i in range(DEEP):
        nested = Function((Var(f"p{i}"),), nested)
    assert messages(Module({GlobalVar("f"): Function((), nested)})) == [
        "free variable %x in global @f"
    ]


# -- random programs --------------------------------------------------------------------------------


@settings(max_examples=100)
@given(modules())
def test_random_modules_are_well_formed(mod: Module) -> None:
    assert well_formed_errors(mod) == []


@settings(max_examples=100)
@given(expressions())
def test_random_expressions_are_well_formed(e: Expr) -> None:
    assert well_formed_errors(e) == []


@settings(max_examples=100)
@given(expressions(), st.integers(0, 1000))
def test_rebinding_or_leaking_a_variable_is_reported(e: Expr, index: int) -> None:
    bound = bound_vars(e)
    if not bound:
        return
    v = bound[index % len(bound)]
    assert messages(Tuple((e, Let(v, const(0), v)))) == [
        f"variable %{v.name_hint} is bound more than once"
    ]
    assert messages(Tuple((e, v))) == [f"variable %{v.name_hint} is used outside its scope"]
