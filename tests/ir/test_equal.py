"""Structural equality (alpha-equivalence) and hashing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

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
from relay.ir.equal import (
    assert_structural_equal,
    first_mismatch,
    structural_equal,
    structural_hash,
)

F32 = TensorType((), "float32")


def add(a, b):
    return Call(Op.get("add"), (a, b))


def equal_and_same_hash(a, b, map_free_vars=False):
    eq = structural_equal(a, b, map_free_vars)
    if eq:
        assert structural_hash(a, map_free_vars) == structural_hash(b, map_free_vars)
    return eq


def lam(make):
    """fn (%x, %y) { make(%x, %y) } with fresh variables."""
    x, y = Var("x", F32), Var("y", F32)
    return Function((x, y), make(x, y))


def test_alpha_equivalent_functions():
    assert equal_and_same_hash(lam(add), lam(add))
    assert not structural_equal(lam(add), lam(lambda x, y: add(y, x)))
    # one-to-one: x+y is not x+x
    assert not structural_equal(lam(add), lam(lambda x, y: add(x, x)))
    assert not structural_equal(lam(lambda x, y: add(x, x)), lam(add))


def test_binder_annotations_matter():
    a = Function((Var("x", F32),), Tuple(()))
    b = Function((Var("x", TensorType((), "int32")),), Tuple(()))
    c = Function((Var("x"),), Tuple(()))
    assert not structural_equal(a, b)
    assert not structural_equal(a, c)
    assert first_mismatch(a, b).path == "params[0].dtype"


def test_names_and_spans_do_not_matter():
    x1 = Var("x", span=Span("a", 1, 1, 1, 2))
    x2 = Var("completely_different")
    f1 = Function((x1,), add(x1, const(1.0, span=Span("a", 2, 2, 2, 3))))
    f2 = Function((x2,), add(x2, const(1.0)))
    assert equal_and_same_hash(f1, f2)


def test_free_variables():
    x, y = Var("x"), Var("y")
    assert equal_and_same_hash(add(x, y), add(x, y))
    assert not structural_equal(add(x, y), add(Var("x"), y))
    assert equal_and_same_hash(add(x, y), add(Var("a"), Var("b")), map_free_vars=True)
    # the mapping of free variables is one-to-one
    assert not structural_equal(add(x, y), add(x, x), map_free_vars=True)
    assert not structural_equal(add(x, x), add(x, y), map_free_vars=True)
    # free variable annotations are compared when mapped
    assert not structural_equal(Var("a", F32), Var("b"), map_free_vars=True)


def test_let_and_scoping():
    def prog():
        a, b = Var("a"), Var("b")
        return Function((a,), Let(b, add(a, a), Tuple((b, a))))

    assert equal_and_same_hash(prog(), prog())
    a, b = Var("a"), Var("b")
    swapped = Function((a,), Let(b, add(a, a), Tuple((a, b))))
    assert not structural_equal(prog(), swapped)
    assert first_mismatch(prog(), swapped).path == "body.body.fields[0]"


def test_if_tuples_refs_projections():
    def prog(i=0, cond=True):
        r = Var("r")
        return Function(
            (r,),
            If(const(cond), TupleGetItem(Tuple((RefRead(r), r)), i), RefWrite(r, RefCreate(r))),
        )

    assert equal_and_same_hash(prog(), prog())
    assert not structural_equal(prog(), prog(i=1))
    assert not structural_equal(prog(), prog(cond=False))


def _list():
    a = TypeVar("A")
    lst = GlobalTypeVar("List")
    cons = Constructor("Cons", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("Nil", (), lst, 1)
    return TypeData(lst, (a,), (cons, nil)), cons, nil


def test_match_binds_pattern_variables():
    def prog(complete=True, body_uses_head=True, data=None):
        _data, cons, nil = data or _list()
        xs, h, t = Var("xs"), Var("h"), Var("t")
        return Function(
            (xs,),
            Match(
                xs,
                (
                    Clause(
                        PatternConstructor(cons, (PatternVar(h), PatternVar(t))),
                        h if body_uses_head else t,
                    ),
                    Clause(PatternConstructor(nil), Call(nil, ())),
                    Clause(PatternWildcard(), Tuple(())),
                ),
                complete,
            ),
        )

    assert equal_and_same_hash(prog(), prog())
    assert not structural_equal(prog(), prog(complete=False))
    assert not structural_equal(prog(), prog(body_uses_head=False))
    p = Var("p")
    tup = Function((p,), Match(p, (Clause(PatternTuple((PatternVar(Var("u")),)), p),)))
    tup2 = Function((p,), Match(p, (Clause(PatternTuple((PatternWildcard(),)), p),)))
    assert not structural_equal(tup, tup2)


def test_type_params_and_shape_vars():
    def poly(kind=Kind.SHAPE):
        a, n = TypeVar("A"), TypeVar("n", kind)
        x = Var("x", TensorType((n, 3, Any), "float32"))
        return Function((x, Var("y", a)), x, a, (a, n))

    assert equal_and_same_hash(poly(), poly())
    assert not structural_equal(poly(), poly(kind=Kind.TYPE))
    n = TypeVar("n", Kind.SHAPE)
    assert structural_equal(TensorType((n, 3)), TensorType((n, 3)))
    assert not structural_equal(TensorType((n, 3)), TensorType((TypeVar("n", Kind.SHAPE), 3)))
    assert structural_equal(
        TensorType((n, 3)), TensorType((TypeVar("m", Kind.SHAPE), 3)), map_free_vars=True
    )
    assert not structural_equal(TensorType((Any, 3)), TensorType((3, 3)))
    a = TypeVar("A")
    b = TypeVar("B")
    assert structural_equal(FuncType((a,), a, (a,)), FuncType((b,), b, (b,)))
    assert not structural_equal(FuncType((a,), a, (a,)), FuncType((b,), a, (b,)))
    assert not structural_equal(IncompleteType(), IncompleteType())
    assert structural_equal(IncompleteType(), IncompleteType(), map_free_vars=True)


def test_constants():
    assert equal_and_same_hash(const(1.0), const(1.0))
    assert not structural_equal(const(1.0), const(1.0, "float64"))
    assert not structural_equal(const([1.0, 2.0]), const([[1.0, 2.0]]))
    assert not structural_equal(const([1.0, 2.0]), const([1.0, 3.0]))
    assert equal_and_same_hash(const(float("nan")), const(float("nan")))
    assert not structural_equal(const(0.0), const(-0.0))
    assert first_mismatch(const(1), const(2)).path == "data"


def test_attrs_and_ops():
    x = Var("x")
    c1 = Call(Op.get("add"), (x, x), Attrs(padding=[1, 1]))
    c2 = Call(Op.get("add"), (x, x), Attrs(padding=(1, 1)))
    c3 = Call(Op.get("add"), (x, x), Attrs(padding=(1, 2)))
    c4 = Call(Op.get("subtract"), (x, x), Attrs(padding=(1, 1)))
    assert equal_and_same_hash(c1, c2)
    assert not structural_equal(c1, c3)
    assert not structural_equal(c1, c4)
    f1 = Function((), Tuple(()), attrs=Attrs(Primitive=1))
    assert not structural_equal(f1, Function((), Tuple(())))


def test_globals_compare_by_name():
    assert structural_equal(GlobalVar("f"), GlobalVar("f"))
    assert not structural_equal(GlobalVar("f"), GlobalVar("g"))


def test_modules():
    def mod(ret_first=True):
        m = Module()
        data, _cons, nil = _list()
        m.add_type(data)
        x, y = Var("x"), Var("y")
        m["f"] = Function((x, y), x if ret_first else y)
        m["main"] = Function((), Call(m.get_global_var("f"), (Call(nil, ()), Call(nil, ()))))
        return m

    assert equal_and_same_hash(mod(), mod())
    assert not structural_equal(mod(), mod(ret_first=False))
    assert first_mismatch(mod(), mod(ret_first=False)).path == "f.body"
    smaller = mod()
    smaller.remove("main")
    assert not structural_equal(mod(), smaller)


def test_parsed_programs_compare():
    text = """
    def @f(%x: Tensor[(n, 2), float32]) -> Tensor[(n, 2), float32] {
      let %y = %x * %x;
      %y + 1f
    }
    """
    assert relay.structural_equal(relay.parse(text), relay.parse(text))
    other = relay.parse(text.replace("1f", "2f"))
    assert not relay.structural_equal(relay.parse(text), other)


def test_dag_and_tree_are_equal_and_sharing_is_linear():
    x = Var("x")
    shared = x
    for _ in range(60):
        shared = add(shared, shared)  # 2^60 paths as a tree
    x2 = Var("x")
    shared2 = x2
    for _ in range(60):
        shared2 = add(shared2, shared2)
    assert equal_and_same_hash(Function((x,), shared), Function((x2,), shared2))
    small_tree = add(add(x, x), add(x, x))
    a = add(x, x)
    assert equal_and_same_hash(small_tree, add(a, a))


def test_assert_structural_equal_message():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(lam(add), lam(lambda x, y: add(x, const(2.0))))
    assert str(info.value).startswith(
        "not structurally equal at body.args[1]: Var vs Constant\n--- lhs at body.args[1]:\n"
    )
    assert "2f" in str(info.value)
    relay.assert_structural_equal(lam(add), lam(add))


def test_deep_programs():
    def chain(n):
        x = Var("x")
        e = x
        for _ in range(n):
            e = add(e, const(1.0))
        return Function((x,), e)

    def lets(n):
        vs = [Var("v") for _ in range(n)]
        body = vs[-1]
        for i in reversed(range(n)):
            body = Let(vs[i], const(i) if i == 0 else add(vs[i - 1], const(1)), body)
        return body

    def cons_list(n):
        _, cons, nil = _list()
        e = Call(nil, ())
        for i in range(n):
            e = Call(cons, (const(i), e))
        return e

    for make in (chain, lets, cons_list):
        a, b = make(100_000), make(100_000)
        assert structural_equal(a, b)
        assert structural_hash(a) == structural_hash(b)


# -- random expressions: a fresh copy is equal, a mutation is not ---------------------------------

_LEAVES = st.sampled_from(["x", "y", "c1", "c2"])


@st.composite
def _shapes(draw, depth=0):
    if depth > 3 or draw(st.booleans()):
        return draw(_LEAVES)
    kind = draw(st.sampled_from(["add", "mul", "tuple", "let", "fn", "if"]))
    if kind in ("add", "mul"):
        return (kind, draw(_shapes(depth + 1)), draw(_shapes(depth + 1)))
    if kind == "tuple":
        return ("tuple", *draw(st.lists(_shapes(depth + 1), max_size=3)))
    if kind == "if":
        return ("if", draw(_shapes(depth + 1)), draw(_shapes(depth + 1)), draw(_shapes(depth + 1)))
    return (kind, draw(_shapes(depth + 1)), draw(_shapes(depth + 1)))


def _build(shape, env, free):
    if isinstance(shape, str):
        if shape == "c1":
            return const(1.0)
        if shape == "c2":
            return const(2.0)
        return env.get(shape) or free[shape]
    kind, *rest = shape
    if kind in ("add", "mul"):
        op = Op.get("add" if kind == "add" else "multiply")
        return Call(op, (_build(rest[0], env, free), _build(rest[1], env, free)))
    if kind == "tuple":
        return Tuple(tuple(_build(s, env, free) for s in rest))
    if kind == "if":
        return If(*(_build(s, env, free) for s in rest))
    v = Var("x")
    if kind == "let":
        return Let(v, _build(rest[0], env, free), _build(rest[1], {**env, "x": v}, free))
    return Call(
        Function((v,), _build(rest[1], {**env, "x": v}, free)), (_build(rest[0], env, free),)
    )


def _mutate(shape):
    if isinstance(shape, str):
        return {"x": "y", "y": "x", "c1": "c2", "c2": "c1"}[shape]
    kind, *rest = shape
    if kind == "add":
        return ("mul", *rest)
    if kind == "mul":
        return ("add", *rest)
    if kind == "tuple":
        return ("tuple", *rest, "c1")
    return (kind, _mutate(rest[0]), *rest[1:])


@settings(max_examples=150, deadline=None)
@given(_shapes())
def test_random_copies_are_equal_and_mutations_are_not(shape):
    free = {"x": Var("x"), "y": Var("y")}
    a = _build(shape, {}, free)
    b = _build(shape, {}, free)
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    fresh = {"x": Var("p"), "y": Var("q")}
    assert structural_equal(a, _build(shape, {}, fresh), map_free_vars=True)
    mutated = _mutate(shape)
    if mutated != shape:
        assert not structural_equal(a, _build(mutated, {}, free))


def test_hash_distinguishes_common_differences():
    assert structural_hash(const(1.0)) != structural_hash(const(2.0))
    assert structural_hash(lam(add)) != structural_hash(lam(lambda x, y: Tuple((x, y))))
    assert structural_hash(TupleType((F32,))) != structural_hash(TupleType((F32, F32)))
