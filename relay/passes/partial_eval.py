"""Partial evaluation: evaluate the static part of a program at compile time, residualize
the rest.

An *online* partial evaluator in the manner of Relay's ``PartialEvaluate``
(``src/relay/transforms/partial_eval.cc``; Jones, Gomard and Sestoft, *Partial Evaluation
and Automatic Program Generation*, 1993, chapters 4-5): the program is run by an
interpreter over *partial values*. Each value is what is known of it at compile time --
nothing (a *dynamic* value), or a *static* one: a constant tensor, a tuple, a closure
(the function literal and its environment), a global function, a constructor value, or a
reference cell -- together with a *residual*, the variable or constant that holds it in
the output program. Evaluating an expression emits the bindings the output needs into the
current block and returns the expression's partial value:

* an operator call on static constants is evaluated (the operator's reference
  implementation, as :mod:`relay.passes.constant_fold` does); other operator calls are
  emitted;
* ``if`` on a static condition and ``match`` on a static constructor value evaluate the
  branch taken only; on dynamic ones every branch is residualized in a block of its own.
  When the branches of a ``let``-bound ``if`` leave cells known but different (each
  branch of a differentiated program pushes its own backward step onto the tape), the
  rest of the ``let`` chain is evaluated in each branch instead, where the store is still
  known -- the code after the ``if`` is duplicated, at most :data:`MAX_DUPLICATIONS` times
  per function;
* a call of a static closure or global is *unfolded*: its body is evaluated with the
  parameters bound to the arguments' partial values. Unfolding stops, and the call is
  emitted as a call of a residual copy of the function, when the function is already
  being unfolded with the same static arguments (recursion that makes no static
  progress), when a dynamic branch (or a residual function body, which runs at an unknown
  time) was entered since its enclosing unfolding began (so a loop with a static bound
  unrolls, and one with a dynamic bound peels one iteration and leaves a loop), when
  :data:`MAX_DEPTH` unfoldings are nested, or when the *fuel* (a bound on all unfoldings)
  is spent;
* references are simulated: each cell created during evaluation has its contents in a
  *store*; a read of a cell whose contents are known is that value; every ``ref``,
  ``ref_write`` and unknown read is emitted too, in the order the program performs them,
  so the effects stay as they were. The store forgets what a dynamic call (which may write
  any cell) or a dynamic branch (whose writes differ between paths) may have changed;
* a closure that reaches a dynamic context (an argument of a dynamic call, a field of a
  residual tuple, a cell's contents, a result) is residualized: its body is partially
  evaluated with dynamic parameters and an unknown store, and bound to a variable. Inside
  such a body only the closures made in it are unfolded: the body runs later, and a
  closure from outside (a backward step calling the step before it) would otherwise be
  copied into every body that reaches it, quadratically.

The input is put in A-normal form first (a value shared in graph form is then evaluated
once, and deep dataflow is a chain of bindings walked in a loop). The output is in
A-normal form too: every binding emitted gets a fresh variable, so a function
unfolded twice binds its variables twice without clashing. Afterwards, a cell that the
output only ever writes (its creation and writes are all that is left once its reads were
evaluated) is removed with its writes, and dead bindings go
(:mod:`relay.passes.dead_code`); then types are inferred again.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay.errors import RelayError
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
)
from relay.ir.module import Module
from relay.passes.eta_expand import param_type
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo

DEFAULT_FUEL = 1000
"""Calls unfolded per function partially evaluated, at most."""

MAX_DEPTH = 1000
"""Unfoldings nested in one another, at most. Running a tape of backward steps nests one
unfolding per step (each step calls the one before), so this bounds the length of the
straight-line code whose gradient becomes dataflow; the evaluator raises Python's
recursion limit for the nesting it allows (CPython 3.11 keeps Python-to-Python calls off
the C stack)."""

MAX_DUPLICATIONS = 8
"""Continuations evaluated in each branch of a dynamic ``if``, per function, at most (each
doubles the code after the ``if``)."""


# -- partial values ----------------------------------------------------------------------------------


@dataclass(eq=False)
class Closure:
    """A function literal and the partial values of its free variables."""

    func: Function
    env: dict[Var, PValue]
    name: Var | None = None
    """The variable it is bound to when it is recursive (``let %f = fn ... %f(...)``)."""
    residual: dict[int, Var] = field(default_factory=dict)
    """Its residual copies, by the block they are bound in."""
    level: int = 0
    """How many residual function bodies were being made when it was created."""


@dataclass(eq=False)
class Ref:
    """A reference cell created during partial evaluation (its contents are in the store)."""

    id: int


@dataclass(eq=False)
class PValue:
    """What is known of a value at compile time (``static``: an ndarray, a tuple of
    partial values, a :class:`Closure`, a ``GlobalVar``, a ``(Constructor, fields)`` pair
    or a :class:`Ref`; None for a dynamic value) and the expression holding it in the
    output (``residual``; None for a closure not yet residualized)."""

    static: Any = None
    residual: Expr | None = None


def _dynamic(e: Expr) -> PValue:
    return PValue(None, e)


# -- the evaluator ---------------------------------------------------------------------------------


class _Block:
    """Bindings being emitted, in order."""

    ids = itertools.count()

    def __init__(self) -> None:
        self.bindings: list[tuple[Var, Expr]] = []
        self.id = next(_Block.ids)

    def wrap(self, body: Expr) -> Expr:
        for var, value in reversed(self.bindings):
            body = Let(var, value, body)
        return body


class _Unfolding:
    """A call being unfolded: the function (a global's ``Function``, or the
    :class:`Closure`), its arguments' static signature, and the number of dynamic branches
    open when it began."""

    __slots__ = ("branches", "func", "signature")

    def __init__(self, func: object, signature: Any, branches: int) -> None:
        self.func = func
        self.signature = signature
        self.branches = branches


class PartialEvaluator:
    """Partially evaluates the functions of one module (see the module docstring)."""

    def __init__(self, mod: Module, fuel: int = DEFAULT_FUEL) -> None:
        from relay.passes.constant_fold import DEFAULT_MAX_ELEMENTS, _Folder

        self.mod = mod
        self.fuel = fuel
        self.folder = _Folder(mod, DEFAULT_MAX_ELEMENTS)
        self.blocks: list[_Block] = []
        self.store: dict[int, PValue | None] = {}
        self.unfolding: list[_Unfolding] = []
        self.branches = 0  # dynamic branches open
        self.reifying: set[int] = set()  # closures whose residual copy is being made
        self.level = 0  # residual function bodies being made (nested)
        self.duplications = 0  # continuations evaluated in each branch (see eval_if)
        self.refs = itertools.count()

    # -- emitting ---------------------------------------------------------------------------

    def emit(self, value: Expr, hint: str = "x") -> Var:
        var = Var(hint)
        self.blocks[-1].bindings.append((var, value))
        return var

    def block(self, run: Any) -> Expr:
        """Evaluate ``run()`` (returning a partial value) in a block of its own; the block
        as an expression ending in the value's residual."""
        self.blocks.append(_Block())
        try:
            value = run()
            atom = self.reify(value)
            return self.blocks[-1].wrap(atom)
        finally:
            self.blocks.pop()

    # -- residuals --------------------------------------------------------------------------

    def reify(self, v: PValue) -> Expr:
        """The expression holding ``v`` in the output (residualizing a closure)."""
        if v.residual is not None:
            return v.residual
        s = v.static
        if isinstance(s, Closure):
            return self.reify_closure(s)
        if isinstance(s, np.ndarray):
            return Constant(s)
        raise AssertionError(f"a partial value without a residual: {s!r}")

    def reify_closure(self, c: Closure) -> Var:
        """A residual copy of ``c`` bound in an enclosing block (reused when one is)."""
        live = {b.id for b in self.blocks}
        for block_id, var in c.residual.items():
            if block_id in live:
                return var
        var = Var(c.name.name_hint if c.name is not None else "f")
        c.residual[self.blocks[-1].id] = var
        params = tuple(Var(p.name_hint, param_type(p)) for p in c.func.params)
        env = dict(c.env)
        for p, q in zip(c.func.params, params, strict=True):
            env[p] = _dynamic(q)
        if c.name is not None:
            env[c.name] = PValue(c, var)
        # it runs later: nothing is known of the store, and like a dynamic branch it stops
        # the unfolding of what is being unfolded (a recursion through residual closures)
        saved_store, saved_branches = self.store, self.branches
        self.store, self.branches = {}, self.branches + 1
        self.reifying.add(id(c))
        self.level += 1
        try:
            body = self.block(lambda: self.eval(c.func.body, env))
        finally:
            self.level -= 1
            self.reifying.discard(id(c))
            self.store, self.branches = saved_store, saved_branches
        func = Function(params, body, c.func.ret_type, (), c.func.attrs, span=c.func.span)
        self.blocks[-1].bindings.append((var, func))
        return var

    # -- expressions ------------------------------------------------------------------------

    def eval(self, e: Expr, env: dict[Var, PValue]) -> PValue:
        """The partial value of ``e`` (emitting what the output needs)."""
        while isinstance(e, Let):  # a chain, in a loop
            bound = e.value
            if isinstance(bound, Function) and bound.attrs.get("Primitive") != 1:
                env[e.var] = PValue(Closure(bound, env, e.var, level=self.level))
            elif isinstance(bound, If):
                value, consumed = self.eval_if(bound, env, (e.var, e.body))
                if consumed:  # the rest of the chain went into the branches
                    return value
                env[e.var] = value
            else:
                env[e.var] = self.eval(bound, env)
            e = e.body
        if isinstance(e, Var):
            return env[e]
        if isinstance(e, Constant):
            return PValue(e.data, e)
        if isinstance(e, GlobalVar):
            return PValue(e, e)
        if isinstance(e, Op | Constructor):
            return PValue(None, e)
        if isinstance(e, Function):
            if e.attrs.get("Primitive") == 1:
                return PValue(None, e)
            return PValue(Closure(e, env, level=self.level))
        if isinstance(e, Tuple):
            fields = [self.eval(f, env) for f in e.fields]
            var = self.emit(Tuple(tuple(self.reify(f) for f in fields), span=e.span), "t")
            return PValue(fields, var)
        if isinstance(e, TupleGetItem):
            t = self.eval(e.tuple_value, env)
            if isinstance(t.static, list):
                field_value: PValue = t.static[e.index]
                return field_value
            return _dynamic(self.emit(TupleGetItem(self.reify(t), e.index, span=e.span)))
        if isinstance(e, If):
            return self.eval_if(e, env, None)[0]
        if isinstance(e, Match):
            return self.eval_match(e, env)
        if isinstance(e, Call):
            return self.eval_call(e, env)
        if isinstance(e, RefCreate):
            value = self.eval(e.value, env)
            cell = Ref(next(self.refs))
            var = self.emit(RefCreate(self.reify(value), span=e.span), "r")
            self.store[cell.id] = value
            return PValue(cell, var)
        if isinstance(e, RefRead):
            ref = self.eval(e.ref, env)
            if isinstance(ref.static, Ref) and self.store.get(ref.static.id) is not None:
                known = self.store[ref.static.id]
                assert known is not None
                return known
            read = _dynamic(self.emit(RefRead(self.reify(ref), span=e.span), "v"))
            if isinstance(ref.static, Ref):
                self.store[ref.static.id] = read
            return read
        if isinstance(e, RefWrite):
            ref = self.eval(e.ref, env)
            value = self.eval(e.value, env)
            var = self.emit(RefWrite(self.reify(ref), self.reify(value), span=e.span), "_")
            if isinstance(ref.static, Ref):
                self.store[ref.static.id] = value
            else:
                self.store = {}  # an unknown cell: any of them
            return PValue([], var)
        raise RelayError(f"partial evaluation cannot handle a {type(e).__name__}")

    # -- control -----------------------------------------------------------------------------

    def eval_if(
        self, e: If, env: dict[Var, PValue], rest: tuple[Var, Expr] | None
    ) -> tuple[PValue, bool]:
        """``if``; with ``rest``, the ``let`` binding its value and the expression after it.
        When the branches leave the store knowing different things that the join would
        forget (each wrote its own backward step onto a tape), ``rest`` is evaluated in
        each branch instead, within :data:`MAX_DUPLICATIONS` per function: the result is
        then the whole chain's value (second result True)."""
        cond = self.eval(e.cond, env)
        if isinstance(cond.static, np.ndarray) and cond.static.shape == ():
            return self.eval(e.true_branch if bool(cond.static) else e.false_branch, env), False
        atom = self.reify(cond)
        before = self.store
        outs, stores = self.branches_of(e, env, before, None)
        if rest is not None and self.duplications < MAX_DUPLICATIONS and _lossy(stores):
            self.duplications += 1
            outs, stores = self.branches_of(e, env, before, rest)
            self.store = _join(before, stores)
            return _dynamic(self.emit(If(atom, outs[0], outs[1], span=e.span), "if")), True
        self.store = _join(before, stores)
        return _dynamic(self.emit(If(atom, outs[0], outs[1], span=e.span), "if")), False

    def branches_of(
        self,
        e: If,
        env: dict[Var, PValue],
        before: dict[int, PValue | None],
        rest: tuple[Var, Expr] | None,
    ) -> tuple[list[Expr], list[dict[int, PValue | None]]]:
        """Each branch of ``e`` residualized from the store ``before`` (followed by
        ``rest``, when given), and the store each leaves."""
        outs: list[Expr] = []
        stores: list[dict[int, PValue | None]] = []

        def run(branch: Expr) -> PValue:
            # variables are bound once in a program: the branch may extend env as is
            value = self.eval(branch, env)
            if rest is None:
                return value
            env[rest[0]] = value
            return self.eval(rest[1], env)

        self.branches += 1
        try:
            for branch in (e.true_branch, e.false_branch):
                self.store = dict(before)
                outs.append(self.block(lambda b=branch: run(b)))
                stores.append(self.store)
        finally:
            self.branches -= 1
        return outs, stores

    def eval_match(self, e: Match, env: dict[Var, PValue]) -> PValue:
        data = self.eval(e.data, env)
        for clause in e.clauses:
            bound: dict[Var, PValue] = {}
            decided = _static_match(clause.lhs, data, bound)
            if decided is None:
                break  # undecidable here: residualize the whole match
            if decided:
                inner = dict(env)
                inner.update(bound)
                return self.eval(clause.rhs, inner)
        atom = self.reify(data)  # undecided, or no clause matches: the residual match decides
        before = self.store
        stores: list[dict[int, PValue | None]] = []
        clauses = []
        self.branches += 1
        try:
            for clause in e.clauses:
                self.store = dict(before)
                pattern = _fresh_pattern(clause.lhs, env)
                rhs = self.block(lambda c=clause: self.eval(c.rhs, env))
                clauses.append(Clause(pattern, rhs, span=clause.span))
                stores.append(self.store)
        finally:
            self.branches -= 1
        self.store = _join(before, stores)
        match = Match(atom, tuple(clauses), e.complete, span=e.span)
        return _dynamic(self.emit(match, "m"))

    # -- calls -------------------------------------------------------------------------------

    def eval_call(self, e: Call, env: dict[Var, PValue]) -> PValue:
        callee = self.eval(e.op, env)
        args = [self.eval(a, env) for a in e.args]
        op = callee.residual
        if isinstance(op, Op):
            return self.operator(e, op, args)
        if isinstance(op, Constructor):
            fields = [self.reify(a) for a in args]
            var = self.emit(Call(op, tuple(fields), e.attrs, e.type_args, span=e.span), "c")
            return PValue((op, args), var)
        target = callee.static
        if isinstance(target, GlobalVar):
            func = self.mod.functions.get(target)
            if isinstance(func, Function) and func.attrs.get("Primitive") != 1:
                return self.unfold(e, Closure(func, {}), args, residual=target)
        # inside a residual function body, only closures made in that body are unfolded:
        # the body runs later, and unfolding the closures it reaches from outside (a tape
        # of backward steps, each calling the one before) would copy them into every body
        if (
            isinstance(target, Closure)
            and id(target) not in self.reifying
            and target.level == self.level
        ):
            return self.unfold(e, target, args, residual=None)
        return self.residual_call(e, self.reify(callee), args)

    def operator(self, e: Call, op: Op, args: list[PValue]) -> PValue:
        from relay.passes.common_subexpr import is_pure_op

        if is_pure_op(op) and all(_constant_value(a) for a in args):
            constants = tuple(_constant_expr(a) for a in args)
            folded = self.folder._fold(Call(op, constants, e.attrs, e.type_args, span=e.span))
            if isinstance(folded, Constant):
                return PValue(folded.data, folded)
        residuals = tuple(self.reify(a) for a in args)
        return _dynamic(self.emit(Call(op, residuals, e.attrs, e.type_args, span=e.span)))

    def residual_call(self, e: Call, callee: Expr, args: list[PValue]) -> PValue:
        residuals = tuple(self.reify(a) for a in args)
        var = self.emit(Call(callee, residuals, e.attrs, e.type_args, span=e.span), "r")
        self.store = {}  # the callee may write any cell
        return _dynamic(var)

    def unfold(self, e: Call, c: Closure, args: list[PValue], residual: Expr | None) -> PValue:
        """``c`` applied to ``args``: its body evaluated (see the module docstring for when
        it is not, and a residual call is emitted instead)."""
        func = c.func
        if func.type_params or len(func.params) != len(args):
            return self.residual_call(e, residual or self.reify_closure(c), args)
        signature = tuple(_signature(a) for a in args)
        # the same function: a global, or the same closure (closures of one literal made
        # in different environments, as the backward steps of a tape, are different)
        key: object = func if residual is not None else c
        for u in reversed(self.unfolding):
            if u.func is key and (u.signature == signature or u.branches != self.branches):
                return self.residual_call(e, residual or self.reify_closure(c), args)
        if self.fuel <= 0 or len(self.unfolding) >= MAX_DEPTH:
            return self.residual_call(e, residual or self.reify_closure(c), args)
        self.fuel -= 1
        env = dict(c.env)
        for p, a in zip(func.params, args, strict=True):
            env[p] = a
        if c.name is not None:
            env.setdefault(c.name, PValue(c))
        self.unfolding.append(_Unfolding(key, signature, self.branches))
        try:
            return self.eval(func.body, env)
        finally:
            self.unfolding.pop()


