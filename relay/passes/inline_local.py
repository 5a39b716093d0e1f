"""Inlining local functions that are called exactly once.

A ``let``-bound function literal whose variable occurs exactly once, and there as the
callee of a call, is a *join point*: the ``@relay`` frontend makes one for the code that
follows an ``if`` whose other branch leaves the loop (``break``, ``continue``, ``return``)::

    let %join = fn () { ...; %while_loop(%i1, %x2) };
    if (%done) { (%i1, %x2) } else { %join() }

Compiled as it stands, such a loop makes a closure every iteration, and the loop is two
functions calling each other through it. This pass replaces the call by the function's
body, with its parameters bound by ``let`` to the arguments, and drops the binding::

    if (%done) { (%i1, %x2) } else { ...; %while_loop(%i1, %x2) }

In graph form the binding is gone and the literal is called where it is made,
``(fn () {...})()``: such a call is replaced by the body the same way (beta reduction).

It is the "pre-inline unconditionally" case of GHC's simplifier (Peyton Jones and Marlow,
*Secrets of the Glasgow Haskell Compiler inliner*, JFP 2002): a binding that occurs once,
not inside a lambda it could be duplicated by, is inlined whatever its size. Here the
occurrence may also be inside another function literal, because what moves is the
function's *body*, which runs only when called in both forms: creating a closure has no
effect, the arguments are evaluated before the body in both, and the call site lies in the
scope of the ``let`` (it is the variable's one occurrence), so every free variable of the
body is bound there to the same value. A recursive function names itself in its own body,
so its variable occurs more than once and it is left alone; so is a polymorphic one (its
call would need its type arguments substituted) and a fused ``Primitive=1`` function.

One walk counts the occurrences of the let-bound function variables, a second rewrites;
both are iterative, linear in the size of the program.
"""

from __future__ import annotations

from collections.abc import Sequence

from relay.ir.expr import Call, Expr, Function, Let, Var, children
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo


class _Occurrences:
    """Every variable's occurrences (binders excluded), and how many are callees; a
    sub-expression shared in graph form counts once, as it is evaluated once."""

    def __init__(self, expr: Expr) -> None:
        self.count: dict[Var, int] = {}
        self.called: dict[Var, int] = {}
        self.references: dict[int, int] = {}  # function literal -> the nodes holding it
        seen: set[int] = set()
        literal_calls: list[Call] = []
        stack = [expr]
        while stack:
            e = stack.pop()
            if isinstance(e, Var):
                self.count[e] = self.count.get(e, 0) + 1
                continue
            if id(e) in seen:
                continue
            seen.add(id(e))
            if isinstance(e, Let):
                subs: Sequence[Expr] = (e.value, e.body)
            elif isinstance(e, Function):
                subs = (e.body,)
            else:
                if isinstance(e, Call) and isinstance(e.op, Var):
                    self.called[e.op] = self.called.get(e.op, 0) + 1
                elif isinstance(e, Call) and _literal(e.op):
                    literal_calls.append(e)
                subs = children(e)
            for sub in subs:
                if isinstance(sub, Function):
                    self.references[id(sub)] = self.references.get(id(sub), 0) + 1
            stack.extend(subs)
        self.literal_calls = sum(1 for call in literal_calls if self.reducible(call))

    def reducible(self, call: Call) -> bool:
        """``call`` calls a function literal that nothing else refers to (in graph form a
        literal called at two places is one shared node: reduced at both, its body would
        be shared too, and evaluated once)."""
        return _literal(call.op) and self.references.get(id(call.op), 0) == 1


def _inlinable(var: Var, value: Expr, seen: _Occurrences) -> bool:
    return (
        isinstance(value, Function)
        and value.attrs.get("Primitive") != 1
        and not value.type_params
        and seen.count.get(var, 0) == 1
        and seen.called.get(var, 0) == 1
    )


class _Inliner(ExprMutator):
    previsit = frozenset({Call})  # deep nests of calls need no recursion

    def __init__(self, seen: _Occurrences) -> None:
        super().__init__()
        self.seen = seen
        self.pending: dict[Var, Function] = {}
        self.changed = False

    def visit_let(self, let: Let) -> Expr:
        # a chain of lets, iteratively: the frontend's functions are long chains
        bindings: list[tuple[Var, Expr]] = []
        e: Expr = let
        while isinstance(e, Let):
            if _inlinable(e.var, e.value, self.seen):
                assert isinstance(e.value, Function)
                self.pending[e.var] = e.value
                self.changed = True
            else:
                bindings.append((e.var, e.value))
            e = e.body
        out = self.visit(e)
        for var, value in reversed(bindings):
            out = Let(var, self.visit(value), out, span=let.span)
        return out

    def visit_call(self, call: Call) -> Expr:
        func: Function | None = None
        if isinstance(call.op, Var) and call.op in self.pending:
            func = self.pending.pop(call.op)
        elif self.seen.reducible(call):  # graph form: a join point called where it is made
            assert isinstance(call.op, Function)
            func = call.op
            self.changed = True
        if func is not None:
            args = [self.visit(a) for a in call.args]
            out = self.visit(func.body)
            for param, arg in reversed(list(zip(func.params, args, strict=True))):
                out = Let(param, arg, out, span=call.span)
            return out
        return super().visit_call(call)


def _literal(op: Expr) -> bool:
    return isinstance(op, Function) and op.attrs.get("Primitive") != 1 and not op.type_params


def inline_local_functions(expr: Expr) -> Expr:
    """``expr`` with every local function called exactly once inlined at its call, and
    every call of a function literal (in graph form, how a join point is written) replaced
    by the function's body."""
    seen = _Occurrences(expr)
    if not seen.literal_calls and not any(_inlinable_var(v, seen) for v in seen.called):
        return expr
    inliner = _Inliner(seen)
    out = inliner.visit(expr)
    return out if inliner.changed else expr


def _inlinable_var(var: Var, seen: _Occurrences) -> bool:
    return seen.count.get(var, 0) == 1 and seen.called.get(var, 0) == 1


def InlineLocalFunctions() -> Pass:
    """The pass applying :func:`inline_local_functions` to every global function (the
    fused ``Primitive=1`` ones excepted). Types are not kept: run InferType after it."""

    def fn(mod: Module, ctx: PassContext) -> Module:
        for gv, func in list(mod.functions.items()):
            if func.attrs.get("Primitive") == 1:
                continue
            new = inline_local_functions(func)
            if new is not func:
                assert isinstance(new, Function)
                mod.update_func(gv, new)
        return mod

    return ModulePass(fn, PassInfo("InlineLocalFunctions", 1))


__all__ = ["InlineLocalFunctions", "inline_local_functions"]
