"""Operand layouts for a target's products: :func:`AlterProductLayout`.

TVM's ``AlterOpLayout`` (``src/relay/transforms/alter_op_layout.cc``) lets each target ask
for the operand layouts its kernels are fastest with, and inserts the layout transforms.
Relay's version, for the GPU's matrix products, asks for one layout: both operands
contiguous along the reduced axis (``A`` as ``M x K``, ``B`` as ``N x K``).

The reason is dlight's product schedules (``relay.backend.schedule.gpu``): they copy tiles
of both operands into shared memory, ``A``'s rows and ``B``'s columns along ``K``. An
operand that runs along ``K`` in memory is copied with 16-byte vector loads; one stored the
other way round (``nn.matmul``'s ``B``, ``K x N``) is gathered element by element, with
strided loads. On an H100 a float16 product of 4096 x 4096 matrices on the tensor cores
took 1.73 ms as ``nn.matmul`` and 0.534 ms as ``nn.dense`` (the same kernel, ``B`` as
``N x K``; ``tools/gpu/probe.py products``). A transpose of ``B`` costs one pass over it
(about 0.02 ms there), once per call, or nothing when ``B`` is a constant (it is transposed
here, at compile time).

The rewrite, for ``nn.matmul`` (2-D ``B``) and ``nn.batch_matmul`` (the last two axes)
whose operands have a dtype in ``dtypes`` and static shapes:

* ``B`` read ``K x N`` (``transpose_b=False``) becomes ``transpose(B)`` read ``N x K``
  (``transpose_b=True``);
* ``A`` read ``K x M`` (``transpose_a=True``) becomes ``transpose(A)`` read ``M x K``.

A constant operand is transposed in numpy instead. An operand that several products read
is transposed once. The pass runs after the simplifications
(which fold a transpose into a product's flag, the opposite direction) and before fusion,
which keeps the transpose a kernel of its own: a product fuses with its elementwise
consumers, never its producers. Products with a size of 64 or less are left alone, as the
tensor-core rule is (dlight's threshold).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from relay.ir.expr import Call, Constant, Expr, Op
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.op.registry import get_op
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo
from relay.passes.pattern import DFPatternCallback, NodeMap, is_op, rewrite_module, wildcard

SMALLEST = 65
"""Products with a size (``M``, ``N`` or ``K``) under this are left as they are."""

_a, _b = wildcard(), wildcard()
_PRODUCT = is_op("nn.matmul")(_a, _b) | is_op("nn.batch_matmul")(_a, _b)


def _static(e: Expr) -> tuple[int, ...] | None:
    ty = e._checked_type
    if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
        return None
    return tuple(d for d in ty.shape if isinstance(d, int))


def _transposed(e: Expr, ndim: int) -> Expr:
    """``e`` with its last two axes swapped (a constant's data, at once)."""
    axes = (*range(ndim - 2), ndim - 1, ndim - 2)
    if isinstance(e, Constant):
        return Constant(np.ascontiguousarray(np.transpose(e.data, axes)), span=e.span)
    opdef = get_op("transpose")
    return Call(opdef.op, (e,), opdef.validate_attrs({"axes": axes}), span=e.span)


class _Alter(DFPatternCallback):
    def __init__(self, dtypes: Collection[str]) -> None:
        super().__init__(require_type=True)
        self.pattern = _PRODUCT
        self.dtypes = frozenset(dtypes)
        # an operand read by several products is transposed once: (operand, transposed)
        self._done: dict[int, tuple[Expr, Expr]] = {}

    def _transposed(self, e: Expr, ndim: int) -> Expr:
        found = self._done.get(id(e))
        if found is None or found[0] is not e:
            found = self._done[id(e)] = (e, _transposed(e, ndim))
        return found[1]

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
        assert isinstance(post, Call)
        a, b = post.args
        sa, sb = _static(a), _static(b)
        if sa is None or sb is None or len(sb) < 2 or len(sa) < 2:
            return None
        ty_a, ty_b = a._checked_type, b._checked_type
        assert isinstance(ty_a, TensorType) and isinstance(ty_b, TensorType)
        if str(ty_a.dtype) not in self.dtypes or str(ty_b.dtype) not in self.dtypes:
            return None
        attrs: dict[str, object] = dict(post.attrs.items())
        m, k = (sa[-1], sa[-2]) if attrs["transpose_a"] else (sa[-2], sa[-1])
        n = sb[-2] if attrs["transpose_b"] else sb[-1]
        if min(m, n, k) < SMALLEST or (attrs["transpose_b"] and not attrs["transpose_a"]):
            return None
        if attrs["transpose_a"]:
            a, attrs["transpose_a"] = self._transposed(a, len(sa)), False
        if not attrs["transpose_b"]:
            b, attrs["transpose_b"] = self._transposed(b, len(sb)), True
        assert isinstance(post.op, Op)
        opdef = get_op(post.op.name)
        return Call(opdef.op, (a, b), opdef.validate_attrs(attrs), span=post.span)


def alter_product_layout(mod: Module, dtypes: Collection[str]) -> Module:
    """``mod`` with its products of ``dtypes`` reading both operands along ``K`` (see the
    module docstring); ``mod`` must be type-checked."""
    return rewrite_module([_Alter(dtypes)], mod)


def AlterProductLayout(dtypes: Collection[str] = ("float16",)) -> Pass:
    """The module pass of :func:`alter_product_layout` (requires ``InferType``)."""

    def run(mod: Module, ctx: PassContext) -> Module:
        return alter_product_layout(mod, dtypes)

    return ModulePass(run, PassInfo("AlterProductLayout", 0, ("InferType",)))
