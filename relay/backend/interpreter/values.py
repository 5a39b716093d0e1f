"""Run-time values of the reference interpreter.

A Relay value is one of

* a tensor: a numpy array (a rank-0 tensor is a 0-d array, never a numpy scalar);
* a tuple: a Python ``tuple`` of values (``()`` is the unit value);
* a :class:`Closure`: a function together with the environment it was created in;
* a :class:`ConstructorValue`: a constructor of an algebraic data type applied to its fields;
* a :class:`RefValue`: a mutable cell made by ``ref(v)``;
* an operator or a constructor used as a first-class function: the :class:`~relay.ir.expr.Op`
  or :class:`~relay.ir.expr.Constructor` node itself.

Environments (:class:`Env`) map variables to values. An environment is one dictionary per
function activation linked to the environment of the closure's definition, so capturing one
in a closure is O(1) and a variable is found after at most (lexical function nesting) lookups.

Formatting and comparison of values walk them with explicit stacks, so a 100,000-element list
prints and compares without recursion.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy as np
import numpy.typing as npt

from relay.ir.expr import Constructor, Function, GlobalVar, Op, Var
from relay.ir.types import DTYPES, TensorType

if TYPE_CHECKING:
    from relay.ir.module import Module

Value: TypeAlias = Union[
    "npt.NDArray[Any]",
    tuple["Value", ...],
    "Closure",
    "ConstructorValue",
    "RefValue",
    Op,
    Constructor,
]
"""Any run-time value (see the module docstring)."""


class Env:
    """An environment: ``vars`` (this activation's bindings) over ``parent`` (the enclosing one).

    The interpreter adds let and pattern bindings to the current activation's dictionary in
    place; a variable bound a second time in the same activation (a shared sub-expression
    evaluated twice) gets a fresh copy first, so closures that captured the old dictionary
    keep seeing the old value.
    """

    __slots__ = ("parent", "vars")

    def __init__(self, vars: dict[Var, Value] | None = None, parent: Env | None = None) -> None:
        self.vars: dict[Var, Value] = {} if vars is None else vars
        self.parent = parent

    def lookup(self, var: Var) -> Value:
        """The value of ``var``; raises ``KeyError`` if it is unbound."""
        env: Env | None = self
        while env is not None:
            value = env.vars.get(var)
            if value is not None:
                return value
            env = env.parent
        raise KeyError(var)

    def __contains__(self, var: object) -> bool:
        env: Env | None = self
        while env is not None:
            if var in env.vars:
                return True
            env = env.parent
        return False

    def extend(self, bindings: Mapping[Var, Value]) -> Env:
        """A child environment binding ``bindings`` on top of this one."""
        return Env(dict(bindings), self)

    def copy(self) -> Env:
        """This environment with its own copy of the innermost dictionary."""
        return Env(dict(self.vars), self.parent)

    def flatten(self) -> dict[Var, Value]:
        """All visible bindings in one dictionary (inner bindings shadow outer ones)."""
        chain: list[Env] = []
        env: Env | None = self
        while env is not None:
            chain.append(env)
            env = env.parent
        out: dict[Var, Value] = {}
        for e in reversed(chain):
            out.update(e.vars)
        return out

    def __repr__(self) -> str:
        names = ", ".join(f"%{v.name_hint}" for v in self.flatten())
        return f"Env({names})"


class Closure:
    """A function value: ``func`` with the environment ``env`` it was created in.

    A global function evaluates to a closure with no environment, ``mod`` the module that
    defines it and ``global_var`` its name.
    """

    __slots__ = ("env", "func", "global_var", "guard", "mod")

    def __init__(
        self,
        func: Function,
        env: Env | None = None,
        mod: Module | None = None,
        global_var: GlobalVar | None = None,
    ) -> None:
        self.func = func
        self.env = env
        self.mod = mod
        self.global_var = global_var
        # whether a call may need run-time type checks the type checker deferred (None: not
        # known yet; the interpreter decides on the first call)
        self.guard: bool | None = None

    def __repr__(self) -> str:
        if self.global_var is not None:
            return f"<closure @{self.global_var.name_hint}>"
        params = ", ".join(f"%{p.name_hint}" for p in self.func.params)
        return f"<closure fn ({params})>"


class ConstructorValue:
    """An algebraic-data-type value: ``constructor`` applied to ``fields``.

    ``==`` is :func:`values_equal` (exact); the repr is the value in constructor syntax,
    e.g. ``Cons(1, Cons(2, Nil))``.
    """

    __slots__ = ("constructor", "fields")

    def __init__(self, constructor: Constructor, fields: tuple[Value, ...] = ()) -> None:
        self.constructor = constructor
        self.fields = fields

    @property
    def name(self) -> str:
        """The constructor's name, e.g. ``"Cons"``."""
        return self.constructor.name_hint

    @property
    def tag(self) -> int:
        """The constructor's index in its data type's definition."""
        return self.constructor.tag

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConstructorValue):
            return NotImplemented
        return values_equal(self, other)

    __hash__ = None  # type: ignore[assignment]  # fields may hold (unhashable) arrays

    def __repr__(self) -> str:
        return format_value(self)