# -- helpers ----------------------------------------------------------------------------------------


def _constant_value(v: PValue) -> bool:
    s = v.static
    if isinstance(s, np.ndarray):
        return True
    if isinstance(s, list):
        return all(_constant_value(f) for f in s)
    return False


def _constant_expr(v: PValue) -> Expr:
    """A constant value (see :func:`_constant_value`) as a constant expression."""
    if isinstance(v.static, np.ndarray):
        return Constant(v.static)
    return Tuple(tuple(_constant_expr(f) for f in v.static))


def _signature(v: PValue) -> Any:
    """The static part of a value, comparable (for the unfolding's recursion check)."""
    s = v.static
    if isinstance(s, np.ndarray):
        return ("c", s.dtype.str, s.shape, s.tobytes())
    if isinstance(s, list):
        return ("t", tuple(_signature(f) for f in s))
    if isinstance(s, tuple):
        return ("adt", id(s[0]), tuple(_signature(f) for f in s[1]))
    if isinstance(s, Closure):
        return ("fn", id(s.func))
    if isinstance(s, GlobalVar):
        return ("g", s.name_hint)
    if isinstance(s, Ref):
        return ("ref", s.id)
    return None


def _lossy(stores: list[dict[int, PValue | None]]) -> bool:
    """Whether some cell's contents are known after every branch, but differ."""
    keys = set().union(*stores)
    for k in keys:
        values = [s.get(k) for s in stores]
        if all(v is not None for v in values) and any(v is not values[0] for v in values):
            return True
    return False


