"""A functional simulator of VTA, with dependency checking and a cycle estimate.

The semantics are the project's VTA specification (/work/shared/specs/vta-isa.md), gathered
from apache/tvm-vta: ``src/sim/sim_driver.cc`` (fsim, the functional simulator TVM tested
with), ``hardware/xilinx/src/vta.cc`` (the HLS design), ``include/vta/hw_spec.h``, and from
TVM's VTA runtime ``vta/runtime/runtime.cc`` (which wrote the instruction streams).

Machine. DRAM is a byte array (:class:`DRAM`); LOAD and STORE address it in elements of their
memory type (element ``e`` starts at byte ``e * E``). On chip are the input buffer
(int8 ``[2048][1][16]``), the weight buffer (int8 ``[1024][16][16]``), the accumulator (int32
``[2048][1][16]``), the uop buffer (uint32 ``[8192]``) and the HLS output buffer (int8
``[2048][1][16]``), sized by the :class:`~relay.backend.vta.isa.VTAConfig`; they keep their
contents from one :meth:`Simulator.run` to the next, as the device's SRAM does. Three modules
run the stream: fetch routes STORE to the store module, LOAD INP/WGT to the load module and
everything else (LOAD UOP/ACC/ACC_8BIT, GEMM, ALU, FINISH) to the compute module. Four
counting token FIFOs connect them: l2g (load->compute), g2l (compute->load), s2g
(store->compute) and g2s (compute->store). An instruction's ``pop_*`` flags name the queues
it waits on (relative to its module: load pops g2l with ``pop_next`` and pushes l2g with
``push_next``; compute pops l2g/s2g with ``pop_prev``/``pop_next`` and pushes g2l/g2s with
``push_prev``/``push_next``; store pops g2s and pushes s2g with ``pop_prev``/``push_prev``).
Pops happen before the instruction executes, pushes after; each module runs its own
instructions in stream order.

Two schedules (``order``):

* ``"program"`` runs the instructions in stream order. Every pop must find a token pushed by
  an earlier instruction; an empty queue is a dependency error.
* ``"tokens"`` gives each module its own FIFO of instructions and, at each step, runs the head
  of a module chosen uniformly at random (``numpy.random.default_rng(seed)``) among those
  whose head's tokens are all present. When no module can run and instructions remain, the
  run is a deadlock, reported with each blocked module, its head instruction and the tokens
  it waits for. A correct program writes the same DRAM under both schedules and every seed.

Happens-before and races. Each module keeps a vector clock (one counter per module). Running
an instruction advances its module's own counter, so the counter value is the instruction's
position in its module's FIFO (its *epoch*); a push enqueues a copy of the clock with the
token, and the k-th pop of a queue takes the k-th push's clock (FIFO order) and joins it into
the popping module's clock. Instruction ``a`` of module ``M`` happens before an instruction
of module ``N`` when ``epoch(a) <= clock_N[M]`` at that instruction. Every element of the
input, weight and accumulator buffers, and every 16-byte granule of DRAM, remembers the last
instruction that wrote it and, per reading module, the last that read it (FastTrack's
last-access epochs; the last access of a module is ordered after all its earlier ones). Each
buffer has a single writing module (load writes inp/wgt; compute writes acc; store writes
DRAM), so a race is a read not ordered after the last write by another module (read after
write) or a write not ordered after the last read by another module (write after read); either
is an error naming both instructions. The relation comes from the tokens alone, not from the
order the schedule happened to choose, so both schedules report the same races. FINISH must
be ordered after every instruction of the load and store modules (the runtime's
``Synchronize`` ends a stream with a push from each to compute and their pops before FINISH),
and all token queues must be empty after it (vta.cc asserts this).

Semantics (exactly the specification's): LOAD is a 2D strided copy with zero padding (UOP
elements raw, ACC little-endian int32, ACC_8BIT int8 sign-extended); ``x_size == 0`` makes a
LOAD or STORE a pure token carrier (whatever its memory type, as fsim and the runtime's
no-ops). STORE writes the low 8 bits of each accumulator lane (two's complement wrap, no
saturation) and needs memory type OUT and zero pads. GEMM runs ``iter_out x iter_in x
[uop_bgn, uop_end)`` uops, zeroing the destination rows (``reset_reg``) or adding
``inp[src] . wgt[wgt]^T`` to them with int32 wraparound. ALU computes MIN, MAX, ADD (wrapping),
SHR and MUL (wrapping; fsim only) of ``acc[dst]`` and ``imm`` (sign-extended int16) or
``acc[src]``. SHR shifts by the low 5 bits of the operand read as a signed 5-bit number, as the
FPGA does (``ap_int<5>`` in vta.cc): amounts 0..15 shift right arithmetically, -16..-1 shift
left by the negated amount, wrapping to int32; operands outside -16..15 use their low 5 bits
(fsim would shift by the whole operand there, which C++ leaves undefined from 32 on).

Checks (each a :class:`~relay.errors.VTAError` naming the instruction's index in the stream
and its opcode): field widths (:func:`~relay.backend.vta.isa.validate`); the stream ends with
its only FINISH, FINISH pops nothing, and no instruction sets a flag its module lacks (the load
module has no ``prev`` queue, the store module no ``next`` queue); a LOAD's padded rectangle
and a STORE's rows inside their buffer; every GEMM/ALU index below its buffer's depth (fsim
CHECK-fails, the FPGA wraps; an ALU's source rows too when it uses the immediate, as fsim)
and every uop it runs loaded; DRAM accesses inside the allocated DRAM; reads of buffer rows
that nothing has written (an accumulation without a reset); the GEMM accumulator hazard; and
the queue and ordering rules above. The hazard: the HLS GEMM pipeline has II=1 with the
accumulator dependence check disabled, so a GEMM uop may not write the accumulator row that
either of the two GEMM uops executed just before it writes, reset uops included. The run's
GEMM uops form one stream across instructions, whatever other instructions come between,
which is stricter than a pipeline that drains between instructions. ``mode="hls"`` adds the
FPGA's restrictions (vta.cc): no MUL, no padding on WGT and ACC loads (``load_2d``), no
ACC_8BIT loads, UOP loads as a 1-D copy (``y_size`` 1, no padding), and STORE reads the
output buffer, which only GEMM and ALU write, so storing a row last written by LOAD ACC or by
a GEMM reset is an error (TVM always put an ALU op, e.g. SHR by 0, in between).

Counters (as fsim's profiler): ``<mem>_load_nbytes += x_size * y_size * SRAM element bytes``
(ACC_8BIT counts 64 bytes per element, into ``acc_load_nbytes``), ``out_store_nbytes +=
x_size * y_size * 16``, ``gemm_counter`` (reset GEMMs not counted) and ``alu_counter`` add
``iter_out * iter_in * (uop_end - uop_bgn)``; plus the instructions per module.

Cycle model (:class:`CycleModel`, an estimate, not a timing simulation). Each instruction costs
``insn_overhead`` cycles (fetch, decode and token handshake; default 4) plus its work: GEMM one
cycle per uop (reset uops included; HLS II=1), ALU two per uop (II=2), a LOAD or STORE
``ceil(bytes / bus_bytes)`` cycles for the bytes it moves in DRAM (default 8 bytes per cycle,
PYNQ's 64-bit AXI; ACC_8BIT moves 16 bytes per element) plus one cycle per padded element it
zero-fills; a token carrier and FINISH only the overhead. An instruction starts when its
module has finished its previous instruction and every token it pops has been pushed: ``start
= max(end of the module's previous instruction, end of the instruction whose push produced
each popped token)`` (the k-th pop of a queue takes the k-th push), and ``end = start +
cost``. The report gives the makespan (the last end), each module's busy cycles, and GEMM
utilization ``gemm_counter / makespan``. Not modeled: the DRAM bandwidth the modules share,
DMA latency and burst setup per row, instruction fetch, and the depth of the command queues.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

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
    VTAConfig,
    decode_stream,
    describe,
    module_of,
    uop_layout,
    validate,
)
from relay.errors import VTAError

Array = npt.NDArray[Any]
Mode = Literal["fsim", "hls"]
Order = Literal["program", "tokens"]

MODULES = ("load", "compute", "store")
LOAD, COMPUTE, STORE = Module.LOAD, Module.COMPUTE, Module.STORE

# queue -> (producer, consumer)
QUEUES = {
    "l2g": (LOAD, COMPUTE),
    "g2l": (COMPUTE, LOAD),
    "s2g": (STORE, COMPUTE),
    "g2s": (COMPUTE, STORE),
}
# per module: flag -> the queue it pops or pushes
_POPS = ({"pop_next": "g2l"}, {"pop_prev": "l2g", "pop_next": "s2g"}, {"pop_prev": "g2s"})
_PUSHES = ({"push_next": "l2g"}, {"push_prev": "g2l", "push_next": "g2s"}, {"push_prev": "s2g"})
_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")

_COUNTERS = (
    "inp_load_nbytes",
    "wgt_load_nbytes",
    "acc_load_nbytes",
    "uop_load_nbytes",
    "out_store_nbytes",
    "gemm_counter",
    "alu_counter",
)
GRANULE = 16  # bytes of DRAM per race-tracking cell: the smallest element a STORE writes
_CHUNK = 1 << 16  # uops handled at once by GEMM and ALU


def _queue_name(q: str) -> str:
    src, dst = QUEUES[q]
    return f"{q} ({MODULES[src]}->{MODULES[dst]})"


def _wrap32(x: Array) -> Array:
    """int64 values wrapped to int32 (two's complement)."""
    return (np.asarray(x, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _low8(x: Array) -> Array:
    """The low 8 bits of integers, as int8 (two's complement wrap, no saturation)."""
    return (np.asarray(x, np.int64) & 0xFF).astype(np.uint8).view(np.int8)


class DRAM:
    """Device memory: a growable byte array with a bump allocator.

    ``alloc`` returns byte addresses; a LOAD or STORE addresses memory in elements of its
    memory type, so a buffer of ``E``-byte elements at byte address ``a`` (a multiple of
    ``E``) is element ``a // E``. Only the ``size`` bytes allocated so far are DRAM."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        self._buf = np.zeros(max(capacity, 16), np.uint8)
        self.size = 0

    @property
    def data(self) -> Array:
        """The allocated bytes (a uint8 view)."""
        return self._buf[: self.size]

    def alloc(self, nbytes: int, align: int = 256) -> int:
        """Allocate ``nbytes`` zeroed bytes at a multiple of ``align``; their byte address."""
        if nbytes < 0 or align <= 0:
            raise VTAError(f"DRAM.alloc: bad size {nbytes} or alignment {align}")
        addr = -(-self.size // align) * align
        end = addr + nbytes
        if end > len(self._buf):
            grown = np.zeros(max(end, 2 * len(self._buf)), np.uint8)
            grown[: self.size] = self._buf[: self.size]
            self._buf = grown
        self.size = end
        return addr

    def _check(self, addr: int, nbytes: int) -> None:
        if addr < 0 or addr + nbytes > self.size:
            raise VTAError(
                f"DRAM bytes {addr}..{addr + nbytes - 1} outside DRAM ({self.size} bytes allocated)"
            )

    def write(self, addr: int, data: Array | bytes) -> None:
        """Copy the bytes of ``data`` (an array in its own dtype, little-endian) to ``addr``."""
        if isinstance(data, bytes | bytearray):
            raw = np.frombuffer(bytes(data), np.uint8)
        else:
            arr = np.ascontiguousarray(data)
            raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8)
        self._check(addr, raw.size)
        self._buf[addr : addr + raw.size] = raw

    def read(self, addr: int, shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> Array:
        """A copy of the array of ``shape`` and ``dtype`` stored at ``addr``."""
        dt = np.dtype(dtype)
        shp = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = math.prod(shp) * dt.itemsize
        self._check(addr, nbytes)
        return self._buf[addr : addr + nbytes].copy().view(dt).reshape(shp)

    def put(self, data: Array | bytes, align: int = 256) -> int:
        """Allocate room for ``data``, write it there, and return its byte address."""
        nbytes = len(data) if isinstance(data, bytes | bytearray) else np.asarray(data).nbytes
        addr = self.alloc(nbytes, align)
        self.write(addr, data)
        return addr


@dataclass(frozen=True)
class CycleModel:
    """The parameters of the cycle estimate (see the module docstring)."""

    bus_bytes: int = 8
    insn_overhead: int = 4
    gemm_cycles_per_uop: int = 1
    alu_cycles_per_uop: int = 2

    def cost(self, insn: Insn, config: VTAConfig = DEFAULT) -> int:
        """Cycles ``insn`` keeps its module busy."""
        work = 0
        if isinstance(insn, MemInsn):
            if insn.x_size:
                n = insn.x_size * insn.y_size
                if insn.opcode == Opcode.STORE:
                    work = -(-n * config.out_elem_bytes // self.bus_bytes)
                else:
                    elem = {
                        MemId.UOP: config.uop_elem_bytes,
                        MemId.INP: config.inp_elem_bytes,
                        MemId.WGT: config.wgt_elem_bytes,
                        MemId.ACC: config.acc_elem_bytes,
                        MemId.ACC_8BIT: config.acc8_elem_bytes,
                    }.get(MemId(insn.memory_type), config.out_elem_bytes)
                    padded = (insn.x_pad_0 + insn.x_size + insn.x_pad_1) * (
                        insn.y_pad_0 + insn.y_size + insn.y_pad_1
                    )
                    work = -(-n * elem // self.bus_bytes) + padded - n
        elif isinstance(insn, GemmInsn | AluInsn):
            uops = insn.iter_out * insn.iter_in * max(insn.uop_end - insn.uop_bgn, 0)
            per = (
                self.gemm_cycles_per_uop if isinstance(insn, GemmInsn) else self.alu_cycles_per_uop
            )
            work = uops * per
        return self.insn_overhead + work


@dataclass(frozen=True)
class Timing:
    """When one instruction ran in the cycle estimate."""

    index: int
    module: str
    start: int
    end: int


@dataclass(frozen=True)
class Report:
    """What a run did: fsim's counters, instruction counts and the cycle estimate."""

    mode: str
    order: str
    seed: int | None
    inp_load_nbytes: int
    wgt_load_nbytes: int
    acc_load_nbytes: int
    uop_load_nbytes: int
    out_store_nbytes: int
    gemm_counter: int
    alu_counter: int
    insn_counts: dict[str, int]
    cycles: int
    busy_cycles: dict[str, int]
    timeline: tuple[Timing, ...] = field(repr=False)

    @property
    def gemm_utilization(self) -> float:
        """GEMM uops per cycle of the makespan (1.0: the GEMM core never idles)."""
        return self.gemm_counter / self.cycles if self.cycles else 0.0

    def counters(self) -> dict[str, int]:
        """The counters under the names of fsim's ``vta.simulator.profiler_status``."""
        return {
            "inp_load_nbytes": self.inp_load_nbytes,
            "wgt_load_nbytes": self.wgt_load_nbytes,
            "acc_load_nbytes": self.acc_load_nbytes,
            "uop_load_nbytes": self.uop_load_nbytes,
            "out_store_nbytes": self.out_store_nbytes,
            "gemm_counter": self.gemm_counter,
            "alu_counter": self.alu_counter,
        }

    def __str__(self) -> str:
        order = "program order" if self.order == "program" else f"token scheduler, seed {self.seed}"
        lines = [f"VTA run ({self.mode}, {order})"]
        for name, value in self.counters().items():
            lines.append(f"  {name:<18}{value:>12}")
        lines.append(f"  {'module':<10}{'insns':>8}{'busy cycles':>14}{'busy':>8}")
        for m in MODULES:
            busy = self.busy_cycles[m]
            share = f"{100 * busy / self.cycles:.1f}%" if self.cycles else "-"
            lines.append(f"  {m:<10}{self.insn_counts[m]:>8}{busy:>14}{share:>8}")
        lines.append(
            f"  makespan {self.cycles} cycles, GEMM utilization "
            f"{100 * self.gemm_utilization:.1f}% (gemm uops / makespan)"
        )
        return "\n".join(lines)


@dataclass(frozen=True)
class _Token:
    producer: int
    end: int
    clock: tuple[int, ...]


class _Shadow:
    """Race tracking of one buffer: per element the last writer and, per reading module, the
    last reader (stream index + 1; 0 = none in this run)."""

    def __init__(self, size: int, name: str, writer: int, readers: tuple[int, ...]) -> None:
        self.name = name
        self.writer = writer
        self.write = np.zeros(size, np.int32)
        self.read = {r: np.zeros(size, np.int32) for r in readers}


class Simulator:
    """A VTA device: on-chip buffers (kept between runs) over a :class:`DRAM`.

    ``mode`` is ``"fsim"`` (the semantics of TVM's functional simulator, STORE reading the
    accumulator) or ``"hls"`` (also reject what the FPGA design does differently)."""

    def __init__(self, dram: DRAM, config: VTAConfig = DEFAULT, mode: Mode = "fsim") -> None:
        if mode not in ("fsim", "hls"):
            raise VTAError(f"unknown simulator mode {mode!r} (expected 'fsim' or 'hls')")
        if (config.inp_width, config.wgt_width, config.acc_width) != (8, 8, 32):
            raise VTAError(
                f"the simulator supports int8 inputs and weights with int32 accumulators, "
                f"not configuration {config.bitstream}"
            )
        self.dram = dram
        self.config = config
        self.mode = mode
        c = config
        self.inp = np.zeros((c.inp_depth, c.batch, c.block_in), np.int8)
        self.wgt = np.zeros((c.wgt_depth, c.block_out, c.block_in), np.int8)
        self.acc = np.zeros((c.acc_depth, c.batch, c.block_out), np.int32)
        self.uop = np.zeros(c.uop_depth, np.uint32)
        self.out = np.zeros((c.acc_depth, c.batch, c.block_out), np.int8)
        self.inp_written = np.zeros(c.inp_depth, bool)
        self.wgt_written = np.zeros(c.wgt_depth, bool)
        self.uop_written = np.zeros(c.uop_depth, bool)
        # what last wrote each accumulator row: 0 nothing, 1 GEMM/ALU, 2 GEMM reset, 3 LOAD
        self.acc_kind = np.zeros(c.acc_depth, np.int8)

    def run(
        self,
        program: Sequence[Insn] | bytes,
        order: Order = "program",
        seed: int = 0,
        cycle_model: CycleModel | None = None,
    ) -> Report:
        """Run an instruction stream (instructions or their encoding) to its FINISH."""
        if isinstance(program, bytes | bytearray):
            insns = decode_stream(bytes(program), self.config)
        else:
            insns = list(program)
        if order not in ("program", "tokens"):
            raise VTAError(f"unknown order {order!r} (expected 'program' or 'tokens')")
        return _Run(self, insns, cycle_model or CycleModel()).execute(order, seed)


def run(
    program: Sequence[Insn] | bytes,
    dram: DRAM,
    *,
    config: VTAConfig = DEFAULT,
    mode: Mode = "fsim",
    order: Order = "program",
    seed: int = 0,
    cycle_model: CycleModel | None = None,
) -> Report:
    """Run ``program`` on a fresh :class:`Simulator` over ``dram``; the run's report."""
    return Simulator(dram, config, mode).run(program, order, seed, cycle_model)


class _Run:
    """The state of one run: tokens, clocks, shadows, counters, timing."""

    def __init__(self, sim: Simulator, insns: list[Insn], model: CycleModel) -> None:
        self.sim = sim
        self.c = sim.config
        self.insns = insns
        self.model = model
        n = len(insns)
        self.module = [0] * n
        self.pops: list[tuple[str, ...]] = []
        self.pushes: list[tuple[str, ...]] = []
        self.epoch = np.zeros(n + 1, np.int64)  # index + 1 -> position in its module's FIFO
        self.by_epoch: list[list[int]] = [[], [], []]
        self.cost = [0] * n
        self._prepare()
        self.tokens: dict[str, deque[_Token]] = {q: deque() for q in QUEUES}
        self.clock = [[0, 0, 0] for _ in MODULES]
        self.module_end = [0, 0, 0]
        self.timeline: list[Timing] = []
        self.counters = dict.fromkeys(_COUNTERS, 0)
        self.acc_by = np.full(self.c.acc_depth, -1, np.int64)
        # (acc row, instruction, which uop) of the last two GEMM uops run
        self.gemm_last: list[tuple[int, int, str]] = []
        c = self.c
        granules = -(-sim.dram.size // GRANULE)
        self.sh_inp = _Shadow(c.inp_depth, "inp", LOAD, (COMPUTE,))
        self.sh_wgt = _Shadow(c.wgt_depth, "wgt", LOAD, (COMPUTE,))
        self.sh_acc = _Shadow(c.acc_depth, "acc", COMPUTE, (STORE,))
        self.sh_dram = _Shadow(granules, "DRAM", STORE, (LOAD, COMPUTE))

    # --- static checks ---------------------------------------------------------------------

    def where(self, idx: int) -> str:
        return f"instruction {idx} ({describe(self.insns[idx])})"

    def _prepare(self) -> None:
        finish = None
        for idx, insn in enumerate(self.insns):
            validate(insn, self.c, f"instruction {idx} ({_describe_any(insn)})")
            m = module_of(insn)
            self.module[idx] = m
            for flag in _FLAGS:
                if getattr(insn, flag) and flag not in _POPS[m] and flag not in _PUSHES[m]:
                    side = "previous" if flag.endswith("prev") else "next"
                    raise VTAError(
                        f"{self.where(idx)}: {flag} is set, but the {MODULES[m]} module has no "
                        f"{side} module to exchange tokens with"
                    )
            if isinstance(insn, FinishInsn):
                if insn.pop_prev or insn.pop_next:
                    raise VTAError(
                        f"{self.where(idx)}: FINISH pops no tokens (pop them in an instruction "
                        f"before it, as the runtime's Synchronize does)"
                    )
                if finish is None:
                    finish = idx
            elif finish is not None:
                raise VTAError(
                    f"{self.where(idx)} follows FINISH (instruction {finish}); FINISH must be "
                    f"the last instruction"
                )
            self.pops.append(tuple(q for f, q in _POPS[m].items() if getattr(insn, f)))
            self.pushes.append(tuple(q for f, q in _PUSHES[m].items() if getattr(insn, f)))
            self.by_epoch[m].append(idx)
            self.epoch[idx + 1] = len(self.by_epoch[m])
            self.cost[idx] = self.model.cost(insn, self.c)
        if finish is None:
            raise VTAError("the stream has no FINISH instruction (a stream ends with FINISH)")

    # --- scheduling ------------------------------------------------------------------------

    def execute(self, order: str, seed: int) -> Report:
        if order == "program":
            for idx in range(len(self.insns)):
                for q in self.pops[idx]:
                    if not self.tokens[q]:
                        raise VTAError(
                            f"dependency error: {self.where(idx)} on the "
                            f"{MODULES[self.module[idx]]} module pops {_queue_name(q)}, but in "
                            f"program order no earlier instruction pushed a token still there"
                        )
                self.step(idx)
        else:
            rng = np.random.default_rng(seed)
            fifos = [deque(self.by_epoch[m]) for m in range(3)]
            done = False
            while not done:
                ready = [m for m in range(3) if fifos[m] and self._can_pop(fifos[m][0])]
                if not ready:
                    self._deadlock(fifos)
                m = ready[int(rng.integers(len(ready)))]
                idx = fifos[m].popleft()
                self.step(idx)
                done = isinstance(self.insns[idx], FinishInsn)
        return self._report(order, seed)

    def _can_pop(self, idx: int) -> bool:
        return all(self.tokens[q] for q in self.pops[idx])

    def _deadlock(self, fifos: list[deque[int]]) -> None:
        left = sum(len(f) for f in fifos)
        blocked = []
        for m in range(3):
            if fifos[m]:
                idx = fifos[m][0]
                missing = [_queue_name(q) for q in self.pops[idx] if not self.tokens[q]]
                if len(missing) == 1:
                    tokens = f"a token on {missing[0]}"
                else:
                    tokens = f"tokens on {' and '.join(missing)}"
                blocked.append(f"the {MODULES[m]} module waits at {self.where(idx)} for {tokens}")
        raise VTAError(
            f"deadlock: no module can run and {left} instruction"
            f"{'s remain' if left != 1 else ' remains'}; " + "; ".join(blocked)
        )

    def step(self, idx: int) -> None:
        """Pop, execute, push one instruction."""
        m = self.module[idx]
        clock = self.clock[m]
        start = self.module_end[m]
        for q in self.pops[idx]:
            tok = self.tokens[q].popleft()
            start = max(start, tok.end)
            for k in range(3):
                clock[k] = max(clock[k], tok.clock[k])
        clock[m] += 1
        insn = self.insns[idx]
        if isinstance(insn, MemInsn):
            if insn.opcode == Opcode.STORE:
                self._store(idx, insn)
            else:
                self._load(idx, insn)
        elif isinstance(insn, GemmInsn):
            self._gemm(idx, insn)
        elif isinstance(insn, AluInsn):
            self._alu(idx, insn)
        end = start + self.cost[idx]
        self.module_end[m] = end
        self.timeline.append(Timing(idx, MODULES[m], start, end))
        for q in self.pushes[idx]:
            self.tokens[q].append(_Token(idx, end, tuple(clock)))
        if isinstance(insn, FinishInsn):
            self._finish(idx)

    def _finish(self, idx: int) -> None:
        clock = self.clock[COMPUTE]
        for m in (LOAD, STORE):
            if clock[m] < len(self.by_epoch[m]):
                other = self.by_epoch[m][clock[m]]
                raise VTAError(
                    f"{self.where(idx)}: {self.where(other)} on the {MODULES[m]} module is not "
                    f"ordered before FINISH by dependency tokens (end a stream as the runtime's "
                    f"Synchronize does: push from load and store, pop both at compute, then "
                    f"FINISH)"
                )
        left = [
            f"{_queue_name(q)} holds {len(t)} (first pushed by {self.where(t[0].producer)})"
            for q, t in self.tokens.items()
            if t
        ]
        if left:
            raise VTAError(
                f"{self.where(idx)}: token queues not empty at FINISH: " + "; ".join(left)
            )

    def _report(self, order: str, seed: int) -> Report:
        counts = dict.fromkeys(MODULES, 0)
        busy = dict.fromkeys(MODULES, 0)
        for t in self.timeline:
            counts[t.module] += 1
            busy[t.module] += t.end - t.start
        return Report(
            mode=self.sim.mode,
            order=order,
            seed=seed if order == "tokens" else None,
            insn_counts=counts,
            cycles=max((t.end for t in self.timeline), default=0),
            busy_cycles=busy,
            timeline=tuple(self.timeline),
            **self.counters,
        )

    # --- race tracking ---------------------------------------------------------------------

    def _ordered(self, writer_or_reader: Array, m: int, other: int) -> Array:
        """Which of the accesses (stream index + 1) by module ``other`` happen before the
        instruction module ``m`` runs now."""
        return np.asarray(self.epoch[writer_or_reader] <= self.clock[m][other])

    def read(self, idx: int, sh: _Shadow, rows: Array, what: Callable[[int], str]) -> None:
        """Record reads of ``rows`` of ``sh`` by instruction ``idx``; a race if not ordered
        after the last write."""
        m = self.module[idx]
        if m == sh.writer:
            return
        last = sh.write[rows]
        bad = ~self._ordered(last, m, sh.writer)
        if bad.any():
            k = int(np.argmax(bad))
            w = int(last[k]) - 1
            raise VTAError(
                f"race: {self.where(idx)} on the {MODULES[m]} module reads {what(int(rows[k]))}, "
                f"written by {self.where(w)} on the {MODULES[sh.writer]} module, and no "
                f"dependency token orders the read after the write"
            )
        sh.read[m][rows] = idx + 1

    def write(self, idx: int, sh: _Shadow, rows: Array, what: Callable[[int], str]) -> None:
        """Record writes of ``rows`` of ``sh`` by instruction ``idx``; a race if not ordered
        after the last read by another module."""
        m = self.module[idx]
        for r, reads in sh.read.items():
            last = reads[rows]
            bad = ~self._ordered(last, m, r)
            if bad.any():
                k = int(np.argmax(bad))
                other = int(last[k]) - 1
                raise VTAError(
                    f"race: {self.where(idx)} on the {MODULES[m]} module overwrites "
                    f"{what(int(rows[k]))}, read by {self.where(other)} on the {MODULES[r]} "
                    f"module, and no dependency token orders the write after the read"
                )
        sh.write[rows] = idx + 1

    # --- DRAM ------------------------------------------------------------------------------

    def _dram_elems(self, idx: int, insn: MemInsn, elem_bytes: int, verb: str) -> Array:
        """Element addresses ``[y_size, x_size]`` of a DMA's DRAM side, bounds-checked."""
        y = np.arange(insn.y_size, dtype=np.int64)[:, None]
        x = np.arange(insn.x_size, dtype=np.int64)[None, :]
        elems = insn.dram_base + y * insn.x_stride + x
        if elems.size == 0:  # y_size 0: only padding
            return elems
        lo = int(elems.min()) * elem_bytes
        hi = (int(elems.max()) + 1) * elem_bytes
        if hi > self.sim.dram.size:
            raise VTAError(
                f"{self.where(idx)}: {verb} DRAM bytes {lo}..{hi - 1}, outside DRAM "
                f"({self.sim.dram.size} bytes allocated)"
            )
        return elems

    def _granules(self, elems: Array, elem_bytes: int) -> Array:
        per = max(1, elem_bytes // GRANULE)
        first = (elems.reshape(-1) * elem_bytes) // GRANULE
        return np.unique((first[:, None] + np.arange(per)).reshape(-1))

    @staticmethod
    def _granule_name(g: int) -> str:
        return f"DRAM bytes {g * GRANULE}..{g * GRANULE + GRANULE - 1}"

    def _gather(self, elems: Array, elem_bytes: int) -> Array:
        """The bytes of DRAM elements ``elems``, shape ``elems.shape + (elem_bytes,)``."""
        offsets = elems[..., None] * elem_bytes + np.arange(elem_bytes)
        return np.asarray(self.sim.dram.data[offsets])

    # --- LOAD and STORE --------------------------------------------------------------------

    def _load(self, idx: int, insn: MemInsn) -> None:
        if insn.x_size == 0:
            return
        sim, c, mt = self.sim, self.c, MemId(insn.memory_type)
        hls = sim.mode == "hls"
        pads = (insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)
        n = insn.x_size * insn.y_size
        if mt == MemId.OUT:
            raise VTAError(f"{self.where(idx)}: OUT is not a memory a LOAD fills (STORE reads it)")
        if hls and mt == MemId.ACC_8BIT:
            raise VTAError(f"{self.where(idx)}: the FPGA's compute module has no ACC_8BIT load")
        if hls and mt in (MemId.WGT, MemId.ACC) and any(pads):
            raise VTAError(
                f"{self.where(idx)}: the FPGA ignores the padding of {mt.name} loads (load_2d)"
            )
        if hls and mt == MemId.UOP and (insn.y_size != 1 or any(pads)):
            raise VTAError(
                f"{self.where(idx)}: the FPGA loads uops as a 1-D copy of x_size uops "
                f"(y_size must be 1 and the pads 0)"
            )
        # the buffer, its name, DRAM element bytes and dtype, race shadow, counter
        table: dict[MemId, tuple[Array, str, int, str, _Shadow | None, str]] = {
            MemId.INP: (sim.inp, "input buffer", c.inp_elem_bytes, "<i1", self.sh_inp, "inp"),
            MemId.WGT: (sim.wgt, "weight buffer", c.wgt_elem_bytes, "<i1", self.sh_wgt, "wgt"),
            MemId.UOP: (sim.uop, "uop buffer", c.uop_elem_bytes, "<u4", None, "uop"),
            MemId.ACC: (sim.acc, "accumulator", c.acc_elem_bytes, "<i4", self.sh_acc, "acc"),
            MemId.ACC_8BIT: (sim.acc, "accumulator", c.acc8_elem_bytes, "<i1", self.sh_acc, "acc"),
        }
        sram, buf, elem, dtype, sh, counter = table[mt]
        # fsim counts the SRAM element's bytes (so 64 per ACC_8BIT element)
        self.counters[f"{counter}_load_nbytes"] += n * (sram.nbytes // len(sram))
        xs = insn.x_pad_0 + insn.x_size + insn.x_pad_1
        ys = insn.y_pad_0 + insn.y_size + insn.y_pad_1
        base, end = insn.sram_base, insn.sram_base + xs * ys
        if end > len(sram):
            raise VTAError(
                f"{self.where(idx)}: rows {base}..{end - 1} outside the {buf} (depth {len(sram)})"
            )
        elems = self._dram_elems(idx, insn, elem, "reads")
        self.read(idx, self.sh_dram, self._granules(elems, elem), self._granule_name)
        rows = np.arange(base, end)
        if sh is not None:
            self.write(idx, sh, rows, lambda r: f"{sh.name} row {r}")
        data = (
            self._gather(elems, elem)
            .view(dtype)
            .reshape((insn.y_size, insn.x_size, *sram.shape[1:]))
        )
        region = np.zeros((ys, xs, *sram.shape[1:]), sram.dtype)
        region[
            insn.y_pad_0 : insn.y_pad_0 + insn.y_size, insn.x_pad_0 : insn.x_pad_0 + insn.x_size
        ] = data
        sram[base:end] = region.reshape((end - base, *sram.shape[1:]))
        if mt == MemId.INP:
            sim.inp_written[base:end] = True
        elif mt == MemId.WGT:
            sim.wgt_written[base:end] = True
        elif mt == MemId.UOP:
            sim.uop_written[base:end] = True
        else:
            sim.acc_kind[base:end] = 3
            self.acc_by[base:end] = idx

    def _store(self, idx: int, insn: MemInsn) -> None:
        if insn.x_size == 0:
            return
        sim, c = self.sim, self.c
        if insn.memory_type != MemId.OUT:
            raise VTAError(f"{self.where(idx)}: a STORE's memory type must be OUT")
        for name in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            if getattr(insn, name):
                raise VTAError(
                    f"{self.where(idx)}: a STORE cannot pad ({name} = {getattr(insn, name)})"
                )
        n = insn.x_size * insn.y_size
        base, end = insn.sram_base, insn.sram_base + n
        if end > c.acc_depth:
            raise VTAError(
                f"{self.where(idx)}: rows {base}..{end - 1} outside the accumulator "
                f"(depth {c.acc_depth})"
            )
        rows = np.arange(base, end)
        kind = sim.acc_kind[base:end]
        if (kind == 0).any():
            r = base + int(np.argmax(kind == 0))
            raise VTAError(f"{self.where(idx)}: stores acc row {r}, which nothing has written")
        if sim.mode == "hls" and (kind != 1).any():
            k = int(np.argmax(kind != 1))
            r, by = base + k, int(self.acc_by[base + k])
            what = "LOAD ACC" if kind[k] == 3 else "a GEMM reset"
            by_text = f" ({self.where(by)})" if by >= 0 else " (in an earlier run)"
            raise VTAError(
                f"{self.where(idx)}: acc row {r} was last written by {what}{by_text}; the "
                f"FPGA's STORE reads the output buffer, which only GEMM and ALU results update "
                f"(put an ALU op, e.g. SHR by 0, in between)"
            )
        elems = self._dram_elems(idx, insn, c.out_elem_bytes, "writes")
        self.read(idx, self.sh_acc, rows, lambda r: f"acc row {r}")
        self.write(idx, self.sh_dram, self._granules(elems, c.out_elem_bytes), self._granule_name)
        src = sim.out if sim.mode == "hls" else sim.acc
        data = _low8(src[base:end]).view(np.uint8).reshape(insn.y_size, insn.x_size, -1)
        offsets = elems[..., None] * c.out_elem_bytes + np.arange(c.out_elem_bytes)
        dram = sim.dram.data
        if insn.y_size > 1 and insn.x_stride < insn.x_size:  # rows overlap: later rows win
            for y in range(insn.y_size):
                dram[offsets[y]] = data[y]
        else:
            dram[offsets] = data
        self.counters["out_store_nbytes"] += n * c.out_elem_bytes

    # --- GEMM and ALU ----------------------------------------------------------------------

    def _uops(self, idx: int, insn: GemmInsn | AluInsn) -> tuple[Array, Array, Array]:
        """The uop range's fields (dst, src, wgt), checked to lie in the loaded uop buffer."""
        sim, c = self.sim, self.c
        if insn.uop_bgn > insn.uop_end:
            raise VTAError(f"{self.where(idx)}: uop_bgn {insn.uop_bgn} > uop_end {insn.uop_end}")
        if insn.uop_end > c.uop_depth:
            raise VTAError(
                f"{self.where(idx)}: uop_end {insn.uop_end} beyond the uop buffer "
                f"(depth {c.uop_depth})"
            )
        loaded = sim.uop_written[insn.uop_bgn : insn.uop_end]
        if not loaded.all():
            u = insn.uop_bgn + int(np.argmin(loaded))
            raise VTAError(f"{self.where(idx)}: runs uop {u}, which no LOAD UOP has written")
        words = sim.uop[insn.uop_bgn : insn.uop_end].astype(np.int64)
        (_, _, dw), (_, slo, sw), (_, wlo, ww) = uop_layout(c)
        return (
            words & ((1 << dw) - 1),
            (words >> slo) & ((1 << sw) - 1),
            (words >> wlo) & ((1 << ww) - 1),
        )

    def _chunks(self, insn: GemmInsn | AluInsn) -> list[tuple[int, Array, Array]]:
        """``(g0, ij_offsets_i, ij_offsets_j)`` per chunk of the (i, j) iteration space; uop
        ``u`` of iteration ``p`` is executed uop number ``g0 + p * nu + u``."""
        nu = insn.uop_end - insn.uop_bgn
        total = insn.iter_out * insn.iter_in
        step = max(1, _CHUNK // max(nu, 1))
        out = []
        for p0 in range(0, total, step):
            p = np.arange(p0, min(total, p0 + step), dtype=np.int64)
            out.append((p0 * nu, p // insn.iter_in, p % insn.iter_in))
        return out

    def _coords(self, insn: GemmInsn | AluInsn, g: int) -> str:
        nu = insn.uop_end - insn.uop_bgn
        u, p = insn.uop_bgn + g % nu, g // nu
        return f"uop {u} (i={p // insn.iter_in}, j={p % insn.iter_in})"

    def _bounds(
        self, idx: int, insn: GemmInsn | AluInsn, g0: int, checks: list[tuple[Array, int, str]]
    ) -> None:
        """The first executed uop with an index past its buffer, if any."""
        first = None
        for rows, depth, name in checks:
            bad = rows >= depth
            if bad.any():
                k = int(np.argmax(bad))
                if first is None or k < first[0]:
                    first = (k, int(rows[k]), depth, name)
        if first is not None:
            k, r, depth, name = first
            raise VTAError(
                f"{self.where(idx)}: {self._coords(insn, g0 + k)}: {name} {r} outside the "
                f"{_BUFFER[name.split()[0]]} (depth {depth})"
            )

    def _unwritten(
        self, idx: int, insn: GemmInsn | AluInsn, g0: int, rows: Array, written: Array, name: str
    ) -> None:
        ok = written[rows]
        if not ok.all():
            k = int(np.argmin(ok))
            raise VTAError(
                f"{self.where(idx)}: {self._coords(insn, g0 + k)} reads {name} {int(rows[k])}, "
                f"which nothing has written"
            )

    def _gemm(self, idx: int, insn: GemmInsn) -> None:
        sim, c = self.sim, self.c
        dst, src, wgt = self._uops(idx, insn)
        nu = len(dst)
        if nu == 0 or insn.iter_out == 0 or insn.iter_in == 0:
            return
        for g0, i, j in self._chunks(insn):
            a = (
                dst[None, :] + (i * insn.dst_factor_out + j * insn.dst_factor_in)[:, None]
            ).reshape(-1)
            checks = [(a, c.acc_depth, "acc row")]
            if not insn.reset_reg:
                s = (
                    src[None, :] + (i * insn.src_factor_out + j * insn.src_factor_in)[:, None]
                ).reshape(-1)
                w = (
                    wgt[None, :] + (i * insn.wgt_factor_out + j * insn.wgt_factor_in)[:, None]
                ).reshape(-1)
                checks += [(s, c.inp_depth, "inp row"), (w, c.wgt_depth, "wgt row")]
            self._bounds(idx, insn, g0, checks)
            self._hazard(idx, insn, g0, a)
            rows = np.unique(a)
            if insn.reset_reg:
                self.write(idx, self.sh_acc, rows, lambda r: f"acc row {r}")
                sim.acc[rows] = 0
                sim.acc_kind[rows] = 2
                self.acc_by[rows] = idx
                continue
            self._unwritten(idx, insn, g0, s, sim.inp_written, "inp row")
            self._unwritten(idx, insn, g0, w, sim.wgt_written, "wgt row")
            self._unwritten(idx, insn, g0, a, sim.acc_kind != 0, "acc row")
            self.read(idx, self.sh_inp, np.unique(s), lambda r: f"inp row {r}")
            self.read(idx, self.sh_wgt, np.unique(w), lambda r: f"wgt row {r}")
            self.write(idx, self.sh_acc, rows, lambda r: f"acc row {r}")
            dot = np.matmul(
                sim.inp[s].astype(np.int32), sim.wgt[w].astype(np.int32).transpose(0, 2, 1)
            )
            _, inv = np.unique(a, return_inverse=True)
            sums = np.zeros((len(rows), *dot.shape[1:]), np.int64)
            np.add.at(sums, inv.reshape(-1), dot)
            sim.acc[rows] = _wrap32(sim.acc[rows].astype(np.int64) + sums)
            sim.out[rows] = _low8(sim.acc[rows])
            sim.acc_kind[rows] = 1
            self.acc_by[rows] = idx
            self.counters["gemm_counter"] += len(a)

    def _hazard(self, idx: int, insn: GemmInsn, g0: int, a: Array) -> None:
        """A GEMM uop may not write the acc row that either of the two GEMM uops executed
        just before it (in this instruction or the GEMM instructions before) writes."""
        last = self.gemm_last
        seq = np.concatenate([np.array([row for row, _, _ in last], np.int64), a])
        off = len(last)
        first = None
        for d in (1, 2):
            begin = max(off, d)
            same = seq[begin:] == seq[begin - d : len(seq) - d]
            if same.any():
                k = begin - off + int(np.argmax(same))
                if first is None or k < first[0]:
                    first = (k, d)
        if first is not None:
            k, d = first
            p = off + k - d
            if p >= off:
                before = self._coords(insn, g0 + k - d)
            else:
                _, other, before = last[p]
                if other != idx:
                    before += f" of {self.where(other)}"
            raise VTAError(
                f"{self.where(idx)}: {self._coords(insn, g0 + k)} writes acc row {int(a[k])}, "
                f"as does {before}, executed {d} uop{'s' if d > 1 else ''} before it (the GEMM "
                f"pipeline needs 2 uops between writes of one row)"
            )
        tail = [
            (int(a[k]), idx, self._coords(insn, g0 + k)) for k in range(max(0, len(a) - 2), len(a))
        ]
        self.gemm_last = (last + tail)[-2:]

    def _alu(self, idx: int, insn: AluInsn) -> None:
        sim, c = self.sim, self.c
        op = AluOp(insn.alu_opcode)
        if op == AluOp.MUL and sim.mode == "hls":
            raise VTAError(f"{self.where(idx)}: the FPGA's ALU has no MUL (fsim only)")
        dst, src, _ = self._uops(idx, insn)
        nu = len(dst)
        if nu == 0 or insn.iter_out == 0 or insn.iter_in == 0:
            return
        kind_ok = sim.acc_kind != 0
        for g0, i, j in self._chunks(insn):
            a = (
                dst[None, :] + (i * insn.dst_factor_out + j * insn.dst_factor_in)[:, None]
            ).reshape(-1)
            s = (
                src[None, :] + (i * insn.src_factor_out + j * insn.src_factor_in)[:, None]
            ).reshape(-1)
            self._bounds(
                idx, insn, g0, [(a, c.acc_depth, "acc row"), (s, c.acc_depth, "src acc row")]
            )
            self._unwritten(idx, insn, g0, a, kind_ok, "acc row")
            if not insn.use_imm:
                self._unwritten(idx, insn, g0, s, kind_ok, "acc row")
            rows = np.unique(a)
            self.write(idx, self.sh_acc, rows, lambda r: f"acc row {r}")
            n = len(a)
            if insn.use_imm:
                conflict = len(rows) != n
            else:
                first_write = np.full(c.acc_depth, n, np.int64)
                np.minimum.at(first_write, a, np.arange(n))
                conflict = len(rows) != n or bool((first_write[s] < np.arange(n)).any())
            if not conflict:  # every uop reads values no other uop of the chunk writes
                b = np.int64(insn.imm) if insn.use_imm else sim.acc[s].astype(np.int64)
                sim.acc[a] = _alu_op(op, sim.acc[a].astype(np.int64), b)
            else:
                for k in range(n):
                    b = np.int64(insn.imm) if insn.use_imm else sim.acc[s[k]].astype(np.int64)
                    sim.acc[a[k]] = _alu_op(op, sim.acc[a[k]].astype(np.int64), b)
            sim.out[rows] = _low8(sim.acc[rows])
            sim.acc_kind[rows] = 1
            self.acc_by[rows] = idx
            kind_ok = sim.acc_kind != 0
            self.counters["alu_counter"] += n


_BUFFER = {
    "acc": "accumulator",
    "src": "accumulator",
    "inp": "input buffer",
    "wgt": "weight buffer",
}


def _alu_op(op: AluOp, a: Array, b: Array | np.int64) -> Array:
    """One ALU opcode on int64 copies of int32 lanes; the int32 result."""
    if op == AluOp.MIN:
        return _wrap32(np.minimum(a, b))
    if op == AluOp.MAX:
        return _wrap32(np.maximum(a, b))
    if op == AluOp.ADD:
        return _wrap32(a + b)
    if op == AluOp.MUL:
        return _wrap32(a * b)
    shift = ((np.asarray(b) & 31) ^ 16) - 16  # the low 5 bits, signed
    right = a >> np.maximum(shift, 0)
    left = a << np.maximum(-shift, 0)
    return _wrap32(np.where(shift >= 0, right, left))


def _describe_any(insn: object) -> str:
    if isinstance(insn, MemInsn | GemmInsn | AluInsn | FinishInsn):
        return describe(insn)
    return type(insn).__name__


__all__ = [
    "DRAM",
    "GRANULE",
    "MODULES",
    "CycleModel",
    "Report",
    "Simulator",
    "Timing",
    "module_of",
    "run",
]
