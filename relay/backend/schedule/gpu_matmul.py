"""relay's SIMT matrix-product schedule for CUDA: large register tiles fed from shared
memory, the next step of the reduction prefetched while the current one is computed.

A product ``C[b, i, j] = sum_k A[b, i, k] * B[b, j, k]`` (any of relay's product layouts,
normalized to this form as dlight's ``Matmul`` rule normalizes it, with its elementwise
prologue and epilogue fused) is computed in tiles of ``BM x BN`` results per thread block:

* **Threads and their results.** ``TY x TX`` threads (16 x 16) each compute ``VY x VX``
  sub-tiles of 4 x 4 results (2 x 2: 8 x 8 results, 64 accumulators in registers). A
  thread's sub-tiles are ``4 * TY`` rows and ``4 * TX`` columns apart (TVM's virtual
  threads), so the 8 threads of a quarter warp read 128 consecutive bytes of shared memory
  with their 16-byte loads: no bank conflicts.
* **Shared memory, reduced axis outermost.** Each step of ``BK`` along ``k`` stages a
  ``BK x BM`` tile of ``A`` and a ``BK x BN`` tile of ``B`` in shared memory, both stored
  ``[k][i]`` / ``[k][j]`` whatever their layout in global memory. At each ``k`` a thread
  then reads its 8 values of ``A`` and its 8 of ``B`` as two 16-byte vectors each (into
  registers, the ``local`` caches) and does 64 fused multiply-adds: 4 loads for 64 FMAs.
  The copy from global memory is vectorized along the operand's contiguous axis (16-byte
  loads, coalesced); an operand stored along ``k`` (``A`` always, ``B`` in ``nn.dense``'s
  ``N x K``) is transposed on its way into shared memory, one element per store.
* **Prefetch through registers** (TVM's software pipeline, ``Tiles.pipeline``
  "registers"): the loop over steps of ``k`` loads step ``t + 1`` from global memory into
  registers, computes step ``t`` from the shared tiles, then, after a barrier, stores the
  registers into them. The global loads' latency is hidden behind the 8 x 8 x BK
  multiply-adds of the step (two barriers a step, one shared tile of each operand). A
  thread's staged registers must hold the elements it later stores, so both copies must run
  over the same tile in the same order; where TVM clips the staged region to the operand's
  bounds (a depth under one step, fewer columns than a tile) or spans it over a broadcast
  batch, or where the operand's contiguous axis is a broadcast batch fused with its rows
  (read at ``j % n``: TVM does not compile that staged copy), the schedule instead
  double-buffers shared memory without registers
  (``schedule_product(..., stage=False)``, the next rule).
* **Epilogue in the write-back**: accumulators are written 4 consecutive results at a time
  (16-byte stores) with the fused epilogue (bias, activation, cast) applied on the way.

Sizes that are not whole tiles are padded (``pad_einsum``: the padding is never stored).
Loads and stores are 16 bytes only where the operand's rows are whole, aligned vectors
(:func:`_vector_width`), else 8 or 4.

Tiles of 128 x 128 (:data:`TILES`) need :data:`MIN_BLOCKS` of them to occupy the
multiprocessors; a smaller product gets tiles of 64 x 64 (:data:`SMALL_TILES`, 4 x 4 results
per thread) and one smaller still keeps dlight's 32 x 64, as does one whose tiles would be
more than half padding. The rule takes static float32
products whose operands are indexed by plain iterators (not a convolution's windows).

Measured on an H100 (``tools/gpu/probe.py simt`` and ``small``, float32 without TF32): a
4096 x 4096 product at 48-49 TFLOP/s against cuBLAS's 52 (dlight's rule: 19); 2.84 ms with
the prefetch through registers, 3.20 with double-buffered shared memory alone, 3.37 with no
prefetch; steps of 16 run as fast as 8 and take twice as long to compile. At 512 x 1024 x 1024
the 64 x 64 tiles take 50 us against dlight's 81; at 128 rows they tie with dlight.

This is the design of the fast SIMT SGEMM kernels: Volkov and Demmel, "Benchmarking GPUs
to tune dense linear algebra" (SC 2008), for register blocking fed from shared memory;
NVIDIA CUTLASS's SIMT GEMM (thread tiles of 8 x 8 in 4 x 4 pieces, double-buffered shared
memory with a register prefetch); S. Boehm, "How to optimize a CUDA matmul kernel for
cuBLAS-like performance" (2022), for the step-by-step measurements of each of these.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal


@dataclasses.dataclass(frozen=True)
class Tiles:
    """A configuration of :func:`schedule_product`."""

    threads_y: int = 16
    threads_x: int = 16
    virtual_y: int = 2
    virtual_x: int = 2
    micro: int = 4  # results per sub-tile along each axis (a 16-byte vector of float32)
    step: int = 8  # BK: the reduction's step through shared memory
    pipeline: Literal["registers", "shared", "none"] = "registers"
    """"registers": the module docstring's prefetch; "shared": shared memory double-buffered,
    each step's loads stored straight to it (their latency not hidden); "none": no
    prefetch."""

    @property
    def rows(self) -> int:
        """BM, rows of results per thread block."""
        return self.threads_y * self.virtual_y * self.micro

    @property
    def cols(self) -> int:
        """BN, columns of results per thread block."""
        return self.threads_x * self.virtual_x * self.micro


TILES = Tiles()
"""The configuration :func:`schedule_product` uses (``tools/gpu/probe.py simt`` times
others on a GPU)."""

MIN_BLOCKS = 128
"""The fewest thread blocks (tiles of results) a product needs for :data:`TILES`; an H100
has 132 multiprocessors."""

SMALL_TILES = Tiles(virtual_y=1, virtual_x=1)
"""The configuration of products with too few tiles of :data:`TILES`: 64 x 64 results per
block, 4 x 4 per thread (on an H100, 50 against dlight's 81 us for a 512 x 1024 x 1024
product, even at 128 rows)."""

MIN_SMALL_BLOCKS = 32
"""The fewest thread blocks a product needs for :data:`SMALL_TILES`; smaller products keep
dlight's ``Matmul`` (32 x 64 tiles: twice the blocks)."""

