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

``check_op_jvp(op, args, attrs)`` checks an operator's JVP (forward-mode) rule the same way:
it draws a random tangent ``v`` for each floating-point argument (None for integer ones, as
forward-mode AD passes them), builds the rule's tangent expression with the tangents as
constants, type-checks it against the operator's result type, runs it with the reference
interpreter and compares it with the central difference along ``v``,
``(f(x + h v) - f(x - h v)) / 2h``, of the numpy reference in float64. Where the operator
also has a gradient rule it checks that the two are transposes of each other,
``<ct, J v> == <J^T ct, v>`` for a random output cotangent ``ct`` (the dot-product test of
adjoint codes; Griewank and Walther, *Evaluating Derivatives*, 2nd ed., section 3.3), which
ties the JVP to the gradient exactly where finite differences cannot look: at ties and
kinks, whose conventions the two rules must share. Arguments may be tuples of arrays (for
operators such as ``concatenate``); the tangent of a tuple is a tuple.
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
    from relay.op.registry import get_op

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
    adjoints = _adjoints(op, arrays, validated, ct)
    missing = [i for i in wrt if adjoints[i] is None]
    assert not missing, f"{op}: no adjoint for argument(s) {missing}"
    analytic: list[np.ndarray | None] = [None if a is None else np.asarray(a) for a in adjoints]
    numeric = numerical_gradient(lambda *xs: _dot(run(*xs), ct), arrays, wrt)
    for i, num in zip(wrt, numeric, strict=True):
        got = analytic[i]
        assert got is not None
        np.testing.assert_allclose(
            got, num, rtol=rtol, atol=atol, err_msg=f"{op}: adjoint of argument {i}"
        )
    return analytic


def _adjoints(op: str, arrays: Sequence[Any], validated: Attrs, ct: Any) -> list[Any]:
    """The gradient rule's adjoints of ``op`` at ``arrays`` for the output adjoint ``ct``,
    type-checked against the arguments and evaluated (None where the rule gives none)."""
    from relay.backend.interpreter import interpret
    from relay.op.registry import get_op
    from relay.typecheck.checker import infer_type

    params = tuple(Var(f"x{i}", _type_of(a)) for i, a in enumerate(arrays))
    call = Call(Op.get(op), params, Attrs(dict(validated.items())))
    adjoints = get_op(op).rule("gradient")(call, _constant(ct))
    assert len(adjoints) == len(arrays), (
        f"{op}: the gradient rule gave {len(adjoints)} adjoints for {len(arrays)} arguments"
    )
    given = [i for i, g in enumerate(adjoints) if g is not None]
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
    out: list[Any] = [None] * len(arrays)
    for k, i in enumerate(given):
        out[i] = values[k]
    return out


def _is_float(value: Any) -> bool:
    """Whether ``value`` (an array, or a tuple of them) holds a floating-point tensor."""
    if isinstance(value, tuple):
        return any(_is_float(v) for v in value)
    return bool(np.asarray(value).dtype.kind == "f")


def _tangent(value: Any, rng: np.random.Generator) -> Any:
    """A random tangent for a floating-point argument (zeros for the integer fields of a
    tuple), None for an argument without floating-point parts."""
    if not _is_float(value):
        return None
    if isinstance(value, tuple):
        return tuple(
            _tangent(v, rng) if _is_float(v) else np.zeros(np.shape(v), np.asarray(v).dtype)
            for v in value
        )
    arr = np.asarray(value)
    return rng.standard_normal(arr.shape).astype(arr.dtype)


def _wide(value: Any) -> Any:
    """``value`` with its floating-point arrays in float64 (copies)."""
    if isinstance(value, tuple):
        return tuple(_wide(v) for v in value)
    arr = np.asarray(value)
    return np.array(arr, dtype=np.float64) if arr.dtype.kind == "f" else arr.copy()


def _step(x: Any, v: Any, h: float) -> Any:
    """``x + h v`` on the floating-point parts of ``x`` (``v`` None: ``x`` unchanged)."""
    if v is None:
        return x
    if isinstance(x, tuple):
        return tuple(_step(a, b, h) for a, b in zip(x, v, strict=True))
    if x.dtype.kind != "f":
        return x
    return x + h * np.asarray(v, dtype=np.float64)


def _difference(up: Any, down: Any, h: float) -> Any:
    """``(up - down) / 2h`` field by field, in float64 (zeros for non-float fields, and
    where the two are equal: an infinite value that stays put has a zero tangent)."""
    if isinstance(up, tuple):
        return tuple(_difference(u, d, h) for u, d in zip(up, down, strict=True))
    u, d = np.asarray(up), np.asarray(down)
    if u.dtype.kind != "f":
        return np.zeros(u.shape)
    with np.errstate(invalid="ignore"):
        diff = (u.astype(np.float64) - d.astype(np.float64)) / (2 * h)
    return np.where(u == d, 0.0, diff)


