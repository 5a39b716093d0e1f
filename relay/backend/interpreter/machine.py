"""The reference interpreter: a CEK machine with an explicit continuation stack.

The state of the machine is a *control* (the expression being evaluated, or a value being
returned), an *environment* (:class:`~relay.backend.interpreter.values.Env`) and a
*continuation*: a Python list of frames, each saying what to do with the value of a
sub-expression (bind it and evaluate a let body, pick an if branch, collect a call argument,
...). This is Felleisen and Friedman's CEK machine ("Control operators, the SECD-machine and
the lambda-calculus", 1986) with the continuation kept as an explicit stack rather than a
linked list. One loop alternates two phases:

* *eval*: look at the control expression. Atoms (variables, constants, globals, operators,
  functions) become values at once. A compound expression pushes a frame for the rest of its
  work and continues with its first sub-expression.
* *return*: pop the top frame and give it the value. The frame either produces a value
  itself (an operator call, a tuple, a projection) and the phase repeats, or names the next
  expression to evaluate (the next argument, a let body, a branch, a closure's body).

Calling a closure replaces the control with the closure's body in a new environment and
pushes nothing, so tail calls run in constant stack; non-tail recursion such as
``1 + @length(%rest)`` grows the frame list, never Python's stack. A let chain pushes at most
one frame at a time. Programs of any depth therefore run within the default recursion limit;
the frame list is bounded by ``max_stack_depth`` (a Relay "stack overflow").

Environments hold one dictionary per function activation, linked to the environment the
closure was created in. Let and pattern bindings go into the current activation's dictionary
in place (a variable is bound once per activation in a well-formed program; a shared
sub-expression evaluated twice gets a copy first, so earlier closures keep their values).
Closures capture the environment by reference in O(1). A let-bound function sees its own
binding, so ``let %f = fn (...) { ... %f(...) ... }`` recurses.

Operators run their numpy ``reference`` from the operator registry with the call's
attributes (validated against the operator's schema, defaults filled) as keyword arguments.
Errors in the program (a failed match, a non-boolean condition, an operator error such as an
integer division by zero) raise :class:`~relay.errors.ExecutionError` with the span of the
expression at fault.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from relay.backend.interpreter.conform import (
    call_needs_check,
    check_arguments,
    check_result,
    may_need_checks,
    result_needs_check,
)
from relay.backend.interpreter.values import (
    Closure,
    ConstructorValue,
    Env,
    RefValue,
    Value,
    describe_value,
    format_value,
    same_constructor,
    to_value,
)
from relay.errors import ExecutionError, RelayError
from relay.ir.attrs import EMPTY_ATTRS, Attrs
from relay.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.ir.module import Module
from relay.ir.span import Span
from relay.op.registry import AttrValidationError, get_op

DEFAULT_MAX_STACK_DEPTH = 5_000_000
"""The default bound on pending continuation frames (about 1 GB of frames)."""

# Continuation frames are lists whose first item is one of these kinds:
#   [_ARG, call, env, callee, values, next]   collecting a call's callee and arguments
#   [_APPLY, callee, values, call]            apply callee to values (entry of Interpreter.call)
#   [_LET, let, env]                           bind the value, evaluate the body
#   [_IF, if, env]                             choose a branch
#   [_MATCH, match, env]                       match the value against the clauses
#   [_TUPLE, tuple, env, values]               collecting tuple fields
#   [_PROJ, tuple_get_item]                    project a field
#   [_REF_CREATE]                              make a reference cell
#   [_REF_READ, ref_read]                      read a reference
#   [_REF_WRITE, ref_write, env, ref]          evaluate the new value, then write it
#   [_RESULT, closure, values]                 check a closure's result against its type
_ARG = 0
_APPLY = 1
_LET = 2
_IF = 3
_MATCH = 4
_TUPLE = 5
_PROJ = 6
_REF_CREATE = 7
_REF_READ = 8
_REF_WRITE = 9
_RESULT = 10

_UNSET: Any = object()


class _ApplyMarker:
    """The type of :data:`_APPLY_MARK`, the control that means "apply the pending callee"."""

    __slots__ = ()


_APPLY_MARK = _ApplyMarker()

_OP_ERRORS = (ArithmeticError, ValueError, TypeError, IndexError, KeyError)


def _span_of(node: Expr | None) -> Span | None:
    return None if node is None else node.span


def _lookup(var: Var, env: Env | None) -> Value:
    """``var``'s value in ``env`` or its parents; ExecutionError if unbound."""
    while env is not None:
        value = env.vars.get(var)
        if value is not None:
            return value
        env = env.parent
    raise ExecutionError(f"unbound variable %{var.name_hint}", var.span)


