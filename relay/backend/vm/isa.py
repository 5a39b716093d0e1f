"""The VM's instruction set, its programs, their text form and their JSON form.

A :class:`VMProgram` is a list of :class:`VMFunction`, each a flat list of instructions over
a frame of numbered *registers*. An instruction is a tuple ``(opcode, operands...)``; the
operands are register numbers, tuples of register numbers, indices into the program's
tables (kernels, constants, constructors, messages, reference functions) and jump targets
(instruction indices in the same function). TVM's Relay VM (``include/tvm/runtime/vm/
bytecode.h``) has the same shape; the opcodes here are:

=====================  =========================================================================
``move d s``           register ``d`` takes register ``s``'s value
``invoke K (a..) (d..)``  allocate kernel ``K``'s outputs (their shapes are planned at compile
                       time, the storage comes from the frame-independent pool), run ``K`` on
                       registers ``a..`` and the outputs, put the outputs in ``d..``
``invoke_dynamic F (a..) d``  run primitive function ``F``, whose shapes are known only at
                       run time, with a kernel specialized to its arguments' shapes
                       (:mod:`relay.backend.vm.dynamic`)
``invoke_ref F (a..) d``  run primitive function ``F`` with its operators' references (an
                       operator without a TVM lowering)
``reshape d s shape``  ``d`` is a view of ``s`` in another shape (a fused reshape-only function)
``call d G (a..)``     call function ``G``; ``d`` takes its result
``tail_call G (a..)``  replace this frame by a call of ``G`` (loops run in constant stack)
``closure d G (c..)``  make a closure of function ``G`` capturing registers ``c..``
``invoke_closure d c (a..)`` / ``tail_invoke_closure c (a..)``  call the closure in ``c``
``tuple d (a..)``      make a tuple
``adt d C (a..)``      make a value of constructor ``C``
``field d s i``        field ``i`` of the tuple or constructor value in ``s``
``if c L``             go on when the boolean tensor in ``c`` is true, else jump to ``L``
``tag_is s C L``       go on when ``s`` is a value of constructor ``C``, else jump to ``L``
``jump L``             jump to ``L``
``ref d s`` / ``ref_read d r`` / ``ref_write d r s``  reference cells (``ref_write``'s ``d`` is ``()``)
``kill (r..)``         forget registers whose values are dead, so their storage can be reused
``ret s``              return register ``s``'s value
``fail M``             raise message ``M`` (with its span): a ``match`` that matched nothing
=====================  =========================================================================

A function's first registers hold its captured values (for a closure's code) and then its
parameters; constants, and closures of functions that capture nothing, are preloaded into
registers of their own, so using them costs no instruction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

from relay.ir.span import Span

Instruction = tuple[Any, ...]


class Opcode(IntEnum):
    """The instructions (see the module docstring)."""

    INVOKE = 0
    MOVE = 1
    FIELD = 2
    IF = 3
    JUMP = 4
    TAIL_CALL = 5
    CALL = 6
    RET = 7
    TAG_IS = 8
    TUPLE = 9
    ADT = 10
    CLOSURE = 11
    INVOKE_CLOSURE = 12
    TAIL_INVOKE_CLOSURE = 13
    RESHAPE = 14
    INVOKE_REF = 15
    REF = 16
    REF_READ = 17
    REF_WRITE = 18
    KILL = 19
    FAIL = 20
    INVOKE_DYNAMIC = 21


JUMPS = {Opcode.IF: 2, Opcode.TAG_IS: 3, Opcode.JUMP: 1}
"""The operand that is a jump target, per opcode that has one."""


@dataclass
class VMFunction:
    """One function's code: ``num_captured`` captured values and then ``params`` arrive in
    the first registers; ``constants`` preloads registers (register -> constant index)."""

    name: str
    params: list[str]
    num_captured: int
    num_registers: int
    code: list[Instruction]
    constants: dict[int, int] = field(default_factory=dict)
    """Registers preloaded with a constant, by the constant's index in the program."""
    globals: dict[int, int] = field(default_factory=dict)
    """Registers preloaded with a closure of a function that captures nothing."""
    native: list[Instruction] | None = None
    """For a loop compiled into one kernel (:mod:`relay.backend.vm.loops`), the code the
    machine runs instead of ``code``: an invoke of that kernel. ``code`` stays, for runs
    that check each kernel against the interpreter."""

    @property
    def arity(self) -> int:
        """Registers filled at entry: captured values and parameters."""
        return self.num_captured + len(self.params)


