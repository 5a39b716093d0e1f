"""Constant folding: evaluate the closed constant parts of a program at compile time.

After TVM's ``src/relay/transforms/fold_constant.cc`` (``FoldConstant``). One bottom-up walk
(an :class:`~relay.ir.functor.ExprMutator`) rewrites

* a call of a pure operator (:func:`~relay.passes.common_subexpr.is_pure_op`) whose arguments
  are all *constant values* -- ``Constant``\\ s or tuples of them -- into its value: the
  result type comes from the operator's type relation on the constants' types
  (:func:`~relay.typecheck.calls.infer_call_type`), the value from the operator's numpy
  reference run by the reference interpreter (:class:`~relay.backend.interpreter.machine.
  Interpreter`, the same code that runs the program), and the value becomes a ``Constant``
  of exactly the type's dtype and shape (a tuple result becomes a ``Tuple`` of constants);
* a projection ``(c0, e, c2).1`` of a tuple literal whose other fields are constant values
  into the field (dropping constants drops nothing observable);
* ``if (c) {a} else {b}`` with a constant condition into the branch taken (the other branch
  is not even visited);
* ``let %x = v; body`` with ``v`` a constant value into ``body`` with ``%x`` replaced by
  ``v`` (the constant is shared, not copied), so folding flows through ``let`` chains.

Nothing with an effect is folded: reference operations (``ref``, ``ref_read``,
``ref_write``) are never evaluated, and neither are calls of globals, closures or
constructors (TVM folds only operator calls too). When the type relation rejects the constants or the reference raises
(a division of integers by zero, an index out of range), the call is left as it is: the
error then shows when the program runs, as it would have without the pass.

**Size cap.** Folding may turn a small expression into a large constant
(``zeros(shape=(10000, 10000))``). A result with more than ``max_elements`` elements (in
all, for a tuple) is not folded: 1,000,000 by default, or the ``PassContext`` config option
``"FoldConstant.max_elements"``. The result type is computed first, so an over-large
result is never evaluated.

Global functions marked ``Primitive=1`` (fused kernels) are left alone by the pass, as by
every function pass; function literals are folded wherever they are (each node is rewritten
once, so a node shared in graph form stays shared). ``let`` chains are walked in a loop
and nested calls without recursion, so 100,000-binding programs fold in linear time.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from relay.backend.interpreter.machine import Interpreter
from relay.errors import RelayError
from relay.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import TensorType, TupleType, Type
from relay.passes.common_subexpr import is_pure_op
from relay.passes.manager import FunctionPass, Pass, PassContext, PassInfo
from relay.typecheck.calls import infer_call_type

__all__ = ["DEFAULT_MAX_ELEMENTS", "FoldConstant", "fold_constant", "is_constant_value"]

DEFAULT_MAX_ELEMENTS = 1_000_000
"""The largest result (in elements) folded when the context does not say otherwise."""

CONFIG_KEY = "FoldConstant.max_elements"
_UNKNOWN: Any = object()


def is_constant_value(expr: Expr) -> bool:
    """Whether ``expr`` is a ``Constant`` or a (nested) tuple literal of constants."""
    work = [expr]
    while work:
        e = work.pop()
        if isinstance(e, Tuple):
            work.extend(e.fields)
        elif not isinstance(e, Constant):
            return False
    return True


def _type_of(value: Expr) -> Type:
    """The type of a constant value (see :func:`is_constant_value`)."""
    if isinstance(value, Constant):
        return value.tensor_type
    assert isinstance(value, Tuple)
    return TupleType(tuple(_type_of(f) for f in value.fields))


def _num_elements(ty: Type) -> int | None:
    """How many elements a value of ``ty`` holds; None unless ``ty`` is made of tensor types
    with static shapes."""
    if isinstance(ty, TensorType):
        total = 1
        for d in ty.shape:
            if not isinstance(d, int):
                return None
            total *= d
        return total
    if isinstance(ty, TupleType):
        total = 0
        for f in ty.fields:
            n = _num_elements(f)
            if n is None:
                return None
            total += n
        return total
    return None


def _to_expr(value: object, ty: Type) -> Expr | None:
    """The value an operator computed as a constant expression of type ``ty``, or None
    when it does not have that type's structure and shapes."""
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray) or not isinstance(ty.dtype, str):
            return None
        if tuple(value.shape) != tuple(ty.shape):
            return None
        return Constant(np.asarray(value, dtype=ty.dtype, order="C"))
    if isinstance(ty, TupleType):
        if not isinstance(value, tuple) or len(value) != len(ty.fields):
            return None
        fields = []
        for v, t in zip(value, ty.fields, strict=True):
            f = _to_expr(v, t)
            if f is None:
                return None
            fields.append(f)
        return Tuple(tuple(fields))
    return None


