"""Kernels for fused functions whose shapes are known only at run time.

The schedules (:mod:`relay.backend.schedule`) tile and vectorize for static sizes, so a fused
function with a ``?`` dimension or a shape variable is not compiled ahead of time. The VM
runs it with ``invoke_dynamic``: at a call, the arguments' shapes and dtypes are the key;
the first call with a key *specializes* the function -- its parameters get the concrete
types and type inference computes the result's (the operators' type relations are the
shape functions, as in TVM's VM, evaluated on concrete shapes) -- and compiles the
specialized function like any other (so the disk kernel cache keeps it across processes).
Later calls with the same key run that kernel. When the result's shape depends on values,
not only on shapes (``arange`` with computed bounds), the function keeps running with its
operators' numpy references, and so does every key past :data:`MAX_SPECIALIZATIONS` per
function (a program feeding ever new shapes would otherwise compile without end).

**One kernel for every size.** Specializing pays a compilation (~50-100 ms) per new shape,
which an elementwise function does not need: its result at a position depends only on its
operands at that position. When every operator of the function is elementwise or
broadcasting (lowered by :mod:`relay.op.lowering.elemwise`), every constant is a scalar,
and each argument either has the result's shape or holds one element (a scalar operand),
the operands are seen flat, as a ``(n, 16)`` block and a tail of fewer than 16, and the
function is compiled once with ``?`` for ``n`` (:func:`relay.backend.lower.kernel_shape`):
a kernel over the block with its 16-wide rows vectorized, the same with the rows in
parallel (used from :data:`relay.backend.schedule.cpu.PARALLEL_MIN` elements on, as the
static schedules decide), and one over the tail. That is done once per function and
*signature* (which arguments are scalars, and the dtypes); a new shape then costs only the
type inference that gives the result's shape. Measured on a chain ``tanh(x * y + 1)``: the
block kernel runs at the static kernel's speed (1,024 elements 0.84 against 0.88 us,
1,048,576 elements in parallel 148 against 152 us). Reductions, products and layout
operators keep the per-shape kernels, whose schedules need the sizes (tiling, packing).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any as _Any

import numpy as np

from relay import flags
from relay.backend.compiler import Kernel, compile_functions
from relay.backend.lower import is_static, static_shape
from relay.backend.runtime import aligned_empty, as_kernel_array
from relay.backend.target import Target
from relay.errors import RelayError
from relay.ir.expr import Call, Constant, Expr, Function, Op, Var
from relay.ir.functor import ExprVisitor
from relay.ir.types import Any, TensorType, Type

MAX_SPECIALIZATIONS = 16
"""Kernels compiled per fused function for different argument shapes."""


@dataclass
class Specialized:
    """A fused function's kernel for one key: the kernel, its constant inputs (contiguous)
    and the type of its result (a tensor or a tuple of them)."""

    kernel: Kernel
    extra: tuple[_Any, ...]
    result: Type

    def run(self, args: tuple[_Any, ...], outs: list[_Any]) -> None:
        """Compute into ``outs`` (the result's tensors)."""
        _call(self.kernel, self.extra, [*args, *outs])


@dataclass
class Elementwise:
    """An elementwise function's kernels for every size (see the module docstring): over
    the ``(n, 16)`` block serially and in parallel, and over the tail; ``full`` tells, per
    argument, whether it has the result's shape (else it is a scalar operand)."""

    block: Kernel
    parallel: Kernel
    tail: Kernel
    full: tuple[bool, ...]


@dataclass
class Flat:
    """The result of a lookup that runs an :class:`Elementwise` function's kernels."""

    kernels: Elementwise
    result: Type

    def run(self, args: tuple[_Any, ...], outs: list[_Any]) -> None:
        """Compute into ``outs`` (one tensor of the result's shape): the block, then the
        tail."""
        from relay.backend.schedule.cpu import PARALLEL_MIN

        k = self.kernels
        (out,) = outs
        flat_out = out.reshape(-1)
        n = flat_out.size
        rows, left = divmod(n, VECTOR)
        operands = [
            np.ascontiguousarray(a).reshape(-1) if full else np.asarray(a).reshape(())
            for a, full in zip(args, k.full, strict=True)
        ]
        if rows:
            cut = rows * VECTOR
            block = [
                a[:cut].reshape(rows, VECTOR) if full else a
                for a, full in zip(operands, k.full, strict=True)
            ]
            kernel = k.parallel if n >= PARALLEL_MIN else k.block
            _call(kernel, _extra(kernel), [*block, flat_out[:cut].reshape(rows, VECTOR)])
        if left:
            cut = rows * VECTOR
            tail = [a[cut:] if full else a for a, full in zip(operands, k.full, strict=True)]
            _call(k.tail, _extra(k.tail), [*tail, flat_out[cut:]])


VECTOR = 16
"""The width of the block's rows: the vector the block kernel computes at a time."""


def _extra(kernel: Kernel) -> tuple[_Any, ...]:
    return tuple(as_kernel_array(np.asarray(c)) for c in kernel.constants)


def _call(kernel: Kernel, extra: tuple[_Any, ...], arrays: list[_Any]) -> None:
    """Run ``kernel`` on its inputs and outputs ``arrays`` (constants after the inputs),
    raising the error of a failed run-time check."""
    n_in = len(kernel.inputs) - len(extra)
    checks = [aligned_empty((1,), np.int32) for _ in kernel.checks]
    kernel.func(*arrays[:n_in], *extra, *arrays[n_in:], *checks)
    if checks:
        kernel.raise_failed(checks)


class DynamicKernels:
    """The specialized kernels of a program's dynamic fused functions (one per program,
    shared by its threads' machines)."""

    def __init__(self, target: Target | None) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._kernels: dict[tuple[int, tuple[_Any, ...]], Specialized | Flat | None] = {}
        self._count: dict[int, int] = {}
        self._signatures: dict[tuple[_Any, ...], Elementwise | None] = {}
        self.compiled = 0
        """Compilations so far: a kernel for a shape, or an elementwise function's kernels
        for every size (for tests and tools)."""

    def lookup(
        self, index: int, func: Function, args: tuple[_Any, ...]
    ) -> Specialized | Flat | None:
        """How fused function ``index`` (``func``) runs on ``args``: its kernels for every
        size, or its kernel for their shapes (compiled on the first call with them); None
        when the references must run."""
        if self.target is None or any(type(a) is not np.ndarray for a in args):
            return None
        key = (index, tuple([(a.shape, a.dtype.str) for a in args]))
        try:
            return self._kernels[key]
        except KeyError:
            pass
        with self._lock:
            if key in self._kernels:
                return self._kernels[key]
            found: Specialized | Flat | None = None
            specialized = specialize(func, args)
            if specialized is not None:
                result = specialized.checked_type.ret_type  # type: ignore[attr-defined]
                elementwise = self._elementwise(index, func, args, result)
                if elementwise is not None:
                    found = Flat(elementwise, result)
                elif self._count.get(index, 0) < MAX_SPECIALIZATIONS:
                    self._count[index] = self._count.get(index, 0) + 1
                    found = self._compile(specialized)
                else:
                    flags.debug_print(
                        1,
                        f"{MAX_SPECIALIZATIONS} kernels for one fused function: the rest run "
                        "their references",
                    )
            self._kernels[key] = found
            return found

    def _compile(self, specialized: Function) -> Specialized:
        assert self.target is not None
        library, (symbol,) = compile_functions([specialized], self.target)
        self.compiled += 1
        kernel = library.kernels[symbol]
        return Specialized(kernel, _extra(kernel), specialized.checked_type.ret_type)  # type: ignore[attr-defined]

    def _elementwise(
        self, index: int, func: Function, args: tuple[_Any, ...], result: Type
    ) -> Elementwise | None:
        """The kernels for every size of ``func`` on arguments like ``args`` (compiled once
        per signature), or None when the function or the arguments do not allow them."""
        if not isinstance(result, TensorType):
            return None
        shape = static_shape(result)
        full = []
        for a in args:
            if a.shape == shape:
                full.append(True)
            elif a.size == 1 and a.ndim <= len(shape):
                full.append(False)
            else:
                return None
        if not any(full):
            return None
        signature = (index, tuple(full), tuple(a.dtype.str for a in args))
        if signature not in self._signatures:
            self._signatures[signature] = self._compile_elementwise(func, tuple(full))
        return self._signatures[signature]

    def _compile_elementwise(self, func: Function, full: tuple[bool, ...]) -> Elementwise | None:
        variants = []
        for shape, parallel in (((Any, VECTOR), 0), ((Any, VECTOR), 1), ((Any,), 0)):
            variant = elementwise_variant(func, full, shape, parallel)
            if variant is None:
                return None
            variants.append(variant)
        assert self.target is not None
        library, symbols = compile_functions(variants, self.target)
        self.compiled += 1
        block, parallel_block, tail = (library.kernels[s] for s in symbols)
        return Elementwise(block, parallel_block, tail, full)


def specialize(func: Function, args: tuple[_Any, ...]) -> Function | None:
    """``func`` with its parameters typed by the arrays ``args``, type-checked; None when a
    parameter is not a tensor or the result's shape is still not static (it depends on
    values)."""
    from relay.passes.inline import substitute
    from relay.typecheck.checker import infer_type

    if len(func.params) != len(args):
        return None
    params = []
    for p, a in zip(func.params, args, strict=True):
        if not isinstance(p.checked_type, TensorType):
            return None
        params.append(Var(p.name_hint, TensorType(tuple(a.shape), a.dtype.name)))
    body = substitute(func.body, dict(zip(func.params, params, strict=True)))
    try:
        typed = infer_type(Function(tuple(params), body, None, (), func.attrs, span=func.span))
        assert isinstance(typed, Function)
    except RelayError:
        return None
    return typed if is_static([typed.checked_type.ret_type]) else None  # type: ignore[attr-defined]


def elementwise_variant(
    func: Function, full: tuple[bool, ...], shape: tuple[_Any, ...], parallel: int
) -> Function | None:
    """``func`` over operands of ``shape`` (those ``full`` marks; the others scalars),
    type-checked and marked for the dynamic schedule (``Parallel``); None unless every
    operator is elementwise or broadcasting with an elementwise lowering, every constant a
    scalar, and every value of the shape or a scalar."""
    from relay.ir.attrs import Attrs
    from relay.passes.inline import substitute
    from relay.typecheck.checker import infer_type

    params = []
    for p, is_full in zip(func.params, full, strict=True):
        ty = p.checked_type
        if not isinstance(ty, TensorType):
            return None
        params.append(Var(p.name_hint, TensorType(shape if is_full else (), ty.dtype)))
    if not _elementwise_body(func.body):
        return None
    body = substitute(func.body, dict(zip(func.params, params, strict=True)))
    attrs = Attrs({**dict(func.attrs.items()), "Parallel": parallel})
    try:
        typed = infer_type(Function(tuple(params), body, None, (), attrs, span=func.span))
    except RelayError:
        return None
    assert isinstance(typed, Function)
    ok = True

    class Shapes(ExprVisitor):
        def visit_call(self, call: Call) -> None:
            nonlocal ok
            t = call.checked_type
            if not isinstance(t, TensorType) or tuple(t.shape) not in (shape, ()):
                ok = False
            super().visit_call(call)

    Shapes().visit(typed.body)
    ret = typed.checked_type.ret_type  # type: ignore[attr-defined]
    if not ok or not isinstance(ret, TensorType) or tuple(ret.shape) != shape:
        return None
    return typed


def _elementwise_body(body: Expr) -> bool:
    """Only calls of elementwise or broadcasting operators with elementwise lowerings, on
    variables, scalar constants and each other (each shared node looked at once)."""
    from relay.ir.analysis import sub_expressions
    from relay.op.registry import OpPattern, get_op

    for e in sub_expressions(body):
        if isinstance(e, Var | Op):
            continue
        if isinstance(e, Constant):
            if np.asarray(e.data).shape != ():
                return False
            continue
        if not isinstance(e, Call) or not isinstance(e.op, Op):
            return False
        opdef = get_op(e.op.name)
        rule = opdef.lowering
        if (
            opdef.pattern > OpPattern.BROADCAST
            or rule is None
            or getattr(rule, "__module__", "") != "relay.op.lowering.elemwise"
        ):
            return False
    return True
