"""The VTA code generator: the stream builder's tokens, the int8 dense and conv2d programs
against their integer references, in program order and under the token scheduler."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from relay.backend.vta import device, kernels, layout
from relay.backend.vta.builder import StreamBuilder
from relay.backend.vta.isa import (
    AluOp,
    FinishInsn,
    GemmInsn,
    MemId,
    MemInsn,
    Module,
    Opcode,
    Uop,
    module_of,
)
from relay.backend.vta.layout import Requantize
from relay.errors import VTAError

RNG = np.random.default_rng(20261124)


def _ints(
    shape: tuple[int, ...], lo: int = -128, hi: int = 128, dtype: type = np.int8
) -> np.ndarray:
    return RNG.integers(lo, hi, shape, dtype=dtype)


# -- the stream builder ---------------------------------------------------------------------------


def test_tokens_use_the_executing_modules_flags() -> None:
    b = StreamBuilder()
    b.load(MemId.INP, 0, 0, 1, 1, 1)
    b.push(Module.LOAD, Module.COMPUTE)
    b.pop(Module.LOAD, Module.COMPUTE)
    b.gemm([Uop(0)], reset=True)
    b.push(Module.COMPUTE, Module.STORE)
    b.push(Module.COMPUTE, Module.LOAD)
    b.pop(Module.COMPUTE, Module.STORE)
    b.store(0, 0, 1, 1, 1)
    b.push(Module.STORE, Module.COMPUTE)
    b.pop(Module.COMPUTE, Module.LOAD)
    b.load(MemId.WGT, 0, 0, 1, 1, 1)
    load, gemm, store, wgt = b.insns
    assert isinstance(load, MemInsn) and (load.push_next, load.push_prev) == (True, False)
    assert isinstance(gemm, GemmInsn)
    assert (gemm.pop_prev, gemm.pop_next, gemm.push_prev, gemm.push_next) == (
        True,
        False,
        True,
        True,
    )
    assert isinstance(store, MemInsn)
    assert (store.pop_prev, store.push_prev, store.pop_next, store.push_next) == (
        True,
        True,
        False,
        False,
    )
    assert isinstance(wgt, MemInsn) and (wgt.pop_next, wgt.pop_prev) == (True, False)


def test_a_second_token_the_same_way_goes_on_a_no_op() -> None:
    b = StreamBuilder()
    b.load(MemId.INP, 0, 0, 1, 1, 1)
    b.push(Module.LOAD, Module.COMPUTE)
    b.push(Module.LOAD, Module.COMPUTE)  # the LOAD already pushes: a no-op LOAD carries it
    b.pop(Module.LOAD, Module.COMPUTE)
    b.pop(Module.LOAD, Module.COMPUTE)  # the first pop goes on a compute no-op
    b.gemm([Uop(0)], reset=True)
    assert [(type(i).__name__, module_of(i)) for i in b.insns] == [
        ("MemInsn", Module.LOAD),
        ("MemInsn", Module.LOAD),
        ("MemInsn", Module.COMPUTE),
        ("GemmInsn", Module.COMPUTE),
    ]
    noop_load, noop_compute = b.insns[1], b.insns[2]
    assert isinstance(noop_load, MemInsn) and noop_load.x_size == 0 and noop_load.push_next
    assert isinstance(noop_compute, MemInsn) and noop_compute.memory_type == MemId.UOP
    assert noop_compute.x_size == 0 and noop_compute.pop_prev
    assert b.insns[3].pop_prev


def test_push_from_a_module_with_no_instruction_is_a_no_op() -> None:
    b = StreamBuilder()
    b.push(Module.STORE, Module.COMPUTE)
    (noop,) = b.insns
    assert isinstance(noop, MemInsn) and noop.opcode == Opcode.STORE and noop.x_size == 0
    assert noop.push_prev


def test_finish_synchronizes_and_loads_the_uops_first() -> None:
    b = StreamBuilder()
    b.gemm([Uop(0), Uop(1), Uop(2)], reset=True)
    b.alu(AluOp.ADD, [Uop(0)], imm=3)
    b.gemm([Uop(0), Uop(1), Uop(2)], reset=True)  # the same kernel: one copy of its uops
    program = b.finish().relocated(100)
    first, *_, store_noop, load_noop, sync, finish = program.insns
    assert first == MemInsn(Opcode.LOAD, MemId.UOP, 0, 100, 1, 4, 4)
    assert program.uops == (Uop(0), Uop(1), Uop(2), Uop(0))
    assert isinstance(store_noop, MemInsn) and store_noop.opcode == Opcode.STORE
    assert store_noop.push_prev and store_noop.x_size == 0
    assert isinstance(load_noop, MemInsn) and load_noop.memory_type == MemId.INP
    assert load_noop.push_next and load_noop.x_size == 0
    assert isinstance(sync, MemInsn) and sync.memory_type == MemId.UOP
    assert (sync.pop_prev, sync.pop_next) == (True, True)
    assert finish == FinishInsn()
    with pytest.raises(VTAError, match="no instruction can follow FINISH"):
        b.gemm([Uop(0)])


def test_builder_rejects_what_does_not_fit() -> None:
    b = StreamBuilder()
    with pytest.raises(
        VTAError, match=re.escape("instruction 0: sram_base = 65536 is out of range")
    ):
        b.load(MemId.INP, 65536, 0, 1, 1, 1)
    with pytest.raises(VTAError, match="the uop buffer holds 8192"):
        b.kernel([Uop(i % 2048) for i in range(8193)])
    with pytest.raises(VTAError, match="at least one uop"):
        b.kernel([])
    with pytest.raises(VTAError, match="no token queue between the LOAD and STORE modules"):
        b.push(Module.LOAD, Module.STORE)


# -- dense ------------------------------------------------------------------------------------------

DENSE = [
    (1, 16, 16),  # one accumulator row: the GEMMs alternate between 3 copies
    (1, 32, 32),  # two rows: 2 copies
    (3, 40, 10),  # channels padded to 16
    (4, 64, 48),
    (16, 256, 128),
    (130, 48, 20),
]


@pytest.mark.parametrize(("n", "i", "o"), DENSE)
@pytest.mark.parametrize("bias", [True, False])
def test_dense_matches_the_reference(n: int, i: int, o: int, bias: bool) -> None:
    x, w = _ints((n, i)), _ints((o, i))
    b = _ints((o,), -(2**20), 2**20, np.int32) if bias else None
    for rq in (Requantize(shift=9, relu=True), Requantize()):
        want = layout.dense_reference(x, w, b, rq)
        got = device.dense(x, w, b, rq)
        np.testing.assert_array_equal(got.output, want)
        for seed in (0, 1, 2):
            np.testing.assert_array_equal(device.dense(x, w, b, rq, "tokens", seed).output, want)


def test_dense_accumulator_wraps_and_store_is_clipped() -> None:
    # 2**31 needs more than int32: the accumulator wraps; the clip then saturates
    x = np.full((3, 16 * 1024), -128, np.int8)
    w = np.full((16, 16 * 1024), -128, np.int8)
    rq = Requantize(lo=-100, hi=100)
    got = device.dense(x, w, None, rq, tile=kernels.DenseTile(3, 1, 64)).output
    want = layout.dense_reference(x, w, None, rq)
    assert (x.astype(np.int64) @ w.astype(np.int64).T)[0, 0] == 2**28
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.full((3, 16), 100, np.int8))


def test_the_hazard_rule_needs_the_partial_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    x, w = _ints((1, 64)), _ints((16, 64))
    monkeypatch.setattr(kernels, "_parts", lambda rows: 1)
    with pytest.raises(VTAError, match="the GEMM pipeline needs 2 uops between writes of one row"):
        device.dense(x, w)


@pytest.mark.parametrize(
    ("shape", "tile"),
    [((8, 64, 64), kernels.DenseTile(4, 2, 2)), ((5, 48, 80), kernels.DenseTile(2, 3, 1))],
)
def test_dense_counters_equal_their_formulas(
    shape: tuple[int, int, int], tile: kernels.DenseTile
) -> None:
    n, i, o = shape
    ib, ob = i // 16, o // 16
    x, w, b = _ints((n, i)), _ints((o, i)), _ints((o,), -1000, 1000, np.int32)
    rq = Requantize(shift=4)
    result = device.dense(x, w, b, rq, tile=tile)
    np.testing.assert_array_equal(result.output, layout.dense_reference(x, w, b, rq))
    tn, to = -(-n // tile.n), -(-ob // tile.o)
    r = result.report
    assert r.gemm_counter == n * ob * ib
    assert r.inp_load_nbytes == to * n * ib * 16
    assert r.wgt_load_nbytes == tn * ob * ib * 256
    assert r.acc_load_nbytes == tn * ob * 64  # the bias, once per tile of rows
    assert r.out_store_nbytes == n * ob * 16
    # per output row: the bias, the rounding, the shift, MIN and MAX; and a tile of fewer
    # than 3 rows (2 partial sums here: the last rows tile of the last output channels)
    # adds its second copy of the rows into the first
    tiles = [
        min(tile.n, n - n0) * min(tile.o, ob - o0)
        for n0 in range(0, n, tile.n)
        for o0 in range(0, ob, tile.o)
    ]
    partial = sum((-(-3 // rows) - 1) * rows for rows in tiles)
    assert partial == (2 if shape == (5, 48, 80) else 0)
    assert r.alu_counter == 5 * n * ob + partial
    assert r.uop_load_nbytes == 4 * len(result.program.uops)


# -- conv2d ---------------------------------------------------------------------------------------

CONV = [
    # (N, C, H, W), (O, KH, KW), strides, padding
    ((1, 16, 8, 8), (16, 3, 3), (1, 1), (1, 1)),
    ((1, 32, 9, 7), (48, 3, 3), (2, 2), (1, 1)),
    ((2, 16, 5, 5), (16, 1, 1), (1, 1), (0, 0)),
    ((1, 16, 1, 1), (16, 1, 1), (1, 1), (0, 0)),
    ((1, 16, 6, 11), (32, 3, 3), (1, 2), (2, 1)),
    ((1, 48, 14, 14), (32, 1, 1), (2, 2), (0, 0)),
    ((1, 20, 7, 7), (10, 3, 3), (1, 1), (1, 1)),
]


@pytest.mark.parametrize(("xs", "okk", "strides", "padding"), CONV)
def test_conv2d_matches_the_reference(
    xs: tuple[int, int, int, int],
    okk: tuple[int, int, int],
    strides: tuple[int, int],
    padding: tuple[int, int],
) -> None:
    o, kh, kw = okk
    x, w = _ints(xs), _ints((o, xs[1], kh, kw))
    b = _ints((o,), -(2**18), 2**18, np.int32)
    rq = Requantize(shift=11, relu=True)
    want = layout.conv2d_reference(x, w, b, rq, strides, padding)
    np.testing.assert_array_equal(device.conv2d(x, w, b, rq, strides, padding).output, want)
    for seed in (0, 7):
        got = device.conv2d(x, w, b, rq, strides, padding, "tokens", seed)
        np.testing.assert_array_equal(got.output, want)


def test_conv2d_small_tiles_double_buffer() -> None:
    """Forced small tiles: many steps over both halves of every buffer, the reduction split
    over input-channel tiles, and windows padded on each side."""
    x, w = _ints((1, 48, 10, 9)), _ints((32, 48, 3, 3))
    rq = Requantize(shift=6)
    tile = kernels.Conv2DTile(h=3, w=4, o=1, c=1)
    want = layout.conv2d_reference(x, w, None, rq, (1, 1), (1, 1))
    result = device.conv2d(x, w, None, rq, (1, 1), (1, 1), tile=tile)
    np.testing.assert_array_equal(result.output, want)
    tokens = device.conv2d(x, w, None, rq, (1, 1), (1, 1), "tokens", 11, tile=tile)
    np.testing.assert_array_equal(tokens.output, want)
    r = result.report
    assert r.gemm_counter == 10 * 9 * 2 * 3 * 9  # OH * OW * OB * CB * KH * KW
    # the loads of one step overlap the GEMMs of another: less than the modules' sum
    assert r.cycles < sum(r.busy_cycles.values())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 2),
    cb=st.integers(1, 3),
    ob=st.integers(1, 3),
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    k=st.sampled_from([1, 3]),
    stride=st.integers(1, 2),
    pad=st.integers(0, 2),
    shift=st.integers(0, 15),
    relu=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv2d_random_shapes(
    n: int, cb: int, ob: int, h: int, w: int, k: int, stride: int, pad: int, shift: int,
    relu: bool, seed: int,
) -> None:  # fmt: skip
    pad = min(pad, k - 1)
    if h + 2 * pad < k or w + 2 * pad < k:
        return
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, 16 * cb, h, w), dtype=np.int8)
    wt = rng.integers(-128, 128, (16 * ob, 16 * cb, k, k), dtype=np.int8)
    b = rng.integers(-(2**20), 2**20, (16 * ob,), dtype=np.int32)
    rq = Requantize(shift=shift, relu=relu)
    want = layout.conv2d_reference(x, wt, b, rq, (stride, stride), (pad, pad))
    got = device.conv2d(x, wt, b, rq, (stride, stride), (pad, pad), "tokens", seed)
    np.testing.assert_array_equal(got.output, want)


def test_conv2d_counters_equal_their_formulas() -> None:
    x, w = _ints((1, 32, 8, 8)), _ints((32, 32, 3, 3))
    tile = kernels.Conv2DTile(h=4, w=8, o=2, c=2)
    result = device.conv2d(x, w, None, Requantize(shift=3), (1, 1), (1, 1), tile=tile)
    r = result.report
    assert r.gemm_counter == 8 * 8 * 2 * 2 * 9
    # two tiles of 4 output rows; each loads a window of 6 rows x 10 columns (padding
    # included) of 2 channel blocks; LOAD counts the bytes it moves from DRAM
    assert r.inp_load_nbytes == 2 * (5 * 8) * 2 * 16
    assert r.wgt_load_nbytes == 2 * 2 * 2 * 9 * 256
    assert r.out_store_nbytes == 8 * 8 * 2 * 16
    assert r.alu_counter == 5 * 8 * 8 * 2  # bias (zero here), rounding, shift, MIN, MAX per row


def test_conv2d_rejects_what_vta_cannot_do() -> None:
    x, w = _ints((1, 16, 8, 8)), _ints((16, 16, 3, 3))
    with pytest.raises(VTAError, match="padding of 3 rows with a kernel of 3"):
        device.conv2d(x, w, padding=(3, 1))
    big = _ints((1, 16, 40, 40))
    with pytest.raises(VTAError, match="VTA's LOAD pads at most 15"):
        device.conv2d(big, _ints((16, 16, 17, 17)), padding=(16, 0))
    with pytest.raises(VTAError, match="conv2d input must be int8, not float32"):
        device.conv2d(x.astype(np.float32), w)
    with pytest.raises(VTAError, match="VTA's bias must be int32, not int64"):
        device.conv2d(x, w, np.zeros(16, np.int64))
    with pytest.raises(VTAError, match=re.escape("VTA's bias must have shape (16,), not (8,)")):
        device.conv2d(x, w, np.zeros(8, np.int32))


# -- layouts ------------------------------------------------------------------------------------


@given(
    n=st.integers(1, 3),
    c=st.integers(1, 40),
    h=st.integers(1, 4),
    w=st.integers(1, 4),
)
def test_packing_round_trips(n: int, c: int, h: int, w: int) -> None:
    x = np.arange(n * c * h * w, dtype=np.int32).reshape(n, c, h, w)
    packed = layout.pack_nchw(x)
    assert packed.shape == (n, layout.blocks(c), h, w, 16)
    np.testing.assert_array_equal(layout.unpack_nchw(packed, c), x)
    m = x.reshape(n, -1)[:, :c]
    np.testing.assert_array_equal(layout.unpack_matrix(layout.pack_matrix(m), c), m)


def test_weight_blocks_are_out_by_in() -> None:
    w = np.arange(32 * 48 * 3 * 3).reshape(32, 48, 3, 3)
    packed = layout.pack_oihw(w)
    assert packed.shape == (2, 3, 3, 3, 16, 16)
    assert packed[1, 2, 0, 1, 5, 7] == w[16 + 5, 32 + 7, 0, 1]
    d = np.arange(20 * 33).reshape(20, 33)
    pd = layout.pack_dense_weight(d)
    assert pd.shape == (2, 3, 16, 16)
    assert pd[1, 0, 3, 9] == d[19, 9] and pd[1, 2, 4, 0] == 0  # out 20 and in 32 are padding
