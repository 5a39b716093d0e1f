"""relay.typecheck.kind: types used where their kind belongs, data types applied to the right
number of arguments, unknown data types; every error with its message and place."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import relay
from relay.ir.dim import add, mul
from relay.ir.expr import Call, Function, Var
from relay.ir.module import Module
from relay.ir.parser import parse_type
from relay.ir.span import Span
from relay.ir.types import (
    Any,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from relay.typecheck.kind import check_expr_kinds, check_kind, check_module_kinds
from tests.strategies import TypeScope, modules, types

A = TypeVar("A")
N = TypeVar("n", Kind.SHAPE)
D = TypeVar("d", Kind.BASE_TYPE)
F = TypeVar("F", Kind.ADT)


def kind_messages(t: Type, mod: Module | None = None, kind: Kind = Kind.TYPE) -> list[str]:
    return [e.message for e in check_kind(t, mod, None, kind)]


WELL_KINDED = [
    "Tensor[(n, 3), float32]",
    "fn [A, n: Shape, d: BaseType](Tensor[(n, ?), d], A) -> (A, List[A])",
    "List[Option[Tensor[(2,), int32]]]",
    "Tree[fn (int32) -> bool]",
    "ref(List[(int32, float32)])",
    "fn [A](fn (A) -> A) -> List[List[A]]",
    "()",
    "_",
]


@pytest.mark.parametrize("src", WELL_KINDED)
def test_well_kinded_text(src: str) -> None:
    mod = relay.prelude()
    assert check_kind(parse_type(src, module=mod), mod) == []


ILL_KINDED_TEXT = [
    ("fn [n: Shape](n) -> Tensor[(n,), float32]", ["type variable n of kind Shape used as a type"]),
    ("fn [d: BaseType](Tensor[(2,), d]) -> d", ["type variable d of kind BaseType used as a type"]),
    (
        "fn [A](A[int32]) -> ()",
        ["type variable A of kind Type cannot be applied to type arguments"],
    ),
    ("fn (List) -> ()", ["type List takes 1 type argument, got 0"]),
    (
        "fn [n: Shape](Option, n) -> List[Tree]",
        [
            "type Option takes 1 type argument, got 0",
            "type variable n of kind Shape used as a type",
            "type Tree takes 1 type argument, got 0",
        ],
    ),
]


@pytest.mark.parametrize(("src", "expected"), ILL_KINDED_TEXT)
def test_ill_kinded_text(src: str, expected: list[str]) -> None:
    mod = relay.prelude()
    assert kind_messages(parse_type(src, module=mod), mod) == expected


def _prelude_type(name: str) -> GlobalTypeVar:
    return relay.prelude().get_global_type_var(name)


ILL_KINDED_BUILT: list[tuple[str, Type, list[str]]] = [
    (
        "type var dim",
        TensorType((A, 3), "float32"),
        ["type variable A of kind Type used as a dimension"],
    ),
    (
        "dtype var dim",
        TensorType((D,), D),
        ["type variable d of kind BaseType used as a dimension"],
    ),
    (
        "dim expr",
        TensorType((mul(N, 3), add(A, 1)), "float32"),
        ["type variable A of kind Type used as a dimension"],
    ),
    ("dtype var", TensorType((), A), ["type variable A of kind Type used as a dtype"]),
    ("shape var as dtype", TensorType((), N), ["type variable n of kind Shape used as a dtype"]),
    ("negative dim", TensorType((-1, 2), "int8"), ["tensor dimension -1 is negative"]),
    ("tuple field", TupleType((N, A)), ["type variable n of kind Shape used as a type"]),
    ("ref", RefType(D), ["type variable d of kind BaseType used as a type"]),
    ("func ret", FuncType((A,), N), ["type variable n of kind Shape used as a type"]),
    ("unknown type", TypeCall(GlobalTypeVar("Foo"), (A,)), ["unknown type Foo"]),
    ("unknown bare type", TupleType((GlobalTypeVar("Bar"),)), ["unknown type Bar"]),
    (
        "too many args",
        TypeCall(_prelude_type("List"), (A, A)),
        ["type List takes 1 type argument, got 2"],
    ),
    (
        "too few args",
        TypeCall(_prelude_type("Option"), ()),
        ["type Option takes 1 type argument, got 0"],
    ),
    (
        "arg kind",
        TypeCall(_prelude_type("List"), (N,)),
        ["type variable n of kind Shape used as a type"],
    ),
    (
        "not a data type",
        TypeCall(TensorType((), "int32"), (A,)),
        ["int32 is not a data type and cannot be applied to type arguments"],
    ),
]


@pytest.mark.parametrize(
    ("name", "t", "expected"), ILL_KINDED_BUILT, ids=[c[0] for c in ILL_KINDED_BUILT]
)
def test_ill_kinded_built(name: str, t: Type, expected: list[str]) -> None:
    assert kind_messages(t, relay.prelude()) == expected


def test_adt_handle_variable_may_be_applied() -> None:
    assert kind_messages(TypeCall(F, (A,))) == []


def test_without_module_data_types_are_not_checked() -> None:
    assert kind_messages(TypeCall(GlobalTypeVar("Foo"), (A, A))) == []
    assert kind_messages(TypeCall(GlobalTypeVar("Foo"), (N,))) == [
        "type variable n of kind Shape used as a type"
    ]


@pytest.mark.parametrize(
    ("t", "kind", "expected"),
    [
        (N, Kind.SHAPE, []),
        (A, Kind.SHAPE, ["type variable A of kind Type used as a dimension"]),
        (7, Kind.SHAPE, []),
        (Any, Kind.SHAPE, []),
        (IncompleteType(Kind.SHAPE), Kind.SHAPE, []),
        (D, Kind.BASE_TYPE, []),
        ("float16", Kind.BASE_TYPE, []),
        (N, Kind.BASE_TYPE, ["type variable n of kind Shape used as a dtype"]),
        (TensorType((), "int32"), Kind.SHAPE, ["int32 is not a dimension"]),
    ],
)
def test_expected_kind(t: Type, kind: Kind, expected: list[str]) -> None:
    assert kind_messages(t, None, kind) == expected


def test_data_type_with_shape_parameter() -> None:
    vec = GlobalTypeVar("Vec")
    m = TypeVar("m", Kind.SHAPE)
    from relay.ir.expr import Constructor
    from relay.ir.types import TypeData

    data = TypeData(vec, (m,), (Constructor("V", (TensorType((m,), "float32"),), vec, 0),))
    mod = Module(type_definitions={vec: data})
    assert check_module_kinds(mod) == []
    assert kind_messages(TypeCall(vec, (N,)), mod) == []
    assert kind_messages(TypeCall(vec, (A,)), mod) == [
        "type variable A of kind Type used as a dimension"
    ]


def test_error_spans() -> None:
    src = "def @f[n: Shape](%x: Tensor[(n, 2), float32], %y: List, %z: n) -> n {\n  %z\n}"
    errors = check_module_kinds(relay.parse(src, "k.rly", module=relay.prelude()))
    assert [(e.message, str(e.span)) for e in errors] == [
        ("type List takes 1 type argument, got 0", "k.rly:1:47"),  # %y
        ("type variable n of kind Shape used as a type", "k.rly:1:57"),  # %z
        ("type variable n of kind Shape used as a type", "k.rly:1:1"),  # -> n: the function
    ]
    # Without a span in the type, the caller's span is used.
    here = Span("x.rly", 3, 4, 3, 9)
    [e] = check_kind(TupleType((N,)), None, here)
    assert e.span == here


def test_module_checks_data_types_and_annotations() -> None:
    mod = relay.parse(
        """
        type Pair[A] { MkPair(A, A) }
        def @f[n: Shape](%x: Tensor[(n,), float32]) -> Tensor[(n,), float32] {
          let %y: Pair[Tensor[(n,), float32]] = MkPair(%x, %x);
          match (%y) { MkPair(%a: Tensor[(n,), float32], _) => %a }
        }
        """
    )
    assert check_module_kinds(mod) == []
    bad = TupleType((N,))
    # corrupt a constructor field, a let annotation, a pattern variable and a return type
    data = mod.get_type("Pair")
    from relay.ir.expr import Constructor, Let, Match, PatternConstructor, PatternVar
    from relay.ir.types import TypeData

    pair = GlobalTypeVar("Pair2")
    mod.add_type(TypeData(pair, data.type_params, (Constructor("Mk2", (bad,), pair, 0),)))
    f = mod.function("f")
    body = f.body
    assert isinstance(body, Let) and isinstance(body.body, Match)
    clause = body.body.clauses[0]
    assert isinstance(clause.lhs, PatternConstructor) and isinstance(
        clause.lhs.patterns[0], PatternVar
    )
    v = Var("z", RefType(N))
    new = Function(
        f.params,
        Let(Var("w", TypeCall(pair, ())), body.value, Call(Function((v,), v), ())),
        FuncType((), D),
        f.type_params,
    )
    mod.update_func("f", new)
    assert [e.message for e in check_module_kinds(mod)] == [
        "type variable n of kind Shape used as a type",  # Mk2's field
        "type variable d of kind BaseType used as a type",  # return type fn () -> d
        "type Pair2 takes 1 type argument, got 0",  # %w
        "type variable n of kind Shape used as a type",  # %z: ref(n)
    ]


def test_type_arguments_against_callee_parameters() -> None:
    mod = relay.parse("def @id2[A, n: Shape](%x: A) -> A { %x }")
    gv = mod.get_global_var("id2")
    ok = Call(gv, (Var("a"),), type_args=(TensorType((), "int32"), N))
    assert check_expr_kinds(Function((), ok, type_params=(N,)), mod) == []
    bad = Call(gv, (Var("a"),), type_args=(N, A))
    assert [e.message for e in check_expr_kinds(Function((), bad, type_params=(N, A)), mod)] == [
        "type variable n of kind Shape used as a type",
        "type variable A of kind Type used as a dimension",
    ]
    # an unknown callee, or the wrong count, is the type checker's business
    for call in (Call(Var("f"), (), type_args=(N,)), Call(gv, (), type_args=(N,))):
        assert check_expr_kinds(Function((), call, type_params=(N,)), mod) == []
        # ... but a type argument's variables must be bound
        assert [e.message for e in check_expr_kinds(call, mod)] == ["type variable n is not bound"]


def test_prelude_is_well_kinded() -> None:
    assert check_module_kinds(relay.prelude()) == []


def test_deep_type() -> None:
    t: Type = TensorType((N,), "float32")
    for _ in range(100_000):
        t = TupleType((t,))
    assert check_kind(t) == []
    bad: Type = N
    for _ in range(100_000):
        bad = FuncType((bad,), TupleType(()))
    assert kind_messages(bad) == ["type variable n of kind Shape used as a type"]


@settings(max_examples=100)
@given(modules())
def test_random_modules_are_well_kinded(mod: Module) -> None:
    assert check_module_kinds(mod) == []


PRELUDE = relay.prelude()


@settings(max_examples=200)
@given(types(TypeScope((A, N, D), tuple(PRELUDE.type_definitions.values())), depth=3))
def test_random_types_are_well_kinded(t: Type) -> None:
    assert check_kind(t, PRELUDE) == []


# -- free type variables ------------------------------------------------------------------------


def test_a_free_type_variable_is_an_error() -> None:
    from relay.ir.expr import Tuple

    z = Var("z", A)
    f = Function((z,), Tuple(()))
    assert [e.message for e in check_expr_kinds(f)] == ["type variable A is not bound"]
    with pytest.raises(relay.TypeCheckError, match="type variable A is not bound"):
        relay.infer_type(f)
    # in a module too, at the annotation (or the function, for its result type)
    mod = relay.parse('#[version = "0.0.5"]\ndef @f() { () }', "free.rly")
    x = Var("x", TensorType((N, 2), "float32"), span=Span("free.rly", 2, 8, 2, 30))
    fn_span = Span("free.rly", 2, 1, 2, 40)
    mod.update_func("f", Function((x,), x, ret_type=TensorType((N, 2), D), span=fn_span))
    assert [(e.message, str(e.span)) for e in check_module_kinds(mod)] == [
        ("type variable n is not bound", "free.rly:2:8"),
        ("type variable n is not bound", "free.rly:2:1"),
        ("type variable d is not bound", "free.rly:2:1"),
    ]
    # a variable of the wrong kind is reported as such (once)
    g = Function((Var("t", TensorType((A,), "float32")),), Tuple(()))
    assert [e.message for e in check_expr_kinds(g)] == [
        "type variable A of kind Type used as a dimension"
    ]


def test_type_variables_bound_around_are_in_scope() -> None:
    from relay.ir.expr import Tuple

    # by the type parameters of an enclosing function, nested functions included
    inner = Function((Var("y", A),), Tuple(()), ret_type=TupleType(()))
    outer = Function((Var("x", TensorType((N,), D)),), inner, type_params=(A, N, D))
    assert check_expr_kinds(outer) == []
    # by a function type's own parameters
    assert check_expr_kinds(Function((Var("g", FuncType((A,), A, (A,))),), Tuple(()))) == []
    # not by a sibling
    sibling = Tuple(
        (Function((), Tuple(()), type_params=(A,)), Function((Var("w", A),), Tuple(())))
    )
    assert [e.message for e in check_expr_kinds(sibling)] == ["type variable A is not bound"]
    # by a data type's parameters, in its constructors' fields
    assert check_module_kinds(relay.parse("type Box[n: Shape] { B(Tensor[(n,), float32]) }")) == []
    # in an expression checked alone, by the annotation of a free variable
    free = Var("v", TensorType((N, 3), "float32"))
    assert check_expr_kinds(Function((Var("u", TensorType((N,), "float32")),), free)) == []
