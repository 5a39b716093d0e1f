"""Lowering of the reductions (``relay.op.reduce``) and ``collapse_sum_like``.

Every reduction is one ``te.compute`` whose body is a commutative reduction (``te.sum`` or a
``te.comm_reducer``) over ``te.reduce_axis`` iterators, one per reduced axis, so that the
backend's reduction schedule sees a block with reduction iterators. This is the layout of
TVM's ``topi`` reductions (``include/tvm/topi/reduction.h``: ``CommReduce``,
``CommReduceIdx``, ``MakeArgmaxReducer``; ``python/tvm/topi/reduction.py``) with these
differences, where the numpy references (``relay/op/reduce.py``, ``relay/op/transform.py``)
say otherwise:

* the reduced axes are the reference's (:func:`relay.op.reduce.reduce_axes`; ``exclude``;
  ``collapse_sum_like`` sums :func:`relay.op.transform.collapse_sum_axes`, keeping the
  target's 1s). A :class:`_Plan` maps an output index and the reduction iterators to the
  data index; with no axis to reduce the result is a copy of the data (``argmax``/``argmin``:
  zeros). A reduction over no element (an extent-0 axis) is the reducer's identity as a
  constant: TensorIR puts a reduction's init inside its loop, which would not run;
* ``max``/``min`` propagate nan (numpy's ``maximum.reduce``): their combiner is
  ``a if isnan(a) or a > b else b``, not topi's ``tirx.Max``, and their identity is -inf/+inf
  for floats (topi's is the lowest finite value), so an empty or all -inf reduction gives
  what the reference's ``initial`` gives; integers use ``te.max``/``te.min``. bfloat16 is
  compared in float32 (TVM has no bfloat16 ``isnan``). For the CPU a float max or min is
  instead two reductions that TVM's ``rfactor`` knows, the values' ``te.max`` and an int32
  flag's (nan, above -inf, or neither), combined after (:func:`_extreme_with_flags`), so
  that the schedules vectorize it;
* ``argmax``/``argmin`` use a two-value ``comm_reducer`` over (flat index, value), the index
  flattened row-major over the reduced axes as ``CommReduceIdx`` does. nan counts as the
  extreme (numpy's argmax and argmin both return the first nan). Ties go to the smaller index
  (larger with ``select_last_index``); the identity's index (``INT32_MAX``, or -1) loses every
  tie, so a row of lowest values gives a real index. bool data is compared as int8;
* bool ``sum``/``max`` are a logical or and ``prod``/``min`` a logical and (numpy's bool
  add and multiply), never an ``i1`` addition;
* float16 data is summed and multiplied in float32 and rounded back once (``sum``,
  ``mean``, ``variance``, ``logsumexp``, ``collapse_sum_like``, ``prod``), as numpy does
  along the innermost, contiguous axis; along another axis numpy rounds each step, and its
  product may overflow where relay's does not (``[300, 300, 1e-3, 1e-3]``: 0.0901 against
  inf; a fuzzing review found relay's then per-step product giving inf along the innermost
  axis). bfloat16 data too, everywhere (the reference accumulates bfloat16 in float32:
  ml_dtypes' own loops round each step). Integers sum and multiply in their own dtype and
  wrap around;
* ``mean`` and ``variance`` of integers divide the integer sum by the count in int64
  (uint64 for uint64), truncating toward zero (``topi.divide``/``truncdiv``); the type
  relation rejects a count of zero, and a negative count (an empty unbiased variance) divides
  a zero sum. Float means divide by the count in the computation dtype, as the reference's
  ``total / count`` does (a count of 0 multiplies by inf instead: TVM folds a division by a
  constant zero into an error; ``x * inf`` is ``x / 0`` for every x, nan for 0);
* ``variance(data, mean)`` reads the mean broadcast (index 0 where its dimension is 1) inside
  the reduction body, so ``(x - m)^2`` is no separate stage;
* ``logsumexp`` is ``m + log(sum(exp(x - m)))`` with ``m`` the nan-propagating maximum
  (a first reduction stage), and the result is ``m`` itself where ``m`` is not finite (all
  -inf gives -inf, any nan gives nan, +inf gives +inf: what the reference's ``shift`` of 0
  gives). With ``fast_math`` and a float32 computation the exponential is the elementwise
  ``exp``'s approximation (:func:`relay.op.lowering.elemwise.fast_exp_f32`).

For the CPU, a reduction by ``te.sum``/``te.max``/``te.min`` along the last axis whose length
is not whole vectors is two, a head of whole vectors and a tail, combined after
(:func:`relay.op.lowering.common.head_and_tail`), so that the schedule vectorizes the head.

The custom reducers (nan-propagating float max/min, argmax/argmin, bool or/and) are not in
TVM's ``ReducerRegistry``, so a schedule cannot ``rfactor`` them (``te.sum``, integer
``te.max``/``te.min`` and the product are registered); see :func:`_comm_reducer`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from relay.ir.types import TensorType
from relay.op.lowering.common import (
    bfloat16_to_float32,
    head_and_tail,
    in_head_and_tail,
    out as _out,
    static as _static,
)
from relay.op.lowering.elemwise import (
    PURE_LLVM_PREFIX,
    _can_bind,
    exp_expr,
    int_compare,
    materialize_bfloat16_reads,
)
from relay.op.reduce import _axis_attr, reduce_axes
from relay.op.registry import LoweringCall, lowering_rule
from relay.op.transform import collapse_sum_axes

Body = Callable[[list[Any], Sequence[Any]], Any]
"""The reduced expression at a data index (TIR expressions, one per data axis), given the
output index too."""

_INT32_MAX = 2**31 - 1
_INF = float("inf")


# ---- shared helpers -----------------------------------------------------------------------------


def _wide(dtype: str) -> str:
    """The dtype float sums are computed in: float32 for narrow floats."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _cast(dtype: str, value: Any, src: str) -> Any:
    """``value`` (of dtype ``src``; tensor loads do not carry theirs) as ``dtype`` (a
    bfloat16 by its bits: :func:`~relay.op.lowering.common.bfloat16_to_float32`)."""
    from tvm import tirx

    if src == "bfloat16" and dtype == "float32":
        return bfloat16_to_float32(value)
    return value if src == dtype else tirx.Cast(dtype, value)


