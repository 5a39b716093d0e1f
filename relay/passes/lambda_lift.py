"""Lambda lifting: every local function becomes a global function.

After TVM's ``src/relay/transforms/lambda_lift.cc`` (and Johnsson, "Lambda lifting:
transforming programs to recursive equations", 1985). Each ``fn`` nested inside a global
function (innermost first) is moved to a new global ``@<enclosing>_lifted<N>``:

* with no free variables it becomes that global as it is, and its occurrence becomes the
  global's name::

      let %f = fn (%y: T) { add(%y, 1f) };  ==>  def @main_lifted0(%y: T) -> T { add(%y, 1f) }
      %f(%x)                                      ... let %f = @main_lifted0; %f(%x)

* with free variables ``%a, %b`` (its *captured* variables) it becomes, as in TVM, a global
  that takes the captured values and returns the closure, marked ``Closure=1``::

      def @main_lifted0(%a: A, %b: B) -> fn (T) -> U {
        fn (%y: T, Closure=1) -> U { ... %a ... %b ... }
      }

  and its occurrence becomes ``@main_lifted0(%a, %b)``. The global's parameters are fresh
  variables standing for the captured ones (annotated with their inferred types), so the
  result binds each variable once.

A recursive local function ``let %f = fn (...) { ... %f(...) ... }`` refers to itself
through the ``let``; in the lifted global that reference becomes ``@g`` (nothing captured)
or ``@g(captured...)``, and the ``let`` binds ``%f`` to the same outside.

Types: the lifted function's parameters without annotations, or with annotations that have
holes (``_``, as inlining a polymorphic function leaves them), get their inferred types,
its return type is filled in likewise (so the pass requires ``InferType``), a polymorphic
function keeps its own type parameters, and the type variables of the enclosing function
that occur in the lifted code (through the captured variables' types or annotations)
become leading type parameters of the new global; type inference instantiates them at each
use. Functions marked ``Primitive=1`` (fused kernels) are not lifted, and a global whose
body is a ``Closure=1`` function (the output of this pass) keeps that function, so the pass
is idempotent. Each lifted function is walked once more to rename its captured variables,
so the work is the program's size times the nesting depth of local functions.
"""

from __future__ import annotations

from collections.abc import Iterable

from relay.ir.analysis import free_vars
from relay.ir.expr import Call, Expr, Function, GlobalVar, Let, Match, Var, children, pattern_vars
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import FuncType, Type, TypeVar, free_type_vars
from relay.passes.inline import substitute
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo
from relay.typecheck.relation import is_complete

__all__ = ["LambdaLift", "lambda_lift"]


class _NeedTypes(Exception):
    """Raised when lifting needs a type that neither inference nor an annotation gives."""


def _var_type(v: Var) -> Type:
    """The inferred type of ``v``, or its annotation when inference has not seen it."""
    ty = v._checked_type if v._checked_type is not None else v.type_annotation
    if ty is None:
        raise _NeedTypes
    return ty


def _function_type(f: Function) -> FuncType:
    """The inferred type of ``f``, or the one its annotations spell out."""
    ty = f._checked_type
    if isinstance(ty, FuncType):
        return ty
    args = [p.type_annotation for p in f.params]
    if f.ret_type is None or any(a is None for a in args):
        raise _NeedTypes
    return FuncType(tuple(a for a in args if a is not None), f.ret_type, f.type_params)


def _free_type_vars_of(func: Function, extra: Iterable[Type]) -> list[TypeVar]:
    """Type variables used in ``func``'s annotations or ``extra`` and bound by no function
    inside ``func`` (``func``'s own type parameters included), in order of occurrence."""
    types: list[Type] = list(extra)
    bound: set[TypeVar] = set()
    seen: set[int] = set()
    stack: list[Expr] = [func]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Var) and node.type_annotation is not None:
            types.append(node.type_annotation)
        elif isinstance(node, Function):
            bound.update(node.type_params)
            if node.ret_type is not None:
                types.append(node.ret_type)
        elif isinstance(node, Call):
            types.extend(node.type_args)
        elif isinstance(node, Match):
            for c in node.clauses:
                stack.extend(pattern_vars(c.lhs))
        stack.extend(children(node))
    out: list[TypeVar] = []
    found: set[TypeVar] = set()
    for t in types:
        for tv in free_type_vars(t):
            if tv not in bound and tv not in found:
                found.add(tv)
                out.append(tv)
    return out


