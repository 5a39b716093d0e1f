"""numpy's views on lazy tensors: an in-place update through a view reaches its base, and
an update of the base reaches its views.

In numpy, basic indexing, ``reshape``, ``transpose``/``.T``, ``ravel``, ``squeeze`` and
``expand_dims`` return *views*: arrays sharing the memory of their base, so ``v = x[0];
x += 1`` changes ``v`` and ``v[:] = 0`` changes ``x``. Lazy tensors are values, so the
sharing is kept by bookkeeping instead: a view remembers its *root* (the tensor that owns
the data) and the *steps* that derive it from the root (``("getitem", key)``,
``("reshape", shape)``, ...), and the root keeps weak references to its live views.

* Updating a tensor in place (``+=``, ``[...] =``, ``out=``) gives it a new node. For a
  view, the new value is written back into the root through the steps, in reverse: a
  ``getitem`` step becomes an assignment into the root's value (``where`` over a mask), a
  ``reshape`` a reshape back, a ``transpose`` the inverse permutation.
* Then every live view of the root is derived again from the root's new node, so each sees
  the update, as numpy's views do.

All of this records operations: nothing is computed until a barrier.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from relay.lazy.trace import Node

if TYPE_CHECKING:
    from relay.lazy.tensor import Tensor

Step = tuple[str, Any]


def mark_view(base: Tensor, step: Step, view: Tensor) -> Tensor:
    """Record that ``view`` is ``base`` seen through ``step`` (returns ``view``)."""
    root = base.root if base.root is not None else base
    view.root = root
    view.steps = (*base.steps, step) if base.root is not None else (step,)
    if root.views is None:
        root.views = weakref.WeakValueDictionary()
    root.views[id(view)] = view
    return view


def write(t: Tensor, node: Node) -> None:
    """``t`` takes the value ``node`` in place: through to its root, and to every view."""
    if t.root is None:
        t.node = node
        refresh(t)
        return
    root = t.root
    root.node = _write_back(root.node, t.steps, node)
    refresh(root)


def refresh(root: Tensor) -> None:
    """Derive every live view of ``root`` again from its current node."""
    if not root.views:
        return
    for view in list(root.views.values()):
        view.node = apply(root.node, view.steps)


def apply(node: Node, steps: tuple[Step, ...]) -> Node:
    """``node`` seen through ``steps``."""
    for step in steps:
        node = _apply_step(node, step)
    return node


def _apply_step(node: Node, step: Step) -> Node:
    from relay.lazy import ops

    kind, arg = step
    t = ops.bare(node)
    if kind == "getitem":
        viewed: Node = ops.getitem(t, arg).node
        return viewed
    if kind == "reshape":
        return ops.reshape(t, arg).node  # type: ignore[no-any-return]
    if kind == "transpose":
        return ops.transpose(t, arg).node  # type: ignore[no-any-return]
    raise AssertionError(f"unknown view step {kind}")


def _write_back(base: Node, steps: tuple[Step, ...], value: Node) -> Node:
    """``base`` with the part ``steps`` select replaced by ``value``."""
    from relay.lazy import ops

    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    inner = _write_back(_apply_step(base, step), rest, value)
    kind, arg = step
    t = ops.bare(base)
    if kind == "getitem":
        return ops.assigned(t, arg, ops.bare(inner))
    if kind == "reshape":
        return ops.reshape(ops.bare(inner), t.shape).node  # type: ignore[no-any-return]
    if kind == "transpose":
        inverse = tuple(int(i) for i in np.argsort(arg))
        return ops.transpose(ops.bare(inner), inverse).node  # type: ignore[no-any-return]
    raise AssertionError(f"unknown view step {kind}")
