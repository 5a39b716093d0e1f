"""The TVM lowering of the elementwise operators against their numpy references.

Most cases compile one call (``relay.testing.lowering.check_op_lowering``) and compare it with
the operator's reference: same shape, dtype and values (exactly for integers and bools). The
approximations of fast math are measured against float64 numpy; the cases where compiled code
must differ from the reference (which raises: integer division by zero, out-of-range casts,
negative integer powers) check the documented result. bfloat16 is tested inside kernels that
cast from and to float32 (bfloat16 arrays crossing the kernel boundary are tested in
test_graph_executor.py).
"""

from __future__ import annotations

import platform
import re
import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import relay
from relay.backend import cuda
from relay.backend.compiler import compile_functions
from relay.backend.target import Target
from relay.errors import CompileError
from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Expr, Function, Var, const
from relay.ir.types import TensorType
from relay.op.registry import get_op
from relay.testing.lowering import check_op_lowering, default_target, run_compiled_op
from relay.typecheck.checker import infer_type

pytestmark = [
    pytest.mark.tvm,
    # the references compute inf/nan for these inputs on purpose
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

Array = np.ndarray[Any, np.dtype[Any]]

EXACT = Target("llvm", fast_math=False)
FAST = Target("llvm", fast_math=True)
BF16 = np.dtype(ml_dtypes.bfloat16)

FLOATS = ["float32", "float64", "float16"]
INTS = ["int32", "int8", "uint8", "int64", "uint32"]


def rtol_of(dtype: str) -> float:
    """One float16 ulp: the widened float32 results may round to a neighbour."""
    return {"float16": 1e-3, "float32": 1e-6, "float64": 1e-12}.get(dtype, 0.0)


def values(shape: tuple[int, ...], dtype: str, seed: int = 0, scale: float = 10.0) -> Array:
    """Random values of ``dtype`` (negative ones for signed types; nonzero)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("float", "bfloat")):
        return (rng.standard_normal(shape) * scale).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -100), min(int(info.max), 100)
    out = rng.integers(lo, hi + 1, shape).astype(dtype)
    out[out == 0] = 1
    return out


def with_edges(x: Array) -> Array:
    """``x`` with nan, infinities and signed zeros in its first elements."""
    x = x.copy()
    flat = x.reshape(-1)
    edges = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    flat[: len(edges)] = edges[: flat.size]
    return x


def primitive(body: Expr, params: list[Var] | None = None) -> Function:
    """A typed ``Primitive=1`` function of ``params`` with ``body``."""
    func = Function(tuple(params or ()), body, attrs=Attrs({"Primitive": 1}))
    out = infer_type(func)
    assert isinstance(out, Function)
    return out


def run(func: Function, *args: Array, target: Target | None = None) -> list[Array]:
    lib, (symbol,) = compile_functions([func], Target.of(target))
    return list(lib[symbol](*args))


def call(name: str, *args: Expr, **attrs: Any) -> Call:
    opdef = get_op(name)
    return Call(opdef.op, tuple(args), opdef.validate_attrs(attrs))


def reference(name: str, *args: Any, **attrs: Any) -> Array:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(get_op(name).reference(*args, **attrs))


# ---- float math -----------------------------------------------------------------------------------

FLOAT_MATH = [
    "exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "sin", "cos",
    "fast_exp", "fast_tanh",
]  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", FLOAT_MATH)
def test_float_math_exact(name: str, dtype: str) -> None:
    x = with_edges(values((7, 33), dtype, scale=3.0))
    if name in ("log", "log2", "log10", "sqrt", "rsqrt"):
        x.flat[5:40] = np.abs(x.flat[5:40])  # both domains, and 0
    if name.startswith("fast") and dtype == "float32":
        return  # approximated always: see test_fast_ops_always_approximate
    check_op_lowering(name, x, rtol=rtol_of(dtype), atol=0, target=EXACT)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "fast_exp", "fast_tanh"])
@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_fast_math_is_exact_off_float32(name: str, dtype: str) -> None:
    x = with_edges(values((33,), dtype, scale=3.0))
    check_op_lowering(name, x, rtol=rtol_of(dtype), atol=0, target=FAST)


def test_float_math_tiny_arguments() -> None:
    # TVM legalizes tirx.tanh as (1 - exp(-2x)) / (1 + exp(-2x)): tanh(1e-30) would be 0
    x = np.array([1e-30, -1e-20, 1e-10, 2e-5, -3e-4, 1e-38], np.float32)
    for name in ("tanh", "sin", "erf", "sigmoid", "exp"):
        check_op_lowering(name, x, rtol=3e-7, atol=0, target=EXACT)
    check_op_lowering("tanh", x.astype(np.float64), rtol=1e-15, atol=0, target=EXACT)


# ---- fast math: the approximations measured against float64 ---------------------------------------

# Measured maximum errors (10**6 points, see the module doc of relay.op.lowering.elemwise) and
# the bounds asserted here, with a margin.
FAST_EXP_REL = 1.2e-7  # measured 8.5e-8 where exp(x) is a normal float32 (1.07e-7 without FMA)
FAST_EXP_SUBNORMAL_ABS = 1.5e-45  # measured 1.25e-45 (at most one subnormal step)
FAST_TANH_ABS = 3.5e-7  # measured 2.7e-7 here (3.18e-7 over every float32), 1.6e-7 near 0
FAST_SIGMOID_REL = 2.8e-7  # measured 1.8e-7 down to x = -87 (normal results)


def errors(got: Array, exact: Array) -> tuple[Array, Array, Array]:
    """Absolute and relative errors of ``got`` against float64 ``exact``, and the mask of the
    points where ``exact`` rounds to a normal float32."""
    got64 = got.astype(np.float64)
    with np.errstate(over="ignore"):
        r32 = exact.astype(np.float32)
    normal = np.isfinite(r32) & (np.abs(r32) >= np.finfo(np.float32).tiny)
    abs_err = np.abs(got64 - exact)
    rel_err = np.divide(abs_err, np.abs(exact), out=np.zeros_like(abs_err), where=normal)
    return abs_err, rel_err, normal


def sigmoid64(x: Array) -> Array:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


@pytest.mark.parametrize("name", ["exp", "fast_exp"])
def test_fast_exp_error_bound(name: str) -> None:
    x = np.linspace(-90, 90, 10**6, dtype=np.float32)
    got = run_compiled_op(name, x, target=FAST)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.float64))
    abs_err, rel_err, normal = errors(got, exact)
    assert rel_err[normal].max() < FAST_EXP_REL
    with np.errstate(over="ignore"):
        sub = ~normal & np.isfinite(exact.astype(np.float32))
    assert abs_err[sub].max() < FAST_EXP_SUBNORMAL_ABS
    # overflow to inf exactly where float32 exp overflows
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(np.isinf(got), np.isinf(exact.astype(np.float32)))


def test_fast_exp_special_values() -> None:
    x = np.array(
        [np.nan, np.inf, -np.inf, 88.72, 88.7228, 88.73, 89.0, 1e30, -87.3, -100.0, -103.9,
         -104.0, -1e30, 0.0, -0.0, 1e-30],
        np.float32,
    )  # fmt: skip
    got = run_compiled_op("exp", x, target=FAST)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[1:], want[1:], rtol=FAST_EXP_REL, atol=FAST_EXP_SUBNORMAL_ABS)
    # topi.fast_exp gives inf from 88.38 and flushes results below 1.2e-38 to 0: not here
    assert np.isfinite(got[3]) and got[3] > 3.3e38
    assert 0 < got[9] < 1e-43


@pytest.mark.parametrize("name", ["tanh", "fast_tanh"])
def test_fast_tanh_error_bound(name: str) -> None:
    x = np.linspace(-20, 20, 10**6, dtype=np.float32)
    x = np.concatenate([x, np.logspace(-30, 0, 10**4, dtype=np.float32)])
    got = run_compiled_op(name, x, target=FAST)
    abs_err, rel_err, normal = errors(got, np.tanh(x.astype(np.float64)))
    assert abs_err.max() < FAST_TANH_ABS
    assert rel_err[normal & (np.abs(x) > 1e-37)].max() < FAST_TANH_ABS
    assert np.abs(got).max() <= 1.0
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, 9.0, -100.0], np.float32)
    got = run_compiled_op(name, specials, target=FAST)
    np.testing.assert_allclose(got, np.tanh(specials), rtol=0, atol=FAST_TANH_ABS)


def test_fast_tanh_is_exactly_one_from_its_edge() -> None:
    # every float32 around the edge where the rational function reaches 1.0 (8.013) and
    # would overshoot it (from 8.121): never beyond 1, exactly 1 from 7.99 on, odd
    lo, hi = np.float32(7.9).view(np.uint32), np.float32(8.3).view(np.uint32)
    x = np.arange(lo, hi, dtype=np.uint32).view(np.float32)
    x = np.concatenate([x, -x])
    gpu = default_target()  # (on the GPU with RELAY_TEST_TARGET=cuda: nvcc's rounding)
    got = run_compiled_op("tanh", x, target=gpu if gpu.is_gpu else FAST)
    assert np.abs(got).max() == 1.0
    edge = np.abs(x) >= np.float32(7.99)
    np.testing.assert_array_equal(got[edge], np.sign(x[edge]))
    np.testing.assert_array_equal(got[: len(x) // 2], -got[len(x) // 2 :])
    np.testing.assert_allclose(got, np.tanh(x.astype(np.float64)), rtol=0, atol=FAST_TANH_ABS)


def test_fast_tanh_of_a_small_value_is_the_value() -> None:
    # P(0) = Q(0) = 1: tanh(x) is x where float32 tanh rounds to x (from 2e-4 down, the
    # subnormals included: with the 2^-8 of products of quotients x * P underflowed)
    x = np.geomspace(1e-45, 2e-4, 50_000).astype(np.float32)
    x = np.concatenate([x, -x, [0.0, -0.0]]).astype(np.float32)
    got = run_compiled_op("tanh", x, target=FAST)
    np.testing.assert_array_equal(got, x, strict=True)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(x))


def test_fast_exp_rounds_to_an_integer_without_conversions() -> None:
    # exp's n = round(x / ln 2) is a multiply-add of 1.5 * 2**23 less 1.5 * 2**23, kept as a
    # float, which vscalefps takes as it is: no conversion to int32 and back (vcvtps2dq,
    # vcvtdq2ps, as before), no float rounding (vrndscaleps). Compiled only, for an AVX-512
    # CPU named explicitly.
    from relay.testing.lowering import primitive_op_function

    x = np.zeros(1 << 15, np.float32)
    avx512 = Target("llvm", mcpu="skylake-avx512", fast_math=True)
    lib, _ = compile_functions([primitive_op_function("exp", (x,), {})], avx512)
    ops = re.findall(r"^\s+(v[a-z0-9]+)\s", lib.module.mod.inspect_source("asm"), re.M)
    assert "vscalefps" in ops
    assert not [op for op in ops if op.startswith(("vcvt", "vrndscale"))]


def test_fast_exp_polynomial_is_multiply_adds_only() -> None:
    # exp(r) by Horner's rule, six FMAs: with the rounding's multiply-add and the
    # reduction's two, nine, and one subtraction (the rounding's); no multiplication left
    # (Cephes' 1 + r + r^2 P(r) took a vmulps and a vaddps more per exp)
    from relay.testing.lowering import primitive_op_function

    x = np.zeros(1 << 15, np.float32)  # (a smaller kernel is compiled at -O0)
    avx512 = Target("llvm", mcpu="skylake-avx512", fast_math=True)
    lib, _ = compile_functions([primitive_op_function("exp", (x,), {})], avx512)
    ops = re.findall(r"^\s+(v[a-z0-9]+)\s", lib.module.mod.inspect_source("asm"), re.M)
    exps = ops.count("vscalefps")  # (one per exp: LLVM may unroll the loop)
    assert exps >= 1
    assert "vmulps" not in ops and ops.count("vaddps") + ops.count("vsubps") == exps
    fmas = sum(op.startswith(("vfmadd", "vfnmadd", "vfmsub", "vfnmsub")) for op in ops)
    assert fmas == 9 * exps


SPECIALS = np.array(
    [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 7.99, -7.99, 8.2, -8.2, 88.72, 89.0, -104.0,
     -110.0, 1e-30, -1e-30, 1e-45, 3e38, -3e38],
    np.float32,
)  # fmt: skip


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
def test_fast_math_special_values_in_vector_lanes(name: str) -> None:
    # special values in the 16 lanes of the vectorized loop (a few elements compile to a
    # scalar loop, and a loop's tail is scalar): NaN stays NaN (x86's vrangeps, which would
    # clamp in one instruction, returns the bound for a NaN), infinities go to their limits
    x = np.random.default_rng(0).uniform(-5, 5, 4096).astype(np.float32)
    for at in (0, 16 * 100 + 5, 4096 - len(SPECIALS)):
        x[at : at + len(SPECIALS)] = SPECIALS
    got = run_compiled_op(name, x, target=FAST)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        want = {"exp": np.exp, "tanh": np.tanh, "sigmoid": lambda v: 0.5 + 0.5 * np.tanh(v / 2)}[
            name
        ](x64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
    with np.errstate(over="ignore"):
        finite = np.isfinite(want.astype(np.float32))
    np.testing.assert_array_equal(np.isinf(got), ~finite & ~np.isnan(x))
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6, atol=1e-30)


NEGATED_EXPS = {
    "exp(-x)": "exp(negative(%x))",
    "exp(-x * x)": "exp(negative(multiply(%x, %x)))",
    "exp(-x) * x": "multiply(exp(negative(%x)), %x)",
}


@pytest.mark.parametrize("size", [1000, 1 << 15])  # -O0 and -O2 kernels, 1000 with a tail
@pytest.mark.parametrize("body", list(NEGATED_EXPS.values()), ids=list(NEGATED_EXPS))
def test_fast_exp_of_a_negation_folds_it(body: str, size: int) -> None:
    # exp(-v) reads v and folds the negation into its constants: the same bits as the exp
    # kernel of -v, computed apart, and no negation left in the kernel (vxorps)
    mod = relay.parse(f"def @main(%x: Tensor[({size},), float32]) {{ {body} }}")
    exe = relay.build(mod)
    x = values((size,), "float32", scale=30.0)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 104.0]
    apart = relay.build(relay.parse(f"def @main(%x: Tensor[({size},), float32]) {{ exp(%x) }}"))
    v = x * x if "multiply(%x, %x)" in body else x
    want = apart(-v) * (x if body.startswith("multiply") else 1)
    np.testing.assert_array_equal(exe(x), want, strict=True)
    if size > 1 << 14 and Target().vector_ldexp:
        (kernel,) = exe.kernels
        asm = exe.library.module.mod.inspect_source("asm")
        assert "vscalefps" in asm and "vxorps" not in asm, kernel


def test_sigmoid_keeps_its_bits_at_every_optimization_level() -> None:
    # exp(-|x|) with the negation folded (and exp's rounding by a multiply-add): the same
    # bits in a small kernel (-O0) as in a large one (-O2), as a first tier needs
    x = values((1 << 15,), "float32", scale=30.0)
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    for op in ("sigmoid", "exp", "tanh"):
        large = run_compiled_op(op, x, target=FAST)
        small = np.concatenate([run_compiled_op(op, c, target=FAST) for c in np.split(x, 8)])
        np.testing.assert_array_equal(small, large, strict=True, err_msg=op)


@pytest.mark.parametrize("lanes", [16, 8, 4, 1])
def test_scalef_lowers_at_every_vector_width(lanes: int) -> None:
    # relay's scalef operator is vscalefps on 16 lanes, llvm.ldexp of the exponent as int32
    # at any other width (a loop's scalar tail); each exact, subnormal results included
    import tvm
    from tvm import te

    from relay.op.lowering.elemwise import _scalef

    if not Target().vector_ldexp:
        pytest.skip("relay's scalef is for CPUs with AVX-512")
    n = 1024
    a = te.placeholder((n,), "float32", name="a")
    e = te.placeholder((n,), "float32", name="e")
    out = te.compute((n,), lambda i: _scalef(a[i], e[i]), name="out")
    sch = tvm.s_tir.Schedule(te.create_prim_func([a, e, out]))
    (loop,) = sch.get_loops(sch.get_sblock("out"))
    if lanes > 1:
        _, inner = sch.split(loop, [None, lanes])
        sch.vectorize(inner)
    lib = tvm.compile(sch.mod, target=Target().tvm_target(2))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    k = rng.integers(-150, 129, n).astype(np.float32)
    got = np.empty(n, np.float32)
    args = [tvm.runtime.tensor(v) for v in (x, k, got)]
    lib["main"](*args)
    with np.errstate(over="ignore"):
        want = np.ldexp(x.astype(np.float64), k.astype(np.int32)).astype(np.float32)
    np.testing.assert_array_equal(args[2].numpy(), want, strict=True)


@pytest.mark.parametrize("mcpu", ["haswell", "x86-64"])
def test_fast_exp_without_avx512_calls_no_libm(mcpu: str) -> None:
    # without AVX-512 LLVM turns a vector llvm.ldexp into a call of ldexpf per lane: 2^n
    # is two normal factors there instead, and the results keep their bounds
    from relay.testing.lowering import primitive_op_function

    x = np.linspace(-110, 90, 10**5, dtype=np.float32)
    target = Target("llvm", mcpu=mcpu, fast_math=True)
    assert not target.vector_ldexp
    lib, _ = compile_functions([primitive_op_function("exp", (x,), {})], target)
    assert "ldexpf" not in lib.module.mod.inspect_source("asm")
    got = run_compiled_op("exp", x, target=target)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.float64))
    abs_err, rel_err, normal = errors(got, exact)
    assert rel_err[normal].max() < FAST_EXP_REL
    assert abs_err[~normal & (exact < 1)].max() < FAST_EXP_SUBNORMAL_ABS


def test_a_gpu_tensor_past_int32_elements_gets_int64_indices() -> None:
    # a GPU kernel's loops and indices in int64 (its fused loop would overflow int32);
    # smaller ones and CPU kernels keep int32
    from relay.backend.lower import lower_primitive
    from relay.testing.lowering import primitive_op_function

    def loop_dtypes(shape: tuple[int, ...], target: str) -> set[str]:
        x = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape, (0,) * len(shape))
        func = primitive_op_function("negative", (x,), {})
        prim = lower_primitive(func, target=target).prim_func
        return set(re.findall(r"T\.grid\(T\.(int\d+)\(", prim.script()))

    assert loop_dtypes((46000, 47000), "cuda") == {"int64"}
    assert loop_dtypes((4600, 4700), "cuda") == set()  # (int32 extents print as numbers)
    assert loop_dtypes((46000, 47000), "llvm") == set()


def test_fast_math_kernels_stay_small() -> None:
    # exp's and tanh's intermediate values are bound once (TVM's passes and LLVM then see
    # each once): this kernel printed as 36,000 characters (now 3,200), and ew_chain's took
    # 1.4 s to compile (now 0.03)
    from relay.backend.lower import lower_primitive
    from relay.backend.schedule import schedule_cpu

    t = TensorType((4096,), "float32")
    x, y = Var("x", t), Var("y", t)
    tanh = call("tanh", call("add", call("multiply", x, y), const(np.float32(1.0))))
    sig = call("sigmoid", x)
    body = call("subtract", call("multiply", tanh, sig), call("exp", call("negative", y)))
    prim = schedule_cpu(lower_primitive(primitive(body, [x, y]), fast_math=True))
    text = prim.script()
    assert len(text) < 6000, len(text)


def test_fast_sigmoid_error_bound() -> None:
    x = np.linspace(-20, 20, 10**6, dtype=np.float32)
    x = np.concatenate([x, np.linspace(-100, 100, 10**5, dtype=np.float32)])
    got = run_compiled_op("sigmoid", x, target=FAST)
    exact = sigmoid64(x.astype(np.float64))
    abs_err, rel_err, normal = errors(got, exact)
    assert rel_err[normal & (x > -87)].max() < FAST_SIGMOID_REL
    assert abs_err.max() < 1e-7
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, 100.0, -100.0, -1e30], np.float32)
    got = run_compiled_op("sigmoid", specials, target=FAST)
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1:], sigmoid64(specials[1:].astype(np.float64)), rtol=0.02)


@pytest.mark.parametrize(
    ("name", "lo", "hi"), [("exp", -90, 90), ("tanh", -20, 20), ("sigmoid", -20, 20)]
)
def test_exact_math_without_fast_math(name: str, lo: float, hi: float) -> None:
    x = np.linspace(lo, hi, 10**6, dtype=np.float32)
    got = run_compiled_op(name, x, target=EXACT)
    exact = {"exp": np.exp, "tanh": np.tanh, "sigmoid": sigmoid64}[name]
    with np.errstate(over="ignore"):
        want = exact(x.astype(np.float64))
    _, rel_err, normal = errors(got, want)
    assert rel_err[normal].max() < 1e-6
    np.testing.assert_allclose(got, reference(name, x), rtol=1e-6, atol=1e-44)


def test_fast_ops_always_approximate() -> None:
    """fast_exp/fast_tanh of float32 approximate even with fast math off: the same results as
    exp/tanh with fast math on."""
    x = np.linspace(-50, 50, 4097, dtype=np.float32)
    for fast_name, name in (("fast_exp", "exp"), ("fast_tanh", "tanh")):
        got = run_compiled_op(fast_name, x, target=EXACT)
        np.testing.assert_array_equal(got, run_compiled_op(name, x, target=FAST))
        np.testing.assert_allclose(got, reference(name, x), rtol=3.5e-7, atol=1e-44)


# ---- rounding, abs, sign, negative ----------------------------------------------------------------

HALVES = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 3.7, -3.7, 1e7 + 0.5]


@pytest.mark.parametrize("dtype", [*FLOATS, "int32", "int8", "uint8"])
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round"])
def test_rounding(name: str, dtype: str) -> None:
    x = values((7, 33), dtype)
    if dtype.startswith("float"):
        x = with_edges(x)
        with np.errstate(over="ignore"):
            x.flat[5 : 5 + len(HALVES)] = HALVES
    check_op_lowering(name, x, rtol=0, atol=0)


def test_round_halves_away_from_zero() -> None:
    got = run_compiled_op("round", np.array([0.5, -0.5, 2.5, -2.5, 1.5], np.float32))
    np.testing.assert_array_equal(got, [1, -1, 3, -3, 2])


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", ["abs", "sign", "negative"])
def test_abs_sign_negative(name: str, dtype: str) -> None:
    x = values((7, 33), dtype)
    if dtype.startswith("float"):
        x = with_edges(x)
    else:  # the extremes: abs and negative wrap at the minimum
        info = np.iinfo(dtype)
        x.flat[:3] = [info.min, info.max, 0]
    got = check_op_lowering(name, x, rtol=0, atol=0)
    if name == "sign" and dtype.startswith("float"):
        assert got.flat[0] == 0  # sign(nan)


def test_negative_and_abs_of_signed_zero() -> None:
    x = np.array([0.0, -0.0, -1.5], np.float32)
    np.testing.assert_array_equal(np.signbit(run_compiled_op("negative", x)), [True, False, False])
    np.testing.assert_array_equal(np.signbit(run_compiled_op("abs", x)), [False, False, False])


@pytest.mark.parametrize("dtype", [*FLOATS, "int32", "int8", "uint8", "bool"])
def test_copy(dtype: str) -> None:
    check_op_lowering("copy", values((7, 33), dtype))


@pytest.mark.parametrize("dtype", [*FLOATS, "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", ["isnan", "isfinite"])
def test_isnan_isfinite(name: str, dtype: str) -> None:
    x = values((33,), dtype)
    if dtype.startswith("float"):
        x = with_edges(x)
    check_op_lowering(name, x)


# ---- clip -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "a_min", "a_max"),
    [
        ("float32", -2.5, 3.25),
        ("float32", -3e38, 0.0),
        ("float32", 4.0, -4.0),  # a_min > a_max gives a_min
        ("float64", -1e-3, 1e300),
        ("float16", 0.1, 1e6),  # bounds rounded to float16 (1e6 to inf)
        ("int32", -2.7, 3.9),  # truncated toward zero
        ("int8", -1000.0, 1000.0),  # saturated to the dtype
        ("int8", -1e300, 5.0),
        ("uint8", -3.0, 50.5),
        ("int64", -1e30, 1e30),
        ("uint32", 2.0, 4.5e9),
    ],
)
def test_clip(dtype: str, a_min: float, a_max: float) -> None:
    x = values((7, 33), dtype)
    if dtype.startswith("float"):
        x = with_edges(x)
    check_op_lowering("clip", x, a_min=a_min, a_max=a_max, rtol=0, atol=0)


# ---- cast -----------------------------------------------------------------------------------------

CAST_DTYPES = ["float32", "float64", "float16", "int32", "int8", "uint8", "int64", "uint32", "bool"]


def castable(src: str, dst: str) -> Array:
    """Values of ``src`` that convert to ``dst`` without leaving its range (the reference
    raises otherwise)."""
    if src == "bool":
        return values((7, 33), "bool")
    x = values((7, 33), src)
    if src.startswith("float") and not dst.startswith(("float", "bool")):
        x = np.clip(x * 4.3, -100, 100).astype(src)  # fractions to truncate
        if dst.startswith("uint"):
            x = np.abs(x)
    if dst == "bool":
        x.flat[:2] = 0
        if src.startswith("float"):
            x.flat[2:5] = [np.nan, -0.0, 0.25]
    return x


@pytest.mark.parametrize("dst", CAST_DTYPES)
@pytest.mark.parametrize("src", CAST_DTYPES)
def test_cast(src: str, dst: str) -> None:
    x = castable(src, dst)
    if src.startswith("float") and dst.startswith("float"):
        x = with_edges(x)
    got = check_op_lowering("cast", x, dtype=dst, rtol=0, atol=0)
    if src.startswith("float") and dst.startswith("float"):
        assert np.isnan(got.flat[0])


def test_cast_integer_wraps_and_rounding() -> None:
    x = np.array([300, -1, 255, 256, -129, 2**31 - 1], np.int32)
    for dst in ("int8", "uint8", "uint32", "int64"):
        check_op_lowering("cast", x, dtype=dst)
    # float64 -> float16 rounds once (via float32 it would round to 1.0)
    x64 = np.array([1 + 2**-11 + 2**-40, 65519.99, 65520.0, 1e-8, 6e-8], np.float64)
    check_op_lowering("cast", x64, dtype="float16", rtol=0, atol=0)
    check_op_lowering("cast", np.array([65504, 70000, -3], np.int32), dtype="float16")


@pytest.mark.parametrize("dst", ["int32", "int8", "uint8", "int64", "uint32"])
def test_cast_out_of_range_does_not_crash(dst: str) -> None:
    """The reference raises; compiled code gives the hardware's conversion (undefined)."""
    x = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 3e9], np.float32)
    with pytest.raises(ValueError, match="cannot be represented"):
        reference("cast", x, dtype=dst)
    got = run_compiled_op("cast", x, dtype=dst)
    assert got.dtype == np.dtype(dst) and got.shape == x.shape
    info = np.iinfo(dst)
    if default_target().is_gpu:  # CUDA's conversions saturate (NaN: 0), measured on an H100
        lo, hi = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)
        want = {  # (int8 and uint8 keep the low bits of the saturated 32-bit value)
            "int32": [0, hi, lo, hi, lo, hi],
            "int64": [info.min, info.max, info.min, info.max, info.min, 3_000_000_000],
            "uint32": [0, info.max, 0, info.max, 0, 3_000_000_000],
            "int8": [0, -1, 0, -1, 0, -1],
            "uint8": [0, 255, 0, 255, 0, 0],
        }[dst]
        np.testing.assert_array_equal(got, np.array(want, dst))
    elif platform.machine().lower() in ("x86_64", "amd64"):  # the values the module doc lists
        want = {
            "int32": [info.min] * 6,
            "int64": [info.min] * 5 + [3_000_000_000],
            "uint32": [info.max] * 5 + [3_000_000_000],
            "int8": [0] * 6,  # the low bits of INT_MIN
            "uint8": [0] * 6,
        }[dst]
        np.testing.assert_array_equal(got, np.array(want, dst))


