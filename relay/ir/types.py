"""Relay's types.

Types are immutable values compared structurally (``==``), except the
binders and unknowns, which have identity: :class:`TypeVar`,
:class:`GlobalTypeVar` and :class:`IncompleteType`. A tensor shape entry
(a *dim*) is an ``int``, a shape variable (a ``TypeVar`` of kind
``Kind.SHAPE``) or :data:`Any` (a dimension known only at run time).
A dtype is a string such as ``"float32"`` or a ``TypeVar`` of kind
``Kind.BASE_TYPE``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any as TypingAny, TypeAlias

from relay.ir.span import Span

if TYPE_CHECKING:
    from relay.ir.attrs import Attrs

DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
)


class Kind(enum.Enum):
    """What a type variable ranges over."""

    TYPE = "Type"
    SHAPE = "Shape"
    BASE_TYPE = "BaseType"
    CONSTRAINT = "Constraint"
    ADT = "AdtHandle"


class Type:
    """Base class of all types."""

    __slots__ = ()

    def __str__(self) -> str:
        from relay.ir.printer import astext

        return astext(self)


@dataclass(frozen=True, slots=True, eq=False)
class TypeVar(Type):
    """A type variable: a binder in ``def @f[A, n: Shape]``; identity equality."""

    name_hint: str
    kind: Kind = Kind.TYPE
    span: Span | None = field(default=None, compare=False, kw_only=True)

    def __repr__(self) -> str:
        return f"TypeVar({self.name_hint!r}, {self.kind.name})"

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True, eq=False)
class GlobalTypeVar(Type):
    """The name of a global type definition, e.g. ``List``; identity equality."""

    name_hint: str
    kind: Kind = Kind.ADT
    span: Span | None = field(default=None, compare=False, kw_only=True)

    def __repr__(self) -> str:
        return f"GlobalTypeVar({self.name_hint!r})"

    __str__ = Type.__str__


class _AnyDim:
    """The unknown dimension ``?``; a singleton."""

    __slots__ = ()
    _instance: _AnyDim | None = None

    def __new__(cls) -> _AnyDim:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Any"

    def __str__(self) -> str:
        return "?"

    def __reduce__(self) -> str:
        return "Any"


Any = _AnyDim()
"""A tensor dimension whose size is known only at run time (``?`` in text)."""


class SymbolicDim:
    """Base of computed symbolic dimensions such as ``n * 784`` (see :mod:`relay.ir.dim`)."""

    __slots__ = ()


Dim: TypeAlias = "int | TypeVar | IncompleteType | _AnyDim | SymbolicDim"
DType: TypeAlias = "str | TypeVar | IncompleteType"


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """A tensor of ``shape`` and ``dtype``; ``TensorType((), "float32")`` is a scalar."""

    shape: tuple[Dim, ...]
    dtype: DType = "float32"
    span: Span | None = field(default=None, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        if isinstance(self.dtype, str) and self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}")
        for d in self.shape:
            if isinstance(d, bool) or not isinstance(
                d, int | TypeVar | _AnyDim | IncompleteType | SymbolicDim
            ):
                raise TypeError(f"bad tensor dimension {d!r}")

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """True when every dimension is an integer and the dtype is concrete."""
        return isinstance(self.dtype, str) and all(isinstance(d, int) for d in self.shape)

    def concrete_shape(self) -> tuple[int, ...]:
        """The shape as ints; raises ``ValueError`` if a dimension is symbolic."""
        if not all(isinstance(d, int) for d in self.shape):
            raise ValueError(f"shape {self.shape} is not static")
        return tuple(d for d in self.shape if isinstance(d, int))

    __str__ = Type.__str__


def scalar_type(dtype: str) -> TensorType:
    """The rank-0 tensor type of ``dtype``."""
    return TensorType((), dtype)


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """The type of a tuple; ``TupleType(())`` is the unit type ``()``."""

    fields: tuple[Type, ...]
    span: Span | None = field(default=None, compare=False, kw_only=True)

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class TypeCall(Type):
    """An algebraic data type applied to arguments: ``List[Tensor[(), float32]]``."""

    func: Type
    args: tuple[Type, ...]
    span: Span | None = field(default=None, compare=False, kw_only=True)

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class RefType(Type):
    """The type of a mutable reference cell holding a ``value``."""

    value: Type
    span: Span | None = field(default=None, compare=False, kw_only=True)

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True, eq=False)
class IncompleteType(Type):
    """A type not yet known (``_`` in text): an inference variable; identity equality."""

    kind: Kind = Kind.TYPE
    span: Span | None = field(default=None, compare=False, kw_only=True)

    __str__ = Type.__str__


RelationFn = Callable[..., TypingAny]


@dataclass(frozen=True, slots=True)
class TypeRelation(Type):
    """A constraint among types solved by the type checker, e.g. broadcasting.

    ``func`` is the relation's solver, ``args`` the related types (inputs first,
    then outputs), ``num_inputs`` how many of them are inputs.
    """

    name: str
    func: RelationFn = field(compare=False)
    args: tuple[Type, ...] = ()
    num_inputs: int = 0
    attrs: Attrs | None = None
    span: Span | None = field(default=None, compare=False, kw_only=True)

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    """``fn[type_params](arg_types) -> ret_type`` with optional ``type_constraints``."""

    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[TypeVar, ...] = ()
    type_constraints: tuple[TypeRelation, ...] = ()
    span: Span | None = field(default=None, compare=False, kw_only=True)

    __str__ = Type.__str__


@dataclass(frozen=True, slots=True, eq=False)
class TypeData(Type):
    """The definition of an algebraic data type: ``type List[A] { Cons(A, List[A]), Nil }``.

    ``header`` names it, ``type_params`` are its parameters and
    ``constructors`` its constructors in declaration order (their tags). An
    ``extern type`` has no constructors. Identity equality.
    """

    header: GlobalTypeVar
    type_params: tuple[TypeVar, ...]
    constructors: tuple[TypingAny, ...]  # tuple[Constructor, ...]; typed loosely to avoid a cycle
    is_extern: bool = False
    span: Span | None = field(default=None, compare=False, kw_only=True)

    __str__ = Type.__str__


def free_type_vars(ty: Type) -> list[TypeVar]:
    """The type variables occurring free in ``ty``, in order of first occurrence."""
    out: list[TypeVar] = []
    seen: set[int] = set()
    bound: list[set[TypeVar]] = []

    def walk(t: object) -> None:
        if isinstance(t, TypeVar):
            if id(t) not in seen and not any(t in b for b in bound):
                seen.add(id(t))
                out.append(t)
        elif isinstance(t, SymbolicDim):
            from relay.ir.dim import dim_vars

            for v in dim_vars(t):
                walk(v)
        elif isinstance(t, TensorType):
            for d in t.shape:
                walk(d)
            walk(t.dtype)
        elif isinstance(t, TupleType):
            for f in t.fields:
                walk(f)
        elif isinstance(t, TypeCall):
            walk(t.func)
            for a in t.args:
                walk(a)
        elif isinstance(t, RefType):
            walk(t.value)
        elif isinstance(t, FuncType):
            bound.append(set(t.type_params))
            for a in t.arg_types:
                walk(a)
            walk(t.ret_type)
            for c in t.type_constraints:
                walk(c)
            bound.pop()
        elif isinstance(t, TypeRelation):
            for a in t.args:
                walk(a)

    walk(ty)
    return out
