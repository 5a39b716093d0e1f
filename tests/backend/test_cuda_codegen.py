"""The CUDA target without a GPU: every operator family compiles to CUDA C and to PTX with
nvcc, launches are checked against the device's limits, and the executable says that it
cannot run here."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import relay
from relay.backend import cuda
from relay.backend.target import Target, cuda_arch
from relay.errors import CompileError, ExecutionError

pytestmark = [
    pytest.mark.tvm,
    pytest.mark.skipif(cuda.nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed"),
]

SM90 = Target("cuda", arch="sm_90")

PROGRAMS = {
    "elementwise and broadcast": """
def @main(%x: Tensor[(256, 384), float32], %y: Tensor[(384,), float32]) {
  %0 = add(multiply(%x, %y), 1f);
  (tanh(%0), sigmoid(%x), exp(negative(%0)), maximum(%x, %y), minimum(%x, 0f), round(%x),
   clip(%x, a_min=-1f, a_max=1f), cast(%x, dtype="int32"), where(greater(%x, 0f), %x, %y),
   transpose(%x), reshape(%x, newshape=[-1]), expand_dims(%y, axis=0))
}""",
    "reductions": """
def @main(%x: Tensor[(256, 384), float32]) {
  (sum(%x, axis=[1]), max(%x, axis=[0]), mean(%x), argmax(%x, axis=[1]), min(%x, axis=[1], keepdims=True),
   nn.softmax(%x), nn.log_softmax(%x), logsumexp(%x, axis=[1]))
}""",
    "products": """
def @main(%x: Tensor[(128, 784), float32], %w: Tensor[(784, 1024), float32], %b: Tensor[(1024,), float32],
          %v: Tensor[(1, 784), float32], %bx: Tensor[(8, 64, 32), float32], %by: Tensor[(8, 32, 48), float32],
          %h: Tensor[(128, 784), float16], %hw: Tensor[(784, 256), float16]) {
  (nn.relu(add(nn.matmul(%x, %w), %b)), nn.dense(%x, %x, units=None), nn.matmul(%v, %w),
   nn.batch_matmul(%bx, %by, transpose_b=False), nn.matmul(%h, %hw))
}""",
    "convolution and layout": """
