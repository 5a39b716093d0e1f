"""Checking an operator's TVM lowering against its numpy reference."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Function, Var
from relay.ir.types import TensorType, TupleType, Type

Array = np.ndarray[Any, np.dtype[Any]]


def _type_of_value(v: Any) -> Type:
    if isinstance(v, tuple | list):
        return TupleType(tuple(_type_of_value(x) for x in v))
    a = np.asarray(v)
    return TensorType(tuple(a.shape), str(a.dtype))


def _flatten(v: Any) -> list[Array]:
    if isinstance(v, tuple | list):
        return [x for f in v for x in _flatten(f)]
    return [np.asarray(v)]


def _unflatten(ty: Type, it: Any) -> Any:
    if isinstance(ty, TupleType):
        return tuple(_unflatten(f, it) for f in ty.fields)
    return next(it)


def primitive_op_function(name: str, args: tuple[Any, ...], attrs: dict[str, Any]) -> Function:
    """``fn (%p0, ..., Primitive=1) { name(%p0, ...) }`` for arguments like ``args``, typed."""
    from relay.op.registry import get_op
    from relay.typecheck.checker import infer_type

    opdef = get_op(name)
    params = tuple(Var(f"p{i}", _type_of_value(a)) for i, a in enumerate(args))
    call = Call(opdef.op, params, opdef.validate_attrs(attrs))
    func = Function(params, call, attrs=Attrs({"Primitive": 1}))
    out = infer_type(func)
    assert isinstance(out, Function)
    return out


def default_target() -> Any:
    """The target the operator checks compile for when none is given: ``$RELAY_TEST_TARGET``
    (``cuda`` runs the operator tests on this machine's GPU, ``cuda:sm_90`` names the
    architecture, docs/backend.md), else this CPU."""
    from relay.backend.target import Target

    spec = os.environ.get("RELAY_TEST_TARGET", "")
    kind, _, arch = spec.partition(":")
    if arch:
        return Target(kind, arch=arch)
    return Target.of(kind or None)


def run_compiled_op(name: str, *args: Any, target: Any = None, **attrs: Any) -> Any:
    """Compile the single call ``name(*args, **attrs)`` for ``target`` (default:
    :func:`default_target`) and run it; tensors in, a numpy array (or a tuple of them)
    out."""
    from relay.backend.compiler import compile_functions
    from relay.backend.target import Target

    func = primitive_op_function(name, args, attrs)
    lib, (symbol,) = compile_functions(
        [func], default_target() if target is None else Target.of(target)
    )
    outs = lib[symbol](*[a for v in args for a in _flatten(v)])
    ty = func.body._checked_type
    assert ty is not None
    return _unflatten(ty, iter(outs))


def check_op_lowering(
    name: str,
    *args: Any,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    target: Any = None,
    **attrs: Any,
) -> Any:
    """Assert that the compiled ``name(*args, **attrs)`` matches the operator's numpy
    reference (same dtypes and shapes, values within ``rtol``/``atol``; integers and bools
    exactly); returns the compiled result."""
    from relay.op.registry import get_op

    opdef = get_op(name)
    assert opdef.reference is not None
    full = dict(opdef.validate_attrs(attrs).items())
    expected = opdef.reference(*args, **full) if full else opdef.reference(*args)
    got = run_compiled_op(name, *args, target=target, **attrs)
    exp_flat, got_flat = _flatten(expected), _flatten(got)
    assert len(exp_flat) == len(got_flat), (
        f"{name}: {len(got_flat)} results, expected {len(exp_flat)}"
    )
    for i, (e, g) in enumerate(zip(exp_flat, got_flat, strict=True)):
        assert g.shape == e.shape, f"{name} result {i}: shape {g.shape}, expected {e.shape}"
        assert g.dtype == e.dtype, f"{name} result {i}: dtype {g.dtype}, expected {e.dtype}"
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e, err_msg=f"{name} result {i}")
        else:
            np.testing.assert_allclose(
                g.astype(np.float64),
                e.astype(np.float64),
                rtol=rtol,
                atol=atol,
                err_msg=f"{name} result {i}",
            )
    return got