DTYPES = ("float32",)
"""The operand dtypes this schedule takes (others keep dlight's ``Matmul``)."""


def settings() -> str:
    """This schedule's settings, for the kernel cache's key (:func:`gpu.settings`)."""
    return (
        f"{TILES} min_blocks={MIN_BLOCKS} {SMALL_TILES} min_small_blocks={MIN_SMALL_BLOCKS} "
        f"dtypes={DTYPES}"
    )


def schedule_product(sch: Any, tiles: Tiles | None = None, stage: bool = True) -> bool:
    """Schedule the matrix product of ``sch`` (a ``tvm.s_tir.Schedule`` of one lowered
    kernel) as the module docstring describes, in ``tiles`` (by default :data:`TILES`, or
    :data:`SMALL_TILES` where those give too few blocks); False, with ``sch`` possibly
    modified, where the kernel is not a static product of :data:`DTYPES` or is too small
    for either, or where an operand's register stage would not match its shared copy
    (:func:`_fetch`; ``stage=False`` then prefetches without registers)."""
    from tvm.s_tir.dlight.analysis import get_root_block
    from tvm.s_tir.dlight.gpu.matmul import (
        auto_inline_consumer_chain,
        get_index_map,
        get_reduction_blocks,
    )

    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    reductions = get_reduction_blocks(sch, sch.get_child_blocks(get_root_block(sch)))
    if reductions is None:
        return False
    main = reductions[0]
    stmt = sch.get(main)
    maps = get_index_map(stmt)
    if maps is None or len(stmt.reads) != 2:
        return False
    if any(str(r.source.dtype) not in DTYPES for r in stmt.reads):
        return False
    if not all(isinstance(d.min, tirx.Var | tirx.IntImm) for r in stmt.reads for d in r.region):
        # an operand indexed by sums of iterators (a convolution's window) is not a product
        return False
    # C[b, i, j] += A[b, i, k] * B[b, j, k]
    reindex_a = sch.reindex(main, ("read", 0))
    reindex_b = sch.reindex(main, ("read", 1))
    reindex_c = sch.reindex(main, ("write", 0))
    product, a_map, b_map, c_map = get_index_map(sch.get(main))
    sch.transform_layout(reindex_a, ("write", 0), a_map)
    sch.transform_layout(reindex_b, ("write", 0), b_map)
    sch.transform_layout(reindex_c, ("read", 0), c_map)
    sch.transform_block_layout(main, product)
    extents = [iv.dom.extent for iv in sch.get(main).iter_vars]
    if not all(isinstance(e, tirx.IntImm) for e in extents):
        return False
    batch, m, n, depth = (int(e) for e in extents)
    t = tiles or _choose(batch, m, n)
    if t is None:
        return False
    if not stage and t.pipeline == "registers":
        t = dataclasses.replace(t, pipeline="shared")
    sch.pad_einsum(main, [1, t.rows, t.cols, t.step])
    b, i, j, k = sch.get_loops(main)
    by, vy, ty, yi = sch.split(i, [None, t.virtual_y, t.threads_y, t.micro])
    bx, vx, tx, xi = sch.split(j, [None, t.virtual_x, t.threads_x, t.micro])
    ko, ki = sch.split(k, [None, t.step])
    sch.reorder(by, bx, vy, vx, ty, tx, ko, ki, yi, xi)
    by = sch.fuse(b, by)
    sch.bind(bx, "blockIdx.x")
    sch.bind(by, "blockIdx.y")
    sch.bind(vy, "vthread.y")
    sch.bind(vx, "vthread.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")

    result = sch.cache_write(main, 0, "local")
    sch.reverse_compute_at(result, tx, preserve_unit_loops=True)
    try:
        for operand, rows in ((0, m), (1, n)):
            _fetch(sch, main, operand, ko, t, rows, depth)
    except _Unstaged:
        return False  # (schedule_gpu then tries again with ``stage=False``)
    for operand in (0, 1):
        fragment = sch.cache_read(main, operand, "local")
        sch.compute_at(fragment, ki, preserve_unit_loops=True)
        _, vec = sch.split(sch.get_loops(fragment)[-1], [None, t.micro])
        sch.vectorize(vec)
    auto_inline_consumer_chain(sch, result)
    # a row of a thread's sub-tile is one 16-byte store (with the epilogue) where the
    # output's columns are whole, aligned vectors of 4 (else scalar stores)
    block = sch.get(result)
    if n % t.micro == 0 and _vector_width(block.writes, block.iter_vars[2].var, t.micro) == t.micro:
        _, vec = sch.split(sch.get_loops(result)[-1], [None, t.micro])
        sch.vectorize(vec)
    sch.decompose_reduction(main, ko)
    sch.unroll(ki)
    sch.annotate(tx, "pragma_auto_unroll_max_step", 256)
    sch.annotate(tx, "pragma_unroll_explicit", 1)
    if t.pipeline == "shared":
        sch.annotate(ko, "software_pipeline_stage", [0, 0, 1])
        sch.annotate(ko, "software_pipeline_order", [0, 1, 2])
    elif t.pipeline == "registers":
        # children of ko: A to registers, A to shared, B to registers, B to shared, compute
        sch.annotate(ko, "software_pipeline_stage", [0, 0, 0, 0, 1])
        sch.annotate(ko, "software_pipeline_order", [0, 3, 1, 4, 2])
    return True


