"""GPU schedules for lowered primitive functions: TVM's dlight rules.

A kernel for a GPU must have its loops bound to blocks and threads: an unscheduled PrimFunc
compiled for CUDA silently becomes host loops over device pointers, with no device kernel
at all (``shared/notes/tvm-0.27.md``). Each lowered function is scheduled by the first of
TVM's ``s_tir.dlight`` GPU rules that applies, in this order (dlight's own default, with
relay's rules between):

* :func:`~relay.backend.schedule.gpu_matmul.schedule_product`, relay's: a float32 product
  with at least 32 tiles of 64 x 64, in register tiles of 8 x 8 (or 4 x 4) results per
  thread fed from shared memory, the next step prefetched through registers (49 TFLOP/s on
  an H100, cuBLAS's 52);
* ``Matmul``: a matrix product (and batched), tiled through shared memory with its
  epilogue. A product of float16 matrices (bfloat16 from ``sm_80`` on, the same rule with
  the bfloat16 intrinsics: :func:`relay.backend.schedule.tensorize.wmma_tensorize`) whose
  sizes are all over 64 runs on
  the tensor cores (dlight's WMMA rule: 16 x 16 x 16 fragments, float32 accumulators,
  shared memory double-buffered), with dlight's ``tensorize`` calls done by relay's own
  (:mod:`relay.backend.schedule.tensorize`: TVM's crashes this wheel); if that schedule
  fails, the SIMT rule (``dlight.do_not_tensorize``) takes the product;
* ``GEMV``: a matrix-vector product, one warp-level reduction per output row;
* :func:`schedule_transpose`, relay's, then dlight's ``Transpose``: a 2-D transpose (also
  the one ``AlterProductLayout`` puts before a float16 product) through shared memory
  padded against bank conflicts, so both the reads and the writes are along rows (the
  elementwise rule's vectors gather one of them); relay's takes whole 32 x 32 tiles
  (dlight's 16 x 8 tiles read 16 bytes of a float16 row at a time);
* ``Reduction`` / ``GeneralReduction``: a reduction (with its elementwise producers and
  consumers), cross-thread reductions inside a block, for softmax and layer norm the
  whole row in one kernel;
* :func:`schedule_elementwise`, relay's: elementwise, broadcast and layout kernels, a
  vector of 4 elements per thread (``float4``; what TVM's CUDA code generator vectorizes
  correctly);
* ``Fallback``: anything else (and the elementwise kernels the rule above leaves), its
  loops fused and bound to blocks of threads, one element each;
* :func:`schedule_outputs`, relay's: a kernel with several outputs (a result and the flags
  of its run-time checks, a group's several results), each output a launch of its own,
  reductions in registers and, where TVM can combine them, across the threads of a block;
* :func:`schedule_rows`, relay's last resort, for what none of those can lower (a
  reduction with a reducer TVM cannot combine across threads, such as relay's
  NaN-propagating ``max`` or ``argmax``, and what is computed from it in the same kernel):
  a thread per row of the output.

A rule's schedule is kept only if it lowers for CUDA (every intermediate buffer out of
global memory, every cross-thread reduction one TVM can lower) and launches within the
device's limits; otherwise the next rule is tried.

A kernel with a zero-size tensor gets no GPU schedule (it runs on the CPU: dlight's
``Fallback`` gave one unguarded stores that wrote out of bounds on an H100).

A function no rule scheduled is a CompileError (it would not run on the device), and every
scheduled function's launch is checked against the device's limits
(:func:`relay.backend.cuda.check_launch`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from relay.backend.lower import LoweredFunc
from relay.backend.schedule.gpu_matmul import schedule_product
from relay.backend.schedule.tensorize import wmma_tensorize
from relay.backend.target import Target
from relay.errors import CompileError

TENSOR_CORE_DTYPES = {"float16": 70, "bfloat16": 80}
"""Input dtypes of the products put on the tensor cores, with the least architecture whose
WMMA takes them (``sm_70`` float16, ``sm_80`` bfloat16; CUDA C++ Programming Guide, "Warp
Matrix Functions"). dlight's int8 WMMA schedule fails in TVM's CUDA code generator
(``fragment_info_``), so int8 products stay SIMT."""


def transposed_operands(target: Target) -> tuple[str, ...]:
    """Dtypes of the GPU products whose operands are laid out along the reduced axis before
    fusion (relay.passes.alter_layout: ``nn.matmul``'s K x N operand transposed once, then
    copied to shared memory with vector loads): those ``target``'s tensor cores take."""
    from relay.backend.target import sm_version

    version = sm_version(target.arch)
    return tuple(d for d, least in TENSOR_CORE_DTYPES.items() if version >= least)


class NoGPUSchedule(CompileError):
    """No GPU schedule applies to a kernel (it then runs on the CPU: mixed placement)."""


MATMUL_TILES: dict[str, int] = {}
"""Overrides of dlight's SIMT ``Matmul`` configuration for CUDA (``block_size_x``,
``micro_size_k``, ...; empty: dlight's own, 8 x 16 threads of 4 x 4 results)."""


def _rules() -> list[Any]:
    import dataclasses

    from tvm.s_tir import dlight as dl

    class Matmul(dl.gpu.Matmul):  # type: ignore[misc]
        """dlight's rule with :data:`MATMUL_TILES` over its configuration."""

        def get_configs(self, target: Any) -> Any:
            config = super().get_configs(target)
            return dataclasses.replace(config, **MATMUL_TILES) if MATMUL_TILES else config

    return [
        Matmul(),
        dl.gpu.GEMV(),
        dl.gpu.Transpose(),
        dl.gpu.Reduction(),
        dl.gpu.GeneralReduction(),
        dl.gpu.Fallback(),
    ]


def tensor_core_operands(lowered: LoweredFunc, target: Target) -> str | None:
    """The dtype of ``lowered``'s operands if it may be a product for the tensor cores of
    ``target`` (see :data:`TENSOR_CORE_DTYPES`; dlight's rule decides whether it is one),
    else None."""
    from relay.backend.target import sm_version

    dtypes = {str(t.dtype) for t in lowered.inputs} & set(TENSOR_CORE_DTYPES)
    if len(dtypes) != 1:
        return None
    (dtype,) = dtypes
    return dtype if sm_version(target.arch) >= TENSOR_CORE_DTYPES[dtype] else None


def schedule_gpu(lowered: LoweredFunc, target: Target, name: str) -> Any:
    """The PrimFunc of ``lowered`` (kernel ``name``) scheduled for GPU ``target``: by the
    first rule that applies (a rule that raises on an unusual block, as dlight's reduction
    rules do on relay's NaN-propagating reducers, counts as not applying)."""
    from relay import flags
    from relay.backend.cuda import check_launch
    from relay.backend.schedule.cpu import new_schedule

    if any(0 in t.shape for t in [*lowered.inputs, *lowered.outputs]):
        # (dlight's Fallback binds a zero-extent loop to a grid of one block whose stores
        # are unguarded: on an H100 they wrote out of bounds)
        raise NoGPUSchedule(f"kernel {name} has a zero-size tensor: it runs on the CPU")
    tvm_target = target.tvm_target()
    func = lowered.prim_func.with_attr("target", tvm_target)
    simt = func.with_attr("dlight.do_not_tensorize", True)
    scheduled = None

    class Relays:  # one of relay's schedules as a rule: None where it does not apply
        def __init__(self, schedule: Callable[[Any], bool]) -> None:
            self.schedule = schedule

        def apply(self, f: Any, _t: Any, _tunable: bool) -> Any:
            sch = new_schedule(f)
            return sch.schedule if self.schedule(sch) else None

    def rows(sch: Any) -> bool:
        schedule_rows(sch, lowered)
        return True

    found = _rules()
    # relay's transpose before dlight's Transpose, its elementwise schedule before
    # dlight's Fallback, then several outputs, schedule_rows the last
    transposed, vectorized = Relays(schedule_transpose), Relays(schedule_elementwise)
    several = Relays(schedule_outputs)
    ordered = [
        Relays(schedule_product),
        Relays(functools.partial(schedule_product, stage=False)),
        *found[:2],
        transposed,
        *found[2:-1],
        vectorized,
        found[-1],
        several,
        Relays(rows),
    ]
    if barriers_without_reductions(func):
        # dlight's rules inline every block, barriers included (relay.backend.lower), which
        # repeats what they hold: a chain of shared values built 337 KB of CUDA C in 9 s
        # (found by a fuzzing review); each stage left is a launch of its own instead
        ordered.remove(several)
        ordered.insert(ordered.index(found[-1]), several)
    rules = [(rule, simt) for rule in ordered]
    operands = tensor_core_operands(lowered, target)
    if operands is not None:
        rules.insert(0, (found[0], func))  # dlight's Matmul on the tensor cores first
    for rule, f in rules:
        try:
            # (dlight's Matmul imports the names of TVM's WMMA intrinsics for float16 and
            # int8 products, and its tensor-core attempt calls tensorize)
            # (a bfloat16 product's tensor-core attempt: see wmma_tensorize)
            dtype = operands if f is func and operands else "float16"
            with wmma_tensorize(dtype) if rule is found[0] else contextlib.nullcontext():
                space = rule.apply(f, tvm_target, False)
        except Exception as err:
            lines = str(err).strip().splitlines() or [""]
            flags.debug_print(1, f"GPU rule {type(rule).__name__} failed on {name}: {lines[-1]}")
            continue
        if space is None:
            continue
        sch = space if not isinstance(space, list) else space[0]
        candidate = sch.mod["main"].with_attr("tirx.is_scheduled", True)
        if accumulates_in_global_memory(candidate):
            # a partial result kept in the output buffer: with the buffers __restrict__,
            # nvcc reads it back through the read-only cache (``ld.global.nc``), which does
            # not see the thread's own stores (an H100 gave stale row minima); the next
            # rules accumulate in registers
            flags.debug_print(
                1, f"GPU rule {type(rule).__name__} on {name} accumulates in global memory"
            )
            continue
        try:
            # its launch checked, on the function as lowering will see it: a schedule that
            # reduces across threads with a reducer TVM cannot lower fails here
            check_launch(name, candidate, between_launches=rule is several)
        except CompileError:
            raise
        except Exception as err:
            lines = str(err).strip().splitlines() or [""]
            flags.debug_print(
                1, f"GPU rule {type(rule).__name__} on {name} does not lower: {lines[-1]}"
            )
            continue
        scheduled = candidate
        break
    if scheduled is None:
        raise NoGPUSchedule(
            f"no GPU schedule applies to kernel {name} ({', '.join(lowered.op_names)})"
        )
    return scheduled


def barriers_without_reductions(func: Any) -> bool:
    """Whether PrimFunc ``func`` (unscheduled) has a barrier stage of the lowering
    (:data:`relay.backend.lower.BARRIER`) and no reduction."""
    from relay.backend.schedule.cpu import is_barrier, is_reduction, new_schedule

    sch = new_schedule(func)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    if any(is_reduction(sch, b) for b in blocks):
        return False
    return any(is_barrier(sch, b) for b in blocks)


def accumulates_in_global_memory(func: Any) -> bool:
    """Whether a reduction of scheduled ``func`` accumulates in a buffer in global memory
    within a thread: a reduction block writing global memory whose reduction is iterated
    by a loop not bound to threads (or has no reduction loop left, its epilogue folded into
    it, as dlight's ``Fallback`` does), rather than in registers or across threads."""
    from relay.backend.cuda import thread_scoped
    from relay.backend.runtime import tvm

    tirx, s_tir = tvm().tirx, tvm().s_tir
    undefined = tirx.analysis.undefined_vars
    reduce_kind = tirx.IterVar.CommReduce
    for node, bound in thread_scoped(func.body):
        if not isinstance(node, s_tir.SBlockRealize):
            continue
        threads = {f.loop_var for f in bound}
        block = node.block
        read = [r.source for r in block.reads]
        writes_global = [w.source for w in block.writes if str(w.source.scope()) == "global"]
        reduces = [
            value
            for iv, value in zip(block.iter_vars, node.iter_values, strict=True)
            if iv.iter_type == reduce_kind
        ]
        reducing = block.init is not None or any(
            buf.same_as(r) for buf in writes_global for r in read
        )
        if writes_global and reducing:
            serial = [v for value in reduces for v in undefined(value) if v not in threads]
            if serial or not reduces:
                return True
    return False


THREADS = 256
"""Threads per block of :func:`schedule_rows` and :func:`schedule_elementwise`."""

VECTOR_BYTES = 16
"""The most bytes a thread of :func:`schedule_elementwise` loads and stores at once (CUDA's
widest access, ``ld.global.v4``; its vectors have at most 4 elements)."""

VECTOR_DTYPES = frozenset(
    ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16")
) | {"uint32", "uint64"}
"""Dtypes TVM's CUDA code generator vectorizes (not ``bool``; ``bfloat16`` casts fail in
nvcc: no conversion from ``ushort4`` to ``float4``)."""

PER_THREAD = 1
"""Vectors per thread in :func:`schedule_elementwise` (loops over a block's span)."""


def settings() -> str:
    """The module's settings that change the kernels it schedules (in the kernel cache's
    key, so that a kernel scheduled under other settings is never reused)."""
    from relay.backend.schedule import gpu_matmul

    tiles = sorted(MATMUL_TILES.items())
    return (
        f"threads={THREADS} whole={WHOLE_THREADS} vector={VECTOR_BYTES} per={PER_THREAD} "
        f"tiles={tiles} simt={gpu_matmul.settings()}"
    )


def schedule_elementwise(sch: Any) -> bool:
    """Elementwise, broadcast and layout kernels (no reduction, one output): every
    producer inlined into the output, whose loops are fused and split into blocks of
    :data:`THREADS` threads, each thread taking :data:`PER_THREAD` vectors of 4 elements
    or :data:`VECTOR_BYTES`, whichever is fewer (``float4``: CUDA's widest access, a warp
    moving 512 contiguous bytes per instruction; ``half4`` for float16). Whether it applied: not to kernels with reductions or several outputs,
    nor when the output's size is not a whole number of vectors (dlight's ``Fallback``,
    one element per thread, takes those)."""
    from relay.backend.schedule.cpu import inline_producers, is_reduction

    root = sch.get_sblock("root")
    if any(is_reduction(sch, b) for b in sch.get_child_blocks(root)):
        return False
    inline_producers(sch)
    blocks = sch.get_child_blocks(root)
    outputs = sch.get_output_blocks(root)
    if len(outputs) != 1 or len(blocks) != 1:
        return False
    out = outputs[0]
    stmt = sch.get(out)
    dtypes = {str(r.source.dtype) for r in [*stmt.reads, *stmt.writes]}
    if not dtypes or not dtypes <= VECTOR_DTYPES:
        return False
    if computes_booleans(stmt.body):
        return False
    itemsize = max(int(tvm_dtype_bits(d)) for d in dtypes) // 8
    lanes = max(1, min(4, VECTOR_BYTES // max(itemsize, 1)))
    loops = sch.get_loops(out)
    if not loops:
        return False
    extents = [sch.get(loop).extent for loop in loops]
    if not all(hasattr(e, "value") for e in extents):
        return False
    total = 1
    for e in extents:
        total *= int(e.value)
    if total % lanes or total < lanes * THREADS:
        return False
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    bx, per, tx, vec = sch.split(fused, [None, PER_THREAD, THREADS, lanes])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(vec)
    if PER_THREAD > 1:
        sch.unroll(per)
    return True


def schedule_outputs(sch: Any) -> bool:
    """Kernels with several outputs: a result and the flags of its run-time checks (integer
    division's zero test, ``take``'s bounds), or a group's several results that dlight's
    rules leave (a reduction among them: dlight's ``Fallback`` takes elementwise ones, a
    ``split``'s), such as ``nn.batch_norm`` in training. Producers are inlined, and every
    stage left, output or intermediate, becomes a launch of its own (launches on one stream
    run in order):

    * an elementwise stage: its loops fused, one element per thread, blocks of
      :data:`THREADS` (or fewer threads, one per element);
    * a reduction to fewer values than :data:`THREADS` (a check flag reduces everything to
      one), or of :data:`THREADS` elements or more each, whose reducer TVM combines across
      threads (:func:`combinable`): a block per value, its threads each accumulating a strided part in a register, then combined
      across the block (TVM's cross-thread reduction: warp shuffles, then shared memory);
      a single value gets a block of :data:`WHOLE_THREADS`;
    * any other reduction (relay's NaN-propagating ``max``, many values): a thread per
      value, accumulating in a register (blocks of :data:`THREADS`, or one block of a
      thread per value).

    The partial results stay in registers, written back once (see
    :func:`accumulates_in_global_memory`). An intermediate stage that a later launch reads
    (batch_norm's sums) stays in global memory, allocated by the host around the launches
    (:func:`relay.backend.cuda.check_launch` with ``between_launches``). Whether it
    applied: not to kernels with one output, nor to sizes that are not static."""
    from relay.backend.schedule.cpu import inline_producers, is_reduction

    root = sch.get_sblock("root")
    inline_producers(sch)
    blocks = sch.get_child_blocks(root)
    outputs = sch.get_output_blocks(root)
    if len(outputs) < 2 and len(blocks) < 2:
        return False
    names = [sch.get(b).name_hint for b in blocks]
    for name in names:
        block = sch.get_sblock(name)
        if not all(hasattr(sch.get(lp).extent, "value") for lp in sch.get_loops(block)):
            return False
        if is_reduction(sch, block):
            if not _reduce_output(sch, block):
                return False
        else:
            loops = sch.get_loops(block) or [sch.add_unit_loop(block)]
            total = 1
            for lp in loops:
                total *= int(sch.get(lp).extent)
            fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
            # (no more threads than elements: a single element's store is the one thread's)
            bx, tx = sch.split(fused, [None, min(THREADS, total)])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
    return True


SPLIT_FROM = 1 << 18
"""Elements from which :func:`schedule_outputs` reduces a whole tensor to one value in two
launches: :data:`PARTS` blocks, then one (a single block, one multiprocessor, read the
whole tensor), when they are a multiple of :data:`PARTS`."""

PARTS = 256
"""The partial results of a whole reduction of :data:`SPLIT_FROM` elements or more."""

WHOLE_THREADS = 1024
"""Threads of the one block that reduces a whole tensor to one value in
:func:`schedule_outputs` (a check flag): the most a block may have."""


def _reduce_output(sch: Any, block: Any) -> bool:
    """One reduction of :func:`schedule_outputs`, accumulated in a register (``local``)
    and written back (to an output or an intermediate buffer) by its own block inside the
    same launch."""
    from relay.backend.runtime import tvm

    iter_var = tvm().tirx.IterVar
    loops = sch.get_loops(block)
    kinds = _loop_kinds(sch, block)
    if kinds is None or len(loops) != len(kinds):
        return False
    spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == iter_var.DataPar]
    reduced = [lp for lp, k in zip(loops, kinds, strict=True) if k == iter_var.CommReduce]
    if not reduced or len(spatial) + len(reduced) != len(loops):
        return False
    if any(not sch.get(lp).same_as(sch.get(loops[i])) for i, lp in enumerate(spatial)):
        return False  # (a reduction loop outside a spatial one)
    outputs = 1
    for lp in spatial:
        outputs *= int(sch.get(lp).extent)
    length = 1
    for lp in reduced:
        length *= int(sch.get(lp).extent)
    # across a block: few values, or long reductions (batch_norm's sums over 256 channels
    # of 32 x 56 x 56: a thread each would walk 100,352 elements, its neighbours a plane
    # away)
    across = (outputs < THREADS or length >= THREADS) and combinable(sch.get(block))
    if across and outputs == 1 and length >= SPLIT_FROM and length % PARTS == 0:
        # in two launches: PARTS blocks of partial results (``rfactor``), then one block
        # combining them. Whole parts only: with a tail of the parts as well as of each
        # part's threads, TVM left the partial reduction per thread, uncombined (wrong)
        red = sch.fuse(*reduced) if len(reduced) > 1 else reduced[0]
        parts, _ = sch.split(red, [PARTS, None])
        partial = sch.rfactor(parts, factor_axis=0)
        return _reduce_output(sch, partial) and _reduce_output(sch, block)
    writeback = sch.cache_write(block, 0, "local")
    if not spatial:  # (above the reduction loops: inside them it would be a launch per step)
        spatial = [sch.add_unit_loop(loops[0])]
    out = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
    if across:
        red = sch.fuse(*reduced) if len(reduced) > 1 else reduced[0]
        sch.bind(out, "blockIdx.x")
        _, tx = sch.split(red, [None, WHOLE_THREADS if outputs == 1 else THREADS])
        sch.bind(tx, "threadIdx.x")
        sch.reverse_compute_at(writeback, out)
        return True
    # no more threads than outputs: fused unit loops leave the write-back a constant index
    # with no bound to guard it, and threads past the outputs would store their registers
    bx, tx = sch.split(out, [None, min(THREADS, outputs)])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.reverse_compute_at(writeback, tx)
    return True


def _loop_kinds(sch: Any, block: Any) -> list[int] | None:
    """The kind of each loop around ``block`` (spatial or reduction), outermost first, from
    the iterators its bindings read (an ``rfactor``'s final block lists its iterators in
    another order than its loops); None where a loop feeds both kinds."""
    from relay.backend.cuda import thread_scoped
    from relay.backend.runtime import tvm

    tirx, s_tir = tvm().tirx, tvm().s_tir
    stmt = sch.get(block)
    realize = next(
        (
            node
            for node, _ in thread_scoped(sch.mod["main"].body)
            if isinstance(node, s_tir.SBlockRealize) and node.block.same_as(stmt)
        ),
        None,
    )
    if realize is None:
        return None
    uses = [
        (iv.iter_type, tirx.analysis.undefined_vars(value, []))
        for iv, value in zip(stmt.iter_vars, realize.iter_values, strict=True)
    ]
    kinds = []
    for loop in sch.get_loops(block):
        var = sch.get(loop).loop_var
        found = {kind for kind, used in uses if any(u.same_as(var) for u in used)}
        if len(found) > 1:
            return None
        kinds.append(found.pop() if found else tirx.IterVar.DataPar)
    return kinds


def combinable(block: Any) -> bool:
    """Whether reduction ``block`` is one TVM can combine across threads: its update is
    ``+``, ``*``, ``max`` or ``min`` of its own result and a value, and its initial value
    is that reducer's identity (0, 1, the lowest, the highest value: ``T.min_value``, which
    for floats is the lowest finite one)."""
    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    body, init = block.body, block.init
    if not isinstance(body, tirx.BufferStore) or not isinstance(init, tirx.BufferStore):
        return False
    value, start = body.value, init.value
    dtype = str(body.buffer.dtype)
    identities: dict[type, Callable[[], float]] = {
        tirx.Add: lambda: 0,
        tirx.Mul: lambda: 1,
        tirx.Max: lambda: float(tirx.min_value(dtype).value),
        tirx.Min: lambda: float(tirx.max_value(dtype).value),
    }
    identity = identities.get(type(value))
    if identity is None or not isinstance(start, tirx.IntImm | tirx.FloatImm):
        return False
    load = tvm().ir.TensorLoad  # (a buffer load: what tirx.BufferLoad is in this wheel)
    own = [x for x in (value.a, value.b) if isinstance(x, load) and x.source.same_as(body.buffer)]
    return bool(own) and float(start.value) == identity()


TRANSPOSE_TILE = 32
"""The square tile of :func:`schedule_transpose`, in elements."""


def schedule_transpose(sch: Any) -> bool:
    """A 2-D transpose (``out[i, j] = in[j, i]``, static sizes, one block): tiles of
    :data:`TRANSPOSE_TILE` x :data:`TRANSPOSE_TILE` elements, one block of 32 x 8 threads
    each. The threads copy the tile into shared memory along the input's rows, then write it
    along the output's rows, four rows each; the shared rows are 33 elements, so a column of
    the tile is spread over the banks (the classic CUDA transpose, as NVIDIA's "Efficient
    Matrix Transpose" note describes it). Both sides are whole 32-element rows per warp,
    where dlight's ``Transpose`` rule reads 8 (16 bytes of float16). Whether it applied."""
    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    root = sch.get_sblock("root")
    blocks = sch.get_child_blocks(root)
    if len(blocks) != 1:
        return False
    block = blocks[0]
    stmt = sch.get(block)
    body = stmt.body
    load = tvm().ir.TensorLoad  # (a buffer load: what tirx.BufferLoad is in this wheel)
    if not isinstance(body, tirx.BufferStore) or not isinstance(body.value, load):
        return False
    if len(body.indices) != 2 or len(body.value.indices) != 2:
        return False
    loops = sch.get_loops(block)
    if len(loops) != 2 or len(stmt.iter_vars) != 2:
        return False
    vi, vj = (iv.var for iv in stmt.iter_vars)
    out_i, out_j = body.indices
    in_a, in_b = body.value.indices
    if not (out_i.same_as(vi) and out_j.same_as(vj) and in_a.same_as(vj) and in_b.same_as(vi)):
        return False
    sizes = [sch.get(loop).extent for loop in loops]
    tile = TRANSPOSE_TILE
    if not all(isinstance(e, tirx.IntImm) and int(e) % tile == 0 for e in sizes):
        return False
    rows = 8  # threadIdx.y; each thread does tile / rows rows
    i, j = loops
    i0, i1 = sch.split(i, [None, tile])
    j0, j1 = sch.split(j, [None, tile])
    i1a, i1b = sch.split(i1, [None, rows])
    sch.reorder(i0, j0, i1b, j1, i1a)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1b, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    sch.unroll(i1a)
    shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(shared, j0)
    a0, a1 = sch.get_loops(shared)[-2:]
    fused = sch.fuse(a0, a1)
    _, ty, tx = sch.split(fused, [None, rows, tile])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    sch.storage_align(shared, 0, axis=0, factor=tile, offset=1)
    return True


def computes_booleans(stmt: Any) -> bool:
    """Whether ``stmt`` computes a boolean value on the way (a comparison, a select's
    condition), or an expression in :data:`UNVECTORIZED`: TVM's CUDA code generator
    declares a broadcast vector of booleans with the wrong type (``float4 v =
    make_ushort4(...)``, which nvcc rejects), so a kernel that does is not vectorized
    (NaN-propagating ``maximum``, ``where``, comparisons, ``bitwise_not``)."""
    stack: list[Any] = [stmt]
    while stack:
        e = stack.pop()
        if str(getattr(e, "ty", "")) == "bool" or type(e).__name__ in UNVECTORIZED:
            return True
        for attr in _OPERANDS:
            child: Any = getattr(e, attr, None)
            if isinstance(child, list | tuple) or type(child).__name__ == "Array":
                stack.extend(child)
            elif child is not None and not isinstance(child, int | float | str):
                stack.append(child)
    return False


UNVECTORIZED = frozenset({"BitwiseNot"})
"""Expressions TVM's CUDA code generator prints wrongly on vectors (``~`` of an ``int4``,
which CUDA does not define)."""

_OPERANDS = ("a", "b", "value", "condition", "true_value", "false_value", "args", "indices")


def tvm_dtype_bits(dtype: str) -> int:
    """The bits of one lane of TVM dtype ``dtype``."""
    from relay.backend.runtime import tvm

    return int(tvm().DataType(dtype).bits)


def schedule_rows(sch: Any, lowered: LoweredFunc) -> None:
    """The last resort for a kernel that dlight's rules cannot schedule (a reduction with a
    reducer TVM cannot combine across threads, such as relay's NaN-propagating ``max``, and
    the stages computed from it): one thread per row of the output. Elementwise producers
    are inlined; the output's leading loops (all but the last, when the kernel has a
    reduction; else all) are fused and bound to blocks of :data:`THREADS` threads; every
    other stage is computed inside that loop, for the thread's row, in local memory."""
    from relay.backend.schedule.cpu import inline_producers, is_reduction

    inline_producers(sch)
    root = sch.get_sblock("root")
    outputs = sch.get_output_blocks(root)
    if len(outputs) != 1:
        raise ValueError("one output only")
    out = outputs[0]
    writeback = is_reduction(sch, out)
    if writeback:
        # the thread's partial result in a register, stored once by a write-back block
        # (see schedule_gpu on accumulating in the output buffer)
        sch.cache_write(out, 0, "local")
        out = sch.get_output_blocks(root)[0]
    blocks = sch.get_child_blocks(root)
    loops = sch.get_loops(out)
    if not loops:  # a scalar result: one thread
        loops = [sch.add_unit_loop(out)]
    reducing = any(is_reduction(sch, b) for b in blocks)
    # the rows: every loop of a reduction's write-back; of another output computed from a
    # reduction, all but the last (the reduced one)
    rows = loops[:-1] if reducing and not writeback and len(loops) > 1 else loops
    fused = sch.fuse(*rows) if len(rows) > 1 else rows[0]
    bx, tx = sch.split(fused, [None, THREADS])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    for block in reversed(blocks):
        if not sch.get(block).same_as(sch.get(out)):
            sch.compute_at(block, tx)
    params = {str(p.name) for p in sch.mod["main"].params}
    for block in _all_blocks(sch):
        for i, write in enumerate(sch.get(block).writes):
            if str(write.source.name) not in params and str(write.source.scope()) == "global":
                sch.set_scope(block, i, "local")  # a row's intermediate, in registers


def _all_blocks(sch: Any) -> list[Any]:
    """Every block of the function, nested ones included, outermost first."""
    from relay.backend.runtime import tvm

    tirx, sblock = tvm().tirx, tvm().s_tir.SBlock
    names: list[str] = []
    stack = [sch.mod["main"].body]
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, sblock) and stmt.name_hint != "root":
            names.append(str(stmt.name_hint))
        if isinstance(stmt, tirx.SeqStmt):
            stack.extend(reversed(list(stmt.seq)))
            continue
        for attr in ("init", "body", "block", "then_case", "else_case"):
            child = getattr(stmt, attr, None)
            if isinstance(child, tirx.Stmt):
                stack.append(child)
    return [sch.get_sblock(n) for n in names]
