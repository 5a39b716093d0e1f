"""The VTA simulator, in the style of TVM's VTA instruction tests (vta/tests/python/unittest/
test_vta_insn.py): each instruction against numpy, then the dependency checks, the two
schedules, the counters and the cycle estimate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.backend.vta import (
    DRAM,
    AluInsn,
    AluOp,
    CycleModel,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Opcode,
    Simulator,
    Uop,
    encode_stream,
    encode_uops,
    run,
)
from relay.errors import VTAError

INP, WGT, ACC, ACC8, UOP, OUT = (
    MemId.INP,
    MemId.WGT,
    MemId.ACC,
    MemId.ACC_8BIT,
    MemId.UOP,
    MemId.OUT,
)
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def ld(mem, sram, dram, y, x, stride=None, pads=(0, 0, 0, 0), **flags):
    """LOAD ``y`` rows of ``x`` elements (``pads`` = y_pad_0, y_pad_1, x_pad_0, x_pad_1)."""
    yp0, yp1, xp0, xp1 = pads
    stride = x if stride is None else stride
    return MemInsn(Opcode.LOAD, mem, sram, dram, y, x, stride, yp0, yp1, xp0, xp1, **flags)


def st_(sram, dram, y, x, stride=None, **flags):
    """STORE ``y`` rows of ``x`` accumulator rows to OUT elements."""
    return MemInsn(Opcode.STORE, OUT, sram, dram, y, x, x if stride is None else stride, **flags)


def noop(module, **flags):
    """A token carrier on the load, compute or store module, as the runtime's PushNoop."""
    if module == "load":
        return MemInsn(Opcode.LOAD, INP, **flags)
    if module == "compute":
        return MemInsn(Opcode.LOAD, UOP, **flags)
    return MemInsn(Opcode.STORE, OUT, **flags)


def sequence(loads=(), computes=(), stores=()):
    """A correct stream: the loads, then the compute instructions, then the stores, each
    phase ordered after the previous by tokens, then the runtime's synchronization."""
    loads, computes, stores = list(loads), list(computes), list(stores)
    tail = []
    if loads:
        loads[-1] = dataclasses.replace(loads[-1], push_next=True)
        computes = computes or [noop("compute")]
        computes[0] = dataclasses.replace(computes[0], pop_prev=True)
    if stores:
        computes = computes or [noop("compute")]
        computes[-1] = dataclasses.replace(computes[-1], push_next=True)
        stores[0] = dataclasses.replace(stores[0], pop_prev=True)
        stores[-1] = dataclasses.replace(stores[-1], push_prev=True)
        tail.append(noop("compute", pop_next=True))
    return [*loads, *computes, *stores, *tail, FinishInsn()]


def put(dram, array, elem_bytes):
    """Store ``array`` in DRAM; its element address for ``elem_bytes``-byte elements."""
    return dram.put(np.ascontiguousarray(array)) // elem_bytes


def load_uops(dram, uops, sram=0):
    """A LOAD UOP of ``uops`` into the uop buffer at ``sram``."""
    return ld(UOP, sram, put(dram, np.frombuffer(encode_uops(uops), np.uint32), 4), 1, len(uops))


def wrap32(v):
    return (int(v) + 2**31) % 2**32 - 2**31


def low8(v):
    return (int(v) + 128) % 256 - 128


def py_alu(op, a, b):
    """One ALU lane in Python integers (the specification's table)."""
    a, b = int(a), int(b)
    if op == AluOp.MIN:
        return min(a, b)
    if op == AluOp.MAX:
        return max(a, b)
    if op == AluOp.ADD:
        return wrap32(a + b)
    if op == AluOp.MUL:
        return wrap32(a * b)
    s = b & 31  # SHR: the low 5 bits, read as a signed 5-bit amount
    s = s - 32 if s >= 16 else s
    return a >> s if s >= 0 else wrap32(a << -s)


