"""Reverse-mode automatic differentiation: choosing a mode, and the ``Gradient`` pass.

Two transformations build the gradient of a function (both return
``fn (params) { (f(params), (d f / d param_i, ...)) }``, the result's adjoint seeded with
ones, as Relay's gradient):

- the first-order mode (:mod:`relay.passes.first_order_ad`) for straight-line tensor code:
  a reverse sweep emitted as plain dataflow, which fuses and compiles like hand-written
  backward code;
- the higher-order mode (:mod:`relay.passes.higher_order_ad`) for everything else:
  closures, control flow, recursion, data types, references, calls of other globals, and
  its own output (grad of grad).

``mode="auto"`` (the default) takes the first-order mode when the function is in its
fragment (:func:`is_first_order`) and the higher-order mode otherwise.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

from relay.errors import CompileError
from relay.ir.expr import (
    Function,
    GlobalVar,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.ir.module import Module
from relay.passes.ad_rewrite import check_parameters, differentiable_type
from relay.passes.first_order_ad import evaluation_order, first_order_gradient
from relay.passes.higher_order_ad import ReverseAD
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo

MODES = ("auto", "first_order", "higher_order")


def is_first_order(func: Function) -> bool:
    """True when ``func``'s body is straight-line dataflow over tensors and tuples (operator
    calls, tuples, projections, constants, and ``let`` bindings of them at the top): the
    fragment the first-order mode accepts."""
    try:
        evaluation_order(func.body)
    except CompileError:
        return False
    return True


def normalize_argnums(argnums: object, arity: int) -> int | tuple[int, ...] | None:
    """``argnums`` checked against a function of ``arity`` parameters: None (all), one
    index, or a tuple of distinct indices, negative ones counted from the end; raises
    ValueError saying what is wrong."""
    if argnums is None:
        return None
    single = not isinstance(argnums, list | tuple)
    out = []
    for i in [argnums] if single else list(argnums):  # type: ignore[call-overload]
        if isinstance(i, bool):
            raise ValueError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
        try:
            k = operator.index(i)  # type: ignore[arg-type]
        except TypeError:
            raise ValueError(
                f"argnums must be an int or a tuple of ints, got {argnums!r}"
            ) from None
        if not -arity <= k < arity:
            s = "s" if arity != 1 else ""
            raise ValueError(
                f"argnums {argnums!r} is out of range for a function of {arity} parameter{s}"
            )
        out.append(k % arity)
    if len(set(out)) != len(out):
        raise ValueError(f"argnums {argnums!r} repeats a parameter")
    return out[0] if single else tuple(out)


def gradient(
    func: Function | GlobalVar | str,
    mod: Module | None = None,
    mode: str = "auto",
    argnums: int | Sequence[int] | None = None,
) -> Function:
    """The gradient function of ``func`` (a function, or a global of ``mod``):
    ``fn (params) { (func(params), (d func / d param_i for i in argnums)) }``.

    ``func`` must return a floating-point tensor (its adjoint is seeded with ones).
    ``argnums`` selects the parameters (default: all; negative indices count from the end);
    an int gives the one gradient rather than a 1-tuple.
    The higher-order mode adds the rewritten globals it needs (``@g_rev``, and ``Tree_rev``
    style copies of data types holding floats) to ``mod``; the result is a new function,
    which the caller adds to a module if it wants it there.
    """
    from relay.typecheck.checker import infer_type

    if mode not in MODES:
        raise ValueError(f"gradient mode must be one of {MODES}, got {mode!r}")
    if mod is None:
        mod = Module()
    if isinstance(func, str | GlobalVar):
        func = mod.function(func)
    if not isinstance(func, Function):
        raise TypeError(f"gradient: expected a Function, got {type(func).__name__}")
    infer_type(mod)
    infer_type(func, mod)
    try:
        nums = normalize_argnums(argnums, len(func.params))
    except ValueError as err:
        raise CompileError(f"gradient: {err}", func.span) from None
    wrt = (
        list(range(len(func.params)))
        if nums is None
        else [nums]
        if isinstance(nums, int)
        else list(nums)
    )
    # data values (a List of weights) are for the higher-order mode, which converts them
    plain = all(differentiable_type(func.params[i].checked_type) for i in wrt)
    check_parameters(func, wrt, "gradient", data_types=mode != "first_order")
    first_order = is_first_order(func) and plain
    if mode == "first_order" or (mode == "auto" and first_order):
        derived = first_order_gradient(func, mod, wrt)
    else:
        derived = ReverseAD(mod).gradient(func, wrt)
    if isinstance(nums, int):  # the one gradient itself, not a 1-tuple
        r = Var("r")
        single = Tuple((TupleGetItem(r, 0), TupleGetItem(TupleGetItem(r, 1), 0)))
        body = Let(r, derived.body, single)
        derived = Function(derived.params, body, None, derived.type_params, span=derived.span)
    return derived


def Gradient(
    functions: Iterable[str] = ("main",),
    mode: str = "auto",
    suffix: str = "_grad",
    argnums: int | Sequence[int] | None = None,
) -> Pass:
    """The pass adding ``@<name><suffix>``, the gradient of ``@<name>`` (see
    :func:`gradient`), for each name in ``functions``; the rewritten globals the
    higher-order mode needs are added beside it."""
    names = tuple(functions)
    if mode not in MODES:
        raise ValueError(f"gradient mode must be one of {MODES}, got {mode!r}")

    def run(mod: Module, ctx: PassContext) -> Module:
        for name in names:
            if name not in mod:
                raise CompileError(f"Gradient: the module has no function @{name}")
            derived = gradient(mod.get_global_var(name), mod, mode, argnums)
            mod.add(f"{name}{suffix}", derived, update=True)
        return mod

    return ModulePass(run, PassInfo("Gradient", 0, required=("InferType",)))


__all__ = [
    "MODES",
    "Gradient",
    "first_order_gradient",
    "gradient",
    "is_first_order",
    "normalize_argnums",
]
