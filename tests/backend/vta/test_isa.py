"""The VTA instruction encoding: golden vectors, field ranges and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from relay.backend.vta import (
    DEFAULT,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Uop,
    VTAConfig,
    decode,
    decode_stream,
    decode_uop,
    decode_uops,
    encode,
    encode_stream,
    encode_uop,
    encode_uops,
    validate,
)
from relay.errors import RelayError, VTAError

# The golden vectors of the specification (gcc on hw_spec.h), in memory order.
GOLDEN_MEM = MemInsn(
    Opcode.LOAD,
    MemId.INP,
    sram_base=0x1234,
    dram_base=0xDEADBEEF,
    y_size=7,
    x_size=300,
    x_stride=1000,
    y_pad_0=1,
    y_pad_1=2,
    x_pad_0=3,
    x_pad_1=15,
    pop_next=True,
    push_next=True,
)
GOLDEN_GEMM = GemmInsn(
    reset_reg=True,
    uop_bgn=8191,
    uop_end=8192,
    iter_out=16383,
    iter_in=5,
    dst_factor_out=2047,
    dst_factor_in=3,
    src_factor_out=17,
    src_factor_in=1024,
    wgt_factor_out=1023,
    wgt_factor_in=9,
    pop_prev=True,
    push_next=True,
)
GOLDEN_ALU = AluInsn(
    AluOp.SHR,
    uop_bgn=3,
    uop_end=77,
    iter_out=2,
    iter_in=300,
    dst_factor_out=5,
    dst_factor_in=6,
    src_factor_out=7,
    src_factor_in=8,
    use_imm=True,
    imm=-5,
    push_prev=True,
)


@pytest.mark.parametrize(
    ("insn", "hex_bytes"),
    [
        (GOLDEN_MEM, "50d148bcfbb67a0307002c01e80321f3"),
        (GOLDEN_GEMM, "caff1f00fcff0b00ff1f400400f87f02"),
        (GOLDEN_ALU, "2403a009100058020530c00110b0fbff"),
    ],
)
def test_golden_instruction_vectors(insn, hex_bytes):
    assert encode(insn).hex() == hex_bytes
    assert decode(bytes.fromhex(hex_bytes)) == insn


def test_golden_uop_vector():
    assert encode_uop(Uop(2047, 1234, 1023)).hex() == "ff97e6ff"
    assert decode_uop(bytes.fromhex("ff97e6ff")) == Uop(2047, 1234, 1023)


def test_finish_is_the_gemm_layout_with_opcode_3():
    data = encode(FinishInsn(push_prev=True))
    assert data.hex() == "23" + "00" * 15
    assert decode(data) == FinishInsn(push_prev=True)
    # the GEMM fields of a FINISH word are ignored
    assert decode(bytes.fromhex("03ff1f00fcff0b00ff1f400400f87f02")) == FinishInsn()


def test_default_configuration():
    c = DEFAULT
    assert c == VTAConfig()
    assert c.bitstream == "1x16_i8w8a32_15_15_18_17"
    assert (c.batch, c.block_in, c.block_out) == (1, 16, 16)
    assert (c.inp_width, c.wgt_width, c.acc_width, c.out_width) == (8, 8, 32, 8)
    assert (c.uop_depth, c.inp_depth, c.wgt_depth, c.acc_depth) == (8192, 2048, 1024, 2048)
    assert (c.log_uop_depth, c.log_inp_depth, c.log_wgt_depth, c.log_acc_depth) == (13, 11, 10, 11)
    assert (c.inp_elem_bytes, c.wgt_elem_bytes, c.acc_elem_bytes, c.out_elem_bytes) == (
        16,
        256,
        64,
        16,
    )
    assert (c.uop_elem_bytes, c.acc8_elem_bytes) == (4, 16)


def test_a_configuration_whose_fields_do_not_fit_is_rejected():
    with pytest.raises(VTAError) as err:
        VTAConfig(log_uop_buff_size=30)
    assert err.value.message == (
        "VTAConfig 1x16_i8w8a32_30_15_18_17: the buffer depths make the instruction fields "
        "too wide (GEMM words 93 and 64 bits, ALU second word 64, uop 32; at most 64, 64, 64 "
        "and 32)"
    )
    assert issubclass(VTAError, RelayError)


FLAGS = [("pop_prev", 1), ("pop_next", 1), ("push_prev", 1), ("push_next", 1)]
MEM_FIELDS = [
    ("sram_base", 16),
    ("dram_base", 32),
    ("y_size", 16),
    ("x_size", 16),
    ("x_stride", 16),
    ("y_pad_0", 4),
    ("y_pad_1", 4),
    ("x_pad_0", 4),
    ("x_pad_1", 4),
    *FLAGS,
]
LOOP_FIELDS = [
    ("reset_reg", 1),
    ("uop_bgn", 13),
    ("uop_end", 14),
    ("iter_out", 14),
    ("iter_in", 14),
    ("dst_factor_out", 11),
    ("dst_factor_in", 11),
    ("src_factor_out", 11),
    ("src_factor_in", 11),
    *FLAGS,
]
GEMM_FIELDS = [*LOOP_FIELDS, ("wgt_factor_out", 10), ("wgt_factor_in", 10)]
ALU_FIELDS = [*LOOP_FIELDS, ("use_imm", 1)]
CASES = (
    [(MemInsn(Opcode.STORE, MemId.OUT), "STORE OUT", f, w) for f, w in MEM_FIELDS]
    + [(GemmInsn(), "GEMM", f, w) for f, w in GEMM_FIELDS]
    + [(AluInsn(AluOp.MAX), "ALU MAX", f, w) for f, w in ALU_FIELDS]
    + [(FinishInsn(), "FINISH", f, w) for f, w in FLAGS]
)


@pytest.mark.parametrize(("base", "name", "field", "width"), CASES)
def test_every_field_rejects_values_outside_its_bits(base, name, field, width):
    top = (1 << width) - 1
    encode(_replace(base, field, top))  # the largest value fits
    for bad in (1 << width, -1):
        with pytest.raises(VTAError) as err:
            encode(_replace(base, field, bad))
        assert err.value.message == (
            f"{name}: {field} = {bad} is out of range 0..{top} ({width}-bit field)"
        )


def _replace(insn, field, value):
    import dataclasses

    return dataclasses.replace(insn, **{field: value})


@pytest.mark.parametrize(("field", "width"), [("dst_idx", 11), ("src_idx", 11), ("wgt_idx", 10)])
def test_uop_fields_reject_values_outside_their_bits(field, width):
    encode_uop(_replace(Uop(0), field, (1 << width) - 1))
    with pytest.raises(VTAError) as err:
        encode_uop(_replace(Uop(0), field, 1 << width))
    assert err.value.message == (
        f"uop: {field} = {1 << width} is out of range 0..{(1 << width) - 1} ({width}-bit field)"
    )


@pytest.mark.parametrize("imm", [-32769, 32768])
def test_imm_must_be_an_int16(imm):
    encode(AluInsn(AluOp.ADD, use_imm=True, imm=-32768))
    encode(AluInsn(AluOp.ADD, use_imm=True, imm=32767))
    with pytest.raises(VTAError) as err:
        encode(AluInsn(AluOp.ADD, use_imm=True, imm=imm))
    assert err.value.message == f"ALU ADD: imm = {imm} is out of range -32768..32767 (int16)"


def test_imm_is_twos_complement_in_the_top_16_bits():
    assert encode(AluInsn(AluOp.ADD, imm=-1))[14:] == b"\xff\xff"
    assert encode(AluInsn(AluOp.ADD, imm=-32768))[14:] == b"\x00\x80"
    assert decode(encode(AluInsn(AluOp.ADD, imm=-32768))).imm == -32768  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("insn", "message"),
    [
        (
            MemInsn(Opcode.LOAD, 6),  # type: ignore[arg-type]
            "LOAD 6: unknown memory_type 6 (expected UOP=0, WGT=1, INP=2, ACC=3, OUT=4, "
            "ACC_8BIT=5)",
        ),
        (
            MemInsn(Opcode.GEMM, MemId.INP),
            "GEMM INP: a MemInsn's opcode must be LOAD or STORE, not GEMM",
        ),
        (
            MemInsn(7, MemId.INP),  # type: ignore[arg-type]
            "7 INP: unknown opcode 7 (expected LOAD=0, STORE=1, GEMM=2, FINISH=3, ALU=4)",
        ),
        (
            AluInsn(5),  # type: ignore[arg-type]
            "ALU 5: unknown alu_opcode 5 (expected MIN=0, MAX=1, ADD=2, SHR=3, MUL=4)",
        ),
        (GemmInsn(iter_in=1.5), "GEMM: iter_in = 1.5 is not an integer"),  # type: ignore[arg-type]
    ],
)
def test_unknown_codes_and_non_integers_are_rejected(insn, message):
    with pytest.raises(VTAError) as err:
        encode(insn)
    assert err.value.message == message
    with pytest.raises(VTAError):
        validate(insn)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (bytes(15), "instruction: an instruction is 16 bytes, got 15"),
        (
            bytes([5]) + bytes(15),
            "instruction: unknown opcode 5 (expected LOAD=0, STORE=1, GEMM=2, FINISH=3, ALU=4)",
        ),
        (
            bytes([7 << 7 & 0xFF, 7 >> 1]) + bytes(14),
            "instruction: unknown memory_type 7 (expected UOP=0, WGT=1, INP=2, ACC=3, OUT=4, "
            "ACC_8BIT=5)",
        ),
        (
            bytes([4]) + bytes(12) + bytes([0x70, 0, 0]),
            "instruction: unknown alu_opcode 7 (expected MIN=0, MAX=1, ADD=2, SHR=3, MUL=4)",
        ),
    ],
)
def test_decode_rejects_bad_words(data, message):
    with pytest.raises(VTAError) as err:
        decode(data)
    assert err.value.message == message


def test_decoding_ignores_the_unused_bits_of_a_memory_instruction():
    word = int.from_bytes(encode(GOLDEN_MEM), "little") | (0x3F << 58)
    assert decode(word.to_bytes(16, "little")) == GOLDEN_MEM


def test_streams_round_trip_and_name_the_bad_instruction():
    insns = [GOLDEN_MEM, GOLDEN_GEMM, GOLDEN_ALU, FinishInsn()]
    data = encode_stream(insns)
    assert len(data) == 64
    assert decode_stream(data) == insns
    with pytest.raises(VTAError) as err:
        encode_stream([GOLDEN_MEM, GemmInsn(uop_end=16384)])
    assert err.value.message == (
        "instruction 1 (GEMM): uop_end = 16384 is out of range 0..16383 (14-bit field)"
    )
    with pytest.raises(VTAError) as err:
        decode_stream(data[:20])
    assert err.value.message == (
        "an instruction stream of 20 bytes is not a whole number of 16-byte instructions"
    )
    with pytest.raises(VTAError) as err:
        decode_stream(data[:16] + bytes([6]) + bytes(15))
    assert err.value.message.startswith("instruction 1: unknown opcode 6")


def test_uop_arrays_round_trip():
    uops = [Uop(1, 2, 3), Uop(2047, 0, 1023), Uop(0, 2047, 0)]
    data = encode_uops(uops)
    assert data[:4] == (1 | 2 << 11 | 3 << 22).to_bytes(4, "little")
    assert decode_uops(data) == uops
    with pytest.raises(VTAError) as err:
        encode_uops([Uop(0), Uop(0, 0, 1024)])
    assert err.value.message == "uop 1: wgt_idx = 1024 is out of range 0..1023 (10-bit field)"
    with pytest.raises(VTAError) as err:
        decode_uops(bytes(6))
    assert err.value.message == "a uop array of 6 bytes is not a whole number of 4-byte uops"


def _u(bits: int) -> st.SearchStrategy[int]:
    return st.integers(0, (1 << bits) - 1)


_flags = {f: st.booleans() for f, _ in FLAGS}
mem_insns = st.builds(
    MemInsn,
    opcode=st.sampled_from([Opcode.LOAD, Opcode.STORE]),
    memory_type=st.sampled_from(list(MemId)),
    sram_base=_u(16),
    dram_base=_u(32),
    y_size=_u(16),
    x_size=_u(16),
    x_stride=_u(16),
    y_pad_0=_u(4),
    y_pad_1=_u(4),
    x_pad_0=_u(4),
    x_pad_1=_u(4),
    **_flags,
)
_loop = {
    "reset_reg": st.booleans(),
    "uop_bgn": _u(13),
    "uop_end": _u(14),
    "iter_out": _u(14),
    "iter_in": _u(14),
    "dst_factor_out": _u(11),
    "dst_factor_in": _u(11),
    "src_factor_out": _u(11),
    "src_factor_in": _u(11),
    **_flags,
}
gemm_insns = st.builds(GemmInsn, wgt_factor_out=_u(10), wgt_factor_in=_u(10), **_loop)
alu_insns = st.builds(
    AluInsn,
    alu_opcode=st.sampled_from(list(AluOp)),
    use_imm=st.booleans(),
    imm=st.integers(-32768, 32767),
    **_loop,
)
finish_insns = st.builds(FinishInsn, **_flags)
insns = st.one_of(mem_insns, gemm_insns, alu_insns, finish_insns)


@settings(max_examples=300)
@given(insns)
def test_encode_decode_round_trip(insn):
    data = encode(insn)
    assert len(data) == 16
    assert decode(data) == insn
    assert encode(decode(data)) == data


@settings(max_examples=100)
@given(st.lists(insns, max_size=8))
def test_stream_round_trip(stream):
    assert decode_stream(encode_stream(stream)) == stream


@settings(max_examples=200)
@given(st.builds(Uop, dst_idx=_u(11), src_idx=_u(11), wgt_idx=_u(10)))
def test_uop_round_trip(uop):
    data = encode_uop(uop)
    assert decode_uop(data) == uop
    word = int.from_bytes(data, "little")
    assert word == uop.dst_idx | uop.src_idx << 11 | uop.wgt_idx << 22
