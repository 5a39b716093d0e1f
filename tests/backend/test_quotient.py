"""Products of two quotients computed with one division (relay.op.lowering.quotient)."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
import pytest

import relay
from relay.backend.target import Target
from relay.op.lowering.quotient import FLOAT32_MAX, FLOAT32_MIN_NORMAL, Quotient, mergeable
from relay.testing.lowering import default_target

pytestmark = pytest.mark.tvm

T = "Tensor[(4, 300), float32]"
SIGMOID = "divide(1f, add(1f, exp(negative(%b))))"  # the sigmoid written out


def _kernel(body: str, target: Target) -> tuple[str, Any]:
    """The kernel of the program ``body`` of ``%a``, ``%b`` built for ``target``, before
    scheduling, and the executable."""
    from relay.backend.lower import lower_primitive
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Function

    mod = relay.parse(f"def @main(%a: {T}, %b: {T}) {{ {body} }}")
    exe = relay.build(mod, target=target)
    (prim,) = [
        e
        for e in sub_expressions(exe.module["main"].body)
        if isinstance(e, Function) and e.attrs.get("Primitive")
    ]
    lowered = lower_primitive(prim, fast_math=bool(target.fast_math))
    return lowered.prim_func.script(), exe


def _divisions(script: str) -> int:
    return script.count(" / ")


def _product_divides(script: str) -> bool:
    """Whether the kernel's product (its result, ``multiply``) divides."""
    (line,) = [ln for ln in script.splitlines() if ln.strip().startswith("multiply[")]
    return " / " in line


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.uniform(-12, 12, (4, 300)).astype(np.float32)
    b = rng.uniform(-100, 100, (4, 300)).astype(np.float32)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 7.99, 8.2, -30.0, 1e-30, -87.0, -90.0]
    a[0, : len(specials)] = specials
    b[1, : len(specials)] = specials
    a[2, : len(specials)] = 1.0
    b[2, : len(specials)] = specials
    return a, b


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x.astype(np.float64)))


MERGED = [
    ("multiply(tanh(%a), sigmoid(%b))", lambda a, b: _tanh(a) * _sigmoid(b)),
    ("multiply(sigmoid(%b), tanh(%a))", lambda a, b: _tanh(a) * _sigmoid(b)),
    (f"multiply(tanh(%a), {SIGMOID})", lambda a, b: _tanh(a) * _sigmoid(b)),
    (
        "multiply(divide(1f, add(exp(negative(%b)), 1f)), fast_tanh(%a))",
        lambda a, b: _tanh(a) * _sigmoid(b),
    ),
    ("multiply(tanh(%a), tanh(%b))", lambda a, b: _tanh(a) * _tanh(b)),
    ("multiply(sigmoid(%a), sigmoid(%b))", lambda a, b: _sigmoid(a) * _sigmoid(b)),
]


