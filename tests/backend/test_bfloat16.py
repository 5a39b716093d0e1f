"""bfloat16 kernels against the reference interpreter, bit for bit.

TVM computes bfloat16 in float32 and legalizes the conversions itself; where it drops or
misses one, a kernel silently computes something else. Each case here was found that way
(fuzzing reviews, 2026-11-29)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import relay

pytestmark = pytest.mark.tvm

BF16 = ml_dtypes.bfloat16
_RNG = np.random.default_rng(11)
ROW = np.array([[0, 1, 2, 3, -2, 1.5, 7, 100]], BF16)
X2 = _RNG.standard_normal((4, 20)).astype(BF16)
X4 = _RNG.standard_normal((1, 3, 6, 6)).astype(BF16)


def _agree(text: str, *args: Any) -> None:
    """The program compiled at opt levels 0 and 3 gives the interpreter's result exactly."""
    mod = relay.parse(text)
    want = np.asarray(relay.interpret(mod, *args))
    for opt_level in (0, 3):
        got = np.asarray(relay.build(mod, opt_level=opt_level)(*args))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(
            got.astype(np.float64), want.astype(np.float64), err_msg=f"-O{opt_level}: {text}"
        )


@pytest.mark.parametrize(
    "body",
    [
        "floor(subtract(%x, 0.001bf16))",  # 1 - 0.001 is 1 in bfloat16: floor 1, not 0
        "subtract(add(%x, 0.001bf16), %x)",  # 0, not 0.000999
        'cast(tanh(%x), dtype="float32")',  # tanh's bfloat16 value, not float32's digits
        'cast(sqrt(%x), dtype="float32")',
        'cast(multiply(%x, %x), dtype="float32")',
        "less(multiply(%x, 3bf16), add(%x, %x))",
    ],
)
def test_values_computed_in_a_kernel_are_rounded_to_bfloat16(body: str) -> None:
    # an elementwise result is rounded before its conversion to bfloat16, which TVM drops
    # where a fused kernel reads the value back (elemwise._map)
    x = np.array([[1, 2, 4, 3, 0.3, 5.5, 7.7, 1.1]], BF16)
    _agree(f"def @main(%x: Tensor[(1, 8), bfloat16]) {{ {body} }}", x)


def test_an_integer_converted_to_bfloat16_is_rounded_once() -> None:
    x = np.array([[257, 1000001, 3, -513]], np.int32)
    _agree(
        "def @main(%x: Tensor[(1, 4), int32]) "
        '{ cast(cast(%x, dtype="bfloat16"), dtype="float32") }',
        x,
    )


@pytest.mark.parametrize(
    "body",
    [
        'power(cast(%r, dtype="int32"), 2)',  # was the bits of r squared
        'power(cast(%r, dtype="int64"), 1i64)',
        'argmax(cast(%r, dtype="int32"), axis=[1])',  # took -2 for the largest
        "argmin(exp(%r), axis=[1])",
        "argmax(add(%r, %r), axis=[1])",
        '%0 = cast(clip(%r, a_min=-128f, a_max=127f), dtype="int8"); power(%0, 2i8)',
    ],
)
def test_tuple_reductions_read_bfloat16_values_converted(body: str) -> None:
    # integer power and argmax reduce several values at once, and TVM's legalization misses
    # a bfloat16 conversion inlined there: the values come materialized
    _agree(f"def @main(%r: Tensor[(1, 8), bfloat16]) {{ {body} }}", ROW)


@pytest.mark.parametrize(
    "body",
    [
        "nn.softmax(%x)",  # was NaN everywhere
        "nn.log_softmax(%x)",  # was -inf
        "nn.softmax(add(%x, %x))",
        "logsumexp(%x, axis=[1])",  # was inf
        "sum(%x, axis=[1])",
        "prod(%x, axis=[1])",
        "mean(%x, axis=[1])",
        "max(multiply(%x, 3bf16), axis=[1])",
        "nn.gelu(%x)",
        "nn.layer_norm(%x, %g, %g)",
    ],
)
def test_reductions_and_normalizations_of_bfloat16(body: str) -> None:
    g = np.linspace(0.5, 1.5, 20).astype(BF16)
    sig = "%x: Tensor[(4, 20), bfloat16], %g: Tensor[(20,), bfloat16]"
    _agree(f"def @main({sig}) {{ {body} }}", X2, g)


