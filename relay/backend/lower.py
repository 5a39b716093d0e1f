"""Lowering a primitive function to one TVM PrimFunc.

FuseOps leaves each group of fused operators as a ``Primitive=1`` function whose body is
dataflow: operator calls, tuples, projections, scalar constants. This module turns one such
function into a tensor-expression graph and then a PrimFunc (TVM's TE → TensorIR path,
``te.create_prim_func``), the way TVM's ``TECompiler`` (``src/relay/backend/te_compiler.cc``)
lowered Relay's primitive functions:

* each parameter becomes a ``te.placeholder`` (a tuple-typed parameter one per field,
  flattened in order);
* the body is walked in post-order; each operator call is lowered by its registry rule
  (:class:`relay.op.registry.LoweringCall`), tuples and projections are followed through;
  a constant whose elements are all equal (a rank-0 one, a broadcast fill) becomes an inline
  compute, any other constant an extra kernel input;
* the result's tensors (flattened) are the PrimFunc's outputs; an output that is a
  parameter or another output gets a copy stage, so every output buffer is written;
* an operator whose rule binds its input with ``tirx.Let`` (fast ``exp``, ``tanh``,
  ``sigmoid``...: the input is used several times) nests its producers' expression in the
  binding, and TVM re-simplifies a bound value at each level, so compile time doubles or
  worse per nested binding operator (6 fused ``tanh`` took 15 s, 7 did not finish). A
  binding operator that reads a value :data:`MAX_BOUND_DEPTH` of them deep reads it through
  a *barrier* stage (named ``relay_barrier``) that the schedules compute as a stage of its
  own instead of inlining it: the kernel makes one more pass over memory, and compile time
  stays linear. (Decided at the reader: a kernel's result is not copied through a barrier
  when nothing binds it after.)
  An operator whose rule binds a whole chain of values (fast ``exp`` and ``sigmoid``:
  :data:`CHAIN_BINDINGS`) on the result of another such chain gets that result through a
  barrier at once, since TVM's simplifier multiplies the two. A value read more than once
  in the kernel is read through a barrier once its expression holds :data:`SHARED_SIZE`
  operators, an operator that rounds its result to bfloat16 reads a value
  :data:`MAX_ROUNDINGS` roundings deep through one (each rounding binds its value once
  lowered), and a rule may ask for an argument materialized
  (:meth:`~relay.op.registry.LoweringCall.materialize`: an integer division's divisor).

A function whose types have ``?`` dimensions lowers with one size variable standing for all
of them (:func:`kernel_shape`): :mod:`relay.backend.vm.dynamic` makes such functions only
where every ``?`` is the same size at run time (an elementwise function over a flattened
``(?, 16)`` view of its operands), and only the elementwise rules accept them.

A function whose types have *shape variables* (``Tensor[(n, 784), float32]``) lowers with an
``int64`` TIR variable per shape variable (:class:`ShapeSymbols`) and each dimension as its
expression over them (``n * 3``, ``(h - 3) // 2 + 1``; one expression object per dimension,
so the rules' comparisons of dimensions by identity hold). The kernel takes the variables'
values as scalar arguments after its buffers and flags, and its indices are all ``int64``.
The rules see such dimensions through :func:`lowering_dims` (``common.static``): a rule that
needs a constant size converts one with ``int()``, which raises, and the lowering fails
with a CompileError naming the operator (the graph planner then leaves the program to the
VM).

The *anchor* is the call with the highest fusion pattern (TVM's ``OpPatternKind``: an
``OUT_ELEMWISE_FUSABLE`` matmul or convolution over a reduction over injective ops); the
CPU schedules (:mod:`relay.backend.schedule`) are chosen by it.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay.errors import CompileError
from relay.ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from relay.ir.span import Span
from relay.ir.types import SymbolicDim, TensorType, TupleType, Type, TypeVar, _AnyDim
from relay.op.registry import LoweringCall, OpPattern, get_op


def flatten_type(ty: Type) -> list[TensorType]:
    """The tensors of a (possibly nested tuple) type, in order."""
    if isinstance(ty, TensorType):
        return [ty]
    if isinstance(ty, TupleType):
        return [t for f in ty.fields for t in flatten_type(f)]
    raise CompileError(f"a compiled kernel cannot take or return a value of type {ty}")


def is_static(types: Any) -> bool:
    """Whether every type in ``types`` is made of tensors (and tuples of them) whose shapes
    are all known integers."""
    try:
        for ty in types:
            for t in flatten_type(ty):
                static_shape(t)
    except CompileError:
        return False
    return True


def static_shape(ty: TensorType) -> tuple[int, ...]:
    """``ty``'s shape as ints; a symbolic or unknown dimension is a CompileError."""
    out = []
    for d in ty.shape:
        if not isinstance(d, int):
            raise CompileError(
                f"compiled kernels need static shapes; {ty} has a dimension known only at run "
                "time (the VM runs such functions with their operators' references)"
            )
        out.append(d)
    return tuple(out)