def _join(
    before: dict[int, PValue | None], stores: list[dict[int, PValue | None]]
) -> dict[int, PValue | None]:
    """The store after branches: what every branch agrees on (an entry a branch forgot or
    changed is unknown)."""
    keys = set(before).union(*stores)
    out: dict[int, PValue | None] = {}
    for k in keys:
        values = [s.get(k) for s in stores]
        first = values[0]
        out[k] = first if first is not None and all(v is first for v in values) else None
    return out


def _static_match(p: Pattern, v: PValue, bound: dict[Var, PValue]) -> bool | None:
    """Whether ``p`` matches ``v``, binding into ``bound``; None when that is not known at
    compile time."""
    if isinstance(p, PatternWildcard):
        return True
    if isinstance(p, PatternVar):
        bound[p.var] = v
        return True
    if isinstance(p, PatternConstructor):
        s = v.static
        if not isinstance(s, tuple) or len(s) != 2 or not isinstance(s[0], Constructor):
            return None
        if s[0] is not p.constructor and s[0].name_hint != p.constructor.name_hint:
            return False
        for sub, f in zip(p.patterns, s[1], strict=True):
            r = _static_match(sub, f, bound)
            if r is not True:
                return r
        return True
    if isinstance(p, PatternTuple):
        s = v.static
        if not isinstance(s, list):
            return None
        for sub, f in zip(p.patterns, s, strict=True):
            r = _static_match(sub, f, bound)
            if r is not True:
                return r
        return True
    return None


