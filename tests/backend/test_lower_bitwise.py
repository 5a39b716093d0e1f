"""The TVM lowering of the bit operators against their numpy references: every integer dtype,
shift counts in and out of ``[0, bits)`` (LLVM's shift by such a count is poison), bools,
broadcasting, and fused kernels (requantization, a count computed in the kernel, shifts
compared after wrapping around)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import relay
from relay.backend import cuda
from relay.backend.compiler import compile_functions
from relay.backend.target import Target
from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Expr, Function, Var, const
from relay.ir.types import TensorType
from relay.op.registry import get_op
from relay.testing.lowering import check_op_lowering
from relay.typecheck.checker import infer_type

pytestmark = pytest.mark.tvm

Array = np.ndarray[Any, np.dtype[Any]]

SHIFTS = ["right_shift", "left_shift"]
LOGIC = ["bitwise_and", "bitwise_or", "bitwise_xor"]
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = SIGNED + UNSIGNED


def call(name: str, *args: Expr, **attrs: Any) -> Call:
    opdef = get_op(name)
    return Call(opdef.op, tuple(args), opdef.validate_attrs(attrs))


def run(body: Expr, params: list[Var], *args: Array) -> Array:
    """The compiled ``Primitive=1`` function of ``params`` and ``body`` on ``args``."""
    func = infer_type(Function(tuple(params), body, attrs=Attrs({"Primitive": 1})))
    assert isinstance(func, Function)
    lib, (symbol,) = compile_functions([func], Target.of(None))
    (out,) = lib[symbol](*args)
    return np.asarray(out)


def reference(name: str, *args: Array) -> Array:
    fn = get_op(name).reference
    assert fn is not None
    return np.asarray(fn(*args))


def edge_values(dtype: str, n: int, seed: int = 0) -> Array:
    """``n`` values of ``dtype``: the extremes, -1, 0, 1, then random ones over the range."""
    info = np.iinfo(dtype)
    edges = [int(info.min), int(info.max), 0, 1, int(info.max) - 1, int(info.min) + 1]
    if dtype in SIGNED:
        edges.append(-1)
    rng = np.random.default_rng(seed)
    rest = rng.integers(info.min, info.max, n - len(edges), dtype=dtype, endpoint=True)
    return np.concatenate([np.array(edges, dtype), rest])


def counts(dtype: str, n: int, seed: int = 1) -> Array:
    """``n`` shift counts of ``dtype``: every count from -3 to bits + 3 (negative ones only
    for signed types), then the extremes and random values over the whole range."""
    info = np.iinfo(dtype)
    near = np.arange(-3 if dtype in SIGNED else 0, info.bits + 4).astype(dtype)
    rng = np.random.default_rng(seed)
    far = rng.integers(info.min, info.max, max(n - near.size - 2, 0), dtype=dtype, endpoint=True)
    out = np.concatenate([near, np.array([info.min, info.max], dtype), far])
    assert out.size >= n
    return out[:n]


# ---- each operator, every dtype -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", SHIFTS)
def test_shift_counts_in_and_out_of_range(name: str, dtype: str) -> None:
    x = edge_values(dtype, 80).reshape(1, 80)
    c = counts(dtype, 80).reshape(80, 1)
    check_op_lowering(name, x, c)  # every value shifted by every count


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", SHIFTS)
def test_shift_by_a_scalar_count(name: str, dtype: str) -> None:
    x = edge_values(dtype, 40)
    bits = np.iinfo(dtype).bits
    for k in sorted({0, 1, bits - 1, bits, bits + 5} | ({-1} if dtype in SIGNED else set())):
        check_op_lowering(name, x, np.array(k, dtype))


@pytest.mark.parametrize("dtype", INTS)
def test_a_scalar_shifted_by_many_counts(dtype: str) -> None:
    c = counts(dtype, 60)
    for v in (1, -1 if dtype in SIGNED else 3):
        for name in SHIFTS:
            check_op_lowering(name, np.array(v, dtype), c)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", LOGIC)
def test_bitwise_logic(name: str, dtype: str) -> None:
    a = edge_values(dtype, 7 * 33, seed=2).reshape(7, 33)
    b = edge_values(dtype, 33, seed=3)
    check_op_lowering(name, a, b)
    check_op_lowering(name, b.reshape(33, 1), a[0])


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_not(dtype: str) -> None:
    check_op_lowering("bitwise_not", edge_values(dtype, 7 * 33).reshape(7, 33))


@pytest.mark.parametrize("name", LOGIC)
def test_bools(name: str) -> None:
    rng = np.random.default_rng(4)
    a, b = rng.random((7, 33)) < 0.5, rng.random((33,)) < 0.5
    check_op_lowering(name, a, b)
    check_op_lowering(name, b.reshape(33, 1), a[0])
    check_op_lowering(name, a, np.array(True))
    check_op_lowering("bitwise_not", a)


# ---- random arrays and counts ----------------------------------------------------------------------

# fixed shapes per case, so that each kernel compiles once and examples vary the values
SHAPES = [((4, 16), (16,)), ((4, 16), ()), ((), (4, 16)), ((4, 1), (1, 16))]


@st.composite
def shift_case(draw: st.DrawFn) -> tuple[str, Array, Array]:
    name = draw(st.sampled_from([*SHIFTS, *LOGIC]))
    dtype = draw(st.sampled_from(INTS))
    info = np.iinfo(dtype)
    xs, cs = draw(st.sampled_from(SHAPES))
    anything = st.integers(int(info.min), int(info.max))
    near = st.integers(max(int(info.min), -2), info.bits + 2)
    x = draw(hnp.arrays(dtype, xs, elements=anything))
    c = draw(hnp.arrays(dtype, cs, elements=near | anything))
    return name, np.asarray(x), np.asarray(c)


@settings(max_examples=150)
@given(case=shift_case())
def test_random_arrays_and_counts(case: tuple[str, Array, Array]) -> None:
    name, x, c = case
    check_op_lowering(name, x, c)


# ---- fused kernels ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shift", [1, 7, 10, 15])
def test_requantization_chain(shift: int) -> None:
    """``cast(clip(right_shift(add(acc, 2**(k-1)), k)), int8)``, the int8 requantization of a
    convolution's int32 accumulator, in one kernel."""
    acc = Var("acc", TensorType((3, 64), "int32"))
    rounding = const(np.array(1 << (shift - 1), np.int32))
    k = const(np.array(shift, np.int32))
    shifted = call("right_shift", call("add", acc, rounding), k)
    body = call("cast", call("clip", shifted, a_min=-127.0, a_max=127.0), dtype="int8")
    a = np.random.default_rng(5).integers(-(2**20), 2**20, (3, 64)).astype(np.int32)
    a[0, :4] = [2**31 - 1, -(2**31), -1, 1 << (shift - 1)]
    got = run(body, [acc], a)
    with np.errstate(over="ignore"):
        want = np.clip((a + np.int32(1 << (shift - 1))) >> np.int32(shift), -127, 127)
    np.testing.assert_array_equal(got, want.astype(np.int8), strict=True)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "uint32", "int64", "uint64"])
