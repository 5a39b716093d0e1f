"""ExprVisitor / ExprMutator (relay/ir/functor.py) and the analyses of relay/ir/analysis.py."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.ir import (
    Attrs,
    Call,
    Clause,
    Constant,
    Expr,
    ExprFunctor,
    ExprMutator,
    ExprVisitor,
    Function,
    GlobalVar,
    If,
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
    RefWrite,
    TensorType,
    Tuple,
    TupleGetItem,
    Type,
    Var,
    all_vars,
    bound_vars,
    const,
    flatten_let,
    free_vars,
    global_vars,
)
from relay.ir.expr import children, pattern_vars
from tests.strategies import ProgramConfig, expressions, list_type, modules, option_type

ADD = Op.get("add")
SUB = Op.get("subtract")
MUL = Op.get("multiply")
LIST = list_type()
CONS, NIL = LIST.constructors
OPTION = option_type()
SOME, NONE = OPTION.constructors

DEEP = 100_000


def add(a: Expr, b: Expr) -> Call:
    return Call(ADD, (a, b))


def walk(expr: Expr) -> Iterator[Expr]:
    """Every distinct node of ``expr`` (iteratively)."""
    seen: set[Expr] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        yield node
        stack.extend(children(node))


def contains(expr: Expr, target: Expr) -> bool:
    return any(n is target for n in walk(expr))


class LeafRecorder(ExprVisitor):
    """Records the leaves (variables, constants, operators, globals) in visiting order."""

    def __init__(self) -> None:
        super().__init__()
        self.leaves: list[Expr] = []

    def visit_var(self, var: Var) -> None:
        self.leaves.append(var)

    def visit_constant(self, c: Constant) -> None:
        self.leaves.append(c)

    def visit_op(self, op: Op) -> None:
        self.leaves.append(op)

    def visit_global_var(self, gv: GlobalVar) -> None:
        self.leaves.append(gv)


# -- visiting order and memoization -------------------------------------------------------------


def test_visitor_visits_children_in_evaluation_order_and_nodes_after_children() -> None:
    a, b, c, x, f = Var("a"), Var("b"), Var("c"), Var("x"), Var("f")
    one, two = const(1.0), const(2.0)
    gv = GlobalVar("g")
    value = add(a, one)
    then = Tuple((x, TupleGetItem(Tuple((b,)), 0)))
    other = Call(gv, (Call(MUL, (x, b)),))
    cond = If(c, then, other)
    fn = Function((f,), Call(f, (cond, two)))
    prog = Let(x, value, fn)

    v = LeafRecorder()
    v.visit(prog)
    assert v.leaves == [x, ADD, a, one, f, c, b, gv, MUL, two]
    # The memo is filled in post-order: every node after all of its children.
    order = list(v.memo)
    assert set(order) == set(walk(prog))
    for node in order:
        for child in children(node):
            assert order.index(child) < order.index(node)
    assert order[-1] is prog


def test_visitor_visits_shared_nodes_once() -> None:
    x = Var("x")
    c = const(3.0)
    shared = add(x, c)
    prog = Tuple((shared, Call(MUL, (shared, shared)), Function((), shared)))

    class CountCalls(ExprVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[Call] = []
            self.constants = 0

        def visit_call(self, call: Call) -> None:
            self.calls.append(call)
            super().visit_call(call)

        def visit_constant(self, c: Constant) -> None:
            self.constants += 1

    v = CountCalls()
    v.visit(prog)
    assert v.calls.count(shared) == 1
    assert len(v.calls) == 2
    assert v.constants == 1
    # Visiting again is answered from the memo.
    v.visit(prog)
    assert len(v.calls) == 2


def test_visitor_visits_match_scrutinee_patterns_and_clause_bodies() -> None:
    xs, h, t, y = Var("xs"), Var("h"), Var("t"), Var("y")
    c = const(0.0)
    m = Match(
        xs,
        (
            Clause(PatternConstructor(CONS, (PatternVar(h), PatternVar(t))), add(h, c)),
            Clause(PatternTuple((PatternWildcard(), PatternVar(y))), y),
            Clause(PatternConstructor(NIL), c),
        ),
    )

    class Patterns(LeafRecorder):
        def __init__(self) -> None:
            super().__init__()
            self.patterns: list[Pattern] = []

        def visit_pattern(self, p: Pattern) -> None:
            self.patterns.append(p)
            super().visit_pattern(p)

    v = Patterns()
    v.visit(m)
    lhs = [cl.lhs for cl in m.clauses]
    assert isinstance(lhs[0], PatternConstructor) and isinstance(lhs[1], PatternTuple)
    assert v.patterns == [
        lhs[0],
        *lhs[0].patterns,
        lhs[1],
        *lhs[1].patterns,
        lhs[2],
    ]
    assert set(v.leaves) == {xs, h, t, y, c, ADD}
    assert v.leaves[0] is xs


def test_functor_without_handler_names_the_class_and_kind() -> None:
    class OnlyVars(ExprFunctor[int]):
        def visit_var(self, var: Var) -> int:
            return 1

    f = OnlyVars()
    assert f.visit(Var("x")) == 1
    with pytest.raises(NotImplementedError, match="OnlyVars does not handle Tuple expressions"):
        f.visit(Tuple(()))


def test_functor_rejects_non_expressions() -> None:
    with pytest.raises(TypeError, match="not a relay expression: int"):
        ExprVisitor().visit(3)  # type: ignore[arg-type]


def test_expr_functor_computes_values_bottom_up() -> None:
    class Depth(ExprFunctor[int]):
        def visit_var(self, var: Var) -> int:
            return 0

        def visit_constant(self, c: Constant) -> int:
            return 0

        def visit_op(self, op: Op) -> int:
            return 0

        def visit_call(self, call: Call) -> int:
            return 1 + max(self.visit(a) for a in call.args)

    x = Var("x")
    assert Depth().visit(add(add(x, const(1)), add(add(x, x), x))) == 3


# -- mutators -----------------------------------------------------------------------------------


@settings(deadline=None, max_examples=60)
@given(expressions())
def test_identity_mutator_returns_the_same_object(expr: Expr) -> None:
    m = ExprMutator()
    assert m.visit(expr) is expr
    assert all(m.memo[n] is n for n in walk(expr))


@settings(deadline=None, max_examples=20)
@given(modules())
def test_identity_mutator_keeps_every_global(mod: Module) -> None:
    for func in mod.functions.values():
        assert ExprMutator().visit(func) is func


class ReplaceNode(ExprMutator):
    def __init__(self, target: Expr, replacement: Expr) -> None:
        super().__init__()
        self.memo[target] = replacement


@settings(deadline=None, max_examples=80)
@given(expressions(ProgramConfig(max_depth=5)), st.data())
def test_mutator_rebuilds_exactly_the_paths_to_a_change(expr: Expr, data: st.DataObject) -> None:
    # Replace a leaf that is not a binder (any occurrence of it, as the leaf may be shared).
    candidates = [
        n for n in walk(expr) if isinstance(n, Constant | Op | GlobalVar) and n is not expr
    ]
    if not candidates:
        return
    target = data.draw(st.sampled_from(candidates))
    replacement = const(np.asarray([1.0, 2.0], dtype="float32"))
    m = ReplaceNode(target, replacement)
    new = m.visit(expr)
    for node in walk(expr):
        if node is target:
            assert m.memo[node] is replacement
        elif contains(node, target):
            rebuilt = m.memo[node]
            assert rebuilt is not node
            assert type(rebuilt) is type(node)
            assert list(children(rebuilt)) == [m.memo[c] for c in children(node)]
            assert rebuilt.span is node.span
        else:
            assert m.memo[node] is node
    assert contains(new, replacement)
    assert not contains(new, target)


def test_mutator_rebuilds_each_node_kind_keeping_fields() -> None:
    x, r, h = Var("x"), Var("r"), Var("h", TensorType((), "float32"))
    old, new = const(1.0), const(2.0)

    def check(before: Expr, expected_fields: dict[str, object]) -> None:
        after = ReplaceNode(old, new).visit(before)
        assert after is not before and type(after) is type(before)
        for name, value in expected_fields.items():
            got = getattr(after, name)
            assert got == value, name

    check(Tuple((x, old)), {"fields": (x, new)})
    check(TupleGetItem(Tuple((old,)), 0), {"index": 0})
    fn = Function((x,), old, TensorType((), "float32"), (), Attrs(A=1))
    check(fn, {"params": (x,), "body": new, "ret_type": fn.ret_type, "attrs": fn.attrs})
    call = Call(ADD, (x, old), type_args=(TensorType((), "float32"),))
    check(call, {"op": ADD, "args": (x, new), "type_args": call.type_args})
    check(Let(x, old, x), {"var": x, "value": new, "body": x})
    check(If(old, x, x), {"cond": new, "true_branch": x, "false_branch": x})
    check(RefCreate(old), {"value": new})
    check(RefRead(old), {"ref": new})
    check(RefWrite(r, old), {"ref": r, "value": new})
    clause_same = Clause(PatternWildcard(), x)
    clause = Clause(PatternVar(h), old)
    m = Match(x, (clause_same, clause), complete=False)
    after = ReplaceNode(old, new).visit(m)
    assert isinstance(after, Match)
    assert after.complete is False and after.data is x
    assert after.clauses[0] is clause_same
    assert after.clauses[1].lhs is clause.lhs and after.clauses[1].rhs is new


def test_overriding_visit_var_substitutes() -> None:
    x, y = Var("x"), Var("y")
    five = const(5.0)

    class Subst(ExprMutator):
        def visit_var(self, var: Var) -> Expr:
            return five if var is x else var

    f = Function((y,), add(y, x))
    prog = Tuple((x, f, TupleGetItem(Tuple((x,)), 0)))
    out = Subst().visit(prog)
    assert isinstance(out, Tuple)
    assert out.fields[0] is five
    new_f = out.fields[1]
    assert isinstance(new_f, Function) and new_f.params == (y,)
    assert isinstance(new_f.body, Call) and new_f.body.args == (y, five)
    assert free_vars(out) == []
    assert x not in all_vars(out)


def test_overriding_visit_call_rewrites_every_call() -> None:
    x = Var("x")

    class AddToSub(ExprMutator):
        def visit_call(self, call: Call) -> Expr:
            new = super().visit_call(call)
            assert isinstance(new, Call)
            return Call(SUB, new.args, span=new.span) if new.op is ADD else new

    shared = add(x, x)
    prog = Tuple((add(shared, const(1.0)), Call(MUL, (shared, x))))
    out = AddToSub().visit(prog)
    assert isinstance(out, Tuple)
    first, second = out.fields
    assert isinstance(first, Call) and first.op is SUB
    inner = first.args[0]
    assert isinstance(inner, Call) and inner.op is SUB and inner.args == (x, x)
    assert isinstance(second, Call) and second.op is MUL
    assert second.args[0] is inner  # the shared node is rewritten once and stays shared


def test_overriding_visit_pattern_and_visit_match() -> None:
    xs, h, t = Var("xs"), Var("h"), Var("t")
    body = add(h, h)
    m = Match(
        xs,
        (
            Clause(PatternConstructor(CONS, (PatternVar(h), PatternVar(t))), body),
            Clause(PatternWildcard(), xs),
            Clause(PatternConstructor(NIL), xs),
        ),
    )

    class UnusedToWildcard(ExprMutator):
        """Replace pattern variables a clause does not use by ``_``."""

        def __init__(self) -> None:
            super().__init__()
            self.used: set[Var] = set()

        def visit_match(self, match: Match) -> Expr:
            self.used = set().union(*(free_vars(c.rhs) for c in match.clauses))
            return super().visit_match(match)

        def visit_pattern(self, p: Pattern) -> Pattern:
            if isinstance(p, PatternVar) and p.var not in self.used:
                return PatternWildcard()
            return super().visit_pattern(p)

    out = UnusedToWildcard().visit(m)
    assert isinstance(out, Match) and out is not m
    first = out.clauses[0].lhs
    assert isinstance(first, PatternConstructor) and first.constructor is CONS
    assert isinstance(first.patterns[0], PatternVar) and first.patterns[0].var is h
    assert isinstance(first.patterns[1], PatternWildcard)
    assert out.clauses[0].rhs is body
    assert out.clauses[1] is m.clauses[1] and out.clauses[2] is m.clauses[2]

    class DropAfterWildcard(ExprMutator):
        """Drop the clauses after a catch-all one; the match becomes complete."""

        def visit_match(self, match: Match) -> Expr:
            new = super().visit_match(match)
            assert isinstance(new, Match)
            for i, clause in enumerate(new.clauses):
                if isinstance(clause.lhs, PatternWildcard | PatternVar):
                    return Match(new.data, new.clauses[: i + 1], True, span=new.span)
            return new

    partial = Match(m.data, m.clauses, complete=False)
    out2 = DropAfterWildcard().visit(partial)
    assert isinstance(out2, Match)
    assert out2.clauses == m.clauses[:2] and out2.complete


def test_mutator_renaming_pattern_variables_renames_their_uses() -> None:
    xs, h = Var("xs"), Var("h")
    m = Match(xs, (Clause(PatternConstructor(SOME, (PatternVar(h),)), add(h, h)),))

    class Rename(ExprMutator):
        def visit_var(self, var: Var) -> Expr:
            return var if var is xs else Var(var.name_hint + "'", var.type_annotation)

    out = Rename().visit(m)
    assert isinstance(out, Match)
    pat = out.clauses[0].lhs
    assert isinstance(pat, PatternConstructor)
    new_h = pat.patterns[0]
    assert isinstance(new_h, PatternVar) and new_h.var is not h and new_h.var.name_hint == "h'"
    rhs = out.clauses[0].rhs
    assert isinstance(rhs, Call) and rhs.args == (new_h.var, new_h.var)


def test_mutator_rejects_non_variable_binders() -> None:
    x = Var("x")

    class VarToConst(ExprMutator):
        def visit_var(self, var: Var) -> Expr:
            return const(0.0)

    with pytest.raises(TypeError, match="replaced a let binder with a non-variable"):
        VarToConst().visit(Let(x, const(1.0), x))
    with pytest.raises(TypeError, match="replaced a function parameter with a non-variable"):
        VarToConst().visit(Function((x,), x))
    with pytest.raises(TypeError, match="replaced a pattern variable with a non-variable"):
        VarToConst().visit(Match(const(1.0), (Clause(PatternVar(x), const(2.0)),)))


def test_mutator_visit_type_rewrites_return_types_and_type_args() -> None:
    f32, f16 = TensorType((3,), "float32"), TensorType((3,), "float16")

    class Narrow(ExprMutator):
        def visit_type(self, ty: Type) -> Type:
            return f16 if ty == f32 else ty

    fn = Function((), Call(ADD, (const(1.0), const(2.0)), type_args=(f32,)), f32)
    out = Narrow().visit(fn)
    assert isinstance(out, Function) and out.ret_type == f16
    assert isinstance(out.body, Call) and out.body.type_args == (f16,)
    same = Function((), const(1.0), TensorType((), "int8"))
    assert Narrow().visit(same) is same


# -- deep programs ------------------------------------------------------------------------------


def deep_let_chain(n: int) -> tuple[Let, list[Var]]:
    """``let %x0 = 0f; let %x1 = add(%x0, 1f); ...; %x{n-1}`` built without recursion."""
    xs = [Var(f"x{i}") for i in range(n)]
    one = const(1.0)
    body: Expr = xs[-1]
    for i in range(n - 1, 0, -1):
        body = Let(xs[i], add(xs[i - 1], one), body)
    chain = Let(xs[0], const(0.0), body)
    return chain, xs


def deep_adds(n: int) -> tuple[Expr, Var]:
    """``add(add(...add(%x, 1f)..., 1f), 1f)`` nested ``n`` deep."""
    x = Var("x")
    e: Expr = x
    for _ in range(n):
        e = add(e, const(1.0))
    return e, x


class CountNodes(ExprVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.vars = 0

    def visit_var(self, var: Var) -> None:
        self.vars += 1


class AddToSubOp(ExprMutator):
    """Rewrites ``add`` into ``subtract`` through the operator leaf (calls stay default)."""

    def visit_op(self, op: Op) -> Expr:
        return SUB if op is ADD else op


@pytest.fixture(scope="module")
def let_chain() -> tuple[Let, list[Var]]:
    return deep_let_chain(DEEP)


@pytest.fixture(scope="module")
def nested_adds() -> tuple[Expr, Var]:
    return deep_adds(DEEP)


def test_deep_let_chain_visitor_and_mutators(let_chain: tuple[Let, list[Var]]) -> None:
    chain, xs = let_chain
    v = CountNodes()
    v.visit(chain)
    assert v.vars == DEEP
    # n binders, n lets, the first value 0f, n - 1 calls, the shared 1f and the operator
    assert len(v.memo) == 3 * DEEP + 2

    assert ExprMutator().visit(chain) is chain

    out = AddToSubOp().visit(chain)
    lets, body = flatten_let(out)
    assert len(lets) == DEEP and body is xs[-1]
    assert [let.var for let in lets] == xs
    assert all(isinstance(let.value, Call) and let.value.op is SUB for let in lets[1:])
    assert lets[0].value is chain.value


def test_deep_nested_calls_visitor_and_mutators(nested_adds: tuple[Expr, Var]) -> None:
    expr, x = nested_adds
    v = CountNodes()
    v.visit(expr)
    assert v.vars == 1
    assert len(v.memo) == DEEP + 1 + DEEP + 1  # calls, x, constants, op

    assert ExprMutator().visit(expr) is expr

    y = Var("y")

    class Rename(ExprMutator):
        def visit_var(self, var: Var) -> Expr:
            return y if var is x else var

    out = Rename().visit(expr)
    depth = 0
    node = out
    while isinstance(node, Call):
        assert node.op is ADD
        node = node.args[0]
        depth += 1
    assert depth == DEEP and node is y

    out2 = AddToSubOp().visit(expr)
    assert isinstance(out2, Call) and out2.op is SUB
    assert free_vars(out2) == [x]


class FoldConstantLets(ExprMutator):
    """Walks let chains with :func:`flatten_let`: bindings of constants are substituted into
    the rest of the chain and dropped."""

    def visit_let(self, let: Let) -> Expr:
        chain, body = flatten_let(let)
        kept: list[tuple[Var, Expr]] = []
        for binding in chain:
            value = self.visit(binding.value)
            if isinstance(value, Constant):
                self.memo[binding.var] = value
            else:
                kept.append((binding.var, value))
        result = self.visit(body)
        for var, value in reversed(kept):
            result = Let(var, value, result)
        return result


def test_overriding_visit_let_with_flatten_let_handles_deep_chains() -> None:
    xs = [Var(f"x{i}") for i in range(DEEP)]
    one = const(1.0)
    body: Expr = Tuple((xs[-1], xs[0]))
    for i in range(DEEP - 1, -1, -1):
        value: Expr = one if i % 2 == 0 else add(xs[i - 1], xs[i - 1])
        body = Let(xs[i], value, body)
    out = FoldConstantLets().visit(body)
    lets, result = flatten_let(out)
    assert len(lets) == DEEP // 2
    assert [let.var for let in lets] == xs[1::2]
    for let in lets:
        assert isinstance(let.value, Call) and let.value.args == (one, one)
    assert isinstance(result, Tuple) and result.fields == (xs[-1], one)


def test_flatten_let() -> None:
    x, y = Var("x"), Var("y")
    inner = Let(y, x, y)
    outer = Let(x, const(1), inner)
    assert flatten_let(outer) == ([outer, inner], y)
    assert flatten_let(y) == ([], y)


# -- analyses -----------------------------------------------------------------------------------


def test_free_bound_and_global_vars() -> None:
    x, y, z, h, t, p = (Var(n) for n in ("x", "y", "z", "h", "t", "p"))
    f, g = GlobalVar("f"), GlobalVar("g")
    prog = Let(
        x,
        Call(f, (y,)),
        Tuple(
            (
                Function((p,), Call(g, (p, x, z))),
                Match(
                    y,
                    (
                        Clause(PatternConstructor(CONS, (PatternVar(h), PatternVar(t))), h),
                        Clause(PatternWildcard(), Call(f, (z,))),
                    ),
                ),
            )
        ),
    )
    assert free_vars(prog) == [y, z]
    assert bound_vars(prog) == [x, p, h, t]
    assert global_vars(prog) == [f, g]
    assert all_vars(prog) == [x, p, h, t, y, z]
    assert free_vars(Function((x,), x)) == []
    assert free_vars(x) == [x]
    assert bound_vars(x) == []


def test_pattern_vars_in_order() -> None:
    a, b, c = Var("a"), Var("b"), Var("c")
    p = PatternTuple(
        (PatternVar(a), PatternConstructor(CONS, (PatternWildcard(), PatternVar(b))), PatternVar(c))
    )
    assert pattern_vars(p) == [a, b, c]


def test_analyses_handle_deep_programs(
    let_chain: tuple[Let, list[Var]], nested_adds: tuple[Expr, Var]
) -> None:
    chain, xs = let_chain
    assert free_vars(chain) == []
    assert bound_vars(chain) == xs
    expr, x = nested_adds
    assert free_vars(expr) == [x]
    assert global_vars(expr) == []


@settings(deadline=None, max_examples=60)
@given(expressions())
def test_free_vars_of_generated_expressions_are_the_declared_ones(expr: Expr) -> None:
    bound = set(bound_vars(expr))
    used = [n for n in walk(expr) if isinstance(n, Var)]
    free = free_vars(expr)
    assert len(set(free)) == len(free)
    assert set(free) == {v for v in used if v not in bound}
    assert set(all_vars(expr)) == bound | set(free)
    # A function of the free variables closes the expression.
    assert free_vars(Function(tuple(free), expr)) == []


def test_previsit_lets_a_post_order_override_walk_deep_nests():
    from relay.ir import Call, Op, Var, const
    from relay.ir.functor import ExprMutator

    e = Var("x")
    for _ in range(100_000):
        e = Call(Op.get("add"), (e, const(1.0)))

    class AddToSub(ExprMutator):
        previsit = frozenset({Call})

        def visit_call(self, call):
            new = super().visit_call(call)
            return Call(Op.get("subtract"), new.args) if new.op is Op.get("add") else new

    out = AddToSub().visit(e)
    depth = 0
    while isinstance(out, Call):
        assert out.op is Op.get("subtract")
        out = out.args[0]
        depth += 1
    assert depth == 100_000


def test_match_pattern_variables_are_visited_before_their_clause_body():
    from relay.ir import Clause, Match, PatternVar, Var, const
    from relay.ir.functor import ExprVisitor

    d, h = Var("d"), Var("h")
    one = const(1.0)
    m = Match(d, (Clause(PatternVar(h), one),))
    order = []

    class Order(ExprVisitor):
        def visit_var(self, var):
            order.append(var)

        def visit_constant(self, c):
            order.append(c)

    Order().visit(m)
    assert order == [d, h, one]
