"""Python ``ast`` to Relay IR: the body of a ``@relay`` function as one expression.

The converter walks a function's statements once, front to back, holding an environment
from Python names to converted values (:mod:`relay.frontend.values`). Straight-line code
becomes a chain of ``let`` bindings; each assignment binds a fresh variable, so a name
assigned twice becomes two variables (static single assignment, as in Myia's and TVM's
Python frontends).

Control flow is converted in one of two ways, chosen per statement:

* **join by value**, when no ``return``, ``break`` or ``continue`` leaves the statement: an
  ``if`` becomes an ``if`` expression whose branches end in a tuple of the variables they
  assign (``let %t = if (c) { (%a1, %b1) } else { (%a, %b2) }``), and a loop becomes a local
  recursive function over the variables the body assigns (its *state*) that returns the
  final state, which the code after the loop unpacks;
* **join by continuation** otherwise: the code after the statement becomes a local function
  (``%join``/``%after``) that each branch calls in tail position with the values of the
  variables it assigns, ``break`` calls the code after the loop, ``continue`` the loop's next
  iteration, and ``return e`` is simply ``e``: every path ends in a tail call or a value, so
  the value of the whole expression is the function's result. This is the
  continuation-passing reading of structured control flow (Appel, *Compiling with
  Continuations*, 1992; Kelsey, "A Correspondence between Continuation Passing Style and
  Static Single Assignment Form", 1995): join points are functions, and nothing is unrolled.

Python numbers are weakly typed (``x * 2`` multiplies by a 2 of ``x``'s dtype): the
converter knows the static type of most values as it reads them, by applying each
operator's type relation to its arguments' types, and when it does not, it writes
``cast_like(2, %x)``, which :func:`fold_weak_literals` turns into a constant once type
inference has run. Mixed integer and float tensors are promoted to the float dtype, and
``/`` of integers gives ``float32``.

A variable that a nested function assigns (``nonlocal``) or reads although it changes after
the function is defined lives in a reference cell (``ref``), so closures see its current
value as Python's do.
"""

from __future__ import annotations

import ast
import builtins
import functools
import operator
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any as _Any

import numpy as np

from relay.errors import FrontendError, RelayError, TypeCheckError
from relay.frontend import pyops
from relay.frontend.annotations import TypeScope, annotation_type, dtype_name
from relay.frontend.source import FunctionSource
from relay.frontend.values import (
    Boxed,
    Ex,
    Py,
    TupleVal,
    Undefined,
    Val,
    defined,
    is_number,
    tuple_type,
)
from relay.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.ir.span import Span
from relay.ir.types import FuncType, TensorType, TupleType, Type
from relay.op.registry import AttrValidationError, get_op
from relay.typecheck.calls import infer_call_type

if TYPE_CHECKING:
    from relay.frontend.function import ModuleBuilder

__all__ = ["FunctionConverter", "NeedsTypes", "UnresolvedName"]

_INT32_MAX = 2**31 - 1


class NeedsTypes(Exception):
    """Raised instead of a FrontendError, when only checking the syntax of a function with
    unannotated parameters, by a construct that needs argument types."""


class UnresolvedName(Exception):
    """A global name not defined yet (a function defined later in the file): conversion is
    retried at the first call."""

    def __init__(self, name: str, error: FrontendError) -> None:
        super().__init__(name)
        self.name = name
        self.error = error


@dataclass
class Cont:
    """What ends a block: falling off its end, ``break`` and ``continue`` (None where not
    allowed). Each builds the tail expression from the environment at that point."""

    fallthrough: Callable[[dict[str, _Any]], Expr]
    brk: Callable[[dict[str, _Any]], Expr] | None = None
    cont: Callable[[dict[str, _Any]], Expr] | None = None
    in_loop: bool = False


@dataclass
class _Frame:
    """The let bindings of the block being converted, in order."""

    bindings: list[tuple[Var, Expr]] = field(default_factory=list)


def _wrap(bindings: list[tuple[Var, Expr]], body: Expr) -> Expr:
    for var, value in reversed(bindings):
        body = Let(var, value, body, span=value.span)
    return body


def _float_dtype(d: object) -> bool:
    return isinstance(d, str) and d.startswith(("float", "bfloat"))


def _int_dtype(d: object) -> bool:
    return isinstance(d, str) and d.startswith(("int", "uint"))


# -- syntactic analyses ------------------------------------------------------------------------


def _walk_local(nodes: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes`` that belongs to this function (not to nested functions,
    lambdas or classes, whose bodies are other scopes)."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for t in target.elts for n in _target_names(t)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def assigned_names(stmts: Sequence[ast.stmt]) -> list[str]:
    """The names the statements assign at this scope level, in first-assignment order."""
    out: dict[str, None] = {}
    for node in _walk_local(stmts):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                out.update(dict.fromkeys(_target_names(t)))
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
            out.update(dict.fromkeys(_target_names(node.target)))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.MatchAs | ast.MatchStar):
            if node.name:  # a def, or a capture pattern (``_`` has no name)
                out[node.name] = None
        elif isinstance(node, ast.NamedExpr):
            out[node.target.id] = None
    return list(out)


def definitely_assigned(stmts: Sequence[ast.stmt]) -> set[str] | None:
    """The names that ``stmts`` assign on every path that runs off their end; None when no
    path does (they always return, break or continue). Loop bodies may not run, so loops
    add nothing."""
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.Return | ast.Break | ast.Continue | ast.Raise):
            return None
        if isinstance(s, ast.Assign):
            out.update(n for t in s.targets for n in _target_names(t))
        elif isinstance(s, ast.AugAssign) or (isinstance(s, ast.AnnAssign) and s.value is not None):
            out.update(_target_names(s.target))
        elif isinstance(s, ast.FunctionDef):
            out.add(s.name)
        elif isinstance(s, ast.If | ast.Match):
            arms = [s.body, s.orelse] if isinstance(s, ast.If) else [c.body for c in s.cases]
            if isinstance(s, ast.Match) and not (
                s.cases and _irrefutable_pattern(s.cases[-1].pattern)
            ):
                arms.append([])  # perhaps no case matches
            found = [definitely_assigned(a) for a in arms]
            live = [f for f in found if f is not None]
            if not live:
                return None
            out.update(set.intersection(*live))
    return out


def _irrefutable_pattern(p: ast.pattern) -> bool:
    if isinstance(p, ast.MatchAs):
        return p.pattern is None
    if isinstance(p, ast.MatchSequence):
        return all(_irrefutable_pattern(q) for q in p.patterns)
    return False


