"""SimplifyExpr, SimplifyInference, CanonicalizeOps and DivToMul: before/expected for each
rule, the interpreter before and after, random programs, and a 100,000-binding chain."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.strategies import DrawFn

import relay
from relay.ir.expr import Call, Constant, Expr, Function, Let, Op, TupleGetItem, Var, const
from relay.ir.module import Module
from relay.ir.types import FuncType, TensorType, Type
from relay.op.registry import get_op
from relay.passes import InferType, PassContext, Sequential
from relay.passes.simplify import (
    CanonicalizeOps,
    DivToMul,
    SimplifyExpr,
    SimplifyInference,
    canonicalize_ops,
    div_to_mul,
    reciprocal,
    simplify_expr,
    simplify_inference,
)
from tests.strategies import TypedProgram, well_typed_programs

F = "Tensor[(2, 3), float32]"
BN_PARAMS = "%g: Tensor[(3,), float32], %b: Tensor[(3,), float32], %m: Tensor[(3,), float32], %v: Tensor[(3,), float32]"
X3 = "%x: Tensor[(2, 3, 4), float32]"


def fn(text: str) -> Function:
    e = relay.parse_expr(text)
    assert isinstance(e, Function)
    return e


def check(
    transform: Callable[[Expr], Expr],
    before: str,
    expected: str,
    *args: np.ndarray,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> None:
    """``transform(before)`` is alpha-equal to ``expected``, type-checks, and (given
    ``args``) computes what ``before`` computes."""
    b = fn(before)
    after = transform(b)
    relay.assert_structural_equal(after, fn(expected), map_free_vars=True)
    relay.infer_type(after)
    if args:
        want = relay.interpret(b, *args)
        got = relay.interpret(after, *args)
        for w, g in zip(_leaves(want), _leaves(got), strict=True):
            assert w.dtype == g.dtype and w.shape == g.shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def unchanged(transform: Callable[[Expr], Expr], text: str) -> None:
    b = fn(text)
    assert transform(b) is b


def _leaves(v: object) -> list[np.ndarray]:
    if isinstance(v, tuple):
        return [x for item in v for x in _leaves(item)]
    assert isinstance(v, np.ndarray)
    return [v]


RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32", positive: bool = False) -> np.ndarray:
    a = RNG.uniform(0.5 if positive else -2, 2, size=shape)
    return np.asarray(a, dtype=dtype)


X23 = rand(2, 3)


# -- SimplifyExpr ---------------------------------------------------------------------------------


def test_arithmetic_identities() -> None:
    check(
        simplify_expr,
        f"""fn (%x: {F}) {{
          %0 = multiply(%x, 1f); %1 = multiply(1f, %0); %2 = add(%1, -0f); %3 = add(-0f, %2);
          %4 = subtract(%3, 0f); divide(%4, 1f)
        }}""",
        f"fn (%x: {F}) {{ %x }}",
        X23,
    )


def test_identities_with_ones_like_and_zeros_like() -> None:
    check(
        simplify_expr,
        f"""fn (%x: {F}, %y: {F}) {{
          %0 = ones_like(%y); %1 = multiply(%0, %x); %2 = zeros_like(%y); %3 = add(%1, %2);
          subtract(%3, %2)
        }}""",
        f"fn (%x: {F}, %y: {F}) {{ %x }}",
        X23,
        X23,
    )
    # (zeros_like is a derivative's seed: added, it is dropped, a -0 kept, as in XLA; also
    # of one element, which becomes zeros(...) first)
    check(
        simplify_expr,
        "fn (%x: Tensor[(1,), float32]) { %0 = zeros_like(%x); add(%x, %0) }",
        "fn (%x: Tensor[(1,), float32]) { %x }",
        np.array([-0.0], "float32"),
    )
    check(
        simplify_expr,
        "fn (%x: Tensor[(2,), int32]) { %0 = zeros_like(%x); add(%0, %x) }",
        "fn (%x: Tensor[(2,), int32]) { %x }",
        np.array([3, -4], "int32"),
    )
    # ones of a larger shape broadcast x up: kept
    unchanged(
        simplify_expr,
        f"fn (%x: Tensor[(3,), float32], %y: {F}) {{ %0 = ones_like(%y); multiply(%0, %x) }}",
    )


def test_like_operators_of_the_same_type() -> None:
    check(
        simplify_expr,
        f"""fn (%x: {F}, %y: {F}) {{
          %0 = collapse_sum_like(%x, %y); %1 = broadcast_to_like(%0, %y);
          %2 = reshape_like(%1, %y); cast_like(%2, %y)
        }}""",
        f"fn (%x: {F}, %y: {F}) {{ %x }}",
        X23,
        X23,
    )
    unchanged(
        simplify_expr,
        "fn (%x: Tensor[(2, ?), float32], %y: Tensor[(?,), float32]) { collapse_sum_like(%x, %y) }",
    )


def test_like_operators_with_static_results_are_concretized() -> None:
    y3 = np.zeros(3, "float32")
    check(
        simplify_expr,
        f"fn (%x: {F}, %y: Tensor[(3,), float32]) {{ collapse_sum_like(%x, %y) }}",
        f"fn (%x: {F}, %y: Tensor[(3,), float32]) {{ sum(%x, axis=[0]) }}",
        X23,
        y3,
    )
    x423 = RNG.standard_normal((4, 2, 3)).astype("float32")
    check(
        simplify_expr,
        "fn (%x: Tensor[(4, 2, 3), float32], %y: Tensor[(2, 1), float32]) { collapse_sum_like(%x, %y) }",
        """fn (%x: Tensor[(4, 2, 3), float32], %y: Tensor[(2, 1), float32]) {
          %0 = sum(%x, axis=[0, 2], keepdims=True); reshape(%0, newshape=[2, 1])
        }""",
        x423,
        np.zeros((2, 1), "float32"),
    )
    check(
        simplify_expr,
        f"fn (%x: {F}, %y: Tensor[(1, 3), float32]) {{ collapse_sum_like(%x, %y) }}",
        f"fn (%x: {F}, %y: Tensor[(1, 3), float32]) {{ sum(%x, axis=[0], keepdims=True) }}",
        X23,
        np.zeros((1, 3), "float32"),
    )
    check(
        simplify_expr,
        f"""fn (%x: Tensor[(3,), float32], %y: {F}, %z: Tensor[(6,), int32]) {{
          %0 = broadcast_to_like(%x, %y); %1 = reshape_like(%0, %z); cast_like(%1, %z)
        }}""",
        f"""fn (%x: Tensor[(3,), float32], %y: {F}, %z: Tensor[(6,), int32]) {{
          %0 = broadcast_to(%x, shape=[2, 3]); %1 = reshape(%0, newshape=[6]);
          cast(%1, dtype="int32")
        }}""",
        np.array([1.5, -2.0, 3.25], "float32"),
        X23,
        np.zeros(6, "int32"),
    )


def test_single_element_fills_are_concretized() -> None:
    check(
        simplify_expr,
        "fn (%x: float32) { %0 = ones_like(%x); zeros_like(%0) }",
        'fn (%x: float32) { zeros(shape=[], dtype="float32") }',
        np.array(2.5, "float32"),
    )
    # larger fills keep reading their argument (a constant fill would be folded to a large
    # constant)
    unchanged(simplify_expr, f"fn (%x: {F}) {{ zeros_like(%x) }}")


def test_arithmetic_identities_on_integers() -> None:
    check(
        simplify_expr,
        "fn (%x: Tensor[(2,), int32]) { %0 = multiply(%x, 1); add(0, %0) }",
        "fn (%x: Tensor[(2,), int32]) { %x }",
        np.array([3, -4], "int32"),
    )


def test_arithmetic_identities_that_do_not_apply() -> None:
    for body in (
        "subtract(0f, %x)",  # 0 - x is not x
        "divide(1f, %x)",
        "multiply(%x, 2f)",
        "add(%x, 1f)",
        "multiply(%x, %x)",
        # IEEE: -0.0 + 0.0 and -0.0 - (-0.0) are +0.0, so neither is -0.0 itself
        "add(%x, 0f)",
        "add(0f, %x)",
        "subtract(%x, -0f)",
    ):
        unchanged(simplify_expr, f"fn (%x: {F}) {{ {body} }}")


@pytest.mark.parametrize(("op", "zero"), [("add", 0.0), ("subtract", -0.0)])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bfloat16"])
def test_constant_zeros_that_are_not_identities_stay(op: str, zero: float, dtype: str) -> None:
    # (bfloat16's numpy kind is "V", not "f": its zeros are signed all the same)
    from relay.backend.runtime import numpy_dtype
    from relay.ir.expr import Call, Constant, Function, Op, Var

    x = Var("x", TensorType((36,), dtype))
    c = Constant(np.asarray(zero, numpy_dtype(dtype)))
    f = Function((x,), Call(Op.get(op), (x, c)))
    assert simplify_expr(f) is f
    kept = Constant(np.asarray(-zero, numpy_dtype(dtype)))  # x + (-0.0), x - 0.0: identities
    assert simplify_expr(Function((x,), Call(Op.get(op), (x, kept)))).body is x


@pytest.mark.parametrize("body", ["add(%x, 0f)", "add(0f, %x)", "subtract(%x, -0f)"])
def test_signed_zeros_through_additions_of_zero(body: str) -> None:
    # numpy's (IEEE's) -0.0 + 0.0 is +0.0, compiled and interpreted alike
    x = np.array([-0.0, 0.0, -1.0, np.nan] * 8, np.float32)
    exe = relay.build(relay.parse(f"def @main(%x: Tensor[(32,), float32]) {{ {body} }}"))
    with np.errstate(invalid="ignore"):
        want = x + np.float32(0.0)
    for got in (exe(x), exe.interpret(x)):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_identity_constant_that_broadcasts_x_up_is_kept() -> None:
    x = Var("x", TensorType((3,), "float32"))
    ones = Constant(np.ones((2, 3), "float32"))
    before = Function((x,), Call(Op.get("multiply"), (x, ones)))
    assert simplify_expr(before) is before
    # a constant of x's own shape is fine
    same = Function((x,), Call(Op.get("multiply"), (x, Constant(np.ones(3, "float32")))))
    relay.assert_structural_equal(simplify_expr(same), Function((x,), x))


def test_double_negation() -> None:
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ %0 = negative(%x); %1 = negative(%0); %2 = negative(%1); negative(%2) }}",
        f"fn (%x: {F}) {{ %x }}",
        X23,
    )
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ %0 = negative(%x); %1 = negative(%0); negative(%1) }}",
        f"fn (%x: {F}) {{ negative(%x) }}",
        X23,
    )


def test_negation_out_of_a_product_under_exp() -> None:
    # exp((-a) * b) -> exp(-(a * b)), bit for bit (the interpreter's results are compared
    # exactly), so that the exp's lowering folds the negation
    x, y = np.random.default_rng(1).standard_normal((2, 2, 3)).astype(np.float32)
    for op in ("exp", "fast_exp"):
        for before in (
            f"fn (%x: {F}, %y: {F}) {{ %0 = negative(%x); %1 = multiply(%0, %y); {op}(%1) }}",
            f"fn (%x: {F}, %y: {F}) {{ %0 = negative(%y); %1 = multiply(%x, %0); {op}(%1) }}",
        ):
            check(
                simplify_expr,
                before,
                f"fn (%x: {F}, %y: {F}) {{ %0 = multiply(%x, %y); %1 = negative(%0); {op}(%1) }}",
                x,
                y,
                rtol=0,
                atol=0,
            )
    # two negations cancel
    check(
        simplify_expr,
        f"fn (%x: {F}, %y: {F}) {{ %0 = negative(%x); %1 = negative(%y); exp(multiply(%0, %1)) }}",
        f"fn (%x: {F}, %y: {F}) {{ exp(multiply(%x, %y)) }}",
        x,
        y,
        rtol=0,
        atol=0,
    )


def test_negation_stays_in_a_product_elsewhere() -> None:
    # -(a * b) + c is what LLVM fuses into a multiply-add from -O1 on only: small kernels
    # (-O0) and large ones would round it differently, where (-a) * b + c agrees
    unchanged(
        simplify_expr,
        f"fn (%x: {F}, %y: {F}) {{ %0 = negative(%x); %1 = multiply(%0, %y); add(%1, %y) }}",
    )
    # and under exp, not when -a is broadcast: the negation would be of the larger tensor
    unchanged(
        simplify_expr,
        f"fn (%x: Tensor[(3), float32], %y: {F}) {{ %0 = negative(%x); exp(multiply(%0, %y)) }}",
    )


def test_reshape_of_reshape() -> None:
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ %0 = reshape(%x, newshape=[6]); reshape(%0, newshape=[3, -1]) }}",
        f"fn (%x: {F}) {{ reshape(%x, newshape=[3, -1]) }}",
        X23,
    )
    # 0 copies a dimension of the intermediate: the static result shape is used instead
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ %0 = reshape(%x, newshape=[3, 2]); reshape(%0, newshape=[0, -1, 1]) }}",
        f"fn (%x: {F}) {{ reshape(%x, newshape=[3, 2, 1]) }}",
        X23,
    )
    # back to the input's shape: nothing left
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ %0 = reshape(%x, newshape=[6]); reshape(%0, newshape=[2, 3]) }}",
        f"fn (%x: {F}) {{ %x }}",
        X23,
    )
    # an empty axis in the static result is a size: allowzero, or the 0 would copy
    e = "Tensor[(1, 0, 4), int32]"
    check(
        simplify_expr,
        f"fn (%x: {e}) {{ %0 = squeeze(%x, axis=[0]); expand_dims(%0, axis=1) }}",
        f"fn (%x: {e}) {{ reshape(%x, newshape=[0, 1, 4], allowzero=True) }}",
        np.zeros((1, 0, 4), np.int32),
    )


def test_reshape_to_the_same_type() -> None:
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ reshape(%x, newshape=[2, -1]) }}",
        f"fn (%x: {F}) {{ %x }}",
        X23,
    )
    # with a ? dimension the two shapes may differ at run time
    unchanged(simplify_expr, "fn (%x: Tensor[(?, 3), float32]) { reshape(%x, newshape=[-1, 3]) }")


def test_reshape_of_reshape_with_unknown_dims() -> None:
    # the outer newshape names sizes only, so it applies to x directly
    check(
        simplify_expr,
        """fn (%x: Tensor[(?, 6), float32]) {
          %0 = reshape(%x, newshape=[-1, 2, 3]); reshape(%0, newshape=[-1])
        }""",
        "fn (%x: Tensor[(?, 6), float32]) { reshape(%x, newshape=[-1]) }",
        rand(4, 6),
    )
    unchanged(
        simplify_expr,
        """fn (%x: Tensor[(?, 6), float32]) {
          %0 = reshape(%x, newshape=[-1, 2, 3]); reshape(%0, newshape=[0, -1])
        }""",
    )


def test_a_transposed_operand_of_a_product_becomes_its_flag() -> None:
    a, b = rand(4, 3), rand(5, 3)
    m, n = "%a: Tensor[(4, 3), float32]", "%b: Tensor[(5, 3), float32]"
    check(
        simplify_expr,
        f"fn ({m}, {n}) {{ %0 = transpose(%b); nn.matmul(%a, %0) }}",
        f"fn ({m}, {n}) {{ nn.matmul(%a, %b, transpose_b=True) }}",
        a,
        b,
    )
    check(  # both operands, one flag already set: it flips back
        simplify_expr,
        f"fn ({m}, {n}) {{ %0 = transpose(%a); %1 = transpose(%b, axes=[1, 0]); "
        "nn.matmul(%0, %1, transpose_a=True) }",
        f"fn ({m}, {n}) {{ nn.matmul(%a, %b, transpose_b=True) }}",
        a,
        b,
    )
    x, y = rand(2, 3, 4), rand(2, 5, 4)
    check(
        simplify_expr,
        f"fn ({X3}, %y: Tensor[(2, 5, 4), float32]) {{ "
        "%0 = transpose(%y, axes=[0, 2, 1]); nn.batch_matmul(%x, %0) }",
        f"fn ({X3}, %y: Tensor[(2, 5, 4), float32]) {{ "
        "nn.batch_matmul(%x, %y, transpose_b=True) }",
        x,
        y,
    )
    # a transpose that moves the batch axis is not a flag
    unchanged(
        simplify_expr,
        "fn (%x: Tensor[(3, 2, 4), float32], %y: Tensor[(2, 4, 5), float32]) { "
        "%0 = transpose(%x, axes=[1, 0, 2]); nn.batch_matmul(%0, %y) }",
    )


def test_transpose_of_transpose() -> None:
    x = rand(2, 3, 4)
    check(
        simplify_expr,
        f"fn ({X3}) {{ %0 = transpose(%x, axes=[1, 2, 0]); transpose(%0, axes=[2, 0, 1]) }}",
        f"fn ({X3}) {{ %x }}",
        x,
    )
    check(
        simplify_expr,
        f"fn ({X3}) {{ %0 = transpose(%x, axes=[1, 0, 2]); transpose(%0, axes=[0, -1, 1]) }}",
        f"fn ({X3}) {{ transpose(%x, axes=[1, 2, 0]) }}",
        x,
    )
    check(
        simplify_expr,
        f"fn ({X3}) {{ %0 = transpose(%x); transpose(%0) }}",
        f"fn ({X3}) {{ %x }}",
        x,
    )
    check(
        simplify_expr,
        f"fn ({X3}) {{ transpose(%x, axes=[0, 1, 2]) }}",
        f"fn ({X3}) {{ %x }}",
        x,
    )
    unchanged(simplify_expr, f"fn ({X3}) {{ transpose(%x, axes=[0, 2, 1]) }}")
    # (3, 3) keeps its type under a transpose, which is still not the identity
    unchanged(simplify_expr, "fn (%x: Tensor[(3, 3), float32]) { transpose(%x) }")


def test_expand_dims_and_squeeze() -> None:
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ %0 = expand_dims(%x, axis=1); squeeze(%0, axis=[1]) }}",
        f"fn (%x: {F}) {{ %x }}",
        X23,
    )
    y = "%y: Tensor[(2, 1, 3), float32]"
    check(
        simplify_expr,
        f"fn ({y}) {{ %0 = squeeze(%y, axis=[1]); expand_dims(%0, axis=-2) }}",
        f"fn ({y}) {{ %y }}",
        rand(2, 1, 3),
    )
    check(
        simplify_expr,
        f"fn (%x: {F}) {{ %0 = expand_dims(%x, axis=0, num_newaxis=2); squeeze(%0) }}",
        f"fn (%x: {F}) {{ %x }}",
        X23,
    )
    # not inverse: one reshape to the static result
    check(
        simplify_expr,
        f"fn ({y}) {{ %0 = squeeze(%y, axis=[1]); expand_dims(%0, axis=0) }}",
        f"fn ({y}) {{ reshape(%y, newshape=[1, 2, 3]) }}",
        rand(2, 1, 3),
    )


def test_cast_to_the_same_dtype() -> None:
    check(
        simplify_expr,
        f'fn (%x: {F}) {{ %0 = cast(%x, dtype="float32"); exp(%0) }}',
        f"fn (%x: {F}) {{ exp(%x) }}",
        X23,
    )
    unchanged(simplify_expr, f'fn (%x: {F}) {{ cast(%x, dtype="float16") }}')


def test_rules_combine_to_a_fixed_point() -> None:
    check(
        simplify_expr,
        f"""fn (%x: {F}) {{
          %0 = transpose(%x); %1 = multiply(%0, 1f); %2 = transpose(%1);
          %3 = negative(%2); %4 = add(-0f, %3); %5 = negative(%4);
          %6 = expand_dims(%5, axis=0); %7 = cast(%6, dtype="float32"); squeeze(%7, axis=[0])
        }}""",
        f"fn (%x: {F}) {{ %x }}",
        X23,
    )


def test_simplify_keeps_sharing() -> None:
    before = fn(
        f"fn (%x: {F}) {{ %0 = multiply(%x, 1f); %1 = exp(%0); %2 = exp(%1); add(%2, %1) }}"
    )
    after = simplify_expr(before)
    relay.assert_structural_equal(
        after, fn(f"fn (%x: {F}) {{ %0 = exp(%x); %1 = exp(%0); add(%1, %0) }}")
    )
    assert isinstance(after, Function) and isinstance(after.body, Call)
    outer = after.body.args[0]
    assert isinstance(outer, Call) and outer.args[0] is after.body.args[1]


def test_simplify_inside_lets_closures_and_branches() -> None:
    check(
        simplify_expr,
        f"""fn (%x: {F}, %c: bool) {{
          let %f = fn (%y: {F}) {{ multiply(%y, 1f) }};
          let %z = %f(%x);
          if (%c) {{ subtract(%z, 0f) }} else {{ negative(negative(%z)) }}
        }}""",
        f"""fn (%x: {F}, %c: bool) {{
          let %f = fn (%y: {F}) {{ %y }};
          let %z = %f(%x);
          if (%c) {{ %z }} else {{ %z }}
        }}""",
        X23,
        np.array(True),
    )


# -- SimplifyInference ----------------------------------------------------------------------------


def bn_args(c: int = 3) -> list[np.ndarray]:
    return [rand(c), rand(c), rand(c), rand(c, positive=True)]


def test_batch_norm() -> None:
    check(
        simplify_inference,
        f"fn ({X3}, {BN_PARAMS}) {{ %0 = nn.batch_norm(%x, %g, %b, %m, %v); %0.0 }}",
        f"""fn ({X3}, {BN_PARAMS}) {{
          %0 = expand_dims(%m, axis=1, num_newaxis=1);
          %1 = subtract(%x, %0);
          %2 = add(%v, 1e-05f);
          %3 = sqrt(%2);
          %4 = expand_dims(%3, axis=1, num_newaxis=1);
          %5 = divide(%1, %4);
          %6 = expand_dims(%g, axis=1, num_newaxis=1);
          %7 = multiply(%5, %6);
          %8 = expand_dims(%b, axis=1, num_newaxis=1);
          add(%7, %8)
        }}""",
        rand(2, 3, 4),
        *bn_args(),
        rtol=1e-5,
        atol=1e-5,
    )


def test_batch_norm_last_axis_without_center_and_scale_and_other_fields() -> None:
    p4 = BN_PARAMS.replace("(3,)", "(4,)")
    check(
        simplify_inference,
        f"""fn ({X3}, {p4}) {{
          %0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=-1, epsilon=0.001f, center=False, scale=False);
          (%0.0, %0.1, %0.2)
        }}""",
        f"""fn ({X3}, {p4}) {{
          %0 = subtract(%x, %m);
          %1 = add(%v, 0.001f);
          %2 = sqrt(%1);
          %3 = divide(%0, %2);
          (%3, %m, %v)
        }}""",
        rand(2, 3, 4),
        *bn_args(4),
        atol=1e-5,
    )


def test_batch_norm_float64() -> None:
    check(
        simplify_inference,
        """fn (%x: Tensor[(2, 3), float64], %p: Tensor[(3,), float64]) {
          %0 = nn.batch_norm(%x, %p, %p, %p, %p, axis=1, center=False);
          %0.0
        }""",
        """fn (%x: Tensor[(2, 3), float64], %p: Tensor[(3,), float64]) {
          %0 = subtract(%x, %p);
          %1 = add(%p, 1e-05f64);
          %2 = sqrt(%1);
          %3 = divide(%0, %2);
          multiply(%3, %p)
        }""",
        rand(2, 3, dtype="float64"),
        rand(3, dtype="float64", positive=True),
    )


def test_batch_norm_training_is_left_alone() -> None:
    # the training form normalizes by the batch's statistics and updates the moving ones:
    # none of its fields is the inference arithmetic, nor moving_mean / moving_var
    unchanged(
        simplify_inference,
        f"""fn ({X3}, {BN_PARAMS}) {{
          %0 = nn.batch_norm(%x, %g, %b, %m, %v, training=True, momentum=0.2f);
          (%0.0, %0.1, %0.2)
        }}""",
    )
    # beside an inference call, which is rewritten
    check(
        simplify_inference,
        f"""fn ({X3}, {BN_PARAMS}) {{
          %0 = nn.batch_norm(%x, %g, %b, %m, %v, training=True);
          %1 = nn.batch_norm(%0.0, %g, %b, %0.1, %0.2, scale=False);
          (%1.0, %0.2)
        }}""",
        f"""fn ({X3}, {BN_PARAMS}) {{
          %0 = nn.batch_norm(%x, %g, %b, %m, %v, training=True);
          %1 = %0.1;
          %2 = expand_dims(%1, axis=1, num_newaxis=1);
          %3 = subtract(%0.0, %2);
          %4 = %0.2;
          %5 = add(%4, 1e-05f);
          %6 = sqrt(%5);
          %7 = expand_dims(%6, axis=1, num_newaxis=1);
          %8 = divide(%3, %7);
          %9 = expand_dims(%b, axis=1, num_newaxis=1);
          (add(%8, %9), %0.2)
        }}""",
        rand(2, 3, 4),
        *bn_args(),
        rtol=1e-5,
        atol=1e-5,
    )


def test_dropout() -> None:
    check(
        simplify_inference,
        f"fn (%x: {F}) {{ %0 = nn.dropout(%x, rate=0.3f); (%0.0, %0.1) }}",
        f"fn (%x: {F}) {{ %0 = ones_like(%x); (%x, %0) }}",
        X23,
    )


def test_layer_norm() -> None:
    p4 = "%g: Tensor[(4,), float32], %b: Tensor[(4,), float32]"
    check(
        simplify_inference,
        f"fn ({X3}, {p4}) {{ nn.layer_norm(%x, %g, %b) }}",
        f"""fn ({X3}, {p4}) {{
          %0 = mean(%x, axis=[2], keepdims=True);
          %1 = subtract(%x, %0);
          %2 = variance(%x, %0, axis=[2], keepdims=True);
          %3 = add(%2, 1e-05f);
          %4 = sqrt(%3);
          %5 = divide(%1, %4);
          %6 = multiply(%5, %g);
          add(%6, %b)
        }}""",
        rand(2, 3, 4),
        rand(4),
        rand(4),
        rtol=1e-4,
        atol=1e-5,
    )
    p3 = "%g: Tensor[(3,), float32], %b: Tensor[(3,), float32]"
    check(
        simplify_inference,
        f"fn ({X3}, {p3}) {{ nn.layer_norm(%x, %g, %b, axis=1, epsilon=0.01f, center=False) }}",
        f"""fn ({X3}, {p3}) {{
          %0 = mean(%x, axis=[1], keepdims=True);
          %1 = subtract(%x, %0);
          %2 = variance(%x, %0, axis=[1], keepdims=True);
          %3 = add(%2, 0.01f);
          %4 = sqrt(%3);
          %5 = divide(%1, %4);
          %6 = expand_dims(%g, axis=1, num_newaxis=1);
          multiply(%5, %6)
        }}""",
        rand(2, 3, 4),
        rand(3),
        rand(3),
        rtol=1e-4,
        atol=1e-5,
    )


def test_simplify_inference_leaves_other_programs() -> None:
    unchanged(simplify_inference, f"fn (%x: {F}) {{ nn.relu(%x) }}")


# -- CanonicalizeOps ------------------------------------------------------------------------------


def test_bias_add() -> None:
    b3 = "%b: Tensor[(3,), float32]"
    check(
        canonicalize_ops,
        f"fn ({X3}, {b3}) {{ nn.bias_add(%x, %b) }}",
        f"fn ({X3}, {b3}) {{ %0 = expand_dims(%b, axis=1, num_newaxis=1); add(%x, %0) }}",
        rand(2, 3, 4),
        rand(3),
    )
    b4 = "%b: Tensor[(4,), float32]"
    check(
        canonicalize_ops,
        f"fn ({X3}, {b4}) {{ nn.bias_add(%x, %b, axis=-1) }}",
        f"fn ({X3}, {b4}) {{ add(%x, %b) }}",
        rand(2, 3, 4),
        rand(4),
    )
    b2 = "%b: Tensor[(2,), float32]"
    check(
        canonicalize_ops,
        f"fn ({X3}, {b2}) {{ nn.bias_add(%x, %b, axis=0) }}",
        f"fn ({X3}, {b2}) {{ %0 = expand_dims(%b, axis=1, num_newaxis=2); add(%x, %0) }}",
        rand(2, 3, 4),
        rand(2),
    )


# -- DivToMul -------------------------------------------------------------------------------------


def test_div_to_mul() -> None:
    check(
        div_to_mul,
        f"fn (%x: {F}) {{ divide(%x, 4f) }}",
        f"fn (%x: {F}) {{ multiply(%x, 0.25f) }}",
        X23,
    )
    check(
        div_to_mul,
        "fn (%x: Tensor[(2,), float64]) { divide(%x, 3f64) }",
        "fn (%x: Tensor[(2,), float64]) { multiply(%x, 0.3333333333333333f64) }",
        rand(2, dtype="float64"),
        rtol=1e-15,
    )


def test_div_to_mul_with_a_tensor_constant() -> None:
    x = Var("x", TensorType((2, 3), "float32"))
    c = Constant(np.array([2.0, -4.0, 0.5], "float32"))
    after = div_to_mul(Function((x,), Call(Op.get("divide"), (x, c))))
    assert isinstance(after, Function) and isinstance(after.body, Call)
    assert after.body.op is Op.get("multiply")
    recip = after.body.args[1]
    assert isinstance(recip, Constant)
    np.testing.assert_array_equal(recip.data, np.array([0.5, -0.25, 2.0], "float32"))


def test_div_to_mul_leaves_what_it_cannot_invert() -> None:
    for body in (
        "divide(%x, 0f)",
        "divide(%x, -0f)",
        "divide(%x, %x)",
        "divide(2f, %x)",
        "divide(%x, 1e38f)",  # the reciprocal would be subnormal
    ):
        unchanged(div_to_mul, f"fn (%x: {F}) {{ {body} }}")
    unchanged(div_to_mul, "fn (%x: Tensor[(2,), int32]) { divide(%x, 2) }")
    unchanged(div_to_mul, "fn (%x: Tensor[(2,), float16]) { divide(%x, 1e-05f16) }")  # 1e5 > max


def test_reciprocal() -> None:
    np.testing.assert_array_equal(reciprocal(np.array([2.0, 8.0], "float32")), [0.5, 0.125])
    assert reciprocal(np.array([np.inf], "float32")) is None
    assert reciprocal(np.array([np.nan], "float32")) is None
    assert reciprocal(np.array(2, "int32")) is None
    assert reciprocal(np.array(0.0, "float16")) is None


# -- the passes -----------------------------------------------------------------------------------

PASSES = [SimplifyExpr, SimplifyInference, CanonicalizeOps, DivToMul]


def test_pass_info() -> None:
    infos = {p().name: (p().opt_level, p().required) for p in PASSES}
    assert infos == {
        "SimplifyExpr": (0, ("InferType",)),
        "SimplifyInference": (0, ("InferType",)),
        "CanonicalizeOps": (3, ("InferType",)),
        "DivToMul": (0, ()),
    }


MODULE = f"""#[version = "0.0.5"]
def @helper(%y: {F}) -> {F} {{
  %0 = multiply(%y, 1f);
  divide(%0, 2f)
}}
def @main(%x: {F}, %b: Tensor[(3,), float32]) -> {F} {{
  %0 = @helper(%x);
  %1 = nn.dropout(%0);
  %2 = nn.bias_add(%1.0, %b);
  negative(negative(%2))
}}
"""


def test_passes_on_a_module() -> None:
    mod = relay.parse(MODULE)
    text = mod.astext()
    args = (X23, rand(3))
    want = relay.interpret(mod, *args)
    with PassContext(opt_level=3):
        out = Sequential([p() for p in PASSES])(mod)
    assert mod.astext() == text  # the input is left alone
    InferType()(out)
    np.testing.assert_allclose(relay.interpret(out, *args), want, rtol=1e-6)
    expected = relay.parse(
        f"""#[version = "0.0.5"]
