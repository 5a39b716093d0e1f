"""``relay.grad`` and ``relay.jvp`` on ``@relay`` functions.

A :class:`Derivative` wraps a :class:`~relay.frontend.function.RelayFunction` and a
transformation of the IR: the reverse-mode gradient (:mod:`relay.passes.gradient`) or the
forward-mode Jacobian-vector product (:mod:`relay.passes.forward_ad`). Called from Python,
it specialises the function on the arguments as the function itself would, derives the
derivative's global next to it (cached per signature) and runs it.

Called inside another ``@relay`` function (``relay.grad(f)(x)``, or a module-level
``df = relay.grad(f)`` called as ``df(x)``), the converter emits a call of a global that
does not exist yet (``@f_grad``) and records it on the
:class:`~relay.frontend.function.ModuleBuilder`; :func:`resolve_derivatives` builds those
globals before the module is type-checked. Each is built from the functions it can reach,
which are type-checked first on their own; derivatives reached by other derivatives are
built first, so nested differentiation (grad of a function that calls grad) works at any
depth.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from relay.errors import FrontendError, TypeCheckError
from relay.ir.expr import Expr, Function, GlobalVar
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.span import Span
from relay.ir.types import IncompleteType, TupleType, Type

if TYPE_CHECKING:
    from relay.frontend.function import ModuleBuilder, RelayFunction, _Compiled

KINDS = ("grad", "jvp")


def _normal_argnums(argnums: object, arity: int, name: str) -> int | tuple[int, ...] | None:
    from relay.passes.gradient import normalize_argnums

    try:
        return normalize_argnums(argnums, arity)
    except ValueError as err:
        raise FrontendError(f"{name}: {err}") from None


class Derivative:
    """A derivative of a ``@relay`` function: ``relay.grad(f)`` or ``relay.jvp(f)``. It has
    the face of a :class:`~relay.frontend.function.RelayFunction`: callable on numpy
    arrays, ``.module``, ``.global_var``, ``.checked_type``, ``.astext()``, ``str()`` and
    ``.interpret(*args)``."""

    def __init__(self, fn: RelayFunction, kind: str, argnums: object = None) -> None:
        assert kind in KINDS
        self.fn = fn
        self.kind = kind
        self.argnums = _normal_argnums(argnums, fn.arity, f"relay.{kind} of {fn.__name__}")
        self.__name__ = f"{fn.__name__}_{kind}"
        self._cache: dict[int, tuple[_Compiled, Module, GlobalVar, dict[str, Any]]] = {}
        # compiled graph executables by the arguments' (dtype, shape): the call's fast path
        self._fast: dict[Any, Any] = {}

    @property
    def tangent_params(self) -> tuple[int, ...]:
        """For a JVP, the parameters that take tangents, in the order they are passed."""
        if self.argnums is None:
            return tuple(range(self.fn.arity))
        return (self.argnums,) if isinstance(self.argnums, int) else self.argnums

    @property
    def arity(self) -> int:
        """The number of arguments: ``f``'s, then for a JVP the tangents."""
        if self.kind == "jvp":
            return self.fn.arity + len(self.tangent_params)
        return self.fn.arity

    def build(self, target: GlobalVar, mod: Module) -> Function:
        """The derivative of the global ``target`` of ``mod`` (adding what it needs there)."""
        if self.kind == "grad":
            from relay.passes.gradient import gradient

            return gradient(target, mod, argnums=self.argnums)
        from relay.passes.forward_ad import jvp

        func = _with_callees_inlined(target, mod)
        return jvp(func, mod, None if self.argnums is None else self.tangent_params)

    def static_type(self, param_types: Sequence[Type | None], ret: Type | None) -> Type:
        """The derivative's result type as far as it is known before inference: always a
        pair (so that ``d(x)[1]`` is a projection), with ``f``'s parameter and result types
        where they are known statically."""
        known = [t if t is not None else IncompleteType() for t in param_types]
        value = ret if ret is not None else IncompleteType()
        if self.kind == "jvp":
            return TupleType((value, value))
        if isinstance(self.argnums, int):
            return TupleType((value, known[self.argnums]))
        wrt = range(len(known)) if self.argnums is None else self.argnums
        return TupleType((value, TupleType(tuple(known[i] for i in wrt))))

    def _derive(self, c: _Compiled) -> tuple[Module, GlobalVar]:
        found = self._cache.get(id(c))
        if found is not None and found[0] is c:
            return found[1], found[2]
        from relay.passes.ad_rewrite import fresh_name
        from relay.typecheck.checker import check_module

        mod = c.module.copy()
        derived = self.build(c.global_var, mod)
        gv = mod.add(fresh_name({g.name_hint for g in mod.functions}, self.__name__), derived)
        check_module(mod)
        self._cache[id(c)] = (c, mod, gv, {})
        return mod, gv

    @property
    def module(self) -> Module:
        """The module holding the derivative (for ``f``'s latest signature)."""
        return self._derive(self.fn._default())[0]

    @property
    def global_var(self) -> GlobalVar:
        """The derivative's global in :attr:`module`."""
        return self._derive(self.fn._default())[1]

    @property
    def checked_type(self) -> Type:
        """The derivative's function type (for ``f``'s latest signature)."""
        mod, gv = self._derive(self.fn._default())
        return mod.functions[gv].checked_type

    def interpret(self, *args: object, **kwargs: object) -> object:
        """Run on the reference interpreter."""
        return self._run(args, kwargs, compiled=False)

    def astext(self, show_types: bool = False) -> str:
        """The derivative function in the Relay text format."""
        from relay.ir.printer import astext

        mod, gv = self._derive(self.fn._default())
        return astext(Module({gv: mod.functions[gv]}), show_types=show_types)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        what = "gradient" if self.kind == "grad" else "JVP"
        return f"<relay {what} of {self.fn.__name__}>"

    def __call__(self, *args: object, **kwargs: object) -> object:
        """Run compiled (as a ``@relay`` function's call does)."""
        return self._run(args, kwargs, compiled=True)

    def _run(self, args: tuple[object, ...], kwargs: dict[str, object], compiled: bool) -> object:
        from relay.backend.runtime import NOT_MATCHED
        from relay.frontend.function import fast_call, remember_fast, run_compiled, run_global

        if compiled and not kwargs:
            result = fast_call(self._fast, args)
            if result is not NOT_MATCHED:
                return result
        n = self.fn.arity
        if self.kind == "jvp":
            if kwargs:
                raise TypeCheckError(f"{self.__name__} takes positional arguments only", None)
            tangents = self.tangent_params
            if len(args) != n + len(tangents):
                raise TypeCheckError(
                    f"{self.__name__} takes {n + len(tangents)} arguments ({n} primals, then "
                    f"{len(tangents)} tangents), got {len(args)}",
                    None,
                )
            primals = self.fn._bind(args[:n], {})
            owners = (*range(n), *tangents)
        else:
            primals = self.fn._bind(args, dict(kwargs))
            owners = tuple(range(n))
        c = self.fn._compiled_for(primals)
        every = (*primals, *args[n:]) if self.kind == "jvp" else primals
        values: list[Any] = [self.fn._argument(c, owners[i], a) for i, a in enumerate(every)]
        mod, gv = self._derive(c)
        if compiled:
            holder = self._cache[id(c)][3]
            result = run_compiled(holder, mod, gv, values, self.__name__, c.classes)
            if not kwargs:
                remember_fast(self._fast, holder, args)
            return result
        return run_global(mod, gv, values, self.__name__, c.classes)