class _Folder(ExprMutator):
    previsit = frozenset({Call, Tuple, TupleGetItem})

    def __init__(self, mod: Module | None, max_elements: int) -> None:
        super().__init__()
        self.interp = Interpreter(mod)
        self.max_elements = max_elements
        self.subst: dict[Var, Expr] = {}
        # result types by (operator, argument types, attributes): folds repeat
        self.types: dict[Hashable, Type | None] = {}

    def visit_var(self, var: Var) -> Expr:
        """A let-bound constant's value; other variables are kept."""
        return self.subst.get(var, var)

    def visit_call(self, call: Call) -> Expr:
        """Evaluate a pure operator call on constant values."""
        new = super().visit_call(call)
        assert isinstance(new, Call)
        if not isinstance(new.op, Op) or not is_pure_op(new.op):
            return new
        if not all(is_constant_value(a) for a in new.args):
            return new
        folded = self._fold(new)
        return new if folded is None else folded

    def _fold(self, call: Call) -> Expr | None:
        assert isinstance(call.op, Op)
        arg_types = tuple(_type_of(a) for a in call.args)
        key = (call.op.name, arg_types, call.attrs)
        ty = self.types.get(key, _UNKNOWN)
        if ty is _UNKNOWN:
            try:
                ty = infer_call_type(call.op.name, arg_types, call.attrs)
            except RelayError:
                ty = None
            self.types[key] = ty
        if ty is None:
            return None
        size = _num_elements(ty)
        if size is None or size > self.max_elements:
            return None
        try:
            with np.errstate(all="ignore"):
                value = self.interp.evaluate(call)
        except RelayError:
            return None
        return _to_expr(value, ty)

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        """``(c0, e, c2).1`` -> ``e`` when the other fields are constant values."""
        new = super().visit_tuple_getitem(t)
        assert isinstance(new, TupleGetItem)
        tup = new.tuple_value
        if isinstance(tup, Tuple) and 0 <= new.index < len(tup.fields):
            others = (f for i, f in enumerate(tup.fields) if i != new.index)
            if all(is_constant_value(f) for f in others):
                return tup.fields[new.index]
        return new

    def visit_if(self, i: If) -> Expr:
        """A constant condition selects its branch."""
        cond = self.visit(i.cond)
        if isinstance(cond, Constant) and cond.data.shape == () and cond.data.dtype == bool:
            return self.visit(i.true_branch if bool(cond.data) else i.false_branch)
        t, f = self.visit(i.true_branch), self.visit(i.false_branch)
        if cond is i.cond and t is i.true_branch and f is i.false_branch:
            return i
        return If(cond, t, f, span=i.span)

    def visit_let(self, let: Let) -> Expr:
        """Fold each bound value; constant values are substituted and their lets dropped.

        The chain is walked in a loop; a ``let`` of it already rewritten (shared in graph
        form) ends the walk, and each one's result is memoized, so each is rewritten once."""
        chain: list[tuple[Let, Expr | None]] = []
        node: Expr = let
        while isinstance(node, Let) and node not in self.memo:
            value = self.visit(node.value)
            if is_constant_value(value):
                self.subst[node.var] = value
                chain.append((node, None))
            else:
                chain.append((node, value))
            node = node.body
        out = self.visit(node)
        for link, new_value in reversed(chain):
            if new_value is not None:
                if new_value is link.value and out is link.body:
                    out = link
                else:
                    out = Let(link.var, new_value, out, span=link.span)
            self.memo[link] = out
        return out


def _max_elements(ctx: PassContext | None) -> int:
    ctx = PassContext.current() if ctx is None else ctx
    cap = ctx.config.get(CONFIG_KEY, DEFAULT_MAX_ELEMENTS)
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 0:
        raise ValueError(f"{CONFIG_KEY} must be a non-negative int, got {cap!r}")
    return cap


def fold_constant(expr: Expr, mod: Module | None = None, max_elements: int | None = None) -> Expr:
    """``expr`` with its closed constant sub-expressions evaluated (see the module docs).

    ``mod`` is the module ``expr`` belongs to; ``max_elements`` caps the size of a folded
    result (default: the current context's ``"FoldConstant.max_elements"``, else
    1,000,000)."""
    cap = _max_elements(None) if max_elements is None else max_elements
    return _Folder(mod, cap).visit(expr)


def FoldConstant() -> Pass:
    """Evaluate operator calls on constants, constant conditions, projections of constant
    tuples and let-bound constants at compile time (see the module docs); opt level 2."""

    def run(func: Function, mod: Module, ctx: PassContext) -> Function:
        out = _Folder(mod, _max_elements(ctx)).visit(func)
        assert isinstance(out, Function)
        return out

    return FunctionPass(run, PassInfo("FoldConstant", 2))
