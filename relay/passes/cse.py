"""Common subexpression elimination by scoped hash-consing.

After TVM's ``src/relay/transforms/eliminate_common_subexpr.cc``. One bottom-up sweep (an
:class:`~relay.ir.functor.ExprMutator`) keys each operator call by
``(operator, arguments, attributes, type arguments)``, where the arguments are the
*already rewritten* nodes compared by identity, so equal sub-terms have already been merged
into one node and a key is built in constant time (hash-consing). Projections ``t.i`` are
keyed by ``(t, i)`` the same way. A call whose key was seen before is replaced by the
earlier node; a ``let`` whose value is replaced is dropped and its variable stands for the
earlier one:

    let %a = add(%x, %y);          let %a = add(%x, %y);
    let %b = add(%x, %y);    ->    multiply(%a, %a)
    multiply(%a, %b)

The table of available expressions is *scoped* (an undo log): an entry made inside a
``let`` body, a function body, an ``if`` branch or a ``match`` clause is removed when that
scope ends, so a node is only ever replaced by one that dominates it. Entries of an outer
scope are visible inside a nested function (reusing a value computed outside is fine),
never the other way round. The mutator's memo is restored the same way (entries are added
in order and dropped last-in first-out), so a node shared between two scopes is rewritten
separately in each.

Small constants (at most 16 elements) are keyed by dtype, shape and bytes, so two
literals ``2f`` written apart become one node and the calls on them can merge.

Only operator calls and projections are merged: all operators are pure. Calls of
functions, globals, closures and constructors, and reference operations (``ref``,
``!r``, ``r := v``) are never merged, because they may have effects or allocate distinct
cells. ``fskip(expr) -> bool`` exempts further calls (TVM's ``fskip``).

The sweep is linear in the size of the program; let chains are walked with a loop, so
100,000 bindings need no recursion.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import ClassVar

from relay.ir.expr import (
    Call,
    Clause,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    TupleGetItem,
    Var,
)
from relay.ir.functor import ExprMutator, flatten_let
from relay.ir.module import Module
from relay.passes.manager import FunctionPass, Pass, PassContext, PassInfo

_MISSING = object()
_SMALL_CONSTANT = 16
"""Constants of at most this many elements are compared by value."""


class _CSE(ExprMutator):
    """The sweep; ``table`` maps keys to the node (or let variable) that computes them."""

    previsit: ClassVar[frozenset[type]] = frozenset({Call, TupleGetItem})

    def __init__(self, fskip: Callable[[Expr], bool] | None) -> None:
        super().__init__()
        self.fskip = fskip
        self.table: dict[Hashable, Expr] = {}
        self.undo: list[tuple[Hashable, object]] = []

    # Scopes ----------------------------------------------------------------------------------

    def _enter(self) -> tuple[int, int]:
        return len(self.undo), len(self.memo)

    def _leave(self, mark: tuple[int, int]) -> None:
        undo_len, memo_len = mark
        while len(self.undo) > undo_len:
            key, old = self.undo.pop()
            if old is _MISSING:
                del self.table[key]
            else:
                assert isinstance(old, Expr)
                self.table[key] = old
        memo = self.memo
        while len(memo) > memo_len:
            memo.popitem()

    def _define(self, key: Hashable, value: Expr) -> None:
        self.undo.append((key, self.table.get(key, _MISSING)))
        self.table[key] = value

    def _scoped(self, expr: Expr) -> Expr:
        """Visit ``expr`` in a scope of its own; its entries do not outlive it."""
        mark = self._enter()
        out = self.visit(expr)
        self._leave(mark)
        return out

    # Keys ------------------------------------------------------------------------------------

    def _key(self, expr: Expr) -> Hashable | None:
        if self.fskip is not None and self.fskip(expr):
            return None
        if isinstance(expr, Call) and isinstance(expr.op, Op):
            return ("call", expr.op, expr.args, expr.attrs, expr.type_args)
        if isinstance(expr, TupleGetItem):
            return ("proj", expr.tuple_value, expr.index)
        return None

    def _lookup_or_define(self, expr: Expr) -> Expr:
        key = self._key(expr)
        if key is None:
            return expr
        found = self.table.get(key)
        if found is not None:
            return found
        self._define(key, expr)
        return expr

    # Visits ----------------------------------------------------------------------------------

    def visit_constant(self, c: Constant) -> Expr:
        # Equal small constants (literals the parser made separately) become one node, so
        # calls on them can merge; large ones are compared by identity only.
        if c.data.size > _SMALL_CONSTANT:
            return c
        key = ("const", c.data.dtype, c.data.shape, c.data.tobytes())
        found = self.table.get(key)
        if found is not None:
            return found
        self._define(key, c)
        return c

    def visit_call(self, call: Call) -> Expr:
        return self._lookup_or_define(super().visit_call(call))

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        return self._lookup_or_define(super().visit_tuple_getitem(t))

    def visit_function(self, f: Function) -> Expr:
        mark = self._enter()
        out = super().visit_function(f)
        self._leave(mark)
        return out

    def visit_if(self, i: If) -> Expr:
        cond = self.visit(i.cond)
        t, f = self._scoped(i.true_branch), self._scoped(i.false_branch)
        if cond is i.cond and t is i.true_branch and f is i.false_branch:
            return i
        return If(cond, t, f, span=i.span)

    def visit_match(self, m: Match) -> Expr:
        data = self.visit(m.data)
        clauses = []
        changed = data is not m.data
        for c in m.clauses:
            rhs = self._scoped(c.rhs)
            if rhs is c.rhs:
                clauses.append(c)
            else:
                changed = True
                clauses.append(Clause(c.lhs, rhs, span=c.span))
        return Match(data, tuple(clauses), m.complete, span=m.span) if changed else m

    def visit_let(self, let: Let) -> Expr:
        mark = self._enter()
        chain, body = flatten_let(let)
        kept: list[tuple[Let, Expr]] = []
        for node in chain:
            value = self.visit(node.value)
            if value is not node.value and isinstance(value, Var):
                # The value was an earlier binding's: this one is redundant.
                self.memo[node.var] = value
                continue
            key = self._key(value)
            if key is not None and self.table.get(key) is value:
                # Later equal computations in this let's scope use the variable.
                self._define(key, node.var)
            kept.append((node, value))
        out = self.visit(body)
        self._leave(mark)
        for node, value in reversed(kept):
            if value is node.value and out is node.body:
                out = node
            else:
                out = Let(node.var, value, out, span=node.span)
        return out


def eliminate_common_subexpr(expr: Expr, fskip: Callable[[Expr], bool] | None = None) -> Expr:
    """``expr`` with repeated pure operator calls and projections merged (see the module
    docstring); calls for which ``fskip`` returns True are left alone."""
    return _CSE(fskip).visit(expr)


def EliminateCommonSubexpr(fskip: Callable[[Expr], bool] | None = None) -> Pass:
    """The pass: :func:`eliminate_common_subexpr` on every global function (opt level 3)."""

    def run(func: Function, mod: Module, ctx: PassContext) -> Function:
        out = eliminate_common_subexpr(func, fskip)
        assert isinstance(out, Function)
        return out

    return FunctionPass(run, PassInfo("EliminateCommonSubexpr", 3))


__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr"]
