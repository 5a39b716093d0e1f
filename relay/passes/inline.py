"""Inlining the global functions marked ``Inline=1`` at their call sites.

After TVM's ``src/relay/transforms/inline.cc``. A call ``@f(a, b)`` of a global whose
function carries the attribute ``Inline=1`` becomes

    let %x' = a; let %y' = b; <a copy of @f's body with fresh variables>

so the arguments are evaluated once and in order, as the call would have; every variable
bound in the copy (parameters, ``let`` binders, pattern variables) is a fresh one, so the
result stays well formed (each variable bound once) even when ``@f`` is inlined many times.
A polymorphic ``@f``'s type parameters become, at each site, the call's type arguments when
it has them and otherwise unknowns (``_``) that type inference fills in.

Inlining is transitive: marked globals are processed callees first (the strongly connected
components of the call graph among marked globals, found by Tarjan's algorithm, come out in
that order), so inlining ``@f`` also brings in what ``@f`` inlined. A marked global that is
recursive (on a cycle of references among marked globals, itself included) is never inlined
-- expanding it would not terminate -- and its calls stay calls. A marked global that only
occurs as a value (passed, stored) stays as a global.

Afterwards the marked globals that no remaining unmarked global (nor ``main``) refers to
are removed from the module. The work is linear in the size of the output: one walk over
each function plus one copy per inlined call site.

:func:`copy_with_fresh_vars` and :func:`substitute`, the copying used here, are shared with
the other passes of this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from relay.ir.analysis import bound_vars, global_vars
from relay.ir.expr import Call, Expr, Function, GlobalVar, Let, Var
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import IncompleteType, Type, TypeVar
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo
from relay.passes.remove_unused import reachable_globals
from relay.typecheck.subst import subst_type

__all__ = [
    "Inline",
    "copy_with_fresh_vars",
    "expand_call",
    "inline",
    "inline_candidates",
    "substitute",
]


class _Copier(ExprMutator):
    """Replaces free variables by ``subst`` and ``binders`` by fresh variables (every
    variable not in ``subst`` when ``binders`` is None: for closed expressions, where this
    spares a walk to find the binders)."""

    def __init__(
        self,
        subst: Mapping[Var, Expr],
        binders: set[Var] | None,
        type_subst: Mapping[TypeVar, Type],
    ) -> None:
        super().__init__()
        self.subst: dict[Var, Expr] = dict(subst)
        self.binders = binders
        self.type_subst = type_subst

    def visit_type(self, ty: Type) -> Type:
        """Apply the type substitution."""
        return subst_type(ty, self.type_subst) if self.type_subst else ty

    def visit_var(self, var: Var) -> Expr:
        """The substitute of ``var``; a binder gets a fresh variable the first time."""
        found = self.subst.get(var)
        if found is not None:
            return found
        if self.binders is None or var in self.binders:
            ann = var.type_annotation
            new = Var(var.name_hint, None if ann is None else self.visit_type(ann), span=var.span)
            self.subst[var] = new
            return new
        return var


def copy_with_fresh_vars(
    expr: Expr,
    subst: Mapping[Var, Expr] | None = None,
    type_subst: Mapping[TypeVar, Type] | None = None,
) -> Expr:
    """A copy of ``expr`` in which every variable it binds is a fresh one, the free
    variables in ``subst`` are replaced by their values, and type annotations have the type
    variables in ``type_subst`` replaced. Sub-expressions that bind and mention nothing
    substituted are shared with ``expr``. Works without recursion on deep programs."""
    copier = _Copier(subst or {}, set(bound_vars(expr)), type_subst or {})
    return copier.visit(expr)


def substitute(expr: Expr, subst: Mapping[Var, Expr]) -> Expr:
    """``expr`` with the free variables in ``subst`` replaced (binders kept as they are)."""
    if not subst:
        return expr
    return _Copier(subst, set(), {}).visit(expr)


def _sccs(
    nodes: Sequence[GlobalVar], edges: Mapping[GlobalVar, list[GlobalVar]]
) -> list[list[GlobalVar]]:
    """Tarjan's strongly connected components, iteratively, callees' components first."""
    index: dict[GlobalVar, int] = {}
    low: dict[GlobalVar, int] = {}
    on_stack: set[GlobalVar] = set()
    stack: list[GlobalVar] = []
    out: list[list[GlobalVar]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[GlobalVar, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = edges.get(v, [])
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp: list[GlobalVar] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w is v:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def inline_candidates(mod: Module) -> list[GlobalVar]:
    """The globals that :func:`inline` expands: those marked ``Inline=1`` that are not
    recursive through marked globals, callees before their callers."""
    marked = [gv for gv, f in mod.functions.items() if f.attrs.get("Inline") == 1]
    marked_set = set(marked)
    edges = {
        gv: [g for g in global_vars(mod.functions[gv].body) if g in marked_set] for gv in marked
    }
    order: list[GlobalVar] = []
    for comp in _sccs(marked, edges):
        if len(comp) == 1 and comp[0] not in edges[comp[0]]:
            order.append(comp[0])
    return order


class _Inliner(ExprMutator):
    """Expands calls of the globals in ``bodies``."""

    previsit = frozenset({Call})

    def __init__(self, bodies: Mapping[GlobalVar, Function]) -> None:
        super().__init__()
        self.bodies = bodies

    def visit_call(self, call: Call) -> Expr:
        """A call of an inlined global becomes lets of its arguments and a copy of its body."""
        new = super().visit_call(call)
        assert isinstance(new, Call)
        func = self.bodies.get(new.op) if isinstance(new.op, GlobalVar) else None
        if func is None or len(func.params) != len(new.args):
            return new
        return expand_call(func, new.args, new.type_args)


def expand_call(func: Function, args: Sequence[Expr], type_args: Sequence[Type] = ()) -> Expr:
    """``func(args)`` as lets binding fresh copies of the parameters to ``args`` around a
    fresh copy of the body (``type_args`` instantiate ``func``'s type parameters; without
    them each becomes an unknown for type inference)."""
    type_subst: dict[TypeVar, Type] = {}
    if func.type_params:
        if len(type_args) == len(func.type_params):
            type_subst = dict(zip(func.type_params, type_args, strict=True))
        else:
            type_subst = {tv: IncompleteType(tv.kind) for tv in func.type_params}
    copy = _Copier({}, None, type_subst).visit(func)  # a global function is closed
    assert isinstance(copy, Function)
    out = copy.body
    for param, arg in zip(reversed(copy.params), reversed(args), strict=True):
        out = Let(param, arg, out, span=arg.span)
    return out


def inline(mod: Module) -> Module:
    """A new module in which the calls of the globals marked ``Inline=1`` are expanded
    (see the module docstring), and the marked globals left unreferenced are removed."""
    order = inline_candidates(mod)
    out = mod.copy()
    if not order:
        return out
    bodies: dict[GlobalVar, Function] = {}
    for gv in order:  # callees first, so each body already has its own calls expanded
        func = mod.functions[gv]
        body = _Inliner(bodies).visit(func.body)
        if body is not func.body:
            func = Function(
                func.params, body, func.ret_type, func.type_params, func.attrs, span=func.span
            )
            out.update_func(gv, func)
        bodies[gv] = func
    inlined = set(order)
    for gv, func in mod.functions.items():
        if gv in inlined:
            continue
        body = _Inliner(bodies).visit(func.body)
        if body is not func.body:
            out.update_func(
                gv,
                Function(
                    func.params, body, func.ret_type, func.type_params, func.attrs, span=func.span
                ),
            )
    roots = [gv for gv in out.functions if gv not in inlined or gv.name_hint == "main"]
    keep = reachable_globals(out, roots)
    for gv in order:
        if gv not in keep:
            out.remove(gv)
    return out


def Inline() -> Pass:
    """The pass: inline the globals marked ``Inline=1`` (opt level 1)."""

    def run(mod: Module, ctx: PassContext) -> Module:
        return inline(mod)

    return ModulePass(run, PassInfo("Inline", 1))