def _const(value: object, dtype: str) -> Any:
    from tvm import tirx

    return tirx.const(value, dtype)


@dataclass(frozen=True)
class _Plan:
    """How a reduction of data of ``shape`` over ``axes`` (sorted) indexes it: the output has
    the kept axes and, in place, the reduced axes in ``shown`` (extent 1)."""

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    shown: frozenset[int]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(
            1 if i in self.axes else d
            for i, d in enumerate(self.shape)
            if i not in self.axes or i in self.shown
        )

    @property
    def count(self) -> int:
        """How many elements each output combines."""
        n = 1
        for a in self.axes:
            n *= self.shape[a]
        return n

    def iters(self) -> list[Any]:
        """A reduction iterator per reduced axis."""
        from tvm import te

        return [te.reduce_axis((0, self.shape[a]), name=f"k{a}") for a in self.axes]

    def index(self, out: Sequence[Any], iters: Sequence[Any]) -> list[Any]:
        """The data index of output index ``out`` and reduction iterators ``iters``."""
        o, r = iter(out), iter(iters)
        idx = []
        for i in range(len(self.shape)):
            if i in self.axes:
                if i in self.shown:
                    next(o)  # the output's extent-1 axis
                idx.append(next(r).var)
            else:
                idx.append(next(o))
        return idx


