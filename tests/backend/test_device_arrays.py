"""Device memory and the graph executor on a device.

The device executor's rules (staging, results from the pool, DLPack, run-time checks, plans
of symbolic sizes) are tested here on the CPU device, with kernels compiled for the CPU:
the code is the one a GPU runs, only the memory differs. The tests marked ``gpu`` run
programs compiled for CUDA on this machine's GPU and skip without one (docs/backend.md,
"Running on the GPU").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relay
from relay.backend.device import Device, DeviceArray, _pool, device_put, from_dlpack
from relay.backend.device_executor import DeviceGraphExecutor, device_executor
from relay.errors import ExecutionError, TypeCheckError

pytestmark = pytest.mark.tvm

CPU = Device("cpu")

PROGRAM = """
def @main(%x: Tensor[(6, 8), float32], %w: Tensor[(8, 4), float32], %b: Tensor[(4,), float32]) {
  %0 = nn.relu(add(nn.matmul(%x, %w), %b));
  %1 = reshape(%0, newshape=[24]);
  (%1, sum(%x, axis=[1]), %b, multiply(%x, 2f))
}"""


def args() -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    return (
        rng.standard_normal((6, 8)).astype(np.float32),
        rng.standard_normal((8, 4)).astype(np.float32),
        rng.standard_normal(4).astype(np.float32),
    )


def on_cpu(text: str) -> tuple[Any, Any]:
    """The executable for this CPU and its plan run by the device executor on the CPU."""
    exe = relay.build(relay.parse(text))
    return exe, device_executor(exe.graph.plan, exe.graph.library, CPU)


def test_device_put_and_back() -> None:
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    d = device_put(a, CPU)
    assert isinstance(d, DeviceArray)
    assert (d.shape, d.dtype, d.ndim, d.size, d.nbytes, len(d)) == ((3, 4), np.int32, 2, 12, 48, 3)
    assert d.device == CPU and str(d.device) == "cpu:0"
    assert repr(d) == "DeviceArray(shape=(3, 4), dtype=int32, device=cpu:0)"
    np.testing.assert_array_equal(d.numpy(), a, strict=True)
    np.testing.assert_array_equal(np.asarray(d, dtype=np.float64), a.astype(np.float64))
    assert device_put(d, CPU) is d
    a[0, 0] = 99  # a copy: the device array keeps its values
    assert d.numpy()[0, 0] == 0
    empty = device_put(np.zeros((0, 3), np.float32), CPU)
    assert empty.shape == (0, 3) and empty.numpy().shape == (0, 3)


def test_bad_device_values_are_errors() -> None:
    with pytest.raises(ExecutionError, match="unknown device 'tpu'"):
        Device("tpu")
    with pytest.raises(ExecutionError, match="arrays of dtype <U1 cannot go to a device"):
        device_put(np.array(["a"]), CPU)
    with pytest.raises(ExecutionError, match="from_dlpack: list cannot be shared"):
        from_dlpack([1, 2])


def test_arrays_are_exchanged_through_dlpack_without_a_copy() -> None:
    a = np.arange(6, dtype=np.float32)
    shared = from_dlpack(a)
    a[2] = -1.0
    assert shared.numpy()[2] == -1.0  # the same memory
    d = device_put(np.ones(5, np.float64), CPU)
    back = np.from_dlpack(d)
    np.testing.assert_array_equal(back, np.ones(5))
    assert d._escaped  # handed out: its memory never returns to the pool


def test_the_device_executor_runs_the_plan_of_the_cpu() -> None:
    exe, dev = on_cpu(PROGRAM)
    x, w, b = args()
    got = dev.run_flat([x, w, b])
    assert all(isinstance(g, DeviceArray) and g.device == CPU for g in got)
    want = exe(x, w, b)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6, strict=True)
    # the result that is an argument is a copy of it
    b_dev = device_put(b, CPU)
    again = dev.run_flat([x, w, b_dev])
    assert again[2]._tensor.data_ptr() != b_dev._tensor.data_ptr()
    np.testing.assert_array_equal(again[2].numpy(), b)
    # arguments already on the device are passed as they are, in any mix with host arrays
    again = dev.run_flat([device_put(x, CPU), w, from_dlpack(b)])
    for g, e in zip(again, want, strict=True):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6)


def test_arguments_are_checked() -> None:
    _, dev = on_cpu(PROGRAM)
    x, w, b = args()
    with pytest.raises(TypeCheckError) as err:
        dev.run_flat([device_put(x[:, :4].copy(), CPU), w, b], "@main")
    assert str(err.value) == (
        "@main: expected an argument of type Tensor[(6, 8), float32], got a device array of "
        "shape (6, 4) and dtype float32"
    )
    with pytest.raises(TypeCheckError) as err:
        dev.run_flat([x, w, device_put(b.astype(np.float64), CPU)], "@main")
    assert str(err.value) == (
        "@main: expected an argument of type Tensor[(4,), float32], got a device array of "
        "shape (4,) and dtype float64"
    )
    with pytest.raises(TypeCheckError) as err:
        dev.run_flat([x.T, w, b], "@main")
    assert str(err.value) == (
        "@main: expected an argument of type Tensor[(6, 8), float32], got an array of shape (8, 6)"
    )
    # a host array of another layout or a convertible scalar dtype is staged, not refused
    got = dev.run_flat([np.asfortranarray(x), w, b])
    np.testing.assert_allclose(got[3].numpy(), x * 2)


def test_an_array_on_another_device_is_checked_and_copied() -> None:
    _, dev = on_cpu("def @main(%x: Tensor[(4,), float32]) { multiply(%x, 2f) }")

    def elsewhere(a: Any) -> DeviceArray:
        d = device_put(a, CPU)
        d._device = Device("cuda", 1)  # what an array on another device says
        return d

    with pytest.raises(TypeCheckError) as err:
        dev.run_flat([elsewhere(np.arange(2, dtype=np.float64))], "@main")
    assert str(err.value) == (
        "@main: expected an argument of type Tensor[(4,), float32], got an array of shape (2,)"
    )
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(dev.run_flat([elsewhere(x)]).numpy(), x * 2)
    np.testing.assert_array_equal(dev.run_flat([x]).numpy(), x * 2)  # staging still fits


def test_scalars_stay_scalars() -> None:
    _, dev = on_cpu("def @main(%x: Tensor[(5,), float32], %s: float32) { (sum(%x), %s) }")
    total, s = dev.run_flat([np.arange(5, dtype=np.float32), np.float32(2.5)])
    assert total.shape == () and s.shape == ()
    assert (total.numpy(), s.numpy()) == (10.0, 2.5)
    assert device_put(np.float64(1.5), CPU).shape == ()


def test_dropped_results_give_their_memory_back() -> None:
    _, dev = on_cpu("def @main(%x: Tensor[(64,), float32]) { exp(%x) }")
    x = np.zeros(64, np.float32)
    first = dev.run_flat([x])
    ptr = first._tensor.data_ptr()
    del first
    second = dev.run_flat([x])
    assert second._tensor.data_ptr() == ptr  # the same block, from the pool
    np.testing.assert_array_equal(second.numpy(), np.ones(64, np.float32))
    kept = np.from_dlpack(second)  # handed out: never reused while numpy holds it
    del second
    third = dev.run_flat([np.full(64, 2, np.float32)])
    assert third._tensor.data_ptr() != ptr
    np.testing.assert_array_equal(kept, np.ones(64, np.float32))  # still the second's
    np.testing.assert_allclose(third.numpy(), np.exp(np.full(64, 2, np.float32)), rtol=1e-6)


def test_a_failed_run_time_check_is_read_back() -> None:
    _, dev = on_cpu(
        "def @main(%a: Tensor[(4,), int32], %b: Tensor[(4,), int32]) { divide(%a, %b) }"
    )
    a = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(dev.run_flat([a, np.ones(4, np.int32)]).numpy(), a)
    with pytest.raises(ExecutionError, match="integer division by zero"):
        dev.run_flat([a, np.array([1, 0, 1, 1], np.int32)])


def test_plans_of_symbolic_sizes_run_an_executor_per_size() -> None:
    exe, dev = on_cpu(
        "def @main[n: Shape](%x: Tensor[(n, 3), float32]) { sum(tanh(%x), axis=[1]) }"
    )
    for rows in (1, 5, 17, 5):
        x = np.linspace(-1, 1, rows * 3, dtype=np.float32).reshape(rows, 3)
        np.testing.assert_allclose(dev.run_flat([x]).numpy(), exe(x), rtol=1e-6)
    assert len(dev._instances) == 3
    assert all(isinstance(e, DeviceGraphExecutor) for e in dev._instances.values())
    # at zero rows nothing is launched (a GPU schedule's grid would be empty, or unguarded)
    empty = dev.run_flat([np.zeros((0, 3), np.float32)])
    assert empty.shape == (0,) and empty.numpy().shape == (0,)
    zero = next(e for key, e in dev._instances.items() if 0 in key)
    assert all(type(func).__name__ == "_Nothing" for func, _, _ in zero._steps)


def test_profile_times_each_kernel() -> None:
    exe, dev = on_cpu(PROGRAM)
    prof = dev.profile(list(args()), repeat=3)
    assert [k for k, _ in prof] == exe.kernels
    assert all(ms >= 0 for _, ms in prof)


def test_the_pool_keeps_a_bounded_number_of_tensors() -> None:
    pool = _pool(CPU.tvm_device())
    arrays = [device_put(np.zeros(3, np.float32), CPU) for _ in range(pool.KEEP + 3)]
    pool.free.clear()
    del arrays
    assert len(pool.free[(3,), "float32"]) == pool.KEEP
    from relay.backend.device import empty_cache

    empty_cache()
    assert not pool.free


# -- on a GPU -------------------------------------------------------------------------------------

gpu = pytest.mark.skipif(not relay.gpu_available(), reason="no CUDA GPU on this machine")


@gpu
@pytest.mark.gpu
def test_a_program_runs_on_the_gpu_and_its_results_stay_there() -> None:
    mod = relay.parse(PROGRAM)
    exe = relay.build(mod, target="cuda")
    x, w, b = args()
    want = relay.build(mod)(x, w, b)
    wd, bd = relay.device_put(w), relay.device_put(b)  # parameters placed once
    assert wd.device == relay.Device("cuda")
    for _ in range(3):
        got = exe(x, wd, bd)
        assert all(isinstance(g, DeviceArray) and g.device.kind == "cuda" for g in got)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-5)
    assert [k for k, _ in exe.profile(x, w, b, repeat=2)] == exe.kernels


@gpu
@pytest.mark.gpu
def test_relay_checks_compare_a_gpu_program_with_the_interpreter() -> None:
    exe = relay.build(relay.parse(PROGRAM), target="cuda")
    x, w, b = args()
    with relay.flags.override(checks=True):
        exe(x, relay.device_put(w), b)  # (raises ExecutionError on a difference)


@gpu
@pytest.mark.gpu
def test_results_go_to_torch_and_cupy_without_a_copy() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    exe = relay.build(relay.parse("def @main(%x: Tensor[(1000,), float32]) { exp(%x) }"), "cuda")
    x = torch.linspace(-2, 2, 1000, device="cuda")
    out = exe(x)  # a CUDA tensor is passed without a copy
    t = torch.from_dlpack(out)
    assert t.device.type == "cuda" and t.data_ptr() == out._tensor.data_ptr()  # no copy
    torch.testing.assert_close(t, torch.exp(x), rtol=1e-6, atol=0)
    cupy = pytest.importorskip("cupy")
    c = cupy.from_dlpack(exe(x))
    np.testing.assert_allclose(cupy.asnumpy(c), np.exp(x.cpu().numpy()), rtol=1e-6)


@relay
def mlp_loss(w1, w2, x, y):  # type: ignore[no-untyped-def]
    h = np.tanh(x @ w1)
    return -np.sum(relay.nn.log_softmax(h @ w2) * y) / 32.0


mlp_grad = relay.grad(mlp_loss, argnums=(0, 1))


@relay
def train_step(w1, w2, x, y):  # type: ignore[no-untyped-def]
    loss, g = mlp_grad(w1, w2, x, y)
    return w1 - 0.1 * g[0], w2 - 0.1 * g[1], loss


@gpu
@pytest.mark.gpu
def test_a_training_step_with_grad_runs_on_the_gpu() -> None:
    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((64, 128)) / 8).astype(np.float32)
    w2 = (rng.standard_normal((128, 10)) / 8).astype(np.float32)
    x = rng.standard_normal((32, 64)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]
    want = train_step(w1, w2, x, y)
    exe = relay.build(train_step.specialize(w1, w2, x, y), target="cuda")
    first = exe(w1, w2, x, y)
    for g, e in zip(first, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-4, atol=1e-5)
    params: list[Any] = [relay.device_put(w1), relay.device_put(w2)]
    host = [w1, w2]
    for _ in range(2):  # the updated parameters stay on the device
        *params, _ = exe(*params, x, y)
        *host, _ = train_step(*host, x, y)
    assert all(isinstance(p, DeviceArray) and p.device.kind == "cuda" for p in params)
    for p, h in zip(params, host, strict=True):
        np.testing.assert_allclose(p.numpy(), h, rtol=1e-4, atol=1e-5)


@gpu
@pytest.mark.gpu
def test_a_kernel_called_directly_runs_on_the_gpu() -> None:
    from relay.testing.lowering import check_op_lowering

    x = np.linspace(-3, 3, 257, dtype=np.float32)
    check_op_lowering("tanh", x, target="cuda", rtol=1e-5, atol=1e-6)


def test_kernels_placed_elsewhere_run_through_host_copies() -> None:
    # mixed placement: a GPU program's kernel without a GPU schedule runs on the host, its
    # inputs copied there and its outputs back (here: kernels marked as another device's,
    # on the CPU device, through the same copies)
    import dataclasses

    from relay.backend.compiler import KernelLibrary

    exe = relay.build(relay.parse(PROGRAM))
    lib = exe.graph.library
    moved = {n: dataclasses.replace(k, device="elsewhere") for n, k in lib.kernels.items()}
    first = next(iter(moved))
    mixed = KernelLibrary({**lib.kernels, first: moved[first]}, lib.module, lib.key)
    dev = DeviceGraphExecutor(exe.graph.plan, mixed, CPU)
    assert dev.host_kernels == [first]
    x, w, b = args()
    for g, e in zip(dev.run_flat([x, w, b]), exe(x, w, b), strict=True):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6)
    assert [k for k, _ in dev.profile([x, w, b], repeat=2)] == exe.kernels


def test_device_arrays_are_values_for_the_interpreter() -> None:
    # (what RELAY_CHECKS runs a GPU program's arguments through)
    from relay.backend.interpreter.values import to_value

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for d in (device_put(a, CPU), from_dlpack(a)):
        v = to_value(d)
        assert type(v) is np.ndarray
        np.testing.assert_array_equal(v, a, strict=True)
    mod = relay.parse("def @main(%x: Tensor[(2, 3), float32]) { sum(%x) }")
    assert relay.interpret(mod, device_put(a, CPU)) == 15.0


def test_a_host_placed_kernel_keeps_its_constants_and_checks() -> None:
    import dataclasses

    from relay.backend.compiler import KernelLibrary
    from relay.ir.expr import Function, GlobalVar
    from relay.passes.quantize import _bind_params

    main = relay.parse(
        "def @main(%a: Tensor[(4,), int32], %b: Tensor[(4,), int32], %c: Tensor[(4,), int32])"
        " { add(divide(%a, %b), %c) }"
    )["main"]
    assert isinstance(main, Function)
    bound = _bind_params(main, {"c": np.array([1, 2, 3, 4], np.int32)})
    exe = relay.build(relay.Module({GlobalVar("main"): bound}))
    lib = exe.graph.library
    (name,) = lib.kernels
    assert lib.kernels[name].checks  # (the zero check; the constant is a graph constant)
    moved = dataclasses.replace(lib.kernels[name], device="elsewhere")
    dev = DeviceGraphExecutor(exe.graph.plan, KernelLibrary({name: moved}, lib.module), CPU)
    assert dev.host_kernels == [name]
    a, b = np.array([8, 9, 10, 11], np.int32), np.array([2, 3, 5, 11], np.int32)
    np.testing.assert_array_equal(dev.run_flat([a, b]).numpy(), exe(a, b))
    with pytest.raises(ExecutionError, match="integer division by zero"):
        dev.run_flat([a, np.array([1, 0, 1, 1], np.int32)])


LOAD_AND_RUN = """
import sys, numpy as np, relay
exe = relay.Executable.load(sys.argv[1])
args = [np.load(p) for p in sys.argv[3:]]
got = exe(*(np.int32(a) if a.ndim == 0 and a.dtype == np.int32 else a for a in args))
got = got if isinstance(got, tuple) else (got,)
np.savez(sys.argv[2], *[g.numpy() for g in got])
print(exe.kind, sorted(set(exe.placement.values())) if exe.kind == "graph" else "-")
"""


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("which", ["graph", "vm"])
def test_a_gpu_executable_saves_and_loads_in_a_fresh_process(which: str, tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    from tests.vm_programs import LOOP

    if which == "graph":
        mod, inputs = relay.parse(PROGRAM), list(args())
    else:
        mod, inputs = relay.parse(LOOP), [np.int32(5), np.array([1, -2, 3, 0.5], np.float32)]
    exe = relay.build(mod, target="cuda")
    want = exe(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    path = tmp_path / "gpu.relay"
    exe.save(path)
    files = []
    for k, a in enumerate(inputs):
        files.append(str(tmp_path / f"a{k}.npy"))
        np.save(files[-1], np.asarray(a))
    out = subprocess.run(
        [sys.executable, "-c", LOAD_AND_RUN, str(path), str(tmp_path / "out.npz"), *files],
        capture_output=True,
        text=True,
        env={**os.environ, "RELAY_CACHE": "0"},
        check=True,
    ).stdout.split()
    assert out[0] == which
    got = np.load(tmp_path / "out.npz")
    for k, w in enumerate(want):
        np.testing.assert_array_equal(got[f"arr_{k}"], w.numpy())


SECOND_PROCESS = """
import numpy as np, relay
from relay.backend.cache import kernel_cache
mod = relay.parse('''PROGRAM''')
exe = relay.build(mod, target="cuda")
x = np.ones((6, 8), np.float32); w = np.ones((8, 4), np.float32); b = np.ones(4, np.float32)
print(kernel_cache().misses, float(exe(x, w, b)[0].numpy().sum()))
"""


@gpu
@pytest.mark.gpu
def test_a_second_process_loads_the_gpu_kernels_from_the_disk_cache(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "RELAY_CACHE": "1", "RELAY_CACHE_DIR": str(tmp_path / "cache")}
    code = SECOND_PROCESS.replace("PROGRAM", PROGRAM)
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0][0] != "0" and runs[1][0] == "0"  # compiled once, then loaded
    assert runs[0][1] == runs[1][1]