def _jumps(stmts: Sequence[ast.stmt], loops_too: bool) -> set[str]:
    """Which of return / break / continue occur in ``stmts`` (break and continue only when
    they are not inside a nested loop, unless ``loops_too``)."""
    found: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in stmts]
    while stack:
        node, nested_loop = stack.pop()
        if isinstance(node, ast.Return):
            found.add("return")
        elif isinstance(node, ast.Break) and (loops_too or not nested_loop):
            found.add("break")
        elif isinstance(node, ast.Continue) and (loops_too or not nested_loop):
            found.add("continue")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        is_loop = isinstance(node, ast.For | ast.While)
        inner = nested_loop or is_loop
        orelse = node.orelse if isinstance(node, ast.For | ast.While) else []
        for child in ast.iter_child_nodes(node):
            stack.append((child, inner if not any(child is o for o in orelse) else nested_loop))
    return found


def _free_reads(node: ast.AST) -> set[str]:
    """Names read inside a nested function or lambda (candidates for capture)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def boxed_names(body: Sequence[ast.stmt]) -> set[str]:
    """The variables of this scope that must live in reference cells: those a nested scope
    declares ``nonlocal``, and those a nested scope reads that are assigned more than once
    (or in a loop) here."""
    counts: dict[str, int] = {}

    def count(stmts: Sequence[ast.AST], weight: int) -> None:
        for node in stmts:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    counts[node.name] = counts.get(node.name, 0) + weight
                continue
            names: list[str] = []
            if isinstance(node, ast.Assign):
                names = [n for t in node.targets for n in _target_names(t)]
            elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
                names = _target_names(node.target)
            for n in names:
                counts[n] = counts.get(n, 0) + (2 if isinstance(node, ast.For) else weight)
            inner = 2 if isinstance(node, ast.For | ast.While) else weight
            count(list(ast.iter_child_nodes(node)), inner)

    count(list(body), 1)
    boxed: set[str] = set()
    for node in _walk_local(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Nonlocal):
                    boxed.update(inner.names)
            reads = _free_reads(node)
            boxed.update(n for n in reads if counts.get(n, 0) > 1)
    return boxed


# -- the converter -----------------------------------------------------------------------------


class FunctionConverter:
    """Converts one Python function (and the functions nested in it) to a Relay function."""

    def __init__(
        self,
        builder: ModuleBuilder,
        source: FunctionSource,
        namespace: Callable[[str], object],
        self_name: str | None = None,
        self_ref: Callable[[list[Type | None], Span | None], tuple[Expr, Type | None]]
        | None = None,
        probe: bool = False,
    ) -> None:
        self.builder = builder
        self.source = source
        self.namespace = namespace
        self.self_name = self_name
        self.self_ref = self_ref
        self.probe = probe
        self.frame = _Frame()
        self.boxed: set[str] = set()
        self.nonlocals: set[str] = set()
        self.weak: list[Call] = []  # cast_like calls of literals, folded after inference

    # -- errors and spans -----------------------------------------------------------------------

    def span(self, node: ast.AST) -> Span:
        return self.source.span(node)

    def error(self, message: str, node: ast.AST, hint: str | None = None) -> FrontendError:
        return self.source.error(message, node, hint)

    def needs_types(self, message: str, node: ast.AST) -> Exception:
        """An error that depends on argument types, which a syntax check does not report."""
        return NeedsTypes(message) if self.probe else self.error(message, node)

    def unsupported(self, what: str, node: ast.AST, hint: str | None = None) -> FrontendError:
        return self.error(f"unsupported Python construct: {what}", node, hint)

    # -- bindings -----------------------------------------------------------------------------

    def emit(self, name: str, value: Expr, ty: Type | None, annotation: Type | None = None) -> Ex:
        """Bind ``value`` to a fresh variable named ``name`` in the current block."""
        var = Var(name, annotation, span=value.span)
        self.frame.bindings.append((var, value))
        return Ex(var, annotation or ty)

    @contextmanager
    def new_frame(self) -> Iterator[_Frame]:
        saved = self.frame
        self.frame = _Frame()
        try:
            yield self.frame
        finally:
            self.frame = saved

    def sub_block(self, convert: Callable[[], Expr]) -> Expr:
        """``convert()`` with its own bindings, wrapped around its result."""
        with self.new_frame() as frame:
            body = convert()
        return _wrap(frame.bindings, body)

    # -- functions -----------------------------------------------------------------------------

    def function(
        self,
        node: ast.FunctionDef | ast.Lambda,
        env: dict[str, _Any],
        param_types: Sequence[Type | None],
        ret_type: Type | None,
        type_params: Sequence[_Any] = (),
        self_var: tuple[str, Expr] | None = None,
    ) -> Function:
        """Convert a function definition whose free names are looked up in ``env``."""
        args = node.args
        self._check_signature(args, node)
        names = [a.arg for a in args.args]
        inner = dict(env)
        if self_var is not None:
            inner[self_var[0]] = Ex(self_var[1], None)
        params: list[Var] = []
        for a, ty in zip(args.args, param_types, strict=True):
            v = Var(a.arg, ty, span=self.span(a))
            params.append(v)
            inner[a.arg] = Ex(v, ty)
        saved_boxed, saved_nonlocals = self.boxed, self.nonlocals
        self.nonlocals = (
            {
                n
                for s in _walk_local(getattr(node, "body", []))
                if isinstance(s, ast.Nonlocal)
                for n in s.names
            }
            if isinstance(node, ast.FunctionDef)
            else set()
        )
        with self.new_frame() as frame:
            if isinstance(node, ast.Lambda):
                self.boxed = set()
                body_expr = self.materialize(self.expr(node.body, inner), node.body).expr
            else:
                self.boxed = boxed_names(node.body)
                for n in self.boxed & set(names):  # a boxed parameter: copy it into a cell
                    self._box_param(n, inner)
                body_expr = self.block(node.body, inner, Cont(self._no_return(node)))
        self.boxed, self.nonlocals = saved_boxed, saved_nonlocals
        body = _wrap(frame.bindings, body_expr)
        return Function(tuple(params), body, ret_type, tuple(type_params), span=self.span(node))

    def _box_param(self, name: str, env: dict[str, _Any]) -> None:
        v = env[name]
        assert isinstance(v, Ex)
        cell = self.emit(name, RefCreate(v.expr, span=v.expr.span), None)
        assert isinstance(cell.expr, Var)
        env[name] = Boxed(cell.expr, v.ty)

    def _no_return(self, node: ast.AST) -> Callable[[dict[str, _Any]], Expr]:
        def fallthrough(env: dict[str, _Any]) -> Expr:
            span = self.span(node.body[-1]) if isinstance(node, ast.FunctionDef) else None
            return Tuple((), span=span)  # Python's implicit None

        return fallthrough

    def _check_signature(self, args: ast.arguments, node: ast.AST) -> None:
        if args.vararg or args.kwarg:
            raise self.unsupported("*args and **kwargs parameters", node)
        if args.kwonlyargs or args.posonlyargs:
            raise self.unsupported("keyword-only and positional-only parameters", node)
        if args.defaults or args.kw_defaults:
            raise self.unsupported(
                "default parameter values", node, "pass every argument at each call"
            )

    # -- blocks ----------------------------------------------------------------------------------

    def block(self, stmts: Sequence[ast.stmt], env: dict[str, _Any], k: Cont) -> Expr:
        """The expression for ``stmts`` followed by ``k``; binds into the current frame."""
        env = dict(env)
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1 :]
            if isinstance(stmt, ast.Return):
                value: Val = Py(None) if stmt.value is None else self.expr(stmt.value, env)
                return self.materialize(value, stmt.value or stmt).expr
            if isinstance(stmt, ast.Break):
                if k.brk is None:
                    raise self.error("'break' outside a loop", stmt)
                return k.brk(env)
            if isinstance(stmt, ast.Continue):
                if k.cont is None:
                    raise self.error("'continue' outside a loop", stmt)
                return k.cont(env)
            if isinstance(stmt, ast.If | ast.Match):
                done = self.branching(stmt, rest, env, k)
                if done is not None:
                    return done
                continue
            if isinstance(stmt, ast.While | ast.For):
                done = self.loop(stmt, rest, env, k)
                if done is not None:
                    return done
                continue
            self.simple(stmt, env)
        return k.fallthrough(env)

    def simple(self, stmt: ast.stmt, env: dict[str, _Any]) -> None:
        """A statement that neither branches nor jumps; updates ``env``."""
        if isinstance(stmt, ast.Assign):
            value = self.expr(stmt.value, env)
            for target in stmt.targets:
                self.assign(target, value, env, stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                return  # a bare declaration
            try:
                ann = annotation_type(self._eval_annotation(stmt.annotation), TypeScope())
            except TypeError as err:
                raise self.error(str(err), stmt.annotation) from None
            value = self.expr(stmt.value, env)
            self.assign(stmt.target, value, env, stmt.value, ann)
        elif isinstance(stmt, ast.AugAssign):
            op = pyops.BINARY_OPS.get(type(stmt.op))
            if op is None:
                raise self.unsupported(f"the operator {type(stmt.op).__name__}=", stmt)
            if not isinstance(stmt.target, ast.Name):
                raise self.unsupported(
                    "assignment to an element or attribute",
                    stmt.target,
                    "tensors are immutable here; compute a new value and rebind the name",
                )
            current = self.expr(ast.Name(stmt.target.id, ast.Load(), **_pos(stmt.target)), env)
            value = self.binary(op, current, self.expr(stmt.value, env), stmt)
            self.assign(stmt.target, value, env, stmt)
        elif isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return  # a docstring or a bare literal
            value = self.expr(stmt.value, env)
            if isinstance(value, Ex) and not isinstance(value.expr, Var | Constant | GlobalVar):
                self.emit("_", value.expr, value.ty)
        elif isinstance(stmt, ast.FunctionDef):
            self.nested_def(stmt, env)
        elif isinstance(stmt, ast.Pass):
            return
        elif isinstance(stmt, ast.Nonlocal):
            return  # handled by boxing in the enclosing scope
        else:
            raise self.unsupported(
                _STATEMENT_NAMES.get(type(stmt), type(stmt).__name__), stmt, _HINTS.get(type(stmt))
            )

    # -- assignment ------------------------------------------------------------------------------

    def assign(
        self,
        target: ast.expr,
        value: Val,
        env: dict[str, _Any],
        node: ast.AST,
        annotation: Type | None = None,
    ) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, value, env, node, annotation)
            return
        if isinstance(target, ast.Tuple | ast.List):
            if any(isinstance(t, ast.Starred) for t in target.elts):
                raise self.unsupported("starred assignment", target)
            items = self.unpack(value, len(target.elts), node)
            for t, item in zip(target.elts, items, strict=True):
                self.assign(t, item, env, node)
            return
        raise self.unsupported(
            "assignment to an element or attribute",
            target,
            "tensors are immutable here; compute a new value and rebind the name",
        )

    def bind(
        self,
        name: str,
        value: Val,
        env: dict[str, _Any],
        node: ast.AST,
        annotation: Type | None = None,
    ) -> None:
        current = env.get(name)
        if isinstance(current, Boxed) and name in self.nonlocals:
            ex = self.materialize(value, node)
            self.emit("_", RefWrite(current.var, ex.expr, span=self.span(node)), TupleType(()))
            return
        if name in self.boxed:
            ex = self.materialize(value, node)
            if isinstance(current, Boxed):
                self.emit("_", RefWrite(current.var, ex.expr, span=self.span(node)), TupleType(()))
            else:
                cell = self.emit(name, RefCreate(ex.expr, span=self.span(node)), None)
                assert isinstance(cell.expr, Var)
                weak = ex.weak or (isinstance(value, Py) and is_number(value.value))
                env[name] = Boxed(cell.expr, ex.ty, weak)
            return
        if annotation is None and isinstance(value, Py | TupleVal):
            env[name] = value
            return
        ex = self.materialize(value, node)
        if annotation is None and isinstance(ex.expr, Var | Constant | GlobalVar | Constructor):
            env[name] = ex
            return
        bound = self.emit(name, ex.expr, ex.ty, annotation)
        env[name] = Ex(bound.expr, bound.ty, ex.weak and annotation is None)

    def display(self, elts: list[ast.expr], env: dict[str, _Any]) -> tuple[Val, ...]:
        """The items of a tuple or list display; ``*t`` splices the items of a tuple whose
        length is known when the function is converted."""
        items: list[Val] = []
        for e in elts:
            if not isinstance(e, ast.Starred):
                items.append(self.expr(e, env))
                continue
            value = self.expr(e.value, env)
            if isinstance(value, TupleVal):
                items.extend(value.items)
            elif isinstance(value, Py) and isinstance(value.value, tuple | list):
                items.extend(Py(v) for v in value.value)
            else:
                ex = self.materialize(value, e.value)
                if not isinstance(ex.ty, TupleType):
                    raise self.error(
                        "cannot splice *"
                        + ast.unparse(e.value)
                        + ": only a tuple whose length is known statically can be spliced",
                        e,
                    )
                items.extend(self.unpack(ex, len(ex.ty.fields), e))
        return tuple(items)

    def unpack(self, value: Val, n: int, node: ast.AST) -> list[Val]:
        if isinstance(value, TupleVal):
            if len(value.items) != n:
                raise self.error(f"cannot unpack {len(value.items)} values into {n} names", node)
            return list(value.items)
        if isinstance(value, Py) and isinstance(value.value, tuple):
            if len(value.value) != n:
                raise self.error(f"cannot unpack {len(value.value)} values into {n} names", node)
            return [Py(v) for v in value.value]
        ex = self.materialize(value, node)
        if isinstance(ex.ty, TupleType) and len(ex.ty.fields) != n:
            raise self.error(
                f"cannot unpack a tuple of {len(ex.ty.fields)} fields into {n} names", node
            )
        if not isinstance(ex.expr, Var):
            ex = self.emit("t", ex.expr, ex.ty)
        fields = ex.ty.fields if isinstance(ex.ty, TupleType) else (None,) * n
        span = self.span(node)
        return [Ex(TupleGetItem(ex.expr, i, span=span), fields[i]) for i in range(n)]

    # -- reading names ---------------------------------------------------------------------------

    def name(self, node: ast.Name, env: dict[str, _Any]) -> Val:
        v = env.get(node.id)
        if isinstance(v, Undefined):
            raise self.error(f"{node.id} {v.reason}", node)
        if isinstance(v, Boxed):
            return Ex(RefRead(v.var, span=self.span(node)), v.ty, v.weak)
        if v is not None:
            return v  # type: ignore[no-any-return]
        if node.id == self.self_name and self.self_ref is not None:
            return Py(_SelfRef(self.self_name))
        try:
            obj = self.namespace(node.id)
        except KeyError:
            if self.self_name is not None and node.id in self._later_locals(node):
                raise self.error(f"{node.id} is used before it is assigned", node) from None
            err = self.error(f"name {node.id} is not defined", node)
            raise UnresolvedName(node.id, err) from None
        return Py(obj)

    def _later_locals(self, node: ast.AST) -> set[str]:
        return set(assigned_names(self.source.node.body))

    # -- values ----------------------------------------------------------------------------------

    def literal(self, value: object, node: ast.AST, like: Ex | None = None) -> Ex:
        """A Python number as a tensor constant: of ``like``'s dtype where that is known
        (the number is weakly typed), else int32 / float32 / bool."""
        span = self.span(node)
        target = like.tensor.dtype if like is not None and like.tensor is not None else None
        default = (
            "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
        )
        if like is not None and target is None:
            try:
                c = Constant(np.asarray(value, dtype=default), span=span)
            except OverflowError:
                raise self.error(f"the literal {value} does not fit in {default}", node) from None
            call = Call(
                get_op("cast_like").op,
                (c, like.expr),
                get_op("cast_like").validate_attrs(None),
                span=span,
            )
            self.weak.append(call)
            return Ex(call, None)
        dtype = default
        if isinstance(target, str) and (
            _float_dtype(target) or (_int_dtype(target) and not isinstance(value, float))
        ):
            dtype = target  # True + x counts True as 1, as numpy does
        try:
            arr = np.asarray(value, dtype=dtype)
        except OverflowError:
            raise self.error(f"the literal {value} does not fit in {dtype}", node) from None
        if _int_dtype(dtype) and arr != value:
            raise self.error(f"the literal {value} does not fit in {dtype}", node)
        return Ex(Constant(arr, span=span), TensorType((), dtype))

    def materialize(self, value: Val | Boxed, node: ast.AST, like: Ex | None = None) -> Ex:
        """``value`` as an IR expression."""
        if isinstance(value, Ex):
            return value
        if isinstance(value, Boxed):
            return Ex(RefRead(value.var, span=self.span(node)), value.ty, value.weak)
        if isinstance(value, TupleVal):
            items = [self.materialize(v, node) for v in value.items]
            return Ex(
                Tuple(tuple(i.expr for i in items), span=self.span(node)),
                tuple_type([i.ty for i in items]),
            )
        obj = value.value
        if is_number(obj):
            return self.literal(obj, node, like)
        if isinstance(obj, np.generic):
            return Ex(
                Constant(np.asarray(obj), span=self.span(node)), TensorType((), str(obj.dtype))
            )
        if obj is None:
            return Ex(Tuple((), span=self.span(node)), TupleType(()))
        if isinstance(obj, np.ndarray):
            return self.array_constant(obj, node)
        if isinstance(obj, tuple):
            return self.materialize(TupleVal(tuple(Py(v) for v in obj)), node)
        if isinstance(obj, list) and all(isinstance(v, np.ndarray | int | float) for v in obj):
            return self.array_constant(np.asarray(obj), node)
        made = self.builder.value_of(obj, self.span(node))
        if made is not None:
            return Ex(made[0], made[1])
        if isinstance(obj, _SelfRef) and self.self_ref is not None:
            expr, ty = self.self_ref([], self.span(node))
            return Ex(expr, ty)
        raise self.error(f"cannot use {_describe(obj)} as a value in a @relay function", node)

    def array_constant(self, arr: np.ndarray[_Any, _Any], node: ast.AST) -> Ex:
        """A numpy array from the enclosing scope: float64 becomes float32 and int64 int32
        (as in JAX)."""
        if arr.dtype == np.float64:
            arr = arr.astype("float32")
        elif arr.dtype == np.int64:
            if arr.size and (arr.min() < -(2**31) or arr.max() >= 2**31):
                raise self.error(
                    "a captured int64 array has values that do not fit in int32",
                    node,
                    "convert it yourself (e.g. to float32) before the function uses it",
                )
            arr = arr.astype("int32")
        if dtype_name(arr.dtype) is None:
            raise self.error(
                f"cannot use a numpy array of dtype {arr.dtype} in a @relay function", node
            )
        c = Constant(np.ascontiguousarray(arr), span=self.span(node))
        return Ex(c, c.tensor_type)

    # -- expressions ---------------------------------------------------------------------------

    def expr(self, node: ast.expr, env: dict[str, _Any]) -> Val:
        """Convert an expression."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, int | float | bool) or node.value is None:
                return Py(node.value)
            if isinstance(node.value, str):
                return Py(node.value)
            raise self.unsupported(f"the literal {node.value!r}", node)
        if isinstance(node, ast.Name):
            return self.name(node, env)
        if isinstance(node, ast.Tuple | ast.List):
            return TupleVal(self.display(node.elts, env))
        if isinstance(node, ast.BinOp):
            op = pyops.BINARY_OPS.get(type(node.op))
            if op is None:
                raise self.unsupported(f"the operator {type(node.op).__name__}", node)
            return self.binary(op, self.expr(node.left, env), self.expr(node.right, env), node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, env)
        if isinstance(node, ast.Compare):
            return self.compare(node, env)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node, env)
        if isinstance(node, ast.IfExp):
            return self.ifexp(node, env)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, env)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.Lambda):
            fn = self.function(node, env, [None] * len(node.args.args), None)
            return Ex(fn, None)
        raise self.unsupported(
            _EXPRESSION_NAMES.get(type(node), type(node).__name__), node, _HINTS.get(type(node))
        )

    def unary(self, node: ast.UnaryOp, env: dict[str, _Any]) -> Val:
        operand = self.expr(node.operand, env)
        if isinstance(operand, Py) and is_number(operand.value):
            fold = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
            if type(node.op) in fold:
                return Py(fold[type(node.op)](operand.value))  # type: ignore[operator]
            if isinstance(node.op, ast.Invert) and type(operand.value) is int:
                return Py(~operand.value)  # a bool goes on: ~ of a bool tensor is not
        if isinstance(node.op, ast.UAdd):
            return operand
        op = {ast.USub: "negative", ast.Not: "logical_not", ast.Invert: "bitwise_not"}[
            type(node.op)
        ]
        if op == "bitwise_not":
            x = self.materialize(operand, node)
            if x.tensor is not None and x.tensor.dtype == "bool":
                op = pyops.BOOL_SPELLINGS[op]
            return self.op(op, [x], {}, node)
        return self.op(op, [operand], {}, node)

    def compare(self, node: ast.Compare, env: dict[str, _Any]) -> Val:
        left = self.expr(node.left, env)
        result: Val | None = None
        for i, (cmp, right_node) in enumerate(zip(node.ops, node.comparators, strict=True)):
            op = pyops.COMPARE_OPS.get(type(cmp))
            if op is None:
                raise self.unsupported(f"the comparison {type(cmp).__name__}", node)
            right = self.expr(right_node, env)
            if (
                i < len(node.ops) - 1
                and isinstance(right, Ex)
                and not isinstance(right.expr, Var | Constant)
            ):
                right = self.emit("c", right.expr, right.ty)  # evaluated once
            part = self.binary(op, left, right, node)
            result = part if result is None else self.binary("logical_and", result, part, node)
            left = right
        assert result is not None
        return result

    def boolop(self, node: ast.BoolOp, env: dict[str, _Any]) -> Val:
        # ``a and b`` is ``if (a) { b } else { False }``: b is not evaluated when a is false.
        values = node.values
        result = self.expr(values[0], env)
        for nxt in values[1:]:
            if isinstance(result, Py) and is_number(result.value):
                if isinstance(node.op, ast.And) and not result.value:
                    return result
                if isinstance(node.op, ast.Or) and result.value:
                    return result
                result = self.expr(nxt, env)
                continue
            cond = self.materialize(result, node)
            other = self.sub_block(functools.partial(self._value_expr, nxt, env))
            span = self.span(node)
            false = Constant(np.asarray(False), span=span)
            true = Constant(np.asarray(True), span=span)
            if isinstance(node.op, ast.And):
                result = Ex(If(cond.expr, other, false, span=span), TensorType((), "bool"))
            else:
                result = Ex(If(cond.expr, true, other, span=span), TensorType((), "bool"))
        return result

    def _value_expr(self, node: ast.expr, env: dict[str, _Any]) -> Expr:
        return self.materialize(self.expr(node, env), node).expr

    def ifexp(self, node: ast.IfExp, env: dict[str, _Any]) -> Val:
        cond = self.expr(node.test, env)
        if isinstance(cond, Py) and is_number(cond.value):
            return self.expr(node.body if cond.value else node.orelse, env)
        c = self.condition(cond, node.test)
        then_ty: list[Type | None] = [None]

        def branch(n: ast.expr, slot: list[Type | None]) -> Expr:
            v = self.materialize(self.expr(n, env), n)
            slot[0] = v.ty
            return v.expr

        t = self.sub_block(lambda: branch(node.body, then_ty))
        f = self.sub_block(lambda: branch(node.orelse, [None]))
        return Ex(If(c, t, f, span=self.span(node)), then_ty[0])

    def condition(self, value: Val, node: ast.AST) -> Expr:
        """A branch condition: a bool scalar (a number or int tensor is compared with 0)."""
        ex = self.materialize(value, node)
        t = ex.tensor
        if t is not None and t.dtype != "bool" and t.shape == ():
            zero = self.literal(0, node, ex)
            return self.op("not_equal", [ex, zero], {}, node).expr
        return ex.expr

    # -- operators -------------------------------------------------------------------------------

    def op(self, name: str, inputs: Sequence[Val], attrs: dict[str, object], node: ast.AST) -> Ex:
        """A call of operator ``name``; its static type when its arguments' are known."""
        args = [self.materialize(v, node) for v in inputs]
        opdef = get_op(name)
        try:
            validated = opdef.validate_attrs(attrs)
        except AttrValidationError as err:
            raise self.error(str(err), node) from None
        span = self.span(node)
        call = Call(opdef.op, tuple(a.expr for a in args), validated, span=span)
        ty: Type | None = None
        if all(a.ty is not None for a in args):
            try:
                ty = infer_call_type(
                    name, [a.ty for a in args if a.ty is not None], validated, span
                )
            except TypeCheckError:
                ty = None  # the type checker reports it, with every other error
        return Ex(call, ty)

    def binary(self, op: str, a: Val, b: Val, node: ast.AST) -> Val:
        if isinstance(a, Py) and isinstance(b, Py) and is_number(a.value) and is_number(b.value):
            fold = _PY_BINARY.get(op)
            if fold is not None:
                try:
                    return Py(fold(a.value, b.value))
                except (ZeroDivisionError, OverflowError, ValueError, TypeError) as err:
                    # ValueError: a negative shift count; TypeError: a bitwise op of a float
                    raise self.error(f"{err}", node) from None
        for v in (a, b):
            if isinstance(v, TupleVal) or (isinstance(v, Ex) and isinstance(v.ty, TupleType)):
                raise self.error(
                    "tuple arithmetic (concatenation, repetition) is not supported", node
                )
        x, y = self.coerce(a, b, node, true_division=op == "divide")
        if op == "matmul":
            return self.matmul(x, y, node)
        if op in pyops.BOOL_SPELLINGS and all(
            v.tensor is not None and v.tensor.dtype == "bool" for v in (x, y)
        ):
            op = pyops.BOOL_SPELLINGS[op]
        out = self.op(op, [x, y], {}, node)
        if _is_weak(a) and _is_weak(b) and op not in _NOT_WEAK:
            return Ex(out.expr, out.ty, True)
        return out

    def coerce(self, a: Val, b: Val, node: ast.AST, true_division: bool = False) -> tuple[Ex, Ex]:
        """Two operands with one dtype: a Python number takes the tensor's dtype, an integer
        tensor meeting a float one (or a float number) is cast to that float dtype, and for
        ``/`` integers become float32."""
        if isinstance(a, Py) and is_number(a.value) and not isinstance(b, Py):
            y = self.materialize(b, node)
            if (
                isinstance(a.value, float)
                and y.tensor is not None
                and not _float_dtype(y.tensor.dtype)
            ):
                y = self.cast(y, "float32", node)
            y = self._int_div(y, true_division, node)
            return self.literal(a.value, node, y), y
        if isinstance(b, Py) and is_number(b.value) and not isinstance(a, Py):
            x = self.materialize(a, node)
            if (
                isinstance(b.value, float)
                and x.tensor is not None
                and not _float_dtype(x.tensor.dtype)
            ):
                x = self.cast(x, "float32", node)
            x = self._int_div(x, true_division, node)
            return x, self.literal(b.value, node, x)
        x, y = self.materialize(a, node), self.materialize(b, node)
        if x.weak != y.weak:  # a scalar from Python numbers meets a tensor: it takes its dtype
            weak, strong = (x, y) if x.weak else (y, x)
            weak = self._adopt(weak, strong, node, true_division)
            x, y = (weak, strong) if x.weak else (strong, weak)
        tx, ty = x.tensor, y.tensor
        if tx is not None and ty is not None and tx.dtype != ty.dtype:
            if _float_dtype(tx.dtype) and not _float_dtype(ty.dtype):
                y = self.cast(y, tx.dtype, node)  # type: ignore[arg-type]
            elif _float_dtype(ty.dtype) and not _float_dtype(tx.dtype):
                x = self.cast(x, ty.dtype, node)  # type: ignore[arg-type]
            elif _int_dtype(tx.dtype) and ty.dtype == "bool":
                y = self.cast(y, tx.dtype, node)  # type: ignore[arg-type]
            elif _int_dtype(ty.dtype) and tx.dtype == "bool":
                x = self.cast(x, ty.dtype, node)  # type: ignore[arg-type]
        return self._int_div(x, true_division, node), self._int_div(y, true_division, node)

    def _adopt(self, weak: Ex, strong: Ex, node: ast.AST, true_division: bool) -> Ex:
        """The weakly typed scalar ``weak`` in the dtype of ``strong``."""
        wt, st = weak.tensor, strong.tensor
        if st is None:
            if wt is not None and _float_dtype(wt.dtype):
                return weak  # a float must not be truncated: leave the check to inference
            call = Call(
                get_op("cast_like").op,
                (weak.expr, strong.expr),
                get_op("cast_like").validate_attrs(None),
                span=self.span(node),
            )
            return Ex(call, None)
        if wt is None or wt.dtype == st.dtype:
            return weak
        if _float_dtype(wt.dtype) and not _float_dtype(st.dtype):
            return weak  # the int tensor is promoted instead (below)
        return self.cast(weak, str(st.dtype), node)

    def _int_div(self, x: Ex, true_division: bool, node: ast.AST) -> Ex:
        if true_division and x.tensor is not None and not _float_dtype(x.tensor.dtype):
            return self.cast(x, "float32", node)
        return x

    def cast(self, x: Ex, dtype: str, node: ast.AST) -> Ex:
        return self.op("cast", [x], {"dtype": dtype}, node)

    def matmul(self, a: Ex, b: Ex, node: ast.AST) -> Ex:
        """``a @ b`` with numpy's rules for ranks 1 to 3."""
        ra = a.tensor.ndim if a.tensor is not None else 2
        rb = b.tensor.ndim if b.tensor is not None else 2
        attrs = {"transpose_a": False, "transpose_b": False}
        if ra == 2 and rb == 2:
            return self.op("nn.matmul", [a, b], dict(attrs), node)
        if ra == 1 and rb == 1:
            return self.op("sum", [self.op("multiply", [a, b], {}, node)], {}, node)
        if ra == 1 and rb == 2:
            row = self.op("expand_dims", [a], {"axis": 0}, node)
            return self.op(
                "squeeze", [self.op("nn.matmul", [row, b], dict(attrs), node)], {"axis": [0]}, node
            )
        if ra == 2 and rb == 1:
            col = self.op("expand_dims", [b], {"axis": 1}, node)
            return self.op(
                "squeeze", [self.op("nn.matmul", [a, col], dict(attrs), node)], {"axis": [1]}, node
            )
        if ra == 3 and rb == 3:
            return self.op("nn.batch_matmul", [a, b], dict(attrs), node)
        if ra == 3 and rb == 2:
            return self.op(
                "nn.batch_matmul",
                [a, self.op("expand_dims", [b], {"axis": 0}, node)],
                dict(attrs),
                node,
            )
        if ra == 2 and rb == 3:
            return self.op(
                "nn.batch_matmul",
                [self.op("expand_dims", [a], {"axis": 0}, node), b],
                dict(attrs),
                node,
            )
        raise self.error(
            f"@ of rank-{ra} and rank-{rb} tensors is not supported (ranks 1 to 3 are)", node
        )

    # -- calls -------------------------------------------------------------------------------------

    def call(self, node: ast.Call, env: dict[str, _Any]) -> Val:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise self.unsupported("*args and **kwargs in calls", node)
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.expr(func.value, env)
            if not isinstance(receiver, Py):
                return self.method(receiver, func.attr, node, env)
            callee: Val = self.attribute_of(receiver, func.attr, func)
        else:
            callee = self.expr(func, env)
        args = [self.expr(a, env) for a in node.args]
        kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords if k.arg is not None}
        if isinstance(callee, Py):
            return self.call_object(callee.value, args, kwargs, node, env)
        if kwargs:
            raise self.error("keyword arguments to a local function are not supported", node)
        f = self.materialize(callee, func)
        ex_args = [self.materialize(a, node) for a in args]
        ret = f.ty.ret_type if isinstance(f.ty, FuncType) else None
        return Ex(Call(f.expr, tuple(a.expr for a in ex_args), span=self.span(node)), ret)

    def call_object(
        self,
        obj: object,
        args: list[Val],
        kwargs: dict[str, Val],
        node: ast.Call,
        env: dict[str, _Any],
    ) -> Val:
        from relay.frontend import callables

        return callables.call_object(self, obj, args, kwargs, node)

    def method(self, receiver: Val, name: str, node: ast.Call, env: dict[str, _Any]) -> Val:
        from relay.frontend import callables

        args = [self.expr(a, env) for a in node.args]
        kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords if k.arg is not None}
        return callables.call_method(self, receiver, name, args, kwargs, node)

    def attribute(self, node: ast.Attribute, env: dict[str, _Any]) -> Val:
        base = self.expr(node.value, env)
        if isinstance(base, Py):
            return self.attribute_of(base, node.attr, node)
        from relay.frontend import callables

        return callables.tensor_attribute(self, base, node.attr, node)

    def attribute_of(self, base: Py, attr: str, node: ast.AST) -> Py:
        try:
            return Py(getattr(base.value, attr))
        except AttributeError:
            raise self.error(f"{_describe(base.value)} has no attribute {attr}", node) from None

    def subscript(self, node: ast.Subscript, env: dict[str, _Any]) -> Val:
        from relay.frontend import callables

        base = self.expr(node.value, env)
        return callables.subscript(self, base, node.slice, node, env)

    # -- nested functions ----------------------------------------------------------------------

    def nested_def(self, stmt: ast.FunctionDef, env: dict[str, _Any]) -> None:
        if stmt.decorator_list:
            raise self.unsupported("decorators on nested functions", stmt.decorator_list[0])
        scope = TypeScope()
        types: list[Type | None] = []
        for a in stmt.args.args:
            if a.annotation is None:
                types.append(None)
                continue
            try:
                types.append(annotation_type(self._eval_annotation(a.annotation), scope))
            except TypeError as err:
                raise self.error(str(err), a.annotation) from None
        ret: Type | None = None
        if stmt.returns is not None:
            try:
                ret = annotation_type(self._eval_annotation(stmt.returns), scope)
            except TypeError as err:
                raise self.error(str(err), stmt.returns) from None
        var = Var(stmt.name, span=self.span(stmt))
        fn = self.function(stmt, env, types, ret, scope.all_vars, self_var=(stmt.name, var))
        fn_ty = (
            FuncType(tuple(t for t in types if t is not None), ret)
            if ret is not None and all(t is not None for t in types)
            else None
        )
        self.frame.bindings.append((var, fn))
        if stmt.name in self.boxed:
            self.bind(stmt.name, Ex(var, fn_ty), env, stmt)
        else:
            env[stmt.name] = Ex(var, fn_ty)

    def _eval_annotation(self, node: ast.expr) -> object:
        text = ast.unparse(node)
        try:
            return eval(text, _AnnotationNamespace(self.namespace))
        except RelayError as err:
            raise self.error(err.message, node) from None
        except Exception as err:
            raise self.error(f"cannot evaluate the annotation {text}: {err}", node) from None

    # -- branching: if and match -----------------------------------------------------------------

    def branching(
        self, stmt: ast.If | ast.Match, rest: Sequence[ast.stmt], env: dict[str, _Any], k: Cont
    ) -> Expr | None:
        """An ``if`` or ``match`` statement followed by ``rest``. Returns the whole tail
        expression (join by continuation), or None after binding the joined variables into
        ``env`` (join by value), in which case the caller goes on with ``rest``."""
        if isinstance(stmt, ast.If):
            cond_val = self.expr(stmt.test, env)
            if isinstance(cond_val, Py) and is_number(cond_val.value):  # decided now
                chosen = stmt.body if cond_val.value else stmt.orelse
                return (
                    self.block([*chosen, *rest], env, k) if chosen or rest else k.fallthrough(env)
                )
            branches: list[Sequence[ast.stmt]] = [stmt.body, stmt.orelse]
        else:
            from relay.frontend import patterns

            cond_val = self.expr(stmt.subject, env)
            branches = [c.body for c in stmt.cases]
            if not patterns.covers_all(self, stmt, env):
                branches.append([])  # no case matches: Python goes on after the match
        all_stmts = [s for b in branches for s in b]
        jumps = _jumps(all_stmts, loops_too=False)
        assigned = assigned_names(all_stmts)
        if not jumps:
            live = [n for n in assigned if n not in self.boxed]
            exits: list[dict[str, _Any]] = []

            def end_with_tuple(e: dict[str, _Any]) -> Expr:
                exits.append(e)
                return Tuple(
                    tuple(self._joined_value(e, n, stmt) for n in joined), span=self.span(stmt)
                )

            joined = self._joinable(live, env, branches, stmt)
            exprs = self._branch_exprs(stmt, cond_val, branches, env, Cont(end_with_tuple))
            types = self._exit_types(exits, joined)
            result = self.emit("if" if isinstance(stmt, ast.If) else "match", exprs, None)
            line = getattr(stmt, "lineno", 0) + self.source.first_line - 1
            for n in live:
                if n not in joined and not defined(env, n):
                    env[n] = Undefined(
                        f"is not assigned on every path through the statement at line {line}"
                    )
            for i, n in enumerate(joined):
                part = self.emit(n, TupleGetItem(result.expr, i, span=self.span(stmt)), types[i])
                weak = all(_is_weak(e.get(n)) for e in exits)
                env[n] = Ex(part.expr, part.ty, weak)
            return None
        if not rest:
            return self._branch_exprs(stmt, cond_val, branches, env, k)
        live = [n for n in assigned if n not in self.boxed]
        joined = self._joinable(live, env, branches, stmt)
        join = Var("join", span=self.span(stmt))
        exits = []

        def to_join(e: dict[str, _Any]) -> Expr:
            exits.append(e)
            args = tuple(self._joined_value(e, n, stmt) for n in joined)
            return Call(join, args, span=self.span(stmt))

        branch_k = Cont(to_join, k.brk, k.cont, k.in_loop)
        body = self._branch_exprs(stmt, cond_val, branches, env, branch_k)
        if not exits:
            return body  # no branch reaches the code after the statement: it is dead
        types = self._exit_types(exits, joined)
        params = [Var(n, t, span=self.span(stmt)) for n, t in zip(joined, types, strict=True)]
        inner = dict(env)
        for n, p, t in zip(joined, params, types, strict=True):
            inner[n] = Ex(p, t, bool(exits) and all(_is_weak(e.get(n)) for e in exits))
        line = getattr(stmt, "lineno", 0) + self.source.first_line - 1
        for n in live:
            if n not in joined:
                inner[n] = Undefined(
                    f"is not assigned on every path through the statement at line {line}"
                )
        join_body = self.sub_block(lambda: self.block(rest, inner, k))
        join_fn = Function(tuple(params), join_body, span=self.span(stmt))
        return Let(join, join_fn, body, span=self.span(stmt))

    def _joined_value(self, env: dict[str, _Any], name: str, stmt: ast.AST) -> Expr:
        if not defined(env, name):
            raise self.error(f"{name} is not assigned on every path through this statement", stmt)
        return self.materialize(env[name], stmt).expr

    def _joinable(
        self,
        live: list[str],
        env: dict[str, _Any],
        branches: list[Sequence[ast.stmt]],
        stmt: ast.AST,
    ) -> list[str]:
        """The assigned variables that are defined after the statement on every path that
        reaches its end."""
        sets = [definitely_assigned(b) for b in branches]
        return [n for n in live if defined(env, n) or all(s is None or n in s for s in sets)]

    def _exit_types(self, exits: list[dict[str, _Any]], joined: list[str]) -> list[Type | None]:
        types: list[Type | None] = []
        for n in joined:
            seen = {_static_type(e.get(n)) for e in exits}
            types.append(seen.pop() if len(seen) == 1 else None)
        return types

    def _branch_exprs(
        self,
        stmt: ast.If | ast.Match,
        cond_val: Val,
        branches: list[Sequence[ast.stmt]],
        env: dict[str, _Any],
        k: Cont,
    ) -> Expr:
        if isinstance(stmt, ast.If):
            cond = self.condition(cond_val, stmt.test)
            t = self.sub_block(lambda: self.block(stmt.body, env, k))
            f = self.sub_block(lambda: self.block(stmt.orelse, env, k))
            return If(cond, t, f, span=self.span(stmt))
        from relay.frontend import patterns

        return patterns.match_statement(self, stmt, cond_val, env, k)

    # -- loops -----------------------------------------------------------------------------------

    def loop(
        self, stmt: ast.While | ast.For, rest: Sequence[ast.stmt], env: dict[str, _Any], k: Cont
    ) -> Expr | None:
        from relay.frontend import loops

        return loops.convert_loop(self, stmt, rest, env, k)


