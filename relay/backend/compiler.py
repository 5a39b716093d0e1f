"""Compiling a program's primitive functions into one kernel library.

All the primitive functions of a program are lowered (:mod:`relay.backend.lower`), scheduled
for the target (:mod:`relay.backend.schedule`) and compiled in as few ``tvm.compile`` calls
as the machine's cores can run at once (one LLVM module per call: ten kernels compile in
0.4 s together against 0.6 s apart): matrix products at LLVM's -O2 (a first tier's at -O0
where that computes the same bits: :func:`quick_product`), small kernels at -O0 and the
rest at -O1, each level's kernels spread over as many parts as there are cores
(:func:`_parts`).
The parts' modules are imported into one, which exports as one shared object.
Structurally equal primitive functions share one kernel. The library is looked up in the
kernel cache (:mod:`relay.backend.cache`) first, by a digest of the functions' text, the
target and the versions, so a second process running the same program compiles nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import queue
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from relay import flags
from relay.backend.target import Target
from relay.errors import CompileError, ExecutionError
from relay.ir.expr import Function
from relay.ir.span import Span
from relay.ir.types import TensorType, TypeVar
from relay.op.tensor import COMPARISONS


@dataclass
class Kernel:
    """One compiled primitive function: its symbol, argument and result types (inputs are
    the parameters flattened, then ``constants``), and, once loaded, the callable."""

    name: str
    inputs: list[TensorType]
    outputs: list[TensorType]
    constants: list[np.ndarray[Any, Any]] = field(default_factory=list)
    anchor: str = ""
    func: Any = None
    checks: list[tuple[str, Span | None]] = field(default_factory=list)
    """Run-time checks (see :class:`relay.backend.lower.LoweredFunc`): the kernel takes
    one int32 ``(1,)`` flag buffer per check after its outputs, positive when it failed."""
    shape_vars: list[TypeVar] = field(default_factory=list)
    """A kernel of symbolic sizes: its shape variables, whose values it takes (int64) after
    its outputs and flags."""
    device: str = "cpu"
    """Where the kernel runs: ``"cpu"`` or ``"cuda"`` (a GPU kernel, launched from the
    host)."""
    calls: dict[str, str] = field(default_factory=dict)
    """For a compiled loop (:mod:`relay.backend.vm.loops`): the kernels it calls, by the
    name it finds them under in TVM's global registry."""

    def raise_failed(self, flags: list[np.ndarray[Any, Any]]) -> None:
        """Raise the ExecutionError of the first failed check, if any (``flags`` as written
        by a call of this kernel)."""
        for flag, (message, span) in zip(flags, self.checks, strict=True):
            if flag[0] > 0:  # (a check over no element leaves the lowest int32)
                raise ExecutionError(message, span)

    def __call__(self, *args: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
        """Run on ``args`` (any layout: copied when misaligned or strided) into fresh outputs.

        The executors call ``func`` directly on planned buffers; this is for tests and tools.
        """
        from relay.backend.runtime import aligned_empty, as_kernel_array, numpy_dtype

        if len(args) + len(self.constants) != len(self.inputs):
            raise TypeError(f"kernel {self.name} takes {len(self.inputs)} inputs")
        ins = [
            as_kernel_array(np.asarray(a, dtype=numpy_dtype(str(t.dtype))))
            for a, t in zip((*args, *self.constants), self.inputs, strict=True)
        ]
        values = self._sizes(ins)
        for k, (a, t) in enumerate(zip(ins, self.inputs, strict=True)):
            # static kernels do not check their arguments (see _parts): this entry does
            want = _shape(t, values)
            if len(a.shape) != len(want) or any(
                w not in (-1, d) for w, d in zip(want, a.shape, strict=True)
            ):
                shown = tuple("?" if w == -1 else w for w in want)
                raise TypeError(f"kernel {self.name} input {k} has shape {a.shape}, not {shown}")
        outs = [aligned_empty(_shape(t, values), numpy_dtype(str(t.dtype))) for t in self.outputs]
        flags = [aligned_empty((1,), np.int32) for _ in self.checks]
        if self.device == "cpu":
            self.func(*ins, *outs, *flags, *values.values())
        else:  # the buffers copied to the device and the results back
            from relay.backend.device import Device, device_put

            device = Device(self.device)
            dev_ins = [device_put(a, device) for a in ins]
            dev_outs = [device_put(a, device) for a in (*outs, *flags)]
            self.func(*[a._tensor for a in (*dev_ins, *dev_outs)], *values.values())
            for host, dev in zip((*outs, *flags), dev_outs, strict=True):
                if host.size:
                    np.copyto(host, dev.numpy())
        self.raise_failed(flags)
        return outs

    def _sizes(self, ins: list[np.ndarray[Any, Any]]) -> dict[int, int]:
        """The shape variables' values (by the variable's id), from the first input
        dimension that each is."""
        values: dict[int, int] = {}
        for a, t in zip(ins, self.inputs, strict=True):
            for d, n in zip(t.shape, a.shape, strict=False):
                if isinstance(d, TypeVar) and id(d) not in values:
                    values[id(d)] = n
        missing = [v.name_hint for v in self.shape_vars if id(v) not in values]
        if missing:
            raise TypeError(f"kernel {self.name}: no input gives the size {missing[0]}")
        return {id(v): values[id(v)] for v in self.shape_vars}


_EXPORT_LOCK = threading.Lock()


def _shape(t: TensorType, values: dict[int, int] | None = None) -> tuple[int, ...]:
    """``t``'s shape; a symbolic dimension evaluated with ``values`` (by variable id), or -1."""
    from relay.ir.dim import evaluate, is_symbolic

    out = []
    for d in t.shape:
        if isinstance(d, int):
            out.append(d)
        elif values and is_symbolic(d):
            out.append(evaluate(d, lambda v: values[id(v)]))
        else:
            out.append(-1)
    return tuple(out)


@dataclass
class KernelLibrary:
    """Compiled kernels sharing one TVM runtime module."""

    kernels: dict[str, Kernel]
    module: Any
    key: str = ""
    shared_object: bytes | None = None
    """The library as a shared object, once it has been exported or loaded from one."""
    device_code: list[bytes] = field(default_factory=list)
    """A GPU library's device code (PTX), one per compiled part."""
    quick: bool = False
    """A first tier's library (:func:`compile_functions`), which is not exported: its
    modules at -O0 each define TVM's startup function, and do not link together."""

    def export(self, path: Path) -> None:
        """Write the library as a shared object (linked by TVM with the system compiler the
        first time, then kept)."""
        if self.quick:
            raise CompileError("a first tier's kernel library is not exported")
        with _EXPORT_LOCK:
            if self.shared_object is None:
                self.module.export_library(str(path))
                self.shared_object = path.read_bytes()
                return
        path.write_bytes(self.shared_object)

    def __getitem__(self, name: str) -> Kernel:
        kernel = self.kernels[name]
        if kernel.func is None:  # a GPU library: its kernels are looked up where they run
            self.bind()
        return kernel

    def bind(self) -> None:
        """Look every kernel's function up once (each lookup costs ~13 us), and register
        the kernels that compiled loops call under the names they call them by."""
        for k in self.kernels.values():
            if k.func is None:
                k.func = host_callable(k, self.module[k.name])
        for k in self.kernels.values():
            for name, symbol in k.calls.items():
                _register_once(name, self.kernels[symbol].func)


def has_bfloat16(kernel: Kernel) -> bool:
    """Whether ``kernel`` takes or gives a bfloat16 tensor."""
    return any(str(t.dtype) == "bfloat16" for t in (*kernel.inputs, *kernel.outputs))


def host_callable(kernel: Kernel, func: Any) -> Any:
    """``func``, the compiled ``kernel``, callable with numpy arrays: a kernel that takes or
    gives bfloat16 tensors gets ``ml_dtypes`` bfloat16 arrays as TVM tensors over the same
    memory (:func:`relay.backend.runtime.bfloat16_tensor`; numpy's DLPack export, through
    which TVM takes arrays, has no bfloat16 and raised a ``BufferError``)."""
    if not has_bfloat16(kernel):
        return func
    from relay.backend.runtime import bfloat16_tensor, numpy_dtype

    bf16 = numpy_dtype("bfloat16")

    def call(*args: Any) -> Any:
        return func(
            *[
                bfloat16_tensor(a) if isinstance(a, np.ndarray) and a.dtype == bf16 else a
                for a in args
            ]
        )

    return call


def _register_once(name: str, func: Any) -> None:
    """Register ``func`` under ``name`` unless a function is registered there already (a
    compiled loop caches the function it looks up, so one registered must never be
    replaced; names are unique to the kernel's code, so the first serves)."""
    from relay.backend.runtime import tvm

    tvm_ = tvm()
    with _EXPORT_LOCK:
        if tvm_.get_global_func(name, allow_missing=True) is None:
            tvm_.register_global_func(name, func)


def kernel_name(func: Function, ops: Sequence[str], index: int) -> str:
    """A readable, unique symbol: ``fused_<ops>_<index>`` (TVM's naming)."""
    parts = [re.sub(r"[^A-Za-z0-9]", "_", op.split(".")[-1]) for op in ops]
    stem = "_".join(parts)[:48] or "copy"
    return f"fused_{stem}_{index}"


@functools.cache
def code_version() -> str:
    """A digest of the code that decides what a kernel is: the lowering rules, the lowering
    and the schedules (so that a changed rule never meets a kernel compiled before it), with
    the relay and TVM versions."""
    from importlib import metadata

    from relay.backend.runtime import tvm

    h = hashlib.sha256()
    with contextlib.suppress(metadata.PackageNotFoundError):  # a plain source tree
        h.update(metadata.version("relay-ir").encode())
    h.update(str(tvm().__version__).encode())
    root = Path(__file__).resolve().parent.parent
    sources = [
        *sorted((root / "op" / "lowering").glob("*.py")),
        *sorted((root / "backend" / "schedule").glob("*.py")),
        root / "backend" / "lower.py",
        root / "backend" / "compiler.py",
        root / "backend" / "cuda.py",  # (check_launch decides which GPU schedules are kept)
    ]
    for path in sources:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def library_key(texts: Sequence[str], target: Target, quick: bool = False) -> str:
    """The cache key of a library: its functions' text, the target, the code version, and
    whether it is a first tier's (``quick``: see :func:`compile_functions`)."""
    h = hashlib.sha256()
    h.update(f"code {code_version()}\n".encode())
    h.update(f"target {target.key}{' quick' if quick else ''}\n".encode())
    if target.is_gpu:  # (the GPU schedules' settings, which a user or a probe may change)
        from relay.backend.schedule.gpu import settings

        h.update(f"schedules {settings()}\n".encode())
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()


def function_text(func: Function) -> str:
    """The canonical text of a primitive function (the cache key's input)."""
    from relay.ir.printer import astext

    return astext(func, show_types=True)


def compile_functions(
    funcs: Sequence[Function],
    target: Target,
    disk: bool = True,
    ran: bool = False,
    quick: bool = False,
) -> tuple[KernelLibrary, list[str]]:
    """Compile ``funcs`` (type-checked primitive functions) into one library; the second
    result names the kernel of each function, in order (equal functions share one).
    ``disk``: the library is looked up in and stored to the disk cache as well as the
    memory one (a first tier's, :mod:`relay.backend.tiers`, is not). ``ran``: the program
    has run already, its disk write need not wait for it (a second tier's). ``quick``: a
    first tier's library, its products compiled at -O0 where that computes the same bits
    (:func:`quick_product`); it is kept in memory only, and not exported."""
    from relay.backend.cache import kernel_cache

    if target.kind == "vta":  # VTA layers for the VTA operators, the rest for the host
        from relay.backend.vta.build import compile_functions as compile_vta

        return compile_vta(funcs, target)
    order, names, key, disk = _library_request(funcs, target, disk and not quick, quick)
    cache = kernel_cache()
    lib = cache.lookup(key, disk)
    if lib is None:
        lib = _build(order, target, key, quick)
        cache.store(lib, disk, ran)
    return _bound(lib, names, target)


def cached_functions(
    funcs: Sequence[Function], target: Target, disk: bool = True
) -> tuple[KernelLibrary, list[str]] | None:
    """:func:`compile_functions`'s result where the kernel cache holds it already (in
    memory, or with ``disk`` on disk), else None: nothing is compiled."""
    from relay.backend.cache import kernel_cache

    _, names, key, disk = _library_request(funcs, target, disk)
    lib = kernel_cache().lookup(key, disk)
    return None if lib is None else _bound(lib, names, target)


def _library_request(
    funcs: Sequence[Function], target: Target, disk: bool, quick: bool = False
) -> tuple[list[Function], list[str], str, bool]:
    """The distinct functions of ``funcs`` (equal ones share a kernel), each function's index
    among them, the library's key, and whether the disk cache serves it."""
    texts: list[str] = []
    unique: dict[str, int] = {}
    names: list[str] = []
    order: list[Function] = []
    for f in funcs:
        text = function_text(f)
        if text not in unique:
            unique[text] = len(order)
            order.append(f)
            texts.append(text)
        names.append(str(unique[text]))
    # a GPU library on disk is loaded by TVM's runtime only where it has CUDA (the driver)
    disk = disk and (not target.is_gpu or cuda_runtime())
    return order, names, library_key(texts, target, quick), disk


def _bound(lib: KernelLibrary, names: list[str], target: Target) -> tuple[KernelLibrary, list[str]]:
    if not target.is_gpu:  # (GPU kernels are looked up where they run)
        lib.bind()
    symbols = list(lib.kernels)
    return lib, [symbols[int(n)] for n in names]


def cuda_runtime() -> bool:
    """Whether TVM's runtime here runs CUDA code (loads CUDA modules): a CUDA driver."""
    from relay.backend.runtime import tvm

    return bool(tvm().runtime.enabled("cuda"))


PRODUCTS = frozenset({"nn.dense", "nn.matmul", "nn.batch_matmul"})
"""Anchors whose kernels LLVM compiles at :data:`PRODUCT_OPT_LEVEL`; every other kernel
loses nothing measurable at -O1 and compiles faster (a 3x3 convolution: 0.5 -> 0.34 s)."""

PRODUCT_OPT_LEVEL = 2
"""LLVM's optimization level for matrix products. Their register-blocked loops lost ~7% at
-O2 against -O3 when the level was chosen; with today's schedules -O2 runs as fast and
compiles faster (2-core Sapphire Rapids, cold first call / median, -O3 then -O2, three
alternated runs each): mlp_train_step 414-444 / 5.50-5.84 ms against 385-395 / 5.50-5.72,
mlp_infer_b128 210-214 / 1.98-2.07 against 131-137 / 1.86-1.90, matmul_1024 109-121 /
7.35-7.51 against 101-108 / 7.34-7.60, grad_tanh_sum level. -O1 costs them 30%."""


SMALL_KERNEL = 1 << 14
"""Kernels that read and write fewer elements than this, in all, are compiled at -O0:
their runs take a microsecond or two either way, and LLVM's optimization costs them a
third of their compilation (2-core Sapphire Rapids, -O0 against -O1, (128, 10) operands:
``log_softmax`` 25.8 against 36.8 ms to compile, 6.3 against 5.3 us a call; ``sum`` along
rows 11.1 / 15.7 ms, 0.96 / 0.36 us; ``multiply`` 11.1 / 15.8 ms, 0.26 / 0.23 us). Larger
kernels keep -O1: at -O0 a row ``max`` of (128, 1024) took 15 us against 7, and so do
heavy ones (a small convolution: 27.5 us at -O1, 41.5 at -O0). (The fast ``exp``,
``tanh``, ``sigmoid`` and ``log_softmax`` give the same bits at -O0, -O1 and -O2: 16,384
values each, 2026-11-28; an earlier note here, that the ``exp``'s reduction was not fused
at -O0, came from reading the assembly TVM prints, which is not the code it runs. The
approximations keep their documented bounds: ``exp`` 8.3e-8, ``tanh`` 2.74e-7, ``sigmoid``
1.73e-7, measured in kernels of 8192 elements.)"""

PART_WEIGHT = 8
"""The weight of kernels (see :func:`_parts`) that makes a part worth a module of its own:
each costs ~12 ms of compilation whatever it holds."""


@dataclass
class _Part:
    """Kernels compiled together: one LLVM module at one optimization level, with or
    without TVM's checks of the arguments (see :func:`_parts`)."""

    opt_level: int
    checked: bool
    funcs: list[tuple[int, Function]] = field(default_factory=list)
    weight: int = 0


def _parts(
    funcs: Sequence[Function], cores: int, small_at_o0: bool = True, quick: bool = False
) -> list[_Part]:
    """The kernels in parts, compiled on ``cores`` threads (heaviest first): products at
    -O2 (:data:`PRODUCT_OPT_LEVEL`; with ``quick``, those :func:`quick_product` accepts at
    -O0), small kernels at -O0 (:data:`SMALL_KERNEL`), the rest
    at -O1, each level's kernels spread over ``cores`` parts of about equal weight (a heavy
    kernel, a product or a convolution, weighs :data:`PART_WEIGHT`, another 1). Where there
    are several levels, a level gets no more parts than its weight is worth
    (:data:`PART_WEIGHT` each): a module costs ~12 ms whatever it holds, and the other
    levels' parts keep the cores busy meanwhile.

    Kernels of static shapes are compiled without the checks TVM's calling convention
    makes of each argument (its type, dtype, rank, shape, strides and device): every
    caller passes exactly the buffers the kernel was typed for (the executors check a
    program's inputs once, at its entry, and allocate everything else themselves), and the
    checks are most of a kernel's LLVM code: ~8 ms of code generation per parameter (a
    (128, 1024) add of 8 operands: 65 -> 23 ms; the cold first call of mlp_train_step,
    18 kernels: 0.60-0.80 -> 0.45-0.50 s). Kernels of a symbolic size keep them: their size is read
    from the first argument and the checks are what ties the others to it; but a kernel
    shared by products of several depths (:mod:`relay.backend.share`) is called by the
    graph executor alone, with the buffers and the sizes of each call's plan."""
    from relay.backend.lower import is_dynamic
    from relay.backend.share import SHARED

    # (level, checked, quick products) -> [(weight, index, function)]
    groups: dict[tuple[int, bool, bool], list[tuple[int, int, Function]]] = {}
    for i, f in enumerate(funcs):
        ops = set(_ops(f))
        product = bool(ops & PRODUCTS)
        weight = PART_WEIGHT if product or "nn.conv2d" in ops else 1
        checked = is_dynamic(f) and not f.attrs.get(SHARED)
        fast = product and quick and quick_product(f)
        if fast:
            level = 0
        elif product:
            level = PRODUCT_OPT_LEVEL
        elif small_at_o0 and weight == 1 and not checked and _elements(f) < SMALL_KERNEL:
            level = 0
        else:
            level = 1
        groups.setdefault((level, checked, fast), []).append((weight, i, f))
    parts: list[_Part] = []
    for (level, checked, fast), items in sorted(groups.items(), reverse=True):
        count = min(cores, len(items))
        if len(groups) > 1:  # (the other groups' parts keep the cores busy)
            count = min(count, -(-sum(weight for weight, _, _ in items) // PART_WEIGHT))
        count = max(1, count)
        # (one module at -O0: the export of a library links its modules, and those at -O0
        # each define the startup function that LLVM removes from the others; a quick
        # library is never exported, KernelLibrary.quick. The other groups are parted as
        # without ``quick``: a small kernel in a part at -O1 may round differently at -O0)
        mine = [_Part(level if k == 0 or fast else max(level, 1), checked) for k in range(count)]
        for weight, i, f in sorted(items, key=lambda item: -item[0]):
            part = min(mine, key=lambda p: p.weight)
            part.funcs.append((i, f))
            part.weight += weight
        parts.extend(mine)
    return sorted(parts, key=lambda p: -p.weight)


QUICK_OPS = frozenset(
    {
        *PRODUCTS,
        "add",
        "subtract",
        "multiply",
        "divide",
        "nn.bias_add",
        "nn.relu",
        "maximum",
        "minimum",
        "clip",
        "cast",
        "reshape",
        "transpose",
        "squeeze",
        "expand_dims",
        "copy",
        "where",
        "exp",
        "sigmoid",
        "zeros_like",
        "ones_like",
        *COMPARISONS,
    }
)
"""The operators of a product kernel that computes the same bits at -O0 as at
:data:`PRODUCT_OPT_LEVEL` (:func:`quick_product`; ``exp`` and ``sigmoid`` are the fast
approximations for float32, checked as epilogues by 1,500 random products, 2026-11-28)."""

QUICK_DTYPES = frozenset({"float32", "float64"})
"""The float dtypes of a product kernel's values that :func:`quick_product` accepts."""

QUICK_MACS = 1 << 30
"""The most multiply-adds of a product compiled at -O0 in a first tier: 1024^3, which runs
in ~7 ms at -O2 on the project machine's two cores and loses about as much a call at -O0,
against the ~26 ms of compilation saved; a larger product would lose more than that."""


def quick_product(func: Function) -> bool:
    """Whether the product kernel ``func`` computes the same bits when LLVM compiles it at
    -O0 as at :data:`PRODUCT_OPT_LEVEL`, so that a first tier (:mod:`relay.backend.tiers`)
    may compile it at -O0: ~9 ms instead of ~35 for a (128, 784) x (784, 1024) product with
    its bias and ReLU, which then runs 2.2x slower (1.41 against 0.645 ms).

    A multiply-add gives the same bits at every level where TVM makes it one
    ``llvm.fmuladd`` (a sum's update, a bias after a scaling, ``t - p * s``) or where it
    stays two roundings. What differs is a multiply-add that LLVM's own simplification makes
    at -O1 and above: a product by the constant -1 becomes a negation (so does ``-0 - x``),
    and the negated product then fuses with the addition that follows (``-(b * c) + a``: 980
    of 4,096 results differ). So the kernel may hold only the products and
    :data:`QUICK_OPS`, which do not negate; among the fast approximations, ``exp`` and
    ``sigmoid`` but not ``tanh``: from -O1 on LLVM moves a product by a constant into the
    select that makes tanh exactly +-1, and fuses it with the addition after it (``t -
    tanh(p) * 3``: 4,428 of 16,384 results differ); no constant -1 or -0; and no value that TVM's
    simplifier may fold into a constant, such as -1 (:func:`_folds`). Its values are float32
    or float64: with float16 values, the code LLVM optimized rounded a scaled product plus
    an addend differently (``add(multiply(p, t), t)`` after a (4, 6) x (6, 1) product: 8 of
    32 results, by an ulp; the cause is not pinned down), and so are the values inside
    (integers and booleans too). And its products make at most
    :data:`QUICK_MACS` multiply-adds."""
    from relay.backend.lower import flatten_type
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Op

    ops = set(_ops(func))
    if not ops & PRODUCTS or not ops <= QUICK_OPS or _macs(func) > QUICK_MACS:
        return False
    values = [*func.params, *(e for e in sub_expressions(func.body) if not isinstance(e, Op))]
    for t in (t for v in values for t in flatten_type(v.checked_type)):
        dtype = str(t.dtype)
        if dtype.startswith(("float", "bfloat")) and dtype not in QUICK_DTYPES:
            return False  # (a float16 value inside too: a cast there and back)
    return not _folds(func)


def _folds(func: Function) -> bool:
    """Whether ``func`` holds a float constant -1 or -0, or a value TVM's simplifier may
    fold into a constant: an operator (other than ``zeros_like``/``ones_like``) whose
    operands are all constants, ``where``'s two values constants, a binary operator of one
    operand twice (``x == x`` is 1), a ``clip`` to a single value. The review of this rule
    found -1 made of ``subtract(zeros_like(t), ones_like(t))``, of ``clip(zeros_like(t),
    -1, -1)``, of ``subtract(cast(not_equal(t, t)), cast(equal(t, t)))``, and of a
    ``where`` whose condition folds; and two more ways to a multiply-add that only -O2
    fuses: a division by a constant power of two, which LLVM makes a multiplication
    (``divide(p, 2f) - t * u``: 571 of 2,048 results differ), and float64 arithmetic cast
    back to float32, which LLVM narrows to float32 arithmetic (1,115 of 2,048). So a
    division by a constant, and a narrowing cast of a computed float64 value, are
    rejected too."""
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Call, Constant, Op

    nodes = sub_expressions(func.body)  # (in pre-order: users before their operands)
    constant: set[int] = set()
    for n in reversed(nodes):  # the constants first
        if isinstance(n, Constant):
            if n.data.dtype.kind == "f" and bool(
                np.any((n.data == -1) | ((n.data == 0) & np.signbit(n.data)))
            ):
                return True
            constant.add(id(n))
        elif isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in _FILLS:
            constant.add(id(n))
    return any(
        isinstance(n, Call)
        and isinstance(n.op, Op)
        and n.op.name not in _FILLS
        and _folded_call(n.op.name, n.args, n.attrs, constant)
        for n in nodes
    )


_FILLS = ("zeros_like", "ones_like")


def _folded_call(name: str, args: Sequence[Any], attrs: Any, constant: set[int]) -> bool:
    """Whether a call of operator ``name`` may fold into a constant (see :func:`_folds`;
    ``constant``: the ids of the constants and fills, which are leaves: a call of constant
    operands is rejected, not counted as a constant itself)."""
    from relay.ir.equal import structural_equal

    if args and all(id(a) in constant for a in args):
        return True
    if name == "where" and all(id(a) in constant for a in args[1:]):
        return True
    if name == "clip" and attrs.get("a_min") == attrs.get("a_max"):
        return True
    if name == "divide" and id(args[1]) in constant:
        return True  # (x / 2 ** k becomes x * 2 ** -k, which may fuse with an addition)
    if name == "cast" and _narrowing(args[0]):
        return True  # (LLVM computes a narrowed float64 product in float32, and fuses it)
    if name == "subtract" and _scaled_minus_shared(args[0], args[1]):
        return True
    return len(args) == 2 and (args[0] is args[1] or structural_equal(args[0], args[1]))


def _scaled_minus_shared(left: Any, right: Any) -> bool:
    """Whether ``left - right`` is a product minus a value that reads an input of it: the
    lowering hides such a right operand from TVM's simplifier (the IEEE guard,
    :mod:`relay.op.lowering.elemwise`), TVM then emits no ``llvm.fmuladd``, and LLVM fuses
    the product with the subtraction from -O1 on only (``relu(a @ b^T) * t - t``: 2 of 4
    results an ulp apart; found by the hypothesis test of this rule)."""
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Call, Op, Var

    if not (isinstance(left, Call) and isinstance(left.op, Op) and left.op.name == "multiply"):
        return False

    def inputs(e: Any) -> set[int]:
        return {id(v) for v in sub_expressions(e) if isinstance(v, Var)}

    return bool(inputs(left) & inputs(right))


def _narrowing(operand: Any) -> bool:
    """Whether a ``cast`` of ``operand`` to float32 narrows a float64 value computed in
    float64 (a cast of a cast, a round trip, is not)."""
    from relay.ir.expr import Call, Op

    t = operand.checked_type
    if not isinstance(t, TensorType) or str(t.dtype) != "float64":
        return False
    return not (
        isinstance(operand, Call) and isinstance(operand.op, Op) and operand.op.name == "cast"
    )


def _macs(func: Function) -> int:
    """The multiply-adds of the matrix products in ``func``: for each, the elements of its
    first operand times the columns of its result (a symbolic dimension, a shared kernel's
    depth, counted as :data:`relay.backend.share.MAX_DEPTH`)."""
    from relay.backend.share import MAX_DEPTH
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Call, Op

    def dims(t: TensorType) -> list[int]:
        return [d if isinstance(d, int) else MAX_DEPTH for d in t.shape]

    total = 0
    for n in sub_expressions(func.body):
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in PRODUCTS:
            a, out = n.args[0].checked_type, n.checked_type
            if isinstance(a, TensorType) and isinstance(out, TensorType):
                total += math.prod(dims(a)) * (dims(out)[-1:] or [1])[0]
    return total


def _elements(func: Function) -> int:
    """The elements ``func`` reads and writes (its parameters and result, static shapes)."""
    from relay.backend.lower import flatten_type, static_shape

    types = [p.checked_type for p in func.params] + [func.body.checked_type]
    return sum(math.prod(static_shape(t)) for ty in types for t in flatten_type(ty))


def unaligned_params(prim: Any) -> Any:
    """``prim`` with its parameters' buffers declared aligned to their element size only.

    TVM declares every buffer 64-byte aligned; its packed-function wrapper passes that on to
    LLVM (an aligned-storage attribute), whose vector loads and stores then assume it, and a
    numpy array 16 bytes off (numpy's usual alignment) crashed the process, so every such
    argument had to be copied. Declared at the element size, LLVM uses unaligned vector
    instructions, which cost nothing more on aligned data here (an AVX-512 scale of 4M
    floats: 46-51 us either way), and arguments are passed as they are. The kernels'
    internal buffers keep their alignment."""
    from tvm.tirx.transform.common import BufferReplacer

    from relay.backend.runtime import numpy_dtype, tvm

    tirx = tvm().tirx
    new = {
        p: tirx.decl_buffer(
            p.shape,
            p.dtype,
            p.name,
            elem_offset=p.elem_offset,
            data_alignment=max(1, numpy_dtype(str(p.dtype)).itemsize),
            offset_factor=p.offset_factor,
        )
        for p in prim.params
        if _is_buffer(p)  # not a size variable
    }
    return BufferReplacer(buffer_map=new)(prim)


def _is_buffer(param: Any) -> bool:
    try:
        param.shape  # noqa: B018 (a scalar parameter has none)
    except AttributeError:
        return False
    return True


def _ops(func: Function) -> list[str]:
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Call, Op

    return [
        n.op.name
        for n in sub_expressions(func.body)
        if isinstance(n, Call) and isinstance(n.op, Op)
    ]


def _build(
    funcs: Sequence[Function], target: Target, key: str, quick: bool = False
) -> KernelLibrary:
    """Lower, schedule and compile ``funcs`` in parts (:func:`_parts`), pipelined: this
    thread lowers and schedules each part in turn (Python, which holds the GIL) and hands
    it to one of as many threads as there are cores, which compiles it (TVM's compiler
    releases the GIL) and looks its kernels up (LLVM's code generation happens at the first
    lookup), while this thread lowers the next part. The parts' modules are then imported
    into the first, so that the library exports as one shared object.

    Lowering every part on the compiling threads instead, as this did first, kept both
    cores on Python until the first part was lowered: mlp_train_step's 8 products took
    60 ms of lowering before any compilation started, its 10 other kernels another 25 ms
    after the products compiled."""
    from relay.backend.runtime import available_cores

    cores = available_cores()
    # (-O0 for small kernels on the CPU alone: a GPU library's host code is linked with
    # its device code's)
    parts = _parts(funcs, cores, small_at_o0=not target.is_gpu, quick=quick) or [_Part(1, False)]
    if len(parts) == 1:
        compiled = [_compile_lowered(_lower_part(parts[0], target), target)]
    else:
        compiled = _pipelined(parts, target, min(cores, len(parts)))
    ordered = sorted((item for part, _ in compiled for item in part), key=lambda t: t[0])
    kernels = {k.name: k for _, k in ordered}  # in the order of ``funcs``
    # the module at -O0 first: it keeps TVM's startup function, which makes TVM's export
    # call a library a "system library" when its last module has one, and register it in
    # a table every such library overwrites (a warning at each load)
    first = next((k for k, p in enumerate(parts) if p.opt_level == 0), 0)
    compiled.insert(0, compiled.pop(first))
    main = compiled[0][1]
    for _, other in compiled[1:]:
        main.mod.import_module(other.mod)
    code = [getattr(ex, "relay_device_code", b"") for _, ex in compiled]
    return KernelLibrary(kernels, main, key, device_code=[c for c in code if c], quick=quick)


def _pipelined(
    parts: list[_Part], target: Target, threads: int
) -> list[tuple[list[tuple[int, Kernel]], Any]]:
    """Each of ``parts`` lowered on this thread, in turn, and compiled on one of
    ``threads`` threads meanwhile (see :func:`_build`); the results in the parts' order, or
    the first error once the threads are done. Plain threads, not a ``ThreadPoolExecutor``,
    which takes no work once the interpreter has begun to exit: a program's second tier
    (:mod:`relay.backend.tiers`) may compile then, so that the process leaves it in the
    kernel cache."""
    work: queue.SimpleQueue[tuple[int, _LoweredPart] | None] = queue.SimpleQueue()
    results: dict[int, tuple[list[tuple[int, Kernel]], Any]] = {}
    errors: list[BaseException] = []
    settings = flags.get()  # (this thread's: see flags.pinned)

    def compile_parts() -> None:
        with flags.pinned(settings):
            while (item := work.get()) is not None:
                if not errors:
                    try:
                        results[item[0]] = _compile_lowered(item[1], target)
                    except BaseException as err:  # (raised on the lowering thread)
                        errors.append(err)

    workers: list[threading.Thread] = []
    for k in range(threads):
        worker = threading.Thread(target=compile_parts, name=f"relay-compile-{k}", daemon=False)
        try:
            worker.start()
        except RuntimeError:  # no new thread while the interpreter exits (Python 3.12)
            break
        workers.append(worker)
    if not workers:
        return [_compile_lowered(_lower_part(part, target), target) for part in parts]
    try:
        for k, part in enumerate(parts):
            if errors:
                break
            work.put((k, _lower_part(part, target)))
    finally:
        for _ in workers:
            work.put(None)
        for w in workers:
            w.join()
    if errors:
        raise errors[0]
    return [results[k] for k in range(len(parts))]


@dataclass
class _LoweredPart:
    """A part's kernels lowered and scheduled (:func:`_lower_part`), to be compiled."""

    part: _Part
    entries: list[tuple[int, Function, str, Any]]
    """(index, function, kernel name, its lowering)"""
    prims: dict[str, Any]
    """The scheduled PrimFuncs by kernel name."""
    host: set[str]
    """A GPU program's kernels that run on the CPU (mixed placement)."""
    seconds: float


def _lower_part(part: _Part, target: Target) -> _LoweredPart:
    from relay.backend.lower import lower_primitive

    fast = bool(target.fast_math)
    ldexp = target.vector_ldexp
    entries: list[tuple[int, Function, str, Any]] = []
    prims: dict[str, Any] = {}
    host: set[str] = set()
    start = time.perf_counter()
    for i, f in part.funcs:
        lowered = lower_primitive(f, fast_math=fast, target=target.kind, vector_ldexp=ldexp)
        name = kernel_name(f, lowered.op_names, i)
        entries.append((i, f, name, lowered))
        if target.is_gpu:
            prim = _gpu_schedule_or_none(lowered, target, name)
            if prim is None:
                host.add(name)
            else:
                prims[name] = _named(prim, name)
        else:
            prims[name] = _cpu_prim(lowered, name)
    return _LoweredPart(part, entries, prims, host, time.perf_counter() - start)


def _compile_lowered(
    lowered_part: _LoweredPart, target: Target
) -> tuple[list[tuple[int, Kernel]], Any]:
    part, entries, host = lowered_part.part, lowered_part.entries, lowered_part.host
    fast = bool(target.fast_math)
    ldexp = target.vector_ldexp
    start = time.perf_counter()
    if target.is_gpu:
        ex = host_ex = _compile_gpu(lowered_part.prims, host, part, target)
        if host:  # lowered again for the CPU (constants are folded differently for CUDA)
            entries = [
                (i, f, name, _host_lowering(f, fast, ldexp) if name in host else lowered)
                for i, f, name, lowered in entries
            ]
            cpu = {name: _cpu_prim(lw, name) for _, _, name, lw in entries if name in host}
            host_ex = _compile_tvm(cpu, part, target.host)
            if ex is None:
                ex = host_ex
            else:
                ex.mod.import_module(host_ex.mod)
    else:
        host_ex = ex = _compile_tvm(lowered_part.prims, part, target)
    kernels: list[tuple[int, Kernel]] = []
    for i, _, name, lowered in entries:
        on_cpu = not target.is_gpu or name in host
        kernel = Kernel(
            name,
            lowered.inputs,
            lowered.outputs,
            lowered.constants,
            lowered.anchor,
            checks=lowered.checks,
            shape_vars=lowered.shape_vars,
            device="cpu" if on_cpu else "cuda",
        )
        if on_cpu:  # (LLVM's code generation happens at the first lookup; a GPU kernel is
            kernel.func = host_callable(kernel, host_ex[name])  # (where it can run: bind)
        kernels.append((i, kernel))
    flags.debug_print(
        2,
        f"compiled {len(entries)} kernels for {target} at -O{part.opt_level}: lowering and "
        f"schedules {lowered_part.seconds:.3f} s, compilation {time.perf_counter() - start:.3f} s",
    )
    return kernels, ex


def _host_lowering(f: Function, fast: bool, vector_ldexp: bool) -> Any:
    from relay.backend.lower import lower_primitive

    return lower_primitive(f, fast_math=fast, vector_ldexp=vector_ldexp)


def _cpu_prim(lowered: Any, name: str) -> Any:
    from relay.backend.schedule import schedule_cpu

    return _named(unaligned_params(schedule_cpu(lowered)), name)


def _named(prim: Any, name: str) -> Any:
    return prim.with_attr("global_symbol", name)


def _gpu_schedule_or_none(lowered: Any, target: Target, name: str) -> Any:
    """``lowered`` scheduled for the GPU, or None where no GPU schedule applies (the kernel
    then runs on the host: mixed placement, docs/backend.md)."""
    from relay.backend.schedule.gpu import NoGPUSchedule, schedule_gpu

    try:
        return schedule_gpu(lowered, target, name)
    except NoGPUSchedule as err:
        flags.debug_print(1, f"{err.message}: it runs on the CPU")
        return None


def _compile_tvm(prims: dict[str, Any], part: _Part, target: Target) -> Any:
    """One ``tvm.compile`` of ``prims`` for ``target`` (a TVM failure is a CompileError
    naming the kernels)."""
    from relay.backend.runtime import tvm

    tvm_ = tvm()
    config = {} if part.checked else {"tirx.disable_assert": True}
    device: Any = contextlib.nullcontext()
    if target.is_gpu:
        from relay.backend.cuda import arch_scope

        device = arch_scope(target.arch)  # nvcc compiles the CUDA C for this architecture
    try:
        with tvm_.transform.PassContext(config=config), device:  # thread-local in TVM
            ex = tvm_.compile(tvm_.IRModule(prims), target=target.tvm_target(part.opt_level))
        if target.is_gpu:
            from relay.backend.cuda import device_code

            if prims and not ex.mod.imports:
                raise CompileError(f"no device code was generated for {', '.join(prims)}")
            ex.relay_device_code = device_code(ex, target.arch, device.compiled)
    except CompileError:
        raise
    except Exception as err:  # TVM's own failure: report it as ours, with the kernels' names
        failed = getattr(device, "errors", None)
        if failed:  # nvcc's, raised in TVM's callback and turned into TVM's error
            raise failed[0] from None
        raise CompileError(f"TVM failed to compile {', '.join(prims)}: {err}") from err
    return ex


def _compile_gpu(prims: dict[str, Any], host: set[str], part: _Part, target: Target) -> Any:
    """The GPU kernels ``prims`` compiled together; where TVM fails on them, each alone,
    and a kernel that TVM cannot compile for the GPU joins ``host`` (it runs on the CPU).
    None when no kernel is left for the GPU."""
    if not prims:
        return None
    try:
        return _compile_tvm(prims, part, target)
    except CompileError as err:
        if not err.message.startswith("TVM failed"):
            raise
    kept: dict[str, Any] = {}
    for name, prim in prims.items():
        try:
            _compile_tvm({name: prim}, part, target)
            kept[name] = prim
        except CompileError as err:
            if not err.message.startswith("TVM failed"):
                raise
            flags.debug_print(1, f"{err.message.splitlines()[0]}: it runs on the CPU")
            host.add(name)
    return _compile_tvm(kept, part, target) if kept else None