@pytest.mark.parametrize(
    ("src", "like"), [("float32", "int8"), ("int32", "float16"), ("float64", "bool")]
)
def test_cast_like(src: str, like: str) -> None:
    x = castable(src, like)
    check_op_lowering("cast_like", x, values((2, 3), like), rtol=0, atol=0)


# ---- where --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cond", "dtype", "shapes"),
    [
        ("bool", "float32", ((7, 33), (7, 33), (7, 33))),
        ("bool", "int8", ((7, 1), (1, 33), (33,))),
        ("float32", "float16", ((33,), (7, 1), ())),  # nan is nonzero
        ("int32", "bool", ((1, 1), (7, 33), (1, 33))),
        ("uint8", "int64", ((), (7, 1, 33), (5, 1))),
        ("float16", "float64", ((1,), (1,), (1,))),
    ],
)
def test_where(cond: str, dtype: str, shapes: tuple[tuple[int, ...], ...]) -> None:
    c = values(shapes[0], cond, seed=1)
    if cond != "bool":
        c = np.where(values(shapes[0], "bool", seed=2), c, 0).astype(cond)
        if cond.startswith("float") and c.size > 1:
            c.flat[1] = np.nan
    check_op_lowering("where", c, values(shapes[1], dtype, 3), values(shapes[2], dtype, 4))


