"""Polymorphic functions used recursively, bound by ``let``, and passed where a polymorphic
function is expected."""

from __future__ import annotations

import pytest

import relay
from relay.errors import TypeCheckError

HEADER = '#[version = "0.0.5"]\n'


def types(src: str) -> dict[str, str]:
    mod = relay.parse(HEADER + src)
    relay.infer_type(mod)
    return {gv.name_hint: str(gv.checked_type) for gv in mod.functions}


def error(src: str) -> TypeCheckError:
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(relay.parse(HEADER + src))
    return info.value


def test_an_unannotated_polymorphic_global_may_recurse_at_its_own_type() -> None:
    assert types("def @f[A](%x: A) { let %u = @f(%x); %x }") == {"f": "fn [A](A) -> A"}


@pytest.mark.parametrize(
    ("src", "message", "column"),
    [
        (
            "def @f[A](%x: A) { let %u = @f(1); %x }",
            "the recursive use of @f at another type needs @f's result type declared: "
            "argument 0: cannot unify int32 with A",
            29,
        ),
        (
            "def @f[A](%x: A, %y) { let %u = @f(1, %y); %x }",
            "the recursive use of @f at another type needs @f's parameter and result types "
            "declared: argument 0: cannot unify int32 with A",
            33,
        ),
    ],
)
def test_recursion_at_another_type_asks_for_the_result_type(
    src: str, message: str, column: int
) -> None:
    err = error(src)
    assert [e.message for e in err.errors] == [message]
    assert err.span is not None and (err.span.line, err.span.column) == (2, column)  # the use
    # declared, the same recursion is polymorphic
    assert types("def @f[A](%x: A) -> A { let %u = @f(1); %x }") == {"f": "fn [A](A) -> A"}


def test_an_argument_of_the_wrong_type_in_a_recursive_call_is_an_ordinary_error() -> None:
    err = error("def @f[A](%x: A, %n: int32) { let %u = @f(%x, 1f); %x }")
    assert err.message == "argument 1 of @f: cannot unify float32 with int32"


def test_a_let_bound_annotated_polymorphic_function_recurses_and_is_used_at_several_types() -> None:
    assert types("def @main() { let %f = fn [A](%n: A) -> A { %f(%n) }; (%f(1), %f(1f)) }") == {
        "main": "fn () -> (int32, float32)"
    }
    assert types(
        "def @main() { let %f = fn [A](%n: A, %k: int32) -> A "
        "{ if (equal(%k, 0)) { %n } else { let %u = %f(1f, 0); %f(%n, subtract(%k, 1)) } };"
        " (%f(1, 3), %f(True, 3)) }"
    ) == {"main": "fn () -> (int32, bool)"}


def test_a_let_bound_unannotated_polymorphic_function_is_monomorphic_in_its_body() -> None:
    # at its own type inside, polymorphic after the let
    assert types(
        "def @main() { let %f = fn [A](%n: A) { let %u = %f(%n); %n }; (%f(1), %f(1f)) }"
    ) == {"main": "fn () -> (int32, float32)"}
    err = error("def @main() { let %f = fn [A](%n: A) { let %u = %f(1); %n }; %f(2f) }")
    assert err.message == (
        "the recursive use of %f at another type needs %f's result type declared: "
        "argument 0: cannot unify int32 with A"
    )


def test_a_polymorphic_function_where_one_is_expected() -> None:
    prog = (
        "def @id[A](%x: A) -> A { %x }\n"
        "def @app(%g: fn [A](A) -> A) { (%g(1), %g(1f)) }\n"
        "def @main() { @app(ARG) }\n"
    )
    assert types(prog.replace("ARG", "@id"))["main"] == "fn () -> (int32, float32)"
    # alpha-equivalent polymorphic types unify, whatever their parameters are called
    assert (
        types(
            "def @k[A, B](%x: A, %y: B) -> A { %x }\n"
            "def @app(%g: fn [C, D](C, D) -> C) { %g(1, 2f) }\n"
            "def @main(%h: fn [E, F](E, F) -> E) { (@app(@k), @app(%h)) }\n"
        )["main"]
        == "fn (fn [E, F](E, F) -> E) -> (int32, int32)"
    )
    # a monomorphic function is not polymorphic enough
    assert error(prog.replace("ARG", "fn (%y: int32) { %y }")).message == (
        "argument 0 of @app: cannot unify fn (int32) -> int32 with fn [A](A) -> A"
    )
    err = error(
        "def @k[A, B](%x: A, %y: B) -> B { %y }\n"
        "def @app(%g: fn [C, D](C, D) -> C) { %g(1, 2f) }\n"
        "def @main() { @app(@k) }\n"
    )
    assert (
        err.message == "argument 0 of @app: cannot unify fn (C, D) -> D with fn [C, D](C, D) -> C"
    )


def test_a_polymorphic_value_where_a_monomorphic_function_is_expected_is_instantiated() -> None:
    assert (
        types(
            "def @app(%g: fn (int32) -> int32) { %g(1) }\n"
            "def @main(%h: fn [B](B) -> B) { let %k: fn (float32) -> float32 = %h; (@app(%h), %k) }\n"
        )["main"]
        == "fn (fn [B](B) -> B) -> (int32, fn (float32) -> float32)"
    )