def rand8(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def raises(program, dram=None, message=None, **kw):
    """The VTAError message of running ``program``."""
    with pytest.raises(VTAError) as err:
        run(program, dram or DRAM(), **kw)
    if message is not None:
        assert err.value.message == message
    return err.value.message


# --- LOAD and STORE --------------------------------------------------------------------------


def test_load_inp_and_wgt_fill_their_buffers():
    rng = np.random.default_rng(0)
    dram = DRAM()
    x, w = rand8(rng, (3, 1, 16)), rand8(rng, (2, 16, 16))
    sim = Simulator(dram)
    report = sim.run(
        sequence([ld(INP, 5, put(dram, x, 16), 1, 3), ld(WGT, 7, put(dram, w, 256), 1, 2)])
    )
    np.testing.assert_array_equal(sim.inp[5:8], x)
    np.testing.assert_array_equal(sim.wgt[7:9], w)
    assert (report.inp_load_nbytes, report.wgt_load_nbytes) == (3 * 16, 2 * 256)


def test_acc_load_then_store_round_trips():
    rng = np.random.default_rng(1)
    dram = DRAM()
    data = rng.integers(-128, 128, (4, 1, 16), dtype=np.int32)
    out = dram.alloc(4 * 16) // 16
    run(
        sequence(computes=[ld(ACC, 10, put(dram, data, 64), 1, 4)], stores=[st_(10, out, 1, 4)]),
        dram,
    )
    np.testing.assert_array_equal(dram.read(out * 16, (4, 1, 16), np.int8), data)


@pytest.mark.parametrize(
    "pads", [(2, 0, 0, 0), (0, 2, 0, 0), (0, 0, 2, 0), (0, 0, 0, 2), (1, 2, 3, 4)]
)
def test_padded_loads_zero_fill_around_the_tile(pads):
    rng = np.random.default_rng(2)
    dram = DRAM()
    x = rand8(rng, (2, 3, 1, 16))  # 2 rows of 3 elements
    junk = np.full((64, 1, 16), 7, np.int8)
    sim = Simulator(dram)
    sim.run(sequence([ld(INP, 0, put(dram, junk, 16), 1, 64)]))
    report = sim.run(sequence([ld(INP, 4, put(dram, x, 16), 2, 3, pads=pads)]))
    yp0, yp1, xp0, xp1 = pads
    expected = np.pad(x, ((yp0, yp1), (xp0, xp1), (0, 0), (0, 0))).reshape(-1, 1, 16)
    n = len(expected)
    assert n == (yp0 + 2 + yp1) * (xp0 + 3 + xp1)
    np.testing.assert_array_equal(sim.inp[4 : 4 + n], expected)
    assert (sim.inp[:4] == 7).all() and (sim.inp[4 + n : 64] == 7).all()
    assert report.inp_load_nbytes == 2 * 3 * 16  # padding is not counted


def test_2d_strided_load_takes_a_tile_of_a_matrix():
    rng = np.random.default_rng(3)
    dram = DRAM()
    m = rand8(rng, (5, 7, 1, 16))
    base = put(dram, m, 16)
    sim = Simulator(dram)
    sim.run(sequence([ld(INP, 0, base + 1 * 7 + 2, 3, 4, stride=7)]))
    np.testing.assert_array_equal(sim.inp[:12].reshape(3, 4, 1, 16), m[1:4, 2:6])


def test_2d_strided_store_writes_a_tile_and_nothing_else():
    rng = np.random.default_rng(4)
    dram = DRAM()
    acc = rng.integers(-1000, 1000, (12, 1, 16), dtype=np.int32)
    out = np.full((5, 7, 1, 16), 99, np.int8)
    ob = put(dram, out, 16)
    program = sequence(
        computes=[ld(ACC, 0, put(dram, acc, 64), 1, 12)],
        stores=[st_(0, ob + 1 * 7 + 2, 3, 4, stride=7)],
    )
    report = run(program, dram)
    expected = out.copy()
    expected[1:4, 2:6] = ((acc.astype(np.int64) + 128) % 256 - 128).reshape(3, 4, 1, 16)
    np.testing.assert_array_equal(dram.read(ob * 16, (5, 7, 1, 16), np.int8), expected)
    assert report.out_store_nbytes == 12 * 16


def test_overlapping_store_rows_are_written_in_order():
    dram = DRAM()
    acc = np.arange(6 * 16, dtype=np.int32).reshape(6, 1, 16)
    ob = dram.alloc(4 * 16) // 16
    run(
        sequence(
            computes=[ld(ACC, 0, put(dram, acc, 64), 1, 6)], stores=[st_(0, ob, 2, 3, stride=1)]
        ),
        dram,
    )
    got = dram.read(ob * 16, (4, 16), np.int8)
    np.testing.assert_array_equal(got, acc[[0, 3, 4, 5], 0].astype(np.int8))


def test_acc_loads_int32_and_acc_8bit_sign_extends():
    dram = DRAM()
    wide = np.array([I32_MIN, -1, 0, I32_MAX] * 4, np.int32).reshape(1, 1, 16)
    narrow = np.array([-128, -1, 0, 127] * 4, np.int8).reshape(1, 1, 16)
    sim = Simulator(dram)
    report = sim.run(
        sequence(
            computes=[
                ld(ACC, 3, put(dram, wide, 64), 1, 1),
                ld(ACC8, 4, put(dram, narrow, 16), 1, 1),
            ]
        )
    )
    np.testing.assert_array_equal(sim.acc[3], wide[0])
    np.testing.assert_array_equal(sim.acc[4], narrow[0].astype(np.int32))
    assert report.acc_load_nbytes == 2 * 64  # fsim counts ACC_8BIT as 64 bytes per element


def test_uop_loads_are_raw_words_with_2d_strides_and_padding():
    dram = DRAM()
    uops = [Uop(i, 2 * i, 3 * i) for i in range(6)]
    words = np.frombuffer(encode_uops(uops), np.uint32)
    sim = Simulator(dram)
    sim.uop[:] = 0xFFFFFFFF
    report = sim.run(
        sequence(computes=[ld(UOP, 10, put(dram, words, 4), 2, 2, stride=3, pads=(0, 0, 1, 0))])
    )
    np.testing.assert_array_equal(sim.uop[10:16], [0, words[0], words[1], 0, words[3], words[4]])
    assert sim.uop[16] == 0xFFFFFFFF
    assert report.uop_load_nbytes == 4 * 4


def test_store_wraps_to_int8_instead_of_saturating():
    dram = DRAM()
    values = [
        200,
        -200,
        I32_MAX,
        I32_MIN,
        128,
        -129,
        255,
        256,
        383,
        -385,
        127,
        -128,
        0,
        1,
        -1,
        65535,
    ]
    acc = np.array(values, np.int32).reshape(1, 1, 16)
    ob = dram.alloc(16) // 16
    run(sequence(computes=[ld(ACC, 0, put(dram, acc, 64), 1, 1)], stores=[st_(0, ob, 1, 1)]), dram)
    assert dram.read(ob * 16, 16, np.int8).tolist() == [low8(v) for v in values]
    assert [low8(v) for v in values[:4]] == [-56, 56, -1, 0]


def test_token_carriers_move_nothing_whatever_their_memory_type():
    dram = DRAM()
    program = sequence(
        loads=[MemInsn(Opcode.LOAD, WGT, sram_base=5000, dram_base=10**6, y_size=3)],
        computes=[MemInsn(Opcode.LOAD, ACC, sram_base=9999, x_stride=4)],
        stores=[MemInsn(Opcode.STORE, UOP, y_pad_0=3)],  # the runtime's store no-op says UOP
    )
    report = run(program, dram)
    assert report.counters() == dict.fromkeys(report.counters(), 0)


def test_a_program_can_be_given_encoded():
    rng = np.random.default_rng(5)
    dram = DRAM()
    x = rand8(rng, (2, 1, 16))
    sim = Simulator(dram)
    sim.run(encode_stream(sequence([ld(INP, 0, put(dram, x, 16), 1, 2)])))
    np.testing.assert_array_equal(sim.inp[:2], x)


# --- GEMM ------------------------------------------------------------------------------------


def gemm_reference(acc, inp, wgt, uops, insn):
    """The specification's GEMM loop nest in Python integers."""
    acc = acc.astype(np.int64).copy()
    for i in range(insn.iter_out):
        for j in range(insn.iter_in):
            for u in uops[insn.uop_bgn : insn.uop_end]:
                a = u.dst_idx + i * insn.dst_factor_out + j * insn.dst_factor_in
                s = u.src_idx + i * insn.src_factor_out + j * insn.src_factor_in
                w = u.wgt_idx + i * insn.wgt_factor_out + j * insn.wgt_factor_in
                if insn.reset_reg:
                    acc[a] = 0
                    continue
                for o in range(16):
                    dot = sum(int(inp[s, 0, k]) * int(wgt[w, o, k]) for k in range(16))
                    acc[a, 0, o] = wrap32(acc[a, 0, o] + dot)
    return acc


def test_gemm_accumulates_with_int32_wraparound_and_resets():
    rng = np.random.default_rng(6)
    dram = DRAM()
    inp = rand8(rng, (4, 1, 16))
    inp[0, 0, :] = -128
    wgt = rand8(rng, (3, 16, 16))
    wgt[0] = -128  # row 0 . block 0 = 16 * 16384 per lane: pushes I32_MAX - 1000 over the top
    acc = rng.integers(I32_MAX - 1000, I32_MAX, (12, 1, 16), dtype=np.int32)
    uops = [Uop(0, 0, 0), Uop(1, 1, 1), Uop(2, 2, 0)]
    loops = dict(
        iter_out=2, iter_in=2, dst_factor_out=3, dst_factor_in=6, src_factor_out=1, wgt_factor_in=1
    )
    first = GemmInsn(uop_bgn=0, uop_end=3, **loops)
    reset = GemmInsn(reset_reg=True, uop_bgn=0, uop_end=3)
    twice = GemmInsn(uop_bgn=0, uop_end=3, iter_in=2)  # rows 0, 1, 2, 0, 1, 2
    sim = Simulator(dram)
    report = sim.run(
        sequence(
            loads=[ld(INP, 0, put(dram, inp, 16), 1, 4), ld(WGT, 0, put(dram, wgt, 256), 1, 3)],
            computes=[
                load_uops(dram, uops),
                ld(ACC, 0, put(dram, acc, 64), 1, 12),
                first,
                reset,
                twice,
            ],
        )
    )
    expected = acc
    for insn in (first, reset, twice):
        expected = gemm_reference(expected, inp, wgt, uops, insn)
    assert (expected > I32_MAX).sum() == 0 and (
        gemm_reference(acc, inp, wgt, uops, first)[0] < 0
    ).any()
    np.testing.assert_array_equal(sim.acc[:12], expected)
    assert report.gemm_counter == 2 * 2 * 3 + 2 * 3  # reset uops are not counted


# --- ALU -------------------------------------------------------------------------------------

ALU_IMMS = {AluOp.MIN: -7, AluOp.MAX: 1234, AluOp.ADD: -32768, AluOp.SHR: 3, AluOp.MUL: 32767}


def alu_case(op, use_imm, imm, a_values, b_values, uops_dst_src=(0, 4)):
    """Run one ALU op over acc rows 0..3 with operand rows 4..7; (result, expected, report)."""
    dram = DRAM()
    acc = np.concatenate([a_values, b_values]).astype(np.int32).reshape(8, 1, 16)
    insn = AluInsn(
        op, 0, 1, iter_out=4, dst_factor_out=1, src_factor_out=1, use_imm=use_imm, imm=imm
    )
    sim = Simulator(dram)
    report = sim.run(
        sequence(
            computes=[
                load_uops(dram, [Uop(*uops_dst_src)]),
                ld(ACC, 0, put(dram, acc, 64), 1, 8),
                insn,
            ]
        )
    )
    flat_a = acc[:4].reshape(-1)
    flat_b = np.full(64, imm) if use_imm else acc[4:].reshape(-1)
    expected = np.array([py_alu(op, a, b) for a, b in zip(flat_a, flat_b, strict=True)]).reshape(
        4, 1, 16
    )
    return sim.acc[:4], expected, report


@pytest.mark.parametrize("use_imm", [True, False])
@pytest.mark.parametrize("op", list(AluOp))
def test_each_alu_op_against_the_reference(op, use_imm):
    rng = np.random.default_rng(int(op) * 2 + use_imm)
    a = rng.integers(I32_MIN, I32_MAX, 64, dtype=np.int64)
    a[:4] = [I32_MIN, I32_MAX, 0, -1]
    if op == AluOp.SHR:
        b = rng.integers(-16, 16, 64)
    else:
        b = rng.integers(I32_MIN, I32_MAX, 64, dtype=np.int64)
    got, expected, report = alu_case(op, use_imm, ALU_IMMS[op], a, b)
    np.testing.assert_array_equal(got, expected)
    assert report.alu_counter == 4


@pytest.mark.parametrize(
    ("imm", "a", "expected"),
    [
        (3, -17, -3),  # arithmetic right shift rounds toward -infinity
        (3, 17, 2),
        (-3, 5, 40),  # a negative amount shifts left
        (-3, -5, -40),
        (-15, 3, 98304),
        (-16, 1 << 16, 0),  # left out of int32: wraps
        (-4, 0x10000001, 0x00000010),
        (0, -9, -9),  # SHR 0 is the copy
        (15, I32_MIN, -65536),
        (17, 1, 32768),  # only the low 5 bits count: 17 is -15
        (-17, 1 << 20, 32),  # -17 is 15
        (32, -9, -9),  # 32 is 0
    ],
)
def test_shr_shifts_both_ways_by_the_low_5_bits(imm, a, expected):
    got, _, _ = alu_case(AluOp.SHR, True, imm, np.full(64, a), np.zeros(64))
    assert (got == expected).all()


def test_shr_by_a_tensor_shifts_each_lane_its_own_way():
    a = np.full(64, -1024)
    b = np.tile(np.arange(-16, 16), 2)
    got, expected, _ = alu_case(AluOp.SHR, False, 0, a, b)
    np.testing.assert_array_equal(got, expected)
    assert got.reshape(-1)[[0, 1, 15, 16, 31]].tolist() == [
        -1024 << 16,
        -1024 << 15,
        -2048,
        -1024,
        -1,
    ]


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        (AluOp.ADD, I32_MAX, 1, I32_MIN),
        (AluOp.ADD, I32_MIN, -1, I32_MAX),
        (AluOp.ADD, I32_MIN, I32_MIN, 0),
        (AluOp.MUL, 65536, 65536, 0),
        (AluOp.MUL, I32_MIN, -1, I32_MIN),
        (AluOp.MUL, 46341, 46341, -2147479015),
    ],
)
def test_add_and_mul_wrap_around(op, a, b, expected):
    got, _, _ = alu_case(op, False, 0, np.full(64, a), np.full(64, b))
    assert (got == expected).all()