# ---- creation -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint32", "bool", "int64"])
@pytest.mark.parametrize("shape", [(7, 33), (), (1,), (0, 3)])
@pytest.mark.parametrize("name", ["zeros", "ones"])
def test_zeros_ones(name: str, shape: tuple[int, ...], dtype: str) -> None:
    # a primitive function without parameters
    got = check_op_lowering(name, shape=shape, dtype=dtype)
    assert got.shape == shape


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "bool"])
@pytest.mark.parametrize("name", ["zeros_like", "ones_like"])
def test_zeros_ones_like(name: str, dtype: str) -> None:
    check_op_lowering(name, values((7, 33), dtype))


@pytest.mark.parametrize(
    ("fill", "shape", "dtype"),
    [
        (np.array(3.7, np.float32), (7, 33), ""),  # the fill value's dtype
        (np.array(-3.7, np.float32), (7, 33), "int32"),  # truncated
        (np.array(np.nan, np.float32), (2, 3), "bool"),
        (np.array(0.0, np.float64), (1,), "bool"),
        (np.array(300, np.int32), (5,), "uint8"),  # wraps
        (np.array(np.nan, np.float64), (3, 1), "float16"),
        (np.array(70000.0, np.float32), (33,), "float16"),  # inf
        (np.array(True), (), "float32"),
        (np.array(7, np.int8), (0, 5), "int8"),
    ],
)
def test_full(fill: Array, shape: tuple[int, ...], dtype: str) -> None:
    check_op_lowering("full", fill, shape=shape, dtype=dtype, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("dtype", "fill"),
    [
        ("float32", np.array(2.5, np.float64)),
        ("int8", np.array(-7.9, np.float32)),
        ("bool", np.array(np.nan, np.float32)),
        ("float16", np.array(1, np.int64)),
        ("uint8", np.array(True)),
    ],
)
def test_full_like(dtype: str, fill: Array) -> None:
    check_op_lowering("full_like", values((7, 33), dtype), fill, rtol=0, atol=0)


