"""The VTA instruction set: configuration, instructions, micro-ops and their binary form.

VTA (the Versatile Tensor Accelerator of TVM) runs a task-level instruction stream of 128-bit
instructions (LOAD, STORE, GEMM, ALU, FINISH) whose GEMM and ALU instructions run 32-bit
micro-ops (uops) inside a two-level affine loop nest. This module is the bit-exact encoder and
decoder of both, for the configuration in :class:`VTAConfig` (by default VTA's default
configuration, ``1x16_i8w8a32_15_15_18_17``).

Layout. An instruction is one 128-bit little-endian integer (stored as two little-endian
uint64 words, bit 0 = the lowest bit of byte 0); every field occupies ``[lo, lo + width)``.
The fields and their order follow the C bit-field structs ``VTAMemInsn``, ``VTAGemInsn`` and
``VTAAluInsn`` of apache/tvm-vta ``include/vta/hw_spec.h`` (checked against the golden vectors
of the project's specification, /work/shared/specs/vta-isa.md, which gcc produced from that
header). A bit field never straddles the two words: the second word of GEMM and ALU starts at
bit 64, and LOAD/STORE leave bits 58..63 unused. FINISH uses the GEMM layout; only its opcode
and dependency flags mean anything, so :class:`FinishInsn` holds just those and encodes the
rest as zeros. The widths of the uop-range, loop-factor and uop fields derive from the buffer
depths (``VTA_LOG_*_BUFF_DEPTH``), the others are fixed (``hw_spec_const.h``); for the default
configuration:

====================  ===================================================================
common                opcode[0:3] pop_prev[3] pop_next[4] push_prev[5] push_next[6]
LOAD/STORE            memory_type[7:10] sram_base[10:26] dram_base[26:58] y_size[64:80]
                      x_size[80:96] x_stride[96:112] y_pad_0[112:116] y_pad_1[116:120]
                      x_pad_0[120:124] x_pad_1[124:128]
GEMM (and FINISH)     reset_reg[7] uop_bgn[8:21] uop_end[21:35] iter_out[35:49] iter_in[49:63]
                      dst_factor_out[64:75] dst_factor_in[75:86] src_factor_out[86:97]
                      src_factor_in[97:108] wgt_factor_out[108:118] wgt_factor_in[118:128]
ALU                   as GEMM up to src_factor_in, then alu_opcode[108:111] use_imm[111]
                      imm[112:128] (two's complement int16)
uop (32 bits)         dst_idx[0:11] src_idx[11:22] wgt_idx[22:32]
====================  ===================================================================

Validation (:func:`validate`, run by :func:`encode` and by the simulator) rejects a field that
is not an integer, is negative or too wide for its bit field, an ``imm`` outside int16, and an
unknown opcode, memory type or ALU opcode, with a :class:`~relay.errors.VTAError` naming the
instruction, the field, its value and its range. Decoding ignores the unused bits, as the
hardware does.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from enum import IntEnum
from functools import cache
from typing import ClassVar

from relay.errors import VTAError

INSN_BYTES = 16
UOP_BYTES = 4

# Fixed widths (hw_spec_const.h): opcode, memory id, SRAM/DRAM address, size, stride, pad,
# loop iteration count, ALU opcode, immediate.
OPCODE_BITS = 3
MEMOP_ID_BITS = 3
SRAM_ADDR_BITS = 16
DRAM_ADDR_BITS = 32
SIZE_BITS = 16
STRIDE_BITS = 16
PAD_BITS = 4
LOOP_ITER_BITS = 14
ALU_OPCODE_BITS = 3
IMM_BITS = 16


@dataclass(frozen=True, slots=True)
class VTAConfig:
    """A VTA hardware configuration (the fields of ``config/vta_config.json``).

    The defaults are VTA's default configuration (identical to ``fsim_sample.json`` and
    ``pynq_sample.json``): int8 inputs and weights, int32 accumulators, batch 1, 16x16 blocks,
    a 32 KiB uop buffer, 32 KiB input, 256 KiB weight and 128 KiB accumulator buffers. The
    properties are the derived quantities of ``pkg_config.py`` and ``hw_spec_const.h``.
    """

    log_inp_width: int = 3
    log_wgt_width: int = 3
    log_acc_width: int = 5
    log_batch: int = 0
    log_block: int = 4
    log_uop_buff_size: int = 15
    log_inp_buff_size: int = 15
    log_wgt_buff_size: int = 18
    log_acc_buff_size: int = 17

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 0:
                raise VTAError(f"VTAConfig: {f.name} = {getattr(self, f.name)} is negative")
        depths = (self.log_uop_depth, self.log_inp_depth, self.log_wgt_depth)
        if min(*depths, self.log_acc_depth) < 0:
            raise VTAError(f"VTAConfig {self.bitstream}: a buffer holds less than one element")
        gemm0 = OPCODE_BITS + 4 + 1 + 2 * self.log_uop_depth + 1 + 2 * LOOP_ITER_BITS
        gemm1 = 2 * (self.log_acc_depth + self.log_inp_depth + self.log_wgt_depth)
        alu1 = 2 * (self.log_acc_depth + self.log_inp_depth) + ALU_OPCODE_BITS + 1 + IMM_BITS
        uop = self.log_acc_depth + self.log_inp_depth + self.log_wgt_depth
        if max(gemm0, gemm1, alu1) > 64 or uop > 32:
            raise VTAError(
                f"VTAConfig {self.bitstream}: the buffer depths make the instruction fields "
                f"too wide (GEMM words {gemm0} and {gemm1} bits, ALU second word {alu1}, "
                f"uop {uop}; at most 64, 64, 64 and 32)"
            )

    @property
    def inp_width(self) -> int:
        """Bits of one input element (8)."""
        return 1 << self.log_inp_width

    @property
    def wgt_width(self) -> int:
        """Bits of one weight element (8)."""
        return 1 << self.log_wgt_width

    @property
    def acc_width(self) -> int:
        """Bits of one accumulator element (32)."""
        return 1 << self.log_acc_width

    @property
    def out_width(self) -> int:
        """Bits of one output element (the input width, 8)."""
        return self.inp_width

    @property
    def batch(self) -> int:
        """Rows of the GEMM core's input (1)."""
        return 1 << self.log_batch

    @property
    def block_in(self) -> int:
        """The GEMM core's reduction width (16)."""
        return 1 << self.log_block

    @property
    def block_out(self) -> int:
        """The GEMM core's output width (16)."""
        return 1 << self.log_block

    @property
    def inp_elem_bytes(self) -> int:
        """Bytes of one input buffer element, ``[batch][block_in]`` (16)."""
        return self.batch * self.block_in * self.inp_width // 8

    @property
    def wgt_elem_bytes(self) -> int:
        """Bytes of one weight buffer element, ``[block_out][block_in]`` (256)."""
        return self.block_out * self.block_in * self.wgt_width // 8

    @property
    def acc_elem_bytes(self) -> int:
        """Bytes of one accumulator element, ``[batch][block_out]`` (64)."""
        return self.batch * self.block_out * self.acc_width // 8

    @property
    def out_elem_bytes(self) -> int:
        """Bytes of one output element, ``[batch][block_out]`` (16)."""
        return self.batch * self.block_out * self.out_width // 8

    @property
    def uop_elem_bytes(self) -> int:
        """Bytes of one micro-op (4)."""
        return UOP_BYTES

    @property
    def acc8_elem_bytes(self) -> int:
        """Bytes of one ACC_8BIT element in DRAM: ``[batch][block_out]`` int8 (16)."""
        return self.batch * self.block_out * self.inp_width // 8

    @property
    def log_uop_depth(self) -> int:
        """log2 of the uop buffer's depth (13)."""
        return self.log_uop_buff_size - 5 + 3

    @property
    def log_inp_depth(self) -> int:
        """log2 of the input buffer's depth (11)."""
        return self.log_inp_buff_size - self.log_batch - self.log_block - self.log_inp_width + 3

    @property
    def log_wgt_depth(self) -> int:
        """log2 of the weight buffer's depth (10)."""
        return self.log_wgt_buff_size - 2 * self.log_block - self.log_wgt_width + 3

    @property
    def log_acc_depth(self) -> int:
        """log2 of the accumulator's depth (11)."""
        return self.log_acc_buff_size - self.log_batch - self.log_block - self.log_acc_width + 3

    @property
    def uop_depth(self) -> int:
        """Micro-ops in the uop buffer (8192)."""
        return 1 << self.log_uop_depth

    @property
    def inp_depth(self) -> int:
        """Elements in the input buffer (2048)."""
        return 1 << self.log_inp_depth

    @property
    def wgt_depth(self) -> int:
        """Elements in the weight buffer (1024)."""
        return 1 << self.log_wgt_depth

    @property
    def acc_depth(self) -> int:
        """Elements in the accumulator (2048); the HLS output buffer has the same depth."""
        return 1 << self.log_acc_depth

    @property
    def bitstream(self) -> str:
        """The configuration's name (``pkg_config.py``): ``1x16_i8w8a32_15_15_18_17``."""
        return (
            f"{self.batch}x{self.block_in}_i{self.inp_width}w{self.wgt_width}a{self.acc_width}"
            f"_{self.log_uop_buff_size}_{self.log_inp_buff_size}_{self.log_wgt_buff_size}"
            f"_{self.log_acc_buff_size}"
        )


