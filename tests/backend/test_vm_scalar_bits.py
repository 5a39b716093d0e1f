"""The VM's Python evaluation of scalar functions (relay.backend.vm.scalar) for the bitwise
operators and shifts: against each operator's numpy reference on random values of every
integer width (hypothesis), and a program whose bit arithmetic runs in Python."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from relay.backend.vm.scalar import evaluator
from relay.op.registry import get_op

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"]


def python_and_reference(name: str, dtype: str, *values: int) -> tuple[object, object]:
    args = tuple(np.array(v, dtype) for v in values)
    tree = [name, dtype, *[["param", i] for i in range(len(values))]]
    got = evaluator(tree)(args)
    reference = get_op(name).reference
    assert reference is not None
    want = np.asarray(reference(*args))
    assert got.dtype == want.dtype
    return got.item(), want.item()


@st.composite
def operands(draw: st.DrawFn, counts: bool) -> tuple[str, int, int]:
    dtype = draw(st.sampled_from(INTS))
    info = np.iinfo(dtype)
    x = draw(st.integers(int(info.min), int(info.max)))
    if counts:  # shift counts in and out of range, negative ones where the dtype has them
        low = -3 if info.min < 0 else 0
        n = draw(st.integers(low, info.bits + 3))
    else:
        n = draw(st.integers(int(info.min), int(info.max)))
    return dtype, x, n


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(["bitwise_and", "bitwise_or", "bitwise_xor"]), v=operands(False))
def test_bitwise_operators_in_python_are_numpy_s(op: str, v: tuple[str, int, int]) -> None:
    got, want = python_and_reference(op, *v)
    assert got == want


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(["left_shift", "right_shift"]), v=operands(True))
def test_shifts_in_python_are_the_kernels(op: str, v: tuple[str, int, int]) -> None:
    got, want = python_and_reference(op, *v)
    assert got == want


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_not_of_the_extremes(dtype: str) -> None:
    info = np.iinfo(dtype)
    for v in (int(info.min), -1 if info.min < 0 else 1, 0, int(info.max)):
        got, want = python_and_reference("bitwise_not", dtype, v)
        assert got == want


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bool_operands_stay_bool(op: str) -> None:
    for a in (False, True):
        for b in (False, True):
            got, want = python_and_reference(op, "bool", a, b)
            assert got is want
    for a in (False, True):
        got, want = python_and_reference("bitwise_not", "bool", a)
        assert got is want


@pytest.mark.tvm
def test_a_program_s_bit_arithmetic_runs_in_python_like_its_kernels() -> None:
    import relay

    exe = relay.build(
        relay.parse(
            """
def @main(%a: int32, %b: int32, %c: bool) -> (int32, int32, int32, int32) {
  if (%c) {
    (bitwise_xor(%a, %b), left_shift(%a, 3), right_shift(%a, %b), bitwise_not(bitwise_and(%a, %b)))
  } else {
    (%a, %b, %a, %b)
  }
}"""
        )
    )
    assert exe.vm is not None
    assert sum(k.scalar is not None for k in exe.vm.program.kernels) >= 4
    for a, b in [(2**31 - 1, 1), (-7, 2), (-1, 40), (12345, -1)]:
        args = (np.int32(a), np.int32(b), np.bool_(True))
        got, want = exe(*args), exe.interpret(*args)
        assert [g.item() for g in got] == [w.item() for w in want]
