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
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay import flags
from relay.backend.compiler import Kernel, compile_functions
from relay.backend.lower import is_static
from relay.backend.target import Target
from relay.errors import RelayError
from relay.ir.expr import Function, Var
from relay.ir.types import TensorType, Type

MAX_SPECIALIZATIONS = 16
"""Kernels compiled per fused function for different argument shapes."""


@dataclass
class Specialized:
    """A fused function's kernel for one key: the kernel, its constant inputs (contiguous)
    and the type of its result (a tensor or a tuple of them)."""

    kernel: Kernel
    extra: tuple[Any, ...]
    result: Type


class DynamicKernels:
    """The specialized kernels of a program's dynamic fused functions (one per program,
    shared by its threads' machines)."""

    def __init__(self, target: Target | None) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._kernels: dict[tuple[int, tuple[Any, ...]], Specialized | None] = {}
        self._count: dict[int, int] = {}
        self.compiled = 0
        """Kernels compiled so far (for tests and tools)."""

    def lookup(self, index: int, func: Function, args: tuple[Any, ...]) -> Specialized | None:
        """The kernel of fused function ``index`` (``func``) for ``args``, compiled on the
        first call with their shapes; None when the references must run."""
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
            found = None
            if self._count.get(index, 0) < MAX_SPECIALIZATIONS:
                self._count[index] = self._count.get(index, 0) + 1
                found = self._compile(func, args)
            else:
                flags.debug_print(
                    1,
                    f"{MAX_SPECIALIZATIONS} kernels for one fused function: the rest run "
                    "their references",
                )
            self._kernels[key] = found
            return found

    def _compile(self, func: Function, args: tuple[Any, ...]) -> Specialized | None:
        specialized = specialize(func, args)
        if specialized is None:
            return None
        assert self.target is not None
        library, (symbol,) = compile_functions([specialized], self.target)
        self.compiled += 1
        kernel = library.kernels[symbol]
        extra = tuple(np.ascontiguousarray(c) for c in kernel.constants)
        return Specialized(kernel, extra, specialized.checked_type.ret_type)  # type: ignore[attr-defined]


def specialize(func: Function, args: tuple[Any, ...]) -> Function | None:
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