DEFAULT = VTAConfig()


class Opcode(IntEnum):
    """Instruction opcodes (``VTA_OPCODE_*``)."""

    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4


class MemId(IntEnum):
    """The memory a LOAD or STORE moves (``VTA_MEM_ID_*``). ACC_8BIT loads int8 from DRAM
    into the int32 accumulator, sign-extending."""

    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3
    OUT = 4
    ACC_8BIT = 5


class AluOp(IntEnum):
    """ALU opcodes (``VTA_ALU_OPCODE_*``); MUL exists only in the fsim simulator."""

    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


class Module(IntEnum):
    """VTA's modules, in pipeline order (instruction flags name their neighbours ``prev`` and
    ``next`` in this order)."""

    LOAD = 0
    COMPUTE = 1
    STORE = 2


@dataclass(frozen=True, slots=True)
class MemInsn:
    """LOAD or STORE (``VTAMemInsn``): a 2D strided DMA of ``y_size`` rows of ``x_size``
    elements between DRAM (element address ``dram_base``, rows ``x_stride`` elements apart)
    and an on-chip buffer (element address ``sram_base``, dense), with zero padding around a
    LOAD. ``x_size == 0`` moves nothing: the instruction only carries dependency tokens."""

    opcode: Opcode
    memory_type: MemId
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False


