"""The pass manager: passes, sequences of passes, and the context they run in.

The design follows TVM's pass infrastructure (``include/tvm/ir/transform.h`` and
``src/ir/transform.cc``; the Relay paper, Roesch et al. 2019, section 4): a pass is a
function from a :class:`Module` to a new module, with a :class:`PassInfo` (its name, the
optimization level from which it runs, and the names of passes it requires). Three kinds:

* :class:`ModulePass` transforms a whole module (it receives a copy it may change);
* :class:`FunctionPass` transforms each global function on its own (functions marked
  ``Primitive=1``, the fused kernels, are left alone); when it changes none, the result is
  the input module itself;
* :class:`Sequential` runs passes in order.

A :class:`PassContext` (a context manager; contexts nest, the innermost is in force) holds
what a run depends on: ``opt_level``, ``required_pass`` and ``disabled_pass`` (names),
``config`` (options for individual passes) and ``instruments``. As in TVM, the context
decides which passes of a :class:`Sequential` run: a pass runs when it is required by the
context, or when it is not disabled and its ``opt_level`` is at most the context's. Calling
a pass directly always runs it. Before a pass of a sequence runs, the passes it requires run
first (looked up by name in the registry of standard passes, :func:`register_pass`), unless
the module is exactly the one that required pass last produced.

Instruments (:mod:`relay.passes.instruments`) observe every pass run: ``should_run``,
``run_before_pass`` and ``run_after_pass`` (in the order given, the after-hooks too), and
``enter_pass_ctx``/``exit_pass_ctx`` as the context is entered and left. The environment
adds two: ``RELAY_DUMP_IR`` (dump the IR after each pass) and ``RELAY_CHECKS=1`` (re-check
types and well-formedness after each pass, naming the pass that broke the IR).

A pass never changes its input module: module passes work on a copy, function passes build
a new module with the transformed functions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, overload

from relay.ir.expr import Function
from relay.ir.module import Module

if TYPE_CHECKING:
    from relay.passes.instruments import PassInstrument


@dataclass(frozen=True, slots=True)
class PassInfo:
    """A pass's name, the optimization level from which it runs, and the passes it needs."""

    name: str
    opt_level: int = 0
    required: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a pass needs a name")
        if not isinstance(self.opt_level, int) or self.opt_level < 0:
            raise ValueError(f"opt_level must be a non-negative int, got {self.opt_level!r}")


