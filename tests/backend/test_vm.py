"""The VM: programs with control flow, recursion, closures, data types and references run
compiled, with the interpreter's results and errors; its code, memory and saved form."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relay
from relay import Tensor, flags, float32
from relay.backend.interpreter import ConstructorValue, from_python_list, to_python_list
from relay.backend.vm import VMClosure
from relay.backend.vm.machine import POOL_DEPTH
from relay.errors import ExecutionError, TypeCheckError
from relay.std import prelude_text
from tests.vm_programs import LOOP, TOTAL

pytestmark = pytest.mark.tvm


def build(text: str, with_prelude: bool = False, native_loops: bool = True) -> relay.Executable:
    """The VM executable of ``text``; with ``native_loops=False`` its loops run instruction
    by instruction (what the tests of the VM's own execution need)."""
    mod = relay.parse((prelude_text() + "\n" if with_prelude else "") + text)
    with flags.override(native_loops=native_loops):
        exe = relay.build(mod)
    assert exe.kind == "vm", exe.kind
    return exe


def same(a: Any, b: Any) -> bool:
    """Run-time values equal (arrays exactly, constructor values by name and fields)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, ConstructorValue):
        return (
            isinstance(b, ConstructorValue)
            and a.name == b.name
            and len(a.fields) == len(b.fields)
            and all(map(same, a.fields, b.fields))
        )
    return bool(a == b)


def test_a_loop_runs_on_the_vm_in_constant_stack() -> None:
    exe = build(LOOP, native_loops=False)
    x = np.array([1, -2, 3, 0.5], np.float32)
    np.testing.assert_array_equal(exe(np.int32(3), x), x * 8)
    np.testing.assert_array_equal(exe(np.int32(0), x), x)
    assert exe.vm is not None
    # the loop is a tail call straight to the lifted function's code: no closure is made
    assert exe.vm.program.astext() == (
        "def main(%0:n, %1:x) registers=3:  # entry\n"
        "  %2 = const[0] int32[] 0\n"
        "    0: tail_call main_lifted0(%0, %2, %1)\n"
        "def main_lifted0[%0](%1:i, %2:acc) registers=6:\n"
        "    0: %3 = invoke fused_less_0(%1, %0)\n"
        "    1: if %3 else jump 5\n"
        "    2: %4 = invoke fused_add_1(%1)\n"
        "    3: %5 = invoke fused_multiply_2(%2)\n"
        "    4: tail_call main_lifted0(%0, %4, %5)\n"
        "    5: ret %2\n"
    )
    # 100,000 iterations: no stack growth, and after the first few no allocation either
    vm = exe.vm.machine()
    tracemalloc.start()
    try:
        out = exe(np.int32(100_000), np.zeros(4, np.float32))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out, np.zeros(4, np.float32))
    assert peak < 200_000
    assert all(len(pool) <= POOL_DEPTH for pool in vm._pools.values())
    assert vm.allocations < 16


def test_memory_stays_flat_over_a_long_loop_of_large_tensors() -> None:
    @relay
    def scale(x: Tensor[float32, (262_144,)], n: int) -> Tensor[float32, (262_144,)]:
        for _ in range(n):
            x = x * 0.5 + 1.0
        return x

    x = np.ones(262_144, np.float32)
    scale(x, 3)
    tracemalloc.start()
    try:
        out = scale(x, 2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(out, np.full_like(x, 2.0), rtol=1e-6)
    assert peak < 8 * x.nbytes  # a few buffers of 1 MiB, not 2000


def test_frontend_loops_with_break_and_continue() -> None:
    @relay
    def f(x: Tensor[float32, (3,)], n: int) -> Tensor[float32, (3,)]:
        acc = x
        i = 0
        while i < n:
            i = i + 1
            if i % 3 == 0:
                continue
            if i > 10:
                break
            acc = np.tanh(acc) + x
        return acc

    def reference(x: np.ndarray, n: int) -> np.ndarray:
        acc, i = x.astype(np.float64), 0
        while i < n:
            i += 1
            if i % 3 == 0:
                continue
            if i > 10:
                break
            acc = np.tanh(acc) + x
        return acc

    x = np.array([0.5, -1, 2], np.float32)
    for n in (0, 1, 5, 20):
        np.testing.assert_allclose(f(x, n), reference(x, n), rtol=1e-5, atol=1e-6)
    assert f._compiled_for((x, 5)).runtime["executable"].kind == "vm"


def test_non_tail_recursion_over_a_long_list() -> None:
    exe = build(TOTAL, with_prelude=True)
    items = [np.full(3, i % 7, np.float32) for i in range(20_000)]  # exact sums
    lst = from_python_list(exe.module, items)
    z = np.zeros(3, np.float32)
    np.testing.assert_array_equal(exe(lst, z), np.sum(items, axis=0))
    vm = exe.vm.machine()  # type: ignore[union-attr]
    vm.max_stack_depth = 100
    try:
        with pytest.raises(ExecutionError, match="stack overflow: more than 100 nested calls"):
            exe(lst, z)
    finally:
        vm.max_stack_depth = 1_000_000


def test_prelude_functions_closures_in_lists_and_returned_closures() -> None:
    exe = build(
        """
def @main(%x: float32) -> (float32, List[float32], fn (float32) -> float32) {
  let %fs = Cons(fn (%y: float32) -> float32 { %y * 2f },
                 Cons(fn (%y: float32) -> float32 { %y + %x }, Nil));
  let %applied = @foldl(fn (%acc: float32, %f: fn (float32) -> float32) -> float32 { %f(%acc) }, %x, %fs);
  let %mapped = @map(fn (%f: fn (float32) -> float32) -> float32 { %f(1f) }, %fs);
  (%applied, %mapped, fn (%z: float32) -> float32 { %z * %x })
}""",
        with_prelude=True,
    )
    applied, mapped, closure = exe(np.float32(3))
    assert applied == 9 and [float(v) for v in to_python_list(mapped)] == [2.0, 4.0]
    assert isinstance(closure, VMClosure)
    assert closure(np.float32(5)) == 15


def test_references_and_a_failed_match_like_the_interpreter() -> None:
    text = """
def @main(%n: int32, %l: List[int32]) -> (int32, int32) {
  let %r = ref(0);
  let %loop = fn (%i: int32) -> () {
    if (%i < %n) { let %u = ref_write(%r, ref_read(%r) + %i); %loop(%i + 1) } else { () }
  };
  let %done = %loop(0);
  let %first = match? (%l) { Cons(%h, _) => %h };
  (ref_read(%r), %first)
}"""
    exe = build(text, with_prelude=True)
    mod = exe.module
    total, first = exe(np.int32(5), from_python_list(mod, [np.int32(7)]))
    assert total == 10 and first == 7
    with pytest.raises(ExecutionError) as vm_err:
        exe(np.int32(5), from_python_list(mod, []))
    with pytest.raises(ExecutionError) as interp_err:
        exe.interpret(np.int32(5), from_python_list(mod, []))
    assert vm_err.value.message == interp_err.value.message
    assert vm_err.value.message == "no clause of the match matched the value Nil"
    assert vm_err.value.span == interp_err.value.span and vm_err.value.span is not None


def test_a_recursive_tree_network() -> None:
    exe = build(
        """
def @node(%t: Tree[Tensor[(8,), float32]], %w: Tensor[(8, 8), float32],
          %z: Tensor[(8,), float32]) -> Tensor[(8,), float32] {
  match (%t) {
    Rose(%x, %children) => {
      let %hs = @map(fn (%c: Tree[Tensor[(8,), float32]]) -> Tensor[(8,), float32] {
        @node(%c, %w, %z)
      }, %children);
      let %s = @foldl(fn (%a: Tensor[(8,), float32], %b: Tensor[(8,), float32]) -> Tensor[(8,), float32] {
        add(%a, %b)
      }, %z, %hs);
      tanh(add(sum(multiply(%w, %x), axis=[1]), %s))
    }
  }
}
def @main(%t: Tree[Tensor[(8,), float32]], %w: Tensor[(8, 8), float32],
          %z: Tensor[(8,), float32]) -> Tensor[(8,), float32] {
  @node(%t, %w, %z)
}""",
        with_prelude=True,
    )
    mod = exe.module
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((8, 8)) / 4).astype(np.float32)
    tree_type = mod.get_global_type_var("Tree")
    rose = mod.type_definitions[tree_type].constructors[0]

    def make(depth: int) -> tuple[Any, np.ndarray]:
        x = rng.standard_normal(8).astype(np.float32)
        kids = [make(depth - 1) for _ in range(2 if depth else 0)]
        h = np.tanh(w.astype(np.float64) @ x + sum((k[1] for k in kids), np.zeros(8)))
        value = ConstructorValue(rose, (x, from_python_list(mod, [k[0] for k in kids])))
        return value, h

    tree, want = make(5)
    z = np.zeros(8, np.float32)
    got = exe(tree, w, z)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, exe.interpret(tree, w, z), rtol=1e-5, atol=1e-6)


def test_higher_order_gradient_of_a_loop_runs_on_the_vm() -> None:
    @relay
    def power(x: Tensor[float32, (3,)], n: int) -> Tensor[float32, ()]:
        acc = x
        for _ in range(n):
            acc = acc * x
        return np.sum(acc)

    d = relay.grad(power, argnums=0)
    x = np.array([0.5, -1.5, 2.0], np.float32)
    value, dx = d(x, 3)
    np.testing.assert_allclose(value, np.sum(x**4), rtol=1e-5)
    np.testing.assert_allclose(dx, 4 * x**3, rtol=1e-5)
    _, dx_i = d.interpret(x, 3)
    np.testing.assert_allclose(dx, dx_i, rtol=1e-6)


def test_dynamic_shapes_get_kernels_specialized_at_run_time() -> None:
    exe = build(
        """
def @main(%x: Tensor[(?, 4), float32], %c: bool) -> Tensor[(4,), float32] {
  if (%c) { sum(exp(%x), axis=[0]) } else { max(%x, axis=[0]) }
}"""
    )
    assert exe.vm is not None
    text = exe.vm.program.astext()
    assert "invoke_dynamic ref[0](%0)" in text and "invoke_dynamic ref[1](%0)" in text
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    np.testing.assert_allclose(exe(x, np.bool_(True)), np.exp(x).sum(axis=0), rtol=1e-6)
    np.testing.assert_allclose(exe(x * 2, np.bool_(True)), np.exp(x * 2).sum(axis=0), rtol=1e-6)
    np.testing.assert_array_equal(exe(x[:2], np.bool_(False)), x[:2].max(axis=0))
    # one kernel per function and shape: the sum at (3, 4), the max at (2, 4)
    assert exe.vm.dynamic.compiled == 2


def test_elementwise_functions_get_one_kernel_for_every_size() -> None:
    exe = build(
        """
def @main(%x: Tensor[(?, ?), float32], %y: Tensor[(?, ?), float32], %s: float32, %c: bool)
    -> Tensor[(?, ?), float32] {
  if (%c) { tanh(%x * %y + %s) } else { negative(%x) }
}"""
    )
    assert exe.vm is not None
    rng = np.random.default_rng(0)
    # empty, shorter than a vector, around 16, and past the parallel threshold (16,384)
    for shape in [(0, 3), (1, 1), (3, 5), (2, 8), (1, 17), (33, 7), (300, 70)]:
        x, y = rng.standard_normal((2, *shape), dtype=np.float32)
        want = np.tanh(x.astype(np.float64) * y + 0.5)
        np.testing.assert_allclose(exe(x, y, np.float32(0.5), np.bool_(True)), want, atol=1e-6)
        np.testing.assert_array_equal(exe(x, y, np.float32(0.5), np.bool_(False)), -x)
    # a (1, 1) operand is a scalar here: y broadcast against x
    x = rng.standard_normal((5, 6), dtype=np.float32)
    one = np.full((1, 1), 2.0, np.float32)
    np.testing.assert_allclose(
        exe(x, one, np.float32(0), np.bool_(True)), np.tanh(x * 2), atol=1e-6
    )
    # each function compiled once for (full, full) operands and once with y a scalar
    assert exe.vm.dynamic.compiled == 3


def test_an_elementwise_kernel_for_every_size_keeps_its_checks() -> None:
    exe = build(
        """
def @main(%x: Tensor[(?,), int32], %d: Tensor[(?,), int32], %c: bool) -> Tensor[(?,), int32] {
  if (%c) { floor_divide(%x, %d) } else { %x }
}"""
    )
    x = np.arange(40, dtype=np.int32) - 20
    d = np.full(40, 3, np.int32)
    np.testing.assert_array_equal(exe(x, d, np.bool_(True)), x // 3)
    d[37] = 0  # in the tail, past the 16-wide block
    with pytest.raises(ExecutionError) as vm_err:
        exe(x, d, np.bool_(True))
    with pytest.raises(ExecutionError) as interp_err:
        exe.interpret(x, d, np.bool_(True))
    assert vm_err.value.message == interp_err.value.message
    assert exe.vm is not None and exe.vm.dynamic.compiled == 1


def test_a_shape_that_depends_on_values_runs_the_references() -> None:
    exe = build(
        """
def @main(%n: float32, %c: bool) -> float32 {
  if (%c) { sum(arange(0f, %n, 1f, dtype="float32")) } else { 0f }
}"""
    )
    assert exe.vm is not None
    text = exe.vm.program.astext()
    assert "%4 = invoke_dynamic ref[0](%2, %0, %3)" in text  # arange: (?,) whatever the shapes
    assert "%5 = invoke_dynamic ref[1](%4)" in text  # sum: compiled per length
    assert exe(np.float32(5), np.bool_(True)) == 10
    assert exe(np.float32(7), np.bool_(True)) == 21
    assert exe(np.float32(7.5), np.bool_(True)) == 28
    assert exe.vm.dynamic.compiled == 3  # the sums of 5, 7 and 8 elements; arange none


def test_specializations_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.backend.vm import dynamic

    monkeypatch.setattr(dynamic, "MAX_SPECIALIZATIONS", 2)
    exe = build(
        """
def @main(%x: Tensor[(?,), float32], %c: bool) -> float32 {
  if (%c) { sum(exp(%x)) } else { 0f }
}"""
    )
    for n in range(1, 6):
        x = np.linspace(0, 1, n, dtype=np.float32)
        np.testing.assert_allclose(exe(x, np.bool_(True)), np.exp(x).sum(), rtol=1e-6)
    assert exe.vm is not None and exe.vm.dynamic.compiled == 2


def test_run_time_type_checks_stay_on_the_interpreter() -> None:
    mod = relay.parse(
        """
def @f(%x: Tensor[(3,), float32]) -> Tensor[(3,), float32] { %x }
def @main(%x: Tensor[(?,), float32], %c: bool) -> Tensor[(3,), float32] {
  if (%c) { @f(%x) } else { @f(%x) }
}"""
    )
    exe = relay.build(mod)
    assert exe.kind == "interpreter"
    with pytest.raises(ExecutionError):
        exe(np.ones(4, np.float32), np.bool_(True))


def test_misaligned_and_strided_arguments_are_copied() -> None:
    exe = build(LOOP)
    raw = np.zeros(4 * 8 + 1, np.uint8)[1:].view(np.float32)  # 1 byte off: misaligned
    raw[:] = [1, 2, 3, 4, 5, 6, 7, 8]
    strided = raw[::2]
    np.testing.assert_array_equal(exe(np.int32(1), strided), np.array([2, 6, 10, 14], np.float32))


def test_checks_compare_vm_results_with_the_interpreter() -> None:

    exe = build(LOOP)
    x = np.array([1, 2, 3, 4], np.float32)
    with flags.override(checks=True):
        np.testing.assert_array_equal(exe(np.int32(2), x), x * 4)


def test_save_and_load_a_vm_executable_in_a_fresh_process(tmp_path: Path) -> None:
    exe = build(
        LOOP.replace("def @main", "def @helper")
        + """
def @main(%n: int32, %l: List[Tensor[(4,), float32]]) -> List[Tensor[(4,), float32]] {
  @map(fn (%x: Tensor[(4,), float32]) -> Tensor[(4,), float32] { @helper(%n, %x) }, %l)
}""",
        with_prelude=True,
    )
    path = tmp_path / "loop.relay"
    exe.save(path)
    script = f"""
import numpy as np, relay
from relay.backend.interpreter import from_python_list, to_python_list
exe = relay.Executable.load({str(path)!r})
assert exe.kind == "vm", exe.kind
items = [np.arange(4, dtype=np.float32) + i for i in range(3)]
out = to_python_list(exe(np.int32(2), from_python_list(exe.module, items)))
print([o.tolist() for o in out])
"""
    env = {**os.environ, "RELAY_CACHE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(
        [(np.arange(4, dtype=np.float32) + i).__mul__(4).tolist() for i in range(3)]
    )


def test_relay_function_results_convert_like_the_interpreter() -> None:
    @relay
    def count(xs: Tensor[float32, (5,)], limit: float) -> tuple[int, Tensor[float32, (5,)]]:
        n = 0
        out = xs
        for i in range(5):
            if xs[i] > limit:
                n = n + 1
                out = out * 2.0
        return n, out

    xs = np.array([0.1, 0.9, 0.5, 0.7, 0.2], np.float32)
    n, out = count(xs, 0.4)
    assert n == 3 and isinstance(n, np.ndarray) and n.dtype == np.int32
    np.testing.assert_array_equal(out, xs * 8)
    n_i, out_i = count.interpret(xs, 0.4)
    assert same((n, out), (n_i, out_i))


def test_integer_scalar_functions_run_in_python_like_their_kernels() -> None:
    exe = build(
        """
def @main(%a: int32, %b: int32, %c: bool) -> (int32, int32, bool, uint8) {
  if (%c) {
    (add(%a, %b), floor_divide(%a, %b), less(%a, %b), cast(subtract(%a, %b), dtype="uint8"))
  } else {
    (%a, %b, %c, 0u8)
  }
}"""
    )
    assert exe.vm is not None
    assert sum(k.scalar is not None for k in exe.vm.program.kernels) >= 3
    big = np.int32(2**31 - 1)
    for a, b in [(big, np.int32(1)), (np.int32(7), np.int32(-2)), (np.int32(-7), np.int32(2))]:
        got = exe(a, b, np.bool_(True))
        want = exe.interpret(a, b, np.bool_(True))
        assert [g.dtype for g in got] == [w.dtype for w in want]
        assert [g.item() for g in got] == [w.item() for w in want]
    assert exe(big, np.int32(1), np.bool_(True))[0] == -(2**31)  # wraps around
    with pytest.raises(ExecutionError) as vm_err:
        exe(np.int32(1), np.int32(0), np.bool_(True))
    with pytest.raises(ExecutionError) as interp_err:
        exe.interpret(np.int32(1), np.int32(0), np.bool_(True))
    assert vm_err.value.message == interp_err.value.message
    assert "division by zero" in vm_err.value.message


def test_relay_checks_name_the_vm_kernel_that_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.backend.cache import kernel_cache
    from relay.op.registry import get_op

    opdef = get_op("negative")

    def wrong(call):  # type: ignore[no-untyped-def]  # the identity instead of negation
        from tvm import te

        (x,) = call.args
        return te.compute(x.shape, lambda *i: x(*i), name="T_wrong")

    monkeypatch.setattr(opdef, "lowering", wrong)
    x = np.ones(4, np.float32)
    try:
        with flags.override(cache=False):
            kernel_cache().clear_memory()
            exe = build(
                """
def @main(%x: Tensor[(4,), float32], %c: bool) -> Tensor[(4,), float32] {
  if (%c) { negative(exp(%x)) } else { %x }
}"""
            )
            exe(x, np.bool_(True))  # no checks: the wrong answer goes unnoticed
            with flags.override(checks=True), pytest.raises(ExecutionError) as info:
                exe(x, np.bool_(True))
    finally:
        kernel_cache().clear_memory()
    message = str(info.value)
    assert "differs from the interpreter" in message
    assert "first differing kernel: fused_exp_negative_0" in message
    assert "negative(%0)" in message


def test_a_shared_value_is_computed_once() -> None:
    exe = build(
        """
def @main(%x: Tensor[(4,), float32], %c: bool) -> (Tensor[(4,), float32], Tensor[(4,), float32]) {
  %0 = exp(%x);
  if (%c) { (%0, add(%0, 1f)) } else { (%x, %0) }
}"""
    )
    assert exe.vm is not None
    assert exe.vm.program.astext().count("invoke fused_exp") == 1
    x = np.array([0, 1, 2, 3], np.float32)
    a, b = exe(x, np.bool_(True))
    np.testing.assert_allclose(a, np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(b, np.exp(x) + 1, rtol=1e-6)


def test_closures_go_back_in_and_run_on_each_threads_machine() -> None:
    import threading

    make = build(
        """
def @main(%a: float32) -> fn (float32) -> float32 {
  fn (%y: float32) -> float32 { %y * %a }
}"""
    )
    closure = make(np.float32(3))
    apply = relay.build(
        relay.parse(
            """
def @main(%f: fn (float32) -> float32, %x: float32, %c: bool) -> float32 {
  if (%c) { %f(%x) } else { %x }
}"""
        )
    )
    with pytest.raises(ExecutionError, match="a closure of another program cannot run here"):
        apply(closure, np.float32(2), np.bool_(True))
    results: list[Any] = []

    def worker(v: float) -> None:
        results.append(float(closure(np.float32(v))))

    threads = [threading.Thread(target=worker, args=(v,)) for v in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [3.0 * v for v in range(8)]


def test_an_index_out_of_range_in_a_loop_reports_the_source_line() -> None:
    @relay
    def pick(xs: Tensor[float32, (4, 3)], n: int) -> Tensor[float32, (3,)]:
        acc = np.zeros(3, dtype=np.float32)
        for t in range(n):
            acc = acc + xs[t]
        return acc

    xs = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(pick(xs, 4), np.full(3, 4, np.float32))
    with pytest.raises(ExecutionError) as vm_err:
        pick(xs, 6)
    with pytest.raises(ExecutionError) as interp_err:
        pick.interpret(xs, 6)
    assert vm_err.value.span == interp_err.value.span
    assert vm_err.value.span is not None and vm_err.value.span.line > 0
    assert "out of range for axis 0 of size 4" in vm_err.value.message
    assert "acc = acc + xs[t]" in str(vm_err.value)  # the source line, with its caret


def test_profile_counts_instructions_and_kernel_calls() -> None:
    exe = build(LOOP, native_loops=False)
    assert exe.vm is not None
    prof = exe.vm.profile([np.int32(3), np.ones(4, np.float32)], repeat=3)
    assert prof.opcodes == {"tail_call": 4, "invoke": 10, "if": 4, "ret": 1}
    assert prof.instructions == 19
    assert {k: calls for k, (calls, _) in prof.kernels.items()} == {
        "fused_less_0 (in Python)": 4,
        "fused_add_1 (in Python)": 3,
        "fused_multiply_2": 3,
    }
    assert prof.run_ms > 0 and prof.kernel_ms > 0
    assert "19 instructions" in str(prof)


def test_executable_profile_lists_the_vm_kernels() -> None:
    exe = build(LOOP, native_loops=False)
    names = [name for name, ms in exe.profile(np.int32(2), np.ones(4, np.float32), repeat=2)]
    assert sorted(names) == [
        "fused_add_1 (in Python)",
        "fused_less_0 (in Python)",
        "fused_multiply_2",
    ]


def test_vm_executables_convert_numbers_for_scalar_parameters() -> None:
    # as a @relay call and the graph executor do (graph_executor.scalar_argument): a Python
    # float is rounded to the dtype, nan kept, a number that does not fit is an error
    mod = relay.parse(
        """
def @main(%x: Tensor[(2,), float32], %s: float32, %c: bool) -> Tensor[(2,), float32] {
  if (%c) { multiply(%x, %s) } else { add(%x, %s) }
}"""
    )
    exe = relay.build(mod)
    assert exe.kind == "vm"
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(exe(x, 0.1, True), np.full(2, np.float32(0.1)))
    np.testing.assert_array_equal(exe(x, float("nan"), False), np.full(2, np.nan, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no numpy overflow warning either)
        with pytest.raises(TypeCheckError) as info:
            exe(x, 1e40, True)
    assert info.value.message == "argument 1 of @main (%s): 1e+40 does not fit in float32"
