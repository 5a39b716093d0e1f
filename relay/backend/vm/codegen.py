"""From a fused module to VM code (:mod:`relay.backend.vm.isa`).

The compiler follows TVM's ``src/relay/backend/vm/compiler.cc`` in outline:

1. **Lambda lifting** (:mod:`relay.passes.lambda_lift`): every local function becomes a
   global; one with free variables becomes a global that takes the captured values and
   returns the closure (``Closure=1``). Local functions called only once are inlined first
   (:mod:`relay.passes.inline_local`).
2. **A-normal form** (:mod:`relay.passes.normal_form`): every intermediate value has a
   name, so each ``let`` is one step and its variable one register.
3. **Code generation**, one global at a time, over the let chains:

   * a call of a ``Primitive=1`` function is an ``invoke`` of its kernel (all kernels of the
     program compile into one library, :func:`relay.backend.compiler.compile_functions`);
     one that only reshapes is a ``reshape`` (a view); one whose shapes are not static is an
     ``invoke_dynamic`` (a kernel specialized to the arguments' shapes at run time,
     :mod:`relay.backend.vm.dynamic`); one with an operator that has no TVM lowering is an
     ``invoke_ref`` (the operators' numpy references);
   * a call of a global is a ``call``, of a lifted closure's maker a ``closure`` (and when
     the closure made is only ever called, as the loops of the frontend are, the call goes
     straight to its code with the captured values, and no closure is made); a call of
     anything else is an ``invoke_closure``; in tail position these are ``tail_call`` and
     ``tail_invoke_closure``, which replace the frame, so loops run in constant stack;
   * ``if`` is a conditional jump, ``match`` a chain of ``tag_is`` tests and ``field``
     projections per clause, ending in ``fail`` (for a match that matches nothing);
   * constants and closures of functions that capture nothing live in registers preloaded
     when a frame is made.

4. **Liveness** (a backward dataflow over each function's instructions): before a kernel
   call, registers holding tensors that are dead there are killed, so the storage pool (see
   :mod:`relay.backend.vm.machine`) can give their buffers to the kernel's outputs.

A program the VM does not run yet raises :class:`NotCompilable`; and a program whose types
the checker left to run-time checks (``?`` dimensions where an annotation gives a size,
:func:`run_time_checks`) runs on the reference interpreter, which makes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay.backend.lower import flatten_type, is_static, static_shape
from relay.backend.vm.isa import JUMPS, Instruction, KernelCall, Opcode, VMFunction, VMProgram
from relay.backend.vm.scalar import scalar_tree
from relay.errors import CompileError
from relay.ir.attrs import Attrs
from relay.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.ir.functor import ExprVisitor
from relay.ir.module import Module
from relay.ir.types import TensorType, TupleType, Type


class NotCompilable(Exception):
    """The program needs something the VM does not do yet (the reason is the message)."""


def is_primitive(e: Expr) -> bool:
    """``e`` is a fused kernel function."""
    return isinstance(e, Function) and e.attrs.get("Primitive") == 1


def _is_closure_maker(func: Function) -> bool:
    """A lifted global that takes captured values and returns its closure."""
    return isinstance(func.body, Function) and func.body.attrs.get("Closure") == 1


class _DeferredChecks(ExprVisitor):
    """Finds a call or function whose types the checker left to run time."""

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self.mod = mod
        self.found: str | None = None

    def visit_function(self, f: Function) -> None:
        # a fused function too: inlining can move a declared size onto its result
        from relay.backend.interpreter.conform import result_needs_check

        if result_needs_check(f):
            self.found = "a result checked at run time"
        super().visit_function(f)

    def visit_call(self, call: Call) -> None:
        from relay.backend.interpreter.conform import call_needs_check

        callee = call.op
        known = None
        if isinstance(callee, GlobalVar):
            known = self.mod.functions.get(callee)
        elif isinstance(callee, Function):
            known = None if is_primitive(callee) else callee
        if not is_primitive(callee) and call_needs_check(call, known):
            self.found = "arguments checked at run time"
        super().visit_call(call)


def run_time_checks(mod: Module, entry: GlobalVar) -> str | None:
    """Why ``entry`` of the typed ``mod`` needs run-time type checks (the interpreter's
    work), or None. Asked of the program as written: optimization can lose the place a
    check belongs to (inlining ``@f(%x)``, where ``%x`` has a ``?`` and ``@f`` declares a
    size, leaves the size on a fused function's result)."""
    from relay.passes.remove_unused import reachable_globals

    checks = _DeferredChecks(mod)
    for gv in reachable_globals(mod, [entry]):
        checks.visit(mod.functions[gv])
        if checks.found:
            return checks.found
    return None


def prepare(mod: Module) -> Module:
    """Inline the local functions called once (the frontend's join points, which would
    otherwise make a closure per loop iteration: :mod:`relay.passes.inline_local`),
    lambda-lift and put into A-normal form (steps 1 and 2). The fused functions keep their
    types (no pass looks into them); nothing else needs any after lambda lifting."""
    from relay.passes import InferType, LambdaLift, ToANormalForm
    from relay.passes.inline_local import inline_local_functions

    inlined = Module(type_definitions=dict(mod.type_definitions))
    changed = False
    for gv, func in mod.functions.items():
        new = func if func.attrs.get("Primitive") == 1 else inline_local_functions(func)
        changed = changed or new is not func
        assert isinstance(new, Function)
        inlined.add(gv, new)
    # applied directly: a Sequential would skip them below their opt levels
    return ToANormalForm()(LambdaLift()(InferType()(inlined) if changed else mod))


# -- code generation ------------------------------------------------------------------------------


class _Label:
    """A jump target, placed once its instruction index is known."""

    __slots__ = ("pc", "uses")

    def __init__(self) -> None:
        self.pc = -1
        self.uses: list[tuple[list[Any], int]] = []


class _Program:
    """The program being built: its tables, shared by the functions' code generators."""

    def __init__(self, mod: Module) -> None:
        self.mod = mod
        self.functions: list[VMFunction | None] = []
        self.index: dict[str, int] = {}
        self.pending: list[tuple[int, GlobalVar | Constructor, str]] = []
        self.constants: list[Any] = []
        self.constant_index: dict[int, int] = {}
        self.constructors: list[Constructor] = []
        self.constructor_index: dict[int, int] = {}
        self.messages: list[tuple[str, Any]] = []
        self.prims: list[Function] = []
        self.outputs: list[list[tuple[tuple[int, ...], str]]] = []  # per kernel
        self.prim_index: dict[int, int] = {}
        self.references: list[Function] = []
        self.reference_index: dict[int, tuple[Opcode, int]] = {}
        self.reshapes: dict[int, tuple[int, ...]] = {}

    def function(self, key: GlobalVar | Constructor, kind: str = "code") -> int:
        """The index of the VM function for ``key``: a global's code (``"code"``), the maker
        of a lifted closure used as a value (``"maker"``), or a constructor's wrapper."""
        name = key.name_hint if kind == "code" else f"{key.name_hint}${kind}"
        if name not in self.index:
            self.index[name] = len(self.functions)
            self.functions.append(None)
            self.pending.append((self.index[name], key, kind))
        return self.index[name]

    def constant(self, data: Any) -> int:
        if id(data) not in self.constant_index:
            self.constant_index[id(data)] = len(self.constants)
            self.constants.append(data)
        return self.constant_index[id(data)]

    def constructor(self, c: Constructor) -> int:
        if id(c) not in self.constructor_index:
            self.constructor_index[id(c)] = len(self.constructors)
            self.constructors.append(c)
        return self.constructor_index[id(c)]

    def message(self, text: str, span: Any) -> int:
        self.messages.append((text, span))
        return len(self.messages) - 1

    def primitive(self, func: Function) -> tuple[Opcode, int]:
        """How a call of ``func`` runs: ``(INVOKE, kernel)``, ``(RESHAPE, -1)``,
        ``(INVOKE_DYNAMIC, reference)`` or ``(INVOKE_REF, reference)``."""
        if id(func) in self.prim_index:
            return Opcode.INVOKE, self.prim_index[id(func)]
        if id(func) in self.reference_index:
            return self.reference_index[id(func)]
        lowerable = _lowerable(func)
        if _static(func) and lowerable:
            from relay.backend.graph_executor import reshape_only

            if reshape_only(func):
                return Opcode.RESHAPE, -1
            self.prim_index[id(func)] = len(self.prims)
            self.prims.append(func)
            self.outputs.append(_outputs(func))
            return Opcode.INVOKE, self.prim_index[id(func)]
        how = Opcode.INVOKE_DYNAMIC if lowerable else Opcode.INVOKE_REF
        self.reference_index[id(func)] = (how, len(self.references))
        self.references.append(func)
        return how, len(self.references) - 1

    def build(self, entry: GlobalVar) -> int:
        """Generate the code of ``entry`` and of everything it reaches; ``entry``'s index."""
        first = self.function(entry)
        while self.pending:
            index, key, kind = self.pending.pop()
            self.functions[index] = self._generate(key, kind)
        return first

    def _generate(self, key: GlobalVar | Constructor, kind: str) -> VMFunction:
        if isinstance(key, Constructor):
            n = len(key.inputs)
            gen = _FunctionCode(self, key.name_hint, [], [f"x{i}" for i in range(n)])
            dst = gen.new_reg()
            gen.emit(Opcode.ADT, dst, self.constructor(key), tuple(range(n)))
            gen.emit(Opcode.RET, dst)
            return gen.finish()
        func = self.mod.functions[key]
        if kind == "maker":  # a lifted closure's maker, used as a function value
            n = len(func.params)
            gen = _FunctionCode(
                self, f"{key.name_hint}$maker", [], [p.name_hint for p in func.params]
            )
            dst = gen.new_reg()
            gen.emit(Opcode.CLOSURE, dst, self.function(key), tuple(range(n)))
            gen.emit(Opcode.RET, dst)
            return gen.finish()
        if _is_closure_maker(func):
            inner = func.body
            assert isinstance(inner, Function)
            gen = _FunctionCode(self, key.name_hint, list(func.params), list(inner.params))
            body = inner.body
        else:
            gen = _FunctionCode(self, key.name_hint, [], list(func.params))
            body = func.body
        gen.block(body, tail=True)
        return gen.finish()


def _static(func: Function) -> bool:
    try:
        types = [p.checked_type for p in func.params]
        types.append(func.checked_type.ret_type)  # type: ignore[attr-defined]
    except (ValueError, AttributeError):  # not type-checked
        return False
    return is_static(types)


def _lowerable(func: Function) -> bool:
    """Every operator of ``func`` has a TVM lowering rule."""
    from relay.op.registry import get_op

    ok = True

    class Ops(ExprVisitor):
        def visit_op(self, op: Op) -> None:
            nonlocal ok
            if get_op(op.name).lowering is None:
                ok = False

    Ops().visit(func.body)
    return ok


def _atomic(e: Expr) -> bool:
    return isinstance(e, Var | Constant | GlobalVar | Constructor | Op) or (
        isinstance(e, Function) and is_primitive(e)
    )


class _FunctionCode:
    """The code generator of one function (see the module docstring, step 3)."""

    def __init__(
        self, prog: _Program, name: str, captured: Sequence[Var], params: Sequence[Var | str]
    ) -> None:
        self.prog = prog
        self.name = name
        self.code: list[list[Any]] = []
        self.regs: dict[Var, int] = {}
        self.num_regs = 0
        self.num_captured = len(captured)
        for v in captured:
            self.regs[v] = self.new_reg()
        names = []
        for p in params:
            r = self.new_reg()
            if isinstance(p, Var):
                self.regs[p] = r
                names.append(p.name_hint)
            else:
                names.append(p)
        self.param_names = names
        self.const_regs: dict[int, int] = {}  # constant index -> register
        self.global_regs: dict[int, int] = {}  # function index -> register of its closure
        self.prim_vars: dict[Var, Function] = {}
        # a let-bound closure of a lifted function: (its code's index, captured registers)
        self.closures: dict[Var, tuple[int, tuple[int, ...]]] = {}

    def new_reg(self) -> int:
        self.num_regs += 1
        return self.num_regs - 1

    def emit(self, op: Opcode, *operands: Any) -> list[Any]:
        ins = [op, *operands]
        self.code.append(ins)
        return ins

    def jump_to(self, ins: list[Any], label: _Label) -> None:
        slot = JUMPS[ins[0]]
        if label.pc >= 0:
            ins[slot] = label.pc
        else:
            label.uses.append((ins, slot))

    def place(self, label: _Label) -> None:
        label.pc = len(self.code)
        for ins, slot in label.uses:
            ins[slot] = label.pc

    def finish(self) -> VMFunction:
        code = [tuple(ins) for ins in self.code]
        specs: dict[int, tuple[tuple[int, ...], str]] = {}
        for ins in code:
            if ins[0] == Opcode.INVOKE:
                outputs = self.prog.outputs[ins[1]]
                specs.update(zip(ins[3], outputs, strict=True))
        code = _insert_kills(code, specs)
        return VMFunction(
            self.name,
            self.param_names,
            self.num_captured,
            self.num_regs,
            code,
            {r: k for k, r in self.const_regs.items()},
            {r: g for g, r in self.global_regs.items()},
        )

    # -- atoms ------------------------------------------------------------------------------------

    def atom(self, e: Expr) -> int:
        """The register holding atom ``e``'s value (emitting what makes it, for closures)."""
        if isinstance(e, Var):
            if e in self.closures:
                fi, caps = self.closures[e]
                dst = self.new_reg()
                self.emit(Opcode.CLOSURE, dst, fi, caps)
                return dst
            if e in self.prim_vars:
                raise NotCompilable("a fused kernel used as a value")
            try:
                return self.regs[e]
            except KeyError:
                raise CompileError(f"unbound variable %{e.name_hint}", e.span) from None
        if isinstance(e, Constant):
            return self._preloaded(self.const_regs, self.prog.constant(e.data))
        if isinstance(e, GlobalVar):
            func = self.prog.mod.functions[e]
            kind = "maker" if _is_closure_maker(func) else "code"
            return self._preloaded(self.global_regs, self.prog.function(e, kind))
        if isinstance(e, Constructor):
            return self._preloaded(self.global_regs, self.prog.function(e, "wrapper"))
        if isinstance(e, Op):
            raise NotCompilable(f"the operator {e.name} used as a value")
        if isinstance(e, Function):
            raise NotCompilable("a fused kernel used as a value")
        return self.value(e)

    def _preloaded(self, table: dict[int, int], key: int) -> int:
        if key not in table:
            table[key] = self.new_reg()
        return table[key]

    # -- blocks -----------------------------------------------------------------------------------

    def block(self, e: Expr, tail: bool) -> int:
        """Emit ``e`` (a let chain); in tail position it returns, else its register."""
        while isinstance(e, Let):
            if tail and e.body is e.var:  # `let %x = v; %x` in tail position: v is
                e = e.value
                break
            self.bind(e.var, e.value)
            e = e.body
        if not tail:
            return self.value(e)
        if isinstance(e, If):
            else_ = _Label()
            self.jump_to(self.emit(Opcode.IF, self.atom(e.cond), -1), else_)
            self.block(e.true_branch, tail=True)
            self.place(else_)
            self.block(e.false_branch, tail=True)
            return -1
        if isinstance(e, Match):
            self.match(e, None)
            return -1
        if isinstance(e, Call) and self.tail_call(e):
            return -1
        self.emit(Opcode.RET, self.atom(e))
        return -1

    def bind(self, var: Var, value: Expr) -> None:
        if isinstance(value, Function) and is_primitive(value):
            self.prim_vars[var] = value
            return
        if isinstance(value, Var) and value in self.prim_vars:
            self.prim_vars[var] = self.prim_vars[value]
            return
        if isinstance(value, Var) and value in self.closures:
            self.closures[var] = self.closures[value]
            return
        if isinstance(value, Call) and isinstance(value.op, GlobalVar):
            func = self.prog.mod.functions[value.op]
            if _is_closure_maker(func):
                self.closures[var] = (
                    self.prog.function(value.op),
                    tuple(self.atom(a) for a in value.args),
                )
                return
        self.regs[var] = self.atom(value) if _atomic(value) else self.value(value)

    def value(self, e: Expr) -> int:
        """Emit non-tail ``e``; the register of its value."""
        if _atomic(e):
            return self.atom(e)
        if isinstance(e, Let):
            return self.block(e, tail=False)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Tuple):
            dst = self.new_reg()
            self.emit(Opcode.TUPLE, dst, tuple(self.atom(f) for f in e.fields))
            return dst
        if isinstance(e, TupleGetItem):
            dst = self.new_reg()
            self.emit(Opcode.FIELD, dst, self.atom(e.tuple_value), e.index)
            return dst
        if isinstance(e, If):
            dst = self.new_reg()
            else_, end = _Label(), _Label()
            self.jump_to(self.emit(Opcode.IF, self.atom(e.cond), -1), else_)
            self.emit(Opcode.MOVE, dst, self.block(e.true_branch, tail=False))
            self.jump_to(self.emit(Opcode.JUMP, -1), end)
            self.place(else_)
            self.emit(Opcode.MOVE, dst, self.block(e.false_branch, tail=False))
            self.place(end)
            return dst
        if isinstance(e, Match):
            dst = self.new_reg()
            self.match(e, dst)
            return dst
        if isinstance(e, RefCreate):
            dst = self.new_reg()
            self.emit(Opcode.REF, dst, self.atom(e.value))
            return dst
        if isinstance(e, RefRead):
            dst = self.new_reg()
            self.emit(Opcode.REF_READ, dst, self.atom(e.ref))
            return dst
        if isinstance(e, RefWrite):
            dst = self.new_reg()
            self.emit(Opcode.REF_WRITE, dst, self.atom(e.ref), self.atom(e.value))
            return dst
        raise NotCompilable(f"a {type(e).__name__} expression")

    # -- calls ------------------------------------------------------------------------------------

    def _callee(self, call: Call) -> tuple[str, Any]:
        op = call.op
        if isinstance(op, Function) and is_primitive(op):
            return "prim", op
        if isinstance(op, Var) and op in self.prim_vars:
            return "prim", self.prim_vars[op]
        if isinstance(op, Op):
            return "prim", _wrap_operator(call)
        if isinstance(op, Constructor):
            return "adt", op
        if isinstance(op, GlobalVar):
            if _is_closure_maker(self.prog.mod.functions[op]):
                return "maker", self.prog.function(op)
            return "global", self.prog.function(op)
        if isinstance(op, Var) and op in self.closures:
            fi, caps = self.closures[op]
            return "known", (fi, caps)
        if (
            isinstance(op, Call)
            and isinstance(op.op, GlobalVar)
            and _is_closure_maker(self.prog.mod.functions[op.op])
        ):  # @maker(captured...)(args...): straight to the closure's code
            return "known", (self.prog.function(op.op), tuple(self.atom(a) for a in op.args))
        return "closure", op

    def tail_call(self, call: Call) -> bool:
        """Emit ``call`` as a tail call if it is a call of a function; whether it was."""
        kind, what = self._callee(call)
        args = tuple(self.atom(a) for a in call.args)
        if kind == "global":
            self.emit(Opcode.TAIL_CALL, what, args)
        elif kind == "known":
            self.emit(Opcode.TAIL_CALL, what[0], what[1] + args)
        elif kind == "closure":
            self.emit(Opcode.TAIL_INVOKE_CLOSURE, self.atom(what), args)
        else:
            self.emit(Opcode.RET, self._call(kind, what, args, call))
        return True

    def call(self, call: Call) -> int:
        kind, what = self._callee(call)
        return self._call(kind, what, tuple(self.atom(a) for a in call.args), call)

    def _call(self, kind: str, what: Any, args: tuple[int, ...], call: Call) -> int:
        if kind == "prim":
            return self.primitive(what, args, call)
        dst = self.new_reg()
        if kind == "adt":
            self.emit(Opcode.ADT, dst, self.prog.constructor(what), args)
        elif kind == "maker":
            self.emit(Opcode.CLOSURE, dst, what, args)
        elif kind == "global":
            self.emit(Opcode.CALL, dst, what, args)
        elif kind == "known":
            self.emit(Opcode.CALL, dst, what[0], what[1] + args)
        else:
            self.emit(Opcode.INVOKE_CLOSURE, dst, self.atom(what), args)
        return dst

    def primitive(self, func: Function, args: tuple[int, ...], call: Call) -> int:
        how, index = self.prog.primitive(func)
        if how in (Opcode.INVOKE_REF, Opcode.INVOKE_DYNAMIC):
            dst = self.new_reg()
            self.emit(how, index, args, dst)
            return dst
        if how == Opcode.RESHAPE:
            dst = self.new_reg()
            ret = func.checked_type.ret_type  # type: ignore[attr-defined]
            assert isinstance(ret, TensorType)
            self.emit(Opcode.RESHAPE, dst, args[0], static_shape(ret))
            return dst
        flat: list[int] = []
        for p, a in zip(func.params, args, strict=True):
            self._flatten(p.checked_type, a, flat)
        ret = func.checked_type.ret_type  # type: ignore[attr-defined]
        outs = tuple(self.new_reg() for _ in flatten_type(ret))
        self.emit(Opcode.INVOKE, index, tuple(flat), outs)
        return self._rebuild(ret, iter(outs))

    def _flatten(self, ty: Type, reg: int, out: list[int]) -> None:
        if isinstance(ty, TupleType):
            for i, ft in enumerate(ty.fields):
                r = self.new_reg()
                self.emit(Opcode.FIELD, r, reg, i)
                self._flatten(ft, r, out)
        else:
            out.append(reg)

    def _rebuild(self, ty: Type, regs: Any) -> int:
        if isinstance(ty, TupleType):
            fields = tuple(self._rebuild(ft, regs) for ft in ty.fields)
            dst = self.new_reg()
            self.emit(Opcode.TUPLE, dst, fields)
            return dst
        return int(next(regs))

    # -- match ------------------------------------------------------------------------------------

    def match(self, m: Match, dst: int | None) -> None:
        """Emit ``m``: each clause tests its pattern, jumping to the next clause on failure;
        into ``dst``, or in tail position when ``dst`` is None."""
        data = self.atom(m.data)
        end = _Label()
        for clause in m.clauses:
            fail = _Label()
            self.pattern(clause.lhs, data, fail)
            if dst is None:
                self.block(clause.rhs, tail=True)
            else:
                self.emit(Opcode.MOVE, dst, self.block(clause.rhs, tail=False))
                self.jump_to(self.emit(Opcode.JUMP, -1), end)
            self.place(fail)
        self.emit(Opcode.FAIL, self.prog.message("no clause of the match matched", m.span), data)
        if dst is not None:
            self.place(end)

    def pattern(self, p: Pattern, reg: int, fail: _Label) -> None:
        if isinstance(p, PatternWildcard):
            return
        if isinstance(p, PatternVar):
            self.regs[p.var] = reg
            return
        if isinstance(p, PatternConstructor):
            c = p.constructor
            data = self.prog.mod.type_definitions.get(c.belong_to) if c.belong_to else None
            if data is None or len(data.constructors) > 1:  # one constructor: nothing to test
                self.jump_to(self.emit(Opcode.TAG_IS, reg, self.prog.constructor(c), -1), fail)
            subs = p.patterns
        elif isinstance(p, PatternTuple):
            subs = p.patterns
        else:
            raise NotCompilable(f"a {type(p).__name__} pattern")
        for i, sub in enumerate(subs):
            if isinstance(sub, PatternWildcard):
                continue
            r = self.new_reg()
            self.emit(Opcode.FIELD, r, reg, i)
            self.pattern(sub, r, fail)