def test_alu_with_the_immediate_sign_extended():
    got, _, _ = alu_case(AluOp.ADD, True, -1, np.full(64, 10), np.zeros(64))
    assert (got == 9).all()
    got, _, _ = alu_case(AluOp.MAX, True, -32768, np.full(64, -40000), np.zeros(64))
    assert (got == -32768).all()


def test_alu_uops_that_reuse_rows_run_in_order():
    # row 0 += row 1 twice, then row 1 += row 0: sequential semantics, not a vectorized batch
    dram = DRAM()
    acc = np.array([1, 10], np.int32).repeat(16).reshape(2, 1, 16)
    sim = Simulator(dram)
    sim.run(
        sequence(
            computes=[
                load_uops(dram, [Uop(0, 1), Uop(0, 1), Uop(1, 0)]),
                ld(ACC, 0, put(dram, acc, 64), 1, 2),
                AluInsn(AluOp.ADD, 0, 3),
            ]
        )
    )
    assert sim.acc[:2, 0, 0].tolist() == [21, 31]


# --- checks: buffers, fields, hazards -------------------------------------------------------


def test_gemm_index_past_the_accumulator():
    dram = DRAM()
    program = sequence(
        computes=[load_uops(dram, [Uop(2047)]), GemmInsn(True, 0, 1, iter_out=2, dst_factor_out=1)]
    )
    raises(
        program,
        dram,
        "instruction 1 (GEMM): uop 0 (i=1, j=0): acc row 2048 outside the accumulator (depth 2048)",
    )