def _with_callees_inlined(target: GlobalVar, mod: Module) -> Function:
    """``target``'s function with the non-recursive globals it reaches inlined (recursive
    ones stay calls). Forward mode differentiates a call of a global through a rewritten
    global taking value-tangent pairs, so a tangent known to be zero at the call (an
    argument left out of ``argnums``) would be an ordinary zero array inside it, computed
    with; inlined, it stays known to be zero and costs nothing."""
    from relay.passes.inline import inline
    from relay.passes.remove_unused import reachable_globals

    reached = reachable_globals(mod, [target])
    if len(reached) == 1:
        return mod.functions[target]
    marked = Module(
        {
            g: mod.functions[g] if g == target else mod.functions[g].with_attr("Inline", 1)
            for g in reached
        },
        dict(mod.type_definitions),
    )
    return inline(marked).functions[target]


def grad(fn: Any, argnums: int | Sequence[int] | None = None) -> Derivative:
    """``relay.grad(f)``: the function computing ``(f(*args), gradients)``, where
    ``gradients`` is the tuple of ``d f / d arg_i`` for every argument, or for the
    arguments ``argnums`` selects (a tuple), or the one gradient for ``argnums=i``.

    ``f`` (a ``@relay`` function, or a Python function, which is decorated first) must
    return a floating-point tensor; its adjoint is seeded with ones, so for a non-scalar
    result the gradients are those of ``sum(f(*args))``. Any program can be differentiated:
    control flow, loops, recursion, closures, data types, calls of other ``@relay``
    functions, and ``relay.grad`` itself (see docs/autodiff.md)."""
    from relay.frontend.function import function

    return Derivative(function(fn), "grad", argnums)


