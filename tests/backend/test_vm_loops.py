"""Loops compiled into one kernel (relay/backend/vm/loops.py): which functions compile, the
code that runs, results equal to the VM's instruction by instruction and to the
interpreter's, the state rebound simultaneously, run-time checks, memory, threads."""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relay
from relay import Tensor, flags, float32
from relay.backend.vm.isa import Opcode
from relay.backend.vm.loops import Leaf, find_loops
from relay.errors import ExecutionError
from tests.vm_programs import LOOP

pytestmark = pytest.mark.tvm


def vm_of(f: Any, *args: Any) -> Any:
    """The VM executable a call of the @relay function ``f`` on ``args`` runs."""
    exe = f._compiled_for(args).runtime["executable"]
    assert exe.kind == "vm", exe.kind
    return exe.vm


def native(vm: Any) -> list[str]:
    """The names of the program's functions that run as one kernel."""
    return [f.name for f in vm.program.functions if f.native is not None]


def agree(f: Callable[..., Any], *args: Any) -> Any:
    """``f``'s result with its loops compiled; checked against the VM running them
    instruction by instruction and against the interpreter."""
    out = f(*args)
    with flags.override(native_loops=False):
        plain = relay.function(f.__wrapped__)(*args)  # type: ignore[attr-defined]
    want = f.interpret(*args)  # type: ignore[attr-defined]
    for got in (out, plain):
        for g, w in zip(_leaves(got), _leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return out


def _leaves(v: Any) -> list[Any]:
    return [x for f in v for x in _leaves(f)] if isinstance(v, tuple) else [v]


def test_the_loop_compiles_into_one_kernel_the_vm_invokes() -> None:
    exe = relay.build(relay.parse(LOOP))
    x = np.array([1, -2, 3, 0.5], np.float32)
    np.testing.assert_array_equal(exe(np.int32(3), x), x * 8)
    np.testing.assert_array_equal(exe(np.int32(0), x), x)
    assert exe.vm is not None
    assert exe.vm.program.astext() == (
        "def main(%0:n, %1:x) registers=3:  # entry\n"
        "  %2 = const[0] int32[] 0\n"
        "    0: tail_call main_lifted0(%0, %2, %1)\n"
        "def main_lifted0[%0](%1:i, %2:acc) registers=7:\n"
        "    0: %3 = invoke fused_less_0(%1, %0)\n"
        "    1: if %3 else jump 5\n"
        "    2: %4 = invoke fused_add_1(%1)\n"
        "    3: %5 = invoke fused_multiply_2(%2)\n"
        "    4: tail_call main_lifted0(%0, %4, %5)\n"
        "    5: ret %2\n"
        "  compiled into one kernel; what runs:\n"
        "    0: %6 = invoke loop_main_lifted0_1(%0, %1, %2)\n"
        "    1: ret %6\n"
    )
    assert exe.kernels[-1] == "loop_main_lifted0_1"
    prof = exe.vm.profile([np.array(3, np.int32), x], repeat=2)
    assert prof.opcodes == {"tail_call": 1, "invoke": 1, "ret": 1}
    assert {k: calls for k, (calls, _) in prof.kernels.items()} == {"loop_main_lifted0_1": 1}


def test_the_analysis_types_every_register() -> None:
    exe = relay.build(relay.parse(LOOP))
    assert exe.vm is not None
    (plan,) = find_loops(exe.vm.program, exe.vm.functions or [])
    assert plan.symbol == "loop_main_lifted0_1"
    assert plan.inputs == [0, 1, 2]
    assert plan.invariant == {0}  # %n is passed back unchanged: read in place
    scalar, vector = Leaf((), "int32"), Leaf((4,), "float32")
    assert plan.result == vector
    assert plan.types == {
        0: scalar,
        1: scalar,
        2: vector,
        3: Leaf((), "bool"),
        4: scalar,
        5: vector,
    }


def test_100_000_iterations_run_in_the_kernel_without_allocating() -> None:
    exe = relay.build(relay.parse(LOOP))
    assert exe.vm is not None
    vm = exe.vm.machine()
    exe(np.int32(3), np.zeros(4, np.float32))
    before = vm.allocations
    tracemalloc.start()
    try:
        out = exe(np.int32(100_000), np.ones(4, np.float32))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out, np.full(4, np.inf, np.float32))  # 2**100000
    assert peak < 50_000
    assert vm.allocations - before <= 1  # the result, at most


def test_the_state_is_rebound_simultaneously() -> None:
    # a, b = b, a + b: the new a is the old b, read before b is overwritten
    @relay
    def fibonacci(n: int, a: Tensor[float32, (3,)], b: Tensor[float32, (3,)]):
        for _ in range(n):
            a, b = b, a + b
        return a, b

    a, b = np.zeros(3, np.float32), np.array([1, 2, 3], np.float32)
    out = agree(fibonacci, 10, a, b)
    np.testing.assert_array_equal(out[0], np.array([55, 110, 165], np.float32))
    assert native(vm_of(fibonacci, 10, a, b)) == ["fibonacci_lifted0"]


def test_a_swap_and_a_value_carried_unchanged() -> None:
    @relay
    def swap(n: int, a: Tensor[float32, (2, 2)], b: Tensor[float32, (2, 2)], c: float):
        for _ in range(n):
            a, b, c = b, a, c
        return a - b, c

    a, b = np.eye(2, dtype=np.float32), np.ones((2, 2), np.float32)
    for n in (0, 1, 2, 7):
        agree(swap, n, a, b, 2.5)


