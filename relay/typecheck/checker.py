"""Type inference for expressions and modules.

The algorithm is Relay's (Roesch et al., "Relay: A High-Level Compiler for
Deep Learning", 2019, §3.3, and TVM's ``type_infer.cc``): a constraint-based
Hindley-Milner variant without let-generalization.

1. Constraint generation. One walk over the program gives every expression a
   type that may contain unknowns (``IncompleteType``): an annotation where the
   program has one, else a fresh unknown. Each construct adds equations
   (unifications, done at once by :class:`~relay.typecheck.solver.Solver`) and
   each operator call adds its type relation, to be solved later. The walk is
   an explicit task stack (no recursion: 100,000-deep programs work); a
   ``let``'s value is typed before its body, so a polymorphic function bound
   by ``let`` is known as such at its uses.
2. Solving. The solver runs the relations to a fixed point; then every
   expression's type is resolved and recorded as its ``checked_type``.

Polymorphism is explicit, as in System F: a function's type parameters
(``def @map[A, B]``, shape variables ``[n: Shape]``, dtype variables
``[d: BaseType]``) are rigid inside its body and replaced by fresh unknowns at
each use (instantiation), of a global, a constructor or a polymorphic local
function. Globals are checked one strongly connected component of the call
graph at a time (Tarjan's algorithm), callees first: a global that is fully
annotated has its declared type from the start, so recursion through it may
be polymorphic; within a component, unannotated globals are monomorphic (a
polymorphic one calls itself at its own, rigid, type parameters). A
let-bound polymorphic function is treated alike: fully annotated, it has its
declared type in its own body; otherwise it is monomorphic there, and
polymorphic after the ``let``.

Errors do not stop the walk: each failed equation or relation is recorded
with the span of the expression that caused it, and all of them are raised
together at the end as one :class:`~relay.errors.TypeCheckError` (its
``errors`` lists them). Unknowns left at the end are reported as "cannot
infer the type of %x" only when nothing else went wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from relay.errors import TypeCheckError
from relay.ir.analysis import global_vars as expr_global_vars
from relay.ir.attrs import Attrs
from relay.ir.expr import (
    Call,
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
    children,
)
from relay.ir.module import Module
from relay.ir.span import Span
from relay.ir.types import (
    FuncType,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
    free_type_vars,
)
from relay.op.registry import AttrValidationError, MissingRuleError, get_op
from relay.typecheck.exhaustive import missing_patterns
from relay.typecheck.kind import check_expr_kinds, check_module_kinds
from relay.typecheck.relation import RelationError, Reporter, is_complete
from relay.typecheck.solver import Solver, UnifyError
from relay.typecheck.subst import subst_type

BOOL_SCALAR = TensorType((), "bool")
UNIT = TupleType(())

_VISIT, _EXIT, _BIND = 0, 1, 2


def _span(*nodes: object) -> Span | None:
    """The span of the first node that has one, preferring nodes that are not shared.

    A variable, global or constructor node is shared by all its uses, so its span is
    its definition; a use is better located by the enclosing expression.
    """
    shared: Span | None = None
    for n in nodes:
        span = getattr(n, "span", None)
        if isinstance(span, Span):
            if not isinstance(n, Var | GlobalVar | Constructor | Op):
                return span
            shared = shared or span
    return shared


class _Checker:
    """Constraint generation for the expressions of one problem (a component of globals)."""

    def __init__(self, solver: Solver, mod: Module | None, globals_: dict[GlobalVar, Type]) -> None:
        self.solver = solver
        self.mod = mod
        self.globals = globals_
        self.types: dict[Expr, Type] = {}
        self.var_types: dict[Var, Type] = {}
        self.order: list[Expr] = []  # typed expressions, in the order they were finished
        self.matches: list[tuple[Match, Type]] = []
        self.constants: dict[Var, Constant] = {}  # variables let-bound to constants
        # Polymorphic functions without a declared type, while their own body is checked:
        # the global or let-bound variable naming each, with what it lacks ("result type")
        # and its type parameters.
        self.provisional: dict[Expr, tuple[str, frozenset[TypeVar]]] = {}
        self.let_provisional: dict[Var, FuncType] = {}

    # -- errors and unification -------------------------------------------------------------------

    def error(self, message: str, *nodes: object) -> None:
        self.solver.error(message, _span(*nodes))

    def unify(self, actual: Type, expected: Type, *nodes: object, context: str = "") -> bool:
        """Unify, recording an error at the first of ``nodes`` with a span; True on success."""
        self.solver.span = _span(*nodes)
        try:
            self.solver.unify(actual, expected)
        except UnifyError as e:
            self.error(f"{context}{e}", *nodes)
            return False
        return True

    # -- instantiation ----------------------------------------------------------------------------

    def instantiate(self, t: Type, type_args: Sequence[Type] = ()) -> Type:
        """A polymorphic function type with its parameters replaced by fresh unknowns."""
        if not isinstance(t, FuncType) or not t.type_params:
            return t
        if type_args:
            values: list[object] = list(type_args)
        else:
            values = [IncompleteType(tv.kind) for tv in t.type_params]
        mapping = dict(zip(t.type_params, values, strict=True))
        return FuncType(
            tuple(subst_type(a, mapping) for a in t.arg_types),
            subst_type(t.ret_type, mapping),
            span=t.span,
        )

    def type_data(self, c: Constructor) -> TypeData | None:
        if self.mod is None or c.belong_to is None:
            return None
        try:
            data = self.mod[c.belong_to]
        except KeyError:
            try:
                data = self.mod.get_type(c.belong_to.name_hint)
            except KeyError:
                return None
        return data if isinstance(data, TypeData) else None

    def constructor_type(self, c: Constructor, node: Expr) -> Type | None:
        """The generalized type of a constructor: ``fn[params](inputs) -> T[params]``."""
        data = self.type_data(c)
        if data is None:
            self.error(
                f"unknown constructor {c.name_hint} (its data type is not in the module)", node
            )
            return None
        result = TypeCall(data.header, tuple(data.type_params)) if data.type_params else data.header
        if not c.inputs:
            return FuncType((), result, data.type_params)
        return FuncType(tuple(c.inputs), result, data.type_params)

    # -- the walk ---------------------------------------------------------------------------------

    def var_type(self, v: Var) -> Type:
        t = self.var_types.get(v)
        if t is None:
            t = v.type_annotation if v.type_annotation is not None else IncompleteType(Kind.TYPE)
            self.var_types[v] = t
            self.types[v] = t
            self.order.append(v)
        return t

    def use_type(self, e: Expr, parent: Expr) -> Type:
        """The type of ``e`` at one use: globals, constructors are instantiated per use."""
        if isinstance(e, GlobalVar):
            t = self.global_type(e)
            return self.instantiate(t)
        if isinstance(e, Constructor):
            ct = self.constructor_type(e, parent)
            if ct is None:
                return IncompleteType()
            self.types.setdefault(e, ct)
            inst = self.instantiate(ct)
            assert isinstance(inst, FuncType)
            return inst.ret_type if not e.inputs else inst
        if isinstance(e, Op):
            self.error(f"operator {e.name} must be called, not used as a value", parent, e)
            return IncompleteType()
        return self.types[e]

    def global_type(self, gv: GlobalVar) -> Type:
        t = self.globals.get(gv)
        if t is None and self.mod is not None:
            for known, ty in self.globals.items():
                if known.name_hint == gv.name_hint:
                    t = ty
                    break
        if t is None:
            self.error(f"unknown global @{gv.name_hint}", gv)
            t = IncompleteType()
            self.globals[gv] = t
        self.types.setdefault(gv, t)
        return t

    def infer(self, root: Expr) -> Type:
        """Generate the constraints of ``root``; its (unresolved) type."""
        tasks: list[tuple[int, Expr]] = [(_VISIT, root)]
        types = self.types
        while tasks:
            action, e = tasks.pop()
            if action == _VISIT:
                if e in types or isinstance(e, GlobalVar | Constructor | Op):
                    continue
                if isinstance(e, Var):
                    self.var_type(e)
                    continue
                if isinstance(e, Let):
                    if isinstance(e.value, Function) and e.value.type_params:
                        self.polymorphic_let(e.var, e.value)
                    tasks.append((_EXIT, e))
                    tasks.append((_VISIT, e.body))
                    tasks.append((_BIND, e))
                    tasks.append((_VISIT, e.value))
                    continue
                tasks.append((_EXIT, e))
                for c in reversed(children(e)):
                    tasks.append((_VISIT, c))
            elif action == _BIND:
                assert isinstance(e, Let)
                if isinstance(e.value, Constant):
                    self.constants[e.var] = e.value
                vt = self.var_type(e.var)
                actual = self.use_type(e.value, e)
                provisional = self.let_provisional.pop(e.var, None)
                if provisional is not None and isinstance(actual, FuncType):
                    # the body is checked: the body must agree with the uses inside it,
                    # and the uses after the let see the function's polymorphic type
                    lacking = self.provisional.pop(e.var)[0]
                    self.unify(
                        _monomorphic(actual),
                        provisional,
                        e.value,
                        e,
                        context=_recursion_context(f"%{e.var.name_hint}", lacking),
                    )
                    self.var_types[e.var] = self.types[e.var] = actual
                else:
                    self.unify(actual, vt, e.value, e, context="")
            else:
                if e not in types:
                    types[e] = self.exit(e)
                    self.order.append(e)
        return self.use_type(root, root) if root not in types else types[root]

    def polymorphic_let(self, var: Var, f: Function) -> None:
        """The type a let-bound polymorphic function has inside its own body (recursion).

        With every parameter and the result declared, it is the declared type, instantiated
        per use as a global's is (so recursion may be polymorphic). Otherwise the function is
        monomorphic inside its body (its type parameters rigid); the uses after the let see
        its polymorphic type once the body is checked (see ``_BIND``)."""
        if var.type_annotation is not None or var in self.var_types:
            return
        declared = _declared_type(f)
        t: Type = declared if declared is not None else _provisional_type(f)
        self.var_types[var] = self.types[var] = t
        self.order.append(var)
        if declared is None:
            assert isinstance(t, FuncType)
            self.let_provisional[var] = t
            self.provisional[var] = (_lacking(f), frozenset(f.type_params))

    def exit(self, e: Expr) -> Type:
        if isinstance(e, Constant):
            return e.tensor_type
        if isinstance(e, Tuple):
            return TupleType(tuple(self.use_type(f, e) for f in e.fields))
        if isinstance(e, TupleGetItem):
            return self.projection(e)
        if isinstance(e, Let):
            return self.use_type(e.body, e)
        if isinstance(e, Function):
            return self.function(e)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, If):
            cond = self.use_type(e.cond, e)
            self.unify(
                cond, BOOL_SCALAR, e.cond, e, context="if: the condition must be a bool scalar: "
            )
            t = self.use_type(e.true_branch, e)
            f = self.use_type(e.false_branch, e)
            self.unify(f, t, e.false_branch, e, context="if: the branches differ: ")
            return t
        if isinstance(e, Match):
            return self.match(e)
        if isinstance(e, RefCreate):
            return RefType(self.use_type(e.value, e))
        if isinstance(e, RefRead):
            cell = IncompleteType()
            self.unify(self.use_type(e.ref, e), RefType(cell), e.ref, e)
            return cell
        if isinstance(e, RefWrite):
            value = self.use_type(e.value, e)
            self.unify(self.use_type(e.ref, e), RefType(value), e, e.ref)
            return UNIT
        raise TypeError(f"cannot type {type(e).__name__}")

    def function(self, f: Function) -> Type:
        params = tuple(self.var_type(p) for p in f.params)
        body = self.use_type(f.body, f)
        ret = f.ret_type if f.ret_type is not None else body
        if f.ret_type is not None:
            self.unify(
                body,
                f.ret_type,
                f.body,
                f.ret_type,
                f,
                context="the function body does not match its result type: ",
            )
        return FuncType(params, ret, tuple(f.type_params))

    def projection(self, e: TupleGetItem) -> Type:
        out = IncompleteType()
        index = e.index

        def rel(types: list[Type], attrs: Attrs, reporter: Reporter) -> bool:
            t = types[0]
            if isinstance(t, IncompleteType):
                return False
            if not isinstance(t, TupleType):
                raise RelationError(f"cannot take field {index} of a value of type {t}")
            if not 0 <= index < len(t.fields):
                n = len(t.fields)
                raise RelationError(f"field {index} is out of range for a tuple of {n} fields: {t}")
            reporter.unify(t.fields[index], types[1])
            return True

        self.solver.add_relation(
            "TupleGetItem", rel, [self.use_type(e.tuple_value, e), out], Attrs({}), _span(e)
        )
        return out

    def call(self, e: Call) -> Type:
        args = [self.use_type(a, e) for a in e.args]
        callee = e.op
        if isinstance(callee, Op):
            return self.op_call(e, callee, args)
        if isinstance(callee, Constructor):
            ct = self.constructor_type(callee, e)
            if ct is None:
                return IncompleteType()
            self.types.setdefault(callee, ct)
            fn = self.instantiate(ct, e.type_args)
        elif isinstance(callee, GlobalVar):
            fn = self.instantiate(self.global_type(callee), e.type_args)
        else:
            fn = self.solver.resolve(self.types[callee])
            fn = self.instantiate(fn, e.type_args)
        if isinstance(fn, IncompleteType):
            ret = IncompleteType()
            self.unify(self.types[callee], FuncType(tuple(args), ret), e)
            return ret
        if not isinstance(fn, FuncType):
            self.error(f"cannot call a value of type {fn}", callee, e)
            return IncompleteType()
        if len(fn.arg_types) != len(args):
            what = _callee_name(callee)
            n = len(fn.arg_types)
            self.error(f"{what} expects {n} argument{'s' if n != 1 else ''}, got {len(args)}", e)
            return fn.ret_type
        recursive = self.provisional.get(callee)
        for i, (a, p) in enumerate(zip(args, fn.arg_types, strict=True)):
            if recursive is not None and not recursive[1].isdisjoint(free_type_vars(p)):
                # a recursive use of a polymorphic function, whose type parameters are rigid
                name = _callee_name(callee)
                context = (
                    f"the recursive use of {name} at another type needs {name}'s "
                    f"{recursive[0]} declared: argument {i}: "
                )
                self.unify(a, p, e, context=context)
            else:
                self.unify(a, p, e.args[i], e, context=f"argument {i} of {_callee_name(callee)}: ")
        return fn.ret_type

    def constant_value(self, e: Expr) -> np.ndarray[Any, Any] | None:
        """The value of ``e`` if it is a constant or a variable let-bound to one."""
        if isinstance(e, Var):
            c = self.constants.get(e)
            return None if c is None else c.data
        return e.data if isinstance(e, Constant) else None

    def op_call(self, e: Call, op: Op, args: list[Type]) -> Type:
        try:
            opdef = get_op(op.name)
        except KeyError:
            self.error(f"unknown operator {op.name}", op, e)
            return IncompleteType()
        if opdef.num_inputs >= 0 and len(args) != opdef.num_inputs:
            n = opdef.num_inputs
            self.error(f"{op.name} expects {n} argument{'s' if n != 1 else ''}, got {len(args)}", e)
            return IncompleteType()
        try:
            attrs = opdef.validate_attrs(e.attrs)
            relation = opdef.rule("type_relation", _span(e))
        except AttrValidationError as err:
            self.error(str(err), e)
            return IncompleteType()
        except MissingRuleError as err:
            self.error(err.message, e)
            return IncompleteType()
        out = IncompleteType()
        values = [self.constant_value(a) for a in e.args]
        self.solver.add_relation(op.name, relation, [*args, out], attrs, _span(e), values)
        return out

    def match(self, e: Match) -> Type:
        data = self.use_type(e.data, e)
        result: Type | None = None
        for clause in e.clauses:
            self.pattern(clause.lhs, data, e)
            rhs = self.use_type(clause.rhs, e)
            if result is None:
                result = rhs
            else:
                self.unify(
                    rhs, result, clause.rhs, clause, e, context="match: the clauses differ: "
                )
        self.matches.append((e, data))
        return result if result is not None else IncompleteType()

    def pattern(self, root: Pattern, root_type: Type, match: Match) -> None:
        stack: list[tuple[Pattern, Type]] = [(root, root_type)]
        while stack:
            p, t = stack.pop()
            if isinstance(p, PatternWildcard):
                continue
            if isinstance(p, PatternVar):
                self.unify(t, self.var_type(p.var), p, p.var, match)
            elif isinstance(p, PatternTuple):
                fields = tuple(IncompleteType() for _ in p.patterns)
                if self.unify(t, TupleType(fields), p, match, context="pattern: "):
                    stack.extend(zip(p.patterns, fields, strict=True))
            elif isinstance(p, PatternConstructor):
                c = p.constructor
                data = self.type_data(c)
                if data is None:
                    self.error(f"unknown constructor {c.name_hint}", p, match)
                    continue
                if len(p.patterns) != len(c.inputs):
                    self.error(
                        f"constructor {c.name_hint} has {len(c.inputs)} field"
                        f"{'s' if len(c.inputs) != 1 else ''}, the pattern gives {len(p.patterns)}",
                        p,
                        match,
                    )
                    continue
                fresh = [IncompleteType(tv.kind) for tv in data.type_params]
                mapping = dict(zip(data.type_params, fresh, strict=True))
                head: Type = TypeCall(data.header, tuple(fresh)) if fresh else data.header
                if self.unify(t, head, p, match, context="pattern: "):
                    for sub, inp in zip(p.patterns, c.inputs, strict=True):
                        stack.append((sub, subst_type(inp, mapping)))


def _callee_name(callee: Expr) -> str:
    if isinstance(callee, GlobalVar):
        return f"@{callee.name_hint}"
    if isinstance(callee, Constructor):
        return callee.name_hint
    if isinstance(callee, Var):
        return f"%{callee.name_hint}"
    return "the function"


# -- finishing ---------------------------------------------------------------------------------------


def _finish(checker: _Checker, report_unresolved: bool) -> None:
    """Resolve and record every type; report what stayed unknown; check match coverage."""
    solver = checker.solver
    unresolved: list[Expr] = []
    for e in checker.order:
        t = solver.resolve(checker.types[e])
        if not is_complete(t):
            unresolved.append(e)
        e.set_checked_type(t)
    for e, t in checker.types.items():
        if isinstance(e, GlobalVar | Constructor):
            e.set_checked_type(solver.resolve(t))
    if report_unresolved and not solver.errors:
        if unresolved:
            first = next((e for e in unresolved if isinstance(e, Var)), unresolved[0])
            if isinstance(first, Var):
                solver.error(
                    f"cannot infer the type of %{first.name_hint}; annotate it",
                    _span(first),
                )
            else:
                solver.error("cannot infer the type of this expression", _span(first))
        else:
            for name, span in solver.unsolved():
                solver.error(f"{name}: cannot infer the types of the arguments", span)
    _check_matches(checker)


def _check_matches(checker: _Checker) -> None:
    for m, _ in checker.matches:
        if not m.complete or checker.mod is None:
            continue
        missing = missing_patterns([c.lhs for c in m.clauses], checker.mod)
        if missing:
            shown = ", ".join(missing)
            checker.error(f"match is not exhaustive: no clause matches {shown}", m)


def _raise(errors: list[TypeCheckError]) -> None:
    if errors:
        raise TypeCheckError.combine(_sorted(errors))


def _sorted(errors: list[TypeCheckError]) -> list[TypeCheckError]:
    def key(e: TypeCheckError) -> tuple[int, int, int]:
        s = e.span
        return (0, s.line, s.column) if s is not None else (1, 0, 0)

    return sorted(errors, key=key)


# -- entry points ------------------------------------------------------------------------------------


def _provisional_type(f: Function) -> FuncType:
    """A polymorphic function's type inside its own body when it is not fully declared: its
    annotations (type parameters rigid, not instantiated), unknowns for the rest."""
    params = tuple(p.type_annotation or IncompleteType() for p in f.params)
    return FuncType(params, f.ret_type or IncompleteType())


def _monomorphic(t: FuncType) -> FuncType:
    """``t`` without its type parameters (which stay as rigid variables)."""
    return FuncType(t.arg_types, t.ret_type)


def _recursion_context(name: str, lacking: str) -> str:
    return (
        f"the recursive uses of {name} do not match its type "
        f"(they need {name}'s {lacking} declared to be at other types): "
    )


def _lacking(f: Function) -> str:
    """What a function needs declared to be used recursively at other types."""
    if any(p.type_annotation is None for p in f.params):
        return "parameter and result types"
    return "result type"


def _declared_type(f: Function) -> FuncType | None:
    """A global's type from its annotations, when every parameter and the result are annotated."""
    if f.ret_type is None or any(p.type_annotation is None for p in f.params):
        return None
    params = tuple(p.type_annotation for p in f.params if p.type_annotation is not None)
    return FuncType(params, f.ret_type, tuple(f.type_params))