@pytest.mark.parametrize(
    ("uop", "loops", "message"),
    [
        (
            Uop(0, 2047, 0),
            dict(iter_in=2, src_factor_in=1, dst_factor_in=1),
            "uop 0 (i=0, j=1): inp row 2048 outside the input buffer (depth 2048)",
        ),
        (
            Uop(0, 0, 1023),
            dict(iter_out=2, wgt_factor_out=1, dst_factor_out=1),
            "uop 0 (i=1, j=0): wgt row 1024 outside the weight buffer (depth 1024)",
        ),
    ],
)
def test_gemm_inp_and_wgt_indices_past_their_buffers(uop, loops, message):
    dram = DRAM()
    program = sequence(computes=[load_uops(dram, [uop]), GemmInsn(False, 0, 1, **loops)])
    raises(program, dram, f"instruction 1 (GEMM): {message}")


def test_alu_source_past_the_accumulator():
    dram = DRAM()
    program = sequence(
        computes=[
            load_uops(dram, [Uop(0, 2047)]),
            AluInsn(AluOp.ADD, 0, 1, iter_out=2, src_factor_out=1),
        ]
    )
    raises(
        program,
        dram,
        "instruction 1 (ALU ADD): uop 0 (i=1, j=0): src acc row 2048 outside the accumulator (depth 2048)",
    )


def test_uop_range_checks():
    dram = DRAM()
    raises(
        sequence(computes=[GemmInsn(uop_bgn=0, uop_end=8193)]),
        dram,
        "instruction 0 (GEMM): uop_end 8193 beyond the uop buffer (depth 8192)",
    )
    raises(
        sequence(computes=[GemmInsn(uop_bgn=5, uop_end=3)]),
        dram,
        "instruction 0 (GEMM): uop_bgn 5 > uop_end 3",
    )
    raises(
        sequence(computes=[GemmInsn(uop_bgn=0, uop_end=2)]),
        dram,
        "instruction 0 (GEMM): runs uop 0, which no LOAD UOP has written",
    )


def test_reads_of_rows_nothing_wrote():
    dram = DRAM()
    raises(
        sequence(
            computes=[
                load_uops(dram, [Uop(0)]),
                GemmInsn(True, 0, 1),
                ld(ACC, 1, put(dram, np.zeros(16, np.int32), 64), 1, 1),
                AluInsn(AluOp.ADD, 0, 1, iter_out=3, dst_factor_out=1),
            ]
        ),
        dram,
        "instruction 3 (ALU ADD): uop 0 (i=2, j=0) reads acc row 2, which nothing has written",
    )
    message = raises(sequence(computes=[load_uops(dram, [Uop(0)]), GemmInsn(False, 0, 1)]), dram)
    assert (
        message
        == "instruction 1 (GEMM): uop 0 (i=0, j=0) reads inp row 0, which nothing has written"
    )
    message = raises(sequence(stores=[st_(3, 0, 1, 1)]), dram)
    assert message == "instruction 1 (STORE OUT): stores acc row 3, which nothing has written"


def test_load_rectangle_past_the_buffer_and_dram():
    dram = DRAM()
    x = put(dram, np.zeros((2, 16), np.int8), 16)
    raises(
        sequence([ld(INP, 2047, x, 1, 2)]),
        dram,
        "instruction 0 (LOAD INP): rows 2047..2048 outside the input buffer (depth 2048)",
    )
    raises(
        sequence([ld(INP, 2000, x, 1, 2, pads=(0, 15, 15, 15))]),
        dram,
        "instruction 0 (LOAD INP): rows 2000..2511 outside the input buffer (depth 2048)",
    )
    raises(
        sequence([ld(WGT, 0, x, 2, 1)]),
        dram,
        "instruction 0 (LOAD WGT): reads DRAM bytes 0..511, outside DRAM (32 bytes allocated)",
    )
    raises(
        sequence(computes=[ld(ACC, 0, 0, 1, 1)], stores=[st_(0, 2, 1, 1)]),
        dram,
        "instruction 0 (LOAD ACC): reads DRAM bytes 0..63, outside DRAM (32 bytes allocated)",
    )


def test_store_checks():
    dram = DRAM()
    acc = put(dram, np.zeros((2, 16), np.int32), 64)
    computes = [ld(ACC, 2047, acc, 1, 1)]
    raises(
        sequence(computes=computes, stores=[st_(2047, 0, 1, 2)]),
        dram,
        "instruction 1 (STORE OUT): rows 2047..2048 outside the accumulator (depth 2048)",
    )
    raises(
        sequence(computes=computes, stores=[st_(2047, 8, 1, 1)]),
        dram,
        "instruction 1 (STORE OUT): writes DRAM bytes 128..143, outside DRAM (128 bytes allocated)",
    )
    bad = dataclasses.replace(st_(2047, 0, 1, 1), x_pad_1=1)
    raises(
        sequence(computes=computes, stores=[bad]),
        dram,
        "instruction 1 (STORE OUT): a STORE cannot pad (x_pad_1 = 1)",
    )
    bad = dataclasses.replace(st_(2047, 0, 1, 1), memory_type=ACC)
    raises(
        sequence(computes=computes, stores=[bad]),
        dram,
        "instruction 1 (STORE ACC): a STORE's memory type must be OUT",
    )
    raises(
        sequence(computes=[ld(OUT, 0, 0, 1, 1)]),
        dram,
        "instruction 0 (LOAD OUT): OUT is not a memory a LOAD fills (STORE reads it)",
    )


def test_field_widths_are_checked_before_running():
    raises(
        [GemmInsn(uop_end=20000), FinishInsn()],
        None,
        "instruction 0 (GEMM): uop_end = 20000 is out of range 0..16383 (14-bit field)",
    )


@pytest.mark.parametrize(
    ("uops", "loops", "message"),
    [
        (
            [Uop(0), Uop(0)],
            {},
            "uop 1 (i=0, j=0) writes acc row 0, as does uop 0 (i=0, j=0), executed 1 uop before it",
        ),
        (
            [Uop(0), Uop(1), Uop(0)],
            {},
            "uop 2 (i=0, j=0) writes acc row 0, as does uop 0 (i=0, j=0), executed 2 uops before it",
        ),
        (
            [Uop(5)],
            dict(iter_in=2),
            "uop 0 (i=0, j=1) writes acc row 5, as does uop 0 (i=0, j=0), executed 1 uop before it",
        ),
        (
            [Uop(0), Uop(1)],
            dict(iter_out=2, dst_factor_out=1),
            "uop 0 (i=1, j=0) writes acc row 1, as does uop 1 (i=0, j=0), executed 1 uop before it",
        ),
    ],
)
@pytest.mark.parametrize("reset", [True, False])
def test_the_gemm_accumulator_hazard(uops, loops, message, reset):
    rng = np.random.default_rng(7)
    dram = DRAM()
    program = sequence(
        loads=[
            ld(INP, 0, put(dram, rand8(rng, (16, 16)), 16), 1, 16),
            ld(WGT, 0, put(dram, rand8(rng, (16, 16)), 256), 1, 1),
        ],
        computes=[
            load_uops(dram, uops),
            GemmInsn(True, 0, 1, iter_out=16, dst_factor_out=1),
            GemmInsn(reset, 0, len(uops), **loops),
        ],
    )
    suffix = " (the GEMM pipeline needs 2 uops between writes of one row)"
    raises(program, dram, f"instruction 4 (GEMM): {message}{suffix}")