def test_branches_with_values_views_and_break() -> None:
    @relay
    def walk(x: Tensor[float32, (6,)], n: int):
        total = np.zeros((2, 3), dtype=np.float32)
        i = 0
        while i < n:
            i = i + 1
            if np.sum(x) > 0:  # noqa: SIM108 - a statement if, with a join, is tested
                y = x * 0.5
            else:
                y = x + 1.0
            x = y - 0.25
            if i > 6:
                break
            total = total + np.reshape(x, (2, 3))
        return total, x

    x = np.array([3, -1, 2, 0.5, -2, 1], np.float32)
    for n in (0, 1, 4, 10):
        agree(walk, x, n)
    assert native(vm_of(walk, x, 3)) == ["walk_lifted0"]


def test_rnn_loop_compiles_with_its_captured_weights() -> None:
    @relay
    def rnn(xs: Tensor[float32, (5, 8)], w: Tensor[float32, (8, 8)], u: Tensor[float32, (8, 8)]):
        h = np.zeros(8, dtype=np.float32)
        for t in range(5):
            h = np.tanh(w @ xs[t] + u @ h)
        return h

    rng = np.random.default_rng(0)
    xs, w, u = (rng.standard_normal(s).astype(np.float32) / 3 for s in [(5, 8), (8, 8), (8, 8)])
    out = agree(rnn, xs, w, u)
    h = np.zeros(8)
    for t in range(5):
        h = np.tanh(w @ xs[t] + u @ h)
    np.testing.assert_allclose(out, h, rtol=1e-5, atol=1e-6)
    vm = vm_of(rnn, xs, w, u)
    assert native(vm) == ["rnn_lifted0"]


def test_a_failed_check_inside_the_loop_raises_the_vms_error() -> None:
    @relay
    def pick(xs: Tensor[float32, (4, 3)], n: int) -> Tensor[float32, (3,)]:
        acc = np.zeros(3, dtype=np.float32)
        for t in range(n):
            acc = acc + xs[t]
        return acc

    xs = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(pick(xs, 4), np.full(3, 4, np.float32))
    assert native(vm_of(pick, xs, 4)) == ["pick_lifted0"]
    with pytest.raises(ExecutionError) as compiled:
        pick(xs, 6)
    with flags.override(native_loops=False):
        plain = relay.function(pick.__wrapped__)  # type: ignore[attr-defined]
        with pytest.raises(ExecutionError) as stepped:
            plain(xs, 6)
    assert compiled.value.message == stepped.value.message
    assert compiled.value.span == stepped.value.span and compiled.value.span is not None
    assert "out of range for axis 0 of size 4" in compiled.value.message
    np.testing.assert_array_equal(pick(xs, 2), np.full(3, 2, np.float32))  # still usable


def test_nested_loops_compile_the_inner_driver_called_by_the_outer() -> None:
    @relay
    def nested(x: Tensor[float32, (3,)], n: int):
        for i in range(n):
            for _ in range(i):
                x = x * 0.5 + 1.0
        return x

    x = np.array([1, 2, 3], np.float32)
    for n in (0, 3, 5):
        agree(nested, x, n)
    vm = vm_of(nested, x, 3)
    assert native(vm) == ["nested_lifted1", "nested_lifted0"]
    outer = vm.program.functions[vm.program.function_index("nested_lifted1")]
    assert any(ins[0] == Opcode.CALL for ins in outer.code)  # the call the driver makes


def test_a_failed_check_in_an_inner_loop_stops_both_drivers() -> None:
    @relay
    def pick(xs: Tensor[float32, (4, 3)], n: int, m: int):
        acc = np.zeros(3, dtype=np.float32)
        for i in range(m):
            for t in range(n):
                acc = acc + xs[t] * (i + 1.0)
        return acc

    xs = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(agree(pick, xs, 4, 2), np.full(3, 12, np.float32))
    assert native(vm_of(pick, xs, 4, 2)) == ["pick_lifted1", "pick_lifted0"]
    with pytest.raises(ExecutionError) as compiled:
        pick(xs, 6, 2)
    with flags.override(native_loops=False):
        plain = relay.function(pick.__wrapped__)  # type: ignore[attr-defined]
        with pytest.raises(ExecutionError) as stepped:
            plain(xs, 6, 2)
    assert compiled.value.message == stepped.value.message
    assert compiled.value.span == stepped.value.span and compiled.value.span is not None


def test_loops_with_closures_or_data_stay_on_the_vm() -> None:
    exe = relay.build(
        relay.parse(
            relay.std.prelude_text()
            + """
def @main(%n: int32, %x: Tensor[(2,), float32]) -> List[Tensor[(2,), float32]] {
  let %loop = fn (%i: int32, %acc: List[Tensor[(2,), float32]]) -> List[Tensor[(2,), float32]] {
    if (%i < %n) { %loop(%i + 1, Cons(%x, %acc)) } else { %acc }
  };
  %loop(0, Nil)
}"""
        )
    )
    assert exe.vm is not None
    assert native(exe.vm) == []
    from relay.backend.interpreter import to_python_list

    assert len(to_python_list(exe(np.int32(3), np.ones(2, np.float32)))) == 3


def test_threads_run_the_compiled_loop_at_once() -> None:
    exe = relay.build(relay.parse(LOOP))
    results: dict[int, Any] = {}

    def run(k: int) -> None:
        x = np.full(4, k, np.float32)
        results[k] = [exe(np.int32(k % 5), x) for _ in range(200)][-1]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, out in results.items():
        np.testing.assert_array_equal(out, np.full(4, k * 2 ** (k % 5), np.float32))


def test_checks_mode_runs_the_loop_instruction_by_instruction() -> None:
    exe = relay.build(relay.parse(LOOP))
    assert exe.vm is not None
    x = np.ones(4, np.float32)
    with flags.override(checks=True):
        np.testing.assert_array_equal(exe(np.int32(2), x), x * 4)
    assert exe.vm.first_bad_kernel([np.array(2, np.int32), x]) is None
