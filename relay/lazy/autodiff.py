"""``relay.lazy.grad`` and ``relay.lazy.value_and_grad``: derivatives of numpy-style code.

The function is run once on lazy tensors standing for the arguments being differentiated
(fresh data nodes holding their values); what it records is the trace of its result, a
function of those arguments and of the other data it read. That trace is lowered to a
relay function whose first parameters are the differentiated arguments and differentiated
by relay's AD pass (:func:`relay.passes.gradient.gradient`), then compiled and cached like
any trace: a second call with arguments of the same types reuses the compiled gradient.
This is HIPS autograd's interface (``grad(f)(x)`` for ``f`` written against numpy), with
the derivative computed by a compiler pass instead of a tape walked in Python.

The function must be *traceable*: no barrier while it runs (reading a value with
``float()``, ``bool()`` for an ``if``, a numpy fallback), since a computed value is data
the gradient cannot flow through; such a barrier is a :class:`LazyError` naming the line.
Python control flow on shapes and on Python values is fine: it only decides what is
recorded.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from relay.ir.expr import Function, TupleGetItem
from relay.lazy import ops
from relay.lazy.barrier import Trace, collect, lower
from relay.lazy.metrics import METRICS, RECOMPILES
from relay.lazy.tensor import Tensor
from relay.lazy.trace import (
    CONFIG,
    STATE,
    LazyError,
    Node,
    copied_node,
    data_node,
    record,
    user_line,
)

_CACHE: dict[Any, Any] = {}
"""Compiled gradients, by trace structure, parameter types and how many are differentiated."""


def value_and_grad(
    f: Callable[..., Any], argnums: int | Sequence[int] = 0
) -> Callable[..., tuple[Tensor, Any]]:
    """A function returning ``(f(*args), gradient)``: the gradient of ``f``'s scalar
    floating-point result with respect to argument ``argnums`` (a tuple of gradients when
    ``argnums`` is a sequence). Arguments are numpy arrays, lazy tensors or numbers;
    the results are lazy tensors."""
    single = isinstance(argnums, int)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> tuple[Tensor, Any]:
        value, grads = _differentiate(f, args, kwargs, nums)
        return value, grads[0] if single else grads

    return run


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """A function returning the gradient of ``f`` (see :func:`value_and_grad`)."""
    both = value_and_grad(f, argnums)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        return both(*args, **kwargs)[1]

    return run


def _differentiate(
    f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], nums: tuple[int, ...]
) -> tuple[Tensor, tuple[Tensor, ...]]:
    n = len(args)
    for i in nums:
        if not -n <= i < n:
            raise LazyError(f"argnums {i} is out of range for {n} arguments")
    nums = tuple(i % n for i in nums)
    call_args = list(args)
    inputs: list[Node] = []
    for i in nums:
        a = args[i]
        arr = ops.value(a, "grad input") if isinstance(a, Tensor) else np.asarray(a)
        if not np.issubdtype(arr.dtype, np.floating):
            raise LazyError(f"grad: argument {i} must be floating point, got {arr.dtype}", None)
        node = data_node(arr) if isinstance(a, Tensor) else copied_node(arr)
        inputs.append(node)
        call_args[i] = Tensor(node)
    STATE.tracing += 1
    try:
        out = f(*call_args, **kwargs)
    finally:
        STATE.tracing -= 1
    if not isinstance(out, Tensor) and np.ndim(out) == 0 and isinstance(out, float | np.floating):
        out = Tensor(copied_node(out))  # computed without the inputs
    if not isinstance(out, Tensor) or out.shape != () or not np.issubdtype(out.dtype, np.floating):
        what = f"a {type(out).__name__}" if not isinstance(out, Tensor) else f"{out.type}"
        raise LazyError(f"grad: the function must return a floating-point scalar, got {what}")
    trace = _trace(out.node, inputs)
    structure = trace.structure()
    types = trace.param_types()
    key = (structure, types, len(inputs))
    exe = _CACHE.get(key)
    if exe is None:
        exe = _compile(trace, len(inputs))
        _CACHE[key] = exe
    else:
        METRICS.cache_hits += 1
    start = time.perf_counter()
    value, grads = exe(*[p.value for p in trace.params])
    METRICS.execute_time += time.perf_counter() - start
    METRICS.traces_run += 1
    METRICS.record_size(len(trace.ops))
    return Tensor(data_node(value)), tuple(Tensor(data_node(g)) for g in grads)


def _trace(out: Node, inputs: list[Node]) -> Trace:
    """The trace of ``out`` whose first parameters are ``inputs`` (read or not)."""
    if out.value is not None:  # the result does not depend on anything pending
        out = record("copy", (out,))
    trace = collect([out])
    first = {n.id for n in inputs}
    rest = [p for p in trace.params if p.id not in first]
    params = [*inputs, *rest]
    index = {**trace.index, **{p.id: ("p", i) for i, p in enumerate(params)}}
    return Trace(trace.ops, params, trace.outputs, index)


def _compile(trace: Trace, k: int) -> Any:
    import relay
    from relay.passes.gradient import gradient

    METRICS.cache_misses += 1
    RECOMPILES.append(
        f"compile {METRICS.traces_compiled + 1} (grad at {user_line()}): gradient of "
        f"{len(trace.ops)} operations with respect to {k} inputs"
    )
    start = time.perf_counter()
    func = lower(trace)
    loss = Function(func.params, TupleGetItem(func.body, 0))
    derived = gradient(loss, argnums=tuple(range(k)))
    exe = relay.build(derived, target=CONFIG.target)
    METRICS.compile_time += time.perf_counter() - start
    METRICS.traces_compiled += 1
    return exe
