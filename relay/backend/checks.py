"""``RELAY_CHECKS=1`` for compiled code: every compiled result is compared with the
reference interpreter, and a difference is traced to the first kernel that causes it.

The optimized program is run on the interpreter on the same arguments; if any result differs
(integers and booleans at all; floats beyond ``rtol=1e-4, atol=1e-5`` -- the approximate
exp/tanh of fast math stay far inside that -- and beyond ``rtol`` times the largest
magnitude in the same result: a long float32 sum, as a product of depth 2100, rounds
differently in another order by a few 1e-5 of the sum's terms, which ``rtol`` alone
flagged where the terms cancel, while a wrong kernel is off by much more than that), the graph is replayed step by step: each
kernel is run on the inputs the interpreter's run of the earlier steps produced, and its
outputs are compared with the interpreter's run of its primitive function. The first
kernel that differs is reported with its primitive function's text, as an ExecutionError.
A VM program is run again on a machine that checks each kernel call against the
interpreter's run of its primitive function on the same inputs
(:meth:`relay.backend.vm.VMExecutor.first_bad_kernel`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from relay.errors import ExecutionError

if TYPE_CHECKING:
    from relay.backend.build import Executable

RTOL = 1e-4
ATOL = 1e-5


def _flat(v: Any) -> list[Any]:
    if isinstance(v, tuple | list):
        return [x for f in v for x in _flat(f)]
    return [np.asarray(v)]


def difference(got: Any, expected: Any) -> str | None:
    """A description of how ``got`` differs from ``expected``, or None when they agree."""
    g, e = _flat(got), _flat(expected)
    if len(g) != len(e):
        return f"{len(g)} results instead of {len(e)}"
    for i, (a, b) in enumerate(zip(g, e, strict=True)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"result {i} is {a.dtype}{list(a.shape)}, expected {b.dtype}{list(b.shape)}"
        if b.dtype.kind in "biu":
            bad = a != b
        else:
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            close = np.isclose(a64, b64, rtol=RTOL, atol=ATOL, equal_nan=True)
            finite = np.isfinite(a64) & np.isfinite(b64)
            scale = float(np.max(np.abs(b64[finite]), initial=0.0))
            bad = ~(close | (finite & (np.abs(a64 - b64) <= RTOL * scale)))
        if bad.any():
            where = tuple(int(x) for x in np.argwhere(bad)[0])
            return (
                f"result {i} differs at {list(where)}: {a[where]!s} instead of {b[where]!s} "
                f"({int(bad.sum())} of {bad.size} elements differ)"
            )
    return None


def compare_with_interpreter(exe: Executable, args: tuple[Any, ...], result: Any) -> None:
    """Raise ExecutionError when ``result`` (the compiled run of ``exe`` on ``args``)
    differs from the interpreter's; see the module docstring."""
    expected = exe.interpret(*args)
    why: str | None
    if exe.vm is not None:
        result = _on_host(result)
        from relay.backend.interpreter.values import format_value, values_equal

        if values_equal(result, expected, RTOL, ATOL):
            return
        why = f"{format_value(result, 200)} instead of {format_value(expected, 200)}"
        culprit = exe.vm.first_bad_kernel(args)
    else:
        why = difference(result, expected)
        if why is None:
            return
        culprit = _first_bad_kernel(exe, args)
    raise ExecutionError(
        f"RELAY_CHECKS: the compiled {exe.name} differs from the interpreter: "
        f"{why}" + (f"\n{culprit}" if culprit else "")
    )


def _on_host(value: Any) -> Any:
    """``value`` with its device arrays copied to the host (a GPU program's results)."""
    from relay.backend.device import DeviceArray
    from relay.backend.interpreter.values import ConstructorValue

    if isinstance(value, DeviceArray):
        return value.numpy()
    if type(value) is tuple:
        return tuple(_on_host(v) for v in value)
    if type(value) is ConstructorValue:
        from relay.backend.vm.machine import map_fields

        return map_fields(value, _on_host)
    return value


def _first_bad_kernel(exe: Executable, args: tuple[Any, ...]) -> str | None:
    from relay.backend.build import _is_typed
    from relay.backend.graph_executor import flatten_args, plan_function
    from relay.backend.interpreter import interpret
    from relay.backend.interpreter.values import to_value
    from relay.backend.lower import rebuild_type, static_shape
    from relay.ir.module import Module
    from relay.ir.printer import astext
    from relay.typecheck.checker import infer_type

    graph = exe.graph  # (once: a second tier may replace it meanwhile)
    plan = graph.plan if graph is not None else exe.device_plan
    library = graph.library if graph is not None else exe.library
    assert plan is not None and library is not None
    module = exe.module
    if not _is_typed(module):  # an executable loaded from a file: its program is parsed text
        typed = infer_type(module)
        assert isinstance(typed, Module)
        module = typed
    _, prims = plan_function(module.functions[module.get_global_var(exe.entry.name_hint)])
    values: dict[int, Any] = dict(plan.constants)
    for slot, a in zip(plan.input_slots, flatten_args(args, plan.param_types), strict=True):
        values[slot] = to_value(a)
    kernel_steps = iter(prims)
    for step in plan.steps:
        ins = [values[s] for s in step.inputs]
        if step.is_alias:
            values[step.outputs[0]] = ins[0].reshape(static_shape(plan.slot_types[step.outputs[0]]))
            continue
        prim = next(kernel_steps)
        kernel = library.kernels[step.kernel]
        got = kernel(*ins)
        it = iter(ins)
        params = [rebuild_type(p.checked_type, it) for p in prim.params]
        expected = _flat(interpret(prim, *params))
        why = difference(got, expected)
        if why is not None:
            return f"first differing kernel: {step.kernel}: {why}; its function:\n{astext(prim)}"
        for s, v in zip(step.outputs, expected, strict=True):
            values[s] = v
    return None
