"""``relay.build``: from a program to an :class:`Executable`.

The pipeline (TVM's ``relay.build``, ``python/tvm/relay/build_module.py``, in outline):

1. the entry function and what it calls are put in a module of their own; every global but
   the entry is marked ``Inline=1`` (the Inline pass keeps recursive ones as calls);
2. the standard optimization pipeline (:func:`relay.passes.pipeline.standard_pipeline`) at
   the requested opt level, then ``FuseOps``;
3. if the entry is then static dataflow (:mod:`relay.backend.graph_executor`) its primitive
   functions are compiled into one kernel library and the graph executor runs it;
   otherwise (control flow, closures, data types, references) the program is compiled to
   VM code (:mod:`relay.backend.vm`) and its kernels into one library. A program the VM
   does not run yet (one whose types leave checks to run time) runs on the reference
   interpreter.

Before step 2 the program cache is asked (:mod:`relay.backend.cache`): a graph program
built before, in this process or another, is keyed by the text of its typed functions (with
the target, the opt level and the relay sources), and its plan and kernel library come back
without running the pipeline, fusion, lowering or compilation; its optimized module is
made again only if asked for (``exe.module``, ``exe.astext()``, ``exe.interpret``).

An executable is saved with :meth:`Executable.save` as one zip file (the kernel library as a
shared object, the graph plan or the VM code as JSON, the constants as ``.npy`` members,
and the optimized program's text) and :func:`load` brings it back in another process
without compiling.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from relay import flags
from relay.backend.compiler import KernelLibrary
from relay.backend.graph_executor import (
    GraphExecutor,
    GraphPlan,
    NotDataflow,
    SymbolicGraphExecutor,
    build_graph,
    executor,
    flatten_args,
)
from relay.backend.plan_check import check_plan
from relay.backend.target import Target
from relay.errors import CompileError, ExecutionError, TypeCheckError
from relay.ir.attrs import Attrs
from relay.ir.expr import Expr, Function, GlobalVar
from relay.ir.module import Module
from relay.ir.types import TensorType

Graph = GraphExecutor | SymbolicGraphExecutor

if TYPE_CHECKING:
    from relay.backend.vm import VMExecutor
    from relay.passes.manager import Pass

FORMAT = 2
"""The format of saved executables: 2 since a plan's steps may pass a shared kernel its
sizes (``Step.values``), which a reader of format 1 would drop and run the kernel without."""

READABLE_FORMATS = (1, 2)
"""The formats :meth:`Executable.load` reads (a format 1 file has no shared kernels)."""


def optimize(
    mod: Module,
    entry: GlobalVar,
    opt_level: int = 3,
    before_fusion: Sequence[Pass] = (),
    config: dict[str, object] | None = None,
) -> Module:
    """``mod`` reduced to ``entry`` and what it calls, optimized and fused (steps 1-2);
    a target's own passes (``before_fusion``) run between the two, and its ``config``
    (the pass context's) applies to all."""
    from relay.passes import FuseOps, InferType, PartialEvaluate, PassContext, Sequential
    from relay.passes.pipeline import standard_pipeline
    from relay.passes.remove_unused import reachable_globals

    keep = reachable_globals(mod, [entry])
    work = Module(type_definitions=dict(mod.type_definitions))
    for gv in keep:
        func = mod.functions[gv]
        if gv != entry and not func.attrs.get("Inline"):
            func = Function(
                func.params,
                func.body,
                func.ret_type,
                func.type_params,
                Attrs({**dict(func.attrs.items()), "Inline": 1}),
                span=func.span,
            )
        work.add(gv, func)
    with PassContext(opt_level=opt_level, config=dict(config or {})):
        if opt_level >= 2 and _makes_references(work):
            # reference cells are what higher-order AD leaves (the adjoints and the tape):
            # partial evaluation turns a gradient whose control is known at compile time
            # back into dataflow (docs/partial-evaluation.md)
            work = PartialEvaluate()(work)
        passes = [standard_pipeline((entry.name_hint,)), *before_fusion, FuseOps(), InferType()]
        return Sequential(passes)(work)


def _unrolled(
    typed: Module, gv: GlobalVar, target: Target, opt_level: int
) -> tuple[Graph, Module] | None:
    """For a program that calls a recursive global function with a constant argument (a
    recursive network over a tree whose shape the constants fix): the graph executor of its
    partial evaluation, when that unfolds the recursion into dataflow
    (docs/partial-evaluation.md); else None. A
    loop of the frontend is a local function, and stays on the VM, which compiles it into
    one kernel: unrolled, rnn_loop ran slower (0.54 against 0.34-0.38 ms)."""
    from relay.passes import PartialEvaluate, PassContext

    if opt_level < 2:
        return None
    reached = _reachable(typed, gv)
    recursive = {g for g, f in reached.functions.items() if _calls_itself(g, f)}
    if not any(_static_call(f, recursive) for f in reached.functions.values()):
        return None  # no recursion a constant argument could unfold (the prelude's @map)
    with PassContext(opt_level=opt_level):
        evaluated = PartialEvaluate()(reached)
    optimized = optimize(evaluated, evaluated.get_global_var(gv.name_hint), opt_level)
    func = optimized.functions[optimized.get_global_var(gv.name_hint)]
    try:
        return build_graph(func, target), optimized
    except NotDataflow:
        return None
    except CompileError as err:
        if "static shapes" not in err.message:
            raise
        return None


def _static_call(func: Function, recursive: set[GlobalVar]) -> bool:
    """Whether ``func`` calls one of the ``recursive`` globals with a constant argument."""
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Call, Constant

    return any(
        isinstance(e, Call) and e.op in recursive and any(isinstance(a, Constant) for a in e.args)
        for e in sub_expressions(func.body)
    )


def _calls_itself(gv: GlobalVar, func: Function) -> bool:
    """Whether ``func``, the global ``gv``, calls ``gv``."""
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Call

    return any(isinstance(e, Call) and e.op is gv for e in sub_expressions(func.body))


def _makes_references(mod: Module) -> bool:
    """Whether a function of ``mod`` creates a reference cell."""
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import RefCreate

    return any(isinstance(e, RefCreate) for f in mod.functions.values() for e in sub_expressions(f))


class Executable:
    """A compiled program: call it on numpy arrays (numpy arrays out); :meth:`save` it and
    :func:`load` it elsewhere.

    ``kind`` is ``"graph"`` (compiled kernels run by the graph executor), ``"vm"`` (control
    code run by the VM, calling compiled kernels) or ``"interpreter"`` (a program that
    needs run-time type checks, run by the reference interpreter). ``module`` is the
    optimized program (for an interpreted one, the program as written)."""

    def __init__(
        self,
        module: Module | Callable[[], Module],
        entry: GlobalVar | str,
        target: Target,
        graph: Graph | None = None,
        name: str = "",
        vm: VMExecutor | None = None,
        signature: Function | None = None,
    ) -> None:
        # a program from the program cache has its optimized module made when asked for
        self._module = module if isinstance(module, Module) else None
        self._make_module = None if isinstance(module, Module) else module
        self._entry_name = entry if isinstance(entry, str) else entry.name_hint
        self.target = target
        self.graph = graph
        self.vm = vm
        self.name = name or f"@{self._entry_name}"
        self._ran = False
        if graph is not None:
            self._arity = len(graph.plan.param_types)
        elif vm is not None:
            self._arity = len(vm.program.functions[vm.program.entry].params)
        else:
            self._arity = len(self.module.functions[self.entry].params)
        # the function whose parameters the VM's arguments are checked against (the entry
        # before optimization will do: it has the same parameters)
        self._entry_func: Function | None = signature
        self._flat_params = graph is not None and all(
            isinstance(t, TensorType) for t in graph.plan.param_types
        )
        self.device_plan: GraphPlan | None = None
        """A GPU program's plan (its kernels in :attr:`library`)."""
        self.upgrading = False
        """Whether a second tier of the graph is being compiled (:mod:`relay.backend.tiers`)."""
        self._fallback: Callable[[], Graph] | None = None
        self._upgrade_job: Callable[[bool], None] | None = None
        self._settled = threading.Event()
        self._on_upgrade: list[Callable[[], None]] = []
        self._upgrade_lock = threading.Lock()
        self.first_run = threading.Event()
        """Set when the executable's first call has run."""
        self.device_library: KernelLibrary | None = None
        self._on_device: Any = None

    def on_upgrade(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` when the graph is replaced by its second tier (never, when the
        graph is final: :attr:`replaceable`): a runner of the first tier's graph kept
        elsewhere is to be dropped. A listener equal to one waiting already is not added
        again."""
        with self._upgrade_lock:
            if self.replaceable and listener not in self._on_upgrade:
                self._on_upgrade.append(listener)

    @property
    def replaceable(self) -> bool:
        """Whether the graph may still be replaced (:mod:`relay.backend.tiers`): a second
        tier is coming, or it failed and a save would compile the first tier again at the
        usual levels (:meth:`_last_tier`)."""
        graph = self.graph
        quick = graph is not None and graph.library.quick and self._fallback is not None
        return self.upgrading or quick

    def abandon_upgrade(self) -> None:
        """No second tier is coming (:mod:`relay.backend.tiers`): the first stays (until a
        save compiles it again, where it is a quick one: :meth:`_last_tier`)."""
        with self._upgrade_lock:
            self.upgrading = False
            if not self.replaceable:
                self._on_upgrade.clear()
        self._settled.set()

    def upgrade(self, graph: Graph) -> None:
        """Run on ``graph`` from the next call on (a program's second tier, which computes
        the same results as the graph it replaces)."""
        with self._upgrade_lock:
            self.graph = graph
            self.upgrading = False
            listeners, self._on_upgrade = self._on_upgrade, []
        self._settled.set()
        for listener in listeners:
            listener()

    def _last_tier(self) -> Graph | None:
        """The graph, once a first tier's has given way to its second
        (:mod:`relay.backend.tiers`): a second tier not started yet is compiled now, on this
        thread; one under way is waited for; where it failed, the first tier is compiled
        again at the usual optimization levels (its library at -O0 does not export)."""
        graph = self.graph
        if graph is None or not graph.library.quick:
            return graph
        job = self._take_upgrade()
        if job is not None:  # (not started in the background: it runs here)
            job(False)
        elif self.upgrading:
            self._settled.wait()
        graph = self.graph
        if graph is not None and graph.library.quick and self._fallback is not None:
            graph = self._fallback()  # (the second tier failed: the first, exportable)
            self.upgrade(graph)
        return graph

    def expect_upgrade(self, fallback: Callable[[], Graph], job: Callable[[bool], None]) -> None:
        """A second tier is coming: ``job(exiting)`` compiles it and calls :meth:`upgrade`
        (or :meth:`abandon_upgrade`), run once, by :meth:`run_upgrade` or by a save that
        cannot wait; where it fails, a save takes ``fallback()``, the first tier compiled
        to be exported."""
        with self._upgrade_lock:
            self.upgrading = True
            self._fallback, self._upgrade_job = fallback, job

    def run_upgrade(self, exiting: bool) -> None:
        """Run the job :meth:`expect_upgrade` was given, unless it has run already."""
        job = self._take_upgrade()
        if job is not None:
            job(exiting)

    def _take_upgrade(self) -> Callable[[bool], None] | None:
        with self._upgrade_lock:
            job, self._upgrade_job = self._upgrade_job, None
        return job

    @property
    def module(self) -> Module:
        """The optimized, fused program (for an interpreted one, the program as written)."""
        if self._module is None:
            assert self._make_module is not None
            self._module = self._make_module()
        return self._module

    @property
    def entry(self) -> GlobalVar:
        """The entry function's global in :attr:`module`."""
        return self.module.get_global_var(self._entry_name)

    @property
    def kind(self) -> str:
        """``"graph"``, ``"vm"`` or ``"interpreter"``."""
        if self.graph is not None or self.device_plan is not None:
            return "graph"
        return "vm" if self.vm is not None else "interpreter"

    @property
    def library(self) -> KernelLibrary | None:
        """The compiled kernels (of graph and VM executables)."""
        return self._library(self.graph)

    def _library(self, graph: Graph | None) -> KernelLibrary | None:
        # (each reader takes the graph once: a second tier may replace it meanwhile)
        if graph is not None:
            return graph.library
        if self.device_library is not None:
            return self.device_library
        return self.vm.library if self.vm is not None else None

    @property
    def kernels(self) -> list[str]:
        """The kernels' symbols, in the order the graph calls them first (for the VM, in the
        order of its code)."""
        return self._kernels(self.graph)

    def _kernels(self, graph: Graph | None) -> list[str]:
        if self.vm is not None:
            return self.vm.kernels
        plan = graph.plan if graph is not None else self.device_plan
        if plan is None:
            return []
        return list(dict.fromkeys(s.kernel for s in plan.steps if not s.is_alias))

    @property
    def placement(self) -> dict[str, str]:
        """Where each kernel runs, by symbol: ``"cpu"`` or ``"cuda"``. In a GPU program, a
        kernel no GPU schedule applies to runs on the CPU, its inputs copied from the
        device and its outputs back at each call (docs/backend.md, "Mixed placement")."""
        graph = self.graph
        library = self._library(graph)
        if library is None:
            return {}
        return {name: library.kernels[name].device for name in self._kernels(graph)}

    def cuda_source(self) -> str:
        """A GPU program's CUDA C, as TVM generated it for its kernels."""
        library = self.device_library
        if library is None:
            raise ExecutionError(f"{self.name} has no device code")
        return "".join(str(m.inspect_source("cuda")) for m in _device_modules(library.module))

    def ptx(self) -> str:
        """A GPU program's device code: the PTX nvcc compiled from :meth:`cuda_source`."""
        library = self.device_library
        if library is None:
            raise ExecutionError(f"{self.name} has no device code")
        return b"".join(library.device_code).decode()

    def astext(self) -> str:
        """The optimized, fused program in the Relay text format."""
        from relay.ir.printer import astext

        return astext(self.module)

    def __call__(self, *args: Any) -> Any:
        if len(args) != self._arity:
            raise ExecutionError(f"{self.name} takes {self._arity} arguments, got {len(args)}")
        if not self._ran:
            self._ran = True
            try:
                return self._call(args)
            finally:  # the kernel cache's disk writes were waiting for this first run
                from relay.backend.cache import kernel_cache

                self.first_run.set()  # (and a second tier: relay.backend.tiers)
                kernel_cache().ran()
        return self._call(args)

    def _call(self, args: tuple[Any, ...]) -> Any:
        graph = self.graph
        if self.device_plan is not None:
            graph = self._device_graph()
        if graph is None:
            if self.vm is not None:
                return self._run_vm(args)
            return self.interpret(*args)
        if self._flat_params:
            result = graph.run_flat(args, self.name)
        else:
            result = graph.run_flat(flatten_args(args, graph.plan.param_types), self.name)
        if flags.get().checks:
            from relay.backend.checks import compare_with_interpreter

            compare_with_interpreter(self, args, result)
        return result

    def matched(self, args: Sequence[Any]) -> Callable[..., Any] | None:
        """The executor's own runner of a function's fast path for arguments like ``args``
        (numpy arrays, :func:`relay.frontend.function.remember_fast`), where their dtypes
        and shapes are exactly the parameters' in a graph program on the CPU
        (:meth:`GraphExecutor.matched_runner`: it checks only their layout); else None."""
        graph = self.graph
        if (
            isinstance(graph, GraphExecutor)
            and self.device_plan is None
            and self._flat_params
            and graph.matches(args)
        ):
            return graph.matched_runner()
        return None

    def _device_graph(self) -> Any:
        """The executor of a GPU program on this machine's GPU (made at the first call)."""
        found = self._on_device
        if found is None:
            from relay.backend.device import cuda
            from relay.backend.device_executor import device_executor
            from relay.backend.target import cuda_arch

            arch = cuda_arch()
            if arch is None:
                raise ExecutionError(
                    f"{self.name} is compiled for {self.target}, and this machine has no CUDA "
                    "GPU to run it on (.cuda_source() and .ptx() show its kernels)"
                )
            wanted = self.target.arch
            if _sm(arch) < _sm(wanted) or (wanted.endswith("a") and arch != wanted):
                raise ExecutionError(
                    f"{self.name} is compiled for {self.target.arch}, and this machine's GPU "
                    f"is {arch}: build it for target Target('cuda', arch='{arch}')"
                )
            assert self.device_plan is not None and self.device_library is not None
            found = self._on_device = device_executor(self.device_plan, self.device_library, cuda())
        return found

    def _run_vm(self, args: tuple[Any, ...]) -> Any:
        from relay.backend.interpreter.conform import check_arguments
        from relay.backend.vm.machine import kernel_values

        assert self.vm is not None
        args = self._scalars(args)
        if self.target.is_gpu:  # device arrays are checked by their types, never copied
            from relay.backend.interpreter.values import to_value
            from relay.backend.vm.device import checked_shadow, device_values
            from relay.backend.vm.machine import VMClosure

            shadows: list[Any] = [  # (no data: no copies)
                a if type(a) is VMClosure else to_value(checked_shadow(a)) for a in args
            ]
            values = device_values(args)
        else:
            shadows = values = kernel_values(args)
        try:
            check_arguments(self._entry_function(), shadows, self.name)
        except ExecutionError as err:
            raise TypeCheckError(err.message, err.span) from None
        result = self.vm.run(values)
        if flags.get().checks:
            from relay.backend.checks import compare_with_interpreter

            compare_with_interpreter(self, args, result)
        return result

    def _scalars(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` with each number for a rank-0 tensor parameter converted to its dtype
        as a ``@relay`` call and the graph executor convert it
        (:func:`~relay.backend.graph_executor.scalar_argument`)."""
        from relay.backend.graph_executor import scalar_argument, scalar_dtype

        params = self._entry_function().params
        if len(args) != len(params):
            return args  # (check_arguments reports it)
        out = []
        for i, (a, p) in enumerate(zip(args, params, strict=True)):
            dtype = scalar_dtype(p.type_annotation or p.checked_type)
            if isinstance(a, bool | int | float | np.generic) and dtype is not None:
                try:
                    converted = scalar_argument(a, dtype)
                except ValueError as err:
                    what = f"argument {i} of {self.name} (%{p.name_hint})"
                    raise TypeCheckError(f"{what}: {err}") from None
                a = a if converted is None else converted
            out.append(a)
        return tuple(out)

    def _entry_function(self) -> Function:
        func = self._entry_func
        if func is None:
            func = self._entry_func = self.module.functions[self.entry]
        return func

    def profile(self, *args: Any, repeat: int = 10) -> list[tuple[str, float]]:
        """Each kernel call of the graph with its median time in milliseconds, in order;
        for the VM, each kernel with the median total time of its calls in one run, the
        costliest first (``exe.vm.profile(args)`` gives the whole picture, docs/vm.md)."""
        if self.vm is not None:
            from relay.backend.vm.machine import kernel_values

            prof = self.vm.profile(kernel_values(args), repeat)
            return sorted(((k, ms) for k, (_, ms) in prof.kernels.items()), key=lambda kv: -kv[1])
        if self.device_plan is not None:
            plan = self.device_plan
            return self._device_graph().profile(flatten_args(args, plan.param_types), repeat)  # type: ignore[no-any-return]
        graph = self.graph
        if graph is None:
            raise ExecutionError(f"{self.name} is interpreted: it has no kernels to profile")
        return graph.profile(flatten_args(args, graph.plan.param_types), repeat)

    def interpret(self, *args: Any) -> Any:
        """Run :attr:`module` on the reference interpreter."""
        from relay.backend.interpreter import Interpreter
        from relay.backend.interpreter.conform import check_arguments
        from relay.backend.interpreter.values import to_value

        values = [to_value(a) for a in args]
        entry = self.entry
        check_arguments(self.module.functions[entry], values, self.name)
        interp = Interpreter(self.module)
        return interp.call(interp.global_closure(entry), values)

    # -- saving and loading ----------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the executable to ``path`` (a zip file; written atomically)."""
        from relay.backend.cache import library_metadata

        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            meta: dict[str, Any] = {
                "format": FORMAT,
                "kind": self.kind,
                "entry": self._entry_name,
                "name": self.name,
                "target": {
                    "kind": self.target.kind,
                    "mcpu": self.target.mcpu,
                    "fast_math": self.target.fast_math,
                    "arch": self.target.arch,
                },
            }
            z.writestr("program.rly", self.astext())
            # (once: a second tier may replace it meanwhile; a first tier's is not saved)
            graph = self._last_tier()
            plan = graph.plan if graph is not None else self.device_plan
            if plan is not None:
                meta["plan"] = plan.to_json()
                for slot, data in plan.constants.items():
                    z.writestr(f"constants/{slot}.npy", _npy(data))
            if self.vm is not None:
                from relay.backend.vm.isa import program_to_json

                meta["vm"] = program_to_json(self.vm.program)
                for k, data in enumerate(self.vm.program.constants):
                    z.writestr(f"constants/{k}.npy", _npy(data))
            library = self._library(graph)
            if library is not None:
                meta["kernels"] = library_metadata(library)
                if self.target.kind == "vta":  # (the layers are made again at loading)
                    from relay.backend.vta.build import layers

                    meta["vta_layers"] = {name: layer.spec for name, layer in layers(self)}
                for k, code in enumerate(library.device_code):  # (PTX: for .ptx())
                    z.writestr(f"device_code/{k}.ptx", code)
                with tempfile.TemporaryDirectory() as tmp:
                    so = Path(tmp) / "kernels.so"
                    library.export(so)
                    z.write(so, "kernels.so")
            z.writestr("executable.json", json.dumps(meta))
        target = Path(path)
        tmp_path = target.with_name(f".{target.name}.tmp{os.getpid()}")
        tmp_path.write_bytes(buf.getvalue())
        os.replace(tmp_path, target)

    export = save

    @staticmethod
    def load(path: str | os.PathLike[str]) -> Executable:
        """An executable written by :meth:`save` (see :func:`load`)."""
        return load(path)

    def __repr__(self) -> str:
        what = f"{len(self.kernels)} kernels" if self.kind != "interpreter" else "interpreted"
        if self.kind == "vm":
            what = f"VM, {what}"
        return f"<relay Executable {self.name} ({what}, {self.target})>"


def _sm(arch: str) -> int:
    """The number of an architecture name (``sm_90a``: 90)."""
    digits = "".join(c for c in arch[3:] if c.isdigit())
    return int(digits or 0)


def _npy(a: np.ndarray[Any, Any]) -> bytes:
    out = io.BytesIO()
    np.save(out, a, allow_pickle=False)
    return out.getvalue()


def load(path: str | os.PathLike[str]) -> Executable:
    """An executable written by :meth:`Executable.save` (nothing is compiled)."""

    try:
        with zipfile.ZipFile(path) as z:
            members = {n: z.read(n) for n in z.namelist()}
    except Exception as err:  # (zipfile and zlib raise several kinds for a damaged archive)
        raise CompileError(f"{path} is not a relay executable: {err}") from None
    for name in ("executable.json", "program.rly"):
        if name not in members:
            raise CompileError(f"{path} is not a relay executable: it has no {name}")
    try:
        meta = json.loads(members["executable.json"])
        text = members["program.rly"].decode()
    except ValueError as err:
        raise CompileError(f"{path} is not a relay executable: {err}") from None
    if not isinstance(meta, dict):
        raise CompileError(f"{path} is not a relay executable: its executable.json is no object")
    if meta.get("format") not in READABLE_FORMATS:
        raise CompileError(f"{path}: unsupported executable format {meta.get('format')}")
    try:
        return _executable_from(path, meta, text, members)
    except (KeyError, TypeError, AttributeError) as err:  # (a field missing or malformed)
        raise CompileError(
            f"{path} is not a relay executable: its executable.json has a missing or "
            f"malformed field ({type(err).__name__}: {err})"
        ) from None


def _executable_from(
    path: str | os.PathLike[str], meta: dict[str, Any], text: str, members: dict[str, bytes]
) -> Executable:
    """The executable that :func:`load` read: ``meta`` (its ``executable.json``), the
    program's ``text`` and the archive's ``members``."""
    from relay.backend.cache import kernels_from_metadata
    from relay.backend.runtime import tvm
    from relay.ir.parser import parse

    module = parse(text, str(path))
    entry = module.get_global_var(meta["entry"])
    t = meta["target"]
    target = Target(
        t.get("kind", "llvm"), mcpu=t["mcpu"], fast_math=t["fast_math"], arch=t.get("arch", "")
    )
    graph = None
    vm: VMExecutor | None = None
    constants = {
        int(Path(n).stem): np.load(io.BytesIO(data), allow_pickle=False)
        for n, data in members.items()
        if n.startswith("constants/")
    }
    library = None
    if "kernels" in meta:
        kernels = kernels_from_metadata(meta["kernels"])
        data = members.get("kernels.so", b"")
        if not data:
            raise CompileError(f"{path} is not a relay executable: it has no kernels.so")
        with tempfile.TemporaryDirectory() as tmp:
            so = Path(tmp) / "kernels.so"
            so.write_bytes(data)
            try:
                lib_module = tvm().runtime.load_module(str(so))
            except Exception as err:
                if not target.is_gpu:
                    raise
                raise CompileError(
                    f"{path} holds kernels compiled for {target.arch}, and TVM on this "
                    "machine cannot load CUDA code (it needs the CUDA driver: load it on "
                    f"a machine with the GPU): {str(err).strip().splitlines()[-1]}"
                ) from None
        for name, spec in meta.get("vta_layers", {}).items():
            from relay.backend.vta.build import layer_from_spec

            kernels[name].func = layer_from_spec(spec)
        codes = sorted(n for n in members if n.startswith("device_code/"))
        device_code = [members[n] for n in sorted(codes, key=lambda n: int(Path(n).stem))]
        library = KernelLibrary(kernels, lib_module, "", data, device_code)
    if meta["kind"] == "graph" and target.is_gpu:
        assert library is not None
        plan = GraphPlan.from_json(meta["plan"], constants)
        return _gpu_graph(module, entry, target, meta.get("name", ""), plan, library)
    if meta["kind"] == "graph":
        assert library is not None
        try:
            plan = GraphPlan.from_json(meta["plan"], constants)
            check_plan(plan, library)
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise CompileError(f"{path} is not a relay executable: {err}") from None
        graph = executor(plan, library)
    elif meta["kind"] == "vm":
        from relay.backend.vm import VMExecutor
        from relay.backend.vm.isa import program_from_json

        values = [constants[k] for k in range(meta["vm"]["constant_count"])]
        program = program_from_json(meta["vm"], module, values)
        if target.is_gpu:
            from relay.backend.device import Device
            from relay.backend.vm.device import DeviceVMExecutor

            vm = DeviceVMExecutor(program, library, target, None, Device("cuda"))
        else:
            vm = VMExecutor(program, library, target)
    return Executable(module, entry, target, graph, meta.get("name", ""), vm)


def build(
    program: Any,
    target: str | Target | None = "llvm",
    opt_level: int = 3,
    entry: str = "main",
    *,
    tiered: bool = False,
) -> Executable:
    """Compile ``program`` (a Module's ``entry``, a ``@relay`` function, its derivative from
    ``relay.grad``/``relay.jvp``, or a closed relay Function) for ``target``; see the module
    docstring. ``tiered``: where products of several depths can share a kernel, the
    executable starts on shared kernels and its specialized ones compile in the background
    (:mod:`relay.backend.tiers`; what a ``@relay`` function's first call does)."""
    mod, gv, name = _entry_of(program, entry)
    tgt = Target.of(target)
    from relay.backend.cache import kernel_cache
    from relay.typecheck.checker import infer_type

    typed = mod if _is_typed(mod) else infer_type(mod)
    assert isinstance(typed, Module)
    if tgt.is_gpu:
        return _build_gpu(typed, gv, tgt, name, opt_level)
    if tgt.kind == "vta":  # VTA's layers are made of quantized layers: before optimizing
        from relay.backend.vta.partition import partition_for_vta

        typed = partition_for_vta(typed)
    # (a VTA program's layers are made fresh each time: not from the program cache)
    key = None if tgt.kind == "vta" else _program_key(typed, gv, tgt, opt_level)
    if key is not None:
        cached = _cached_program(key, typed, gv, tgt, name, opt_level)
        if cached is not None:
            return cached
    optimized = optimize(typed, gv, opt_level)
    gv = optimized.get_global_var(gv.name_hint)
    func = optimized.functions[gv]
    vm = None
    second: tuple[Callable[[], Graph], Callable[[], Graph]] | None = None
    try:
        if tiered and flags.get().tiers:
            from relay.backend.tiers import first_tier

            graph, second = first_tier(func, tgt)
        else:
            graph = build_graph(func, tgt)
    except NotDataflow as why:
        graph = None
        unrolled = _unrolled(typed, gv, tgt, opt_level)
        if unrolled is not None:
            flags.debug_print(1, f"{name}: its recursion unrolls into dataflow")
            graph, optimized = unrolled
            gv = optimized.get_global_var(gv.name_hint)
        else:
            flags.debug_print(1, f"{name} runs on the VM: it has {why}")
    except CompileError as err:
        if "static shapes" not in err.message:
            raise
        flags.debug_print(1, f"{name} runs on the VM: {err.message}")
        graph = None
    if graph is None:
        from relay.backend.vm import NotCompilable, compile_vm
        from relay.backend.vm.codegen import run_time_checks

        checks = run_time_checks(typed, gv)
        try:
            if checks:
                raise NotCompilable(checks)
            vm = compile_vm(optimized, gv, tgt)
        except NotCompilable as why:
            flags.debug_print(1, f"{name} runs on the interpreter: the VM does not run {why}")
            # the program as written: the interpreter makes the checks it needs there
            return Executable(_reachable(typed, gv), gv, tgt, None, name)
    exe = Executable(optimized, gv, tgt, graph, name, vm)
    if second is not None:  # (the second tier records the program when it is ready)
        _second_tier(exe, second, key)
    elif key is not None and (graph is not None or vm is not None):
        kernel_cache().store_program(key, _program_record(graph, vm))
    return exe


def _second_tier(
    exe: Executable, tiers: tuple[Callable[[], Graph], Callable[[], Graph]], key: str | None
) -> None:
    """Compile ``exe``'s second tier in the background once ``exe`` has run
    (:mod:`relay.backend.tiers`), then run ``exe`` on it and record it in the program cache
    under ``key``. At exit, without a disk cache to keep it, it is not compiled. Both of
    ``tiers`` (the second tier, and the first at the usual levels, see
    :func:`relay.backend.tiers.first_tier`) compile under this thread's flags."""
    from relay.backend.cache import kernel_cache

    cache = kernel_cache()
    first = exe.graph
    settings = flags.get()

    def pinned(compile_graph: Callable[[], Graph]) -> Callable[[], Graph]:
        def run() -> Graph:
            with flags.pinned(settings):
                return compile_graph()

        return run

    second, fallback = (pinned(f) for f in tiers)

    def work(exiting: bool) -> None:
        upgraded = False
        try:
            if exiting and cache.directory() is None:  # (nobody would run or keep it)
                return
            try:
                graph = second()
            except Exception as err:  # the first tier stays: it computes the same results
                flags.debug_print(1, f"{exe.name}: its second tier failed: {err}")
                return
            exe.upgrade(graph)
            upgraded = True
            if first is not None:
                cache.forget(first.library.key)
            flags.debug_print(2, f"{exe.name} runs on its second tier: {len(exe.kernels)} kernels")
            if key is not None:
                with flags.pinned(settings):
                    cache.store_program(key, _program_record(graph, None))
        finally:
            if not upgraded:  # (a failure, an interruption, or nothing to do)
                exe.abandon_upgrade()

    exe.expect_upgrade(fallback, work)
    cache.in_background(exe.run_upgrade, "relay-second-tier", exe.first_run)


def _device_modules(module: Any) -> list[Any]:
    """The CUDA modules under a GPU library's host module (one per compiled part)."""
    out: list[Any] = []
    stack = list(module.mod.imports)
    while stack:
        m = stack.pop(0)
        if str(m.kind) == "cuda":
            out.append(m)
        stack.extend(m.imports)
    return out


def _build_gpu(
    typed: Module, gv: GlobalVar, target: Target, name: str, opt_level: int
) -> Executable:
    """A program compiled for a GPU: its dataflow planned as for the graph executor and
    its kernels compiled to device code (docs/backend.md, "The CUDA target"); it runs on
    the device graph executor (:mod:`relay.backend.device_executor`) at its first call on
    a machine with the GPU. Kernels without a GPU schedule are compiled for the host and
    named in the debug output (``exe.placement`` lists them)."""
    from relay.backend.graph_executor import compile_plan
    from relay.backend.schedule.gpu import transposed_operands
    from relay.passes.alter_layout import AlterProductLayout
    from relay.passes.fuse_ops import SCALAR_EPILOGUES_CONFIG

    layout = [AlterProductLayout(transposed_operands(target))] if opt_level >= 2 else []
    optimized = optimize(typed, gv, opt_level, layout, {SCALAR_EPILOGUES_CONFIG: False})
    gv = optimized.get_global_var(gv.name_hint)
    try:
        plan, library = compile_plan(optimized.functions[gv], target)
    except (NotDataflow, CompileError) as why:
        if isinstance(why, CompileError) and "static shapes" not in why.message:
            raise
        from relay.backend.vm import NotCompilable, compile_vm

        flags.debug_print(1, f"{name} runs on the VM on the GPU: {why}")
        try:
            vm = compile_vm(optimized, gv, target)
        except NotCompilable as reason:
            raise CompileError(
                f"{name}: the CUDA target cannot compile this program: the VM does not run {reason}"
            ) from None
        return Executable(optimized, gv, target, None, name, vm)
    exe = _gpu_graph(optimized, gv, target, name, plan, library)
    on_cpu = [k for k, where in exe.placement.items() if where == "cpu"]
    if on_cpu:
        flags.debug_print(1, f"{name}: {len(on_cpu)} kernels run on the CPU: {', '.join(on_cpu)}")
    return exe


def _gpu_graph(
    module: Module,
    gv: GlobalVar,
    target: Target,
    name: str,
    plan: GraphPlan,
    library: KernelLibrary,
) -> Executable:
    """The executable of a GPU program's ``plan`` and its kernels ``library``."""
    exe = Executable(module, gv, target, None, name)
    exe.device_plan = plan
    exe.device_library = library
    exe._flat_params = all(isinstance(t, TensorType) for t in plan.param_types)
    return exe


def _reachable(mod: Module, entry: GlobalVar) -> Module:
    from relay.passes.remove_unused import reachable_globals

    keep = reachable_globals(mod, [entry])
    return Module({g: mod.functions[g] for g in keep}, dict(mod.type_definitions))


# -- the program cache ----------------------------------------------------------------------------


def _is_typed(mod: Module) -> bool:
    """Every function of ``mod`` has been type-checked (and so need not be again)."""
    return all(f._checked_type is not None for f in mod.functions.values())


def _program_key(mod: Module, entry: GlobalVar, target: Target, opt_level: int) -> str | None:
    """The program cache's key for ``entry`` of the typed ``mod`` (None when the disk cache
    is off): the text of the functions it reaches, with the target, the opt level and the
    relay code (see :func:`relay.backend.cache.program_key`)."""
    from relay.backend.cache import kernel_cache, program_key
    from relay.ir.printer import astext
    from relay.passes.remove_unused import reachable_globals

    if kernel_cache().directory() is None:
        return None
    reached = reachable_globals(mod, [entry])
    text = astext(Module({g: mod.functions[g] for g in reached}, dict(mod.type_definitions)))
    return program_key(f"{entry.name_hint}\n{text}", target, opt_level)


def _program_record(graph: Graph | None, vm: VMExecutor | None) -> dict[str, Any]:
    """What the program cache stores: the graph plan or the VM code, the constants and the
    library's key."""
    from relay.backend.cache import array_json

    if graph is not None:
        plan = graph.plan
        return {
            "plan": plan.to_json(),
            "constants": {str(slot): array_json(data) for slot, data in plan.constants.items()},
            "library": graph.library.key,
        }
    from relay.backend.vm.isa import program_to_json

    assert vm is not None
    return {
        "vm": program_to_json(vm.program),
        "constants": {str(k): array_json(data) for k, data in enumerate(vm.program.constants)},
        "library": vm.library.key if vm.library is not None else None,
    }


def _cached_program(
    key: str, typed: Module, gv: GlobalVar, target: Target, name: str, opt_level: int
) -> Executable | None:
    """The executable of a program cache hit (its library from the kernel cache), or None;
    its optimized module is made again only if asked for."""
    from relay.backend.cache import array_from_json, kernel_cache

    cache = kernel_cache()
    record = cache.lookup_program(key)
    if record is None:
        return None
    graph = vm = None
    try:
        library = None
        if record["library"] is not None:
            library = cache.lookup(record["library"])
            if library is None:
                return None
        constants = {int(k): array_from_json(v) for k, v in record["constants"].items()}
        if "vm" in record:
            from relay.backend.vm import VMExecutor
            from relay.backend.vm.isa import program_from_json

            values = [constants[k] for k in range(len(constants))]
            vm = VMExecutor(program_from_json(record["vm"], typed, values), library, target)
        else:
            assert library is not None
            plan = GraphPlan.from_json(record["plan"], constants)
            check_plan(plan, library)
            graph = executor(plan, library)
    except Exception as err:  # a stale or damaged record is a miss
        flags.debug_print(1, f"program cache entry {key[:12]} does not load ({err})")
        return None

    def module() -> Module:
        return optimize(typed, gv, opt_level)

    cache.program_hits += 1
    return Executable(module, gv.name_hint, target, graph, name, vm, typed.functions[gv])


def _entry_of(program: Any, entry: str) -> tuple[Module, GlobalVar, str]:
    from relay.frontend.autodiff import Derivative
    from relay.frontend.function import RelayFunction

    if isinstance(program, (RelayFunction, Derivative)):
        return program.module, program.global_var, program.__name__
    if isinstance(program, Module):
        try:
            gv = program.get_global_var(entry)
        except (KeyError, ValueError):
            raise CompileError(f"the module has no function @{entry}") from None
        return program, gv, f"@{entry}"
    if isinstance(program, Function):
        gv = GlobalVar("main")
        return Module({gv: program}), gv, "@main"
    if isinstance(program, Expr):
        raise CompileError("relay.build takes a Module, a @relay function or a Function")
    raise CompileError(f"cannot build a {type(program).__name__}")