def _plan(call: LoweringCall) -> _Plan:
    """The plan of a reduction call (``axis``, ``keepdims``, ``exclude``)."""
    x = call.arg_types[0]
    assert isinstance(x, TensorType)
    shape = _static(x.shape)
    given = _axis_attr(call.attrs["axis"])
    axes = reduce_axes(len(shape), given or None, bool(call.attrs["exclude"]))
    plan = _Plan(shape, axes, frozenset(axes) if call.attrs["keepdims"] else frozenset())
    assert plan.out_shape == _out(call)[0], (plan.out_shape, call.out_type)
    return plan


def _reduce(plan: _Plan, body: Body, reducer: Any, name: str) -> Any:
    """``out[o] = reducer(body(data index))`` over the plan's reduced axes (at least one);
    along the last axis, for the CPU, in two reductions when its length is not whole
    vectors (:func:`relay.op.lowering.common.head_and_tail`)."""
    from tvm import te

    last = len(plan.shape) - 1
    head = head_and_tail(plan.shape[last], reducer) if plan.axes == (last,) else None
    if head is not None:
        n = plan.shape[last]

        def part(out: Sequence[Any], start: int, stop: int) -> Any:
            k = te.reduce_axis((0, stop - start), name=f"k{last}")
            idx = plan.index(out, [k])
            idx[last] = idx[last] + start if start else idx[last]
            return reducer(body(idx, out), axis=[k])

        return in_head_and_tail(plan.out_shape, n, head, reducer, part, name)

    def fcompute(*out: Any) -> Any:
        iters = plan.iters()
        reduced = reducer(body(plan.index(out, iters), out), axis=iters)
        if plan.count == 0:  # the loop would not run, and the init is inside it
            return reduced.combiner.identity_element[reduced.value_index]
        return reduced

    return te.compute(plan.out_shape, fcompute, name=name)


def _copy(x: Any, name: str) -> Any:
    """``x`` unchanged, as a stage of its own (what a reduction over no axis gives)."""
    return _map(_static(x.shape), lambda *i: x(*i), name)


def _map(shape: tuple[int, ...], fcompute: Callable[..., Any], name: str) -> Any:
    from tvm import te

    return te.compute(shape, fcompute, name=name)


# ---- reducers -----------------------------------------------------------------------------------


Combine = Callable[[list[Any], list[Any]], list[Any]]
"""A reducer's combiner: the accumulated values and the new ones (TIR variables) -> the
combined values."""

Identity = Callable[[list[str]], list[Any]]
"""A reducer's identity values for the dtypes of its values."""


def _comm_reducer(name: str, arity: int, combine: Combine, identity: Identity) -> Any:
    """The ``te.comm_reducer`` of ``combine``/``identity`` over ``arity`` values.

    Such custom reducers are not in TVM's ``ReducerRegistry``, so ``rfactor`` refuses them;
    registering them (``s_tir.schedule.RegisterReducer`` with Python callbacks) makes the
    process abort at exit now and then (the registry outlives the interpreter), so they are
    not registered."""
    from tvm import te

    if arity == 1:
        return te.comm_reducer(
            lambda a, b: combine([a], [b])[0], lambda t: identity([t])[0], name=name
        )
    return te.comm_reducer(
        lambda a, b: tuple(combine(list(a), list(b))),
        lambda *ts: tuple(identity(list(ts))),
        name=name,
    )


def _logical_reducer(any_: bool) -> Any:
    """bool sum and max (``any_``: or) or prod and min (and)."""
    from tvm import tirx

    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        return [tirx.Or(a[0], b[0]) if any_ else tirx.And(a[0], b[0])]

    return _comm_reducer("any" if any_ else "all", 1, combine, lambda t: [_const(not any_, "bool")])


def _sum_reducer(dtype: str) -> Any:
    from tvm import te

    return _logical_reducer(True) if dtype == "bool" else te.sum


def _prod_reducer(dtype: str) -> Any:
    from tvm import te

    if dtype == "bool":
        return _logical_reducer(False)
    return te.comm_reducer(lambda a, b: a * b, lambda t: _const(1, t), name="prod")


