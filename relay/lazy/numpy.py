"""``relay.lazy.numpy``: numpy's namespace over lazy tensors.

``import relay.lazy.numpy as lnp`` and write numpy: ``lnp.tanh(x)``, ``lnp.sum(x, axis=0)``,
``lnp.zeros((3, 4))``. A ufunc or a function relay implements records (numpy arrays among
its arguments become data of the trace); creation functions make lazy tensors; any other
function of numpy runs in numpy on computed values (a fallback, counted) and returns lazy
tensors; what is not a function (dtypes, constants such as ``pi`` and ``newaxis``,
submodules) is numpy's own.
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from relay.lazy import ops as _ops
from relay.lazy.tensor import Tensor, array, asarray

__all__ = ["array", "asarray", "empty", "full", "ones", "zeros"]


def zeros(shape: Any, dtype: Any = float) -> Tensor:
    """An array of zeros (float64 by default, as numpy's)."""
    return _ops.full(shape, 0, dtype)  # type: ignore[no-any-return]


def ones(shape: Any, dtype: Any = float) -> Tensor:
    """An array of ones."""
    return _ops.full(shape, 1, dtype)  # type: ignore[no-any-return]


def empty(shape: Any, dtype: Any = float) -> Tensor:
    """An array whose contents do not matter (zeros here)."""
    return _ops.full(shape, 0, dtype)  # type: ignore[no-any-return]


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """An array filled with ``fill_value`` (a parameter of the trace: a new value reuses it)."""
    return _ops.full(shape, fill_value, dtype)  # type: ignore[no-any-return]


_CREATE = ("arange", "eye", "identity", "linspace", "logspace", "tri")


def __getattr__(name: str) -> Any:
    obj = getattr(_np, name)
    if isinstance(obj, _np.ufunc):

        def call_ufunc(*args: Any, **kwargs: Any) -> Any:
            return _ops.array_ufunc(obj, "__call__", args, dict(kwargs))

        call_ufunc.__name__ = name
        call_ufunc.__doc__ = f"numpy.{name}, recorded on lazy tensors."
        return call_ufunc
    if name in _CREATE:

        def create(*args: Any, **kwargs: Any) -> Any:
            return asarray(obj(*args, **kwargs))

        create.__name__ = name
        create.__doc__ = f"numpy.{name}, as a lazy tensor."
        return create
    impl = _ops.FUNCTIONS.get(obj)
    if impl is not None:
        return impl
    if callable(obj) and not isinstance(obj, type):

        def run_in_numpy(*args: Any, **kwargs: Any) -> Any:
            return _ops.fallback(obj, args, kwargs)

        run_in_numpy.__name__ = name
        run_in_numpy.__doc__ = f"numpy.{name}, run by numpy on computed values (a fallback)."
        return run_in_numpy
    return obj
