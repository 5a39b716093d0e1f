"""Loops compiled to native code: a VM function that is a loop of kernel calls becomes one
TIR function, which the VM calls as a single kernel.

The frontend's loops are self-tail-recursive functions, and the VM runs them one
instruction at a time. rnn_loop's step is eight instructions and three kernel calls from
Python: ~6 us of the VM's own time per iteration against ~5 us of arithmetic. This module
compiles such a function into a *driver*, a TIR function that does what the VM would do:

1. **Eligibility.** The function's code uses only ``invoke`` (a static kernel), ``reshape``,
   ``move``, ``tuple``, ``field``, ``if``, ``jump``, ``kill``, ``ret``, tail calls of
   itself (at least one), and calls of functions already compiled this way (inner loops,
   whose drivers the outer driver calls like kernels; the search repeats until nothing
   new qualifies): no other calls, closures, data types, references, or kernels whose
   shapes are known only at run time.
2. **Register types**, by propagation to a fixpoint: from kernels' inputs and outputs,
   constants, reshapes, tuples and fields, moves, conditions (boolean scalars), and between
   a tail call's arguments and the parameters it rebinds. Every register the code uses must
   end up with a static type made of tensors and tuples of them.
3. **Storage.** A tuple is a compile-time grouping of registers (``tuple`` and ``field`` cost
   nothing). Each tensor register gets a buffer allocated once per call of the driver; a
   ``reshape`` is a view of its source's buffer. A parameter that every tail call passes
   back unchanged (the loop's captured values) is read in place from the driver's
   argument; the others are the loop's *state*, copied into state buffers on entry. The
   function's constants are constant inputs of the driver.
4. **Control.** The code generator lays out ``if`` as a conditional jump over the true
   branch, with a ``jump`` past the false branch when the ``if`` has a value; that layout
   is turned back into an if/else tree. The tree runs in a ``while`` loop: ``invoke`` is a
   packed call of the kernel (resolved once, through TVM's global function registry), a
   tail call copies the new state into the state buffers (through temporaries when a new
   value is itself held in state storage, so that simultaneous rebinding stays correct) and
   goes round again, and ``ret`` copies the result into the driver's outputs and stops.
5. **Run-time checks** (an index out of range) keep their meaning: after a kernel with
   checks, a failed flag is copied into the driver's own flags, one per check as a kernel
   has them, and the driver stops, so the VM raises the same error with the same span.

TVM's ahead-of-time executor makes the same move for dataflow graphs, replacing the graph
executor's interpretation with generated code; Nimble (Shen et al., MLSys 2021) keeps
dynamic control on a VM, as the rest of this VM does. The driver's overhead per iteration
is that of its packed calls, ~20 ns each, instead of the VM's ~0.5 us per instruction.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay.backend.compiler import Kernel, KernelLibrary
from relay.backend.lower import flatten_type, is_static, static_shape
from relay.backend.runtime import as_kernel_array
from relay.backend.target import Target
from relay.backend.vm.isa import Instruction, KernelCall, Opcode, VMProgram
from relay.errors import CompileError
from relay.ir.expr import Function
from relay.ir.types import TensorType


@dataclass(frozen=True)
class Leaf:
    """A tensor register's type: a static shape and a dtype."""

    shape: tuple[int, ...]
    dtype: str


RegType = Leaf | tuple["RegType", ...]

_ALLOWED = frozenset(
    {
        Opcode.INVOKE,
        Opcode.RESHAPE,
        Opcode.MOVE,
        Opcode.TUPLE,
        Opcode.FIELD,
        Opcode.IF,
        Opcode.JUMP,
        Opcode.KILL,
        Opcode.RET,
        Opcode.TAIL_CALL,
    }
)


def leaves(t: RegType) -> list[Leaf]:
    """The tensors of ``t``, in order."""
    if isinstance(t, Leaf):
        return [t]
    return [x for f in t for x in leaves(f)]