def _wrap_operator(call: Call) -> Function:
    """A primitive function calling ``call``'s operator (an operator call left outside any
    fused function)."""
    params = []
    for i, a in enumerate(call.args):
        params.append(Var(f"p{i}", a.checked_type))
    body = Call(call.op, tuple(params), call.attrs, call.type_args, span=call.span)
    func = Function(tuple(params), body, call.checked_type, attrs=Attrs({"Primitive": 1}))
    from relay.typecheck.checker import infer_type

    typed = infer_type(func)
    assert isinstance(typed, Function)
    return typed


# -- liveness -------------------------------------------------------------------------------------


def _reads(ins: Instruction) -> list[int]:
    """The registers ``ins`` reads."""
    op, a = ins[0], ins[1:]
    if op == Opcode.INVOKE:
        return list(a[1])
    if op in (Opcode.INVOKE_REF, Opcode.INVOKE_DYNAMIC):
        return list(a[1])
    if op in (Opcode.MOVE, Opcode.FIELD, Opcode.RESHAPE, Opcode.REF, Opcode.REF_READ):
        return [a[1]]
    if op in (Opcode.IF, Opcode.RET):
        return [a[0]]
    if op == Opcode.TAG_IS:
        return [a[0]]
    if op in (Opcode.CALL, Opcode.CLOSURE, Opcode.ADT):
        return list(a[2])
    if op == Opcode.TAIL_CALL:
        return list(a[1])
    if op == Opcode.INVOKE_CLOSURE:
        return [a[1], *a[2]]
    if op == Opcode.TAIL_INVOKE_CLOSURE:
        return [a[0], *a[1]]
    if op == Opcode.TUPLE:
        return list(a[1])
    if op == Opcode.REF_WRITE:
        return [a[1], a[2]]
    if op == Opcode.FAIL:
        return [a[1]]
    return []


