"""The reference interpreter: every construct, values, errors with spans, and deep programs.

Programs are built with the IR constructors. Random well-typed programs from
tests/strategies.py are checked against a small recursive evaluator written here (an
independent second implementation for shallow programs).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import relay
from relay.backend.interpreter import (
    Closure,
    ConstructorValue,
    Env,
    Interpreter,
    RefValue,
    Value,
    describe_value,
    format_value,
    from_python_list,
    interpret,
    to_python_list,
    to_value,
    values_equal,
)
from relay.errors import ExecutionError
from relay.ir import (
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalTypeVar,
    GlobalVar,
    If,
    Let,
    Match,
    Module,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Span,
    Tuple,
    TupleGetItem,
    TypeCall,
    TypeData,
    TypeVar,
    Var,
    const,
)
from relay.ir.attrs import EMPTY_ATTRS
from relay.ir.parser import parse, parse_expr
from relay.ir.span import register_source
from relay.op import attr, get_op, has_op, register_op
from tests.strategies import (
    ProgramConfig,
    TypedProgram,
    constants,
    expressions,
    modules,
    well_typed_programs,
)

# -- helpers -----------------------------------------------------------------------------------


def op(name: str, *args: Expr, **attrs: object) -> Call:
    """A call of the registered operator ``name``."""
    return Call(get_op(name).op, args, Attrs(attrs) if attrs else EMPTY_ATTRS)


def i32(v: int) -> Constant:
    return const(v, "int32")


def f32(v: float) -> Constant:
    return const(v, "float32")


def fn(*params_and_body: Any) -> Function:
    """``fn(x, y, body)``: a function of ``x`` and ``y``."""
    *params, body = params_and_body
    return Function(tuple(params), body)


def num(v: object) -> Any:
    """The Python number held by a rank-0 tensor value."""
    assert type(v) is np.ndarray and v.ndim == 0, v
    return v.item()


def assert_value(actual: Value, expected: object) -> None:
    assert values_equal(actual, to_value(expected)), (
        f"{format_value(actual)} != {format_value(to_value(expected))}"
    )


SPAN = Span("prog.rly", 2, 3, 2, 12)


def list_module() -> tuple[Module, Constructor, Constructor]:
    """A module defining ``type List[A] { Cons(A, List[A]), Nil }``."""
    header = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", (a, TypeCall(header, (a,))), header, 0)
    nil = Constructor("Nil", (), header, 1)
    mod = Module()
    mod.add_type(TypeData(header, (a,), (cons, nil)))
    return mod, cons, nil


def add_length(mod: Module, cons: Constructor, nil: Constructor) -> GlobalVar:
    """``def @length(%xs) { match (%xs) { Cons(_, %rest) => 1 + @length(%rest), Nil => 0 } }``
    (the prelude's definition: not tail recursive)."""
    length = GlobalVar("length")
    xs, rest = Var("xs"), Var("rest")
    body = Match(
        xs,
        (
            Clause(
                PatternConstructor(cons, (PatternWildcard(), PatternVar(rest))),
                op("add", i32(1), Call(length, (rest,))),
            ),
            Clause(PatternConstructor(nil), i32(0)),
        ),
    )
    mod.add(length, fn(xs, body))
    return length


def add_build(mod: Module, cons: Constructor, nil: Constructor) -> GlobalVar:
    """``def @build(%n) { if (%n == 0) { Nil } else { Cons(%n, @build(%n - 1)) } }``."""
    build = GlobalVar("build")
    n = Var("n")
    body = If(
        op("equal", n, i32(0)),
        Call(nil),
        Call(cons, (n, Call(build, (op("subtract", n, i32(1)),)))),
    )
    mod.add(build, fn(n, body))
    return build


# -- atoms, arguments and values ---------------------------------------------------------------


def test_constant_is_a_zero_d_array_not_a_numpy_scalar() -> None:
    v = interpret(f32(1.5))
    assert type(v) is np.ndarray and v.shape == () and v.dtype == np.float32
    assert num(v) == 1.5


@pytest.mark.parametrize(
    ("arg", "dtype", "shape"),
    [
        (1.5, "float32", ()),
        (3, "int32", ()),
        (True, "bool", ()),
        (np.float64(2.0), "float64", ()),
        (np.int8(-3), "int8", ()),
        ([1, 2, 3], "int32", (3,)),
        ([[1.0], [2.0]], "float32", (2, 1)),
        (np.zeros((2, 2), dtype="float16"), "float16", (2, 2)),
    ],
)
def test_arguments_are_converted_with_numpy(
    arg: object, dtype: str, shape: tuple[int, ...]
) -> None:
    x = Var("x")
    v = interpret(fn(x, x), arg)
    assert type(v) is np.ndarray and v.dtype == dtype and v.shape == shape


def test_tuple_argument_becomes_a_relay_tuple() -> None:
    x = Var("x")
    v = interpret(fn(x, TupleGetItem(x, 1)), (1, 2.5))
    assert type(v) is np.ndarray and v.dtype == np.float32 and num(v) == 2.5


def test_unconvertible_argument_is_a_type_error() -> None:
    x = Var("x")
    with pytest.raises(TypeError, match="cannot convert a str to a Relay value"):
        interpret(fn(x, x), "hello")


def test_operator_call_broadcasts() -> None:
    x, y = Var("x"), Var("y")
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.asarray([10, 20, 30], dtype="float32")
    v = interpret(fn(x, y, op("add", x, y)), a, b)
    assert isinstance(v, np.ndarray) and v.dtype == np.float32
    np.testing.assert_array_equal(v, a + b)


def test_integer_arithmetic_stays_in_dtype() -> None:
    v = interpret(op("divide", i32(-7), i32(2)))
    assert type(v) is np.ndarray and v.dtype == np.int32 and num(v) == -3


def test_comparison_gives_bool() -> None:
    v = interpret(op("less", f32(1.0), f32(2.0)))
    assert type(v) is np.ndarray and v.dtype == np.bool_ and num(v)


def test_call_attributes_are_validated_and_passed_as_keywords() -> None:
    name = "test_interpreter.scale"
    if not has_op(name):
        register_op(
            name,
            1,
            attrs=[attr("factor", "float", 2.0), attr("offset", "int", 0)],
            reference=lambda x, factor, offset: np.asarray(x * factor + offset, dtype=x.dtype),
        )
    x = f32(3.0)
    assert num(interpret(Call(Op.get(name), (x,)))) == 6.0
    assert num(interpret(Call(Op.get(name), (x,), Attrs(factor=0.5)))) == 1.5
    assert num(interpret(Call(Op.get(name), (x,), Attrs(offset=1)))) == 7.0
    with pytest.raises(ExecutionError) as info:
        interpret(Call(Op.get(name), (x,), Attrs(factor="big"), span=SPAN))
    assert (
        info.value.message
        == "attribute factor of test_interpreter.scale must be a number, got 'big'"
    )
    assert info.value.span == SPAN


def test_tuples_and_projection() -> None:
    t = Tuple((i32(1), Tuple((f32(2.0), const(True))), Tuple(())))
    v = interpret(t)
    assert isinstance(v, tuple) and len(v) == 3
    assert_value(v, (1, (2.0, True), ()))
    assert_value(interpret(TupleGetItem(TupleGetItem(t, 1), 0)), 2.0)
    assert interpret(Tuple(())) == ()


def test_if_chooses_a_branch() -> None:
    x = Var("x")
    f = fn(x, If(op("less", x, i32(0)), op("negative", x), x))
    assert num(interpret(f, -5)) == 5
    assert num(interpret(f, 7)) == 7


def test_only_the_chosen_branch_is_evaluated() -> None:
    # the other branch divides by zero
    e = If(const(True), i32(1), op("divide", i32(1), i32(0)))
    assert num(interpret(e)) == 1


def test_let_binds_in_order() -> None:
    x, y = Var("x"), Var("y")
    e = Let(x, i32(2), Let(y, op("multiply", x, i32(10)), op("add", x, y)))
    assert num(interpret(e)) == 22


def test_variable_aliases_and_nested_lets() -> None:
    x, y, z = Var("x"), Var("y"), Var("z")
    e = Let(x, i32(1), Let(y, x, Let(z, Let(x, i32(5), op("add", x, y)), Tuple((x, y, z)))))
    # the inner Let binds the same Var object again in the same activation; scoping stays
    # lexical: the tuple sees the outer %x
    assert_value(interpret(e), (1, 1, 6))


# -- functions and closures --------------------------------------------------------------------


def test_closure_captures_its_environment() -> None:
    y, f, x = Var("y"), Var("f"), Var("x")
    e = Let(y, i32(10), Let(f, fn(x, op("add", x, y)), Call(f, (i32(1),))))
    assert num(interpret(e)) == 11


def test_closures_returned_from_functions_keep_their_own_environment() -> None:
    mod = Module()
    n, x = Var("n"), Var("x")
    make_adder = mod.add("make_adder", fn(n, fn(x, op("add", x, n))))
    a2, a5 = Var("a2"), Var("a5")
    main = fn(
        Let(
            a2,
            Call(make_adder, (i32(2),)),
            Let(
                a5,
                Call(make_adder, (i32(5),)),
                Tuple((Call(a2, (i32(1),)), Call(a5, (i32(1),)), Call(a2, (i32(10),)))),
            ),
        )
    )
    mod.add("main", main)
    assert_value(interpret(mod), (3, 6, 12))


def test_closure_value_and_repr() -> None:
    x = Var("x")
    v = interpret(Let(Var("u"), i32(0), fn(x, x)))
    assert isinstance(v, Closure) and v.global_var is None
    assert repr(v) == "<closure fn (%x)>"
    assert isinstance(v.env, Env)
    mod = Module()
    gv = mod.add("ident", fn(x, x))
    g = Interpreter(mod).evaluate(gv)
    assert isinstance(g, Closure) and g.global_var is gv and g.mod is mod and g.env is None
    assert repr(g) == "<closure @ident>"


def test_higher_order_functions() -> None:
    f, x, g, y = Var("f"), Var("x"), Var("g"), Var("y")
    twice = fn(f, x, Call(f, (Call(f, (x,)),)))
    inc = fn(y, op("add", y, i32(1)))
    assert num(interpret(Call(twice, (inc, i32(5))))) == 7
    # compose(f, g)(x) = f(g(x)), returning a closure
    compose = fn(f, g, fn(x, Call(f, (Call(g, (x,)),))))
    dbl = fn(y, op("multiply", y, i32(2)))
    assert num(interpret(Call(Call(compose, (inc, dbl)), (i32(5),)))) == 11
    assert num(interpret(Call(Call(compose, (dbl, inc)), (i32(5),)))) == 12


def test_operators_and_constructors_are_first_class() -> None:
    f, x = Var("f"), Var("x")
    apply2 = fn(f, x, Call(f, (x, x)))
    assert num(interpret(Call(apply2, (Op.get("add"), i32(21))))) == 42
    mod, cons, nil = list_module()
    v = interpret(Call(apply2, (cons, i32(1))), mod=mod)  # Cons(1, 1): untyped, but runs
    assert isinstance(v, ConstructorValue) and v.name == "Cons"
    # a bare nullary constructor is a value; calling it with no arguments gives it back
    assert interpret(nil, mod=mod) == ConstructorValue(nil)
    assert interpret(Let(f, nil, Call(f, ())), mod=mod) == ConstructorValue(nil)


def test_interpret_expression_applies_a_resulting_closure_to_args() -> None:
    x = Var("x")
    e = Let(Var("unused"), i32(0), fn(x, op("multiply", x, x)))
    assert num(interpret(e, 7)) == 49


def test_recursion_through_a_global() -> None:
    mod = Module()
    fact = GlobalVar("fact")
    n = Var("n")
    body = If(
        op("less_equal", n, i32(1)),
        i32(1),
        op("multiply", n, Call(fact, (op("subtract", n, i32(1)),))),
    )
    mod.add(fact, fn(n, body))
    mod.add("main", fn(n, Call(fact, (n,))))
    assert num(interpret(mod, 10)) == 3628800


def test_mutual_recursion_through_globals() -> None:
    mod = Module()
    is_even, is_odd = GlobalVar("is_even"), GlobalVar("is_odd")
    n = Var("n")
    m = Var("m")
    mod.add(
        is_even,
        fn(n, If(op("equal", n, i32(0)), const(True), Call(is_odd, (op("subtract", n, i32(1)),)))),
    )
    mod.add(
        is_odd,
        fn(
            m, If(op("equal", m, i32(0)), const(False), Call(is_even, (op("subtract", m, i32(1)),)))
        ),
    )
    interp = Interpreter(mod)
    for k in (0, 1, 10, 7, 100_001):  # tail calls: no frames accumulate
        assert num(interp.call(interp.global_closure("is_even"), [k])) == (k % 2 == 0)
        assert num(interp.call(interp.global_closure(is_odd), [k])) == (k % 2 == 1)


def test_let_bound_function_can_call_itself() -> None:
    f, n = Var("f"), Var("n")
    body = If(
        op("equal", n, i32(0)),
        i32(0),
        op("add", i32(2), Call(f, (op("subtract", n, i32(1)),))),
    )
    e = Let(f, fn(n, body), Call(f, (i32(1000),)))
    assert num(interpret(e)) == 2000


def test_global_updated_after_first_use_is_seen() -> None:
    mod = Module()
    x = Var("x")
    gv = mod.add("f", fn(x, i32(1)))
    interp = Interpreter(mod)
    assert num(interp.call(interp.global_closure(gv), [0])) == 1
    mod.update_func(gv, fn(x, i32(2)))
    assert num(interp.call(interp.global_closure(gv), [0])) == 2


def test_shared_let_evaluated_twice_keeps_earlier_closures_intact() -> None:
    # `inner` is one node used twice; its binder %x is bound twice in the same activation.
    r, x, c1, c2 = Var("r"), Var("x"), Var("c1"), Var("c2")
    inner = Let(x, RefRead(r), Function((), x))
    e = Let(
        r,
        RefCreate(i32(1)),
        Let(
            c1,
            inner,
            Let(
                Var("_"),
                RefWrite(r, i32(2)),
                Let(c2, inner, Tuple((Call(c1, ()), Call(c2, ())))),
            ),
        ),
    )
    assert_value(interpret(e), (1, 2))


# -- data types and match ----------------------------------------------------------------------


def test_constructor_values_repr_and_equality() -> None:
    mod, cons, nil = list_module()
    build = add_build(mod, cons, nil)
    interp = Interpreter(mod)
    v = interp.call(interp.global_closure(build), [3])
    assert isinstance(v, ConstructorValue)
    assert repr(v) == "Cons(3, Cons(2, Cons(1, Nil)))"
    assert v == from_python_list(mod, [3, 2, 1])
    assert v != from_python_list(mod, [3, 2])
    assert v != from_python_list(mod, [3, 2, 1.0])  # float32 is not int32
    tail = v.fields[1]
    assert v.tag == 0 and isinstance(tail, ConstructorValue) and tail.tag == 0
    assert [num(x) for x in to_python_list(v)] == [3, 2, 1]
    with pytest.raises(TypeError):
        hash(v)


def test_match_selects_the_first_matching_clause() -> None:
    mod, cons, nil = list_module()
    xs, h, t = Var("xs"), Var("h"), Var("t")
    clauses = (
        Clause(PatternConstructor(cons, (PatternVar(h), PatternConstructor(nil))), i32(1)),
        Clause(PatternConstructor(cons, (PatternVar(h), PatternVar(t))), op("add", h, i32(100))),
        Clause(PatternWildcard(), i32(-1)),
        Clause(PatternConstructor(nil), i32(-2)),  # unreachable
    )
    f = fn(xs, Match(xs, clauses))
    assert num(interpret(f, from_python_list(mod, [7]), mod=mod)) == 1
    assert num(interpret(f, from_python_list(mod, [7, 8]), mod=mod)) == 107
    assert num(interpret(f, from_python_list(mod, []), mod=mod)) == -1


def test_match_on_tuples_and_nested_patterns() -> None:
    mod, cons, nil = list_module()
    p, a, b, rest = Var("p"), Var("a"), Var("b"), Var("rest")
    # match (p) { (Cons(%a, Cons(%b, %rest)), _) => (a + b, rest), (_, %a) => (a, Nil) }
    pat = PatternTuple(
        (
            PatternConstructor(
                cons, (PatternVar(a), PatternConstructor(cons, (PatternVar(b), PatternVar(rest))))
            ),
            PatternWildcard(),
        )
    )
    m = Match(
        p,
        (
            Clause(pat, Tuple((op("add", a, b), rest))),
            Clause(PatternTuple((PatternWildcard(), PatternVar(a))), Tuple((a, Call(nil)))),
        ),
    )
    f = fn(p, m)
    v = interpret(f, (from_python_list(mod, [1, 2, 3]), 0), mod=mod)
    assert_value(v, (3, from_python_list(mod, [3])))
    v = interpret(f, (from_python_list(mod, [1]), 9), mod=mod)
    assert_value(v, (9, from_python_list(mod, [])))


def test_failed_partial_match_names_the_value_and_the_span() -> None:
    register_source("prog.rly", "def @hd(%xs) {\n  match? (%xs) { Cons(%x, _) => %x }\n}\n")
    mod, cons, _ = list_module()
    xs, x = Var("xs"), Var("x")
    hd = fn(
        xs,
        Match(
            xs,
            (Clause(PatternConstructor(cons, (PatternVar(x), PatternWildcard())), x),),
            complete=False,
            span=SPAN,
        ),
    )
    assert num(interpret(hd, from_python_list(mod, [4, 5]), mod=mod)) == 4
    with pytest.raises(ExecutionError) as info:
        interpret(hd, from_python_list(mod, []), mod=mod)
    err = info.value
    assert err.message == "no clause of the match matched the value Nil"
    assert err.span == SPAN
    assert str(err) == (
        "prog.rly:2:3: no clause of the match matched the value Nil\n"
        "  match? (%xs) { Cons(%x, _) => %x }\n"
        "  ^^^^^^^^^"
    )


def test_failed_match_message_is_truncated_for_large_values() -> None:
    mod, _, nil = list_module()
    xs = Var("xs")
    m = fn(xs, Match(xs, (Clause(PatternConstructor(nil), i32(0)),), complete=False))
    with pytest.raises(ExecutionError) as info:
        interpret(m, from_python_list(mod, range(1000)), mod=mod)
    msg = info.value.message
    assert msg.startswith("no clause of the match matched the value Cons(0, Cons(1, Cons(2, ")
    assert msg.endswith("...") and len(msg) < 300


# -- references --------------------------------------------------------------------------------


def test_counter_through_a_reference_captured_by_a_closure() -> None:
    r, inc, u = Var("r"), Var("inc"), Var("u")
    body = Let(
        r,
        RefCreate(i32(0)),
        Let(
            inc,
            Function((), RefWrite(r, op("add", RefRead(r), i32(1)))),
            Let(
                u,
                Call(inc, ()),
                Let(Var("u2"), Call(inc, ()), Let(Var("u3"), Call(inc, ()), RefRead(r))),
            ),
        ),
    )
    assert num(interpret(body)) == 3


def test_ref_write_returns_unit_and_refs_are_values() -> None:
    r = Var("r")
    assert interpret(Let(r, RefCreate(i32(0)), RefWrite(r, i32(5)))) == ()
    v = interpret(RefCreate(Tuple((i32(1), i32(2)))))
    assert isinstance(v, RefValue)
    assert repr(v) == "ref((1, 2))"
    assert values_equal(v, v) and not values_equal(v, RefValue(v.value))


def test_mutation_is_visible_through_aliases() -> None:
    r, s = Var("r"), Var("s")
    e = Let(r, RefCreate(i32(1)), Let(s, r, Let(Var("_"), RefWrite(s, i32(9)), RefRead(r))))
    assert num(interpret(e)) == 9


# -- the public API ----------------------------------------------------------------------------


def test_relay_interpret_runs_main_of_a_module() -> None:
    mod = Module()
    x, y = Var("x"), Var("y")
    mod.add("main", fn(x, y, op("subtract", x, y)))
    assert num(relay.interpret(mod, 5.0, 1.5)) == 3.5


def test_function_with_globals_needs_the_module() -> None:
    mod = Module()
    x = Var("x")
    sq = mod.add("sq", fn(x, op("multiply", x, x)))
    f = fn(x, Call(sq, (x,)))
    assert num(interpret(f, 6, mod=mod)) == 36
    with pytest.raises(ExecutionError, match="unknown global @sq"):
        interpret(f, 6)


def test_evaluate_with_an_environment_and_call() -> None:
    x, y = Var("x"), Var("y")
    interp = Interpreter()
    env = {x: np.asarray(2, dtype="int32")}
    assert num(interp.evaluate(Let(y, i32(3), op("multiply", x, y)), env)) == 6
    assert env == {x: 2}  # not modified
    shared = Env({x: np.asarray(4, dtype="int32")})
    assert num(interp.evaluate(Let(y, i32(3), op("add", x, y)), shared)) == 7
    assert y not in shared
    assert num(interp.call(Op.get("add"), [1, 2])) == 3
    closure = interp.evaluate(fn(x, op("negative", x)))
    assert num(interp.call(closure, [5])) == -5


def test_env_helpers() -> None:
    x, y = Var("x"), Var("y")
    outer = Env({x: to_value(1)})
    inner = outer.extend({y: to_value(2)})
    assert num(inner.lookup(x)) == 1 and num(inner.lookup(y)) == 2
    assert x in inner and y not in outer
    assert set(inner.flatten()) == {x, y}
    assert repr(inner) == "Env(%x, %y)"
    with pytest.raises(KeyError):
        outer.lookup(y)


def test_describe_and_format_values() -> None:
    assert describe_value(np.zeros((2, 3), dtype="float32")) == "Tensor[(2, 3), float32]"
    assert describe_value(np.zeros((4,), dtype="int8")) == "Tensor[(4,), int8]"
    assert describe_value(np.zeros((), dtype="float32")) == "Tensor[(), float32]"
    assert describe_value((1, 2)) == "a tuple of 2 fields"  # type: ignore[arg-type]
    assert describe_value(Op.get("add")) == "the operator add"
    assert format_value(to_value((1, (2.5,), [1, 2], True))) == "(1, (2.5,), [1, 2], True)"
    assert format_value(to_value(tuple(range(100))), limit=10) == "(0, 1, 2, ..."


def test_values_equal_tolerance_and_nan() -> None:
    a = np.asarray([1.0, np.nan], dtype="float32")
    assert values_equal(a, a.copy())
    assert not values_equal(a, a.astype("float64"))
    b = a + np.float32(1e-6)
    assert not values_equal(a, b)
    assert values_equal(a, b, rtol=1e-5)
    assert not values_equal((a,), (a, a))


# -- errors ------------------------------------------------------------------------------------


def raises_at(expr_or_call: Callable[[], object], message: str, span: Span | None) -> None:
    with pytest.raises(ExecutionError) as info:
        expr_or_call()
    assert info.value.message == message
    assert info.value.span == span


def test_integer_division_by_zero_reports_the_call() -> None:
    e = op("divide", i32(1), i32(0))
    e = Call(e.op, e.args, span=SPAN)
    raises_at(lambda: interpret(e), "operator divide failed: integer division by zero", SPAN)
    e = Call(Op.get("mod"), (i32(1), i32(0)), span=SPAN)
    raises_at(lambda: interpret(e), "operator mod failed: integer division by zero", SPAN)


def test_float_division_by_zero_is_ieee() -> None:
    v = interpret(op("divide", f32(1.0), f32(0.0)))
    assert isinstance(v, np.ndarray) and v.dtype == np.float32 and num(v) == np.inf


def test_operator_numpy_errors_become_execution_errors() -> None:
    a = Constant(np.zeros((2, 3), dtype="float32"))
    b = Constant(np.zeros((4,), dtype="float32"))
    e = Call(Op.get("add"), (a, b), span=SPAN)
    with pytest.raises(ExecutionError, match="operator add failed: operands could not be") as i:
        interpret(e)
    assert i.value.span == SPAN
    e = Call(Op.get("power"), (i32(2), i32(-1)), span=SPAN)
    raises_at(
        lambda: interpret(e),
        "operator power failed: integers to negative integer powers are not allowed",
        SPAN,
    )


def test_operator_without_reference() -> None:
    name = "test_interpreter.no_reference"
    if not has_op(name):
        register_op(name, 1)
    e = Call(Op.get(name), (i32(1),), span=SPAN)
    raises_at(
        lambda: interpret(e),
        "operator test_interpreter.no_reference has no reference implementation",
        SPAN,
    )


def test_unknown_operator() -> None:
    raises_at(
        lambda: interpret(Call(Op("no_such_op"), (i32(1),))), "unknown operator no_such_op", None
    )


def test_arity_errors() -> None:
    x = Var("x")
    raises_at(
        lambda: interpret(Call(Op.get("add"), (i32(1),), span=SPAN)),
        "operator add takes 2 arguments, got 1",
        SPAN,
    )
    raises_at(
        lambda: interpret(Call(fn(x, x), (i32(1), i32(2)), span=SPAN)),
        "<closure fn (%x)> takes 1 argument, got 2",
        SPAN,
    )
    mod, cons, _ = list_module()
    raises_at(
        lambda: interpret(Call(cons, (i32(1),), span=SPAN), mod=mod),
        "constructor Cons takes 2 arguments, got 1",
        SPAN,
    )
    raises_at(lambda: interpret(fn(x, x)), "<closure fn (%x)> takes 1 argument, got 0", None)


def test_calling_a_non_function() -> None:
    raises_at(
        lambda: interpret(Call(i32(3), (i32(1),), span=SPAN)),
        "cannot call Tensor[(), int32]: it is not a function",
        SPAN,
    )


def test_if_condition_must_be_a_rank0_bool() -> None:
    cond = Constant(np.asarray([True, False]), span=SPAN)
    raises_at(
        lambda: interpret(If(cond, i32(1), i32(2))),
        "the condition of an if must be a rank-0 bool tensor, got Tensor[(2,), bool]",
        SPAN,
    )
    raises_at(
        lambda: interpret(If(i32(1), i32(1), i32(2), span=SPAN)),
        "the condition of an if must be a rank-0 bool tensor, got Tensor[(), int32]",
        SPAN,
    )


def test_projection_errors() -> None:
    raises_at(
        lambda: interpret(TupleGetItem(Tuple((i32(1),)), 1, span=SPAN)),
        "field 1 out of range for a tuple of 1 field",
        SPAN,
    )
    raises_at(
        lambda: interpret(TupleGetItem(i32(1), 0, span=SPAN)),
        "cannot take field 0 of Tensor[(), int32]",
        SPAN,
    )


def test_reference_errors() -> None:
    raises_at(
        lambda: interpret(RefRead(i32(1), span=SPAN)),
        "ref_read of Tensor[(), int32], not a reference",
        SPAN,
    )
    raises_at(
        lambda: interpret(RefWrite(i32(1), i32(2), span=SPAN)),
        "ref_write to Tensor[(), int32], not a reference",
        SPAN,
    )


def test_unbound_variable() -> None:
    x = Var("x")
    y = Var("y", span=SPAN)
    raises_at(lambda: interpret(fn(x, op("add", x, y)), 1), "unbound variable %y", SPAN)


def test_module_without_main() -> None:
    raises_at(lambda: interpret(Module()), "the module has no global function @main", None)


def test_interpret_rejects_non_programs() -> None:
    with pytest.raises(TypeError, match="cannot interpret a int"):
        interpret(3)  # type: ignore[arg-type]


def test_stack_overflow_is_an_execution_error() -> None:
    mod = Module()
    f = GlobalVar("f")
    n = Var("n")
    mod.add(f, fn(n, op("add", i32(1), Call(f, (n,), span=SPAN))))
    interp = Interpreter(mod, max_stack_depth=1000)
    raises_at(
        lambda: interp.call(interp.global_closure(f), [0]),
        "stack overflow: more than 1000 pending continuation frames (unbounded recursion?)",
        SPAN,
    )


def test_max_calls_stops_an_endless_tail_loop() -> None:
    mod = Module()
    f = GlobalVar("f")
    n = Var("n")
    mod.add(f, fn(n, Call(f, (n,), span=SPAN)))
    interp = Interpreter(mod, max_calls=500)
    raises_at(
        lambda: interp.call(interp.global_closure(f), [0]),
        "gave up after 500 function calls (the limit set by max_calls)",
        SPAN,
    )


def test_operators_take_only_tensors() -> None:
    x = Var("x")
    e = Call(Op.get("add"), (i32(1), fn(x, x)), span=SPAN)
    raises_at(
        lambda: interpret(e),
        "operator add takes tensors, but argument 2 is the closure <closure fn (%x)>",
        SPAN,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_random_untyped_programs_fail_only_with_execution_errors(data: st.DataObject) -> None:
    # Well-scoped but untyped programs: anything may go wrong at run time, but only as an
    # ExecutionError. The limits stop programs that recurse forever.
    mod = data.draw(modules())
    config = ProgramConfig(free_vars=False)
    expr = data.draw(expressions(config, list(mod.type_definitions.values()), mod.global_vars()))
    interp = Interpreter(mod, max_stack_depth=10_000, max_calls=10_000)
    with contextlib.suppress(ExecutionError):
        interp.evaluate(expr)
    for gv, func in mod.functions.items():
        args = [data.draw(constants()).data for _ in func.params]
        with contextlib.suppress(ExecutionError):
            interp.call(interp.global_closure(gv), args)


# -- deep programs -----------------------------------------------------------------------------

N = 100_000


def test_length_of_a_100000_element_list() -> None:
    limit = sys.getrecursionlimit()
    mod, cons, nil = list_module()
    length = add_length(mod, cons, nil)
    xs = from_python_list(mod, range(N))
    interp = Interpreter(mod)
    start = time.perf_counter()
    v = interp.call(interp.global_closure(length), [xs])
    elapsed = time.perf_counter() - start
    assert type(v) is np.ndarray and v.dtype == np.int32 and num(v) == N
    assert sys.getrecursionlimit() == limit
    assert elapsed < 20  # about 0.5 s on a laptop; a generous bound against pathologies


def test_building_and_measuring_a_100000_element_list() -> None:
    mod, cons, nil = list_module()
    length = add_length(mod, cons, nil)
    build = add_build(mod, cons, nil)
    n = Var("n")
    lst = Var("lst")
    mod.add("main", fn(n, Let(lst, Call(build, (n,)), Tuple((Call(length, (lst,)), lst)))))
    result = interpret(mod, N)
    assert isinstance(result, tuple)
    count, lst_value = result
    assert num(count) == N
    items = to_python_list(lst_value)
    assert len(items) == N and num(items[0]) == N and num(items[-1]) == 1
    # printing and comparing deep values is iterative too
    assert values_equal(lst_value, from_python_list(mod, range(N, 0, -1)))
    assert format_value(lst_value).count("Cons(") == N


def test_100000_binding_let_chain() -> None:
    xs = [Var(f"x{i}") for i in range(N)]
    body: Expr = xs[-1]
    for i in range(N - 1, 0, -1):
        body = Let(xs[i], op("add", xs[i - 1], i32(1)), body)
    body = Let(xs[0], i32(0), body)
    assert num(interpret(body)) == N - 1


def test_100000_deep_nested_expression() -> None:
    right: Expr = i32(0)
    left: Expr = i32(0)
    for _ in range(N):
        right = op("add", i32(1), right)
        left = op("add", left, i32(1))
    assert num(interpret(right)) == N
    assert num(interpret(left)) == N
    nested: Expr = i32(7)
    for _ in range(N):
        nested = Tuple((nested,))
    for _ in range(N):
        nested = TupleGetItem(nested, 0)
    assert num(interpret(nested)) == 7


def test_100000_nested_closures_and_ifs() -> None:
    # if (True) { if (True) { ... 42 } else {0} } else {0}, and fn() { fn() { ... } }()()...
    e: Expr = i32(42)
    for _ in range(N):
        e = If(const(True), e, i32(0))
    assert num(interpret(e)) == 42
    f: Expr = i32(5)
    for _ in range(1000):
        f = Function((), f)
    for _ in range(1000):
        f = Call(f, ())
    assert num(interpret(f)) == 5


# -- random programs against a recursive evaluator ---------------------------------------------


def _oracle(expr: Expr, env: dict[Var, Any], mod: Module) -> Any:
    """A direct recursive evaluator for the first-order fragment in well_typed_programs."""
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, Let):
        return _oracle(expr.body, {**env, expr.var: _oracle(expr.value, env, mod)}, mod)
    if isinstance(expr, If):
        cond = _oracle(expr.cond, env, mod)
        return _oracle(expr.true_branch if cond else expr.false_branch, env, mod)
    if isinstance(expr, Tuple):
        return tuple(_oracle(f, env, mod) for f in expr.fields)
    if isinstance(expr, TupleGetItem):
        return _oracle(expr.tuple_value, env, mod)[expr.index]
    if isinstance(expr, Function):
        params, body = expr.params, expr.body
        return lambda *args: _oracle(body, {**env, **dict(zip(params, args, strict=True))}, mod)
    if isinstance(expr, GlobalVar):
        return _oracle(mod.function(expr), {}, mod)
    assert isinstance(expr, Call)
    args = [_oracle(a, env, mod) for a in expr.args]
    if isinstance(expr.op, Op):
        return np.asarray(getattr(np, expr.op.name)(*args))  # the ops used are numpy's names
    return _oracle(expr.op, env, mod)(*args)


@settings(max_examples=60, deadline=None)
@given(well_typed_programs())
def test_random_programs_agree_with_a_recursive_evaluator(prog: TypedProgram) -> None:
    mod, args = prog.module, prog.args
    expected = _oracle(mod.function("main"), {}, mod)(*args)
    actual = interpret(mod, *args)
    assert values_equal(actual, np.asarray(expected))


@given(st.lists(st.integers(-1000, 1000), max_size=30))
def test_length_matches_python(items: list[int]) -> None:
    mod, cons, nil = list_module()
    length = add_length(mod, cons, nil)
    interp = Interpreter(mod)
    assert num(interp.call(interp.global_closure(length), [from_python_list(mod, items)])) == len(
        items
    )


# -- programs in the text format, with the prelude ---------------------------------------------


@pytest.fixture(scope="module")
def prelude() -> Module:
    return relay.prelude()


def run_text(prelude: Module, text: str, *args: object) -> Value:
    """Evaluate an expression written in the text format, with the prelude in scope."""
    return interpret(parse_expr(text, "expr.rly", module=prelude), *args, mod=prelude)


def test_prelude_length_of_a_100000_element_list(prelude: Module) -> None:
    interp = Interpreter(prelude)
    xs = from_python_list(prelude, range(N))
    assert num(interp.call(interp.global_closure("length"), [xs])) == N


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@length(Cons(1, Cons(2, Nil)))", 2),
        ("@rev(Cons(1, Cons(2, Cons(3, Nil))))", [3, 2, 1]),
        ("@map(fn (%x: int32) { %x * %x }, Cons(2, Cons(3, Nil)))", [4, 9]),
        ("@foldl(fn (%a: int32, %x: int32) { %a - %x }, 0, Cons(1, Cons(2, Cons(3, Nil))))", -6),
        ("@foldr(fn (%x: int32, %a: int32) { %x - %a }, 0, Cons(1, Cons(2, Cons(3, Nil))))", 2),
        ("@filter(fn (%x: int32) { %x > 1 }, Cons(1, Cons(2, Cons(3, Nil))))", [2, 3]),
        ("@nth(Cons(1, Cons(2, Nil)), 1)", 2),
        ("@update(Cons(1, Cons(2, Nil)), 1, 5)", [1, 5]),
        ("@concat(Cons(1, Nil), Cons(2, Nil))", [1, 2]),
        ("@sum(Cons(1.5f, Cons(2f, Nil)))", 3.5),
        ("@compose(fn (%x: int32) { %x * 2 }, fn (%x: int32) { %x + 1 })(5)", 12),
        ("@iterate(fn (%x: int32) { %x + 1 }, 20000)(0)", 20000),
        ("@size(Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil))))", 4),
    ],
)
def test_prelude_functions(prelude: Module, text: str, expected: object) -> None:
    value = run_text(prelude, text)
    if isinstance(expected, list):
        assert [num(x) for x in to_python_list(value)] == expected
    else:
        assert num(value) == expected


