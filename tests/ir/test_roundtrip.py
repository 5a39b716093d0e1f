"""Print -> parse round trips: ``parse(astext(p))`` is structurally equal to ``p``, and printing is a
fixed point: ``astext(parse(astext(p))) == astext(p)``. Programs come from tests/strategies.py
(every construct of the IR) and from hand-written edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.ir import (
    Any,
    Attrs,
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Kind,
    Let,
    Module,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeData,
    TypeVar,
    Var,
    const,
)
from relay.ir.expr import children
from tests.strategies import (
    ProgramConfig,
    TypedProgram,
    TypeScope,
    array_constants,
    attrs,
    draw_type,
    expressions,
    fresh_type_vars,
    infix_programs,
    modules,
    scalar_constants,
    type_definitions,
    well_typed_programs,
)

ADD = Op.get("add")


def assert_module_round_trips(mod: Module) -> str:
    text = relay.astext(mod)
    parsed = relay.parse(text)
    relay.assert_structural_equal(parsed, mod)
    assert relay.structural_equal(parsed, mod)
    assert relay.structural_hash(parsed) == relay.structural_hash(mod)
    assert relay.astext(parsed) == text
    return text


def assert_expr_round_trips(expr: Expr) -> str:
    text = relay.astext(expr)
    parsed = relay.parse_expr(text)
    relay.assert_structural_equal(parsed, expr, map_free_vars=True)
    assert relay.structural_equal(parsed, expr, map_free_vars=True)
    assert relay.structural_hash(parsed, map_free_vars=True) == relay.structural_hash(
        expr, map_free_vars=True
    )
    assert relay.astext(parsed) == text
    return text


# -- generated programs -------------------------------------------------------------------------


@settings(deadline=None, max_examples=120)
@given(modules())
def test_generated_modules_round_trip(mod: Module) -> None:
    assert_module_round_trips(mod)


@settings(deadline=None, max_examples=150)
@given(expressions())
def test_generated_expressions_round_trip(expr: Expr) -> None:
    assert_expr_round_trips(expr)


@settings(deadline=None, max_examples=40)
@given(modules(ProgramConfig(max_depth=6, max_width=4), max_globals=3))
def test_large_generated_modules_round_trip(mod: Module) -> None:
    assert_module_round_trips(mod)


@settings(deadline=None, max_examples=40)
@given(modules(ProgramConfig(incomplete_types=True)))
def test_incomplete_types_round_trip(mod: Module) -> None:
    # Each `_` parses to a fresh IncompleteType (an inference variable with identity), so the
    # parsed module equals the original only with unknowns paired up as free variables.
    text = relay.astext(mod)
    parsed = relay.parse(text)
    relay.assert_structural_equal(parsed, mod, map_free_vars=True)
    assert relay.astext(parsed) == text


@settings(deadline=None, max_examples=40)
@given(well_typed_programs())
def test_well_typed_programs_round_trip_and_evaluate_alike(program: TypedProgram) -> None:
    text = assert_module_round_trips(program.module)
    expected = relay.interpret(program.module, *program.args)
    got = relay.interpret(relay.parse(text), *program.args)
    assert isinstance(expected, np.ndarray) and expected.dtype == np.float32
    assert expected.shape == program.args[0].shape
    assert got.tobytes() == expected.tobytes()


@st.composite
def typed_signatures(draw: st.DrawFn) -> Module:
    """``def @f[params](%x: T) -> T { %x }`` for a random type T over the type parameters."""
    defs: list[TypeData] = draw(type_definitions())
    tps = fresh_type_vars(draw, [Kind.TYPE, Kind.SHAPE, Kind.BASE_TYPE], max_size=4)
    ty = draw_type(draw, TypeScope(tuple(tps), tuple(defs)), depth=3)
    x = Var("x", ty)
    mod = Module(type_definitions={d.header: d for d in defs})
    mod.add("f", Function((x,), x, ty, tuple(tps)))
    return mod


@settings(deadline=None, max_examples=60)
@given(typed_signatures())
def test_generated_types_round_trip(mod: Module) -> None:
    assert_module_round_trips(mod)


@settings(deadline=None, max_examples=100)
@given(st.one_of(scalar_constants(), array_constants()))
def test_constants_round_trip_bit_for_bit(c: Constant) -> None:
    parsed = relay.parse_expr(relay.astext(c))
    assert isinstance(parsed, Constant)
    assert parsed.data.dtype == c.data.dtype
    assert parsed.data.shape == c.data.shape
    assert parsed.data.tobytes() == c.data.tobytes()  # NaN payloads and -0.0 included


@settings(deadline=None, max_examples=60)
@given(attrs())
def test_function_attributes_round_trip_with_their_types(a: Attrs) -> None:
    x = Var("x")
    mod = Module()
    mod.add("f", Function((x,), x, attrs=a))
    text = assert_module_round_trips(mod)
    parsed = relay.parse(text).function("f").attrs
    assert list(parsed) == list(a)
    assert parsed == a  # bool stays bool, float stays float, lists become tuples


@settings(deadline=None, max_examples=60)
@given(infix_programs())
def test_infix_operators_follow_relay_precedence(
    program: tuple[str, Expr, tuple[Var, ...]],
) -> None:
    text, expected, _ = program
    parsed = relay.parse_expr(text)
    relay.assert_structural_equal(parsed, expected, map_free_vars=True)


def _nodes(expr: Expr) -> list[Expr]:
    seen: set[Expr] = set()
    out: list[Expr] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            out.append(node)
            stack.extend(children(node))
    return out


@st.composite
def annotated_modules(draw: st.DrawFn) -> Module:
    """A generated module whose nodes carry (random, closed) checked types."""
    mod: Module = draw(modules(ProgramConfig(max_depth=3), max_globals=2))
    scope = TypeScope((), tuple(mod.type_definitions.values()))
    for func in mod.functions.values():
        for node in _nodes(func):
            if draw(st.booleans()):
                node.set_checked_type(draw_type(draw, scope, depth=1))
    return mod


@settings(deadline=None, max_examples=30)
@given(annotated_modules())
def test_show_types_output_parses(mod: Module) -> None:
    parsed = relay.parse(relay.astext(mod, show_types=True))
    relay.assert_structural_equal(parsed, mod)


def test_show_types_comments() -> None:
    t = TensorType((2,), "float32")
    x = Var("x", t)
    y = Var("y")
    value = Call(ADD, (x, x))
    body = Let(y, value, Tuple((y, y)))
    value.set_checked_type(t)
    body.body.set_checked_type(TupleType((t, t)))
    mod = Module({GlobalVar("f"): Function((x,), body)})
    text = relay.astext(mod, show_types=True)
    assert text == (
        '#[version = "0.0.5"]\n'
        "def @f(%x: Tensor[(2,), float32]) {\n"
        "  let %y = add(%x, %x) /* ty=Tensor[(2,), float32] */;\n"
        "  (%y, %y) /* ty=(Tensor[(2,), float32], Tensor[(2,), float32]) */\n"
        "}\n"
    )
    assert_module_round_trips(relay.parse(text))
    relay.assert_structural_equal(relay.parse(text), mod)


# -- hand-written edge cases --------------------------------------------------------------------


def _fn(body: Expr, *params: Var) -> Module:
    mod = Module()
    mod.add("main", Function(params, body))
    return mod


def _edge_cases() -> dict[str, Module]:
    x, y = Var("x"), Var("y")
    n = TypeVar("n", Kind.SHAPE)
    b = TypeVar("b", Kind.BASE_TYPE)
    shared = Call(ADD, (x, x))
    p = Var("p")
    shared_let = Let(p, x, Call(ADD, (p, p)))
    shared_fn = Function((p,), Call(ADD, (p, x)))
    cases = {
        "extreme_ints": _fn(
            Tuple(
                (
                    const(-(2**63), "int64"),
                    const(2**64 - 1, "uint64"),
                    const(-128, "int8"),
                    const(-32768, "int16"),
                    const(-(2**31), "int32"),
                    const(255, "uint8"),
                )
            )
        ),
        "float_edges": _fn(
            Tuple(
                (
                    const(-0.0, "float32"),
                    const(1e-45, "float32"),
                    const(3.4028235e38, "float32"),
                    const(65504.0, "float16"),
                    const(6e-08, "float16"),
                    const(5e-324, "float64"),
                    const(1.7976931348623157e308, "float64"),
                    const(0.1, "float64"),
                )
            )
        ),
        "nonfinite_scalars": _fn(
            Tuple((const(float("nan")), const(float("-inf"), "float16"), const(np.inf, "float64")))
        ),
        "empty_array": _fn(const(np.zeros((0, 3), dtype="int16"))),
        "shared_metadata": _fn(Tuple((const(np.arange(3)),) * 2)),
        "projection_of_negative_float": _fn(TupleGetItem(const(-2.5), 1)),
        "shape_and_base_type_params": Module(
            {
                GlobalVar("f"): Function(
                    (Var("x", TensorType((n, 3, Any), b)),),
                    Tuple(()),
                    TensorType((), b),
                    (n, b),
                )
            }
        ),
        "sharing_across_let": _fn(Let(y, shared, Tuple((shared, y, shared))), x),
        "shared_let": _fn(Let(y, shared_let, Tuple((shared_let, y))), x),
        "shared_function": _fn(Call(shared_fn, (Call(shared_fn, (x,)),)), x),
        "negative_literal_callee": _fn(Call(const(-1, "int8"), (x,)), x),
        "deep_nesting": _fn(_nested_adds(x, 2000), x),
        "long_let_chain": _fn(_let_chain(x, 2000), x),
    }
    return cases


def _nested_adds(x: Var, n: int) -> Expr:
    e: Expr = x
    for _ in range(n):
        e = Call(ADD, (e, const(1.0)))
    return e


def _let_chain(x: Var, n: int) -> Expr:
    xs = [Var("x") for _ in range(n)]
    body: Expr = xs[-1]
    for i in range(n - 1, 0, -1):
        body = Let(xs[i], Call(ADD, (xs[i - 1], x)), body)
    return Let(xs[0], x, body)


EDGE_CASES = _edge_cases()


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_cases_round_trip(name: str) -> None:
    assert_module_round_trips(EDGE_CASES[name])


def test_str_is_the_text_form() -> None:
    x = Var("x", TensorType((2,), "int8"))
    f = Function((x,), Call(ADD, (x, const(1, "int8"))))
    assert str(f) == relay.astext(f)
    mod = Module({GlobalVar("f"): f})
    assert str(mod) == relay.astext(mod)
    assert isinstance(relay.parse(str(mod)).function("f"), Function)
