"""numpy's array API on lazy tensors: each operation recorded as relay operators.

Semantics are numpy's, dtypes included: a ufunc's result dtype is the one numpy's own loop
selection gives (``ufunc.resolve_dtypes``, with Python numbers weakly typed as in NEP 50),
its operands are cast to the loop's dtypes before the relay operator is applied; sums and
products of small integers accumulate in 64 bits and means of integers are float64, as in
numpy. A Python number becomes a data parameter of the trace, not a constant, so a new
learning rate or step size reuses the compiled trace.

What relay has no operator for (or what numpy does with arguments relay does not take:
``out=`` into a numpy array, ``where=``, boolean masks)
*falls back*: the tensors it reads are computed (a barrier), numpy runs on their values
and the result is a new lazy tensor holding numpy's result. Every fallback is counted in
``relay.lazy.metrics().fallbacks`` by name, and warns when
``relay.lazy.config(warn_fallbacks=True)``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from relay.frontend.pyops import NUMPY_BINARY, NUMPY_UNARY
from relay.ir.types import DTYPES, TensorType
from relay.lazy.metrics import METRICS
from relay.lazy.trace import (
    CONFIG,
    STATE,
    LazyError,
    Node,
    copied_node,
    make_tuple,
    record,
    user_span,
)
from relay.op.tensor import COMPARISONS

if TYPE_CHECKING:
    from relay.lazy.tensor import Tensor

Array = np.ndarray[Any, Any]

_INT32_MAX = 2**31 - 1

UNARY: dict[Any, str] = {**NUMPY_UNARY, np.positive: "copy"}
"""numpy ufuncs of one operand and their relay operators."""

BINARY: dict[Any, str] = {k: v for k, v in NUMPY_BINARY.items() if k is not np.dot}
"""numpy ufuncs of two operands and their relay operators (``matmul`` is special)."""

_LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})


def _out_of_range_comparison(uf: Any, operands: tuple[Any, ...], dtypes: tuple[Any, ...]) -> Any:
    """A comparison of an integer tensor with a Python int outside its dtype's range has
    the same result for every element (numpy 2 compares the values, without overflow):
    that constant, or None."""
    for k in (0, 1):
        x, d = operands[1 - k], dtypes[1 - k]
        n = operands[k]
        if not (isinstance(n, int) and not isinstance(n, bool)) or not isinstance(d, np.dtype):
            continue
        if not np.issubdtype(d, np.integer):
            continue
        info = np.iinfo(d)
        if info.min <= n <= info.max:
            return None
        ends = np.array([info.min, info.max], d)
        value = (uf(n, ends) if k == 0 else uf(ends, n))[0]
        return full(_tensor(x).shape, bool(value), bool)
    return None


_BOOL_IDENTITY = frozenset({"abs", "floor", "ceil", "trunc"})
"""Operators that numpy 2 applies to bool arrays as the identity (relay's take numbers)."""
_BOOL = np.dtype(bool)
_SUPPORTED = frozenset(np.dtype(d) for d in DTYPES if d != "bfloat16")
_TENSOR: type[Tensor] | None = None


def _tensor_cls() -> type[Tensor]:
    global _TENSOR
    if _TENSOR is None:
        from relay.lazy.tensor import Tensor

        _TENSOR = Tensor
    return _TENSOR


def wrap(node: Node) -> Tensor:
    """A new tensor of ``node``."""
    return _tensor_cls()(node)


def bare(node: Node) -> Tensor:
    """A tensor of ``node`` that is not tracked as live (an intermediate of the view
    bookkeeping, never seen by the user)."""
    return _tensor_cls().untracked(node)


def shape_view(base: Any, result: Tensor) -> Tensor:
    """``result``, a reshape of ``base`` (``reshape``, ``ravel``, ``squeeze``,
    ``expand_dims``), marked as a view of it as numpy's are."""
    if is_tensor(base):
        from relay.lazy.views import mark_view

        mark_view(base, ("reshape", result.shape), result)
    return result


def transpose_view(base: Any, result: Tensor, axes: Any) -> Tensor:
    """``result``, a transpose of ``base``, marked as a view of it."""
    if is_tensor(base):
        from relay.lazy.views import mark_view

        perm = tuple(range(base.ndim))[::-1] if axes is None else _axes(axes, base.ndim)
        mark_view(base, ("transpose", perm), result)
    return result


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a lazy tensor."""
    return isinstance(x, _TENSOR or _tensor_cls())


def value(t: Tensor, reason: str) -> Array:
    """The value of ``t``: a barrier (computing every live tensor) if it is pending."""
    if t.node.error is not None:
        raise t.node.error
    if t.node.value is None:
        from relay.lazy.barrier import barrier

        barrier(reason, extra=(t.node,))
    v = t.node.value
    assert v is not None
    return v


def node_of(x: Any) -> Node:
    """The node of a tensor, or a data node of a copy of a numpy array or scalar."""
    if is_tensor(x):
        return x.node  # type: ignore[no-any-return]
    dtype = np.asarray(x).dtype
    if str(dtype) not in DTYPES:
        raise LazyError(f"relay has no dtype {dtype}", user_span())
    return copied_node(x)


def _tensor_type(n: Node) -> TensorType:
    assert isinstance(n.type, TensorType)
    return n.type


def _dtype(n: Node) -> np.dtype[Any]:
    return np.dtype(str(_tensor_type(n).dtype))


def _cast(n: Node, dtype: np.dtype[Any]) -> Node:
    return n if _dtype(n) == dtype else record("cast", (n,), {"dtype": str(dtype)})


def _supported(*dtypes: np.dtype[Any]) -> bool:
    return all(d in _SUPPORTED for d in dtypes)


# -- fallbacks -----------------------------------------------------------------------------------


def fallback(
    func: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], name: str = ""
) -> Any:
    """``func`` run by numpy on the values of the lazy tensors among its arguments (computed
    by a barrier), its array results wrapped as lazy tensors; counted in the metrics under
    ``name`` (default: the function's)."""
    name = name or getattr(func, "__name__", repr(func))
    if STATE.tracing:
        raise LazyError(
            f"{name} has no relay operator: it cannot be part of a function being differentiated",
            user_span(),
        )
    METRICS.fallbacks[name] += 1
    if CONFIG.warn_fallbacks:
        warnings.warn(
            f"relay.lazy: {name} runs in numpy on computed values (no relay operator)",
            RuntimeWarning,
            stacklevel=3,
        )
    pending = [
        t.node for t in _tensors((args, kwargs)) if t.node.pending or t.node.error is not None
    ]
    if pending:
        from relay.lazy.barrier import barrier

        barrier("fallback", extra=tuple(pending))
    out = func(*_values(args), **_values(kwargs))
    return _wrap_results(out)


def _tensors(x: Any) -> list[Tensor]:
    if is_tensor(x):
        return [x]
    if isinstance(x, list | tuple):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _values(x: Any) -> Any:
    if is_tensor(x):
        v = x.node.value
        assert v is not None
        return v
    if isinstance(x, list):
        return [_values(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_values(v) for v in x)
    if isinstance(x, dict):
        return {k: _values(v) for k, v in x.items()}
    return x


def _wrap_results(out: Any) -> Any:
    if isinstance(out, np.ndarray | np.generic) and str(out.dtype) in DTYPES:
        return wrap(node_of(out))
    if isinstance(out, tuple):
        return tuple(_wrap_results(o) for o in out)
    if isinstance(out, list):
        return [_wrap_results(o) for o in out]
    return out


# -- elementwise ---------------------------------------------------------------------------------


def _operand_dtype(x: Any) -> Any:
    """What ``resolve_dtypes`` is given for an operand: a Python int or float stays weak."""
    if is_tensor(x):
        return x.dtype
    if isinstance(x, np.generic):  # np.float64 subclasses float but is not weak
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, int | float):
        return type(x)
    return np.asarray(x).dtype


@functools.lru_cache(maxsize=4096)
def _loop(uf: Any, dtypes: tuple[Any, ...]) -> tuple[np.dtype[Any], ...] | None:
    try:
        return tuple(uf.resolve_dtypes((*dtypes, None)))
    except (TypeError, ValueError):
        return None


def ufunc(uf: Any, *operands: Any, bitwise: bool = False) -> Any:
    """numpy ufunc ``uf`` applied to ``operands`` (one or two), recorded."""
    name = UNARY.get(uf) if len(operands) == 1 else BINARY.get(uf)
    if uf is np.matmul:
        return matmul(*operands)
    dtypes = tuple(_operand_dtype(x) for x in operands)
    if uf is np.square:
        loop = _loop(uf, dtypes)
        if loop is None or not _supported(*loop):
            return fallback(uf, operands, {})
        x = astype(_tensor(operands[0]), loop[0])
        return ufunc(np.multiply, x, x)
    if name in _BOOL_IDENTITY and dtypes[0] == _BOOL:  # numpy 2: abs, floor... of bool
        return wrap(_tensor(operands[0]).node)
    if uf is np.power and len(operands) == 2:
        e = operands[1]
        if (
            isinstance(e, int | np.integer)
            and not isinstance(e, bool)
            and e < 0
            and all(
                np.issubdtype(np.dtype(d), np.integer) for d in dtypes if isinstance(d, np.dtype)
            )
        ):
            raise ValueError("Integers to negative integer powers are not allowed.")
    if name in COMPARISONS and len(operands) == 2:
        constant = _out_of_range_comparison(uf, operands, dtypes)
        if constant is not None:
            return constant
    if bitwise and not all(d == _BOOL for d in dtypes):  # & | ^ of integers
        return ufunc(_BITWISE[uf], *operands)
    loop = _loop(uf, dtypes)
    if name is None or loop is None or not _supported(*loop):
        return fallback(uf, operands, {})
    *ins, out = loop
    nodes = []
    for x, d in zip(operands, ins, strict=True):
        if is_tensor(x):
            nodes.append(_cast(x.node, d))
        else:
            nodes.append(copied_node(x, d))  # a number too: a parameter, in its loop dtype
    if name in _LOGICAL:
        nodes = [_cast(n, np.dtype(bool)) for n in nodes]
    if name in ("floor_divide", "floor_mod") and np.issubdtype(ins[1], np.integer):
        # numpy: an integer division by zero gives 0 (and warns), where relay's raises
        zero = copied_node(0, ins[1])
        is_zero = record("equal", (nodes[1], zero))
        safe = record("where", (is_zero, copied_node(1, ins[1]), nodes[1]))
        result = record(name, (nodes[0], safe))
        return wrap(_cast(record("where", (is_zero, copied_node(0, out), result)), out))
    return wrap(_cast(record(name, tuple(nodes)), out))


_BITWISE = {
    np.logical_and: np.bitwise_and,
    np.logical_or: np.bitwise_or,
    np.logical_xor: np.bitwise_xor,
}


def assign(t: Tensor, result: Any) -> Tensor:
    """``t`` takes ``result`` as its value (an in-place operator): cast back to ``t``'s
    dtype when numpy's ``same_kind`` rule allows it, of ``t``'s shape."""
    if not is_tensor(result):  # a fallback's numpy scalar
        result = wrap(node_of(np.asarray(result)))
    if result.dtype != t.dtype:
        if not np.can_cast(result.dtype, t.dtype, "same_kind"):
            raise TypeError(
                f"Cannot cast ufunc output from dtype('{result.dtype}') to dtype('{t.dtype}') "
                "with casting rule 'same_kind'"
            )
        result = astype(result, t.dtype)
    if result.shape != t.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {t.shape} doesn't match the "
            f"broadcast shape {result.shape}"
        )
    from relay.lazy.views import write

    write(t, result.node)
    return t


def astype(t: Tensor, dtype: Any) -> Tensor:
    """``t``'s elements converted to ``dtype``."""
    d = np.dtype(dtype)
    if not _supported(d):
        return fallback(lambda a: a.astype(d), (t,), {})  # type: ignore[no-any-return]
    return wrap(_cast(t.node, d) if d != t.dtype else t.node)


def clip(t: Any, a_min: Any, a_max: Any) -> Any:
    """Elements of ``t`` limited to ``[a_min, a_max]`` (either may be None)."""
    out = t
    if a_min is not None:
        out = ufunc(np.maximum, out, a_min)
    if a_max is not None:
        out = ufunc(np.minimum, out, a_max)
    return out


def where(cond: Any, x: Any, y: Any) -> Any:
    """``np.where(cond, x, y)``."""
    loop = _loop(np.add, (_operand_dtype(x), _operand_dtype(y)))
    if loop is None or not _supported(loop[0]):
        return fallback(np.where, (cond, x, y), {})
    dtype = loop[0]
    c = _cast(_as_node(cond, np.dtype(bool)), np.dtype(bool))
    return wrap(record("where", (c, _as_node(x, dtype), _as_node(y, dtype))))


def _as_node(x: Any, dtype: np.dtype[Any]) -> Node:
    if is_tensor(x):
        return _cast(x.node, dtype)
    return copied_node(x, dtype)


# -- products ------------------------------------------------------------------------------------


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` with numpy's rules for ranks 1 to 3 (higher ranks fall back)."""
    loop = _loop(np.matmul, (_operand_dtype(a), _operand_dtype(b)))
    if loop is None or not _supported(*loop):
        return fallback(np.matmul, (a, b), {})
    if loop[2] == _BOOL:  # numpy: any(a & b) along the inner axis
        ints = matmul(astype(_tensor(a), np.int32), astype(_tensor(b), np.int32))
        return ufunc(np.not_equal, ints, 0)
    x, y = _cast(node_of(a), loop[0]), _cast(node_of(b), loop[1])
    ra, rb = len(_tensor_type(x).shape), len(_tensor_type(y).shape)
    flags = {"transpose_a": False, "transpose_b": False}
    if ra == 0 or rb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if ra == 1 and rb == 1:
        return wrap(record("sum", (record("multiply", (x, y)),)))
    if ra == 2 and rb == 2:
        return wrap(record("nn.matmul", (x, y), flags))
    if ra == 1 and rb == 2:
        row = record("expand_dims", (x,), {"axis": 0})
        return wrap(record("squeeze", (record("nn.matmul", (row, y), flags),), {"axis": (0,)}))
    if ra == 2 and rb == 1:
        col = record("expand_dims", (y,), {"axis": 1})
        return wrap(record("squeeze", (record("nn.matmul", (x, col), flags),), {"axis": (1,)}))
    if ra == 3 and rb == 3:
        return wrap(record("nn.batch_matmul", (x, y), flags))
    if ra == 3 and rb == 2:
        return wrap(record("nn.batch_matmul", (x, record("expand_dims", (y,), {"axis": 0})), flags))
    if ra == 2 and rb == 3:
        return wrap(record("nn.batch_matmul", (record("expand_dims", (x,), {"axis": 0}), y), flags))
    return fallback(np.matmul, (a, b), {})


# -- reductions ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _reduced_dtype(name: str, dtype: np.dtype[Any], requested: Any) -> np.dtype[Any]:
    probe = np.zeros((1,), dtype)
    kwargs = {"dtype": requested} if requested is not None else {}
    return np.asarray(getattr(np, name)(probe, **kwargs)).dtype


def _axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    axes = tuple(axis) if isinstance(axis, tuple | list) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    return tuple(out)


def reduce(name: str, t: Any, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
    """numpy reduction ``name`` (sum, mean, prod, max, min, argmax, argmin) over ``axis``."""
    t = _tensor(t)
    if t.size == 0 or not _supported(t.dtype):
        return fallback(getattr(np, name), (t,), {"axis": axis, "keepdims": keepdims})
    want = _reduced_dtype(name, t.dtype, None if dtype is None else np.dtype(dtype))
    axes = _axes(axis, t.ndim)
    node = t.node
    if name in ("sum", "mean", "prod"):
        node = _cast(node, want)
    if name in ("argmax", "argmin"):
        if axes is not None and len(axes) != 1:
            raise TypeError("'tuple' object cannot be interpreted as an integer")
        if axes is None:
            flat = record("reshape", (node,), {"newshape": (-1,)})
            out = record(name, (flat,), {"axis": 0})
            if keepdims:
                out = record("reshape", (out,), {"newshape": (1,) * t.ndim})
            return wrap(_cast(out, want))
        return wrap(_cast(record(name, (node,), {"axis": axes[0], "keepdims": keepdims}), want))
    if t.ndim == 0 or axes == ():  # no axis reduced
        return wrap(_cast(node, want))
    attrs: dict[str, Any] = {"keepdims": keepdims}
    if axes is not None:
        attrs["axis"] = axes
    return wrap(_cast(record(name, (node,), attrs), want))


def var(t: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    """The variance over ``axis`` with ``ddof`` degrees of freedom removed, as numpy's."""
    t = _tensor(t)
    dtype = _reduced_dtype("mean", t.dtype, None)
    x = astype(t, dtype) if dtype != t.dtype else t
    axes = _axes(axis, t.ndim)
    count = t.size if axes is None else int(np.prod([t.shape[a] for a in axes]))
    d = ufunc(np.subtract, x, reduce("mean", x, axis, True))
    s = reduce("sum", ufunc(np.multiply, d, d), axis, keepdims)
    return ufunc(np.true_divide, s, dtype.type(max(count - ddof, 0)))


def _tensor(x: Any) -> Tensor:
    return x if is_tensor(x) else wrap(node_of(x))


# -- shapes --------------------------------------------------------------------------------------


def reshape(t: Any, shape: Any, order: str = "C") -> Any:
    """``t`` in ``shape`` (C order; one entry may be -1)."""
    t = _tensor(t)
    if order != "C":
        return fallback(np.reshape, (t, shape), {"order": order})
    dims = [int(d) for d in (shape if isinstance(shape, tuple | list) else (shape,))]
    if dims.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    if -1 in dims:
        if known == 0 or t.size % known:
            raise ValueError(f"cannot reshape array of size {t.size} into shape {tuple(shape)}")
        dims[dims.index(-1)] = t.size // known
    if int(np.prod(dims, dtype=np.int64)) != t.size:
        raise ValueError(f"cannot reshape array of size {t.size} into shape {tuple(dims)}")
    if tuple(dims) == t.shape:
        return wrap(t.node)
    return wrap(record("reshape", (t.node,), {"newshape": tuple(dims)}))


def transpose(t: Any, axes: Any = None) -> Any:
    """``t`` with its axes permuted (reversed by default)."""
    t = _tensor(t)
    if t.ndim < 2 and axes is None:
        return wrap(t.node)
    perm = tuple(range(t.ndim))[::-1] if axes is None else _axes(axes, t.ndim)
    assert perm is not None
    if sorted(perm) != list(range(t.ndim)):
        raise ValueError("axes don't match array")
    return wrap(record("transpose", (t.node,), {"axes": perm}))


def squeeze(t: Any, axis: Any = None) -> Any:
    """``t`` without its dimensions of size 1 (only those of ``axis`` if given)."""
    t = _tensor(t)
    axes = _axes(axis, t.ndim)
    if axes is None:
        axes = tuple(i for i, d in enumerate(t.shape) if d == 1)
    for a in axes:
        if t.shape[a] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    if not axes:
        return wrap(t.node)
    return wrap(record("squeeze", (t.node,), {"axis": axes}))


def expand_dims(t: Any, axis: int) -> Any:
    """``t`` with a new dimension of size 1 at ``axis``."""
    t = _tensor(t)
    a = int(axis)
    if not -t.ndim - 1 <= a <= t.ndim:
        raise np.exceptions.AxisError(a, t.ndim + 1)
    return wrap(record("expand_dims", (t.node,), {"axis": a % (t.ndim + 1)}))


def concatenate(arrays: Sequence[Any], axis: int | None = 0) -> Any:
    """``np.concatenate`` of tensors of one dtype (else numpy's promotion, cast first)."""
    ts = [_tensor(a) for a in arrays]
    dtype = np.result_type(*[t.dtype for t in ts])
    nodes = tuple(_cast(t.node, dtype) for t in ts)
    if axis is None:
        nodes = tuple(record("reshape", (n,), {"newshape": (-1,)}) for n in nodes)
        axis = 0
    tup = make_tuple(nodes)
    return wrap(record("concatenate", (tup,), {"axis": int(axis)}))


def stack(arrays: Sequence[Any], axis: int = 0) -> Any:
    """``np.stack``."""
    ts = [_tensor(a) for a in arrays]
    dtype = np.result_type(*[t.dtype for t in ts])
    nodes = tuple(_cast(t.node, dtype) for t in ts)
    return wrap(record("stack", (make_tuple(nodes),), {"axis": int(axis)}))


# -- indexing ------------------------------------------------------------------------------------


def _basic(key: Any, shape: tuple[int, ...]) -> list[tuple[str, Any]] | None:
    """``key`` as one entry per step: ("int", i), ("slice", (start, stop, step)), ("new",
    None); None when it is not basic indexing."""
    items = key if isinstance(key, tuple) else (key,)
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in items if k is not None and k is not Ellipsis)
    if used > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, but {used} "
            "were indexed"
        )
    out: list[tuple[str, Any]] = []
    dim = 0
    for k in items:
        if k is Ellipsis:
            for _ in range(len(shape) - used):
                out.append(("slice", (0, shape[dim], 1)))
                dim += 1
        elif k is None:
            out.append(("new", None))
        elif isinstance(k, slice):
            start, stop, step = k.indices(shape[dim])
            if not len(range(start, stop, step)):  # e.g. x[-7::-3] of 6: numpy's empty axis
                start, stop, step = 0, 0, 1
            out.append(("slice", (start, stop, step)))
            dim += 1
        elif isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_):
            i = int(k)
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(
                    f"index {i} is out of bounds for axis {dim} with size {shape[dim]}"
                )
            out.append(("int", i % shape[dim]))
            dim += 1
        else:
            return None
    while dim < len(shape):
        out.append(("slice", (0, shape[dim], 1)))
        dim += 1
    return out


def getitem(t: Tensor, key: Any, view: bool = False) -> Any:
    """``t[key]``: basic indexing (integers, slices, ``None``, ``...``) as one
    ``strided_slice``, then ``squeeze`` and ``expand_dims`` (with ``view``, the result is
    marked as a view of ``t``, as numpy's is); one integer-array index as ``take``; anything
    else (boolean masks, several arrays) falls back."""
    steps = _basic(key, t.shape)
    if steps is None:
        return _advanced(t, key)
    begin, end, strides, squeeze_axes, new_axes = [], [], [], [], []
    axis = 0
    out_axis = 0
    for kind, v in steps:
        if kind == "new":
            new_axes.append(out_axis)
            out_axis += 1
            continue
        if kind == "int":
            begin.append(v)
            end.append(v + 1)
            strides.append(1)
            squeeze_axes.append(axis)
        else:
            start, stop, step = v
            begin.append(start)
            end.append(stop if stop >= 0 else -_INT32_MAX - 1)
            strides.append(step)
            out_axis += 1
        axis += 1
    node = t.node
    full = all(
        b == 0 and e == n and s == 1
        for b, e, s, n in zip(begin, end, strides, t.shape, strict=True)
    )
    if not full:
        node = record(
            "strided_slice",
            (node,),
            {"begin": tuple(begin), "end": tuple(end), "strides": tuple(strides)},
        )
    if squeeze_axes:
        node = record("squeeze", (node,), {"axis": tuple(squeeze_axes)})
    for a in new_axes:
        node = record("expand_dims", (node,), {"axis": a})
    out = wrap(node)
    if view:
        from relay.lazy.views import mark_view

        mark_view(t, ("getitem", key), out)
    return out


def _advanced(t: Tensor, key: Any) -> Any:
    items = key if isinstance(key, tuple) else (key,)
    arrays = [
        i
        for i, k in enumerate(items)
        if not (k is None or k is Ellipsis or isinstance(k, slice | int))
    ]
    plain = not any(k is None or k is Ellipsis for k in items)
    if len(arrays) == 1 and plain:
        (pos,) = arrays
        index = items[pos]
        idx = index if is_tensor(index) else np.asarray(index)
        idx_dtype = idx.dtype
        if np.issubdtype(idx_dtype, np.integer) and all(
            isinstance(k, slice) and k == slice(None) for k in items[:pos]
        ):
            n = t.shape[pos]
            if is_tensor(index):
                # its values are known only at the barrier: negative ones count from the
                # end, and one out of range is an ExecutionError there (mode "fast")
                shifted = where(ufunc(np.less, index, 0), ufunc(np.add, index, n), index)
                mode, inode = "fast", shifted.node
            else:
                flat = np.asarray(index).ravel()
                if flat.size and (flat.min() < -n or flat.max() >= n):
                    bad = int(flat[(flat < -n) | (flat >= n)][0])
                    raise IndexError(f"index {bad} is out of bounds for axis {pos} with size {n}")
                mode, inode = "wrap", _tensor(idx).node
            taken = wrap(record("take", (t.node, inode), {"axis": pos, "mode": mode}))
            rest = items[pos + 1 :]
            if rest:
                lead = (slice(None),) * (pos + len(getattr(idx, "shape", ())))
                return getitem(taken, lead + tuple(rest))
            return taken
    return fallback(lambda a, k: a[k], (t, key), {})


def setitem(t: Tensor, key: Any, v: Any) -> None:
    """``t[key] = v`` in place (through to the tensor ``t`` is a view of, if any)."""
    from relay.lazy.views import write

    write(t, assigned(t, key, v))


def assigned(t: Tensor, key: Any, v: Any) -> Node:
    """The value of ``t`` after ``t[key] = v``: for basic indexing with unit steps, ``where``
    of a mask (a data parameter, so another index reuses the trace) over ``v`` padded to
    ``t``'s shape; otherwise computed by numpy on a copy (a fallback)."""
    steps = _basic(key, t.shape)
    if (
        steps is None
        or any(k == "slice" and s[2] != 1 for k, s in steps)
        or not _supported(t.dtype)
    ):
        return _setitem_fallback(t, key, v)
    mask = np.zeros(t.shape, bool)
    mask[key] = True
    region = getitem(t, key)
    value_t = v if is_tensor(v) else None
    if value_t is None:
        arr = np.asarray(v)
        if not np.can_cast(arr.dtype, t.dtype, "unsafe"):
            raise TypeError(f"cannot assign {arr.dtype} to a {t.dtype} tensor")
        value_t = wrap(node_of(arr.astype(t.dtype)))
    value_t = astype(value_t, t.dtype)
    if value_t.shape != region.shape:
        try:
            value_t = broadcast_to(value_t, region.shape)
        except ValueError:
            raise ValueError(
                f"could not broadcast input array from shape {value_t.shape} into shape "
                f"{region.shape}"
            ) from None
    # the value in the selected region's place: axes taken by integers come back, then
    # padded with zeros around the region
    placed = value_t.node
    padding = []
    axis = 0
    for kind, s in steps:
        if kind == "new":
            placed = record("squeeze", (placed,), {"axis": (axis,)})
            continue
        if kind == "int":
            placed = record("expand_dims", (placed,), {"axis": axis})
            padding.append((s, t.shape[axis] - s - 1))
        else:
            start, stop, _ = s
            stop = max(stop, start)
            padding.append((start, t.shape[axis] - stop))
        axis += 1
    if any(p != (0, 0) for p in padding):
        zero = copied_node(0, t.dtype)
        placed = record("nn.pad", (placed, zero), {"pad_width": tuple(padding)})
    return record("where", (copied_node(mask), placed, t.node))


def _setitem_fallback(t: Tensor, key: Any, v: Any) -> Node:
    def setitem(a: Array, k: Any, x: Any) -> Array:
        out = a.copy()
        out[k] = x
        return out

    result: Tensor = fallback(setitem, (t, key, v), {})
    return result.node


def broadcast_to(t: Any, shape: Any) -> Any:
    """``np.broadcast_to`` (a new tensor: values are never shared)."""
    t = _tensor(t)
    shape = tuple(int(d) for d in (shape if isinstance(shape, tuple | list) else (shape,)))
    if t.shape == shape:
        return wrap(t.node)
    if len(shape) < t.ndim or np.broadcast_shapes(t.shape, shape) != shape:
        raise ValueError(
            f"operands could not be broadcast together with remapped shapes [original->remapped]: "
            f"{t.shape} and requested shape {shape}"
        )
    return wrap(record("broadcast_to", (t.node,), {"shape": shape}))


# -- numpy's protocols ---------------------------------------------------------------------------


def array_ufunc(uf: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``__array_ufunc__``: a plain call of a mapped ufunc is recorded; ``out=`` a single
    lazy tensor updates it in place; anything else falls back."""
    out = kwargs.pop("out", None)
    if method != "__call__" or kwargs:
        if out is not None:
            kwargs["out"] = out
        name = uf.__name__ if method == "__call__" else f"{uf.__name__}.{method}"
        return fallback(getattr(uf, method), inputs, kwargs, name)
    result = ufunc(uf, *inputs)
    if out is None:
        return result
    targets = out if isinstance(out, tuple) else (out,)
    if len(targets) == 1 and is_tensor(targets[0]):
        return assign(targets[0], result)
    np.copyto(targets[0], np.asarray(result), casting="same_kind")
    return targets[0]


def array_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``__array_function__``: numpy functions relay implements are recorded, the others
    fall back."""
    impl = FUNCTIONS.get(func)
    if impl is None:
        return fallback(func, args, kwargs)
    try:
        return impl(*args, **kwargs)
    except _Unsupported:
        return fallback(func, args, kwargs)


class _Unsupported(Exception):
    """An argument the lazy implementation does not take: numpy runs it instead."""


def _no(**kwargs: Any) -> None:
    for k, v in kwargs.items():
        if v is not None and v is not False:
            raise _Unsupported(k)


def _reduction(name: str) -> Callable[..., Any]:
    def impl(
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        **kw: Any,
    ) -> Any:
        _no(out=out, **kw)  # initial=, where=: numpy's
        return reduce(name, a, axis, keepdims, dtype)

    return impl


def _arg_reduction(name: str) -> Callable[..., Any]:
    def impl(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        _no(out=out)
        return reduce(name, a, axis, keepdims)

    return impl


def _filled_like(fill: Any) -> Callable[..., Any]:
    def impl(
        a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None
    ) -> Any:
        t = _tensor(a)
        return full(t.shape if shape is None else shape, fill, dtype or t.dtype)

    return impl


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value`` (its value a parameter)."""
    shape = tuple(int(d) for d in (shape if isinstance(shape, tuple | list) else (shape,)))
    d = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    return wrap(record("broadcast_to", (copied_node(fill_value, d),), {"shape": shape}))


def _var(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
) -> Any:
    _no(dtype=dtype, out=out)
    return var(a, axis, ddof, keepdims)


def _std(
    a: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
) -> Any:
    return ufunc(np.sqrt, _var(a, axis, dtype, out, ddof, keepdims))


def _concatenate(
    arrays: Any,
    axis: int | None = 0,
    out: Any = None,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Any:
    _no(out=out, dtype=dtype)
    return concatenate(arrays, axis)


def _stack(
    arrays: Any, axis: int = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind"
) -> Any:
    _no(out=out, dtype=dtype)
    return stack(arrays, axis)


def _where(cond: Any, *xy: Any) -> Any:
    if len(xy) != 2:
        raise _Unsupported("np.where of one argument (the indices: a dynamic shape)")
    return where(cond, *xy)


def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    _no(out=out, **kwargs)
    return clip(a, a_min, a_max)


def _dot(a: Any, b: Any, out: Any = None) -> Any:
    _no(out=out)
    return matmul(a, b)


def _reshape(a: Any, shape: Any = None, order: str = "C", **kwargs: Any) -> Any:
    out = reshape(a, kwargs.get("newshape", shape), order)
    return shape_view(a, out) if order == "C" else out


def _full_like(
    a: Any,
    fill_value: Any,
    dtype: Any = None,
    order: str = "K",
    subok: bool = True,
    shape: Any = None,
) -> Any:
    return _filled_like(fill_value)(a, dtype, order, subok, shape)


FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: _reduction("sum"),
    np.mean: _reduction("mean"),
    np.prod: _reduction("prod"),
    np.max: _reduction("max"),
    np.amax: _reduction("max"),
    np.min: _reduction("min"),
    np.amin: _reduction("min"),
    np.argmax: _arg_reduction("argmax"),
    np.argmin: _arg_reduction("argmin"),
    np.var: _var,
    np.std: _std,
    np.reshape: _reshape,
    np.transpose: lambda a, axes=None: transpose_view(a, transpose(a, axes), axes),
    np.squeeze: lambda a, axis=None: shape_view(a, squeeze(a, axis)),
    np.expand_dims: lambda a, axis: shape_view(a, expand_dims(a, axis)),
    np.concatenate: _concatenate,
    np.stack: _stack,
    np.where: _where,
    np.clip: _clip,
    np.dot: _dot,
    np.broadcast_to: lambda array, shape, subok=False: broadcast_to(array, shape),
    np.zeros_like: _filled_like(0),
    np.ones_like: _filled_like(1),
    np.full_like: _full_like,
    np.copy: lambda a, order="K", subok=False: _tensor(a).copy(),
    np.ravel: lambda a, order="C": shape_view(a, reshape(a, (-1,), order)),
    np.shape: lambda a: _tensor(a).shape,
    np.ndim: lambda a: _tensor(a).ndim,
    np.size: lambda a, axis=None: _tensor(a).size if axis is None else _tensor(a).shape[axis],
    np.result_type: lambda *a: np.result_type(*[x.dtype if is_tensor(x) else x for x in a]),
}
"""numpy functions (``__array_function__``) recorded on lazy tensors; the others fall back."""
