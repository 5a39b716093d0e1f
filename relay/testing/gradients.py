"""Numerical gradient checks by central differences.

``numerical_gradient(f, args)`` estimates the gradient of a scalar function of numpy
arrays by central differences, ``(f(x + h e_i) - f(x - h e_i)) / 2h`` for each element,
in float64 (Nocedal and Wright, *Numerical Optimization*, section 8.1: the error is
O(h^2), and h = 1e-6 balances it against rounding for functions of moderate scale).

``check_op_gradient(op, args, attrs)`` checks an operator's gradient rule: it builds the
rule's adjoint expressions for a random output adjoint ``ct`` (so the function checked is
``sum(op(args) * ct)``, which exercises every output element), runs them with the reference
interpreter, and compares them with central differences of the operator's numpy
reference. It also type-checks the rule's output: each adjoint must have its argument's
type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Expr, Function, Op, Tuple, Var, const
from relay.ir.types import TensorType, TupleType, Type


def numerical_gradient(
    f: Callable[..., float], args: Sequence[np.ndarray], wrt: Sequence[int], eps: float = 1e-6
) -> list[np.ndarray]:
    """Central-difference gradients of the scalar ``f(*args)`` with respect to ``args[i]``
    for ``i`` in ``wrt`` (each computed in float64)."""
    work = [np.array(a, dtype=np.float64) if a.dtype.kind == "f" else a.copy() for a in args]
    grads = []
    for i in wrt:
        x = work[i]
        g = np.zeros_like(x, dtype=np.float64)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            up = f(*work)
            flat[j] = old - eps
            down = f(*work)
            flat[j] = old
            gflat[j] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def _type_of(value: Any) -> Type:
    if isinstance(value, tuple):
        return TupleType(tuple(_type_of(v) for v in value))
    arr = np.asarray(value)
    return TensorType(arr.shape, str(arr.dtype))


def _constant(value: Any) -> Expr:
    if isinstance(value, tuple):
        return Tuple(tuple(_constant(v) for v in value))
    return const(np.asarray(value))


def _dot(out: Any, ct: Any) -> float:
    if isinstance(out, tuple):
        return sum((_dot(o, c) for o, c in zip(out, ct, strict=True)), 0.0)
    arr = np.asarray(out)
    if arr.dtype.kind != "f":
        return 0.0
    return float(np.sum(arr.astype(np.float64) * ct))


def _cotangent(value: Any, rng: np.random.Generator) -> Any:
    if isinstance(value, tuple):
        return tuple(_cotangent(v, rng) for v in value)
    arr = np.asarray(value)
    if arr.dtype.kind != "f":
        return np.zeros(arr.shape, arr.dtype)
    return rng.standard_normal(arr.shape).astype(arr.dtype)


def check_op_gradient(
    op: str,
    args: Sequence[np.ndarray],
    attrs: Mapping[str, object] | None = None,
    wrt: Sequence[int] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    seed: int = 0,
) -> list[np.ndarray | None]:
    """Check the gradient rule of operator ``op`` at ``args`` (see the module docstring).

    ``wrt`` selects the arguments to check (default: every floating-point one); an argument
    the rule gives no adjoint for (None) must not be among them. Returns the rule's adjoints
    (None where it gave none). Raises AssertionError on a mismatch, naming the argument.
    """
    from relay.backend.interpreter import interpret
    from relay.op.registry import get_op
    from relay.typecheck.checker import infer_type

    opdef = get_op(op)
    validated = opdef.validate_attrs(dict(attrs or {}))
    arrays = [np.asarray(a) for a in args]
    if wrt is None:
        wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    assert opdef.reference is not None, f"{op} has no reference"
    reference = opdef.reference

    def run(*xs: np.ndarray) -> Any:
        return reference(*xs, **dict(validated.items()))

    primal = run(*arrays)
    ct = _cotangent(primal, np.random.default_rng(seed))
    params = tuple(Var(f"x{i}", _type_of(a)) for i, a in enumerate(arrays))
    call = Call(Op.get(op), params, Attrs(dict(validated.items())))
    adjoints = opdef.rule("gradient")(call, _constant(ct))
    assert len(adjoints) == len(arrays), (
        f"{op}: the gradient rule gave {len(adjoints)} adjoints for {len(arrays)} arguments"
    )
    given = [i for i, g in enumerate(adjoints) if g is not None]
    missing = [i for i in wrt if adjoints[i] is None]
    assert not missing, f"{op}: no adjoint for argument(s) {missing}"
    fn = Function(params, Tuple(tuple(adjoints[i] for i in given)))
    infer_type(fn)
    fn_type = fn.checked_type
    for k, i in enumerate(given):
        got_type = fn_type.ret_type.fields[k]  # type: ignore[attr-defined]
        assert got_type == params[i].type_annotation, (
            f"{op}: the adjoint of argument {i} has type {got_type}, "
            f"expected {params[i].type_annotation}"
        )
    values = interpret(fn, *arrays)
    assert isinstance(values, tuple)
    analytic: list[np.ndarray | None] = [None] * len(arrays)
    for k, i in enumerate(given):
        analytic[i] = np.asarray(values[k])
    numeric = numerical_gradient(lambda *xs: _dot(run(*xs), ct), arrays, wrt)
    for i, num in zip(wrt, numeric, strict=True):
        got = analytic[i]
        assert got is not None
        np.testing.assert_allclose(
            got, num, rtol=rtol, atol=atol, err_msg=f"{op}: adjoint of argument {i}"
        )
    return analytic


__all__ = ["check_op_gradient", "numerical_gradient"]