def test_the_hazard_rule_spans_gemm_instructions():
    rng = np.random.default_rng(11)
    dram = DRAM()
    loads = [
        ld(INP, 0, put(dram, rand8(rng, (4, 16)), 16), 1, 4),
        ld(WGT, 0, put(dram, rand8(rng, (16, 16)), 256), 1, 1),
    ]
    uops = load_uops(dram, [Uop(0), Uop(1), Uop(2)])
    # a reset of rows 0 and 1 then an accumulation starting at row 1: too close
    program = sequence(loads, [uops, GemmInsn(True, 0, 2), GemmInsn(False, 1, 3)])
    raises(
        program,
        dram,
        "instruction 4 (GEMM): uop 1 (i=0, j=0) writes acc row 1, as does uop 1 (i=0, j=0) of "
        "instruction 3 (GEMM), executed 1 uop before it (the GEMM pipeline needs 2 uops between "
        "writes of one row)",
    )
    twice = sequence(loads, [uops, GemmInsn(True, 0, 2), GemmInsn(False, 0, 1)])
    assert raises(twice, dram).startswith(
        "instruction 4 (GEMM): uop 0 (i=0, j=0) writes acc row 0, as does uop 0 (i=0, j=0) of "
        "instruction 3 (GEMM), executed 2 uops before it"
    )
    # two rows between them: allowed, also across instructions and other compute work
    fine = sequence(
        loads,
        [uops, GemmInsn(True, 0, 3), AluInsn(AluOp.ADD, 0, 1), GemmInsn(False, 0, 3, iter_in=2)],
    )
    assert run(fine, dram).gemm_counter == 6


def test_rows_rewritten_three_uops_later_are_no_hazard():
    dram = DRAM()
    rng = np.random.default_rng(8)
    program = sequence(
        loads=[
            ld(INP, 0, put(dram, rand8(rng, (16, 16)), 16), 1, 16),
            ld(WGT, 0, put(dram, rand8(rng, (16, 16)), 256), 1, 1),
        ],
        computes=[
            load_uops(dram, [Uop(0), Uop(1), Uop(2)]),
            GemmInsn(True, 0, 3, iter_in=2),
            GemmInsn(False, 0, 3, iter_out=3),
        ],
    )
    assert run(program, dram).gemm_counter == 9


# --- checks: tokens, FINISH, races -----------------------------------------------------------


def test_deadlock_and_missing_tokens():
    program = [
        noop("load", pop_next=True),
        noop("compute", pop_prev=True, push_prev=True),
        FinishInsn(),
    ]
    raises(
        program,
        None,
        "dependency error: instruction 0 (LOAD INP) on the load module pops g2l (compute->load), but in program order no earlier instruction pushed a token still there",
    )
    raises(
        program,
        None,
        "deadlock: no module can run and 3 instructions remain; the load module waits at instruction 0 (LOAD INP) for a token on g2l (compute->load); the compute module waits at instruction 1 (LOAD UOP) for a token on l2g (load->compute)",
        order="tokens",
    )


def test_deadlock_lists_every_missing_token():
    program = [
        noop("store", push_prev=True),
        noop("compute", pop_prev=True, pop_next=True),
        noop("store", pop_prev=True),
        FinishInsn(),
    ]
    message = raises(program, None, order="tokens", seed=3)
    assert message == (
        "deadlock: no module can run and 3 instructions remain; the compute module waits at "
        "instruction 1 (LOAD UOP) for a token on l2g (load->compute); the store module waits at "
        "instruction 2 (STORE OUT) for a token on g2s (compute->store)"
    )
    program = [noop("compute", pop_prev=True, pop_next=True), FinishInsn()]
    assert raises(program, None, order="tokens").endswith(
        "for tokens on l2g (load->compute) and s2g (store->compute)"
    )


def test_finish_checks():
    raises([], None, "the stream has no FINISH instruction (a stream ends with FINISH)")
    raises([GemmInsn()], None, "the stream has no FINISH instruction (a stream ends with FINISH)")
    raises(
        [FinishInsn(), GemmInsn()],
        None,
        "instruction 1 (GEMM) follows FINISH (instruction 0); FINISH must be the last instruction",
    )
    raises(
        [FinishInsn(pop_next=True)],
        None,
        "instruction 0 (FINISH): FINISH pops no tokens (pop them in an instruction before it, as the runtime's Synchronize does)",
    )
    raises(
        [noop("compute", push_prev=True), FinishInsn()],
        None,
        "instruction 1 (FINISH): token queues not empty at FINISH: g2l (compute->load) holds 1 (first pushed by instruction 0 (LOAD UOP))",
    )
    raises(
        [FinishInsn(push_next=True)],
        None,
        "instruction 0 (FINISH): token queues not empty at FINISH: g2s (compute->store) holds 1 (first pushed by instruction 0 (FINISH))",
    )
    unsynced = "instruction 1 (FINISH): instruction 0 (STORE OUT) on the store module is not ordered before FINISH by dependency tokens (end a stream as the runtime's Synchronize does: push from load and store, pop both at compute, then FINISH)"
    raises([noop("store"), FinishInsn()], None, unsynced)
    for seed in range(5):
        assert raises([noop("store"), FinishInsn()], None, order="tokens", seed=seed) == unsynced


@pytest.mark.parametrize(
    ("insn", "message"),
    [
        (
            noop("load", pop_prev=True),
            "instruction 0 (LOAD INP): pop_prev is set, but the load module has no previous module to exchange tokens with",
        ),
        (
            noop("load", push_prev=True),
            "instruction 0 (LOAD INP): push_prev is set, but the load module has no previous module to exchange tokens with",
        ),
        (
            noop("store", pop_next=True),
            "instruction 0 (STORE OUT): pop_next is set, but the store module has no next module to exchange tokens with",
        ),
        (
            noop("store", push_next=True),
            "instruction 0 (STORE OUT): push_next is set, but the store module has no next module to exchange tokens with",
        ),
    ],
)
def test_flags_a_module_does_not_have(insn, message):
    raises([insn, FinishInsn()], None, message)