@pytest.mark.parametrize(("body", "exact"), MERGED, ids=[m[0] for m in MERGED])
def test_a_product_of_two_quotients_divides_once(body: str, exact: object) -> None:
    script, exe = _kernel(body, default_target())
    assert _divisions(script) == 1, script
    assert _product_divides(script)
    # the quotients are computed in the product: their stages are gone
    stages = re.findall(r'sblock\("([a-z_0-9]+)"\)', script)
    assert not {"tanh", "fast_tanh", "sigmoid", "divide"} & set(stages)
    a, b = _inputs()
    got = exe(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = exact(a, b)  # type: ignore[operator]
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    err = np.abs(got[ok] - want[ok])
    # each approximation's bound (tanh 3.2e-7 absolute and relative, sigmoid 1.8e-7
    # relative), two roundings, and tanh's clamp (0.9999998 from 7.99 on)
    assert err.max() < 1e-6
    normal = np.abs(want[ok]) > 7.7e-34  # (2 ** 16 times the least normal float32)
    assert (err[normal] / np.abs(want[ok][normal])).max() < 1e-6
    # (and what the reference interpreter computes, in float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(got, exe.interpret(a, b), rtol=1e-6, atol=1e-30)


FUSED_DENOMINATORS = {
    "multiply(tanh(%a), sigmoid(%b))": "T.relay_llvm_fma(e, d, d)",
    "multiply(sigmoid(%b), tanh(%a))": "T.relay_llvm_fma(e, d, d)",
    f"multiply(tanh(%a), {SIGMOID})": "T.relay_llvm_fma(exp[v_i0, v_i1], d, d)",
    "multiply(divide(1f, add(exp(negative(%b)), 1f)), fast_tanh(%a))": (
        "T.relay_llvm_fma(exp[v_i0, v_i1], d, d)"
    ),
    "multiply(sigmoid(%a), sigmoid(%b))": "T.relay_llvm_fma(e_1, d, d)",
}


@pytest.mark.parametrize("body", FUSED_DENOMINATORS)
def test_a_denominator_one_plus_a_value_is_one_multiply_add(body: str) -> None:
    # (1 + e) * d is e * d + d: one operation and one rounding where there were two
    script, _ = _kernel(body, Target("llvm", fast_math=True))
    (line,) = [ln for ln in script.splitlines() if ln.strip().startswith("multiply[")]
    assert FUSED_DENOMINATORS[body] in line


@pytest.mark.parametrize("mcpu", ["sandybridge", "nehalem"])
def test_a_cpu_without_fma_calls_no_libm(mcpu: str) -> None:
    # the denominators' multiply-add is llvm.fma only where AVX-512 guarantees FMA: on older
    # CPUs llvm.fma is libm's fmaf called per lane (found by a fuzzing review)
    from relay.backend.compiler import compile_functions
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Function

    target = Target("llvm", mcpu=mcpu, fast_math=True)
    t = "Tensor[(1024, 64), float32]"
    body = f"multiply(tanh(%a), {SIGMOID})"
    exe = relay.build(relay.parse(f"def @main(%a: {t}, %b: {t}) {{ {body} }}"), target=target)
    (prim,) = [
        e
        for e in sub_expressions(exe.module["main"].body)
        if isinstance(e, Function) and e.attrs.get("Primitive")
    ]
    lib, _ = compile_functions([prim], target)
    assert "fmaf" not in lib.module.mod.inspect_source("asm")
    a, b = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _tanh(a) * _sigmoid(b)
    np.testing.assert_allclose(
        relay.build(relay.parse(f"def @main(%a: {T}, %b: {T}) {{ {body} }}"), target=target)(a, b),
        want,
        rtol=1e-6,
        atol=1e-30,
    )


def test_other_denominators_multiply() -> None:
    script, _ = _kernel("multiply(tanh(%a), tanh(%b))", Target("llvm", fast_math=True))
    (line,) = [ln for ln in script.splitlines() if ln.strip().startswith("multiply[")]
    assert ", d, d)" not in line
    two = "multiply(tanh(%a), divide(1f, add(2f, exp(negative(%b)))))"
    script, _ = _kernel(two, Target("llvm", fast_math=True))
    assert _divisions(script) == 1 and "d, d)" not in script


def test_ew_chain_adds_only_in_its_exps() -> None:
    # ew_chain's loop divides once, and its denominator's 1 + e is in a multiply-add: the
    # only additions left are each exp's rounding (AVX-512 CPU, compiled only)
    from relay.backend.compiler import compile_functions
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Function

    body = (
        "subtract(multiply(tanh(add(multiply(%a, %b), 1f)), divide(1f, add(1f, "
        "exp(negative(%a))))), exp(negative(multiply(%b, %b))))"
    )
    avx512 = Target("llvm", mcpu="skylake-avx512", fast_math=True)
    t = "Tensor[(1024, 64), float32]"
    exe = relay.build(relay.parse(f"def @main(%a: {t}, %b: {t}) {{ {body} }}"), target=avx512)
    (prim,) = [
        e
        for e in sub_expressions(exe.module["main"].body)
        if isinstance(e, Function) and e.attrs.get("Primitive")
    ]
    lib, _ = compile_functions([prim], avx512)
    ops = re.findall(r"^\s+(v[a-z0-9]+)\s", lib.module.mod.inspect_source("asm"), re.M)
    loops = ops.count("vdivps")
    assert loops >= 1
    assert ops.count("vaddps") == 2 * loops


KEPT = [
    # both denominators unbounded: their product may overflow where each is finite
    f"multiply({SIGMOID}, divide(1f, add(1f, exp(negative(%a)))))",
    "multiply(tanh(%a), divide(%a, %b))",  # a quotient of unknown ranges
    "multiply(tanh(%a), divide(1f, add(%b, %b)))",  # (a sum of one tensor: not analyzed)
    "multiply(tanh(%a), divide(1f, add(1f, %b)))",  # a denominator of unknown range
    # tiny denominators: a * c underflowed, 0 for 1e-15
    "multiply(divide(tanh(%a), 1e-20f), divide(tanh(%b), 1e-15f))",
    # a quotient that overflows alone: inf or NaN in two divisions, 0 merged
    "multiply(divide(100f, add(sigmoid(%a), 2e-38f)), sigmoid(%b))",
    # a tanh of a value holding bindings (the sigmoid's): 1.2 s to compile merged
    "multiply(tanh(sigmoid(%a)), sigmoid(%b))",
    "multiply(tanh(%a), divide(1f, subtract(1f, exp(%b))))",  # (subtract: not analyzed)
    "multiply(tanh(%a), divide(1f, add(exp(%b), -2f)))",  # a denominator that may be 0
    # numerators whose product overflows
    "multiply(divide(1e30f, add(1f, sigmoid(%b))), divide(1e30f, add(sigmoid(%a), 1f)))",
]


@pytest.mark.parametrize("body", KEPT)
def test_other_products_of_quotients_divide_twice(body: str) -> None:
    script, exe = _kernel(body, default_target())
    assert not _product_divides(script), script
    a, b = _inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(exe(a, b), exe.interpret(a, b), rtol=1e-6, atol=1e-30)


def test_exact_math_divides_twice() -> None:
    script, _ = _kernel("multiply(tanh(%a), sigmoid(%b))", Target("llvm", fast_math=False))
    assert not _product_divides(script)


def test_ew_chain_divides_once() -> None:
    # the benchmark's program: tanh times the sigmoid written out, less another exp
    body = (
        "subtract(multiply(tanh(add(multiply(%a, %b), 1f)), divide(1f, add(1f, "
        "exp(negative(%a))))), exp(negative(multiply(%b, %b))))"
    )
    script, exe = _kernel(body, default_target())
    assert _divisions(script) == 1
    a, b = (v / 10 for v in _inputs())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        want = np.tanh(a64 * b64 + 1) * _sigmoid(a) - np.exp(-b64 * b64)
    np.testing.assert_allclose(exe(a, b), want, rtol=0, atol=1e-6)


def _q(n: tuple[float, float], d: tuple[float, float]) -> Quotient:
    return Quotient((), lambda values, then: then(*values), n, d)


@pytest.mark.parametrize(
    ("a", "b", "merged"),
    [
        (_q((-0.95, 0.95), (2.0**-8, 0.95)), _q((1.0, 1.0), (1.0, math.inf)), True),  # tanh
        (_q((0.0, 1.0), (1.0, 2.0)), _q((0.0, 1.0), (1.0, 2.0)), True),  # product <= 4
        (_q((1.0, 1.0), (1.0, math.inf)), _q((1.0, 1.0), (1.0, math.inf)), False),
        (_q((1.0, 1.0), (1.0, 1e20)), _q((1.0, 1.0), (1.0, 1e18)), True),  # finite product
        (_q((1.0, 1.0), (1.0, 1e20)), _q((1.0, 1.0), (1.0, 1e19)), False),
        (_q((-1e20, 1.0), (1.0, 2.0)), _q((1e19, 1e19), (1.0, 2.0)), False),  # a * c overflows
        (_q((1.0, 1.0), (0.0, 1.0)), _q((1.0, 1.0), (1.0, 2.0)), False),  # d may be 0
        # denominators whose product may be small: a subnormal a * c magnified past 2 ** 16
        (_q((1.0, 1.0), (1e-20, 1.0)), _q((1.0, 1.0), (1e-15, 1.0)), False),
        (_q((1.0, 1.0), (2.0**-8, 1.0)), _q((1.0, 1.0), (2.0**-8, 1.0)), True),
        (_q((1.0, 1.0), (2.0**-8, 1.0)), _q((1.0, 1.0), (2.0**-9, 1.0)), False),
        # a quotient alone may overflow (inf in two divisions)
        (_q((100.0, 100.0), (2e-38, 3.0)), _q((0.0, 1.0), (1.0, 2.0)), False),
    ],
)
def test_mergeable_needs_products_without_overflow_or_underflow(
    a: Quotient, b: Quotient, merged: bool
) -> None:
    assert mergeable(a, b) is merged
    assert mergeable(b, a) is merged


def test_the_float32_limits() -> None:
    assert float(np.finfo(np.float32).max) == FLOAT32_MAX
    assert float(np.finfo(np.float32).smallest_normal) == FLOAT32_MIN_NORMAL


def test_the_cuda_target_divides_once() -> None:
    # (compiled to PTX without a GPU; the schedule computes several elements per thread)
    def divisions(quotient: str) -> int:
        body = f"subtract(multiply(tanh(%a), {quotient}), %b)"
        mod = relay.parse(f"def @main(%a: {T}, %b: {T}) {{ {body} }}")
        ptx = relay.build(mod, target=Target("cuda", arch="sm_90")).ptx()
        return len(re.findall(r"\b(?:div|rcp)\.[a-z.]*f32\b", ptx))

    merged, kept = divisions(SIGMOID), divisions("divide(1f, add(1f, %b))")
    assert merged > 0 and kept == 2 * merged