def _fresh_pattern(p: Pattern, env: dict[Var, PValue]) -> Pattern:
    """``p`` with fresh variables, bound in ``env`` as dynamic values."""
    if isinstance(p, PatternVar):
        var = Var(p.var.name_hint, p.var.type_annotation)
        env[p.var] = _dynamic(var)
        return PatternVar(var, span=p.span)
    if isinstance(p, PatternConstructor):
        subs = tuple(_fresh_pattern(s, env) for s in p.patterns)
        return PatternConstructor(p.constructor, subs, span=p.span)
    if isinstance(p, PatternTuple):
        return PatternTuple(tuple(_fresh_pattern(s, env) for s in p.patterns), span=p.span)
    return p


# -- dead cells --------------------------------------------------------------------------------------


def remove_write_only_refs(expr: Expr) -> Expr:
    """``expr`` (in A-normal form) without the reference cells it only ever writes: each
    such ``let %r = ref(v)`` and every ``ref_write(%r, ...)`` are dropped (a write's
    binding is left as ``()``, for dead-code elimination)."""
    from relay.ir.expr import children
    from relay.ir.functor import ExprMutator

    uses: dict[Var, int] = {}
    writes: dict[Var, int] = {}
    cells: set[Var] = set()
    stack: list[Expr] = [expr]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            uses[e] = uses.get(e, 0) + 1
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Let):
            if isinstance(e.value, RefCreate):
                cells.add(e.var)
            stack.extend((e.value, e.body))
            continue
        if isinstance(e, Function):
            stack.append(e.body)
            continue
        if isinstance(e, RefWrite) and isinstance(e.ref, Var):
            writes[e.ref] = writes.get(e.ref, 0) + 1
        if isinstance(e, Match):
            stack.append(e.data)
            stack.extend(c.rhs for c in e.clauses)
            continue
        stack.extend(children(e))
    dead = {c for c in cells if uses.get(c, 0) == writes.get(c, 0)}
    if not dead:
        return expr

    class Remove(ExprMutator):
        def visit_let(self, let: Let) -> Expr:
            chain: list[tuple[Var, Expr]] = []
            e: Expr = let
            while isinstance(e, Let):
                value = e.value
                if isinstance(value, RefCreate) and e.var in dead:
                    e = e.body
                    continue
                if isinstance(value, RefWrite) and value.ref in dead:
                    chain.append((e.var, Tuple(())))
                else:
                    chain.append((e.var, self.visit(value)))
                e = e.body
            out = self.visit(e)
            for var, value in reversed(chain):
                out = Let(var, value, out)
            return out

    return Remove().visit(expr)


