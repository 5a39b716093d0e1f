"""Kind checking: every type is used where its kind belongs.

A type variable has a kind (:class:`~relay.ir.types.Kind`): ``Type`` for
ordinary types, ``Shape`` for tensor dimensions, ``BaseType`` for dtypes. A
type is *well kinded* when

* each tensor dimension is an integer (not negative), ``?``, or built from
  variables of kind ``Shape`` (a bare ``n`` or an expression such as ``n * 3``);
* each dtype is a dtype name or a variable of kind ``BaseType``;
* each type variable used as a type has kind ``Type``;
* a data type is applied to exactly as many arguments as it has parameters
  (``List[A]``, never ``List`` or ``List[A, B]``), each of its parameter's kind,
  and is defined in the module (when a module is given);
* only data types (or variables of kind ``AdtHandle``) are applied to arguments;
* in a program, each type variable is bound: by the type parameters of an enclosing
  function (``fn [A](%x: A)``, nested functions included) or function type
  (``fn [A](A) -> A``), by its data type's parameters in a constructor's fields, or, in an
  expression checked on its own, by occurring in the annotation of one of its free
  variables (which stand for values given from outside). A free type variable
  (``fn (%z: A) { () }`` built without ``[A]``) is an error: "type variable A is not bound".

This is the kind system of Relay (TVM's ``kind_check.cc``): kinds are checked
once, syntactically, before inference, so the unifier never meets a shape
variable in place of a type. The walk over a type uses an explicit stack,
keeping with each part the kind its position expects and the span of the
nearest enclosing type that has one (a type variable's own span is its
declaration, not its use). Every error is reported, not only the first.
"""

from __future__ import annotations

from relay.errors import TypeCheckError
from relay.ir.analysis import free_vars
from relay.ir.dim import dim_vars
from relay.ir.expr import (
    Call,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Match,
    Var,
    children as expr_children,
    pattern_vars,
)
from relay.ir.module import Module
from relay.ir.span import Span
from relay.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    SymbolicDim,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
    _AnyDim,
    free_type_vars,
)

_ROLE = {Kind.TYPE: "type", Kind.SHAPE: "dimension", Kind.BASE_TYPE: "dtype"}


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _lookup(gtv: GlobalTypeVar, mod: Module) -> TypeData | None:
    data = mod.type_definitions.get(gtv)
    if data is None:
        try:
            data = mod.get_type(gtv.name_hint)
        except KeyError:
            return None
    return data


_Bound = frozenset[TypeVar] | None  # the type variables in scope; None: not checked
_Work = tuple[object, Kind, Span | None, _Bound]


