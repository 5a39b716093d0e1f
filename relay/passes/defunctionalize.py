"""Defunctionalization: a first-order program from a higher-order one.

Reynolds' defunctionalization ("Definitional interpreters for higher-order programming
languages", 1972; Danvy and Nielsen, "Defunctionalization at work", 2001), for a closed
world: the module reachable from a monomorphic ``main``. TVM's
``src/relay/transforms/defunctionalization.cc`` does the same for calls of first-order
functions with higher-order arguments; this pass removes every function value.

1. **Specialisation.** From ``main`` (which must have no type parameters), each polymorphic
   global is copied once per instantiation reached (``@map`` at ``A=T, B=U`` becomes
   ``@map_0``); the instantiation of a call is read off the inferred types of its arguments
   and result. A global used as a value is eta-expanded (``@g`` becomes
   ``fn (%a) { @g(%a) }``; for a polymorphic global, such as ``@id`` in the prelude's
   ``@iterate``, before specialisation, type inference then giving the expansion's type
   from its context). A local polymorphic function, a polymorphic global whose
   instantiation cannot be told, an operator or constructor used as a value, and a
   constructor with a field of function type (write the data type with a type parameter
   instead, as ``List[A]``) are rejected with a :class:`~relay.errors.CompileError`. Globals not reachable from ``main``
   are dropped.
2. **Defunctionalization.** Each function type ``fn (A...) -> R`` that a value has becomes
   an algebraic data type ``FnN`` and a global ``@applyN(%f: FnN, %a: A...) -> R``. Each
   local function (innermost first) becomes a constructor of its type's data type whose
   fields are its free variables; the function's body becomes a clause of ``@applyN``'s
   ``match`` on that constructor, its parameters replaced by ``@applyN``'s and its free
   variables by the clause's pattern variables. A call whose callee is not a global,
   operator or constructor becomes a call of ``@applyN``. Function types inside other
   types (tuples, lists of closures, references, the types of ``@applyN``'s parameters)
   become the data types too. A recursive ``let %f = fn ... %f ...`` refers to itself in
   its clause by rebuilding its constructor from the clause's pattern variables.

For example, ``let %k = fn (%y: T) { add(%y, %x) }; %k(%z)`` becomes::

    type Fn0 { Fn0_0(T) }
    def @apply0(%f: Fn0, %a0: T) -> T { match (%f) { Fn0_0(%x1) => add(%a0, %x1) } }
    ... let %k: Fn0 = Fn0_0(%x); @apply0(%k, %z)

The result has no ``fn`` expressions other than globals and no calls of non-global
callees. If ``main`` itself returns a function, it returns the data type's value instead.
The pass requires ``InferType``: it reads inferred types (or annotations), and the
specialised copies carry their originals' types, specialised; inference runs again only if
a type is missing. Each local function's body is walked once more when it moves into its
clause, so the work is the program's size times the nesting depth of local functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from relay.errors import CompileError
from relay.ir.analysis import free_vars, sub_expressions
from relay.ir.expr import (
    Call,
    Clause,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternVar,
    Var,
    children,
)
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)
from relay.passes.inline import _Copier, substitute
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo
from relay.typecheck.subst import subst_dim, subst_type

__all__ = ["Defunctionalization", "defunctionalize"]


def _typecheck(mod: Module) -> None:
    from relay.typecheck.checker import check_module

    check_module(mod)


class _NoType(Exception):
    """A node the pass needs the type of has none (inference runs, and the pass again)."""


def _checked(e: Expr) -> Type:
    """The inferred type of ``e``, or the one its annotations give (a variable, a function)."""
    ty = e._checked_type
    if ty is not None:
        return ty
    if isinstance(e, Var) and e.type_annotation is not None:
        return e.type_annotation
    if isinstance(e, Function):
        args = [p.type_annotation for p in e.params]
        if e.ret_type is not None and all(a is not None for a in args):
            return FuncType(tuple(a for a in args if a is not None), e.ret_type, e.type_params)
    raise _NoType


def _bind_type_vars(pat: object, act: object, out: dict[TypeVar, object]) -> None:
    """Bind the type variables of ``pat`` to the matching parts of ``act``."""
    if isinstance(pat, TypeVar):
        out.setdefault(pat, act)
    elif isinstance(pat, TensorType) and isinstance(act, TensorType):
        for pd, ad in zip(pat.shape, act.shape, strict=False):
            _bind_type_vars(pd, ad, out)
        _bind_type_vars(pat.dtype, act.dtype, out)
    elif isinstance(pat, TupleType) and isinstance(act, TupleType):
        for p, a in zip(pat.fields, act.fields, strict=False):
            _bind_type_vars(p, a, out)
    elif isinstance(pat, FuncType) and isinstance(act, FuncType):
        for p, a in zip(pat.arg_types, act.arg_types, strict=False):
            _bind_type_vars(p, a, out)
        _bind_type_vars(pat.ret_type, act.ret_type, out)
    elif isinstance(pat, TypeCall) and isinstance(act, TypeCall):
        _bind_type_vars(pat.func, act.func, out)
        for p, a in zip(pat.args, act.args, strict=False):
            _bind_type_vars(p, a, out)
    elif isinstance(pat, RefType) and isinstance(act, RefType):
        _bind_type_vars(pat.value, act.value, out)


def _subst_value(value: object, mapping: Mapping[TypeVar, object]) -> object:
    if isinstance(value, Type):
        return subst_type(value, mapping)
    return subst_dim(value, mapping)  # type: ignore[arg-type]


def _has_func_type(ty: Type) -> bool:
    if isinstance(ty, FuncType):
        return True
    if isinstance(ty, TupleType):
        return any(_has_func_type(f) for f in ty.fields)
    if isinstance(ty, TypeCall):
        return any(_has_func_type(a) for a in ty.args)
    if isinstance(ty, RefType):
        return _has_func_type(ty.value)
    return False


def _global_type(func: Function) -> FuncType:
    ty = func._checked_type
    if isinstance(ty, FuncType):
        return ty
    args = tuple(p.type_annotation for p in func.params if p.type_annotation is not None)
    if len(args) != len(func.params) or func.ret_type is None:
        raise _NoType
    return FuncType(args, func.ret_type, func.type_params)


# -- 1. specialisation ----------------------------------------------------------------------------

Request = Callable[[GlobalVar, tuple[object, ...]], GlobalVar]


class _Specializer(_Copier):
    """Copies one global at one instantiation, redirecting calls to specialised globals and
    eta-expanding globals used as values."""

    previsit = frozenset({Call})

    def __init__(
        self, mod: Module, func: Function, type_subst: Mapping[TypeVar, Type], request: Request
    ) -> None:
        super().__init__({}, None, type_subst)  # a global function is closed
        self.mod = mod
        self.request = request
        self.top = func

    def visit_function(self, f: Function) -> Expr:
        """Local functions are copied; polymorphic ones are rejected."""
        if f.type_params and f is not self.top:
            raise CompileError(
                "defunctionalize: a local polymorphic function cannot be specialised",
                span=f.span,
            )
        return super().visit_function(f)

    def visit_global_var(self, gv: GlobalVar) -> Expr:
        """A global as a value: ``fn (params) { @g(params) }`` (its own copy per use)."""
        func = self.mod.functions.get(gv)
        if func is None or func.type_params:
            return gv  # a callee (handled in visit_call) or checked for afterwards
        ft = _global_type(func)
        params = tuple(Var(p.name_hint, t) for p, t in zip(func.params, ft.arg_types, strict=True))
        target = self.request(gv, ())
        call = Call(target, params)
        call.set_checked_type(ft.ret_type)
        for p in params:
            p.set_checked_type(p.type_annotation or ft.ret_type)
        eta = Function(params, call, ft.ret_type, span=gv.span)
        eta.set_checked_type(FuncType(ft.arg_types, ft.ret_type))
        return eta

    def copy(self, func: Function) -> Function:
        """The copy of ``func``; each copied node gets its original's type, specialised."""
        new = self.visit(func)
        assert isinstance(new, Function)
        for orig, copy in self.memo.items():
            ty = orig._checked_type
            if copy is not orig and copy._checked_type is None and ty is not None:
                copy.set_checked_type(subst_type(ty, self.type_subst))
        return new

    def visit_call(self, call: Call) -> Expr:
        """Copy the call; a call of a global goes to its specialisation."""
        callee = call.op
        if not isinstance(callee, GlobalVar) or callee not in self.mod.functions:
            return super().visit_call(call)
        args = tuple(self.visit(a) for a in call.args)
        func = self.mod.functions[callee]
        targs: tuple[object, ...] = ()
        if func.type_params:
            if call.type_args and len(call.type_args) == len(func.type_params):
                bound: dict[TypeVar, object] = dict(
                    zip(func.type_params, call.type_args, strict=True)
                )
            else:
                ft = _global_type(func)
                bound = {}
                for p, a in zip(ft.arg_types, call.args, strict=True):
                    _bind_type_vars(p, _checked(a), bound)
                _bind_type_vars(ft.ret_type, _checked(call), bound)
            missing = [tv.name_hint for tv in func.type_params if tv not in bound]
            if missing:
                raise CompileError(
                    f"defunctionalize: cannot tell the type arguments {', '.join(missing)} "
                    f"of @{callee.name_hint} at this call",
                    span=call.span,
                )
            targs = tuple(_subst_value(bound[tv], self.type_subst) for tv in func.type_params)
        return Call(self.request(callee, targs), args, call.attrs, span=call.span)


