"""Type inference: expressions and modules, table-driven, against exact types and messages."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import relay
from relay.errors import TypeCheckError
from relay.ir.expr import Call, Expr, Function, Let, Var, const
from relay.ir.module import Module
from relay.ir.types import Any, Kind, TensorType, TypeVar
from relay.op import get_op
from relay.typecheck.relation import is_complete
from tests.strategies import well_typed_programs


def expr_type(src: str, mod: Module | None = None) -> str:
    e = relay.parse_expr(src, module=mod)
    relay.infer_type(e, mod)
    return str(e.checked_type)


def module_types(src: str, with_prelude: bool = False) -> dict[str, str]:
    mod = relay.parse(src, module=relay.prelude() if with_prelude else None)
    relay.infer_type(mod)
    return {gv.name_hint: str(gv.checked_type) for gv in mod.functions}


def expr_error(src: str, mod: Module | None = None) -> TypeCheckError:
    e = relay.parse_expr(src, module=mod)
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(e, mod)
    return info.value


def module_error(src: str, with_prelude: bool = False) -> TypeCheckError:
    mod = relay.parse(src, module=relay.prelude() if with_prelude else None)
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(mod)
    return info.value


T34 = "Tensor[(3, 4), float32]"

EXPRESSIONS = [
    ("1f", "float32"),
    ("(1, 2f, True)", "(int32, float32, bool)"),
    ("(1,)", "(int32,)"),
    ("()", "()"),
    (f"fn (%x: {T34}) {{ %x }}", f"fn ({T34}) -> {T34}"),
    (f"fn (%x: {T34}) {{ add(%x, 1f) }}", f"fn ({T34}) -> {T34}"),
    (f"fn (%x: {T34}) {{ less(%x, 1f) }}", "fn (Tensor[(3, 4), float32]) -> Tensor[(3, 4), bool]"),
    (
        "fn (%x: Tensor[(3, 1), float32], %y: Tensor[(4,), float32]) { multiply(%x, %y) }",
        f"fn (Tensor[(3, 1), float32], Tensor[(4,), float32]) -> {T34}",
    ),
    (f"fn (%x: {T34}) {{ let %y = negative(%x); (%y, %x) }}", f"fn ({T34}) -> ({T34}, {T34})"),
    ("fn (%t: (int32, float32)) { %t.1 }", "fn ((int32, float32)) -> float32"),
    ("fn (%c: bool, %x: int32) { if (%c) { %x } else { 1 } }", "fn (bool, int32) -> int32"),
    ("fn (%x: int32) { ref(%x) }", "fn (int32) -> ref(int32)"),
    ("fn (%r: ref(int32)) { ref_read(%r) }", "fn (ref(int32)) -> int32"),
    ("fn (%r: ref(int32)) { ref_write(%r, 2) }", "fn (ref(int32)) -> ()"),
    # unannotated binders get their type from use
    ("let %x = 1f; let %y = %x; add(%y, %x)", "float32"),
    ("fn (%x: int32) { let %f = fn (%y) { add(%y, %x) }; %f(%x) }", "fn (int32) -> int32"),
    # a let-bound polymorphic function is instantiated at each use
    ("let %id = fn [A](%a: A) -> A { %a }; (%id(1), %id(2f))", "(int32, float32)"),
    # higher order
    (
        "fn (%f: fn (int32) -> float32, %x: int32) { %f(%x) }",
        "fn (fn (int32) -> float32, int32) -> float32",
    ),
    ("fn (%x: int32) { fn (%y: int32) { add(%x, %y) } }", "fn (int32) -> fn (int32) -> int32"),
    # symbolic shapes flow through functions with shape parameters
    (
        "fn [n: Shape](%x: Tensor[(n, 784), float32]) { add(%x, %x) }",
        "fn [n: Shape](Tensor[(n, 784), float32]) -> Tensor[(n, 784), float32]",
    ),
    # Any dims
    (
        "fn (%x: Tensor[(?, 4), float32], %y: Tensor[(3, 4), float32]) { add(%x, %y) }",
        f"fn (Tensor[(?, 4), float32], {T34}) -> {T34}",
    ),
    (
        "fn (%x: Tensor[(?, 4), float32], %y: Tensor[(1, 4), float32]) { add(%x, %y) }",
        "fn (Tensor[(?, 4), float32], Tensor[(1, 4), float32]) -> Tensor[(?, 4), float32]",
    ),
]


@pytest.mark.parametrize(("src", "expected"), EXPRESSIONS)
def test_expression_types(src: str, expected: str) -> None:
    assert expr_type(src) == expected


EXPRESSION_ERRORS = [
    (
        f"fn (%x: {T34}, %y: Tensor[(4, 3), float32]) {{ add(%x, %y) }}",
        "broadcast: incompatible dimensions 4 and 3 in Tensor[(3, 4), float32] "
        "and Tensor[(4, 3), float32]",
        "add(%x, %y)",
    ),
    (
        f"fn (%x: {T34}, %y: Tensor[(5,), float32]) {{ add(%x, %y) }}",
        "broadcast: incompatible dimensions 4 and 5 in Tensor[(3, 4), float32] "
        "and Tensor[(5,), float32]",
        "add(%x, %y)",
    ),
    (
        f"fn (%x: {T34}) {{ add(%x, 1) }}",
        "add: dtypes differ: Tensor[(3, 4), float32] and int32",
        "add(%x, 1)",
    ),
    (
        "fn (%c: bool, %x: int32) { if (%c) { %x } else { 1f } }",
        "if: the branches differ: cannot unify float32 with int32",
        "1f",
    ),
    (
        "fn (%c: int32) { if (%c) { 1 } else { 2 } }",
        "if: the condition must be a bool scalar: cannot unify int32 with bool",
        "if (%c) { 1 } else { 2 }",
    ),
    (
        "fn (%t: (int32, float32)) { %t.2 }",
        "field 2 is out of range for a tuple of 2 fields: (int32, float32)",
        "%t.2",
    ),
    ("fn (%t: int32) { %t.0 }", "cannot take field 0 of a value of type int32", "%t.0"),
    ("fn (%x: int32) { %x(1) }", "cannot call a value of type int32", "%x(1)"),
    (
        "fn (%f: fn (int32) -> int32) { %f(1, 2) }",
        "%f expects 1 argument, got 2",
        "%f(1, 2)",
    ),
    (
        "fn (%f: fn (int32) -> int32) { %f(1f) }",
        "argument 0 of %f: cannot unify float32 with int32",
        "1f",
    ),
    (
        "fn (%r: ref(int32)) { ref_write(%r, 1f) }",
        "cannot unify ref(int32) with ref(float32)",
        None,
    ),
    ("add(1f)", "add expects 2 arguments, got 1", "add(1f)"),
    (
        "fn (%x) { %x }",
        "cannot infer the type of %x; annotate it",
        "%x",
    ),
    (
        "fn [A](%x: A) { add(%x, %x) }",
        "add: lhs must be a tensor, got A",
        "add(%x, %x)",
    ),
    (
        "fn [n: Shape](%x: Tensor[(n, 4), float32], %y: Tensor[(3, 4), float32]) { add(%x, %y) }",
        "broadcast: incompatible dimensions n and 3 in Tensor[(n, 4), float32] "
        "and Tensor[(3, 4), float32]",
        "add(%x, %y)",
    ),
]


@pytest.mark.parametrize(("src", "message", "at"), EXPRESSION_ERRORS)
def test_expression_errors(src: str, message: str, at: str | None) -> None:
    err = expr_error(src)
    assert err.message == message
    assert err.span is not None
    if at is not None:
        line = src.splitlines()[err.span.line - 1]
        assert line[err.span.column - 1 : err.span.end_column - 1] == at


def test_error_renders_span_and_caret() -> None:
    err = expr_error(f"fn (%x: {T34}, %y: Tensor[(4, 3), float32]) {{ add(%x, %y) }}")
    assert str(err).splitlines() == [
        "<string>:1:65: broadcast: incompatible dimensions 4 and 3 in Tensor[(3, 4), float32] "
        "and Tensor[(4, 3), float32]",
        f"fn (%x: {T34}, %y: Tensor[(4, 3), float32]) {{ add(%x, %y) }}",
        " " * 64 + "^" * 11,
    ]


def test_every_independent_error_is_reported_in_source_order() -> None:
    src = """#[version = "0.0.5"]
