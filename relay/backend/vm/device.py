"""The VM on a device: control flow on the host, tensors in the device's memory.

A :class:`DeviceVirtualMachine` runs the same VM code as the CPU's machine
(:mod:`relay.backend.vm.machine`); what changes is where a register's tensor lives:

- **Kernels** run where they were compiled: a GPU kernel on device tensors (a host
  argument is copied to the device first), its outputs from per-shape pools of device
  buffers (reused when nothing but the pool refers to them, as on the CPU); a kernel that
  has no GPU schedule (mixed placement, docs/backend.md) on host copies of its arguments.
- **Control flow stays on the host.** An ``if`` on a condition in device memory copies
  that one value to the host (a synchronization); a scalar computation the VM evaluates in
  Python (loop counters, comparisons) copies its arguments there and keeps its result
  there, to be copied to the device when a kernel needs it.
- What only the host runs (the reference interpreter's fallback, kernels specialized at
  run time for a shape, :mod:`relay.backend.vm.dynamic`, compiled for the host CPU) gets
  host copies of its arguments.
- A program's arguments are copied to the device once, at the call (device arrays and
  other frameworks' GPU tensors are passed as they are); its results are
  :class:`~relay.backend.device.DeviceArray` values, copied out of the machine's pools so
  that a later run never overwrites them. Compiled loops (:mod:`relay.backend.vm.loops`),
  which call kernels from host code, are not used on a GPU.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from relay.backend.compiler import KernelLibrary
from relay.backend.device import (
    Device,
    DeviceArray,
    dlpack_device,
    from_dlpack,
    pooled,
    uploaded,
)
from relay.backend.interpreter.values import ConstructorValue, RefValue
from relay.backend.runtime import ALIGNMENT, as_kernel_array, numpy_dtype, tvm
from relay.backend.target import Target
from relay.backend.vm import VMExecutor
from relay.backend.vm.isa import Opcode, VMProgram
from relay.backend.vm.machine import (
    _IF_ANYWHERE,
    _INVOKE_MANY,
    _RESHAPE_ANYWHERE,
    POOL_DEPTH,
    VirtualMachine,
    VMClosure,
    map_fields,
)
from relay.errors import ExecutionError
from relay.ir.expr import Function


class DeviceVirtualMachine(VirtualMachine):
    """A VM whose kernels run on ``device`` (see the module docstring); one per thread."""

    fast_invoke = False  # every invoke through _invoke_many, which places its arguments

    def __init__(
        self, program: VMProgram, library: KernelLibrary | None, device: Device, **kw: Any
    ) -> None:
        self.device = device
        self._dev = device.tvm_device()
        self.timing_sync = self._dev.sync
        self.sync_runs = False
        """Whether a run waits for the device before it returns (for timing it)."""
        self._device_pools: dict[tuple[tuple[int, ...], str], list[Any]] = {}
        super().__init__(program, library, **kw)
        for linked in self.functions:  # the functions' constants, on the device once
            linked.template = [self.on_device(v) for v in linked.template]

    # -- where values live --------------------------------------------------------------------

    def _aligned(self, tensor: Any) -> Any:
        """``tensor``, or a copy of it on the device where it is not 64-byte aligned (the
        kernels assume aligned buffers: the elementwise ones load 16-byte vectors)."""
        if tensor.data_ptr() % ALIGNMENT == 0:
            return tensor
        copy = tvm().runtime.empty(tuple(tensor.shape), str(tensor.dtype), self._dev)
        copy.copyfrom(tensor)
        return copy

    def on_device(self, value: Any) -> Any:
        """``value`` with its tensors in the device's memory (host arrays copied there)."""
        if type(value) is np.ndarray:
            return uploaded(value, self._dev)
        if type(value) is _View:
            return value.tensor
        if isinstance(value, DeviceArray):
            if value.device != self.device:
                return self.on_device(value.numpy())
            # the machine may keep the tensor (in a closure, a reference) beyond the call:
            # it never goes back to the pool
            value._escaped = True
            return self._aligned(value._tensor)
        if type(value) is tuple:
            return tuple(self.on_device(v) for v in value)
        if type(value) is ConstructorValue:
            return map_fields(value, self.on_device)
        where = dlpack_device(value)
        if where == self.device:
            return self._aligned(from_dlpack(value)._tensor)
        if where is not None:  # another device's array (a CPU tensor of another framework)
            return self.on_device(from_dlpack(value).numpy())
        return value

    def host(self, value: Any) -> Any:
        """``value`` with its tensors in host memory (device tensors copied there)."""
        if type(value) is np.ndarray or value is None or type(value) is VMClosure:
            return value
        if type(value) is _View:
            return value.tensor.numpy()
        if isinstance(value, DeviceArray):
            return value.numpy()
        if dlpack_device(value) is not None:
            return from_dlpack(value).numpy()
        if type(value) is tuple:
            return tuple(self.host(v) for v in value)
        if type(value) is ConstructorValue:
            return map_fields(value, self.host)
        if type(value) is RefValue:
            return value
        if hasattr(value, "_create_view"):  # a TVM tensor
            return value.numpy()
        return value

    def export(self, value: Any) -> Any:
        """A result as the caller gets it: tensors as DeviceArrays of their own (copied out
        of the machine's pools)."""
        if type(value) is np.ndarray:
            value = self.on_device(value)
        if type(value) is _View:
            value = value.tensor
        if hasattr(value, "_create_view"):
            shape = tuple(int(d) for d in value.shape)
            out = pooled(shape, numpy_dtype(str(value.dtype)), self._dev)
            if out.size:
                out._tensor.copyfrom(value)
            return out
        if type(value) is tuple:
            return tuple(self.export(v) for v in value)
        if type(value) is ConstructorValue:
            return map_fields(value, self.export)
        return value

    def reshaped(self, value: Any, shape: tuple[int, ...]) -> Any:
        """``value``'s data in ``shape``: a host array's view, or a device tensor's view
        that keeps the tensor referenced, so that its pool sees it in use."""
        if type(value) is np.ndarray:
            return value.reshape(shape)
        parent = value.parent if type(value) is _View else value
        tensor = value.tensor if type(value) is _View else value
        return _View(tensor._create_view(shape, str(tensor.dtype)), parent)

    # -- linking ------------------------------------------------------------------------------

    def _link(self, ins: tuple[Any, ...]) -> tuple[Any, ...]:
        op = ins[0]
        if op == Opcode.INVOKE:
            return self._link_invoke(ins)
        if op == Opcode.IF:
            return (_IF_ANYWHERE, ins[1], ins[2])
        if op == Opcode.RESHAPE:
            return (_RESHAPE_ANYWHERE, ins[1], ins[2], ins[3])
        return super()._link(ins)

    def _link_invoke(self, ins: tuple[Any, ...]) -> tuple[Any, ...]:
        linked = super()._link(ins)  # (never the single-output fast form: fast_invoke)
        if linked[0] != _INVOKE_MANY:  # a scalar one: evaluated on host copies
            tag, run, getter, dst, many = linked
            host = self.host
            return (
                tag,
                run,
                lambda regs: tuple([host(v) for v in getter(regs)]),
                dst,
                self._placed(many),
            )
        return self._placed(linked)

    def _placed(self, many: tuple[Any, ...]) -> tuple[Any, ...]:
        """An invoke in its general form, with its constants, flags and output pools where
        its kernel runs."""
        tag, kernel, getter, specs, dsts, extra, flags = many
        if kernel.device != self.device.kind:
            return many  # a host kernel (mixed placement): the CPU machine's own
        extra = tuple(self.on_device(np.asarray(c)) for c in extra)
        flags = [self.on_device(f) for f in flags]
        specs = tuple(
            (shape, dtype, None if pool is None else self._device_pool(shape, dtype))
            for shape, dtype, pool in specs
        )
        return (tag, kernel, getter, specs, dsts, extra, flags)

    def _device_pool(self, shape: tuple[int, ...], dtype: Any) -> list[Any]:
        return self._device_pools.setdefault((shape, np.dtype(dtype).str), [])

    # -- running ------------------------------------------------------------------------------

    def _invoke_many(self, ins: tuple[Any, ...], regs: list[Any]) -> None:
        _, kernel, a, specs, dsts, extra, flags = ins
        if kernel.device != self.device.kind:  # on the host, on copies
            args = [as_kernel_array(self.host(v)) for v in a(regs)]
            outs = [self._alloc(shape, dtype, pool) for shape, dtype, pool in specs]
            kernel.func(*args, *extra, *outs, *flags)
            if flags:
                kernel.raise_failed(flags)
        else:
            args = [self.on_device(v) for v in a(regs)]
            outs = [self._alloc_device(shape, dtype, pool) for shape, dtype, pool in specs]
            kernel.func(*args, *extra, *outs, *flags)
            if flags:
                kernel.raise_failed([f.numpy() for f in flags])
        for r, o in zip(dsts, outs, strict=True):
            regs[r] = o

    def _alloc_device(self, shape: tuple[int, ...], dtype: Any, pool: list[Any] | None) -> Any:
        if pool is not None:
            for out in pool:
                if sys.getrefcount(out) == 3:  # the pool, `out` and the argument
                    return out
        out = tvm().runtime.empty(shape, np.dtype(dtype).name, self._dev)
        self.allocations += 1
        if pool is not None and len(pool) < POOL_DEPTH:
            pool.append(out)
        return out

    def _invoke_dynamic(self, ins: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
        return super()._invoke_dynamic(ins, self.host(args))

    def _interpreter(self) -> Any:
        return _HostInterpreter(super()._interpreter(), self)

    def run(self, args: Sequence[Any]) -> Any:
        result = self.export(super().run([self.on_device(a) for a in args]))
        if self.sync_runs:
            self._dev.sync()
        return result

    def call_closure(self, closure: VMClosure, args: list[Any]) -> Any:
        return self.export(super().call_closure(closure, [self.on_device(a) for a in args]))


class _View:
    """A device tensor's reshaped view in a register, with the tensor it shows (which the
    machine's pool may otherwise hand to a later kernel while the view is alive: a view does
    not keep the Python object of its tensor referenced)."""

    __slots__ = ("parent", "tensor")

    def __init__(self, tensor: Any, parent: Any) -> None:
        self.tensor = tensor
        self.parent = parent


class _HostInterpreter:
    """The reference interpreter, called from a device machine on host copies."""

    def __init__(self, interpreter: Any, vm: DeviceVirtualMachine) -> None:
        self.interpreter = interpreter
        self.vm = vm

    def call(self, closure: Any, args: list[Any]) -> Any:
        return self.interpreter.call(closure, [self.vm.host(a) for a in args])


class DeviceVMExecutor(VMExecutor):
    """A VM program whose kernels run on ``device``, callable from any thread: each thread's
    machine is made, and the kernels are looked up, at its first run (on a machine with the
    device)."""

    def __init__(
        self,
        program: VMProgram,
        library: KernelLibrary | None,
        target: Target | None,
        functions: list[Function] | None,
        device: Device,
    ) -> None:
        self.device = device
        host = target.host if target is not None and target.is_gpu else target
        super().__init__(program, None, host, functions)  # (dynamic kernels: the host's)
        self.library = library

    def profile(self, args: Sequence[Any], repeat: int = 10) -> Any:
        vm = self.machine()
        assert isinstance(vm, DeviceVirtualMachine)
        vm.sync_runs = True  # each run timed to the end of its kernels
        try:
            return super().profile(args, repeat)
        finally:
            vm.sync_runs = False

    def new_machine(self, **kw: Any) -> VirtualMachine:
        if not self.device.exists:
            raise ExecutionError(
                f"this program is compiled for {self.device.kind}, and this machine has no "
                f"device {self.device} to run it on"
            )
        if self.library is not None:
            self.library.bind()  # (once: bind looks up only what is missing)
        return DeviceVirtualMachine(
            self.program, self.library, self.device, owner=self.machine, dynamic=self.dynamic, **kw
        )


def device_values(args: Sequence[Any]) -> list[Any]:
    """A device program's arguments as its machine takes them: device arrays (relay's, or
    another framework's GPU tensors) as they are, in tuples too, anything else as a run-time
    value (:func:`~relay.backend.vm.machine.kernel_values`), copied to the device by the
    machine."""
    from relay.backend.vm.machine import kernel_values

    def one(v: Any) -> Any:
        if isinstance(v, DeviceArray) or dlpack_device(v) is not None:
            return v
        if type(v) is tuple:
            return tuple(one(x) for x in v)
        return kernel_values([v])[0]

    return [one(a) for a in args]


def checked_shadow(value: Any) -> Any:
    """A host stand-in for an argument's type check: a device array as a read-only numpy
    array of its shape and dtype that holds no data (nothing is copied)."""
    if isinstance(value, DeviceArray) or dlpack_device(value) is not None:
        shape = tuple(int(d) for d in value.shape)
        dtype = value.dtype if isinstance(value, DeviceArray) else from_dlpack(value).dtype
        return np.broadcast_to(np.zeros((), numpy_dtype(str(dtype))), shape)
    if type(value) is tuple:
        return tuple(checked_shadow(v) for v in value)
    if type(value) is ConstructorValue:
        return map_fields(value, checked_shadow)
    return value


__all__ = ["DeviceVMExecutor", "DeviceVirtualMachine", "checked_shadow", "device_values"]
