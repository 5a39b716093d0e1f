"""Common subexpression elimination over operator calls, in graph form and across lets.

After TVM's ``src/relay/transforms/eliminate_common_subexpr.cc``
(``EliminateCommonSubexpr``). One bottom-up walk (an
:class:`~relay.ir.functor.ExprMutator`) hash-conses the pure computations it meets: a
call of a pure operator (:func:`is_pure_op`) and a projection ``t.i`` are keyed by

    (operator name, the identities of the already rewritten arguments, attributes,
     type arguments)            -- or (tuple identity, index) for a projection

so two calls are merged when they apply the same operator with equal attributes to the
*same* (already merged) arguments; one dictionary lookup per node keeps the pass linear.
Small constants (at most 16 elements) are hash-consed by value first, so ``add(%x, 1f)``
written twice is one computation. Two tables are kept:

* *graph* table: key -> the first call with that key; a later call with the same key
  becomes that node (shared, as in graph form);
* *let* table: key -> ``%a`` for ``let %a = <call with that key>``; inside that let's
  body a call with the key becomes ``%a``, and ``let %b = <the same>`` is removed with
  ``%b`` replaced by ``%a`` (a binding dominates exactly its body).

Both tables are *scoped*. A function body, each branch of an ``if``, each clause of a
``match`` and each ``let`` chain opens a scope; what is added inside is dropped when the
scope is left, so a value computed inside a nested function, a branch or a clause is never
made visible outside it (it might not be computed there), while a value from an enclosing
scope may be reused inside.

A node of a graph-form program may be reached along several paths (a shared node and what
is below it). The mutator rewrites each node once, so such a node is never replaced by a
``let``-bound variable, which might be out of scope on another path; it is still merged
with equal calls through the graph table. A pre-pass finds these nodes (in-degrees, then
parents before children), so every binder stays bound exactly once in the output.

**Effects.** Only calls of operators that the registry does not mark as stateful or random
are merged (every operator of ``relay.op`` today is pure; ``nn.dropout`` is the inference
identity). Reference operations, calls of globals, closures and constructors are never
merged -- each ``ref(0)`` is a different cell. ``fskip(call)`` (the call with its arguments
already rewritten, as in TVM) returning True keeps a call out of the tables.

Global functions marked ``Primitive=1`` (fused kernels) are left alone by the pass, as by
every function pass; function literals are processed wherever they are. ``let`` chains are walked
in a loop and nested calls without recursion, so 100,000-binding programs are fine.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

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
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.op.registry import get_op
from relay.passes.manager import FunctionPass, Pass, PassContext, PassInfo

__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr", "is_pure_op"]

_IMPURE_FLAGS = ("stateful", "random", "effect")
_SMALL_CONSTANT = 16


def is_pure_op(op: Op) -> bool:
    """Whether calls of ``op`` may be merged, moved or evaluated early: a registered operator
    whose registry entry does not carry a ``stateful``, ``random`` or ``effect`` flag in its
    ``extra`` rules."""
    try:
        opdef = get_op(op.name)
    except KeyError:
        return False
    return not any(opdef.extra.get(flag) for flag in _IMPURE_FLAGS)


class _Frame:
    """What a scope added to the tables, to drop when it closes."""

    __slots__ = ("graph_keys", "let_keys")

    def __init__(self) -> None:
        self.graph_keys: list[Hashable] = []
        self.let_keys: list[Hashable] = []


def _reached_more_than_once(root: Expr) -> set[Expr]:
    """The nodes of ``root`` (a DAG) reachable from it along more than one path: the nodes
    with several parents and everything below them. Iterative: a depth-first post-order,
    then parents before children."""
    indegree: dict[Expr, int] = {root: 0}
    order: list[Expr] = []
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        stack.append((node, True))
        for child in children(node):
            if child in indegree:
                indegree[child] += 1
            else:
                indegree[child] = 1
                stack.append((child, False))
    shared: set[Expr] = set()
    for node in reversed(order):
        if node in shared or indegree[node] > 1:
            shared.add(node)
            shared.update(children(node))
    return shared


class _Eliminator(ExprMutator):
    previsit = frozenset({Call, TupleGetItem})

    def __init__(self, fskip: Callable[[Expr], bool] | None, root: Expr) -> None:
        super().__init__()
        self.fskip = fskip
        self.shared = _reached_more_than_once(root)
        self.graph: dict[Hashable, Expr] = {}
        self.lets: dict[Hashable, Var] = {}
        self.alias: dict[Var, Var] = {}
        self.constants: dict[Hashable, Constant] = {}
        self.pure: set[Expr] = set()
        self.frames: list[_Frame] = [_Frame()]

    # -- scopes ---------------------------------------------------------------------------------

    def _push(self) -> None:
        self.frames.append(_Frame())

    def _pop(self) -> None:
        frame = self.frames.pop()
        for k in frame.graph_keys:
            del self.graph[k]
        for k in frame.let_keys:
            del self.lets[k]

    def _scoped(self, expr: Expr) -> Expr:
        self._push()
        try:
            return self.visit(expr)
        finally:
            self._pop()

    # -- keys -----------------------------------------------------------------------------------

    def _is_pure(self, expr: Expr) -> bool:
        """Whether evaluating the (rewritten) ``expr`` again gives the same value and has no
        effect: atoms, and tuples, projections and pure operator calls of such."""
        if isinstance(expr, Var | Constant | GlobalVar | Op | Constructor | Function):
            return True
        if isinstance(expr, Tuple):
            return all(self._is_pure(f) for f in expr.fields)
        return expr in self.pure

    def _key(self, expr: Expr) -> Hashable | None:
        """The hash-consing key of a rewritten call or projection; None if never merged.

        Arguments must be pure too: in graph form a shared ``!r`` node is evaluated at each
        use, so two calls of it may differ."""
        if isinstance(expr, Call):
            if not isinstance(expr.op, Op) or not is_pure_op(expr.op):
                return None
            if not all(self._is_pure(a) for a in expr.args):
                return None
            if self.fskip is not None and self.fskip(expr):
                return None
            self.pure.add(expr)
            return ("call", expr.op.name, expr.args, expr.attrs, expr.type_args)
        if isinstance(expr, TupleGetItem):
            if not self._is_pure(expr.tuple_value):
                return None
            if self.fskip is not None and self.fskip(expr):
                return None
            self.pure.add(expr)
            return ("proj", expr.tuple_value, expr.index)
        return None

    def _canonical(self, old: Expr, new: Expr) -> Expr:
        key = self._key(new)
        if key is None:
            return new
        var = self.lets.get(key)
        if var is not None and old not in self.shared:
            return var
        found = self.graph.get(key)
        if found is not None:
            return found
        self.graph[key] = new
        self.frames[-1].graph_keys.append(key)
        return new

    # -- rewriting ------------------------------------------------------------------------------

    def visit_var(self, var: Var) -> Expr:
        """A variable whose binding was merged into an earlier one becomes that one."""
        return self.alias.get(var, var)

    def visit_constant(self, c: Constant) -> Expr:
        """Small constants are shared by value (so calls on them can merge)."""
        data = c.data
        if data.size > _SMALL_CONSTANT:
            return c
        key = (str(data.dtype), data.shape, data.tobytes())
        return self.constants.setdefault(key, c)

    def visit_call(self, call: Call) -> Expr:
        """Merge a pure operator call with an earlier equal one."""
        return self._canonical(call, super().visit_call(call))

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        """Merge a projection with an earlier equal one."""
        return self._canonical(t, super().visit_tuple_getitem(t))

    def visit_function(self, f: Function) -> Expr:
        """A function body is a scope of its own."""
        body = self._scoped(f.body)
        if body is f.body:
            return f
        return Function(f.params, body, f.ret_type, f.type_params, f.attrs, span=f.span)

    def visit_if(self, i: If) -> Expr:
        """Each branch is a scope of its own."""
        cond = self.visit(i.cond)
        t = self._scoped(i.true_branch)
        f = self._scoped(i.false_branch)
        if cond is i.cond and t is i.true_branch and f is i.false_branch:
            return i
        return If(cond, t, f, span=i.span)

    def visit_match(self, m: Match) -> Expr:
        """Each clause is a scope of its own."""
        data = self.visit(m.data)
        changed = data is not m.data
        clauses = []
        for c in m.clauses:
            rhs = self._scoped(c.rhs)
            if rhs is c.rhs:
                clauses.append(c)
            else:
                changed = True
                clauses.append(Clause(c.lhs, rhs, span=c.span))
        return Match(data, tuple(clauses), m.complete, span=m.span) if changed else m

    def visit_let(self, let: Let) -> Expr:
        """A let chain is a scope; a binding of an already bound computation is removed.

        The chain is walked in a loop; a ``let`` of it already rewritten (shared in graph
        form) ends the walk, and each one's result is memoized, so each is rewritten once."""
        chain: list[tuple[Let, Expr | None]] = []
        node: Expr = let
        self._push()
        try:
            while isinstance(node, Let) and node not in self.memo:
                chain.append((node, self._bind(node)))
                node = node.body
            out = self.visit(node)
        finally:
            self._pop()
        for link, new_value in reversed(chain):
            if new_value is not None:
                if new_value is link.value and out is link.body:
                    out = link
                else:
                    out = Let(link.var, new_value, out, span=link.span)
            self.memo[link] = out
        return out

    def _bind(self, node: Let) -> Expr | None:
        """The rewritten value of ``node``, or None when the binding is merged into an
        earlier one (its variable then stands for the earlier variable)."""
        value = self.visit(node.value)
        if isinstance(value, Var) and value is not node.value:
            # the value was merged into an earlier binding: reuse its variable
            self.alias[node.var] = value
            return None
        key = self._key(value)
        if key is not None:
            earlier = self.lets.get(key)
            if earlier is not None and node not in self.shared:
                self.alias[node.var] = earlier
                return None
            if earlier is None:
                self.lets[key] = node.var
                self.frames[-1].let_keys.append(key)
        return value


def eliminate_common_subexpr(expr: Expr, fskip: Callable[[Expr], bool] | None = None) -> Expr:
    """``expr`` with repeated pure operator calls and projections merged (see the module
    docs); ``fskip(call)`` True keeps a call apart."""
    return _Eliminator(fskip, expr).visit(expr)


def EliminateCommonSubexpr(fskip: Callable[[Expr], bool] | None = None) -> Pass:
    """Merge repeated pure operator calls and projections, in graph form and across ``let``
    bindings (see the module docs); opt level 3."""

    def run(func: Function, mod: Module, ctx: PassContext) -> Function:
        out = _Eliminator(fskip, func).visit(func)
        assert isinstance(out, Function)
        return out

    return FunctionPass(run, PassInfo("EliminateCommonSubexpr", 3))