@pytest.mark.parametrize(
    "body",
    [
        "nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2])",  # was a compile error
        "nn.avg_pool2d(%x, pool_size=[2, 2], strides=[2, 2])",
        "nn.global_avg_pool2d(%x)",
    ],
)
def test_pooling_of_bfloat16(body: str) -> None:
    _agree(f"def @main(%x: Tensor[(1, 3, 6, 6), bfloat16]) {{ {body} }}", X4)


def test_the_reference_sums_bfloat16_in_float32() -> None:
    # ml_dtypes' own sum rounds each step to bfloat16 (3 bfloat16 steps off on 20 values);
    # the reference accumulates in float32 and rounds once, as the kernels do
    mod = relay.parse("def @main(%x: Tensor[(4, 20), bfloat16]) { sum(%x, axis=[1]) }")
    want = X2.astype(np.float64).sum(axis=1).astype(np.float32).astype(BF16)
    np.testing.assert_array_equal(relay.interpret(mod, X2), want)


@pytest.mark.parametrize(
    ("sig", "body", "args"),
    [
        (
            "%x: Tensor[(1, 3, 6, 6), bfloat16], %w: Tensor[(2, 3, 3, 3), bfloat16]",
            "nn.conv2d(%x, %w, padding=[1, 1])",
            (X4, _RNG.standard_normal((2, 3, 3, 3)).astype(BF16)),
        ),
        (
            "%x: Tensor[(4, 20), bfloat16], %w: Tensor[(5, 20), bfloat16]",
            "nn.dense(%x, %w, units=None)",
            (X2, _RNG.standard_normal((5, 20)).astype(BF16)),
        ),
    ],
)
def test_the_reference_runs_bfloat16_products(sig: str, body: str, args: tuple[Any, ...]) -> None:
    # the interpreter rejected bfloat16 ("needs numeric tensors") though the types check
    mod = relay.parse(f"def @main({sig}) {{ {body} }}")
    want = relay.interpret(mod, *args)
    assert want.dtype == BF16
    got = relay.build(mod)(*args)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2)


@pytest.mark.parametrize("axis", [0, 1])
def test_a_bfloat16_stage_materialized_for_a_reduction_is_read_as_float32(axis: int) -> None:
    # TVM stores a bfloat16 stage materialized in a kernel as float32: reading its bits as
    # 16 (as an input's) was an invalid bitcast (found by the fused-program tests)
    c = np.linspace(-2, 2, 6).reshape(6, 1).astype(BF16)
    body = f"max(tanh(negative(%c)), axis=[{axis}])"
    _agree(f"def @main(%c: Tensor[(6, 1), bfloat16]) {{ {body} }}", c)


@pytest.mark.parametrize(
    "body",
    [
        "nn.leaky_relu(%b, alpha=0.1f)",  # -1 gave -0.1, not bfloat16's -0.10009766
        "nn.prelu(%b, %a, axis=1)",
        "nn.gelu(%b)",
    ],
)
def test_results_of_the_nn_rules_are_rounded_to_bfloat16(body: str) -> None:
    # the nn rules' own conversions round too (common.to_bfloat16; found by a fuzzing review)
    x = np.array([[-1.0], [-2.375], [0.5], [3.0], [-0.7]], np.float32)
    a = np.array([0.1], BF16)
    _agree(
        "def @main(%x: Tensor[(5, 1), float32], %a: Tensor[(1,), bfloat16]) { "
        f'%b = cast(%x, dtype="bfloat16"); cast({body}, dtype="float32") }}',
        x,
        a,
    )