def @f(%x: Tensor[(3, 4), float32], %y: Tensor[(3, 5), float32], %c: int32) {
  let %a = subtract(%x, %y);
  let %b = if (%c) { 1 } else { 2 };
  let %d = add(%x, %y);
  (%a, %b, %d)
}
"""
    err = module_error(src)
    assert [(e.span.line, e.message) for e in err.errors if e.span is not None] == [
        (
            3,
            "broadcast: incompatible dimensions 4 and 5 in Tensor[(3, 4), float32] "
            "and Tensor[(3, 5), float32]",
        ),
        (4, "if: the condition must be a bool scalar: cannot unify int32 with bool"),
        (
            5,
            "broadcast: incompatible dimensions 4 and 5 in Tensor[(3, 4), float32] "
            "and Tensor[(3, 5), float32]",
        ),
    ]
    text = str(err)
    assert "(2 more type errors)" in text
    assert text.count("^") > 30


# -- modules: globals, recursion, polymorphism ---------------------------------------------------

HEADER = '#[version = "0.0.5"]\n'


def test_globals_are_checked_callees_first_and_instantiated_per_use() -> None:
    types = module_types(
        HEADER
        + """
def @main(%x: Tensor[(5, 784), float32], %y: Tensor[(7, 784), float32]) {
  (@f(%x), @f(%y))
}
def @f(%x: Tensor[(n, 784), float32]) -> Tensor[(n, 784), float32] { negative(%x) }
"""
    )
    assert types == {
        "main": "fn (Tensor[(5, 784), float32], Tensor[(7, 784), float32]) -> "
        "(Tensor[(5, 784), float32], Tensor[(7, 784), float32])",
        "f": "fn [n: Shape](Tensor[(n, 784), float32]) -> Tensor[(n, 784), float32]",
    }


def test_shape_variable_mismatch_at_a_call() -> None:
    err = module_error(
        HEADER
        + """