def test_text_program_with_references_closures_and_a_failed_match(prelude: Module) -> None:
    src = """#[version = "0.0.5"]
def @main(%n: int32) {
  let %r = ref(0);
  let %inc = fn () { ref_write(%r, ref_read(%r) + %n) };
  %inc();
  %inc();
  ref_read(%r)
}
def @first(%xs: List[int32]) -> int32 {
  @hd(%xs)
}
"""
    mod = parse(src, "main.rly", module=prelude)
    assert num(interpret(mod, 5)) == 10
    interp = Interpreter(mod)
    assert num(interp.call(interp.global_closure("first"), [from_python_list(mod, [7])])) == 7
    with pytest.raises(ExecutionError) as info:
        interp.call(interp.global_closure("first"), [from_python_list(mod, [])])
    span = info.value.span
    assert span is not None and span.source == "relay/std/prelude.rly"
    assert str(info.value).splitlines()[1:] == ["  match? (%xs) {", "  ^^^^^^^^^^^^^^"]
    assert info.value.message == "no clause of the match matched the value Nil"


def test_text_operator_error_points_at_the_call(prelude: Module) -> None:
    with pytest.raises(ExecutionError) as info:
        run_text(prelude, "let %x = 7;\nlet %y = 0;\n%x / %y")
    assert str(info.value) == (
        "expr.rly:3:1: operator divide failed: integer division by zero\n%x / %y\n^^^^^^^"
    )
