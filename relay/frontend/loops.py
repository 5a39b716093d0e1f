"""``while`` and ``for ... in range(...)`` loops as local recursive functions.

A loop becomes ``let %loop = fn (state...) { if (cond) { body; %loop(state') } else {...} }``
where the state is the loop counter (for ``for``) and every variable the body assigns that
exists before the loop. Without a ``return`` inside, the loop function returns the final
state, which the code after the loop unpacks (``break`` returns the current state); with a
``return`` inside, the code after the loop becomes a function ``%after`` over the state that
the loop calls on exit and on ``break``, and ``return e`` is ``e`` (see
:mod:`relay.frontend.convert` for the two joins). Nothing is unrolled: a loop of a million
iterations is a million tail calls, which the interpreter (and later the VM) run in constant
stack.

The state's types are fixed across iterations. A variable initialised with a Python number
and then combined with tensors (``total = 0`` followed by ``total = total + x``) takes the
type it has after one iteration: the loop is converted again with the number written as a
tensor of that type (``full(0f, shape=[3, 4], dtype="float32")``), as a user would write it.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any as _Any

from relay.frontend.convert import Cont, _jumps, assigned_names
from relay.frontend.values import Ex, Py, Undefined, Val, defined, is_number
from relay.ir.expr import Call, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from relay.ir.printer import astext
from relay.ir.types import TensorType, Type

if TYPE_CHECKING:
    from relay.frontend.convert import FunctionConverter

__all__ = ["convert_loop"]


class _Range:
    """The bounds of ``range(start, stop, step)``; ``step`` is a nonzero Python int."""

    def __init__(self, start: Val, stop: Val, step: int) -> None:
        self.start, self.stop, self.step = start, stop, step


def _range_of(c: FunctionConverter, stmt: ast.For, env: dict[str, _Any]) -> _Range:
    it = stmt.iter
    if not (isinstance(it, ast.Call) and not it.keywords):
        raise c.unsupported(
            "a for loop over something other than range(...)",
            it,
            "iterate over range(len) and index, or use a while loop",
        )
    func = c.expr(it.func, env)
    if not (isinstance(func, Py) and func.value is builtins.range):
        raise c.unsupported(
            "a for loop over something other than range(...)",
            it,
            "iterate over range(len) and index, or use a while loop",
        )
    args = [c.expr(a, env) for a in it.args]
    if not 1 <= len(args) <= 3:
        raise c.error(f"range expects 1 to 3 arguments, got {len(args)}", it)
    if len(args) == 1:
        args = [Py(0), args[0]]
    step: Val = args[2] if len(args) == 3 else Py(1)
    if not (
        isinstance(step, Py) and isinstance(step.value, int) and not isinstance(step.value, bool)
    ):
        raise c.error(
            "the step of range(...) must be an int constant",
            it.args[2] if len(it.args) == 3 else it,
        )
    if step.value == 0:
        raise c.error("range() step must not be zero", it)
    start, stop = args[0], args[1]
    for v, a in (
        (start, it.args[0] if len(it.args) > 1 else it),
        (stop, it.args[-2] if len(it.args) == 3 else it.args[-1]),
    ):
        if isinstance(v, Py) and not (isinstance(v.value, int) and not isinstance(v.value, bool)):
            raise c.error(f"range() bounds must be integers, got {v.value!r}", a)
    return _Range(start, stop, step.value)


def convert_loop(
    c: FunctionConverter,
    stmt: ast.While | ast.For,
    rest: Sequence[ast.stmt],
    env: dict[str, _Any],
    k: Cont,
) -> Expr | None:
    """Convert a loop followed by ``rest`` (see the module docstring)."""
    if stmt.orelse:
        raise c.unsupported("'else' on a loop", stmt.orelse[0], "set a flag before 'break' instead")
    rng: _Range | None = None
    target: str | None = None
    if isinstance(stmt, ast.For):
        if not isinstance(stmt.target, ast.Name):
            raise c.unsupported("a for loop target other than a name", stmt.target)
        target = stmt.target.id
        rng = _range_of(c, stmt, env)
    body = stmt.body
    has_return = "return" in _jumps(body, loops_too=True)
    assigned = assigned_names(body)
    if target is not None:
        assigned = [target, *[n for n in assigned if n != target]]
    state = [n for n in assigned if defined(env, n) and n not in c.boxed]
    # the counter and bounds are evaluated once, before the loop
    counter_init: Val | None = None
    stop: Val | None = None
    if rng is not None:
        counter_init = rng.start
        stop = rng.stop
        if isinstance(stop, Ex) and not isinstance(stop.expr, Var):
            stop = c.emit("stop", stop.expr, stop.ty)
    init: dict[str, Ex] = {n: _as_state(c, env[n], stmt) for n in state}
    counter_ex: Ex | None = None
    if counter_init is not None and stop is not None:
        bound = c.materialize(stop, stmt) if isinstance(stop, Ex) else None
        like = bound if bound is not None and bound.tensor is not None else None
        dtype = str(like.tensor.dtype) if like is not None and like.tensor is not None else "int32"
        if not dtype.startswith(("int", "uint")):
            raise c.error(f"range() bounds must be integers, got a {dtype} tensor", stmt)
        if isinstance(counter_init, Py):
            counter_ex = c.literal(counter_init.value, stmt, like)
        else:
            counter_ex = c.materialize(counter_init, stmt)
        counter_ex = Ex(counter_ex.expr, counter_ex.ty, True)  # a Python int: weakly typed
    weak = {n for n in state if _weak_value(env[n])}
    if target is not None and target in c.boxed and counter_ex is not None:
        # closures read the loop variable late: it lives in a cell that each iteration sets
        c.bind(target, counter_ex, env, stmt)
    for _ in range(3):
        weak_mark = len(c.weak)
        built = _build(
            c, stmt, rest, env, k, state, init, counter_ex, stop, rng, target, has_return
        )
        changed = False
        for n in state:
            before = init[n].ty
            others = [t for t in built.next_types.get(n, []) if t != before]
            if before is None or not others:
                continue
            after = others[0]
            if n in weak and isinstance(after, TensorType) and len(others) == 1:
                init[n] = _weak_init(c, env[n], init[n], after, stmt)
                weak.discard(n)
                changed = True
            else:
                raise c.error(
                    f"{n} changes type in the loop: {astext(before)} before it, "
                    f"{astext(after)} after an iteration; a loop variable keeps one type",
                    stmt,
                    "give it its final type before the loop",
                )
        if not changed:
            break
        del c.weak[weak_mark:]
    return built.finish()


def _inside(c: FunctionConverter, stmt: ast.AST) -> Undefined:
    line = getattr(stmt, "lineno", 0) + c.source.first_line - 1
    return Undefined(
        f"is assigned only inside the loop at line {line}; give it a value before the loop"
    )


def _weak_value(v: object) -> bool:
    return (isinstance(v, Py) and is_number(v.value)) or (isinstance(v, Ex) and v.weak)


def _as_state(c: FunctionConverter, v: object, stmt: ast.AST) -> Ex:
    if isinstance(v, Ex):
        return v
    return c.materialize(v, stmt)  # type: ignore[arg-type]


def _weak_init(
    c: FunctionConverter, value: object, current: Ex, ty: TensorType, stmt: ast.AST
) -> Ex:
    """The weakly typed number ``value`` (a Python number, or a scalar computed from them,
    already materialised as ``current``) as a tensor of type ``ty``."""
    if not isinstance(ty.dtype, str):
        raise c.error("a loop variable initialised with a number needs a known dtype", stmt)
    if isinstance(value, Py):
        scalar = c.literal(value.value, stmt, Ex(Tuple(()), TensorType((), ty.dtype)))
    else:
        scalar = c.cast(current, ty.dtype, stmt)
    if ty.shape == ():
        return scalar
    if not ty.is_static:
        raise c.error(
            "a loop variable initialised with a number becomes a tensor of symbolic shape "
            f"{astext(ty)}",
            stmt,
            "initialise it with np.zeros_like(...) of a tensor of that shape",
        )
    return c.op("full", [scalar], {"shape": list(ty.concrete_shape()), "dtype": ty.dtype}, stmt)


class _Built:
    """One conversion of a loop: its types after an iteration and how to finish it."""

    def __init__(self) -> None:
        self.next_types: dict[str, list[Type]] = {}  # the known types after an iteration
        self.finish: Callable[[], Expr | None] = lambda: None


def _build(
    c: FunctionConverter,
    stmt: ast.While | ast.For,
    rest: Sequence[ast.stmt],
    env: dict[str, _Any],
    k: Cont,
    state: list[str],
    init: dict[str, Ex],
    counter_init: Ex | None,
    stop: Val | None,
    rng: _Range | None,
    target: str | None,
    has_return: bool,
) -> _Built:
    built = _Built()
    span = c.span(stmt)
    kind = "while_loop" if isinstance(stmt, ast.While) else "for_loop"
    loop = Var(kind, span=span)
    params = [Var(n, init[n].ty, span=span) for n in state]
    weak_state = {n for n in state if _weak_value(env[n]) and init[n].ty == _scalar_of(init[n])}
    counter = (
        Var(target or "i", counter_init.ty if counter_init else None, span=span) if rng else None
    )
    all_params = ([counter] if counter is not None else []) + params
    inner = dict(env)
    for n, p in zip(state, params, strict=True):
        inner[n] = Ex(p, init[n].ty, n in weak_state)
    seen: list[dict[str, _Any]] = []

    def state_exprs(e: dict[str, _Any]) -> list[Expr]:
        seen.append(e)
        return [c.materialize(e[n], stmt).expr for n in state]

    def next_call(e: dict[str, _Any]) -> Expr:
        args = state_exprs(e)
        if counter is not None and rng is not None:
            step = c.binary(
                "add",
                Ex(counter, counter_init.ty if counter_init else None, True),
                Py(rng.step),
                stmt,
            )
            args = [c.materialize(step, stmt).expr, *args]
        return Call(loop, tuple(args), span=span)

    def result(e: dict[str, _Any]) -> Expr:
        values = state_exprs(e)
        return values[0] if len(values) == 1 else Tuple(tuple(values), span=span)

    def loop_body() -> Expr:
        body_env = dict(inner)
        boxed_target = target is not None and target in c.boxed
        if counter is not None and target is not None and not boxed_target:
            body_env[target] = Ex(counter, counter_init.ty if counter_init else None, True)
        if has_return:
            brk = lambda e: Call(after, tuple(state_exprs(e)), span=span)  # noqa: E731
            body_k = Cont(next_call, brk, next_call, True)
        else:
            body_k = Cont(next_call, result, next_call, True)
        if counter is not None and rng is not None and stop is not None:
            cmp = "less" if rng.step > 0 else "greater"
            cond = c.materialize(
                c.binary(
                    cmp, Ex(counter, counter_init.ty if counter_init else None, True), stop, stmt
                ),
                stmt,
            ).expr
        else:
            assert isinstance(stmt, ast.While)
            cond = c.condition(c.expr(stmt.test, inner), stmt.test)

        def iteration() -> Expr:
            if boxed_target and counter is not None and target is not None:
                value = Ex(counter, counter_init.ty if counter_init else None, True)
                c.bind(target, value, body_env, stmt)  # the cell closures read
            return c.block(stmt.body, body_env, body_k)

        then = c.sub_block(iteration)
        if has_return:
            otherwise: Expr = Call(after, tuple(params), span=span)
        else:
            otherwise = result(inner)
            seen.pop()  # the exit state is not an iteration's result
        return If(cond, then, otherwise, span=span)

    after = Var("after", span=span)
    fn_body = c.sub_block(loop_body)
    loop_fn = Function(tuple(all_params), fn_body, span=span)
    for n in state:
        found: list[Type] = []
        for e in seen:
            t = _type_of(e.get(n))
            if t is not None and t not in found:
                found.append(t)
        built.next_types[n] = found
    init_args = ([counter_init.expr] if counter_init is not None else []) + [
        init[n].expr for n in state
    ]
    start = Call(loop, tuple(init_args), span=span)

    if has_return:
        after_params = [Var(n, init[n].ty, span=span) for n in state]
        after_env = dict(env)
        for n, p in zip(state, after_params, strict=True):
            after_env[n] = Ex(p, init[n].ty)
        for n in assigned_names(stmt.body):
            if not defined(env, n):  # defined only inside the loop
                after_env[n] = _inside(c, stmt)

        def finish_cps() -> Expr:
            after_body = c.sub_block(lambda: c.block(rest, after_env, k))
            after_fn = Function(tuple(after_params), after_body, span=span)
            return Let(after, after_fn, Let(loop, loop_fn, start, span=span), span=span)

        built.finish = finish_cps
        return built

    before = {n for n in env if defined(env, n)}

    def finish_value() -> None:
        c.frame.bindings.append((loop, loop_fn))
        out = c.emit("state", start, None)
        if len(state) == 1:
            env[state[0]] = Ex(out.expr, init[state[0]].ty)
        else:
            for i, n in enumerate(state):
                env[n] = c.emit(n, TupleGetItem(out.expr, i, span=span), init[n].ty)
        for n in assigned_names(stmt.body):
            if n not in before:  # defined only inside the loop
                env[n] = _inside(c, stmt)
        if target is not None and target not in before:
            env[target] = _inside(c, stmt)

    built.finish = finish_value
    return built


def _scalar_of(v: Ex) -> Type | None:
    """``v``'s type when it is a rank-0 tensor."""
    t = v.tensor
    return t if t is not None and t.shape == () else None


def _type_of(v: object) -> Type | None:
    return v.ty if isinstance(v, Ex) else None