@pytest.mark.parametrize("rows", [1, 4, 17])
def test_a_bfloat16_result_computed_with_a_binding_compiles(rows: int) -> None:
    # TVM's conversion of a bfloat16 result for its store reads the value three times: a
    # Let in it (floor_mod's) was bound twice and rejected by the vectorizer (found by a
    # fuzzing review, with symbolic rows)
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 16)).astype(BF16)
    c = (rng.standard_normal((rows, 1)) * 5).astype(np.float32)
    r = rng.integers(1, 5, (1, 16)).astype(np.int32)
    _agree(
        "def @main[n: Shape](%x: Tensor[(n, 16), bfloat16], %c: Tensor[(n, 1), float32], "
        '%r: Tensor[(1, 16), int32]) { %v0 = cast(%r, dtype="float32"); '
        "%v1 = floor_mod(%c, %v0); where(less_equal(%v1, %v0), %x, negative(%x)) }",
        x,
        c,
        r,
    )


def _kernel_script(text: str) -> str:
    """The single kernel of ``text`` (built at opt level 3), lowered, before scheduling."""
    from relay.backend.lower import lower_primitive
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Function

    exe = relay.build(relay.parse(text), opt_level=3)
    (prim,) = [
        e
        for e in sub_expressions(exe.module["main"].body)
        if isinstance(e, Function) and e.attrs.get("Primitive")
    ]
    return str(lower_primitive(prim).prim_func.script())


def test_operators_exact_in_bfloat16_do_not_round() -> None:
    # negative, abs, maximum, floor...: their result is a bfloat16 value already; each
    # rounding is a binding once lowered (relay.backend.lower.MAX_ROUNDINGS)
    x = "%x: Tensor[(64,), bfloat16]"
    body = "floor(maximum(abs(negative(%x)), %x))"
    assert _kernel_script(f"def @main({x}) {{ {body} }}").count("relay_round_bf16") == 0
    body = "exp(negative(exp(negative(%x))))"
    assert _kernel_script(f"def @main({x}) {{ {body} }}").count("relay_round_bf16") == 2
    v = np.linspace(-3, 3, 64).astype(BF16)
    _agree(f"def @main({x}) {{ floor(maximum(abs(negative(%x)), %x)) }}", v)
    _agree(f"def @main({x}) {{ {body} }}", v)


@pytest.mark.parametrize(
    ("step", "depth", "barriers"),
    [
        # TVM's LLVM code generator simplifies each bound value as it binds it, and a
        # rounding's value holds the roundings before it: 8 nested roundings took 52 s
        # to compile, a product reading the tanh before it twice 3 deep 99 s
        ("exp(negative(exp(X)))", 4, 1),  # two roundings a step (negative has none)
        ("tanh(multiply(X, X))", 4, 1),
        ("exp(subtract(X, %x))", 4, 1),
        # one rounding a step, reading the one before twice: the expanded roundings double
        # each step, and a value holding 3 is read twice materialized (expansion.py)
        ("add(X, X)", 9, 4),
    ],
)
def test_nested_bfloat16_roundings_are_materialized(step: str, depth: int, barriers: int) -> None:
    from relay.backend.lower import BARRIER, MAX_ROUNDINGS

    assert MAX_ROUNDINGS == 4
    lines = [f"  %v{i + 1} = {step.replace('X', f'%v{i}')};" for i in range(depth)]
    body = "\n".join(lines).replace("%v0", "%x")
    text = f"def @main(%x: Tensor[(64,), bfloat16]) {{\n{body}\n  %v{depth}\n}}"
    assert _kernel_script(text).count(f'sblock("{BARRIER}') == barriers
    v = np.linspace(-1, 1, 64).astype(BF16)
    _agree(text, v)


def test_a_sigmoid_repeating_rounded_values_reads_them_materialized() -> None:
    # a bfloat16 sigmoid cannot bind its argument and reads it three times; the roundings
    # in it count as selects (relay.backend.expansion): 3.6 s to compile before, one
    # barrier now (found by a fuzzing review)
    from relay.backend.lower import BARRIER

    t = "Tensor[(4, 20), bfloat16]"
    body = "%0 = sigmoid(multiply(%x, %y)); sigmoid(multiply(%0, %y))"
    text = f"def @main(%x: {t}, %y: {t}) {{ {body} }}"
    assert _kernel_script(text).count(f'sblock("{BARRIER}') == 1
    _agree(text, X2, X2[::-1])
