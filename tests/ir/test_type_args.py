"""Data types with Shape and BaseType parameters: dimensions and dtypes as type arguments are
printed (``V[4]``, ``V[n * 2]``, ``W[float32]``) and read back."""

from __future__ import annotations

import pytest

import relay
from relay.errors import ParseError, TypeCheckError
from relay.ir import dim
from relay.ir.parser import parse, parse_type
from relay.ir.printer import astext
from relay.ir.types import Any, IncompleteType, Kind, TensorType, TypeCall, TypeVar
from relay.typecheck.kind import check_kind

DEFS = """#[version = "0.0.5"]
type V[n: Shape] { Mk(Tensor[(n,), float32]) }
type W[d: BaseType] { MkW(Tensor[(2,), d]) }
type P[A, n: Shape, d: BaseType] { MkP(A, Tensor[(n,), d]) }
"""
MOD = parse(DEFS)
V = MOD.get_type("V").header
W = MOD.get_type("W").header
N = TypeVar("n", Kind.SHAPE)
D = TypeVar("d", Kind.BASE_TYPE)


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (TypeCall(V, (4,)), "V[4]"),
        (TypeCall(V, (Any,)), "V[?]"),
        (TypeCall(V, (N,)), "V[n]"),
        (TypeCall(V, (dim.mul(N, 2),)), "V[n * 2]"),
        (TypeCall(V, (dim.add(dim.floordiv(dim.sub(N, 3), 2), 1),)), "V[(n - 3) // 2 + 1]"),
        (TypeCall(V, (dim.sub(5, N),)), "V[-n + 5]"),
        (TypeCall(V, (IncompleteType(Kind.SHAPE),)), "V[_]"),
        (TypeCall(W, ("float32",)), "W[float32]"),
        (TypeCall(W, (D,)), "W[d]"),
        (TypeCall(W, (IncompleteType(Kind.BASE_TYPE),)), "W[_]"),
    ],
)
def test_dimensions_and_dtypes_print_as_type_arguments(t: TypeCall, text: str) -> None:
    assert astext(t) == text
    assert str(t) == text


@pytest.mark.parametrize(
    "text",
    [
        "V[4]",
        "V[?]",
        "V[n * 2]",
        "V[(n - 3) // 2 + 1]",
        "V[((n * 2) // 4) - 1]",
        "V[-n + 5]",
        "V[_ * 2]",
        "W[float32]",
        "P[float32, 1000, int8]",
        "P[(int32, V[3]), n % 3, bool]",
        "fn [n: Shape, d: BaseType](V[n], W[d], P[W[d], n + 1, d]) -> V[n * 2]",
    ],
)
def test_type_arguments_read_back(text: str) -> None:
    t = parse_type(text, module=MOD)
    again = parse_type(astext(t), module=MOD)
    assert astext(again) == astext(t)
    assert check_kind(t, MOD) == []


@pytest.mark.parametrize(
    ("lhs", "rhs"),
    [
        ("V[4]", "V[5]"),
        ("V[n * 2]", "V[n * 3]"),
        ("V[?]", "V[3]"),
        ("V[n]", "V[4]"),
        ("W[float32]", "W[int8]"),
        ("W[d]", "W[float32]"),
        ("P[int32, 2, bool]", "P[int32, 2, int8]"),
    ],
)
def test_type_arguments_take_part_in_structural_equality(lhs: str, rhs: str) -> None:
    def fn(arg: str) -> relay.Function:
        return relay.parse_expr(f"fn [n: Shape, d: BaseType](%x: {arg}) {{ %x }}", module=MOD)

    assert relay.structural_equal(fn(lhs), fn(lhs))
    assert relay.structural_hash(fn(lhs)) == relay.structural_hash(fn(lhs))
    assert not relay.structural_equal(fn(lhs), fn(rhs))
    assert relay.structural_hash(fn(lhs)) != relay.structural_hash(fn(rhs))


def test_what_type_arguments_read_as() -> None:
    assert parse_type("V[4]", module=MOD) == TypeCall(V, (4,))
    assert parse_type("W[float32]", module=MOD) == TypeCall(W, ("float32",))
    # a dtype name is a scalar tensor type where a Type is expected
    p = parse_type("P[float32, 2, float32]", module=MOD)
    assert isinstance(p, TypeCall)
    assert p.args[0] == TensorType((), "float32") and p.args[1:] == (2, "float32")
    (n,) = [a for a in parse_type("V[n]", module=MOD).args]  # type: ignore[attr-defined]
    assert isinstance(n, TypeVar) and n.kind is Kind.SHAPE
    u = parse_type("V[_]", module=MOD).args[0]  # type: ignore[attr-defined]
    assert isinstance(u, IncompleteType) and u.kind is Kind.SHAPE


def test_a_module_with_dimension_type_arguments_round_trips_and_type_checks() -> None:
    src = DEFS + (
        "def @twice(%v: V[n]) -> V[n * 2] {\n"
        "  match (%v) { Mk(%x) => Mk(concatenate((%x, %x), axis=0)) }\n"
        "}\n"
        "def @h[m: Shape](%v: V[(m - 3) // 2 + 1], %w: W[float32]) -> V[(m - 3) // 2 + 1] { %v }\n"
        'def @main() { @twice(Mk(ones(shape=[1000], dtype="float32"))) }\n'
    )
    mod = parse(src)
    text = astext(mod)
    assert astext(parse(text)) == text
    assert relay.structural_equal(parse(text), mod)
    assert relay.structural_hash(parse(text)) == relay.structural_hash(mod)
    relay.infer_type(mod)
    assert str(mod.get_global_var("main").checked_type) == "fn () -> V[2000]"
    assert str(mod.get_global_var("twice").checked_type) == ("fn [n: Shape](V[n]) -> V[n * 2]")


def test_type_errors_about_such_types_print() -> None:
    mod = parse(
        DEFS + "def @f(%v: V[4]) -> V[5] { %v }\ndef @g(%w: W[int8]) -> W[float32] { %w }\n"
    )
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(mod)
    assert [e.message for e in info.value.errors] == [
        "the function body does not match its result type: cannot unify V[4] with V[5]: "
        "type argument 0 differs (4 vs 5)",
        "the function body does not match its result type: cannot unify W[int8] with W[float32]",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("V[-1]", "invalid dimension -1: dimensions cannot be negative"),
        (
            "fn [A](V[A]) -> ()",
            "type variable A has kind Type; only Shape variables can be used in dimensions",
        ),
        ("W[foo]", "unknown type foo"),
        (
            "V[? + 1]",
            "? (a dimension known only at run time) cannot be part of a dimension expression",
        ),
    ],
)
def test_bad_type_arguments(text: str, message: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_type(text, module=MOD)
    assert info.value.message == message


def test_a_misplaced_dimension_is_a_kind_error() -> None:
    prelude = relay.prelude()
    t = parse_type("List[4]", module=prelude)
    assert [e.message for e in check_kind(t, prelude)] == ["4 is not a type"]