@dataclass
class KernelCall:
    """A kernel the program invokes: its symbol in the library and its outputs' shapes and
    dtypes (the VM allocates them before the call)."""

    symbol: str
    outputs: list[tuple[tuple[int, ...], str]]
    scalar: list[Any] | None = None
    """The function as an expression tree when the VM evaluates it in Python instead
    (:mod:`relay.backend.vm.scalar`)."""


@dataclass
class VMProgram:
    """The compiled control code of a program (see the module docstring)."""

    functions: list[VMFunction]
    entry: int
    kernels: list[KernelCall]
    constants: list[Any]
    """Tensors (numpy arrays) and Python tuples of them."""
    constructors: list[Any]
    """:class:`relay.ir.expr.Constructor` objects."""
    references: list[Any]
    """Primitive functions (:class:`relay.ir.expr.Function`) run by the reference."""
    messages: list[tuple[str, Span | None]]

    def function_index(self, name: str) -> int:
        """The index of the function called ``name``."""
        for i, f in enumerate(self.functions):
            if f.name == name:
                return i
        raise KeyError(name)

    # -- text -------------------------------------------------------------------------------------

    def astext(self) -> str:
        """The program as text, one function after the other (for reading, not parsing)."""
        out: list[str] = []
        for i, f in enumerate(self.functions):
            caps = [f"%{r}" for r in range(f.num_captured)]
            params = [f"%{r}:{p}" for r, p in enumerate(f.params, f.num_captured)]
            head = f"def {f.name}" + (f"[{', '.join(caps)}]" if caps else "")
            mark = "  # entry" if i == self.entry else ""
            out.append(f"{head}({', '.join(params)}) registers={f.num_registers}:{mark}")
            for r, k in sorted(f.constants.items()):
                out.append(f"  %{r} = const[{k}] {_describe_constant(self.constants[k])}")
            for r, g in sorted(f.globals.items()):
                out.append(f"  %{r} = closure {self.functions[g].name}()")
            for pc, ins in enumerate(f.code):
                out.append(f"  {pc:>3}: {self.format_instruction(ins)}")
            if f.native is not None:
                out.append("  compiled into one kernel; what runs:")
                for pc, ins in enumerate(f.native):
                    out.append(f"  {pc:>3}: {self.format_instruction(ins)}")
        return "\n".join(out) + "\n"

    def format_instruction(self, ins: Instruction) -> str:
        """One instruction as text."""
        op = Opcode(ins[0])
        a = ins[1:]

        def regs(rs: tuple[int, ...]) -> str:
            return ", ".join(f"%{r}" for r in rs)

        if op == Opcode.INVOKE:
            return f"{_dsts(a[2])} = invoke {self.kernels[a[0]].symbol}({regs(a[1])})"
        if op == Opcode.INVOKE_REF:
            return f"%{a[2]} = invoke_ref ref[{a[0]}]({regs(a[1])})"
        if op == Opcode.INVOKE_DYNAMIC:
            return f"%{a[2]} = invoke_dynamic ref[{a[0]}]({regs(a[1])})"
        if op == Opcode.MOVE:
            return f"%{a[0]} = %{a[1]}"
        if op == Opcode.FIELD:
            return f"%{a[0]} = %{a[1]}.{a[2]}"
        if op == Opcode.IF:
            return f"if %{a[0]} else jump {a[1]}"
        if op == Opcode.TAG_IS:
            return f"if %{a[0]} is {self.constructors[a[1]].name_hint} else jump {a[2]}"
        if op == Opcode.JUMP:
            return f"jump {a[0]}"
        if op == Opcode.CALL:
            return f"%{a[0]} = call {self.functions[a[1]].name}({regs(a[2])})"
        if op == Opcode.TAIL_CALL:
            return f"tail_call {self.functions[a[0]].name}({regs(a[1])})"
        if op == Opcode.CLOSURE:
            return f"%{a[0]} = closure {self.functions[a[1]].name}[{regs(a[2])}]"
        if op == Opcode.INVOKE_CLOSURE:
            return f"%{a[0]} = invoke_closure %{a[1]}({regs(a[2])})"
        if op == Opcode.TAIL_INVOKE_CLOSURE:
            return f"tail_invoke_closure %{a[0]}({regs(a[1])})"
        if op == Opcode.TUPLE:
            return f"%{a[0]} = ({regs(a[1])}{',' if len(a[1]) == 1 else ''})"
        if op == Opcode.ADT:
            return f"%{a[0]} = {self.constructors[a[1]].name_hint}({regs(a[2])})"
        if op == Opcode.RESHAPE:
            return f"%{a[0]} = reshape %{a[1]} to {tuple(a[2])}"
        if op == Opcode.REF:
            return f"%{a[0]} = ref(%{a[1]})"
        if op == Opcode.REF_READ:
            return f"%{a[0]} = !%{a[1]}"
        if op == Opcode.REF_WRITE:
            return f"%{a[0]} = (%{a[1]} := %{a[2]})"
        if op == Opcode.KILL:
            return f"kill {regs(a[0])}"
        if op == Opcode.RET:
            return f"ret %{a[0]}"
        assert op == Opcode.FAIL
        return f"fail {self.messages[a[0]][0]!r}"