class RefValue:
    """A mutable reference cell (``ref(v)``); compared by identity."""

    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value

    def __repr__(self) -> str:
        return format_value(self)


def is_function_value(value: object) -> bool:
    """Whether ``value`` is a function value of another executor (a VM closure: its class
    sets ``relay_function``)."""
    return getattr(type(value), "relay_function", False) is True


def same_constructor(a: Constructor, b: Constructor) -> bool:
    """Whether ``a`` and ``b`` are the same constructor (the same node, or the same tag of the
    same data type)."""
    return a is b or (a.belong_to is not None and a.belong_to is b.belong_to and a.tag == b.tag)


def to_value(obj: object) -> Value:
    """A Python argument as a Relay value.

    numpy arrays are kept (numpy scalars become 0-d arrays of their dtype); Python ``bool``,
    ``int`` and ``float`` become 0-d ``bool``, ``int32`` and ``float32`` arrays; lists become
    arrays (``float64`` narrowed to ``float32`` and ``int64`` to ``int32``); tuples become
    Relay tuples; closures, constructor values, references, operators and constructors are
    kept.
    """
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, np.generic):
        return np.asarray(obj)
    if isinstance(obj, bool):
        return np.asarray(obj, dtype="bool")
    if isinstance(obj, int):
        return np.asarray(obj, dtype="int32")
    if isinstance(obj, float):
        return np.asarray(obj, dtype="float32")
    if isinstance(obj, tuple):
        return tuple(to_value(x) for x in obj)
    if isinstance(obj, Closure | ConstructorValue | RefValue | Op | Constructor):
        return obj
    device = sys.modules.get("relay.backend.device")
    if device is not None and (
        isinstance(obj, device.DeviceArray) or device.dlpack_device(obj) is not None
    ):  # an array in a device's memory (relay's, or another framework's through DLPack)
        host: npt.NDArray[Any] = (
            obj.numpy() if isinstance(obj, device.DeviceArray) else device.from_dlpack(obj).numpy()
        )
        return host
    if isinstance(obj, list):
        arr = np.asarray(obj)
        if arr.dtype == np.float64:
            arr = arr.astype("float32")
        elif arr.dtype == np.int64:
            arr = arr.astype("int32")
        if arr.dtype == object:
            raise TypeError(f"cannot convert {obj!r} to a Relay tensor")
        return arr
    raise TypeError(f"cannot convert a {type(obj).__name__} to a Relay value: {obj!r}")


def _format_tensor(arr: npt.NDArray[Any]) -> str:
    if arr.ndim == 0:
        return str(arr)
    return np.array2string(arr, separator=", ")


