"""The VM on a device: control flow on the host, kernels and tensors on the device.

The machine's rules are tested on the CPU device with kernels compiled for the CPU: the
same code a GPU runs, with tensors in TVM's CPU memory instead of the GPU's. The tests
marked ``gpu`` run programs compiled for CUDA on this machine's GPU and skip without one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import relay
from relay import flags
from relay.backend.compiler import KernelLibrary
from relay.backend.device import Device, DeviceArray, device_put, from_dlpack
from relay.backend.interpreter import from_python_list
from relay.backend.vm import VMClosure
from relay.backend.vm.device import DeviceVirtualMachine, DeviceVMExecutor
from relay.errors import ExecutionError, TypeCheckError
from relay.std import prelude_text
from tests.vm_programs import LOOP, TOTAL

pytestmark = pytest.mark.tvm

CPU = Device("cpu")


def on_device(text: str, prelude: bool = False, move: int | None = None) -> tuple[Any, Any]:
    """The CPU's VM executable of ``text`` and the same program on the device VM (on the
    CPU device); ``move``: the index of a kernel to mark as another device's (mixed
    placement: it then runs on host copies)."""
    mod = relay.parse((prelude_text() + "\n" if prelude else "") + text)
    with flags.override(native_loops=False):  # (a GPU's VM has no compiled loops)
        exe = relay.build(mod)
    assert exe.kind == "vm" and exe.vm is not None
    library = exe.vm.library
    if move is not None:
        name = list(library.kernels)[move]
        moved = dataclasses.replace(library.kernels[name], device="elsewhere")
        library = KernelLibrary({**library.kernels, name: moved}, library.module, library.key)
    dev = DeviceVMExecutor(exe.vm.program, library, exe.target, exe.vm.functions, CPU)
    return exe, dev


def test_a_loop_runs_with_its_condition_read_on_the_host() -> None:
    exe, dev = on_device(LOOP)
    x = np.array([1, -2, 3, 0.5], np.float32)
    for n in (0, 3, 50):
        got = dev.run([np.int32(n), x])
        assert isinstance(got, DeviceArray) and got.device == CPU
        np.testing.assert_array_equal(got.numpy(), exe(np.int32(n), x))
    vm = dev.machine()
    assert isinstance(vm, DeviceVirtualMachine)
    before = vm.allocations
    dev.run([np.int32(1000), x])  # a long loop reuses its device buffers
    assert vm.allocations - before < 8
    assert all(len(pool) <= 8 for pool in vm._device_pools.values())


def test_results_are_copies_a_later_run_never_overwrites() -> None:
    _, dev = on_device(LOOP)
    x = np.ones(4, np.float32)
    first = dev.run([np.int32(2), x])
    dev.run([np.int32(5), x])
    np.testing.assert_array_equal(first.numpy(), x * 4)
    # device arguments are taken as they are
    np.testing.assert_array_equal(dev.run([np.int32(1), device_put(x, CPU)]).numpy(), x * 2)


def test_recursion_over_a_list_of_device_tensors() -> None:
    exe, dev = on_device(TOTAL, prelude=True)
    items = [np.full(3, i % 7, np.float32) for i in range(2_000)]
    lst = from_python_list(exe.module, items)
    z = np.zeros(3, np.float32)
    np.testing.assert_array_equal(dev.run([lst, z]).numpy(), np.sum(items, axis=0))


def test_closures_references_and_failures_like_the_cpu() -> None:
    exe, dev = on_device(
        """
def @main(%n: int32, %l: List[int32]) -> (int32, int32, fn (float32) -> float32) {
  let %r = ref(0);
  let %loop = fn (%i: int32) -> () {
    if (%i < %n) { let %u = ref_write(%r, ref_read(%r) + %i); %loop(%i + 1) } else { () }
  };
  let %done = %loop(0);
  let %first = match? (%l) { Cons(%h, _) => %h };
  (ref_read(%r), %first, fn (%z: float32) -> float32 { %z * 2f })
}""",
        prelude=True,
    )
    mod = exe.module
    total, first, closure = dev.run([np.int32(5), from_python_list(mod, [np.int32(7)])])
    assert (total.numpy(), first.numpy()) == (10, 7)
    assert isinstance(closure, VMClosure)
    assert closure(np.float32(4)).numpy() == 8
    with pytest.raises(ExecutionError) as err:
        dev.run([np.int32(5), from_python_list(mod, [])])
    assert err.value.message == "no clause of the match matched the value Nil"


def test_a_kernel_placed_on_the_host_runs_on_copies() -> None:
    exe, dev = on_device(LOOP, move=2)
    x = np.array([1, 2, 3, 4], np.float32)
    np.testing.assert_array_equal(dev.run([np.int32(4), x]).numpy(), exe(np.int32(4), x))


def test_shapes_known_at_run_time_run_on_host_kernels() -> None:
    exe, dev = on_device(
        """
