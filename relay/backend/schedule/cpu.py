"""CPU schedules for lowered primitive functions, chosen by the group's anchor operator.

A lowered group is a TensorIR function with one block per TE stage. The schedules here are
written with ``tvm.s_tir.Schedule`` primitives, after TVM's own x86 strategies
(``python/tvm/topi/x86``) and the measurements in ``shared/notes/tvm-0.27.md``:

* **injective** (elementwise, broadcast, layout): every producer is inlined into the output
  block; its loops are fused, split by 16 for an AVX-512 vector of float32 (vectorized) and
  the outer loop runs in parallel when there is enough work; a block that reads an input
  transposed runs in 16 x 16 tiles;
* **reduction**: producers inlined into the reduction block, consumers inlined after it;
  a reduction along contiguous memory (the last axis) is vectorized by factoring 16 lanes of
  it out (``rfactor``), four outputs at a time, their partial sums added as a vectorized tree
  (:func:`schedule_rfactor`); otherwise the spatial loops run in parallel, and when the
  reduced axes are outer to a contiguous spatial axis the loops are reordered so that the
  inner spatial axis is vectorized;
* **matmul** (``nn.dense``, ``nn.matmul``, ``nn.batch_matmul``): see
  :mod:`relay.backend.schedule.matmul`;
* anything else gets the generic schedule: the injective and reduction rules applied block
  by block.

In a kernel of symbolic sizes (shape variables) the same rules apply, a symbolic extent
counted as :data:`SYMBOLIC_SIZE` where a choice depends on a size; products pad their
symbolic rows or columns to whole tiles (:mod:`relay.backend.schedule.matmul`), and every
reduction over a symbolic extent has its initialization taken out of its loops
(:func:`decompose_symbolic_reductions`).

A schedule that fails to apply (a primitive refusing an unusual block structure) falls back
to the generic one, and that to the unscheduled function: a kernel is always produced.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from relay import flags
from relay.backend.lower import LoweredFunc

VECTOR = 16
"""Lanes of the innermost vectorized loop (16 float32 = one AVX-512 register)."""

PARALLEL_MIN = 1 << 14
"""Fewer output elements than this run on one thread (a parallel launch costs microseconds)."""

SYMBOLIC_SIZE = 128
"""What a symbolic extent (a kernel of symbolic sizes: a batch, a sequence length) counts
as where a schedule's choice depends on a size (running in parallel, vectorizing)."""


def _tirx() -> Any:
    from relay.backend.runtime import tvm

    return tvm().tirx


class Unchecked:
    """A ``tvm.s_tir.Schedule`` whose primitives skip TVM's Python-side check of their
    arguments' types (``s_tir.schedule._type_checker``, which binds the signature and walks
    the type hints on every call): relay's rules pass what the primitives take, and the
    checks were half of the time spent scheduling (0.154 of 0.163 s for the 18 kernels of
    ``mlp_train_step``). A wrong argument still fails, in TVM's C++ conversion."""

    __slots__ = ("schedule",)

    def __init__(self, schedule: Any) -> None:
        self.schedule = schedule

    def __getattr__(self, name: str) -> Any:
        raw = getattr(getattr(type(self.schedule), name, None), "__wrapped__", None)
        if raw is None:
            return getattr(self.schedule, name)
        return functools.partial(raw, self.schedule)


def new_schedule(func: Any) -> Unchecked:
    """A TVM schedule of the PrimFunc ``func`` for relay's rules (:class:`Unchecked`). A
    primitive that fails renders the function into its error only where the error is shown
    (``RELAY_DEBUG=1``): rules fail and fall back routinely, and the rendering cost ~5 of
    the ~80 ms relay spent scheduling mlp_train_step's kernels."""
    from relay.backend.runtime import tvm

    render = "detail" if flags.get().debug else "fast"
    return Unchecked(tvm().s_tir.Schedule(func, error_render_level=render))


def is_reduction(sch: Any, block: Any) -> bool:
    """Whether ``block`` has a reduction iterator."""
    iter_var = _tirx().IterVar
    return any(iv.iter_type == iter_var.CommReduce for iv in sch.get(block).iter_vars)


