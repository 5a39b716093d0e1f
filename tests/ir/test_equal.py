"""Structural equality (alpha-equivalence), structural hashing and mismatch reports."""

from __future__ import annotations

from collections.abc import Callable

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
    Pattern,
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
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
    Var,
    bound_vars,
    const,
    free_vars,
)
from relay.ir.equal import (
    Mismatch,
    assert_structural_equal,
    first_mismatch,
    structural_equal,
    structural_hash,
)
from relay.ir.expr import children
from tests.strategies import ProgramConfig, expressions, functions, modules

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")
ADD = Op.get("add")
SUB = Op.get("subtract")
SPAN = Span("test.rly", 1, 1, 1, 5)


def add(a: Expr, b: Expr) -> Call:
    return Call(ADD, (a, b))


def assert_equal(a: object, b: object, map_free_vars: bool = False) -> None:
    """Equal both ways, with the same hash, and no mismatch."""
    assert first_mismatch(a, b, map_free_vars) is None
    assert first_mismatch(b, a, map_free_vars) is None
    assert structural_equal(a, b, map_free_vars)
    assert structural_hash(a, map_free_vars) == structural_hash(b, map_free_vars)


def assert_unequal(a: object, b: object, map_free_vars: bool = False) -> Mismatch:
    """Unequal both ways; returns the mismatch found comparing ``a`` with ``b``."""
    assert not structural_equal(b, a, map_free_vars)
    mismatch = first_mismatch(a, b, map_free_vars)
    assert mismatch is not None
    assert not structural_equal(a, b, map_free_vars)
    return mismatch


def lam(make: Callable[[Var, Var], Expr]) -> Function:
    """``fn (%x: float32, %y: float32) { make(%x, %y) }`` with fresh variables."""
    x, y = Var("x", F32), Var("y", F32)
    return Function((x, y), make(x, y))


# -- bound variables -------------------------------------------------------------------------------


def test_functions_are_compared_up_to_renaming_of_parameters():
    assert_equal(lam(add), lam(add))
    swapped = assert_unequal(lam(add), lam(lambda x, y: add(y, x)))
    assert (swapped.path, swapped.reason) == (
        "body.args[0]",
        "variables are bound at different places",
    )


def test_the_pairing_of_variables_is_one_to_one():
    # fn(x, y) { x + y } vs fn(x, y) { x + x }: y's partner may not also stand for x
    assert assert_unequal(lam(add), lam(lambda x, y: add(x, x))).path == "body.args[1]"
    assert assert_unequal(lam(lambda x, y: add(x, x)), lam(add)).path == "body.args[1]"


def test_bound_variables_hash_by_binding_position():
    first, second = lam(lambda x, y: x), lam(lambda x, y: y)
    assert_unequal(first, second)
    assert structural_hash(first) != structural_hash(second)
    assert structural_hash(lam(add)) != structural_hash(lam(lambda x, y: add(y, x)))


def test_binder_annotations_are_compared():
    a = Function((Var("x", F32),), Tuple(()))
    b = Function((Var("x", I32),), Tuple(()))
    mismatch = assert_unequal(a, b)
    assert (mismatch.path, mismatch.reason) == (
        "params[0].type_annotation.dtype",
        "dtype float32 vs int32",
    )
    missing = assert_unequal(a, Function((Var("x"),), Tuple(())))
    assert (missing.path, missing.reason) == (
        "params[0].type_annotation",
        "type annotation on one side only",
    )
    ret = assert_unequal(Function((), Tuple(()), F32), Function((), Tuple(()), I32))
    assert ret.path == "ret_type.dtype"
    assert assert_unequal(Function((Var("x"),), Tuple(())), Function((), Tuple(()))).reason == (
        "1 vs 0 params"
    )


def test_names_spans_and_inferred_types_do_not_matter():
    x1 = Var("x", TensorType((3,), "float32", span=SPAN), span=SPAN)
    x2 = Var("completely_different", TensorType((3,)))
    f1 = Function((x1,), add(x1, const(1.0, span=SPAN)), span=SPAN)
    f2 = Function((x2,), add(x2, const(1.0)))
    f1.body.set_checked_type(TensorType((3,)))
    f2.body.set_checked_type(TupleType(()))  # a wrong inferred type is still ignored
    assert_equal(f1, f2)
    p1 = PatternTuple((PatternWildcard(span=SPAN),), span=SPAN)
    assert_equal(p1, PatternTuple((PatternWildcard(),)))


def test_let_binders_and_scoping():
    def prog() -> Function:
        a, b = Var("a"), Var("b", F32)
        return Function((a,), Let(b, add(a, a), Tuple((b, a))))

    assert_equal(prog(), prog())
    a, b = Var("a"), Var("b", F32)
    swapped = Function((a,), Let(b, add(a, a), Tuple((a, b))))
    assert assert_unequal(prog(), swapped).path == "body.body.fields[0]"
    a, b = Var("a"), Var("b", I32)
    annotated = Function((a,), Let(b, add(a, a), Tuple((b, a))))
    assert assert_unequal(prog(), annotated).path == "body.var.type_annotation.dtype"


