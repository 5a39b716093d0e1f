"""CPU schedule for matrix products (``nn.dense``, ``nn.matmul``, ``nn.batch_matmul``) with
their fused elementwise epilogue.

The schedule is the classic register-blocked GEMM of BLIS (Van Zee and van de Geijn, *BLIS:
A Framework for Rapidly Instantiating BLAS Functionality*, TOMS 2015) in TensorIR
primitives, as measured in ``shared/notes/tvm-0.27.md`` (it reached OpenBLAS speed on
1024^3 float32):

* ``C[i, j] += A[i, k] * B[j, k]`` (or ``B[k, j]``) is tiled ``i`` by ``MI`` rows and ``j``
  by ``NJ`` = 32 columns (two AVX-512 registers), ``k`` by ``KC`` = 512, in the loop order
  ``j0, i0, k0, k1, i1, j1``: the ``MI x NJ`` block of C stays in registers (a ``local``
  cache written back once per tile), ``i1`` is unrolled and ``j1`` vectorized;
* B is packed into ``(j // NJ, k, j % NJ)`` so the inner loop reads it contiguously (the
  copy runs along ``k`` and writes each ``k``'s ``NJ`` values together, which for a B stored
  ``N x K`` (``nn.dense``) is a transpose: :func:`_pack_loops`); as
  in BLIS, each thread packs the column panels it computes inside its loop over them (the
  ``j0`` loop runs in parallel, each panel of ``K x NJ`` packed just before its ``i0`` tiles
  use it, while it is in cache), which measured 1024^3 at 10.0-10.9 ms instead of 11.5
  (numpy 11.6) and 128 x 784 x 1024 at 0.99 instead of 1.12 ms; with fewer than
  :data:`PANELS_PER_THREAD` panels per thread, B is packed in one parallel pass first and
  the ``(j0, i0)`` tiles run in parallel;
* the epilogue (bias, activation, residual) is inlined into the write-back of each tile, so
  the product is never stored before it is finished;
* a symbolic number of rows or columns (a kernel of symbolic sizes), and static columns
  that are not whole tiles, are padded to whole tiles first (TVM's ``pad_einsum``: A's
  zero-padded copy made first, B's read by the packing copy itself, the write-back of each
  tile skipping the padding), so that no predicate is left in the vectorized product loop;
  a symbolic depth is not split. Measured on the lazy MLP step with a
  batch of 104: as fast as the static kernels (7.2 ms per step against 6.1-7.3);
* with few rows (``M < MI``: matrix-vector products, batch-1 inference), or few columns
  (``N < 16``: ``W @ x``, a 10-class output layer) read along ``k``, packing B would cost
  as much as the product, so instead ``k`` is split by 16 and factored out (``rfactor``):
  each output is 16 vector partial sums over contiguous rows of A and B, four outputs at a
  time (four independent FMA chains sharing each load of the vector), added as a
  vectorized tree, with the epilogue computed for each four
  (:func:`relay.backend.schedule.cpu.schedule_rfactor`; 256 x 256 GEMV 3.3 -> 3.0 us,
  1024 x 1024 33 -> 26 us, (1, 784) x (1024, 784)^T 25.5 -> 21.5 us).
"""

from __future__ import annotations

import contextlib
from typing import Any

from relay.backend.lower import LoweredFunc
from relay.backend.runtime import available_cores
from relay.backend.schedule.cpu import (
    VECTOR,
    extent,
    inline_consumers,
    inline_producers,
    schedule_injective,
    size,
)

MI = 8
NJ = 32
KC = 512
PACK_ROWS_FROM = 256
"""Rows from which an A stored ``K x M`` is packed (:func:`_pack_rows`): its rows are then
1 KiB or more apart, and a row tile's reads along ``k`` fall in a few L1 sets; below, the
packing pass costs more than it saves (96 x 200 x 48: 16 -> 38 us)."""
PANELS_PER_THREAD = 4
"""Column panels per thread from which each thread packs the panels it computes (fewer:
one packing pass first, and the tiles of all panels shared among the threads)."""


def _anchor_block(sch: Any, lowered: LoweredFunc) -> Any:
    """The product's reduction block: the anchor's stage, or (when the rule finished with a
    cast or reshape after the product) the reduction it reads."""
    from relay.backend.schedule.cpu import is_reduction

    block = sch.get_sblock(lowered.anchor_ops[0])
    seen = 0
    while not is_reduction(sch, block):
        producers = [b for b in sch.get_producers(block)]
        reductions = [b for b in producers if is_reduction(sch, b)]
        if reductions:
            return reductions[0]
        if len(producers) != 1 or seen > 4:
            raise ValueError("no matrix product in the group")
        block, seen = producers[0], seen + 1
    return block