def _worst(dtype: str, largest: bool) -> Any:
    """The identity of a max (``largest``) or min: -inf/+inf for floats, the dtype's
    lowest/highest value for integers."""
    from tvm import te

    if _is_float(dtype):
        return _const(-_INF if largest else _INF, dtype)
    return te.min_value(dtype) if largest else te.max_value(dtype)


def _extreme_reducer(dtype: str, largest: bool) -> Any:
    """max (``largest``) or min, nan-propagating for floats: ``a if isnan(a) or a > b else b``
    (topi's ``te.max``/``te.min`` for integers)."""
    from tvm import te, tirx

    if dtype == "bool":
        return _logical_reducer(largest)
    if not _is_float(dtype):
        return te.max if largest else te.min

    def combine(a: list[Any], b: list[Any]) -> list[Any]:
        wins = a[0] > b[0] if largest else a[0] < b[0]
        return [tirx.Select(tirx.Or(tirx.isnan(a[0]), wins), a[0], b[0])]

    name = "nanmax" if largest else "nanmin"
    return _comm_reducer(name, 1, combine, lambda t: [_worst(dtype, largest)])


def _arg_reducer(dtype: str, largest: bool, last: bool) -> Any:
    """The (int32 index, value) reducer of argmax (``largest``) or argmin; see the module
    doc. ``dtype`` is the value's (never bool)."""
    from tvm import tirx

    floating = _is_float(dtype)

    def combine(lhs: list[Any], rhs: list[Any]) -> list[Any]:
        (li, lv), (ri, rv) = lhs, rhs
        better = int_compare(operator.gt if largest else operator.lt, lv, rv)
        same = int_compare(tirx.EQ, lv, rv)
        if floating:  # nan beats any number and ties with nan
            lnan, rnan = tirx.isnan(lv), tirx.isnan(rv)
            better = tirx.Or(better, tirx.And(lnan, tirx.Not(rnan)))
            same = tirx.Or(same, tirx.And(lnan, rnan))
        pick = tirx.Or(better, tirx.And(same, li > ri if last else li < ri))
        return [tirx.Select(pick, li, ri), tirx.Select(pick, lv, rv)]

    def identity(dtypes: list[str]) -> list[Any]:
        return [_const(-1 if last else _INT32_MAX, "int32"), _worst(dtype, largest)]

    name = f"{'argmax' if largest else 'argmin'}_{'last' if last else 'first'}"
    return _comm_reducer(name, 2, combine, identity)


# ---- sum, prod, max, min, collapse_sum_like -----------------------------------------------------


def _sum(x: Any, plan: _Plan, name: str) -> Any:
    """``x`` summed as the plan says, in its dtype (float16 accumulates in float32)."""
    if not plan.axes:
        return _copy(x, name)
    dtype = str(x.dtype)
    wide = _wide(dtype)
    total = _reduce(plan, lambda i, o: _cast(wide, x(*i), dtype), _sum_reducer(wide), name)
    if wide == dtype:
        return total
    return _map(plan.out_shape, lambda *o: _cast(dtype, total(*o), wide), f"{name}_cast")


@lowering_rule("sum")
def _lower_sum(call: LoweringCall) -> Any:
    return _sum(call.args[0], _plan(call), "sum")


_REDUCERS: dict[str, Callable[[str], Any]] = {
    "prod": _prod_reducer,
    "max": lambda dtype: _extreme_reducer(dtype, largest=True),
    "min": lambda dtype: _extreme_reducer(dtype, largest=False),
}