# ---- arange -----------------------------------------------------------------------------------------


def test_arange_with_dynamic_length_is_a_compile_error() -> None:
    # check_op_lowering makes start, stop and step parameters: the length is unknown (?)
    args = [np.array(v, np.float32) for v in (0.0, 10.0, 1.0)]
    with pytest.raises(CompileError, match="static shapes"):
        check_op_lowering("arange", *args, dtype="float32")


@pytest.mark.parametrize(
    ("start", "stop", "step", "dtype"),
    [
        (0, 33, 1, "float32"),
        (-3.5, 7.2, 0.3, "float32"),
        (5, -5, -1.5, "float32"),
        (0.1, 1000.0, 0.7, "float64"),
        (0, 100, 0.1, "float16"),  # rounded after each operation
        (-2, 1, 0.01, "float16"),
        (0, 33, 1, "int32"),
        (10, -1, -3, "int32"),
        (-100, 100, 7, "int8"),
        (0, 250, 9, "uint8"),
        (2**40, 2**40 + 9, 2, "int64"),
        (3, 3, 1, "int32"),  # no elements
        (5, 0, 1, "float32"),  # no elements
    ],
)
def test_arange_static(start: float, stop: float, step: float, dtype: str) -> None:
    bounds = [np.array(v, dtype) for v in (start, stop, step)]
    func = primitive(call("arange", *(const(b) for b in bounds), dtype=dtype))
    assert isinstance(func.body._checked_type, TensorType)
    (got,) = run(func)
    want = reference("arange", *bounds, dtype=dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype in ("float32", "float64"):  # start + i * step may become one fused multiply-add
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


# ---- binary operators -------------------------------------------------------------------------------

ARITH = [
    "add", "subtract", "multiply", "divide", "floor_divide", "mod", "floor_mod", "power",
    "maximum", "minimum",
]  # fmt: skip
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
BINARY_DTYPES = FLOATS + INTS


def operands(name: str, dtype: str) -> tuple[Array, Array]:
    a = values((7, 1), dtype, seed=5, scale=10.0)
    b = values((33,), dtype, seed=6, scale=4.0)
    if name == "power":
        if dtype.startswith("float"):
            a, b = np.abs(a), (b / 2).astype(dtype)
        else:
            b = (np.abs(b.astype(np.int64)) % 9).astype(dtype)
    if dtype.startswith("float") and name not in ("power",):
        a = with_edges(a)
        b.flat[:3] = [np.nan, 0.0, np.inf]
    return a, b


@pytest.mark.parametrize("dtype", BINARY_DTYPES)
@pytest.mark.parametrize("name", ARITH)
def test_arithmetic(name: str, dtype: str) -> None:
    a, b = operands(name, dtype)
    tol = rtol_of(dtype) * (4 if name == "power" else 1)
    check_op_lowering(name, a, b, rtol=tol, atol=0)


@pytest.mark.parametrize("dtype", [*FLOATS, "int32", "uint8", "bool"])
@pytest.mark.parametrize("name", COMPARE)
def test_comparison(name: str, dtype: str) -> None:
    a = values((7, 1), dtype, seed=7)
    b = values((33,), dtype, seed=8)
    if dtype != "bool":
        b[::3] = a[0, 0]  # ties
    if dtype.startswith("float"):
        a = with_edges(a)
        b.flat[1] = np.nan
    check_op_lowering(name, a, b)


@pytest.mark.parametrize(
    ("shape_a", "shape_b"),
    [((), (7,)), ((1,), (33,)), ((7, 1, 33), (5, 1)), ((2, 3), ()), ((1, 1, 1), (1,))],
)
@pytest.mark.parametrize("name", ["add", "less", "maximum"])
def test_broadcasting(name: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> None:
    check_op_lowering(name, values(shape_a, "float32", 1), values(shape_b, "float32", 2))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "equal", "less"])
