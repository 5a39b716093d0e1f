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
value, with the parameter's span (or the span of the call, for a call inside the program).

Inside a program the same checks run where the type checker deferred them: a value whose
type has a ``?`` dimension passed to a parameter annotated with a known size (or through a
function type whose parameter has ``?``), and a body whose type has a ``?`` where the
declared result type has a size. :func:`call_needs_check` and :func:`result_needs_check`
tell, from the checked types, which calls and functions those are (the interpreter asks
once per node and checks only those, so a program without ``?`` pays nothing);
:func:`check_arguments` and :func:`check_result` check the values.
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
    is_function_value,
)
from relay.errors import ExecutionError
from relay.ir import dim as dims
from relay.ir.expr import Call, Constructor, Expr, Function, Op
from relay.ir.span import Span
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

__all__ = [
    "call_needs_check",
    "check_arguments",
    "check_result",
    "may_need_checks",
    "result_needs_check",
]


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
        if not isinstance(value, Closure | Op | Constructor) and not is_function_value(value):
            raise _Mismatch("not a function")
    elif isinstance(ty, RefType) and not isinstance(value, RefValue):
        raise _Mismatch("not a reference")
    # a type variable accepts any value


def check_arguments(
    func: Function, args: Sequence[Value], name: str, span: Span | None = None
) -> None:
    """Check ``args`` against the annotated parameter types of ``func`` (``name`` is how error
    messages call the function, e.g. ``@main``); see the module docstring.

    Raises ExecutionError, with ``span`` (by default the parameter's), for the first argument
    that does not conform; a wrong number of arguments is left to the caller."""
    if len(args) != len(func.params):
        return  # the interpreter's own arity error reports this at the call
    _check_params(func, args, name, span)


def _check_params(func: Function, args: Sequence[Value], name: str, span: Span | None) -> _Bindings:
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
            raise _error(func, i, name, ty, value, str(err), span) from None
        for k in range(start, len(b.deferred)):
            owner[k] = i
    for k, (d, size, where) in enumerate(b.deferred):
        expected = _evaluate(d, b)
        if isinstance(expected, int) and expected != size:
            i = owner[k]
            ty = func.params[i].type_annotation
            assert ty is not None
            detail = f"{where} is {size}, not {dims.dim_str(d)} = {expected}"
            raise _error(func, i, name, ty, args[i], detail, span)
    b.deferred.clear()
    return b


def _evaluate(d: object, b: _Bindings) -> object:
    return dims.substitute(d, lambda v: b.sizes.get(v, v))  # type: ignore[arg-type]


def check_result(
    func: Function, args: Sequence[Value], value: Value, name: str, span: Span | None = None
) -> None:
    """Check ``value``, returned by ``func`` applied to ``args``, against its declared result
    type (its shape variables take their sizes from the arguments); ExecutionError (with
    ``span``, by default the declared type's) if it does not conform."""
    ty = func.ret_type
    if ty is None:
        return
    where = span or getattr(ty, "span", None) or func.span
    b = _check_params(func, args, name, where)
    try:
        _check(ty, value, b)
        for d, size, at in b.deferred:
            expected = _evaluate(d, b)
            if isinstance(expected, int) and expected != size:
                raise _Mismatch(f"{at} is {size}, not {dims.dim_str(d)} = {expected}")
    except _Mismatch as err:
        from relay.ir.printer import astext

        raise ExecutionError(
            f"the result of {name} does not match its type {astext(ty)}: "
            f"got {describe_value(value)} ({err})",
            where,
        ) from None


def _error(
    func: Function,
    i: int,
    name: str,
    ty: Type,
    value: Value,
    detail: str,
    span: Span | None = None,
) -> ExecutionError:
    from relay.ir.printer import astext

    param = func.params[i]
    return ExecutionError(
        f"argument {i} of {name} (%{param.name_hint}) does not match its type "
        f"{astext(ty)}: got {describe_value(value)} ({detail})",
        span if span is not None else param.span,
    )


# -- which checks the type checker deferred ----------------------------------------------------------


def _deferred(actual: Type, declared: Type | None) -> bool:
    """Whether a value of static type ``actual`` may not conform to ``declared`` although the
    two unified: a tensor dimension ``?`` in ``actual`` where ``declared`` has a size (or a
    shape variable or expression). Only tensors (in tuples) are compared: the run-time check
    of other types does not look inside them."""
    if declared is None:
        return False
    work: list[tuple[Type, Type]] = [(actual, declared)]
    while work:
        a, d = work.pop()
        if isinstance(a, TensorType) and isinstance(d, TensorType):
            if any(
                isinstance(x, _AnyDim) and not isinstance(y, _AnyDim)
                for x, y in zip(a.shape, d.shape, strict=False)
            ):
                return True
        elif isinstance(a, TupleType) and isinstance(d, TupleType):
            work.extend(zip(a.fields, d.fields, strict=False))
    return False


def _has_any(t: Type) -> bool:
    """Whether a tensor in ``t`` (or in its tuples) has a ``?`` dimension."""
    work = [t]
    while work:
        x = work.pop()
        if isinstance(x, TensorType):
            if any(isinstance(d, _AnyDim) for d in x.shape):
                return True
        elif isinstance(x, TupleType):
            work.extend(x.fields)
    return False


def _checked_type(e: Expr) -> Type | None:
    try:
        return e.checked_type
    except ValueError:  # not type-checked: nothing is known, nothing is checked
        return None


def call_needs_check(call: Call, callee: Function | None) -> bool:
    """Whether the arguments of ``call`` must be checked against the callee's parameters when
    it runs: the type checker deferred the check (see the module docstring). ``callee`` is the
    function called when it is known statically (a global's definition), else None: then the
    callee's type as the call sees it is used, and a ``?`` in one of its parameters also counts
    (the function called may declare a size there)."""
    if isinstance(call.op, Op | Constructor):
        return False
    arg_types = [_checked_type(a) for a in call.args]
    if callee is not None:
        return any(
            t is not None and _deferred(t, p.type_annotation)
            for t, p in zip(arg_types, callee.params, strict=False)
        )
    view = _checked_type(call.op)
    if isinstance(view, FuncType) and any(_has_any(p) for p in view.arg_types):
        return True
    return any(t is not None and _has_any(t) for t in arg_types)


def _sized(t: Type) -> bool:
    """Whether a tensor in ``t`` (or in its tuples) has a dimension other than ``?``."""
    work = [t]
    while work:
        x = work.pop()
        if isinstance(x, TensorType):
            if any(not isinstance(d, _AnyDim) for d in x.shape):
                return True
        elif isinstance(x, TupleType):
            work.extend(x.fields)
    return False


def may_need_checks(func: Function) -> bool:
    """Whether some call of ``func`` may need a deferred check: a parameter declares a size
    (a ``?`` argument may break it) or its result needs checking. False for most functions
    of scalars, which a ``?`` cannot break; the interpreter then looks no further."""
    return result_needs_check(func) or any(
        p.type_annotation is not None and _sized(p.type_annotation) for p in func.params
    )


def result_needs_check(func: Function) -> bool:
    """Whether the value ``func`` returns must be checked against its declared result type:
    the type of its body has a ``?`` where the declared type has a size."""
    if func.ret_type is None:
        return False
    body = _checked_type(func.body)
    return body is not None and _deferred(body, func.ret_type)
