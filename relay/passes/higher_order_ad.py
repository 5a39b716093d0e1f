"""Reverse-mode automatic differentiation: the higher-order mode.

This is the transformation of Relay's ``gradient.cc`` (``ReverseAD``), described in Roesch
et al., *Relay: A High-Level Compiler for Deep Learning* (2019), section 4.2, which in turn
follows Wang et al., *Demystifying Differentiable Programming: Shift/Reset the Penultimate
Backpropagator* (ICFP 2019): reverse mode as a local rewrite that works on any program,
because the backward pass is itself a closure built while the forward pass runs.

Values. Every floating-point tensor ``x`` of the program is paired with a reference cell
holding its adjoint, ``(x, ref(zeros_like(x)))``; integer and boolean tensors are left
alone (no gradient flows into them). ``Tensor[s, f32]`` becomes
``(Tensor[s, f32], Ref[Tensor[s, f32]])``, and every other construct is rewritten over
these pairs by the machinery shared with the forward mode
(:mod:`relay.passes.ad_rewrite`): types, data types, closures, control flow, references,
and globals (``@f`` becomes ``@f_rev``, taking the tape first).

The tape. A reference ``bp : Ref[fn () -> ()]`` holds the backpropagator: the closure that
runs the backward pass of everything computed so far. Each operator call
``y = op(x1, ..., xn)`` becomes

.. code-block:: text

    let y = op(x1.0, ..., xn.0);             // the primal computation
    let y_ad = (y, ref(zeros_like(y)));
    let prev = !bp;
    bp := fn () {                            // push this call's backward step
      let g = !y_ad.1;
      x1.1 := !x1.1 + <gradient rule of op for x1, at g>;  ...
      prev()
    };

so the backward steps run in exactly the reverse of the order the calls ran in, whatever
control flow chose that order: branches, loops turned into recursion, closures called from
data structures, calls of other globals. Closures capture ``bp``; rewritten globals take it
as their first parameter. A call whose adjoint rule gives nothing (only integer inputs)
pushes no step.

The gradient of ``f(x1, ..., xn)`` is then

.. code-block:: text

    fn (x1, ..., xn) {
      let bp = ref(fn () { () });
      let r = f_rev(bp, (x1, ref(zeros_like(x1))), ...);
      r.1 := ones_like(r.0);                 // seed the result's adjoint
      (!bp)();                               // run the backward pass
      (r.0, (!x1_ad.1, ..., !xn_ad.1))
    }

Because the output is again an ordinary program (references, closures and operator calls),
the transformation applies to its own output: that is grad of grad.
"""

from __future__ import annotations

from collections.abc import Sequence

from relay.errors import CompileError
from relay.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Let,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    Var,
)
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import FuncType, RefType, TensorType, TupleType, Type
from relay.op.elemwise import ones_like, zeros_like
from relay.op.registry import get_op
from relay.passes.ad_rewrite import (
    UNIT,
    ADTypes,
    GlobalRewrites,
    ValueRewriter,
    field_of,
    is_float_tensor,
    mentions_float,
    sequence,
    typed,
    typed_var,
)

BACKPROP_TYPE = RefType(FuncType((), UNIT))
"""The type of the tape: a reference to the closure running the backward pass."""


def reverse_types(mod: Module) -> ADTypes:
    """The reverse mode's rewriting of types: a float tensor and its adjoint cell."""
    return ADTypes(mod, lambda t: TupleType((t, RefType(t))), "_rev")


class ReverseAD:
    """Reverse-mode AD over a module (see the module docstring): :meth:`gradient` builds a
    function's gradient, adding the rewritten globals (``@f_rev``) it calls to the module."""

    def __init__(self, mod: Module) -> None:
        self.mod = mod
        self.types = reverse_types(mod)
        self.globals = GlobalRewrites(mod, self.types, "_rev", self._rewriter)

    def _rewriter(self) -> _Reverse:
        return _Reverse(self.globals, Var("bp", BACKPROP_TYPE))

    def gradient(self, func: Function, wrt: Sequence[int] | None = None) -> Function:
        """``fn (params) { (func(params), (d/d param_i for i in wrt)) }`` for a typed
        ``func`` returning a float tensor (``wrt`` defaults to every parameter)."""
        ft = func.checked_type
        assert isinstance(ft, FuncType)
        if not is_float_tensor(ft.ret_type):
            raise CompileError(
                f"gradient: the function must return a floating-point tensor, got {ft.ret_type}",
                func.span,
            )
        wrt = list(range(len(func.params))) if wrt is None else list(wrt)
        rw = self._rewriter()
        rw.open()
        rw.blocks[-1].append((rw.bp, RefCreate(Function((), Tuple(())))))
        params = [typed_var(p.name_hint, p.checked_type, p.span) for p in func.params]
        lifted = []
        for p, new in zip(func.params, params, strict=True):
            ty = p.checked_type
            if mentions_float(ty) and not isinstance(ty, TensorType | TupleType):
                raise CompileError(
                    f"gradient: cannot differentiate with respect to the parameter "
                    f"%{p.name_hint} of type {ty} (only tensors and tuples of them)",
                    p.span,
                )
            rw.vars[p] = rw.lift(new, ty)
            lifted.append(rw.vars[p])
        result = rw.visit(func.body)
        out = rw.emit(field_of(result, 0), ft.ret_type, "result")
        rw.effect(RefWrite(field_of(result, 1), ones_like(out)))
        rw.effect(Call(RefRead(rw.bp), ()))
        grads = Tuple(tuple(rw.read_adjoint(lifted[i], params[i]) for i in wrt))
        body = rw.close(Tuple((out, grads)))
        self.globals.finish()
        return Function(tuple(params), body, None, func.type_params, span=func.span)