class Pass:
    """A transformation of modules; call it on a :class:`Module` to get a new module."""

    info: PassInfo

    @property
    def name(self) -> str:
        """The pass's name (as in :class:`PassInfo`)."""
        return self.info.name

    @property
    def opt_level(self) -> int:
        """The optimization level from which the pass runs in a :class:`Sequential`."""
        return self.info.opt_level

    @property
    def required(self) -> tuple[str, ...]:
        """The names of the passes that must run before this one."""
        return self.info.required

    def __call__(self, mod: Module) -> Module:
        """Run the pass on ``mod`` under the current :class:`PassContext`."""
        if not isinstance(mod, Module):
            raise TypeError(f"{self.name} takes a Module, got {type(mod).__name__}")
        return PassContext.current().run(self, mod)

    def transform(self, mod: Module, ctx: PassContext) -> Module:
        """The transformation itself, without instruments (subclasses define it)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, opt_level={self.opt_level})"


class ModulePass(Pass):
    """A pass over a whole module: ``fn(mod, ctx)`` gets a copy it may change and return."""

    def __init__(self, fn: Callable[[Module, PassContext], Module], info: PassInfo) -> None:
        self.fn = fn
        self.info = info

    def transform(self, mod: Module, ctx: PassContext) -> Module:
        """``fn`` applied to a copy of ``mod`` (``mod`` itself when ``fn`` left every function
        and type definition as it was, so that passes it requires need not run again: four
        of the type inferences of mlp_train_step's pipeline, ~1.5 ms each)."""
        out = self.fn(mod.copy(), ctx)
        if not isinstance(out, Module):
            raise TypeError(f"module pass {self.name} returned {type(out).__name__}, not a Module")
        return mod if _same_contents(out, mod) else out


def _same_contents(a: Module, b: Module) -> bool:
    """Whether ``a`` holds the very functions and type definitions of ``b``, by the same
    names."""
    if len(a.functions) != len(b.functions) or len(a.type_definitions) != len(b.type_definitions):
        return False
    names = {g.name_hint: f for g, f in b.functions.items()}
    types = {t.name_hint: d for t, d in b.type_definitions.items()}
    return all(names.get(g.name_hint) is f for g, f in a.functions.items()) and all(
        types.get(t.name_hint) is d for t, d in a.type_definitions.items()
    )


class FunctionPass(Pass):
    """A pass over each global function: ``fn(func, mod, ctx)`` returns the new function.

    Functions with the attribute ``Primitive=1`` (fused kernels) are not passed to ``fn``.
    """

    def __init__(
        self, fn: Callable[[Function, Module, PassContext], Function], info: PassInfo
    ) -> None:
        self.fn = fn
        self.info = info

    def transform(self, mod: Module, ctx: PassContext) -> Module:
        """A copy of ``mod`` with ``fn`` applied to each of its global functions (``mod``
        itself when ``fn`` changed none, so that passes it requires need not run again)."""
        out = mod.copy()
        changed = False
        for gv, func in mod.functions.items():
            if func.attrs.get("Primitive") == 1:
                continue
            new = self.fn(func, mod, ctx)
            if not isinstance(new, Function):
                raise TypeError(
                    f"function pass {self.name} returned {type(new).__name__} for "
                    f"@{gv.name_hint}, not a Function"
                )
            if new is not func:
                out.update_func(gv, new)
                changed = True
        return out if changed else mod


class Sequential(Pass):
    """Passes run in order; the context decides which of them run (see the module docs)."""

    def __init__(
        self,
        passes: Sequence[Pass] = (),
        opt_level: int = 0,
        name: str = "Sequential",
        required: Sequence[str] = (),
    ) -> None:
        for p in passes:
            if not isinstance(p, Pass):
                raise TypeError(f"Sequential takes passes, got {type(p).__name__}")
        self.passes = tuple(passes)
        self.info = PassInfo(name, opt_level, tuple(required))

    def transform(self, mod: Module, ctx: PassContext) -> Module:
        """Each enabled pass in turn, its required passes first."""
        produced: dict[str, Module] = {}  # the module each pass last returned
        for p in self.passes:
            if not ctx.enabled(p):
                continue
            for req in p.required:
                if produced.get(req) is mod:
                    continue
                mod = ctx.run(resolve_pass(req), mod)
                produced[req] = mod
            mod = ctx.run(p, mod)
            produced[p.name] = mod
        return mod

    def __repr__(self) -> str:
        return f"Sequential([{', '.join(p.name for p in self.passes)}])"


# -- the context --------------------------------------------------------------------------------

_local = threading.local()


class PassContext:
    """What passes run under: opt level, required and disabled passes, config, instruments.

    Use it as a context manager; ``PassContext.current()`` is the innermost one entered (a
    default context, opt level 2, outside any).
    """

    def __init__(
        self,
        opt_level: int = 2,
        required_pass: Iterable[str] = (),
        disabled_pass: Iterable[str] = (),
        config: Mapping[str, Any] | None = None,
        instruments: Sequence[PassInstrument] = (),
    ) -> None:
        if not isinstance(opt_level, int) or opt_level < 0:
            raise ValueError(f"opt_level must be a non-negative int, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = frozenset(required_pass)
        self.disabled_pass = frozenset(disabled_pass)
        self.config = dict(config or {})
        self.instruments = list(instruments)
        self._env_instruments: list[PassInstrument] = []
        self._entered = 0

    # -- entering and leaving --------------------------------------------------------------------

    @staticmethod
    def current() -> PassContext:
        """The innermost context entered in this thread (a default one outside any)."""
        stack: list[PassContext] = getattr(_local, "stack", [])
        if stack:
            return stack[-1]
        default: PassContext | None = getattr(_local, "default", None)
        if default is None:
            default = _local.default = PassContext()
        return default

    def __enter__(self) -> PassContext:
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(self)
        self._entered += 1
        for inst in self.instruments:
            inst.enter_pass_ctx()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            for inst in self.instruments:
                inst.exit_pass_ctx()
        finally:
            _local.stack.pop()
            self._entered -= 1

    # -- running passes --------------------------------------------------------------------------

    def enabled(self, p: Pass) -> bool:
        """Whether ``p`` runs as part of a :class:`Sequential` under this context."""
        if p.name in self.required_pass:
            return True
        if p.name in self.disabled_pass:
            return False
        return p.opt_level <= self.opt_level

    def all_instruments(self) -> list[PassInstrument]:
        """The context's instruments, then those the environment asks for."""
        from relay.passes.instruments import from_flags

        return [*self.instruments, *from_flags()]

    def run(self, p: Pass, mod: Module) -> Module:
        """Run ``p`` on ``mod`` with the instruments (a :class:`Sequential`'s own run is not
        reported; its passes are)."""
        if isinstance(p, Sequential):
            return p.transform(mod, self)
        instruments = self.all_instruments()
        if not all(inst.should_run(mod, p.info) for inst in instruments):
            return mod
        for inst in instruments:
            inst.run_before_pass(mod, p.info)
        out = p.transform(mod, self)
        for inst in instruments:
            inst.run_after_pass(out, p.info)
        return out

    def __repr__(self) -> str:
        parts = [f"opt_level={self.opt_level}"]
        if self.required_pass:
            parts.append(f"required_pass={sorted(self.required_pass)}")
        if self.disabled_pass:
            parts.append(f"disabled_pass={sorted(self.disabled_pass)}")
        if self.config:
            parts.append(f"config={self.config}")
        if self.instruments:
            parts.append(f"instruments={self.instruments}")
        return f"PassContext({', '.join(parts)})"


# -- decorators for user passes ---------------------------------------------------------------

FunctionTransform = Callable[[Function, Module, PassContext], Function]
ModuleTransform = Callable[[Module, PassContext], Module]


def _make_pass_class(cls: type, kind: str, info: PassInfo) -> type:
    """A class whose instances are passes running ``cls().transform_<kind>``."""
    method = f"transform_{kind}"
    if not callable(getattr(cls, method, None)):
        raise TypeError(f"a {kind} pass class needs a method {method}, and {cls.__name__} has none")
    base: type[Pass] = FunctionPass if kind == "function" else ModulePass

    def __init__(self: Pass, *args: Any, **kwargs: Any) -> None:
        inner = cls(*args, **kwargs)
        base.__init__(self, getattr(inner, method), info)  # type: ignore[call-arg]
        self.inner = inner  # type: ignore[attr-defined]

    namespace = {
        "__init__": __init__,
        "__doc__": cls.__doc__,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
    }
    return type(cls.__name__, (base,), namespace)


@overload
def function_pass(
    fn: FunctionTransform,
    *,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] = (),
) -> FunctionPass: ...
@overload
def function_pass(
    fn: None = None, *, opt_level: int = 0, name: str | None = None, required: Sequence[str] = ()
) -> Callable[[Any], Any]: ...
def function_pass(
    fn: Any = None, *, opt_level: int = 0, name: str | None = None, required: Sequence[str] = ()
) -> Any:
    """Make a function pass from ``fn(func, mod, ctx) -> func``, or from a class with
    ``transform_function(self, func, mod, ctx)`` (then the decorated class's instances are
    passes). Use as ``@function_pass(opt_level=1)`` or ``@function_pass``."""

    def wrap(target: Any) -> Any:
        info = PassInfo(name or target.__name__, opt_level, tuple(required))
        if isinstance(target, type):
            return _make_pass_class(target, "function", info)
        if not callable(target):
            raise TypeError(f"function_pass decorates a function or a class, not {target!r}")
        return FunctionPass(target, info)

    return wrap(fn) if fn is not None else wrap


@overload
def module_pass(
    fn: ModuleTransform,
    *,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] = (),
) -> ModulePass: ...
@overload
def module_pass(
    fn: None = None, *, opt_level: int = 0, name: str | None = None, required: Sequence[str] = ()
) -> Callable[[Any], Any]: ...
def module_pass(
    fn: Any = None, *, opt_level: int = 0, name: str | None = None, required: Sequence[str] = ()
) -> Any:
    """Make a module pass from ``fn(mod, ctx) -> mod``, or from a class with
    ``transform_module(self, mod, ctx)`` (then the decorated class's instances are passes).
    Use as ``@module_pass(opt_level=1)`` or ``@module_pass``."""

    def wrap(target: Any) -> Any:
        info = PassInfo(name or target.__name__, opt_level, tuple(required))
        if isinstance(target, type):
            return _make_pass_class(target, "module", info)
        if not callable(target):
            raise TypeError(f"module_pass decorates a function or a class, not {target!r}")
        return ModulePass(target, info)

    return wrap(fn) if fn is not None else wrap


# -- the registry of standard passes ----------------------------------------------------------

_REGISTRY: dict[str, Callable[[], Pass]] = {}


def register_pass(name: str, factory: Callable[[], Pass]) -> None:
    """Make ``factory()`` the pass called ``name`` (for ``required`` and the command line)."""
    _REGISTRY[name] = factory


def registered_passes() -> list[str]:
    """The names of the registered passes, sorted."""
    _load_standard()
    return sorted(_REGISTRY)


def resolve_pass(name: str) -> Pass:
    """A fresh instance of the pass registered as ``name``; KeyError names the known ones."""
    _load_standard()
    factory = _REGISTRY.get(name)
    if factory is None:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown pass {name!r}; the passes are: {known}")
    return factory()


def _load_standard() -> None:
    import relay.passes  # noqa: F401  (registers the standard passes)


def iter_passes(p: Pass) -> Iterator[Pass]:
    """``p`` and, for a :class:`Sequential`, the passes inside it, depth first."""
    yield p
    if isinstance(p, Sequential):
        for q in p.passes:
            yield from iter_passes(q)
