"""Reverse-mode automatic differentiation: the first-order mode.

For a function whose body is straight-line dataflow over tensors and tuples (operator
calls, tuples, projections, constants and ``let`` bindings of them; no control flow,
closures, references or data types), the gradient is built the way a tape-based system
would run it, but as IR (Griewank and Walther, *Evaluating Derivatives*, chapter 3, the
reverse sweep over a straight-line program; TVM's ``FirstOrderGradient`` in
``src/relay/transforms/gradient.cc``):

1. the body's nodes are put in evaluation order (``let``-bound variables stand for their
   values, so ``let`` and graph form give the same graph);
2. the adjoint of the result is ``ones_like(result)``; walking the nodes backwards, each
   operator call passes its adjoint through its gradient rule (``relay.op`` registry,
   :func:`relay.op.registry.gradient_rule`) and adds what the rule returns to the adjoints of
   its arguments; a tuple passes each field's adjoint to the field, a projection to the
   field of its tuple. A node that no adjoint reaches costs nothing: its rule is never
   called, so ``where(less(x, y), x, y)`` differentiates although ``less`` has no gradient.
3. the result is ``fn (params) { (result, (adjoint of each parameter, ...)) }``, plain
   dataflow that shares the primal computation with the backward one, so it fuses and
   compiles like hand-written backward code. A parameter the result does not depend on gets
   ``zeros_like``.

Functions outside this fragment are for the higher-order mode
(:mod:`relay.passes.higher_order_ad`: closures, control flow, recursion, references, data
types); asking for the first-order mode on them raises :class:`~relay.errors.CompileError`
naming the construct.
"""

from __future__ import annotations

from collections.abc import Sequence

from relay.errors import CompileError
from relay.ir.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import TensorType, TupleType, Type
from relay.op.elemwise import ones_like, zeros_like
from relay.op.registry import get_op

# An adjoint: an expression of the node's type, a list (per tuple field) or None (zero).
_Adjoint = Expr | list["_Adjoint"] | None


def evaluation_order(body: Expr) -> tuple[list[Expr], dict[Var, Expr]]:
    """The nodes of ``body`` in evaluation order (operands first) and what each ``let``
    variable stands for. Raises CompileError outside the first-order fragment."""
    alias: dict[Var, Expr] = {}
    while isinstance(body, Let):
        alias[body.var] = body.value
        body = body.body
    order: list[Expr] = []
    seen: set[int] = set()
    roots = [body, *alias.values()]
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Let):
            raise CompileError(
                "first-order gradient: a let inside an expression is not supported; "
                "bind it at the top of the body",
                node.span,
            )
        if isinstance(node, Var | Constant):
            kids: tuple[Expr, ...] = ()
            if isinstance(node, Var) and node in alias:
                kids = (alias[node],)
        elif isinstance(node, Call):
            if not isinstance(node.op, Op):
                raise CompileError(
                    "first-order gradient: only operator calls are supported here (calls of "
                    "functions need the higher-order mode)",
                    node.span,
                )
            kids = node.args
        elif isinstance(node, Tuple):
            kids = node.fields
        elif isinstance(node, TupleGetItem):
            kids = (node.tuple_value,)
        else:
            raise CompileError(
                f"first-order gradient: {type(node).__name__} needs the higher-order mode",
                node.span,
            )
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(kids) if id(k) not in seen)
    return order, alias


def _accumulate(old: _Adjoint, new: _Adjoint) -> _Adjoint:
    if old is None:
        return new
    if new is None:
        return old
    if isinstance(old, list) and isinstance(new, list):
        return [_accumulate(a, b) for a, b in zip(old, new, strict=True)]
    assert isinstance(old, Expr) and isinstance(new, Expr)
    return Call(Op.get("add"), (old, new))


def _as_expr(adj: _Adjoint, primal: Expr, ty: Type) -> Expr:
    """The adjoint as one expression of type ``ty`` (zeros where it is None)."""
    if isinstance(ty, TupleType):
        parts = adj if isinstance(adj, list) else [None] * len(ty.fields)
        return Tuple(
            tuple(_as_expr(parts[i], TupleGetItem(primal, i), f) for i, f in enumerate(ty.fields))
        )
    if adj is None:
        return zeros_like(primal)
    if isinstance(adj, list):
        raise CompileError("first-order gradient: a tuple adjoint for a tensor", primal.span)
    return adj


def _split(adj: Expr, ty: Type) -> _Adjoint:
    """A tuple-typed adjoint expression as a per-field list."""
    if not isinstance(ty, TupleType):
        return adj
    if isinstance(adj, Tuple):
        return [_split(f, t) for f, t in zip(adj.fields, ty.fields, strict=True)]
    out: list[_Adjoint] = [_split(TupleGetItem(adj, i), t) for i, t in enumerate(ty.fields)]
    return out