# -- the pass ---------------------------------------------------------------------------------------


def partial_evaluate(func: Function, mod: Module, fuel: int = DEFAULT_FUEL) -> Function:
    """``func`` (a function of ``mod``, typed) partially evaluated: see the module
    docstring. The result is in A-normal form and not yet typed."""
    from relay.passes.dead_code import dead_code_elimination
    from relay.passes.normal_form import to_a_normal_form

    # in A-normal form every value is let-bound: evaluation never recurses through deep
    # dataflow, and a value shared in graph form is evaluated once
    anf = to_a_normal_form(func, mod)
    assert isinstance(anf, Function)
    func = anf
    pe = PartialEvaluator(mod, fuel)
    params = tuple(Var(p.name_hint, param_type(p)) for p in func.params)
    env = {p: _dynamic(q) for p, q in zip(func.params, params, strict=True)}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000 + 40 * MAX_DEPTH))
    try:
        body = pe.block(lambda: pe.eval(func.body, env))
    except RecursionError:  # nesting deeper than the stack allows: leave it as it was
        from relay import flags

        flags.debug_print(1, "partial evaluation ran out of stack; the function is kept")
        return anf
    finally:
        sys.setrecursionlimit(limit)
    out: Expr = Function(params, body, func.ret_type, func.type_params, func.attrs, span=func.span)
    # dead bindings hide which cells are only written (a dead tuple holding one): alternate
    while True:
        out = dead_code_elimination(out, mod)
        fewer = remove_write_only_refs(out)
        if fewer is out:
            break
        out = fewer
    assert isinstance(out, Function)
    return out


def PartialEvaluate(fuel: int = DEFAULT_FUEL) -> Pass:
    """The pass applying :func:`partial_evaluate` to every global function (fused
    ``Primitive=1`` ones excepted), then inferring types."""

    def fn(mod: Module, ctx: PassContext) -> Module:
        from relay.typecheck.checker import infer_type

        out = mod.copy()
        for gv, func in list(mod.functions.items()):
            if func.attrs.get("Primitive") == 1:
                continue
            out.update_func(gv, partial_evaluate(func, mod, fuel))
        typed = infer_type(out)
        assert isinstance(typed, Module)
        return typed

    return ModulePass(fn, PassInfo("PartialEvaluate", 2))


__all__ = [
    "DEFAULT_FUEL",
    "PartialEvaluate",
    "PartialEvaluator",
    "partial_evaluate",
    "remove_write_only_refs",
]