def @f(%x: Tensor[(n, 784), float32]) -> Tensor[(n, 784), float32] { %x }
def @main(%x: Tensor[(5, 783), float32]) { @f(%x) }
"""
    )
    assert err.message == (
        "argument 0 of @f: cannot unify Tensor[(5, 783), float32] with Tensor[(5, 784), float32]"
        ": dimension 1 differs (783 vs 784)"
    )


def test_unannotated_mutual_recursion() -> None:
    types = module_types(
        HEADER
        + """
def @even(%n: int32) {
  if (equal(%n, 0)) { True } else { @odd(subtract(%n, 1)) }
}
def @odd(%n) {
  if (equal(%n, 0)) { False } else { @even(subtract(%n, 1)) }
}
"""
    )
    assert types == {"even": "fn (int32) -> bool", "odd": "fn (int32) -> bool"}


def test_polymorphic_recursion_through_an_annotated_global() -> None:
    # @nest calls itself at a different type argument: only possible with a declared type.
    types = module_types(
        HEADER
        + """
def @nest[A](%x: A, %n: int32) -> int32 {
  if (equal(%n, 0)) { 0 } else { add(1, @nest((%x, %x), subtract(%n, 1))) }
}
""",
    )
    assert types == {"nest": "fn [A](A, int32) -> int32"}


def test_dtype_and_shape_variables_are_instantiated_per_call() -> None:
    types = module_types(
        HEADER
        + """
def @double[d: BaseType, n: Shape](%x: Tensor[(n,), d]) -> Tensor[(n,), d] { add(%x, %x) }
def @main(%a: Tensor[(3,), int32], %b: Tensor[(5,), float16]) { (@double(%a), @double(%b)) }
"""
    )
    assert types == {
        "double": "fn [d: BaseType, n: Shape](Tensor[(n,), d]) -> Tensor[(n,), d]",
        "main": "fn (Tensor[(3,), int32], Tensor[(5,), float16]) -> "
        "(Tensor[(3,), int32], Tensor[(5,), float16])",
    }


def test_a_dtype_variable_is_one_dtype_throughout() -> None:
    err = module_error(
        HEADER
        + """