def _bind_shared(chain: list[tuple[Var, Expr]], body: Expr) -> tuple[list[tuple[Var, Expr]], Expr]:
    """The block ``let chain; body`` with every operator call, tuple or projection that is
    used more than once bound to a variable of its own, before its first use. Graph form
    shares such a node, but an interpreter evaluates it at each use: the backward code
    uses each primal value and each adjoint several times, so unbound it would run the
    forward computation again for every use (exponentially often in a chain)."""
    roots = [value for _, value in chain] + [body]
    uses: dict[int, int] = {}
    firsts: list[list[Expr]] = []  # per root: the nodes first reached there, operands first
    for root in roots:
        found: list[Expr] = []
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                found.append(node)
                continue
            n = uses.get(id(node), 0)
            uses[id(node)] = n + 1
            if n:
                continue
            stack.append((node, True))
            if isinstance(node, Call):
                kids: tuple[Expr, ...] = node.args
            elif isinstance(node, Tuple):
                kids = node.fields
            elif isinstance(node, TupleGetItem):
                kids = (node.tuple_value,)
            else:
                kids = ()
            stack.extend((k, False) for k in reversed(kids))
        firsts.append(found)
    rename = ExprMutator()
    out: list[tuple[Var, Expr]] = []
    for i, root in enumerate(roots):
        for node in firsts[i]:
            if (
                node is not root
                and uses[id(node)] > 1
                and isinstance(node, Call | Tuple | TupleGetItem)
            ):
                value = rename.visit(node)
                var = Var(f"s{len(out)}")
                out.append((var, value))
                rename.memo[node] = var
        if i < len(chain):
            out.append((chain[i][0], rename.visit(root)))
    return out, rename.visit(body)


def first_order_gradient(
    func: Function, mod: Module | None = None, wrt: Sequence[int] | None = None
) -> Function:
    """``fn (params) { (func's result, (d result / d param_i for i in wrt)) }`` for a
    first-order ``func`` (see the module docstring); the result's adjoint is
    ``ones_like(result)``; ``wrt`` defaults to every parameter."""
    from relay.typecheck.checker import infer_type

    infer_type(func, mod)
    order, alias = evaluation_order(func.body)
    result = func.body
    while isinstance(result, Let):
        result = result.body
    ret_type = result.checked_type
    if not (
        isinstance(ret_type, TensorType)
        and isinstance(ret_type.dtype, str)
        and ret_type.dtype.startswith(("float", "bfloat"))
    ):
        raise CompileError(
            f"gradient: the function must return a floating-point tensor, got {ret_type}",
            func.span,
        )

    def resolve(e: Expr) -> Expr:
        while isinstance(e, Var) and e in alias:
            e = alias[e]
        return e

    adjoints: dict[int, _Adjoint] = {id(resolve(result)): ones_like(result)}
    for node in reversed(order):
        if isinstance(node, Var) and node in alias:
            continue  # a let variable is its value
        adj = adjoints.get(id(node))
        if adj is None:
            continue
        if isinstance(node, Call):
            assert isinstance(node.op, Op)
            rule = get_op(node.op.name).rule("gradient", node.span)
            out_grad = _as_expr(adj, node, node.checked_type)
            grads = rule(node, out_grad)
            for arg, g in zip(node.args, grads, strict=True):
                if g is not None:
                    target = resolve(arg)
                    adjoints[id(target)] = _accumulate(
                        adjoints.get(id(target)), _split(g, arg.checked_type)
                    )
        elif isinstance(node, Tuple):
            parts = adj if isinstance(adj, list) else _split(adj, node.checked_type)
            assert isinstance(parts, list)
            for field, part in zip(node.fields, parts, strict=True):
                if part is not None:
                    target = resolve(field)
                    adjoints[id(target)] = _accumulate(adjoints.get(id(target)), part)
        elif isinstance(node, TupleGetItem):
            target = resolve(node.tuple_value)
            ty = node.tuple_value.checked_type
            assert isinstance(ty, TupleType)
            fields: list[_Adjoint] = [None] * len(ty.fields)
            fields[node.index] = adj
            adjoints[id(target)] = _accumulate(adjoints.get(id(target)), fields)
    chosen = [func.params[i] for i in (range(len(func.params)) if wrt is None else wrt)]
    grads = Tuple(tuple(_as_expr(adjoints.get(id(p)), p, p.checked_type) for p in chosen))
    # the rules refer to let-bound values by the value itself: use the variable instead, so
    # the backward code reads the primal results rather than computing them again
    named = ExprMutator()
    chain: list[Let] = []
    e = func.body
    while isinstance(e, Let):
        chain.append(e)
        named.memo[e.value] = e.var
        e = e.body
    body: Expr = Tuple((result, named.visit(grads)))
    bindings, body = _bind_shared([(let.var, let.value) for let in chain], body)
    for var, value in reversed(bindings):
        body = Let(var, value, body)
    return Function(func.params, body, None, func.type_params, span=func.span)


__all__ = ["evaluation_order", "first_order_gradient"]