def match_pattern(pattern: Pattern, value: Value, out: list[tuple[Var, Value]]) -> bool:
    """Whether ``value`` matches ``pattern``; on success the bindings are appended to ``out``."""
    # Fast path for the usual shape of a clause, ``C(%x, _, ...)``; anything nested goes
    # through the general loop below.
    if type(pattern) is PatternConstructor:
        if type(value) is not ConstructorValue:
            return False
        if value.constructor is not pattern.constructor and not same_constructor(
            value.constructor, pattern.constructor
        ):
            return False
        fields = value.fields
        patterns = pattern.patterns
        if len(fields) != len(patterns):
            return False
        for p, v in zip(patterns, fields, strict=True):
            tp = type(p)
            if tp is PatternVar:
                out.append((p.var, v))  # type: ignore[attr-defined]
            elif tp is not PatternWildcard and not _match_nested(p, v, out):
                return False
        return True
    return _match_nested(pattern, value, out)


def _match_nested(pattern: Pattern, value: Value, out: list[tuple[Var, Value]]) -> bool:
    work: list[tuple[Pattern, Value]] = [(pattern, value)]
    while work:
        p, v = work.pop()
        if isinstance(p, PatternWildcard):
            continue
        if isinstance(p, PatternVar):
            out.append((p.var, v))
        elif isinstance(p, PatternConstructor):
            if not (
                isinstance(v, ConstructorValue)
                and same_constructor(v.constructor, p.constructor)
                and len(v.fields) == len(p.patterns)
            ):
                return False
            work.extend(zip(p.patterns, v.fields, strict=True))
        elif isinstance(p, PatternTuple):
            if not (isinstance(v, tuple) and len(v) == len(p.patterns)):
                return False
            work.extend(zip(p.patterns, v, strict=True))
        else:
            raise ExecutionError(f"unknown pattern {type(p).__name__}", getattr(p, "span", None))
    return True


class _OpEntry:
    """What the interpreter needs of an operator, looked up once per operator."""

    __slots__ = ("has_schema", "name", "num_inputs", "opdef", "reference")

    def __init__(self, op: Op) -> None:
        self.name = op.name
        try:
            self.opdef = get_op(op.name)
        except KeyError:
            raise ExecutionError(f"unknown operator {op.name}", op.span) from None
        self.reference: Callable[..., Any] | None = self.opdef.reference
        self.num_inputs = self.opdef.num_inputs
        self.has_schema = bool(self.opdef.attrs_schema)


def _is_tensors(value: Value) -> bool:
    """Whether ``value`` is a tensor or a (nested) tuple of tensors: what operators take."""
    work = [value]
    while work:
        v = work.pop()
        if isinstance(v, tuple):
            work.extend(v)
        elif not isinstance(v, np.ndarray):
            return False
    return True


def _normalize_result(result: object, name: str, span: Span | None) -> Value:
    """An operator's result as a value: 0-d arrays for scalars, tuples for sequences."""
    if isinstance(result, np.ndarray):
        return result
    if isinstance(result, np.generic | bool | int | float):
        return np.asarray(result)
    if isinstance(result, tuple | list):
        return tuple(_normalize_result(r, name, span) for r in result)
    raise ExecutionError(
        f"the reference of operator {name} returned a {type(result).__name__}", span
    )