def _extreme_with_flags(plan: _Plan, body: Body, dtype: str, largest: bool, name: str) -> Any:
    """A float max (``largest``) or min that propagates nan, as two reductions TVM's
    ``rfactor`` knows, so that the schedule vectorizes them (it cannot factor the
    nan-propagating combiner of :func:`_extreme_reducer`, and such a reduction along rows
    ran as a scalar loop: (4096, 1024) along axis 1, 3.8 ms against numpy's 0.96):

    * ``te.max``/``te.min`` of the values, whose identity is the lowest (highest) finite
      value and which may drop a nan;
    * ``te.max`` of an int32 flag per element: 2 for a nan, 1 for a value above -inf (below
      +inf), else 0.

    The result is nan where the flag is 2, the extreme where it is 1, and -inf (+inf) where
    it is 0: every element was -inf (+inf), or there was none."""
    from tvm import te, tirx

    worst = _const(-_INF if largest else _INF, dtype)
    values = _reduce(plan, body, te.max if largest else te.min, name)

    def flag(i: list[Any], o: Sequence[Any]) -> Any:
        # a nan fails both comparisons (written without isnan, which TVM's vectorizer
        # leaves scalar: the flags of a (4096, 1024) column max took 3 ms so)
        v = body(i, o)
        beats = v > worst if largest else v < worst
        equals = v <= worst if largest else v >= worst
        rest = tirx.Select(equals, _const(0, "int32"), _const(2, "int32"))
        return tirx.Select(beats, _const(1, "int32"), rest)

    flags = _reduce(plan, flag, te.max, f"{name}_flags")

    def result(*o: Any) -> Any:
        f = flags(*o)
        found = tirx.Select(f == _const(1, "int32"), values(*o), worst)
        return tirx.Select(f == _const(2, "int32"), _const(float("nan"), dtype), found)

    return _map(plan.out_shape, result, f"{name}_nan")


_CHEAP_CALLS = frozenset(
    {
        "tirx.call_llvm_pure_intrin",  # fast math's ldexp
        "tirx.call_llvm_intrin",
        "tirx.fabs",
        "tirx.floor",
        "tirx.ceil",
        "tirx.round",
        "tirx.nearbyint",
        "tirx.trunc",
        "tirx.sqrt",
        "tirx.reinterpret",
        "tirx.if_then_else",
        "tirx.likely",
        "tirx.shift_left",
        "tirx.shift_right",
        "tirx.bitwise_and",
        "tirx.bitwise_or",
        "tirx.bitwise_xor",
        "tirx.bitwise_not",
    }
)
"""Calls that LLVM vectorizes (one instruction or a few per vector), with relay's operators
for LLVM intrinsics (``relay.llvm_*``: ``lrint``, ``fma``, ``arithmetic.fence``...; see
``elemwise._pure_llvm``): a tensor computed with no other calls is cheap to compute twice
(:func:`_cheap`)."""

_CHILDREN = ("a", "b", "value", "condition", "true_value", "false_value", "args", "body", "source")


def _cheap(t: Any) -> bool:
    """Whether tensor ``t`` -- an input, or what the group computes before a reduction and
    the schedule inlines into it -- is cheap to compute twice: it calls nothing but
    :data:`_CHEAP_CALLS`. :func:`_extreme_with_flags` reads it twice per element (the
    values and the flags), which for libm's ``log``, ``pow`` or an exact ``tanh``, scalar
    calls, cost twice their time: ``max(log(x), axis=1)`` of (4096, 1024) took 11.4 ms
    against 6.3 with one reduction."""
    from tvm import te
    from tvm.ir.expr import Call

    seen: set[int] = set()
    stack: list[Any] = [t]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, te.Tensor):
            op = node.op
            if isinstance(op, te.ComputeOp):
                stack.extend(op.body)
            elif not isinstance(op, te.PlaceholderOp):
                return False
            continue
        if isinstance(node, Call):
            name = str(node.op.name)
            if name == "te.tensor_load":  # a read of another stage (or an input)
                stack.append(node.args[0])
                continue
            if name not in _CHEAP_CALLS and not name.startswith(PURE_LLVM_PREFIX):
                return False
        for name in _CHILDREN:
            child = getattr(node, name, None)
            if child is None:
                continue
            if isinstance(child, list | tuple) or type(child).__name__ == "Array":
                stack.extend(child)
            else:
                stack.append(child)
    return True