def test_bool_arithmetic(name: str) -> None:
    a, b = np.array([[False], [True]]), np.array([False, True])
    check_op_lowering(name, a, b)


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical(name: str) -> None:
    check_op_lowering(name, values((7, 1), "bool", 1), values((33,), "bool", 2))


def test_logical_not() -> None:
    check_op_lowering("logical_not", values((7, 33), "bool"))


def test_integer_division_semantics() -> None:
    """Truncating divide/mod, flooring floor_divide/floor_mod, on every sign combination."""
    a = np.arange(-20, 21, dtype=np.int32).reshape(-1, 1)
    b = np.array([-7, -3, -2, -1, 1, 2, 3, 7], np.int32)
    for name in ("divide", "floor_divide", "mod", "floor_mod"):
        for dtype in ("int32", "int8", "int64"):
            check_op_lowering(name, a.astype(dtype), b.astype(dtype))
    ua, ub = np.array([[0], [7], [250]], np.uint8), np.array([1, 3, 200], np.uint8)
    for name in ("divide", "floor_divide", "mod", "floor_mod"):
        check_op_lowering(name, ua, ub)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "int64", "uint64"])
@pytest.mark.parametrize("name", ["divide", "floor_divide", "mod", "floor_mod"])
def test_integer_division_by_zero_raises_as_the_reference(name: str, dtype: str) -> None:
    """The reference raises; compiled code must not trap (x86 idiv): its guarded division
    computes on, and its run-time check raises the reference's error."""
    a = np.array([5, 0, 7, 1], dtype)
    b = np.array([0, 0, 2, 0], dtype)
    with pytest.raises(ZeroDivisionError):
        reference(name, a, b)
    with pytest.raises(
        relay.ExecutionError, match=f"operator {name} failed: integer division by zero"
    ):
        run_compiled_op(name, a, b)
    want = {"divide": 3, "floor_divide": 3, "mod": 1, "floor_mod": 1}[name]
    ones = np.array([1, 1, 2, 1], dtype)
    np.testing.assert_array_equal(run_compiled_op(name, a, ones), reference(name, a, ones))
    assert reference(name, a, ones)[2] == want


@pytest.mark.parametrize("dtype", ["int32", "int8", "int64"])
def test_integer_minimum_divided_by_minus_one(dtype: str) -> None:
    """INT_MIN / -1 traps on x86 too: it is the wrapped negation (numpy's result), remainder 0."""
    low = np.iinfo(dtype).min
    a = np.array([low, low, 9], dtype)
    b = np.array([-1, 1, -1], dtype)
    for name in ("divide", "floor_divide"):
        np.testing.assert_array_equal(run_compiled_op(name, a, b), np.array([low, low, -9], dtype))
    for name in ("mod", "floor_mod"):
        check_op_lowering(name, a, b)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "int64", "uint32", "uint64"])
def test_integer_overflow_wraps(dtype: str) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max - 1, 3, 0, 1], dtype)
    b = np.array([1, 1, info.max, info.max, 1, info.max], dtype)
    for name in ("add", "subtract", "multiply"):
        check_op_lowering(name, a, b)
    check_op_lowering("negative", a)


def test_overflow_in_a_fused_kernel() -> None:
    """``x + y < x`` must see the wrapped sum (TVM's simplifier assumes no overflow)."""
    for dtype in ("int32", "uint32", "int8"):
        x, y = Var("x", TensorType((4,), dtype)), Var("y", TensorType((4,), dtype))
        func = primitive(call("less", call("add", x, y), x), params=[x, y])
        info = np.iinfo(dtype)
        a = np.array([info.max, 1, info.min, 5], dtype)
        b = np.array([1, 1, info.max, 0], dtype)
        (got,) = run(func, a, b)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(got, (a + b) < a)


def test_integer_power() -> None:
    a = np.arange(-5, 6, dtype=np.int64).reshape(-1, 1)
    b = np.arange(0, 70, dtype=np.int64)
    for dtype in ("int64", "int32", "int8", "uint8", "uint32"):
        av = np.abs(a) if dtype.startswith("uint") else a
        check_op_lowering("power", av.astype(dtype), b.astype(dtype))


def test_integer_power_of_negative_exponent() -> None:
    """The reference raises; compiled code gives C's truncated 1 / a**-b."""
    a = np.array([1, -1, -1, 2, 0, -3, 5], np.int32)
    b = np.array([-3, -3, -2, -1, -2, -1, 2], np.int32)
    with pytest.raises(ValueError):
        reference("power", a, b)
    np.testing.assert_array_equal(run_compiled_op("power", a, b), [1, -1, 1, 0, 0, 0, 25])


def test_float_remainders() -> None:
    a = np.array([[5.5], [-5.5], [4.0], [-4.0], [0.0], [np.inf], [3.0], [-3.0]], np.float32)
    b = np.array([2.0, -2.0, 0.0, np.inf, -np.inf, 1e-30], np.float32)
    for name in ("mod", "floor_mod", "floor_divide", "divide"):
        got = check_op_lowering(name, a, b, rtol=1e-6, atol=0)
        with np.errstate(all="ignore"):
            want = reference(name, a, b)
        both_zero = (got == 0) & (want == 0)
        np.testing.assert_array_equal(np.signbit(got[both_zero]), np.signbit(want[both_zero]))


def test_maximum_minimum_propagate_nan() -> None:
    a = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
    b = np.array([1.0, np.nan, np.nan, np.inf], np.float32)
    for name in ("maximum", "minimum"):
        got = check_op_lowering(name, a, b)
        np.testing.assert_array_equal(np.isnan(got), [True, True, True, False])


# ---- bfloat16 (inside kernels: the arrays cannot cross the kernel boundary) ------------------------


def bf16_kernel(name: str, n_args: int, **attrs: Any) -> Function:
    """``fn(float32 x...) { cast(name(cast(x, bfloat16)...), float32) }`` (comparisons give bool)."""
    params = [Var(f"x{k}", TensorType((7, 33), "float32")) for k in range(n_args)]
    narrowed = [call("cast", p, dtype="bfloat16") for p in params]
    body: Expr = call(name, *narrowed, **attrs)
    body = call("cast", body, dtype="float32")
    return primitive(body, params=params)


