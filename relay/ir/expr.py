"""Relay's expressions and patterns.

Expression nodes are immutable and compared by identity: two ``Var("x")``
are different variables, and two separately built ``add(%x, %y)`` calls are
different nodes. Alpha-equivalence is :func:`relay.structural_equal`.
Every node may carry a :class:`Span`; spans never affect equality.

Type inference records its result on each node in ``checked_type`` (the only
mutable state of a node, set once by the type checker).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from relay.ir.attrs import EMPTY_ATTRS, Attrs
from relay.ir.span import Span
from relay.ir.types import DTYPES, GlobalTypeVar, TensorType, Type, TypeVar

if TYPE_CHECKING:
    from relay.op.registry import OpDef


@dataclass(frozen=True, slots=True, eq=False)
class Expr:
    """Base class of expressions."""

    span: Span | None = field(default=None, kw_only=True, repr=False)
    _checked_type: Type | None = field(default=None, init=False, repr=False)

    @property
    def checked_type(self) -> Type:
        """The type inferred for this expression; raises if inference has not run."""
        if self._checked_type is None:
            raise ValueError(
                f"the type of this {type(self).__name__} has not been inferred; "
                "run relay.infer_type first"
            )
        return self._checked_type

    def set_checked_type(self, ty: Type) -> None:
        """Record the inferred type (used by the type checker)."""
        object.__setattr__(self, "_checked_type", ty)

    def __str__(self) -> str:
        from relay.ir.printer import astext

        return astext(self)

    def astext(self, show_types: bool = False) -> str:
        """This expression in the Relay text format."""
        from relay.ir.printer import astext

        return astext(self, show_types=show_types)


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A local variable ``%name``: a function parameter, let binder or pattern variable."""

    name_hint: str
    type_annotation: Type | None = None

    def __repr__(self) -> str:
        return f"Var({self.name_hint!r})"


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Expr):
    """The name ``@name`` of a global function in a :class:`Module`."""

    name_hint: str

    def __repr__(self) -> str:
        return f"GlobalVar({self.name_hint!r})"


_DTYPE_NAMES: dict[np.dtype[Any], str] = {}  # str(dtype) is slow in numpy; a few entries


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    """A constant tensor; ``data`` is a numpy array (rank 0 for scalars)."""

    data: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.data, np.ndarray):
            raise TypeError(f"Constant data must be a numpy array, got {type(self.data).__name__}")
        Constant._dtype_name(self.data)

    @staticmethod
    def _dtype_name(data: np.ndarray) -> str:
        """The Relay dtype of ``data``; a TypeError for a dtype that Relay lacks (strings,
        complex numbers, objects, a non-native byte order...)."""
        dt = data.dtype
        name = _DTYPE_NAMES.get(dt)
        if name is None:
            name = str(dt)
            if name not in DTYPES:
                raise TypeError(
                    f"Constant: unsupported dtype {name}; relay supports {', '.join(DTYPES)}"
                )
            _DTYPE_NAMES[dt] = name
        return name

    @property
    def tensor_type(self) -> TensorType:
        """The constant's type, from its shape and dtype."""
        return TensorType(tuple(int(d) for d in self.data.shape), Constant._dtype_name(self.data))

    def __repr__(self) -> str:
        return f"Constant({self.data!r})"


def const(value: object, dtype: str | None = None, span: Span | None = None) -> Constant:
    """A constant from a Python or numpy value; Python floats default to float32 (a numpy
    array or scalar keeps its dtype)."""
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value).astype(dtype) if dtype else np.asarray(value)
    elif dtype is not None:
        arr = np.asarray(value, dtype=dtype)
    elif isinstance(value, bool):
        arr = np.asarray(value, dtype="bool")
    elif isinstance(value, int):
        arr = np.asarray(value, dtype="int32")
    elif isinstance(value, float):
        arr = np.asarray(value, dtype="float32")
    else:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype("float32")
        elif arr.dtype == np.int64:
            arr = arr.astype("int32")
    return Constant(np.asarray(arr, order="C"), span=span)


