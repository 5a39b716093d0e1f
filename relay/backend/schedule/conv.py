"""CPU schedule for 2-d convolutions (``nn.conv2d``) with their fused elementwise epilogue.

The schedule is the direct convolution of TVM's x86 strategy (``topi/x86/conv2d_avx_common.py``,
``_schedule_conv_NCHWc``; Georganas et al., *Anatomy of High-Performance Deep Learning
Convolutions on SIMD Architectures*, SC 2018), written in TensorIR primitives on the NCHW
compute of :mod:`relay.op.lowering.nn_conv`:

* output channels are tiled by ``OC`` = 32 (two AVX-512 vectors; else the largest divisor up
  to 16 of the channels of a group) and each output row by a register block of ``RW``
  pixels (at most 28 vector accumulators: 14 pixels of 32 channels), so the ``RW x OC``
  tile of the output stays in registers (a ``local`` cache laid out ``(x, o)``, the vector
  along the channels) while the loops over the kernel window and the input channels run
  around it, the channels innermost: each step loads ``OC`` weights as vectors and
  broadcasts ``RW`` input pixels into as many FMAs. A width with no divisor near ``RW``
  gets a last, partial block;
* the weights are packed into ``(o // OC, i, kh, kw, o % OC)`` (a ``cache_read`` stage with
  ``transform_layout``, like the packed ``B`` of :mod:`relay.backend.schedule.matmul`), so
  the vector loads are contiguous;
* the padded input is its own stage, computed once (in parallel, a row at a time), so the
  inner loop reads it without border tests; its rows are split among the threads as the
  output's are (below), so each core reads the padded rows it wrote, from its own L2;
* the epilogue (bias, activation, residual) is inlined into the write-back of each tile;
* the tiles of ``(batch, channel block, output row)`` run in parallel; with fewer than two
  channel blocks per thread (and weights of at most :data:`ROWS_WEIGHTS`), rows outermost
  instead: each thread takes a band of rows for every channel block, and pads those rows
  itself. With one channel block per thread, each thread read the whole padded input once,
  half of it from the other core's cache (the reduction walks the channel planes, 13 KiB
  apart, which no prefetcher follows): conv_block's 3x3 64 -> 64 on 56 x 56 took 0.93-0.98
  ms a convolution on two threads, 0.69-0.72 with rows outermost, against 1.42 on one.
  With more blocks a thread reads the input again from its own cache for each further
  block, and rows outermost would cycle every row through all the weights and write
  every channel plane: 4 x 256 x 14^2 -> 256 took 5.6 ms that way, 3.4 with blocks
  outermost;

Convolutions the tiles do not fit (``NHWC`` data or output, groups of fewer than 4 output
channels: depthwise, float64) get the *rows* fallback: the output's innermost axis (the width
in NCHW, the channels in NHWC) in vector rows of at most 64 accumulated in a ``local`` row
with the window and the input channels outside it, the epilogue in its write-back, the rows
in parallel. A convolution followed by a cast (float16 and integer data accumulate in a wider
dtype) raises :class:`NotApplicable` early, and :func:`relay.backend.schedule.cpu.schedule_cpu`
falls back to the generic schedule.

Measured on the 2-core AVX-512 (Zen 5) machine, one thread, best of 10 runs (the generic
schedule's in brackets): conv 3x3 64 -> 64 on 56 x 56 ~215 GFLOP/s (2), with the channels
innermost in the reduction (TVM's order puts them outermost: ~140; tiling a flattened
``H * W`` axis instead of partial blocks: ~80); groups=2 ~200 (2); a 7x7 stride-2 stem from 3
channels ~190 (3); rows: NHWC 3x3 32 -> 32 ~66 (2.7), depthwise 3x3 NCHW ~18 (5.7),
depthwise 5x5 NHWC ~46 (6).
"""

from __future__ import annotations

from typing import Any

from relay.backend.lower import LoweredFunc
from relay.backend.runtime import available_cores
from relay.backend.schedule.cpu import (
    VECTOR,
    extent,
    inline_consumers,
    inline_producers,
    is_reduction,
    schedule_injective,
    schedule_reduction,
)

ACCUMULATORS = 28
"""Vector accumulators in a register tile (AVX-512 has 32 registers: the rest hold the weight
vectors and the broadcast pixel)."""

ROWS_WEIGHTS = 1 << 20
"""Bytes of float32 weights up to which a convolution with few channel blocks runs rows
outermost (every thread cycles through all of them, from its L2)."""

ROW = 64
"""Elements of the vector row the fallback schedule accumulates (four AVX-512 registers)."""

MIN_CHANNEL_BLOCK = 4
"""Groups with fewer output channels per tile than this (depthwise convolutions) get the rows
instead: the channel vectors would be mostly empty."""


class NotApplicable(ValueError):
    """The group is not a convolution this schedule handles (the generic one is used)."""