class Interpreter:
    """Evaluates expressions in the context of a module ``mod`` (its globals and data types).

    >>> interp = Interpreter(mod)
    >>> interp.evaluate(expr)                   # the value of a closed expression
    >>> interp.evaluate(body, {x: np.ones(3)})  # ... or one whose free variables are given
    >>> interp.call(interp.evaluate(fn), [a])   # apply a function value to values

    ``max_stack_depth`` bounds the number of pending continuation frames; a program that
    exceeds it (unbounded non-tail recursion) gets an ExecutionError. ``max_calls``, if
    given, bounds the number of closure calls per :meth:`evaluate` or :meth:`call`, so that
    even a program that loops forever in tail calls stops with an ExecutionError (useful
    when running generated or partially evaluated programs).
    """

    def __init__(
        self,
        mod: Module | None = None,
        *,
        max_stack_depth: int = DEFAULT_MAX_STACK_DEPTH,
        max_calls: int | None = None,
    ) -> None:
        self.mod = Module() if mod is None else mod
        self.max_stack_depth = max_stack_depth
        self.max_calls = max_calls
        self._globals: dict[GlobalVar, Closure] = {}
        self._ops: dict[Op, _OpEntry] = {}
        self._call_attrs: dict[Call, Attrs | None] = {}
        # The run-time type checks the type checker deferred (a `?` dimension where an
        # annotation has a size), decided once per function (`_guards`: whether its calls
        # may need any, kept on each closure) and once per call.
        self._guards: dict[Function, bool] = {}
        self._call_checks: dict[Call, bool] = {}
        self._result_checks: dict[Function, bool] = {}

    # -- public entry points -----------------------------------------------------------------

    def evaluate(self, expr: Expr, env: Mapping[Var, object] | Env | None = None) -> Value:
        """The value of ``expr``; its free variables take their values from ``env``
        (which is not modified: bindings made while evaluating go into a child environment)."""
        if env is None:
            start = Env()
        elif isinstance(env, Env):
            start = Env({}, env)
        else:
            start = Env({var: to_value(v) for var, v in env.items()})
        return self._run(expr, start, [])

    def call(self, func: object, args: Sequence[object]) -> Value:
        """Apply a function value (a closure, an operator or a constructor) to ``args``
        (converted with :func:`~relay.backend.interpreter.values.to_value`)."""
        frame: list[Any] = [_APPLY, to_value(func), [to_value(a) for a in args], None]
        return self._run(None, Env(), [frame])

    def global_closure(self, gv: GlobalVar | str) -> Closure:
        """The closure that the global ``gv`` evaluates to."""
        if isinstance(gv, str):
            try:
                gv = self.mod.get_global_var(gv)
            except KeyError:
                raise ExecutionError(f"the module has no global function @{gv}") from None
        return self._global(gv)

    # -- helpers -------------------------------------------------------------------------------

    def _global(self, gv: GlobalVar) -> Closure:
        func = self.mod.functions.get(gv)
        if func is None:  # a GlobalVar node of the same name built apart from the module
            try:
                func = self.mod.function(gv.name_hint)
            except KeyError:
                raise ExecutionError(f"unknown global @{gv.name_hint}", gv.span) from None
        closure = self._globals.get(gv)
        if closure is None or closure.func is not func:
            closure = Closure(func, None, self.mod, gv)
            self._globals[gv] = closure
        return closure

    def _op_entry(self, op: Op) -> _OpEntry:
        entry = self._ops.get(op)
        if entry is None:
            entry = _OpEntry(op)
            self._ops[op] = entry
        return entry

    def _call_attrs_of(self, entry: _OpEntry, call: Call | None) -> Attrs | None:
        """The keyword arguments for ``call`` of the operator: its attributes validated
        against the schema with defaults filled in, or None when there are none."""
        try:
            attrs = entry.opdef.validate_attrs(None if call is None else call.attrs)
        except AttrValidationError as exc:
            raise ExecutionError(str(exc), _span_of(call)) from None
        result = attrs if attrs else None
        if call is not None:
            self._call_attrs[call] = result
        return result

    def _call_op(self, op: Op, args: list[Value], call: Call | None) -> Value:
        entry = self._ops.get(op) or self._op_entry(op)
        reference = entry.reference
        if reference is None:
            raise ExecutionError(
                f"operator {entry.name} has no reference implementation", _span_of(call)
            )
        if entry.num_inputs >= 0 and len(args) != entry.num_inputs:
            raise ExecutionError(
                f"operator {entry.name} takes {entry.num_inputs} argument"
                f"{'s' if entry.num_inputs != 1 else ''}, got {len(args)}",
                _span_of(call),
            )
        for i, arg in enumerate(args):
            if type(arg) is not np.ndarray and not _is_tensors(arg):
                raise ExecutionError(
                    f"operator {entry.name} takes tensors, but argument {i + 1} is "
                    + describe_value(arg),
                    _span_of(call),
                )
        if call is None:
            kwargs = self._call_attrs_of(entry, None) if entry.has_schema else None
        elif not entry.has_schema and (call.attrs is EMPTY_ATTRS or not call.attrs):
            kwargs = None
        else:
            kwargs = self._call_attrs.get(call, _UNSET)
            if kwargs is _UNSET:
                kwargs = self._call_attrs_of(entry, call)
        try:
            result = reference(*args) if kwargs is None else reference(*args, **kwargs)
        except RelayError as exc:
            if exc.span is None:
                exc.span = _span_of(call)
            raise
        except _OP_ERRORS as exc:
            raise ExecutionError(f"operator {entry.name} failed: {exc}", _span_of(call)) from exc
        if type(result) is np.ndarray:
            return result
        return _normalize_result(result, entry.name, _span_of(call))

    def _deferred_checks(self, closure: Closure, values: list[Value], call: Call | None) -> bool:
        """Run the deferred checks of applying ``closure`` to ``values`` at ``call``: check the
        arguments if the call needs it; whether the result must be checked when it returns.

        The machine calls this unless ``closure.guard`` is False: the closure's function
        declares no size a ``?`` could break (decided here on its first call)."""
        fn = closure.func
        if closure.guard is None:
            guard = self._guards.get(fn)
            if guard is None:
                guard = self._guards[fn] = may_need_checks(fn)
            closure.guard = guard
            if not guard:
                return False
        check_args: bool | None = False
        if call is not None:
            check_args = self._call_checks.get(call)
            if check_args is None:
                callee: Function | None = None
                if isinstance(call.op, GlobalVar):
                    callee = self._global(call.op).func
                elif isinstance(call.op, Function):
                    callee = call.op
                check_args = self._call_checks[call] = call_needs_check(call, callee)
        check_result = self._result_checks.get(fn)
        if check_result is None:
            check_result = self._result_checks[fn] = result_needs_check(fn)
        if check_args:
            check_arguments(fn, values, _callee_name(closure, call), call.span if call else None)
        return check_result

    def _no_match(self, node: Match, value: Value) -> ExecutionError:
        return ExecutionError(
            f"no clause of the match matched the value {format_value(value, 200)}", node.span
        )

    # -- the machine ---------------------------------------------------------------------------

    def _run(self, start: Expr | None, env: Env, stack: list[list[Any]]) -> Value:
        """Run the machine from ``start`` in ``env`` (or, with ``start`` None, from returning
        into ``stack``) until the continuation is empty; the final value."""
        # One long loop on purpose: dispatching each step through a method would cost a Python
        # call per expression node.
        limit = self.max_stack_depth
        calls_left = sys.maxsize if self.max_calls is None else self.max_calls
        get_global = self._global
        call_op = self._call_op
        push = stack.append
        pop = stack.pop
        expr: Any = start
        value: Any = None
        node: Any = None
        func: Any = None  # the callee, arguments and call node of a pending application
        values: list[Value] = []
        call: Call | None = None
        evaluating = start is not None
        with np.errstate(all="ignore"):
            while True:
                # ---- eval: the value of `expr` in `env`, or push a frame and descend ----
                while evaluating:
                    t = type(expr)
                    if t is Var:
                        value = env.vars.get(expr)
                        if value is None:
                            value = _lookup(expr, env.parent)
                        break
                    if t is Constant:
                        value = expr.data
                        break
                    if t is Call:
                        node = expr
                        callee = node.op
                        ct = type(callee)
                        if ct is Op or ct is Constructor:
                            func = callee
                        elif ct is GlobalVar:
                            func = get_global(callee)
                        elif ct is Var:
                            func = env.vars.get(callee)
                            if func is None:
                                func = _lookup(callee, env.parent)
                        else:
                            push([_ARG, node, env, None, [], -1])
                            expr = callee
                            continue
                        args = node.args
                        n = len(args)
                        values = []
                        i = 0
                        while i < n:  # atomic arguments need no frame
                            a = args[i]
                            at = type(a)
                            if at is Constant:
                                values.append(a.data)
                            elif at is Var:
                                v = env.vars.get(a)
                                values.append(_lookup(a, env.parent) if v is None else v)
                            else:
                                break
                            i += 1
                        if i < n:
                            push([_ARG, node, env, func, values, i])
                            expr = args[i]
                            continue
                        call = node
                        # every argument is known: apply, below
                    elif t is not _ApplyMarker:
                        if t is Let:
                            node = expr
                            var = node.var
                            if var in env.vars:
                                env = env.copy()
                            bound = node.value
                            bt = type(bound)
                            if bt is Constant:
                                env.vars[var] = bound.data
                            elif bt is Function:
                                env.vars[var] = Closure(bound, env)
                            elif bt is Var:
                                v = env.vars.get(bound)
                                env.vars[var] = _lookup(bound, env.parent) if v is None else v
                            else:
                                push([_LET, node, env])
                                expr = bound
                                continue
                            expr = node.body
                            continue
                        if t is GlobalVar:
                            value = get_global(expr)
                            break
                        if t is Function:
                            value = Closure(expr, env)
                            break
                        if t is If:
                            push([_IF, expr, env])
                            expr = expr.cond
                            continue
                        if t is Match:
                            push([_MATCH, expr, env])
                            expr = expr.data
                            continue
                        if t is Tuple:
                            if not expr.fields:
                                value = ()
                                break
                            push([_TUPLE, expr, env, []])
                            expr = expr.fields[0]
                            continue
                        if t is TupleGetItem:
                            push([_PROJ, expr])
                            expr = expr.tuple_value
                            continue
                        if t is Op:
                            value = expr
                            break
                        if t is Constructor:
                            value = expr if expr.inputs else ConstructorValue(expr, ())
                            break
                        if t is RefCreate:
                            push([_REF_CREATE])
                            expr = expr.value
                            continue
                        if t is RefRead:
                            push([_REF_READ, expr])
                            expr = expr.ref
                            continue
                        if t is RefWrite:
                            push([_REF_WRITE, expr, env, None])
                            expr = expr.ref
                            continue
                        raise ExecutionError(
                            f"cannot evaluate a {type(expr).__name__}", getattr(expr, "span", None)
                        )

                    # ---- apply `func` to `values` (`call` is the call node, if any) ----
                    ft = type(func)
                    if ft is Closure:
                        fn = func.func
                        params = fn.params
                        if len(params) != len(values):
                            raise ExecutionError(
                                f"{func!r} takes {len(params)} argument"
                                f"{'s' if len(params) != 1 else ''}, got {len(values)}",
                                _span_of(call),
                            )
                        if len(stack) > limit:
                            raise ExecutionError(
                                f"stack overflow: more than {limit} pending continuation "
                                "frames (unbounded recursion?)",
                                _span_of(call),
                            )
                        calls_left -= 1
                        if calls_left < 0:
                            raise ExecutionError(
                                f"gave up after {self.max_calls} function calls "
                                "(the limit set by max_calls)",
                                _span_of(call),
                            )
                        if func.guard is not False and self._deferred_checks(func, values, call):
                            push([_RESULT, func, values])
                        env = Env(dict(zip(params, values, strict=True)), func.env)
                        expr = fn.body
                        continue
                    if ft is Op:
                        value = call_op(func, values, call)
                        break
                    if ft is Constructor:
                        if len(values) != len(func.inputs):
                            raise ExecutionError(
                                f"constructor {func.name_hint} takes {len(func.inputs)} "
                                f"argument{'s' if len(func.inputs) != 1 else ''}, "
                                f"got {len(values)}",
                                _span_of(call),
                            )
                        value = ConstructorValue(func, tuple(values))
                        break
                    if ft is ConstructorValue and not func.fields and not values:
                        value = func  # a nullary constructor called with no arguments
                        break
                    raise ExecutionError(
                        f"cannot call {describe_value(func)}: it is not a function",
                        _span_of(call),
                    )

                # ---- return: give `value` to the top frame ----
                evaluating = True
                while True:
                    if not stack:
                        return value  # type: ignore[no-any-return]
                    frame = pop()
                    kind = frame[0]
                    if kind == _ARG:
                        node = frame[1]
                        i = frame[5]
                        values = frame[4]
                        if i < 0:
                            frame[3] = value
                        else:
                            values.append(value)
                        i += 1
                        args = node.args
                        n = len(args)
                        fenv = frame[2]
                        while i < n:  # atomic arguments need no frame
                            a = args[i]
                            at = type(a)
                            if at is Constant:
                                values.append(a.data)
                            elif at is Var:
                                v = fenv.vars.get(a)
                                values.append(_lookup(a, fenv.parent) if v is None else v)
                            else:
                                break
                            i += 1
                        if i < n:
                            frame[5] = i
                            push(frame)
                            expr = args[i]
                            env = fenv
                            break
                        func = frame[3]
                        call = node
                        expr = _APPLY_MARK
                        break
                    if kind == _LET:
                        node = frame[1]
                        env = frame[2]
                        env.vars[node.var] = value
                        expr = node.body
                        break
                    if kind == _MATCH:
                        node = frame[1]
                        bindings: list[tuple[Var, Value]] = []
                        for clause in node.clauses:
                            if match_pattern(clause.lhs, value, bindings):
                                break
                            bindings.clear()
                        else:
                            raise self._no_match(node, value)
                        env = frame[2]
                        if bindings:
                            env_vars = env.vars
                            if any(var in env_vars for var, _ in bindings):
                                env = env.copy()
                                env_vars = env.vars
                            for var, v in bindings:
                                env_vars[var] = v
                        expr = clause.rhs
                        break
                    if kind == _IF:
                        node = frame[1]
                        if type(value) is not np.ndarray or value.ndim != 0 or value.dtype != bool:
                            raise ExecutionError(
                                "the condition of an if must be a rank-0 bool tensor, got "
                                + describe_value(value),
                                node.cond.span or node.span,
                            )
                        expr = node.true_branch if value else node.false_branch
                        env = frame[2]
                        break
                    if kind == _TUPLE:
                        node = frame[1]
                        values = frame[3]
                        values.append(value)
                        fields = node.fields
                        if len(values) < len(fields):
                            push(frame)
                            expr = fields[len(values)]
                            env = frame[2]
                            break
                        value = tuple(values)
                    elif kind == _PROJ:
                        node = frame[1]
                        if type(value) is not tuple:
                            raise ExecutionError(
                                f"cannot take field {node.index} of {describe_value(value)}",
                                node.span,
                            )
                        if not 0 <= node.index < len(value):
                            raise ExecutionError(
                                f"field {node.index} out of range for a tuple of "
                                f"{len(value)} field{'s' if len(value) != 1 else ''}",
                                node.span,
                            )
                        value = value[node.index]
                    elif kind == _APPLY:
                        func = frame[1]
                        values = frame[2]
                        call = frame[3]
                        expr = _APPLY_MARK
                        break
                    elif kind == _REF_CREATE:
                        value = RefValue(value)
                    elif kind == _REF_READ:
                        if type(value) is not RefValue:
                            raise ExecutionError(
                                f"ref_read of {describe_value(value)}, not a reference",
                                frame[1].span,
                            )
                        value = value.value
                    elif kind == _RESULT:
                        func = frame[1]
                        check_result(func.func, frame[2], value, _callee_name(func, None))
                    else:  # _REF_WRITE
                        node = frame[1]
                        if frame[3] is None:
                            if type(value) is not RefValue:
                                raise ExecutionError(
                                    f"ref_write to {describe_value(value)}, not a reference",
                                    node.span,
                                )
                            frame[3] = value
                            push(frame)
                            expr = node.value
                            env = frame[2]
                            break
                        frame[3].value = value
                        value = ()


