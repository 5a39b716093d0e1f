"""Python type annotations for ``@relay`` functions, and their Relay types.

``Tensor[float32, (3, 4)]`` is the annotation of a rank-2 tensor; a shape entry is an
``int``, a string naming a shape variable shared across the signature
(``Tensor[float32, ("n", 784)]``) or ``relay.Any`` (known only at run time). Python's
``float``, ``int`` and ``bool`` stand for rank-0 ``float32``, ``int32`` and ``bool`` tensors;
``tuple[A, B]`` is a tuple type; ``Callable[[A], B]`` a function type; the prelude's data
types are subscripted (``List[Tensor[float32, (3,)]]``) as are ``@relay.adt`` classes with
type parameters.

:func:`annotation_type` turns an annotation into a :class:`~relay.ir.types.Type`, sharing
shape variables by name through a :class:`TypeScope`.
"""

from __future__ import annotations

import collections.abc
import typing
from dataclasses import dataclass, field
from typing import Any as _Any

import numpy as np

from relay.errors import FrontendError
from relay.ir.types import (
    DTYPES,
    Any,
    FuncType,
    Kind,
    TensorType,
    TupleType,
    Type,
    TypeVar,
    _AnyDim,
)

__all__ = [
    "DType",
    "Tensor",
    "TensorSpec",
    "TypeScope",
    "annotation_type",
    "dtype_name",
]


class DType(str):
    """A data type name usable in annotations: ``relay.float32`` is ``DType("float32")``."""

    __slots__ = ()

    def __new__(cls, name: str) -> DType:
        if name not in DTYPES:
            raise ValueError(f"unknown dtype {name!r}")
        return super().__new__(cls, name)

    def __repr__(self) -> str:
        return f"relay.{self!s}"


def dtype_name(obj: object) -> str | None:
    """The Relay dtype that ``obj`` names (a string, a :class:`DType`, a numpy dtype or scalar
    type such as ``np.float32``), or None."""
    if isinstance(obj, str):
        return obj if obj in DTYPES else None
    if obj is None:
        return None  # np.dtype(None) is float64, but None is no dtype
    try:
        name = str(np.dtype(obj))  # type: ignore[call-overload]
    except TypeError:
        return None
    return name if name in DTYPES else None


@dataclass(frozen=True)
class TensorSpec:
    """The annotation ``Tensor[dtype, shape]``: ``shape`` entries are ints, shape-variable
    names or ``Any``."""

    dtype: str
    shape: tuple[int | str | _AnyDim, ...]

    def __repr__(self) -> str:
        dims = ", ".join(repr(d) if isinstance(d, str) else str(d) for d in self.shape)
        if len(self.shape) == 1:
            dims += ","
        return f"Tensor[{self.dtype}, ({dims})]"


class Tensor:
    """``Tensor[dtype, shape]``: the annotation of a tensor parameter or result."""

    def __init__(self) -> None:
        raise TypeError("Tensor is an annotation: write Tensor[float32, (3, 4)]")

    def __class_getitem__(cls, item: object) -> TensorSpec:
        if not isinstance(item, tuple) or len(item) != 2:
            raise FrontendError(
                "write Tensor[dtype, shape], e.g. Tensor[float32, (3, 4)] or Tensor[float32, ()]"
            )
        dtype_obj, shape = item
        dtype = dtype_name(dtype_obj)
        if dtype is None:
            raise FrontendError(f"Tensor[...]: unknown dtype {dtype_obj!r}")
        if isinstance(shape, int | str | _AnyDim):
            shape = (shape,)
        if not isinstance(shape, tuple | list):
            raise FrontendError(f"Tensor[...]: the shape must be a tuple, got {shape!r}")
        dims: list[int | str | _AnyDim] = []
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int | str | _AnyDim):
                raise FrontendError(
                    f"Tensor[...]: a dimension is an int, a shape-variable name or relay.Any, "
                    f"got {d!r}"
                )
            if isinstance(d, int) and d < 0:
                raise FrontendError(f"Tensor[...]: negative dimension {d}")
            dims.append(d)
        return TensorSpec(dtype, tuple(dims))


@dataclass
class TypeScope:
    """Shape and type variables of one signature, by name."""

    shape_vars: dict[str, TypeVar] = field(default_factory=dict)
    type_vars: dict[str, TypeVar] = field(default_factory=dict)
    data_types: list[type] = field(default_factory=list)  # @relay.adt classes named

    def shape_var(self, name: str) -> TypeVar:
        """The shape variable called ``name`` (created on first use)."""
        v = self.shape_vars.get(name)
        if v is None:
            v = self.shape_vars[name] = TypeVar(name, Kind.SHAPE)
        return v

    def type_var(self, name: str) -> TypeVar:
        """The type variable called ``name`` (created on first use)."""
        v = self.type_vars.get(name)
        if v is None:
            v = self.type_vars[name] = TypeVar(name, Kind.TYPE)
        return v

    @property
    def all_vars(self) -> tuple[TypeVar, ...]:
        """Every variable created, type variables first."""
        return (*self.type_vars.values(), *self.shape_vars.values())


_SCALARS: dict[object, str] = {float: "float32", int: "int32", bool: "bool"}


def annotation_type(ann: object, scope: TypeScope) -> Type:
    """The Relay type of a Python annotation; ``TypeError`` (with a message for the user) when
    ``ann`` is not one (see the module docstring for what is)."""
    if isinstance(ann, Type):
        return ann
    if isinstance(ann, TensorSpec):
        dims = tuple(scope.shape_var(d) if isinstance(d, str) else d for d in ann.shape)
        return TensorType(dims, ann.dtype)
    if ann in _SCALARS:
        return TensorType((), _SCALARS[ann])
    name = dtype_name(ann) if not isinstance(ann, str) else None
    if name is not None:
        return TensorType((), name)
    if isinstance(ann, str):
        if ann in DTYPES:
            return TensorType((), ann)
        return scope.type_var(ann)
    if ann is None or ann is type(None):
        return TupleType(())
    if isinstance(ann, typing.TypeVar):
        return scope.type_var(ann.__name__)
    data_type = getattr(ann, "__relay_type__", None)
    if data_type is not None:
        return data_type(scope)  # type: ignore[no-any-return]
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            raise TypeError("tuple[T, ...] has no fixed length; write tuple[T, T, T]")
        if args == ((),):
            return TupleType(())
        return TupleType(tuple(annotation_type(a, scope) for a in args))
    if origin is collections.abc.Callable:
        params, ret = args
        if params is Ellipsis:
            raise TypeError("Callable[..., R] has no fixed parameters; write Callable[[A], R]")
        return FuncType(
            tuple(annotation_type(a, scope) for a in params), annotation_type(ret, scope)
        )
    raise TypeError(f"{_describe(ann)} is not a Relay type annotation")


def _describe(ann: object) -> str:
    if isinstance(ann, type):
        return f"the class {ann.__qualname__}"
    return repr(ann)


def is_any(obj: _Any) -> bool:
    """Whether ``obj`` is ``relay.Any``."""
    return obj is Any