def test_a_count_computed_in_the_kernel(dtype: str) -> None:
    """Counts that are themselves fused (a cast from a narrower type, a sum): once bound by a
    ``tirx.Let``, such a count failed TVM's bound analysis."""
    x = Var("x", TensorType((3, 40), dtype))
    for src in ("bool", "int8", "uint8"):
        y = Var("y", TensorType((40,), src))
        a = edge_values(dtype, 120).reshape(3, 40)
        b = (np.arange(40) % 12 - 2).astype(src)
        cast = call("cast", y, dtype=dtype)
        for name in SHIFTS:
            want = reference(name, a, b.astype(dtype))
            np.testing.assert_array_equal(run(call(name, x, cast), [x, y], a, b), want)
    one = const(np.array(1, dtype))
    c = Var("c", TensorType((40,), dtype))
    cs = counts(dtype, 40)
    body = call("left_shift", call("right_shift", x, call("add", c, one)), call("add", c, one))
    a = edge_values(dtype, 120).reshape(3, 40)
    with np.errstate(over="ignore"):
        count = cs + np.array(1, dtype)
    want = reference("left_shift", reference("right_shift", a, count), count)
    np.testing.assert_array_equal(run(body, [x, c], a, cs), want)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_a_wrapped_left_shift_is_compared_as_wrapped(dtype: str) -> None:
    """``(x << k) < x`` and ``(x << k) >> k`` see the wrapped shift (no overflow assumed)."""
    x, k = Var("x", TensorType((8,), dtype)), Var("k", TensorType((), dtype))
    info = np.iinfo(dtype)
    a = np.array([info.max, info.max // 2 + 1, info.min, 1, 0, 5, 100, info.max - 1], dtype)
    for shift in (1, 4, info.bits - 1):
        kv = np.array(shift, dtype)
        shifted = reference("left_shift", a, kv)
        got = run(call("less", call("left_shift", x, k), x), [x, k], a, kv)
        np.testing.assert_array_equal(got, shifted < a)
        got = run(call("right_shift", call("left_shift", x, k), k), [x, k], a, kv)
        np.testing.assert_array_equal(got, reference("right_shift", shifted, kv))


def test_bool_bitwise_operators_of_comparisons() -> None:
    x, y = Var("x", TensorType((7, 33), "int32")), Var("y", TensorType((33,), "int32"))
    zero = const(np.array(0, np.int32))
    body = call(
        "bitwise_xor",
        call("bitwise_not", call("bitwise_and", call("less", x, y), call("greater", x, zero))),
        call("bitwise_or", call("equal", x, y), call("less", y, zero)),
    )
    rng = np.random.default_rng(6)
    a, b = rng.integers(-3, 4, (7, 33)).astype(np.int32), rng.integers(-3, 4, 33).astype(np.int32)
    want = ~((a < b) & (a > 0)) ^ ((a == b) | (b < 0))
    np.testing.assert_array_equal(run(body, [x, y], a, b), want, strict=True)


def test_a_parsed_program_builds_and_runs() -> None:
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(6,), int16], %m: Tensor[(6,), int16]) {\n"
        "  %0 = left_shift(bitwise_and(%x, %m), 3i16);\n"
        "  bitwise_xor(right_shift(%0, %m), bitwise_not(%x))\n"
        "}"
    )
    x = np.array([-32768, 32767, -1, 0, 1234, -1234], np.int16)
    m = np.array([0, 15, 16, -1, 3, 200], np.int16)
    with np.errstate(over="ignore"):
        left = reference("left_shift", x & m, np.array(3, np.int16))
    want = reference("right_shift", left, m) ^ ~x
    np.testing.assert_array_equal(relay.build(mod)(x, m), want, strict=True)


