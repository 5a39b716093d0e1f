"""Tiered compilation: a ``@relay`` function's first call runs sooner on kernels that
compile faster, and its specialized kernels replace them when they are ready.

A program's first call with a cold kernel cache compiles all its kernels before it runs,
and its matrix products cost the most: ~45 ms of CPU each on the 2-core project machine at
LLVM's -O2, whatever their sizes (:mod:`relay.backend.share`), ~9 ms at -O0, where they run
~2.2x slower. So, as adaptive compilers do (SELF's two compilers, Hölzle and Ungar,
*Reconciling Responsiveness with Performance in Pure Object-Oriented Languages*, TOPLAS
1996; HotSpot's tiered compilation; V8's baseline and optimizing tiers), a program is
compiled twice:

1. **First tier**, before the first call: the program's products of the same computation
   at several depths compiled once, as one kernel that takes its depth as an argument
   (:func:`relay.backend.share.share_kernels`), by LLVM at -O0 where that computes the
   same bits (:func:`relay.backend.compiler.quick_product`: ~4x faster to compile, ~2.2x
   slower to run), everything else as usual. It is kept in the kernel cache's memory only,
   and never saved: :meth:`~relay.backend.build.Executable.save` saves the second tier,
   compiling it then if it has not started.
2. **Second tier**, on a background thread at a low priority once the first call has run
   (the kernel cache's :meth:`~relay.backend.cache.KernelCache.in_background`): the plan
   with a kernel of its own for each product (which knows its depth: the products run
   6-12% faster, :mod:`relay.backend.share`). When it is compiled, the executable's graph is
   replaced by it between two calls (a call under way finishes on the first tier), the
   function's fast paths are dropped so that the next call takes the new graph, and the
   program cache records the second tier: a later process loads it, and never sees the
   first.

**The two tiers compute the same bits.** A shared kernel's schedule is its members' own
(the same tiles, packing, loop order and epilogue; the depth is a value it reads instead
of a constant): each output is the same products summed in the same order, rounded the
same way; and in the products it compiles at -O0, LLVM fuses the same multiplies and adds
as at -O2 (:func:`~relay.backend.compiler.quick_product` says which products). So a
program's results never depend on which tier ran it; tests compare the tiers' results bit
for bit. Only where sharing leaves fewer kernels to compile, and the second tier is not in
the kernel cache already, does a program get two tiers; and never a program of symbolic
sizes, a GPU or VTA target, the VM, :func:`relay.build` (unless asked:
``relay.build(..., tiered=True)``) or a process with ``RELAY_SHARE_KERNELS=1`` (the shared
kernels for good) or ``RELAY_TIERS=0``.

**What the second tier costs.** On two cores its compilation takes a core from the calls
that follow the first: a kernel whose parallel loop waits for a thread the scheduler gave
the compiler runs many times slower. Measured in a loop of calls from a cold cache,
mlp_infer_b128 (three products, none shared, each at -O0 in a first tier of its own):
the first call ~40 ms sooner, then calls of ~12 ms instead of 1.8 until the swap at the
13th-21st call, and 500 calls 150 ms later than with one tier. So a program whose products
share nothing keeps one tier. mlp_train_step pays it too (500 calls ~0.3 s later than
with one tier, its first call ~100 ms sooner: ``benchmarks/tiers.py``, docs/performance.md).

The second tier runs under the flags the program was built with (:func:`relay.flags.
pinned`). The process waits for it before it exits, so that the cache holds it for the
next process (without a disk cache, one not started by then is dropped);
:meth:`~relay.backend.cache.KernelCache.flush` waits for it too. A second tier that fails
to compile is reported at ``RELAY_DEBUG=1``, and the first tier stays.

Measured on mlp_train_step (8 products, 6 kernels in the first tier), cold first call,
2-core machine: see docs/performance.md ("Tiered compilation").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relay import flags
from relay.backend.target import Target
from relay.ir.expr import Function


def first_tier(
    func: Function, target: Target
) -> tuple[Any, tuple[Callable[[], Any], Callable[[], Any]] | None]:
    """The executor of the fused dataflow function ``func`` for ``target`` (raises
    :class:`~relay.backend.graph_executor.NotDataflow`), and where it is a first tier, two
    functions that compile an executor to replace it: the second tier (see the module
    docstring), and where that fails, the first tier's kernels at the usual optimization
    levels (which a save exports); else None, and the executor is the program's only
    one."""
    from relay.backend.graph_executor import (
        build_graph,
        cached_kernels,
        compile_kernels,
        compile_plan,
        executor,
        plan_function,
    )
    from relay.backend.share import share_kernels

    if target.kind != "llvm" or flags.get().share_kernels:
        return build_graph(func, target), None
    plan, prims = plan_function(func)
    own: list[tuple[Function, tuple[int, ...]]] = [(f, ()) for f in prims]
    shared = [] if plan.shape_vars else share_kernels(prims)
    if not any(values for _, values in shared):  # (nothing shared: one tier; see below)
        return executor(*compile_kernels(plan, own, target)), None
    found = cached_kernels(plan, own, target)
    if found is not None:  # (the second tier is compiled already: in memory or on disk)
        return executor(*found), None
    graph = executor(*compile_kernels(plan, shared, target, disk=False, quick=True))

    def second() -> Any:
        return executor(*compile_plan(func, target, share=False, ran=True))

    def first_at_usual_levels() -> Any:
        again, kernels = plan_function(func)  # (a plan of its own: the first tier's runs)
        return executor(*compile_kernels(again, share_kernels(kernels), target, disk=False))

    return graph, (second, first_at_usual_levels)