@pytest.mark.parametrize(
    ("name", "attrs"),
    [
        ("exp", {}), ("tanh", {}), ("sigmoid", {}), ("sqrt", {}), ("round", {}), ("abs", {}),
        ("sign", {}), ("negative", {}), ("isnan", {}), ("clip", {"a_min": -1.3, "a_max": 2.1}),
        ("copy", {}), ("add", {}), ("multiply", {}), ("divide", {}), ("floor_divide", {}),
        ("floor_mod", {}), ("maximum", {}), ("less", {}), ("not_equal", {}),
    ],
)  # fmt: skip
def test_bfloat16(name: str, attrs: dict[str, Any]) -> None:
    n_args = 2 if name in ("add", "multiply", "divide", "floor_divide", "floor_mod", "maximum",
                           "less", "not_equal") else 1  # fmt: skip
    xs = [with_edges(values((7, 33), "float32", seed=k, scale=3.0)) for k in range(n_args)]
    if name == "sqrt":
        xs[0] = np.abs(xs[0])
    (got,) = run(bf16_kernel(name, n_args, **attrs), *xs, target=EXACT)
    narrow = [x.astype(BF16) for x in xs]
    want = reference(name, *narrow, **attrs).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=8e-3, atol=0)  # one bfloat16 ulp


@pytest.mark.parametrize("body", ["exp(%0)", "tanh(%0)", "sigmoid(%0)", "floor_mod(%0, 0.75f)"])
def test_bfloat16_inputs_cast_inside_fast_math(body: str) -> None:
    # a bfloat16 input read inside a Let value (the fast exp and tanh bind their argument)
    # lost its conversion to float32, its bits read as an integer: exp(1.0) gave inf (found
    # by a fuzzing review; the other bfloat16 tests run without fast math)
    text = (
        "def @main(%x: Tensor[(7, 33), bfloat16]) {\n"
        f'  %0 = cast(%x, dtype="float32");\n  {body}\n}}'
    )
    mod = relay.parse(text)
    x = values((7, 33), "float32", scale=3.0).astype(BF16)
    got = relay.build(mod)(x)
    want = relay.build(mod).interpret(x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_bfloat16_casts() -> None:
    x = with_edges(values((7, 33), "float32", scale=1000.0))
    x.flat[5:9] = [1.00390625, 1.01171875, 3.4e38, -2.5]  # ties to even; rounding to inf
    (got,) = run(bf16_kernel("copy", 1), x)
    np.testing.assert_array_equal(got, x.astype(BF16).astype(np.float32))
    # bfloat16 -> int8 / float16 / bool inside one kernel
    for dst in ("int8", "float16", "bool"):
        p = Var("x", TensorType((7, 33), "float32"))
        body = call("cast", call("cast", p, dtype="bfloat16"), dtype=dst)
        y = np.nan_to_num(np.clip(x, -100, 100)) if dst == "int8" else x
        (got,) = run(primitive(body, params=[p]), y)
        want = reference("cast", y.astype(BF16), dtype=dst)
        np.testing.assert_array_equal(got, want)


def test_bfloat16_creation() -> None:
    for name, attrs in (("zeros", {}), ("ones", {})):
        body = call("cast", call(name, shape=(3, 5), dtype="bfloat16", **attrs), dtype="float32")
        (got,) = run(primitive(body))
        np.testing.assert_array_equal(got, np.full((3, 5), 1.0 if name == "ones" else 0.0))
    # a constant fill value (inlined into the kernel), rounded to bfloat16
    for value in (0.0, 1.00390625, -3.3):
        fill = const(np.array(value, np.float32))
        body = call("cast", call("full", fill, shape=(4,), dtype="bfloat16"), dtype="float32")
        (got,) = run(primitive(body))
        want = np.full((4,), np.float32(value).astype(BF16).astype(np.float32))
        np.testing.assert_array_equal(got, want)


# ---- fused kernels -----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [FAST, EXACT], ids=["fast", "exact"])
@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "maximum", "floor_mod", "round"])
@pytest.mark.parametrize("narrow", ["bfloat16", "float16"])
def test_mixed_precision_chain(name: str, narrow: str, target: Target) -> None:
    """``op(float32(narrow(x)))`` in one kernel: the narrow rounding is kept, and an operator
    that binds its input (tirx.Let) compiles after a computed bfloat16."""
    x = Var("x", TensorType((7, 33), "float32"))
    inner = call("cast", call("cast", x, dtype=narrow), dtype="float32")
    body = call(name, inner, inner) if name in ("maximum", "floor_mod") else call(name, inner)
    xs = with_edges(values((7, 33), "float32", scale=3.0))
    xs.flat[5] = 0.0
    (got,) = run(primitive(body, params=[x]), xs, target=target)
    rounded = xs.astype(narrow if narrow == "float16" else BF16).astype(np.float32)
    args = (rounded, rounded) if name in ("maximum", "floor_mod") else (rounded,)
    np.testing.assert_allclose(got, reference(name, *args), rtol=3.5e-7, atol=1e-44)


@pytest.mark.parametrize("target", [FAST, EXACT], ids=["fast", "exact"])
def test_fused_chain_of_bound_operators(target: Target) -> None:
    """Nested operators that bind their input: sigmoid(tanh(exp(x) - 1) * 3) vs the reference."""
    x = Var("x", TensorType((33,), "float32"))
    one, three = const(np.array(1.0, np.float32)), const(np.array(3.0, np.float32))
    body = call(
        "sigmoid", call("multiply", call("tanh", call("subtract", call("exp", x), one)), three)
    )
    xs = with_edges(values((33,), "float32", scale=2.0))
    (got,) = run(primitive(body, params=[x]), xs, target=target)
    want = reference("exp", xs) - np.float32(1)
    want = reference("sigmoid", (reference("tanh", want) * np.float32(3)).astype(np.float32))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_fused_integer_power(dtype: str) -> None:
    """The reduction of integer power between an inlined producer and a consumer."""
    x, y = Var("x", TensorType((7, 33), dtype)), Var("y", TensorType((33,), dtype))
    one = const(np.array(1, dtype))
    body = call("add", call("power", call("add", x, one), y), x)
    a, b = values((7, 33), dtype) % 9, np.arange(33).astype(dtype)
    (got,) = run(primitive(body, params=[x, y]), a, b)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.power(a + np.array(1, dtype), b) + a)


def test_a_float_remainder_by_a_cast_integer_scalar_compiles() -> None:
    # the divisor, loop-invariant and cast from an integer, once made LLVM's code generator
    # take an integer absolute value of a float (a CompileError)
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(4,), float64], %y: int32) {\n"
        '  %0 = cast(%y, dtype="float64");\n'
        "  floor_mod(%x, %0)\n"
        "}"
    )
    x = np.array([-0.0, 5.5, -5.5, 3.0])
    got = relay.build(mod)(x, np.int32(-3))
    np.testing.assert_array_equal(got, np.mod(x, -3.0))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.mod(x, -3.0)))


# ---- TVM's simplifier and IEEE floats (relay.op.lowering.elemwise._ieee_guarded) ------------

_IEEE = np.array([np.nan, np.inf, -np.inf, 1e-8, 3e38, -2.0, 0.0, -0.0, 1.0], np.float32)


@pytest.mark.parametrize(
    "body",
    [
        "subtract(%0, %0)",
        "subtract(add(%x, %y), %x)",
        "subtract(add(%y, %x), %x)",
        "subtract(%x, add(%x, %y))",
        "subtract(add(%x, 1f), 1f)",
        "subtract(where(greater(%x, %y), %x, %y), %y)",
        "equal(%0, %0)",
        "not_equal(%0, %0)",
        "less_equal(%0, %0)",
        "multiply(%x, 0f)",
        "multiply(-0f, %x)",
        "add(multiply(%x, 0f), %y)",
        "multiply(%x, zeros_like(%y))",
        "divide(0f, %x)",
        "divide(%x, 0f)",
        "divide(%x, -0f)",
        "logical_or(less(%x, %y), greater_equal(%x, %y))",
        "logical_or(less_equal(%x, %y), greater(%x, %y))",
        "logical_or(equal(%x, %y), not_equal(%x, %y))",
        "logical_not(less_equal(%x, %y))",
        "logical_and(logical_not(less(%x, %y)), logical_not(greater_equal(%x, %y)))",
        "sum(subtract(%0, %0))",
    ],
)
def test_the_simplifier_keeps_nan_infinities_and_signed_zeros(body: str) -> None:
    # TVM's simplifier applies integer identities to floats too (x - x is 0, x == x is true,
    # (x + y) - x is y, x * 0 is 0, x < y || x >= y is true, !(x <= y) is y < x), wrong for
    # NaN, infinities, -0 and rounding; a fuzzing review found them (2026-11-28)
    text = (
        "def @main(%x: Tensor[(9,), float32], %y: Tensor[(9,), float32]) {\n"
        f"  %0 = multiply(%x, %y);\n  {body}\n}}"
    )
    mod = relay.parse(text)
    y = np.array([1.0, 1.0, 2.0, 1.0, 1.0, np.nan, -0.0, 0.0, np.inf], np.float32)
    with np.errstate(all="ignore"):
        got = np.asarray(relay.build(mod)(_IEEE, y))
        want = np.asarray(relay.build(mod).interpret(_IEEE, y))
    np.testing.assert_array_equal(got, want)  # (NaN equals NaN here)
    if got.dtype.kind == "f":  # (-0 is not 0; a NaN's sign means nothing)
        signs = (
            np.signbit(np.where(np.isnan(want), 0, got)),
            np.signbit(np.where(np.isnan(want), 0, want)),
        )
        np.testing.assert_array_equal(*signs)