def extent(sch: Any, loop: Any) -> int:
    """The constant extent of ``loop`` (a TypeError for a symbolic one)."""
    return int(sch.get(loop).extent)


def size(sch: Any, loop: Any) -> int | None:
    """The extent of ``loop``: an int, or None when it is symbolic (a kernel of symbolic
    sizes)."""
    e = sch.get(loop).extent
    return int(e) if isinstance(e, _tirx().IntImm) else None


def nominal(sch: Any, loop: Any) -> int:
    """The extent of ``loop``, a symbolic one counted as :data:`SYMBOLIC_SIZE`."""
    n = size(sch, loop)
    return SYMBOLIC_SIZE if n is None else n


def decompose_symbolic_reductions(sch: Any) -> None:
    """Take the initialization of each reduction whose loops have a symbolic extent out of
    them (``decompose_reduction`` at its outermost loop): inside a reduction loop it would
    never run when that extent is 0, and the result would be left unwritten."""
    root = sch.get_sblock("root")
    for block in sch.get_child_blocks(root):
        if sch.get(block).init is None or not is_reduction(sch, block):
            continue
        loops = sch.get_loops(block)
        if loops and any(size(sch, lp) is None for lp in loops):
            sch.decompose_reduction(block, loops[0])


def is_barrier(sch: Any, block: Any) -> bool:
    """Whether ``block`` is a barrier stage of the lowering (:data:`relay.backend.lower.
    BARRIER`), which is computed on its own, never inlined."""
    from relay.backend.lower import BARRIER

    return bool(sch.get(block).name_hint.startswith(BARRIER))


def inline_producers(sch: Any, keep: Callable[[Any], bool] = lambda b: False) -> None:
    """Inline every non-reduction block that is not an output into its consumers, last
    first, except barriers and those ``keep`` holds on to; blocks that refuse stay."""
    root = sch.get_sblock("root")
    outputs = {sch.get(b).name_hint for b in sch.get_output_blocks(root)}
    for block in reversed(sch.get_child_blocks(root)):
        name = sch.get(block).name_hint
        if name in outputs or is_reduction(sch, block) or keep(block) or is_barrier(sch, block):
            continue
        with contextlib.suppress(Exception):  # e.g. a producer feeding a reduction's init
            sch.compute_inline(block)


def inline_consumers(sch: Any, block: Any) -> None:
    """Inline the elementwise consumers after ``block`` into it, as far as possible: up to
    a reduction, a barrier, a value used twice, or a consumer that refuses (a reduction's
    epilogue; a product's or a convolution's into the write-back of its tiles)."""
    while True:
        consumers = sch.get_consumers(block)
        if len(consumers) != 1 or is_reduction(sch, consumers[0]) or is_barrier(sch, consumers[0]):
            return
        try:
            sch.reverse_compute_inline(consumers[0])
        except Exception:
            return


TILE = 16
"""The side of the square tiles a transposing block runs in: a 16 x 16 tile of the input
(16 cache lines) stays in L1 while the output's 16 rows are written, one vector each
(1024^2 float32 transpose: 3.4 ms untiled, 1.0 ms in 32 x 32 tiles, 0.5 ms in 16 x 16)."""


def _transposing(sch: Any, block: Any) -> bool:
    """Whether ``block`` reads a buffer with its last two loop variables swapped (a transpose,
    after its producers were inlined): row by row, such reads stride across memory."""
    stmt = sch.get(block)
    ivars = [iv.var for iv in stmt.iter_vars]
    if len(ivars) < 2:
        return False
    inner, outer = ivars[-1], ivars[-2]
    for read in stmt.reads:
        mins = [r.min for r in read.region]
        if len(mins) >= 2 and mins[-1].same_as(outer) and any(m.same_as(inner) for m in mins[:-1]):
            return True
    return False