def @main(%x: Tensor[(1, 64, 56, 56), float32], %k: Tensor[(64, 64, 3, 3), float32], %b: Tensor[(64, 1, 1), float32],
          %i: Tensor[(32,), int64], %t: Tensor[(1000, 16), float32]) {
  (nn.relu(add(nn.conv2d(%x, %k, padding=[1, 1, 1, 1]), %b)), nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]),
   take(%t, %i, axis=0), concatenate((%t, %t), axis=1), strided_slice(%t, begin=[0, 2], end=[1000, 10]))
}""",
}


def entries(ptx: str) -> list[str]:
    return re.findall(r"\.entry\s+(\w+)", ptx)


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    return {name: relay.build(relay.parse(text), target=SM90) for name, text in PROGRAMS.items()}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_every_kernel_becomes_device_code(built: dict[str, Any], name: str) -> None:
    exe = built[name]
    assert exe.kind == "graph" and exe.kernels
    source, ptx = exe.cuda_source(), exe.ptx()
    assert ".target sm_90" in ptx
    found = entries(ptx)
    for kernel in exe.kernels:
        # each kernel's host function launches one or more device kernels named after it
        assert any(e.startswith(kernel) for e in found), (kernel, found)
        assert f"{kernel}_kernel" in source or any(
            f" {kernel}" in line for line in source.splitlines()
        )


def test_the_product_is_tiled_through_shared_memory(built: dict[str, Any]) -> None:
    source = built["products"].cuda_source()
    assert "__shared__" in source and "__syncthreads()" in source


@pytest.mark.skipif(relay.gpu_available(), reason="this machine has a GPU")
def test_running_without_a_gpu_is_a_clear_error(built: dict[str, Any]) -> None:
    exe = built["reductions"]
    with pytest.raises(ExecutionError) as err:
        exe(np.zeros((256, 384), np.float32))
    assert str(err.value) == (
        f"@main is compiled for {SM90}, and this machine has no CUDA GPU to run it on "
        "(.cuda_source() and .ptx() show its kernels)"
    )


def test_the_target_names_its_architecture_and_host() -> None:
    assert SM90.key.startswith("cuda -arch=sm_90 -host=")
    assert SM90.is_gpu and not Target("llvm").is_gpu
    assert Target("cuda", arch="sm_80").key != SM90.key  # kernels are cached per architecture


def test_target_errors() -> None:
    with pytest.raises(
        CompileError, match=r"invalid CUDA architecture 'ampere' \(expected e\.g\. 'sm_90'\)"
    ):
        Target("cuda", arch="ampere")
    with pytest.raises(CompileError, match="arch is a CUDA target's setting"):
        Target("llvm", arch="sm_90")
    with pytest.raises(
        CompileError, match=r"unknown target 'rocm' \(known: 'llvm', 'cuda', 'vta'\)"
    ):
        Target("rocm")
    if cuda_arch() is None:
        with pytest.raises(CompileError) as err:
            Target("cuda")
        assert str(err.value) == (
            "no CUDA device here to take the architecture from: name it, as in "
            "relay.Target('cuda', arch='sm_90')"
        )


def _bound(tag: str, extent: int, shared: bool = False) -> Any:
    """``b = a + 1`` over ``extent`` floats, its loop bound to ``tag``; with ``shared``,
    ``a`` read through a copy in shared memory (the whole of it)."""
    from relay.backend.runtime import tvm

    te = tvm().te
    a = te.placeholder((extent,), "float32", name="a")
    b = te.compute((extent,), lambda i: a[i] + 1.0, name="b")
    sch = tvm().s_tir.Schedule(te.create_prim_func([a, b]))
    block = sch.get_sblock("b")
    if shared:
        sch.cache_read(block, 0, "shared")
    sch.bind(sch.get_loops(block)[0], tag)
    return sch.mod["main"]


def test_launches_past_the_device_limits_are_compile_errors() -> None:
    cuda.check_launch("ok", _bound("threadIdx.x", 1024))
    with pytest.raises(CompileError) as err:
        cuda.check_launch("k", _bound("threadIdx.x", 2048))
    assert str(err.value) == "kernel k: threadIdx.x extent 2048 is past the device limit 1024"
    with pytest.raises(CompileError) as err:
        cuda.check_launch("k", _bound("threadIdx.z", 128))
    assert str(err.value) == "kernel k: threadIdx.z extent 128 is past the device limit 64"
    with pytest.raises(CompileError) as err:
        cuda.check_launch("k", _bound("blockIdx.x", 20000, shared=True))
    assert str(err.value) == (
        "kernel k: 80000 bytes of shared memory, past the 49152 a launch may have without opting in"
    )


def test_nvcc_errors_are_reported() -> None:
    with pytest.raises(CompileError, match="nvcc failed on the generated CUDA code"):
        cuda.compile_ptx("this is not CUDA", "sm_90")


def test_a_gpu_executable_saves_its_kernels_plan_and_ptx(
    built: dict[str, Any], tmp_path: Any
) -> None:
    import json
    import zipfile

    exe = built["products"]
    exe.save(tmp_path / "gpu.relay")
    with zipfile.ZipFile(tmp_path / "gpu.relay") as z:
        meta = json.loads(z.read("executable.json"))
        parts = sorted(
            (n for n in z.namelist() if n.startswith("device_code/")),
            key=lambda n: int(n.split("/")[1].split(".")[0]),
        )
        assert len(parts) > 1  # (one per compiled part, in order)
        assert b"".join(z.read(n) for n in parts).decode() == exe.ptx()
    assert meta["kind"] == "graph" and meta["target"]["arch"] == "sm_90"
    assert {k["name"]: k["device"] for k in meta["kernels"]} == exe.placement
    assert meta["plan"]["steps"]


@pytest.mark.skipif(relay.gpu_available(), reason="this machine has a GPU")
def test_loading_a_gpu_executable_without_cuda_is_a_clear_error(
    built: dict[str, Any], tmp_path: Any
) -> None:
    path = tmp_path / "gpu.relay"
    built["reductions"].save(path)
    with pytest.raises(CompileError) as err:
        relay.Executable.load(path)
    assert str(err.value).startswith(
        f"{path} holds kernels compiled for sm_90, and TVM on this machine cannot load CUDA "
        "code (it needs the CUDA driver: load it on a machine with the GPU): "
    )


def test_kernels_without_a_gpu_schedule_run_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # batch_norm in training has three results, which only schedule_outputs schedules:
    # without it, mixed placement
    from relay.backend.schedule import gpu

    monkeypatch.setattr(gpu, "schedule_outputs", lambda sch: False)
    mod = relay.parse(
        """
