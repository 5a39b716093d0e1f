"""Type relations: how an operator's result type follows from its arguments.

A type relation is the typing rule of a primitive operator, as in Relay
(Roesch et al., "Relay: A High-Level Compiler for Deep Learning", 2019, §3.3):
a function over the types of a call's arguments and result that checks them
and determines what it can. The type checker's solver
(:mod:`relay.typecheck.solver`) runs a relation whenever one of its types
gains information, until every relation reports that it is solved.

The protocol. A relation is a callable
``rel(types, attrs, reporter) -> bool`` where ``types`` holds the call's
argument types followed by its result type, each resolved against everything
known so far (a still-unknown type is an ``IncompleteType``), ``attrs`` the
call's validated attributes, and ``reporter`` the :class:`Reporter` through
which the relation states facts: ``reporter.unify(t1, t2)`` makes two types
equal (binding unknowns on either side, so information may flow from the
result back to the arguments), ``reporter.dim_equal`` and
``reporter.dtype_equal`` do the same for a dimension or a dtype, and
``reporter.arg_value(i)`` gives the value of an argument that is a constant in
the program (for the few rules whose result depends on values). A relation
returns True when it is solved for good, False to be run again when more is
known. It reports a type error by raising :class:`RelationError` with a
complete message ("broadcast: incompatible dimensions 4 and 5 in ..."); the
checker adds the span of the call.

Most operators compute their result from known arguments: write them with
:func:`forward`, which waits until every argument is known and then unifies
the result with what the rule returns.

Dimensions may be symbolic (see :mod:`relay.ir.dim`): rules compute with
``dim.add``/``dim.mul``/``dim.floordiv`` and compare with
``reporter.dim_equal``, never with ``==`` on possibly symbolic values. A
dimension ``Any`` (``?``) is known only at run time: comparisons with it
succeed statically and results computed from it are ``Any``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any as TypingAny, Protocol

import numpy.typing as npt

from relay.ir import dim
from relay.ir.attrs import Attrs
from relay.ir.dim import Dim
from relay.ir.types import (
    Any,
    DType,
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    _AnyDim,
)


class RelationError(Exception):
    """A relation's arguments cannot be related; the message is shown to the user as is."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Reporter(Protocol):
    """What a relation may ask of the type checker."""

    def unify(self, a: Type, b: Type, message: str | None = None) -> None:
        """Make ``a`` and ``b`` equal, or raise :class:`RelationError` (``message`` if given)."""

    def dim_equal(self, a: Dim, b: Dim, message: str) -> None:
        """Make two dimensions equal; :class:`RelationError` with ``message`` if they differ.

        Binds inference variables where it can (``_ * 3 == 12`` binds ``_`` to 4)
        and defers an equation it cannot decide yet. ``Any`` equals every dimension.
        """

    def dtype_equal(self, a: DType, b: DType, message: str) -> None:
        """Make two dtypes equal; :class:`RelationError` with ``message`` if they differ."""

    def resolve(self, t: Type) -> Type:
        """``t`` with everything known so far substituted in."""

    def fresh_dim(self) -> Dim:
        """A new unknown dimension (an inference variable of kind Shape)."""

    def arg_value(self, index: int) -> npt.NDArray[TypingAny] | None:
        """The value of argument ``index`` when the program gives it as a constant (directly
        or through a ``let`` of a constant), else None. Rules whose result shape depends on
        argument values (``arange``) use it, as Relay's relations read constant arguments."""


RelationFunc = Callable[[list[Type], Attrs, Reporter], bool]
ForwardRule = Callable[[list[Type], Attrs, Reporter], Type]


def is_known(t: Type) -> bool:
    """Whether ``t`` is known enough for a forward rule: not an unknown, nor a tuple of some."""
    if isinstance(t, IncompleteType):
        return False
    if isinstance(t, TupleType):
        return all(is_known(f) for f in t.fields)
    return True


def forward(rule: ForwardRule) -> RelationFunc:
    """A relation from a rule computing the result type from known argument types.

    The relation waits until every argument :func:`is_known`, then unifies the
    result with ``rule(args, attrs, reporter)``.
    """

    def rel(types: list[Type], attrs: Attrs, reporter: Reporter) -> bool:
        args = types[:-1]
        if not all(is_known(a) for a in args):
            return False
        reporter.unify(types[-1], rule(args, attrs, reporter))
        return True

    rel.__name__ = getattr(rule, "__name__", "forward")
    rel.__doc__ = rule.__doc__
    return rel


def identity_rel(types: list[Type], attrs: Attrs, reporter: Reporter) -> bool:
    """The result has the type of the (single) argument: information flows both ways."""
    reporter.unify(types[0], types[-1])
    return True


# -- helpers for rules -----------------------------------------------------------------------------


def tensor_arg(t: Type, op: str, what: str = "data") -> TensorType:
    """``t`` as a tensor type, or a RelationError "op: what must be a tensor, got ..."."""
    if not isinstance(t, TensorType):
        raise RelationError(f"{op}: {what} must be a tensor, got {t}")
    return t


def tuple_of_tensors(t: Type, op: str, what: str = "data") -> list[TensorType]:
    """``t`` as a non-empty tuple of tensors, or a RelationError."""
    if not isinstance(t, TupleType):
        raise RelationError(f"{op}: {what} must be a tuple of tensors, got {t}")
    if not t.fields:
        raise RelationError(f"{op}: {what} must not be empty")
    return [tensor_arg(f, op, f"{what}[{i}]") for i, f in enumerate(t.fields)]