class _SelfRef:
    """The function being converted, named inside its own body (recursion)."""

    def __init__(self, name: str | None) -> None:
        self.name = name


class _AnnotationNamespace(dict[str, object]):
    """Names for evaluating an annotation: the function's globals, then builtins."""

    def __init__(self, lookup: Callable[[str], object]) -> None:
        super().__init__()
        self._lookup = lookup

    def __missing__(self, key: str) -> object:
        try:
            return self._lookup(key)
        except KeyError:
            return getattr(builtins, key)


def _static_type(v: object) -> Type | None:
    if isinstance(v, Ex):
        return v.ty
    if isinstance(v, Boxed):
        return v.ty
    if isinstance(v, Py) and is_number(v.value):  # materialised with its default dtype
        value = v.value
        return TensorType(
            (),
            "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32",
        )
    return None


def _is_weak(v: object) -> bool:
    """A Python number, or a scalar computed only from Python numbers."""
    return (isinstance(v, Py) and is_number(v.value)) or (isinstance(v, Ex | Boxed) and v.weak)


_NOT_WEAK = frozenset(
    {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
)  # comparisons give bool, which does not adopt other dtypes


def _pos(node: ast.AST) -> dict[str, int]:
    return {
        "lineno": getattr(node, "lineno", 1),
        "col_offset": getattr(node, "col_offset", 0),
        "end_lineno": getattr(node, "end_lineno", 1),
        "end_col_offset": getattr(node, "end_col_offset", 0),
    }


def _describe(obj: object) -> str:
    if isinstance(obj, type):
        return f"the class {obj.__qualname__}"
    if callable(obj):
        return f"the function {getattr(obj, '__qualname__', repr(obj))}"
    text = repr(obj)
    return text if len(text) < 60 else f"a {type(obj).__name__}"


_PY_BINARY: dict[str, Callable[[_Any, _Any], _Any]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "divide": operator.truediv,
    "floor_divide": operator.floordiv,
    "floor_mod": operator.mod,
    "power": operator.pow,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
    "bitwise_and": operator.and_,
    "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor,
    "left_shift": operator.lshift,
    "right_shift": operator.rshift,
    "maximum": max,
    "minimum": min,
}

_STATEMENT_NAMES: dict[type, str] = {
    ast.With: "'with' statement",
    ast.AsyncWith: "'async with' statement",
    ast.Try: "'try' statement",
    ast.Raise: "'raise' statement",
    ast.Assert: "'assert' statement",
    ast.Delete: "'del' statement",
    ast.Import: "'import' statement",
    ast.ImportFrom: "'import' statement",
    ast.Global: "'global' statement",
    ast.ClassDef: "class definition",
    ast.AsyncFunctionDef: "async function",
    ast.AsyncFor: "'async for' statement",
}

_EXPRESSION_NAMES: dict[type, str] = {
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Dict: "dict display",
    ast.Set: "set display",
    ast.Yield: "'yield'",
    ast.YieldFrom: "'yield from'",
    ast.Await: "'await'",
    ast.NamedExpr: "assignment expression (:=)",
    ast.JoinedStr: "f-string",
    ast.Starred: "starred expression",
}

_HINTS: dict[type, str] = {
    ast.With: "move the context manager outside the @relay function",
    ast.Try: "errors inside @relay functions stop the program; check values before the call",
    ast.Raise: "errors inside @relay functions stop the program; check values before the call",
    ast.Assert: "check shapes with annotations such as Tensor[float32, ('n', 3)]",
    ast.Global: "pass the value as an argument, or use nonlocal in a nested function",
    ast.ClassDef: "define classes outside the function (data types with @relay.adt)",
    ast.ListComp: "write a for loop, or use relay.op.stack / np.stack on a tuple",
    ast.GeneratorExp: "write a for loop",
    ast.Dict: "use a tuple, or a data type declared with @relay.adt",
    ast.NamedExpr: "assign on a separate line",
    ast.JoinedStr: "strings are not values in @relay functions",
}
