"""``check_grad``: a ``@relay`` function's gradient against central differences.

The gradient ``relay.grad`` computes is compared, element by element, with the central
difference ``(s(x + h e_i) - s(x - h e_i)) / 2h`` of ``s = sum(f(*args))`` (Nocedal and
Wright, *Numerical Optimization*, section 8.1). The function runs at the arguments' own
dtype (a float32 function cannot take float64 inputs), but the sums and the quotient are
formed in float64, and the step and tolerances follow the dtype: the truncation error of
the central difference is O(h^2) and the rounding error O(ulp / h), balanced by
h ~ ulp^(1/3), so float32 gets h = 1e-3 and tolerances near 1e-2 relative, float64 h = 1e-6
and 1e-5.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# per dtype: step, rtol, atol
_SETTINGS: dict[str, tuple[float, float, float]] = {
    "float64": (1e-6, 1e-5, 1e-7),
    "float32": (1e-3, 2e-2, 2e-3),
    "float16": (1e-1, 1e-1, 5e-2),
}


def _total(value: Any) -> float:
    return float(np.sum(np.asarray(value, dtype=np.float64)))


def check_grad(
    f: Any,
    *args: Any,
    argnums: int | Sequence[int] | None = None,
    eps: float | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> list[np.ndarray]:
    """Check ``relay.grad(f)`` at ``args`` against central differences (see the module
    docstring) and return the analytic gradients of the arguments checked.

    ``f`` is a ``@relay`` function (or a Python function, which is decorated) returning a
    floating-point tensor; ``argnums`` selects the arguments (default: every floating-point
    array). ``eps``, ``rtol`` and ``atol`` default by the arguments' dtype. Raises
    AssertionError naming the argument and the worst element on a mismatch.
    """
    from relay.frontend.autodiff import grad
    from relay.frontend.function import function

    rf = function(f)
    arrays = [np.asarray(a) if not isinstance(a, bool | int | float) else a for a in args]
    if argnums is None:
        wrt = [
            i
            for i, a in enumerate(arrays)
            if (isinstance(a, np.ndarray) and a.dtype.kind == "f") or isinstance(a, float)
        ]
    else:
        wrt = [argnums] if isinstance(argnums, int) else list(argnums)
    if not wrt:
        raise ValueError("check_grad: no floating-point argument to check")
    result = grad(rf, argnums=tuple(wrt))(*args)
    assert isinstance(result, tuple)
    grads = result[1]
    out: list[np.ndarray] = []
    for k, i in enumerate(wrt):
        x = np.array(arrays[i], copy=True)
        dtype = str(x.dtype)
        step, r, a = _SETTINGS.get(dtype, _SETTINGS["float32"])
        step = eps if eps is not None else step
        r = rtol if rtol is not None else r
        a = atol if atol is not None else a
        numeric = np.zeros(x.shape, np.float64)
        flat, nflat = x.reshape(-1), numeric.reshape(-1)
        work = list(arrays)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + step
            up_x = float(flat[j])
            work[i] = x if x.ndim else x[()]
            up = _total(rf(*work))
            flat[j] = old - step
            down_x = float(flat[j])
            work[i] = x if x.ndim else x[()]
            down = _total(rf(*work))
            flat[j] = old
            nflat[j] = (up - down) / (up_x - down_x)  # the step actually taken, after rounding
        analytic = np.asarray(grads[k], dtype=np.float64)
        np.testing.assert_allclose(
            analytic,
            numeric,
            rtol=r,
            atol=a,
            err_msg=f"check_grad: the gradient of {rf.__name__} with respect to argument {i}",
        )
        out.append(np.asarray(grads[k]))
    return out


__all__ = ["check_grad"]