_SIZE: contextvars.ContextVar[Any] = contextvars.ContextVar("relay_kernel_size", default=None)
"""The size variable of the function being lowered, when its types have ``?`` dimensions."""

_SYMBOLS: contextvars.ContextVar[ShapeSymbols | None] = contextvars.ContextVar(
    "relay_kernel_symbols", default=None
)
"""The shape variables of the function being lowered, when its types have any."""


class ShapeSymbols:
    """The TIR variables of a primitive function's shape variables, and the TIR expression
    of each symbolic dimension (memoized, so one dimension is one expression object and the
    lowering rules' identity comparisons of dimensions hold)."""

    def __init__(self, variables: Sequence[TypeVar]) -> None:
        from relay.backend.runtime import tvm

        tirx = tvm().tirx
        self.variables = list(variables)
        self.tir = [tirx.Var(v.name_hint or f"d{k}", "int64") for k, v in enumerate(variables)]
        self._memo: dict[Any, Any] = {}

    def expr(self, d: Any) -> Any:
        """The TIR expression of relay dimension ``d`` (an int stays an int)."""
        if isinstance(d, int):
            return d
        key = d if not isinstance(d, TypeVar) else ("var", id(d))
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._convert(d)
        return found

    def _convert(self, d: Any) -> Any:
        from relay.backend.runtime import tvm
        from relay.ir import dim

        tirx = tvm().tirx
        if isinstance(d, TypeVar):
            for v, t in zip(self.variables, self.tir, strict=True):
                if v is d:
                    return t
            raise CompileError(f"the shape variable {d.name_hint} is not a parameter's")
        if isinstance(d, dim.FloorDiv | dim.FloorMod):
            num, den = self._tir(d.num), self._tir(d.den)
            return (
                tirx.floordiv(num, den) if isinstance(d, dim.FloorDiv) else tirx.floormod(num, den)
            )
        if isinstance(d, dim.DimExpr):
            total = tirx.const(d.const, "int64")
            for mono, coeff in d.terms:
                term = tirx.const(coeff, "int64")
                for atom in mono:
                    term = term * self.expr(atom)
                total = total + term
            from tvm.sym.analyzer import Analyzer

            return Analyzer().simplify(total)
        raise CompileError(f"a compiled kernel cannot have the dimension {d}")

    def _tir(self, d: Any) -> Any:
        from relay.backend.runtime import tvm

        e = self.expr(d)
        return tvm().tirx.const(e, "int64") if isinstance(e, int) else e


def shape_variables(types: Iterable[Type]) -> list[TypeVar]:
    """The shape variables in the dimensions of ``types`` (tensors and tuples of them), in
    order of first occurrence."""
    from relay.ir.dim import dim_vars

    out: list[TypeVar] = []
    for ty in types:
        for t in flatten_type(ty):
            for d in t.shape:
                if isinstance(d, int | _AnyDim):
                    continue
                for v in dim_vars(d):
                    if isinstance(v, TypeVar) and not any(v is u for u in out):
                        out.append(v)
    return out


def kernel_shape(ty: TensorType) -> tuple[Any, ...]:
    """``ty``'s shape for a TE computation: its static dimensions; each ``?`` the size
    variable of the function being lowered; each symbolic dimension its TIR expression over
    the function's shape variables (a CompileError outside such functions)."""
    size = _SIZE.get()
    symbols = _SYMBOLS.get()
    if size is None and symbols is None:
        return static_shape(ty)
    out: list[Any] = []
    for d in ty.shape:
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, _AnyDim) and size is not None:
            out.append(size)
        elif not isinstance(d, _AnyDim) and symbols is not None:
            out.append(symbols.expr(d))
        else:
            return static_shape(ty)  # raises
    return tuple(out)


