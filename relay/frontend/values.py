"""What the frontend's converter holds for a Python name or expression.

* :class:`Ex`: an IR expression with its static type when the converter knows it (parameters,
  constants and operator calls whose argument types are known, computed with each operator's
  type relation as the code is read);
* :class:`Py`: a Python object known while converting: a literal (``2``, ``0.5``, ``True``),
  a module such as ``np``, a function to call, a shape read from a static type. Numbers stay
  *weakly typed* until an operator combines them with a tensor, when they take its dtype
  (``x * 2`` multiplies by a ``float32`` 2 when ``x`` is ``float32``), as in JAX;
* :class:`TupleVal`: a tuple written in the source, whose items are any of these (so
  ``shape = (3, n)`` can still be used as an attribute);
* :class:`Boxed`: a variable that closures mutate (``nonlocal``) or read after it changes,
  held in a reference cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from relay.ir.expr import Expr, Var
from relay.ir.types import TensorType, TupleType, Type


@dataclass(frozen=True, slots=True)
class Ex:
    """An IR expression and its static type (None when not known while converting)."""

    expr: Expr
    ty: Type | None = None
    weak: bool = False  # a scalar that came from Python numbers: takes its partner's dtype

    @property
    def tensor(self) -> TensorType | None:
        """The static tensor type, if the value is known to be a tensor."""
        return self.ty if isinstance(self.ty, TensorType) else None


@dataclass(frozen=True, slots=True)
class Py:
    """A Python object known at conversion time."""

    value: object


@dataclass(frozen=True, slots=True)
class TupleVal:
    """A tuple display ``(a, b)`` of converted values."""

    items: tuple[Val, ...]


@dataclass(frozen=True, slots=True)
class Boxed:
    """A variable held in a reference cell ``var`` whose contents have type ``ty``."""

    var: Var
    ty: Type | None = None
    weak: bool = False


@dataclass(frozen=True, slots=True)
class Undefined:
    """A name assigned on some paths only (inside a loop, or in some branches): using it
    afterwards is an error that says so."""

    reason: str


def defined(env: dict[str, object], name: str) -> bool:
    """Whether ``name`` has a value in ``env``."""
    return name in env and not isinstance(env[name], Undefined)


Val = Ex | Py | TupleVal
"""A converted value."""


def tuple_type(items: list[Type | None]) -> TupleType | None:
    """The tuple type of items of these types, or None if one is unknown."""
    if any(t is None for t in items):
        return None
    return TupleType(tuple(t for t in items if t is not None))


def is_number(v: object) -> bool:
    """A Python number or bool (a weakly typed literal)."""
    return isinstance(v, int | float | bool)
