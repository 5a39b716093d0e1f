"""The graph executor on a device: a :class:`~relay.backend.graph_executor.GraphPlan` run
with its buffers in the device's memory.

The plan is the one the CPU's graph executor runs (slots, steps, the memory plan of the
intermediate buffers), and so are its rules; what changes is where the bytes are:

- the storage buffers of the memory plan, the program's constants and the constants its
  kernels took out are allocated and copied to the device once, when the executor is made;
- an argument already in the device's memory (a :class:`~relay.backend.device.DeviceArray`,
  or another framework's array, shared through DLPack) is passed as it is; anything else is
  checked and copied into a staging buffer of its slot (one host-to-device copy);
- each result is a fresh :class:`~relay.backend.device.DeviceArray` from the device's pool,
  left on the device; a result that is an argument or a constant is copied on the device;
- kernels are launched in order on the device's default stream and the call returns without
  waiting for them; only a kernel's run-time checks (bounds of ``take``, for instance) are
  read back to the host, after that kernel.

A plan of symbolic sizes runs the same way through
:class:`~relay.backend.graph_executor.SymbolicGraphExecutor`, one device executor per size.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from relay.backend.compiler import KernelLibrary
from relay.backend.device import (
    Device,
    DeviceArray,
    _pool,
    dlpack_device,
    from_dlpack,
    pooled,
    uploaded,
)
from relay.backend.graph_executor import (
    GraphPlan,
    SymbolicGraphExecutor,
    _build,
    _convert,
    _flat,
    alias_root,
    alias_step,
    kernel_call,
)
from relay.backend.lower import static_shape
from relay.backend.runtime import ALIGNMENT, as_kernel_array, numpy_dtype, tvm
from relay.errors import TypeCheckError


class DeviceGraphExecutor:
    """Runs a static :class:`GraphPlan` with the kernels of a :class:`KernelLibrary` on
    ``device`` (see the module docstring)."""

    def __init__(
        self, plan: GraphPlan, library: KernelLibrary, device: Device, sizes: Sequence[int] = ()
    ) -> None:
        self.plan = plan
        self.library = library
        self.device = device
        library.bind()
        dev = self._dev = device.tvm_device()
        self._host = tvm().cpu(0)
        self.host_kernels: list[str] = []
        """The kernels that run on the host, in the order of the steps (see
        :class:`_HostStep`)."""
        rt = tvm().runtime
        slot_types = plan.slot_types
        self._dtypes = [numpy_dtype(str(t.dtype)) for t in slot_types]
        self._shapes = [static_shape(t) for t in slot_types]
        storage = [rt.empty((max(n, 1),), "uint8", dev) for n in plan.storage_bytes]
        template: list[Any] = [None] * len(slot_types)
        for slot, sid in plan.storage_of.items():
            template[slot] = storage[sid]._create_view(
                self._shapes[slot], str(slot_types[slot].dtype)
            )
        for slot, data in plan.constants.items():
            template[slot] = uploaded(data, dev)
        self._storage = storage
        # (kernel, argument slots, checks (kernel, flags)), or for a reshape of a value that
        # changes from call to call (None, (source, target), shape)
        self._steps: list[tuple[Any, tuple[int, ...], Any]] = []
        root = alias_root(plan)
        for step in plan.steps:
            if step.is_alias:
                shape = self._shapes[step.outputs[0]]
                run = alias_step(
                    plan, root, step, template, shape, lambda t, s: t._create_view(s, str(t.dtype))
                )
                if run is not None:
                    self._steps.append(run)
                continue
            kernel = library.kernels[step.kernel]
            if kernel.device == device.kind and all(0 in self._shapes[o] for o in step.outputs):
                # nothing to compute (a plan of symbolic sizes run at a zero size): no launch,
                # as a kernel of static zero-size tensors has none (docs/backend.md)
                self._steps.append((_NOTHING, (), None))
                continue
            # a kernel without a GPU schedule runs on the host (mixed placement): its
            # constants and flags live there, its inputs and outputs are copied
            on_host = kernel.device != device.kind
            where = self._host if on_host else dev
            args, checked = kernel_call(
                step,
                kernel,
                template,
                functools.partial(_uploaded_to, where),
                functools.partial(uploaded, np.zeros((1,), np.int32), where),
                sizes,
            )
            if on_host:
                func = _HostStep(
                    kernel.func,
                    args,
                    {i: self._host_buffer(i, slot_types) for i in step.inputs},
                    {i: self._host_buffer(i, slot_types) for i in step.outputs},
                )
                self.host_kernels.append(step.kernel)
                self._steps.append((func, (), checked))
                continue
            self._steps.append((kernel.func, args, checked))
        self._template = template
        self._inputs = [(slot, self._shapes[slot], self._dtypes[slot]) for slot in plan.input_slots]
        self._staging: dict[int, Any] = {}
        results = _flat(plan.result)
        written = {s for step in plan.steps for s in step.outputs}
        self._pool = _pool(dev)
        # (slot, the pool's key, dtype): each result a tensor of its own from the pool
        self._fresh = [
            (s, (self._shapes[s], str(slot_types[s].dtype)), self._dtypes[s])
            for s in dict.fromkeys(results)
            if s in written
        ]
        self._copied = [s for s in dict.fromkeys(results) if s not in written]
        self._lock = threading.Lock()

    def _host_buffer(self, slot: int, slot_types: Sequence[Any]) -> Any:
        shape = self._shapes[slot]
        return tvm().runtime.empty(shape, str(slot_types[slot].dtype), self._host)

    def _argument(self, slot: int, shape: tuple[int, ...], dtype: Any, a: Any, what: str) -> Any:
        """The tensor a kernel reads for argument ``a`` of slot ``slot``."""
        if (
            type(a) is DeviceArray
            and a._pool is not None  # (relay's own memory: aligned and contiguous)
            and a._shape == shape
            and a._dtype == dtype
            and a.device == self.device
        ):
            return a._tensor
        if isinstance(a, DeviceArray):
            if a.device != self.device:  # checked and copied, as a host array
                return self._stage(slot, _convert(a.numpy(), shape, dtype, what))
            tensor = a._tensor
        elif dlpack_device(a) == self.device:
            tensor = from_dlpack(a)._tensor
        elif dlpack_device(a) is not None:  # another device's array: through the host
            return self._stage(slot, _convert(from_dlpack(a).numpy(), shape, dtype, what))
        else:
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                a = _convert(a, shape, dtype, what)
            return self._stage(slot, a)
        got_shape = tuple(int(d) for d in tensor.shape)
        got_dtype = numpy_dtype(str(tensor.dtype))
        if got_shape != shape or got_dtype != dtype:
            expected = f"Tensor[{shape if len(shape) != 1 else f'({shape[0]},)'}, {dtype.name}]"
            raise TypeCheckError(
                f"{what}: expected an argument of type {expected}, got a device array of "
                f"shape {got_shape} and dtype {got_dtype.name}"
            )
        if not tensor.is_contiguous():
            raise TypeCheckError(f"{what}: a device argument must be contiguous")
        if tensor.data_ptr() % ALIGNMENT:  # the kernels assume aligned buffers
            buf = self._staging.get(slot)
            if buf is None:
                buf = self._staging[slot] = tvm().runtime.empty(shape, str(tensor.dtype), self._dev)
            buf.copyfrom(tensor)
            return buf
        return tensor

    def _stage(self, slot: int, a: Any) -> Any:
        """Host array ``a`` copied into the slot's staging buffer on the device."""
        buf = self._staging.get(slot)
        if buf is None:  # (sized by the slot: the argument was checked against it)
            buf = self._staging[slot] = tvm().runtime.empty(
                self._shapes[slot], _dtype_name(self._dtypes[slot]), self._dev
            )
        if a.size:
            buf.copyfrom(as_kernel_array(np.asarray(a)))
        return buf

    def run_flat(self, flat: Sequence[Any], what: str = "the function") -> Any:
        """Run on flattened arguments; the result in the program's structure, as
        :class:`DeviceArray` values."""
        slots = list(self._template)
        out: dict[int, DeviceArray] = {}
        with self._lock:
            for (slot, shape, dtype), a in zip(self._inputs, flat, strict=True):
                slots[slot] = self._argument(slot, shape, dtype, a, what)
            pool = self._pool
            for slot, key, dtype in self._fresh:
                tensor = slots[slot] = pool.take(key)
                out[slot] = DeviceArray(tensor, pool, key, dtype)
            for func, idx, checked in self._steps:
                if func is None:
                    src = slots[idx[0]]
                    slots[idx[1]] = src._create_view(checked, str(src.dtype))
                    continue
                if idx:
                    func(*[slots[i] for i in idx])
                else:
                    func.run(slots)
                if checked is not None:
                    checked[0].raise_failed([f.numpy() for f in checked[1]])
            for s in self._copied:  # (inside the lock: an argument may be in staging)
                src = slots[s]
                shape = tuple(int(d) for d in src.shape)
                arr = pooled(shape, numpy_dtype(str(src.dtype)), self._dev)
                if arr.size:
                    arr._tensor.copyfrom(src)
                out[s] = arr
        results: list[Any] = list(slots)
        for s, arr in out.items():
            results[s] = arr
        return _build(self.plan.result, results)

    def profile(self, flat: Sequence[Any], repeat: int = 10) -> list[tuple[str, float]]:
        """Each kernel's median time in milliseconds over ``repeat`` runs, each launch
        timed to the device's completion of it (so launches do not overlap as they do in a
        plain call)."""
        import time

        self.run_flat(flat)  # staging, first launches and module loading out of the way
        slots = list(self._template)
        times: list[list[float]] = [[] for _ in self._steps]
        with self._lock:
            for (slot, shape, dtype), a in zip(self._inputs, flat, strict=True):
                slots[slot] = self._argument(slot, shape, dtype, a, "profile")
            keep = [pooled(key[0], dtype, self._dev) for _, key, dtype in self._fresh]
            for (slot, _, _), arr in zip(self._fresh, keep, strict=True):
                slots[slot] = arr._tensor
            self._dev.sync()
            for _ in range(repeat):
                for k, (func, idx, shape) in enumerate(self._steps):
                    if func is None:
                        src = slots[idx[0]]
                        slots[idx[1]] = src._create_view(shape, str(src.dtype))
                        continue
                    args = [slots[i] for i in idx]
                    start = time.perf_counter()
                    if idx:
                        func(*args)
                    else:
                        func.run(slots)  # (with its copies)
                    self._dev.sync()
                    times[k].append(time.perf_counter() - start)
        kernels = [s for s in self.plan.steps if not s.is_alias]
        return [
            (step.kernel, sorted(t)[len(t) // 2] * 1e3)
            for step, t in zip(kernels, [t for t in times if t], strict=True)
        ]


class _Nothing:
    """A step with nothing to compute (its results have no elements)."""

    def run(self, slots: list[Any]) -> None:
        pass


_NOTHING = _Nothing()


class _HostStep:
    """A host kernel's step in a device program: its device inputs copied to host buffers,
    the kernel run there, its outputs copied back (each copy waits for the device)."""

    def __init__(
        self, func: Any, args: tuple[int, ...], ins: dict[int, Any], outs: dict[int, Any]
    ) -> None:
        self.func, self.args, self.ins, self.outs = func, args, ins, outs
        # the copies worth making (a buffer without elements has nothing to move)
        self.copy_in = [(i, buf) for i, buf in ins.items() if _size(buf)]
        self.copy_out = [(i, buf) for i, buf in outs.items() if _size(buf)]

    def run(self, slots: list[Any]) -> None:
        for i, buf in self.copy_in:
            slots[i].copyto(buf)
        self.func(*[self.ins.get(i, self.outs.get(i, slots[i])) for i in self.args])
        for i, buf in self.copy_out:
            slots[i].copyfrom(buf)


def _size(t: Any) -> int:
    return int(np.prod([int(d) for d in t.shape], dtype=np.int64))


def _uploaded_to(dev: Any, a: Any) -> Any:
    return uploaded(a, dev)


def _dtype_name(dtype: Any) -> str:
    return str(np.dtype(dtype))


def device_executor(
    plan: GraphPlan, library: KernelLibrary, device: Device
) -> DeviceGraphExecutor | SymbolicGraphExecutor:
    """The executor of ``plan`` on ``device``: of symbolic sizes or not."""
    if plan.shape_vars:
        return SymbolicGraphExecutor(
            plan,
            library,
            make=lambda p, sizes, _shared: DeviceGraphExecutor(p, library, device, sizes),
        )
    return DeviceGraphExecutor(plan, library, device)


__all__ = ["DeviceGraphExecutor", "device_executor"]