@dataclass
class LoopPlan:
    """A function found compilable: its register types, and what its driver takes."""

    function: int
    symbol: str
    types: dict[int, RegType]
    result: RegType
    inputs: list[int]
    """The registers passed to the driver: the function's captured values and parameters
    (each flattened into its tensors); its constants are the driver's own."""
    invariant: set[int] = field(default_factory=set)
    """Parameters every tail call passes back unchanged (read in place)."""


class _NotALoop(Exception):
    """The function cannot be compiled into a driver."""


# -- analysis ---------------------------------------------------------------------------------------


def find_loops(program: VMProgram, prims: list[Function]) -> list[LoopPlan]:
    """The functions of ``program`` that compile into drivers (see the module docstring,
    steps 1 and 2), callees before their callers; ``prims[k]`` is the primitive function of
    ``program.kernels[k]``. A loop may call a function already planned (an inner loop):
    the search repeats until no new function qualifies."""
    plans: dict[int, LoopPlan] = {}
    loops = [
        index
        for index, f in enumerate(program.functions)
        if any(ins[0] == Opcode.TAIL_CALL and ins[1] == index for ins in f.code)
    ]
    found = True
    while found:
        found = False
        for index in loops:
            if index in plans:
                continue
            try:
                types, result = _register_types(program, prims, index, plans)
            except _NotALoop:
                continue
            f = program.functions[index]
            arity = list(range(f.arity))
            invariant = {
                r
                for r in arity
                if all(
                    ins[2][r] == r
                    for ins in f.code
                    if ins[0] == Opcode.TAIL_CALL and ins[1] == index
                )
            }
            symbol = f"loop_{_symbol_part(f.name)}_{index}"
            plans[index] = LoopPlan(index, symbol, types, result, arity, invariant)
            found = True
    return list(plans.values())


def _symbol_part(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:48]


def _constant_type(value: Any) -> RegType:
    if isinstance(value, np.ndarray):
        return Leaf(tuple(int(d) for d in value.shape), str(value.dtype))
    if isinstance(value, tuple):
        return tuple(_constant_type(v) for v in value)
    raise _NotALoop


def _leaf(t: TensorType) -> Leaf:
    return Leaf(static_shape(t), str(t.dtype))