@dataclass(frozen=True, slots=True)
class GemmInsn:
    """GEMM (``VTAGemInsn``): for ``i < iter_out``, ``j < iter_in``, ``uop_bgn <= u < uop_end``
    the uop ``u`` accumulates ``inp[src] . wgt[wgt]^T`` into ``acc[dst]`` (or zeroes
    ``acc[dst]`` when ``reset_reg``), each index offset by ``i * *_factor_out + j *
    *_factor_in``."""

    opcode: ClassVar[Opcode] = Opcode.GEMM
    reset_reg: bool = False
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False


@dataclass(frozen=True, slots=True)
class AluInsn:
    """ALU (``VTAAluInsn``): the GEMM loop nest, each uop computing ``acc[dst] =
    alu_opcode(acc[dst], imm if use_imm else acc[src])`` lane by lane. ``reset_reg`` is encoded
    but the ALU ignores it."""

    opcode: ClassVar[Opcode] = Opcode.ALU
    alu_opcode: AluOp
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0
    use_imm: bool = False
    imm: int = 0
    reset_reg: bool = False
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False


@dataclass(frozen=True, slots=True)
class FinishInsn:
    """FINISH: ends the run. It has the GEMM layout, of which only the flags mean anything."""

    opcode: ClassVar[Opcode] = Opcode.FINISH
    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False


Insn = MemInsn | GemmInsn | AluInsn | FinishInsn


def module_of(insn: Insn) -> Module:
    """The module that runs ``insn``, as the fetch stage routes it (vta.cc ``fetch``): STORE to
    the store module, LOAD of INP or WGT to the load module, everything else (LOAD of UOP, ACC
    or ACC_8BIT, GEMM, ALU, FINISH) to the compute module."""
    if isinstance(insn, MemInsn):
        if insn.opcode == Opcode.STORE:
            return Module.STORE
        if insn.memory_type in (MemId.INP, MemId.WGT):
            return Module.LOAD
    return Module.COMPUTE


@dataclass(frozen=True, slots=True)
class Uop:
    """A micro-op: ``dst_idx`` is an accumulator row; ``src_idx`` an input row (GEMM) or an
    accumulator row (ALU); ``wgt_idx`` a weight row (GEMM only)."""

    dst_idx: int
    src_idx: int = 0
    wgt_idx: int = 0


# --- layouts ---------------------------------------------------------------------------------

Layout = tuple[tuple[str, int, int], ...]  # (field, lo, width)

_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")


def _place(words: Sequence[Sequence[tuple[str, int]]]) -> Layout:
    """Field positions of a struct of consecutive 64-bit words of (field, width)."""
    out = []
    for w, word in enumerate(words):
        lo = 64 * w
        for name, width in word:
            out.append((name, lo, width))
            lo += width
    return tuple(out)