def _callee_name(closure: Closure, call: Call | None) -> str:
    """How run-time type errors name a closure: ``@g``, ``%f`` or "the function"."""
    if closure.global_var is not None:
        return f"@{closure.global_var.name_hint}"
    if call is not None and isinstance(call.op, Var):
        return f"%{call.op.name_hint}"
    return "the function"


def interpret(program: Module | Expr, *args: object, mod: Module | None = None) -> Value:
    """Run ``program`` with the reference interpreter.

    * a :class:`Module`: its ``main`` applied to ``args``;
    * a :class:`Function`: the function applied to ``args`` (the globals it calls come from
      ``mod``);
    * any other expression: its value, applied to ``args`` if any are given.

    The function or expression must be closed: using a variable that is not bound raises
    ExecutionError ("unbound variable %x") when evaluation reaches it, and so does calling a
    global that ``mod`` (by default an empty module) does not define.

    Arguments are checked against the annotated parameter types first
    (:mod:`~relay.backend.interpreter.conform`: ``?`` dimensions accept any size, a shape
    variable must have one size throughout), then converted with
    :func:`~relay.backend.interpreter.values.to_value`
    (Python floats become float32 tensors, ints int32, bools bool). The result is a value:
    a numpy array (0-d for scalars), a tuple, a closure, a constructor value or a reference.
    """
    if isinstance(program, Module):
        interp = Interpreter(program)
        main = interp.global_closure("main")
        check_arguments(main.func, [to_value(a) for a in args], "@main")
        return interp.call(main, args)
    if not isinstance(program, Expr):
        raise TypeError(f"cannot interpret a {type(program).__name__}")
    interp = Interpreter(mod)
    value = interp.evaluate(program)
    if isinstance(program, Function):
        check_arguments(program, [to_value(a) for a in args], "the function")
    if isinstance(program, Function) or args:
        return interp.call(value, args)
    return value