def _components(mod: Module) -> list[list[GlobalVar]]:
    """The strongly connected components of the call graph, callees first (Tarjan, 1972)."""
    gvs = list(mod.functions)
    by_name = {gv.name_hint: gv for gv in gvs}
    edges = {
        gv: [
            by_name[g.name_hint]
            for g in expr_global_vars(mod.functions[gv])
            if g.name_hint in by_name
        ]
        for gv in gvs
    }
    index: dict[GlobalVar, int] = {}
    low: dict[GlobalVar, int] = {}
    on_stack: set[GlobalVar] = set()
    stack: list[GlobalVar] = []
    out: list[list[GlobalVar]] = []
    counter = 0
    for root in gvs:
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
            succ = edges[v]
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
                out.append(list(reversed(comp)))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def check_module(mod: Module) -> Module:
    """Infer and record the types of every function in ``mod``; raise all errors found.

    The components of the call graph are solved callees first, each on its own. A global
    without annotations is monomorphic, so where a component leaves a type unknown without
    an error (an unannotated parameter used only as a list's head and added to a number),
    its callers settle it: the component is solved again together with the next component
    that calls it, and reported only if none does."""
    errors: list[TypeCheckError] = check_module_kinds(mod)
    if errors:  # inference assumes well-kinded types
        _raise(errors)
    known: dict[GlobalVar, Type] = {}
    pending: list[list[GlobalVar]] = []  # groups whose unknowns wait for a caller
    for comp in _components(mod):
        called = {g.name_hint for gv in comp for g in expr_global_vars(mod.functions[gv])}
        waiting = [g for g in pending if any(gv.name_hint in called for gv in g)]
        pending = [g for g in pending if g not in waiting]
        group = [gv for g in waiting for gv in g] + comp
        checker = _check_group(mod, group, known)
        if not errors and not checker.solver.errors and _unresolved(checker):
            pending.append(group)
            continue
        _record(mod, group, checker, known, errors, report_unresolved=not errors)
    for group in pending:  # no caller settled them: the unknowns are errors
        _record(mod, group, _check_group(mod, group, known), known, errors, True)
    _raise(errors)
    return mod


