"""The printer's exact output for every construct (hand-built IR, no parser involved)."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay.ir import (
    Any,
    Attrs,
    Call,
    Clause,
    Constructor,
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
from relay.ir.printer import astext, format_scalar

F32 = TensorType((), "float32")


def add(a, b):
    return Call(Op.get("add"), (a, b))


def mul(a, b):
    return Call(Op.get("multiply"), (a, b))


def list_type() -> tuple[TypeData, Constructor, Constructor]:
    a = TypeVar("A")
    lst = GlobalTypeVar("List")
    cons = Constructor("Cons", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("Nil", (), lst, 1)
    return TypeData(lst, (a,), (cons, nil)), cons, nil


def test_graph_form_binds_arguments_and_inlines_the_result():
    x, y, z = Var("x", TensorType((10,), "float32")), Var("y"), Var("z")
    f = Function((x, y, z), add(add(x, y), z))
    assert astext(f) == (
        "fn (%x: Tensor[(10,), float32], %y, %z) {\n  %0 = add(%x, %y);\n  add(%0, %z)\n}"
    )


def test_shared_node_is_bound_once():
    x = Var("x")
    s = add(x, x)
    f = Function((x,), mul(s, s))
    assert astext(f) == "fn (%x) {\n  %0 = add(%x, %x);\n  multiply(%0, %0)\n}"


def test_shared_result_is_bound_then_named():
    x = Var("x")
    s = add(x, x)
    f = Function((x,), Tuple((s, Let(Var("y"), s, Var("q")))))
    text = astext(f)
    assert text.startswith("free_var %q;\nfn (%x) {\n  %0 = add(%x, %x);\n")


def test_let_chain_and_annotations():
    x = Var("x", F32)
    a = Var("a")
    b = Var("b", TensorType((2, Any), "int64"))
    body = Let(a, add(x, const(1.0)), Let(b, mul(a, a), Tuple((a, b))))
    assert astext(Function((x,), body, TupleType((F32, F32)))) == (
        "fn (%x: float32) -> (float32, float32) {\n"
        "  let %a = add(%x, 1f);\n"
        "  let %b: Tensor[(2, ?), int64] = multiply(%a, %a);\n"
        "  (%a, %b)\n"
        "}"
    )


def test_free_vars_are_declared():
    x = Var("x", F32)
    assert astext(add(x, x)) == "free_var %x: float32;\nadd(%x, %x)"


def test_names_are_made_unique_and_valid():
    a, b, c, d = Var("x"), Var("x"), Var(""), Var("3d")
    f = Function((a, b, c, d), Tuple((a, b, c, d)))
    assert astext(f) == "fn (%x, %x1, %v, %v3d) {\n  (%x, %x1, %v, %v3d)\n}"


def test_shared_nodes_are_bound_in_the_innermost_block_enclosing_their_uses():
    x = Var("x")
    s = add(x, x)
    only_then = add(x, const(2.0))
    f = Function((x,), If(const(True), mul(s, mul(only_then, only_then)), mul(s, s)))
    text = astext(f)
    assert text == (
        "fn (%x) {\n"
        "  %0 = add(%x, %x);\n"
        "  if (True) {\n"
        "    %1 = add(%x, 2f);\n"
        "    %2 = multiply(%1, %1);\n"
        "    multiply(%0, %2)\n"
        "  } else {\n"
        "    multiply(%0, %0)\n"
        "  }\n"
        "}"
    )
    assert relay.astext(relay.parse_expr(text)) == text


def test_a_function_shared_by_two_branches_keeps_one_binding():
    c, p = Var("c"), Var("p")
    f = Function((p,), p)
    text = astext(Function((c,), If(c, f, f)))
    assert text == (
        "fn (%c) {\n  %0 = fn (%p) {\n    %p\n  };\n  if (%c) {\n    %0\n  } else {\n    %0\n  }\n}"
    )
    assert relay.structural_equal(relay.parse_expr(text), Function((c,), If(c, f, f)))


def test_tuples_projections_and_refs():
    x = Var("x")
    r = Var("r")
    body = Let(
        r,
        RefCreate(Tuple((x,))),
        Tuple((RefWrite(r, Tuple(())), TupleGetItem(RefRead(r), 0), Tuple((x, x)))),
    )
    assert astext(Function((x,), body)) == (
        "fn (%x) {\n"
        "  %0 = (%x,);\n"
        "  let %r = ref(%0);\n"
        "  %1 = ();\n"
        "  %2 = ref_write(%r, %1);\n"
        "  %3 = ref_read(%r);\n"
        "  %4 = %3.0;\n"
        "  %5 = (%x, %x);\n"
        "  (%2, %4, %5)\n"
        "}"
    )


def test_call_attributes_and_function_attributes():
    x = Var("x")
    call = Call(
        Op.get("add"),
        (x, x),
        Attrs(padding=[1, 1], layout="NHWC", eps=1e-5, flag=True, axis=None, n=3, w=2.0),
    )
    f = Function((x,), call, attrs=Attrs(Primitive=1))
    assert astext(f) == (
        "fn (%x, Primitive=1) {\n"
        '  add(%x, %x, padding=[1, 1], layout="NHWC", eps=1e-05f, flag=True, axis=None, n=3, w=2f)\n'
        "}"
    )


def test_closures_are_bound_when_called():
    x, y = Var("x"), Var("y")
    inner = Function((y,), add(x, y))
    f = Function((x,), Call(inner, (x,)))
    assert astext(f) == ("fn (%x) {\n  %0 = fn (%y) {\n    add(%x, %y)\n  };\n  %0(%x)\n}")


def test_module_with_adt_match_and_type_params():
    data, cons, nil = list_type()
    mod = Module()
    mod.add_type(data)
    a = TypeVar("A")
    n = TypeVar("n", Kind.SHAPE)
    xs = Var("xs", TypeCall(data.header, (a,)))
    h, rest = Var("h"), Var("rest")
    length = GlobalVar("length")
    body = Match(
        xs,
        (
            Clause(
                PatternConstructor(cons, (PatternWildcard(), PatternVar(rest))),
                add(const(1), Call(length, (rest,))),
            ),
            Clause(PatternConstructor(nil), const(0)),
        ),
    )
    mod.add(length, Function((xs,), body, F32.__class__((), "int32"), (a,)))
    q = Var("q", TensorType((n, 3), "float32"))
    mod["hd"] = Function(
        (q, xs),
        Match(
            xs, (Clause(PatternConstructor(cons, (PatternVar(h), PatternWildcard())), h),), False
        ),
        None,
        (a, n),
    )
    mod["main"] = Function((), Call(length, (Call(cons, (const(1.5), Call(nil, ()))),)))
    assert astext(mod) == (
        '#[version = "0.0.5"]\n'
        "type List[A] {\n"
        "  Cons(A, List[A]),\n"
        "  Nil,\n"
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
        "def @hd[A, n: Shape](%q: Tensor[(n, 3), float32], %xs: List[A]) {\n"
        "  match? (%xs) {\n"
        "    Cons(%h, _) => %h,\n"
        "  }\n"
        "}\n"
        "\n"
        "def @main() {\n"
        "  %0 = Cons(1.5f, Nil);\n"
        "  @length(%0)\n"
        "}\n"
    )


def test_tuple_pattern_and_extern_type():
    x, y = Var("x"), Var("y")
    p = Var("p")
    m = Match(p, (Clause(PatternTuple((PatternVar(x), PatternTuple((PatternVar(y),)))), x),))
    assert astext(Function((p,), m)) == (
        "fn (%p) {\n  match (%p) {\n    (%x, (%y,)) => %x,\n  }\n}"
    )
    storage = TypeData(GlobalTypeVar("Storage"), (), (), is_extern=True)
    mod = Module()
    mod.add_type(storage)
    assert astext(mod) == '#[version = "0.0.5"]\nextern type Storage\n'


@pytest.mark.parametrize(
    ("value", "dtype", "text"),
    [
        (1, "int32", "1"),
        (-42, "int16", "-42i16"),
        (3, "int64", "3i64"),
        (7, "int8", "7i8"),
        (255, "uint8", "255u8"),
        (9, "uint64", "9u64"),
        (1.0, "float32", "1f"),
        (0.1, "float32", "0.1f"),
        (-2.5, "float32", "-2.5f"),
        (1e-7, "float32", "1e-07f"),
        (2.5, "float16", "2.5f16"),
        (0.1, "float64", "0.1f64"),
        (True, "bool", "True"),
        (False, "bool", "False"),
    ],
)
def test_scalar_literals(value, dtype, text):
    assert format_scalar(np.asarray(value, dtype=dtype)) == text
    assert astext(const(value, dtype)) == text


def test_non_scalar_and_non_finite_constants_go_to_metadata():
    c = const(np.arange(6, dtype="float32").reshape(2, 3))
    nan = const(float("nan"))
    text = astext(Tuple((c, nan, c)))
    assert text == (
        "(meta[relay.Constant][0], meta[relay.Constant][1], meta[relay.Constant][0])\n"
        "#[metadata]\n"
        '{"relay.Constant": [{"dtype": "float32", "shape": [2, 3], '
        '"data": "AAAAAAAAgD8AAABAAABAQAAAgEAAAKBA"}, '
        '{"dtype": "float32", "shape": [], "data": "AADAfw=="}]}\n'
    )


@pytest.mark.parametrize(
    ("ty", "text"),
    [
        (TensorType((), "float32"), "float32"),
        (TensorType((10,), "float32"), "Tensor[(10,), float32]"),
        (TensorType((1, Any), "float32"), "Tensor[(1, ?), float32]"),
        (TensorType((), TypeVar("d", Kind.BASE_TYPE)), "Tensor[(), d]"),
        (TupleType(()), "()"),
        (TupleType((F32,)), "(float32,)"),
        (FuncType((F32, F32), F32), "fn (float32, float32) -> float32"),
        (RefType(F32), "ref(float32)"),
        (IncompleteType(), "_"),
    ],
)
def test_types(ty, text):
    assert astext(ty) == text
    assert str(ty) == text


def test_polymorphic_function_type_binds_its_params():
    a = TypeVar("A")
    assert astext(FuncType((a,), a, (a,))) == "fn [A](A) -> A"


def test_show_types_prints_checked_types_as_comments():
    x = Var("x", F32)
    s = add(x, x)
    body = mul(s, s)
    s.set_checked_type(F32)
    body.set_checked_type(F32)
    assert astext(Function((x,), body), show_types=True) == (
        "fn (%x: float32) {\n"
        "  %0 = add(%x, %x) /* ty=float32 */;\n"
        "  multiply(%0, %0) /* ty=float32 */\n"
        "}"
    )


def test_str_is_astext():
    x = Var("x")
    f = Function((x,), x)
    assert str(f) == astext(f) == f.astext()


def test_deep_programs_print_without_recursion():
    x = Var("x")
    e = x
    for _ in range(100_000):
        e = add(e, const(1.0))
    text = astext(Function((x,), e))
    lines = text.splitlines()
    assert len(lines) == 100_002
    assert lines[1] == "  %0 = add(%x, 1f);"
    assert lines[-2] == "  add(%99998, 1f)"

    body: object = x
    vs = [Var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    for i in reversed(range(100_000)):
        body = Let(vs[i], add(vs[i - 1] if i else x, const(1.0)), body)
    text = astext(Function((x,), body))
    assert text.splitlines()[100_000] == "  let %v99999 = add(%v99998, 1f);"


def test_type_definitions_name_their_params_independently():
    mod = Module()
    for name in ("Option", "Box"):
        a = TypeVar("A")
        gtv = GlobalTypeVar(name)
        mod.add_type(TypeData(gtv, (a,), (Constructor(f"{name}C", (a,), gtv, 0),)))
    assert astext(mod) == (
        '#[version = "0.0.5"]\ntype Option[A] {\n  OptionC(A),\n}\n\ntype Box[A] {\n  BoxC(A),\n}\n'
    )


def test_type_variables_never_print_as_reserved_names():
    d = TypeVar("float32")
    t = TypeVar("Tensor")
    assert (
        astext(FuncType((d, t), d, (d, t)))
        == "fn [float32_, Tensor_](float32_, Tensor_) -> float32_"
    )


def test_a_let_shared_with_its_own_binding_prints_once():
    x, inner_var = Var("x"), Var("i")
    inner = Let(inner_var, add(x, x), inner_var)
    outer = Let(Var("o"), inner, inner)
    text = astext(Function((x,), outer))
    assert relay.astext(relay.parse_expr(text)) == text
    assert text == (
        "fn (%x) {\n  %0 = (\n    let %i = add(%x, %x);\n    %i\n  );\n  let %o = %0;\n  %0\n}"
    )


def test_projection_of_a_literal_is_parenthesised():
    text = astext(TupleGetItem(const(1), 0))
    assert text == "(1).0"
    assert relay.structural_equal(relay.parse_expr(text), TupleGetItem(const(1), 0))


def test_non_ascii_names_are_replaced():
    v = Var("é")
    assert astext(Function((v,), v)) == "fn (%_) {\n  %_\n}"


def test_type_variables_avoid_the_module_type_names():
    data, _cons, _nil = list_type()
    mod = Module()
    mod.add_type(data)
    a = TypeVar("List")
    y = Var("y", a)
    mod["f"] = Function((y,), y, None, (a,))
    text = astext(mod)
    assert "def @f[List_](%y: List_) {" in text
    assert relay.structural_equal(relay.parse(text), mod)


def test_many_equal_name_hints_get_successive_suffixes():
    vs = [Var("x") for _ in range(20_000)]
    text = astext(Function(tuple(vs), vs[-1]))
    assert text.startswith("fn (%x, %x1, %x2, ")
    assert text.endswith("%x19999) {\n  %x19999\n}")
