"""Forward-mode automatic differentiation: Jacobian-vector products as an IR rewriting.

Forward mode propagates tangents alongside values (dual numbers; Griewank and Walther,
*Evaluating Derivatives*, chapter 3.1; JAX's ``jvp``): every floating-point tensor ``x`` of
the program is paired with its tangent ``dx``, ``Tensor[s, f32]`` becoming
``(Tensor[s, f32], Tensor[s, f32])``, and each operator call ``y = op(x1, ..., xn)``
becomes

.. code-block:: text

    let y = op(x1.0, ..., xn.0);
    let dy = <JVP rule of op at (dx1, ..., dxn)>;
    (y, dy)

where the rule (``relay.op`` registry, :func:`relay.op.registry.jvp_rule`) gives the
output's tangent from the inputs' (a zero tangent, of an integer input or a constant, is
passed as None and costs nothing). Everything else, closures, control flow, recursion,
references, data types and calls of other globals (``@f`` becomes ``@f_dual``), is
rewritten by the machinery shared with the reverse mode (:mod:`relay.passes.ad_rewrite`).
No tape is needed: the tangent is computed with the value, so the cost is a constant
factor of the program's, whatever its control flow.

``jvp(f)`` is ``fn (x1, ..., xn, v1, ..., vn) { (f(x), J_f(x) v) }``. Composed with the
reverse mode it gives Hessian-vector products without a Hessian: the JVP of a gradient
(forward over reverse), or the gradient of ``<grad f(x), v>`` (reverse over reverse).
"""

from __future__ import annotations

from relay.errors import CompileError
from relay.ir.expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, Var
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import FuncType, TensorType, TupleType, Type
from relay.op.elemwise import zeros_like
from relay.op.registry import get_op
from relay.passes.ad_rewrite import (
    ADTypes,
    GlobalRewrites,
    ValueRewriter,
    check_parameters,
    differentiable_type,
    field_of,
    is_float_tensor,
    mentions_float,
    typed,
    typed_var,
)


def forward_types(mod: Module) -> ADTypes:
    """The forward mode's rewriting of types: a float tensor and its tangent."""
    return ADTypes(mod, lambda t: TupleType((t, t)), "_dual")


class ForwardAD:
    """Forward-mode AD over a module (see the module docstring): :meth:`jvp` builds a
    function's JVP, adding the rewritten globals (``@f_dual``) it calls to the module."""

    def __init__(self, mod: Module) -> None:
        self.mod = mod
        self.types = forward_types(mod)
        self.globals = GlobalRewrites(mod, self.types, "_dual", lambda: _Forward(self.globals))

    def jvp(self, func: Function) -> Function:
        """``fn (x1, ..., xn, v1, ..., vn) { (func(x), J_func(x) v) }`` for a typed
        ``func``; the tangents have the parameters' types (integer ones are ignored)."""
        ft = func.checked_type
        assert isinstance(ft, FuncType)
        check_parameters(
            func, [i for i, p in enumerate(func.params) if mentions_float(p.checked_type)], "jvp"
        )
        if not differentiable_type(ft.ret_type):
            raise CompileError(
                f"jvp: the function must return tensors or tuples of them, got {ft.ret_type}",
                func.span,
            )
        rw = _Forward(self.globals)
        rw.open()
        xs = [typed_var(p.name_hint, p.checked_type, p.span) for p in func.params]
        vs = [typed_var(f"d{p.name_hint}", p.checked_type) for p in func.params]
        for p, x, v in zip(func.params, xs, vs, strict=True):
            rw.vars[p] = rw.pair(x, v, p.checked_type)
        result = rw.visit(func.body)
        out = rw.primal(result, ft.ret_type)
        tangent = rw.tangent(result, ft.ret_type, out)
        body = rw.close(Tuple((out, tangent)))
        self.globals.finish()
        return Function(
            (*xs, *vs),
            body,
            TupleType((ft.ret_type, ft.ret_type)),
            func.type_params,
            span=func.span,
        )


class _Forward(ValueRewriter):
    """The forward mode's values: ``(x, tangent)``. Tangents known to be zero (of
    constants and creation operators) are remembered, and passed to the rules as None."""

    def __init__(self, globals_: GlobalRewrites) -> None:
        super().__init__(globals_)
        self.zeros: set[Var] = set()

    def pair(self, x: Expr, dx: Expr, ty: Type) -> Expr:
        """The rewritten value of ``x`` with tangent ``dx`` (both plain, of type ``ty``)."""
        if is_float_tensor(ty):
            return Tuple((x, dx))
        if isinstance(ty, TupleType) and mentions_float(ty):
            return Tuple(
                tuple(
                    self.pair(field_of(x, i), field_of(dx, i), f) for i, f in enumerate(ty.fields)
                )
            )
        return x

    def zero_carrier(self, x: Expr, ty: TensorType) -> Expr:
        zero = self.emit(zeros_like(x), ty, "zero")
        self.zeros.add(zero)
        return zero

    def tangent(self, x: Expr, ty: Type, plain: Expr) -> Expr:
        """The tangent inside the rewritten value ``x`` (zeros for integer parts of the
        plain value ``plain``)."""
        if is_float_tensor(ty):
            return field_of(x, 1)
        if isinstance(ty, TupleType):
            return Tuple(
                tuple(
                    self.tangent(field_of(x, i), f, field_of(plain, i))
                    for i, f in enumerate(ty.fields)
                )
            )
        return zeros_like(plain)

    def op_call(self, call: Call, op: Op, args: list[Expr], primals: list[Var | Constant]) -> Expr:
        arg_types = [a.checked_type for a in call.args]
        out_ty = call.checked_type
        y = self.emit(
            Call(op, tuple(primals), call.attrs, call.type_args, span=call.span), out_ty, "v"
        )
        if not mentions_float(out_ty):
            return y
        tangents: list[Expr | None] = []
        for a, t, p in zip(args, arg_types, primals, strict=True):
            if not mentions_float(t):
                tangents.append(None)
                continue
            dx = self.tangent(a, t, p)
            if isinstance(dx, Var) and dx in self.zeros:
                tangents.append(None)
            else:
                tangents.append(dx if isinstance(dx, Var) else self.emit(dx, t, "dx"))
        if all(t is None for t in tangents):
            return self.lift(y, out_ty)  # a creation operator: a zero tangent
        primal_call = typed(Call(op, tuple(primals), call.attrs, span=call.span), out_ty)
        rule = get_op(op.name).rule("jvp", call.span)
        dy = rule(primal_call, tangents)
        if dy is None:
            return self.lift(y, out_ty)
        rename = ExprMutator()
        rename.memo[primal_call] = y
        dv = self.emit(rename.visit(dy), out_ty, "dv")
        return self.pair(y, dv, out_ty)


def jvp(func: Function | GlobalVar | str, mod: Module | None = None) -> Function:
    """The JVP function of ``func`` (a function, or a global of ``mod``):
    ``fn (x1, ..., xn, v1, ..., vn) { (func(x), J_func(x) v) }``. The rewritten globals
    it calls (``@g_dual``) are added to ``mod``."""
    from relay.typecheck.checker import infer_type

    if mod is None:
        mod = Module()
    if isinstance(func, str | GlobalVar):
        func = mod.function(func)
    infer_type(mod)
    infer_type(func, mod)
    return ForwardAD(mod).jvp(func)


__all__ = ["ForwardAD", "forward_types", "jvp"]