def _schedule_transpose(sch: Any, block: Any) -> bool:
    """Tile the last two loops by :data:`TILE` (parallel over the tiles, the output's rows
    vectorized inside each): True when applied (both extents multiples of the tile)."""
    loops = sch.get_loops(block)
    if len(loops) < 2 or extent(sch, loops[-1]) % TILE or extent(sch, loops[-2]) % TILE:
        return False
    *outer, i, j = loops
    i0, i1 = sch.split(i, [None, TILE])
    j0, j1 = sch.split(j, [None, TILE])
    sch.reorder(*outer, i0, j0, i1, j1)
    tiles = sch.fuse(*outer, i0, j0)
    sch.parallel(tiles)
    _, vec = sch.split(j1, [None, VECTOR])
    sch.vectorize(vec)
    return True


def schedule_injective(sch: Any, block: Any) -> None:
    """Vectorize an inner 16 and parallelise the rest. When the last axis is a multiple of
    16 the vector runs along it (each vector stays inside one row, so loads and stores are
    contiguous and the index arithmetic is done once per vector); otherwise all the loops
    are fused first. A block reading a transposed input runs in square tiles instead."""
    loops = sch.get_loops(block)
    if not loops:
        return
    total = 1
    for lp in loops:
        total *= nominal(sch, lp)
    static = all(size(sch, lp) is not None for lp in loops)
    if (
        static
        and total >= PARALLEL_MIN
        and _transposing(sch, block)
        and _schedule_transpose(sch, block)
    ):
        return
    last = nominal(sch, loops[-1])
    if len(loops) > 1 and last >= VECTOR:
        outer, inner = sch.split(loops[-1], [None, VECTOR])
        sch.vectorize(inner)
        rows = sch.fuse(*loops[:-1], outer)
        if total >= PARALLEL_MIN:
            sch.parallel(rows)
        return
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    n = nominal(sch, fused)
    if n >= 2 * VECTOR:
        outer, inner = sch.split(fused, [None, VECTOR])
        sch.vectorize(inner)
        if n >= PARALLEL_MIN:
            sch.parallel(outer)
    elif n >= PARALLEL_MIN:
        sch.parallel(fused)


def schedule_reduction(sch: Any, block: Any) -> None:
    """Parallel spatial loops outside; the innermost spatial loop vectorized when it is
    inside the reduction (reductions over outer axes)."""
    iter_var = _tirx().IterVar
    loops = sch.get_loops(block)
    kinds = [iv.iter_type for iv in sch.get(block).iter_vars]
    if len(kinds) != len(loops):
        return
    spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == iter_var.DataPar]
    reduce = [lp for lp, k in zip(loops, kinds, strict=True) if k != iter_var.DataPar]
    if not spatial:
        return
    total = 1
    for lp in spatial:
        total *= nominal(sch, lp)
    # reductions over an outer axis of a row-major input: keep the last spatial loop inside
    # the reduction, so each reduction step reads contiguous memory and vectorizes
    block_reads = sch.get(block).reads
    inner_contiguous = False
    if block_reads and len(spatial) >= 1 and reduce:
        last_spatial = sch.get(block).iter_vars[len(kinds) - 1 - kinds[::-1].index(0)]
        region = block_reads[0].region
        inner_contiguous = len(region) > 0 and region[-1].min.same_as(last_spatial.var)
    outer_spatial = spatial
    if inner_contiguous and _schedule_columns(sch, block, spatial, reduce, total):
        return
    if inner_contiguous and nominal(sch, spatial[-1]) >= VECTOR:
        outer_spatial = spatial[:-1]
        sch.reorder(*outer_spatial, *reduce, spatial[-1])
    if outer_spatial:
        fused = sch.fuse(*outer_spatial) if len(outer_spatial) > 1 else outer_spatial[0]
        depth = 1
        for lp in reduce:
            depth *= nominal(sch, lp)
        # in parallel for enough data read: a (128, 10) sum took 1.34 us a call in
        # parallel, 0.37 on one thread (and 24 -> 19 ms to compile)
        if total * depth >= PARALLEL_MIN and nominal(sch, fused) > 1:
            sch.parallel(fused)


COLUMNS = 4 * VECTOR
"""Outputs a column reduction (:func:`_schedule_columns`) accumulates together: four AVX-512
registers, each loaded row after row."""