def @main(%x: Tensor[(?), float32], %y: Tensor[(?), float32]) {
  tanh(add(%x, %y))
}"""
    )
    for n in (3, 17):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        np.testing.assert_allclose(dev.run([x, x]).numpy(), exe(x, x), rtol=1e-6)


def test_data_values_go_to_the_device_and_back() -> None:
    _, dev = on_device(TOTAL, prelude=True)
    vm = dev.machine()
    value = (np.arange(3, dtype=np.float32), (np.asarray(2, np.float32),))
    placed = vm.on_device(value)
    assert not isinstance(placed[0], np.ndarray)
    back = vm.host(placed)
    np.testing.assert_array_equal(back[0], value[0])
    assert back[1][0] == 2
    exported = vm.export(placed)
    assert isinstance(exported[0], DeviceArray) and isinstance(exported[1][0], DeviceArray)


# -- compiled for CUDA ---------------------------------------------------------------------------

SM90 = relay.Target("cuda", arch="sm_90")


@pytest.mark.skipif(relay.gpu_available(), reason="this machine has a GPU")
def test_control_flow_compiles_for_the_gpu_and_says_where_it_cannot_run() -> None:
    from relay.backend import cuda

    if cuda.nvcc() is None:
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    exe = relay.build(relay.parse(LOOP), target=SM90)
    assert exe.kind == "vm" and isinstance(exe.vm, DeviceVMExecutor)
    assert ".target sm_90" in b"".join(exe.library.device_code).decode()
    for x in (np.ones(4, np.float32), device_put(np.ones(4, np.float32), CPU)):
        with pytest.raises(ExecutionError) as err:
            exe(np.int32(3), x)
        assert str(err.value) == (
            "this program is compiled for cuda, and this machine has no device cuda:0 to run it on"
        )
    # device arrays are type-checked by their shapes and dtypes (nothing copied)
    with pytest.raises(TypeCheckError, match=r"Tensor\[\(4,\), float32\]"):
        exe(np.int32(3), device_put(np.ones(5, np.float32), CPU))


def test_gpu_builds_of_symbolic_and_run_time_shapes() -> None:
    from relay.backend import cuda

    if cuda.nvcc() is None:
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    # a shape variable: the device graph executor, one plan for every size
    exe = relay.build(
        relay.parse(
            "def @main[n: Shape](%x: Tensor[(n, 20), float32], %w: Tensor[(20, 8), float32]) "
            "{ nn.softmax(nn.matmul(tanh(%x), %w)) }"
        ),
        target=SM90,
    )
    assert exe.kind == "graph" and exe.device_plan is not None and exe.device_plan.shape_vars
    assert set(exe.placement.values()) == {"cuda"}
    # a dimension known only at run time: the VM, its kernels specialized on the host
    exe = relay.build(relay.parse("def @main(%x: Tensor[(?), float32]) { tanh(%x) }"), target=SM90)
    assert exe.kind == "vm" and isinstance(exe.vm, DeviceVMExecutor)


gpu = pytest.mark.skipif(not relay.gpu_available(), reason="no CUDA GPU on this machine")


@gpu
@pytest.mark.gpu
def test_a_loop_and_a_recursion_run_on_the_gpu() -> None:
    exe = relay.build(relay.parse(LOOP), target="cuda")
    x = np.array([1, -2, 3, 0.5], np.float32)
    got = exe(np.int32(6), relay.device_put(x))
    assert isinstance(got, DeviceArray) and got.device.kind == "cuda"
    np.testing.assert_array_equal(got.numpy(), x * 64)
    mod = relay.parse(prelude_text() + "\n" + TOTAL)
    exe = relay.build(mod, target="cuda")
    items = [np.full(3, i % 7, np.float32) for i in range(200)]
    got = exe(from_python_list(exe.module, items), np.zeros(3, np.float32))
    np.testing.assert_array_equal(np.asarray(got), np.sum(items, axis=0))


def test_a_reshaped_tensor_is_not_reused_while_its_view_lives() -> None:
    # a view of a pooled device tensor keeps the tensor in use: the later products of the
    # same shape must not overwrite what the reshapes show
    exe, dev = on_device(
        """
