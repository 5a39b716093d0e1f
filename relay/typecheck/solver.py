"""Unification and the type-relation solver.

The type checker turns a program into equations between types that contain
unknowns (``IncompleteType``: one kind for types, one for dimensions, one for
dtypes) plus operator relations, and this module solves them.

Unification is first-order (Robinson, "A Machine-Oriented Logic Based on the
Resolution Principle", 1965) over a union-find of the unknowns (Tarjan, 1975):
each unknown is linked to another unknown or bound to a value; ``find``
follows and compresses links, and ``resolve`` substitutes the current
knowledge into a type. Type variables (``TypeVar``) are rigid: inside a
polymorphic function they equal only themselves; fresh unknowns replace them
when a polymorphic value is used (instantiation, in the checker).

Dimensions are unified up to arithmetic (:mod:`relay.ir.dim`): two
dimensions are equal when their difference simplifies to zero; an equation
linear in one unknown binds it (``_ * 3 == 12`` gives 4), never to a negative
size (``_ + 5 == 3`` is an error) nor to a fraction (``_ * 2 == 3``); an equation
that cannot be decided yet is kept and retried as more becomes known, and one
still undecided at the end is left to the run-time shape checks. ``Any`` equals
every dimension; an unknown that met only ``Any`` is ``Any`` once nothing else
is left to learn.

Two function types unify when their type parameters correspond (alpha-renamed);
a polymorphic function type against a monomorphic one is instantiated when it
is the first (actual) side, and keeps its parameters rigid when it is the
second (expected) side: a function passed where ``fn [A](A) -> A`` is expected
must work for every ``A``.

Relations are solved as in Relay's ``TypeSolver`` (Roesch et al., 2019): a
worklist fixed point in which each unsolved relation runs again after a round
that bound something, until a round makes no progress. A relation's
``RelationError`` and every failed unification are recorded with their span
rather than raised, so one run reports all the independent errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from relay.errors import TypeCheckError
from relay.ir import dim
from relay.ir.attrs import Attrs
from relay.ir.dim import Dim
from relay.ir.span import Span
from relay.ir.types import (
    Any as AnyDim,
    DType,
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
    TypeVar,
    _AnyDim,
)
from relay.typecheck.relation import RelationError, RelationFunc
from relay.typecheck.subst import subst_type


def is_dim_arg(a: object) -> bool:
    """Whether ``a`` (a data type's argument) is a dimension, for a ``Shape`` parameter."""
    if isinstance(a, TypeVar | IncompleteType):
        return a.kind is Kind.SHAPE
    return isinstance(a, int | _AnyDim | SymbolicDim)


def is_dtype_arg(a: object) -> bool:
    """Whether ``a`` (a data type's argument) is a dtype, for a ``BaseType`` parameter."""
    if isinstance(a, TypeVar | IncompleteType):
        return a.kind is Kind.BASE_TYPE
    return isinstance(a, str)


class UnifyError(Exception):
    """Two things that cannot be made equal (internal: the checker adds context and a span)."""


class NegativeDimError(UnifyError):
    """Two dimensions equal only if an unknown dimension is negative (``_ + 5 == 3``)."""


@dataclass(slots=True, eq=False)
class _Relation:
    name: str
    func: RelationFunc
    types: list[Type]
    attrs: Attrs
    span: Span | None
    values: Sequence[object | None] = ()
    solved: bool = False


@dataclass(slots=True, eq=False)
class _DimEquation:
    lhs: Dim
    rhs: Dim
    message: str
    span: Span | None


@dataclass(slots=True, eq=False)
class Solver:
    """The unknowns of one type-checking problem, their bindings, and the pending relations."""

    binding: dict[IncompleteType, object] = field(default_factory=dict)
    relations: list[_Relation] = field(default_factory=list)
    equations: list[_DimEquation] = field(default_factory=list)
    errors: list[TypeCheckError] = field(default_factory=list)
    version: int = 0
    # unknown dimensions unified with `?`: those still unknown when nothing else is left to
    # learn are `?` themselves (known only at run time)
    any_dims: list[IncompleteType] = field(default_factory=list)
    span: Span | None = None  # the span of the relation or expression being processed
    values: Sequence[object | None] = ()  # the constant arguments of the relation being run

    # -- unknowns ---------------------------------------------------------------------------------

    def fresh(self, kind: Kind = Kind.TYPE) -> IncompleteType:
        """A new unknown of ``kind``."""
        return IncompleteType(kind)

    def fresh_dim(self) -> Dim:
        """A new unknown dimension."""
        return IncompleteType(Kind.SHAPE)

    def find(self, x: object) -> object:
        """The representative of ``x``: its binding if bound (followed), else the unknown itself."""
        if not isinstance(x, IncompleteType):
            return x
        path = []
        cur: object = x
        while isinstance(cur, IncompleteType) and cur in self.binding:
            path.append(cur)
            cur = self.binding[cur]
        for p in path[:-1]:
            self.binding[p] = cur
        return cur

    def _bind(self, var: IncompleteType, value: object) -> None:
        self.binding[var] = value
        self.version += 1

    # -- resolution -------------------------------------------------------------------------------

    def resolve(self, t: Type) -> Type:
        """``t`` with every bound unknown replaced by its value, recursively."""
        found = self.find(t)
        if isinstance(found, IncompleteType):
            return found
        t = found  # type: ignore[assignment]
        if isinstance(t, TensorType):
            if not any(isinstance(d, IncompleteType | SymbolicDim) for d in t.shape) and not (
                isinstance(t.dtype, IncompleteType)
            ):
                return t
            return TensorType(
                tuple(self.resolve_dim(d) for d in t.shape),
                self.resolve_dtype(t.dtype),
                span=t.span,
            )
        if isinstance(t, TupleType):
            return TupleType(tuple(self.resolve(f) for f in t.fields), span=t.span)
        if isinstance(t, FuncType):
            return FuncType(
                tuple(self.resolve(a) for a in t.arg_types),
                self.resolve(t.ret_type),
                t.type_params,
                t.type_constraints,
                span=t.span,
            )
        if isinstance(t, TypeCall):
            return TypeCall(
                self.resolve(t.func), tuple(self.resolve_arg(a) for a in t.args), span=t.span
            )
        if isinstance(t, RefType):
            return RefType(self.resolve(t.value), span=t.span)
        return t

    def resolve_dim(self, d: Dim) -> Dim:
        """A dimension with the known unknowns substituted."""
        if isinstance(d, IncompleteType):
            found = self.find(d)
            return found if isinstance(found, IncompleteType) else self.resolve_dim(found)  # type: ignore[arg-type]
        if isinstance(d, SymbolicDim):
            return dim.substitute(d, self._dim_value)
        return d

    def _dim_value(self, v: TypeVar | IncompleteType) -> Dim:
        return self.resolve_dim(v) if isinstance(v, IncompleteType) else v

    def resolve_arg(self, a: object) -> Type:
        """A data type's argument resolved: a type, or a dimension or dtype (for a Shape or
        BaseType parameter)."""
        if is_dim_arg(a):
            return self.resolve_dim(a)  # type: ignore[arg-type,return-value]
        if is_dtype_arg(a):
            return self.resolve_dtype(a)  # type: ignore[arg-type,return-value]
        return self.resolve(a)  # type: ignore[arg-type]

    def resolve_dtype(self, d: DType) -> DType:
        """A dtype with a known unknown substituted."""
        found = self.find(d)
        assert isinstance(found, str | TypeVar | IncompleteType)
        return found

    # -- unification ------------------------------------------------------------------------------

    def unify(self, a: Type, b: Type) -> None:
        """Make ``a`` and ``b`` equal; ``UnifyError`` (message naming both) if impossible."""
        try:
            self._unify(a, b)
        except UnifyError as e:
            detail = str(e)
            msg = f"cannot unify {self.resolve(a)} with {self.resolve(b)}"
            raise UnifyError(msg if not detail else f"{msg}: {detail}") from None

    def _unify(self, a: Type, b: Type) -> None:
        x, y = self.find(a), self.find(b)
        if x is y:
            return
        if isinstance(x, IncompleteType):
            self._bind_type(x, y)
            return
        if isinstance(y, IncompleteType):
            self._bind_type(y, x)
            return
        if isinstance(x, TensorType) and isinstance(y, TensorType):
            if len(x.shape) != len(y.shape):
                raise UnifyError(f"rank {len(x.shape)} vs {len(y.shape)}")
            for i, (dx, dy) in enumerate(zip(x.shape, y.shape, strict=True)):
                try:
                    self.unify_dim(dx, dy)
                except UnifyError as e:
                    detail = f": {e}" if str(e) else ""
                    raise UnifyError(
                        f"dimension {i} differs ({self._dim_str(dx)} vs {self._dim_str(dy)})"
                        f"{detail}"
                    ) from None
            try:
                self.unify_dtype(x.dtype, y.dtype)
            except UnifyError:
                if not x.shape:  # "cannot unify float32 with int32" says it already
                    raise UnifyError("") from None
                tx, ty = self.resolve_dtype(x.dtype), self.resolve_dtype(y.dtype)
                raise UnifyError(f"dtype differs ({tx} vs {ty})") from None
            return
        if isinstance(x, TupleType) and isinstance(y, TupleType):
            if len(x.fields) != len(y.fields):
                raise UnifyError(f"{len(x.fields)} fields vs {len(y.fields)}")
            for i, (fx, fy) in enumerate(zip(x.fields, y.fields, strict=True)):
                try:
                    self._unify(fx, fy)
                except UnifyError as e:
                    detail = f": {e}" if str(e) else ""
                    raise UnifyError(
                        f"field {i} differs ({self.resolve(fx)} vs {self.resolve(fy)}){detail}"
                    ) from None
            return
        if isinstance(x, FuncType) and isinstance(y, FuncType):
            if len(x.arg_types) != len(y.arg_types):
                raise UnifyError(f"{len(x.arg_types)} parameters vs {len(y.arg_types)}")
            if x.type_params and not y.type_params:
                x = self._instantiate(x)  # a polymorphic value used at one type
            elif y.type_params and not x.type_params:
                # a function where a polymorphic one is expected: it must work for every
                # instance, so the expected type's parameters stay rigid
                y = FuncType(y.arg_types, y.ret_type)
            if len(x.type_params) != len(y.type_params):
                raise UnifyError("different numbers of type parameters")
            if x.type_params:
                mapping: dict[TypeVar, object] = dict(
                    zip(y.type_params, x.type_params, strict=True)
                )
                y = FuncType(
                    tuple(subst_type(t, mapping) for t in y.arg_types),
                    subst_type(y.ret_type, mapping),
                )
            for ax, ay in zip(x.arg_types, y.arg_types, strict=True):
                self._unify(ax, ay)
            self._unify(x.ret_type, y.ret_type)
            return
        if isinstance(x, TypeCall) and isinstance(y, TypeCall):
            if len(x.args) != len(y.args):
                raise UnifyError("")
            self._unify(x.func, y.func)
            for i, (ax, ay) in enumerate(zip(x.args, y.args, strict=True)):
                if is_dim_arg(ax) or is_dim_arg(ay):
                    try:
                        self.unify_dim(ax, ay)  # type: ignore[arg-type]
                    except UnifyError as e:
                        detail = f": {e}" if str(e) else ""
                        raise UnifyError(
                            f"type argument {i} differs ({self._dim_str(ax)} vs "  # type: ignore[arg-type]
                            f"{self._dim_str(ay)}){detail}"  # type: ignore[arg-type]
                        ) from None
                elif is_dtype_arg(ax) or is_dtype_arg(ay):
                    self.unify_dtype(ax, ay)  # type: ignore[arg-type]
                else:
                    self._unify(ax, ay)
            return
        if isinstance(x, RefType) and isinstance(y, RefType):
            self._unify(x.value, y.value)
            return
        if (
            isinstance(x, GlobalTypeVar)
            and isinstance(y, GlobalTypeVar)
            and x.name_hint == y.name_hint
        ):
            return
        raise UnifyError("")

    @staticmethod
    def _instantiate(t: FuncType) -> FuncType:
        """``t`` with its type parameters replaced by fresh unknowns."""
        mapping: dict[TypeVar, object] = {tv: IncompleteType(tv.kind) for tv in t.type_params}
        return FuncType(
            tuple(subst_type(a, mapping) for a in t.arg_types), subst_type(t.ret_type, mapping)
        )

    def _bind_type(self, var: IncompleteType, value: object) -> None:
        if isinstance(value, Type) and self._occurs(var, value):
            raise UnifyError("the type would contain itself")
        self._bind(var, value)

    def _occurs(self, var: IncompleteType, t: Type) -> bool:
        r = self.resolve(t)
        stack: list[object] = [r]
        while stack:
            x = stack.pop()
            if x is var:
                return True
            if isinstance(x, TensorType):
                continue
            if isinstance(x, TupleType):
                stack.extend(x.fields)
            elif isinstance(x, FuncType):
                stack.extend(x.arg_types)
                stack.append(x.ret_type)
            elif isinstance(x, TypeCall):
                stack.extend(x.args)
            elif isinstance(x, RefType):
                stack.append(x.value)
        return False

    def _dim_str(self, d: Dim) -> str:
        return dim.dim_str(self.resolve_dim(d))

    def unify_dim(self, a: Dim, b: Dim) -> None:
        """Make two dimensions equal (see the module docstring); ``UnifyError`` if they differ."""
        x, y = self.resolve_dim(a), self.resolve_dim(b)
        if x is y:
            return
        if isinstance(x, _AnyDim) or isinstance(y, _AnyDim):
            other = y if isinstance(x, _AnyDim) else x
            if isinstance(other, IncompleteType):
                self.any_dims.append(other)
            return
        same = dim.equal(x, y)
        if same is True:
            return
        if same is False:
            raise UnifyError("")
        if isinstance(x, IncompleteType) and not any(v is x for v in dim.dim_vars(y)):
            self._bind_dim(x, y)
            return
        if isinstance(y, IncompleteType) and not any(v is y for v in dim.dim_vars(x)):
            self._bind_dim(y, x)
            return
        diff = dim.sub(x, y)
        unknowns = [v for v in dim.dim_vars(diff) if isinstance(v, IncompleteType)]
        for v in unknowns:
            value = dim.solve_for(x, y, v)
            if value is not None:
                self._bind_dim(v, value)
                return
        poly = dim.as_poly(diff)
        if len(poly.terms) == 1 and len(poly.terms[0][0]) == 1 and unknowns:
            # c * _ + k == 0 with c not dividing k: no size fits
            num, den = -poly.const, poly.terms[0][1]
            if den < 0:
                num, den = -num, -den
            raise UnifyError(f"an unknown dimension would be {num}/{den}, not a whole number")
        if not unknowns:
            raise UnifyError("")
        self.equations.append(_DimEquation(x, y, "", self.span))

    def _bind_dim(self, var: IncompleteType, value: Dim) -> None:
        """Bind an unknown dimension; a negative size is a :class:`NegativeDimError`."""
        if isinstance(value, int) and value < 0:
            raise NegativeDimError(f"an unknown dimension would be negative ({value})")
        self._bind(var, value)

    def unify_dtype(self, a: DType, b: DType) -> None:
        """Make two dtypes equal; ``UnifyError`` if they differ."""
        x, y = self.find(a), self.find(b)
        if x is y or (isinstance(x, str) and x == y):
            return
        if isinstance(x, IncompleteType):
            self._bind(x, y)
            return
        if isinstance(y, IncompleteType):
            self._bind(y, x)
            return
        raise UnifyError("")

    # -- the Reporter protocol for relations ------------------------------------------------------

    def dim_equal(self, a: Dim, b: Dim, message: str) -> None:
        """Reporter: make two dimensions equal or raise ``RelationError(message)``."""
        try:
            self.unify_dim(a, b)
        except UnifyError as e:
            raise RelationError(f"{message}: {e}" if str(e) else message) from None
        if self.equations and self.equations[-1].message == "":
            self.equations[-1].message = message

    def dtype_equal(self, a: DType, b: DType, message: str) -> None:
        """Reporter: make two dtypes equal or raise ``RelationError(message)``."""
        try:
            self.unify_dtype(a, b)
        except UnifyError:
            raise RelationError(message) from None

    def reporter_unify(self, a: Type, b: Type, message: str | None = None) -> None:
        """Reporter: make two types equal or raise ``RelationError``."""
        try:
            self.unify(a, b)
        except UnifyError as e:
            raise RelationError(message or str(e)) from None

    # -- relations --------------------------------------------------------------------------------

    def add_relation(
        self,
        name: str,
        func: RelationFunc,
        types: list[Type],
        attrs: Attrs,
        span: Span | None,
        values: Sequence[object | None] = (),
    ) -> None:
        """Add the relation ``func`` over ``types`` (arguments, then the result); ``values``
        holds the arguments that are constants in the program (numpy arrays; None for the
        others), which the relation may read with ``Reporter.arg_value``."""
        self.relations.append(_Relation(name, func, types, attrs, span, values))

    def error(self, message: str, span: Span | None) -> None:
        """Record a type error."""
        self.errors.append(TypeCheckError(message, span))

    def solve(self) -> None:
        """Run the relations and pending dimension equations to a fixed point."""
        reporter = _Reporter(self)
        while True:
            start = self.version
            for rel in self.relations:
                if rel.solved:
                    continue
                self.span = rel.span
                self.values = rel.values
                resolved = [self.resolve(t) for t in rel.types]
                try:
                    rel.solved = rel.func(resolved, rel.attrs, reporter)
                except RelationError as e:
                    self.error(e.message, rel.span)
                    rel.solved = True
            pending, self.equations = self.equations, []
            for eq in pending:
                self.span = eq.span
                try:
                    self.unify_dim(eq.lhs, eq.rhs)
                except UnifyError as e:
                    lhs, rhs = self._dim_str(eq.lhs), self._dim_str(eq.rhs)
                    message = eq.message or f"cannot unify dimensions {lhs} and {rhs}"
                    self.error(f"{message}: {e}" if str(e) else message, eq.span)
                else:
                    if self.equations and self.equations[-1].message == "":
                        self.equations[-1].message = eq.message
            self.relations = [r for r in self.relations if not r.solved]
            if self.version == start and not self._default_any_dims():
                return

    def _default_any_dims(self) -> bool:
        """Make the unknown dimensions that were unified with ``?`` and are still unknown
        ``?``; whether there were any."""
        found = False
        for v in self.any_dims:
            rep = self.find(v)
            if isinstance(rep, IncompleteType):
                self._bind(rep, AnyDim)
                found = True
        self.any_dims.clear()
        return found

    def unsolved(self) -> list[tuple[str, Span | None]]:
        """The relations left unsolved after :meth:`solve` (name and span)."""
        return [(r.name, r.span) for r in self.relations if not r.solved]


class _Reporter:
    """The :class:`~relay.typecheck.relation.Reporter` a solver hands to relations."""

    __slots__ = ("_solver",)

    def __init__(self, solver: Solver) -> None:
        self._solver = solver

    def unify(self, a: Type, b: Type, message: str | None = None) -> None:
        self._solver.reporter_unify(a, b, message)

    def dim_equal(self, a: Dim, b: Dim, message: str) -> None:
        self._solver.dim_equal(a, b, message)

    def dtype_equal(self, a: DType, b: DType, message: str) -> None:
        self._solver.dtype_equal(a, b, message)

    def resolve(self, t: Type) -> Type:
        return self._solver.resolve(t)

    def fresh_dim(self) -> Dim:
        return self._solver.fresh_dim()

    def arg_value(self, index: int) -> npt.NDArray[Any] | None:
        values = self._solver.values
        value = values[index] if index < len(values) else None
        return value if isinstance(value, np.ndarray) else None