def _schedule_columns(
    sch: Any, block: Any, spatial: list[Any], reduce: list[Any], total: int
) -> bool:
    """A sum, product, max or min over outer axes of a row-major input (``sum(x, axis=0)``: a bias's
    gradient) in chunks of :data:`COLUMNS` outputs (or 32, or 16: the widest that divides
    the last axis): for each chunk the reduction runs over the rows with the chunk's partial
    results in vector registers (a ``local`` buffer of 256 bytes, which LLVM keeps in
    registers), written back once; the chunks of all outer outputs run in parallel when
    there is enough to read (:data:`RFACTOR_PARALLEL_MIN`). Row after row, each step loads
    the chunk's 64 contiguous floats of the row and adds them (one load and one add per 16
    values; the untiled loop, not vectorized, also loaded and stored the partial results
    every row). Measured against the untiled loop, numpy in the same runs: a (128, 1024)
    float32 summed over axis 0 with its SGD update, 50 -> 13 us (numpy 14); (4096, 1024)
    summed over axis 0, 2.9 -> 0.59 ms (numpy 0.67). False where it does not apply: a
    symbolic or odd size, or a reducer other than +, *, max and min (a select-based one,
    as the nan-propagating max's combiner was, ran slower in this form: 4.5 -> 7.2 ms)."""
    body = sch.get(block).body
    tirx = _tirx()
    if not isinstance(getattr(body, "value", None), (tirx.Add, tirx.Mul, tirx.Max, tirx.Min)):
        return False
    n = size(sch, spatial[-1])
    depth = 1
    for lp in reduce:
        e = size(sch, lp)
        if e is None:
            return False
        depth *= e
    if n is None or n % VECTOR or any(size(sch, lp) is None for lp in spatial):
        return False
    width = next(w for w in (COLUMNS, 2 * VECTOR, VECTOR) if n % w == 0)
    chunk, lanes = sch.split(spatial[-1], [None, width])
    sch.reorder(*spatial[:-1], chunk, *reduce, lanes)
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, chunk)
    sch.vectorize(lanes)
    sch.vectorize(sch.get_loops(local)[-1])
    outer = sch.fuse(*spatial[:-1], chunk) if len(spatial) > 1 else chunk
    if total * depth >= RFACTOR_PARALLEL_MIN and nominal(sch, outer) > 1:
        sch.parallel(outer)  # (before the initialization is taken out: TVM checks the block)
    sch.decompose_reduction(block, reduce[0])
    return True


def inner_contiguous_reduction(sch: Any, block: Any) -> bool:
    """Whether ``block``'s reduction axes are its last, over the last axes of what it reads,
    in one loop (:func:`fuse_contiguous_reductions` fuses several), of a length that is a
    multiple of 16 (what :func:`schedule_rfactor` handles)."""
    stmt = sch.get(block)
    ivars = stmt.iter_vars
    loops = sch.get_loops(block)
    reduced = _trailing_reductions(ivars)
    if reduced == 0 or len(loops) != len(ivars) - reduced + 1:
        return False
    n = size(sch, loops[-1])
    if n is None or n % VECTOR or n < 2 * VECTOR:
        return False
    reads = stmt.reads
    return (
        bool(reads) and len(reads[0].region) > 0 and reads[0].region[-1].min.same_as(ivars[-1].var)
    )


def _trailing_reductions(ivars: Any) -> int:
    """How many of a block's iteration variables are reduction axes, when they are all its
    last ones (0 otherwise: none, or one before a spatial axis)."""
    data_par = _tirx().IterVar.DataPar
    reduced = sum(iv.iter_type != data_par for iv in ivars)
    if any(iv.iter_type == data_par for iv in ivars[len(ivars) - reduced :]):
        return 0
    return int(reduced)


def add_unit_loops(sch: Any) -> None:
    """Give every loop-less block (the 0-d consumer of a sum to one value: ``sqrt(sum(x *
    x))``, a loss) a loop of one iteration. TVM's ``rfactor`` fails on a kernel that has
    such a block (``Check failed: block_realize == old_block_realize_``), which then ran as
    one scalar loop (4M floats: 4.4 ms, numpy 0.65). (dlight's GPU reduction rules do not
    take such a kernel either, loop or not: for CUDA the epilogue is not fused,
    :data:`relay.passes.fuse_ops.SCALAR_EPILOGUES_CONFIG`.)"""
    root = sch.get_sblock("root")
    for block in sch.get_child_blocks(root):
        if not sch.get_loops(block):
            sch.add_unit_loop(block)


