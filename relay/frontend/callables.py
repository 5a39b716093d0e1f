"""Calls, methods, attributes and indexing in ``@relay`` functions.

A call's target is resolved while converting: a name that is not a local variable is looked
up in the function's globals, closure and builtins, and the object found decides the IR:

* ``np.tanh``, ``np.sum``, ``np.where``, ... (the tables of :mod:`relay.frontend.pyops` and
  the handlers below): the corresponding operator;
* ``relay.op.<name>`` / ``relay.nn.<name>`` (or the operator builders of
  ``relay.op.nn`` etc.): the operator ``<name>``, positional arguments first filling its
  inputs, then its attributes in order, keywords naming attributes;
* another ``@relay`` function: a call of its global in the same module;
* a data-type constructor class (``Cons``, ``Expr.Num``): the constructor;
* ``abs``, ``min``/``max`` of two values, ``float``/``int``/``bool`` (casts), ``len`` of a
  tensor of static leading dimension.

Indexing follows numpy's basic indexing: integers and slices (``x[0]``, ``x[1:3, :]``,
``x[:, -1]``, ``x[::-1]``) become one ``strided_slice`` followed by a ``squeeze`` of the
integer-indexed axes; a tensor index becomes ``take`` (negative indices count from the end);
an integer index of a tuple is a projection.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from typing import TYPE_CHECKING, Any as _Any

import numpy as np

from relay.errors import FrontendError
from relay.frontend import autodiff, pyops
from relay.frontend.annotations import DType, dtype_name
from relay.frontend.autodiff import Derivative
from relay.frontend.values import Ex, Py, TupleVal, Val, is_number
from relay.ir import dim
from relay.ir.expr import Call, Constant, TupleGetItem
from relay.ir.types import TensorType, TupleType
from relay.op.registry import get_op, has_op

if TYPE_CHECKING:
    from relay.frontend.convert import FunctionConverter

__all__ = ["call_method", "call_object", "subscript", "tensor_attribute"]

_INT32_MAX = 2**31 - 1


def _py_int(c: FunctionConverter, v: Val, node: ast.AST, what: str) -> int:
    if (
        isinstance(v, Py)
        and isinstance(v.value, int | np.integer)
        and not isinstance(v.value, bool)
    ):
        return int(v.value)
    raise c.error(f"{what} must be an integer constant", node)


def _py_ints(c: FunctionConverter, v: Val, node: ast.AST, what: str) -> list[int]:
    if isinstance(v, TupleVal):
        return [_py_int(c, i, node, what) for i in v.items]
    if isinstance(v, Py) and isinstance(v.value, tuple | list):
        return [_py_int(c, Py(i), node, what) for i in v.value]
    return [_py_int(c, v, node, what)]


def _axis(c: FunctionConverter, v: Val | None, node: ast.AST) -> int | list[int] | None:
    if v is None or (isinstance(v, Py) and v.value is None):
        return None
    if isinstance(v, TupleVal) or (isinstance(v, Py) and isinstance(v.value, tuple | list)):
        return _py_ints(c, v, node, "axis")
    return _py_int(c, v, node, "axis")


def _py_bool(c: FunctionConverter, v: Val | None, node: ast.AST, what: str) -> bool:
    if v is None:
        return False
    if isinstance(v, Py) and isinstance(v.value, bool | int):
        return bool(v.value)
    raise c.error(f"{what} must be True or False", node)


def _dtype(c: FunctionConverter, v: Val, node: ast.AST) -> str:
    name = dtype_name(v.value) if isinstance(v, Py) else None
    if name is None:
        raise c.error(f"not a dtype: {_show(v)}", node)
    return name


def _show(v: Val) -> str:
    return repr(v.value) if isinstance(v, Py) else "a tensor"


def _args(
    c: FunctionConverter,
    name: str,
    args: list[Val],
    kwargs: dict[str, Val],
    params: list[str],
    node: ast.AST,
    required: int = 1,
) -> dict[str, Val]:
    """Bind ``args``/``kwargs`` to ``params`` as a Python function would."""
    if len(args) > len(params):
        raise c.error(f"{name} takes at most {len(params)} arguments, got {len(args)}", node)
    bound = dict(zip(params, args, strict=False))
    for k, v in kwargs.items():
        if k not in params:
            raise c.error(f"{name} has no parameter {k} here", node)
        if k in bound:
            raise c.error(f"{name} got {k} twice", node)
        bound[k] = v
    missing = [p for p in params[:required] if p not in bound]
    if missing:
        raise c.error(f"{name} is missing the argument {missing[0]}", node)
    return bound


# -- reductions and shape functions ----------------------------------------------------------


def reduce(c: FunctionConverter, op: str, b: dict[str, Val], node: ast.AST) -> Val:
    x = c.materialize(b["a"], node)
    if op == "mean" and x.tensor is not None and not str(x.tensor.dtype).startswith("float"):
        x = c.cast(x, "float32", node)  # numpy's mean of integers is a float
    if op in ("sum", "prod") and x.tensor is not None and x.tensor.dtype == "bool":
        x = c.cast(x, "int32", node)  # numpy counts: the sum of bools is an integer
    attrs: dict[str, object] = {
        "axis": _axis(c, b.get("axis"), node),
        "keepdims": _py_bool(c, b.get("keepdims"), node, "keepdims"),
    }
    return c.op(op, [x], attrs, node)


def variance(c: FunctionConverter, b: dict[str, Val], node: ast.AST, std: bool) -> Val:
    x = c.materialize(b["a"], node)
    if x.tensor is not None and not str(x.tensor.dtype).startswith("float"):
        x = c.cast(x, "float32", node)
    axis = _axis(c, b.get("axis"), node)
    keep = _py_bool(c, b.get("keepdims"), node, "keepdims")
    ddof = b.get("ddof")
    unbiased = False
    if ddof is not None:
        d = _py_int(c, ddof, node, "ddof")
        if d not in (0, 1):
            raise c.error("ddof must be 0 or 1", node)
        unbiased = d == 1
    mean = c.op("mean", [x], {"axis": axis, "keepdims": True}, node)
    var = c.op("variance", [x, mean], {"axis": axis, "keepdims": keep, "unbiased": unbiased}, node)
    return c.op("sqrt", [var], {}, node) if std else var


def _shape_arg(c: FunctionConverter, args: list[Val], node: ast.AST) -> list[int]:
    if len(args) == 1:
        return _py_ints(c, args[0], node, "a shape")
    return [_py_int(c, a, node, "a shape") for a in args]


def creation(c: FunctionConverter, op: str, b: dict[str, Val], node: ast.AST) -> Val:
    shape = _py_ints(c, b["shape"], node, "a shape")
    dtype = _dtype(c, b["dtype"], node) if b.get("dtype") is not None else None
    if op == "full":
        fill = b["fill_value"]
        if dtype is None:
            dtype = "float32" if isinstance(fill, Py) and isinstance(fill.value, float) else None
        value = (
            c.materialize(fill, node)
            if not isinstance(fill, Py)
            else c.literal(
                fill.value,
                node,
                Ex(
                    Constant(np.zeros((), dtype or _default(fill))),
                    TensorType((), dtype or _default(fill)),
                ),
            )
        )
        return c.op("full", [value], {"shape": shape, "dtype": dtype or ""}, node)
    return c.op(op, [], {"shape": shape, "dtype": dtype or "float32"}, node)


def _default(v: Val) -> str:
    if isinstance(v, Py):
        if isinstance(v.value, bool):
            return "bool"
        if isinstance(v.value, int):
            return "int32"
    return "float32"


def like(c: FunctionConverter, op: str, b: dict[str, Val], node: ast.AST) -> Val:
    x = c.materialize(b["a"], node)
    if b.get("dtype") is not None:
        x = c.cast(x, _dtype(c, b["dtype"], node), node)
    if op == "full_like":
        return c.op("full_like", [x, c.materialize(b["fill_value"], node, x)], {}, node)
    return c.op(op, [x], {}, node)


# -- the numpy table of special functions --------------------------------------------------------


def _numpy_special(
    c: FunctionConverter, obj: object, args: list[Val], kwargs: dict[str, Val], node: ast.AST
) -> Val | None:
    name = getattr(obj, "__name__", "")
    if obj is np.where:
        b = _args(c, "np.where", args, kwargs, ["condition", "x", "y"], node, 3)
        x, y = c.coerce(b["x"], b["y"], node)
        return c.op("where", [b["condition"], x, y], {}, node)
    if obj in pyops.NUMPY_REDUCE:
        b = _args(
            c,
            f"np.{name}",
            args,
            kwargs,
            ["a", "axis", "keepdims"],
            node,
        )
        return reduce(c, pyops.NUMPY_REDUCE[obj], b, node)
    if obj in (np.var, np.std):
        b = _args(c, f"np.{name}", args, kwargs, ["a", "axis", "ddof", "keepdims"], node)
        return variance(c, b, node, std=obj is np.std)
    if obj is np.reshape:
        b = _args(c, "np.reshape", args, kwargs, ["a", "newshape"], node, 2)
        return c.op(
            "reshape", [b["a"]], {"newshape": _py_ints(c, b["newshape"], node, "a shape")}, node
        )
    if obj is np.transpose:
        b = _args(c, "np.transpose", args, kwargs, ["a", "axes"], node)
        axes = b.get("axes")
        return c.op(
            "transpose",
            [b["a"]],
            {"axes": None if axes is None else _py_ints(c, axes, node, "axes")},
            node,
        )
    if obj is np.expand_dims:
        b = _args(c, "np.expand_dims", args, kwargs, ["a", "axis"], node, 2)
        return c.op("expand_dims", [b["a"]], {"axis": _py_int(c, b["axis"], node, "axis")}, node)
    if obj is np.squeeze:
        b = _args(c, "np.squeeze", args, kwargs, ["a", "axis"], node)
        axis = _axis(c, b.get("axis"), node)
        return c.op("squeeze", [b["a"]], {"axis": [axis] if isinstance(axis, int) else axis}, node)
    if obj in (np.concatenate, np.stack):
        b = _args(c, f"np.{name}", args, kwargs, ["arrays", "axis"], node)
        axis = _py_int(c, b["axis"], node, "axis") if "axis" in b else 0
        seq = b["arrays"]
        if isinstance(seq, TupleVal):
            seq = TupleVal(tuple(c.materialize(v, node) for v in seq.items))
            seq = _same_dtype(c, seq, node)
        return c.op(name, [seq], {"axis": axis}, node)
    if obj in (np.zeros, np.ones, np.empty):
        b = _args(c, f"np.{name}", args, kwargs, ["shape", "dtype"], node)
        return creation(c, "ones" if obj is np.ones else "zeros", b, node)
    if obj is np.full:
        b = _args(c, "np.full", args, kwargs, ["shape", "fill_value", "dtype"], node, 2)
        return creation(c, "full", b, node)
    if obj in (np.zeros_like, np.ones_like, np.empty_like):
        b = _args(c, f"np.{name}", args, kwargs, ["a", "dtype"], node)
        return like(c, "ones_like" if obj is np.ones_like else "zeros_like", b, node)
    if obj is np.full_like:
        b = _args(c, "np.full_like", args, kwargs, ["a", "fill_value", "dtype"], node, 2)
        return like(c, "full_like", b, node)
    if obj is np.clip:
        b = _args(c, "np.clip", args, kwargs, ["a", "a_min", "a_max"], node, 3)
        return clip(c, b, node)
    if obj is np.tile:
        b = _args(c, "np.tile", args, kwargs, ["A", "reps"], node, 2)
        return c.op("tile", [b["A"]], {"reps": _py_ints(c, b["reps"], node, "reps")}, node)
    if obj is np.repeat:
        b = _args(c, "np.repeat", args, kwargs, ["a", "repeats", "axis"], node, 2)
        data = c.materialize(b["a"], node)
        rep_axis = b.get("axis")
        if rep_axis is None or (isinstance(rep_axis, Py) and rep_axis.value is None):
            data = c.op("reshape", [data], {"newshape": [-1]}, node)  # numpy flattens first
            axis = 0
        else:
            axis = _py_int(c, rep_axis, node, "axis")
        repeats = _py_int(c, b["repeats"], node, "repeats")
        return c.op("repeat", [data], {"repeats": repeats, "axis": axis}, node)
    if obj is np.flip:
        b = _args(c, "np.flip", args, kwargs, ["m", "axis"], node)
        out = c.materialize(b["m"], node)
        flip_axes = _axis(c, b.get("axis"), node)
        if flip_axes is None:
            if out.tensor is None:
                raise c.needs_types("np.flip without an axis needs the tensor's rank", node)
            flip_axes = list(range(out.tensor.ndim))
        for a in [flip_axes] if isinstance(flip_axes, int) else flip_axes:
            out = c.op("reverse", [out], {"axis": a}, node)
        return out
    if obj is np.broadcast_to:
        b = _args(c, "np.broadcast_to", args, kwargs, ["array", "shape"], node, 2)
        return c.op(
            "broadcast_to", [b["array"]], {"shape": _py_ints(c, b["shape"], node, "a shape")}, node
        )
    if obj is np.take:
        b = _args(c, "np.take", args, kwargs, ["a", "indices", "axis"], node, 2)
        take_axis = b.get("axis")
        data = c.materialize(b["a"], node)
        if take_axis is None:
            data = c.op("reshape", [data], {"newshape": [-1]}, node)
            axis = 0
        else:
            axis = _py_int(c, take_axis, node, "axis")
        return take_checked(c, data, b["indices"], axis, node)
    if obj is np.arange:
        return arange(c, args, kwargs, node)
    return None


def _same_dtype(c: FunctionConverter, seq: TupleVal, node: ast.AST) -> TupleVal:
    items = [v for v in seq.items if isinstance(v, Ex)]
    dtypes = {str(v.tensor.dtype) for v in items if v.tensor is not None}
    floats = sorted(d for d in dtypes if d.startswith("float"))
    if len(dtypes) > 1 and floats:
        target = floats[-1]
        return TupleVal(
            tuple(
                c.cast(v, str(target), node)
                if v.tensor is not None and v.tensor.dtype != target
                else v
                for v in items
            )
        )
    return seq


def clip(c: FunctionConverter, b: dict[str, Val], node: ast.AST) -> Val:
    lo, hi = b["a_min"], b["a_max"]
    lo_none = isinstance(lo, Py) and lo.value is None
    hi_none = isinstance(hi, Py) and hi.value is None
    if lo_none and hi_none:
        raise c.error("clip needs a_min or a_max", node)
    if not (
        isinstance(lo, Py) and isinstance(hi, Py) and is_number(lo.value) and is_number(hi.value)
    ):
        out: Val = b["a"]
        if not lo_none:
            out = c.binary("maximum", out, lo, node)
        if not hi_none:
            out = c.binary("minimum", out, hi, node)
        return out
    return c.op("clip", [b["a"]], {"a_min": float(lo.value), "a_max": float(hi.value)}, node)  # type: ignore[arg-type]


def arange(c: FunctionConverter, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
    b = _args(c, "np.arange", args, kwargs, ["start", "stop", "step", "dtype"], node)
    start, stop, step = b["start"], b.get("stop"), b.get("step", Py(1))
    if stop is None:
        start, stop = Py(0), start
    values = [start, stop, step]
    dtype = _dtype(c, b["dtype"], node) if "dtype" in b else None
    if dtype is None:
        floats = any(isinstance(v, Py) and isinstance(v.value, float) for v in values) or any(
            isinstance(v, Ex) and v.tensor is not None and str(v.tensor.dtype).startswith("float")
            for v in values
        )
        dtype = "float32" if floats else "int32"
    proto = Ex(Constant(np.zeros((), dtype)), TensorType((), dtype))
    exprs = [
        c.materialize(v, node, proto)
        if isinstance(v, Py)
        else c.cast(c.materialize(v, node), dtype, node)
        for v in values
    ]
    return c.op("arange", exprs, {"dtype": dtype}, node)


# -- calls -------------------------------------------------------------------------------------


def _op_name_of(obj: object) -> str | None:
    """The operator that ``obj`` builds: ``relay.op.exp``, ``relay.nn.relu``, the builder
    functions of ``relay.op.nn`` and the other families."""
    name = getattr(obj, "__relay_op__", None)
    if isinstance(name, str):
        return name
    module = getattr(obj, "__module__", "")
    fname = getattr(obj, "__name__", "")
    if module == "relay.op.nn" and has_op(f"nn.{fname}"):
        return f"nn.{fname}"
    if module in (
        "relay.op.elemwise",
        "relay.op.transform",
        "relay.op.reduce",
        "relay.op.tensor",
    ) and has_op(fname):
        return fname
    return None


def generic_op(
    c: FunctionConverter, name: str, args: list[Val], kwargs: dict[str, Val], node: ast.AST
) -> Val:
    """``relay.op.<name>(inputs..., attrs...)``: positional arguments fill the inputs, then
    the attributes in schema order; keywords name attributes."""
    opdef = get_op(name)
    n = opdef.num_inputs if opdef.num_inputs >= 0 else len(args)
    if len(args) < n:
        raise c.error(f"{name} expects {n} input(s), got {len(args)}", node)
    inputs, rest = args[:n], args[n:]
    schema = [f.name for f in opdef.attrs_schema]
    if len(rest) > len(schema):
        raise c.error(
            f"{name} takes {n} input(s) and {len(schema)} attribute(s), got {len(args)} arguments",
            node,
        )
    attrs: dict[str, object] = {}
    for key, v in [*zip(schema, rest, strict=False), *kwargs.items()]:
        attrs[key] = _attr_value(c, v, node, key)
    if (
        len(inputs) == 2
        and opdef.num_inputs == 2
        and opdef.pattern.name in ("BROADCAST", "ELEMWISE")
        and not opdef.attrs_schema
    ):
        x, y = c.coerce(inputs[0], inputs[1], node)
        return c.op(name, [x, y], attrs, node)
    return c.op(name, inputs, attrs, node)


def _attr_value(c: FunctionConverter, v: Val, node: ast.AST, key: str) -> object:
    if isinstance(v, Py):
        value = v.value
        name = dtype_name(value) if not isinstance(value, str | bool | int | float) else None
        return name if name is not None else (str(value) if isinstance(value, DType) else value)
    if isinstance(v, TupleVal):
        return [_attr_value(c, i, node, key) for i in v.items]
    raise c.error(f"attribute {key} must be a constant, not a tensor computed at run time", node)


def call_object(
    c: FunctionConverter, obj: object, args: list[Val], kwargs: dict[str, Val], node: ast.Call
) -> Val:
    """A call of the Python object ``obj`` found by name (see the module docstring)."""
    from relay.frontend.adt import ConstructorInstance
    from relay.frontend.convert import _SelfRef
    from relay.frontend.function import RelayFunction

    if isinstance(obj, _SelfRef) and c.self_ref is not None:
        if kwargs:
            raise c.error("keyword arguments to @relay functions are not supported", node)
        exs = [c.materialize(a, node) for a in args]
        arity = len(c.source.node.args.args)
        if len(exs) != arity:
            s = "s" if arity != 1 else ""
            raise c.error(f"{obj.name} takes {arity} argument{s}, got {len(exs)}", node)
        target, ret = c.self_ref([e.ty for e in exs], c.span(node))
        return Ex(Call(target, tuple(e.expr for e in exs), span=c.span(node)), ret)
    if isinstance(obj, RelayFunction):
        if kwargs:
            raise c.error("keyword arguments to @relay functions are not supported", node)
        if len(args) != obj.arity:
            s = "s" if obj.arity != 1 else ""
            raise c.error(f"{obj.__name__} takes {obj.arity} argument{s}, got {len(args)}", node)
        exs = [c.materialize(a, node) for a in args]
        target, ret = c.builder.call_target(obj, [e.ty for e in exs], c.span(node))
        return Ex(Call(target, tuple(e.expr for e in exs), span=c.span(node)), ret)
    if isinstance(obj, Derivative):
        return _derivative_call(c, obj, args, kwargs, node)
    if obj is autodiff.grad or obj is autodiff.jvp:
        return _derivative_of(c, obj, args, kwargs, node)
    if isinstance(obj, type) and issubclass(obj, ConstructorInstance):
        made = c.builder.value_of(obj, c.span(node))
        assert made is not None
        if kwargs:
            raise c.error("constructors take positional fields", node)
        exs = [c.materialize(a, node) for a in args]
        return Ex(Call(made[0], tuple(e.expr for e in exs), span=c.span(node)), None)
    if obj in pyops.NUMPY_UNARY:
        b = _args(c, f"np.{getattr(obj, '__name__', '')}", args, kwargs, ["x"], node)
        x = b["x"]
        if isinstance(x, Py) and is_number(x.value):  # computed now, and still weakly typed
            folded = obj(x.value)  # type: ignore[operator]
            return Py(folded.item() if isinstance(folded, np.generic) else folded)
        op = pyops.NUMPY_UNARY[obj]
        if op in pyops.FLOAT_RESULTS:
            xe = c.materialize(x, node)
            if xe.tensor is not None and not str(xe.tensor.dtype).startswith("float"):
                xe = c.cast(xe, "float32", node)  # numpy computes integers' tanh in floats
            return c.op(op, [xe], {}, node)
        return c.op(op, [x], {}, node)
    if obj in pyops.NUMPY_BINARY:
        b = _args(c, f"np.{getattr(obj, '__name__', '')}", args, kwargs, ["x1", "x2"], node, 2)
        return c.binary(pyops.NUMPY_BINARY[obj], b["x1"], b["x2"], node)
    special = _numpy_special(c, obj, args, kwargs, node) if _hashable(obj) else None
    if special is not None:
        return special
    op_name = _op_name_of(obj)
    if op_name is not None:
        return generic_op(c, op_name, args, kwargs, node)
    python_scalar = obj in (builtins.float, builtins.int, builtins.bool)
    dtype = dtype_name(obj) if isinstance(obj, type | DType) and not python_scalar else None
    if dtype is not None:  # np.float32(x), relay.float32(x)
        b = _args(c, dtype, args, kwargs, ["x"], node)
        x = b["x"]
        if isinstance(x, Py) and is_number(x.value):
            return c.literal(
                x.value, node, Ex(Constant(np.zeros((), dtype)), TensorType((), dtype))
            )
        return c.cast(c.materialize(x, node), dtype, node)
    return _builtin(c, obj, args, kwargs, node)


def _derivative_call(
    c: FunctionConverter, d: Derivative, args: list[Val], kwargs: dict[str, Val], node: ast.Call
) -> Val:
    if kwargs:
        raise c.error(f"keyword arguments to {d.__name__} are not supported", node)
    if len(args) != d.arity:
        s = "s" if d.arity != 1 else ""
        raise c.error(f"{d.__name__} takes {d.arity} argument{s}, got {len(args)}", node)
    exs = [c.materialize(a, node) for a in args]
    target, ret = autodiff.derivative_call_target(c.builder, d, [e.ty for e in exs], c.span(node))
    return Ex(Call(target, tuple(e.expr for e in exs), span=c.span(node)), ret)


def _derivative_of(
    c: FunctionConverter, fn: object, args: list[Val], kwargs: dict[str, Val], node: ast.Call
) -> Val:
    """``relay.grad(f, argnums=...)`` / ``relay.jvp(f)`` inside converted code: ``f`` must
    name a ``@relay`` function (known at conversion time), and the derivative is a Python
    value that calls compile to a derivative global."""
    from relay.frontend.function import RelayFunction

    what = "relay.grad" if fn is autodiff.grad else "relay.jvp"
    if len(args) != 1 or set(kwargs) - {"argnums"}:
        raise c.error(f"{what} takes one @relay function and optionally argnums=", node)
    target = args[0]
    from relay.frontend.convert import _SelfRef

    if isinstance(target, Py) and isinstance(target.value, _SelfRef):
        raise c.error(
            f"{what} of {target.value.name} inside {target.value.name}: the function differentiated "
            "calls, through its callees, a derivative of itself",
            node,
        )
    if not isinstance(target, Py) or not isinstance(target.value, RelayFunction):
        raise c.error(
            f"{what} inside a @relay function differentiates a @relay function defined "
            "outside it (a local function or lambda cannot be differentiated here yet)",
            node,
        )
    argnums: object = None
    if "argnums" in kwargs:
        a = kwargs["argnums"]
        argnums = _attr_value(c, a, node, "argnums")
        if isinstance(argnums, list):
            argnums = tuple(argnums)
    try:
        if fn is autodiff.grad:
            return Py(autodiff.grad(target.value, argnums))  # type: ignore[arg-type]
        return Py(autodiff.jvp(target.value, argnums))  # type: ignore[arg-type]
    except FrontendError as err:
        raise c.error(err.message, node) from None


def _hashable(obj: object) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _builtin(
    c: FunctionConverter, obj: object, args: list[Val], kwargs: dict[str, Val], node: ast.Call
) -> Val:
    if obj is builtins.abs:
        b = _args(c, "abs", args, kwargs, ["x"], node)
        x = b["x"]
        if isinstance(x, Py) and is_number(x.value):
            return Py(abs(x.value))  # type: ignore[arg-type]
        return c.op("abs", [x], {}, node)
    if obj in (builtins.min, builtins.max) and len(args) == 2 and not kwargs:
        a0, a1 = args
        if (
            isinstance(a0, Py)
            and isinstance(a1, Py)
            and is_number(a0.value)
            and is_number(a1.value)
        ):
            x0, x1 = float(a0.value), float(a1.value)  # type: ignore[arg-type]
            smaller = x0 <= x1 if obj is builtins.min else x0 >= x1
            return a0 if smaller else a1
        return c.binary("minimum" if obj is builtins.min else "maximum", args[0], args[1], node)
    if obj in (builtins.float, builtins.int, builtins.bool):
        kind: type = obj
        b = _args(c, kind.__name__, args, kwargs, ["x"], node)
        x = b["x"]
        if isinstance(x, Py) and is_number(x.value):
            return Py(kind(x.value))
        target = {float: "float32", int: "int32", bool: "bool"}[kind]
        return c.cast(c.materialize(x, node), target, node)
    if obj is builtins.len:
        b = _args(c, "len", args, kwargs, ["x"], node)
        x = b["x"]
        if isinstance(x, TupleVal):
            return Py(len(x.items))
        if isinstance(x, Ex) and isinstance(x.ty, TupleType):
            return Py(len(x.ty.fields))
        if isinstance(x, Ex) and x.tensor is not None and x.tensor.ndim > 0:
            first = x.tensor.shape[0]
            if isinstance(first, int):
                return Py(first)
            return _shape_dim(c, x, 0, node)
        raise c.needs_types("len() needs a tuple or a tensor of rank 1 or more", node)
    if obj is builtins.range:
        raise c.error("range(...) is only supported as the iterable of a for loop", node)
    if obj is builtins.print:
        raise c.unsupported(
            "print()", node, "return the value and print it outside the @relay function"
        )
    what = getattr(obj, "__qualname__", None) or repr(obj)
    if inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.ismethod(obj):
        raise c.error(
            f"cannot call the Python function {what} from a @relay function",
            node,
            "decorate it with @relay too, or use a numpy / relay.op operator",
        )
    raise c.error(f"cannot call {what} from a @relay function", node)


# -- methods and attributes ------------------------------------------------------------------------


def call_method(
    c: FunctionConverter,
    receiver: Val,
    name: str,
    args: list[Val],
    kwargs: dict[str, Val],
    node: ast.Call,
) -> Val:
    """``x.name(args)`` for a tensor ``x``."""
    x = c.materialize(receiver, node)
    if name in pyops.REDUCE_METHODS:
        params = ["axis", "keepdims"]
        b = _args(c, f".{name}()", args, kwargs, params, node, 0)
        b["a"] = x
        return reduce(c, pyops.REDUCE_METHODS[name], b, node)
    if name in ("var", "std"):
        b = _args(c, f".{name}()", args, kwargs, ["axis", "ddof", "keepdims"], node, 0)
        b["a"] = x
        return variance(c, b, node, std=name == "std")
    if name == "reshape":
        if kwargs:
            raise c.error(".reshape() takes the shape positionally", node)
        return c.op("reshape", [x], {"newshape": _shape_arg(c, args, node)}, node)
    if name == "transpose":
        axes = _shape_arg(c, args, node) if args else None
        return c.op("transpose", [x], {"axes": axes}, node)
    if name == "astype":
        b = _args(c, ".astype()", args, kwargs, ["dtype"], node)
        return c.cast(x, _dtype(c, b["dtype"], node), node)
    if name == "squeeze":
        b = _args(c, ".squeeze()", args, kwargs, ["axis"], node, 0)
        axis = _axis(c, b.get("axis"), node)
        return c.op("squeeze", [x], {"axis": [axis] if isinstance(axis, int) else axis}, node)
    if name in ("flatten", "ravel"):
        return c.op("reshape", [x], {"newshape": [-1]}, node)
    if name == "copy":
        return c.op("copy", [x], {}, node)
    if name == "clip":
        b = _args(c, ".clip()", args, kwargs, ["a_min", "a_max"], node, 2)
        b["a"] = x
        return clip(c, b, node)
    if name == "dot":
        b = _args(c, ".dot()", args, kwargs, ["b"], node)
        return c.binary("matmul", x, b["b"], node)
    raise c.error(
        f"unsupported tensor method .{name}()",
        node,
        "see docs/frontend.md for the methods understood",
    )


def _shape_dim(c: FunctionConverter, x: Ex, axis: int, node: ast.AST) -> Ex:
    shape = c.op("shape_of", [x], {"dtype": "int32"}, node)
    index = c.literal(axis, node)
    return c.op("take", [shape, index], {"axis": 0}, node)


def tensor_attribute(c: FunctionConverter, base: Val, attr: str, node: ast.Attribute) -> Val:
    """``x.T``, ``x.shape``, ``x.ndim``, ``x.dtype``, ``x.size``."""
    if isinstance(base, TupleVal):
        raise c.error(f"a tuple has no attribute {attr}", node)
    x = c.materialize(base, node)
    if attr == "T":
        return c.op("transpose", [x], {"axes": None}, node)
    t = x.tensor
    if attr in ("shape", "ndim", "dtype", "size") and t is None:
        raise c.needs_types(
            f"x.{attr} needs the tensor's type while converting; annotate the parameters it comes from",
            node,
        )
    assert t is not None or attr not in ("shape", "ndim", "dtype", "size")
    if attr == "ndim":
        return Py(t.ndim)  # type: ignore[union-attr]
    if attr == "dtype":
        return Py(DType(str(t.dtype)))  # type: ignore[union-attr]
    if attr == "shape":
        items: list[Val] = []
        for i, d in enumerate(t.shape):  # type: ignore[union-attr]
            items.append(Py(d) if isinstance(d, int) else _shape_dim(c, x, i, node))
        return TupleVal(tuple(items))
    if attr == "size":
        size = dim.product(list(t.shape))  # type: ignore[union-attr]
        if isinstance(size, int):
            return Py(size)
        raise c.error("x.size of a tensor with a symbolic shape is not supported", node)
    raise c.error(f"unsupported tensor attribute .{attr}", node)


# -- indexing ------------------------------------------------------------------------------------


def subscript(
    c: FunctionConverter, base: Val, index: ast.expr, node: ast.Subscript, env: dict[str, _Any]
) -> Val:
    """``base[index]`` (see the module docstring)."""
    if isinstance(base, Py):
        key = c.expr(index, env)
        if isinstance(key, Py):
            try:
                return Py(base.value[key.value])  # type: ignore[index]
            except Exception as err:
                raise c.error(f"cannot index {_show(base)}: {err}", node) from None
        raise c.error("cannot index a Python value with a tensor", node)
    if isinstance(base, TupleVal):
        key = c.expr(index, env)
        if isinstance(key, Py) and isinstance(key.value, int):
            try:
                return base.items[key.value]
            except IndexError:
                raise c.error(
                    f"tuple index {key.value} is out of range for a tuple of {len(base.items)} items",
                    node,
                ) from None
        if isinstance(key, Py) and isinstance(key.value, slice):
            return TupleVal(base.items[key.value])
        raise c.error("a tuple is indexed by an integer constant", node)
    x = c.materialize(base, node)
    if isinstance(x.ty, TupleType):
        key = c.expr(index, env)
        if not (
            isinstance(key, Py) and isinstance(key.value, int) and not isinstance(key.value, bool)
        ):
            raise c.error("a tuple is indexed by an integer constant", node)
        n = len(x.ty.fields)
        i = key.value + n if key.value < 0 else key.value
        if not 0 <= i < n:
            raise c.error(
                f"tuple index {key.value} is out of range for a tuple of {n} fields", node
            )
        return Ex(TupleGetItem(x.expr, i, span=c.span(node)), x.ty.fields[i])
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if all(map(_is_none, parts)):
        return c.op("expand_dims", [x], {"axis": 0, "num_newaxis": len(parts)}, node)  # x[None]
    return _tensor_index(c, x, parts, node, env)


def _slice_bound(
    c: FunctionConverter, n: ast.expr | None, env: dict[str, _Any], what: str
) -> int | None:
    if n is None:
        return None
    v = c.expr(n, env)
    if isinstance(v, Py) and v.value is None:
        return None
    if isinstance(v, Py) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    raise c.error(f"a slice {what} must be an integer constant", n)


def _is_none(p: ast.expr) -> bool:
    """Whether index ``p`` is ``None`` or ``np.newaxis`` (``numpy.newaxis``)."""
    if isinstance(p, ast.Attribute) and p.attr == "newaxis":
        return isinstance(p.value, ast.Name) and p.value.id in ("np", "numpy")
    return isinstance(p, ast.Constant) and p.value is None


def _tensor_index(
    c: FunctionConverter, x: Ex, parts: list[ast.expr], node: ast.AST, env: dict[str, _Any]
) -> Val:
    rank = x.tensor.ndim if x.tensor is not None else None
    if any(isinstance(p, ast.Constant) and p.value is Ellipsis for p in parts):
        if rank is None:
            raise c.needs_types(
                "'...' in an index needs the tensor's rank; annotate its parameters", node
            )
        k = next(
            i for i, p in enumerate(parts) if isinstance(p, ast.Constant) and p.value is Ellipsis
        )
        fill = rank - (len(parts) - 1 - sum(map(_is_none, parts)))
        parts = [*parts[:k], *[ast.Slice() for _ in range(fill)], *parts[k + 1 :]]
    if any(map(_is_none, parts)):
        return _index_with_new_axes(c, x, parts, node, env)
    if rank is not None and len(parts) > rank:
        raise c.error(f"too many indices for a rank-{rank} tensor: {len(parts)}", node)
    begin: list[int] = []
    end: list[int] = []
    strides: list[int] = []
    axes: list[int] = []
    removed: list[tuple[int, Ex | None]] = []  # (axis, tensor index or None for an int index)
    for axis, p in enumerate(parts):
        if isinstance(p, ast.Slice):
            step = _slice_bound(c, p.step, env, "step")
            lo = _slice_bound(c, p.lower, env, "start")
            hi = _slice_bound(c, p.upper, env, "stop")
            if step == 0:
                raise c.error("slice step cannot be zero", p)
            s = 1 if step is None else step
            if lo is None and hi is None and s == 1:
                continue
            begin.append(lo if lo is not None else (0 if s > 0 else _INT32_MAX))
            end.append(hi if hi is not None else (_INT32_MAX if s > 0 else -_INT32_MAX - 1))
            strides.append(s)
            axes.append(axis)
            continue
        v = c.expr(p, env)
        if isinstance(v, Py) and isinstance(v.value, int) and not isinstance(v.value, bool):
            i = v.value
            size = _static_dim(x, axis)
            if size is not None and not -size <= i < size:
                raise c.error(f"index {i} is out of bounds for axis {axis} with size {size}", p)
            begin.append(i)
            end.append(i + 1 if i != -1 else _INT32_MAX)
            strides.append(1)
            axes.append(axis)
            removed.append((axis, None))
            continue
        if isinstance(v, Ex | Py):
            idx = c.materialize(v, p)
            removed.append((axis, idx))
            continue
        raise c.error("unsupported index", p)
    out: Ex = x
    removed_axes = removed
    if axes:
        out = c.op(
            "strided_slice",
            [out],
            {"begin": begin, "end": end, "strides": strides, "axes": axes},
            node,
        )
    for axis, taken in sorted(removed_axes, key=lambda r: -r[0]):
        if taken is None:
            out = c.op("squeeze", [out], {"axis": [axis]}, node)
        else:
            out = take_checked(c, out, taken, axis, node)
    return out


def _index_with_new_axes(
    c: FunctionConverter, x: Ex, parts: list[ast.expr], node: ast.AST, env: dict[str, _Any]
) -> Val:
    """``x[parts]`` where ``parts`` holds ``None`` (``np.newaxis``) among slices and
    integers: indexed without the Nones, then a new axis of size 1 inserted at each None's
    place in the result (numpy's rule: after the axes that the indices before it keep, a
    slice keeping one and an integer none)."""
    kept = [p for p in parts if not _is_none(p)]
    new_axes: list[int] = []  # each None's axis in the result
    out_axes = 0
    for p in parts:
        if _is_none(p):
            new_axes.append(out_axes)
            out_axes += 1
            continue
        if isinstance(p, ast.Slice):
            out_axes += 1
            continue
        v = c.expr(p, env)
        if not (isinstance(v, Py) and isinstance(v.value, int) and not isinstance(v.value, bool)):
            raise c.unsupported(
                "None (np.newaxis) mixed with array indices", p, "use np.expand_dims"
            )
    out = _tensor_index(c, x, kept, node, env) if kept else x
    assert isinstance(out, Ex)
    for axis in new_axes:
        out = c.op("expand_dims", [out], {"axis": axis, "num_newaxis": 1}, node)
    return out


def take_checked(c: FunctionConverter, x: Ex, index: Val, axis: int, node: ast.AST) -> Ex:
    """``x`` indexed by ``index`` along ``axis`` as numpy does: a negative index counts from
    the end, and one out of range is an error at run time."""
    if isinstance(index, Py) and isinstance(index.value, int) and not isinstance(index.value, bool):
        size = _static_dim(x, axis)
        i = index.value
        if size is not None and not -size <= i < size:
            raise c.error(f"index {i} is out of bounds for axis {axis} with size {size}", node)
        if size is not None and i < 0:
            index = Py(i + size)
    idx = c.materialize(index, node)
    if not (isinstance(idx.expr, Constant) and int(np.min(idx.expr.data, initial=0)) >= 0):
        size_val: Val = (
            Py(_static_dim(x, axis))
            if _static_dim(x, axis) is not None
            else _shape_dim(c, x, axis, node)
        )
        negative = c.binary("less", idx, Py(0), node)
        wrapped = c.binary("add", idx, size_val, node)
        idx = c.op("where", [negative, wrapped, idx], {}, node)
    return c.op("take", [x, idx], {"axis": axis, "mode": "fast"}, node)


def _static_dim(x: Ex, axis: int) -> int | None:
    t = x.tensor
    if t is None or not -t.ndim <= axis < t.ndim:
        return None
    d = t.shape[axis]
    return d if isinstance(d, int) else None