class _EtaPolymorphic(ExprMutator):
    """Replaces each use of a polymorphic global as a value by its own unannotated
    ``fn (%p...) { @g(%p...) }``, whose types inference then finds from the context."""

    previsit = frozenset({Call})

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self.mod = mod
        self.changed = False

    def visit(self, expr: Expr) -> Expr:
        """A fresh expansion at every occurrence (so no memo for these)."""
        if isinstance(expr, GlobalVar):
            func = self.mod.functions.get(expr)
            if func is not None and func.type_params:
                self.changed = True
                params = tuple(Var(p.name_hint) for p in func.params)
                return Function(params, Call(expr, params), span=expr.span)
        return super().visit(expr)

    def visit_call(self, call: Call) -> Expr:
        """A global callee stays as it is."""
        if not isinstance(call.op, GlobalVar):
            return super().visit_call(call)
        args = tuple(self.visit(a) for a in call.args)
        if all(a is b for a, b in zip(args, call.args, strict=True)):
            return call
        return Call(call.op, args, call.attrs, call.type_args, span=call.span)


def _eta_polymorphic_values(mod: Module) -> Module:
    """``mod`` with polymorphic globals used as values eta-expanded (and typed again), or
    ``mod`` itself when there are none."""
    if not any(f.type_params for f in mod.functions.values()):
        return mod
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        eta = _EtaPolymorphic(mod)
        body = eta.visit(func.body)
        if eta.changed:
            changed = True
            out.update_func(
                gv,
                Function(
                    func.params, body, func.ret_type, func.type_params, func.attrs, span=func.span
                ),
            )
    if not changed:
        return mod
    _typecheck(out)
    return out


