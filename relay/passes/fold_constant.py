"""Constant folding: evaluate closed constant sub-expressions at compile time.

After TVM's ``src/relay/transforms/fold_constant.cc``. One bottom-up sweep (an
:class:`~relay.ir.functor.ExprMutator`, so a shared sub-expression is folded once) rewrites:

* ``op(c1, ..., cn)``, an operator call whose arguments are all constants (or tuples of
  constants, for operators such as ``concatenate``), to the value the operator's numpy
  ``reference`` computes, as a :class:`Constant` (a tuple result becomes a ``Tuple`` of
  constants). The result type is first computed from the operator's type relation; the
  folded value must have exactly that shape and its dtype (a reference that widens, say,
  ``float16`` to ``float32`` is cast back), otherwise the call is kept;
* ``(c1, ..., cn).i`` to ``ci`` when every field is a constant;
* ``if (c) {a} else {b}`` with a constant condition to the branch taken;
* ``let %x = c; body`` with a constant value to ``body`` with ``c`` substituted for ``%x``
  (a let chain is walked with a loop, so 100,000 bindings need no recursion).

What is not folded, as in TVM:

* calls with no arguments (``zeros``, ``ones``, ``full`` of a constant shape): TVM's
  comment, folding ``ones(shape=(4, 5))`` is harmful, it only makes the program bigger;
* calls whose result would have more than :data:`MAX_FOLDED_ELEMENTS` elements (1,048,576),
  decided from the type before anything is computed, so the constant section stays small;
* calls of globals, closures and constructors (their effects and termination are not the
  operator's), and reference operations;
* a call the type relation rejects or whose reference raises: it is left in place and the
  error shows when the program runs;
* the bodies of functions marked ``Primitive=1`` (already fused kernels).

The sweep is linear in the size of the program (each node is visited once; each fold
evaluates one operator).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem
from relay.ir.functor import ExprMutator, flatten_let
from relay.ir.module import Module
from relay.ir.types import TensorType, TupleType, Type
from relay.op.registry import get_op
from relay.passes.manager import FunctionPass, Pass, PassContext, PassInfo

MAX_FOLDED_ELEMENTS = 1 << 20
"""Calls whose result has more elements than this are not folded."""


def _const_type(e: Expr) -> Type | None:
    """The type of a constant or a (nested) tuple of constants; None for anything else."""
    if isinstance(e, Constant):
        return e.tensor_type
    if isinstance(e, Tuple):
        fields = [_const_type(f) for f in e.fields]
        if any(f is None for f in fields):
            return None
        return TupleType(tuple(f for f in fields if f is not None))
    return None


def _is_const(e: Expr) -> bool:
    """Whether ``e`` is a constant or a (nested) tuple of constants."""
    if isinstance(e, Constant):
        return True
    return isinstance(e, Tuple) and all(_is_const(f) for f in e.fields)


def _const_value(e: Expr) -> Any:
    """The value a constant (or tuple of constants) denotes, as the interpreter sees it."""
    if isinstance(e, Constant):
        return e.data
    assert isinstance(e, Tuple)
    return tuple(_const_value(f) for f in e.fields)


def _num_elements(ty: Type) -> int | None:
    """The total number of elements of a static tensor or tuple type; None if not static."""
    if isinstance(ty, TensorType):
        n = 1
        for d in ty.shape:
            if not isinstance(d, int):
                return None
            n *= d
        return n
    if isinstance(ty, TupleType):
        total = 0
        for f in ty.fields:
            k = _num_elements(f)
            if k is None:
                return None
            total += k
        return total
    return None


def _to_const(value: object, ty: Type) -> Expr | None:
    """``value`` as a constant expression of type ``ty``, or None if it does not fit."""
    if isinstance(ty, TensorType):
        if not isinstance(value, np.ndarray | np.generic | bool | int | float):
            return None
        arr = np.asarray(value)
        if tuple(arr.shape) != ty.shape:
            return None
        if not isinstance(ty.dtype, str):
            return None
        if Constant._dtype_name(arr) != ty.dtype:
            arr = arr.astype(ty.dtype)
        return Constant(np.asarray(arr, order="C"))
    if isinstance(ty, TupleType):
        if not isinstance(value, tuple | list) or len(value) != len(ty.fields):
            return None
        fields = [_to_const(v, t) for v, t in zip(value, ty.fields, strict=True)]
        if any(f is None for f in fields):
            return None
        return Tuple(tuple(f for f in fields if f is not None))
    return None


_Signature = tuple[str, tuple[Type, ...], Attrs]


def _fold_call(
    call: Call, cache: dict[_Signature, tuple[Type, dict[str, Any]] | None]
) -> Expr | None:
    """The folded value of ``call`` (an operator call), or None to keep the call.

    ``cache`` holds the result type and validated attributes per operator, argument types
    and attributes, so a long chain of like calls runs the type relation once."""
    from relay.typecheck.calls import infer_call_type

    assert isinstance(call.op, Op)
    args = call.args
    if not args:
        return None
    maybe_types = [_const_type(a) for a in args]
    arg_types = tuple(t for t in maybe_types if t is not None)
    if len(arg_types) != len(args):
        return None
    key = (call.op.name, arg_types, call.attrs)
    if key in cache:
        sig = cache[key]
    else:
        try:
            opdef = get_op(call.op.name)
            out_type = infer_call_type(call.op.name, arg_types, call.attrs)
            size = _num_elements(out_type)
            ok = opdef.reference is not None and size is not None and size <= MAX_FOLDED_ELEMENTS
            sig = (out_type, dict(opdef.validate_attrs(call.attrs))) if ok else None
        except Exception:  # a rejected call is kept: the error shows at run time
            sig = None
        cache[key] = sig
    if sig is None:
        return None
    out_type, kwargs = sig
    reference = get_op(call.op.name).reference
    assert reference is not None
    try:
        return _to_const(reference(*(_const_value(a) for a in args), **kwargs), out_type)
    except Exception:  # a failing operator is kept: the error shows at run time
        return None


class _Folder(ExprMutator):
    """The folding sweep."""

    previsit: ClassVar[frozenset[type]] = frozenset({Call, TupleGetItem, Tuple})

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[_Signature, tuple[Type, dict[str, Any]] | None] = {}

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if isinstance(new, Call) and isinstance(new.op, Op):
            folded = _fold_call(new, self.cache)
            if folded is not None:
                return folded
        return new

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        new = super().visit_tuple_getitem(t)
        if isinstance(new, TupleGetItem):
            tup = new.tuple_value
            if (
                isinstance(tup, Tuple)
                and 0 <= new.index < len(tup.fields)
                and all(_is_const(f) for f in tup.fields)
            ):
                return tup.fields[new.index]
        return new

    def visit_if(self, i: If) -> Expr:
        cond = self.visit(i.cond)
        if isinstance(cond, Constant) and cond.data.size == 1:
            return self.visit(i.true_branch if bool(cond.data.reshape(())) else i.false_branch)
        t, f = self.visit(i.true_branch), self.visit(i.false_branch)
        if cond is i.cond and t is i.true_branch and f is i.false_branch:
            return i
        return If(cond, t, f, span=i.span)

    def visit_function(self, f: Function) -> Expr:
        if f.attrs.get("Primitive") == 1:
            return f
        return super().visit_function(f)

    def visit_let(self, let: Let) -> Expr:
        chain, body = flatten_let(let)
        kept: list[tuple[Let, Expr]] = []
        for node in chain:
            value = self.visit(node.value)
            if _is_const(value):
                # Uses of the variable (each binder is bound once) now see the constant.
                self.memo[node.var] = value
            else:
                kept.append((node, value))
        out = self.visit(body)
        for node, value in reversed(kept):
            if value is node.value and out is node.body:
                out = node
            else:
                out = Let(node.var, value, out, span=node.span)
        return out


def fold_constant(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` with its closed constant sub-expressions evaluated (see the module docstring).

    ``mod`` is accepted for TVM's signature; globals are never called while folding.

    >>> fold_constant(relay.parse_expr("add(1f, 2f)"))  # a Constant 3f
    """
    del mod
    return _Folder().visit(expr)


def FoldConstant() -> Pass:
    """The pass: :func:`fold_constant` on every global function (opt level 2)."""

    def run(func: Function, mod: Module, ctx: PassContext) -> Function:
        out = fold_constant(func, mod)
        assert isinstance(out, Function)
        return out

    return FunctionPass(run, PassInfo("FoldConstant", 2))


__all__ = ["MAX_FOLDED_ELEMENTS", "FoldConstant", "fold_constant"]