def _check_group(mod: Module, group: list[GlobalVar], known: dict[GlobalVar, Type]) -> _Checker:
    """The constraints of the globals ``group`` (a component of the call graph, or several
    whose unknowns wait for the last), generated and solved."""
    solver = Solver()
    globals_ = dict(known)
    provisional: dict[Expr, tuple[str, frozenset[TypeVar]]] = {}
    for gv in group:
        func = mod.functions[gv]
        declared = _declared_type(func)
        if declared is not None:
            globals_[gv] = declared
        elif func.type_params:  # monomorphic in its own component
            globals_[gv] = _provisional_type(func)
            provisional[gv] = (_lacking(func), frozenset(func.type_params))
        else:
            globals_[gv] = IncompleteType()
    checker = _Checker(solver, mod, globals_)
    checker.provisional.update(provisional)
    for gv in group:
        func = mod.functions[gv]
        t = checker.infer(func)
        if gv in provisional and isinstance(t, FuncType):
            context = _recursion_context(f"@{gv.name_hint}", provisional[gv][0])
            checker.unify(_monomorphic(t), globals_[gv], func, context=context)
        elif isinstance(globals_[gv], IncompleteType):
            checker.unify(t, globals_[gv], func)
    solver.solve()
    return checker


def _unresolved(checker: _Checker) -> bool:
    """Whether a solved problem left a type unknown or a relation unsolved."""
    solver = checker.solver
    incomplete = (not is_complete(solver.resolve(checker.types[e])) for e in checker.order)
    return any(incomplete) or bool(solver.unsolved())