def _specialize(mod: Module) -> Module:
    """The module reachable from ``main`` with each polymorphic global specialised."""
    if "main" not in mod or not isinstance(mod["main"], Function):
        raise CompileError("defunctionalize needs a module with a global @main")
    main_gv = mod.get_global_var("main")
    if mod.functions[main_gv].type_params:
        raise CompileError("defunctionalize needs a monomorphic @main (no type parameters)")
    out = Module(type_definitions=dict(mod.type_definitions))
    instances: dict[tuple[GlobalVar, tuple[object, ...]], GlobalVar] = {}
    names = {gv.name_hint for gv in mod.functions}
    work: list[tuple[GlobalVar, GlobalVar, dict[TypeVar, Type]]] = []
    counter = [0]

    def request(gv: GlobalVar, targs: tuple[object, ...]) -> GlobalVar:
        key = (gv, targs)
        found = instances.get(key)
        if found is not None:
            return found
        func = mod.functions[gv]
        if func.type_params:
            while f"{gv.name_hint}_{counter[0]}" in names:
                counter[0] += 1
            new = GlobalVar(f"{gv.name_hint}_{counter[0]}")
            names.add(new.name_hint)
            tsub: dict[TypeVar, Type] = dict(zip(func.type_params, targs, strict=True))  # type: ignore[arg-type]
        else:
            new, tsub = gv, {}
        instances[key] = new
        work.append((gv, new, tsub))
        return new

    request(main_gv, ())
    while work:
        gv, new_gv, tsub = work.pop()
        func = mod.functions[gv]
        copy = _Specializer(mod, func, tsub, request).copy(func)
        out.add(
            new_gv, Function(copy.params, copy.body, copy.ret_type, (), copy.attrs, span=func.span)
        )
    for gv, func in out.functions.items():
        _check_values(gv, func, out)
    for data in out.type_definitions.values():
        for c in data.constructors:
            if any(_has_func_type(t) for t in c.inputs):
                raise CompileError(
                    f"defunctionalize: constructor {c.name_hint} has a field of function type; "
                    "give the data type a type parameter instead"
                )
    return out


