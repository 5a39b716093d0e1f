"""The text-format parser: every construct against hand-built IR, spans, scoping rules, shape
variables, ADTs, attributes, metadata, comments, deep programs and print -> parse round trips."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.ir import (
    Any,
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    FuncType,
    GlobalTypeVar,
    GlobalVar,
    If,
    IncompleteType,
    Kind,
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
    RefType,
    RefWrite,
    Span,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
    Var,
    const,
)
from relay.ir.parser import parse, parse_expr, parse_type, strip_comments
from relay.ir.printer import astext
from relay.op import registry
from relay.op.registry import attr, register_op

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")

LIST_TEXT = "type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n"


def op(name: str) -> Op:
    return Op.get(name)


def call(name: str, *args: Expr, **attrs: object) -> Call:
    return Call(op(name), args, Attrs(attrs))


def assert_same(a: object, b: object, map_free_vars: bool = True) -> None:
    relay.assert_structural_equal(a, b, map_free_vars=map_free_vars)


def list_adt() -> tuple[TypeData, Constructor, Constructor]:
    a = TypeVar("A")
    lst = GlobalTypeVar("List")
    cons = Constructor("Cons", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("Nil", (), lst, 1)
    return TypeData(lst, (a,), (cons, nil)), cons, nil


@pytest.fixture
def conv_op() -> Iterator[str]:
    """A temporary operator with an attribute schema (names unique to this test module)."""
    name = "test_parser.conv"
    register_op(
        name,
        2,
        attrs=[
            attr("padding", "ints", (0, 0)),
            attr("data_layout", "str", "NCHW", choices=("NCHW", "NHWC")),
            attr("groups", "int", 1),
            attr("scale", "float", 1.0),
            attr("out_dtype", "dtype", None, optional=True),
        ],
    )
    register_op("test_parser.sum", 1, attrs=[attr("axis", "int")])
    try:
        yield name
    finally:
        del registry._REGISTRY[name]
        del registry._REGISTRY["test_parser.sum"]


# -- literals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "dtype", "value"),
    [
        ("1", "int32", 1),
        ("0", "int32", 0),
        ("-42i16", "int16", -42),
        ("-32768i16", "int16", -32768),
        ("32767i16", "int16", 32767),
        ("3i64", "int64", 3),
        ("-9223372036854775808i64", "int64", -(2**63)),
        ("7i8", "int8", 7),
        ("5i32", "int32", 5),
        ("255u8", "uint8", 255),
        ("65535u16", "uint16", 65535),
        ("4294967295u32", "uint32", 4294967295),
        ("18446744073709551615u64", "uint64", 2**64 - 1),
        ("1f", "float32", 1.0),
        ("2.5f", "float32", 2.5),
        ("2.5", "float32", 2.5),
        ("1e-1f", "float32", np.float32(0.1)),
        ("1E3", "float32", 1000.0),
        ("2.5e+2f32", "float32", 250.0),
        ("2.5f16", "float16", 2.5),
        ("1f64", "float64", 1.0),
        ("0.1f64", "float64", 0.1),
        ("-0.5f", "float32", -0.5),
        ("3.4028235e38f", "float32", np.finfo(np.float32).max),
        ("65504f16", "float16", 65504.0),
        ("True", "bool", True),
        ("False", "bool", False),
    ],
)
def test_scalar_literals(text: str, dtype: str, value: object) -> None:
    c = parse_expr(text)
    assert isinstance(c, Constant)
    assert c.data.shape == ()
    assert str(c.data.dtype) == dtype
    assert c.data.item() == value
    assert c.span == Span("<string>", 1, 1, 1, len(text) + 1)


_INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@st.composite
def printable_scalars(draw: st.DrawFn) -> np.ndarray:
    """Finite scalars of every dtype that prints as a literal, extremes included."""
    dtype = draw(st.sampled_from([*_INT_DTYPES, "float16", "float32", "float64", "bool"]))
    if dtype == "bool":
        return np.array(draw(st.booleans()))
    if dtype in _INT_DTYPES:
        info = np.iinfo(dtype)
        return np.array(draw(st.integers(int(info.min), int(info.max))), dtype=dtype)
    width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
    value = draw(st.floats(width=width, allow_nan=False, allow_infinity=False))
    return np.array(value, dtype=dtype)


@settings(deadline=None, max_examples=300)
@given(printable_scalars())
def test_printed_literals_read_back_bit_for_bit(data: np.ndarray) -> None:
    text = astext(Constant(data))
    assert "meta" not in text
    parsed = parse_expr(text)
    assert isinstance(parsed, Constant)
    assert parsed.data.dtype == data.dtype
    assert parsed.data.tobytes() == data.tobytes()


def test_bfloat16_literal() -> None:
    c = parse_expr("1.5bf16")
    assert isinstance(c, Constant)
    assert str(c.data.dtype) == "bfloat16"
    assert float(c.data) == 1.5


def test_minus_before_a_literal_is_a_negative_literal_else_negative() -> None:
    x = Var("x")
    assert_same(parse_expr("-1"), const(-1))
    assert_same(parse_expr("- 1f"), const(-1.0))
    assert_same(parse_expr("free_var %x; -%x"), call("negative", x))
    assert_same(parse_expr("-(1)"), call("negative", const(1)))
    assert_same(parse_expr("--1"), call("negative", const(-1)))
    assert_same(parse_expr("free_var %x; %x - -1"), call("subtract", x, const(-1)))
    assert_same(parse_expr("free_var %x; %x-1"), call("subtract", x, const(1)))
    assert_same(parse_expr("free_var %x; %x -1"), call("subtract", x, const(1)))
    assert_same(parse_expr("2 * -3"), call("multiply", const(2), const(-3)))
    # A negative literal is one token, so a call applies to the constant, as the printer means.
    called = parse_expr("-1i8()")
    assert isinstance(called, Call) and called.args == ()
    assert isinstance(called.op, Constant) and called.op.data.item() == -1
    assert astext(called) == "-1i8()"
    projected = parse_expr("free_var %t; -%t.0")
    assert isinstance(projected, Call) and isinstance(projected.args[0], TupleGetItem)


# -- infix operators --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + 2 * 3", ("add", 1, ("multiply", 2, 3))),
        ("1 * 2 + 3", ("add", ("multiply", 1, 2), 3)),
        ("1 - 2 - 3", ("subtract", ("subtract", 1, 2), 3)),
        ("8 / 4 / 2", ("divide", ("divide", 8, 4), 2)),
        ("1 - 2 + 3", ("add", ("subtract", 1, 2), 3)),
        ("1 < 2 == 3 > 4", ("equal", ("less", 1, 2), ("greater", 3, 4))),
        ("1 <= 2 != 3 >= 4", ("not_equal", ("less_equal", 1, 2), ("greater_equal", 3, 4))),
        ("1 + 2 < 3 * 4", ("less", ("add", 1, 2), ("multiply", 3, 4))),
        ("1 == 2 == 3", ("equal", ("equal", 1, 2), 3)),
        ("(1 + 2) * 3", ("multiply", ("add", 1, 2), 3)),
        ("1 * -2", ("multiply", 1, -2)),
        ("-1 * 2 + 3 * 4 - 5", ("subtract", ("add", ("multiply", -1, 2), ("multiply", 3, 4)), 5)),
    ],
)
def test_infix_precedence_and_associativity(text: str, expected: object) -> None:
    def build(t: object) -> Expr:
        if isinstance(t, int):
            return const(t)
        assert isinstance(t, tuple)
        return call(t[0], build(t[1]), build(t[2]))

    assert_same(parse_expr(text), build(expected))


def test_infix_calls_use_the_registered_op_nodes_and_spans() -> None:
    e = parse_expr("1 + 2 * 3")
    assert isinstance(e, Call)
    assert e.op is Op.get("add")
    assert e.span == Span("<string>", 1, 1, 1, 10)
    rhs = e.args[1]
    assert isinstance(rhs, Call)
    assert rhs.op is Op.get("multiply")
    assert rhs.span == Span("<string>", 1, 5, 1, 10)


# -- expressions ------------------------------------------------------------------------------


def test_function_with_annotations_return_type_and_attributes() -> None:
    f = parse_expr(
        'fn (%x: Tensor[(10, 3), float32], %y, Primitive=1, Compiler="ccompiler") -> float32 {\n'
        "  add(%x, %y)\n"
        "}"
    )
    assert isinstance(f, Function)
    x, y = f.params
    assert x.name_hint == "x" and x.type_annotation == TensorType((10, 3), "float32")
    assert y.name_hint == "y" and y.type_annotation is None
    assert f.ret_type == F32
    assert f.attrs == Attrs(Primitive=1, Compiler="ccompiler")
    assert isinstance(f.body, Call) and f.body.args == (x, y)
    assert_same(
        f, Function((x, y), call("add", x, y), F32, (), Attrs(Primitive=1, Compiler="ccompiler"))
    )


def test_polymorphic_function() -> None:
    f = parse_expr("fn [A, B](%x: A, %f: fn (A) -> B) -> B { %f(%x) }")
    a, b = TypeVar("A"), TypeVar("B")
    x, fv = Var("x", a), Var("f", FuncType((a,), b))
    assert_same(f, Function((x, fv), Call(fv, (x,)), b, (a, b)))
    assert isinstance(f, Function)
    assert [tv.kind for tv in f.type_params] == [Kind.TYPE, Kind.TYPE]


def test_tuples_projections_and_unit() -> None:
    x = Var("x")
    e = parse_expr("free_var %x; ((), (%x,), (%x, 1,), %x.0, (%x, %x).1.0)")
    expected = Tuple(
        (
            Tuple(()),
            Tuple((x,)),
            Tuple((x, const(1))),
            TupleGetItem(x, 0),
            TupleGetItem(TupleGetItem(Tuple((x, x)), 1), 0),
        )
    )
    assert_same(e, expected)


def test_parenthesised_expression_is_not_a_tuple() -> None:
    assert_same(parse_expr("(((1)))"), const(1))


def test_calls_of_any_callee() -> None:
    f, g = Var("f"), Var("g")
    e = parse_expr("free_var %f; free_var %g; (@h(%f), %f(1)(2), (fn (%y) { %y })(3), %g())")
    h = e.fields[0].op  # type: ignore[attr-defined]
    assert isinstance(h, GlobalVar) and h.name_hint == "h"
    y = Var("y")
    expected = Tuple(
        (
            Call(h, (f,)),
            Call(Call(f, (const(1),)), (const(2),)),
            Call(Function((y,), y), (const(3),)),
            Call(g, ()),
        )
    )
    assert_same(e, expected)


def test_if_let_and_refs() -> None:
    e = parse_expr(
        "let %r = ref(1);\n"
        "let %u = ref_write(%r, 2);\n"
        "if (ref_read(%r) == 2) { let %z: int32 = 3; %z } else { 4 }"
    )
    r, u, z = Var("r"), Var("u"), Var("z", I32)
    expected = Let(
        r,
        RefCreate(const(1)),
        Let(
            u,
            RefWrite(r, const(2)),
            If(call("equal", RefRead(r), const(2)), Let(z, const(3), z), const(4)),
        ),
    )
    assert_same(e, expected)


def test_graph_bindings_name_nodes_without_lets() -> None:
    e = parse_expr("free_var %x;\n%0 = add(%x, %x);\n%1 = (%0, %0);\nmultiply(%1.0, %0)")
    assert isinstance(e, Call) and e.op is Op.get("multiply")
    proj, shared = e.args
    assert isinstance(proj, TupleGetItem)
    pair = proj.tuple_value
    assert isinstance(pair, Tuple)
    # The same node object at every use: the text is a DAG.
    assert pair.fields[0] is pair.fields[1] is shared


def test_graph_bindings_are_scoped_to_their_block() -> None:
    with pytest.raises(relay.ParseError, match="unknown variable %0"):
        parse_expr("free_var %x; if (True) { %0 = add(%x, %x); %0 } else { %0 }")


def test_let_of_a_function_is_recursive_other_lets_see_the_outer_binding() -> None:
    e = parse_expr("let %f = fn (%n) { %f(%n) }; %f")
    assert isinstance(e, Let)
    fn = e.value
    assert isinstance(fn, Function) and isinstance(fn.body, Call)
    assert fn.body.op is e.var
    e2 = parse_expr("free_var %x; let %x = add(%x, 1); %x")
    assert isinstance(e2, Let) and isinstance(e2.value, Call)
    assert e2.value.args[0] is not e2.var
    assert e2.body is e2.var


def test_let_shadowing_and_sequencing() -> None:
    e = parse_expr("let %x = 1; let %x = (%x, %x); %x")
    assert isinstance(e, Let) and isinstance(e.body, Let)
    inner = e.body
    assert inner.value.fields == (e.var, e.var)  # type: ignore[attr-defined]
    assert inner.body is inner.var
    seq = parse_expr("free_var %r; ref_write(%r, 1); ref_read(%r)")
    assert isinstance(seq, Let)
    assert seq.var.name_hint == ""
    assert isinstance(seq.value, RefWrite) and isinstance(seq.body, RefRead)


def test_let_inside_parentheses() -> None:
    e = parse_expr("((let %x = 1; %x), 2)")
    assert isinstance(e, Tuple)
    first = e.fields[0]
    assert isinstance(first, Let) and first.body is first.var


def test_free_vars() -> None:
    e = parse_expr("free_var %x: Tensor[(2, ?), int64];\nfree_var %y;\n(%x, %y)")
    assert isinstance(e, Tuple)
    x, y = e.fields
    assert isinstance(x, Var) and x.type_annotation == TensorType((2, Any), "int64")
    assert isinstance(y, Var) and y.type_annotation is None
    assert relay.ir.free_vars(e) == [x, y]


def test_operators_and_dotted_operator_names(conv_op: str) -> None:
    e = parse_expr("free_var %x; free_var %w; test_parser.conv(%x, %w)")
    assert isinstance(e, Call)
    assert e.op is Op.get(conv_op)
    assert e.attrs == Attrs(padding=(0, 0), data_layout="NCHW", groups=1, scale=1.0, out_dtype=None)
    bare = parse_expr("add")
    assert bare is Op.get("add")


def test_call_attributes_are_validated_and_defaulted(conv_op: str) -> None:
    e = parse_expr(
        "free_var %x; free_var %w;\n"
        'test_parser.conv(%x, %w, padding=[1, 2], data_layout="NHWC", scale=0.5f, groups=2,)'
    )
    assert isinstance(e, Call)
    assert e.attrs == Attrs(padding=(1, 2), data_layout="NHWC", groups=2, scale=0.5, out_dtype=None)
    assert list(e.attrs) == ["padding", "data_layout", "groups", "scale", "out_dtype"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("-3", -3),
        ("1i64", 1),
        ("2.5", 2.5),
        ("2f", 2.0),
        ("-1e-05f", -1e-05),
        ("1e+300f", 1e300),
        ('"NHWC"', "NHWC"),
        ('"a\\"b\\n\\u00e9"', 'a"b\né'),
        ("True", True),
        ("False", False),
        ("None", None),
        ("[]", ()),
        ("[1, [2, 3], [], None]", (1, (2, 3), (), None)),
        ('[1, "x", 2.5f,]', (1, "x", 2.5)),
    ],
)
def test_attribute_values(text: str, value: object) -> None:
    f = parse_expr(f"fn (a={text}) {{ 1 }}")
    assert isinstance(f, Function)
    got = f.attrs["a"]
    assert got == value
    assert type(got) is type(value)


def test_keywords_may_be_attribute_names() -> None:
    f = parse_expr('fn (fn=1, if=True, type="t", True=2, _=3, match=None) { 1 }')
    assert isinstance(f, Function)
    assert f.attrs == Attrs({"fn": 1, "if": True, "type": "t", "True": 2, "_": 3, "match": None})


def test_attributes_of_non_operator_calls_are_kept_verbatim() -> None:
    e = parse_expr("free_var %f; %f(1, Inline=1)")
    assert isinstance(e, Call) and e.attrs == Attrs(Inline=1)


def test_spans_of_nodes() -> None:
    text = "fn (%x: float32) {\n  %0 = add(%x, 1f);\n  let %y = (%0, %x);\n  %y.1\n}"
    f = parse_expr(text, "spans.rly")
    assert isinstance(f, Function)
    assert f.span == Span("spans.rly", 1, 1, 5, 2)
    x = f.params[0]
    assert x.span == Span("spans.rly", 1, 5, 1, 7)
    let = f.body
    assert isinstance(let, Let)
    assert let.span == Span("spans.rly", 3, 3, 4, 7)
    assert let.var.span == Span("spans.rly", 3, 7, 3, 9)
    tup = let.value
    assert isinstance(tup, Tuple) and tup.span == Span("spans.rly", 3, 12, 3, 20)
    add = tup.fields[0]
    assert isinstance(add, Call) and add.span == Span("spans.rly", 2, 8, 2, 19)
    one = add.args[1]
    assert isinstance(one, Constant) and one.span == Span("spans.rly", 2, 16, 2, 18)
    proj = let.body
    assert isinstance(proj, TupleGetItem) and proj.span == Span("spans.rly", 4, 3, 4, 7)
    assert x.type_annotation is not None and x.type_annotation.span == Span(  # type: ignore[attr-defined]
        "spans.rly", 1, 9, 1, 16
    )


# -- shape variables and kinds ------------------------------------------------------------------


def test_shape_identifiers_become_implicit_shape_params_of_the_outermost_function() -> None:
    f = parse_expr(
        "fn [A](%x: Tensor[(n, 3), float32], %y: Tensor[(m, n), float32]) -> Tensor[(k), int32] {\n"
        "  fn (%z: Tensor[(n, j), float32]) { %z }\n"
        "}"
    )
    assert isinstance(f, Function)
    names = [(tv.name_hint, tv.kind) for tv in f.type_params]
    assert names == [
        ("A", Kind.TYPE),
        ("n", Kind.SHAPE),
        ("m", Kind.SHAPE),
        ("k", Kind.SHAPE),
        ("j", Kind.SHAPE),
    ]
    _, n, m, k, j = f.type_params
    x, y = f.params
    assert x.type_annotation == TensorType((n, 3), "float32")
    assert y.type_annotation == TensorType((m, n), "float32")
    assert f.ret_type == TensorType((k,), "int32")
    inner = f.body
    assert isinstance(inner, Function) and inner.type_params == ()
    assert inner.params[0].type_annotation == TensorType((n, j), "float32")
    # Printing makes them explicit; reading that back gives the same function.
    text = astext(f)
    assert text.startswith("fn [A, n: Shape, m: Shape, k: Shape, j: Shape](")
    assert_same(parse_expr(text), f)


def test_explicit_kinds_and_base_type_dtypes() -> None:
    f = parse_expr("fn [n: Shape, T: BaseType, A: Type](%x: Tensor[(n), T], %y: A) { %x }")
    assert isinstance(f, Function)
    n, t, a = f.type_params
    assert (n.kind, t.kind, a.kind) == (Kind.SHAPE, Kind.BASE_TYPE, Kind.TYPE)
    assert f.params[0].type_annotation == TensorType((n,), t)
    assert f.params[1].type_annotation is a


def test_free_shape_variables_outside_functions_are_one_per_name() -> None:
    e = parse_expr(
        "free_var %x: Tensor[(n), float32];\nfree_var %y: Tensor[(n, m), float32];\n"
        "fn (%z: Tensor[(n), float32]) { (%x, %y, %z) }"
    )
    assert isinstance(e, Function)
    assert e.type_params == ()
    x, y, _ = e.body.fields  # type: ignore[attr-defined]
    n = x.type_annotation.shape[0]
    assert isinstance(n, TypeVar) and n.kind is Kind.SHAPE
    assert y.type_annotation.shape[0] is n
    assert e.params[0].type_annotation.shape[0] is n  # type: ignore[union-attr]


def test_same_shape_name_in_two_definitions_is_two_variables() -> None:
    mod = parse("def @f(%x: Tensor[(n), float32]) { %x }\ndef @g(%x: Tensor[(n), float32]) { %x }")
    (nf,) = mod.function("f").type_params
    (ng,) = mod.function("g").type_params
    assert nf is not ng and nf.name_hint == ng.name_hint == "n"


# -- types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("float32", F32),
        ("bool", TensorType((), "bool")),
        ("Tensor[(), float32]", F32),
        ("Tensor[(10), float32]", TensorType((10,), "float32")),
        ("Tensor[(10,), float32]", TensorType((10,), "float32")),
        ("Tensor[(1, ?), bfloat16]", TensorType((1, Any), "bfloat16")),
        ("()", TupleType(())),
        ("(int32,)", TupleType((I32,))),
        ("(int32)", TupleType((I32,))),
        ("(int32, (float32, ()),)", TupleType((I32, TupleType((F32, TupleType(())))))),
        ("fn () -> ()", FuncType((), TupleType(()))),
        ("fn (int32, float32) -> float32", FuncType((I32, F32), F32)),
        ("ref(int32)", RefType(I32)),
        ("ref(fn (int32) -> ref(int32))", RefType(FuncType((I32,), RefType(I32)))),
    ],
)
def test_types(text: str, expected: object) -> None:
    assert parse_type(text) == expected


def test_polymorphic_function_type_and_incomplete_type() -> None:
    ty = parse_type("fn [A, n: Shape](A, Tensor[(n), float32]) -> (A, _)")
    assert isinstance(ty, FuncType)
    a, n = ty.type_params
    assert n.kind is Kind.SHAPE
    assert ty.arg_types == (a, TensorType((n,), "float32"))
    assert isinstance(ty.ret_type, TupleType)
    assert ty.ret_type.fields[0] is a
    assert isinstance(ty.ret_type.fields[1], IncompleteType)
    free = parse_type("Tensor[(n, n), float32]")
    assert isinstance(free, TensorType) and free.shape[0] is free.shape[1]


def test_adt_types_need_a_module() -> None:
    mod = parse(LIST_TEXT)
    lst = mod.get_global_type_var("List")
    assert parse_type("List[int32]", module=mod) == TypeCall(lst, (I32,))
    assert parse_type("List", module=mod) is lst
    with pytest.raises(relay.ParseError, match="unknown type List"):
        parse_type("List[int32]")


# -- modules, data types and matches ----------------------------------------------------------


def test_module_with_types_forward_references_and_recursion() -> None:
    mod = parse(
        '#[version = "0.0.5"]\n'
        "def @length[A](%xs: List[A]) -> int32 {\n"
        "  match (%xs) {\n"
        "    Cons(_, %rest) => 1 + @length(%rest),\n"
        "    Nil => 0,\n"
        "  }\n"
        "}\n"
        "\n" + LIST_TEXT + "\nextern type Storage\n"
    )
    data = mod.get_type("List")
    assert [t.name_hint for t in mod.type_definitions] == ["List", "Storage"]
    assert mod.get_type("Storage").is_extern
    cons, nil = data.constructors
    assert (cons.name_hint, cons.tag, cons.belong_to) == ("Cons", 0, data.header)
    assert (nil.name_hint, nil.tag, nil.inputs) == ("Nil", 1, ())
    a = data.type_params[0]
    assert cons.inputs == (a, TypeCall(data.header, (a,)))
    assert mod.get_constructor("Cons") is cons

    length = mod.function("length")
    gv = mod.get_global_var("length")
    expected_data, e_cons, e_nil = list_adt()
    ea = TypeVar("A")
    e_xs, e_rest = Var("xs", TypeCall(expected_data.header, (ea,))), Var("rest")
    expected = Function(
        (e_xs,),
        Match(
            e_xs,
            (
                Clause(
                    PatternConstructor(e_cons, (PatternWildcard(), PatternVar(e_rest))),
                    call("add", const(1), Call(gv, (e_rest,))),
                ),
                Clause(PatternConstructor(e_nil), const(0)),
            ),
        ),
        I32,
        (ea,),
    )
    expected_mod = Module()
    expected_mod.add_type(expected_data)
    expected_mod.add_type(TypeData(GlobalTypeVar("Storage"), (), (), is_extern=True))
    expected_mod.add(GlobalVar("length"), expected)
    # The recursive call must refer to the module's own global.
    body = length.body
    assert isinstance(body, Match)
    rec = body.clauses[0].rhs
    assert isinstance(rec, Call) and isinstance(rec.args[1], Call) and rec.args[1].op is gv
    assert_same(mod, expected_mod, map_free_vars=False)


def test_constructor_values_calls_and_patterns() -> None:
    mod = parse(
        LIST_TEXT + "\ndef @f(%xs: List[int32]) {\n"
        "  let %l = Cons(1, Nil);\n"
        "  let %g = Cons;\n"
        "  let %n = Nil();\n"
        "  match? (%xs, %l) {\n"
        "    (Cons(%h, Cons(_, %t: List[int32])), _) => { (%h, %t) },\n"
        "    (Nil, %rest) => %rest,\n"
        "  }\n"
        "}\n"
    )
    cons, nil = mod.get_type("List").constructors
    f = mod.function("f")
    l_let = f.body
    assert isinstance(l_let, Let)
    value = l_let.value
    assert isinstance(value, Call) and value.op is cons
    assert isinstance(value.args[1], Call) and value.args[1].op is nil and value.args[1].args == ()
    g_let = l_let.body
    assert isinstance(g_let, Let) and g_let.value is cons
    n_let = g_let.body
    assert isinstance(n_let, Let) and isinstance(n_let.value, Call) and n_let.value.op is nil
    m = n_let.body
    assert isinstance(m, Match) and not m.complete
    first, second = m.clauses
    assert isinstance(first.lhs, PatternTuple)
    outer_cons, wild = first.lhs.patterns
    assert isinstance(outer_cons, PatternConstructor) and outer_cons.constructor is cons
    assert isinstance(wild, PatternWildcard)
    h_pat, inner = outer_cons.patterns
    assert isinstance(h_pat, PatternVar) and isinstance(inner, PatternConstructor)
    t_pat = inner.patterns[1]
    assert isinstance(t_pat, PatternVar)
    assert t_pat.var.type_annotation == TypeCall(mod.get_global_type_var("List"), (I32,))
    assert first.rhs.fields == (h_pat.var, t_pat.var)  # type: ignore[attr-defined]
    nil_pat, rest_pat = second.lhs.patterns  # type: ignore[attr-defined]
    assert isinstance(nil_pat, PatternConstructor) and nil_pat.patterns == ()
    assert second.rhs is rest_pat.var


def test_clause_bodies_with_and_without_braces_and_let_bodies() -> None:
    mod = parse(
        LIST_TEXT + "def @f(%xs: List[int32]) {\n"
        "  match (%xs) {\n"
        "    Cons(%x, _) => let %y = %x; %y,\n"
        "    Nil => { let %z = 0; %z }\n"
        "  }\n"
        "}\n"
    )
    m = mod.function("f").body
    assert isinstance(m, Match) and m.complete
    assert all(isinstance(c.rhs, Let) for c in m.clauses)


def test_parse_into_a_base_module_uses_its_definitions() -> None:
    prelude = relay.prelude()
    mod = parse("def @main() { @length(Cons(1, Nil)) }", module=prelude)
    assert "length" in mod and "main" in mod
    assert "main" not in prelude
    main = mod.function("main")
    assert isinstance(main.body, Call)
    assert main.body.op is prelude.get_global_var("length")
    assert main.body.args[0].op is prelude.get_constructor("Cons")  # type: ignore[attr-defined]
    e = parse_expr("@map(fn (%x) { %x }, Nil)", module=prelude)
    assert isinstance(e, Call) and e.op is prelude.get_global_var("map")
    with pytest.raises(relay.ParseError, match="duplicate definition of global @map"):
        parse("def @map() { 1 }", module=prelude)


def test_parse_expr_makes_globals_per_name() -> None:
    e = parse_expr("(@f, @f, @g)")
    assert isinstance(e, Tuple)
    f1, f2, g = e.fields
    assert isinstance(f1, GlobalVar) and f1 is f2 and f1.name_hint == "f"
    assert isinstance(g, GlobalVar) and g is not f1


def test_empty_module_and_version_header() -> None:
    assert len(parse("")) == 0
    assert len(parse('#[version = "0.0.5"]\n')) == 0
    assert len(parse('#[ version = "0.0.5" ]\n')) == 0
    assert isinstance(parse_expr('#[version = "0.0.5"]\n1'), Constant)


def test_published_relay_syntax() -> None:
    """Forms that Relay's own prelude and printer used, beyond relay's canonical output."""
    mod = parse(
        '#[version = "0.0.5"]\n'
        + LIST_TEXT
        + textwrap.dedent(
            """
            def @compose[A, B, C](%f: fn(B) -> C, %g: fn(A) -> B) {
              fn(%x: A) -> C {
                %f(%g(%x))
              }
            }
            def @sum(%xs: List[Tensor[(), int32]]) -> int32 {
              let %add_f = fn(%x: Tensor[(), int32], %y: Tensor[(), int32]) -> Tensor[(), int32] {
                %x + %y
              };
              @foldl(%add_f, 0, %xs)
            }
            def @foldl[A, B](%f: fn(A, B) -> A, %acc: A, %xs: List[B]) -> A {
              match(%xs) {
                Cons(%x, %rest) => @foldl(%f, %f(%acc, %x), %rest),
                Nil => %acc,
              }
            }
            def @main(%x: Tensor[(1, 2), float32]) -> Tensor[(1, 2), float32] {
              %0 = add(%x, %x) /* ty=Tensor[(1, 2), float32] */;
              %1 = (%0, %x) /* ty=(Tensor[(1, 2), float32], Tensor[(1, 2), float32]) */;
              multiply(%1.0, 2f) /* ty=Tensor[(1, 2), float32] */
            }
            """
        )
    )
    assert [gv.name_hint for gv in mod.functions] == ["compose", "sum", "foldl", "main"]
    sum_body = mod.function("sum").body
    assert isinstance(sum_body, Let) and isinstance(sum_body.value, Function)


# -- metadata ---------------------------------------------------------------------------------


def test_metadata_constants() -> None:
    text = (
        "(meta[relay.Constant][0], meta[relay.Constant][1], meta[relay.Constant][0])\n"
        "#[metadata]\n"
        '{"relay.Constant": [{"dtype": "float32", "shape": [2, 3], '
        '"data": "AAAAAAAAgD8AAABAAABAQAAAgEAAAKBA"}, '
        '{"dtype": "float32", "shape": [], "data": "AADAfw=="}]}\n'
    )
    e = parse_expr(text)
    assert isinstance(e, Tuple)
    a, nan, a2 = e.fields
    assert isinstance(a, Constant) and isinstance(nan, Constant) and isinstance(a2, Constant)
    np.testing.assert_array_equal(a.data, np.arange(6, dtype="float32").reshape(2, 3))
    assert np.isnan(nan.data) and nan.data.shape == ()
    assert a2.data is a.data
    assert a.span == Span("<string>", 1, 2, 1, 25)


def test_metadata_in_a_module_and_every_dtype() -> None:
    arrays = [np.arange(4, dtype=d).reshape(2, 2) for d in ("int8", "uint16", "int64", "float16")]
    arrays.append(np.array([True, False]))
    mod = Module()
    mod["main"] = Function((), Tuple(tuple(const(a) for a in arrays)))
    text = astext(mod)
    assert "#[metadata]" in text
    parsed = parse(text)
    fields = parsed.function("main").body.fields  # type: ignore[attr-defined]
    for got, want in zip(fields, arrays, strict=True):
        assert got.data.dtype == want.dtype
        np.testing.assert_array_equal(got.data, want)


# -- comments ---------------------------------------------------------------------------------


def test_comments() -> None:
    text = (
        "// a line comment\n"
        "fn (%x /* inline */) {\n"
        "  /* outer /* nested */ still a comment */\n"
        "  add(%x, %x) // trailing\n"
        "}"
    )
    f = parse_expr(text)
    assert isinstance(f, Function) and isinstance(f.body, Call)
    assert f.body.span == Span("<string>", 4, 3, 4, 14)


def test_comment_markers_inside_strings_and_metadata_are_kept() -> None:
    f = parse_expr('fn (a="// not /* a comment", b="*/") { 1 }')
    assert isinstance(f, Function)
    assert f.attrs == Attrs(a="// not /* a comment", b="*/")
    blanked = strip_comments('1 /* x\ny */ "/*" // z\n2')
    assert blanked == '1     \n     "/*"     \n2'
    meta = '#[metadata]\n{"relay.Constant": [{"data": "//8="}]}'
    assert strip_comments("x // c\n" + meta) == "x     \n" + meta


# -- deep and long programs -------------------------------------------------------------------


def test_100000_graph_bindings() -> None:
    n = 100_000
    text = "fn (%x) {\n" + "".join(f"  %{i} = add(%x, 1f);\n" for i in range(n)) + f"  %{n - 1}\n}}"
    f = parse_expr(text)
    assert isinstance(f, Function)
    assert isinstance(f.body, Call) and f.body.op is Op.get("add")
    assert f.body.span == Span("<string>", n + 1, 12, n + 1, 23)


def test_100000_deep_let_chain() -> None:
    n = 100_000
    text = (
        "free_var %x0;\n"
        + "".join(f"let %x{i + 1} = add(%x{i}, 1f);\n" for i in range(n))
        + f"%x{n}"
    )
    e = parse_expr(text)
    depth = 0
    prev: Expr = relay.ir.free_vars(e)[0]
    while isinstance(e, Let):
        assert isinstance(e.value, Call) and e.value.args[0] is prev
        prev = e.var
        e = e.body
        depth += 1
    assert depth == n and e is prev


def test_deeply_nested_expressions() -> None:
    n = 20_000
    e = parse_expr("(" * n + "1" + ")" * n)
    assert isinstance(e, Constant)
    nested = parse_expr("free_var %x;\n" + "negative(" * n + "%x" + ")" * n)
    depth = 0
    while isinstance(nested, Call):
        nested = nested.args[0]
        depth += 1
    assert depth == n
    mod = parse(LIST_TEXT + "def @main() {\n" + "Cons(1, " * n + "Nil" + ")" * n + "\n}")
    body: Expr = mod.function("main").body
    count = 0
    while isinstance(body, Call) and body.args:
        body = body.args[1]
        count += 1
    assert count == n


def test_parsing_does_not_change_the_recursion_limit_or_leave_gc_disabled() -> None:
    import gc

    limit = sys.getrecursionlimit()
    parse_expr("(" * 5000 + "1" + ")" * 5000)
    assert sys.getrecursionlimit() == limit
    assert gc.isenabled()
    with pytest.raises(relay.ParseError):
        parse_expr("(1")
    assert gc.isenabled()


# -- the grammar and the package ----------------------------------------------------------------


def test_grammar_has_no_lalr_conflicts(caplog: pytest.LogCaptureFixture) -> None:
    import importlib.resources

    from lark import Lark, logger

    grammar = importlib.resources.files("relay.ir").joinpath("grammar.lark").read_text("utf-8")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            Lark(grammar, parser="lalr", start=["module", "expr_text", "type_text"], debug=True)
    finally:
        logger.removeHandler(caplog.handler)
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]


def test_importing_relay_does_not_import_lark() -> None:
    code = "import relay, sys; print('lark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_prelude_parses() -> None:
    mod = relay.prelude()
    assert {"List", "Option", "Tree"} <= {t.name_hint for t in mod.type_definitions}
    assert {"map", "foldl", "foldr", "length"} <= {g.name_hint for g in mod.functions}


# -- round trips with the printer -------------------------------------------------------------

CANONICAL_MODULE = (
    '#[version = "0.0.5"]\n'
    "type List[A] {\n"
    "  Cons(A, List[A]),\n"
    "  Nil,\n"
    "}\n"
    "\n"
    "extern type Storage\n"
    "\n"
    "def @f[A, n: Shape](%x: Tensor[(n, 3), float32], %y: A, %z) -> Tensor[(n, 3), float32] {\n"
    "  %0 = add(%x, %x);\n"
    "  %1 = (%0, %y);\n"
    "  %2 = %1.0;\n"
    "  multiply(%2, 2f)\n"
    "}\n"
    "\n"
    "def @length[A](%xs: List[A]) -> int32 {\n"
    "  match (%xs) {\n"
    "    Cons(_, %rest) => {\n"
    "      %0 = @length(%rest);\n"
    "      add(1, %0)\n"
    "    },\n"
    "    Nil => 0,\n"
    "  }\n"
    "}\n"
    "\n"
    "def @hd[A](%xs: List[A]) -> A {\n"
    "  match? (%xs) {\n"
    "    Cons(%h, _) => %h,\n"
    "  }\n"
    "}\n"
    "\n"
    "def @main(%r: ref(int32), Primitive=1) -> (int32, List[int32]) {\n"
    "  let %f = fn (%n: int32) -> int32 {\n"
    "    %f(%n)\n"
    "  };\n"
    "  %0 = ref_read(%r);\n"
    "  %1 = ref_write(%r, %0);\n"
    "  let %t: (int32, ()) = (-3, %1);\n"
    "  %2 = %t.0;\n"
    "  %3 = Cons(%2, Nil);\n"
    "  %4 = @length(%3);\n"
    "  %5 = equal(%4, 1);\n"
    "  if (%5) {\n"
    "    (%4, %3)\n"
    "  } else {\n"
    "    (0, Nil)\n"
    "  }\n"
    "}\n"
)

CANONICAL_EXPRS = [
    "free_var %x: float32;\nadd(%x, %x)",
    "fn (%x, %y) {\n  %0 = add(%x, %y);\n  multiply(%0, %0)\n}",
    "(1, 2.5f, 3i64, -42i16, 0.1f, 2.5f16, 1f64, True, False, 7u8, 1e-07f)",
    "fn [A](%x: A) -> A {\n  %x\n}",
    "fn (%x: Tensor[(1, ?), int64]) {\n  %x\n}",
    "free_var %r;\n%0 = ref(1);\n%1 = ref_read(%0);\nref_write(%r, %1)",
    "meta[relay.Constant][0]\n#[metadata]\n"
    '{"relay.Constant": [{"dtype": "float32", "shape": [2], "data": "AACAPwAAAEA="}]}\n',
    "fn (%p) {\n  match (%p) {\n    (%x, (%y,)) => %x,\n  }\n}",
    'fn (%x, Primitive=1, Compiler="c", w=[1, [2, 3]], e=1e-05f, n=None) {\n  %x\n}',
]


def test_canonical_module_text_is_a_fixed_point() -> None:
    mod = parse(CANONICAL_MODULE)
    assert astext(mod) == CANONICAL_MODULE
    assert_same(parse(astext(mod)), mod, map_free_vars=False)


@pytest.mark.parametrize("text", CANONICAL_EXPRS)
def test_canonical_expression_texts_are_fixed_points(text: str) -> None:
    e = parse_expr(text)
    assert astext(e) == text
    assert_same(parse_expr(astext(e)), e)


def test_prelude_round_trips() -> None:
    mod = relay.prelude()
    text = astext(mod)
    again = parse(text)
    assert_same(again, mod, map_free_vars=False)
    assert astext(again) == text


@pytest.mark.parametrize(
    "text",
    [
        "free_var %a: int32; free_var %b; %a - -1 * 2 == %b",
        "fn (%x: Tensor[(n, 3), float32], %y) -> float32 { %0 = add(%x, 1f); let %z = %0.1.2; %z }",
        "free_var %x; if (True) { let %y = %x; (%y, %x) } else { ((let %q = 1; %q), %x) }",
        "fn (%x) { %x; %x }",
        "free_var %x; %0 = (%x, %x); %1 = (%0, %0); (%1, %1.0, %0)",
    ],
)
def test_hand_written_texts_round_trip(text: str) -> None:
    e = parse_expr(text)
    printed = astext(e)
    again = parse_expr(printed)
    assert_same(again, e)
    assert astext(again) == printed


_INFIX = ["*", "/", "+", "-", "<", ">", "<=", ">=", "==", "!="]


@st.composite
def infix_texts(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        leaf = draw(st.sampled_from(["%x", "%y", "1", "-2", "3f", "(%x, %y).0"]))
        return str(leaf)
    lhs = draw(infix_texts(depth - 1))
    rhs = draw(infix_texts(depth - 1))
    sym = draw(st.sampled_from(_INFIX))
    return f"{lhs} {sym} {rhs}" if draw(st.booleans()) else f"({lhs} {sym} {rhs})"


@settings(deadline=None, max_examples=100)
@given(infix_texts())
def test_generated_infix_expressions_round_trip(text: str) -> None:
    e = parse_expr("free_var %x; free_var %y;\n" + text)
    printed = astext(e)
    assert_same(parse_expr(printed), e)