def @pick[d: BaseType](%x: Tensor[(2,), d], %y: Tensor[(2,), d]) { %x }
def @main(%a: Tensor[(2,), int32], %b: Tensor[(2,), float32]) { @pick(%a, %b) }
"""
    )
    assert err.message == (
        "argument 1 of @pick: cannot unify Tensor[(2,), float32] with Tensor[(2,), int32]"
        ": dtype differs (float32 vs int32)"
    )
    # inside the definition d is rigid: it is not float32
    err = module_error(HEADER + "def @f[d: BaseType](%x: Tensor[(2,), d]) { add(%x, 1f) }\n")
    assert err.message == "add: dtypes differ: Tensor[(2,), d] and float32"


def test_tuple_mismatch_names_the_field() -> None:
    err = expr_error(
        "fn (%t: (int32, Tensor[(3,), float32])) -> (int32, Tensor[(4,), float32]) { %t }"
    )
    assert err.message == (
        "the function body does not match its result type: cannot unify "
        "(int32, Tensor[(3,), float32]) with (int32, Tensor[(4,), float32]): "
        "field 1 differs (Tensor[(3,), float32] vs Tensor[(4,), float32]): "
        "dimension 0 differs (3 vs 4)"
    )


def test_map_over_a_list_of_closures() -> None:
    mod = relay.prelude()
    src = """
fn (%l: List[Tensor[(2,), float32]], %x: float32) {
  let %fs = @map(fn (%a: Tensor[(2,), float32]) { fn (%b: float32) { multiply(%a, %b) } }, %l);
  @map(fn (%f: fn (float32) -> Tensor[(2,), float32]) { %f(%x) }, %fs)
}
"""
    assert expr_type(src, mod) == (
        "fn (List[Tensor[(2,), float32]], float32) -> List[Tensor[(2,), float32]]"
    )


def test_constructors_and_match() -> None:
    mod = relay.prelude()
    assert expr_type("Cons(1, Cons(2, Nil))", mod) == "List[int32]"
    src = """
