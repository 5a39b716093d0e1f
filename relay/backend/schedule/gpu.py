"""GPU schedules for lowered primitive functions: TVM's dlight rules.

A kernel for a GPU must have its loops bound to blocks and threads: an unscheduled PrimFunc
compiled for CUDA silently becomes host loops over device pointers, with no device kernel
at all (``shared/notes/tvm-0.27.md``). Each lowered function is scheduled by the first of
TVM's ``s_tir.dlight`` GPU rules that applies, in this order (dlight's own default):

* ``Matmul``: a matrix product (and batched), tiled through shared memory with its
  epilogue (SIMT: dlight's tensor-core variants call ``tensorize``, which crashes the
  process in this TVM wheel, so functions are marked ``dlight.do_not_tensorize``);
* ``GEMV``: a matrix-vector product, one warp-level reduction per output row;
* ``Reduction`` / ``GeneralReduction``: a reduction (with its elementwise producers and
  consumers), cross-thread reductions inside a block, for softmax and layer norm the
  whole row in one kernel;
* ``Fallback``: anything else (elementwise, broadcast, layout), its loops fused and bound
  to blocks of threads;
* :func:`schedule_rows`, relay's last resort, for what none of those can lower (a
  reduction with a reducer TVM cannot combine across threads, such as relay's
  NaN-propagating ``max`` or ``argmax``, and what is computed from it in the same kernel):
  a thread per row of the output.

A rule's schedule is kept only if it lowers for CUDA (every intermediate buffer out of
global memory, every cross-thread reduction one TVM can lower) and launches within the
device's limits; otherwise the next rule is tried.

A function no rule scheduled is a CompileError (it would not run on the device), and every
scheduled function's launch is checked against the device's limits
(:func:`relay.backend.cuda.check_launch`).
"""

from __future__ import annotations

from typing import Any

from relay.backend.lower import LoweredFunc
from relay.backend.target import Target
from relay.errors import CompileError


class NoGPUSchedule(CompileError):
    """No GPU schedule applies to a kernel (it then runs on the CPU: mixed placement)."""


def _rules() -> list[Any]:
    from tvm.s_tir import dlight as dl

    return [
        dl.gpu.Matmul(),
        dl.gpu.GEMV(),
        dl.gpu.Reduction(),
        dl.gpu.GeneralReduction(),
        dl.gpu.Fallback(),
    ]


def schedule_gpu(lowered: LoweredFunc, target: Target, name: str) -> Any:
    """The PrimFunc of ``lowered`` (kernel ``name``) scheduled for GPU ``target``: by the
    first rule that applies (a rule that raises on an unusual block, as dlight's reduction
    rules do on relay's NaN-propagating reducers, counts as not applying)."""
    from relay import flags
    from relay.backend.cuda import check_launch
    from relay.backend.runtime import tvm
    from relay.backend.schedule.cpu import Unchecked

    tvm_target = target.tvm_target()
    # no tensor cores: dlight's tensorized rules call ``tensorize``, which crashes this
    # TVM wheel (shared/notes/tvm-0.27.md); their products take the SIMT rule
    func = lowered.prim_func.with_attr("target", tvm_target).with_attr(
        "dlight.do_not_tensorize", True
    )
    scheduled = None

    class Rows:  # schedule_rows as a rule, the last
        def apply(self, f: Any, _t: Any, _tunable: bool) -> Any:
            sch = Unchecked(tvm().s_tir.Schedule(f))
            schedule_rows(sch, lowered)
            return sch.schedule

    for rule in [*_rules(), Rows()]:
        try:
            space = rule.apply(func, tvm_target, False)
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
            check_launch(name, candidate)
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


def accumulates_in_global_memory(func: Any) -> bool:
    """Whether a reduction of scheduled ``func`` accumulates in a buffer in global memory
    within a thread: a reduction block writing global memory whose reduction is iterated
    by a loop not bound to threads (or has no reduction loop left, its epilogue folded into
    it, as dlight's ``Fallback`` does), rather than in registers or across threads."""
    from relay.backend.runtime import tvm

    tirx, s_tir = tvm().tirx, tvm().s_tir
    undefined = tirx.analysis.undefined_vars
    reduce_kind = tirx.IterVar.CommReduce
    stack: list[tuple[Any, frozenset[Any]]] = [(func.body, frozenset())]  # (stmt, thread vars)
    while stack:
        node, threads = stack.pop()
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.THREAD_BINDING:
            threads = threads | {node.loop_var}
        if isinstance(node, s_tir.SBlockRealize):
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
        if isinstance(node, tirx.SeqStmt):
            stack.extend((child, threads) for child in node.seq)
            continue
        for attr in ("body", "block", "then_case", "else_case"):
            child = getattr(node, attr, None)
            if isinstance(child, tirx.Stmt):
                stack.append((child, threads))
    return False


THREADS = 256
"""Threads per block of :func:`schedule_rows`."""


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
