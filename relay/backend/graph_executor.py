"""The graph executor: runs a fused dataflow function as a fixed list of kernel calls.

A function whose body is pure dataflow after fusion (parameters, constants, calls of
``Primitive=1`` functions, tuples and projections; no ``let``, control flow, closures,
references or data types) is planned once, as TVM's graph executor
(``src/runtime/graph_executor``) and its memory planner
(``src/relay/backend/graph_plan_memory.cc``) did:

1. **Slots.** Every tensor the program handles gets a slot: each flattened parameter, each
   constant, each output of each kernel call. Tuples and projections only rename slots.
2. **Steps.** Each call of a primitive function is a step: its kernel (all kernels of the
   program compiled into one library, :mod:`relay.backend.compiler`) applied to its input
   slots and its output slots, in the order the program evaluates them.
   A primitive function that only reshapes its argument (``expand_dims`` of a vector
   before a matrix product) is no kernel: its output slot shows the input's bytes in the
   new shape (a view made once when the bytes are an intermediate buffer, else at each
   call), unless it is a result.
3. **Memory plan.** The slots of intermediate results share a small set of storage
   buffers: walking the steps in order, an output takes the smallest free buffer at least
   its size (or a new one) and a buffer is freed after the last step that reads its slot
   (never before the step that writes its reuser has read it). The buffers are allocated
   once, 64-byte aligned.
4. **Results** get fresh buffers on each call, so a returned array is never overwritten by
   a later call; a result that is a parameter or a constant is copied. Buffers of earlier
   results that the caller has dropped are recycled (their reference count shows it), so a
   steady loop allocates nothing. Results of at most :data:`SMALL_RESULTS` bytes in all are
   plain new numpy arrays instead (16-byte aligned, which the kernels take).

A function whose types have shape variables, each a whole dimension of some parameter, is
planned the same way with symbolic slot types and run by :class:`SymbolicGraphExecutor`:
each call reads the variables' values from the arguments and runs the plan's *instance*
for them (static shapes, its own memory plan), with kernels compiled once for symbolic
sizes that take the values as arguments (see docs/backend.md, "Kernels of symbolic
sizes").

Arguments are checked for shape and dtype; an argument that is not C-contiguous, not
writeable or not aligned to its element size is copied into an aligned buffer, anything else
(numpy's arrays 16 bytes off a 64-byte boundary included) is passed as it is.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay import flags
from relay.backend.compiler import (
    KernelLibrary,
    cached_functions,
    compile_functions,
    has_bfloat16,
)
from relay.backend.lower import flatten_type, shape_variables, static_shape
from relay.backend.runtime import (
    ALIGNMENT,
    NOT_MATCHED,
    PLACED_BYTES,
    aligned_empty,
    numpy_dtype,
    page_placed_empty,
    passable,
)
from relay.backend.share import share_kernels
from relay.backend.target import Target
from relay.errors import CompileError, TypeCheckError
from relay.ir.dim import dim_str, evaluate, parse_dim
from relay.ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from relay.ir.types import Kind, TensorType, TupleType, Type, TypeVar, _AnyDim

Array = np.ndarray[Any, np.dtype[Any]]
Structure = int | tuple["Structure", ...]
"""A result's shape in slots: a slot index, or a tuple of structures."""


class NotDataflow(Exception):
    """The function is not static dataflow (the reason is the message)."""


@dataclass
class Step:
    """One kernel call: the kernel's symbol, the slots it reads and the slots it writes; or
    (``kernel`` empty) a reshape: the output slot is the input's bytes in another shape."""

    kernel: str
    inputs: list[int]
    outputs: list[int]
    sizes: list[int] = field(default_factory=list)
    """For a kernel of symbolic sizes: the plan's shape variables (indices into
    :attr:`GraphPlan.shape_vars`) whose values it takes after its outputs."""
    values: list[int] = field(default_factory=list)
    """For a kernel shared with steps of other sizes (:mod:`relay.backend.share`): the
    values of its shape variables that it takes after its outputs."""

    @property
    def is_alias(self) -> bool:
        """The step is a reshape that runs no kernel."""
        return not self.kernel