def @main(%x: Tensor[(4, 5, 3), float32], %g: Tensor[(5,), float32]) {
  %0 = nn.batch_norm(tanh(%x), %g, %g, %g, %g, training=True);
  (add(%0.0, 1f), %0.1, %0.2)
}"""
    )
    exe = relay.build(mod, target=SM90)
    placement = exe.placement
    on_cpu = [k for k, where in placement.items() if where == "cpu"]
    assert len(on_cpu) == 1 and "batch_norm" in on_cpu[0]
    assert set(placement.values()) == {"cpu", "cuda"}
    assert all(not entry.startswith(on_cpu[0]) for entry in entries(exe.ptx()))


def test_kernels_of_zero_size_tensors_run_on_the_cpu() -> None:
    # dlight's Fallback gave a zero-size kernel one block of unguarded stores, which wrote
    # out of bounds on an H100 (every later kernel of the process failed)
    mod = relay.parse(
        """
def @main(%x: Tensor[(0, 3), float32], %y: Tensor[(4, 3), float32]) {
  (add(%x, 1f), multiply(%y, 2f))
}"""
    )
    placement = relay.build(mod, target=SM90).placement
    assert sorted(placement.values()) == ["cpu", "cuda"]
    assert next(k for k, where in placement.items() if where == "cpu").startswith("fused_add")


def test_reductions_accumulate_in_registers() -> None:
    # A partial result kept in the output buffer was read back by nvcc through the read-only
    # cache (`ld.global.nc`) and gave stale row minima on an H100; and dlight's Fallback
    # inlined the division of a variance into its sum's initial value (0 * inf: NaN).
    mod = relay.parse(
        """
