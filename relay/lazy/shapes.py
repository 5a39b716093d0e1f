"""Symbolic dimensions for traces: compile once for every size of a dimension that varies.

A trace is compiled first for its inputs' exact shapes: static shapes give the fastest
kernels, and most traces of a program only ever see one. When the same operations come back
with inputs whose types differ only in some dimensions (the smaller last batch of an epoch,
another sequence length), those dimensions become *shape variables* and the trace is
compiled once more, for the generalized types, with kernels of symbolic sizes
(:mod:`relay.backend.lower`, :class:`relay.backend.graph_executor.SymbolicGraphExecutor`).
Every later trace of those operations whose types fit the generalized ones runs that
program: a new size costs no compilation. This is the policy of PyTorch's
``torch.compile`` (``automatic_dynamic_shapes``: a dimension is made dynamic when a
recompilation shows that it changes), applied to LazyTensor's traces.

:func:`generalize` makes the generalized types from the types compiled before and the new
ones, input by input and dimension by dimension:

* equal dimensions stay as they are (a shape variable stays a variable);
* differing static dimensions become a shape variable, one per pair of sizes (before, now):
  the batch dimension of ``x`` and ``y`` (128 before, 104 now) becomes one variable, so the
  type checker knows that they are equal and the program type-checks;
* a dimension that is 1 on either side is never generalized (1 broadcasts; a variable
  does not), and neither is anything of another rank or dtype: those traces are not
  generalized (:func:`generalize` returns None) and compile for their exact types.

A variable whose size differs between two of its uses in the new types is split (the later
use gets a variable of its own). The generalized program is used only if it compiles for
the graph executor with kernels of symbolic sizes; a trace that does not (an operator whose
kernel needs its sizes, a call of a ``@relay`` function, which is specialized to its
arguments' exact types) keeps compiling per shape, and is not tried again.
"""

from __future__ import annotations

from collections.abc import Sequence

from relay.ir.types import Kind, TensorType, Type, TypeVar


def generalize(before: Sequence[Type], now: Sequence[Type]) -> tuple[Type, ...] | None:
    """The types covering ``now`` with shape variables where they differ from ``before``
    (see the module docstring); None when there is nothing to generalize or it cannot be."""
    made: dict[tuple[object, int], TypeVar] = {}
    value_of: dict[int, int] = {}  # id of a variable -> its size in ``now``
    out: list[Type] = []
    changed = False
    for a, b in zip(before, now, strict=True):
        if a == b:
            out.append(a)
            continue
        if not _alike(a, b):
            return None
        assert isinstance(a, TensorType) and isinstance(b, TensorType)
        dims: list[object] = []
        for da, db in zip(a.shape, b.shape, strict=True):
            if not isinstance(db, int):
                return None
            if isinstance(da, TypeVar):
                if value_of.setdefault(id(da), db) == db:
                    dims.append(da)
                    continue
                key: tuple[object, int] = (id(da), db)  # split: the variable has two sizes
            elif da == db:
                dims.append(da)
                continue
            elif not isinstance(da, int) or da == 1 or db == 1:
                return None
            else:
                key = (da, db)
            var = made.get(key)
            if var is None:
                # numbered past the variables ``before`` has, so that no two share a name
                var = made[key] = TypeVar(f"d{len(made) + len(variables(before))}", Kind.SHAPE)
                value_of[id(var)] = db
            dims.append(var)
            changed = True
        out.append(TensorType(tuple(dims), b.dtype))  # type: ignore[arg-type]
    return tuple(out) if changed else None


def _alike(a: Type, b: Type) -> bool:
    """Whether ``a`` and ``b`` are tensors of one dtype and rank (which may differ in
    their dimensions only)."""
    return (
        isinstance(a, TensorType)
        and isinstance(b, TensorType)
        and a.dtype == b.dtype
        and len(a.shape) == len(b.shape)
    )


def fits(pattern: Sequence[Type], types: Sequence[Type]) -> bool:
    """Whether ``types`` (static) are an instance of ``pattern``: equal but for the shape
    variables, each of which takes one size throughout."""
    value_of: dict[int, int] = {}
    for p, t in zip(pattern, types, strict=True):
        if p == t:
            continue
        if not _alike(p, t):
            return False
        assert isinstance(p, TensorType) and isinstance(t, TensorType)
        for dp, dt in zip(p.shape, t.shape, strict=True):
            if isinstance(dp, TypeVar):
                if not isinstance(dt, int) or value_of.setdefault(id(dp), dt) != dt:
                    return False
            elif dp != dt:
                return False
    return True


def variables(types: Sequence[Type]) -> tuple[TypeVar, ...]:
    """The shape variables of ``types``, in order of first occurrence."""
    out: dict[int, TypeVar] = {}
    for t in types:
        if isinstance(t, TensorType):
            for d in t.shape:
                if isinstance(d, TypeVar):
                    out.setdefault(id(d), d)
    return tuple(out.values())