def test_race_compute_reads_what_load_wrote_without_a_token():
    rng = np.random.default_rng(9)
    dram = DRAM()
    sim = Simulator(dram)
    x, w = put(dram, rand8(rng, (1, 16)), 16), put(dram, rand8(rng, (16, 16)), 256)
    sim.run(
        sequence(
            [ld(INP, 0, x, 1, 1), ld(WGT, 0, w, 1, 1)],
            [load_uops(dram, [Uop(0)]), GemmInsn(True, 0, 1)],
        )
    )
    racy = [
        ld(INP, 0, x, 1, 1),
        ld(WGT, 0, w, 1, 1),
        GemmInsn(False, 0, 1),
        noop("load", push_next=True),
        noop("compute", pop_prev=True),
        FinishInsn(),
    ]
    with pytest.raises(VTAError) as err:
        sim.run(racy)
    assert err.value.message == (
        "race: instruction 2 (GEMM) on the compute module reads inp row 0, written by "
        "instruction 0 (LOAD INP) on the load module, and no dependency token orders the read "
        "after the write"
    )
    for seed in range(8):
        with pytest.raises(VTAError) as err:
            sim.run(racy, order="tokens", seed=seed)
        assert err.value.message.startswith("race: ")


def test_race_compute_overwrites_what_store_reads():
    dram = DRAM()
    acc = put(dram, np.zeros((2, 16), np.int32), 64)
    out = dram.alloc(32) // 16
    racy = [
        ld(ACC, 0, acc, 1, 2),
        AluInsn(AluOp.SHR, 0, 1, iter_out=2, dst_factor_out=1, push_next=True),
        st_(0, out, 1, 2, pop_prev=True, push_prev=True),
        ld(ACC, 0, acc, 1, 2),
        noop("compute", pop_next=True),
        FinishInsn(),
    ]
    sim = Simulator(dram)
    sim.run([load_uops(dram, [Uop(0)]), FinishInsn()])
    with pytest.raises(VTAError) as err:
        sim.run(racy)
    assert err.value.message == (
        "race: instruction 3 (LOAD ACC) on the compute module overwrites acc row 0, read by "
        "instruction 2 (STORE OUT) on the store module, and no dependency token orders the "
        "write after the read"
    )
    messages = set()
    for seed in range(12):
        with pytest.raises(VTAError) as err:
            sim.run(racy, order="tokens", seed=seed)
        messages.add(err.value.message.split(",")[0])
    assert messages == {
        "race: instruction 3 (LOAD ACC) on the compute module overwrites acc row 0",
        "race: instruction 2 (STORE OUT) on the store module reads acc row 0",
    }
    fixed = [*racy[:3], dataclasses.replace(racy[3], pop_next=True), *racy[5:]]
    sim.run(fixed)


def test_race_through_dram_and_its_fix():
    dram = DRAM()
    acc = np.array([300, -3, 127, -128] * 4, np.int32).reshape(1, 1, 16)
    out = dram.alloc(16) // 16
    head = [
        load_uops(dram, [Uop(0)]),
        ld(ACC, 0, put(dram, acc, 64), 1, 1),
        AluInsn(AluOp.SHR, 0, 1, use_imm=True, push_next=True),
        st_(0, out, 1, 1, pop_prev=True, push_prev=True),
    ]
    racy = [*head, ld(ACC8, 1, out, 1, 1), noop("compute", pop_next=True), FinishInsn()]
    raises(
        racy,
        dram,
        "race: instruction 4 (LOAD ACC_8BIT) on the compute module reads DRAM bytes 0..15, written by instruction 3 (STORE OUT) on the store module, and no dependency token orders the read after the write",
    )
    sim = Simulator(dram)
    sim.run([*head, ld(ACC8, 1, out, 1, 1, pop_next=True), FinishInsn()])
    np.testing.assert_array_equal(sim.acc[1], [[44, -3, 127, -128] * 4])


# --- the two schedules -----------------------------------------------------------------------


def tiled(tiles, rows, op, imm, lag_c=0, lag_s=0, data_seed=0, racy=False):
    """A double-buffered pipeline of ``tiles`` tiles (as TVM's virtual threads): load tile
    ``t``'s ``rows`` input rows and one weight block into buffer ``t % 2``, reset and
    accumulate ``rows`` accumulator rows, apply ``op imm`` and store them. The compute and
    store phases of tile ``t`` are issued ``lag_c`` and ``lag_s`` tile steps after its load.
    Returns (dram, program, out_addr, expected output)."""
    rng = np.random.default_rng(data_seed)
    dram = DRAM()
    xs, ws = rand8(rng, (tiles, rows, 1, 16)), rand8(rng, (tiles, 1, 16, 16))
    xa, wa = put(dram, xs, 16), put(dram, ws, 256)
    uops = load_uops(dram, [Uop(0, 0, 0), Uop(rows, rows, 1)])
    out = dram.alloc(tiles * rows * 16) // 16

    def load(t):
        b = t % 2
        return [
            ld(INP, b * rows, xa + t * rows, 1, rows, pop_next=t >= 2 and not racy),
            ld(WGT, b, wa + t, 1, 1, push_next=True),
        ]

    def compute(t):
        b = t % 2
        loop = dict(iter_out=rows, dst_factor_out=1, src_factor_out=1)
        return [
            GemmInsn(True, b, b + 1, pop_prev=True, pop_next=t >= 2, **loop),
            GemmInsn(False, b, b + 1, **loop),
            AluInsn(op, b, b + 1, use_imm=True, imm=imm, push_prev=True, push_next=True, **loop),
        ]

    def store(t):
        return [st_((t % 2) * rows, out + t * rows, 1, rows, pop_prev=True, push_prev=True)]

    program = [uops]
    for step in range(tiles + lag_s + 1):
        if step < tiles:
            program += load(step)
        if 0 <= step - lag_c < tiles:
            program += compute(step - lag_c)
        if 0 <= step - lag_s < tiles:
            program += store(step - lag_s)
    drain = min(tiles, 2)
    program += [noop("load", pop_next=True, push_next=k == drain - 1) for k in range(drain)]
    program += [noop("compute", pop_prev=k == 0, pop_next=True) for k in range(drain)]
    program.append(FinishInsn())
    dots = np.einsum("trk,tok->tro", xs[:, :, 0].astype(np.int64), ws[:, 0].astype(np.int64))
    expected = np.array([low8(py_alu(op, v, imm)) for v in dots.reshape(-1)], np.int8)
    return dram, program, out, expected.reshape(tiles, rows, 16)


def run_tiled(order, seed, **kw):
    dram, program, out, expected = tiled(**kw)
    report = run(program, dram, order=order, seed=seed)
    got = dram.read(out * 16, expected.shape, np.int8)
    return dram, report, got, expected