@lowering_rule(*_REDUCERS)
def _lower_same_dtype(call: LoweringCall) -> Any:
    """prod, max and min: reduced in the data's dtype (bfloat16 max/min in float32, exact,
    since TVM has no bfloat16 isnan; a float16 or bfloat16 prod in float32, rounded once, as
    the reference). A float max or min for the CPU of a cheap input
    (:func:`_cheap`) is :func:`_extreme_with_flags`; otherwise, and for CUDA, the
    nan-propagating reducer."""
    from relay.backend.lower import lowering_target

    (x,) = call.args
    plan = _plan(call)
    if not plan.axes:
        return _copy(x, call.name)
    dtype = str(x.dtype)
    cdt = dtype
    if dtype == "bfloat16" or (dtype == "float16" and call.name == "prod"):
        cdt = "float32"

    def body(i: list[Any], o: Sequence[Any]) -> Any:
        return _cast(cdt, x(*i), dtype)

    if call.name != "prod" and _is_float(cdt) and lowering_target() == "llvm" and _cheap(x):
        out = _extreme_with_flags(plan, body, cdt, call.name == "max", call.name)
    else:
        out = _reduce(plan, body, _REDUCERS[call.name](cdt), call.name)
    if cdt == dtype:
        return out
    return _map(plan.out_shape, lambda *o: _cast(dtype, out(*o), cdt), f"{call.name}_cast")


@lowering_rule("collapse_sum_like")
def _lower_collapse_sum_like(call: LoweringCall) -> Any:
    x = call.args[0]
    shape = _static(x.shape)
    target, _ = _out(call)
    axes = collapse_sum_axes(shape, target)
    lead = len(shape) - len(target)
    plan = _Plan(shape, tuple(axes), frozenset(a for a in axes if a >= lead))
    assert plan.out_shape == target, (plan.out_shape, target)
    return _sum(x, plan, "collapse_sum")


# ---- argmax, argmin -----------------------------------------------------------------------------


@lowering_rule("argmax", "argmin")
def _lower_arg(call: LoweringCall) -> Any:
    (x,) = call.args
    plan = _plan(call)
    if not plan.axes:
        return _map(plan.out_shape, lambda *o: _const(0, "int32"), call.name)
    from tvm import te

    dtype = str(x.dtype)
    if dtype == "bfloat16":  # compared in float32, converted in a stage of its own first
        from relay.backend.lower import BARRIER

        # (TVM's bfloat16 legalization loses a conversion inside the tuple reduction, and
        # fails on a bfloat16 stage materialized for it: see materialize_bfloat16_reads)
        source = x
        x = te.compute(x.shape, lambda *i: bfloat16_to_float32(source(*i)), name=BARRIER)
        dtype = "float32"
    else:
        materialize_bfloat16_reads(call)
    vtype = "int8" if dtype == "bool" else dtype
    reducer = _arg_reducer(vtype, call.name == "argmax", bool(call.attrs["select_last_index"]))

    def fcompute(*out: Any) -> Any:
        iters = plan.iters()
        flat: Any = _const(0, "int32")
        for a, k in zip(plan.axes, iters, strict=True):
            flat = flat * plan.shape[a] + k.var
        value = x(*plan.index(out, iters))
        return reducer((flat, _cast(vtype, value, dtype)), axis=iters)

    index, _value = te.compute(plan.out_shape, fcompute, name=call.name)
    return index


# ---- mean, variance -----------------------------------------------------------------------------