def fuse_contiguous_reductions(sch: Any, block: Any) -> None:
    """Fuse the loops of ``block``'s reduction axes into one when they are its last axes and
    read the last axes of its first input whole, in order (``sum(x)`` of a matrix,
    ``sum(x, axis=(1, 2))``), and the fused length is what :func:`schedule_rfactor` takes:
    their elements are contiguous in memory, one loop to vectorize (and, for a single
    output, to split among the threads). Unfused, only a reduction over one axis was a
    candidate, and one over two axes ran as a scalar loop on one thread: ``sum`` of a
    (1024, 4096) float32 took 2.2 ms against numpy's 0.79."""
    stmt = sch.get(block)
    ivars = stmt.iter_vars
    loops = sch.get_loops(block)
    reduced = _trailing_reductions(ivars)
    if reduced < 2 or len(loops) != len(ivars) or not stmt.reads:
        return
    tail = ivars[len(ivars) - reduced :]
    read = stmt.reads[0]
    if len(read.region) < reduced:
        return
    dims = read.region[len(read.region) - reduced :]
    if not all(d.min.same_as(iv.var) for d, iv in zip(dims, tail, strict=True)):
        return
    shape = read.source.shape[len(read.source.shape) - reduced :]
    total = 1
    for d, iv in zip(shape, tail, strict=True):
        e = iv.dom.extent
        if not (isinstance(d, _tirx().IntImm) and isinstance(e, _tirx().IntImm)):
            return
        if int(d) != int(e):
            return
        total *= int(e)
    if total % VECTOR == 0 and total >= 2 * VECTOR:  # (else schedule_reduction takes it)
        sch.fuse(*loops[len(loops) - reduced :])


ROWS = 4
"""Outputs that :func:`schedule_rfactor` computes together: four independent vector
accumulators hide the FMA latency (one alone is a chain of dependent FMAs), and each vector of
an operand the rows share (the vector of a GEMV) is loaded once for all four."""

RFACTOR_PARALLEL_MIN = 1 << 17
"""Fewer elements read than this (512 KB of float32) and :func:`schedule_rfactor` runs on one
thread. A core reads ~25 float32 per ns here (the operand streams from its L2), and a
parallel region costs ~0.9 us more than a serial one, and far more when another process
holds the second core; below this size the second core saves about that much at best.
Measured on the 2-core VM, medians of interleaved calls, one thread against two: 256 x 256
GEMV 3.8 vs 4.3 us; 256 x 384 5.5 vs 5.4; 256 x 512 7.6 vs 6.4; 1024 x 1024 50 vs 28 (mins)."""


def _rows(n: int) -> int:
    """The largest of :data:`ROWS`, 2 and 1 that divides ``n``."""
    r = ROWS
    while n % r:
        r //= 2
    return r