@dataclass
class GraphPlan:
    """A planned dataflow function (see the module docstring); serialisable as JSON plus
    the constants."""

    param_types: list[Type]
    slot_types: list[TensorType]
    input_slots: list[int]
    constants: dict[int, Array]
    steps: list[Step]
    result: Structure
    storage_of: dict[int, int] = field(default_factory=dict)
    storage_bytes: list[int] = field(default_factory=list)
    shape_vars: list[TypeVar] = field(default_factory=list)
    """The shape variables of a plan of symbolic sizes, each given by the arguments (a
    dimension of a parameter); empty for a plan of static shapes."""

    def to_json(self) -> dict[str, Any]:
        """The plan without its constants, as JSON-able data."""
        from relay.ir.printer import astext

        names = [f"s{k}" for k in range(len(self.shape_vars))]
        index = {id(v): k for k, v in enumerate(self.shape_vars)}

        def dim_json(d: Any) -> int | str:
            if isinstance(d, int):
                return d
            return dim_str(d, lambda v: names[index[id(v)]])

        def tensor_json(t: TensorType) -> list[Any]:
            return [[dim_json(d) for d in t.shape], str(t.dtype)]

        return {
            "param_types": [
                _type_to_json(t, astext)
                if not self.shape_vars
                else _symbolic_type_json(t, tensor_json)
                for t in self.param_types
            ],
            "slot_types": [tensor_json(t) for t in self.slot_types],
            "shape_vars": [[n, v.name_hint] for n, v in zip(names, self.shape_vars, strict=True)],
            "input_slots": self.input_slots,
            "constant_slots": sorted(self.constants),
            "steps": [[s.kernel, s.inputs, s.outputs, s.sizes, s.values] for s in self.steps],
            "result": self.result,
            "storage_of": [[k, v] for k, v in sorted(self.storage_of.items())],
            "storage_bytes": self.storage_bytes,
        }

    @staticmethod
    def from_json(data: dict[str, Any], constants: dict[int, Array]) -> GraphPlan:
        """The inverse of :meth:`to_json`."""
        from relay.ir.parser import parse_type

        def structure(s: Any) -> Structure:
            return s if isinstance(s, int) else tuple(structure(x) for x in s)

        variables = {n: TypeVar(hint, Kind.SHAPE) for n, hint in data.get("shape_vars", [])}

        def dim(d: Any) -> Any:
            return d if isinstance(d, int) else parse_dim(d, variables.__getitem__)

        def tensor(j: Any) -> TensorType:
            return TensorType(tuple(dim(d) for d in j[0]), j[1])

        def param(j: Any) -> Type:
            if variables and isinstance(j, list) and j[0] == "tuple":
                return TupleType(tuple(param(f) for f in j[1]))
            if variables:
                return tensor(j)
            return _type_from_json(j, parse_type)

        return GraphPlan(
            param_types=[param(t) for t in data["param_types"]],
            slot_types=[tensor(t) for t in data["slot_types"]],
            input_slots=list(data["input_slots"]),
            constants=constants,
            steps=[
                Step(k, list(i), list(o), *(list(r) for r in rest))
                for k, i, o, *rest in data["steps"]
            ],
            result=structure(data["result"]),
            storage_of={int(k): int(v) for k, v in data["storage_of"]},
            storage_bytes=list(data["storage_bytes"]),
            shape_vars=list(variables.values()),
        )

    def instance(self, sizes: Sequence[int]) -> GraphPlan:
        """This plan of symbolic sizes with its shape variables worth ``sizes``: static
        shapes, and its own memory plan."""
        values = {id(v): n for v, n in zip(self.shape_vars, sizes, strict=True)}

        def concrete(t: Type) -> Any:
            if isinstance(t, TupleType):
                return TupleType(tuple(concrete(f) for f in t.fields))
            assert isinstance(t, TensorType)
            return TensorType(tuple(evaluate(d, lambda v: values[id(v)]) for d in t.shape), t.dtype)

        plan = GraphPlan(
            [concrete(t) for t in self.param_types],
            [concrete(t) for t in self.slot_types],
            self.input_slots,
            self.constants,
            self.steps,
            self.result,
        )
        plan_memory(plan)
        return plan


def _type_to_json(t: Type, astext: Any) -> Any:
    """A parameter type as JSON: tensors and tuples as lists (read back without the text
    parser, on the path of a warm first call), anything else as text."""
    if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape):
        return ["tensor", list(t.shape), str(t.dtype)]
    if isinstance(t, TupleType):
        return ["tuple", [_type_to_json(f, astext) for f in t.fields]]
    return astext(t)


def _symbolic_type_json(t: Type, tensor_json: Any) -> Any:
    if isinstance(t, TupleType):
        return ["tuple", [_symbolic_type_json(f, tensor_json) for f in t.fields]]
    assert isinstance(t, TensorType)
    return tensor_json(t)


def _type_from_json(j: Any, parse_type: Any) -> Type:
    if isinstance(j, str):
        parsed: Type = parse_type(j)
        return parsed
    if j[0] == "tensor":
        return TensorType(tuple(j[1]), j[2])
    return TupleType(tuple(_type_from_json(f, parse_type) for f in j[1]))


def _nbytes(t: TensorType) -> int:
    return int(np.prod(static_shape(t), dtype=np.int64)) * numpy_dtype(str(t.dtype)).itemsize


def _checked(e: Expr) -> Type:
    ty = e._checked_type
    if ty is None:
        raise CompileError("the program must be type-checked before planning", e.span)
    return ty