_DTYPE_KINDS = frozenset(("float", "int", "uint", "bool"))


def is_dtype(d: DType, *kinds: str) -> bool | None:
    """Whether dtype ``d`` is certainly of one of ``kinds`` ("float", "int", "uint", "bool").

    A dtype name answers for itself. A dtype variable (a rigid ``TypeVar`` of kind
    ``BaseType``, as in ``def @f[T: BaseType](%x: Tensor[(2,), T])``) stands for *any*
    dtype, so it is of ``kinds`` only when they cover every dtype: ``is_dtype(T, "float")``
    is False, and a rule that needs a float tensor rejects ``Tensor[(2,), T]``. Only a dtype
    still unknown (an ``IncompleteType``) gives None: the rule should check again once it is
    known.

    Write a requirement as ``is_dtype(d, *allowed) is False`` (reject), never as a test that
    ``d`` is of the excluded kinds (``if is_dtype(d, "bool"): reject``), which a dtype
    variable would pass although it may stand for the excluded dtype.
    """
    if isinstance(d, IncompleteType):
        return None
    if not isinstance(d, str):  # a dtype variable: any dtype
        return _DTYPE_KINDS.issubset(kinds)
    for k in kinds:
        if k == "bool" and d == "bool":
            return True
        if k == "int" and d.startswith("int"):
            return True
        if k == "uint" and d.startswith("uint"):
            return True
        if k == "float" and (d.startswith("float") or d == "bfloat16"):
            return True
    return False


def static_int(d: Dim) -> int | None:
    """``d`` if it is a known integer, else None."""
    return d if isinstance(d, int) else None


def normalize_axis(axis: int, ndim: int, op: str, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)`` (negative counts from the end), or a RelationError."""
    if not -ndim <= axis < ndim:
        raise RelationError(f"{op}: {what} {axis} is out of range for a rank-{ndim} tensor")
    return axis + ndim if axis < 0 else axis


def broadcast_dim(a: Dim, b: Dim, reporter: Reporter, message: str | Callable[[], str]) -> Dim:
    """The broadcast of two aligned dimensions (numpy rules), or a RelationError.

    Equal dims give themselves; 1 stretches to the other; ``Any`` gives the
    other when that is a known size above 1, else ``Any``. Two different
    dimensions neither of which is 1 are an error, except that an unknown
    (inference variable) is taken to equal the other side.
    """
    same = dim.equal(a, b)
    if same:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, _AnyDim) or isinstance(b, _AnyDim):
        other = b if isinstance(a, _AnyDim) else a
        return other if isinstance(other, int) else Any
    text = message if isinstance(message, str) else message()
    if isinstance(a, IncompleteType) or isinstance(b, IncompleteType):
        reporter.dim_equal(a, b, text)
        return b if isinstance(a, IncompleteType) else a
    raise RelationError(text)


def broadcast_shapes(
    a: TensorType, b: TensorType, reporter: Reporter, what: str = "broadcast"
) -> tuple[Dim, ...]:
    """The numpy broadcast of the shapes of ``a`` and ``b`` (aligned at the right)."""
    out: list[Dim] = []
    na, nb = len(a.shape), len(b.shape)
    for i in range(1, max(na, nb) + 1):
        da = a.shape[na - i] if i <= na else 1
        db = b.shape[nb - i] if i <= nb else 1
        out.append(broadcast_dim(da, db, reporter, _incompatible(what, da, db, a, b)))
    return tuple(reversed(out))


def _incompatible(what: str, da: Dim, db: Dim, a: Type, b: Type) -> Callable[[], str]:
    return lambda: (
        f"{what}: incompatible dimensions {dim.dim_str(da)} and {dim.dim_str(db)} in {a} and {b}"
    )


def shape_str(shape: Sequence[Dim]) -> str:
    """A shape as the text format writes it: ``(n, 784)``, ``(3,)``."""
    inner = ", ".join(dim.dim_str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


__all__ = [
    "ForwardRule",
    "RelationError",
    "RelationFunc",
    "Reporter",
    "broadcast_dim",
    "broadcast_shapes",
    "forward",
    "identity_rel",
    "is_complete",
    "is_dtype",
    "is_known",
    "normalize_axis",
    "shape_str",
    "static_int",
    "tensor_arg",
    "tuple_of_tensors",
]


def is_complete(t: Type) -> bool:
    """Whether ``t`` contains no unknown (no ``IncompleteType`` anywhere, dims and dtypes included)."""
    stack: list[object] = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, IncompleteType):
            return False
        if isinstance(x, TensorType):
            if isinstance(x.dtype, IncompleteType):
                return False
            for d in x.shape:
                if isinstance(d, IncompleteType) or (
                    isinstance(d, dim.DimExpr)
                    and any(isinstance(v, IncompleteType) for v in dim.dim_vars(d))
                ):
                    return False
        elif isinstance(x, TupleType):
            stack.extend(x.fields)
        elif isinstance(x, FuncType):
            stack.extend(x.arg_types)
            stack.append(x.ret_type)
        elif isinstance(x, TypeCall):
            stack.extend(x.args)
        elif isinstance(x, RefType):
            stack.append(x.value)
        elif isinstance(x, dim.DimExpr) and any(  # a data type's argument such as V[_ * 2]
            isinstance(v, IncompleteType) for v in dim.dim_vars(x)
        ):
            return False
    return True