def test_program_order_and_the_token_scheduler_agree_over_many_seeds():
    params = dict(tiles=5, rows=3, op=AluOp.SHR, imm=4)
    dram0, report0, got, expected = run_tiled("program", 0, **params)
    np.testing.assert_array_equal(got, expected)
    starts = set()
    for seed in range(60):
        dram, report, _, _ = run_tiled("tokens", seed, **params)
        np.testing.assert_array_equal(dram.data, dram0.data)
        assert report.counters() == report0.counters()
        assert report.cycles == report0.cycles
        assert sorted(report.timeline, key=lambda t: t.index) == list(report0.timeline)
        starts.add(tuple(t.index for t in report.timeline))
    assert len(starts) > 50  # the seeds really interleave the modules differently


def test_a_missing_token_in_the_pipeline_is_a_race():
    dram, program, _, _ = tiled(tiles=3, rows=3, op=AluOp.ADD, imm=1, racy=True)
    message = raises(program, dram)
    assert message == (
        "race: instruction 13 (LOAD INP) on the load module overwrites inp row 0, read by "
        "instruction 4 (GEMM) on the compute module, and no dependency token orders the write "
        "after the read"
    )


@settings(max_examples=25, deadline=None)
@given(
    tiles=st.integers(1, 5),
    rows=st.integers(3, 4),  # fewer rows would break the hazard rule
    op=st.sampled_from(list(AluOp)),
    imm=st.integers(-20, 20),
    lags=st.sampled_from([(0, 0), (0, 1), (1, 1), (1, 2)]),
    data_seed=st.integers(0, 2**16),
    seeds=st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2),
)
def test_random_correct_pipelines_agree_with_numpy_in_every_schedule(
    tiles, rows, op, imm, lags, data_seed, seeds
):
    kw = dict(
        tiles=tiles, rows=rows, op=op, imm=imm, lag_c=lags[0], lag_s=lags[1], data_seed=data_seed
    )
    dram0, report0, got, expected = run_tiled("program", 0, **kw)
    np.testing.assert_array_equal(got, expected)
    for seed in seeds:
        dram, report, _, _ = run_tiled("tokens", seed, **kw)
        np.testing.assert_array_equal(dram.data, dram0.data)
        assert report.cycles == report0.cycles


# --- counters and cycles ---------------------------------------------------------------------


def test_counters_follow_their_formulas():
    tiles, rows = 4, 3
    _, report, _, _ = run_tiled("program", 0, tiles=tiles, rows=rows, op=AluOp.MAX, imm=0)
    assert report.counters() == {
        "inp_load_nbytes": tiles * rows * 16,
        "wgt_load_nbytes": tiles * 256,
        "acc_load_nbytes": 0,
        "uop_load_nbytes": 2 * 4,
        "out_store_nbytes": tiles * rows * 16,
        "gemm_counter": tiles * rows,
        "alu_counter": tiles * rows,
    }
    assert report.insn_counts == {
        "load": 2 * tiles + 2,
        "compute": 1 + 3 * tiles + 2 + 1,
        "store": tiles,
    }


def tiny_program(dram):
    """Three rows through every module; the comments give each instruction's cycles with the
    default model (4 cycles of overhead, 8 bytes per cycle)."""
    rng = np.random.default_rng(10)
    x, w = put(dram, rand8(rng, (3, 16)), 16), put(dram, rand8(rng, (16, 16)), 256)
    out = dram.alloc(48) // 16
    loop = dict(iter_out=3, dst_factor_out=1, src_factor_out=1)
    return [
        load_uops(dram, [Uop(0)]),  # 0 compute [0, 5): 4 + ceil(4 / 8)
        ld(INP, 0, x, 1, 3),  # 1 load [0, 10): 4 + 48 / 8
        ld(WGT, 0, w, 1, 1, push_next=True),  # 2 load [10, 46): 4 + 256 / 8
        GemmInsn(True, 0, 1, **loop),  # 3 compute [5, 12): 4 + 3 uops
        GemmInsn(False, 0, 1, pop_prev=True, **loop),  # 4 compute [46, 53): waits for 2
        AluInsn(AluOp.SHR, 0, 1, use_imm=True, push_next=True, **loop),  # 5 [53, 63): 4 + 3 * 2
        st_(0, out, 1, 3, pop_prev=True, push_prev=True),  # 6 store [63, 73): 4 + 48 / 8
        noop("load", push_next=True),  # 7 load [46, 50)
        noop("compute", pop_prev=True, pop_next=True),  # 8 compute [73, 77): waits for 6
        FinishInsn(),  # 9 compute [77, 81)
    ]


def test_the_cycle_estimate_of_a_tiny_program():
    dram = DRAM()
    report = run(tiny_program(dram), dram)
    spans = [(t.index, t.module, t.start, t.end) for t in report.timeline]
    assert spans == [
        (0, "compute", 0, 5),
        (1, "load", 0, 10),
        (2, "load", 10, 46),
        (3, "compute", 5, 12),
        (4, "compute", 46, 53),
        (5, "compute", 53, 63),
        (6, "store", 63, 73),
        (7, "load", 46, 50),
        (8, "compute", 73, 77),
        (9, "compute", 77, 81),
    ]
    assert report.cycles == 81
    assert report.busy_cycles == {"load": 50, "compute": 37, "store": 10}
    assert report.gemm_utilization == 3 / 81
    assert str(report) == (
        "VTA run (fsim, program order)\n"
        "  inp_load_nbytes             48\n"
        "  wgt_load_nbytes            256\n"
        "  acc_load_nbytes              0\n"
        "  uop_load_nbytes              4\n"
        "  out_store_nbytes            48\n"
        "  gemm_counter                 3\n"
        "  alu_counter                  3\n"
        "  module       insns   busy cycles    busy\n"
        "  load             3            50   61.7%\n"
        "  compute          6            37   45.7%\n"
        "  store            1            10   12.3%\n"
        "  makespan 81 cycles, GEMM utilization 3.7% (gemm uops / makespan)"
    )
    again = DRAM()
    tokens = run(tiny_program(again), again, order="tokens", seed=1)
    assert tokens.cycles == 81 and "token scheduler, seed 1" in str(tokens)


def test_the_cycle_model_is_configurable_and_counts_padding():
    dram = DRAM()
    model = CycleModel(bus_bytes=16, insn_overhead=0)
    report = run(tiny_program(dram), dram, cycle_model=model)
    # 0: [0, 1)  1: [0, 3)  2: [3, 19)  3: [1, 4)  4: [19, 22)  5: [22, 28)  6: [28, 31)
    # 7: [19, 19)  8 and 9: [31, 31)
    assert report.cycles == 31
    assert model.cost(ld(INP, 0, 0, 2, 3, pads=(1, 0, 2, 1))) == 6 + (3 * 6 - 6)
    assert model.cost(ld(ACC8, 0, 0, 1, 2)) == 2
    assert model.cost(AluInsn(AluOp.ADD, 2, 5, iter_out=3, iter_in=2)) == 36
    assert model.cost(GemmInsn(True, 0, 4, iter_in=2)) == 8
    assert model.cost(noop("store")) == 0


