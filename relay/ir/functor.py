"""Functors over expressions: ExprFunctor, ExprVisitor and ExprMutator.

``visit`` dispatches on the node's class through a per-class table to
``visit_<kind>`` and memoizes the result on node identity, so a shared
sub-expression (a DAG written in graph form) is visited once.

Deep programs are walked without Python recursion. Before dispatching a
node whose ``visit_<kind>`` is the default one (it only visits children),
the driver visits the node's children bottom-up with an explicit stack; when
the default method then calls ``self.visit(child)`` it finds the result in
the memo. Only node kinds a subclass overrides are dispatched recursively,
inside the override. A pass that overrides ``visit_let`` and still needs
100,000-binding chains walks them with :func:`flatten_let` in a loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, Generic, TypeVar

from relay.ir.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
    pattern_vars,
)
from relay.ir.types import Type

R = TypeVar("R")

_METHODS: dict[type, str] = {
    Var: "visit_var",
    GlobalVar: "visit_global_var",
    Constant: "visit_constant",
    Tuple: "visit_tuple",
    TupleGetItem: "visit_tuple_getitem",
    Function: "visit_function",
    Op: "visit_op",
    Constructor: "visit_constructor",
    Call: "visit_call",
    Let: "visit_let",
    If: "visit_if",
    Match: "visit_match",
    RefCreate: "visit_ref_create",
    RefRead: "visit_ref_read",
    RefWrite: "visit_ref_write",
}


def flatten_let(expr: Expr) -> tuple[list[Let], Expr]:
    """The chain of ``let`` nodes starting at ``expr`` and the body after the last one."""
    chain: list[Let] = []
    while isinstance(expr, Let):
        chain.append(expr)
        expr = expr.body
    return chain, expr


class ExprFunctor(Generic[R]):
    """Memoized dispatch from expression classes to ``visit_<kind>`` methods.

    Subclasses implement the ``visit_*`` methods they need; an unhandled kind
    raises ``NotImplementedError`` naming the class and the node kind.
    """

    _defaults: ClassVar[frozenset[str]] = frozenset()
    previsit: ClassVar[frozenset[type]] = frozenset()
    """Node classes whose children are visited (bottom-up, without recursion) before the
    node's own ``visit_<kind>`` even when a subclass overrides it. Set it for overrides
    that visit all of the node's children anyway, e.g. a post-order ``visit_call``, so
    deep nests of that kind need no recursion."""
    _expandable_cache: ClassVar[dict[type, frozenset[type]]] = {}

    def __init__(self) -> None:
        self.memo: dict[Expr, R] = {}

    # The driver ------------------------------------------------------------------------------

    @classmethod
    def _expandable(cls) -> frozenset[type]:
        """The node classes whose visit method is an inherited default (children first)."""
        cached = ExprFunctor._expandable_cache.get(cls)
        if cached is None:
            out = set()
            for node_cls, name in _METHODS.items():
                owner = next(k for k in cls.__mro__ if name in k.__dict__)
                if name in owner.__dict__.get("_defaults", ()):
                    out.add(node_cls)
            cached = frozenset(out) | cls.previsit
            ExprFunctor._expandable_cache[cls] = cached
        return cached

    def visit(self, expr: Expr) -> R:
        """The memoized result of visiting ``expr``."""
        memo = self.memo
        if expr in memo:
            return memo[expr]
        expandable = self._expandable()
        if type(expr) in expandable:
            stack: list[Expr] = [expr]
            while stack:
                node = stack[-1]
                if node in memo:
                    stack.pop()
                    continue
                if type(node) in expandable:
                    pending = [c for c in self.visit_children_of(node) if c not in memo]
                    if pending:
                        stack.extend(reversed(pending))
                        continue
                stack.pop()
                memo[node] = self._dispatch(node)
            return memo[expr]
        result = self._dispatch(expr)
        memo[expr] = result
        return result

    def visit_children_of(self, expr: Expr) -> Sequence[Expr]:
        """The children the default ``visit_<kind>`` of ``expr`` visits, in order.

        A match's pattern variables come before their clause's body, as binders do
        elsewhere."""
        if isinstance(expr, Match):
            out: list[Expr] = [expr.data]
            for clause in expr.clauses:
                out.extend(pattern_vars(clause.lhs))
                out.append(clause.rhs)
            return out
        return children(expr)

    def _dispatch(self, expr: Expr) -> R:
        try:
            name = _METHODS[type(expr)]
        except KeyError:
            raise TypeError(f"not a relay expression: {type(expr).__name__}") from None
        method: Callable[[Expr], R] = getattr(self, name)
        return method(expr)

    def _unhandled(self, expr: Expr) -> R:
        raise NotImplementedError(
            f"{type(self).__name__} does not handle {type(expr).__name__} expressions"
        )

    def visit_var(self, var: Var) -> R:
        """Visit a local variable."""
        return self._unhandled(var)

    def visit_global_var(self, gv: GlobalVar) -> R:
        """Visit a global variable."""
        return self._unhandled(gv)

    def visit_constant(self, c: Constant) -> R:
        """Visit a constant."""
        return self._unhandled(c)

    def visit_tuple(self, t: Tuple) -> R:
        """Visit a tuple."""
        return self._unhandled(t)

    def visit_tuple_getitem(self, t: TupleGetItem) -> R:
        """Visit a projection."""
        return self._unhandled(t)

    def visit_function(self, f: Function) -> R:
        """Visit a function."""
        return self._unhandled(f)

    def visit_op(self, op: Op) -> R:
        """Visit an operator."""
        return self._unhandled(op)

    def visit_constructor(self, c: Constructor) -> R:
        """Visit a constructor."""
        return self._unhandled(c)

    def visit_call(self, call: Call) -> R:
        """Visit a call."""
        return self._unhandled(call)

    def visit_let(self, let: Let) -> R:
        """Visit a let binding."""
        return self._unhandled(let)

    def visit_if(self, i: If) -> R:
        """Visit a conditional."""
        return self._unhandled(i)

    def visit_match(self, m: Match) -> R:
        """Visit a match."""
        return self._unhandled(m)

    def visit_ref_create(self, r: RefCreate) -> R:
        """Visit ``ref(v)``."""
        return self._unhandled(r)

    def visit_ref_read(self, r: RefRead) -> R:
        """Visit ``ref_read(r)``."""
        return self._unhandled(r)

    def visit_ref_write(self, r: RefWrite) -> R:
        """Visit ``ref_write(r, v)``."""
        return self._unhandled(r)


_ALL_DEFAULTS = frozenset(_METHODS.values())


class ExprVisitor(ExprFunctor[None]):
    """Visits every sub-expression once (shared nodes once), in evaluation order.

    Override ``visit_<kind>`` methods; call the base method (or
    ``self.visit`` on the children) to keep walking below a node.
    """

    _defaults = _ALL_DEFAULTS

    def visit_var(self, var: Var) -> None:
        """Variables have no children."""

    def visit_global_var(self, gv: GlobalVar) -> None:
        """Globals have no children."""

    def visit_constant(self, c: Constant) -> None:
        """Constants have no children."""

    def visit_op(self, op: Op) -> None:
        """Operators have no children."""

    def visit_constructor(self, c: Constructor) -> None:
        """Constructors have no children."""

    def _visit_all(self, expr: Expr) -> None:
        for child in children(expr):
            self.visit(child)

    def visit_tuple(self, t: Tuple) -> None:
        """Visit the fields."""
        self._visit_all(t)

    def visit_tuple_getitem(self, t: TupleGetItem) -> None:
        """Visit the tuple."""
        self._visit_all(t)

    def visit_function(self, f: Function) -> None:
        """Visit the parameters and the body."""
        self._visit_all(f)

    def visit_call(self, call: Call) -> None:
        """Visit the callee and the arguments."""
        self._visit_all(call)

    def visit_let(self, let: Let) -> None:
        """Visit the binder, the value and the body."""
        self._visit_all(let)

    def visit_if(self, i: If) -> None:
        """Visit the condition and both branches."""
        self._visit_all(i)

    def visit_match(self, m: Match) -> None:
        """Visit the scrutinee, each clause's pattern and right-hand side."""
        self.visit(m.data)
        for clause in m.clauses:
            self.visit_pattern(clause.lhs)
            self.visit(clause.rhs)

    def visit_pattern(self, p: Pattern) -> None:
        """Visit the variables a pattern binds."""
        if isinstance(p, PatternVar):
            self.visit(p.var)
        elif isinstance(p, PatternConstructor | PatternTuple):
            for sub in p.patterns:
                self.visit_pattern(sub)

    def visit_ref_create(self, r: RefCreate) -> None:
        """Visit the initial value."""
        self._visit_all(r)

    def visit_ref_read(self, r: RefRead) -> None:
        """Visit the reference."""
        self._visit_all(r)

    def visit_ref_write(self, r: RefWrite) -> None:
        """Visit the reference and the value."""
        self._visit_all(r)