def schedule_rfactor(sch: Any, block: Any, epilogue: bool = False) -> None:
    """A reduction along contiguous memory, vectorized: ``k`` is split by 16 lanes and
    factored out (``rfactor``), so each output accumulates 16 partial sums in a vector
    register.

    For a block :func:`inner_contiguous_reduction` accepts. With many outputs they go
    :data:`ROWS` at a time (the innermost spatial loop of more than one iteration is split by
    4, else 2 or 1, whichever divides it): ``k`` is outermost in each group of rows, the rows
    unrolled inside it and the 16 lanes vectorized, so four independent FMA chains run
    together and share each load of a common operand. The 16 partial sums of a row are then
    added as a tree, each level another ``rfactor`` of the last, vectorized (16 -> 8 -> 4 ->
    2 -> 1; 15 dependent scalar additions cost as much as the products when rows are short).
    Every stage is computed inside the loop over groups of rows, so the partial sums stay in
    registers. With ``epilogue`` the consumer of the sums (a matrix product's bias,
    activation or squeeze) is computed there too. Measured on one thread against one
    accumulator per row and sequential sums: 256 x 256 GEMV 3.6 -> 3.1 us, 1024 x 32
    5.0 -> 2.2 us. The groups run in parallel only when the data read is large
    (:data:`RFACTOR_PARALLEL_MIN`).

    With a single output and a long reduction the partial sums are split in 16 chunks that
    run in parallel instead. (TVM's ``rfactor`` knows ``te.sum``, products and integer
    min/max; other reducers raise, and the caller falls back to
    :func:`schedule_reduction`.)"""
    loops = sch.get_loops(block)
    spatial = loops[:-1]  # (inner_contiguous_reduction: the reduction is the last loop)
    k = loops[-1]
    n = extent(sch, k)
    total = 1
    for lp in spatial:
        total *= nominal(sch, lp)
    if total == 1:
        add_unit_loops(sch)
        chunks = 16 if n >= 1 << 16 and n % (16 * VECTOR) == 0 else 1
        kp, ko, ki = sch.split(k, [chunks, None, VECTOR])
        sch.reorder(kp, ki, ko)
        rf = sch.rfactor(sch.fuse(kp, ki), factor_axis=len(spatial))
        rloops = sch.get_loops(rf)
        f, ko = rloops[len(spatial)], rloops[len(spatial) + 1]
        kp, ki = sch.split(f, [chunks, VECTOR])
        sch.reorder(kp, ko, ki)
        sch.vectorize(sch.get_loops(rf)[-1])
        if chunks > 1:
            sch.parallel(kp)
        return
    # the rows: the innermost spatial loop of more than one iteration, split by ROWS; every
    # stage is computed at its outer part (``group``), under the loops of the outer axes
    pos = max(p for p, lp in enumerate(spatial) if nominal(sch, lp) > 1)
    rows = _rows(size(sch, spatial[pos]) or 1)  # a symbolic one: a row at a time
    group = sch.split(spatial[pos], [None, rows])[0] if rows > 1 else spatial[pos]
    depth = pos + 1  # the loops down to ``group``, which every stage shares
    rf = sch.rfactor(sch.split(k, [None, VECTOR])[1], factor_axis=len(spatial))
    tree = []
    width = VECTOR
    while width > 2:  # the final block adds the last two
        half = sch.split(sch.get_loops(block)[-1], [2, width // 2])[1]
        tree.append(sch.rfactor(half, factor_axis=len(spatial)))
        width //= 2
    for producer in [*reversed(tree), rf]:
        sch.compute_at(producer, group)
    # compute_at makes the loops in the order of the block's variables, the factored lanes
    # first: the partial sums' loops are (lanes, rows, k), each tree level's (lanes, pair, rows)
    lane, *rest, rf_k = sch.get_loops(rf)[depth:]
    if extent(sch, lane) != VECTOR:
        raise ValueError("unexpected loops after rfactor")
    sch.reorder(rf_k, *rest, lane)
    for t in tree:
        t_lane, *t_rest = sch.get_loops(t)[depth:]
        sch.reorder(*t_rest, t_lane)
        for lp in t_rest:
            sch.unroll(lp)
        if extent(sch, t_lane) >= 4:
            sch.vectorize(t_lane)
        else:
            sch.unroll(t_lane)
    for lp in [*rest, *sch.get_loops(block)[depth:]]:
        sch.unroll(lp)
    sch.vectorize(lane)
    if epilogue:
        _epilogue_at(sch, block, group, depth)
    above = sch.get_loops(block)[:depth]
    fused = sch.fuse(*above) if len(above) > 1 else above[0]
    if total * n >= RFACTOR_PARALLEL_MIN and nominal(sch, fused) > 1:
        sch.parallel(fused)
    sch.decompose_reduction(rf, rf_k)


def _epilogue_at(sch: Any, block: Any, group: Any, depth: int) -> None:
    """Compute the single elementwise consumer of ``block`` at ``group`` (its one new loop
    vectorized), if it has one and it agrees; else leave it where it is."""
    consumers = sch.get_consumers(block)
    if len(consumers) != 1 or is_reduction(sch, consumers[0]) or is_barrier(sch, consumers[0]):
        return
    try:
        sch.reverse_compute_at(consumers[0], group)
    except Exception:
        return
    new = sch.get_loops(consumers[0])[depth:]
    if len(new) == 1 and nominal(sch, new[0]) >= 4:
        sch.vectorize(new[0])


def schedule_generic(sch: Any, lowered: LoweredFunc, rfactor: bool = False) -> None:
    """Producers inlined; each remaining block scheduled as injective or reduction (with
    ``rfactor``, reductions along contiguous memory with :func:`schedule_rfactor`)."""
    inline_producers(sch)
    root = sch.get_sblock("root")
    for block in sch.get_child_blocks(root):
        if is_reduction(sch, block):
            inline_consumers(sch, block)
    for block in sch.get_child_blocks(root):
        if is_reduction(sch, block):
            if rfactor:
                fuse_contiguous_reductions(sch, block)
            if rfactor and inner_contiguous_reduction(sch, block):
                schedule_rfactor(sch, block)
            else:
                schedule_reduction(sch, block)
        else:
            schedule_injective(sch, block)


def schedule_generic_rfactor(sch: Any, lowered: LoweredFunc) -> None:
    """:func:`schedule_generic` with vectorized inner reductions."""
    schedule_generic(sch, lowered, rfactor=True)


def schedule_dynamic(sch: Any, lowered: LoweredFunc) -> None:
    """A function with ``?`` dimensions (an elementwise kernel of :mod:`relay.backend.vm.
    dynamic` over a ``(n, 16)`` view of its operands, or over their ``(n,)`` tail):
    producers inlined; in each remaining block the static inner loop of :data:`VECTOR`
    vectorized, and the outer loops, whose extent is the size variable, fused and run in
    parallel when ``lowered.parallel`` (the caller picks the parallel kernel for large
    sizes, which the schedule cannot see)."""
    inline_producers(sch)
    root = sch.get_sblock("root")
    for block in sch.get_child_blocks(root):
        loops = sch.get_loops(block)
        if not loops or is_reduction(sch, block):
            continue
        inner = sch.get(loops[-1]).extent
        if isinstance(inner, _tirx().IntImm) and int(inner) == VECTOR:
            sch.vectorize(loops[-1])
            loops = loops[:-1]
        if loops and lowered.parallel:
            sch.parallel(sch.fuse(*loops) if len(loops) > 1 else loops[0])


Rule = Callable[[Any, LoweredFunc], None]


def _unscheduled(sch: Any, lowered: LoweredFunc) -> None:
    """No schedule: the last resort."""


def _rules() -> dict[str, Rule]:
    from relay.backend.schedule.conv import schedule_conv2d_group
    from relay.backend.schedule.matmul import schedule_matmul_group

    return {
        "nn.conv2d": schedule_conv2d_group,
        "nn.dense": schedule_matmul_group,
        "nn.matmul": schedule_matmul_group,
        "nn.batch_matmul": schedule_matmul_group,
    }


def schedule_cpu(lowered: LoweredFunc) -> Any:
    """The scheduled PrimFunc of ``lowered`` (see the module docstring)."""
    rule = _rules().get(lowered.anchor)
    attempts: list[Rule] = [schedule_generic_rfactor, schedule_generic]
    if lowered.parallel is not None:
        attempts = [schedule_dynamic]
    elif rule is not None:
        attempts.insert(0, rule)
    for attempt in [*attempts, _unscheduled]:
        sch = new_schedule(lowered.prim_func)
        try:
            attempt(sch, lowered)
            if lowered.shape_vars:
                decompose_symbolic_reductions(sch)
            return sch.mod["main"]
        except Exception as err:
            lines = str(err).strip().splitlines() or [""]
            why = next((x for x in lines if x.startswith("Error message")), lines[0])
            flags.debug_print(
                1, f"schedule {attempt.__name__} failed on {lowered.anchor or 'a group'}: {why}"
            )
    return lowered.prim_func
