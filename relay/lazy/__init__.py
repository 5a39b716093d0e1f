"""LazyTensor: numpy-compatible tensors that record, compile, cache and run traces.

``relay.lazy.asarray(x)`` makes a :class:`Tensor`. Operations on it record a graph instead
of running (``shape`` and ``dtype`` are known at once, from type inference); a *barrier*
lowers the pending graph of every live tensor to one relay function, compiles it through
the normal pipeline (cached by the trace's structure and input types) and runs it.
Barriers are explicit (:func:`mark_step`, :func:`sync`) or implicit: reading a value
(``.numpy()``, ``np.asarray(t)``, ``float(t)``, ``int(t)``, ``bool(t)``, ``t.item()``,
``print(t)``). ``relay.lazy.numpy`` mirrors numpy's namespace. See docs/lazy.md.
"""

from __future__ import annotations

from typing import Any

from relay.lazy import numpy
from relay.lazy.autodiff import grad, value_and_grad
from relay.lazy.barrier import barrier, clear_cache, pending_function
from relay.lazy.metrics import Metrics, explain_recompiles, metrics, reset_metrics
from relay.lazy.tensor import Tensor, array, asarray
from relay.lazy.trace import CONFIG, Config, LazyError

__all__ = [
    "Config",
    "LazyError",
    "Metrics",
    "Tensor",
    "array",
    "asarray",
    "clear_cache",
    "config",
    "explain_recompiles",
    "grad",
    "mark_step",
    "metrics",
    "numpy",
    "pending_ir",
    "reset_metrics",
    "sync",
    "value_and_grad",
]


def mark_step() -> None:
    """A barrier: compute the pending value of every live tensor, in one compiled trace."""
    barrier("mark_step")


def sync(*tensors: Tensor) -> None:
    """A barrier for ``tensors`` only: compute their pending values (and what they need)."""
    barrier("sync", [t.node for t in tensors])


def config(**settings: Any) -> Config:
    """Change settings of lazy execution (``max_graph_size``, ``warn_fallbacks``,
    ``target``; see :class:`Config`); returns the settings in force."""
    for name, value in settings.items():
        if name not in Config.__dataclass_fields__:
            raise TypeError(f"relay.lazy.config: no setting {name!r}")
        setattr(CONFIG, name, value)
    return CONFIG


def pending_ir(*tensors: Tensor) -> str:
    """The relay function a barrier would compile now (for ``tensors``, default every live
    tensor), in the text format; empty when nothing is pending."""
    func = pending_function([t.node for t in tensors] if tensors else None)
    if func is None:
        return ""
    from relay.ir.printer import astext

    return astext(func)
