"""The virtual machine: compiled execution of programs with control flow, recursion,
closures, data types and references (see docs/vm.md).

:func:`compile_vm` turns a fused module (:func:`relay.backend.build.optimize`) into VM code
(:mod:`relay.backend.vm.codegen`) and a kernel library, with its loops compiled into kernels
of their own (:mod:`relay.backend.vm.loops`); :class:`VMExecutor` runs it, one
:class:`~relay.backend.vm.machine.VirtualMachine` per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relay.backend.compiler import KernelLibrary, compile_functions
from relay.backend.target import Target
from relay.backend.vm.codegen import NotCompilable, generate, prepare
from relay.backend.vm.dynamic import DynamicKernels
from relay.backend.vm.isa import Opcode, VMFunction, VMProgram
from relay.backend.vm.machine import KernelMismatch, VirtualMachine, VMClosure
from relay.errors import ExecutionError
from relay.ir.expr import Function, GlobalVar
from relay.ir.module import Module


class VMExecutor:
    """A VM program with its kernels, callable from any thread."""

    def __init__(
        self,
        program: VMProgram,
        library: KernelLibrary | None,
        target: Target | None = None,
        functions: list[Function] | None = None,
    ) -> None:
        self.program = program
        self.library = library
        self.functions = functions
        """The primitive function of each kernel (for RELAY_CHECKS; not saved)."""
        self.dynamic = DynamicKernels(target)
        """The kernels specialized at run time (:mod:`relay.backend.vm.dynamic`)."""
        if library is not None:
            library.bind()
        self._local = threading.local()

    def machine(self) -> VirtualMachine:
        """This thread's machine."""
        vm: VirtualMachine | None = getattr(self._local, "vm", None)
        if vm is None:
            vm = self._local.vm = self.new_machine()
        return vm

    def new_machine(self, **kw: Any) -> VirtualMachine:
        """A machine for this program (``kw``: :class:`VirtualMachine`'s options)."""
        return VirtualMachine(
            self.program, self.library, owner=self.machine, dynamic=self.dynamic, **kw
        )

    def run(self, args: Sequence[Any]) -> Any:
        """Run the entry function on run-time values."""
        return self.machine().run(args)

    def profile(self, args: Sequence[Any], repeat: int = 10) -> VMProfile:
        """Where a run's time goes: the median run time over ``repeat`` runs, the
        instructions executed per opcode, and per kernel its calls and median time; the
        difference between the run time and the kernels' is the VM's own cost, which
        divided by the instructions executed is its cost per instruction."""
        import statistics
        import time

        vm = self.machine()
        vm.run(args)  # warm: lazily generated code, first allocations
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            vm.run(args)
            runs.append(time.perf_counter() - start)
        counting = self.new_machine(profile=True)
        counting.run(args)
        opcodes = dict(counting.opcode_counts)
        kernel_calls = dict(counting.kernel_calls)
        kernel_runs = []
        for _ in range(repeat):
            counting.kernel_time.clear()
            counting.run(args)
            kernel_runs.append(dict(counting.kernel_time))
        kernel_ms = {
            k: statistics.median(r.get(k, 0.0) for r in kernel_runs) * 1e3 for k in kernel_runs[0]
        }
        return VMProfile(
            statistics.median(runs) * 1e3,
            opcodes,
            {k: (kernel_calls[k], ms) for k, ms in kernel_ms.items()},
        )

    def first_bad_kernel(self, args: Sequence[Any]) -> str | None:
        """Run again checking every kernel call against the interpreter's run of its
        primitive function on the same inputs; the first that differs, described, or None
        (also when the primitive functions are not known, in a loaded program)."""
        if self.functions is None:
            return None
        from relay.backend.vm.machine import kernel_values

        checking = self.new_machine(check=self.functions)
        try:
            checking.run(kernel_values(args))
        except KernelMismatch as bad:
            return str(bad)
        except ExecutionError:
            return None
        return None

    @property
    def kernels(self) -> list[str]:
        """The kernels the program invokes."""
        return list(dict.fromkeys(k.symbol for k in self.program.kernels))


@dataclass
class VMProfile:
    """What :meth:`VMExecutor.profile` measured (times in milliseconds)."""

    run_ms: float
    opcodes: dict[str, int]
    """Instructions executed in one run, per opcode."""
    kernels: dict[str, tuple[int, float]]
    """Per kernel: calls in one run and the median time they took in total."""

    @property
    def instructions(self) -> int:
        """Instructions executed in one run."""
        return sum(self.opcodes.values())

    @property
    def kernel_ms(self) -> float:
        """Time spent in kernels in one run."""
        return sum(ms for _, ms in self.kernels.values())

    @property
    def per_instruction_us(self) -> float:
        """The VM's own time per instruction executed (the run's time less the kernels',
        never below 0: where a compiled loop is nearly all of the run, noise in the two
        measurements could make the difference negative)."""
        return max(0.0, self.run_ms - self.kernel_ms) * 1e3 / max(self.instructions, 1)

    def __str__(self) -> str:
        lines = [
            f"run {self.run_ms:.3f} ms: kernels {self.kernel_ms:.3f} ms, "
            f"{self.instructions} instructions at {self.per_instruction_us:.3f} us each"
        ]
        for name, (calls, ms) in sorted(self.kernels.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"  {name}: {calls} calls, {ms:.3f} ms")
        for op, n in sorted(self.opcodes.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {op}: {n}")
        return "\n".join(lines)


def compile_vm(mod: Module, entry: GlobalVar, target: Target) -> VMExecutor:
    """VM code and kernels for ``entry`` of the fused module ``mod`` (raises
    :class:`NotCompilable` for what the VM does not run yet)."""
    from relay import flags
    from relay.backend.vm.loops import compile_loops, find_loops

    prepared = prepare(mod)
    program, prims = generate(prepared, prepared.get_global_var(entry.name_hint))
    library = None
    if prims:
        library, symbols = compile_functions(prims, target)
        for call, symbol in zip(program.kernels, symbols, strict=True):
            call.symbol = symbol
        # (a compiled loop calls its kernels from host code: not for a GPU's kernels)
        native = flags.get().native_loops and not target.is_gpu
        plans = find_loops(program, prims) if native else []
        if plans:
            library = compile_loops(program, plans, library, target)
    if target.is_gpu:
        from relay.backend.device import Device
        from relay.backend.vm.device import DeviceVMExecutor

        return DeviceVMExecutor(program, library, target, prims, Device("cuda"))
    return VMExecutor(program, library, target, prims)


__all__ = [
    "NotCompilable",
    "Opcode",
    "VMClosure",
    "VMExecutor",
    "VMFunction",
    "VMProfile",
    "VMProgram",
    "VirtualMachine",
    "compile_vm",
]
