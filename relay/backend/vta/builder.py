"""Building VTA instruction streams: micro-kernels, 2D DMA, dependency tokens, synchronization.

VTA's three modules (load, compute, store) each run their own FIFO queue of instructions and
synchronize only through four one-bit token queues (``l2g``, ``g2l``, ``s2g``, ``g2s``; see
/work/shared/specs/vta-isa.md, section 1). A program is correct when every read of an
on-chip buffer is ordered after the write it needs, and every write after the reads of the
value it replaces, by a chain of tokens. :class:`StreamBuilder` writes such programs; it plays
the part of TVM's VTA runtime (``vta/runtime/runtime.cc``: ``InsnQueue``, ``UopKernel``,
``DepPush``/``DepPop``, ``PushNoop``, ``Synchronize``), with our own interface:

* :meth:`StreamBuilder.push` ``(src, dst)`` sends a token from module ``src`` to ``dst``
  *after* everything ``src`` has been given so far: it sets the push flag of ``src``'s most
  recent instruction, or, when that instruction already pushes that way (or ``src`` has
  none), adds a no-op that carries the push (a LOAD or STORE of ``x_size`` 0; on the compute
  module a LOAD UOP of size 0, as the runtime does).
* :meth:`StreamBuilder.pop` ``(src, dst)`` makes the *next* instruction given to ``dst`` wait
  for a token from ``src`` (a second pop of the same direction before that instruction goes
  on a no-op of its own).
* Micro-op kernels (:meth:`StreamBuilder.kernel`) are deduplicated and laid out in one uop
  array, which :meth:`StreamBuilder.finish` loads with a single LOAD UOP at the start of the
  compute queue (the array must fit the uop buffer).
* :meth:`StreamBuilder.finish` ends the stream as the runtime's ``Synchronize`` does: tokens
  from the store and load modules to compute, popped by a compute no-op, then FINISH.

Which flag a token uses depends on the module that executes the instruction (pipeline order
load < compute < store): a LOAD INP/WGT pops ``g2l`` with ``pop_next`` and pushes ``l2g`` with
``push_next``; a compute instruction pops ``l2g``/``s2g`` with ``pop_prev``/``pop_next`` and
pushes ``g2l``/``g2s`` with ``push_prev``/``push_next``; a STORE pops ``g2s`` with
``pop_prev`` and pushes ``s2g`` with ``push_prev``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from relay.backend.vta.isa import (
    DEFAULT,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Insn,
    MemId,
    MemInsn,
    Module,
    Opcode,
    Uop,
    VTAConfig,
    module_of,
    validate,
)
from relay.errors import VTAError


def _flag(module: Module, other: Module, action: str) -> str:
    """The instruction flag with which ``module`` does ``action`` (push/pop) toward ``other``."""
    if abs(module - other) != 1:
        raise VTAError(f"no token queue between the {module.name} and {other.name} modules")
    return f"{action}_{'next' if other > module else 'prev'}"


@dataclass(frozen=True)
class Program:
    """A finished instruction stream and the micro-op array its first instruction loads
    from DRAM (at uop element ``uop_base``, 4-byte elements)."""

    insns: tuple[Insn, ...]
    uops: tuple[Uop, ...]
    uop_base: int
    config: VTAConfig = DEFAULT

    def count(self, opcode: Opcode) -> int:
        """How many instructions have ``opcode``."""
        return sum(1 for i in self.insns if i.opcode == opcode)

    def relocated(self, uop_base: int) -> Program:
        """The program with its micro-op array at DRAM uop element ``uop_base``."""
        if not self.uops:
            return dataclasses.replace(self, uop_base=uop_base)
        first = self.insns[0]
        assert isinstance(first, MemInsn) and first.memory_type == MemId.UOP
        moved = dataclasses.replace(first, dram_base=uop_base)
        validate(moved, self.config, where="the uop array's LOAD")
        return dataclasses.replace(self, insns=(moved, *self.insns[1:]), uop_base=uop_base)


@dataclass
class StreamBuilder:
    """Writes one VTA program (see the module docstring). ``uop_base`` is where the program's
    micro-op array will sit in DRAM, in uop elements."""

    uop_base: int = 0
    config: VTAConfig = DEFAULT
    insns: list[Insn] = field(default_factory=list)
    uops: list[Uop] = field(default_factory=list)
    _kernels: dict[tuple[Uop, ...], tuple[int, int]] = field(default_factory=dict)
    _last: dict[Module, int] = field(default_factory=dict)
    _pending: dict[Module, set[str]] = field(default_factory=dict)
    _finished: bool = False

    # -- instructions ----------------------------------------------------------------------

    def emit(self, insn: Insn) -> Insn:
        """Append ``insn``, with the pops pending for its module (see :meth:`pop`)."""
        if self._finished:
            raise VTAError("the program is finished: no instruction can follow FINISH")
        module = module_of(insn)
        pending = self._pending.pop(module, set())
        if pending:
            insn = dataclasses.replace(insn, **{flag: True for flag in pending})  # type: ignore[arg-type]
        validate(insn, self.config, where=f"instruction {len(self.insns)}")
        self._last[module] = len(self.insns)
        self.insns.append(insn)
        return insn

    def load(
        self,
        memory_type: MemId,
        sram_base: int,
        dram_base: int,
        y_size: int,
        x_size: int,
        x_stride: int,
        pad: tuple[int, int, int, int] = (0, 0, 0, 0),
    ) -> Insn:
        """A 2D LOAD of ``y_size`` rows of ``x_size`` elements (rows ``x_stride`` elements
        apart in DRAM) into the buffer of ``memory_type`` at ``sram_base``, with zero padding
        ``pad = (top, bottom, left, right)``; the buffer receives ``(top + y_size + bottom)``
        dense rows of ``(left + x_size + right)`` elements."""
        y0, y1, x0, x1 = pad
        return self.emit(
            MemInsn(
                Opcode.LOAD,
                memory_type,
                sram_base,
                dram_base,
                y_size,
                x_size,
                x_stride,
                y0,
                y1,
                x0,
                x1,
            )
        )

    def store(
        self, sram_base: int, dram_base: int, y_size: int, x_size: int, x_stride: int
    ) -> Insn:
        """A 2D STORE of the dense ``y_size x x_size`` accumulator elements at ``sram_base``
        (each lane wrapped to int8) to DRAM rows ``x_stride`` output elements apart."""
        return self.emit(
            MemInsn(Opcode.STORE, MemId.OUT, sram_base, dram_base, y_size, x_size, x_stride)
        )

    def kernel(self, uops: Sequence[Uop]) -> tuple[int, int]:
        """The ``(uop_bgn, uop_end)`` of the micro-kernel ``uops`` in the program's uop array
        (equal kernels share their place)."""
        key = tuple(uops)
        if not key:
            raise VTAError("a micro-kernel needs at least one uop")
        found = self._kernels.get(key)
        if found is None:
            found = (len(self.uops), len(self.uops) + len(key))
            if found[1] > self.config.uop_depth:
                raise VTAError(
                    f"the program's micro-kernels need {found[1]} uops; the uop buffer holds "
                    f"{self.config.uop_depth}"
                )
            self.uops.extend(key)
            self._kernels[key] = found
        return found

    def gemm(
        self,
        uops: Sequence[Uop],
        loops: tuple[int, int] = (1, 1),
        dst: tuple[int, int] = (0, 0),
        src: tuple[int, int] = (0, 0),
        wgt: tuple[int, int] = (0, 0),
        reset: bool = False,
    ) -> Insn:
        """A GEMM running the micro-kernel ``uops`` in the loop nest ``loops = (iter_out,
        iter_in)``; ``dst``, ``src`` and ``wgt`` are each index's ``(factor_out,
        factor_in)``. ``reset`` zeroes the destination rows instead."""
        bgn, end = self.kernel(uops)
        return self.emit(
            GemmInsn(
                reset_reg=reset,
                uop_bgn=bgn,
                uop_end=end,
                iter_out=loops[0],
                iter_in=loops[1],
                dst_factor_out=dst[0],
                dst_factor_in=dst[1],
                src_factor_out=src[0],
                src_factor_in=src[1],
                wgt_factor_out=wgt[0],
                wgt_factor_in=wgt[1],
            )
        )

    def alu(
        self,
        op: AluOp,
        uops: Sequence[Uop],
        loops: tuple[int, int] = (1, 1),
        dst: tuple[int, int] = (0, 0),
        src: tuple[int, int] = (0, 0),
        imm: int | None = None,
    ) -> Insn:
        """An ALU instruction: ``acc[dst] = op(acc[dst], imm if imm is not None else
        acc[src])`` over the loop nest, as :meth:`gemm`."""
        bgn, end = self.kernel(uops)
        return self.emit(
            AluInsn(
                alu_opcode=op,
                uop_bgn=bgn,
                uop_end=end,
                iter_out=loops[0],
                iter_in=loops[1],
                dst_factor_out=dst[0],
                dst_factor_in=dst[1],
                src_factor_out=src[0],
                src_factor_in=src[1],
                use_imm=imm is not None,
                imm=0 if imm is None else imm,
            )
        )

    # -- dependency tokens -----------------------------------------------------------------

    def push(self, src: Module, dst: Module) -> None:
        """A token from ``src`` to ``dst``, sent once ``src`` has done everything given to it
        so far."""
        flag = _flag(src, dst, "push")
        last = self._last.get(src)
        if last is not None and not getattr(self.insns[last], flag):
            self.insns[last] = dataclasses.replace(self.insns[last], **{flag: True})  # type: ignore[arg-type]
            return
        self.emit(dataclasses.replace(self._noop(src), **{flag: True}))  # type: ignore[arg-type]

    def pop(self, src: Module, dst: Module) -> None:
        """Make the next instruction given to ``dst`` wait for a token from ``src``."""
        flag = _flag(dst, src, "pop")
        pending = self._pending.setdefault(dst, set())
        if flag in pending:  # one pop per direction and instruction: the first on a no-op
            self.emit(self._noop(dst))
            pending = self._pending.setdefault(dst, set())
        pending.add(flag)

    def _noop(self, module: Module) -> MemInsn:
        if module == Module.STORE:
            return MemInsn(Opcode.STORE, MemId.OUT)
        return MemInsn(Opcode.LOAD, MemId.INP if module == Module.LOAD else MemId.UOP)

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> Program:
        """The finished program: the uop array's LOAD first, then the stream, then the
        synchronization and FINISH (see the module docstring)."""
        self.push(Module.STORE, Module.COMPUTE)
        self.push(Module.LOAD, Module.COMPUTE)
        self.pop(Module.STORE, Module.COMPUTE)
        self.pop(Module.LOAD, Module.COMPUTE)
        self.emit(self._noop(Module.COMPUTE))
        self.emit(FinishInsn())
        self._finished = True
        insns = list(self.insns)
        if self.uops:
            load_uops = MemInsn(
                Opcode.LOAD, MemId.UOP, 0, self.uop_base, 1, len(self.uops), len(self.uops)
            )
            validate(load_uops, self.config, where="the uop array's LOAD")
            insns.insert(0, load_uops)
        return Program(tuple(insns), tuple(self.uops), self.uop_base, self.config)
