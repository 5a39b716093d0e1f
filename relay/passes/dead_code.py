"""Dead code elimination, aware of effects.

A ``let`` whose variable is never used is removed when evaluating its value cannot be
observed. TVM's ``dead_code.cc`` (Relay's ``DeadCodeElimination``) removes every unused
binding and so may drop a reference write; here an effect analysis decides first.

**Effects.** Each expression gets one of three effect levels, ordered:

* ``PURE``: no reference is read or written (operators, constructors, closures created,
  tuples, calls of pure functions);
* ``READS``: reads a reference (``!r``); an unused read may be dropped, but it must not be
  moved past a write;
* ``EFFECT``: writes a reference, or calls a function the analysis cannot see (a parameter,
  a function taken out of a data structure), which might.

Calls of known functions (globals, ``let``-bound function literals, a function literal in
call position) have the effect of the function's body. These are solved over the whole
module at once: each function's *direct* effect (its body, counting calls of known
functions as pure) is propagated along the reversed call graph with a worklist, so
recursion and mutual recursion need no fixed-point iteration over the program (the
analysis is linear in the size of the module). Failures at run time (an index out of
bounds, a ``match?`` without a matching clause) and non-termination are not effects, as in
TVM and in GHC's simplifier: a computation whose result is unused may be dropped even if it
would have failed.

**Elimination.** A chain of ``let``s is processed from its body backwards (Appel,
*Modern Compiler Implementation*, liveness on a straight-line block): the uses of each
variable in the later bindings that are kept and in the body are counted; a binding with no
use whose value is at most ``READS`` is dropped, and its value's uses are not counted, so a
chain of bindings that only feed each other disappears in one pass. Nested scopes (function
bodies, branches, clauses) are cleaned the same way. A projection of a tuple literal,
``(a, b, c).1``, becomes ``b`` when ``a`` and ``c`` are at most ``READS`` (in graph form, the
gradient transformations leave these: ``(loss, grads).1``).

**inline_once** (TVM's option): a binding used exactly once, whose value is ``PURE``, and
whose use is not inside a function literal (which may run many times) is substituted into
its use. The substitution is done for a whole chain in one forward sweep, so a chain of
100,000 such bindings becomes one nested expression in linear time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import IntEnum

from relay.ir.expr import (
    Call,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Op,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay.ir.functor import ExprMutator, flatten_let
from relay.ir.module import Module
from relay.passes.manager import FunctionPass, Pass, PassContext, PassInfo


class Effect(IntEnum):
    """How observable evaluating an expression is (see the module docstring)."""

    PURE = 0
    READS = 1
    EFFECT = 2


def _functions(roots: Iterable[Expr]) -> list[Function]:
    """Every function literal in ``roots`` (each once), outermost first."""
    out: list[Function] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Function):
            out.append(node)
        stack.extend(children(node))
    return out


def _local_nodes(body: Expr) -> list[Expr]:
    """The nodes evaluated with ``body``: all of it except inside function literals."""
    out: list[Expr] = []
    seen: set[int] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        if not isinstance(node, Function):
            stack.extend(children(node))
    return out


class EffectAnalysis:
    """The effects of the expressions of a module or expression (see the module docstring).

    ``of(expr)`` is the effect of evaluating ``expr``; ``call(fn)`` that of calling the
    function literal ``fn``.
    """

    def __init__(self, roots: Iterable[Expr], mod: Module | None = None) -> None:
        self.mod = mod
        roots = list(roots)
        if mod is not None:
            roots.extend(mod.functions.values())
        funcs = _functions(roots)
        # the function literal each let-bound variable names
        self.named: dict[Var, Function] = {}
        for f in funcs:
            for node in _local_nodes(f.body):
                if isinstance(node, Let) and isinstance(node.value, Function):
                    self.named[node.var] = node.value
        for r in roots:
            for node in _local_nodes(r):
                if isinstance(node, Let) and isinstance(node.value, Function):
                    self.named[node.var] = node.value
        self.calls: dict[Function, Effect] = {}
        callers: dict[Function, list[Function]] = {}
        for f in funcs:
            direct = Effect.PURE
            for node in _local_nodes(f.body):
                local, callee = self._local(node)
                direct = max(direct, local)
                if callee is not None:
                    callers.setdefault(callee, []).append(f)
            self.calls[f] = direct
        work = [f for f in funcs if self.calls[f] > Effect.PURE]
        while work:
            g = work.pop()
            for f in callers.get(g, ()):
                if self.calls.get(f, Effect.EFFECT) < self.calls[g]:
                    self.calls[f] = self.calls[g]
                    work.append(f)
        self.memo: dict[int, Effect] = {}

    def _callee(self, op: Expr) -> Function | bool | None:
        """The function a call of ``op`` runs (a literal), True for an operator or
        constructor (pure), None when unknown."""
        if isinstance(op, Op | Constructor):
            return True
        if isinstance(op, Function):
            return op
        if isinstance(op, GlobalVar):
            if self.mod is not None and op in self.mod:
                return self.mod.function(op)
            return None
        if isinstance(op, Var):
            return self.named.get(op)
        return None

    def _local(self, node: Expr) -> tuple[Effect, Function | None]:
        """The node's own effect (children aside) and the known function it calls."""
        if isinstance(node, RefWrite):
            return Effect.EFFECT, None
        if isinstance(node, RefRead):
            return Effect.READS, None
        if isinstance(node, Call):
            callee = self._callee(node.op)
            if callee is None:
                return Effect.EFFECT, None
            if isinstance(callee, Function):
                return Effect.PURE, callee
        return Effect.PURE, None

    def call(self, fn: Function) -> Effect:
        """The effect of calling the function literal ``fn``."""
        known = self.calls.get(fn)
        if known is None:  # a function made after the analysis: judge it on its own
            return self.of(fn.body)
        return known

    def of(self, expr: Expr) -> Effect:
        """The effect of evaluating ``expr`` (memoized per node)."""
        memo = self.memo
        if id(expr) in memo:
            return memo[id(expr)]
        stack: list[tuple[Expr, bool]] = [(expr, False)]
        while stack:
            node, done = stack.pop()
            if id(node) in memo:
                continue
            kids = () if isinstance(node, Function) else children(node)
            if not done:
                stack.append((node, True))
                stack.extend((k, False) for k in kids if id(k) not in memo)
                continue
            effect = Effect.PURE
            for k in kids:
                effect = max(effect, memo[id(k)])
            local, callee = self._local(node)
            effect = max(effect, local)
            if callee is not None:
                effect = max(effect, self.call(callee))
            memo[id(node)] = effect
        return memo[id(expr)]


