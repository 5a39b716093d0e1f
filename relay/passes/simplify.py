"""Local simplifications written as rules of the pattern language (:mod:`relay.passes.pattern`).

Four passes, each a list of :class:`~relay.passes.pattern.DFPatternCallback` rules run by
:func:`~relay.passes.pattern.rewrite` to a fixed point:

* :func:`SimplifyExpr` (TVM ``src/relay/transforms/simplify_expr.cc``): arithmetic
  identities ``x * 1``, ``1 * x``, ``x + 0``, ``0 + x``, ``x - 0``, ``x / 1`` when the constant
  (or ``ones_like(...)``/``zeros_like(...)``) does not change ``x``'s type by broadcasting
  (a float constant zero added must be ``-0.0``, one subtracted ``+0.0``: IEEE's
  ``-0.0 + 0.0`` is ``+0.0``; ``zeros_like`` is taken for either, see ``_identity_rule``);
  ``negative(negative(x))``; ``exp((-a) * b)`` becomes ``exp(-(a * b))`` (a negation the
  ``exp``'s lowering folds; not for other consumers of the product); a ``reshape``, ``squeeze``, ``expand_dims``, ``cast`` or
  ``broadcast_to`` whose result has its input's type (no ``?`` dims), and likewise
  ``collapse_sum_like(x, y)``, ``broadcast_to_like``, ``reshape_like`` and ``cast_like``; two consecutive shape-only operators (``reshape``/``squeeze``/``expand_dims``)
  become one ``reshape`` (with the outer ``newshape`` when it refers only to sizes, else the
  static result shape) or nothing; two transposes compose into one, and an identity
  permutation disappears; a matrix product of a transposed operand reads the operand as it
  is, with its ``transpose_a``/``transpose_b`` flag flipped.
* :func:`SimplifyInference` (TVM ``simplify_inference.cc``, ``BatchNormToInferUnpack`` and
  ``LayerNormToInferUnpack``): ``nn.batch_norm(...).0`` becomes
  ``(x - mean) / sqrt(var + eps) * gamma + beta`` with the per-channel parameters expanded to
  broadcast along ``axis`` (``scale``/``center`` false drop ``gamma``/``beta``), and fields 1
  and 2 become ``moving_mean`` and ``moving_var`` (a ``training=True`` call, which normalizes
  with the batch's statistics and updates the moving ones, is left as it is);
  ``nn.layer_norm`` becomes the same arithmetic with ``mean`` and ``variance`` over ``axis``;
  ``nn.dropout(x).0`` becomes ``x`` (field 1, the mask, ``ones_like(x)``).
* :func:`CanonicalizeOps` (TVM ``canonicalize_ops.cc``): ``nn.bias_add(x, b, axis)`` becomes
  ``add(x, expand_dims(b, axis=1, num_newaxis=rank - 1 - axis))``.
* :func:`DivToMul` (TVM ``div_to_mul.cc``): ``divide(x, c)`` with ``c`` a float constant
  whose elements are finite, nonzero and have normal, finite reciprocals becomes
  ``multiply(x, 1 / c)`` (the reciprocal rounded once to ``c``'s dtype, so results may differ
  from the division in the last place).

Each pass exists as a factory of a :class:`~relay.passes.manager.ModulePass` named as in TVM,
and as a plain function on expressions (:func:`simplify_expr`, :func:`simplify_inference`,
:func:`canonicalize_ops`, :func:`div_to_mul`). Rules that read types say so
(``require_type``), and the passes that hold them require ``InferType``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relay.ir.expr import Call, Constant, Expr, Op
from relay.ir.module import Module
from relay.ir.types import Any as AnyDim, TensorType
from relay.op.registry import get_op
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo
from relay.passes.pattern import (
    DFPattern,
    DFPatternCallback,
    NodeMap,
    is_constant,
    is_op,
    is_tuple_get_item,
    rewrite,
    rewrite_module,
    rule,
    wildcard,
)

__all__ = [
    "CANONICALIZE_OPS_RULES",
    "DIV_TO_MUL_RULES",
    "SIMPLIFY_EXPR_RULES",
    "SIMPLIFY_INFERENCE_RULES",
    "CanonicalizeOps",
    "DivToMul",
    "SimplifyExpr",
    "SimplifyInference",
    "canonicalize_ops",
    "div_to_mul",
    "reciprocal",
    "simplify_expr",
    "simplify_inference",
]

_FLOATS = ("float16", "float32", "float64")


# -- helpers ------------------------------------------------------------------------------------


def _call(name: str, *args: Expr, **attrs: object) -> Call:
    """A call of operator ``name`` with validated attributes."""
    opdef = get_op(name)
    return Call(opdef.op, args, opdef.validate_attrs(attrs))


def _tensor_type(e: Expr) -> TensorType | None:
    ty = e._checked_type
    return ty if isinstance(ty, TensorType) else None


def _same_tensor_type(a: Expr, b: Expr) -> bool:
    """Both have the same inferred tensor type, with no ``?`` dimension (two ``?`` may
    differ at run time)."""
    ta, tb = _tensor_type(a), _tensor_type(b)
    return ta is not None and ta == tb and all(d is not AnyDim for d in ta.shape)


def _static_shape(e: Expr) -> tuple[int, ...] | None:
    ty = _tensor_type(e)
    if ty is None or not all(isinstance(d, int) for d in ty.shape):
        return None
    return tuple(d for d in ty.shape if isinstance(d, int))


def _all_equal(data: np.ndarray, value: int) -> bool:
    """Every element of ``data`` is ``value``."""
    if data.size == 1:
        return bool(data.item() == value)
    return bool(np.all(data == value))


def _op_name(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def _along_axis(param: Expr, ndim: int, axis: int) -> Expr:
    """A 1-d per-channel ``param`` shaped to broadcast along ``axis`` of a rank-``ndim``
    tensor (TVM's ``ExpandBiasToMatchAxis``)."""
    trailing = ndim - 1 - axis
    return param if trailing == 0 else _call("expand_dims", param, axis=1, num_newaxis=trailing)


def _float_scalar(value: float, dtype: str) -> Constant:
    return Constant(np.asarray(value, dtype=dtype))


def _norm_axis(axis: int, ndim: int) -> int | None:
    if not -ndim <= axis < ndim:
        return None
    return axis + ndim if axis < 0 else axis


# -- SimplifyExpr -------------------------------------------------------------------------------


_FILLED = {0: "zeros_like", 1: "ones_like"}
_FILLS = {0: ("zeros_like", "zeros"), 1: ("ones_like", "ones")}
"""The operators filling a tensor with 0 or 1 (``zeros``: a single-element ``zeros_like``
made concrete by :func:`_concretize_scalar_fill`)."""


def _is_filled(e: Expr, value: int, negative_zero: bool = False) -> bool:
    """``e`` is a non-boolean constant of all ``value``, or ``zeros_like``/``ones_like``
    (``zeros``/``ones``). A float constant zero must have the sign ``negative_zero`` asks
    for; ``zeros_like`` is taken for either sign (see :func:`_identity_rule`)."""
    if isinstance(e, Constant):
        data = e.data
        if data.dtype == np.bool_ or not _all_equal(data, value):
            return False
        signed = value == 0 and data.dtype.kind not in "biu"  # (bfloat16's kind is V)
        return not signed or bool(np.all(np.signbit(data.astype(np.float32)) == negative_zero))
    return _op_name(e) in _FILLS[value] and not _is_bool(e)


def _is_bool(e: Expr) -> bool:
    ty = _tensor_type(e)
    return ty is None or ty.dtype == "bool"


def _identity_rule(
    op: str, value: int, sides: Sequence[int], negative_zero: bool = False
) -> DFPatternCallback:
    """``op(x, c)`` (or ``op(c, x)`` for the listed constant ``sides``) -> ``x`` when every
    element of ``c`` is ``value`` (a constant, or ``ones_like``/``zeros_like``) and the
    result has ``x``'s type. A float constant zero must have the sign ``negative_zero``:
    IEEE arithmetic makes ``-0.0 + 0.0`` and ``-0.0 - (-0.0)`` +0.0, so only ``x + (-0.0)``
    and ``x - 0.0`` are ``x`` for every float ``x`` (LLVM folds those two only, without
    no-signed-zeros). ``x + zeros_like(y)`` is ``x`` all the same, a -0 kept, as TVM's and
    XLA's simplifiers have it: reverse-mode differentiation seeds its sums with
    ``zeros_like`` (kept, a two-layer perceptron's higher-order gradient compiled to 18
    kernels instead of 13), and a derivative's -0 is the sum's without its seed."""

    @rule(is_op(op)(wildcard(), wildcard()), require_type=True, name=f"{op}-identity")
    def identity(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
        assert isinstance(post, Call)
        for side in sides:
            c, x = post.args[side], post.args[1 - side]
            if _is_filled(c, value, negative_zero) and _same_tensor_type(x, pre):
                return x
        return None

    return identity


_inner = wildcard()


@rule(is_op("negative")(is_op("negative")(_inner)))
def _double_negation(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    return node_map[_inner][0]


_exp_of_product = is_op("multiply")(wildcard(), wildcard())


@rule((is_op("exp") | is_op("fast_exp"))(_exp_of_product), require_type=True)
def _negation_out_of_product(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``exp((-a) * b)`` -> ``exp(-(a * b))`` (and ``a * (-b)``; ``(-a) * (-b)`` is ``a * b``),
    where ``-a`` has the product's type: the same values bit for bit (rounding to nearest is
    symmetric), and a negation that the ``exp`` folds into its own constants (``exp(-y * y)``;
    :func:`relay.op.lowering.elemwise.fast_exp_f32`). Only under an ``exp``: ``-(a * b) + c``
    elsewhere is what LLVM fuses into a multiply-add from -O1 on only, so small kernels
    (compiled at -O0) and large ones rounded it differently where ``(-a) * b + c`` agreed
    (found by a fuzzing review). Not when ``-a`` is broadcast: the negation would then be
    of the larger tensor."""
    assert isinstance(post, Call)
    product = post.args[0]
    assert isinstance(product, Call)
    args = list(product.args)
    negated = 0
    for side, factor in enumerate(product.args):
        if _op_name(factor) == "negative" and _same_tensor_type(factor, product):
            assert isinstance(factor, Call)
            args[side] = factor.args[0]
            negated += 1
    if not negated:
        return None
    inner: Expr = _call("multiply", *args)  # (-a) * (-b) is a * b
    if negated == 1:
        inner = _call("negative", inner)
    return Call(post.op, (inner,), post.attrs, span=post.span)


_SHAPE_ONLY = ("reshape", "squeeze", "expand_dims")
_IDENTITY_WHEN_SAME_TYPE = (*_SHAPE_ONLY, "cast", "broadcast_to")


def _alt_ops(names: Sequence[str]) -> DFPattern:
    """A pattern matching any of the operators ``names``."""
    out: DFPattern = is_op(names[0])
    for n in names[1:]:
        out = out | is_op(n)
    return out


_same_in = wildcard()


@rule(_alt_ops(_IDENTITY_WHEN_SAME_TYPE)(_same_in), require_type=True)
def _same_type_identity(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    x = node_map[_same_in][0]
    return x if _same_tensor_type(x, pre) else None


_like_x = wildcard()
_LIKE = ("collapse_sum_like", "broadcast_to_like", "reshape_like", "cast_like")


@rule(_alt_ops(_LIKE)(_like_x, wildcard()), require_type=True)
def _same_type_like(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``collapse_sum_like(x, y)`` (and the other ``_like`` operators) whose result has
    ``x``'s type is ``x`` (the gradient rules write them for broadcasting that may not
    happen)."""
    x = node_map[_like_x][0]
    return x if _same_tensor_type(x, pre) else None


_shape_x = wildcard()
_shape_inner = _alt_ops(_SHAPE_ONLY)(_shape_x)


@rule(_alt_ops(_SHAPE_ONLY)(_shape_inner), require_type=True)
def _shape_pair(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """Two shape-only operators in a row: nothing, or one reshape."""
    x = node_map[_shape_x][0]
    assert isinstance(post, Call)
    if _same_tensor_type(x, pre):
        return x
    inner = node_map[_shape_inner][0]
    if _op_name(post) == "reshape" and _op_name(inner) == "reshape":
        newshape = post.attrs["newshape"]
        allowzero = post.attrs["allowzero"]
        assert isinstance(newshape, tuple)
        # sizes and -1 mean the same whatever the input's shape; 0, -2, -3, -4 copy from it
        if all(
            isinstance(v, int) and (v > 0 or v == -1 or (v == 0 and allowzero)) for v in newshape
        ):
            return _call("reshape", x, newshape=newshape, allowzero=allowzero)
    shape = _static_shape(pre)
    if shape is None:
        return None
    # a 0 in the result is a size (an empty axis), not "copy the input's dimension"
    return _call("reshape", x, newshape=shape, allowzero=0 in shape)


_tr_x = wildcard()
_tr_inner = is_op("transpose")(_tr_x)


def _permutation(call: Call, ndim: int) -> list[int] | None:
    axes = call.attrs["axes"]
    if axes is None:
        return list(range(ndim))[::-1]
    assert isinstance(axes, tuple)
    perm = [_norm_axis(a, ndim) for a in axes if isinstance(a, int)]
    if len(perm) != ndim or any(p is None for p in perm):
        return None
    return [p for p in perm if p is not None]


@rule(is_op("transpose")(_tr_inner), require_type=True)
def _transpose_pair(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``transpose(transpose(x, p), q)`` is ``transpose(x, [p[i] for i in q])``."""
    x, inner = node_map[_tr_x][0], node_map[_tr_inner][0]
    ty = _tensor_type(x)
    if ty is None:
        return None
    assert isinstance(post, Call) and isinstance(inner, Call)
    p, q = _permutation(inner, ty.ndim), _permutation(post, ty.ndim)
    if p is None or q is None:
        return None
    axes = [p[i] for i in q]
    if axes == list(range(ty.ndim)):
        return x
    return _call("transpose", x, axes=axes)


_tr_single = wildcard()


@rule(is_op("transpose")(_tr_single), require_type=True)
def _transpose_identity(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """A transpose that keeps every axis in place."""
    x = node_map[_tr_single][0]
    ty = _tensor_type(x)
    assert isinstance(post, Call)
    if ty is None:
        return None
    perm = _permutation(post, ty.ndim)
    return x if perm == list(range(ty.ndim)) else None


_mm_a = wildcard()
_mm_b = wildcard()


@rule(_alt_ops(("nn.matmul", "nn.batch_matmul"))(_mm_a, _mm_b), require_type=True)
def _transpose_into_product(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """A product of a transposed operand reads the operand as it is, with the flag
    flipped: ``nn.matmul(transpose(a), b)`` is ``nn.matmul(a, b, transpose_a=True)`` (the
    transpose of a 2-D operand; of the last two axes for ``nn.batch_matmul``). The
    backward pass of ``x @ w`` written by hand (``g @ w.T``, ``x.T @ g``) then copies no
    weights."""
    assert isinstance(post, Call)
    args = list(post.args)
    attrs = dict(post.attrs.items())
    changed = False
    for i, flag in ((0, "transpose_a"), (1, "transpose_b")):
        arg = args[i]
        if not (isinstance(arg, Call) and _op_name(arg) == "transpose"):
            continue
        inner = arg.args[0]
        ty = _tensor_type(inner)
        if ty is None or ty.ndim < 2:
            continue
        want = [*range(ty.ndim - 2), ty.ndim - 1, ty.ndim - 2]
        if _permutation(arg, ty.ndim) != want:
            continue
        args[i] = inner
        attrs[flag] = not attrs[flag]
        changed = True
    if not changed:
        return None
    return _call(str(_op_name(post)), *args, **attrs)


_cz_x = wildcard()
_cz_like = wildcard()


@rule(_alt_ops(_LIKE)(_cz_x, _cz_like), require_type=True)
def _concretize_like(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``reshape_like``, ``broadcast_to_like``, ``collapse_sum_like`` and ``cast_like``
    with a static result become ``reshape``, ``broadcast_to``, ``sum`` and ``cast`` (TVM's
    ``Concretize*LikeRewrite``): the second argument was only read for its type, and
    dropping it frees its producer from the call (fusion, dead code)."""
    shape = _static_shape(pre)
    ty = _tensor_type(pre)
    x = node_map[_cz_x][0]
    x_shape = _static_shape(x)
    if shape is None or ty is None or x_shape is None:
        return None
    name = _op_name(post)
    if name == "cast_like":
        return _call("cast", x, dtype=ty.dtype)
    if name == "reshape_like":
        return _call("reshape", x, newshape=shape)
    if name == "broadcast_to_like":
        return _call("broadcast_to", x, shape=shape)
    from relay.op.transform import collapse_sum_axes

    axes = collapse_sum_axes(x_shape, shape)
    if not axes:
        return x if x_shape == shape else _call("reshape", x, newshape=shape)
    lead = len(x_shape) - len(shape)
    if axes == tuple(range(lead)):  # only leading axes: summed away
        return _call("sum", x, axis=axes)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x_shape))
    summed = _call("sum", x, axis=axes, keepdims=True)
    return summed if kept == shape else _call("reshape", summed, newshape=shape)


_cz_fill = wildcard()


@rule(_alt_ops(tuple(_FILLED.values()))(_cz_fill), require_type=True)
def _concretize_scalar_fill(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``zeros_like(x)``/``ones_like(x)`` of a single element becomes ``zeros``/``ones``
    (TVM's ``ConcretizeZerosLikeRewrite``), so that ``x`` (typically a loss whose
    gradient seed this is) is no longer read and, when nothing else reads it, dead. Larger
    fills keep their argument: a constant fill folded to a large constant would cost
    memory, and reading ``x``'s shape inside a fused kernel costs nothing."""
    shape = _static_shape(pre)
    ty = _tensor_type(pre)
    if shape is None or ty is None or int(np.prod(shape)) > 1:
        return None
    name = "zeros" if _op_name(post) == "zeros_like" else "ones"
    return _call(name, shape=shape, dtype=ty.dtype)


SIMPLIFY_EXPR_RULES: tuple[DFPatternCallback, ...] = (
    _identity_rule("multiply", 1, (0, 1)),
    _identity_rule("add", 0, (0, 1), negative_zero=True),
    _identity_rule("subtract", 0, (1,)),
    _identity_rule("divide", 1, (1,)),
    _double_negation,
    _negation_out_of_product,
    _transpose_pair,
    _transpose_identity,
    _transpose_into_product,
    _shape_pair,
    _same_type_identity,
    _same_type_like,
    _concretize_like,
    _concretize_scalar_fill,
)
"""The rules of :func:`SimplifyExpr`, in the order they are tried at each node."""


def simplify_expr(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` with the :func:`SimplifyExpr` rules applied (``mod``: its globals)."""
    return rewrite(SIMPLIFY_EXPR_RULES, expr, mod)


def SimplifyExpr() -> Pass:
    """Remove arithmetic identities, double negations, and redundant shape operators
    (see the module docs)."""
    return _module_pass("SimplifyExpr", 0, SIMPLIFY_EXPR_RULES)


# -- SimplifyInference ---------------------------------------------------------------------------

_bn_x, _bn_gamma, _bn_beta, _bn_mean, _bn_var = (wildcard() for _ in range(5))
_bn = is_op("nn.batch_norm")(_bn_x, _bn_gamma, _bn_beta, _bn_mean, _bn_var)


@rule(is_tuple_get_item(_bn), require_type=True)
def _batch_norm(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``batch_norm(x, gamma, beta, mean, var).i``: the arithmetic, ``mean`` or ``var``
    (not for ``training=True``, whose statistics are the batch's)."""
    call = node_map[_bn][0]
    assert isinstance(call, Call)
    if call.attrs.get("training", False):
        return None
    index = getattr(post, "index", None)
    if index == 1:
        return node_map[_bn_mean][0]
    if index == 2:
        return node_map[_bn_var][0]
    x = node_map[_bn_x][0]
    ty = _tensor_type(x)
    if ty is None or ty.dtype not in _FLOATS or not isinstance(ty.dtype, str):
        return None
    axis = call.attrs["axis"]
    epsilon = call.attrs["epsilon"]
    assert isinstance(axis, int) and isinstance(epsilon, int | float)
    ax = _norm_axis(axis, ty.ndim)
    if ax is None:
        return None
    dtype, ndim = ty.dtype, ty.ndim

    def along(p: Expr) -> Expr:
        return _along_axis(p, ndim, ax)

    mean, var = (_widened(node_map[p][0], dtype) for p in (_bn_mean, _bn_var))
    std = _call("sqrt", _call("add", var, _float_scalar(epsilon, _wide_dtype(dtype))))
    out: Expr = _call("divide", _call("subtract", _widened(x, dtype), along(mean)), along(std))
    if call.attrs["scale"]:
        out = _call("multiply", out, along(_widened(node_map[_bn_gamma][0], dtype)))
    if call.attrs["center"]:
        out = _call("add", out, along(_widened(node_map[_bn_beta][0], dtype)))
    return _narrowed(out, dtype)


def _wide_dtype(dtype: str) -> str:
    """The dtype the normalizations' references compute ``dtype`` in: float32 for float16,
    rounded back once at the end (``nn.batch_norm``'s and ``nn.layer_norm``'s ``_wide``)."""
    return "float32" if dtype == "float16" else dtype


def _widened(e: Expr, dtype: str) -> Expr:
    """``e`` (of ``dtype``) cast to :func:`_wide_dtype` where that differs. Computed in
    float16 step by step, a float16 ``layer_norm`` was up to 5 ulps (2%) off its reference
    (found by a fuzzing review)."""
    wide = _wide_dtype(dtype)
    return e if wide == dtype else _call("cast", e, dtype=wide)


def _narrowed(e: Expr, dtype: str) -> Expr:
    """``e`` (computed in :func:`_wide_dtype` of ``dtype``) rounded back to ``dtype``."""
    return e if _wide_dtype(dtype) == dtype else _call("cast", e, dtype=dtype)


_drop_x = wildcard()


@rule(is_tuple_get_item(is_op("nn.dropout")(_drop_x)))
def _dropout(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``dropout(x).0`` is ``x`` at inference; ``.1`` (the mask) is ones."""
    x = node_map[_drop_x][0]
    return x if getattr(post, "index", None) == 0 else _call("ones_like", x)


_ln_x, _ln_gamma, _ln_beta = wildcard(), wildcard(), wildcard()


@rule(is_op("nn.layer_norm")(_ln_x, _ln_gamma, _ln_beta), require_type=True)
def _layer_norm(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``layer_norm(x, gamma, beta)``: ``(x - mean) / sqrt(variance + eps) * gamma + beta``
    (for float16 in float32, rounded once: :func:`_widened`)."""
    x = node_map[_ln_x][0]
    ty = _tensor_type(x)
    assert isinstance(post, Call)
    if ty is None or not isinstance(ty.dtype, str) or ty.dtype not in _FLOATS:
        return None
    axis, epsilon = post.attrs["axis"], post.attrs["epsilon"]
    assert isinstance(axis, int) and isinstance(epsilon, int | float)
    ax = _norm_axis(axis, ty.ndim)
    if ax is None:
        return None
    xw = _widened(x, ty.dtype)
    mean = _call("mean", xw, axis=[ax], keepdims=True)
    var = _call("variance", xw, mean, axis=[ax], keepdims=True)
    std = _call("sqrt", _call("add", var, _float_scalar(epsilon, _wide_dtype(ty.dtype))))
    out: Expr = _call("divide", _call("subtract", xw, mean), std)
    for attr, param in (("scale", _ln_gamma), ("center", _ln_beta)):
        if post.attrs[attr]:
            p = _along_axis(_widened(node_map[param][0], ty.dtype), ty.ndim, ax)
            out = _call("multiply" if attr == "scale" else "add", out, p)
    return _narrowed(out, ty.dtype)


SIMPLIFY_INFERENCE_RULES: tuple[DFPatternCallback, ...] = (_batch_norm, _dropout, _layer_norm)
"""The rules of :func:`SimplifyInference`."""


def simplify_inference(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` with the :func:`SimplifyInference` rules applied."""
    return rewrite(SIMPLIFY_INFERENCE_RULES, expr, mod)


def SimplifyInference() -> Pass:
    """Replace the inference forms of ``nn.batch_norm``, ``nn.layer_norm`` and
    ``nn.dropout`` with elementwise arithmetic (see the module docs)."""
    return _module_pass("SimplifyInference", 0, SIMPLIFY_INFERENCE_RULES)


# -- CanonicalizeOps -----------------------------------------------------------------------------

_bias_x, _bias_b = wildcard(), wildcard()


@rule(is_op("nn.bias_add")(_bias_x, _bias_b), require_type=True)
def _bias_add(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    """``bias_add(x, b, axis)`` is ``add(x, b expanded to broadcast along axis)``."""
    x, b = node_map[_bias_x][0], node_map[_bias_b][0]
    ty = _tensor_type(x)
    assert isinstance(post, Call)
    axis = post.attrs["axis"]
    assert isinstance(axis, int)
    if ty is None:
        return None
    ax = _norm_axis(axis, ty.ndim)
    if ax is None:
        return None
    return _call("add", x, _along_axis(b, ty.ndim, ax))


CANONICALIZE_OPS_RULES: tuple[DFPatternCallback, ...] = (_bias_add,)
"""The rules of :func:`CanonicalizeOps`."""


def canonicalize_ops(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` with ``nn.bias_add`` replaced by ``add`` and ``expand_dims``."""
    return rewrite(CANONICALIZE_OPS_RULES, expr, mod)


def CanonicalizeOps() -> Pass:
    """Replace ``nn.bias_add`` with a broadcasting ``add`` (see the module docs)."""
    return _module_pass("CanonicalizeOps", 3, CANONICALIZE_OPS_RULES)


# -- DivToMul -----------------------------------------------------------------------------------

_div_x, _div_c = wildcard(), is_constant()


def reciprocal(data: np.ndarray) -> np.ndarray | None:
    """``1 / data`` in ``data``'s float dtype when every element is finite and nonzero and
    its reciprocal finite and normal; else None."""
    if data.dtype.name not in _FLOATS:
        return None
    info = np.finfo(data.dtype)
    wide = data.astype(np.float64)
    if not np.all(np.isfinite(wide)) or np.any(wide == 0):
        return None
    with np.errstate(all="ignore"):
        recip = (1.0 / wide).astype(data.dtype)
    if not np.all(np.isfinite(recip)) or np.any(np.abs(recip) < info.tiny):
        return None
    return np.asarray(recip)


@rule(is_op("divide")(_div_x, _div_c))
def _div_to_mul(pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
    c = node_map[_div_c][0]
    assert isinstance(c, Constant)
    recip = reciprocal(c.data)
    if recip is None:
        return None
    return _call("multiply", node_map[_div_x][0], Constant(recip, span=c.span))


DIV_TO_MUL_RULES: tuple[DFPatternCallback, ...] = (_div_to_mul,)
"""The rules of :func:`DivToMul`."""


def div_to_mul(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` with divisions by float constants replaced by multiplications."""
    return rewrite(DIV_TO_MUL_RULES, expr, mod)


def DivToMul() -> Pass:
    """Replace ``divide(x, c)``, ``c`` a float constant, with ``multiply(x, 1 / c)``."""
    return _module_pass("DivToMul", 0, DIV_TO_MUL_RULES)


# -- passes -------------------------------------------------------------------------------------


def _module_pass(name: str, opt_level: int, rules: Sequence[DFPatternCallback]) -> Pass:
    """A module pass applying ``rules`` to every function (``InferType`` required when a
    rule reads types)."""
    required = ("InferType",) if any(r.require_type for r in rules) else ()

    def run(mod: Module, ctx: PassContext) -> Module:
        return rewrite_module(rules, mod)

    return ModulePass(run, PassInfo(name, opt_level, required))