def @main(%x: Tensor[(3, 7, 5), float32], %y: Tensor[(3, 1), float32]) {
  (min(%x, axis=[-1], keepdims=True), variance(%y, mean(%y, axis=[1], keepdims=True), axis=[1], unbiased=True))
}"""
    )
    exe = relay.build(mod, target=SM90)
    source = exe.cuda_source()
    for kernel in exe.kernels:
        found = re.search(rf"{kernel}_kernel\(([^)]*)\) {{", source)
        assert found is not None
        params = set(re.findall(r"(\w+_ptr)", found.group(1)))
        body = source[found.end() : source.index("\n}\n", found.end())]
        written = set(re.findall(r"(\w+_ptr)\[[^]]*\] = ", body)) & params
        assert written, body
        for buf in written:  # each output is written from a register, and never read
            assert body.count(f"{buf}[") == len(re.findall(rf"{buf}\[[^]]*\] = ", body)), body
    assert "CUDART_NAN_F" not in source


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize(("dtype", "constant"), [("float32", "0.5f"), ("float64", "0.5f64")])
def test_extremes_with_a_constant_compile(op: str, dtype: str, constant: str) -> None:
    # the NaN test reads the operands' bits: the constant's were the literal's address,
    # ``*(unsigned int*)(&(0x1p-1f))``, which nvcc rejected; they are folded when lowering
    text = f"def @main(%x: Tensor[(64,), {dtype}]) {{ {op}(%x, {constant}) }}"
    exe = relay.build(relay.parse(text), target=SM90)
    assert exe.placement == {f"fused_{op}_0": "cuda"}
    assert "&(0x" not in exe.cuda_source()


def test_a_sum_to_one_value_keeps_its_epilogue_apart_on_the_gpu() -> None:
    # with sqrt fused into it, dlight's reduction rules did not apply to the loop-less
    # epilogue, and every thread of a block summed all the elements; apart, the sum is a
    # cross-thread reduction (on the CPU the two share a kernel)
    text = "def @main(%x: Tensor[(1024, 1024), float32]) { sqrt(sum(multiply(%x, %x))) }"
    exe = relay.build(relay.parse(text), target=SM90)
    assert exe.kernels == ["fused_multiply_sum_0", "fused_sqrt_1"]
    assert "__shfl_down_sync" in exe.cuda_source()
    assert relay.build(relay.parse(text)).kernels == ["fused_multiply_sum_sqrt_0"]


SOURCE = 'extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n'


def test_device_code_is_cached_on_disk_by_source_and_architecture(
    cache_dir: Any, monkeypatch: Any
) -> None:
    from relay.backend.cache import kernel_cache

    runs: list[str] = []
    real = cuda._run_nvcc
    monkeypatch.setattr(cuda, "_run_nvcc", lambda p, s, a: runs.append(a) or real(p, s, a))
    first = cuda.compile_ptx(SOURCE, "sm_90")
    assert cuda.compile_ptx(SOURCE, "sm_90") == first and runs == ["sm_90"]
    files = sorted(cache_dir.glob("D*.ptx"))
    assert len(files) == 1 and files[0].stat().st_mode & 0o777 == 0o600
    assert ".target sm_80" in cuda.compile_ptx(SOURCE, "sm_80").decode()  # another key
    assert runs == ["sm_90", "sm_80"] and len(list(cache_dir.glob("D*.ptx"))) == 2
    # a corrupted entry is detected by its checksum and compiled again
    files[0].write_bytes(files[0].read_bytes().replace(b"twice", b"thrice"))
    assert cuda.compile_ptx(SOURCE, "sm_90") == first and runs[-1] == "sm_90"
    assert kernel_cache().lookup_device_code("0" * 64) is None
    with relay.flags.override(cache=False):  # the disk cache off: nvcc every time
        cuda.compile_ptx(SOURCE, "sm_90")
    assert len(runs) == 4


def test_an_nvcc_failure_inside_tvm_is_reported_not_placed_on_the_cpu(monkeypatch: Any) -> None:
    # With a CUDA runtime, TVM calls nvcc through its callback from C++ and turns a failure
    # into its own error; relay must report nvcc's, not move every kernel to the CPU.
    # (Simulated: this TVM keeps the source, so the callback is called as TVM would.)
    import tvm_ffi

    from relay.backend.runtime import tvm

    real = tvm().compile

    def compile_calling_back(mod: Any, target: Any = None, **kw: Any) -> Any:
        ex = real(mod, target=target, **kw)
        if "cuda" in str(target):
            callback = tvm_ffi.get_global_func("tvm_callback_cuda_compile")
            for m in ex.mod.imports:
                callback(str(m.inspect_source("cuda")), target)
        return ex

    monkeypatch.setattr(tvm(), "compile", compile_calling_back)
    monkeypatch.setattr(cuda, "nvcc", lambda: None)
    mod = relay.parse("def @main(%x: Tensor[(8,), float32]) { multiply(exp(%x), 3f) }")
    with pytest.raises(CompileError, match="the CUDA target needs nvcc"):
        relay.build(mod, target=SM90)