def _record(
    mod: Module,
    group: list[GlobalVar],
    checker: _Checker,
    known: dict[GlobalVar, Type],
    errors: list[TypeCheckError],
    report_unresolved: bool,
) -> None:
    """Record the types ``checker`` found for ``group`` in the module; collect its errors
    (unknowns only with ``report_unresolved``: one left by an error in a callee is no news)."""
    _finish(checker, report_unresolved)
    for gv in group:
        t = checker.solver.resolve(checker.types[mod.functions[gv]])
        known[gv] = t
        gv.set_checked_type(t)
    errors.extend(checker.solver.errors)


def check_expr(expr: Expr, mod: Module | None = None) -> Expr:
    """Infer and record the types of ``expr`` (globals and constructors come from ``mod``)."""
    if mod is not None:
        check_module(mod)
    known: dict[GlobalVar, Type] = {}
    if mod is not None:
        for gv, func in mod.functions.items():
            known[gv] = func.checked_type
    kind_errors = check_expr_kinds(expr, mod)
    if kind_errors:
        _raise(kind_errors)
    solver = Solver()
    checker = _Checker(solver, mod, known)
    checker.infer(expr)
    solver.solve()
    _finish(checker, report_unresolved=True)
    _raise(solver.errors)
    return expr


def infer_type(obj: Module | Expr, mod: Module | None = None) -> Module | Expr:
    """``obj`` with ``checked_type`` set on every expression, or :class:`TypeCheckError`.

    A module is checked whole; an expression may refer to the globals and data
    types of ``mod`` (checked first). All independent errors are reported
    together: the raised error's ``errors`` lists them, in source order.
    """
    if isinstance(obj, Module):
        return check_module(obj)
    if isinstance(obj, Expr):
        return check_expr(obj, mod)
    raise TypeError(f"infer_type expects a Module or an Expr, got {type(obj).__name__}")


def types_of(exprs: Iterable[Expr]) -> list[Type]:
    """The checked types of ``exprs`` (convenience for tests and tools)."""
    return [e.checked_type for e in exprs]