def _check_values(gv: GlobalVar, func: Function, mod: Module) -> None:
    """Reject the values step 2 cannot represent: polymorphic globals (left unspecialised),
    operators and constructors used other than as callees."""
    for node in sub_expressions(func.body):
        if isinstance(node, GlobalVar) and node not in mod.functions:
            raise CompileError(
                f"defunctionalize: the polymorphic global @{node.name_hint} is used as a "
                f"value in @{gv.name_hint}; call it, or wrap it in a function",
                span=node.span,
            )
        values = node.args if isinstance(node, Call) else children(node)
        for v in values:
            if isinstance(v, Op | Constructor):
                raise CompileError(
                    f"defunctionalize: {v} is used as a value in @{gv.name_hint}; "
                    "wrap it in a function",
                    span=v.span,
                )


# -- 2. defunctionalization -----------------------------------------------------------------------


class _FnType:
    """The data type, ``apply`` global and clauses standing for one function type."""

    def __init__(self, name: str, apply: str, ft: FuncType, conv: Callable[[Type], Type]) -> None:
        self.header = GlobalTypeVar(name)
        self.apply = GlobalVar(apply)
        self.closure = Var("f", self.header)
        self.params = tuple(Var(f"a{i}", conv(t)) for i, t in enumerate(ft.arg_types))
        self.ret_type = conv(ft.ret_type)
        self.constructors: list[Constructor] = []
        self.clauses: list[Clause] = []


class _Defunc(ExprMutator):
    """Rewrites one (specialised, typed) global: closures to constructors, indirect calls to
    ``apply`` calls, function types to data types."""

    previsit = frozenset({Call, Function})

    def __init__(self, state: _State, letrec: dict[Function, Var]) -> None:
        super().__init__()
        self.state = state
        self.letrec = letrec
        self.var_types: dict[Var, Type] = {}

    def visit_type(self, ty: Type) -> Type:
        """Function types become their data types."""
        return self.state.conv(ty)

    def visit_var(self, var: Var) -> Expr:
        """A variable whose type mentions a function type gets the converted type."""
        ty = var._checked_type or var.type_annotation
        if ty is None:
            raise _NoType
        new_ty = self.state.conv(ty)
        if new_ty == ty:
            self.var_types[var] = ty
            return var
        new = Var(var.name_hint, new_ty, span=var.span)
        self.var_types[new] = new_ty
        return new

    def visit_call(self, call: Call) -> Expr:
        """Direct calls stay; a call of a function value goes through ``apply``."""
        args = tuple(self.visit(a) for a in call.args)
        type_args = tuple(self.state.conv(t) for t in call.type_args)
        if isinstance(call.op, GlobalVar | Op | Constructor):
            return Call(call.op, args, call.attrs, type_args, span=call.span)
        ft = _checked(call.op)
        if not isinstance(ft, FuncType):
            raise CompileError(f"defunctionalize: cannot call a value of type {ft}", span=call.span)
        fn = self.state.fn_type(ft)
        return Call(fn.apply, (self.visit(call.op), *args), span=call.span)

    def visit_function(self, f: Function) -> Expr:
        """A local function becomes a constructor of its type's data type."""
        new = super().visit_function(f)
        assert isinstance(new, Function)
        ft = _checked(f)
        assert isinstance(ft, FuncType)
        fn = self.state.fn_type(ft)
        rec = self.letrec.get(f)
        rec_new = self.visit(rec) if rec is not None else None
        captured = [v for v in free_vars(new) if v is not rec_new]
        field_types = tuple(self.var_types.get(v) or _checked(v) for v in captured)
        con = Constructor(
            f"{fn.header.name_hint}_{len(fn.constructors)}",
            field_types,
            fn.header,
            len(fn.constructors),
        )
        fn.constructors.append(con)
        fields = [Var(v.name_hint, t) for v, t in zip(captured, field_types, strict=True)]
        subst: dict[Var, Expr] = dict(zip(captured, fields, strict=True))
        subst.update(zip(new.params, fn.params, strict=True))
        if isinstance(rec_new, Var):
            subst[rec_new] = Call(con, tuple(fields))
        body = substitute(new.body, subst)
        pattern = PatternConstructor(con, tuple(PatternVar(v) for v in fields))
        fn.clauses.append(Clause(pattern, body))
        return Call(con, tuple(captured), span=f.span)


