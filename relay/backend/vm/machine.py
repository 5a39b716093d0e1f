"""The VM's interpreter loop.

A :class:`VirtualMachine` runs a :class:`~relay.backend.vm.isa.VMProgram` whose kernels
are loaded (a :class:`~relay.backend.compiler.KernelLibrary`). Before the first run the
program is *linked*: every instruction becomes a tuple holding what it needs directly (the
kernel's function, its outputs' shapes and dtypes, its constant inputs, the callee's code),
so the loop does no lookups. Frames are Python lists of registers, made from a per-function
template that already holds the function's constants; calls push ``(code, pc, registers,
destination)`` on an explicit stack (a Python list), so recursion depth is bounded by memory
(``max_stack_depth``), not by Python's recursion limit; tail calls replace the frame.

**Storage.** A kernel's outputs come from a pool of buffers per shape and dtype. A buffer
is free when nothing but the pool refers to it (its reference count says so, as in the
graph executor's result recycling): the registers that held it have been overwritten or
killed (:func:`relay.backend.vm.codegen._insert_kills`), the frame that held it has
returned, and the caller has dropped any result that was it. A loop therefore cycles
through a few buffers per shape and allocates nothing after its first iterations. Each
thread has its own machine (and pool).

Values are those of the reference interpreter (numpy arrays, tuples,
:class:`~relay.backend.interpreter.values.ConstructorValue`,
:class:`~relay.backend.interpreter.values.RefValue`) except closures, which are
:class:`VMClosure` (callable from Python).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from relay.backend.compiler import KernelLibrary
from relay.backend.interpreter.values import ConstructorValue, RefValue, format_value
from relay.backend.lower import flatten_type, rebuild_type, static_shape
from relay.backend.runtime import aligned_empty, as_kernel_array, numpy_dtype
from relay.backend.vm.dynamic import DynamicKernels
from relay.backend.vm.isa import Opcode, VMProgram
from relay.backend.vm.scalar import Defer, evaluator
from relay.errors import ExecutionError
from relay.ir.expr import Function

DEFAULT_MAX_STACK_DEPTH = 1_000_000
"""The default bound on pending calls (each frame costs about 100 bytes plus its registers)."""

POOL_DEPTH = 8
"""Buffers kept per shape and dtype; beyond that, kernel outputs are plain allocations."""

# the opcodes as plain ints for the loop
_INVOKE = int(Opcode.INVOKE)
_MOVE = int(Opcode.MOVE)
_FIELD = int(Opcode.FIELD)
_IF = int(Opcode.IF)
_JUMP = int(Opcode.JUMP)
_TAIL_CALL = int(Opcode.TAIL_CALL)
_CALL = int(Opcode.CALL)
_RET = int(Opcode.RET)
_TAG_IS = int(Opcode.TAG_IS)
_TUPLE = int(Opcode.TUPLE)
_ADT = int(Opcode.ADT)
_CLOSURE = int(Opcode.CLOSURE)
_INVOKE_CLOSURE = int(Opcode.INVOKE_CLOSURE)
_TAIL_INVOKE_CLOSURE = int(Opcode.TAIL_INVOKE_CLOSURE)
_RESHAPE = int(Opcode.RESHAPE)
_INVOKE_REF = int(Opcode.INVOKE_REF)
_REF = int(Opcode.REF)
_REF_READ = int(Opcode.REF_READ)
_REF_WRITE = int(Opcode.REF_WRITE)
_KILL = int(Opcode.KILL)
_FAIL = int(Opcode.FAIL)
_INVOKE_DYNAMIC = int(Opcode.INVOKE_DYNAMIC)
_INVOKE_MANY = 100  # an invoke with several outputs or run-time checks (linked form only)
_INVOKE_SCALAR = 101  # an invoke evaluated in Python (linked form only)
_IF_ANYWHERE = 102  # an if whose condition may be in a device's memory (device machines only)
_RESHAPE_ANYWHERE = 103  # a reshape of a value that may be in a device's memory (likewise)


def _getter(registers: tuple[int, ...]) -> Any:
    """A function taking a frame to the tuple of the values of ``registers`` (an
    ``operator.itemgetter``, which builds the tuple in C)."""
    if len(registers) >= 2:
        return itemgetter(*registers)
    if len(registers) == 1:
        (r,) = registers
        return lambda regs: (regs[r],)
    return lambda regs: ()


class VMClosure:
    """A function value of the VM: the index of a function's code in its program and the
    values it captured. Calling it from Python runs it on the calling thread's machine for
    that program (``owner`` gives it)."""

    __slots__ = ("captured", "index", "owner", "program")
    relay_function = True  # a function value for the argument checks (conform)

    def __init__(
        self,
        index: int,
        captured: tuple[Any, ...],
        program: VMProgram,
        owner: Callable[[], VirtualMachine],
    ) -> None:
        self.index = index
        self.captured = captured
        self.program = program
        self.owner = owner

    def __call__(self, *args: Any) -> Any:
        return self.owner().call_closure(self, kernel_values(args))

    def __repr__(self) -> str:
        return f"<vm closure {self.program.functions[self.index].name}>"


class _Counting(list):  # type: ignore[type-arg]
    """A function's linked code that counts the instructions fetched (profiling only)."""

    def __init__(self, code: list[Any], names: list[str], counts: dict[str, int]) -> None:
        super().__init__(code)
        self.names = names
        self.counts = counts

    def __getitem__(self, pc: Any) -> Any:
        name = self.names[pc]
        self.counts[name] = self.counts.get(name, 0) + 1
        return super().__getitem__(pc)