def _assert_like(got: Any, want: Any, what: str) -> None:
    """``got`` has the structure, shapes and dtypes of ``want``."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{what}: expected a tuple"
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_like(g, w, f"{what}, field {k}")
        return
    g, w = np.asarray(got), np.asarray(want)
    assert (g.shape, g.dtype) == (w.shape, w.dtype), (
        f"{what}: {g.dtype}{list(g.shape)} where the result is {w.dtype}{list(w.shape)}"
    )


def _assert_close(got: Any, want: Any, rtol: float, atol: float, what: str) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{what}: expected a tuple"
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_close(g, w, rtol, atol, f"{what}, field {k}")
        return
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol, err_msg=what
    )


def check_op_jvp(
    op: str,
    args: Sequence[Any],
    attrs: Mapping[str, object] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    seed: int = 0,
    wrt: Sequence[int] | None = None,
    numeric: bool = True,
    transpose: bool = True,
    eps: float = 1e-6,
) -> Any:
    """Check the JVP rule of operator ``op`` at ``args`` (see the module docstring).

    ``args`` are arrays, or tuples of arrays for a tuple argument; ``wrt`` selects the
    arguments given a tangent (default: every floating-point one; the others get None, a
    zero tangent). The rule is called as forward-mode AD calls it: only when some argument
    has a tangent and the result holds a floating-point tensor; otherwise nothing is checked
    and None is returned. ``numeric=False`` skips the central differences (at a tie or a
    kink, where they do not give the rule's convention; with narrow float dtypes, too coarse
    for them) and ``transpose=False`` the comparison with the gradient rule; the tangent's
    type, shape and dtype are always checked. Returns the rule's tangent, evaluated (None
    when the rule says it is zero). Raises AssertionError on a mismatch.
    """
    from relay.backend.interpreter import interpret
    from relay.op.registry import get_op
    from relay.typecheck.checker import infer_type

    opdef = get_op(op)
    validated = opdef.validate_attrs(dict(attrs or {}))
    arrays = [a if isinstance(a, tuple) else np.asarray(a) for a in args]
    assert opdef.reference is not None, f"{op} has no reference"
    reference = opdef.reference

    def run(*xs: Any) -> Any:
        return reference(*xs, **dict(validated.items()))

    primal = run(*arrays)
    rng = np.random.default_rng(seed)
    tangents = [_tangent(a, rng) for a in arrays]
    if wrt is not None:
        tangents = [t if i in wrt else None for i, t in enumerate(tangents)]
    if all(t is None for t in tangents) or not _is_float(primal):
        return None
    params = tuple(Var(f"x{i}", _type_of(a)) for i, a in enumerate(arrays))
    call = Call(Op.get(op), params, Attrs(dict(validated.items())))
    infer_type(Function(params, call))  # the rule reads the arguments' checked types
    out_type = call.checked_type  # may have unknown extents (``arange``'s ``?``)
    tangent_exprs = [None if t is None else _constant(t) for t in tangents]
    result = opdef.rule("jvp")(call, tangent_exprs)
    if result is None:
        value: Any = None
    else:
        fn = Function(params, result)
        infer_type(fn)
        got_type = fn.checked_type.ret_type  # type: ignore[attr-defined]
        assert got_type == out_type, (
            f"{op}: the JVP rule's tangent has type {got_type}, expected {out_type}"
        )
        value = interpret(fn, *arrays)
        _assert_like(value, primal, f"{op}: the JVP rule's tangent")
    if numeric:
        work = [_wide(a) for a in arrays]
        up = run(*(_step(x, v, eps) for x, v in zip(work, tangents, strict=True)))
        down = run(*(_step(x, v, -eps) for x, v in zip(work, tangents, strict=True)))
        want = _difference(up, down, eps)
        got = _difference(primal, primal, 1.0) if value is None else value  # None: zeros
        _assert_close(got, want, rtol, atol, f"{op}: JVP")
    if transpose and opdef.gradient is not None and "non_differentiable" not in opdef.extra:
        ct = _cotangent(primal, rng)
        adjoints = _adjoints(op, arrays, validated, ct)
        forward = 0.0 if value is None else _dot(value, ct)
        backward = sum(
            (
                _dot(g, t)
                for g, t in zip(adjoints, tangents, strict=True)
                if g is not None and t is not None
            ),
            0.0,
        )
        np.testing.assert_allclose(
            forward,
            backward,
            rtol=rtol,
            atol=atol,
            err_msg=f"{op}: <ct, J v> from the JVP differs from <J^T ct, v> from the gradient",
        )
    return value


__all__ = ["check_op_gradient", "check_op_jvp", "numerical_gradient"]