class _State:
    """The function types met so far and their data types."""

    def __init__(self, taken: set[str]) -> None:
        self.fn_types: dict[FuncType, _FnType] = {}
        self.order: list[_FnType] = []
        self.taken = taken
        self.counter = 0

    def fn_type(self, ft: FuncType) -> _FnType:
        key = FuncType(ft.arg_types, ft.ret_type)
        found = self.fn_types.get(key)
        if found is None:
            while {f"Fn{self.counter}", f"apply{self.counter}"} & self.taken:
                self.counter += 1
            k = self.counter
            self.counter += 1
            found = _FnType(f"Fn{k}", f"apply{k}", key, self.conv)
            self.fn_types[key] = found
            self.order.append(found)
        return found

    def conv(self, ty: Type) -> Type:
        """``ty`` with every function type replaced by its data type."""
        if isinstance(ty, FuncType):
            if ty.type_params:
                raise CompileError("defunctionalize: a polymorphic function value")
            return self.fn_type(ty).header
        if isinstance(ty, TupleType):
            fields = tuple(self.conv(f) for f in ty.fields)
            return ty if fields == ty.fields else TupleType(fields, span=ty.span)
        if isinstance(ty, TypeCall):
            args = tuple(self.conv(a) for a in ty.args)
            return ty if args == ty.args else TypeCall(ty.func, args, span=ty.span)
        if isinstance(ty, RefType):
            value = self.conv(ty.value)
            return ty if value == ty.value else RefType(value, span=ty.span)
        return ty


def _letrec_candidates(expr: Expr) -> dict[Function, Var]:
    return {
        n.value: n.var
        for n in sub_expressions(expr)
        if isinstance(n, Let) and isinstance(n.value, Function)
    }


def defunctionalize(mod: Module) -> Module:
    """A first-order module computing what ``mod``'s ``main`` computes (see the module
    docstring). Type inference runs on ``mod`` (recording types on its nodes) when a type
    the pass needs is neither inferred nor annotated."""
    mod = _eta_polymorphic_values(mod)
    try:  # the inferred types or the annotations may be enough
        return _defunctionalize(_specialize(mod))
    except _NoType:
        _typecheck(mod)
    spec = _specialize(mod)
    try:
        return _defunctionalize(spec)
    except _NoType:
        _typecheck(spec)
    return _defunctionalize(spec)


def _defunctionalize(spec: Module) -> Module:
    """Step 2 on the specialised, typed module."""
    taken = {gv.name_hint for gv in spec.functions}
    taken.update(t.name_hint for t in spec.type_definitions)
    for data in spec.type_definitions.values():
        taken.update(c.name_hint for c in data.constructors)
    state = _State(taken)
    out = Module(type_definitions=dict(spec.type_definitions))
    for gv, func in spec.functions.items():
        mutator = _Defunc(state, _letrec_candidates(func.body))
        params = tuple(mutator.visit(p) for p in func.params)
        body = mutator.visit(func.body)
        ret = None if func.ret_type is None else state.conv(func.ret_type)
        out.add(
            gv,
            Function(
                tuple(p for p in params if isinstance(p, Var)),
                body,
                ret,
                (),
                func.attrs,
                span=func.span,
            ),
        )
    for fn in state.order:
        out.add_type(TypeData(fn.header, (), tuple(fn.constructors)))
    for fn in state.order:
        match = Match(fn.closure, tuple(fn.clauses), complete=bool(fn.clauses))
        out.add(fn.apply, Function((fn.closure, *fn.params), match, fn.ret_type))
    return out


def Defunctionalization() -> Pass:
    """The pass: defunctionalize the module reachable from ``main`` (opt level 3; requires
    ``InferType``)."""

    def run(mod: Module, ctx: PassContext) -> Module:
        return defunctionalize(mod)

    return ModulePass(run, PassInfo("Defunctionalization", 3, ("InferType",)))