class ExprMutator(ExprFunctor[Expr]):
    """Rebuilds an expression bottom-up; a node none of whose children changed is returned as is.

    Override ``visit_<kind>`` to rewrite a kind of node; ``visit_type`` to
    rewrite type annotations and ``visit_pattern`` to rewrite patterns.
    """

    _defaults = _ALL_DEFAULTS

    def visit_type(self, ty: Type) -> Type:
        """Rewrite a type annotation (identity by default)."""
        return ty

    def _visit_opt_type(self, ty: Type | None) -> Type | None:
        return None if ty is None else self.visit_type(ty)

    def visit_var(self, var: Var) -> Expr:
        """Variables are kept (their identity is their meaning)."""
        return var

    def visit_global_var(self, gv: GlobalVar) -> Expr:
        """Globals are kept."""
        return gv

    def visit_constant(self, c: Constant) -> Expr:
        """Constants are kept."""
        return c

    def visit_op(self, op: Op) -> Expr:
        """Operators are kept."""
        return op

    def visit_constructor(self, c: Constructor) -> Expr:
        """Constructors are kept."""
        return c

    def _visit_seq(self, exprs: Sequence[Expr]) -> tuple[tuple[Expr, ...], bool]:
        new = tuple(self.visit(e) for e in exprs)
        return new, any(a is not b for a, b in zip(new, exprs, strict=True))

    def visit_tuple(self, t: Tuple) -> Expr:
        """Rebuild a tuple from its visited fields."""
        fields, changed = self._visit_seq(t.fields)
        return Tuple(fields, span=t.span) if changed else t

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        """Rebuild a projection."""
        tup = self.visit(t.tuple_value)
        return t if tup is t.tuple_value else TupleGetItem(tup, t.index, span=t.span)

    def visit_function(self, f: Function) -> Expr:
        """Rebuild a function from its visited parameters, body and types."""
        params = tuple(self.visit(p) for p in f.params)
        body = self.visit(f.body)
        ret_type = self._visit_opt_type(f.ret_type)
        same = (
            body is f.body
            and ret_type is f.ret_type
            and all(a is b for a, b in zip(params, f.params, strict=True))
        )
        if same:
            return f
        if not all(isinstance(p, Var) for p in params):
            raise TypeError("a mutator replaced a function parameter with a non-variable")
        return Function(
            tuple(p for p in params if isinstance(p, Var)),
            body,
            ret_type,
            f.type_params,
            f.attrs,
            span=f.span,
        )

    def visit_call(self, call: Call) -> Expr:
        """Rebuild a call from its visited callee and arguments."""
        op = self.visit(call.op)
        args, changed = self._visit_seq(call.args)
        type_args = tuple(self.visit_type(t) for t in call.type_args)
        if (
            op is call.op
            and not changed
            and all(a is b for a, b in zip(type_args, call.type_args, strict=True))
        ):
            return call
        return Call(op, args, call.attrs, type_args, span=call.span)

    def visit_let(self, let: Let) -> Expr:
        """Rebuild a let from its visited binder, value and body."""
        var = self.visit(let.var)
        value = self.visit(let.value)
        body = self.visit(let.body)
        if var is let.var and value is let.value and body is let.body:
            return let
        if not isinstance(var, Var):
            raise TypeError("a mutator replaced a let binder with a non-variable")
        return Let(var, value, body, span=let.span)

    def visit_if(self, i: If) -> Expr:
        """Rebuild a conditional."""
        c, t, f = self.visit(i.cond), self.visit(i.true_branch), self.visit(i.false_branch)
        if c is i.cond and t is i.true_branch and f is i.false_branch:
            return i
        return If(c, t, f, span=i.span)

    def visit_pattern(self, p: Pattern) -> Pattern:
        """Rewrite a pattern (its variables through ``visit``)."""
        if isinstance(p, PatternVar):
            v = self.visit(p.var)
            if v is p.var:
                return p
            if not isinstance(v, Var):
                raise TypeError("a mutator replaced a pattern variable with a non-variable")
            return PatternVar(v, span=p.span)
        if isinstance(p, PatternConstructor | PatternTuple):
            subs = tuple(self.visit_pattern(s) for s in p.patterns)
            if all(a is b for a, b in zip(subs, p.patterns, strict=True)):
                return p
            if isinstance(p, PatternConstructor):
                return PatternConstructor(p.constructor, subs, span=p.span)
            return PatternTuple(subs, span=p.span)
        assert isinstance(p, PatternWildcard)
        return p

    def visit_match(self, m: Match) -> Expr:
        """Rebuild a match from its visited scrutinee and clauses."""
        data = self.visit(m.data)
        clauses = []
        changed = data is not m.data
        for c in m.clauses:
            lhs = self.visit_pattern(c.lhs)
            rhs = self.visit(c.rhs)
            if lhs is c.lhs and rhs is c.rhs:
                clauses.append(c)
            else:
                changed = True
                clauses.append(Clause(lhs, rhs, span=c.span))
        return Match(data, tuple(clauses), m.complete, span=m.span) if changed else m

    def visit_ref_create(self, r: RefCreate) -> Expr:
        """Rebuild ``ref(v)``."""
        v = self.visit(r.value)
        return r if v is r.value else RefCreate(v, span=r.span)

    def visit_ref_read(self, r: RefRead) -> Expr:
        """Rebuild ``ref_read(r)``."""
        v = self.visit(r.ref)
        return r if v is r.ref else RefRead(v, span=r.span)

    def visit_ref_write(self, r: RefWrite) -> Expr:
        """Rebuild ``ref_write(r, v)``."""
        ref, v = self.visit(r.ref), self.visit(r.value)
        return r if ref is r.ref and v is r.value else RefWrite(ref, v, span=r.span)


__all__ = ["ExprFunctor", "ExprMutator", "ExprVisitor", "flatten_let"]
