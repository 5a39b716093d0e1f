"""The virtual machine: compiled execution of programs with control flow, recursion,
closures, data types and references (see docs/vm.md).

:func:`compile_vm` turns a fused module (:func:`relay.backend.build.optimize`) into VM code
(:mod:`relay.backend.vm.codegen`) and a kernel library; :class:`VMExecutor` runs it, one
:class:`~relay.backend.vm.machine.VirtualMachine` per thread.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from relay.backend.compiler import KernelLibrary, compile_functions
from relay.backend.target import Target
from relay.backend.vm.codegen import NotCompilable, generate, prepare
from relay.backend.vm.isa import Opcode, VMFunction, VMProgram
from relay.backend.vm.machine import VirtualMachine, VMClosure
from relay.ir.expr import GlobalVar
from relay.ir.module import Module


class VMExecutor:
    """A VM program with its kernels, callable from any thread."""

    def __init__(self, program: VMProgram, library: KernelLibrary | None) -> None:
        self.program = program
        self.library = library
        if library is not None:
            library.bind()
        self._local = threading.local()

    def machine(self) -> VirtualMachine:
        """This thread's machine."""
        vm: VirtualMachine | None = getattr(self._local, "vm", None)
        if vm is None:
            vm = self._local.vm = VirtualMachine(self.program, self.library)
        return vm

    def run(self, args: Sequence[Any]) -> Any:
        """Run the entry function on run-time values."""
        return self.machine().run(args)

    @property
    def kernels(self) -> list[str]:
        """The kernels the program invokes."""
        return list(dict.fromkeys(k.symbol for k in self.program.kernels))


def compile_vm(mod: Module, entry: GlobalVar, target: Target) -> VMExecutor:
    """VM code and kernels for ``entry`` of the fused module ``mod`` (raises
    :class:`NotCompilable` for what the VM does not run yet)."""
    prepared = prepare(mod)
    program, prims = generate(prepared, prepared.get_global_var(entry.name_hint))
    library = None
    if prims:
        library, symbols = compile_functions(prims, target)
        for call, symbol in zip(program.kernels, symbols, strict=True):
            call.symbol = symbol
    return VMExecutor(program, library)


__all__ = [
    "NotCompilable",
    "Opcode",
    "VMClosure",
    "VMExecutor",
    "VMFunction",
    "VMProgram",
    "VirtualMachine",
    "compile_vm",
]