def _register_types(
    program: VMProgram, prims: list[Function], index: int, plans: dict[int, LoopPlan]
) -> tuple[dict[int, RegType], RegType]:
    f = program.functions[index]
    types: dict[int, RegType] = {}
    result: list[RegType] = []
    changed = True

    def unify(r: int, t: RegType) -> None:
        nonlocal changed
        found = types.get(r)
        if found is None:
            types[r] = t
            changed = True
        elif found != t:
            raise _NotALoop

    for r, k in f.constants.items():
        types[r] = _constant_type(program.constants[k])
    kernel_inputs: dict[int, list[Leaf]] = {}
    used: set[int] = set()
    for ins in f.code:
        op = ins[0]
        if op == Opcode.CALL:
            if ins[2] not in plans:
                raise _NotALoop
            used.update(ins[3])
            continue
        if op not in _ALLOWED or (op == Opcode.TAIL_CALL and ins[1] != index):
            raise _NotALoop
        if op == Opcode.INVOKE:
            k = ins[1]
            if program.kernels[k].outputs and any(0 in s for s, _ in program.kernels[k].outputs):
                raise _NotALoop  # an empty tensor: nothing to gain, and no buffer to make
            params = [p.checked_type for p in prims[k].params]
            if not is_static(params):
                raise _NotALoop
            kernel_inputs[k] = [_leaf(t) for p in params for t in flatten_type(p)]
            used.update(ins[2])
        elif op in (Opcode.RESHAPE, Opcode.MOVE, Opcode.FIELD):
            used.add(ins[2])
        elif op == Opcode.TUPLE:
            used.update(ins[2])
        elif op in (Opcode.IF, Opcode.RET):
            used.add(ins[1])
        elif op == Opcode.TAIL_CALL:
            used.update(ins[2])
    if used & set(f.globals):
        raise _NotALoop
    while changed:
        changed = False
        for ins in f.code:
            op = ins[0]
            if op == Opcode.INVOKE:
                k, args, outs = ins[1], ins[2], ins[3]
                wanted = kernel_inputs[k]
                if len(args) != len(wanted):
                    raise _NotALoop
                for a, t in zip(args, wanted, strict=True):
                    unify(a, t)
                for o, (shape, dtype) in zip(outs, program.kernels[k].outputs, strict=True):
                    unify(o, Leaf(tuple(shape), dtype))
            elif op == Opcode.RESHAPE:
                src = types.get(ins[2])
                if src is not None:
                    if not isinstance(src, Leaf):
                        raise _NotALoop
                    unify(ins[1], Leaf(tuple(ins[3]), src.dtype))
            elif op == Opcode.MOVE:
                if ins[2] in types:
                    unify(ins[1], types[ins[2]])
                if ins[1] in types:
                    unify(ins[2], types[ins[1]])
            elif op == Opcode.TUPLE:
                dst, parts = ins[1], ins[2]
                if all(p in types for p in parts):
                    unify(dst, tuple(types[p] for p in parts))
                whole = types.get(dst)
                if whole is not None:
                    if isinstance(whole, Leaf) or len(whole) != len(parts):
                        raise _NotALoop
                    for p, part in zip(parts, whole, strict=True):
                        unify(p, part)
            elif op == Opcode.FIELD:
                group = types.get(ins[2])
                if group is not None:
                    if isinstance(group, Leaf) or ins[3] >= len(group):
                        raise _NotALoop
                    unify(ins[1], group[ins[3]])
            elif op == Opcode.IF:
                unify(ins[1], Leaf((), "bool"))
            elif op == Opcode.CALL:  # an inner loop, compiled: its driver's signature
                callee = plans[ins[2]]
                for i, a in enumerate(ins[3]):
                    unify(a, callee.types[i])
                unify(ins[1], callee.result)
            elif op == Opcode.TAIL_CALL:
                for param, a in enumerate(ins[2]):
                    if a in types:
                        unify(param, types[a])
                    if param in types:
                        unify(a, types[param])
            elif op == Opcode.RET and ins[1] in types:
                returned = types[ins[1]]
                if not result:
                    result.append(returned)
                    changed = True
                elif result[0] != returned:
                    raise _NotALoop
    if not result or not all(r in types for r in used | set(range(f.arity))):
        raise _NotALoop
    return types, result[0]


# -- the driver ---------------------------------------------------------------------------------


Value = Any  # a TIR buffer, or a tuple of values
"""What a register holds in the driver."""