_COMPUTED_ZEROS = {
    "cast of a comparison": 'cast(less(%i, %i), dtype="float32")',
    "cast of a difference": 'cast(subtract(%i, %i), dtype="float32")',
    "cast through int32": 'cast(cast(not_equal(%i, %i), dtype="int32"), dtype="float32")',
    "select of zeros": "where(%c, 0f, 0f)",
    "select of signed zeros": "where(%c, 0f, -0f)",
    "select by a constant": "where(less(%i, %i), %f, -0f)",
    "negated zeros": "negative(zeros_like(%f))",
    "select of negated zeros": "where(%c, negative(zeros_like(%f)), abs(zeros_like(%f)))",
}


@pytest.mark.parametrize("zero", list(_COMPUTED_ZEROS.values()), ids=list(_COMPUTED_ZEROS))
@pytest.mark.parametrize(
    "form",
    [
        "multiply(%f, Z)",
        "multiply(Z, %f)",
        "divide(%f, Z)",
        "divide(Z, %f)",
        "add(Z, %f)",
        "subtract(Z, %f)",
        "floor_divide(%f, Z)",
        "mod(%f, Z)",
        "power(Z, %f)",
    ],
)
def test_zeros_the_simplifier_computes_are_not_folded(zero: str, form: str) -> None:
    # a zero that only TVM's simplifier finds (less(i, i) is false) was folded into its
    # consumer: x * 0 gave 0 for NaN, x + 0 lost -0, and x / 0 stopped TVM ("Divide by
    # zero"); found by a fuzzing review (2026-11-28)
    text = (
        "def @main(%f: Tensor[(9,), float32], %i: Tensor[(9,), int32], "
        f"%c: Tensor[(9,), bool]) {{ {form.replace('Z', zero)} }}"
    )
    i = np.array([1, -2, 3, 0, 5, 6, 7, -8, 9], np.int32)
    c = np.array([1, 0, 1, 0, 1, 1, 0, 0, 1], bool)
    exe = relay.build(relay.parse(text))
    with np.errstate(all="ignore"):
        got, want = np.asarray(exe(_IEEE, i, c)), np.asarray(exe.interpret(_IEEE, i, c))
    np.testing.assert_array_equal(got, want)
    signs = [np.signbit(np.where(np.isnan(want), 0, v)) for v in (got, want)]
    np.testing.assert_array_equal(*signs)


@pytest.mark.parametrize(
    "w", ["where(%c, %x, -2.5f)", "add(%x, 1f)", "maximum(%x, 1f)", "multiply(%x, %x)"]
)
@pytest.mark.parametrize("right", ["%m", "multiply({w}, %x)"])
def test_a_product_minus_itself_is_zero(w: str, right: str) -> None:
    # LLVM fused the product on the left of m - m with the subtraction into a multiply-add,
    # which gave the rounding error of x * w (found by a fuzzing review, 2026-11-28)
    text = (
        "def @main(%x: Tensor[(16,), float32], %c: Tensor[(16,), bool]) {\n"
        f"  %w = {w};\n  %m = multiply(%x, %w);\n  subtract(%m, {right.format(w='%w')})\n}}"
    )
    x = np.array([221.63042, 1e30, -0.028114742, 3.1486203e17] * 4, np.float32)
    c = np.array([1, 1, 0, 1] * 4, bool)
    exe = relay.build(relay.parse(text))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(exe(x, c), exe.interpret(x, c))


