"""``relay.lazy.Tensor``: a numpy-compatible array whose operations are recorded.

A tensor wraps a :class:`relay.lazy.trace.Node`. Its ``shape``, ``dtype``, ``ndim`` and
``size`` come from the node's inferred type; every operation records a new node
(:mod:`relay.lazy.ops`); reading a value (``numpy()``, ``np.asarray``, ``float``,
``int``, ``bool``, ``item``, ``print``) is an implicit barrier. numpy's own functions reach
the tensor through ``__array_ufunc__`` and ``__array_function__``, so code written for
numpy arrays records when it is given lazy tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relay.ir.types import TensorType
from relay.lazy import ops
from relay.lazy.trace import Node, copied_node, track

Array = np.ndarray[Any, Any]


class Tensor:
    """A lazily computed array with numpy's API (see the module docstring)."""

    __slots__ = ("__weakref__", "node", "root", "steps", "views")
    __array_priority__ = 1000.0

    def __init__(self, node: Node) -> None:
        self.node = node
        self.root: Tensor | None = None
        """The tensor whose data this one is a view of (see :mod:`relay.lazy.views`)."""
        self.steps: tuple[tuple[str, Any], ...] = ()
        """How this view derives from ``root``."""
        self.views: Any = None
        """This tensor's live views (weak references), when it has any."""
        track(self)

    @classmethod
    def untracked(cls, node: Node) -> Tensor:
        """A tensor of ``node`` that barriers do not compute (internal)."""
        t = cls.__new__(cls)
        t.node, t.root, t.steps, t.views = node, None, (), None
        return t

    # -- what is known without running -------------------------------------------------------

    @property
    def type(self) -> TensorType:
        """The relay type of the value."""
        ty = self.node.type
        assert isinstance(ty, TensorType)
        return ty

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape (from type inference: nothing runs)."""
        return tuple(d for d in self.type.shape if isinstance(d, int))

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype."""
        return np.dtype(str(self.type.dtype))

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.type.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the whole array."""
        return self.size * self.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    @property
    def pending(self) -> bool:
        """Whether the value still has to be computed."""
        return self.node.pending

    # -- barriers ----------------------------------------------------------------------------

    def numpy(self) -> Array:
        """The value as a numpy array (a barrier if it is pending; a read-only view of the
        tensor's data, which never changes)."""
        return ops.value(self, "numpy()")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Array:
        out = ops.value(self, "np.asarray")
        if dtype is not None and np.dtype(dtype) != out.dtype:
            return out.astype(dtype)
        return out.copy() if copy else out

    def item(self, *args: Any) -> Any:
        """The element as a Python number (a barrier)."""
        return ops.value(self, "item()").item(*args)

    def tolist(self) -> Any:
        """The value as nested Python lists (a barrier)."""
        return ops.value(self, "tolist()").tolist()

    def __float__(self) -> float:
        return float(ops.value(self, "float()"))

    def __int__(self) -> int:
        return int(ops.value(self, "int()"))

    def __index__(self) -> int:
        if not np.issubdtype(self.dtype, np.integer):
            raise TypeError("only integer tensors can be used as an index")
        return int(ops.value(self, "int()"))

    def __bool__(self) -> bool:
        return bool(ops.value(self, "bool()"))

    def __repr__(self) -> str:
        return "lazy." + repr(ops.value(self, "print"))

    def __str__(self) -> str:
        return str(ops.value(self, "print"))

    def __format__(self, spec: str) -> str:
        return format(ops.value(self, "print"), spec)

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    # -- numpy's protocols -------------------------------------------------------------------

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return ops.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return ops.array_function(func, args, kwargs)

    # -- operators ---------------------------------------------------------------------------

    def __add__(self, other: Any) -> Any:
        return ops.ufunc(np.add, self, other)

    def __radd__(self, other: Any) -> Any:
        return ops.ufunc(np.add, other, self)

    def __sub__(self, other: Any) -> Any:
        return ops.ufunc(np.subtract, self, other)

    def __rsub__(self, other: Any) -> Any:
        return ops.ufunc(np.subtract, other, self)

    def __mul__(self, other: Any) -> Any:
        return ops.ufunc(np.multiply, self, other)

    def __rmul__(self, other: Any) -> Any:
        return ops.ufunc(np.multiply, other, self)

    def __truediv__(self, other: Any) -> Any:
        return ops.ufunc(np.true_divide, self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return ops.ufunc(np.true_divide, other, self)

    def __floordiv__(self, other: Any) -> Any:
        return ops.ufunc(np.floor_divide, self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return ops.ufunc(np.floor_divide, other, self)

    def __mod__(self, other: Any) -> Any:
        return ops.ufunc(np.remainder, self, other)

    def __rmod__(self, other: Any) -> Any:
        return ops.ufunc(np.remainder, other, self)

    def __pow__(self, other: Any) -> Any:
        return ops.ufunc(np.power, self, other)

    def __rpow__(self, other: Any) -> Any:
        return ops.ufunc(np.power, other, self)

    def __matmul__(self, other: Any) -> Any:
        return ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return ops.matmul(other, self)

    def __and__(self, other: Any) -> Any:
        return ops.ufunc(np.logical_and, self, other, bitwise=True)

    def __rand__(self, other: Any) -> Any:
        return ops.ufunc(np.logical_and, other, self, bitwise=True)

    def __or__(self, other: Any) -> Any:
        return ops.ufunc(np.logical_or, self, other, bitwise=True)

    def __ror__(self, other: Any) -> Any:
        return ops.ufunc(np.logical_or, other, self, bitwise=True)

    def __xor__(self, other: Any) -> Any:
        return ops.ufunc(np.logical_xor, self, other, bitwise=True)

    def __rxor__(self, other: Any) -> Any:
        return ops.ufunc(np.logical_xor, other, self, bitwise=True)

    def __lshift__(self, other: Any) -> Any:
        return ops.ufunc(np.left_shift, self, other)

    def __rlshift__(self, other: Any) -> Any:
        return ops.ufunc(np.left_shift, other, self)

    def __rshift__(self, other: Any) -> Any:
        return ops.ufunc(np.right_shift, self, other)

    def __rrshift__(self, other: Any) -> Any:
        return ops.ufunc(np.right_shift, other, self)

    def __invert__(self) -> Any:
        if self.dtype != np.bool_:
            return ops.ufunc(np.invert, self)
        return ops.ufunc(np.logical_not, self)

    def __neg__(self) -> Any:
        return ops.ufunc(np.negative, self)

    def __pos__(self) -> Any:
        return ops.ufunc(np.positive, self)

    def __abs__(self) -> Any:
        return ops.ufunc(np.absolute, self)

    def __eq__(self, other: Any) -> Any:
        return ops.ufunc(np.equal, self, other)

    def __ne__(self, other: Any) -> Any:
        return ops.ufunc(np.not_equal, self, other)

    def __lt__(self, other: Any) -> Any:
        return ops.ufunc(np.less, self, other)

    def __le__(self, other: Any) -> Any:
        return ops.ufunc(np.less_equal, self, other)

    def __gt__(self, other: Any) -> Any:
        return ops.ufunc(np.greater, self, other)

    def __ge__(self, other: Any) -> Any:
        return ops.ufunc(np.greater_equal, self, other)

    __hash__ = None  # type: ignore[assignment]  # like ndarray: == is elementwise

    # in place: the tensor takes the new value (numpy's dtype rule: the result is cast
    # back to this tensor's dtype, which must be a safe cast)
    def __iadd__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.add, self, other))

    def __isub__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.subtract, self, other))

    def __imul__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.multiply, self, other))

    def __itruediv__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.true_divide, self, other))

    def __ipow__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.power, self, other))

    def __ifloordiv__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.floor_divide, self, other))

    def __imod__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.remainder, self, other))

    def __iand__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.logical_and, self, other, bitwise=True))

    def __ior__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.logical_or, self, other, bitwise=True))

    def __ixor__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.logical_xor, self, other, bitwise=True))

    def __ilshift__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.left_shift, self, other))

    def __irshift__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.ufunc(np.right_shift, self, other))

    def __imatmul__(self, other: Any) -> Tensor:
        return ops.assign(self, ops.matmul(self, other))

    # -- indexing ----------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        return ops.getitem(self, key, view=True)

    def __setitem__(self, key: Any, value: Any) -> None:
        ops.setitem(self, key, value)

    # -- methods -----------------------------------------------------------------------------

    @property
    def T(self) -> Any:
        """The transpose (axes reversed; a view)."""
        return ops.transpose_view(self, ops.transpose(self), None)

    def transpose(self, *axes: Any) -> Any:
        """The axes permuted (reversed by default), as ``ndarray.transpose``."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], tuple | list)):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        return ops.transpose_view(self, ops.transpose(self, axes or None), axes or None)

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """The same elements in ``shape`` (one entry may be -1)."""
        if len(shape) == 1 and isinstance(shape[0], tuple | list):
            shape = tuple(shape[0])
        out = ops.reshape(self, shape, order)
        return ops.shape_view(self, out) if order == "C" else out

    def flatten(self) -> Any:
        """The elements as one dimension (a new array in numpy; values are never shared)."""
        return ops.reshape(self, (-1,))

    def ravel(self) -> Any:
        """The elements as one dimension (a view)."""
        return ops.shape_view(self, ops.reshape(self, (-1,)))

    def squeeze(self, axis: Any = None) -> Any:
        """Without the dimensions of size 1 (or only ``axis``; a view)."""
        return ops.shape_view(self, ops.squeeze(self, axis))

    def astype(self, dtype: Any, copy: bool = True) -> Any:
        """The elements converted to ``dtype``."""
        return ops.astype(self, dtype)

    def copy(self) -> Any:
        """A copy (values are never shared between tensors, so the same value)."""
        return ops.ufunc(np.positive, self) if self.dtype != np.bool_ else ops.astype(self, bool)

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        """The sum over ``axis`` (all by default), as ``ndarray.sum``."""
        return ops.reduce("sum", self, axis, keepdims, dtype)

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        """The mean over ``axis``."""
        return ops.reduce("mean", self, axis, keepdims, dtype)

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        """The product over ``axis``."""
        return ops.reduce("prod", self, axis, keepdims, dtype)

    def max(self, axis: Any = None, keepdims: bool = False) -> Any:
        """The maximum over ``axis``."""
        return ops.reduce("max", self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Any:
        """The minimum over ``axis``."""
        return ops.reduce("min", self, axis, keepdims)

    def argmax(self, axis: Any = None, keepdims: bool = False) -> Any:
        """The index of the maximum over ``axis`` (of the flattened array by default)."""
        return ops.reduce("argmax", self, axis, keepdims)

    def argmin(self, axis: Any = None, keepdims: bool = False) -> Any:
        """The index of the minimum over ``axis``."""
        return ops.reduce("argmin", self, axis, keepdims)

    def var(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """The variance over ``axis``."""
        return ops.var(self, axis, ddof, keepdims)

    def std(self, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        """The standard deviation over ``axis``."""
        return ops.ufunc(np.sqrt, ops.var(self, axis, ddof, keepdims))

    def clip(self, a_min: Any = None, a_max: Any = None) -> Any:
        """The elements limited to ``[a_min, a_max]``."""
        return ops.clip(self, a_min, a_max)

    def dot(self, other: Any) -> Any:
        """The matrix product, as ``ndarray.dot`` for ranks 1 and 2."""
        return ops.matmul(self, other)

    def any(self, *args: Any, **kwargs: Any) -> Any:
        """Whether any element is true (run by numpy: a fallback)."""
        return ops.fallback(np.any, (self, *args), kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Any:
        """Whether every element is true (run by numpy: a fallback)."""
        return ops.fallback(np.all, (self, *args), kwargs)


def asarray(value: Any, dtype: Any = None) -> Tensor:
    """A lazy tensor of ``value`` (a numpy array, a nested sequence, a number or a lazy
    tensor, which is returned as it is when the dtype matches). The data is copied: later
    changes to the numpy array do not reach the tensor."""
    if isinstance(value, Tensor):
        return value if dtype is None or np.dtype(dtype) == value.dtype else value.astype(dtype)
    return Tensor(copied_node(value, dtype))


def array(value: Any, dtype: Any = None) -> Tensor:
    """A lazy tensor holding a copy of ``value`` (as ``np.array``)."""
    if isinstance(value, Tensor):
        copied: Tensor = value.copy() if dtype is None else value.astype(dtype)
        return copied
    return asarray(value, dtype)