@pytest.mark.skipif(cuda.nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed")
def test_the_cuda_target_compiles_them_without_signed_overflow() -> None:
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(256, 384), int32], %k: Tensor[(384,), int32],\n"
        "          %b: Tensor[(384,), bool], %u: Tensor[(384,), uint8]) {\n"
        "  %0 = right_shift(add(%x, 64), %k);\n"
        "  (left_shift(%0, 3), bitwise_and(%0, 255), bitwise_not(%x), bitwise_xor(%b, %b),\n"
        "   right_shift(%u, %u), left_shift(%u, %u))\n"
        "}"
    )
    exe = relay.build(mod, target=Target("cuda", arch="sm_90"))
    assert exe.kernels and ".target sm_90" in exe.ptx()
    # the int32 left shift by 3 is done on uint (a signed overflow is undefined in C): its
    # operand is reinterpreted by a funnel shift, which returns an unsigned int
    assert re.search(r"__funnelshift_l\(0, \w+\[[^]]+\], 0\) << ", exe.cuda_source())


@pytest.mark.skipif(cuda.nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed")
@pytest.mark.parametrize(
    "body",
    [
        "left_shift(%x, -1i64)",
        'cast(subtract(subtract(%x, %x), 1i64), dtype="uint64")',
        'cast(cast(subtract(subtract(%x, %x), 1i64), dtype="uint64"), dtype="int64")',
        "left_shift(subtract(subtract(%x, %x), 1i64), 63i64)",
        "left_shift(%x, %x)",
    ],
)
def test_int64_values_the_simplifier_makes_negative_constants_compile_for_cuda(body: str) -> None:
    # CUDA's int64 reinterpretation was a cast, and TVM fails on the cast of a negative
    # constant to uint64 that its simplifier makes: the kernel ran on the CPU. It goes
    # through a double now, and a shift count is masked rather than selected.
    mod = relay.parse(f"def @main(%x: Tensor[(64,), int64]) {{ {body} }}")
    exe = relay.build(mod, target=Target("cuda", arch="sm_90"))
    assert set(exe.placement.values()) == {"cuda"}
    assert "__double_as_longlong(__longlong_as_double(" in exe.cuda_source()