def _successors(pc: int, ins: Instruction, n: int) -> list[int]:
    op = ins[0]
    if op in (Opcode.RET, Opcode.TAIL_CALL, Opcode.TAIL_INVOKE_CLOSURE, Opcode.FAIL):
        return []
    if op == Opcode.JUMP:
        return [ins[1]]
    if op in JUMPS:
        return [pc + 1, ins[JUMPS[op]]]
    return [pc + 1] if pc + 1 < n else []


def _insert_kills(
    code: list[Instruction], specs: dict[int, tuple[tuple[int, ...], str]]
) -> list[Instruction]:
    """Before each kernel call, kill the registers written by earlier kernel calls whose
    values are dead there (nothing reads them on any path onwards) and whose buffers a kernel
    call from there on could take (same shape and dtype); ``specs`` gives the shape and dtype
    of each register a kernel writes."""
    n = len(code)
    invokes = [pc for pc, ins in enumerate(code) if ins[0] == Opcode.INVOKE]
    if len(invokes) < 2:
        return code
    live_in: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for pc in range(n - 1, -1, -1):
            ins = code[pc]
            out: set[int] = set()
            for s in _successors(pc, ins, n):
                out |= live_in[s]
            written = set(ins[3]) if ins[0] == Opcode.INVOKE else set()
            new = (out - written) | set(_reads(ins))
            if new != live_in[pc]:
                live_in[pc] = new
                changed = True
    wanted: list[set[tuple[tuple[int, ...], str]]] = [set() for _ in range(n + 1)]
    for pc in range(n - 1, -1, -1):  # the outputs of the kernel calls from pc on
        wanted[pc] = wanted[pc + 1]
        if code[pc][0] == Opcode.INVOKE:
            wanted[pc] = wanted[pc] | {specs[r] for r in code[pc][3]}
    tensors: set[int] = set()
    killed: set[int] = set()
    kills: dict[int, tuple[int, ...]] = {}
    for pc in range(n):
        ins = code[pc]
        if ins[0] == Opcode.INVOKE:
            dead = tuple(
                sorted(
                    r for r in tensors - killed if r not in live_in[pc] and specs[r] in wanted[pc]
                )
            )
            if dead:
                kills[pc] = dead
                killed.update(dead)
            tensors.update(ins[3])
    if not kills:
        return code
    # renumber the jump targets for the inserted instructions
    new_pc: list[int] = []
    shift = 0
    for pc in range(n):
        if pc in kills:
            shift += 1
        new_pc.append(pc + shift)
    # a jump to an instruction with a kill lands on the kill
    target = [p - (1 if pc in kills else 0) for pc, p in enumerate(new_pc)]
    out_code: list[Instruction] = []
    for pc, ins in enumerate(code):
        if pc in kills:
            out_code.append((Opcode.KILL, kills[pc]))
        if ins[0] in JUMPS:
            slot = JUMPS[ins[0]]
            lst = list(ins)
            lst[slot] = target[lst[slot]] if lst[slot] < n else lst[slot] + shift
            ins = tuple(lst)
        out_code.append(ins)
    return out_code


# -- the whole program ----------------------------------------------------------------------------


def generate(mod: Module, entry: GlobalVar) -> tuple[VMProgram, list[Function]]:
    """VM code for ``entry`` of the prepared module ``mod`` (see :func:`prepare`), and the
    primitive functions its ``invoke`` instructions call, by kernel index (their symbols are
    filled in by :func:`compile_vm`)."""
    prog = _Program(mod)
    first = prog.build(entry)
    functions = [f for f in prog.functions if f is not None]
    assert len(functions) == len(prog.functions)
    program = VMProgram(
        functions,
        first,
        [
            KernelCall("", outputs, scalar_tree(f))
            for f, outputs in zip(prog.prims, prog.outputs, strict=True)
        ],
        prog.constants,
        prog.constructors,
        prog.references,
        prog.messages,
    )
    return program, prog.prims


def _outputs(func: Function) -> list[tuple[tuple[int, ...], str]]:
    ret = func.checked_type.ret_type  # type: ignore[attr-defined]
    return [(static_shape(t), str(t.dtype)) for t in flatten_type(ret)]