def lowering_dims(shape: Sequence[Any]) -> tuple[Any, ...]:
    """A shape (a relay type's, or a te.Tensor's) for a lowering rule: each dimension an int
    when it is constant, else its TIR expression (in a function with shape variables or
    ``?`` dimensions); a symbolic relay dimension outside such a function is a
    CompileError."""
    symbols = _SYMBOLS.get()
    out: list[Any] = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
            continue
        try:
            out.append(int(d))
            continue
        except TypeError:
            pass
        if isinstance(d, _AnyDim):
            size = _SIZE.get()
            if size is None:
                raise CompileError(
                    "compiled kernels need static shapes; ? is known only at run time"
                )
            out.append(size)
        elif isinstance(d, TypeVar | SymbolicDim):
            if symbols is None:
                raise CompileError(f"compiled kernels need static shapes; {d} is symbolic")
            out.append(symbols.expr(d))
        else:
            out.append(d)  # a TIR expression already
    return tuple(out)


def static_dim(d: Any) -> int | None:
    """A TE shape's dimension as an int, or None for the size variable."""
    try:
        return int(d)
    except TypeError:
        return None


@dataclass
class LoweredFunc:
    """A primitive function as a PrimFunc, before scheduling.

    ``inputs`` are the kernel's input tensor types (the parameters flattened, then the
    hoisted ``constants``), ``outputs`` its output types; the PrimFunc's buffers are the
    inputs then the outputs. ``anchor`` is the anchor operator's name and ``anchor_ops``
    the TE stage names of its results."""

    prim_func: Any
    inputs: list[TensorType]
    outputs: list[TensorType]
    constants: list[np.ndarray[Any, Any]] = field(default_factory=list)
    anchor: str = ""
    anchor_ops: list[str] = field(default_factory=list)
    op_names: list[str] = field(default_factory=list)
    checks: list[tuple[str, Span | None]] = field(default_factory=list)
    """Run-time checks: after the outputs, one int32 ``(1,)`` flag per check, positive when
    the check failed, with the message and span to report."""
    shape_vars: list[TypeVar] = field(default_factory=list)
    """The function's shape variables: the kernel takes their values, as int64 scalars,
    after its outputs and flags (TVM checks every buffer's shape against them)."""
    parallel: bool | None = None
    """For a function with ``?`` dimensions (whose loop extents are not known when it is
    scheduled): whether its outer loop runs in parallel (``Parallel=1`` on the function)."""


def _type_of(e: Expr) -> Type:
    ty = e._checked_type
    if ty is None:
        raise CompileError("a primitive function must be type-checked before lowering", e.span)
    return ty


MAX_BOUND_DEPTH = 2
"""Binding operators (see the module docstring) nested in one expression: another binding
operator reads such a value through a barrier stage."""

MAX_ROUNDINGS = 4
"""bfloat16 roundings nested in one expression (each bound by a ``tirx.Let`` once lowered,
whose value holds the roundings before it: TVM's LLVM code generator simplifies each bound
value as it binds it, and a rounding reads its value three times): an operator that rounds
reads a value this many roundings deep through a barrier stage. Measured per kernel: 4
nested roundings 0.01 s, 6 0.6 s, 8 52 s (a bfloat16 ``exp(negative(...))`` chained 4
deep), and ``tanh(multiply(t, t))`` 3 deep, whose product reads the ``tanh`` before it twice,
99 s; now 0.02-0.05 s each."""

CHAIN_BINDINGS = 4
"""Bindings from which an operator's rule binds a *chain* (fast ``exp``: its argument, the
clamped argument, ``n`` and ``r``; fast ``sigmoid``: those and ``e``). TVM's simplifier
substitutes each bound value into its uses, so a chain on the result of another chain is
the product of the two to it: ``sigmoid(sigmoid(x))`` took 6.7 s to compile, ``exp(exp(x))``
0.45 s. The inner chain's result is materialized first (a barrier) wherever an operator
binding a chain reads one, directly or through operators that bind nothing: 0.1 s each."""