def test_recursive_let_binds_its_variable_in_the_value():
    def prog(recursive: bool = True) -> Let:
        f, g = Var("f"), Var("g")
        callee = f if recursive else g
        return Let(f, Function((), Call(callee, ())), f)

    assert_equal(prog(), prog())
    mismatch = assert_unequal(prog(), prog(recursive=False))
    assert (mismatch.path, mismatch.reason) == (
        "value.body.op",
        "variables are bound at different places",
    )


def test_a_variable_is_paired_once_for_the_whole_comparison():
    # A shared binder node corresponds to a single binder on the other side: sharing the same
    # function twice is equal to sharing another one twice, not to two fresh copies of it.
    def ident() -> Function:
        x = Var("x")
        return Function((x,), x)

    f, g = ident(), ident()
    assert_equal(Tuple((f, f)), Tuple((g, g)))
    mismatch = assert_unequal(Tuple((f, f)), Tuple((ident(), ident())))
    assert (mismatch.path, mismatch.reason) == (
        "fields[1].params[0]",
        "binder is already paired with another variable",
    )


# -- free variables --------------------------------------------------------------------------------


def test_free_variables_compare_by_identity():
    x, y = Var("x"), Var("y")
    assert_equal(add(x, y), add(x, y))
    mismatch = assert_unequal(add(x, y), add(Var("x"), y))
    assert (mismatch.path, mismatch.reason) == ("args[0]", "different free variables")
    assert structural_hash(add(x, y)) != structural_hash(add(Var("x"), y))


def test_map_free_vars_pairs_free_variables_one_to_one():
    x, y = Var("x"), Var("y")
    assert_equal(add(x, y), add(Var("a"), Var("b")), map_free_vars=True)
    assert_equal(add(x, x), add(y, y), map_free_vars=True)
    # free x + y vs x + x: y cannot be paired with x, which is already x's partner
    assert assert_unequal(add(x, y), add(x, x), map_free_vars=True).path == "args[1]"
    assert assert_unequal(add(x, x), add(x, y), map_free_vars=True).path == "args[1]"
    # mapped free variables must agree on their annotations
    mismatch = assert_unequal(Var("a", F32), Var("b"), map_free_vars=True)
    assert mismatch.path == "type_annotation"


def test_a_free_variable_never_equals_a_bound_one():
    y = Var("y")
    x = Var("x")
    mismatch = assert_unequal(Function((x,), x), Function((Var("x"),), y), map_free_vars=True)
    assert (mismatch.path, mismatch.reason) == ("body", "variables are bound at different places")


# -- match and patterns ----------------------------------------------------------------------------