def _choose(batch: int, m: int, n: int) -> Tiles | None:
    """The tiles of a ``batch`` of ``m x n`` products: :data:`TILES` where they make
    :data:`MIN_BLOCKS` blocks, else :data:`SMALL_TILES` where those make
    :data:`MIN_SMALL_BLOCKS`, each tile at least half full; None (dlight's) otherwise."""

    def fits(t: Tiles, least: int) -> bool:
        half_full = 2 * m >= t.rows and 2 * n >= t.cols
        return half_full and batch * -(-m // t.rows) * -(-n // t.cols) >= least

    # (a matrix-vector product, one row or column of many, is dlight's GEMV's)
    if fits(TILES, MIN_BLOCKS):
        return TILES
    if fits(SMALL_TILES, MIN_SMALL_BLOCKS):
        return SMALL_TILES
    return None


class _Unstaged(Exception):
    """The register stage of an operand's copy would not match its shared copy."""


def _own_loops(sch: Any, block: Any) -> list[Any]:
    """The loops of ``block``'s own iterators (those inside the loop it was computed at)."""
    return list(sch.get_loops(block)[-len(sch.get(block).iter_vars) :])


def _extents(sch: Any, block: Any) -> list[int]:
    """The extents of ``block``'s own loops, those of 1 left out (:class:`_Unstaged` where
    one is not a constant: TVM clipped the region to the operand's bounds)."""
    from relay.backend.runtime import tvm

    extents = [sch.get(loop).extent for loop in _own_loops(sch, block)]
    if not all(isinstance(n, tvm().tirx.IntImm) for n in extents):
        raise _Unstaged
    return [int(n) for n in extents if int(n) != 1]


def _vector_width(regions: Any, var: Any, widest: int) -> int:
    """The most elements (``widest``, or a smaller power of two) that accesses of
    ``regions`` (buffer regions in global memory of a block) can move as one aligned vector
    along block iterator ``var``: every buffer's rows are whole vectors and every last index
    is a multiple of the vector wherever ``var`` is (so a predicate on ``var`` padded to whole
    vectors holds for all of a vector's elements, or none)."""
    from tvm.sym.analyzer import Analyzer

    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    width = widest
    while width > 1:
        analyzer = Analyzer()
        analyzer.bind(var, tirx.Var("w", var.ty) * width)
        if all(
            isinstance(r.source.shape[-1], tirx.IntImm)
            and int(r.source.shape[-1]) % width == 0
            and (mod := analyzer.modular_set(r.region[-1].min)).coeff % width == 0
            and mod.base % width == 0
            for r in regions
        ):
            return width
        width //= 2
    return 1


def _fetch(sch: Any, main: Any, operand: int, ko: Any, t: Tiles, rows: int, depth: int) -> Any:
    """Stage ``operand`` (0: A, 1: B; ``rows`` x ``depth`` before padding) of ``main`` in
    shared memory at loop ``ko``, stored ``[b][k][i]``, copied by all threads along its
    contiguous axis, 16-byte loads where that axis and the rows of every buffer read are
    whole vectors (through registers first when ``t.pipeline`` is "registers"); the shared
    block."""
    from tvm.s_tir.dlight.gpu.matmul import auto_inline_producers
    from tvm.sym import detect_linear_equation

    from relay.backend.runtime import tvm

    undefined = tvm().tirx.analysis.undefined_vars
    shared = sch.cache_read(main, operand, "shared")
    sch.compute_at(shared, ko, preserve_unit_loops=True)
    auto_inline_producers(sch, shared)
    block = sch.get(shared)
    v_i, v_k = (iv.var for iv in block.iter_vars[1:])
    # the operand's contiguous axis in global memory: the one its last index varies with
    reads = [r for r in block.reads if str(r.source.scope()) == "global"]
    along_k = not reads or any(v.same_as(v_k) for r in reads for v in undefined(r.region[-1].min))
    contiguous = v_k if along_k else v_i
    vector = _vector_width(reads, contiguous, t.micro)
    while (depth if along_k else rows) % vector:
        vector //= 2
    sch.transform_layout(shared, ("write", 0), lambda b, i, k: (b, k, i))
    i, k = sch.get_loops(shared)[-2:]
    if not along_k:
        sch.reorder(k, i)
    copies = [shared]
    if t.pipeline == "registers":
        if not all(detect_linear_equation(r.region[-1].min, [contiguous]) for r in reads):
            # the contiguous axis is a broadcast batch fused with the rows (``b * n + j``,
            # read at ``j % n``): TVM's lowering of the vectorized copy out of the staged
            # registers leaves a vector lane undefined ("variables ... are used, but are
            # not passed in as API arguments"), and the kernel ran on the CPU
            raise _Unstaged
        staged = sch.cache_read(shared, 0, "local")
        sch.compute_at(staged, ko, preserve_unit_loops=True)
        # each thread stores to shared memory the elements it staged only where both copies
        # iterate over the same tile in the same order: not where TVM clipped the staged
        # region to the operand's bounds (one tile along its contiguous axis: K < BK, or
        # N < BN) or where it spans several of the operand's axes (a broadcast batch)
        if _extents(sch, staged) != _extents(sch, shared):
            raise _Unstaged
        copies.insert(0, staged)
    for copy in copies:
        fused = sch.fuse(*_own_loops(sch, copy))
        _, ty, tx, vec = sch.split(fused, [None, t.threads_y, t.threads_x, vector])
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
        sch.vectorize(vec)
    return shared