def plan_function(func: Function) -> tuple[GraphPlan, list[Function]]:
    """The plan of a fused dataflow function, and its primitive functions (one per step,
    kernels not yet named); raises :class:`NotDataflow` for anything else."""
    slot_types: list[TensorType] = []
    constants: dict[int, Array] = {}
    steps: list[Step] = []
    prims: list[Function] = []
    aliased: list[Function] = []  # the functions of the alias steps, in order
    env: dict[int, Structure] = {}

    def new_slot(t: TensorType) -> int:
        if any(isinstance(d, _AnyDim) for d in t.shape):
            static_shape(t)  # raises: ? dimensions are the VM's
        slot_types.append(t)
        return len(slot_types) - 1

    def slots_for(ty: Type) -> Structure:
        if isinstance(ty, TensorType):
            return new_slot(ty)
        if isinstance(ty, TupleType):
            return tuple(slots_for(f) for f in ty.fields)
        raise NotDataflow(f"a value of type {ty}")

    input_slots: list[int] = []
    param_types: list[Type] = []
    for p in func.params:
        ty = p.type_annotation or _checked(p)
        param_types.append(ty)
        env[id(p)] = slots_for(ty)
        input_slots.extend(_flat(env[id(p)]))
    shape_vars = _given_variables(param_types)

    stack: list[tuple[Expr, bool]] = [(func.body, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in env:
            continue
        if isinstance(node, Call):
            callee = node.op
            if not (isinstance(callee, Function) and callee.attrs.get("Primitive")):
                raise NotDataflow("a call of something other than a primitive function")
            if not ready:
                stack.append((node, True))
                stack.extend((a, False) for a in reversed(node.args))
                continue
            ins = [s for a in node.args for s in _flat(env[id(a)])]
            out = slots_for(_checked(node))
            sizes = _sizes_of(callee, shape_vars) if shape_vars else []
            if reshape_only(callee):
                steps.append(Step("", ins, _flat(out), sizes))
                aliased.append(callee)
            else:
                steps.append(Step(str(len(prims)), ins, _flat(out), sizes))
                prims.append(callee)
            env[id(node)] = out
        elif isinstance(node, Tuple):
            if not ready:
                stack.append((node, True))
                stack.extend((f, False) for f in reversed(node.fields))
                continue
            env[id(node)] = tuple(env[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            if not ready:
                stack.append((node, True))
                stack.append((node.tuple_value, False))
                continue
            value = env[id(node.tuple_value)]
            assert isinstance(value, tuple)
            env[id(node)] = value[node.index]
        elif isinstance(node, Constant):
            ty = _checked(node)
            if not isinstance(ty, TensorType):
                raise NotDataflow("a non-tensor constant")
            slot = new_slot(ty)
            data = np.asarray(node.data, dtype=numpy_dtype(str(ty.dtype)))
            constants[slot] = _aligned_copy(data)
            env[id(node)] = slot
        elif isinstance(node, Var):
            raise NotDataflow(f"the free variable %{node.name_hint}")
        else:
            raise NotDataflow(type(node).__name__)
    result = env[id(func.body)]
    # a reshape whose result is returned runs its kernel: results never share memory
    returned = set(_flat(result))
    for step, callee in zip([s for s in steps if s.is_alias], aliased, strict=True):
        if returned & set(step.outputs):
            step.kernel = str(len(prims))
            prims.append(callee)
    plan = GraphPlan(param_types, slot_types, input_slots, constants, steps, result)
    plan.shape_vars = shape_vars
    if not shape_vars:
        plan_memory(plan)
    return plan, prims


def _given_variables(param_types: Sequence[Type]) -> list[TypeVar]:
    """The shape variables of a function's parameter types, each of which must be a whole
    dimension of some parameter (so the arguments give its value): NotDataflow if not."""
    variables = shape_variables(param_types)
    bare = {id(d) for ty in param_types for t in flatten_type(ty) for d in t.shape}
    for v in variables:
        if id(v) not in bare:
            raise NotDataflow(
                f"the shape variable {v.name_hint}, which no argument's dimension gives"
            )
    return variables


def _sizes_of(callee: Function, shape_vars: list[TypeVar]) -> list[int]:
    """The indices in ``shape_vars`` of a primitive function's shape variables, in the order
    its kernel takes them (:func:`relay.backend.lower.shape_variables`)."""
    mine = shape_variables([*(_checked(p) for p in callee.params), _checked(callee.body)])
    out = []
    for v in mine:
        k = next((k for k, u in enumerate(shape_vars) if u is v), None)
        if k is None:
            raise NotDataflow(
                f"the shape variable {v.name_hint}, which no argument's dimension gives"
            )
        out.append(k)
    return out


_RESHAPES = frozenset({"reshape", "squeeze", "expand_dims", "reshape_like", "nn.batch_flatten"})


def reshape_only(func: Function) -> bool:
    """``func`` only reshapes its one tensor parameter (row-major order is kept, so its
    result is the parameter's bytes): TVM's ``relay.reshape_only`` functions, which its
    graph executor also ran as no-ops."""
    if len(func.params) != 1 or not isinstance(func.params[0].checked_type, TensorType):
        return False
    node: Expr = func.body
    while isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in _RESHAPES:
        node = node.args[0]
    return node is func.params[0] and isinstance(func.body, Call)


def alias_root(plan: GraphPlan) -> dict[int, int]:
    """For each slot an alias step writes, the slot whose bytes it shows (never an alias)."""
    root: dict[int, int] = {}
    for step in plan.steps:
        if step.is_alias:
            src = step.inputs[0]
            root[step.outputs[0]] = root.get(src, src)
    return root


def alias_step(
    plan: GraphPlan,
    root: dict[int, int],
    step: Step,
    template: list[Any],
    shape: tuple[int, ...],
    view: Callable[[Any, tuple[int, ...]], Any],
) -> tuple[None, tuple[int, int], tuple[int, ...]] | None:
    """An executor's handling of alias ``step`` (a reshape) of ``shape``: when the bytes it
    shows are fixed (planned storage or a constant; ``root`` from :func:`alias_root`), its
    ``view`` of the source is put in ``template`` once and None is returned; otherwise
    (an argument, a result) the step to run at each call, ``(None, (source, target),
    shape)``."""
    src, dst = step.inputs[0], step.outputs[0]
    if root[dst] in plan.storage_of or root[dst] in plan.constants:
        template[dst] = view(template[src], shape)
        return None
    return (None, (src, dst), shape)


def _flat(s: Structure) -> list[int]:
    if isinstance(s, int):
        return [s]
    return [x for f in s for x in _flat(f)]


def _aligned_copy(a: Array) -> Array:
    out = aligned_empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def plan_memory(plan: GraphPlan) -> None:
    """Assign the intermediate slots to shared storage (see the module docstring, step 3)."""
    results = set(_flat(plan.result))
    root = alias_root(plan)
    last_use: dict[int, int] = {}
    for i, step in enumerate(plan.steps):
        for s in step.inputs:
            last_use[root.get(s, s)] = i  # a read of an alias reads the bytes it shows
    free: list[int] = []  # storage ids
    sizes: list[int] = []
    storage_of: dict[int, int] = {}
    for i, step in enumerate(plan.steps):
        if step.is_alias:
            continue  # no storage of its own
        for s in step.outputs:
            if s in results:
                continue  # results get fresh buffers on every call
            need = _nbytes(plan.slot_types[s])
            fits = [sid for sid in free if sizes[sid] >= need]
            if fits:
                sid = min(fits, key=lambda k: sizes[k])
                free.remove(sid)
            elif free:  # grow the largest free buffer rather than add one
                sid = max(free, key=lambda k: sizes[k])
                free.remove(sid)
                sizes[sid] = need
            else:
                sid = len(sizes)
                sizes.append(need)
            storage_of[s] = sid
        for s in {root.get(x, x) for x in step.inputs} | set(step.outputs):
            sid_ = storage_of.get(s)
            if sid_ is not None and last_use.get(s, -1) <= i and sid_ not in free:
                free.append(sid_)
    plan.storage_of = storage_of
    plan.storage_bytes = sizes


SMALL_RESULTS = 4096
"""Bytes of results (all of a call's together) below which they are fresh numpy arrays
rather than views of a recycled chunk (step 4 of the module docstring)."""


class GraphExecutor:
    """Runs a :class:`GraphPlan` with the kernels of a :class:`KernelLibrary`."""

    def __init__(
        self,
        plan: GraphPlan,
        library: KernelLibrary,
        sizes: Sequence[int] = (),
        shared: SharedMemory | None = None,
    ) -> None:
        """``sizes``: the values of a symbolic plan's shape variables, for an instance of it
        (:meth:`GraphPlan.instance`), which takes its buffers from ``shared``."""
        self.plan = plan
        self.library = library
        library.bind()
        slot_types = plan.slot_types
        self._dtypes = [numpy_dtype(str(t.dtype)) for t in slot_types]
        self._shapes = [static_shape(t) for t in slot_types]
        if shared is None:
            storage = [aligned_empty((n,), np.uint8) for n in plan.storage_bytes]
        else:  # carved from memory the instances of a symbolic plan share
            offsets, total = _chunk_layout(plan.storage_bytes)
            arena = shared.arena(total)
            storage = [arena[o : o + n] for o, n in zip(offsets, plan.storage_bytes, strict=True)]
        template: list[Any] = [None] * len(slot_types)
        for slot, sid in plan.storage_of.items():
            n = _nbytes(slot_types[slot])
            if n:
                view = storage[sid][:n].view(self._dtypes[slot]).reshape(self._shapes[slot])
            else:
                view = aligned_empty(self._shapes[slot], self._dtypes[slot])
            template[slot] = view
        for slot, data in plan.constants.items():
            template[slot] = data
        self._template = template
        self._storage = storage
        # (kernel, argument slots, checks), or for a reshape of a value that changes from
        # call to call (an argument, a result) (None, (source, target), shape)
        self._steps: list[tuple[Any, tuple[int, ...], Any]] = []
        root = alias_root(plan)
        for step in plan.steps:
            if step.is_alias:
                shape = self._shapes[step.outputs[0]]
                run = alias_step(plan, root, step, template, shape, lambda a, s: a.reshape(s))
                if run is not None:
                    self._steps.append(run)
                continue
            kernel = library.kernels[step.kernel]
            args, checked = kernel_call(
                step, kernel, template, _aligned_copy, lambda: aligned_empty((1,), np.int32), sizes
            )
            self._steps.append((kernel.func, args, checked))
        self._views = [step for step in self._steps if step[0] is None]  # made at each call
        self._driver = self._driver_call(library, template, sizes)
        # (slot, shape, dtype, empty): an empty argument is always staged (compact strides)
        self._inputs = [
            (slot, self._shapes[slot], self._dtypes[slot], 0 in self._shapes[slot])
            for slot in plan.input_slots
        ]
        self._staged_always = any(empty for _, _, _, empty in self._inputs)
        # aligned buffers that the arguments a kernel cannot take (see passable) are copied into
        self._staging: dict[int, Array] = {}
        results = _flat(plan.result)
        written = {s for step in plan.steps for s in step.outputs}
        fresh = [s for s in dict.fromkeys(results) if s in written]
        self._copied = [s for s in dict.fromkeys(results) if s not in written]
        offsets, self._fresh_bytes = _chunk_layout([_nbytes(slot_types[s]) for s in fresh])
        self._fresh = [
            (s, off, _nbytes(slot_types[s]), self._dtypes[s], self._shapes[s])
            for s, off in zip(fresh, offsets, strict=True)
        ]
        # (memory owner, result chunk): chunks of this size, shared by a symbolic plan's instances
        self._recycle: list[tuple[Array, Array]] = (
            [] if shared is None else shared.recycle.setdefault(self._fresh_bytes, [])
        )
        # small results are plain new arrays: cheaper than carving views from a recycled
        # chunk (~0.8 us a call), and too small for page faults to matter
        self._small = (
            [(slot, shape, dtype) for slot, _, _, dtype, shape in self._fresh]
            if self._fresh_bytes <= SMALL_RESULTS and all(n for _, _, n, _, _ in self._fresh)
            else None
        )
        self._lock = threading.Lock()

    def _driver_call(
        self, library: KernelLibrary, template: list[Any], sizes: Sequence[int]
    ) -> tuple[Any, list[Any], list[tuple[int, int]]] | None:
        """How this plan runs through a graph driver (:mod:`relay.backend.driver`): the
        driver, its arguments with the buffers that never change in place (TVM tensors
        made once), and the (argument, slot) pairs filled at each call. A plan of one kernel
        calls it directly. None for a plan of symbolic sizes, with run-time checks, or with
        kernels that do not all run on this CPU."""
        steps = [s for s in self.plan.steps if not s.is_alias]
        calls = [(func, idx, checked) for func, idx, checked in self._steps if func is not None]
        if (
            not calls
            or sizes
            or any(checked is not None for _, _, checked in calls)
            or any(library.kernels[s.kernel].device != "cpu" for s in steps)
            or any(has_bfloat16(library.kernels[s.kernel]) for s in steps)
        ):
            return None  # (bfloat16 arrays are converted by the kernels' host_callable)
        import tvm_ffi

        from relay.backend.driver import make_driver

        module = getattr(library.module, "mod", library.module)
        if not all(module.implements_function(s.kernel, True) for s in steps):
            return None  # (kernels that are not TVM functions of the library: VTA's layers)
        if len(calls) == 1 and len(set(calls[0][1])) == len(calls[0][1]):
            run, slots = calls[0][0], list(calls[0][1])
        else:
            symbols = [(s.kernel, idx) for s, (_, idx, _) in zip(steps, calls, strict=True)]
            run, slots = make_driver(symbols, library.module)
        args: list[Any] = []
        fill: list[tuple[int, int]] = []
        for k, slot in enumerate(slots):
            value = template[slot]
            if value is None:  # an input, a result, or a view of one: given at each call
                fill.append((k, slot))
                args.append(None)
                continue
            try:
                args.append(tvm_ffi.from_dlpack(value, require_alignment=0))
            except Exception:  # (read-only: converted at each call, as the loop does)
                args.append(value)
        return run, args, fill

    def _chunk(self, slots: list[Any]) -> Array:
        """A buffer for one call's results: a recycled one nobody else holds, or a new one,
        placed within its page as the call's first large input (``slots``: the inputs set;
        see :func:`~relay.backend.runtime.page_placed_empty`).

        Views of the buffer (the results, and anything the caller sliced from them) all
        refer to the array that owns its memory, so that array's reference count says
        whether any is still alive."""
        recycle = self._recycle
        for i in range(len(recycle)):
            # the owner is referred to by the chunk, the entry and the call: nobody else
            if sys.getrefcount(recycle[i][0]) <= 3:
                return recycle.pop(i)[1]
        arrays = (slots[slot] for slot, _, _, _ in self._inputs)
        like = next((a for a in arrays if a.nbytes >= PLACED_BYTES), None)
        return page_placed_empty(self._fresh_bytes, like)  # (small chunks: aligned only)

    def _stage(self, slot: int, a: Array) -> Array:
        """``a`` copied into the slot's aligned staging buffer."""
        buf = self._staging.get(slot)
        if buf is None:
            buf = self._staging[slot] = aligned_empty(a.shape, a.dtype)
        np.copyto(buf, a)
        return buf

    def run_flat(self, flat: Sequence[Any], what: str = "the function") -> Any:
        """Run on flattened arguments; the result in the program's structure."""
        slots = list(self._template)
        with self._lock:
            for (slot, shape, dtype, empty), a in zip(self._inputs, flat, strict=True):
                if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                    a = _convert(a, shape, dtype, what)
                if empty or not passable(a):
                    a = self._stage(slot, a)
                slots[slot] = a
            return self._execute(slots)

    def run_matched(self, flat: Sequence[Any], what: str = "the function") -> Any:
        """:meth:`run_flat` for arguments that the caller has matched to the parameters'
        dtypes and shapes (a function's fast path, :func:`relay.frontend.function.fast_call`):
        only whether the kernels can take them as they are is checked here."""
        if self._staged_always:
            return self.run_flat(flat, what)
        slots = list(self._template)
        for (slot, _, _, _), a in zip(self._inputs, flat, strict=True):
            if type(a) is not np.ndarray or not passable(a):
                return self.run_flat(flat, what)
            slots[slot] = a
        with self._lock:
            return self._execute(slots)

    def matched_runner(self) -> Callable[..., Any]:
        """The runner of a function's fast path (:func:`relay.frontend.function.fast_call`)
        for arguments matched to the parameters' dtypes and shapes: it returns
        :data:`~relay.backend.runtime.NOT_MATCHED` for anything but numpy arrays (the call
        then takes the full path), and runs the rest with :meth:`run_matched`, or where the
        plan allows with a leaner function doing the same (:meth:`_lean_runner`)."""
        lean = self._lean_runner()
        if lean is not None:
            return lean
        generic = self.run_matched
        ndarray = np.ndarray

        def run(*flat: Any) -> Any:
            for a in flat:
                if type(a) is not ndarray:
                    return NOT_MATCHED
            if flags.get().checks:  # (the executable compares with the interpreter)
                return NOT_MATCHED
            return generic(flat)

        return run

    def _lean_runner(self) -> Callable[..., Any] | None:
        """For a plan run by its driver whose results are all small and written by its
        kernels: a runner of a few Python operations a call, which checks the arguments'
        dtypes and shapes itself (it is *exact*: a function tries it before hashing the
        arguments' types, :func:`relay.frontend.function.fast_call`). Those operations
        count: the kernels stream their data through the caches between calls, and the
        interpreter's own data and code come back from memory each time (on mlp_infer_b1,
        ~4 us of Python measured alone took 34 between the calls).

        The arguments are not kept from one call to the next as TVM tensors, though that
        saved ~1 us each on mlp_infer_b1 (2-3% of the call): an array reallocated in place
        (``resize(refcheck=False)``) would leave the tensor pointing at freed memory, and
        checking its data pointer costs ~1 us; and holding the arrays would keep a model's
        weights alive after the caller dropped them, and forbid resizing them or closing a
        memory map under them."""
        driver = self._driver
        if driver is None or self._staged_always or self._views or self._copied or not self._small:
            return None
        run, fixed, fill = driver
        slot_of_input = {slot: i for i, (slot, _, _, _) in enumerate(self._inputs)}
        result_index = {slot: j for j, (slot, _, _) in enumerate(self._small)}
        inputs_at = [(k, slot_of_input[s]) for k, s in fill if s in slot_of_input]
        results_at = [(k, result_index[s]) for k, s in fill if s in result_index]
        if len(inputs_at) + len(results_at) != len(fill) or len(results_at) != len(result_index):
            return None
        used = {i for _, i in inputs_at}
        expected = [(shape, dtype) for _, shape, dtype, _ in self._inputs]
        unused = [(i, *expected[i]) for i in range(len(self._inputs)) if i not in used]
        arity = len(self._inputs)
        small = [(shape, dtype) for _, shape, dtype in self._small]
        structure = self.plan.result
        single = len(small) == 1 and structure == self._small[0][0]
        lock = self._lock
        generic = self.run_matched
        ndarray = np.ndarray
        empty = np.empty
        current = flags.get
        entries = [(k, i, *expected[i]) for k, i in inputs_at]

        def lean(*flat: Any) -> Any:
            if len(flat) != arity or current().checks:  # (checks: the executable's call
                return NOT_MATCHED  # compares with the interpreter)
            for i, shape, dtype in unused:
                a = flat[i]
                if type(a) is not ndarray or a.shape != shape or a.dtype != dtype:
                    return NOT_MATCHED
            args = fixed.copy()
            for k, i, shape, dtype in entries:
                a = flat[i]
                if (
                    type(a) is not ndarray
                    or a.shape != shape
                    or (a.dtype is not dtype and a.dtype != dtype)
                ):
                    return NOT_MATCHED
                f = a.flags
                if not (f.c_contiguous and f.writeable and f.aligned):
                    return generic(flat)
                args[k] = a
            outs = [empty(shape, dtype) for shape, dtype in small]
            for k, j in results_at:
                args[k] = outs[j]
            with lock:
                run(*args)
            if single:
                return outs[0]
            return _build(structure, {slot: outs[j] for slot, j in result_index.items()})

        lean.exact = True  # type: ignore[attr-defined]
        return lean

    def matches(self, flat: Sequence[Any]) -> bool:
        """Whether ``flat`` are numpy arrays of exactly the parameters' dtypes and shapes."""
        return len(flat) == len(self._inputs) and all(
            type(a) is np.ndarray and a.dtype == dtype and a.shape == shape
            for a, (_, shape, dtype, _) in zip(flat, self._inputs, strict=True)
        )

    def _execute(self, slots: list[Any]) -> Any:
        """Run the steps on ``slots`` (the template with the inputs set; under the lock)."""
        if self._small is not None:
            for slot, shape, dtype in self._small:
                slots[slot] = np.empty(shape, dtype)
        elif self._fresh:
            chunk = self._chunk(slots)
            for slot, off, n, dtype, shape in self._fresh:
                if n:
                    slots[slot] = chunk[off : off + n].view(dtype).reshape(shape)
                else:
                    slots[slot] = aligned_empty(shape, dtype)
            self._recycle.append((chunk.base if chunk.base is not None else chunk, chunk))
            if len(self._recycle) > 4:
                del self._recycle[0]
        driver = self._driver
        if driver is None:
            for func, idx, checked in self._steps:
                if func is None:
                    slots[idx[1]] = slots[idx[0]].reshape(checked)
                    continue
                func(*[slots[i] for i in idx])
                if checked is not None:
                    checked[0].raise_failed(checked[1])
        else:
            run, fixed, fill = driver
            for _, idx, shape in self._views:
                slots[idx[1]] = slots[idx[0]].reshape(shape)
            args = list(fixed)
            for k, slot in fill:
                args[k] = slots[slot]
            run(*args)
        for s in self._copied:
            slots[s] = np.array(slots[s], copy=True)
        return _build(self.plan.result, slots)

    def profile(self, flat: Sequence[Any], repeat: int = 10) -> list[tuple[str, float]]:
        """Each step's kernel and its median time in milliseconds over ``repeat`` runs of
        the whole graph (for finding the kernel that costs the most)."""
        import time

        self.run_flat(flat)  # conversions, staging and first-call work out of the way
        slots = list(self._template)
        for (slot, shape, dtype, _), a in zip(self._inputs, flat, strict=True):
            a = _convert(a, shape, dtype, "profile") if type(a) is not np.ndarray else a
            slots[slot] = a if passable(a) else _aligned_copy(a)
        for slot, _, _, dtype, shape in self._fresh:
            slots[slot] = aligned_empty(shape, dtype)
        times: list[list[float]] = [[] for _ in self._steps]
        with self._lock:
            for _ in range(repeat):
                for k, (func, idx, shape) in enumerate(self._steps):
                    if func is None:
                        slots[idx[1]] = slots[idx[0]].reshape(shape)
                        continue
                    args = [slots[i] for i in idx]
                    start = time.perf_counter()
                    func(*args)
                    times[k].append(time.perf_counter() - start)
        kernels = [s for s in self.plan.steps if not s.is_alias]
        return [
            (step.kernel, sorted(t)[len(t) // 2] * 1e3)
            for step, t in zip(kernels, [t for t in times if t], strict=True)
        ]


def kernel_call(
    step: Step,
    kernel: Any,
    template: list[Any],
    constant: Callable[[Array], Any],
    flag: Callable[[], Any],
    sizes: Sequence[int],
) -> tuple[tuple[int, ...], Any]:
    """The slots a step's kernel is called with: its inputs, the constants it took out of
    its function, its outputs, its run-time checks' flags (read after the call) and, for a
    kernel of symbolic sizes, their values; the constants (made by ``constant``), flags
    (``flag()``) and values are appended to ``template``. Also (kernel, flags) when the
    kernel has checks, else None."""
    extra = []
    for c in kernel.constants:
        extra.append(len(template))
        template.append(constant(np.asarray(c)))
    flags = []
    for _ in kernel.checks:
        flags.append(len(template))
        template.append(flag())
    checked = (kernel, [template[i] for i in flags]) if flags else None
    values = []
    for n in [*(sizes[k] for k in step.sizes), *step.values]:
        values.append(len(template))
        template.append(int(n))
    return (*step.inputs, *extra, *step.outputs, *flags, *values), checked


def _chunk_layout(sizes: list[int]) -> tuple[list[int], int]:
    offsets = []
    total = 0
    for n in sizes:
        offsets.append(total)
        total += -(-max(n, 1) // ALIGNMENT) * ALIGNMENT
    return offsets, total


def _build(s: Structure, slots: list[Any] | dict[int, Any]) -> Any:
    if isinstance(s, int):
        return slots[s]
    return tuple(_build(f, slots) for f in s)


def _convert(a: Any, shape: tuple[int, ...], dtype: np.dtype[Any], what: str) -> Array:
    """A non-conforming argument: a number for a rank-0 parameter converted by
    :func:`scalar_argument`; anything else is a TypeCheckError naming the expected type."""
    arr = np.asarray(a)
    expected = f"Tensor[{shape if len(shape) != 1 else f'({shape[0]},)'}, {dtype.name}]"
    if arr.shape != shape:
        raise TypeCheckError(
            f"{what}: expected an argument of type {expected}, got an array of shape {arr.shape}"
        )
    if arr.dtype == dtype:
        return arr
    try:
        converted = scalar_argument(a if isinstance(a, int | float) else arr, dtype)
    except ValueError as err:
        raise TypeCheckError(f"{what}: expected an argument of type {expected}: {err}") from None
    if converted is not None:
        return converted
    raise TypeCheckError(
        f"{what}: expected an argument of type {expected}, got an array of dtype {arr.dtype}"
    )


def scalar_dtype(ty: object) -> str | None:
    """The dtype of ``ty`` when it is a rank-0 tensor type of a known dtype (a parameter
    that :func:`scalar_argument` converts a number for), else None."""
    from relay.ir.types import TensorType

    if isinstance(ty, TensorType) and ty.shape == () and isinstance(ty.dtype, str):
        return ty.dtype
    return None


def scalar_argument(value: object, dtype: np.dtype[Any] | str) -> Array | None:
    """``value``, a number passed for a rank-0 parameter of ``dtype``, as a 0-d array of
    that dtype; None when it is not a number or cannot take the dtype (the caller reports
    the mismatch); a ValueError saying why when it does not fit. Both a ``@relay``
    function's call and a built executable convert their arguments with this.

    A Python ``bool``, ``int`` or ``float`` is weakly typed (NEP 50), as it is inside a
    function: it takes the dtype, a float rounded to the nearest value of a float dtype
    (``0.1`` for float32; nan and inf stay). A float passed for an integer or bool dtype, an
    integer out of the dtype's range and a finite number beyond a float dtype's range (which
    numpy would make inf, with a warning) do not fit.

    A numpy scalar (``np.float64`` included, though it is a ``float``) or 0-d array keeps
    its dtype's strength: it is converted only when numpy casts its dtype to ``dtype``
    (``same_kind``) and the value stays the same (nan counts as the same), so
    ``np.float64(0.5)`` passes for float32 and ``np.float64(0.1)`` does not fit."""
    try:
        dt = numpy_dtype(dtype) if isinstance(dtype, str) else dtype
    except TypeError:  # a dtype numpy does not have: no conversion to it
        return None
    if isinstance(value, np.generic | np.ndarray):
        arr = np.asarray(value)
        if arr.ndim != 0:
            return None
        if arr.dtype == dt:
            return arr
        if not np.can_cast(arr.dtype, dt, "same_kind"):
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            converted = arr.astype(dt)
        if not np.array_equal(converted, arr, equal_nan=True):
            raise ValueError(f"the {arr.dtype} value {arr.item()} does not fit in {dt.name}")
        return converted
    if not isinstance(value, bool | int | float):
        return None
    if dt.kind in "biu":
        if isinstance(value, float):
            raise ValueError(f"cannot pass the float {value} as {dt.name}")
        low, high = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
        if not low <= value <= high:
            raise ValueError(f"{value} does not fit in {dt.name}")
        return np.asarray(value, dtype=dt)
    try:
        with np.errstate(over="ignore"):
            arr = np.asarray(value, dtype=dt)
    except OverflowError:  # an int beyond float64's range
        raise ValueError(f"{value} does not fit in {dt.name}") from None
    if np.isinf(arr) and not math.isinf(value):
        raise ValueError(f"{value} does not fit in {dt.name}")
    return arr


def build_graph(func: Function, target: Target) -> GraphExecutor | SymbolicGraphExecutor:
    """Plan, compile and load a fused dataflow function (raises :class:`NotDataflow`)."""
    return executor(*compile_plan(func, target))


def compile_plan(
    func: Function, target: Target, share: bool | None = None, ran: bool = False
) -> tuple[GraphPlan, KernelLibrary]:
    """The plan of a fused dataflow function and the library of its kernels, compiled for
    ``target``, each step naming its kernel's symbol (raises :class:`NotDataflow`; a
    kernel of symbolic sizes that cannot be compiled is NotDataflow too: the VM
    specializes such a function per shape). ``share``: whether products of several depths
    share one kernel (:mod:`relay.backend.share`; default ``RELAY_SHARE_KERNELS``);
    ``ran``: see :func:`~relay.backend.compiler.compile_functions`."""
    return compile_kernels(*plan_kernels(func, target, share), target, ran=ran)


def plan_kernels(
    func: Function, target: Target, share: bool | None = None
) -> tuple[GraphPlan, list[tuple[Function, tuple[int, ...]]]]:
    """:func:`plan_function`'s plan and, for each step's primitive function, the function
    to compile for it and its shape variables' values (see :func:`compile_plan`)."""
    plan, prims = plan_function(func)
    if share is None:
        share = flags.get().share_kernels
    if plan.shape_vars or target.kind != "llvm" or not share:
        return plan, [(f, ()) for f in prims]
    return plan, share_kernels(prims)


def compile_kernels(
    plan: GraphPlan,
    shared: list[tuple[Function, tuple[int, ...]]],
    target: Target,
    disk: bool = True,
    ran: bool = False,
    quick: bool = False,
) -> tuple[GraphPlan, KernelLibrary]:
    """``plan`` with its steps naming their kernels, and the library of the functions
    ``shared`` (:func:`plan_kernels`) compiled for ``target`` (kept in the kernel cache's
    memory, and with ``disk`` on its disk too; ``ran`` and ``quick``: see
    :func:`~relay.backend.compiler.compile_functions`)."""
    try:
        fs = [f for f, _ in shared]
        library, symbols = compile_functions(fs, target, disk, ran, quick)
    except CompileError as err:
        if not plan.shape_vars:
            raise
        raise NotDataflow(f"a kernel that needs static sizes ({err.message})") from None
    return _named(plan, shared, library, symbols)


def cached_kernels(
    plan: GraphPlan, shared: list[tuple[Function, tuple[int, ...]]], target: Target
) -> tuple[GraphPlan, KernelLibrary] | None:
    """:func:`compile_kernels`'s result where the kernel cache holds the library already,
    else None (``plan`` unchanged): nothing is compiled."""
    found = cached_functions([f for f, _ in shared], target)
    return None if found is None else _named(plan, shared, *found)


def _named(
    plan: GraphPlan,
    shared: list[tuple[Function, tuple[int, ...]]],
    library: KernelLibrary,
    symbols: list[str],
) -> tuple[GraphPlan, KernelLibrary]:
    """``plan`` with each step naming its kernel in ``library`` (``symbols``, by the index
    the step holds) and the values of its shape variables (``shared``)."""
    for step in plan.steps:
        if not step.is_alias:
            k = int(step.kernel)
            step.kernel = symbols[k]
            step.values = list(shared[k][1])
    return plan, library


def executor(plan: GraphPlan, library: KernelLibrary) -> GraphExecutor | SymbolicGraphExecutor:
    """The executor of ``plan``: of symbolic sizes or not."""
    if plan.shape_vars:
        return SymbolicGraphExecutor(plan, library)
    return GraphExecutor(plan, library)


class SharedMemory:
    """Memory the instances of a symbolic plan share (they run one at a time): one arena for
    their intermediate buffers, grown by half again when an instance needs more, and the
    recycled result buffers, by size. A new size then writes to memory already mapped
    instead of faulting in pages of its own (the MLP step of a new batch size: ~3 ms)."""

    def __init__(self) -> None:
        self._arena: Array = aligned_empty((0,), np.uint8)
        self.recycle: dict[int, list[tuple[Array, Array]]] = {}

    def arena(self, nbytes: int) -> Array:
        """An aligned buffer of at least ``nbytes`` bytes (the same one while it is enough)."""
        if self._arena.size < nbytes:
            self._arena = aligned_empty((max(nbytes, self._arena.size * 3 // 2),), np.uint8)
        return self._arena


class SymbolicGraphExecutor:
    """Runs a :class:`GraphPlan` of symbolic sizes: each call reads the shape variables'
    values from its arguments (a variable takes the size of the first dimension it is,
    and every other dimension of the parameters must then agree), and runs the plan's
    *instance* for those values (:meth:`GraphPlan.instance`: static shapes, its own memory
    plan) with the same kernels, which take the values as arguments. The instances of the
    last :data:`INSTANCES` sizes are kept; a new size costs planning (20-40 us per step),
    never a compilation. The instances' buffers come from memory they share
    (:class:`SharedMemory`), so keeping one costs only its plan."""

    INSTANCES = 32

    def __init__(
        self,
        plan: GraphPlan,
        library: KernelLibrary,
        make: Callable[[GraphPlan, tuple[int, ...], SharedMemory], Any] | None = None,
    ) -> None:
        """``make(instance, sizes, shared)``: the executor of an instance (default: a
        :class:`GraphExecutor` in the shared memory; a device's executor for a GPU)."""
        self.plan = plan
        self.library = library
        library.bind()
        self._make = make or (lambda p, sizes, shared: GraphExecutor(p, library, sizes, shared))
        self._instances: dict[tuple[int, ...], Any] = {}
        self._lock = threading.RLock()
        self._shared = SharedMemory()
        where: dict[int, tuple[int, int]] = {}  # variable -> (flat argument, axis)
        self._params = [t for ty in plan.param_types for t in flatten_type(ty)]
        for i, t in enumerate(self._params):
            for axis, d in enumerate(t.shape):
                if isinstance(d, TypeVar) and id(d) not in where:
                    where[id(d)] = (i, axis)
        self._where = [where[id(v)] for v in plan.shape_vars]

    def sizes(self, flat: Sequence[Any], what: str) -> tuple[int, ...]:
        """The shape variables' values given by the arguments ``flat``; a TypeCheckError
        when the arguments disagree with the parameters' types."""
        shapes = [np.shape(a) for a in flat]
        values: list[int] = []
        for i, axis in self._where:
            shape = shapes[i]
            if len(shape) != len(self._params[i].shape):
                self._mismatch(i, shape, what, ())
            values.append(shape[axis])
        by_var = {id(v): n for v, n in zip(self.plan.shape_vars, values, strict=True)}
        for i, t in enumerate(self._params):
            shape = shapes[i]
            if len(shape) != len(t.shape) or any(
                evaluate(d, lambda v: by_var[id(v)]) != n
                for d, n in zip(t.shape, shape, strict=True)
            ):
                self._mismatch(i, shape, what, values)
        return tuple(values)

    def _mismatch(self, i: int, shape: tuple[int, ...], what: str, values: Sequence[int]) -> None:
        t = self._params[i]
        bound = ", ".join(
            f"{v.name_hint} = {n}" for v, n in zip(self.plan.shape_vars, values, strict=False)
        )
        given = f" (with {bound})" if bound else ""
        raise TypeCheckError(
            f"{what}: expected an argument of type {t}{given}, got an array of shape {shape}"
        )

    def instance(self, sizes: tuple[int, ...]) -> Any:
        """The executor of the plan's instance for ``sizes`` (made on first use)."""
        with self._lock:
            found = self._instances.pop(sizes, None)
            if found is None:
                found = self._make(self.plan.instance(sizes), sizes, self._shared)
            self._instances[sizes] = found  # the most recent last
            while len(self._instances) > self.INSTANCES:
                del self._instances[next(iter(self._instances))]
            return found

    def run_flat(self, flat: Sequence[Any], what: str = "the function") -> Any:
        """Run on flattened arguments; the result in the program's structure (one call at a
        time: the instances share memory)."""
        sizes = self.sizes(flat, what)
        with self._lock:
            return self.instance(sizes).run_flat(flat, what)

    def profile(self, flat: Sequence[Any], repeat: int = 10) -> list[tuple[str, float]]:
        """:meth:`GraphExecutor.profile` of the arguments' instance."""
        sizes = self.sizes(flat, "profile")
        with self._lock:
            times: list[tuple[str, float]] = self.instance(sizes).profile(flat, repeat)
            return times


def flatten_args(args: Sequence[Any], types: Sequence[Type]) -> list[Any]:
    """Arguments for tuple-typed parameters taken apart, in the plan's order."""
    out: list[Any] = []
    for a, t in zip(args, types, strict=True):
        _flatten_into(a, t, out)
    return out


def _flatten_into(a: Any, t: Type, out: list[Any]) -> None:
    if isinstance(t, TupleType):
        if not isinstance(a, tuple | list) or len(a) != len(t.fields):
            raise TypeCheckError(f"expected a tuple of {len(t.fields)} values for {t}")
        for x, ft in zip(a, t.fields, strict=True):
            _flatten_into(x, ft, out)
    else:
        out.append(a)


__all__ = [
    "GraphExecutor",
    "GraphPlan",
    "NotDataflow",
    "SymbolicGraphExecutor",
    "alias_root",
    "alias_step",
    "build_graph",
    "flatten_args",
    "flatten_type",
    "plan_function",
    "scalar_argument",
    "scalar_dtype",
]
