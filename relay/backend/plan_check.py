"""Checking a graph plan read back from disk against its kernels.

A program record in the kernel cache (:mod:`relay.backend.cache`) and a saved executable
(:func:`relay.backend.build.load`) hold a graph plan as JSON: the steps, the kernels each
calls, the slots they read and write, the buffers behind the slots. The checksum of a record
catches damage; this module catches a plan that is well-formed JSON but does not fit its
library (an edited file, a record of another version), which the graph executor would run
past the end of a buffer: a crash, not an error. :func:`check_plan` walks the plan once, as
the executor would run it, checking each step's slots against the types of the kernel it
calls; a failure is a cache miss, or a ``CompileError`` for a saved executable.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from relay.backend.compiler import KernelLibrary
from relay.backend.graph_executor import GraphPlan
from relay.ir.types import TensorType


def check_plan(plan: GraphPlan, library: KernelLibrary) -> None:
    """Raise a ValueError naming the first thing in ``plan``, read back from a program
    record or a saved executable, that does not fit ``library``'s kernels or the plan
    itself, where running it could read or write past the end of a buffer: a slot out of
    range, read before it is written, or written twice; a step whose kernel the library
    lacks, or that passes it other numbers of arguments or sizes than it takes, or slots
    of other dtypes, ranks or sizes than its types'; a reshape that changes the dtype or
    the number of elements; a parameter, constant or storage buffer that does not fit its
    slot; an intermediate result without a buffer. A dimension is compared where it is an
    integer on both sides (a shared kernel's, once its sizes are put in)."""
    from relay.backend.lower import flatten_type
    from relay.backend.runtime import numpy_dtype
    from relay.ir.dim import evaluate, is_symbolic

    types = plan.slot_types

    def slot(s: object) -> int:
        if type(s) is not int or not 0 <= s < len(types):
            raise ValueError(f"the plan has no slot {s!r}")
        return s

    def static(t: TensorType) -> tuple[int, ...] | None:
        shape = tuple(d for d in t.shape if isinstance(d, int))
        return shape if len(shape) == len(t.shape) else None

    itemsize: dict[str, int] = {}

    def nbytes(t: TensorType) -> int:
        shape = static(t)
        assert shape is not None
        dtype = str(t.dtype)
        if dtype not in itemsize:
            itemsize[dtype] = numpy_dtype(dtype).itemsize
        return math.prod(shape) * itemsize[dtype]

    def fits(s: int, want: TensorType, what: str, values: dict[int, int]) -> None:
        t = types[s]
        if t.shape == want.shape and t.dtype == want.dtype:
            return
        shape = []
        for d in want.shape:
            if is_symbolic(d) and values:
                with contextlib.suppress(KeyError, TypeError):  # (a size it is not given)
                    d = evaluate(d, lambda v: values[id(v)])
            shape.append(d)
        if (
            str(t.dtype) != str(want.dtype)
            or len(t.shape) != len(shape)
            or any(
                isinstance(a, int) and isinstance(b, int) and a != b
                for a, b in zip(t.shape, shape, strict=True)
            )
        ):
            raise ValueError(f"{what} is slot {s} of type {t}, not {want}")

    written: set[int] = set()

    def write(s: object, what: str) -> None:
        if slot(s) in written:
            raise ValueError(f"{what} writes slot {s} again")
        written.add(slot(s))

    params = [t for p in plan.param_types for t in flatten_type(p)]
    if len(params) != len(plan.input_slots):
        raise ValueError(f"{len(params)} parameters have {len(plan.input_slots)} slots")
    for k, (s, t) in enumerate(zip(plan.input_slots, params, strict=True)):
        write(s, f"parameter {k}")
        fits(s, t, f"parameter {k}", {})
    for s, data in plan.constants.items():
        write(s, "a constant")
        shape = static(types[s])
        if shape is not None and (data.shape != shape or data.nbytes != nbytes(types[s])):
            raise ValueError(
                f"constant slot {s} of type {types[s]} holds {data.shape} {data.dtype}"
            )
    for k, step in enumerate(plan.steps):
        what = f"step {k} ({step.kernel or 'a reshape'})"
        for s in step.inputs:
            if slot(s) not in written:
                raise ValueError(f"{what} reads slot {s} before it is written")
        for s in step.outputs:
            write(s, what)
        if any(type(v) is not int or not 0 <= v < len(plan.shape_vars) for v in step.sizes):
            raise ValueError(f"{what} passes sizes the plan does not have: {step.sizes}")
        if any(type(v) is not int for v in step.values):
            raise ValueError(f"{what} passes sizes that are not integers: {step.values}")
        if step.is_alias:
            if len(step.inputs) != 1 or len(step.outputs) != 1:
                raise ValueError(f"{what} is not a reshape of one slot into one")
            src, dst = types[step.inputs[0]], types[step.outputs[0]]
            if str(src.dtype) != str(dst.dtype) or (
                static(src) is not None and static(dst) is not None and nbytes(src) != nbytes(dst)
            ):
                raise ValueError(f"{what} makes a {dst} of a {src}")
            continue
        kernel = library.kernels.get(step.kernel)
        if kernel is None:
            raise ValueError(f"{what}: the library has no kernel {step.kernel}")
        takes = len(kernel.inputs) - len(kernel.constants)
        if (len(step.inputs), len(step.outputs)) != (takes, len(kernel.outputs)):
            raise ValueError(
                f"{what} passes {len(step.inputs)} inputs and {len(step.outputs)} outputs to a "
                f"kernel of {takes} and {len(kernel.outputs)}"
            )
        if len(step.sizes) + len(step.values) != len(kernel.shape_vars):
            raise ValueError(f"{what} does not pass its kernel's {len(kernel.shape_vars)} sizes")
        given = kernel.shape_vars[len(step.sizes) :]
        values = {id(v): n for v, n in zip(given, step.values, strict=True)}
        for s, t in zip(step.inputs, kernel.inputs, strict=False):  # (then its constants)
            fits(s, t, f"an input of {what}", values)
        for s, t in zip(step.outputs, kernel.outputs, strict=True):
            fits(s, t, f"an output of {what}", values)
    results = set(_flat_structure(plan.result))
    for s in results:
        if slot(s) not in written:
            raise ValueError(f"the result slot {s} is never written")
    if plan.shape_vars:  # (each instance plans its own memory)
        return
    for s, sid in plan.storage_of.items():
        if type(sid) is not int or not 0 <= sid < len(plan.storage_bytes):
            raise ValueError(f"slot {slot(s)} has no buffer {sid!r}")
        slot(s)
        if plan.storage_bytes[sid] < nbytes(types[s]):
            raise ValueError(
                f"slot {s} of type {types[s]} is given buffer {sid} of "
                f"{plan.storage_bytes[sid]} bytes"
            )
    for step in plan.steps:
        for s in step.outputs:
            if not step.is_alias and s not in results and s not in plan.storage_of:
                raise ValueError(f"slot {s} of {step.kernel} has no buffer")


def _flat_structure(s: Any) -> list[Any]:
    """The slots of a result's structure, in order."""
    if isinstance(s, int):
        return [s]
    if isinstance(s, tuple | list):
        return [x for f in s for x in _flat_structure(f)]
    raise ValueError(f"a result is not a structure of slots: {s!r}")