def @main(%n: int32, %x: Tensor[(2, 2), float32]) {
  let %m = if (%n > 0) { %x } else { %x * 3f };
  let %b = reshape(nn.matmul(%m, %m), newshape=[4]);
  let %b2 = reshape(nn.matmul(%m, %m * 2f), newshape=[4]);
  let %c = nn.matmul(%m, %m * 10f);
  (%b, %b2, %c)
}"""
    )
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    for g, e in zip(dev.run([np.int32(1), x]), exe(np.int32(1), x), strict=True):
        np.testing.assert_array_equal(g.numpy(), e)


def test_a_closure_keeps_the_device_array_it_captured() -> None:
    # an argument captured by a returned closure must not go back to the pool when the
    # caller drops it
    _, dev = on_device(
        """
def @main(%x: Tensor[(4,), float32]) -> fn () -> Tensor[(4,), float32] {
  fn () -> Tensor[(4,), float32] { %x }
}"""
    )
    closure = dev.run([device_put(np.arange(4, dtype=np.float32), CPU)])
    other = device_put(np.full(4, 99, np.float32), CPU)  # may take a freed tensor
    np.testing.assert_array_equal(closure().numpy(), np.arange(4, dtype=np.float32))
    assert other.numpy()[0] == 99


def test_arrays_of_another_framework_on_another_device_are_copied() -> None:
    # (a host array shared through DLPack, given to a machine whose device is not the host)
    _, dev = on_device(LOOP)
    vm = dev.machine()
    assert isinstance(vm, DeviceVirtualMachine)
    vm.device = Device("cuda")  # what the machine of a GPU program compares with
    vm._dev = CPU.tvm_device()
    from relay.backend.runtime import tvm

    shared = np.arange(4, dtype=np.float32)
    foreign = tvm().runtime.tensor(shared)  # another framework's host array (DLPack)
    placed = vm.on_device(foreign)  # copied, not passed on as a host pointer
    assert placed is not foreign and not hasattr(placed, "__array_interface__")
    foreign.copyfrom(np.full(4, 7, np.float32))
    np.testing.assert_array_equal(placed.numpy(), shared)
    np.testing.assert_array_equal(vm.host(foreign), np.full(4, 7, np.float32))
    np.testing.assert_array_equal(vm.host(from_dlpack(shared)), shared)


def test_a_closure_argument_is_checked_for_a_gpu_program() -> None:
    from relay.backend import cuda

    if cuda.nvcc() is None or relay.gpu_available():
        pytest.skip("needs nvcc and no GPU")
    closure = relay.build(
        relay.parse(
            "def @main(%y: float32) -> fn (float32) -> float32 { fn (%z: float32) { %z * %y } }"
        )
    )(np.float32(2))
    assert isinstance(closure, VMClosure)
    exe = relay.build(
        relay.parse("def @main(%f: fn (float32) -> float32, %x: float32) -> float32 { %f(%x) }"),
        target=SM90,
    )
    with pytest.raises(ExecutionError, match="this machine has no device cuda:0"):
        exe(closure, np.float32(3))


def test_a_misaligned_device_array_is_copied_to_an_aligned_one() -> None:
    # the kernels load 16-byte vectors from 64-byte-aligned buffers: a view that starts
    # elsewhere (shared through DLPack) is copied on the device, as the graph executor does
    _, dev = on_device(LOOP)
    vm = dev.machine()
    base = np.arange(40, dtype=np.float32)
    k = next(k for k in range(1, 16) if (base.ctypes.data + 4 * k) % 64)
    view = base[k : k + 16]
    shared = from_dlpack(view)
    assert shared._tensor.data_ptr() % 64
    placed = vm.on_device(shared)
    assert placed.data_ptr() % 64 == 0
    np.testing.assert_array_equal(placed.numpy(), view)