def _too_deep(
    arg: Any, weight: int, bound: dict[int, int], chains: dict[int, int], env: dict[int, Any]
) -> bool:
    """Whether an operator whose rule made ``weight`` bindings reads ``arg`` materialized: a
    value :data:`MAX_BOUND_DEPTH` binding operators deep, or (for a chain) another chain's.
    Decided at the reader, so a kernel's result is never copied through a barrier for
    nothing (``exp(tanh(x))`` as a result was)."""
    from relay.backend.runtime import tvm

    if not isinstance(env.get(id(arg)), tvm().te.Tensor):
        return False
    if bound.get(id(arg), 0) >= MAX_BOUND_DEPTH:
        return True
    return weight >= CHAIN_BINDINGS and chains.get(id(arg), 0) > 0


def _repeated(
    args: Sequence[Expr], value: Any, env: dict[int, Any], selects: dict[Any, int]
) -> list[Expr]:
    """The arguments among ``args`` that the rule's result ``value`` reads more than once
    (:func:`relay.backend.expansion.reads`) where their expanded expression holds
    :data:`~relay.backend.expansion.REPEAT_SELECTS` selects or more: the rule is applied
    again to them materialized."""
    from relay.backend.expansion import REPEAT_SELECTS, expanded_selects, reads

    tensors = {id(a): env[id(a)] for a in args if is_inlined_stage(env[id(a)])}
    big = [t for t in tensors.values() if expanded_selects(t, selects) >= REPEAT_SELECTS]
    if not big:
        return []
    stop = frozenset(t.op for t in tensors.values())
    results = _flatten_value(value)
    # (per result: results are stages of their own, so reads in two add up, not multiply)
    repeated = {t.op for t in big if max(reads(r, t, stop - {t.op}) for r in results) > 1}
    return [a for a in args if id(a) in tensors and tensors[id(a)].op in repeated]


def _apply_rule(rule: Any, call: Any, name: str, node: Any) -> Any:
    try:
        return rule(call)
    except CompileError:
        raise
    except Exception as err:  # a rule's failure names the operator and the call
        raise CompileError(f"cannot lower {name}: {err}", node.span) from err


BARRIER = "relay_barrier"
"""The name of a barrier stage's block (TVM numbers repeated names: ``relay_barrier_1``)."""


SHARED_SIZE = 8
"""Operators in the expression of a value that a kernel reads more than once (two
operators read it, or one twice): from this many it is read through a barrier stage
rather than repeated. Each such read doubles the inlined expression, and TVM's simplifier
takes more than linear time in its size: ``e = where(less(e, y), add(e, x), x)`` nested 4
deep (16 copies of the innermost) took 8.3 s to compile in int32, 5 deep over a minute
(found by a fuzzing review)."""


def _use_counts(body: Expr) -> dict[int, int]:
    """How often each expression of a primitive function's dataflow ``body`` is read by a
    call, a tuple or a projection (by ``id``)."""
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import children

    counts: dict[int, int] = {}
    for e in sub_expressions(body):
        for c in children(e):
            counts[id(c)] = counts.get(id(c), 0) + 1
    return counts


def is_inlined_stage(value: Any) -> bool:
    """Whether ``value`` is a tensor computed in the kernel that the schedules inline into
    its readers: not an input, a barrier, or a stage holding one constant."""
    from relay.backend.runtime import tvm

    te = tvm().te
    if not isinstance(value, te.Tensor) or not isinstance(value.op, te.ComputeOp):
        return False
    if value.op.name.startswith((BARRIER, BOOL_VIEW)):
        return False
    body = value.op.body
    return not (len(body) == 1 and isinstance(body[0], tvm().tirx.IntImm | tvm().tirx.FloatImm))