@pytest.mark.parametrize(
    "body",
    [
        "subtract(add(%x, %y), %x)",
        "multiply(%x, 0f)",
        "multiply(%x, -0f)",
        "divide(0f, %x)",
        "divide(%x, where(less(%x, %y), 0f, -0f))",
        "subtract(multiply(%x, %y), multiply(%x, %y))",
        "where(less(%x, %y), 1.5f, %x)",  # (any constant branch is opaque: nvcc failed)
        "where(less(%x, %y), %x, -2.5f)",
        "where(less(%x, %y), 1.5f, 2.5f)",
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_the_simplifier_guards_compile_for_cuda(body: str, dtype: str) -> None:
    # on the GPU the opaque value is a reinterpretation, and a zero constant its bits (nvcc
    # takes no address of a literal)
    suffix = {"float32": "f", "float64": "f64", "float16": "f16"}[dtype]
    text = (
        f"def @main(%x: Tensor[(64,), {dtype}], %y: Tensor[(64,), {dtype}]) {{ "
        + re.sub(r"(\d)f\b", rf"\g<1>{suffix}", body)
        + " }"
    )
    exe = relay.build(relay.parse(text), target=Target("cuda", arch="sm_90"))
    assert set(exe.placement.values()) == {"cuda"}
    source = exe.cuda_source()
    if dtype != "float16":  # (a float16 constant is a buffer the kernel reads: not folded)
        assert "__int_as_float" in source or "__longlong_as_double" in source or "*(int" in source


def test_int32_results_that_wrap_around_are_not_folded() -> None:
    # TVM's simplifier took the truncation of int32 arithmetic (computed in int64) to keep
    # the value: (x * 3) % 3 was 0 where x * 3 wraps (found by a fuzzing review)
    text = """def @main(%x: Tensor[(4,), int32]) {
  (floor_mod(multiply(%x, 3), 3), greater(add(%x, 1), %x), floor_divide(multiply(%x, 2), 2),
   maximum(add(%x, 1), %x))
}"""
    x = np.array([-(2**31), 2**30 + 5, 7, 2**31 - 1], np.int32)
    exe = relay.build(relay.parse(text))
    for got, want in zip(exe(x), exe.interpret(x), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "body",
    [
        "subtract(%x, %x)",
        "multiply(%x, 0)",
        "add(multiply(0, %x), 1)",
        "floor_mod(multiply(0, %x), 3)",
        "negative(floor_mod(%x, -1))",
    ],
)
def test_int32_results_that_fold_to_a_constant_compile(body: str) -> None:
    # the int32 barrier was first a reinterpretation to float32 and back, which TVM's LLVM
    # code generator (and nvcc) rejected once the simplifier had folded its value to 0
    # (found by a second fuzzing review)
    mod = relay.parse(f"def @main(%x: Tensor[(33,), int32]) {{ {body} }}")
    x = np.arange(-16, 17, dtype=np.int32)
    x[:2] = [-(2**31), 2**31 - 1]
    exe = relay.build(mod)
    np.testing.assert_array_equal(exe(x), exe.interpret(x))
    cuda = relay.build(mod, target=Target("cuda", arch="sm_90"))
    assert set(cuda.placement.values()) == {"cuda"}


_SUFFIX = {
    "int8": "i8",
    "int16": "i16",
    "int32": "",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
}


@pytest.mark.parametrize("dtype", list(_SUFFIX))
def test_deep_chains_of_integer_arithmetic_compile_without_index_casts(dtype: str) -> None:
    # TVM's simplifier mutates the operand of a cast to int32 or int64 twice, so wrapping
    # arithmetic computed through int64 compiled in time exponential in its depth (an int32
    # x * 3 + x nested 6 deep took 85 s): it widens to an unsigned type instead
    from relay.backend.lower import lower_primitive
    from tests.backend.test_fused_programs import _primitives

    depth, three = 12, "3" + _SUFFIX[dtype]
    body = "%x"
    for _ in range(depth):
        body = f"add(multiply({body}, {three}), %x)"
    mod = relay.parse(f"def @main(%x: Tensor[(37,), {dtype}]) {{ {body} }}")
    exe = relay.build(mod, target=default_target())
    (prim,) = _primitives(exe.module)
    script = lower_primitive(prim).prim_func.script()
    assert not re.search(r'T\.Cast\("int(32|64)"', script), script
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max, 37, dtype=dtype, endpoint=True)
    x[:2] = info.min, info.max
    np.testing.assert_array_equal(exe(x), exe.interpret(x), strict=True)


@pytest.mark.parametrize(
    "body",
    [
        "equal(%x, -2147483648)",
        "less_equal(%x, -2147483648)",
        "greater_equal(-2147483648, %x)",
        "not_equal(%x, -2147483648)",
        "less(%x, add(-2147483647, -1))",
        "where(equal(%x, -2147483648), add(%x, -1), %x)",
        "equal(minimum(%x, -2147483648), %x)",
        "argmax(where(less(%x, 0), -2147483648, -2147483648))",
        "argmin(where(less(%x, 0), 2147483647, 2147483647))",
    ],
)
def test_int32_comparisons_with_the_lowest_value(body: str) -> None:
    # TVM's simplifier folds x == -2**31 and x <= -2**31 of an int32 x to false (found by a
    # fuzzing review): int32 comparisons hide their operands from it
    mod = relay.parse(f"def @main(%x: Tensor[(7,), int32]) {{ {body} }}")
    x = np.array([-(2**31), 1, -(2**31), 5, -1, 0, 2**31 - 1], np.int32)
    exe = relay.build(mod)
    np.testing.assert_array_equal(exe(x), exe.interpret(x), strict=True)
    cuda = relay.build(mod, target=Target("cuda", arch="sm_90"))
    assert set(cuda.placement.values()) == {"cuda"}


@pytest.mark.parametrize(
    ("dtype", "body"),
    [
        ("uint64", "subtract(%x, sign(%y))"),  # x - 0 was ~0 + 1: poison in 64 bits
        ("uint64", "add(multiply(%x, %y), %x)"),
        ("int64", "subtract(multiply(%x, %y), %y)"),  # int64 wraps as numpy's does
        ("int64", "negative(add(%x, %y))"),
        ("int64", "multiply(%x, -9223372036854775808i64)"),
        ("int64", "equal(add(%x, -9223372036854775808i64), 1i64)"),
        ("int32", "floor_mod(%x, -2147483648)"),  # TVM negated the constant divisor
        ("int32", "floor_divide(%x, -2147483648)"),
        ("int32", "left_shift(%x, -3)"),  # TVM folded the count's cast into a select
        ("int64", "left_shift(%x, -1i64)"),
        ("int32", 'cast(clip(%x, a_min=-2, a_max=-2), dtype="uint32")'),
        ("uint32", 'abs(cast(%x, dtype="int32"))'),  # a cast of unsigned taken as >= 0
        ("uint32", 'floor_mod(cast(%x, dtype="int32"), 3)'),
        ("uint32", 'nn.relu(cast(%x, dtype="int32"))'),
        ("uint64", 'less(cast(%x, dtype="int64"), 0i64)'),
        ("uint64", 'sign(cast(%x, dtype="int32"))'),
        ("int16", 'cast(%x, dtype="uint64")'),
        ("int64", "clip(%x, a_min=-9223372036854775807, a_max=9223372036854775806)"),
        ("uint64", "clip(%x, a_min=0, a_max=18446744073709551614)"),  # bounds were floats
    ],
)
def test_integer_edges_found_by_fuzzing(dtype: str, body: str) -> None:
    # older bugs found by a fuzzing review of integer kernels (2026-11-28): wrong values,
    # TVM compile errors, and for 64-bit arithmetic whose nuw/nsw product LLVM took to be
    # nonzero, a process killed by SIGFPE (test_64_bit_divisors_that_wrap_to_zero)
    info = np.iinfo(dtype)
    edges = [info.min, info.max, 0, 1, info.min + 1, info.max - 1, 2, 3, info.max // 2 + 1]
    x = np.array(edges + ([-1, -2, -3] if info.min < 0 else [info.max // 2, 5, 7]), dtype)
    y = np.roll(x, 5)
    mod = relay.parse(
        f"def @main(%x: Tensor[(12,), {dtype}], %y: Tensor[(12,), {dtype}]) {{ {body} }}"
    )
    exe = relay.build(mod)
    np.testing.assert_array_equal(exe(x, y), exe.interpret(x, y), strict=True)


@pytest.mark.parametrize("size", [3, 20000])  # -O0 and -O1 kernels
@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_64_bit_divisors_that_wrap_to_zero(dtype: str, size: int) -> None:
    # 2**32 * 2**32 wraps to 0: the division must raise the reference's error, not SIGFPE
    mod = relay.parse(
        f"def @main(%x: Tensor[({size},), {dtype}], %y: Tensor[({size},), {dtype}]) {{\n"
        "  floor_divide(%x, multiply(%y, %y))\n}"
    )
    x = np.arange(size).astype(dtype)
    y = np.full(size, 3, dtype)
    exe = relay.build(mod)
    np.testing.assert_array_equal(exe(x, y), x // np.asarray(9, dtype), strict=True)
    y[1] = 2**32
    with pytest.raises(relay.ExecutionError, match="integer division by zero"):
        exe(x, y)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_float_test_under_a_select_of_itself_compiles(dtype: str) -> None:
    # isfinite compared the bits as unsigned, and TVM's simplifier rewrote the comparison
    # under a select of it into a subtraction from 0u, which it then rejected (found by a
    # fuzzing review)
    text = (
        f"def @main(%f: Tensor[(8,), {dtype}], %i: Tensor[(8,), int32]) {{\n"
        "  %1 = isfinite(%f);\n  %2 = isnan(%f);\n"
        '  add(where(%1, cast(%1, dtype="int32"), %i), where(%2, cast(%2, dtype="int32"), %i))\n}'
    )
    f = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 3e38, -1e-45], dtype)
    i = np.arange(8, dtype=np.int32) * 10
    exe = relay.build(relay.parse(text))
    want = np.array([1, 20, 40, 31, 41, 51, 61, 71], np.int32)
    np.testing.assert_array_equal(exe(f, i), want, strict=True)
    np.testing.assert_array_equal(exe.interpret(f, i), want, strict=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
@pytest.mark.parametrize(
    "form", ["multiply(%x, Z)", "divide(%x, Z)", "add(%x, Z)", "divide(Z, %x)"]
)
def test_computed_zeros_of_other_float_types_are_not_folded(dtype: str, form: str) -> None:
    # the conversion of a comparison to float16 was not opaque: x * 0 gave 0 for NaN, and
    # x / 0 stopped TVM (found by a fuzzing review)
    zero = f'cast(less(%i, %i), dtype="{dtype}")'
    text = (
        f"def @main(%x: Tensor[(6,), {dtype}], %i: Tensor[(6,), int32]) "
        f"{{ {form.replace('Z', zero)} }}"
    )
    x = np.array([np.nan, np.inf, -np.inf, -2.0, 0.0, -0.0], np.float32).astype(
        ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    )
    i = np.arange(6, dtype=np.int32)
    exe = relay.build(relay.parse(text))
    with np.errstate(all="ignore"):
        got, want = (np.asarray(v).astype(np.float64) for v in (exe(x, i), exe.interpret(x, i)))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        *(np.signbit(np.where(np.isnan(want), 0, v)) for v in (got, want))
    )


@pytest.mark.skipif(cuda.nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize(
    "body",
    [
        'multiply(%x, cast(equal(%i, %i), dtype="DT"))',
        'divide(%x, cast(greater(%i, %i), dtype="DT"))',
        "subtract(ones_like(%x), ones_like(%x))",
        "where(less(%i, 3), %x, negative(zeros_like(%x)))",
    ],
)
def test_values_the_simplifier_folds_to_literals_compile_for_cuda(dtype: str, body: str) -> None:
    # TIR's reinterpretation, the opaque form for CUDA, takes its operand's address, and
    # nvcc rejected the address of the literal the simplifier folded it to (found by a
    # fuzzing review): CUDA's __float_as_int and __int_as_float instead
    text = (
        f"def @main(%x: Tensor[(64,), {dtype}], %i: Tensor[(64,), int32]) "
        f"{{ {body.replace('DT', dtype)} }}"
    )
    exe = relay.build(relay.parse(text), target=Target("cuda", arch="sm_90"))
    assert set(exe.placement.values()) == {"cuda"}
