"""Algebraic data types written as Python classes, and the prelude's as Python classes.

::

    @relay.adt
    class Expr:
        Num: Tensor[float32, ()]          # one field
        Add: ("Expr", "Expr")             # two fields; a string names a type: the data type
        Leaf: ()                          # no fields

declares the data type ``Expr`` with three constructors. Each constructor is a Python class
(``Expr.Num``, a subclass of ``Expr``) with positional fields and ``__match_args__``, so the
same code runs as plain Python (``Expr.Add(Expr.Num(x), Expr.Leaf())``, ``case
Expr.Add(a, b):``) and in a ``@relay`` function, where the classes stand for the Relay
constructors. Type parameters are listed in ``__params__`` (``__params__ = ("A",)``) and
named by strings in field types; the data type is then subscripted in annotations
(``Pair[float32]``).

The prelude's ``List``, ``Option`` and ``Tree`` are provided the same way: ``Cons(x, xs)``,
``Nil()``, ``Some(x)``, ``Nothing()`` (the prelude's ``None``), ``Rose(x, children)``.
Values cross the boundary of a call in both directions: instances become constructor values,
a Python ``list`` passed where a ``List`` is expected becomes one, and results come back as
instances.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any as _Any, ClassVar

from relay.frontend.annotations import TypeScope, annotation_type
from relay.ir.expr import Constructor
from relay.ir.module import Module
from relay.ir.types import GlobalTypeVar, Kind, Type, TypeCall, TypeData, TypeVar

__all__ = [
    "Cons",
    "DataType",
    "List",
    "Nil",
    "Nothing",
    "Option",
    "Rose",
    "Some",
    "Tree",
    "adt",
]


class DataType:
    """Base of the Python classes of Relay data types (made by :func:`adt`)."""

    __relay_name__: ClassVar[str] = ""
    __relay_params__: ClassVar[tuple[str, ...]] = ()
    __relay_constructors__: ClassVar[dict[str, type[ConstructorInstance]]] = {}
    __relay_fields__: ClassVar[dict[str, tuple[object, ...]]] = {}
    __relay_prelude__: ClassVar[bool] = False

    @classmethod
    def __relay_type__(cls, scope: TypeScope, args: tuple[Type, ...] | None = None) -> Type:
        """The Relay type of this data type applied to ``args`` (fresh type variables when
        the annotation does not subscript it)."""
        gtv = GlobalTypeVar(cls.__relay_name__)
        scope.data_types.append(cls)
        if not cls.__relay_params__ and not args:
            return gtv
        if args is None:
            args = tuple(scope.type_var(f"_{cls.__relay_name__}_{p}") for p in cls.__relay_params__)
        if len(args) != len(cls.__relay_params__):
            raise TypeError(
                f"{cls.__relay_name__} takes {len(cls.__relay_params__)} type argument(s), "
                f"got {len(args)}"
            )
        return TypeCall(gtv, args)

    def __class_getitem__(cls, item: object) -> _Applied:
        items = item if isinstance(item, tuple) else (item,)
        return _Applied(cls, items)


class _Applied:
    """``List[T]`` in an annotation."""

    def __init__(self, data: type[DataType], args: tuple[object, ...]) -> None:
        self.data = data
        self.args = args

    def __relay_type__(self, scope: TypeScope) -> Type:
        return self.data.__relay_type__(scope, tuple(annotation_type(a, scope) for a in self.args))

    def __repr__(self) -> str:
        return f"{self.data.__relay_name__}[{', '.join(map(repr, self.args))}]"


class ConstructorInstance(DataType):
    """A value built by a constructor class; ``fields`` in order."""

    __relay_constructor__: ClassVar[str] = ""
    __match_args__: ClassVar[tuple[str, ...]] = ()
    _arity: ClassVar[int] = 0

    def __init__(self, *fields: object) -> None:
        if len(fields) != self._arity:
            raise TypeError(
                f"{type(self).__name__} takes {self._arity} field(s), got {len(fields)}"
            )
        self.fields = tuple(fields)

    def __getattr__(self, name: str) -> object:
        if name.startswith("_") and name[1:].isdigit() and int(name[1:]) < len(self.fields):
            return self.fields[int(name[1:])]
        raise AttributeError(name)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        import numpy as np

        return all(
            bool(np.array_equal(a, b)) if hasattr(a, "shape") else a == b  # type: ignore[arg-type]
            for a, b in zip(self.fields, other.fields, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.fields))})"


def _constructor_class(
    base: type[DataType], name: str, arity: int, relay_name: str | None = None
) -> type[ConstructorInstance]:
    attrs = {
        "__relay_constructor__": relay_name or name,
        "__match_args__": tuple(f"_{i}" for i in range(arity)),
        "_arity": arity,
        "__qualname__": f"{base.__qualname__}.{name}" if not base.__relay_prelude__ else name,
        "__module__": base.__module__,
    }
    return type(name, (ConstructorInstance, base), attrs)


def adt(cls: type) -> type[DataType]:
    """Declare an algebraic data type from a class whose annotations list its constructors
    (see the module docstring)."""
    annotations = dict(inspect.get_annotations(cls))
    params = tuple(cls.__dict__.get("__params__", ()))
    base: type[DataType] = type(
        cls.__name__,
        (DataType,),
        {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__},
    )
    base.__relay_name__ = cls.__name__
    base.__relay_params__ = params
    constructors: dict[str, type[ConstructorInstance]] = {}
    fields: dict[str, tuple[object, ...]] = {}
    for name, spec in annotations.items():
        if isinstance(spec, str):  # postponed evaluation: the module's names, and the type's own
            spec = _evaluate(spec, cls, params)
        items = spec if isinstance(spec, tuple) else (spec,)
        fields[name] = items
        constructors[name] = _constructor_class(base, name, len(items))
        setattr(base, name, constructors[name])
    base.__relay_constructors__ = constructors
    base.__relay_fields__ = fields
    return base


def _evaluate(text: str, cls: type, params: tuple[str, ...]) -> object:
    import sys

    module = sys.modules.get(cls.__module__)
    namespace: dict[str, object] = dict(vars(module)) if module is not None else {}
    namespace[cls.__name__] = cls.__name__
    namespace.update({p: p for p in params})
    try:
        return eval(text, namespace)
    except Exception as err:
        raise TypeError(f"{cls.__name__}: cannot evaluate the annotation {text}: {err}") from None


def data_type_definition(data: type[DataType], mod: Module) -> TypeData:
    """The Relay definition of ``data`` (added to ``mod`` if it is not there yet)."""
    name = data.__relay_name__
    try:
        gtv = mod.get_global_type_var(name)
        return mod.type_definitions[gtv]
    except KeyError:
        pass
    gtv = GlobalTypeVar(name)
    scope = TypeScope()
    params = tuple(TypeVar(p, Kind.TYPE) for p in data.__relay_params__)
    for p in params:
        scope.type_vars[p.name_hint] = p
    self_type: Type = TypeCall(gtv, params) if params else gtv
    cons: list[Constructor] = []
    for tag, (cname, items) in enumerate(data.__relay_fields__.items()):
        types = tuple(_field_type(f, scope, name, self_type, data) for f in items)
        cons.append(Constructor(cname, types, gtv, tag))
    td = TypeData(gtv, params, tuple(cons))
    mod.add_type(td)
    return td


def _field_type(
    spec: object, scope: TypeScope, name: str, self_type: Type, data: type[DataType]
) -> Type:
    if spec == name or spec is data:
        return self_type
    if isinstance(spec, str) and spec in scope.type_vars:
        return scope.type_vars[spec]
    return annotation_type(spec, scope)


def constructor_of(cls: type, mod: Module) -> Constructor | None:
    """The module's constructor for the Python constructor class ``cls`` (its data type is
    added to ``mod`` when needed), or None if ``cls`` is not one."""
    if not (isinstance(cls, type) and issubclass(cls, ConstructorInstance)):
        return None
    data: type[DataType] = next(b for b in cls.__mro__ if b.__dict__.get("__relay_constructors__"))
    if not data.__relay_prelude__:
        data_type_definition(data, mod)
    return mod.get_constructor(cls.__relay_constructor__)


def _prelude_type(
    name: str, params: Sequence[str], cons: dict[str, tuple[int, str]]
) -> type[DataType]:
    base: type[DataType] = type(
        name, (DataType,), {"__module__": "relay.std", "__qualname__": name}
    )
    base.__relay_name__ = name
    base.__relay_params__ = tuple(params)
    base.__relay_prelude__ = True
    made: dict[str, type[ConstructorInstance]] = {}
    for py_name, (arity, relay_name) in cons.items():
        made[py_name] = _constructor_class(base, py_name, arity, relay_name)
    base.__relay_constructors__ = made
    return base


List = _prelude_type("List", ["A"], {"Cons": (2, "Cons"), "Nil": (0, "Nil")})
Option = _prelude_type("Option", ["A"], {"Some": (1, "Some"), "Nothing": (0, "None")})
Tree = _prelude_type("Tree", ["A"], {"Rose": (2, "Rose")})
Cons = List.__relay_constructors__["Cons"]
Nil = List.__relay_constructors__["Nil"]
Some = Option.__relay_constructors__["Some"]
Nothing = Option.__relay_constructors__["Nothing"]
Rose = Tree.__relay_constructors__["Rose"]


def python_class_of(
    constructor: Constructor, registry: dict[str, type[ConstructorInstance]]
) -> type[ConstructorInstance] | None:
    """The Python class registered for a Relay constructor name."""
    return registry.get(constructor.name_hint)


PRELUDE_CLASSES: dict[str, type[ConstructorInstance]] = {
    "Cons": Cons,
    "Nil": Nil,
    "Some": Some,
    "None": Nothing,
    "Rose": Rose,
}
"""The prelude's constructors by Relay name."""