def list_data() -> tuple[TypeData, Constructor, Constructor]:
    a = TypeVar("A")
    lst = GlobalTypeVar("List")
    cons = Constructor("Cons", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("Nil", (), lst, 1)
    return TypeData(lst, (a,), (cons, nil)), cons, nil


def test_match_binds_pattern_variables_by_position():
    def prog(complete: bool = True, use_head: bool = True, ann: Type | None = None) -> Function:
        _data, cons, nil = list_data()
        xs, h, t = Var("xs"), Var("h", ann), Var("t")
        return Function(
            (xs,),
            Match(
                xs,
                (
                    Clause(
                        PatternConstructor(cons, (PatternVar(h), PatternVar(t))),
                        h if use_head else t,
                    ),
                    Clause(PatternConstructor(nil), Call(nil, ())),
                    Clause(PatternWildcard(), Tuple(())),
                ),
                complete,
            ),
        )

    assert_equal(prog(), prog())
    assert assert_unequal(prog(), prog(complete=False)).reason == "match vs match?"
    assert assert_unequal(prog(), prog(use_head=False)).path == "body.clauses[0].rhs"
    mismatch = assert_unequal(prog(), prog(ann=F32))
    assert mismatch.path == "body.clauses[0].lhs.patterns[0].var.type_annotation"


def test_pattern_shapes_and_constructors():
    _data, cons, nil = list_data()
    p = Var("p")

    def match(pattern: Pattern, rhs: Callable[[Var], Expr] = lambda v: v) -> Function:
        return Function((p,), Match(p, (Clause(pattern, rhs(p)),)))

    u = Var("u")
    tup_var = match(PatternTuple((PatternVar(u),)), lambda _: u)
    assert_equal(tup_var, match(PatternTuple((PatternVar(w := Var("w")),)), lambda _: w))
    mismatch = assert_unequal(tup_var, match(PatternTuple((PatternWildcard(),)), lambda _: u))
    assert (mismatch.path, mismatch.reason) == (
        "body.clauses[0].lhs.patterns[0]",
        "PatternVar vs PatternWildcard",
    )
    arity = assert_unequal(match(PatternTuple(())), match(PatternTuple((PatternWildcard(),))))
    assert arity.reason == "0 vs 1 sub-patterns"
    ctor = assert_unequal(match(PatternConstructor(nil)), match(PatternConstructor(cons)))
    assert (ctor.path, ctor.reason) == (
        "body.clauses[0].lhs.constructor",
        "constructor Nil vs Cons",
    )
    clauses = assert_unequal(
        Match(p, (Clause(PatternWildcard(), p),)), Match(p, (Clause(PatternWildcard(), p),) * 2)
    )
    assert clauses.reason == "1 vs 2 clauses"
    # standalone patterns and clauses
    assert_equal(PatternVar(Var("a")), PatternVar(Var("b")))
    assert_equal(Clause(PatternVar(a := Var("a")), a), Clause(PatternVar(b := Var("b")), b))
    assert_unequal(Clause(PatternVar(a), a), Clause(PatternVar(b), Var("b")))


def test_constructors_compare_by_name_tag_and_data_type():
    lst, other = GlobalTypeVar("List"), GlobalTypeVar("Other")
    base = Constructor("Nil", (), lst, 1)
    assert_equal(base, Constructor("Nil", (F32,), GlobalTypeVar("List"), 1))
    assert assert_unequal(base, Constructor("Nil", (), lst, 0)).reason == (
        "constructor Nil has tags 1 vs 0"
    )
    assert assert_unequal(base, Constructor("Nil", (), other, 1)).reason == (
        "constructor Nil of List vs Other"
    )
    assert_unequal(base, Constructor("Empty", (), lst, 1))


# -- types -----------------------------------------------------------------------------------------


def test_type_parameters_of_functions_are_mapped():
    def poly(kind: Kind = Kind.SHAPE, swap: bool = False) -> Function:
        a, n = TypeVar("A"), TypeVar("n", kind)
        x = Var("x", TensorType((n, 3, Any), "float32"))
        y = Var("y", a)
        return Function((x, y), y if swap else x, a, (a, n))

    assert_equal(poly(), poly())
    kinds = assert_unequal(poly(), poly(kind=Kind.TYPE))
    assert (kinds.path, kinds.reason) == ("type_params[1]", "type parameters of different kinds")
    assert assert_unequal(poly(), poly(swap=True)).path == "body"
    a, b = TypeVar("A"), TypeVar("B")
    f_ab = Function((Var("x", a), Var("y", b)), Tuple(()), None, (a, b))
    c, d = TypeVar("C"), TypeVar("D")
    f_dc = Function((Var("x", d), Var("y", c)), Tuple(()), None, (c, d))
    assert assert_unequal(f_ab, f_dc).path == "params[0].type_annotation"
    assert structural_hash(f_ab) != structural_hash(f_dc)


def test_shape_variables_in_tensor_types():
    n, m = TypeVar("n", Kind.SHAPE), TypeVar("m", Kind.SHAPE)
    assert_equal(TensorType((n, 3)), TensorType((n, 3)))
    fresh = TypeVar("n", Kind.SHAPE)
    assert assert_unequal(TensorType((n, 3)), TensorType((fresh, 3))).path == "shape[0]"
    assert_equal(TensorType((n, 3)), TensorType((fresh, 3)), map_free_vars=True)
    assert_equal(TensorType((n, m, n)), TensorType((m, n, m)), map_free_vars=True)
    assert_unequal(TensorType((n, m, n)), TensorType((m, n, n)), map_free_vars=True)
    assert assert_unequal(TensorType((Any, 3)), TensorType((3, 3))).reason == "dimension ? vs 3"
    assert assert_unequal(TensorType((n,)), TensorType((Any,))).path == "shape[0]"
    assert assert_unequal(TensorType((1, 2)), TensorType((1,))).reason == "rank 2 vs 1"
    assert_equal(TensorType((Any, 3)), TensorType((Any, 3)))
    dt = TypeVar("d", Kind.BASE_TYPE)
    assert_equal(TensorType((2,), dt), TensorType((2,), TypeVar("e", Kind.BASE_TYPE)), True)
    assert assert_unequal(TensorType((2,), dt), TensorType((2,), "int8")).path == "dtype"


def test_func_type_parameters_scope_over_their_type_only():
    a, b, c = TypeVar("A"), TypeVar("B"), TypeVar("C")
    assert_equal(FuncType((a,), a, (a,)), FuncType((b,), b, (b,)))
    assert assert_unequal(FuncType((a,), a, (a,)), FuncType((b,), a, (b,))).path == "ret_type"
    # the same variable bound by two function types is two binders
    twice = TupleType((FuncType((a,), a, (a,)), FuncType((a,), a, (a,))))
    assert_equal(twice, TupleType((FuncType((b,), b, (b,)), FuncType((c,), c, (c,)))))
    # positions in nested binders: fn[A](fn[B](B) -> A) vs fn[A](fn[B](A) -> A)
    inner_b, inner_a = FuncType((b,), a, (b,)), FuncType((a,), a, (b,))
    assert_unequal(FuncType((inner_b,), a, (a,)), FuncType((inner_a,), a, (a,)))
    # shadowing: the inner binder of A hides the outer one
    shadow = FuncType((FuncType((a,), a, (a,)),), a, (a,))
    assert_equal(shadow, FuncType((FuncType((c,), c, (c,)),), b, (b,)))
    assert_unequal(shadow, FuncType((FuncType((c,), b, (c,)),), b, (b,)))
    kinds = assert_unequal(FuncType((), a, (a,)), FuncType((), b, (TypeVar("B", Kind.SHAPE),)))
    assert kinds.path == "type_params[0]"
    # a function type's free variables follow the usual rules
    assert_unequal(FuncType((), a), FuncType((), b))
    assert_equal(FuncType((), a), FuncType((), b), map_free_vars=True)


def test_incomplete_types_compare_by_identity_unless_mapped():
    hole = IncompleteType()
    assert_equal(TupleType((hole, hole)), TupleType((hole, hole)))
    assert_unequal(IncompleteType(), IncompleteType())
    assert_equal(IncompleteType(), IncompleteType(), map_free_vars=True)
    other = IncompleteType()
    assert_unequal(TupleType((hole, hole)), TupleType((hole, other)), map_free_vars=True)
    assert_unequal(IncompleteType(Kind.SHAPE), IncompleteType(), map_free_vars=True)


def test_other_types():
    lst = GlobalTypeVar("List")
    assert_equal(TypeCall(lst, (F32,)), TypeCall(GlobalTypeVar("List"), (F32,)))
    assert assert_unequal(TypeCall(lst, (F32,)), TypeCall(GlobalTypeVar("Tree"), (F32,))).path == (
        "func"
    )
    assert assert_unequal(TypeCall(lst, (F32,)), TypeCall(lst, (I32,))).path == "args[0].dtype"
    assert_equal(RefType(F32), RefType(TensorType(())))
    assert assert_unequal(TupleType((F32,)), TupleType((F32, F32))).reason == "1 vs 2 fields"
    assert assert_unequal(RefType(F32), F32).reason == "RefType vs TensorType"

    def rel(name: str = "Broadcast", axis: int = 0) -> TypeRelation:
        return TypeRelation(name, lambda *args: None, (F32, F32, F32), 2, Attrs(axis=axis))

    assert_equal(rel(), rel())
    assert_unequal(rel(), rel("Identity"))
    assert assert_unequal(rel(), rel(axis=1)).path == "attrs"
    a = TypeVar("A")
    assert_equal(FuncType((a,), a, (a,), (rel(),)), FuncType((a,), a, (a,), (rel(),)))


def test_type_data_maps_its_parameters():
    data1, _, _ = list_data()
    data2, _, _ = list_data()
    assert_equal(data1, data2)
    b = TypeVar("B")
    lst = GlobalTypeVar("List")
    swapped = TypeData(
        lst,
        (b,),
        (Constructor("Cons", (TypeCall(lst, (b,)), b), lst, 0), Constructor("Nil", (), lst, 1)),
    )
    mismatch = assert_unequal(data1, swapped)
    assert (mismatch.path, mismatch.reason) == ("constructors[0].inputs[0]", "TypeVar vs TypeCall")
    extern = TypeData(GlobalTypeVar("List"), (TypeVar("A"),), (), is_extern=True)
    assert assert_unequal(data1, extern).reason == "extern type on one side only"
    renamed = TypeData(GlobalTypeVar("Seq"), data1.type_params, data1.constructors)
    assert assert_unequal(data1, renamed).path == "header"


# -- other expressions -----------------------------------------------------------------------------


def test_if_tuples_projections_and_references():
    def prog(index: int = 0, cond: bool = True, write_back: bool = True) -> Function:
        r = Var("r")
        value = RefCreate(r) if write_back else RefRead(r)
        return Function(
            (r,), If(const(cond), TupleGetItem(Tuple((RefRead(r), r)), index), RefWrite(r, value))
        )

    assert_equal(prog(), prog())
    index = assert_unequal(prog(), prog(index=1))
    assert (index.path, index.reason) == ("body.true_branch.index", "index 0 vs 1")
    assert assert_unequal(prog(), prog(cond=False)).path == "body.cond.data"
    assert assert_unequal(prog(), prog(write_back=False)).reason == "RefCreate vs RefRead"


def test_constants_compare_dtype_shape_and_bytes():
    assert_equal(const(1.0), const(1.0))
    assert assert_unequal(const(1.0), const(1.0, "float64")).reason == "dtype float32 vs float64"
    assert assert_unequal(const([1.0, 2.0]), const([[1.0, 2.0]])).reason == "shape (2,) vs (1, 2)"
    mismatch = assert_unequal(const([1.0, 2.0]), const([1.0, 3.0]))
    assert (mismatch.path, mismatch.reason) == ("data", "values differ")
    assert structural_hash(const(1.0)) != structural_hash(const(2.0))
    assert_equal(const(float("nan")), const(float("nan")))
    quiet = np.array([0x7FC00000], dtype=np.uint32).view(np.float32).reshape(())
    payload = np.array([0x7FC00001], dtype=np.uint32).view(np.float32).reshape(())
    assert_unequal(Constant(quiet), Constant(payload))
    assert_unequal(const(0.0), const(-0.0))
    assert_equal(const(True), const(True))
    assert_unequal(const(1), const(True))


def test_large_and_strided_constants():
    big = np.arange(10_000, dtype="float32")
    assert_equal(Constant(big), Constant(big.copy()))
    changed = big.copy()
    changed[-1] = -1.0
    assert assert_unequal(Constant(big), Constant(changed)).reason == "values differ"
    strided = np.arange(20, dtype="int64").reshape(4, 5)[:, ::2]
    assert not strided.flags.c_contiguous
    assert_equal(Constant(strided), Constant(np.ascontiguousarray(strided)))


def test_attributes():
    x = Var("x")
    c1 = Call(ADD, (x, x), Attrs(padding=[1, 1]))
    assert_equal(c1, Call(ADD, (x, x), Attrs(padding=(1, 1))))
    mismatch = assert_unequal(c1, Call(ADD, (x, x), Attrs(padding=(1, 2))))
    assert (mismatch.path, mismatch.reason) == (
        "attrs",
        "attributes {'padding': (1, 1)} vs {'padding': (1, 2)}",
    )
    assert_unequal(Call(ADD, (x,), Attrs(flag=True)), Call(ADD, (x,), Attrs(flag=1)))
    f1 = Function((), Tuple(()), attrs=Attrs(Primitive=1))
    assert assert_unequal(f1, Function((), Tuple(()))).path == "attrs"
    assert_equal(Attrs(a=1, b="s"), Attrs(b="s", a=1))
    assert_unequal(Attrs(a=1), Attrs(a=2))


def test_calls_operators_globals_and_type_args():
    x = Var("x")
    op = assert_unequal(add(x, x), Call(SUB, (x, x)))
    assert (op.path, op.reason) == ("op", "operator add vs subtract")
    assert assert_unequal(add(x, x), Call(ADD, (x,))).reason == "2 vs 1 args"
    assert_equal(Call(ADD, (x,), type_args=(F32,)), Call(ADD, (x,), type_args=(F32,)))
    targs = assert_unequal(Call(ADD, (x,), type_args=(F32,)), Call(ADD, (x,), type_args=(I32,)))
    assert targs.path == "type_args[0].dtype"
    assert_equal(GlobalVar("f"), GlobalVar("f"))
    assert assert_unequal(GlobalVar("f"), GlobalVar("g")).reason == "@f vs @g"


def test_objects_of_different_categories_and_non_ir_objects():
    mismatch = assert_unequal(Var("x"), F32)
    assert (mismatch.path, mismatch.reason) == ("<root>", "Var vs TensorType")
    with pytest.raises(TypeError, match="cannot compare int structurally"):
        structural_equal(1, 1)
    with pytest.raises(TypeError, match="cannot hash str structurally"):
        structural_hash("x")


# -- modules ---------------------------------------------------------------------------------------


def make_module(ret_first: bool = True, main_first: bool = False) -> Module:
    mod = Module()
    data, _cons, nil = list_data()
    mod.add_type(data)
    x, y = Var("x"), Var("y")
    f = GlobalVar("f")
    defs = [
        (f, Function((x, y), x if ret_first else y)),
        (GlobalVar("main"), Function((), Call(f, (Call(nil, ()), Call(nil, ()))))),
    ]
    for gv, func in reversed(defs) if main_first else defs:
        mod.add(gv, func)
    return mod


def test_modules_compare_definitions_by_name():
    assert_equal(make_module(), make_module())
    assert_equal(make_module(), make_module(main_first=True))
    mismatch = assert_unequal(make_module(), make_module(ret_first=False))
    assert (mismatch.path, mismatch.reason) == ("f.body", "variables are bound at different places")
    smaller = make_module()
    smaller.remove("main")
    missing = assert_unequal(make_module(), smaller)
    assert (missing.path, missing.reason) == ("main", "@main is defined only in the lhs module")
    assert missing.rhs is None


def test_module_type_definitions_are_mapped_by_name():
    def with_data(swap: bool) -> Module:
        mod = Module()
        a = TypeVar("A")
        pair = GlobalTypeVar("Pair")
        fields = (a, TupleType(())) if not swap else (TupleType(()), a)
        mod.add_type(TypeData(pair, (a,), (Constructor("MkPair", fields, pair, 0),)))
        return mod

    assert_equal(with_data(False), with_data(False))
    mismatch = assert_unequal(with_data(False), with_data(True))
    assert mismatch.path == "Pair.constructors[0].inputs[0]"
    assert assert_unequal(with_data(False), Module()).reason == (
        "type Pair is defined only in the lhs module"
    )


def test_each_module_definition_is_its_own_scope():
    a = TypeVar("A")

    def mod(shared: bool) -> Module:
        m = Module()
        b = a if shared else TypeVar("A")
        m["f"] = Function((Var("x", a),), Tuple(()), None, (a,))
        m["g"] = Function((Var("x", b),), Tuple(()), None, (b,))
        return m

    assert_equal(mod(shared=True), mod(shared=False))


def test_first_mismatch_path_inside_a_module():
    def mod(value: float) -> Module:
        m = Module()
        x = Var("x", F32)
        m["main"] = Function((x,), add(x, RefCreate(const(value))))
        return m

    mismatch = first_mismatch(mod(1.0), mod(2.0))
    assert mismatch is not None
    assert (mismatch.path, mismatch.reason) == ("main.body.args[1].value.data", "values differ")
    assert isinstance(mismatch.lhs, Constant) and float(mismatch.lhs.data) == 1.0
    assert str(mismatch) == "at main.body.args[1].value.data: values differ"


def test_parsed_programs_compare():
    text = """
    def @f(%x: Tensor[(n, 2), float32]) -> Tensor[(n, 2), float32] {
      let %y = %x * %x;
      %y + 1f
    }
    """
    assert_equal(relay.parse(text), relay.parse(text))
    assert not relay.structural_equal(relay.parse(text), relay.parse(text.replace("1f", "2f")))
    assert relay.structural_hash(relay.parse(text)) == relay.structural_hash(relay.parse(text))
    x, y = Var("x"), Var("y")
    assert relay.structural_equal(add(x, x), add(y, y), map_free_vars=True)
    assert relay.structural_hash(add(x, x), map_free_vars=True) == relay.structural_hash(
        add(y, y), map_free_vars=True
    )


# -- assertion messages ----------------------------------------------------------------------------


def test_assert_structural_equal_names_the_path_and_shows_both_sides():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(lam(add), lam(lambda x, y: add(x, const(2.0))))
    assert str(info.value) == (
        "not structurally equal at body.args[1]: Var vs Constant\n"
        "--- lhs at body.args[1]:\n"
        "free_var %y: float32;\n"
        "%y\n"
        "--- rhs at body.args[1]:\n"
        "2f"
    )
    assert_structural_equal(lam(add), lam(add))
    relay.assert_structural_equal(add(Var("a"), Var("b")), add(Var("c"), Var("d")), True)
    with pytest.raises(AssertionError, match="at args\\[0\\]: different free variables"):
        relay.assert_structural_equal(add(Var("a"), Var("b")), add(Var("c"), Var("d")))


def test_assert_message_for_non_ir_sides():
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(Attrs(a=1), Attrs(a=2))
    assert str(info.value) == (
        "not structurally equal at attrs: attributes {'a': 1} vs {'a': 2}\n"
        "--- lhs at attrs:\nAttrs(a=1)\n"
        "--- rhs at attrs:\nAttrs(a=2)"
    )


# -- sharing and depth -----------------------------------------------------------------------------


def test_dags_compare_as_trees_in_linear_time():
    def doubling(n: int) -> Function:
        x = Var("x")
        e: Expr = x
        for _ in range(n):
            e = add(e, e)  # 2^n paths when unfolded
        return Function((x,), e)

    assert_equal(doubling(60), doubling(60))
    assert_unequal(doubling(60), doubling(59))
    x = Var("x")
    shared = add(x, x)
    assert_equal(add(add(x, x), add(x, x)), add(shared, shared))
    assert_unequal(add(add(x, x), add(x, Var("y"))), add(shared, shared))


N = 100_000


def nested_calls(n: int, last: float = 1.0) -> Function:
    """fn (%x) { add(add(...add(%x, last)..., 1f), 1f) }, ``n`` calls deep."""
    x = Var("x", F32)
    e: Expr = add(x, const(float(last)))
    for _ in range(n - 1):
        e = add(e, const(1.0))
    return Function((x,), e)


def let_chain(n: int, last: int = 1) -> Function:
    """let %v0 = 0; let %v1 = %v0 + 1; ...; %v(n-1), the last increment being ``last``."""
    vs = [Var(f"v{i}") for i in range(n)]
    body: Expr = vs[-1]
    for i in reversed(range(n)):
        value = const(0) if i == 0 else add(vs[i - 1], const(last if i == n - 1 else 1))
        body = Let(vs[i], value, body)
    return Function((), body)


def cons_list(n: int, last: int = 0) -> Expr:
    """Cons(n-1, Cons(n-2, ... Cons(last, Nil)))."""
    _, cons, nil = list_data()
    e: Expr = Call(nil, ())
    for i in range(n):
        e = Call(cons, (const(last if i == 0 else i), e))
    return e


DEEP_PROGRAMS = {
    "nested_calls": (nested_calls, "body" + ".args[0]" * (N - 1) + ".args[1].data"),
    "let_chain": (let_chain, "body" + ".body" * (N - 1) + ".value.args[1].data"),
    "cons_list": (cons_list, ".".join(["args[1]"] * (N - 1)) + ".args[0].data"),
}


@pytest.mark.parametrize("name", sorted(DEEP_PROGRAMS))
def test_deep_programs_compare_and_hash_without_recursion(name: str):
    make, deepest = DEEP_PROGRAMS[name]
    a, b, changed = make(N), make(N), make(N, 7)
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    mismatch = first_mismatch(a, changed)
    assert mismatch is not None
    assert (mismatch.path, mismatch.reason) == (deepest, "values differ")
    assert structural_hash(a) != structural_hash(changed)
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(a, changed)
    first_line = str(info.value).splitlines()[0]
    assert first_line.startswith("not structurally equal at ")
    assert "..." in first_line and first_line.endswith(".data: values differ")


# -- random programs -------------------------------------------------------------------------------


class FreshCopy:
    """A structural copy: new nodes, no spans, fresh bound variables (and, with ``rename_free``,
    fresh free variables and incomplete types), the same sharing. ``replace`` maps nodes of the
    original to replacements built from the copy of their children (see :func:`mutated`)."""

    def __init__(
        self,
        root: Expr,
        rename_free: bool = False,
        replace: dict[Expr, Callable[[Expr], Expr]] | None = None,
    ) -> None:
        self.rename_free = rename_free
        self.bound: set[Var] = set(bound_vars(root))
        self.vars: dict[Var, Var] = {}
        self.type_vars: dict[TypeVar, TypeVar] = {}
        self.holes: dict[IncompleteType, IncompleteType] = {}
        self.memo: dict[Expr, Expr] = {}
        self.replace = replace or {}

    def var(self, v: Var) -> Var:
        if v not in self.bound and not self.rename_free:
            return v
        if v not in self.vars:
            self.vars[v] = Var(v.name_hint + "_copy", self.opt_type(v.type_annotation))
        return self.vars[v]

    def type_var(self, v: TypeVar) -> TypeVar:
        if v not in self.type_vars:
            self.type_vars[v] = TypeVar(v.name_hint + "_copy", v.kind)
        return self.type_vars[v]

    def opt_type(self, t: Type | None) -> Type | None:
        return None if t is None else self.type(t)

    def type(self, t: Type) -> Type:
        if isinstance(t, TypeVar):
            return self.type_var(t)
        if isinstance(t, IncompleteType):
            if not self.rename_free:
                return t
            return self.holes.setdefault(t, IncompleteType(t.kind))
        if isinstance(t, TensorType):
            shape = tuple(self.type_var(d) if isinstance(d, TypeVar) else d for d in t.shape)
            dtype = self.type_var(t.dtype) if isinstance(t.dtype, TypeVar) else t.dtype
            return TensorType(shape, dtype)
        if isinstance(t, TupleType):
            return TupleType(tuple(self.type(f) for f in t.fields))
        if isinstance(t, TypeCall):
            return TypeCall(self.type(t.func), tuple(self.type(a) for a in t.args))
        if isinstance(t, RefType):
            return RefType(self.type(t.value))
        if isinstance(t, FuncType):
            saved = {v: self.type_vars.pop(v) for v in t.type_params if v in self.type_vars}
            params = tuple(self.type_var(v) for v in t.type_params)
            copy = FuncType(
                tuple(self.type(a) for a in t.arg_types),
                self.type(t.ret_type),
                params,
                tuple(self.type(c) for c in t.type_constraints),
            )
            for v in t.type_params:
                del self.type_vars[v]
            self.type_vars.update(saved)
            return copy
        if isinstance(t, TypeRelation):
            args = tuple(self.type(a) for a in t.args)
            return TypeRelation(t.name, t.func, args, t.num_inputs, t.attrs)
        return t  # GlobalTypeVar

    def pattern(self, p: Pattern) -> Pattern:
        if isinstance(p, PatternVar):
            return PatternVar(self.var(p.var))
        if isinstance(p, PatternConstructor):
            return PatternConstructor(p.constructor, tuple(self.pattern(q) for q in p.patterns))
        if isinstance(p, PatternTuple):
            return PatternTuple(tuple(self.pattern(q) for q in p.patterns))
        return PatternWildcard()

    def expr(self, e: Expr) -> Expr:
        if e in self.memo:
            return self.memo[e]
        copy = self.build(e)
        if e in self.replace:
            copy = self.replace[e](copy)
        self.memo[e] = copy
        return copy

    def build(self, e: Expr) -> Expr:
        ex = self.expr
        if isinstance(e, Var):
            return self.var(e)
        if isinstance(e, Constant):
            return Constant(e.data.copy())
        if isinstance(e, GlobalVar | Op | Constructor):
            return e
        if isinstance(e, Tuple):
            return Tuple(tuple(ex(f) for f in e.fields))
        if isinstance(e, TupleGetItem):
            return TupleGetItem(ex(e.tuple_value), e.index)
        if isinstance(e, Function):
            type_params = tuple(self.type_var(v) for v in e.type_params)
            params = tuple(self.var(v) for v in e.params)
            ret = self.opt_type(e.ret_type)
            return Function(params, ex(e.body), ret, type_params, Attrs(dict(e.attrs)))
        if isinstance(e, Call):
            type_args = tuple(self.type(t) for t in e.type_args)
            return Call(ex(e.op), tuple(ex(a) for a in e.args), Attrs(dict(e.attrs)), type_args)
        if isinstance(e, Let):
            return Let(self.var(e.var), ex(e.value), ex(e.body))
        if isinstance(e, If):
            return If(ex(e.cond), ex(e.true_branch), ex(e.false_branch))
        if isinstance(e, Match):
            clauses = tuple(Clause(self.pattern(c.lhs), ex(c.rhs)) for c in e.clauses)
            return Match(ex(e.data), clauses, e.complete)
        if isinstance(e, RefCreate):
            return RefCreate(ex(e.value))
        if isinstance(e, RefRead):
            return RefRead(ex(e.ref))
        assert isinstance(e, RefWrite)
        return RefWrite(ex(e.ref), ex(e.value))


def copy_module(mod: Module, replace: dict[Expr, Callable[[Expr], Expr]] | None = None) -> Module:
    """A module with fresh type definitions (fresh parameters and constructors, the same names)
    and fresh copies of its functions, defined in reverse order."""
    out = Module()
    ctors: dict[Constructor, Constructor] = {}
    for gtv, data in reversed(list(mod.type_definitions.items())):
        copier = FreshCopy(Tuple(()))
        params = tuple(copier.type_var(v) for v in data.type_params)
        header = GlobalTypeVar(gtv.name_hint)
        new_ctors = []
        for c in data.constructors:
            new = Constructor(c.name_hint, tuple(copier.type(t) for t in c.inputs), header, c.tag)
            ctors[c] = new
            new_ctors.append(new)
        out.add_type(TypeData(header, params, tuple(new_ctors), data.is_extern))
    rename: dict[Expr, Callable[[Expr], Expr]] = {c: (lambda _, n=n: n) for c, n in ctors.items()}
    for gv, func in reversed(list(mod.functions.items())):
        copy = FreshCopy(func, replace={**rename, **(replace or {})}).expr(func)
        assert isinstance(copy, Function)
        out.add(gv.name_hint, copy)
    return out


def distinct_nodes(root: Expr) -> list[Expr]:
    """Every distinct node, in pre-order."""
    seen: set[Expr] = set()
    out: list[Expr] = []
    stack = [root]
    while stack:
        e = stack.pop()
        if e not in seen:
            seen.add(e)
            out.append(e)
            stack.extend(reversed(children(e)))
    return out


def mutated(node: Expr) -> Callable[[Expr], Expr]:
    """A change to ``node`` (applied to its copy) that makes any program containing it differ."""
    if isinstance(node, Constant) and node.data.size:

        def flip(copy: Expr) -> Expr:
            assert isinstance(copy, Constant)
            data = copy.data.copy()
            data.reshape(-1).view(np.uint8)[0] ^= 1
            return Constant(data)

        return flip
    if isinstance(node, Call) and isinstance(node.op, Op):
        other = SUB if node.op is not SUB else ADD
        return lambda c: Call(other, c.args, c.attrs, c.type_args)
    if isinstance(node, Match):
        return lambda c: Match(c.data, c.clauses, not c.complete)
    if isinstance(node, TupleGetItem):
        return lambda c: TupleGetItem(c.tuple_value, c.index + 1)
    if isinstance(node, Function):
        return lambda c: c.with_attr("Mutated", 1)
    return lambda c: Tuple((c,))


SMALL = ProgramConfig(max_depth=3, max_width=2)


@settings(max_examples=150, deadline=None)
@given(expressions(SMALL))
def test_a_copy_with_fresh_variables_is_equal_with_the_same_hash(expr: Expr):
    copy = FreshCopy(expr).expr(expr)
    assert_equal(expr, copy)
    renamed = FreshCopy(expr, rename_free=True).expr(expr)
    assert_equal(expr, renamed, map_free_vars=True)
    if free_vars(expr):
        assert_unequal(expr, renamed)


@settings(max_examples=150, deadline=None)
@given(expressions(ProgramConfig(max_depth=3, max_width=2, incomplete_types=True)), st.data())
def test_a_single_mutation_makes_programs_unequal(expr: Expr, data: st.DataObject):
    nodes = [n for n in distinct_nodes(expr) if not isinstance(n, Var)] or [expr]
    target = data.draw(st.sampled_from(nodes))
    changed = FreshCopy(expr, replace={target: mutated(target)}).expr(expr)
    assert_unequal(expr, changed)
    assert structural_hash(expr) != structural_hash(changed)
    for map_free_vars in (False, True):
        assert not structural_equal(expr, changed, map_free_vars)


@settings(max_examples=60, deadline=None)
@given(functions(SMALL))
def test_random_functions_with_type_parameters(func: Function):
    assert_equal(func, FreshCopy(func).expr(func))


@settings(max_examples=40, deadline=None)
@given(modules(SMALL), st.data())
def test_random_modules(mod: Module, data: st.DataObject):
    assert_equal(mod, copy_module(mod))
    func = data.draw(st.sampled_from(list(mod.functions.values())))
    nodes = [n for n in distinct_nodes(func) if not isinstance(n, Var | Constructor)]
    target = data.draw(st.sampled_from(nodes))
    changed = copy_module(mod, {target: mutated(target)})
    assert_unequal(mod, changed)
    assert structural_hash(mod) != structural_hash(changed)


def test_hash_distinguishes_common_differences():
    assert structural_hash(const(1.0)) != structural_hash(const(2.0))
    assert structural_hash(lam(add)) != structural_hash(lam(lambda x, y: Tuple((x, y))))
    assert structural_hash(TupleType((F32,))) != structural_hash(TupleType((F32, F32)))
    assert structural_hash(Tuple(())) != structural_hash(TupleType(()))
    assert structural_hash(Var("x")) != structural_hash(Var("x"))
    assert structural_hash(Var("x"), True) == structural_hash(Var("y"), True)