fn (%o: Option[(int32, float32)]) {
  match (%o) {
    Some((%i, %f)) => %f,
    None => 0f,
  }
}
"""
    assert expr_type(src, mod) == "fn (Option[(int32, float32)]) -> float32"


def test_an_unconstrained_constructor_argument_cannot_be_inferred() -> None:
    err = expr_error("Nil", relay.prelude())
    assert err.message == "cannot infer the type of this expression"


def test_pattern_errors() -> None:
    mod = relay.prelude()
    err = expr_error("fn (%x: int32) { match (%x) { Some(%y) => %y, None => 0 } }", mod)
    assert err.message == "pattern: cannot unify int32 with Option[_]"
    err = expr_error("fn (%x: List[int32]) { match (%x) { Cons(%y, %z) => %y, Nil => 0f } }", mod)
    assert err.message == "match: the clauses differ: cannot unify float32 with int32"


def test_the_whole_prelude_type_checks() -> None:
    mod = relay.prelude()
    relay.infer_type(mod)
    assert (
        str(mod.get_global_var("map").checked_type) == "fn [A, B](fn (A) -> B, List[A]) -> List[B]"
    )
    assert str(mod.get_global_var("foldl").checked_type) == (
        "fn [A, B](fn (A, B) -> A, A, List[B]) -> A"
    )
    for gv, func in mod.functions.items():
        assert is_complete(gv.checked_type), gv.name_hint
        assert func.checked_type is not None


def test_infer_type_pass_and_rejects_non_ir() -> None:
    mod = relay.prelude()
    assert relay.passes.InferType()(mod) is mod
    assert is_complete(mod.get_global_var("length").checked_type)
    with pytest.raises(TypeError, match="infer_type expects a Module or an Expr, got int"):
        relay.infer_type(3)  # type: ignore[arg-type]


def test_symbolic_dims_with_builders() -> None:
    n = TypeVar("n", Kind.SHAPE)
    x = Var("x", TensorType((n, 3), "float32"))
    y = Var("y", TensorType((Any, 3), "float32"))
    f = Function((x, y), Call(get_op("add").op, (x, y)), type_params=(n,))
    relay.infer_type(f)
    assert str(f.checked_type) == (
        # n may be 1 at run time, so the broadcast dimension is known only then
        "fn [n: Shape](Tensor[(n, 3), float32], Tensor[(?, 3), float32]) -> Tensor[(?, 3), float32]"
    )


def test_deep_let_chain_does_not_recurse() -> None:
    n = 100_000
    x = Var("x", TensorType((3,), "float32"))
    vs = [Var(f"v{i}") for i in range(n)]
    body: Expr = vs[-1]
    add = get_op("add").op
    for i in reversed(range(n)):
        body = Let(vs[i], Call(add, (x if i == 0 else vs[i - 1], const(1.0))), body)
    f = Function((x,), body)
    relay.infer_type(f)
    assert str(f.checked_type) == "fn (Tensor[(3,), float32]) -> Tensor[(3,), float32]"
    assert str(vs[n // 2].checked_type) == "Tensor[(3,), float32]"


@settings(max_examples=40, deadline=None)
@given(well_typed_programs())
def test_random_well_typed_programs_check_and_match_the_interpreter(program: object) -> None:
    mod, args = program.module, program.args  # type: ignore[attr-defined]
    relay.infer_type(mod)
    main = mod.get_global_var("main")
    ret = main.checked_type.ret_type
    result = relay.interpret(mod, *args)
    assert isinstance(ret, TensorType)
    assert ret.concrete_shape() == np.shape(result)
    assert ret.dtype == str(np.asarray(result).dtype)


def test_match_must_be_exhaustive_but_match_question_may_be_partial() -> None:
    mod = relay.prelude()
    src = "fn (%l: List[int32]) { match (%l) { Cons(%x, Nil) => %x } }"
    err = expr_error(src, mod)
    assert err.message == "match is not exhaustive: no clause matches Nil, Cons(_, Cons(_, _))"
    assert err.span is not None and (err.span.column, err.span.end_column) == (24, 58)
    assert expr_type(src.replace("match (", "match? ("), mod) == "fn (List[int32]) -> int32"


def test_kind_errors_are_reported_before_inference() -> None:
    from relay.ir.types import TypeCall

    mod = relay.prelude()
    bad = TypeCall(mod.get_global_type_var("List"), (TensorType((), "int32"),) * 2)
    x = Var("x", bad)
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(Function((x,), x), mod)
    assert info.value.message == "type List takes 1 type argument, got 2"


TOTAL = """
def @total(%l) {
  match (%l) {
    Cons(%h, %t) => add(%h, @total(%t)),
    Nil => 0f,
  }
}
"""


def test_an_unannotated_global_left_unknown_is_settled_by_its_caller() -> None:
    # @total alone cannot tell its list's element type (add(%h, ...) admits any tensor that
    # broadcasts with float32): it is monomorphic, so its caller settles it (a list built
    # in a loop and passed to an unannotated function failed with "cannot infer")
    main = "def @main(%x: float32) { @total(Cons(%x, Cons(2f, Nil))) }"
    types = module_types(TOTAL + main, with_prelude=True)
    assert types["total"] == "fn (List[float32]) -> float32"
    assert types["main"] == "fn (float32) -> float32"
    # through a caller of a caller, and a callee between
    middle = 'def @middle(%l) { @total(%l) }\ndef @main(%x: int8) { @middle(Cons(cast(%x, dtype="float32"), Nil)) }'
    types = module_types(TOTAL + middle, with_prelude=True)
    assert types["total"] == types["middle"] == "fn (List[float32]) -> float32"


def test_an_unknown_no_caller_settles_is_reported_at_its_global() -> None:
    err = module_error(TOTAL, with_prelude=True)
    assert err.message == "cannot infer the type of %l; annotate it"
    assert err.span is not None and err.span.line == 2
    # a caller that does not settle it either
    err = module_error(TOTAL + "def @main(%l) { @total(%l) }", with_prelude=True)
    assert err.message == "cannot infer the type of %l; annotate it"