_HEAD = (("opcode", OPCODE_BITS), *((f, 1) for f in _FLAGS))


@cache
def mem_layout(config: VTAConfig = DEFAULT) -> Layout:
    """Field positions of LOAD/STORE (``VTAMemInsn``)."""
    del config  # the memory instruction's widths are fixed
    return _place(
        [
            (
                *_HEAD,
                ("memory_type", MEMOP_ID_BITS),
                ("sram_base", SRAM_ADDR_BITS),
                ("dram_base", DRAM_ADDR_BITS),
            ),
            (
                ("y_size", SIZE_BITS),
                ("x_size", SIZE_BITS),
                ("x_stride", STRIDE_BITS),
                ("y_pad_0", PAD_BITS),
                ("y_pad_1", PAD_BITS),
                ("x_pad_0", PAD_BITS),
                ("x_pad_1", PAD_BITS),
            ),
        ]
    )


def _loop_word(config: VTAConfig) -> tuple[tuple[str, int], ...]:
    return (
        *_HEAD,
        ("reset_reg", 1),
        ("uop_bgn", config.log_uop_depth),
        ("uop_end", config.log_uop_depth + 1),
        ("iter_out", LOOP_ITER_BITS),
        ("iter_in", LOOP_ITER_BITS),
    )


@cache
def gemm_layout(config: VTAConfig = DEFAULT) -> Layout:
    """Field positions of GEMM and FINISH (``VTAGemInsn``)."""
    return _place(
        [
            _loop_word(config),
            (
                ("dst_factor_out", config.log_acc_depth),
                ("dst_factor_in", config.log_acc_depth),
                ("src_factor_out", config.log_inp_depth),
                ("src_factor_in", config.log_inp_depth),
                ("wgt_factor_out", config.log_wgt_depth),
                ("wgt_factor_in", config.log_wgt_depth),
            ),
        ]
    )


@cache
def alu_layout(config: VTAConfig = DEFAULT) -> Layout:
    """Field positions of ALU (``VTAAluInsn``); ``imm`` is stored as two's complement."""
    return _place(
        [
            _loop_word(config),
            (
                ("dst_factor_out", config.log_acc_depth),
                ("dst_factor_in", config.log_acc_depth),
                ("src_factor_out", config.log_inp_depth),
                ("src_factor_in", config.log_inp_depth),
                ("alu_opcode", ALU_OPCODE_BITS),
                ("use_imm", 1),
                ("imm", IMM_BITS),
            ),
        ]
    )


@cache
def uop_layout(config: VTAConfig = DEFAULT) -> Layout:
    """Field positions of a micro-op (``VTAUop``)."""
    return _place(
        [
            (
                ("dst_idx", config.log_acc_depth),
                ("src_idx", config.log_inp_depth),
                ("wgt_idx", config.log_wgt_depth),
            )
        ]
    )


def layout_of(insn: Insn, config: VTAConfig = DEFAULT) -> Layout:
    """The field positions of ``insn``'s kind."""
    if isinstance(insn, MemInsn):
        return mem_layout(config)
    if isinstance(insn, AluInsn):
        return alu_layout(config)
    return gemm_layout(config)


# --- validation ------------------------------------------------------------------------------


def _name(enum: type[IntEnum], value: object) -> str:
    if isinstance(value, int):
        try:
            return enum(value).name
        except ValueError:
            pass
    return str(value)


def describe(insn: Insn) -> str:
    """A short name of ``insn``: ``LOAD INP``, ``STORE OUT``, ``GEMM``, ``ALU ADD``, ``FINISH``."""
    if isinstance(insn, MemInsn):
        return f"{_name(Opcode, insn.opcode)} {_name(MemId, insn.memory_type)}"
    if isinstance(insn, AluInsn):
        return f"ALU {_name(AluOp, insn.alu_opcode)}"
    return insn.opcode.name


def _enum_list(enum: type[IntEnum]) -> str:
    return ", ".join(f"{m.name}={m.value}" for m in enum)


def _field_value(where: str, name: str, value: object) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise VTAError(f"{where}: {name} = {value!r} is not an integer") from None


def _check_unsigned(where: str, name: str, value: object, width: int) -> int:
    v = _field_value(where, name, value)
    if not 0 <= v < 1 << width:
        raise VTAError(
            f"{where}: {name} = {v} is out of range 0..{(1 << width) - 1} ({width}-bit field)"
        )
    return v


