"""Run-time checks of argument values against declared parameter types.

The type checker accepts a program whose shapes are only partly known: a ``?`` dimension
matches every size statically, and a shape variable ``n`` stands for any size. What it
cannot check is deferred to the moment values arrive. When the interpreter is entered with
arguments (``relay.interpret(mod, x, y)``), each argument is compared with its parameter's
annotation here:

* a tensor must have the declared rank and dtype, and each dimension must be the declared
  integer; a ``?`` dimension accepts any size; a shape variable is bound by its first
  occurrence (in parameter order, left to right) and must have the same size at every other
  occurrence; a computed dimension (``n * 3``) is evaluated once its variables are bound and
  must equal the size; a dtype variable is bound the same way;
* a tuple must have the declared number of fields, each checked recursively;
* an algebraic data type needs a constructor value of that type (its fields are not walked,
  so a 100,000-element list costs O(1)); a function type needs something callable; a
  reference type needs a reference.

This is the counterpart of the static unifier (:mod:`relay.typecheck.solver`): the same
binding discipline, applied to sizes instead of types. A mismatch is an
:class:`~relay.errors.ExecutionError` that names the parameter, the declared type and the
value, with the parameter's span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any as _Any

import numpy as np

from relay.backend.interpreter.values import (
    Closure,
    ConstructorValue,
    RefValue,
    Value,
    describe_value,
)
from relay.errors import ExecutionError
from relay.ir import dim as dims
from relay.ir.expr import Constructor, Function, Op
from relay.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    _AnyDim,
)

__all__ = ["check_arguments"]


class _Mismatch(Exception):
    """Raised inside the walk; turned into an ExecutionError naming the parameter."""


class _Bindings:
    """Sizes of shape variables and dtypes of dtype variables seen so far."""

    def __init__(self) -> None:
        self.sizes: dict[object, int] = {}
        self.dtypes: dict[object, str] = {}
        self.deferred: list[tuple[object, int, str]] = []  # (computed dim, size, where)


def _check_dim(d: object, size: int, b: _Bindings, where: str) -> None:
    if isinstance(d, _AnyDim):
        return
    if isinstance(d, int):
        if d != size:
            raise _Mismatch(f"{where} is {size}, not {d}")
        return
    if isinstance(d, TypeVar | IncompleteType):
        bound = b.sizes.setdefault(d, size)
        if bound != size:
            raise _Mismatch(f"{where} is {size}, but {dims.dim_str(d)} is {bound} elsewhere")
        return
    b.deferred.append((d, size, where))


def _check_tensor(ty: TensorType, value: np.ndarray[_Any, _Any], b: _Bindings) -> None:
    if value.ndim != ty.ndim:
        raise _Mismatch(f"rank {value.ndim}, not {ty.ndim}")
    dtype = str(value.dtype)
    if isinstance(ty.dtype, str):
        if ty.dtype != dtype:
            raise _Mismatch(f"dtype {dtype}, not {ty.dtype}")
    else:
        bound = b.dtypes.setdefault(ty.dtype, dtype)
        if bound != dtype:
            raise _Mismatch(f"dtype {dtype}, but {ty.dtype} is {bound} elsewhere")
    for axis, (d, size) in enumerate(zip(ty.shape, value.shape, strict=True)):
        _check_dim(d, int(size), b, f"dimension {axis}")


def _check(ty: Type, value: Value, b: _Bindings) -> None:
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray):
            raise _Mismatch("not a tensor")
        _check_tensor(ty, value, b)
    elif isinstance(ty, TupleType):
        if not isinstance(value, tuple):
            raise _Mismatch("not a tuple")
        if len(value) != len(ty.fields):
            raise _Mismatch(f"{len(value)} fields, not {len(ty.fields)}")
        for i, (field_ty, field) in enumerate(zip(ty.fields, value, strict=True)):
            try:
                _check(field_ty, field, b)
            except _Mismatch as err:
                raise _Mismatch(f"field {i}: {err}") from None
    elif isinstance(ty, TypeCall | GlobalTypeVar):
        header = ty.func if isinstance(ty, TypeCall) else ty
        if not isinstance(value, ConstructorValue):
            raise _Mismatch("not a constructor value")
        data = value.constructor.belong_to
        if (
            data is not None
            and isinstance(header, GlobalTypeVar)
            and header.name_hint != data.name_hint
        ):
            raise _Mismatch(f"a value of type {data.name_hint}")
    elif isinstance(ty, FuncType):
        if not isinstance(value, Closure | Op | Constructor):
            raise _Mismatch("not a function")
    elif isinstance(ty, RefType) and not isinstance(value, RefValue):
        raise _Mismatch("not a reference")
    # a type variable accepts any value


def check_arguments(func: Function, args: Sequence[Value], name: str) -> None:
    """Check ``args`` against the annotated parameter types of ``func`` (``name`` is how error
    messages call the function, e.g. ``@main``); see the module docstring.

    Raises ExecutionError for a wrong number of arguments or the first argument that does not
    conform."""
    if len(args) != len(func.params):
        return  # the interpreter's own arity error reports this at the call
    b = _Bindings()
    owner: dict[int, int] = {}
    for i, (param, value) in enumerate(zip(func.params, args, strict=True)):
        ty = param.type_annotation
        if ty is None:
            continue
        start = len(b.deferred)
        try:
            _check(ty, value, b)
        except _Mismatch as err:
            raise _error(func, i, name, ty, value, str(err)) from None
        for k in range(start, len(b.deferred)):
            owner[k] = i
    for k, (d, size, where) in enumerate(b.deferred):
        expected = dims.substitute(d, lambda v: b.sizes.get(v, v))  # type: ignore[arg-type]
        if isinstance(expected, int) and expected != size:
            i = owner[k]
            ty = func.params[i].type_annotation
            assert ty is not None
            detail = f"{where} is {size}, not {dims.dim_str(d)} = {expected}"
            raise _error(func, i, name, ty, args[i], detail)


def _error(
    func: Function, i: int, name: str, ty: Type, value: Value, detail: str
) -> ExecutionError:
    from relay.ir.printer import astext

    param = func.params[i]
    return ExecutionError(
        f"argument {i} of {name} (%{param.name_hint}) does not match its type "
        f"{astext(ty)}: got {describe_value(value)} ({detail})",
        param.span,
    )