def _only(expr: Any, allowed: tuple[Any, ...], needed: Any) -> bool:
    """Whether ``expr`` reads the variable ``needed`` and none outside ``allowed``."""
    from relay.backend.runtime import tvm

    used = list(tvm().tirx.analysis.undefined_vars(expr, []))
    return any(u.same_as(needed) for u in used) and all(
        any(u.same_as(a) for a in allowed) for u in used
    )


def channel_block(per_group: int, grouped: bool) -> int:
    """The output channels of a tile: 32 (two vectors) when they divide the channels of a
    group, else their largest divisor up to 16 (a vector, or part of one)."""
    if per_group % (2 * VECTOR) == 0:
        return 2 * VECTOR
    block = max(d for d in range(1, min(per_group, VECTOR) + 1) if per_group % d == 0)
    if grouped and block < MIN_CHANNEL_BLOCK:
        raise NotApplicable(f"{per_group} output channels per group are too few to vectorize")
    return block


def register_width(width: int, oc_block: int) -> int:
    """The pixels of a tile along the output width: all of a row that fits the
    :data:`ACCUMULATORS`, else a divisor of the width near the limit, else the limit (the
    last block is partial)."""
    limit = max(1, ACCUMULATORS // -(-oc_block // VECTOR))
    if width <= limit:
        return width
    for d in range(limit, (3 * limit) // 4 - 1, -1):
        if width % d == 0:
            return d
    return limit


def schedule_conv2d_group(sch: Any, lowered: LoweredFunc) -> None:
    """Schedule a group anchored on ``nn.conv2d`` (see the module docstring): the register
    tiles where they apply, else the vectorized rows."""
    name = lowered.anchor_ops[0]
    block = sch.get_sblock(name)
    if not is_reduction(sch, block):
        raise NotApplicable("the convolution ends in a cast (its accumulation dtype differs)")
    stmt = sch.get(block)
    if len(stmt.iter_vars) != 7 or len(stmt.reads) != 2 or len(stmt.writes) != 1:
        raise NotApplicable("unexpected convolution block structure")
    try:
        plan = tile_plan(sch, block)
    except NotApplicable:
        _schedule_rows(sch, name)
        return
    _schedule_tiles(sch, name, *plan)


def tile_plan(sch: Any, block: Any) -> tuple[int, int, list[int]]:
    """The register tiling of the convolution ``block``: the channel block, the pixel block
    and the weight's axes of (O, I, KH, KW); :class:`NotApplicable` where it does not apply
    (checked before the schedule is changed)."""
    stmt = sch.get(block)
    if str(stmt.writes[0].source.dtype) != "float32":
        raise NotApplicable("the tiles are for float32")
    vn, vo, vy, vx, vc, vky, vkx = (iv.var for iv in stmt.iter_vars)
    data_read, weight_read = stmt.reads
    data_index = [r.min for r in data_read.region]
    weight_index = [r.min for r in weight_read.region]
    out_index = [r.min for r in stmt.writes[0].region]
    nchw = (vn, vo, vy, vx)
    if len(out_index) != 4 or not all(e.same_as(v) for e, v in zip(out_index, nchw, strict=True)):
        raise NotApplicable("the output is not NCHW")
    if len(data_index) != 4 or not (
        data_index[0].same_as(vn)
        and _only(data_index[1], (vc, vo), vc)
        and _only(data_index[2], (vy, vky), vy)
        and _only(data_index[3], (vx, vkx), vx)
    ):
        raise NotApplicable("the data is not NCHW")
    w_pos = [
        next((p for p, e in enumerate(weight_index) if e.same_as(v)), -1)
        for v in (vo, vc, vky, vkx)
    ]
    if sorted(w_pos) != [0, 1, 2, 3]:
        raise NotApplicable("unexpected weight indexing")
    _, o, _, x, c, _, _ = sch.get_loops(block)
    groups = int(data_read.source.shape[1]) // extent(sch, c)
    oc_bn = channel_block(extent(sch, o) // groups, groups > 1)
    return oc_bn, register_width(extent(sch, x), oc_bn), w_pos


def _keep_padding(sch: Any, name: str) -> tuple[Any, Any]:
    """Inline every producer of the convolution ``name`` but its padded input (the stage
    that writes its data); the convolution block and the padding block (or None)."""
    block = sch.get_sblock(name)
    data = sch.get(block).reads[0].source
    pad_block = None
    for p in sch.get_producers(block):
        if sch.get(p).writes[0].source.same_as(data):
            pad_block = p
    keep = {name} | ({sch.get(pad_block).name_hint} if pad_block is not None else set())
    inline_producers(sch, keep=lambda b: sch.get(b).name_hint in keep)
    pad = sch.get_sblock(sch.get(pad_block).name_hint) if pad_block is not None else None
    return sch.get_sblock(name), pad


def _schedule_tiles(sch: Any, name: str, oc_bn: int, rw: int, w_pos: list[int]) -> None:
    """The register-tiled schedule (see the module docstring)."""
    block, pad_block = _keep_padding(sch, name)
    # the weights packed (o // OC, i, kh, kw, o % OC)
    packed = sch.cache_read(block, 1, "global")

    def pack(*idx: Any) -> list[Any]:
        o_, c_, ky_, kx_ = (idx[p] for p in w_pos)
        return [o_ // oc_bn, c_, ky_, kx_, o_ % oc_bn]

    sch.transform_layout(packed, ("write", 0), pack)

    # the register tile: (x1, o1) accumulated over (ky, kx, c)
    n, o, y, x, c, ky, kx = sch.get_loops(block)
    # rows outermost when each thread would have fewer than two channel blocks (and the
    # weights are small): see the module docstring
    weights = extent(sch, o) * extent(sch, c) * extent(sch, ky) * extent(sch, kx) * 4
    rows_first = -(-extent(sch, o) // oc_bn) < 2 * available_cores() and weights <= ROWS_WEIGHTS
    o0, o1 = sch.split(o, [None, oc_bn])
    x0, x1 = sch.split(x, [None, rw])
    if rows_first:
        sch.reorder(n, y, o0, x0, ky, kx, c, x1, o1)
    else:
        sch.reorder(n, o0, y, x0, ky, kx, c, x1, o1)
    local = sch.cache_write(block, 0, "local")
    sch.transform_layout(block, ("write", 0), lambda a, b, c_, d: [a, c_, d, b])
    sch.reverse_compute_at(local, x0)
    inline_consumers(sch, local)
    sch.unroll(x1)
    sch.vectorize(o1)
    sch.parallel(sch.fuse(n, y, o0) if rows_first else sch.fuse(n, o0, y))
    sch.decompose_reduction(block, ky)
    # write-back: per channel, the tile's pixels (contiguous in the output), unrolled
    sch.unroll(sch.get_loops(local)[-1])
    if rows_first and pad_block is not None and len(sch.get_loops(pad_block)) == 4:
        pn, pc, ph, pw = sch.get_loops(pad_block)  # padded row by padded row, as read
        sch.reorder(pn, ph, pc, pw)
    _schedule_others(sch, name, [packed, pad_block], [local])


def _schedule_rows(sch: Any, name: str) -> None:
    """The fallback for convolutions the tiles do not fit (depthwise, NHWC, float64...): the
    output's innermost axis (contiguous: the width in NCHW, the channels in NHWC) split into
    rows of at most :data:`ROW` elements, each accumulated in a vector ``local`` row with the
    kernel window and the input channels outside it."""
    block, pad_block = _keep_padding(sch, name)
    *spatial, c, ky, kx = sch.get_loops(block)
    inner = spatial[-1]
    size = extent(sch, inner)
    row = max(d for d in range(1, min(size, ROW) + 1) if size % d == 0)
    d0, d1 = sch.split(inner, [None, row])
    sch.reorder(*spatial[:-1], d0, c, ky, kx, d1)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, d0)
    inline_consumers(sch, local)
    sch.vectorize(d1)
    sch.vectorize(sch.get_loops(local)[-1])
    outer = sch.fuse(*spatial[:-1])
    if extent(sch, outer) > 1:
        sch.parallel(outer)
    sch.decompose_reduction(block, c)
    _schedule_others(sch, name, [pad_block], [local])


def _schedule_others(sch: Any, name: str, copies: list[Any], done: list[Any]) -> None:
    """The blocks around the convolution ``name`` but those ``done``: the ``copies`` (the
    padding, the weight packing) as parallel copies, whatever stayed out of the epilogue as
    injective or reduction blocks."""
    copy_names = {sch.get(b).name_hint for b in copies if b is not None}
    done_names = {sch.get(b).name_hint for b in done}
    root = sch.get_sblock("root")
    for b in sch.get_child_blocks(root):
        block_name = sch.get(b).name_hint
        if block_name in (name, f"{name}_init", f"{name}_update") or block_name in done_names:
            continue
        if block_name in copy_names:
            _schedule_copy(sch, b)
        elif is_reduction(sch, b):
            schedule_reduction(sch, b)
        else:
            schedule_injective(sch, b)


def _schedule_copy(sch: Any, block: Any) -> None:
    """A copy-like block: its outer loops fused and parallel, the innermost vectorized.

    Not :func:`~relay.backend.schedule.cpu.schedule_injective`: splitting the fused loops
    puts a division per element into the padding's border test (45x slower)."""
    loops = sch.get_loops(block)
    if len(loops) > 1:
        sch.parallel(sch.fuse(*loops[:-1]) if len(loops) > 2 else loops[0])
    if extent(sch, loops[-1]) >= VECTOR:
        sch.vectorize(sch.split(loops[-1], [None, VECTOR])[1])