def to_python(value: _Any, classes: dict[str, type[ConstructorInstance]]) -> _Any:
    """A run-time value with its constructor values as Python instances (iteratively, so a
    long list converts without recursion)."""
    from relay.backend.interpreter.values import ConstructorValue

    if not isinstance(value, ConstructorValue | tuple):
        return value
    # post-order over an explicit stack
    out: dict[int, object] = {}
    stack: list[tuple[object, bool]] = [(value, False)]
    while stack:
        v, done = stack.pop()
        if isinstance(v, ConstructorValue):
            children = v.fields
        elif isinstance(v, tuple):
            children = v
        else:
            out[id(v)] = v
            continue
        if not done:
            stack.append((v, True))
            stack.extend((c, False) for c in children if id(c) not in out)
            continue
        items = [out[id(c)] for c in children]
        if isinstance(v, tuple):
            out[id(v)] = tuple(items)
        else:
            assert isinstance(v, ConstructorValue)
            cls = classes.get(v.constructor.name_hint)
            out[id(v)] = cls(*items) if cls is not None else v
    return out[id(value)]


def from_python(obj: _Any, mod: Module, expected: Type | None = None) -> _Any:
    """A Python argument as a run-time value: instances of constructor classes become
    constructor values, a ``list`` becomes a prelude ``List`` (when ``expected`` is one or not
    known); everything else is left to the interpreter's conversion."""
    from relay.backend.interpreter.values import ConstructorValue, to_value

    if isinstance(obj, ConstructorInstance):
        con = constructor_of(type(obj), mod)
        assert con is not None
        field_types = _field_types(expected, con, mod)
        return ConstructorValue(
            con, tuple(from_python(f, mod, t) for f, t in zip(obj.fields, field_types, strict=True))
        )
    if isinstance(obj, list):
        elem = expected.args[0] if isinstance(expected, TypeCall) and expected.args else None
        cons, nil = mod.get_constructor("Cons"), mod.get_constructor("Nil")
        result = ConstructorValue(nil)
        for item in reversed(obj):
            result = ConstructorValue(cons, (from_python(item, mod, elem), result))
        return result
    if isinstance(obj, tuple):
        return tuple(from_python(o, mod) for o in obj)
    return to_value(obj)


def _field_types(expected: Type | None, con: Constructor, mod: Module) -> list[Type | None]:
    return [None] * len(con.inputs)
