"""Graph drivers: a static plan's kernel calls run by TVM's virtual machine, not by Python.

The graph executor (:mod:`relay.backend.graph_executor`) runs a plan as a Python loop over
its steps, one packed call per kernel, each turning its numpy arguments into DLPack tensors.
Measured alone that is ~4 us a call on mlp_infer_b1; between calls, though, the kernels
stream 7.3 MB of weights through the caches, and the interpreter's code and data come back
from memory every time: the Python around the kernels took 34 us of a 185 us call (2-core
Sapphire Rapids). TVM's ahead-of-time executor (``src/relay/backend/aot_executor_codegen.cc``)
removed that interpretation by generating the graph as code. Generated code costs an LLVM
module, though: a driver of mlp_train_step's 18 kernels as a TIR function took ~50 ms of
compilation, a fifth of the program's cold first call. A *driver* here is instead a function
of the Relax virtual machine's bytecode (``src/runtime/vm``), assembled in ~0.2 ms with
TVM's ``ExecBuilder`` and never compiled:

1. **Arguments.** The driver's registers are the buffers its kernels take, each once, in the
   order of their first use (:func:`driver_arguments`): the program's inputs, the planned
   intermediate buffers (and views of them), the results and the kernels' constants, as the
   executor's own argument tuples number them
   (:func:`relay.backend.graph_executor.kernel_call`). The executor passes the buffers that
   never change as TVM tensors made once, and the inputs and fresh results of each call.
2. **Calls.** Each kernel step is a ``call`` instruction of the kernel by its symbol, which
   the virtual machine resolves once, through its module's imports (the kernel library),
   and calls with the registers, in the plan's order. The function returns nothing.

A call of the driver costs ~0.3 us and ~0.15 us per (tiny) kernel measured alone. With the
lean argument handling of :meth:`relay.backend.graph_executor.GraphExecutor.matched_runner`,
mlp_infer_b1's call went from 0.195-0.200 to 0.184-0.187 ms (runs of the two versions
alternated). Plans with run-time checks keep the Python loop, which reads each kernel's
flags before the next kernel runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NULL = "vm.builtin.null_value"
"""The virtual machine's builtin that makes the driver's (empty) result."""


def driver_arguments(calls: Sequence[tuple[int, ...]]) -> list[int]:
    """The driver's parameters: each slot the kernel calls ``calls`` use, once, in the order
    of first use (slots of the executor's template, as ``kernel_call`` numbers them)."""
    return list(dict.fromkeys(s for args in calls for s in args))


def make_driver(calls: Sequence[tuple[str, tuple[int, ...]]], module: Any) -> tuple[Any, list[int]]:
    """A driver calling the kernels ``calls`` (each kernel's symbol in ``module``, the
    library's TVM module, and its argument slots) in order: the function to call with the
    buffers of the slots it returns second (:func:`driver_arguments`)."""
    from relay.backend.runtime import tvm

    tvm_ = tvm()
    from tvm.relax import VirtualMachine
    from tvm.relax.exec_builder import ExecBuilder

    slots = driver_arguments([args for _, args in calls])
    register = {slot: k for k, slot in enumerate(slots)}
    builder = ExecBuilder()
    with builder.function("main", num_inputs=len(slots)):
        for symbol, args in calls:
            builder.emit_call(symbol, args=[builder.r(register[s]) for s in args])
        result = builder.r(len(slots))
        builder.emit_call(NULL, args=[], dst=result)
        builder.emit_ret(result)
    executable = builder.get()
    executable.mod.import_module(getattr(module, "mod", module))
    machine = VirtualMachine(executable, tvm_.cpu())
    return machine["main"], slots


__all__ = ["driver_arguments", "make_driver"]