def @helper(%y: {F}) -> {F} {{
  multiply(%y, 0.5f)
}}
def @main(%x: {F}, %b: Tensor[(3,), float32]) -> {F} {{
  %0 = @helper(%x);
  add(%0, %b)
}}
"""
    )
    relay.assert_structural_equal(out, expected)


def test_pass_returns_its_input_when_nothing_applies() -> None:
    mod = relay.parse(f'#[version = "0.0.5"]\ndef @main(%x: {F}) -> {F} {{ exp(%x) }}\n')
    for p in PASSES:
        assert p()(mod).function("main") is mod.function("main")


def test_primitive_functions_are_left_alone() -> None:
    mod = relay.parse(f'#[version = "0.0.5"]\ndef @main(%x: {F}) -> {F} {{ multiply(%x, 1f) }}\n')
    prim = mod.function("main").with_attr("Primitive", 1)
    mod.update_func(mod.get_global_var("main"), prim)
    assert SimplifyExpr()(mod).function("main") is prim


# -- random programs -----------------------------------------------------------------------------


def close(a: object, b: object, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(y, x, rtol=rtol, atol=atol)


@pytest.mark.parametrize("make", PASSES, ids=lambda p: p.__name__)
@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_passes_keep_random_programs(make: Callable[[], object], program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    with PassContext(opt_level=3):
        out = Sequential([make()])(program.module)  # type: ignore[list-item]
    InferType()(out)
    close(before, relay.interpret(out, *program.args))


def _call(name: str, *args: Expr, **attrs: object) -> Call:
    d = get_op(name)
    return Call(d.op, args, d.validate_attrs(attrs))


def _const(data: np.ndarray) -> Constant:
    return Constant(np.asarray(data, "float32"))


# Wrappers around a (2, 3) float32 value that keep its type; each one is simplified away
# by one of the passes (or, for divide, rewritten). They take a random draw function.
Wrap = Callable[[DrawFn, Expr], Expr]


def _floats(draw: DrawFn, shape: tuple[int, ...], lo: float = -2, hi: float = 2) -> np.ndarray:
    n = int(np.prod(shape))
    vals = draw(st.lists(st.floats(lo, hi, width=32), min_size=n, max_size=n))
    return np.asarray(vals, "float32").reshape(shape)


WRAPPERS: dict[str, Wrap] = {
    "mul1": lambda d, e: _call("multiply", e, const(1.0)),
    "1mul": lambda d, e: _call("multiply", const(1.0), e),
    "add0": lambda d, e: _call("add", e, const(0.0)),
    "0add": lambda d, e: _call("add", const(0.0), e),
    "sub0": lambda d, e: _call("subtract", e, const(0.0)),
    "div1": lambda d, e: _call("divide", e, const(1.0)),
    "negneg": lambda d, e: _call("negative", _call("negative", e)),
    "transpose2": lambda d, e: _call("transpose", _call("transpose", e)),
    "reshape2": lambda d, e: _call(
        "reshape", _call("reshape", e, newshape=[3, 2]), newshape=[2, 3]
    ),
    "expand_squeeze": lambda d, e: _call("squeeze", _call("expand_dims", e, axis=0), axis=[0]),
    "cast": lambda d, e: _call("cast", e, dtype="float32"),
    "div": lambda d, e: _call("divide", e, _const(d(st.sampled_from([0.5, 2.0, -4.0, 0.25, 8.0])))),
    "batch_norm": lambda d, e: TupleGetItem(
        _call(
            "nn.batch_norm",
            e,
            _const(_floats(d, (3,))),
            _const(_floats(d, (3,))),
            _const(_floats(d, (3,))),
            _const(_floats(d, (3,), 0.5, 2)),
            axis=d(st.sampled_from([1, -1])),
            center=d(st.booleans()),
            scale=d(st.booleans()),
        ),
        0,
    ),
    "dropout": lambda d, e: TupleGetItem(_call("nn.dropout", e), 0),
    "layer_norm": lambda d, e: _call(
        "nn.layer_norm", e, _const(_floats(d, (3,))), _const(_floats(d, (3,))), epsilon=0.1
    ),
    "bias_add": lambda d, e: _call("nn.bias_add", e, _const(_floats(d, (3,))), axis=1),
}
# Ops each pass removes entirely from such programs (the random part uses none of them).
REMOVED = {
    "SimplifyExpr": ["transpose(", "reshape(", "squeeze(", "expand_dims(", "cast("],
    "SimplifyInference": ["nn.batch_norm", "nn.dropout", "nn.layer_norm"],
    "CanonicalizeOps": ["nn.bias_add"],
    "DivToMul": [],
}


@st.composite
def wrapped_programs(draw: DrawFn) -> TypedProgram:
    """A random program whose ``main`` body is wrapped in random simplifiable operations."""
    program = draw(well_typed_programs(max_depth=3))
    mod = program.module.copy()
    main = mod.function("main")
    body = main.body
    for name in draw(st.lists(st.sampled_from(sorted(WRAPPERS)), min_size=1, max_size=6)):
        body = WRAPPERS[name](draw, body)
    mod.update_func(
        mod.get_global_var("main"),
        Function(main.params, body, main.ret_type, main.type_params, main.attrs),
    )
    return TypedProgram(mod, program.args)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(program=wrapped_programs())
def test_passes_on_programs_with_simplifiable_parts(program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    mod = program.module
    for make in PASSES:
        with PassContext(opt_level=3):
            mod = Sequential([make()])(mod)
        InferType()(mod)
        close(before, relay.interpret(mod, *program.args), rtol=1e-3, atol=1e-3)
        assert not re.search(r"divide\([^()]*, [-0-9.e]+f\)", mod.astext()) or make is not DivToMul
        text = mod.function("main").astext()
        for op in REMOVED[make().name]:
            assert op not in text, (make().name, op, text)


# -- deep programs --------------------------------------------------------------------------------


E = TypeVar("E", bound=Expr)


def typed(e: E, ty: Type) -> E:
    e.set_checked_type(ty)
    return e


def test_simplify_expr_on_100000_bindings() -> None:
    """``let``s alternating ``add(v, 1f)`` and ``multiply(negative(negative(v)), 1f)``; types
    are recorded while building (inference itself takes seconds at this size)."""
    n = 100_000
    t, s = TensorType((2,), "float32"), TensorType((), "float32")
    x = typed(Var("x", t), t)
    add, mul, neg = Op.get("add"), Op.get("multiply"), Op.get("negative")
    one = typed(const(1.0), s)
    vs = [typed(Var(f"v{i}"), t) for i in range(n)]
    body: Expr = vs[-1]
    for i in reversed(range(n)):
        prev = vs[i - 1] if i else x
        if i % 2 == 0:
            value = typed(Call(add, (prev, one)), t)
        else:
            twice = typed(Call(neg, (typed(Call(neg, (prev,)), t),)), t)
            value = typed(Call(mul, (twice, one)), t)
        body = typed(Let(vs[i], value, body), t)
    main = typed(Function((x,), body, t), FuncType((t,), t))
    mod = Module()
    mod.add("main", main)
    limit = sys.getrecursionlimit()
    out = SimplifyExpr()(mod)
    assert sys.getrecursionlimit() == limit
    e = out.function("main").body
    count = 0
    while isinstance(e, Let):
        assert isinstance(e.value, Var) or (isinstance(e.value, Call) and e.value.op is add)
        count += 1
        e = e.body
    assert count == n
    np.testing.assert_allclose(relay.interpret(out, np.zeros(2, "float32")), [50_000, 50_000])