class _Lifter(ExprMutator):
    """Lifts the local functions of one global's body into ``self.mod``."""

    previsit = frozenset({Function})

    def __init__(self, mod: Module, owner: str, letrec: dict[Function, Var]) -> None:
        super().__init__()
        self.mod = mod
        self.owner = owner
        self.letrec = letrec

    def fresh_global(self) -> GlobalVar:
        k = 0
        while f"{self.owner}_lifted{k}" in self.mod:
            k += 1
        return GlobalVar(f"{self.owner}_lifted{k}")

    def visit_function(self, f: Function) -> Expr:
        """Lift ``f`` (its nested functions already lifted); return what replaces it."""
        new = super().visit_function(f)
        if f.attrs.get("Primitive") == 1:
            return new
        assert isinstance(new, Function)
        ft = _function_type(f)
        rec_var = self.letrec.get(f)
        captured = [v for v in free_vars(new) if v is not rec_var]
        subst: dict[Var, Expr] = {}
        params: list[Var] = []
        for p, ty in zip(new.params, ft.arg_types, strict=True):
            # an annotation with a hole (`_`, as inlining a polymorphic function leaves) is
            # replaced by the inferred type: a global's signature is checked on its own
            if p.type_annotation is None or (
                not is_complete(p.type_annotation) and is_complete(ty)
            ):
                q = Var(p.name_hint, ty, span=p.span)
                subst[p] = q
                params.append(q)
            else:
                params.append(p)
        cap_params: list[Var] = []
        for v in captured:
            q = Var(v.name_hint, _var_type(v), span=v.span)
            subst[v] = q
            cap_params.append(q)
        ret_type = new.ret_type
        if ret_type is None or (not is_complete(ret_type) and is_complete(ft.ret_type)):
            ret_type = ft.ret_type
        gv = self.fresh_global()
        if rec_var is not None:
            subst[rec_var] = Call(gv, tuple(cap_params)) if cap_params else gv
        body = substitute(new.body, subst)
        lifted = Function(tuple(params), body, ret_type, new.type_params, new.attrs, span=f.span)
        tps = _free_type_vars_of(
            lifted, [t for q in cap_params if (t := q.type_annotation) is not None]
        )
        tps = [tv for tv in tps if tv not in new.type_params]
        if not cap_params:
            self.mod.add(
                gv,
                Function(
                    lifted.params,
                    lifted.body,
                    ret_type,
                    (*tps, *new.type_params),
                    lifted.attrs,
                    span=f.span,
                ),
            )
            return gv
        closure = lifted.with_attr("Closure", 1)
        closure_type = FuncType(
            tuple(p.type_annotation for p in params if p.type_annotation is not None),
            ret_type,
            new.type_params,
        )
        self.mod.add(
            gv, Function(tuple(cap_params), closure, closure_type, tuple(tps), span=f.span)
        )
        return Call(gv, tuple(captured), span=f.span)


def _letrec_candidates(expr: Expr) -> dict[Function, Var]:
    """Each function bound directly by a ``let``, mapped to the ``let``'s variable."""
    out: dict[Function, Var] = {}
    seen: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Let) and isinstance(node.value, Function):
            out[node.value] = node.var
        stack.extend(children(node))
    return out


def lambda_lift(mod: Module) -> Module:
    """A new module in which every local function is a global (see the module docstring).

    When a lifted function's types are neither inferred nor annotated, type inference runs
    on ``mod`` (recording types on its nodes) and lifting starts again."""
    try:
        return _lift_all(mod)
    except _NeedTypes:
        from relay.typecheck.checker import check_module

        check_module(mod)
        return _lift_all(mod)


def _lift_all(mod: Module) -> Module:
    out = mod.copy()
    for gv, func in mod.functions.items():
        if func.attrs.get("Primitive") == 1:
            continue
        target = func.body
        closure = isinstance(target, Function) and target.attrs.get("Closure") == 1
        if closure:
            assert isinstance(target, Function)
            target = target.body
        lifter = _Lifter(out, gv.name_hint, _letrec_candidates(target))
        body = lifter.visit(target)
        if body is target:
            continue
        if closure:
            inner = func.body
            assert isinstance(inner, Function)
            body = Function(
                inner.params, body, inner.ret_type, inner.type_params, inner.attrs, span=inner.span
            )
        out.update_func(
            gv,
            Function(
                func.params, body, func.ret_type, func.type_params, func.attrs, span=func.span
            ),
        )
    return out


def LambdaLift() -> Pass:
    """The pass: lift local functions to globals (opt level 0; requires ``InferType``)."""

    def run(mod: Module, ctx: PassContext) -> Module:
        return lambda_lift(mod)

    return ModulePass(run, PassInfo("LambdaLift", 0, ("InferType",)))
