"""Symbolic dimensions in the text format and in structural equality.

Shapes such as ``Tensor[(n * 784, (h - 3) // 2 + 1), float32]`` parse into canonical
relay.ir.dim values, print back to the same text, report malformed dimensions with exact
messages and spans, and compare (and hash) up to renaming of their shape variables.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.ir import dim as D
from relay.ir.dim import DimExpr
from relay.ir.equal import first_mismatch, structural_equal, structural_hash
from relay.ir.expr import Function, GlobalVar, Var
from relay.ir.module import Module
from relay.ir.parser import parse, parse_type, strip_comments
from relay.ir.types import (
    Any,
    FuncType,
    IncompleteType,
    Kind,
    TensorType,
    TupleType,
    Type,
    TypeVar,
)


def shape_of(text: str) -> tuple[D.Dim, ...]:
    ty = parse_type(text)
    assert isinstance(ty, TensorType)
    return ty.shape


def fn(text: str) -> Function:
    """The function @f of a module text."""
    f = parse(text)["f"]
    assert isinstance(f, Function)
    return f


def vars_by_name(ty: Type) -> dict[str, TypeVar]:
    assert isinstance(ty, TensorType)
    out: dict[str, TypeVar] = {}
    for d in ty.shape:
        for v in D.dim_vars(d):
            assert isinstance(v, TypeVar) and v.kind is Kind.SHAPE
            out[v.name_hint] = v
    return out


# -- parsing and printing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        (
            "Tensor[(n * 784, (h - 3) // 2 + 1, -n + 1, m * ((n - 3) // 2)), float32]",
            "Tensor[(n * 784, (h - 3) // 2 + 1, -n + 1, m * ((n - 3) // 2)), float32]",
        ),
        # rank 1: `(d)` is still a shape of one dimension, as in older Relay text
        ("Tensor[(5), float32]", "Tensor[(5,), float32]"),
        ("Tensor[(n), float32]", "Tensor[(n,), float32]"),
        ("Tensor[((n + 1)), float32]", "Tensor[(n + 1,), float32]"),
        ("Tensor[((5)), float32]", "Tensor[(5,), float32]"),
        ("Tensor[(n + 1,), float32]", "Tensor[(n + 1,), float32]"),
        ("Tensor[(n, m,), int8]", "Tensor[(n, m), int8]"),
        # no spaces needed; `//` in a shape is floor division, not a comment
        (
            "Tensor[(n//2, n%3, n*2, n-1, n+1), float32]",
            "Tensor[(n // 2, n % 3, n * 2, n - 1, n + 1), float32]",
        ),
        # precedence and associativity, as in Python
        ("Tensor[(n - 2 - 1), float32]", "Tensor[(n - 3,), float32]"),
        ("Tensor[(n - (2 - 1)), float32]", "Tensor[(n - 1,), float32]"),
        ("Tensor[(1 + n * 2), float32]", "Tensor[(n * 2 + 1,), float32]"),
        ("Tensor[((1 + n) * 2), float32]", "Tensor[(n * 2 + 2,), float32]"),
        ("Tensor[(-n // 2), float32]", "Tensor[((-n) // 2,), float32]"),
        ("Tensor[(-(n // 2) + 1), float32]", "Tensor[(-(n // 2) + 1,), float32]"),
        ("Tensor[(1 - n % 3), float32]", "Tensor[(-(n % 3) + 1,), float32]"),
        ("Tensor[(2 * n // 4), float32]", "Tensor[((n * 2) // 4,), float32]"),
        ("Tensor[(n // 2 * 2), float32]", "Tensor[((n // 2) * 2,), float32]"),
        ("Tensor[(n // 2 // 3), float32]", "Tensor[(n // 2 // 3,), float32]"),
        ("Tensor[(n // (m // 2)), float32]", "Tensor[(n // (m // 2),), float32]"),
        ("Tensor[(- - n), float32]", "Tensor[(n,), float32]"),
        # canonical forms
        ("Tensor[(2 * n + 3 * n), float32]", "Tensor[(n * 5,), float32]"),
        ("Tensor[(n - n + 4), float32]", "Tensor[(4,), float32]"),
        ("Tensor[(m - 2 * n), float32]", "Tensor[(m - n * 2,), float32]"),
        ("Tensor[(n * (m + 1)), float32]", "Tensor[(m * n + n,), float32]"),
        ("Tensor[((n + 1) * (n - 1)), float32]", "Tensor[(n * n - 1,), float32]"),
        ("Tensor[(4 * n // 2), float32]", "Tensor[(n * 2,), float32]"),
        ("Tensor[((4 * n + 6) // 4), float32]", "Tensor[(n + 1,), float32]"),
        ("Tensor[((4 * n + 6) % 4), float32]", "Tensor[(2,), float32]"),
        ("Tensor[(n // n, n % n, n // 1), float32]", "Tensor[(1, 0, n), float32]"),
        ("Tensor[(n // (-2)), float32]", "Tensor[(n // (-2),), float32]"),
        ("Tensor[((-5) // n), float32]", "Tensor[((-5) // n,), float32]"),
        ("Tensor[((m * n) % (m + 1)), float32]", "Tensor[((m * n) % (m + 1),), float32]"),
        ("Tensor[(3i64, n * 2), float32]", "Tensor[(3, n * 2), float32]"),
        # unknown (`_`) and run-time (`?`) dimensions
        ("Tensor[(_, _ + 1, ?), float32]", "Tensor[(_, _ + 1, ?), float32]"),
        ("Tensor[((?)), float32]", "Tensor[(?,), float32]"),
        # block comments may sit inside a shape
        ("Tensor[(n /* rows */ // 2), float32]", "Tensor[(n // 2,), float32]"),
    ],
)
def test_parse_then_print(text: str, printed: str) -> None:
    ty = parse_type(text)
    assert relay.astext(ty) == printed
    again = parse_type(printed)
    assert relay.astext(again) == printed
    assert structural_equal(again, ty, map_free_vars=True)
    assert structural_hash(again, map_free_vars=True) == structural_hash(ty, map_free_vars=True)


def test_parsed_dims_are_built_with_relay_ir_dim() -> None:
    ty = parse_type("Tensor[(n * 784, (h - 3) // 2 + 1, -n + 1, m * ((n - 3) // 2), ?), float32]")
    v = vars_by_name(ty)
    n, h, m = v["n"], v["h"], v["m"]
    assert isinstance(ty, TensorType)
    assert ty.shape == (
        D.mul(n, 784),
        D.add(D.floordiv(D.sub(h, 3), 2), 1),
        D.add(D.neg(n), 1),
        D.mul(m, D.floordiv(D.sub(n, 3), 2)),
        Any,
    )
    assert all(isinstance(d, DimExpr) for d in ty.shape[:4])


def test_one_shape_variable_per_name() -> None:
    ty = parse_type("Tensor[(n, n * 2, n // 2), float32]")
    assert isinstance(ty, TensorType)
    (n,) = vars_by_name(ty).values()
    assert ty.shape == (n, D.mul(n, 2), D.floordiv(n, 2))


def test_underscore_is_a_fresh_unknown_dimension() -> None:
    ty = parse_type("Tensor[(_, _ + 1), float32]")
    assert isinstance(ty, TensorType)
    u, d = ty.shape
    assert isinstance(u, IncompleteType) and u.kind is Kind.SHAPE
    (w,) = D.dim_vars(d)
    assert isinstance(w, IncompleteType) and w is not u
    assert d == D.add(w, 1)


def test_shape_variables_in_dims_are_implicit_parameters_of_the_outermost_def() -> None:
    text = (
        "def @f(%x: Tensor[(n * 2, (h - 3) // 2 + 1), float32], %y: Tensor[(n,), float32]) "
        "-> Tensor[(n + h,), float32] {\n"
        "  let %g = fn (%z: Tensor[(k * n,), float32]) { %z };\n"
        "  %x\n"
        "}\n"
    )
    mod = parse(text)
    f = fn(text)
    assert [(tv.name_hint, tv.kind) for tv in f.type_params] == [
        ("n", Kind.SHAPE),
        ("h", Kind.SHAPE),
        ("k", Kind.SHAPE),
    ]
    n, h, _ = f.type_params
    assert f.params[0].type_annotation == TensorType(
        (D.mul(n, 2), D.add(D.floordiv(D.sub(h, 3), 2), 1)), "float32"
    )
    assert f.ret_type == TensorType((D.add(n, h),), "float32")
    assert relay.astext(mod) == (
        '#[version = "0.0.5"]\n'
        "def @f[n: Shape, h: Shape, k: Shape](%x: Tensor[(n * 2, (h - 3) // 2 + 1), float32], "
        "%y: Tensor[(n,), float32]) -> Tensor[(h + n,), float32] {\n"
        "  let %g = fn (%z: Tensor[(k * n,), float32]) {\n"
        "    %z\n"
        "  };\n"
        "  %x\n"
        "}\n"
    )
    back = parse(relay.astext(mod))
    relay.assert_structural_equal(back, mod)
    assert structural_hash(back) == structural_hash(mod)


def test_explicit_shape_parameters_bind_dims() -> None:
    f = fn("def @f[n: Shape](%x: Tensor[(n * 2,), float32]) -> Tensor[(n,), float32] { %x }")
    (n,) = f.type_params
    assert f.params[0].type_annotation == TensorType((D.mul(n, 2),), "float32")


def test_function_type_parameters_bind_dims() -> None:
    ty = parse_type("fn [n: Shape](Tensor[(n * 2,), float32]) -> Tensor[(n + 1,), float32]")
    assert isinstance(ty, FuncType)
    (n,) = ty.type_params
    assert ty.arg_types == (TensorType((D.mul(n, 2),), "float32"),)
    assert ty.ret_type == TensorType((D.add(n, 1),), "float32")
    assert relay.astext(ty) == (
        "fn [n: Shape](Tensor[(n * 2,), float32]) -> Tensor[(n + 1,), float32]"
    )


def test_printer_renames_clashing_shape_variables_inside_dims() -> None:
    n1, n2 = TypeVar("n", Kind.SHAPE), TypeVar("n", Kind.SHAPE)
    x = Var("x", TensorType((D.add(n1, D.mul(n2, 2)), D.floordiv(n2, 3)), "float32"))
    mod = Module()
    mod.add(GlobalVar("f"), Function((x,), x, None, (n1, n2)))
    text = relay.astext(mod)
    assert "def @f[n: Shape, n1: Shape](" in text
    back = parse(text)
    relay.assert_structural_equal(back, mod)
    assert structural_hash(back) == structural_hash(mod)
    assert relay.astext(back) == text


def test_comments_around_shapes_with_floor_division() -> None:
    text = (
        '#[version = "0.0.5"]\n'
        "// a shape's // is floor division\n"
        "def @f(%x: Tensor[(n // 2, /* c */ n % 2), float32]) { // the body\n"
        "  %x // the result\n"
        "}\n"
    )
    f = fn(text)
    (n,) = f.type_params
    assert f.params[0].type_annotation == TensorType((D.floordiv(n, 2), D.floormod(n, 2)))


@pytest.mark.parametrize(
    ("text", "blanked"),
    [
        ("Tensor[(n // 2), float32] // c", "Tensor[(n // 2), float32]     "),
        ("Tensor [ (n // (m // 2)) ] // c", "Tensor [ (n // (m // 2)) ]     "),
        ("Tensor[(n /* x */ // 2)]", "Tensor[(n         // 2)]"),
        ('f(x="Tensor[(") // c', 'f(x="Tensor[(")     '),
        # in a data type's arguments too (a dimension may be one: V[n // 2])
        ("MyTensor[(a // b)] // c", "MyTensor[(a // b)]     "),
        ("V[n // 2, List[m // 2]] // c", "V[n // 2, List[m // 2]]     "),
        ("x.V[(a // b)]", "x.V[(a " + " " * 6),
        ("%Tensor[(a // b)]", "%Tensor[(a " + " " * 6),
    ],
)
def test_strip_comments_keeps_floor_division_in_shapes(text: str, blanked: str) -> None:
    assert strip_comments(text) == blanked


# -- errors -----------------------------------------------------------------------------------------

RUN_TIME = "? (a dimension known only at run time) cannot be part of a dimension expression"


@pytest.mark.parametrize(
    ("text", "message", "span"),
    [
        ("Tensor[(n * ?), float32]", RUN_TIME, (1, 13, 1, 14)),
        ("Tensor[(-?), float32]", RUN_TIME, (1, 10, 1, 11)),
        ("Tensor[((?) + 1), float32]", RUN_TIME, (1, 9, 1, 12)),
        ("Tensor[(n // 0), float32]", "division by zero in dimension n // 0", (1, 9, 1, 15)),
        (
            "Tensor[(3, (n + 1) % (m - m)), float32]",
            "division by zero in dimension (n + 1) % (m - m)",
            (1, 12, 1, 29),
        ),
        (
            "Tensor[(1 + n // (2 - 2)), float32]",
            "division by zero in dimension n // (2 - 2)",
            (1, 13, 1, 25),
        ),
        (
            "Tensor[(1 - 2), float32]",
            "invalid dimension 1 - 2: dimensions cannot be negative",
            (1, 9, 1, 14),
        ),
        (
            "Tensor[(-3), float32]",
            "invalid dimension -3: dimensions cannot be negative",
            (1, 9, 1, 11),
        ),
        ("Tensor[(n * 2.5), float32]", "invalid dimension 2.5", (1, 13, 1, 16)),
        (
            "fn [A](Tensor[(A * 2,), float32]) -> A",
            "type variable A has kind Type; only Shape variables can be used in dimensions",
            (1, 16, 1, 17),
        ),
        (
            "fn [T: BaseType](Tensor[(T,), T]) -> T",
            "type variable T has kind BaseType; only Shape variables can be used in dimensions",
            (1, 26, 1, 27),
        ),
        (
            "Tensor[(n *), float32]",
            'unexpected ")"; expected one of: "(", "-", "?", "_", a number, an identifier',
            (1, 12, 1, 13),
        ),
        (
            "Tensor[(n ** 2), float32]",
            'unexpected "*"; expected one of: "(", "-", "?", "_", a number, an identifier',
            (1, 12, 1, 13),
        ),
        (
            "Tensor[(n / 2), float32]",
            'unexpected "/"; expected one of: ")", ",", "-", an operator',
            (1, 11, 1, 12),
        ),
        (
            "Tensor[((n + 1), float32]",
            'unexpected "]"; expected one of: ")", ",", "-", an operator',
            (1, 25, 1, 26),
        ),
    ],
)
def test_bad_dimensions(text: str, message: str, span: tuple[int, int, int, int]) -> None:
    with pytest.raises(relay.ParseError) as info:
        parse_type(text, "dims.rly")
    err = info.value
    assert err.message == message
    assert err.span is not None
    assert (err.span.line, err.span.column, err.span.end_line, err.span.end_column) == span
    assert err.span.source == "dims.rly"


def test_bad_dimension_in_a_module_renders_the_line() -> None:
    text = "def @f[A](%x: Tensor[(n, A * 2), float32]) {\n  %x\n}\n"
    with pytest.raises(relay.ParseError) as info:
        parse(text, "mod.rly")
    assert str(info.value) == (
        "mod.rly:1:26: type variable A has kind Type; only Shape variables can be used in "
        "dimensions\n"
        "def @f[A](%x: Tensor[(n, A * 2), float32]) {\n"
        "                         ^"
    )


def test_division_by_zero_renders_the_whole_division() -> None:
    with pytest.raises(relay.ParseError) as info:
        parse_type("Tensor[(h // (n - n) + 1), float32]", "div.rly")
    assert str(info.value) == (
        "div.rly:1:9: division by zero in dimension h // (n - n)\n"
        "Tensor[(h // (n - n) + 1), float32]\n"
        "        ^^^^^^^^^^^^"
    )


# -- structural equality and hashing ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("lhs", "rhs"),
    [
        (
            "def @f[n: Shape](%x: Tensor[(n * 2,), float32]) { %x }",
            "def @f[m: Shape](%x: Tensor[(m * 2,), float32]) { %x }",
        ),
        # implicitly bound shape variables are parameters too
        (
            "def @f(%x: Tensor[(n * 2, (h - 3) // 2 + 1), float32]) { %x }",
            "def @f(%x: Tensor[(a * 2, (b - 3) // 2 + 1), float32]) { %x }",
        ),
        # renaming changes the canonical order of terms (by name), not equality
        (
            "def @f[n: Shape, m: Shape](%x: Tensor[(n + m * 2, m * (n // 2)), float32]) { %x }",
            "def @f[z: Shape, a: Shape](%x: Tensor[(z + a * 2, a * (z // 2)), float32]) { %x }",
        ),
        (
            "def @f[n: Shape, m: Shape](%x: Tensor[(n % (m + 1) - n * m,), float32]) { %x }",
            "def @f[b: Shape, a: Shape](%x: Tensor[(b % (a + 1) - b * a,), float32]) { %x }",
        ),
        # dims inside a polymorphic function type compare by parameter position
        (
            "def @f(%g: fn [n: Shape](Tensor[(n * 2,), float32]) -> Tensor[(n + 1,), float32]) {"
            " %g }",
            "def @f(%g: fn [k: Shape](Tensor[(k * 2,), float32]) -> Tensor[(k + 1,), float32]) {"
            " %g }",
        ),
        (
            "def @f(%x: Tensor[(_ + 1, _), float32]) { %x }",
            "def @f(%x: Tensor[(_ + 1, _), float32]) { %x }",
        ),
    ],
)
def test_alpha_equivalent_dims(lhs: str, rhs: str) -> None:
    a, b = fn(lhs), fn(rhs)
    relay.assert_structural_equal(a, b, map_free_vars=True)
    assert structural_hash(a, map_free_vars=True) == structural_hash(b, map_free_vars=True)
    if "_" not in lhs:  # unknowns are free: equal only when mapped
        relay.assert_structural_equal(a, b)
        assert structural_hash(a) == structural_hash(b)


@pytest.mark.parametrize(
    ("lhs", "rhs", "path", "reason"),
    [
        (
            "def @f[n: Shape](%x: Tensor[(n * 2,), float32]) { %x }",
            "def @f[n: Shape](%x: Tensor[(n * 3,), float32]) { %x }",
            "params[0].type_annotation.shape[0]",
            "dimension n * 2 vs n * 3",
        ),
        (
            "def @f[n: Shape, m: Shape](%x: Tensor[(n + m * 2,), float32]) { %x }",
            "def @f[n: Shape, m: Shape](%x: Tensor[(m + n * 2,), float32]) { %x }",
            "params[0].type_annotation.shape[0]",
            "dimension m * 2 + n vs m + n * 2",
        ),
        (
            "def @f[n: Shape](%x: Tensor[(n * 2,), float32]) { %x }",
            "def @f[n: Shape](%x: Tensor[(n,), float32]) { %x }",
            "params[0].type_annotation.shape[0]",
            "dimension n * 2 vs n",
        ),
        (
            "def @f[n: Shape](%x: Tensor[(n // 2,), float32]) { %x }",
            "def @f[n: Shape](%x: Tensor[(n % 2,), float32]) { %x }",
            "params[0].type_annotation.shape[0]",
            "dimension n // 2 vs n % 2",
        ),
        (
            "def @f[n: Shape](%x: Tensor[(n * 2, ?), float32]) { %x }",
            "def @f[n: Shape](%x: Tensor[(n * 2, 3), float32]) { %x }",
            "params[0].type_annotation.shape[1]",
            "dimension ? vs 3",
        ),
        (
            "def @f(%g: fn [n: Shape, m: Shape](Tensor[(n * 2 + m,), float32]) -> ()) { %g }",
            "def @f(%g: fn [n: Shape, m: Shape](Tensor[(m * 2 + n,), float32]) -> ()) { %g }",
            "params[0].type_annotation.arg_types[0].shape[0]",
            "dimension m + n * 2 vs m * 2 + n",
        ),
    ],
)
def test_different_dims(lhs: str, rhs: str, path: str, reason: str) -> None:
    a, b = fn(lhs), fn(rhs)
    for map_free_vars in (False, True):
        assert not structural_equal(a, b, map_free_vars)
        mismatch = first_mismatch(a, b, map_free_vars)
        assert mismatch is not None
        assert (mismatch.path, mismatch.reason) == (path, reason)


def test_free_shape_variables_in_dims() -> None:
    n, m = TypeVar("n", Kind.SHAPE), TypeVar("m", Kind.SHAPE)
    a = TensorType((D.mul(n, 2),))
    assert structural_equal(a, TensorType((D.mul(n, 2),)))
    assert structural_hash(a) == structural_hash(TensorType((D.mul(n, 2),)))
    other = TensorType((D.mul(m, 2),))
    assert not structural_equal(a, other)
    mismatch = first_mismatch(a, other)
    assert mismatch is not None and mismatch.reason == "dimension n * 2 vs m * 2"
    assert structural_equal(a, other, map_free_vars=True)
    assert structural_hash(a, map_free_vars=True) == structural_hash(other, map_free_vars=True)


@pytest.mark.parametrize(
    ("lhs", "rhs", "equal"),
    [
        # the second dim forces n <-> b, so the first needs m <-> a
        ("(Tensor[(n + m * 2,), float32], Tensor[(n,), float32])", "(Tensor[(a * 2 + b,), float32], Tensor[(b,), float32])", True),
        ("(Tensor[(n + m * 2,), float32], Tensor[(m,), float32])", "(Tensor[(a * 2 + b,), float32], Tensor[(b,), float32])", False),
        # symmetric first, constrained later: the pairing waits for the forced one
        ("(Tensor[(n + m,), float32], Tensor[(n * 2 + m,), float32])", "(Tensor[(a + b,), float32], Tensor[(b * 2 + a,), float32])", True),
        ("(Tensor[(n + m,), float32], Tensor[(n * 2 + m,), float32])", "(Tensor[(a + b,), float32], Tensor[(b * 3 + a,), float32])", False),
        # one-to-one: two variables never map to one
        ("Tensor[(n + m,), float32]", "Tensor[(a * 2,), float32]", False),
        ("Tensor[(n * m,), float32]", "Tensor[(a * a,), float32]", False),
        ("Tensor[((n + 1) // m,), float32]", "Tensor[((b + 1) // a,), float32]", True),
        ("Tensor[((n + 1) // m,), float32]", "Tensor[((b + 1) // b,), float32]", False),
        # a mapping made by an earlier bare use is kept
        ("(Tensor[(n, m), float32], Tensor[(n * 2 + m,), float32])", "(Tensor[(a, b), float32], Tensor[(b * 2 + a,), float32])", False),
    ],
)  # fmt: skip
def test_mapping_free_shape_variables_in_dims(lhs: str, rhs: str, equal: bool) -> None:
    a, b = parse_type(lhs), parse_type(rhs)
    assert structural_equal(a, b, map_free_vars=True) is equal
    assert structural_equal(b, a, map_free_vars=True) is equal
    if equal:
        assert structural_hash(a, map_free_vars=True) == structural_hash(b, map_free_vars=True)


def test_incomplete_dims_compare_as_incomplete_types() -> None:
    u, w = IncompleteType(Kind.SHAPE), IncompleteType(Kind.SHAPE)
    same = (TensorType((u, D.add(u, 1))), TensorType((u, D.add(u, 1))))
    assert structural_equal(*same)
    assert structural_hash(same[0]) == structural_hash(same[1])
    renamed = TensorType((w, D.add(w, 1)))
    assert not structural_equal(same[0], renamed)
    assert structural_equal(same[0], renamed, map_free_vars=True)
    assert structural_hash(same[0], map_free_vars=True) == structural_hash(
        renamed, map_free_vars=True
    )
    # one unknown used twice is not two unknowns
    assert not structural_equal(
        TensorType((u, D.add(u, 1))), TensorType((u, D.add(w, 1))), map_free_vars=True
    )
    kinds = first_mismatch(TensorType((u,)), TensorType((IncompleteType(Kind.TYPE),)), True)
    assert kinds is not None and kinds.reason == "incomplete types of different kinds"
    # a shape variable is not an unknown
    n = TypeVar("n", Kind.SHAPE)
    mixed = first_mismatch(TensorType((n,)), TensorType((u,)), True)
    assert mixed is not None and (mixed.path, mixed.reason) == ("shape[0]", "dimension n vs _")


def test_incomplete_dtypes_compare_as_incomplete_types() -> None:
    u, w = IncompleteType(Kind.BASE_TYPE), IncompleteType(Kind.BASE_TYPE)
    assert structural_equal(TensorType((3,), u), TensorType((3,), u))
    assert not structural_equal(TensorType((3,), u), TensorType((3,), w))
    assert structural_equal(TensorType((3,), u), TensorType((3,), w), map_free_vars=True)
    mismatch = first_mismatch(TensorType((3,), u), TensorType((3,), "float32"))
    assert mismatch is not None and mismatch.reason == "dtype _ vs float32"


def test_dims_in_tuples_share_one_pairing() -> None:
    a = parse_type("(Tensor[(n * 2,), float32], Tensor[(n + 1,), float32])")
    b = parse_type("(Tensor[(m * 2,), float32], Tensor[(k + 1,), float32])")
    assert isinstance(a, TupleType) and isinstance(b, TupleType)
    assert not structural_equal(a, b, map_free_vars=True)


# -- properties -------------------------------------------------------------------------------------

NAMES = ("a", "b", "c", "m", "n", "z")


@st.composite
def renamed_functions(draw: st.DrawFn) -> tuple[Function, Function]:
    """A function whose annotation has random symbolic dims, and a copy with renamed variables."""
    count = draw(st.integers(1, 3))
    old = draw(st.lists(st.sampled_from(NAMES), min_size=count, max_size=count, unique=True))
    new = draw(st.permutations(NAMES).map(lambda p: list(p[:count])))
    dims_text = draw(st.lists(_dim_texts(count), min_size=1, max_size=3))

    def make(names: list[str]) -> Function:
        shape = ", ".join(t.format(*names) for t in dims_text)
        params = ", ".join(f"{v}: Shape" for v in names)
        return fn(f"def @f[{params}](%x: Tensor[({shape},), float32]) {{ %x }}")

    return make(old), make(new)


def _dim_texts(count: int) -> st.SearchStrategy[str]:
    """Dimension text over ``{0}``..``{count-1}`` (placeholders for variable names)."""
    leaves = st.one_of(
        st.integers(1, 9).map(str), st.integers(0, count - 1).map(lambda i: f"{{{i}}}")
    )

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(children, st.sampled_from(["+", "-", "*"]), children).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(children, st.sampled_from(["//", "%"]), st.integers(1, 5)).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
        )

    return st.recursive(leaves, extend, max_leaves=6).map(lambda t: f"({t}) * {{0}} + 1")


@settings(max_examples=150, deadline=None)
@given(renamed_functions())
def test_renaming_shape_variables_keeps_equality_and_hash(pair: tuple[Function, Function]) -> None:
    a, b = pair
    relay.assert_structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert structural_hash(a, map_free_vars=True) == structural_hash(b, map_free_vars=True)
    mod = Module()
    mod.add(GlobalVar("f"), a)
    back = parse(relay.astext(mod))["f"]
    assert isinstance(back, Function)
    relay.assert_structural_equal(back, b)
    assert structural_hash(back) == structural_hash(b)