def _timed(
    kernel: Any,
    times: dict[str, float],
    calls: dict[str, int],
    sync: Callable[[], None] | None = None,
) -> Any:
    """A copy of ``kernel`` whose calls add their time and count to ``times`` and ``calls``
    (``sync``: waits for a device's kernels, so that a launch is timed to its end)."""
    import copy

    out = copy.copy(kernel)
    out.func = _timed_call(kernel.func, kernel.name, times, calls, sync)
    return out


def _timed_call(
    func: Callable[..., Any],
    name: str,
    times: dict[str, float],
    calls: dict[str, int],
    sync: Callable[[], None] | None = None,
) -> Callable[..., Any]:
    """``func``, adding the time and count of each call under ``name``."""
    import time

    def timed(*args: Any) -> Any:
        start = time.perf_counter()
        result = func(*args)
        if sync is not None:
            sync()
        times[name] = times.get(name, 0.0) + time.perf_counter() - start
        calls[name] = calls.get(name, 0) + 1
        return result

    return timed


class KernelMismatch(ExecutionError):
    """A kernel's outputs differ from the interpreter's run of its primitive function."""


def _checked(kernel: Any, prim: Function) -> Any:
    """A copy of ``kernel`` whose calls compare their outputs with the interpreter's run
    of ``prim`` on the same inputs (raising :class:`KernelMismatch`)."""
    import copy

    from relay.backend.checks import difference
    from relay.backend.interpreter import interpret
    from relay.ir.printer import astext

    func = kernel.func
    n_in = len(kernel.inputs) - len(kernel.constants)
    n_out = len(kernel.outputs)

    def checked(*args: Any) -> None:
        func(*args)
        host = [np.array(a) if isinstance(a, np.ndarray) else a.numpy() for a in args]
        ins = host[:n_in]
        outs = host[len(kernel.inputs) : len(kernel.inputs) + n_out]
        params, it = [], iter(ins)
        for p in prim.params:
            params.append(rebuild_type(p.checked_type, it))
        expected = interpret(prim, *params)
        why = difference(list(outs), expected)
        if why is not None:
            raise KernelMismatch(
                f"first differing kernel: {kernel.name}: {why}; its function:\n{astext(prim)}"
            )

    out = copy.copy(kernel)
    out.func = checked
    return out


