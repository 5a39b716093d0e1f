"""Eta-expansion of globals and constructors that are used as values.

Eta-expansion rewrites a function-valued expression ``f`` into ``fn (%x1, ..., %xn) {
f(%x1, ..., %xn) }``. Following TVM's ``src/relay/transforms/eta_expand.cc``, two kinds of
expression are expanded, each under its own flag, wherever they are *not* the callee of a
call (there they are already applied):

* a global variable (``expand_global_var``): ``@g`` becomes
  ``fn (%eta_expand_param: T1, ...) -> R { @g(%eta_expand_param, ...) }``, the parameters
  annotated as ``@g``'s parameters are and the result as ``@g``'s; a polymorphic ``@g``
  gives a polymorphic function, with fresh type parameters;
* a constructor (``expand_constructor``): ``Cons`` becomes
  ``fn [A] (%eta_expand_param: A, %eta_expand_param1: List[A]) -> List[A] { Cons(...) }``,
  the parameters typed by the constructor's inputs, over fresh copies of its data type's
  type parameters.

Each occurrence gets its own function (so the result stays a tree where the input was).
Globals that are not functions of the module (unknown names) are left alone. The pass is
one walk of each global function, linear in its size and iterative (deep programs are fine).
"""

from __future__ import annotations

from relay.ir.expr import Call, Constructor, Expr, Function, GlobalVar, Var
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import Type, TypeCall, TypeData, TypeVar
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo
from relay.typecheck.subst import subst_type


def _fresh(tvs: tuple[TypeVar, ...]) -> tuple[tuple[TypeVar, ...], dict[TypeVar, object]]:
    new = tuple(TypeVar(tv.name_hint, tv.kind) for tv in tvs)
    return new, dict(zip(tvs, new, strict=True))


def _subst(t: Type | None, mapping: dict[TypeVar, object]) -> Type | None:
    if t is None or not mapping:
        return t
    return subst_type(t, mapping)


def param_type(p: Var) -> Type | None:
    """A parameter's annotation, or its inferred type if it has none (None if neither)."""
    if p.type_annotation is not None:
        return p.type_annotation
    try:
        return p.checked_type
    except ValueError:
        return None


class _EtaExpander(ExprMutator):
    previsit = frozenset({Call})

    def __init__(self, mod: Module, expand_constructor: bool, expand_global_var: bool) -> None:
        super().__init__()
        self.mod = mod
        self.expand_constructor = expand_constructor
        self.expand_global_var = expand_global_var

    def visit(self, expr: Expr) -> Expr:
        # Not memoized: each occurrence gets its own function.
        if isinstance(expr, GlobalVar) and self.expand_global_var:
            return self.expand_global(expr)
        if isinstance(expr, Constructor) and self.expand_constructor:
            return self.expand_ctor(expr)
        return super().visit(expr)

    def visit_call(self, call: Call) -> Expr:
        # An applied global or constructor is left as it is; its arguments are visited.
        op = call.op if isinstance(call.op, GlobalVar | Constructor) else self.visit(call.op)
        args = tuple(self.visit(a) for a in call.args)
        if op is call.op and all(a is b for a, b in zip(args, call.args, strict=True)):
            return call
        return Call(op, args, call.attrs, call.type_args, span=call.span)

    def expand_global(self, gv: GlobalVar) -> Expr:
        """``fn (params) { @g(params) }`` typed as ``@g`` is, or ``@g`` if it is unknown."""
        func = self.mod.functions.get(gv)
        if func is None:
            return gv
        type_params, mapping = _fresh(func.type_params)
        params = tuple(Var("eta_expand_param", _subst(param_type(p), mapping)) for p in func.params)
        body = Call(gv, params, span=gv.span)
        return Function(params, body, _subst(func.ret_type, mapping), type_params, span=gv.span)

    def expand_ctor(self, c: Constructor) -> Expr:
        """``fn [params] (inputs) { C(inputs) }`` over fresh type parameters."""
        data = self._type_data(c)
        if data is None:
            return c
        type_params, mapping = _fresh(data.type_params)
        params = tuple(Var("eta_expand_param", _subst(t, mapping)) for t in c.inputs)
        ret: Type = TypeCall(data.header, type_params) if type_params else data.header
        return Function(params, Call(c, params, span=c.span), ret, type_params, span=c.span)

    def _type_data(self, c: Constructor) -> TypeData | None:
        if c.belong_to is None:
            return None
        data = self.mod.type_definitions.get(c.belong_to)
        if data is None:
            try:
                data = self.mod.get_type(c.belong_to.name_hint)
            except KeyError:
                return None
        return data


def eta_expand(
    expr: Expr,
    mod: Module,
    expand_constructor: bool = False,
    expand_global_var: bool = False,
) -> Expr:
    """``expr`` with each global (``expand_global_var``) and each constructor
    (``expand_constructor``) that is not a callee replaced by a function calling it.

    ``mod`` holds the globals' definitions and the constructors' data types."""
    return _EtaExpander(mod, expand_constructor, expand_global_var).visit(expr)


def EtaExpand(expand_constructor: bool = False, expand_global_var: bool = False) -> Pass:
    """The pass applying :func:`eta_expand` to every global function of a module."""

    def fn(mod: Module, ctx: PassContext) -> Module:
        for gv, func in list(mod.functions.items()):
            if func.attrs.get("Primitive") == 1:
                continue
            new = _EtaExpander(mod, expand_constructor, expand_global_var).visit(func)
            if new is not func:
                assert isinstance(new, Function)
                mod.update_func(gv, new)
        return mod

    return ModulePass(fn, PassInfo("EtaExpand", 1))


__all__ = ["EtaExpand", "eta_expand"]
