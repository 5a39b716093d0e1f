"""The ``@relay`` decorator and :class:`RelayFunction`.

Decorating reads the function's source (:mod:`relay.frontend.source`), and when every
parameter is annotated converts it (:mod:`relay.frontend.convert`) into a :class:`Module`
and type-checks it at once, so errors appear at the ``def``. A function with unannotated
parameters is converted at its first call, specialised on the types of the arguments, and
the result is cached per signature (shapes and dtypes). A name that is not defined yet at
decoration (a function defined later in the file, as in mutual recursion) postpones the
conversion to the first call as well.

The module holds the function as a global named after it, every ``@relay`` function it
calls (each once per signature it is called at, so recursion and mutual recursion are
recursion between globals), the data types it uses and the prelude. Calls run on the
reference interpreter (:mod:`relay.backend.interpreter`) until the compiled backend lands.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any as _Any

import numpy as np

from relay.backend.runtime import NOT_MATCHED
from relay.errors import ExecutionError, FrontendError, TypeCheckError
from relay.frontend.adt import (
    PRELUDE_CLASSES,
    ConstructorInstance,
    constructor_of,
    from_python,
    to_python,
)
from relay.frontend.annotations import TypeScope, annotation_type, dtype_name
from relay.frontend.convert import FunctionConverter, NeedsTypes, UnresolvedName
from relay.frontend.source import FunctionSource, read_function
from relay.ir.expr import Call, Constant, Expr, Function, GlobalVar
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.span import Span
from relay.ir.types import GlobalTypeVar, TensorType, TupleType, Type, TypeCall, free_type_vars

__all__ = ["ModuleBuilder", "RelayFunction", "function"]

_PRELUDE: Module | None = None


def _prelude() -> Module:
    global _PRELUDE
    if _PRELUDE is None:
        from relay.std import prelude

        _PRELUDE = prelude()
    return _PRELUDE


def _fresh_module() -> Module:
    p = _prelude()
    return Module(dict(p.functions), dict(p.type_definitions))


def _drop_unused_prelude(builder: ModuleBuilder) -> None:
    """Remove the prelude functions the converted functions do not reach, so that type
    checking (which checks every function of a module) does not check the whole prelude
    for each program: that was most of a program's conversion time. (``f.module`` puts
    them back.)"""
    from relay.passes.remove_unused import reachable_globals

    mod = builder.module
    prelude = _prelude().functions
    keep = reachable_globals(mod, [g for g in mod.functions if g not in prelude])
    for gv in [g for g in mod.functions if g not in keep]:
        mod.remove(gv)


Signature = tuple[Type | None, ...] | None
"""The parameter types a conversion is specialised on (None: as annotated / generic)."""


MAX_NESTED_SPECIALISATIONS = 8
"""Specialisations of one unannotated function converted one inside another (a recursive
call at other argument types) at most: a recursive call at a type that grows with each
call (``nest((x, x), n - 1)``) would be converted forever, and crashed the interpreter
with a stack overflow (found by a review)."""


@dataclass
class ModuleBuilder:
    """The module being built for one entry function: the prelude, then each ``@relay``
    function reached from the entry (once per signature), then the data types used."""

    module: Module = field(default_factory=_fresh_module)
    targets: dict[tuple[int, Signature], tuple[GlobalVar, Type | None]] = field(
        default_factory=dict
    )
    user_globals: list[GlobalVar] = field(default_factory=list)
    weak: list[Call] = field(default_factory=list)
    classes: dict[str, type[ConstructorInstance]] = field(
        default_factory=lambda: dict(PRELUDE_CLASSES)
    )
    probe: bool = False  # only checking syntax: callees are not converted
    converting: list[int] = field(default_factory=list)  # the functions being converted (ids)
    # derivative globals called by converted code: built by resolve_derivatives
    derivatives: dict[GlobalVar, tuple[GlobalVar, _Any, Span | None]] = field(default_factory=dict)

    def call_target(
        self, rf: RelayFunction, arg_types: list[Type | None], span: Span | None
    ) -> tuple[GlobalVar, Type | None]:
        """The global for ``rf`` called with arguments of ``arg_types`` (converted on first
        use), and its result type when known statically."""
        sig = rf.signature(arg_types)
        key = (id(rf), sig)
        found = self.targets.get(key)
        if found is not None:
            return found
        if self.probe:
            return GlobalVar(rf.__name__), None
        if self.converting.count(id(rf)) >= MAX_NESTED_SPECIALISATIONS:
            raise FrontendError(
                f"{rf.__name__} calls itself at {MAX_NESTED_SPECIALISATIONS} different "
                "argument types in a row (at ever larger types, as f((x, x)) would?); "
                "annotate its parameters",
                span,
            )
        gv = self.fresh_global(rf.__name__)
        ret = rf.static_result_type()
        self.targets[key] = (gv, ret)
        self.converting.append(id(rf))
        try:
            func = rf.convert(self, gv, sig)
        finally:
            self.converting.pop()
        self.module.add(gv, func)
        self.user_globals.append(gv)
        return gv, ret

    def fresh_global(self, base: str) -> GlobalVar:
        """A new global named ``base`` (or ``base_1``...): no function of the module, none
        being converted and no derivative waiting to be built has that name."""
        taken = {g.name_hint for g in self.module.functions}
        taken.update(gv.name_hint for gv, _ in self.targets.values())
        taken.update(gv.name_hint for gv in self.derivatives)
        name, n = base, 1
        while name in taken:
            name = f"{base}_{n}"
            n += 1
        return GlobalVar(name)

    def value_of(self, obj: object, span: Span | None) -> tuple[Expr, Type | None] | None:
        """The IR value of a Python object used as a value: a ``@relay`` function (its
        global) or a constructor class; None for anything else."""
        if isinstance(obj, RelayFunction):
            gv, _ = self.call_target(obj, [None] * obj.arity, span)
            return gv, None
        if isinstance(obj, type) and issubclass(obj, ConstructorInstance):
            con = constructor_of(obj, self.module)
            if con is None:
                return None
            self.classes.setdefault(con.name_hint, obj)
            return con, None
        return None


class _FoldWeak(ExprMutator):
    """Replace ``cast_like(constant, x)`` by the constant in ``x``'s dtype."""

    def __init__(self, calls: dict[int, Call]) -> None:
        super().__init__()
        self.calls = calls

    def visit_call(self, call: Call) -> Expr:
        if id(call) in self.calls:
            c = call.args[0]
            assert isinstance(c, Constant)
            like = call.args[1].checked_type
            if isinstance(like, TensorType) and isinstance(like.dtype, str):
                value = c.data
                target = np.dtype(like.dtype) if like.dtype != "bfloat16" else None
                if target is not None:
                    if (
                        value.dtype.kind == "f"
                        and target.kind in "iub"
                        and float(value) != int(value)
                    ):
                        raise TypeCheckError(
                            f"the float literal {value.item()} meets a {like.dtype} tensor",
                            call.span,
                            ("cast the tensor with .astype(np.float32) to compute in floats",),
                        )
                    return Constant(value.astype(target), span=c.span)
        return super().visit_call(call)