def _dsts(rs: tuple[int, ...]) -> str:
    return ", ".join(f"%{r}" for r in rs) if len(rs) != 1 else f"%{rs[0]}"


def _describe_constant(c: Any) -> str:
    if isinstance(c, np.ndarray):
        if c.size <= 4:
            return f"{c.dtype.name}{list(c.shape)} {c.tolist()}"
        return f"{c.dtype.name}{list(c.shape)}"
    if isinstance(c, tuple):
        return "(" + ", ".join(_describe_constant(x) for x in c) + ")"
    return repr(c)


# -- JSON -----------------------------------------------------------------------------------------


def program_to_json(program: VMProgram) -> dict[str, Any]:
    """The program as JSON-able data; its constants (numpy arrays) are left out, to be saved
    beside it by index (see :func:`program_from_json`)."""
    from relay.backend.compiler import function_text

    return {
        "entry": program.entry,
        "functions": [
            {
                "name": f.name,
                "params": f.params,
                "captured": f.num_captured,
                "registers": f.num_registers,
                "code": [_json_operands(ins) for ins in f.code],
                "constants": {str(r): k for r, k in f.constants.items()},
                "globals": {str(r): g for r, g in f.globals.items()},
                "native": None if f.native is None else [_json_operands(ins) for ins in f.native],
            }
            for f in program.functions
        ],
        "kernels": [
            {
                "symbol": k.symbol,
                "outputs": [[list(s), d] for s, d in k.outputs],
                "scalar": k.scalar,
            }
            for k in program.kernels
        ],
        "constructors": [
            [c.belong_to.name_hint if c.belong_to is not None else "", c.name_hint]
            for c in program.constructors
        ],
        "references": [function_text(f) for f in program.references],
        "messages": [[m, _span_json(s)] for m, s in program.messages],
        "constant_count": len(program.constants),
    }


def program_from_json(data: dict[str, Any], module: Any, constants: list[Any]) -> VMProgram:
    """The program written by :func:`program_to_json`; ``module`` holds its data types (the
    constructors are looked up by name), ``constants`` its constants by index."""
    from relay.ir.parser import parse_expr
    from relay.typecheck.checker import infer_type

    functions = [
        VMFunction(
            f["name"],
            list(f["params"]),
            f["captured"],
            f["registers"],
            [_instruction(ins) for ins in f["code"]],
            {int(r): k for r, k in f["constants"].items()},
            {int(r): g for r, g in f["globals"].items()},
            None if f.get("native") is None else [_instruction(ins) for ins in f["native"]],
        )
        for f in data["functions"]
    ]
    constructors = []
    for type_name, name in data["constructors"]:
        found = [
            c
            for gtv, td in module.type_definitions.items()
            if gtv.name_hint == type_name
            for c in td.constructors
            if c.name_hint == name
        ]
        if not found:
            raise ValueError(f"the program has no constructor {type_name}.{name}")
        constructors.append(found[0])
    references = [infer_type(parse_expr(text, module=module)) for text in data["references"]]
    return VMProgram(
        functions,
        data["entry"],
        [
            KernelCall(k["symbol"], [(tuple(s), d) for s, d in k["outputs"]], k.get("scalar"))
            for k in data["kernels"]
        ],
        constants,
        constructors,
        references,
        [(m, _span_from_json(s)) for m, s in data["messages"]],
    )


def _json_operands(ins: Instruction) -> list[Any]:
    return [int(ins[0]), *[list(x) if isinstance(x, tuple) else x for x in ins[1:]]]


def _instruction(data: list[Any]) -> Instruction:
    return (Opcode(data[0]), *[tuple(x) if isinstance(x, list) else x for x in data[1:]])


def _span_json(span: Span | None) -> list[Any] | None:
    if span is None:
        return None
    return [span.source, span.line, span.column, span.end_line, span.end_column]


def _span_from_json(data: list[Any] | None) -> Span | None:
    return None if data is None else Span(*data)