def _tile(n: int, want: int) -> int:
    """``n`` when it is at most ``want``; else ``want`` when it divides ``n``, else the
    largest divisor of ``n`` not above it that is at least half of it, else ``want`` (the
    loop gets a tail)."""
    if n <= want:
        return n
    if n % want == 0:
        return want
    for t in range(want, want // 2 - 1, -1):
        if n % t == 0:
            return t
    return want


def _columns(n: int) -> int:
    """The column tile: whole AVX-512 vectors (32, else 16 when it divides ``n``; else 32
    with the columns padded), never an odd vector width."""
    if n <= VECTOR:
        return n
    if n % NJ == 0 or n % VECTOR:
        return NJ
    return VECTOR


def schedule_matmul_group(sch: Any, lowered: LoweredFunc) -> None:
    """Schedule a group anchored on a matrix product (see the module docstring)."""
    from relay.backend.schedule.cpu import inner_contiguous_reduction

    block = _anchor_block(sch, lowered)
    product = sch.get(block).name_hint
    inline_producers(sch, keep=lambda b: sch.get(b).name_hint == product)
    block = sch.get_sblock(product)
    stmt = sch.get(block)
    ivars = stmt.iter_vars
    loops = sch.get_loops(block)
    if len(loops) != len(ivars) or len(loops) < 3:
        raise ValueError("unexpected matmul block structure")
    *batch, i, j, k = loops
    vj, vk = ivars[-2].var, ivars[-1].var
    m, n, kk = (size(sch, lp) for lp in (i, j, k))
    b_read = stmt.reads[1]
    b_index = [r.min for r in b_read.region]
    j_pos = next(p for p, e in enumerate(b_index) if e.same_as(vj))
    k_pos = next(p for p, e in enumerate(b_index) if e.same_as(vk))

    # B read along k: its k index is innermost, or it has a single column
    b_along_k = k_pos == len(b_index) - 1 or n == 1
    if (
        m is not None
        and kk is not None
        and (
            m < MI
            or (
                n is not None
                and n < VECTOR
                and b_along_k
                and inner_contiguous_reduction(sch, block)
            )
        )
    ):
        _schedule_gemv(sch, block, batch, i, j, k, kk)
        _schedule_rest(sch, block)
        return

    nj = _columns(n if n is not None else NJ)
    mi = _tile(m, MI * NJ // nj) if m is not None else MI * NJ // nj
    if m is None or n is None or n % nj:
        # symbolic rows, or columns that are not whole tiles: padded to whole tiles (the
        # padding is zeros, computed and thrown away), so the tiles below have no tail (the
        # write-back after pad_einsum keeps only its own bounds). A tail of columns would
        # put a predicate in the vectorized product loop, which LLVM scalarizes (128 x 1024
        # x 1000 nn.dense: 14.7 ms, against 0.8 for 1024 columns). Static rows are padded
        # too when they leave a tail: TVM's write-back of a padded product under a tail of
        # rows loses the rows' bound, and wrote past the result.
        pad_n = nj if n is None or n % nj else 1
        pad_m = mi if m is None or m % mi else 1
        sch.pad_einsum(block, [*(1 for _ in batch), pad_m, pad_n, 1])
        *batch, i, j, k = sch.get_loops(block)
        m, n = size(sch, i), size(sch, j)
    i0, i1 = sch.split(i, [None, mi])
    j0, j1 = sch.split(j, [None, nj])
    if kk is None:  # a symbolic depth is not tiled
        k0 = k1 = k
        sch.reorder(*batch, j0, i0, k, i1, j1)
    else:
        k0, k1 = sch.split(k, [None, _tile(kk, KC)])
        sch.reorder(*batch, j0, i0, k0, k1, i1, j1)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, i0)
    inline_consumers(sch, local)  # the epilogue goes into the write-back of each tile
    packed = sch.cache_read(block, 1, "global")
    nb = len(b_index)

    def pack(*idx: Any) -> list[Any]:
        lead = [idx[p] for p in range(nb) if p not in (j_pos, k_pos)]
        jj, kx = idx[j_pos], idx[k_pos]
        return [*lead, jj // nj, kx, jj % nj]

    sch.transform_layout(packed, ("write", 0), pack)  # (whole panels: n was padded above)
    if m is not None and m % mi == 0 and m >= PACK_ROWS_FROM and not batch:
        _pack_rows(sch, block, mi)
    for producer in sch.get_producers(packed):  # B's zero-padded copy (pad_einsum): read
        with contextlib.suppress(Exception):  # by the packing copy itself
            sch.compute_inline(producer)
    sch.unroll(i1)
    sch.vectorize(j1)
    panels = -(-n // nj) if n is not None else 0
    if not batch and panels >= PANELS_PER_THREAD * available_cores():
        # each thread packs the column panels it computes, right before using them
        sch.compute_at(packed, j0)
        sch.parallel(j0)
        _pack_loops(sch, packed, nb, j_pos, k_pos, nj, whole=False)
    else:
        # the packing copy first, in parallel
        _pack_loops(sch, packed, nb, j_pos, k_pos, nj, whole=True)
        outer = sch.fuse(*batch, j0, i0) if batch else sch.fuse(j0, i0)
        sch.parallel(outer)
    wloops = sch.get_loops(local)
    if len(wloops) >= 2:
        inner = size(sch, wloops[-1])
        if inner is not None and (inner % VECTOR == 0 or inner == nj):
            sch.vectorize(wloops[-1])
    sch.decompose_reduction(block, k0)
    _schedule_rest(sch, block)


def _pack_rows(sch: Any, block: Any, mi: int) -> None:
    """Pack A into ``(i // mi, k, i % mi)`` in a parallel pass first, when it is stored
    ``K x M`` (a transposed operand: a weight gradient's ``dh^T @ x``): read in place, each
    ``k`` step of a row tile reads ``mi`` values from a different row of A, rows ``M``
    floats apart, which for ``M = 1024`` all fall in one set of the L1 cache (4 KiB
    apart); packed, they are ``mi`` consecutive floats (1024 x 128 x 784, the MLP's
    ``dW1``, two threads: 1.50 -> 1.00 ms)."""
    stmt = sch.get(block)  # (its iteration variables are new when pad_einsum rebuilt it)
    vi, vk = stmt.iter_vars[-3].var, stmt.iter_vars[-1].var
    a_read = stmt.reads[0]
    a_index = [r.min for r in a_read.region]
    if len(a_index) != 2 or not (a_index[0].same_as(vk) and a_index[1].same_as(vi)):
        return
    packed = sch.cache_read(block, 0, "global")
    sch.transform_layout(packed, ("write", 0), lambda kx, ix: [ix // mi, kx, ix % mi])
    kl, il = sch.get_loops(packed)
    i0, i1 = sch.split(il, [None, mi])
    sch.reorder(i0, kl, i1)
    sch.parallel(i0)
    if mi % VECTOR == 0:
        sch.vectorize(i1)


def _pack_loops(
    sch: Any, packed: Any, nb: int, j_pos: int, k_pos: int, nj: int, whole: bool
) -> None:
    """Order the packing copy's loops so that it writes the packed panel contiguously: for a
    ``B`` stored ``N x K`` (``nn.dense``, a transposed operand) the copy is a transpose, and in
    ``B``'s own order (``j`` outer, ``k`` inner) each write lands 128 bytes after the last,
    in a panel larger than L1; with ``k`` outer and the panel's ``nj`` columns inner, the
    reads are ``nj`` streams along rows of ``B`` and the writes are sequential (128 x 784 x
    1024 ``nn.dense``, one thread: 2.55 -> 1.57 ms, as fast as ``nn.matmul`` on ``K x N``).
    ``whole``: the copy packs all of ``B`` in one parallel pass (its ``j`` is split into
    panels first, the panels in parallel)."""
    loops = sch.get_loops(packed)
    transposed = j_pos == nb - 2 and k_pos == nb - 1
    if len(loops) < 2:
        return
    if not transposed:  # B is K x N: its rows are the panel's rows already
        if whole:
            sch.parallel(loops[0])
        return
    *lead, j, k = loops
    if not whole:
        sch.reorder(k, j)
        return
    n = size(sch, j)
    if n is not None and n > nj and n % nj == 0:
        j0, j1 = sch.split(j, [None, nj])
        sch.reorder(j0, k, j1)
        sch.parallel(sch.fuse(*lead, j0) if lead else j0)
    else:
        sch.reorder(k, j)
        sch.parallel(sch.fuse(*lead, k) if lead else k)


def _schedule_gemv(sch: Any, block: Any, batch: list[Any], i: Any, j: Any, k: Any, kk: int) -> None:
    """Few rows: partial sums over 16 consecutive k, vectorized, kept in registers inside
    the loop over groups of four outputs, with the epilogue
    (:func:`relay.backend.schedule.cpu.schedule_rfactor`), when both operands are read
    along ``k``; otherwise the outputs run in parallel."""
    from relay.backend.schedule.cpu import inner_contiguous_reduction, schedule_rfactor

    if inner_contiguous_reduction(sch, block):
        schedule_rfactor(sch, block, epilogue=True)
        return
    outer = sch.fuse(*batch, i, j)
    if extent(sch, outer) >= 64:
        sch.parallel(outer)


def _schedule_rest(sch: Any, anchor: Any) -> None:
    """Blocks other than the product and its tiles: injective schedules."""
    from relay.backend.schedule.cpu import is_reduction

    root = sch.get_sblock("root")
    for b in sch.get_child_blocks(root):
        name = sch.get(b).name_hint
        if sch.get(b).same_as(sch.get(anchor)) or is_reduction(sch, b):
            continue
        if name.endswith(("_local", "_global")) or "rf" in name:
            continue
        with contextlib.suppress(Exception):  # a block already inside the product's loops
            schedule_injective(sch, b)