def _divide(total: Any, count: Any, dtype: str, name: str) -> Any:
    """``total`` (the sums, of dtype ``dtype`` or its float computation dtype) divided by
    ``count``, as the reference does, in ``dtype``. A symbolic count (a kernel of symbolic
    sizes) is converted at run time; an integer division by a symbolic count divides by at
    least 1 (a count of 0 has only zero sums), since a zero divisor would trap."""
    from tvm import tirx

    shape = _static(total.shape)
    if not isinstance(count, int):
        if _is_float(dtype):
            wide = str(total.dtype)
            return _map(
                shape, lambda *o: _cast(dtype, total(*o) / tirx.Cast(wide, count), wide), name
            )
        via = "uint64" if dtype == "uint64" else "int64"
        divisor = tirx.Cast(via, tirx.max(count, tirx.const(1, str(count.dtype))))
        return _map(
            shape,
            lambda *o: _cast(dtype, tirx.truncdiv(_cast(via, total(*o), dtype), divisor), via),
            name,
        )
    if _is_float(dtype):
        wide = str(total.dtype)
        if count == 0:  # x / 0 as x * inf (TVM rejects a constant zero divisor)
            return _map(shape, lambda *o: _cast(dtype, total(*o) * _const(_INF, wide), wide), name)
        return _map(shape, lambda *o: _cast(dtype, total(*o) / _const(count, wide), wide), name)
    if count <= 0:
        # only an empty unbiased variance (count -1, every sum 0); a count of 0 is a type error
        return _map(shape, lambda *o: _const(0, dtype), name)
    via = "uint64" if dtype == "uint64" else "int64"
    return _map(
        shape,
        lambda *o: _cast(
            dtype, tirx.truncdiv(_cast(via, total(*o), dtype), _const(count, via)), via
        ),
        name,
    )


@lowering_rule("mean")
def _lower_mean(call: LoweringCall) -> Any:
    (x,) = call.args
    plan = _plan(call)
    if not plan.axes:
        return _copy(x, call.name)
    dtype = str(x.dtype)
    wide = _wide(dtype)
    total = _reduce(plan, lambda i, o: _cast(wide, x(*i), dtype), _sum_reducer(wide), "mean_sum")
    return _divide(total, plan.count, dtype, "mean")


@lowering_rule("variance")
def _lower_variance(call: LoweringCall) -> Any:
    x, m = call.args
    plan = _plan(call)
    dtype = str(x.dtype)
    wide = _wide(dtype) if _is_float(dtype) else dtype
    mshape = _static(m.shape)

    def square(i: list[Any], o: Sequence[Any]) -> Any:
        mi = [0 if d == 1 else v for d, v in zip(mshape, i, strict=True)]
        diff = _cast(wide, x(*i), dtype) - _cast(wide, m(*mi), dtype)
        return diff * diff

    count = plan.count - int(bool(call.attrs["unbiased"]))
    if not plan.axes:
        total = _map(plan.out_shape, lambda *o: square(list(o), o), "variance_square")
    else:
        total = _reduce(plan, square, _sum_reducer(wide), "variance_sum")
    return _divide(total, count, dtype, "variance")


# ---- logsumexp ----------------------------------------------------------------------------------


@lowering_rule("logsumexp")
def _lower_logsumexp(call: LoweringCall) -> Any:
    from tvm import tirx

    (x,) = call.args
    plan = _plan(call)
    if not plan.axes:
        return _copy(x, call.name)
    dtype = str(x.dtype)
    wide = _wide(dtype)
    fast = call.fast_math and wide == "float32"

    bind = _can_bind(call)

    def exp(z: Any) -> Any:
        return exp_expr(z, fast, bind)

    def value(i: list[Any], o: Sequence[Any]) -> Any:
        return _cast(wide, x(*i), dtype)

    top = _reduce(plan, value, _extreme_reducer(wide, largest=True), "logsumexp_max")

    def term(i: list[Any], o: Sequence[Any]) -> Any:
        m = top(*o)
        shift = tirx.Select(tirx.isfinite(m), m, _const(0, wide))
        return exp(value(i, o) - shift)

    total = _reduce(plan, term, _sum_reducer(wide), "logsumexp_sum")

    def fout(*o: Any) -> Any:
        m = top(*o)
        return _cast(dtype, tirx.Select(tirx.isfinite(m), tirx.log(total(*o)) + m, m), wide)

    return _map(plan.out_shape, fout, "logsumexp")
