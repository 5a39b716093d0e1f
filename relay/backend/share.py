"""Kernels shared by matrix products that differ only in their depth.

A program's matrix products are its most expensive kernels to compile: each costs LLVM
~45 ms of CPU on the 2-core project machine, whatever its sizes (TIR passes ~8 ms, LLVM's
optimization ~20, machine code ~17; docs/backend.md, "Lowering"). Products that are the
same computation on operands of different depths are common: the first two layers of an
MLP, ``relu(x @ W1^T + b1)`` with ``x`` of 784 columns and ``relu(h @ W2^T + b2)`` with
``h`` of 1024, or the backward products through them. Such a group compiles once, as one
kernel whose depth is a shape variable it takes as an argument (as TVM's Relax compiles a
kernel for symbolic shapes, and as XLA calls one library GEMM for every size), instead of
once per depth.

The algorithm, over a program's primitive functions (:func:`share_kernels`):

1. **Candidates.** A function whose operators include a matrix product, whose parameters and
   result are tensors of static shapes. Candidates with the same text without types (the
   same operators, attributes and data flow) and the same parameter ranks and dtypes form a
   group; functions of equal text are one kernel already and count once.
2. **Generalization.** Across a group's members, each parameter dimension is a tuple of
   sizes, one per member. Dimensions whose tuple is constant stay static; the others get a
   shape variable each, one per distinct tuple (two dimensions equal in every member are
   one variable: ``x``'s columns and ``W``'s in ``x @ W^T``). The function is rebuilt with
   these types and type-checked again; each member's values are its sizes of the variables.
3. **What may vary.** Only the depth: every parameter of a variable size is an operand of
   the product itself, and every operator's result, the product's included, keeps static
   dimensions. Then the schedule of the shared kernel is the one of its members (the same
   rows and columns: tiles, packing, epilogue) but for the depth, which a symbolic kernel
   does not tile (:mod:`relay.backend.schedule.matmul`). So products whose rows or columns
   would take the matrix-vector schedule (fewer than ``MI`` rows, fewer than ``VECTOR``
   columns) are not shared, nor depths beyond :data:`MAX_DEPTH`, where a panel of ``B``
   read whole along the depth leaves the L2 cache.

The graph executor shares kernels only when asked (``RELAY_SHARE_KERNELS=1``,
``relay.flags.override(share_kernels=True)``): a shared kernel compiles in the time of one
static kernel, but runs slower than its members' static kernels, which know their depth.
Measured on the 2-core machine, ``relu(x @ W^T + b)`` with (128, k) x (1024, k), 1000 calls
each: k = 1024, 1.083 ms shared against 1.024 static; k = 256, 0.241 against 0.215; k =
480 and 784, level. On mlp_infer_b128 (its two hidden layers shared) the call took 1.89-1.94
ms against 1.78-1.83, and the first call with a cold cache 98-101 ms against 141-152;
mlp_train_step (8 product kernels, 6 shared) compiled ~45 ms faster, its step within noise.
A symbolic depth split in blocks of 512 as the static schedule splits it ran at half speed
(the split's predicate in the inner loop). Why the shared kernel is slower (its assembly, k =
1024): the static kernel reads the 8 rows of its tile of ``A`` at constant displacements
from one pointer (``vbroadcastss -28672(%rcx)``), the shared one, whose row stride is the
depth, computes the 8 row addresses again at every step of ``k`` (``leaq``/``addq``, ~10
integer instructions beside the 16 FMAs). Packing the tile of ``A`` along ``k`` (its rows
interleaved) would give it constant displacements too; not tried.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Function, Op, Var
from relay.ir.types import Kind, TensorType, TypeVar

MAX_DEPTH = 2048
"""The largest depth of a shared product kernel: a panel of ``B`` (the depth times 32
floats) is read whole for each tile of rows, and stays in the L2 cache (2 MiB a core on
the project machine) up to here."""

_DIMS = re.compile(r"Tensor\[\([^()]*\), ")

SHARED = "SharedSizes"
"""The attribute that marks a shared kernel's function: its kernel is compiled without
TVM's checks of its arguments (:func:`relay.backend.compiler._parts`), since the executor
that calls it passes buffers of exactly the sizes it passes (the checks cost ~8 ms of
compilation per parameter)."""


def share_kernels(prims: Sequence[Function]) -> list[tuple[Function, tuple[int, ...]]]:
    """For each of ``prims`` (typed primitive functions of a static plan), the function to
    compile for it and the values of that function's shape variables, in the order its
    kernel takes them (:func:`relay.backend.lower.shape_variables`): ``prims[i]`` itself and
    ``()``, or a function shared with the other members of its group (see the module
    docstring)."""
    from relay.backend.compiler import function_text

    out: list[tuple[Function, tuple[int, ...]]] = [(f, ()) for f in prims]
    groups: dict[tuple[object, ...], dict[str, list[int]]] = {}
    for i, f in enumerate(prims):
        key = _candidate_key(f)
        if key is not None:
            groups.setdefault(key, {}).setdefault(function_text(f), []).append(i)
    for by_text in groups.values():
        members = [indices for indices in by_text.values()]
        while len(members) >= 2:
            found = _generalize([prims[m[0]] for m in members])
            if found is None:
                break
            shared, values = found
            kept = [k for k, v in enumerate(values) if all(n <= MAX_DEPTH for n in v)]
            if len(kept) < len(members):
                members = [members[k] for k in kept]
                continue
            for indices, v in zip(members, values, strict=True):
                for i in indices:
                    out[i] = (shared, v)
            break
    return out


def _candidate_key(f: Function) -> tuple[object, ...] | None:
    """What a function shares with the others of its group, or None for a non-candidate."""
    from relay.backend.compiler import PRODUCTS, _ops
    from relay.ir.printer import astext

    types = [p.checked_type for p in f.params]
    if not all(_static(t) for t in [*types, f.body.checked_type]) or not set(_ops(f)) & PRODUCTS:
        return None
    signature = tuple((len(t.shape), str(t.dtype)) for t in types if isinstance(t, TensorType))
    # (the parameters' and the result's annotations without their dimensions)
    return _DIMS.sub("Tensor[", astext(f, show_types=False)), signature


def _static(t: object) -> bool:
    return isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape)


def _generalize(
    funcs: Sequence[Function],
) -> tuple[Function, list[tuple[int, ...]]] | None:
    """The function shared by ``funcs`` (the same text without types; at least two sizes)
    and each one's values of its shape variables, or None where it may not be shared."""
    from relay.backend.lower import shape_variables
    from relay.errors import RelayError
    from relay.passes.inline import substitute
    from relay.typecheck.checker import infer_type

    first = funcs[0]
    variables: dict[tuple[int, ...], TypeVar] = {}
    params = []
    for k, p in enumerate(first.params):
        t = p.checked_type
        assert isinstance(t, TensorType)
        dims: list[object] = []
        for axis, d in enumerate(t.shape):
            sizes = tuple(
                f.params[k].checked_type.shape[axis]  # type: ignore[attr-defined]
                for f in funcs
            )
            if len(set(sizes)) == 1:
                dims.append(d)
            else:
                if sizes not in variables:
                    variables[sizes] = TypeVar(f"k{len(variables)}", Kind.SHAPE)
                dims.append(variables[sizes])
        params.append(Var(p.name_hint, TensorType(tuple(dims), t.dtype), span=p.span))  # type: ignore[arg-type]
    if not variables:
        return None
    body = substitute(first.body, dict(zip(first.params, params, strict=True)))
    attrs = Attrs({**dict(first.attrs.items()), SHARED: 1})
    try:
        typed = infer_type(
            Function(tuple(params), body, None, tuple(variables.values()), attrs, span=first.span)
        )
    except RelayError:
        return None
    assert isinstance(typed, Function)
    if not _only_the_depth_varies(typed):
        return None
    order = shape_variables([*(p.checked_type for p in typed.params), typed.body.checked_type])
    by_var = {id(v): sizes for sizes, v in variables.items()}
    values = [tuple(by_var[id(v)][m] for v in order) for m in range(len(funcs))]
    return typed, values


def _only_the_depth_varies(func: Function) -> bool:
    """Whether every parameter of a symbolic size is an operand of a matrix product, every
    call's result has static dimensions, and each product has the rows and columns of the
    blocked schedule (not the matrix-vector one)."""
    from relay.backend.compiler import PRODUCTS
    from relay.backend.schedule.cpu import VECTOR
    from relay.backend.schedule.matmul import MI
    from relay.ir.analysis import sub_expressions

    symbolic = {id(p) for p in func.params if not _static(p.checked_type)}
    for e in sub_expressions(func.body):
        if not isinstance(e, Call):
            continue
        out = e.checked_type
        if not _static(out):
            return False
        is_product = isinstance(e.op, Op) and e.op.name in PRODUCTS
        if any(id(a) in symbolic for a in e.args) and not is_product:
            return False
        if is_product:
            assert isinstance(out, TensorType)
            rows, cols = out.shape[-2], out.shape[-1]
            if rows < MI or cols < VECTOR:  # type: ignore[operator]
                return False
    return True


__all__ = ["MAX_DEPTH", "SHARED", "share_kernels"]