@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    """A tuple ``(a, b)``."""

    fields: tuple[Expr, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    """Projection ``t.index``."""

    tuple_value: Expr
    index: int


@dataclass(frozen=True, slots=True, eq=False)
class Function(Expr):
    """``fn [type_params] (params) -> ret_type { body }`` with ``attrs`` (e.g. ``Primitive=1``)."""

    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    type_params: tuple[TypeVar, ...] = ()
    attrs: Attrs = EMPTY_ATTRS

    def with_attr(self, key: str, value: object) -> Function:
        """A copy of this function with attribute ``key`` set."""
        return Function(
            self.params,
            self.body,
            self.ret_type,
            self.type_params,
            self.attrs.with_attr(key, value),
            span=self.span,
        )


@dataclass(frozen=True, slots=True, eq=False)
class Op(Expr):
    """A primitive operator such as ``add``; one node per name (see :meth:`get`)."""

    name: str

    @staticmethod
    def get(name: str) -> Op:
        """The operator registered as ``name``; raises ``KeyError`` if there is none."""
        from relay.op.registry import get_op

        return get_op(name).op

    @property
    def definition(self) -> OpDef:
        """The registry entry of this operator."""
        from relay.op.registry import get_op

        return get_op(self.name)

    def __repr__(self) -> str:
        return f"Op({self.name!r})"


@dataclass(frozen=True, slots=True, eq=False)
class Constructor(Expr):
    """A constructor of an algebraic data type, e.g. ``Cons``.

    ``inputs`` are its field types (in terms of the data type's parameters),
    ``belong_to`` the data type, ``tag`` its index in the definition.
    """

    name_hint: str
    inputs: tuple[Type, ...] = ()
    belong_to: GlobalTypeVar | None = None
    tag: int = 0

    def __repr__(self) -> str:
        return f"Constructor({self.name_hint!r})"


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """``op(args, attrs...)``: a call of an operator, function, closure or constructor."""

    op: Expr
    args: tuple[Expr, ...] = ()
    attrs: Attrs = EMPTY_ATTRS
    type_args: tuple[Type, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class Let(Expr):
    """``let %var = value; body``."""

    var: Var
    value: Expr
    body: Expr


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    """``if (cond) { true_branch } else { false_branch }``."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr


class Pattern:
    """Base class of ``match`` patterns."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class PatternWildcard(Pattern):
    """``_``: matches anything, binds nothing."""

    span: Span | None = field(default=None, kw_only=True, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class PatternVar(Pattern):
    """``%x``: matches anything and binds it to ``var``."""

    var: Var
    span: Span | None = field(default=None, kw_only=True, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class PatternConstructor(Pattern):
    """``Cons(p1, p2)``: matches values built by ``constructor`` whose fields match."""

    constructor: Constructor
    patterns: tuple[Pattern, ...] = ()
    span: Span | None = field(default=None, kw_only=True, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class PatternTuple(Pattern):
    """``(p1, p2)``: matches a tuple whose fields match."""

    patterns: tuple[Pattern, ...] = ()
    span: Span | None = field(default=None, kw_only=True, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Clause:
    """One arm ``lhs => rhs`` of a match."""

    lhs: Pattern
    rhs: Expr
    span: Span | None = field(default=None, kw_only=True, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class Match(Expr):
    """``match (data) { clauses }``; ``complete=False`` is ``match?`` (may be partial)."""

    data: Expr
    clauses: tuple[Clause, ...] = ()
    complete: bool = True


@dataclass(frozen=True, slots=True, eq=False)
class RefCreate(Expr):
    """``ref(value)``: a new mutable cell."""

    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class RefRead(Expr):
    """``ref_read(ref)``."""

    ref: Expr


@dataclass(frozen=True, slots=True, eq=False)
class RefWrite(Expr):
    """``ref_write(ref, value)``; evaluates to ``()``."""

    ref: Expr
    value: Expr


ATOMIC_EXPRS = (Var, GlobalVar, Constant, Op, Constructor)
"""Expressions the printer writes inline rather than binding to a ``%N`` temporary."""


def pattern_vars(pattern: Pattern) -> list[Var]:
    """The variables a pattern binds, left to right."""
    out: list[Var] = []
    stack: list[Pattern] = [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            out.append(p.var)
        elif isinstance(p, PatternConstructor | PatternTuple):
            stack.extend(reversed(p.patterns))
    return out


def children(expr: Expr) -> Sequence[Expr]:
    """The direct sub-expressions of ``expr`` in evaluation order."""
    if isinstance(expr, Call):
        return (expr.op, *expr.args)
    if isinstance(expr, Tuple):
        return expr.fields
    if isinstance(expr, TupleGetItem):
        return (expr.tuple_value,)
    if isinstance(expr, Function):
        return (*expr.params, expr.body)
    if isinstance(expr, Let):
        return (expr.var, expr.value, expr.body)
    if isinstance(expr, If):
        return (expr.cond, expr.true_branch, expr.false_branch)
    if isinstance(expr, Match):
        return (expr.data, *(c.rhs for c in expr.clauses))
    if isinstance(expr, RefCreate):
        return (expr.value,)
    if isinstance(expr, RefRead):
        return (expr.ref,)
    if isinstance(expr, RefWrite):
        return (expr.ref, expr.value)
    return ()