def format_value(value: Value, limit: int | None = None) -> str:
    """``value`` as text: tensors as numbers or nested lists, ``(a, b)`` for tuples,
    ``Cons(1, Nil)`` for constructor values, ``ref(v)``, ``<closure @f>``.

    With ``limit``, the text is cut after ``limit`` characters and ends in ``...``.
    """
    out: list[str] = []
    size = 0
    seen_refs: set[int] = set()
    # work items: a str is literal text, anything else a value still to format
    work: list[object] = [value]
    while work:
        item = work.pop()
        if isinstance(item, str):
            text = item
        elif isinstance(item, np.ndarray):
            text = _format_tensor(item)
        elif isinstance(item, tuple):
            text = "("
            if len(item) == 1:
                work.append(",)")
                work.append(item[0])
            else:
                work.append(")")
                for i in range(len(item) - 1, -1, -1):
                    work.append(item[i])
                    if i:
                        work.append(", ")
        elif isinstance(item, ConstructorValue):
            text = item.constructor.name_hint
            if item.fields:
                text += "("
                work.append(")")
                for i in range(len(item.fields) - 1, -1, -1):
                    work.append(item.fields[i])
                    if i:
                        work.append(", ")
        elif isinstance(item, RefValue):
            if id(item) in seen_refs:
                text = "ref(...)"
            else:
                seen_refs.add(id(item))
                text = "ref("
                work.append(")")
                work.append(item.value)
        elif isinstance(item, Op):
            text = item.name
        elif isinstance(item, Constructor):
            text = item.name_hint
        else:
            text = repr(item)
        out.append(text)
        size += len(text)
        if limit is not None and size > limit:
            return "".join(out)[:limit] + "..."
    return "".join(out)


def describe_value(value: Value) -> str:
    """A short description of what kind of value ``value`` is, for error messages:
    ``Tensor[(2, 3), float32]``, ``a tuple of 2 fields``, ``the closure <closure @f>``..."""
    if isinstance(value, np.ndarray):
        from relay.ir.printer import astext  # the type as the text format writes it

        if str(value.dtype) not in DTYPES:
            return f"an array of numpy dtype {value.dtype}"
        if (
            value.ndim == 0
        ):  # spelled out: "cannot call Tensor[(), int32]" reads better than "int32"
            return f"Tensor[(), {value.dtype}]"
        return astext(TensorType(tuple(int(d) for d in value.shape), str(value.dtype)))
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} field{'s' if len(value) != 1 else ''}"
    if isinstance(value, Closure) or is_function_value(value):
        return f"the closure {value!r}"
    if isinstance(value, ConstructorValue):
        return f"the constructor value {format_value(value, 60)}"
    if isinstance(value, RefValue):
        return "a reference"
    if isinstance(value, Op):
        return f"the operator {value.name}"
    name = getattr(value, "name_hint", None)
    if name is not None:
        return f"the constructor {name}"
    return f"a Python {type(value).__name__} (not a Relay value)"


def _arrays_equal(a: npt.NDArray[Any], b: npt.NDArray[Any], rtol: float, atol: float) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if (rtol == 0.0 and atol == 0.0) or a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def values_equal(a: Value, b: Value, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """Whether two values are equal: tensors of the same shape and dtype with equal elements
    (within ``rtol``/``atol`` for floating point; NaN equals NaN), tuples and constructor
    values field by field; closures, references, operators and constructors by identity."""
    work: list[tuple[Value, Value]] = [(a, b)]
    while work:
        x, y = work.pop()
        if x is y:
            continue
        if isinstance(x, np.ndarray):
            if not (isinstance(y, np.ndarray) and _arrays_equal(x, y, rtol, atol)):
                return False
        elif isinstance(x, tuple):
            if not (isinstance(y, tuple) and len(x) == len(y)):
                return False
            work.extend(zip(x, y, strict=True))
        elif isinstance(x, ConstructorValue):
            if not (
                isinstance(y, ConstructorValue)
                and same_constructor(x.constructor, y.constructor)
                and len(x.fields) == len(y.fields)
            ):
                return False
            work.extend(zip(x.fields, y.fields, strict=True))
        else:
            return False
    return True


def to_python_list(value: Value) -> list[Value]:
    """The elements of a list value built from ``Cons(head, tail)`` and ``Nil``."""
    out: list[Value] = []
    while isinstance(value, ConstructorValue) and value.constructor.name_hint == "Cons":
        head, value = value.fields
        out.append(head)
    if not (isinstance(value, ConstructorValue) and value.constructor.name_hint == "Nil"):
        raise ValueError(f"not a list value: {format_value(value, 80)}")
    return out


def from_python_list(mod: Module, items: Iterable[object]) -> ConstructorValue:
    """The list value ``Cons(items[0], Cons(..., Nil))`` built with ``mod``'s ``Cons`` and
    ``Nil``; each item goes through :func:`to_value`."""
    cons = mod.get_constructor("Cons")
    result = ConstructorValue(mod.get_constructor("Nil"))
    for item in reversed(list(items)):
        result = ConstructorValue(cons, (to_value(item), result))
    return result