class _Linked:
    """A function ready to run: its code in linked form and its frame template."""

    __slots__ = ("arity", "code", "name", "num_captured", "template")

    def __init__(self, name: str, arity: int, num_captured: int, num_registers: int) -> None:
        self.name = name
        self.arity = arity
        self.num_captured = num_captured
        self.template: list[Any] = [None] * num_registers
        self.code: list[tuple[Any, ...]] = []


class VirtualMachine:
    """Runs a program (see the module docstring); one per thread."""

    fast_invoke = True
    """Whether a kernel of one output and no checks gets the loop's own instruction."""
    timing_sync: Callable[[], None] | None = None
    """What profiling calls after a kernel to time it to its end (a device's sync)."""

    def __init__(
        self,
        program: VMProgram,
        library: KernelLibrary | None,
        max_stack_depth: int = DEFAULT_MAX_STACK_DEPTH,
        owner: Callable[[], VirtualMachine] | None = None,
        profile: bool = False,
        dynamic: DynamicKernels | None = None,
        check: list[Function] | None = None,
    ) -> None:
        self.program = program
        # what a closure made here calls from Python: this thread's machine for the program
        self.owner: Callable[[], VirtualMachine] = owner or (lambda: self)
        # RELAY_CHECKS: each kernel's primitive function, to check its calls against
        self.check = check
        self.dynamic = dynamic if dynamic is not None else DynamicKernels(None)
        # profiling (VMExecutor.profile): kernels timed, instructions counted
        self.profiling = profile
        self.kernel_time: dict[str, float] = {}
        self.kernel_calls: dict[str, int] = {}
        self.opcode_counts: dict[str, int] = {}
        self.library = library
        self.max_stack_depth = max_stack_depth
        self._pools: dict[tuple[tuple[int, ...], str], list[Any]] = {}
        self.allocations = 0
        """Kernel outputs allocated afresh (not taken from the pool), for tests and tools."""
        self._interp: Any = None
        self.functions = [
            _Linked(f.name, f.arity, f.num_captured, f.num_registers) for f in program.functions
        ]
        for f, linked in zip(program.functions, self.functions, strict=True):
            for r, k in f.constants.items():
                linked.template[r] = program.constants[k]
            for r, g in f.globals.items():
                linked.template[r] = VMClosure(g, (), program, self.owner)
        for f, linked in zip(program.functions, self.functions, strict=True):
            # a compiled loop runs as one kernel, except when each kernel is to be checked
            code = f.native if f.native is not None and check is None else f.code
            linked.code = [self._link(ins) for ins in code]
            if profile:
                linked.code = _Counting(
                    linked.code, [Opcode(i[0]).name.lower() for i in code], self.opcode_counts
                )

    # -- linking ----------------------------------------------------------------------------------

    def _pool(self, shape: tuple[int, ...], dtype: str) -> list[Any]:
        return self._pools.setdefault((shape, dtype), [])

    def _link(self, ins: tuple[Any, ...]) -> tuple[Any, ...]:
        op = ins[0]
        prog = self.program
        if op == Opcode.INVOKE:
            index, args, outs = ins[1:]
            call = prog.kernels[index]
            assert self.library is not None
            kernel = self.library.kernels[call.symbol]
            if self.profiling:
                kernel = _timed(kernel, self.kernel_time, self.kernel_calls, self.timing_sync)
            if self.check is not None:
                kernel = _checked(kernel, self.check[index])
            extra = tuple(as_kernel_array(np.asarray(c)) for c in kernel.constants)
            specs = tuple(
                (shape, numpy_dtype(dtype), self._pool(shape, dtype) if 0 not in shape else None)
                for shape, dtype in call.outputs
            )
            flags = [aligned_empty((1,), np.int32) for _ in kernel.checks]
            many = (_INVOKE_MANY, kernel, _getter(args), specs, outs, extra, flags)
            if call.scalar is not None and self.check is None:
                run = evaluator(call.scalar)
                if self.profiling:  # timed as a kernel of its own
                    name = f"{call.symbol} (in Python)"
                    run = _timed_call(run, name, self.kernel_time, self.kernel_calls)
                return (_INVOKE_SCALAR, run, _getter(args), outs[0], many)
            if len(outs) == 1 and not kernel.checks and self.fast_invoke:
                shape, dtype, pool = specs[0]
                return (_INVOKE, kernel.func, _getter(args), shape, dtype, pool, outs[0], extra)
            return many
        if op == Opcode.TAG_IS:
            return (_TAG_IS, ins[1], prog.constructors[ins[2]].tag, ins[3])
        if op == Opcode.CALL:
            return (_CALL, ins[1], self.functions[ins[2]], _getter(ins[3]))
        if op == Opcode.CLOSURE:
            return (_CLOSURE, ins[1], ins[2], _getter(ins[3]))
        if op == Opcode.TAIL_CALL:
            return (_TAIL_CALL, self.functions[ins[1]], _getter(ins[2]))
        if op == Opcode.INVOKE_CLOSURE:
            return (_INVOKE_CLOSURE, ins[1], ins[2], _getter(ins[3]))
        if op == Opcode.TAIL_INVOKE_CLOSURE:
            return (_TAIL_INVOKE_CLOSURE, ins[1], _getter(ins[2]))
        if op == Opcode.TUPLE:
            return (_TUPLE, ins[1], _getter(ins[2]))
        if op == Opcode.ADT:
            return (_ADT, ins[1], prog.constructors[ins[2]], _getter(ins[3]))
        if op == Opcode.INVOKE_REF:
            from relay.backend.interpreter.values import Closure

            return (_INVOKE_REF, Closure(prog.references[ins[1]]), ins[2], ins[3])
        if op == Opcode.INVOKE_DYNAMIC:
            from relay.backend.interpreter.values import Closure

            func = prog.references[ins[1]]
            return (_INVOKE_DYNAMIC, ins[1], func, Closure(func), _getter(ins[2]), ins[3])
        if op == Opcode.FAIL:
            message, span = prog.messages[ins[1]]
            return (_FAIL, message, span, ins[2])
        return (int(op), *ins[1:])

    # -- running ----------------------------------------------------------------------------------

    def run(self, args: Sequence[Any]) -> Any:
        """Call the entry function on ``args`` (run-time values)."""
        return self._execute(self.functions[self.program.entry], list(args))

    def call_closure(self, closure: VMClosure, args: list[Any]) -> Any:
        """Call ``closure`` on ``args`` (run-time values)."""
        if closure.program is not self.program:
            raise ExecutionError("a closure of another program cannot run here")
        f = self.functions[closure.index]
        if len(args) + f.num_captured != f.arity:
            raise ExecutionError(
                f"{f.name} takes {f.arity - f.num_captured} arguments, got {len(args)}"
            )
        return self._execute(f, [*closure.captured, *args])

    def _interpreter(self) -> Any:
        if self._interp is None:
            from relay.backend.interpreter import Interpreter

            self._interp = Interpreter()
        return self._interp

    def _execute(self, f: _Linked, args: list[Any]) -> Any:
        regs = f.template.copy()
        regs[: len(args)] = args
        code = f.code
        pc = 0
        stack: list[tuple[Any, int, list[Any], int]] = []
        max_depth = self.max_stack_depth
        program = self.program
        functions = self.functions
        owner = self.owner
        getrefcount = sys.getrefcount
        empty = np.empty
        while True:
            ins = code[pc]
            pc += 1
            op = ins[0]
            if op == _INVOKE:
                _, func, a, shape, dtype, pool, dst, extra = ins
                # _alloc, written out: the loop's most frequent instruction
                if pool is None:
                    out = aligned_empty(shape, dtype)
                else:
                    for out in pool:
                        if getrefcount(out) == 3:  # the pool, `out` and the argument
                            break
                    else:
                        out = empty(shape, dtype)
                        self.allocations += 1
                        if len(pool) < POOL_DEPTH:
                            pool.append(out)
                func(*a(regs), *extra, out)
                regs[dst] = out
            elif op == _INVOKE_SCALAR:
                try:
                    regs[ins[3]] = ins[1](ins[2](regs))
                except Defer:
                    self._invoke_many(ins[4], regs)
            elif op == _FIELD:
                regs[ins[1]] = (
                    regs[ins[2]][ins[3]]
                    if type(regs[ins[2]]) is tuple
                    else regs[ins[2]].fields[ins[3]]
                )
            elif op == _MOVE:
                regs[ins[1]] = regs[ins[2]]
            elif op == _IF:
                if not regs[ins[1]]:
                    pc = ins[2]
            elif op == _TAIL_CALL:
                f = ins[1]
                new = f.template.copy()
                new[: f.arity] = ins[2](regs)
                regs = new
                code = f.code
                pc = 0
            elif op == _RET:
                value = regs[ins[1]]
                if not stack:
                    return value
                code, pc, regs, dst = stack.pop()
                regs[dst] = value
            elif op == _JUMP:
                pc = ins[1]
            elif op == _TAG_IS:
                if regs[ins[1]].constructor.tag != ins[2]:
                    pc = ins[3]
            elif op == _CALL:
                if len(stack) >= max_depth:
                    raise self._overflow()
                stack.append((code, pc, regs, ins[1]))
                f = ins[2]
                new = f.template.copy()
                new[: f.arity] = ins[3](regs)
                regs = new
                code = f.code
                pc = 0
            elif op == _TAIL_INVOKE_CLOSURE:
                closure = regs[ins[1]]
                if type(closure) is not VMClosure or closure.program is not program:
                    raise self._not_callable(closure)
                f = functions[closure.index]
                new = f.template.copy()
                new[: f.arity] = closure.captured + ins[2](regs)
                regs = new
                code = f.code
                pc = 0
            elif op == _INVOKE_CLOSURE:
                closure = regs[ins[2]]
                if type(closure) is not VMClosure or closure.program is not program:
                    raise self._not_callable(closure)
                if len(stack) >= max_depth:
                    raise self._overflow()
                stack.append((code, pc, regs, ins[1]))
                f = functions[closure.index]
                new = f.template.copy()
                new[: f.arity] = closure.captured + ins[3](regs)
                regs = new
                code = f.code
                pc = 0
            elif op == _TUPLE:
                regs[ins[1]] = ins[2](regs)
            elif op == _ADT:
                regs[ins[1]] = ConstructorValue(ins[2], ins[3](regs))
            elif op == _CLOSURE:
                regs[ins[1]] = VMClosure(ins[2], ins[3](regs), program, owner)
            elif op == _RESHAPE:
                regs[ins[1]] = regs[ins[2]].reshape(ins[3])
            elif op == _KILL:
                for r in ins[1]:
                    regs[r] = None
            elif op == _INVOKE_MANY:
                self._invoke_many(ins, regs)
            elif op == _INVOKE_DYNAMIC:
                regs[ins[5]] = self._invoke_dynamic(ins, ins[4](regs))
            elif op == _INVOKE_REF:
                regs[ins[3]] = self._interpreter().call(ins[1], [regs[i] for i in ins[2]])
            elif op == _REF:
                regs[ins[1]] = RefValue(regs[ins[2]])
            elif op == _REF_READ:
                regs[ins[1]] = regs[ins[2]].value
            elif op == _REF_WRITE:
                regs[ins[2]].value = regs[ins[3]]
                regs[ins[1]] = ()
            elif op == _IF_ANYWHERE:
                cond = regs[ins[1]]
                if not (cond if type(cond) is np.ndarray else self.host(cond)):
                    pc = ins[2]
            elif op == _RESHAPE_ANYWHERE:
                regs[ins[1]] = self.reshaped(regs[ins[2]], ins[3])
            elif op == _FAIL:
                raise ExecutionError(
                    f"{ins[1]} the value {format_value(self.host(regs[ins[3]]), 200)}", ins[2]
                )
            else:  # pragma: no cover - the linker makes no other opcode
                raise AssertionError(f"unknown opcode {op}")

    def _invoke_many(self, ins: tuple[Any, ...], regs: list[Any]) -> None:
        """An invoke with several outputs or run-time checks."""
        _, kernel, a, specs, dsts, extra, flags = ins
        outs = [self._alloc(shape, dtype, pool) for shape, dtype, pool in specs]
        kernel.func(*a(regs), *extra, *outs, *flags)
        if flags:
            kernel.raise_failed(flags)
        for r, o in zip(dsts, outs, strict=True):
            regs[r] = o

    def _invoke_dynamic(self, ins: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
        """Run a fused function whose shapes are known only now: its kernel specialized to
        these arguments, or its references (see :mod:`relay.backend.vm.dynamic`)."""
        _, index, func, closure, _, _ = ins
        found = self.dynamic.lookup(index, func, args)
        if found is None:
            return self._interpreter().call(closure, list(args))
        outs = []
        for t in flatten_type(found.result):
            shape = static_shape(t)
            dtype = str(t.dtype)
            pool = self._pool(shape, dtype) if 0 not in shape else None
            outs.append(self._alloc(shape, numpy_dtype(dtype), pool))
        found.run(args, outs)
        return rebuild_type(found.result, iter(outs))

    def _alloc(self, shape: tuple[int, ...], dtype: Any, pool: list[Any] | None) -> Any:
        if pool is None:
            return aligned_empty(shape, dtype)
        for out in pool:
            if sys.getrefcount(out) == 3:
                return out
        out = np.empty(shape, dtype)
        self.allocations += 1
        if len(pool) < POOL_DEPTH:
            pool.append(out)
        return out

    def host(self, value: Any) -> Any:
        """``value`` with its tensors in host memory (a device machine copies them there)."""
        return value

    def reshaped(self, value: Any, shape: tuple[int, ...]) -> Any:
        """``value``'s data in ``shape``, without a copy."""
        return value.reshape(shape)

    def _not_callable(self, value: Any) -> ExecutionError:
        if type(value) is VMClosure:
            return ExecutionError("a closure of another program cannot run here")
        return ExecutionError(f"cannot call {format_value(value, 80)} here")

    def _overflow(self) -> ExecutionError:
        return ExecutionError(
            f"stack overflow: more than {self.max_stack_depth} nested calls (unbounded recursion?)"
        )


def kernel_values(args: Sequence[Any]) -> list[Any]:
    """Arguments as run-time values that kernels can take: numpy arrays a kernel cannot
    read as they are (:func:`relay.backend.runtime.passable`), in tuples and constructor
    values too, are copied (a constructor value is rebuilt only when a field changes)."""
    from relay.backend.interpreter.values import to_value

    return [_kernel_value(a if type(a) is VMClosure else to_value(a)) for a in args]


def _kernel_value(v: Any) -> Any:
    from relay.backend.runtime import passable

    if type(v) is np.ndarray:
        return v if v.size and passable(v) else as_kernel_array(v)
    if type(v) is tuple:
        return tuple(_kernel_value(x) for x in v)
    if type(v) is ConstructorValue:
        return map_fields(v, _kernel_value)
    return v


def map_fields(value: ConstructorValue, f: Callable[[Any], Any]) -> ConstructorValue:
    """``value`` with ``f`` applied to its fields, its nested constructor values' too (a
    long list is a chain of constructor values: walked without recursion); a value whose
    fields ``f`` leaves as they are is kept, not rebuilt."""
    chain = []
    node: Any = value
    while type(node) is ConstructorValue:
        chain.append(node)
        node = node.fields[-1] if node.fields else None
    rebuilt: Any = None
    for c in reversed(chain):
        fields = list(c.fields)
        for k in range(len(fields)):
            last_link = k == len(fields) - 1 and type(fields[k]) is ConstructorValue
            fields[k] = rebuilt if last_link else f(fields[k])
        same = all(a is b for a, b in zip(fields, c.fields, strict=True))
        rebuilt = c if same else ConstructorValue(c.constructor, tuple(fields))
    return rebuilt  # type: ignore[no-any-return]