class _Reverse(ValueRewriter):
    """The reverse mode's values: ``(x, adjoint cell)``; operator calls push backward steps
    onto the tape ``bp``."""

    def __init__(self, globals_: GlobalRewrites, bp: Var) -> None:
        super().__init__(globals_)
        self.bp = bp

    def extra_params(self) -> tuple[Var, ...]:
        return (self.bp,)

    def lift(self, x: Expr, ty: Type) -> Expr:
        if is_float_tensor(ty):
            cell = self.emit(RefCreate(zeros_like(x)), RefType(ty), "adj")
            return Tuple((x, cell))
        if isinstance(ty, TupleType) and mentions_float(ty):
            return Tuple(tuple(self.lift(field_of(x, i), f) for i, f in enumerate(ty.fields)))
        return x

    def primal(self, x: Expr, ty: Type) -> Expr:
        if is_float_tensor(ty):
            return field_of(x, 0)
        if isinstance(ty, TupleType) and mentions_float(ty):
            return Tuple(tuple(self.primal(field_of(x, i), f) for i, f in enumerate(ty.fields)))
        return x

    def read_adjoint(self, x: Expr, plain: Expr) -> Expr:
        """The adjoint accumulated in the rewritten value ``x`` of the plain ``plain``."""
        ty = plain.checked_type
        if is_float_tensor(ty):
            return RefRead(field_of(x, 1))
        if isinstance(ty, TupleType):
            return Tuple(
                tuple(
                    self.read_adjoint(field_of(x, i), typed(field_of(plain, i), f))
                    for i, f in enumerate(ty.fields)
                )
            )
        return zeros_like(plain)

    def accumulate(self, x: Expr, adj: Expr, ty: Type, out: list[Expr]) -> None:
        """Statements adding ``adj`` to the adjoint cells of the rewritten value ``x``."""
        if is_float_tensor(ty):
            cell = field_of(x, 1)
            out.append(RefWrite(cell, Call(Op.get("add"), (RefRead(cell), adj))))
        elif isinstance(ty, TupleType):
            for i, f in enumerate(ty.fields):
                if mentions_float(f):
                    self.accumulate(field_of(x, i), field_of(adj, i), f, out)

    def op_call(self, call: Call, op: Op, args: list[Expr], primals: list[Var | Constant]) -> Expr:
        arg_types = [a.checked_type for a in call.args]
        out_ty = call.checked_type
        y = self.emit(
            Call(op, tuple(primals), call.attrs, call.type_args, span=call.span), out_ty, "v"
        )
        if not mentions_float(out_ty):
            return y
        result = self.lift(y, out_ty)
        if not any(mentions_float(t) for t in arg_types):
            return result  # a creation operator: nothing to propagate to
        # the rule sees the primal call; it names the output by the call node itself
        primal_call = typed(Call(op, tuple(primals), call.attrs, span=call.span), out_ty)
        g = typed_var("g", out_ty)
        adjoints = get_op(op.name).rule("gradient", call.span)(primal_call, g)
        rename = ExprMutator()
        rename.memo[primal_call] = y
        stmts: list[Expr] = []
        for a, ty, adj in zip(args, arg_types, adjoints, strict=True):
            if adj is not None and mentions_float(ty):
                self.accumulate(a, rename.visit(adj), ty, stmts)
        if not stmts:
            return result
        prev = self.emit(RefRead(self.bp), FuncType((), UNIT), "prev")
        step = Let(g, self.read_adjoint(result, y), sequence(stmts, Call(prev, ())))
        self.effect(RefWrite(self.bp, Function((), step, UNIT)))
        return result


__all__ = ["BACKPROP_TYPE", "ReverseAD", "reverse_types"]