def _invariant_along_vectors(arg: Expr, out: Type) -> bool:
    """Whether ``arg``, read by a call whose result has type ``out``, is one value along the
    result's innermost axis of more than one element, the axis the CPU schedules vectorize:
    it broadcasts there (numpy's alignment: an axis of 1, or none).

    Such a value is scalar in the vectorized loop, and TVM's vectorizer visits the operands
    of a product of scalars a second time when one of them changed at the first visit; a
    call it does not vectorize (``erf``, libm's ``tanhf``) always counts as changed. A
    ``tirx.Let`` there is then bound twice, which the vectorizer rejects ("Let cannot bind
    the same var to two different values": ``gelu(floor_mod(c, c)) + x`` with ``c`` of
    shape ``(1, 1)``, found by a fuzzing review). So a bound value (one whose expression
    holds a binding operator) read that way is materialized first: a stage of the size of
    ``arg``, computed once per row rather than once per vector."""
    arg_type = _type_of(arg)
    if not isinstance(arg_type, TensorType) or not isinstance(out, TensorType):
        return False
    wide = [k for k, d in enumerate(out.shape) if not (isinstance(d, int) and d == 1)]
    if not wide:
        return False
    k = wide[-1] - (len(out.shape) - len(arg_type.shape))
    if k < 0:
        return True
    d = arg_type.shape[k]
    return isinstance(d, int) and d == 1


def _barrier(te: Any, value: Any) -> Any:
    """``value`` through a stage the schedules keep (see the module docstring). A bool value
    is stored as int8 and read back as ``!= 0`` (an inlined view, :data:`BOOL_VIEW`): a bool
    buffer read in a vectorized select reached LLVM as a vector of i8 for a condition, which
    its verifier rejects ("Invalid operands for select instruction": ``where(logical_and(m,
    m), x, 1)`` of ``m = less(r, floor_mod(r, 3))``, found by a fuzzing review)."""
    from relay.backend.runtime import tvm

    if value.dtype != "bool":
        return te.compute(value.shape, lambda *i: value(*i), name=BARRIER)
    tirx = tvm().tirx
    stored = te.compute(value.shape, lambda *i: tirx.Cast("int8", value(*i)), name=BARRIER)
    zero = tirx.const(0, "int8")
    return te.compute(value.shape, lambda *i: tirx.NE(stored(*i), zero), name=BOOL_VIEW)


BOOL_VIEW = "relay_bool_view"
"""The stage that reads a bool barrier's int8 buffer as bools (see :func:`_barrier`)."""


def _flatten_value(v: Any) -> list[Any]:
    if isinstance(v, tuple):
        return [t for f in v for t in _flatten_value(f)]
    return [v]


def is_dynamic(func: Function) -> bool:
    """Whether primitive function ``func`` takes a tensor with an unknown (``?``) or a
    symbolic dimension: its kernel is then compiled for symbolic sizes
    (:func:`kernel_shape`), and keeps TVM's checks of its arguments."""
    return any(
        not isinstance(d, int)
        for p in func.params
        for t in flatten_type(p.type_annotation or _type_of(p))
        for d in t.shape
    )


def has_any(func: Function) -> bool:
    """Whether primitive function ``func`` takes a tensor with a ``?`` dimension."""
    return any(
        isinstance(d, _AnyDim)
        for p in func.params
        for t in flatten_type(p.type_annotation or _type_of(p))
        for d in t.shape
    )


_TARGET: contextvars.ContextVar[str] = contextvars.ContextVar(
    "relay_lowering_target", default="llvm"
)
"""The kind of target (``llvm``, ``cuda``) the function being lowered is for."""


_VECTOR_LDEXP: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "relay_lowering_vector_ldexp", default=True
)
"""Whether the CPU the function is lowered for scales vectors by powers of two in one
instruction (see :attr:`relay.backend.target.Target.vector_ldexp`)."""


def lowering_target() -> str:
    """The kind of target the function being lowered is for: a rule uses it where the
    targets' code differs (an LLVM intrinsic has no CUDA C spelling)."""
    return _TARGET.get()


def lowering_vector_ldexp() -> bool:
    """Whether ``llvm.ldexp`` of a vector is vector code on the CPU lowered for."""
    return _VECTOR_LDEXP.get()


def lower_primitive(
    func: Function, fast_math: bool = True, target: str = "llvm", vector_ldexp: bool = True
) -> LoweredFunc:
    """The PrimFunc (unscheduled) computing primitive function ``func`` (see module doc),
    for a target of kind ``target`` (``vector_ldexp``: the CPU's, as
    :attr:`relay.backend.target.Target.vector_ldexp`)."""
    token = _TARGET.set(target)
    ldexp = _VECTOR_LDEXP.set(vector_ldexp)
    try:
        return _lower_primitive(func, fast_math)
    finally:
        _VECTOR_LDEXP.reset(ldexp)
        _TARGET.reset(token)