class _KindChecker:
    def __init__(self, mod: Module | None) -> None:
        self.mod = mod
        self.errors: list[TypeCheckError] = []
        self.seen: set[tuple[str, Span | None]] = set()

    def error(self, message: str, span: Span | None) -> None:
        # One report per message and place: a type may be shared by several annotations.
        if span is None or (message, span) not in self.seen:
            self.seen.add((message, span))
            self.errors.append(TypeCheckError(message, span))

    def check(self, root: object, kind: Kind, span: Span | None, bound: _Bound = None) -> None:
        """Check ``root`` (a type, dimension or dtype) where ``kind`` is expected; with
        ``bound``, also that each type variable is in it (or bound inside ``root``)."""
        stack: list[_Work] = [(root, kind, span, bound)]
        while stack:
            t, expected, where, scope = stack.pop()
            own = getattr(t, "span", None)
            if isinstance(t, TypeVar | GlobalTypeVar):
                where = where or own  # their own span is where they are declared
            elif isinstance(own, Span):
                where = own
            if isinstance(t, IncompleteType):
                continue
            if isinstance(t, TypeVar):
                if t.kind is not expected:
                    self.error(
                        f"type variable {t.name_hint} of kind {t.kind.value} "
                        f"used as a {_ROLE.get(expected, expected.value)}",
                        where,
                    )
                else:
                    self.bound(t, scope, where)
                continue
            if expected is Kind.SHAPE:
                self.dim(t, where, scope)
            elif expected is Kind.BASE_TYPE:
                if not isinstance(t, str):
                    self.error(f"{t} is not a dtype", where)
            else:
                self.type(t, where, stack, scope)

    def bound(self, tv: TypeVar, scope: _Bound, where: Span | None) -> None:
        if scope is not None and tv not in scope:
            self.error(f"type variable {tv.name_hint} is not bound", where)

    def dim(self, d: object, where: Span | None, scope: _Bound = None) -> None:
        if isinstance(d, bool) or not isinstance(d, int | _AnyDim | SymbolicDim):
            self.error(f"{d} is not a dimension", where)
        elif isinstance(d, int):
            if d < 0:
                self.error(f"tensor dimension {d} is negative", where)
        elif isinstance(d, SymbolicDim):
            for v in dim_vars(d):
                if isinstance(v, TypeVar) and v.kind is not Kind.SHAPE:
                    self.error(
                        f"type variable {v.name_hint} of kind {v.kind.value} used as a dimension",
                        where,
                    )
                elif isinstance(v, TypeVar):
                    self.bound(v, scope, where)

    def type(self, t: object, where: Span | None, stack: list[_Work], scope: _Bound) -> None:
        if isinstance(t, TensorType):
            stack.append((t.dtype, Kind.BASE_TYPE, where, scope))
            stack.extend((d, Kind.SHAPE, where, scope) for d in reversed(t.shape))
        elif isinstance(t, TupleType):
            stack.extend((f, Kind.TYPE, where, scope) for f in reversed(t.fields))
        elif isinstance(t, RefType):
            stack.append((t.value, Kind.TYPE, where, scope))
        elif isinstance(t, FuncType):
            inner = scope | frozenset(t.type_params) if scope is not None else None
            stack.extend((c, Kind.TYPE, where, inner) for c in reversed(t.type_constraints))
            stack.append((t.ret_type, Kind.TYPE, where, inner))
            stack.extend((a, Kind.TYPE, where, inner) for a in reversed(t.arg_types))
        elif isinstance(t, TypeRelation):
            stack.extend((a, Kind.TYPE, where, scope) for a in reversed(t.args))
        elif isinstance(t, GlobalTypeVar):
            data = self.data(t, where)
            if data is not None and data.type_params:
                n = len(data.type_params)
                self.error(f"type {t.name_hint} takes {_plural(n, 'type argument')}, got 0", where)
        elif isinstance(t, TypeCall):
            self.type_call(t, where, stack, scope)
        elif isinstance(t, TypeData):
            self.error(f"the definition of type {t.header.name_hint} is not a type", where)
        elif isinstance(t, Type):
            pass  # IncompleteType and friends: nothing to check
        else:
            self.error(f"{t} is not a type", where)

    def type_call(self, t: TypeCall, where: Span | None, stack: list[_Work], scope: _Bound) -> None:
        head = t.func
        kinds = [Kind.TYPE] * len(t.args)
        if isinstance(head, GlobalTypeVar):
            data = self.data(head, where)
            if data is not None:
                n = len(data.type_params)
                if n != len(t.args):
                    self.error(
                        f"type {head.name_hint} takes {_plural(n, 'type argument')}, "
                        f"got {len(t.args)}",
                        where,
                    )
                else:
                    kinds = [p.kind for p in data.type_params]
        elif isinstance(head, TypeVar):
            if head.kind is not Kind.ADT:
                self.error(
                    f"type variable {head.name_hint} of kind {head.kind.value} "
                    "cannot be applied to type arguments",
                    where,
                )
            else:
                self.bound(head, scope, where)
        elif not isinstance(head, IncompleteType):
            self.error(f"{head} is not a data type and cannot be applied to type arguments", where)
        args = reversed(list(zip(t.args, kinds, strict=True)))
        stack.extend((a, k, where, scope) for a, k in args)

    def data(self, gtv: GlobalTypeVar, where: Span | None) -> TypeData | None:
        if self.mod is None:
            return None
        data = _lookup(gtv, self.mod)
        if data is None:
            self.error(f"unknown type {gtv.name_hint}", where)
        return data

    # -- programs -----------------------------------------------------------------------------------

    def type_definition(self, data: TypeData) -> None:
        params = frozenset(data.type_params)
        for c in data.constructors:
            for t in c.inputs:
                self.check(t, Kind.TYPE, c.span or data.span, params)

    def expr(self, root: Expr) -> None:
        """Check every type written in ``root``: annotations and explicit type arguments.

        Type variables must be bound by an enclosing function's type parameters; those in
        the annotations of ``root``'s free variables count as bound (given from outside)."""
        context: set[TypeVar] = set()
        for v in free_vars(root):
            if v.type_annotation is not None:
                context.update(free_type_vars(v.type_annotation))
        walked: set[int] = set()
        stack: list[tuple[Expr, frozenset[TypeVar]]] = [(root, frozenset(context))]
        while stack:
            e, scope = stack.pop()
            if id(e) in walked:
                continue
            walked.add(id(e))
            if isinstance(e, Var):
                if e.type_annotation is not None:
                    self.check(e.type_annotation, Kind.TYPE, e.span, scope)
                continue
            if isinstance(e, Function):
                scope = scope | frozenset(e.type_params)
                for p in e.params:  # in source order: parameters, then the result type
                    if id(p) not in walked and p.type_annotation is not None:
                        walked.add(id(p))
                        self.check(p.type_annotation, Kind.TYPE, p.span, scope)
                if e.ret_type is not None:
                    self.check(e.ret_type, Kind.TYPE, e.span, scope)
            elif isinstance(e, Match):
                for clause in e.clauses:
                    stack.extend((v, scope) for v in reversed(pattern_vars(clause.lhs)))
            elif isinstance(e, Call) and e.type_args:
                self.type_args(e, scope)
            stack.extend((c, scope) for c in reversed(expr_children(e)))

    def type_args(self, call: Call, scope: frozenset[TypeVar]) -> None:
        """Explicit type arguments, against the callee's type parameters when it is known."""
        params: tuple[TypeVar, ...] | None = None
        callee = call.op
        if isinstance(callee, Function):
            params = callee.type_params
        elif isinstance(callee, GlobalVar) and self.mod is not None and callee in self.mod:
            params = self.mod.function(callee).type_params
        elif isinstance(callee, Constructor) and self.mod is not None:
            gtv = callee.belong_to
            data = _lookup(gtv, self.mod) if gtv is not None else None
            params = data.type_params if data is not None else None
        if params is None or len(params) != len(call.type_args):
            for a in call.type_args:  # an unknown callee, or a count the type checker reports
                for tv in free_type_vars(a):
                    self.bound(tv, scope, call.span)
            return
        for a, p in zip(call.type_args, params, strict=True):
            self.check(a, p.kind, call.span, scope)


def check_kind(
    t: Type, mod: Module | None = None, span: Span | None = None, kind: Kind = Kind.TYPE
) -> list[TypeCheckError]:
    """The kind errors of ``t`` used where ``kind`` is expected (``[]`` if it is well kinded).

    Data types are looked up in ``mod`` when it is given (otherwise their arity is not
    checked). Errors point at the innermost enclosing type with a span, else at ``span``.
    """
    checker = _KindChecker(mod)
    checker.check(t, kind, span)
    return checker.errors


def check_expr_kinds(expr: Expr, mod: Module | None = None) -> list[TypeCheckError]:
    """The kind errors of every type annotation and type argument in ``expr``."""
    checker = _KindChecker(mod)
    checker.expr(expr)
    return checker.errors


def check_module_kinds(mod: Module) -> list[TypeCheckError]:
    """The kind errors of ``mod``: constructor fields of every data type, then every type
    written in every global function."""
    checker = _KindChecker(mod)
    for data in mod.type_definitions.values():
        checker.type_definition(data)
    for func in mod.functions.values():
        checker.expr(func)
    return checker.errors


__all__ = ["check_expr_kinds", "check_kind", "check_module_kinds"]