def jvp(fn: Any, argnums: int | Sequence[int] | None = None) -> Derivative:
    """``relay.jvp(f)``: the function of ``2n`` arguments ``(x1, ..., xn, v1, ..., vn)``
    computing ``(f(x), J_f(x) v)``, the forward-mode Jacobian-vector product (the
    directional derivative of ``f`` at ``x`` along ``v``). With ``argnums`` (an index or a
    tuple of them) only those arguments take tangents, passed after all the primals in
    that order; the others' tangents are zero, known at compile time, so nothing is
    computed for them (JAX's ``jvp`` of ``f`` with the other arguments closed over)."""
    from relay.frontend.function import function

    return Derivative(function(fn), "jvp", argnums)


def resolve_derivatives(builder: ModuleBuilder) -> None:
    """Build the derivative globals the converted functions call (see the module
    docstring), in an order where each one's callees are complete."""
    from relay.frontend.function import fold_weak_literals
    from relay.ir.analysis import global_vars
    from relay.passes.remove_unused import reachable_globals
    from relay.typecheck.checker import infer_type

    mod = builder.module
    pending = dict(builder.derivatives)
    while pending:
        ready = None
        for gv, (target, d, span) in pending.items():
            reach = reachable_globals(mod, [target])
            if not any(g in pending for f in reach for g in global_vars(mod.functions[f])):
                ready = gv, target, d, span, reach
                break
        if ready is None:
            gv, (target, d, span) = next(iter(pending.items()))
            raise FrontendError(
                f"{d.__name__}: the function differentiated calls, through its callees, a "
                "derivative of itself",
                span,
            )
        gv, target, d, span, reach = ready
        sub = Module({g: mod.functions[g] for g in reach}, dict(mod.type_definitions))
        infer_type(sub)
        fold_weak_literals(sub, builder.weak)
        infer_type(sub)
        derived = d.build(target, sub)
        for gtv, data in sub.type_definitions.items():
            if gtv not in mod.type_definitions:
                mod.add_type(data)
        # the globals the derivation added were named against the sub-module: rename those
        # whose names the whole module (or a derivative still to build) already uses
        taken = {g.name_hint for g in mod.functions} | {g.name_hint for g in pending}
        added = [g for g in sub.functions if g not in mod.functions]
        renamed = _Rename(
            {g: builder.fresh_global(g.name_hint) for g in added if g.name_hint in taken}
        )
        for g in reach:
            mod.add(g, sub.functions[g], update=True)
        for g in added:
            func = renamed.visit(sub.functions[g])
            assert isinstance(func, Function)
            mod.add(renamed.names.get(g, g), func)
        new = renamed.visit(derived)
        assert isinstance(new, Function)
        mod.add(gv, new)
        del pending[gv]


class _Rename(ExprMutator):
    """Replaces the globals in ``names``."""

    def __init__(self, names: dict[GlobalVar, GlobalVar]) -> None:
        super().__init__()
        self.names = names

    def visit_global_var(self, gv: GlobalVar) -> Expr:
        return self.names.get(gv, gv)


def derivative_call_target(
    builder: ModuleBuilder, d: Derivative, arg_types: list[Type | None], span: Span | None
) -> tuple[GlobalVar, Type | None]:
    """The global for the derivative ``d`` called with arguments of ``arg_types`` inside
    converted code (built later by :func:`resolve_derivatives`), and its result type when
    known statically."""
    n = d.fn.arity
    target, ret = builder.call_target(d.fn, list(arg_types[:n]), span)
    key = (target, d.kind, d.argnums)
    for gv, (t, other, _) in builder.derivatives.items():
        if (t, other.kind, other.argnums) == key:
            return gv, d.static_type(arg_types[:n], ret)
    gv = builder.fresh_global(f"{target.name_hint}_{d.kind}")
    if not builder.probe:
        builder.derivatives[gv] = (target, d, span)
    return gv, d.static_type(arg_types[:n], ret)


__all__ = ["Derivative", "derivative_call_target", "grad", "jvp", "resolve_derivatives"]