def _lower_primitive(func: Function, fast_math: bool) -> LoweredFunc:
    from relay.backend.runtime import tvm

    dynamic = has_any(func)
    variables = shape_variables(
        [*(p.type_annotation or _type_of(p) for p in func.params), _type_of(func.body)]
    )
    symbols = ShapeSymbols(variables) if variables else None
    token = _SIZE.set(tvm().tirx.Var("n", "int64") if dynamic else None)
    token_symbols = _SYMBOLS.set(symbols)
    try:
        lowered = _lower(func, fast_math, symbols)
    finally:
        _SIZE.reset(token)
        _SYMBOLS.reset(token_symbols)
    if dynamic:
        lowered.parallel = func.attrs.get("Parallel") == 1
    return lowered


def _lower(func: Function, fast_math: bool, symbols: ShapeSymbols | None) -> LoweredFunc:
    from relay.backend.runtime import tvm
    from relay.op.lowering.elemwise import BINDINGS

    te = tvm().te
    inputs: list[TensorType] = []
    placeholders: list[Any] = []
    env: dict[int, Any] = {}
    for p in func.params:
        ty = p.type_annotation or _type_of(p)
        parts = []
        for t in flatten_type(ty):
            ph = te.placeholder(kernel_shape(t), str(t.dtype), name=f"p{len(placeholders)}")
            placeholders.append(ph)
            inputs.append(t)
            parts.append(ph)
        env[id(p)] = rebuild_type(ty, iter(parts))

    constants: list[np.ndarray[Any, Any]] = []
    const_phs: list[Any] = []
    chains: dict[int, int] = {}  # operators binding a chain (CHAIN_BINDINGS) in a row, likewise
    bound: dict[int, int] = {}  # binding operators in a row ending at a call, since a barrier
    rounds: dict[int, int] = {}  # bfloat16 roundings nested in a call's value, likewise
    uses = _use_counts(func.body)
    op_sizes: dict[int, int] = {}  # the operators in a call's inlined expression
    selects: dict[Any, int] = {}  # a stage's expanded selects (relay.backend.expansion)
    best: tuple[int, str, list[str]] = (-1, "", [])
    op_names: list[str] = []
    checks: list[tuple[Any, str, Span | None]] = []

    # iterative post-order over the dataflow body
    stack: list[tuple[Expr, bool]] = [(func.body, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in env:
            continue
        if isinstance(node, Call):
            if not ready:
                stack.append((node, True))
                stack.extend((a, False) for a in reversed(node.args))
                continue
            if not isinstance(node.op, Op):
                raise CompileError("a primitive function may only call operators", node.span)
            opdef = get_op(node.op.name)
            rule = opdef.rule("lowering", node.span)
            out_type = _type_of(node)
            for a in node.args:  # a value read more than once, too big to repeat
                big = uses[id(a)] > 1 and op_sizes.get(id(a), 0) >= SHARED_SIZE
                # a bound value that is one value along the vectorized loop (see the docstring)
                big = big or (bound.get(id(a), 0) > 0 and _invariant_along_vectors(a, out_type))
                if big and is_inlined_stage(env[id(a)]):
                    env[id(a)] = _barrier(te, env[id(a)])
                    bound[id(a)] = chains[id(a)] = op_sizes[id(a)] = rounds[id(a)] = 0
            call = LoweringCall(
                name=opdef.name,
                attrs=node.attrs,
                args=tuple(env[id(a)] for a in node.args),
                arg_types=tuple(_type_of(a) for a in node.args),
                out_type=out_type,
                fast_math=fast_math,
                span=node.span,
                bound_depths=tuple(bound.get(id(a), 0) for a in node.args),
            )
            bindings, roundings = BINDINGS.count, BINDINGS.roundings
            value = _apply_rule(rule, call, opdef.name, node)
            weight = BINDINGS.count - bindings
            rounded = BINDINGS.roundings > roundings
            deep = {
                id(a): a for a in node.args if weight and _too_deep(a, weight, bound, chains, env)
            }
            if rounded:  # (a value MAX_ROUNDINGS deep, see there)
                deep.update(
                    (id(a), a)
                    for a in node.args
                    if rounds.get(id(a), 0) >= MAX_ROUNDINGS and is_inlined_stage(env[id(a)])
                )
            asked = (node.args[i] for i in sorted(call.materialized))
            deep.update((id(a), a) for a in asked if is_inlined_stage(env[id(a)]))
            deep.update((id(a), a) for a in _repeated(node.args, value, env, selects))
            if deep:  # those arguments materialized first (barriers), and the rule again
                for a in deep.values():
                    env[id(a)] = _barrier(te, env[id(a)])
                    bound[id(a)] = chains[id(a)] = rounds[id(a)] = op_sizes[id(a)] = 0
                args = tuple(env[id(a)] for a in node.args)
                depths = tuple(bound.get(id(a), 0) for a in node.args)
                call = dataclasses.replace(
                    call, args=args, checks=[], materialized=set(), bound_depths=depths
                )
                value = _apply_rule(rule, call, opdef.name, node)  # (the same bindings)
            depth = max((bound.get(id(a), 0) for a in node.args), default=0) + (weight > 0)
            chain = max((chains.get(id(a), 0) for a in node.args), default=0)
            chain += weight >= CHAIN_BINDINGS
            bound[id(node)] = depth
            rounds[id(node)] = max((rounds.get(id(a), 0) for a in node.args), default=0) + rounded
            chains[id(node)] = chain
            op_sizes[id(node)] = 1 + sum(op_sizes.get(id(a), 0) for a in node.args)
            env[id(node)] = value
            checks.extend((v, message, node.span) for v, message in call.checks)
            op_names.append(opdef.name)
            rank = int(opdef.pattern) if opdef.pattern != OpPattern.TUPLE else 0
            if rank >= best[0]:
                best = (rank, opdef.name, [t.op.name for t in _flatten_value(value)])
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
            env[id(node)] = env[id(node.tuple_value)][node.index]
        elif isinstance(node, Constant):
            ty = _type_of(node)
            assert isinstance(ty, TensorType)
            data = np.asarray(node.data)
            if data.size and _uniform(data):
                value = tvm().tirx.const(data.flat[0].item(), str(ty.dtype))
                env[id(node)] = _filled(te, data.shape, value)
            else:
                ph = te.placeholder(data.shape, str(ty.dtype), name=f"c{len(const_phs)}")
                const_phs.append(ph)
                constants.append(data)
                env[id(node)] = ph
        elif isinstance(node, Var):
            raise CompileError(f"free variable %{node.name_hint} in a primitive function")
        else:
            raise CompileError(
                f"a primitive function cannot contain {type(node).__name__}", node.span
            )

    result = _flatten_value(env[id(func.body)])
    outputs = flatten_type(_type_of(func.body))
    seen: set[int] = set()
    out_tensors = []
    binds = any(bound.values())
    for i, t in enumerate(result):
        if binds and str(t.dtype) == "bfloat16" and is_inlined_stage(t):
            # TVM's conversion of a bfloat16 result for its store reads the value three
            # times; a tirx.Let in it was then bound twice by the vectorizer, which rejects
            # it (a bfloat16 where of a floor_mod, found by a fuzzing review): the value is
            # computed into a stage of its own (float32 in TVM's storage) and copied out
            t = _copy(te, _barrier(te, t), f"copy{i}")
        elif isinstance(t.op, te.PlaceholderOp) or id(t) in seen:
            t = _copy(te, t, f"copy{i}")
        seen.add(id(t))
        out_tensors.append(t)
    flags = [_check_flag(te, v, i) for i, (v, _, _) in enumerate(checks)]
    kept = [(m, s) for (_, m, s), f in zip(checks, flags, strict=True) if f is not None]
    flags = [f for f in flags if f is not None]
    sizes = symbols.tir if symbols is not None else []
    tensors = [*placeholders, *const_phs, *out_tensors, *flags]
    try:
        prim = te.create_prim_func(
            [*tensors, *sizes],
            # one index type with the sizes'; on the GPU int64 where a tensor has 2^31
            # elements or more (see INT32_ELEMENTS)
            index_dtype_override="int64" if sizes or _gpu_past_int32(tensors) else None,
        )
    except Exception as err:  # (TVM's int64 rewrite of a kernel of symbolic sizes can fail)
        lines = str(err).strip().splitlines() or [""]
        raise CompileError(f"cannot make a kernel of {', '.join(op_names)}: {lines[-1]}") from err
    inputs.extend(TensorType(tuple(c.shape), str(c.dtype)) for c in constants)
    return LoweredFunc(
        prim_func=prim,
        inputs=inputs,
        outputs=outputs,
        constants=constants,
        anchor=best[1],
        anchor_ops=best[2],
        op_names=op_names,
        checks=kept,
        shape_vars=symbols.variables if symbols is not None else [],
    )


def _check_flag(te: Any, violated: Any, index: int) -> Any:
    """An int32 ``(1,)`` stage, positive when any element of ``violated`` is nonzero (None
    for an empty tensor, which cannot violate anything).

    The flag is the ``max`` of 0/1 indicators with ``max``'s own identity, the lowest int32,
    which a symbolic extent of 0 leaves (not positive: clear). With that identity TVM
    recognizes the reduction, so the schedules can factor it (``rfactor``) or reduce it
    across GPU threads; with 0 they could not."""
    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    shape = list(violated.shape)
    if any(static_dim(d) == 0 for d in shape):
        return None

    def flag(*i: Any) -> Any:
        v = violated(*i)
        if violated.dtype == "bool":  # (a bool compared with != lowers to an invalid fcmp)
            return tirx.Cast("int32", v)
        return tirx.Cast("int32", v != tirx.const(0, violated.dtype))

    if not shape:
        return te.compute((1,), lambda _: flag(), name=f"check{index}")
    axes = [te.reduce_axis((0, d), name=f"c{k}") for k, d in enumerate(shape)]
    return te.compute((1,), lambda _: te.max(flag(*axes), axis=axes), name=f"check{index}")


INT32_ELEMENTS = 1 << 31
"""Elements from which a GPU kernel's indices are int64. TVM indexes static shapes with
int32, and the GPU schedules fuse the loops: over more elements the fused index overflowed
(a 46,000 x 47,000 int8 add guarded its threads with a negative bound and computed
nothing). CPU kernels keep int32 loops, whose indices LLVM widens to 64 bits (the same add,
its sum and transpose gave numpy's results); with int64 loops LLVM left the sum over the
rows scalar (0.07 -> 0.63 s)."""


def _gpu_past_int32(tensors: list[Any]) -> bool:
    """Whether this is a GPU kernel and a tensor of the stage graph of ``tensors`` (inputs,
    intermediate stages and outputs) has :data:`INT32_ELEMENTS` elements or more."""
    if lowering_target() != "cuda":
        return False
    seen: set[tuple[int, int]] = set()
    stack = list(tensors)
    while stack:
        t = stack.pop()
        key = (hash(t.op), int(t.value_index))  # (by the objects: == on tensors builds
        if key in seen:  # an expression, and raises for rank 0)
            continue
        seen.add(key)
        n = 1
        for d in t.shape:
            n *= int(d) if static_dim(d) is not None else 1
        if n >= INT32_ELEMENTS:
            return True
        stack.extend(t.op.input_tensors)
    return False


def _copy(te: Any, t: Any, name: str) -> Any:
    """A stage copying ``t`` (an output must be written by the kernel itself)."""
    return te.compute(t.shape, lambda *i: t(*i), name=name)


def _uniform(data: np.ndarray[Any, Any]) -> bool:
    """Every element of ``data`` is the first (NaNs included)."""
    first = data.flat[0]
    if data.size == 1 or bool(np.all(data == first)):
        return True
    return bool(data.dtype.kind in "fc" and np.isnan(first) and np.all(np.isnan(data)))


def _filled(te: Any, shape: tuple[int, ...], value: Any) -> Any:
    """A stage of ``shape`` holding ``value`` everywhere (inlined into its users by every
    schedule): a constant whose elements are all equal is never a kernel input."""
    return te.compute(shape, lambda *_: value, name="const")


def rebuild_type(ty: Type, parts: Any) -> Any:
    """The inverse of :func:`flatten_type`: values of ``ty``'s tensors, taken in order from
    the iterator ``parts``, nested in ``ty``'s tuples."""
    if isinstance(ty, TupleType):
        return tuple(rebuild_type(f, parts) for f in ty.fields)
    return next(parts)