def _check_enum(where: str, name: str, value: object, enum: type[IntEnum]) -> int:
    v = _field_value(where, name, value)
    if v not in {m.value for m in enum}:
        raise VTAError(f"{where}: unknown {name} {v} (expected {_enum_list(enum)})")
    return v


def _values(insn: Insn, config: VTAConfig, where: str) -> dict[str, int]:
    """The validated integer value of every encoded field of ``insn``."""
    if not isinstance(insn, MemInsn | GemmInsn | AluInsn | FinishInsn):
        raise VTAError(f"{where}: {insn!r} is not a VTA instruction")
    values: dict[str, int] = {}
    if isinstance(insn, MemInsn):
        opcode = _check_enum(where, "opcode", insn.opcode, Opcode)
        if opcode not in (Opcode.LOAD, Opcode.STORE):
            raise VTAError(
                f"{where}: a MemInsn's opcode must be LOAD or STORE, not {Opcode(opcode).name}"
            )
        values["opcode"] = opcode
        values["memory_type"] = _check_enum(where, "memory_type", insn.memory_type, MemId)
    else:
        values["opcode"] = int(insn.opcode)
    if isinstance(insn, AluInsn):
        values["alu_opcode"] = _check_enum(where, "alu_opcode", insn.alu_opcode, AluOp)
        imm = _field_value(where, "imm", insn.imm)
        lo, hi = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1
        if not lo <= imm <= hi:
            raise VTAError(f"{where}: imm = {imm} is out of range {lo}..{hi} (int16)")
        values["imm"] = imm & ((1 << IMM_BITS) - 1)
    for name, _, width in layout_of(insn, config):
        if name in values:
            continue
        if isinstance(insn, FinishInsn) and name not in _FLAGS:
            values[name] = 0
            continue
        values[name] = _check_unsigned(where, name, getattr(insn, name), width)
    return values


def validate(insn: Insn, config: VTAConfig = DEFAULT, where: str | None = None) -> None:
    """Raise :class:`~relay.errors.VTAError` if a field of ``insn`` does not fit its bit field.

    ``where`` prefixes the message (by default :func:`describe` of the instruction)."""
    _values(insn, config, where or _safe_describe(insn))


def _safe_describe(insn: object) -> str:
    if isinstance(insn, MemInsn | GemmInsn | AluInsn | FinishInsn):
        return describe(insn)
    return "instruction"


# --- encoding --------------------------------------------------------------------------------


def _pack(values: dict[str, int], layout: Layout) -> int:
    word = 0
    for name, lo, _ in layout:
        word |= values[name] << lo
    return word


def _unpack(word: int, layout: Layout) -> dict[str, int]:
    return {name: (word >> lo) & ((1 << width) - 1) for name, lo, width in layout}


def encode(insn: Insn, config: VTAConfig = DEFAULT, where: str | None = None) -> bytes:
    """The 16 bytes of ``insn`` (two little-endian uint64 words), after :func:`validate`."""
    values = _values(insn, config, where or _safe_describe(insn))
    return _pack(values, layout_of(insn, config)).to_bytes(INSN_BYTES, "little")