def fold_weak_literals(mod: Module, weak: list[Call]) -> None:
    """After inference: each weakly typed literal becomes a constant of the dtype it met."""
    if not weak:
        return
    folder = _FoldWeak({id(c): c for c in weak})
    for gv, func in list(mod.functions.items()):
        new = folder.visit(func)
        if new is not func:
            assert isinstance(new, Function)
            mod.update_func(gv, new)


def _namespace(fn: Callable[..., _Any]) -> Callable[[str], object]:
    globs = getattr(fn, "__globals__", {})
    cells: dict[str, object] = {}
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, closure, strict=False):
            with contextlib.suppress(ValueError):  # an empty cell: not bound yet
                cells[name] = cell.cell_contents

    def lookup(name: str) -> object:
        if name in cells:
            return cells[name]
        if name in globs:
            return globs[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise KeyError(name)

    return lookup


@dataclass
class _Compiled:
    module: Module
    global_var: GlobalVar
    param_types: tuple[Type | None, ...]
    classes: dict[str, type[ConstructorInstance]]
    user_globals: list[GlobalVar]
    runtime: dict[str, _Any] = field(default_factory=dict)
    """The compiled executable of this specialisation, once called (see run_compiled)."""
    has_prelude: bool = False
    """Whether ``module`` holds the whole prelude (added when the module is asked for:
    conversion keeps only the prelude functions the program uses)."""


def _value_type(value: object) -> Type | None:
    """The static type of a call argument, for specialisation (None: left to inference)."""
    lazy = sys.modules.get("relay.lazy.tensor")
    if lazy is not None and isinstance(value, lazy.Tensor):
        return value.type  # type: ignore[no-any-return]
    if isinstance(value, np.ndarray):
        name = dtype_name(value.dtype)
        return TensorType(tuple(int(d) for d in value.shape), name) if name else None
    device = sys.modules.get("relay.backend.device")
    if device is not None and isinstance(value, device.DeviceArray):
        name = dtype_name(value.dtype)
        return TensorType(value.shape, name) if name else None
    if isinstance(value, np.generic):
        name = dtype_name(value.dtype)
        return TensorType((), name) if name else None
    if isinstance(value, bool):
        return TensorType((), "bool")
    if isinstance(value, int):
        return TensorType((), "int32")
    if isinstance(value, float):
        return TensorType((), "float32")
    if isinstance(value, tuple):
        items = [_value_type(v) for v in value]
        return (
            None
            if any(i is None for i in items)
            else TupleType(tuple(i for i in items if i is not None))
        )
    return _data_value_type(value)


def _data_value_type(value: object) -> Type | None:
    """The type of a data-type argument where its first element decides it: a Python list or
    a prelude ``List`` (its head), ``Some(x)``, or a value of a data type without parameters."""
    from relay.frontend.adt import Cons, DataType, Some

    if isinstance(value, list):
        head = _value_type(value[0]) if value else None
        return TypeCall(GlobalTypeVar("List"), (head,)) if head is not None else None
    if isinstance(value, Cons | Some):
        head = _value_type(value.fields[0])
        name = "List" if isinstance(value, Cons) else "Option"
        return TypeCall(GlobalTypeVar(name), (head,)) if head is not None else None
    if isinstance(value, ConstructorInstance):
        data = next(b for b in type(value).__mro__ if b.__dict__.get("__relay_constructors__"))
        if issubclass(data, DataType) and not data.__relay_params__:
            return GlobalTypeVar(data.__relay_name__)
    return None


class RelayFunction:
    """A Python function compiled by ``@relay``: callable on numpy arrays, Python numbers,
    tuples and data-type values; ``.module``, ``.checked_type``, ``.astext()``, ``str()``,
    ``.interpret(*args)``."""

    def __init__(self, fn: Callable[..., _Any]) -> None:
        functools.update_wrapper(self, fn)
        self.__wrapped__ = fn
        self.__name__: str = fn.__name__
        self._source: FunctionSource = read_function(fn)
        self._lookup = _namespace(fn)
        node = self._source.node
        if node.decorator_list and len(node.decorator_list) > 1:
            pass  # other decorators run in Python; the source is what is converted
        self.arity = len(node.args.args)
        self._annotated = all(a.annotation is not None for a in node.args.args)
        self._compiled: dict[Signature, _Compiled] = {}
        # (dtype, shape) of each array argument -> the compiled executable for them: the
        # call path that skips specialisation and conversion once a signature is known
        self._fast: dict[_Any, _Any] = {}
        self._last: _Compiled | None = None
        self._param_types: tuple[Type | None, ...] | None = None
        self._ret_type: Type | None = None
        self._type_params: tuple[_Any, ...] = ()
        self._data_types: list[type] = []
        self._read_annotations()
        if self._annotated:
            # a name defined later in the file (UnresolvedName): compile at the first call
            with contextlib.suppress(UnresolvedName):
                self._compile(None)
        else:
            self._check_syntax()

    def _check_syntax(self) -> None:
        """Convert once without argument types, so that unsupported Python is reported at
        decoration time; what needs the types waits for the first call."""
        builder = ModuleBuilder(probe=True)
        gv = GlobalVar(self.__name__)
        builder.targets[(id(self), None)] = (gv, None)
        conv = FunctionConverter(
            builder, self._source, self._lookup, self.__name__, lambda _, __: (gv, None), probe=True
        )
        with contextlib.suppress(UnresolvedName, NeedsTypes):
            conv.function(self._source.node, {}, [None] * self.arity, None)

    # -- annotations ----------------------------------------------------------------------------

    def _read_annotations(self) -> None:
        node = self._source.node
        conv = FunctionConverter(ModuleBuilder(), self._source, self._lookup)
        scope = TypeScope()
        types: list[Type | None] = []
        for a in node.args.args:
            if a.annotation is None:
                types.append(None)
                continue
            types.append(self._annotation(conv, a.annotation, scope))
        self._param_types = tuple(types)
        if node.returns is not None:
            self._ret_type = self._annotation(conv, node.returns, scope)
        self._type_params = scope.all_vars
        self._data_types = list(scope.data_types)

    def _annotation(self, conv: FunctionConverter, node: ast.expr, scope: TypeScope) -> Type:
        value = conv._eval_annotation(node)
        try:
            return annotation_type(value, scope)
        except TypeError as err:
            raise self._source.error(str(err), node) from None

    def signature(self, arg_types: list[Type | None]) -> Signature:
        """The specialisation used for arguments of ``arg_types``."""
        if self._annotated:
            return None
        assert self._param_types is not None
        sig = tuple(
            p if p is not None else a for p, a in zip(self._param_types, arg_types, strict=False)
        )
        return sig if len(sig) == self.arity else None

    def static_result_type(self) -> Type | None:
        """The declared result type when it has no type variables."""
        if self._ret_type is None or free_type_vars(self._ret_type):
            return None
        return self._ret_type

    # -- conversion -----------------------------------------------------------------------------

    def convert(self, builder: ModuleBuilder, gv: GlobalVar, sig: Signature) -> Function:
        """This function's IR in ``builder``'s module, as global ``gv``, for ``sig``."""
        assert self._param_types is not None
        types = list(sig) if sig is not None else list(self._param_types)
        if len(types) != self.arity:
            types = list(self._param_types)
        annotated_only = sig is None
        from relay.frontend.adt import DataType, data_type_definition

        for data in self._data_types:
            if issubclass(data, DataType) and not data.__relay_prelude__:
                data_type_definition(data, builder.module)
                for name, cls in data.__relay_constructors__.items():
                    builder.classes.setdefault(name, cls)

        def self_ref(arg_types: list[Type | None], span: Span | None) -> tuple[Expr, Type | None]:
            if annotated_only or list(arg_types) == types or all(t is None for t in arg_types):
                return gv, self.static_result_type()
            return builder.call_target(self, arg_types, span)

        conv = FunctionConverter(builder, self._source, self._lookup, self.__name__, self_ref)
        # a specialisation keeps the type parameters its annotated parameters still name
        # (``x: Tensor[float32, ("n", 4)]`` beside an unannotated ``s``)
        named = {v for t in types if t is not None for v in free_type_vars(t)}
        type_params = tuple(v for v in self._type_params if annotated_only or v in named)
        fn = conv.function(
            self._source.node, {}, types, self._ret_type if annotated_only else None, type_params
        )
        builder.weak.extend(conv.weak)
        return fn

    def _compile(self, sig: Signature) -> _Compiled:
        found = self._compiled.get(sig)
        if found is not None:
            return found
        from relay.typecheck.checker import infer_type

        builder = ModuleBuilder()
        gv, _ = builder.call_target(
            self, list(sig) if sig is not None else [None] * self.arity, None
        )
        if builder.derivatives:
            from relay.frontend.autodiff import resolve_derivatives

            resolve_derivatives(builder)
        _drop_unused_prelude(builder)
        infer_type(builder.module)
        if builder.weak:
            fold_weak_literals(builder.module, builder.weak)
            infer_type(builder.module)
        func = builder.module.functions[gv]
        compiled = _Compiled(
            builder.module,
            gv,
            tuple(p.type_annotation for p in func.params),
            builder.classes,
            list(builder.user_globals),
        )
        self._compiled[sig] = compiled
        return compiled

    def _compiled_for(self, args: tuple[object, ...]) -> _Compiled:
        if len(args) != self.arity:
            raise TypeCheckError(
                f"{self.__name__} takes {self.arity} argument{'s' if self.arity != 1 else ''}, "
                f"got {len(args)}",
                self._source.span(self._source.node),
            )
        if self._annotated:
            sig: Signature = None
        else:
            sig = self.signature([_value_type(a) for a in args])
        try:
            compiled = self._compile(sig)
        except UnresolvedName as err:
            raise err.error from None
        self._last = compiled
        return compiled

    # -- the public face -------------------------------------------------------------------------

    def specialize(self, *args: object) -> RelayFunction:
        """Type the function for arguments like ``args`` (arrays, device arrays, Python
        values, as a call takes) without running it, and make that the specialization
        that :attr:`module`, ``relay.build`` and the passes see; returns the function:
        ``relay.build(f.specialize(x, w), target="cuda")``."""
        self._compiled_for(args)
        return self

    def _default(self) -> _Compiled:
        if self._last is not None:
            return self._last
        if self._compiled:
            return next(reversed(self._compiled.values()))
        try:
            return self._compile(None)
        except UnresolvedName as err:
            raise err.error from None

    @property
    def module(self) -> Module:
        """The module of the function (the annotated signature's, or the latest call's),
        with the prelude."""
        c = self._default()
        if not c.has_prelude:
            from relay.typecheck.checker import infer_type

            for gv, func in _prelude().functions.items():
                if gv not in c.module.functions:
                    c.module.add(gv, func)
            infer_type(c.module)
            c.has_prelude = True
        return c.module

    @property
    def global_var(self) -> GlobalVar:
        """The function's global in :attr:`module`."""
        return self._default().global_var

    @property
    def checked_type(self) -> Type:
        """The function's type, as inferred."""
        c = self._default()
        return c.module.functions[c.global_var].checked_type

    def astext(self, show_types: bool = False) -> str:
        """The function and the ``@relay`` functions it calls, in the Relay text format."""
        from relay.ir.printer import astext

        c = self._default()
        shown = Module({gv: c.module.functions[gv] for gv in c.user_globals})
        return astext(shown, show_types=show_types)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        return f"<relay function {self.__name__}>"

    def __call__(self, *args: object, **kwargs: object) -> object:
        """Run compiled (built for this CPU on the first call with these argument types,
        then cached); programs the compiled backend cannot run yet go to the interpreter."""
        if not kwargs:
            result = fast_call(self._fast, args)
            if result is not NOT_MATCHED:
                return result
        else:
            args = self._bind(args, dict(kwargs))
        lazy = sys.modules.get("relay.lazy.tensor")
        if lazy is not None and any(isinstance(a, lazy.Tensor) for a in args):
            from relay.lazy.calls import record_call

            return record_call(self, args)
        c = self._compiled_for(args)
        values = [self._argument(c, i, a) for i, a in enumerate(args)]
        result = run_compiled(c.runtime, c.module, c.global_var, values, self.__name__, c.classes)
        remember_fast(self._fast, c.runtime, args)
        return result

    def _bind(self, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, ...]:
        if not kwargs:
            return args
        names = [a.arg for a in self._source.node.args.args]
        bound = list(args)
        for name in names[len(args) :]:
            if name not in kwargs:
                break
            bound.append(kwargs.pop(name))
        if kwargs:
            unknown = next(iter(kwargs))
            what = "got two values for" if unknown in names else "has no parameter"
            raise TypeCheckError(
                f"{self.__name__} {what} {unknown}", self._source.span(self._source.node)
            )
        return tuple(bound)

    def _argument(self, c: _Compiled, i: int, value: object) -> object:
        """Argument ``i`` as a run-time value: a number for a scalar parameter converted to
        its dtype as a built executable converts it
        (:func:`~relay.backend.graph_executor.scalar_argument`: a Python number takes the
        dtype, as it would inside the function)."""
        param = c.module.functions[c.global_var].params[i]
        ty = c.param_types[i]
        try:
            from relay.backend.graph_executor import scalar_argument, scalar_dtype

            dtype = scalar_dtype(ty)
            if dtype is not None:
                arr = scalar_argument(value, dtype)
                if arr is not None:
                    return arr
            return from_python(value, c.module, ty)
        except (TypeError, ValueError, OverflowError) as err:
            raise TypeCheckError(
                f"argument {i} of {self.__name__} (%{param.name_hint}): {err}", param.span
            ) from None

    def interpret(self, *args: object, **kwargs: object) -> object:
        """Run on the reference interpreter."""
        args = self._bind(args, dict(kwargs))
        c = self._compiled_for(args)
        values = [self._argument(c, i, a) for i, a in enumerate(args)]
        return run_global(c.module, c.global_var, values, self.__name__, c.classes)

    @property
    def __signature__(self) -> _Any:  # keep inspect.signature working on the wrapper
        import inspect

        return inspect.signature(self.__wrapped__)


def run_global(
    mod: Module,
    gv: GlobalVar,
    values: list[_Any],
    name: str,
    classes: dict[str, type[ConstructorInstance]],
) -> object:
    """Check ``values`` against ``gv``'s parameters (a mismatch is a TypeCheckError naming
    ``name``), run ``gv`` on the reference interpreter and convert the result to Python."""
    from relay.backend.interpreter import Interpreter
    from relay.backend.interpreter.conform import check_arguments

    try:
        check_arguments(mod.functions[gv], values, name)
    except ExecutionError as err:
        raise TypeCheckError(err.message, err.span) from None
    interp = Interpreter(mod)
    return to_python(interp.call(interp.global_closure(gv), values), classes)


def fast_call(fast: dict[_Any, _Any], args: tuple[object, ...]) -> object:
    """The call's fast path: the result when numpy arrays of these dtypes and shapes ran
    compiled before (``fast`` maps their ``(dtype, shape)`` to the runner made for them by
    :func:`remember_fast`), else :data:`~relay.backend.runtime.NOT_MATCHED` and the caller
    takes the full path (lazy tensors, specialisation, conversions). A runner returns
    NOT_MATCHED itself for arguments other than numpy arrays that have the same dtypes and
    shapes (lazy tensors have them).

    The last runner that checks the dtypes and shapes itself (its ``exact`` attribute) is
    tried first, under the key None: building and hashing the key costs ~1 us a call, and
    much more after kernels that stream their data through the caches."""
    last = fast.get(None)
    if last is not None:
        result = last(*args)
        if result is not NOT_MATCHED:
            return result
    try:
        key = tuple([(a.dtype, a.shape) for a in args])  # type: ignore[attr-defined]
    except AttributeError:
        return NOT_MATCHED
    runner = fast.get(key)
    if runner is None or runner is last:
        return NOT_MATCHED
    result = runner(*args)
    if result is not NOT_MATCHED and getattr(runner, "exact", False) and fast.get(key) is runner:
        fast[None] = runner
        if fast.get(key) is not runner:  # (the runners were dropped meanwhile: a second tier)
            fast.pop(None, None)
    return result


def remember_fast(
    fast: dict[_Any, _Any], holder: dict[str, _Any], args: tuple[object, ...]
) -> None:
    """After a full call: arguments that are all numpy arrays take the fast path next time
    when the program ran compiled (the runner kept in ``holder`` by :func:`run_compiled`;
    an executable's own for these arguments, :meth:`relay.backend.build.Executable.matched`,
    where it has one)."""
    runner = holder.get("fast")
    if runner is None or not all(type(a) is np.ndarray for a in args):
        return
    matched = getattr(runner, "matched", None)
    graph = getattr(runner, "graph", None)
    if matched is not None and getattr(runner, "replaceable", False):
        # a runner of the first tier's graph is dropped when the second takes over
        # (relay.backend.tiers): asked before the runner is made, checked after it is kept
        runner.on_upgrade(fast.clear)
    own = matched(args) if matched is not None else None
    key = tuple([(a.dtype, a.shape) for a in args])  # type: ignore[attr-defined]
    fast[key] = own if own is not None else _numpy_only(runner)
    if getattr(own, "exact", False):
        fast[None] = own
    if own is not None and getattr(runner, "graph", None) is not graph:
        fast.clear()  # (replaced while the runner was made: it may be the first tier's)


def _numpy_only(runner: Callable[..., _Any]) -> Callable[..., _Any]:
    """``runner`` for numpy arrays only (anything else, or a TypeCheckError: NOT_MATCHED)."""
    ndarray = np.ndarray

    def run(*args: object) -> object:
        for a in args:
            if type(a) is not ndarray:
                return NOT_MATCHED
        try:
            return runner(*args)
        except TypeCheckError:
            return NOT_MATCHED

    return run


def run_compiled(
    holder: dict[str, _Any],
    mod: Module,
    gv: GlobalVar,
    values: list[_Any],
    name: str,
    classes: dict[str, type[ConstructorInstance]],
) -> object:
    """Run ``gv`` compiled: built with :func:`relay.build` on first use (kept in ``holder``).

    A program with control flow, data types or closures runs on the VM; one the VM does not
    run yet (run-time type checks) on the reference interpreter, and so do arguments that
    do not conform, so that the interpreter's check reports them with the parameter's span."""
    exe = holder.get("executable")
    if exe is None:
        from relay import flags
        from relay.backend.build import build
        from relay.errors import CompileError

        try:
            exe = build(mod, entry=gv.name_hint, tiered=True)
            exe.name = name
        except CompileError as err:
            flags.debug_print(1, f"{name} runs on the interpreter: {err.message}")
            exe = None
        holder["executable"] = exe or False
        if exe and exe.kind == "graph":
            holder["fast"] = exe
        elif exe and exe.kind == "vm":

            def run_vm(*args: object) -> object:
                return to_python(exe(*args), classes)

            holder["fast"] = run_vm
    if exe and exe.kind != "interpreter":
        with contextlib.suppress(TypeCheckError):
            return to_python(exe(*values), classes)
    return run_global(mod, gv, values, name, classes)


def function(fn: Callable[..., _Any]) -> RelayFunction:
    """The ``@relay`` decorator (``@relay.function`` is the same): compile a Python function
    to Relay (see :mod:`relay.frontend`)."""
    if isinstance(fn, RelayFunction):
        return fn
    if not callable(fn):
        raise FrontendError(f"@relay decorates functions, not {type(fn).__name__}")
    return RelayFunction(fn)