def _count_uses(expr: Expr, counts: Counter[Var], captured: set[Var]) -> None:
    """Add the uses of each variable in ``expr`` to ``counts``; a variable used inside a
    function literal joins ``captured``."""
    seen: set[tuple[int, bool]] = set()
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, inside = stack.pop()
        if isinstance(node, Var):  # each occurrence counts: add(%a, %a) uses %a twice
            counts[node] += 1
            if inside:
                captured.add(node)
            continue
        key = (id(node), inside)
        if key in seen:  # a shared node is evaluated once
            continue
        seen.add(key)
        deeper = inside or isinstance(node, Function)
        stack.extend((k, deeper) for k in children(node))


class _Substitute(ExprMutator):
    """Replace variables by already-substituted expressions."""

    def __init__(self, mapping: dict[Var, Expr]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_var(self, var: Var) -> Expr:
        return self.mapping.get(var, var)


class _Eliminate(ExprMutator):
    def __init__(self, effects: EffectAnalysis, inline_once: bool) -> None:
        super().__init__()
        self.effects = effects
        self.inline_once = inline_once

    def visit_let(self, let: Let) -> Expr:
        chain, body = flatten_let(let)
        values = [self.visit(b.value) for b in chain]
        new_body = self.visit(body)
        counts: Counter[Var] = Counter()
        captured: set[Var] = set()
        _count_uses(new_body, counts, captured)
        kept: list[tuple[Let, Expr]] = []
        inlined: set[Var] = set()
        for binding, value in zip(reversed(chain), reversed(values), strict=True):
            uses = counts[binding.var]
            effect = self.effects.of(value)
            if uses == 0 and effect <= Effect.READS:
                continue
            if (
                self.inline_once
                and uses == 1
                and binding.var not in captured
                and effect == Effect.PURE
                and not isinstance(value, Function)  # a closure stays named (and shared)
            ):
                inlined.add(binding.var)
            kept.append((binding, value))
            _count_uses(value, counts, captured)
        kept.reverse()
        if inlined:
            return self._rebuild_inlining(kept, new_body, inlined)
        out = new_body
        unchanged = new_body is body and len(kept) == len(chain)
        for binding, value in reversed(kept):
            unchanged = unchanged and value is binding.value
        if unchanged:
            return let
        for binding, value in reversed(kept):
            out = Let(binding.var, value, out, span=binding.span)
        return out

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        """``(a, b, c).1`` is ``b`` when evaluating ``a`` and ``c`` cannot be observed."""
        tup = self.visit(t.tuple_value)
        if isinstance(tup, Tuple) and all(
            self.effects.of(f) <= Effect.READS for i, f in enumerate(tup.fields) if i != t.index
        ):
            return tup.fields[t.index]
        return t if tup is t.tuple_value else TupleGetItem(tup, t.index, span=t.span)

    @staticmethod
    def _rebuild_inlining(kept: list[tuple[Let, Expr]], body: Expr, inlined: set[Var]) -> Expr:
        mapping: dict[Var, Expr] = {}
        sub = _Substitute(mapping)
        rest: list[tuple[Let, Expr]] = []
        for binding, value in kept:  # forward: each value sees the substitutions before it
            new_value = sub.visit(value) if mapping else value
            if binding.var in inlined:
                mapping[binding.var] = new_value
            else:
                rest.append((binding, new_value))
        out = sub.visit(body)
        for binding, value in reversed(rest):
            out = Let(binding.var, value, out, span=binding.span)
        return out


def dead_code_elimination(expr: Expr, mod: Module | None = None, inline_once: bool = False) -> Expr:
    """``expr`` without its unused, effect-free ``let`` bindings (see the module docstring).

    ``mod`` lets calls of its globals be judged by their bodies (without it, a call of a
    global counts as an effect). With ``inline_once``, a pure binding used once, outside any
    function literal, is substituted into its use.
    """
    return _Eliminate(EffectAnalysis([expr], mod), inline_once).visit(expr)


def DeadCodeElimination(inline_once: bool = False) -> Pass:
    """The pass: :func:`dead_code_elimination` on every global function, with the module's
    globals analysed for effects."""
    cache: dict[int, tuple[Module, EffectAnalysis]] = {}

    def run(func: Function, mod: Module, ctx: PassContext) -> Function:
        found = cache.get(id(mod))
        if found is None or found[0] is not mod:
            cache.clear()
            found = cache[id(mod)] = (mod, EffectAnalysis((), mod))
        out = _Eliminate(found[1], inline_once).visit(func)
        assert isinstance(out, Function)
        return out

    return FunctionPass(run, PassInfo("DeadCodeElimination", opt_level=1))