class _Driver:
    """Builds one driver's TIR function (see the module docstring, steps 3 to 5)."""

    def __init__(
        self,
        plan: LoopPlan,
        program: VMProgram,
        kernels: dict[str, Kernel],
        names: dict[str, str],
        inner: dict[int, str],
    ) -> None:
        from relay.backend.runtime import tvm

        self.tirx = tvm().tirx
        self.plan = plan
        self.program = program
        self.fn = program.functions[plan.function]
        self.kernels = kernels
        self.names = names  # kernel symbol -> its name in TVM's global registry
        self.inner = inner  # function index -> the symbol of its driver (inner loops)
        self.params: list[Any] = []
        self.allocs: list[Any] = []  # statements declaring buffers, run once per call
        self.base: dict[Any, Any] = {}  # a buffer -> the buffer owning its storage
        self.values: dict[int, Value] = {}
        self.counter = 0
        self.constants: list[np.ndarray[Any, Any]] = []
        self.constant_buffers: dict[str, list[Any]] = {}
        self.checks: list[tuple[str, Any]] = []
        self.check_offsets: dict[str, int] = {}
        self.state: dict[int, Value] = {}

    # -- buffers ----------------------------------------------------------------------------

    def _name(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def param(self, t: Leaf, stem: str) -> Any:
        from relay.backend.runtime import numpy_dtype

        align = max(1, numpy_dtype(t.dtype).itemsize)
        buf = self.tirx.decl_buffer(t.shape, t.dtype, self._name(stem), data_alignment=align)
        self.params.append(buf)
        self.base[buf] = buf
        return buf

    def alloc(self, t: Leaf, stem: str) -> Any:
        buf = self.tirx.decl_buffer(t.shape, t.dtype, self._name(stem))
        self.allocs.append(self.tirx.AllocBuffer(buf))
        self.base[buf] = buf
        return buf

    def view(self, src: Any, shape: tuple[int, ...], stem: str = "view") -> Any:
        base = self.base[src]
        buf = self.tirx.decl_buffer(
            shape,
            str(src.dtype),
            self._name(stem),
            data=base.data,
            data_alignment=int(base.data_alignment),
        )
        self.allocs.append(self.tirx.DeclBuffer(buf, data=base.data))
        self.base[buf] = base
        return buf

    def structured(self, t: RegType, make: Any) -> Value:
        if isinstance(t, Leaf):
            return make(t)
        return tuple(self.structured(f, make) for f in t)

    # -- building ---------------------------------------------------------------------------

    def build(self) -> tuple[Any, Kernel, KernelCall]:
        tirx = self.tirx
        plan, fn = self.plan, self.fn
        # inputs, then (below) the called kernels' constants, the outputs and the flags
        inputs: dict[int, Value] = {}
        for r in plan.inputs:
            inputs[r] = self.structured(plan.types[r], lambda t: self.param(t, "in"))
        # the frame's constants are the driver's own constant inputs, first
        for r in sorted(fn.constants):
            value = self.program.constants[fn.constants[r]]
            arrays = iter(_arrays(value))

            def constant(t: Leaf, arrays: Any = arrays) -> Any:
                self.constants.append(as_kernel_array(np.asarray(next(arrays))))
                return self.param(t, "const")

            self.values[r] = self.structured(plan.types[r], constant)
        kernel_order = [k for k in dict.fromkeys(map(self.callee, fn.code)) if k]
        for symbol in kernel_order:
            kernel = self.kernels[symbol]
            bufs = []
            for c in kernel.constants:
                leaf = Leaf(tuple(int(d) for d in c.shape), str(c.dtype))
                bufs.append(self.param(leaf, "const"))
                self.constants.append(c)
            self.constant_buffers[symbol] = bufs
        outputs = [self.param(t, "out") for t in leaves(plan.result)]
        for symbol in kernel_order:
            kernel = self.kernels[symbol]
            if kernel.checks:
                self.check_offsets[symbol] = len(self.checks)
                self.checks.extend(kernel.checks)
        flags = [self.param(Leaf((1,), "int32"), "flag") for _ in self.checks]
        self.flags = flags
        self.outputs = outputs
        entry: list[Any] = []
        for r in range(fn.arity):
            if r in plan.invariant:
                self.values[r] = inputs[r]
                continue
            state = self.structured(plan.types[r], lambda t: self.alloc(t, "state"))
            self.state[r] = state
            self.values[r] = state
            entry.extend(self.copy(inputs[r], state))
        self.running = tirx.decl_buffer((1,), "int32", "running")
        self.allocs.append(tirx.AllocBuffer(self.running))
        self._storage()
        zero = tirx.const(0, "int32")
        for flag in flags:
            entry.append(tirx.BufferStore(flag, zero, [tirx.const(0, "int32")]))
        entry.append(self.set_running(1))
        step = self.block(0, len(fn.code))
        cond = tirx.BufferLoad(self.running, [tirx.const(0, "int32")]) == 1
        body = [*self.allocs, *entry, tirx.While(cond, _seq(tirx, step))]
        prim = tirx.PrimFunc(self.params, _seq(tirx, body)).with_attr("global_symbol", plan.symbol)
        kernel = Kernel(
            plan.symbol,
            [_tensor_type(b) for b in self.params[: len(self.params) - len(outputs) - len(flags)]],
            [_tensor_type(b) for b in outputs],
            self.constants,
            "loop",
            checks=list(self.checks),
            calls={self.names[s]: s for s in kernel_order},
        )
        call = KernelCall(plan.symbol, [(t.shape, t.dtype) for t in leaves(plan.result)])
        return prim, kernel, call

    def callee(self, ins: Instruction) -> str:
        """The symbol of the kernel an ``invoke`` runs, or of the driver of the inner loop a
        ``call`` runs; "" for other instructions."""
        if ins[0] == Opcode.INVOKE:
            return self.program.kernels[ins[1]].symbol
        if ins[0] == Opcode.CALL:
            return self.inner[ins[2]]
        return ""

    def _storage(self) -> None:
        """A value for every register (step 3): buffers for kernel outputs and for moves'
        destinations, views for reshapes, groupings for tuples and fields."""
        types = self.plan.types
        for ins in self.fn.code:
            op = ins[0]
            if op == Opcode.INVOKE:
                for o in ins[3]:
                    if o not in self.values:
                        self.values[o] = self.alloc(types[o], "r")  # type: ignore[arg-type]
            elif op in (Opcode.MOVE, Opcode.CALL):
                if ins[1] not in self.values:
                    self.values[ins[1]] = self.structured(
                        types[ins[1]], lambda t: self.alloc(t, "r")
                    )
            elif op == Opcode.RESHAPE:
                self.values[ins[1]] = self.view(self.value(ins[2]), tuple(ins[3]))
            elif op == Opcode.TUPLE:
                self.values[ins[1]] = tuple(self.value(p) for p in ins[2])
            elif op == Opcode.FIELD:
                self.values[ins[1]] = self.value(ins[2])[ins[3]]

    def value(self, r: int) -> Value:
        try:
            return self.values[r]
        except KeyError:  # used before the code defines it: not code the generator makes
            raise CompileError(f"loop {self.fn.name}: register %{r} used before set") from None

    def flat(self, v: Value) -> list[Any]:
        if isinstance(v, tuple):
            return [b for x in v for b in self.flat(x)]
        return [v]

    def set_running(self, value: int) -> Any:
        tirx = self.tirx
        return tirx.BufferStore(self.running, tirx.const(value, "int32"), [tirx.const(0, "int32")])

    def copy(self, src: Value, dst: Value) -> list[Any]:
        """Statements copying the tensors of ``src`` into those of ``dst``."""
        out = []
        for s, d in zip(self.flat(src), self.flat(dst), strict=True):
            if s.same_as(d):
                continue
            n = int(np.prod([int(x) for x in s.shape], dtype=np.int64))
            fs, fd = self.view(s, (n,), "flat"), self.view(d, (n,), "flat")
            i = self.tirx.Var(self._name("i"), "int32")
            store = self.tirx.BufferStore(fd, self.tirx.BufferLoad(fs, [i]), [i])
            out.append(self.tirx.For(i, 0, n, self.tirx.ForKind.SERIAL, store))
        return out

    # -- control (steps 4 and 5) ---------------------------------------------------------------

    def block(self, start: int, stop: int) -> list[Any]:
        """The statements of instructions ``start`` to ``stop`` (a block of the if tree)."""
        tirx = self.tirx
        code = self.fn.code
        out: list[Any] = []
        pc = start
        while pc < stop:
            ins = code[pc]
            op = ins[0]
            if op == Opcode.IF:
                target = ins[2]
                if not pc < target <= stop:
                    raise CompileError(f"loop {self.fn.name}: unstructured jump at {pc}")
                last = code[target - 1]
                if last[0] == Opcode.JUMP and target - 1 > pc:
                    join = last[1]
                    if not target <= join <= stop:
                        raise CompileError(f"loop {self.fn.name}: unstructured jump")
                    then, else_ = self.block(pc + 1, target - 1), self.block(target, join)
                    pc = join
                else:
                    then, else_ = self.block(pc + 1, target), self.block(target, stop)
                    pc = stop
                cond = tirx.BufferLoad(self.value(ins[1]), [])
                out.append(tirx.IfThenElse(cond, _seq(tirx, then), _seq(tirx, else_)))
                continue
            if op in (Opcode.INVOKE, Opcode.CALL):
                symbol = self.callee(ins)
                if op == Opcode.INVOKE:
                    args, outs = ins[2], [self.value(o) for o in ins[3]]
                else:
                    args, outs = ins[3], self.flat(self.value(ins[1]))
                call, check_flags = self.invoke(symbol, args, outs)
                out.append(call)
                if check_flags:
                    out.append(self.checked(symbol, check_flags, self.block(pc + 1, stop)))
                    return out
            elif op == Opcode.MOVE:
                out.extend(self.copy(self.value(ins[2]), self.value(ins[1])))
            elif op == Opcode.TAIL_CALL:
                out.extend(self.rebind(ins[2]))
                return out
            elif op == Opcode.RET:
                out.extend(self.copy(self.value(ins[1]), tuple(self.outputs)))
                out.append(self.set_running(0))
                return out
            elif op == Opcode.JUMP:
                raise CompileError(f"loop {self.fn.name}: unstructured jump at {pc}")
            pc += 1
        return out

    def invoke(self, symbol: str, args: tuple[int, ...], outs: list[Any]) -> tuple[Any, list[Any]]:
        """The packed call of kernel (or inner driver) ``symbol`` on registers ``args`` into
        the buffers ``outs``, and the flags of its checks."""
        tirx = self.tirx
        kernel = self.kernels[symbol]
        check_flags = [self.alloc(Leaf((1,), "int32"), "check") for _ in kernel.checks]
        buffers = [b for a in args for b in self.flat(self.value(a))]
        buffers += self.constant_buffers[symbol]
        buffers += outs
        buffers += check_flags
        return tirx.Evaluate(tirx.call_packed(self.names[symbol], *buffers)), check_flags

    def checked(self, symbol: str, check_flags: list[Any], rest: list[Any]) -> Any:
        """Go on with ``rest`` if the kernel's checks passed, else report and stop."""
        tirx = self.tirx
        zero = tirx.const(0, "int32")
        failed = None
        report = []
        offset = self.check_offsets[symbol]
        for j, flag in enumerate(check_flags):
            load = tirx.BufferLoad(flag, [zero])
            failed = load > 0 if failed is None else tirx.Or(failed, load > 0)
            report.append(tirx.BufferStore(self.flags[offset + j], load, [zero]))
        report.append(self.set_running(0))
        assert failed is not None
        return tirx.IfThenElse(failed, _seq(tirx, report), _seq(tirx, rest) if rest else None)

    def rebind(self, args: tuple[int, ...]) -> list[Any]:
        """A tail call: the new state, copied simultaneously (through temporaries where a
        new value lives in state storage)."""
        state_bases = {self.base[b] for v in self.state.values() for b in self.flat(v)}
        first: list[Any] = []
        then: list[Any] = []
        for r, state in self.state.items():
            new = self.value(args[r])
            for s, d in zip(self.flat(new), self.flat(state), strict=True):
                if s.same_as(d):
                    continue
                if self.base[s] in state_bases:
                    leaf = Leaf(tuple(int(x) for x in s.shape), str(s.dtype))
                    temp = self.alloc(leaf, "temp")
                    first.extend(self.copy(s, temp))
                    s = temp
                then.extend(self.copy(s, d))
        return first + then


def _arrays(value: Any) -> list[Any]:
    """The arrays of a constant (an array or nested tuples of them), in order."""
    if isinstance(value, tuple):
        return [a for v in value for a in _arrays(v)]
    return [value]


def _tensor_type(buf: Any) -> TensorType:
    return TensorType(tuple(int(d) for d in buf.shape), str(buf.dtype))


def _seq(tirx: Any, stmts: list[Any]) -> Any:
    if not stmts:
        return tirx.Evaluate(tirx.const(0, "int32"))
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


# -- compiling and linking -------------------------------------------------------------------------


def registry_name(library: KernelLibrary, symbol: str) -> str:
    """The name under which a driver finds ``library``'s kernel ``symbol`` (the library's
    key names its code, so equal names always mean equal kernels)."""
    return f"relay.kernel.{library.key[:24]}.{symbol}"


def compile_loops(
    program: VMProgram, plans: list[LoopPlan], library: KernelLibrary, target: Target
) -> KernelLibrary:
    """Compile the drivers of ``plans`` (looked up in the kernel cache first), and make each
    planned function's native code an invoke of its driver. The result is a library holding
    ``library``'s kernels and the drivers."""
    from relay.backend.cache import kernel_cache
    from relay.backend.compiler import library_key
    from relay.backend.runtime import tvm

    names = {symbol: registry_name(library, symbol) for symbol in library.kernels}
    kernels = dict(library.kernels)
    inner: dict[int, str] = {}
    built = []
    texts = [library.key]
    for plan in plans:  # callees first: an inner loop's driver is a kernel of its caller's
        prim, kernel, call = _Driver(plan, program, kernels, names, inner).build()
        built.append((prim, kernel, call))
        kernels[plan.symbol] = kernel
        inner[plan.function] = plan.symbol
        # a driver's name says its code: equal drivers of different programs are one
        texts.append(prim.script())
        digest = hashlib.sha256(texts[-1].encode()).hexdigest()[:24]
        names[plan.symbol] = f"relay.loop.{digest}.{plan.symbol}"
    key = library_key(texts, target)
    cache = kernel_cache()
    combined = cache.lookup(key)
    if combined is None:
        tvm_ = tvm()
        prims = {prim.attrs["global_symbol"]: prim for prim, _, _ in built}
        try:
            ex = tvm_.compile(tvm_.IRModule(prims), target=target.tvm_target(3))
        except Exception as err:  # TVM's own failure: report it as ours
            raise CompileError(
                f"TVM failed to compile the loops {', '.join(prims)}: {err}"
            ) from err
        base = library.module
        ex.mod.import_module(base.mod if hasattr(base, "mod") else base)
        for _, kernel, _ in built:
            kernel.func = ex[kernel.name]
        combined = KernelLibrary(kernels, ex, key)
        cache.store(combined)
    combined.bind()
    for plan, (_, _, call) in zip(plans, built, strict=True):
        _link_native(program, plan, call)
    return combined


def _link_native(program: VMProgram, plan: LoopPlan, call: KernelCall) -> None:
    """Give the planned function its native code: flatten the inputs, invoke the driver,
    rebuild the result."""
    f = program.functions[plan.function]
    kernel = len(program.kernels)
    program.kernels.append(call)
    next_reg = f.num_registers
    code: list[Instruction] = []

    def fresh() -> int:
        nonlocal next_reg
        next_reg += 1
        return next_reg - 1

    def flatten(reg: int, t: RegType) -> list[int]:
        if isinstance(t, Leaf):
            return [reg]
        out = []
        for i, ft in enumerate(t):
            r = fresh()
            code.append((Opcode.FIELD, r, reg, i))
            out.extend(flatten(r, ft))
        return out

    args = [a for r in plan.inputs for a in flatten(r, plan.types[r])]
    outs = tuple(fresh() for _ in leaves(plan.result))
    code.append((Opcode.INVOKE, kernel, tuple(args), outs))
    it = iter(outs)

    def rebuild(t: RegType) -> int:
        if isinstance(t, Leaf):
            return next(it)
        parts = tuple(rebuild(ft) for ft in t)
        r = fresh()
        code.append((Opcode.TUPLE, r, parts))
        return r

    code.append((Opcode.RET, rebuild(plan.result)))
    f.native = code
    f.num_registers = next_reg