# --- the FPGA's restrictions ("hls" mode) ----------------------------------------------------


def test_hls_mode_flags_a_store_of_a_loaded_accumulator():
    dram = DRAM()
    acc = put(dram, np.arange(32, dtype=np.int32).reshape(2, 16), 64)
    out = dram.alloc(32) // 16
    direct = sequence(computes=[ld(ACC, 0, acc, 1, 2)], stores=[st_(0, out, 1, 2)])
    run(direct, dram)  # fsim stores from the accumulator
    raises(
        direct,
        dram,
        "instruction 1 (STORE OUT): acc row 0 was last written by LOAD ACC (instruction 0 (LOAD ACC)); the FPGA's STORE reads the output buffer, which only GEMM and ALU results update (put an ALU op, e.g. SHR by 0, in between)",
        mode="hls",
    )
    copied = sequence(
        computes=[
            load_uops(dram, [Uop(0)]),
            ld(ACC, 0, acc, 1, 2),
            AluInsn(AluOp.SHR, 0, 1, iter_out=2, dst_factor_out=1, use_imm=True),
        ],
        stores=[st_(0, out, 1, 2)],
    )
    run(copied, dram, mode="hls")
    np.testing.assert_array_equal(
        dram.read(out * 16, (2, 16), np.int8), np.arange(32).reshape(2, 16)
    )


def test_hls_mode_flags_a_store_after_a_gemm_reset():
    dram = DRAM()
    program = sequence(
        computes=[load_uops(dram, [Uop(0)]), GemmInsn(True, 0, 1)],
        stores=[st_(0, dram.alloc(16) // 16, 1, 1)],
    )
    run(program, dram)
    message = raises(program, dram, mode="hls")
    assert message.startswith(
        "instruction 2 (STORE OUT): acc row 0 was last written by a GEMM reset (instruction 1 (GEMM))"
    )


def test_hls_mode_rejects_what_the_fpga_lacks():
    dram = DRAM()
    x = put(dram, np.zeros((4, 16, 16), np.int8), 256)
    acc = put(dram, np.zeros((4, 16), np.int32), 64)
    mul = sequence(
        computes=[
            load_uops(dram, [Uop(0)]),
            ld(ACC, 0, acc, 1, 1),
            AluInsn(AluOp.MUL, 0, 1, use_imm=True, imm=3),
        ]
    )
    run(mul, dram)
    raises(mul, dram, "instruction 2 (ALU MUL): the FPGA's ALU has no MUL (fsim only)", mode="hls")
    padded = sequence([ld(WGT, 0, x, 1, 2, pads=(0, 0, 1, 0))])
    run(padded, dram)
    raises(
        padded,
        dram,
        "instruction 0 (LOAD WGT): the FPGA ignores the padding of WGT loads (load_2d)",
        mode="hls",
    )
    raises(
        sequence(computes=[ld(ACC, 0, acc, 1, 1, pads=(1, 0, 0, 0))]),
        dram,
        "instruction 0 (LOAD ACC): the FPGA ignores the padding of ACC loads (load_2d)",
        mode="hls",
    )
    raises(
        sequence(computes=[ld(ACC8, 0, acc, 1, 1)]),
        dram,
        "instruction 0 (LOAD ACC_8BIT): the FPGA's compute module has no ACC_8BIT load",
        mode="hls",
    )
    uops = sequence(computes=[ld(UOP, 0, acc, 2, 2)])
    run(uops, dram)
    raises(
        uops,
        dram,
        "instruction 0 (LOAD UOP): the FPGA loads uops as a 1-D copy of x_size uops (y_size must be 1 and the pads 0)",
        mode="hls",
    )


def test_unknown_modes_and_orders():
    with pytest.raises(VTAError) as err:
        Simulator(DRAM(), mode="asic")  # type: ignore[arg-type]
    assert err.value.message == "unknown simulator mode 'asic' (expected 'fsim' or 'hls')"
    with pytest.raises(VTAError) as err:
        run([FinishInsn()], DRAM(), order="random")  # type: ignore[arg-type]
    assert err.value.message == "unknown order 'random' (expected 'program' or 'tokens')"


def test_dram_allocation_and_access():
    dram = DRAM(capacity=16)
    a = dram.alloc(10)
    b = dram.put(np.arange(300, dtype=np.int16), align=64)
    assert (a, b, dram.size) == (0, 64, 664)
    np.testing.assert_array_equal(dram.read(b, 300, np.int16), np.arange(300))
    dram.write(a, b"\x01\x02")
    assert dram.read(a, (2,), np.uint8).tolist() == [1, 2]
    with pytest.raises(VTAError) as err:
        dram.read(600, 100, np.uint8)
    assert err.value.message == "DRAM bytes 600..699 outside DRAM (664 bytes allocated)"


def test_buffers_persist_between_runs():
    dram = DRAM()
    sim = Simulator(dram)
    sim.run(
        sequence(
            computes=[
                load_uops(dram, [Uop(3)]),
                ld(ACC, 3, put(dram, np.ones(16, np.int32), 64), 1, 1),
            ]
        )
    )
    sim.run(sequence(computes=[AluInsn(AluOp.ADD, 0, 1, use_imm=True, imm=41)]))
    assert (sim.acc[3] == 42).all()


def test_the_documented_example_prints_what_the_page_shows(capsys):
    text = (Path(__file__).resolve().parents[3] / "docs" / "vta.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    shown = text.split("It prints:\n\n```text\n", 1)[1].split("```", 1)[0]
    exec(compile(example, "vta.md", "exec"), {})
    assert capsys.readouterr().out == shown


def test_a_load_of_no_rows_still_pads():
    dram = DRAM()
    sim = Simulator(dram)
    sim.inp[:] = 5
    no_rows = MemInsn(Opcode.LOAD, INP, sram_base=2, x_size=3, x_stride=3, y_pad_0=1, y_pad_1=1)
    report = sim.run(sequence([no_rows]))
    assert sim.inp[:10, 0, 0].tolist() == [5, 5, 0, 0, 0, 0, 0, 0, 5, 5]
    assert report.inp_load_nbytes == 0


def test_dram_stores_arrays_little_endian():
    dram = DRAM()
    at = dram.put(np.array([1, 2], ">i4"))
    assert bytes(dram.data[at : at + 8]) == b"\x01\x00\x00\x00\x02\x00\x00\x00"