def decode(data: bytes, config: VTAConfig = DEFAULT, where: str = "instruction") -> Insn:
    """The instruction encoded in the 16 bytes ``data`` (unused bits are ignored)."""
    if len(data) != INSN_BYTES:
        raise VTAError(f"{where}: an instruction is {INSN_BYTES} bytes, got {len(data)}")
    word = int.from_bytes(data, "little")
    opcode = _check_enum(where, "opcode", word & ((1 << OPCODE_BITS) - 1), Opcode)
    if opcode in (Opcode.LOAD, Opcode.STORE):
        v = _unpack(word, mem_layout(config))
        return MemInsn(
            opcode=Opcode(opcode),
            memory_type=MemId(_check_enum(where, "memory_type", v["memory_type"], MemId)),
            sram_base=v["sram_base"],
            dram_base=v["dram_base"],
            y_size=v["y_size"],
            x_size=v["x_size"],
            x_stride=v["x_stride"],
            y_pad_0=v["y_pad_0"],
            y_pad_1=v["y_pad_1"],
            x_pad_0=v["x_pad_0"],
            x_pad_1=v["x_pad_1"],
            **{f: bool(v[f]) for f in _FLAGS},
        )
    if opcode == Opcode.ALU:
        v = _unpack(word, alu_layout(config))
        imm = v["imm"] - (1 << IMM_BITS) if v["imm"] >> (IMM_BITS - 1) else v["imm"]
        return AluInsn(
            alu_opcode=AluOp(_check_enum(where, "alu_opcode", v["alu_opcode"], AluOp)),
            uop_bgn=v["uop_bgn"],
            uop_end=v["uop_end"],
            iter_out=v["iter_out"],
            iter_in=v["iter_in"],
            dst_factor_out=v["dst_factor_out"],
            dst_factor_in=v["dst_factor_in"],
            src_factor_out=v["src_factor_out"],
            src_factor_in=v["src_factor_in"],
            use_imm=bool(v["use_imm"]),
            imm=imm,
            reset_reg=bool(v["reset_reg"]),
            **{f: bool(v[f]) for f in _FLAGS},
        )
    v = _unpack(word, gemm_layout(config))
    flags = {f: bool(v[f]) for f in _FLAGS}
    if opcode == Opcode.FINISH:
        return FinishInsn(**flags)
    return GemmInsn(
        reset_reg=bool(v["reset_reg"]),
        uop_bgn=v["uop_bgn"],
        uop_end=v["uop_end"],
        iter_out=v["iter_out"],
        iter_in=v["iter_in"],
        dst_factor_out=v["dst_factor_out"],
        dst_factor_in=v["dst_factor_in"],
        src_factor_out=v["src_factor_out"],
        src_factor_in=v["src_factor_in"],
        wgt_factor_out=v["wgt_factor_out"],
        wgt_factor_in=v["wgt_factor_in"],
        **flags,
    )


def encode_stream(insns: Iterable[Insn], config: VTAConfig = DEFAULT) -> bytes:
    """The instructions back to back, as the device fetches them."""
    return b"".join(
        encode(insn, config, f"instruction {i} ({_safe_describe(insn)})")
        for i, insn in enumerate(insns)
    )


def decode_stream(data: bytes, config: VTAConfig = DEFAULT) -> list[Insn]:
    """The instructions of an encoded stream."""
    if len(data) % INSN_BYTES:
        raise VTAError(
            f"an instruction stream of {len(data)} bytes is not a whole number of "
            f"{INSN_BYTES}-byte instructions"
        )
    return [
        decode(data[k : k + INSN_BYTES], config, f"instruction {k // INSN_BYTES}")
        for k in range(0, len(data), INSN_BYTES)
    ]


def encode_uop(uop: Uop, config: VTAConfig = DEFAULT, where: str = "uop") -> bytes:
    """The 4 little-endian bytes of ``uop``."""
    layout = uop_layout(config)
    values = {name: _check_unsigned(where, name, getattr(uop, name), w) for name, _, w in layout}
    return _pack(values, layout).to_bytes(UOP_BYTES, "little")


def decode_uop(data: bytes, config: VTAConfig = DEFAULT, where: str = "uop") -> Uop:
    """The micro-op encoded in the 4 bytes ``data``."""
    if len(data) != UOP_BYTES:
        raise VTAError(f"{where}: a uop is {UOP_BYTES} bytes, got {len(data)}")
    return Uop(**_unpack(int.from_bytes(data, "little"), uop_layout(config)))


def encode_uops(uops: Iterable[Uop], config: VTAConfig = DEFAULT) -> bytes:
    """The micro-ops back to back, as a LOAD UOP reads them from DRAM."""
    return b"".join(encode_uop(u, config, f"uop {i}") for i, u in enumerate(uops))


def decode_uops(data: bytes, config: VTAConfig = DEFAULT) -> list[Uop]:
    """The micro-ops of an encoded uop array."""
    if len(data) % UOP_BYTES:
        raise VTAError(
            f"a uop array of {len(data)} bytes is not a whole number of {UOP_BYTES}-byte uops"
        )
    return [
        decode_uop(data[k : k + UOP_BYTES], config, f"uop {k // UOP_BYTES}")
        for k in range(0, len(data), UOP_BYTES)
    ]


__all__ = [
    "DEFAULT",
    "INSN_BYTES",
    "UOP_BYTES",
    "AluInsn",
    "AluOp",
    "FinishInsn",
    "GemmInsn",
    "Insn",
    "MemId",
    "MemInsn",
    "Opcode",
    "Uop",
    "VTAConfig",
    "alu_layout",
    "decode",
    "decode_stream",
    "decode_uop",
    "decode_uops",
    "describe",
    "encode",
    "encode_stream",
    "encode_uop",
    "encode_uops",
    "gemm_layout",
    "layout_of",
    "mem_layout",
    "uop_layout",
    "validate",
]
