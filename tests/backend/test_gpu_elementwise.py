"""relay's elementwise GPU schedule (schedule_elementwise): which kernels load and store
16-byte vectors, in the CUDA C generated without a GPU (the timings are in
docs/backend.md, "Elementwise kernels", from tools/gpu/probe.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import relay
from relay.backend import cuda
from relay.backend.target import Target

pytestmark = [
    pytest.mark.tvm,
    pytest.mark.skipif(cuda.nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed"),
]

SM90 = Target("cuda", arch="sm_90")


def kernel_source(text: str) -> str:
    exe = relay.build(relay.parse(text), target=SM90)
    assert set(exe.placement.values()) == {"cuda"}
    source = exe.cuda_source()
    return source[source.index("__global__") :]


@pytest.mark.parametrize(
    "text, vector",
    [
        (
            "def @main(%x: Tensor[(4096, 256), float32], %y: Tensor[(4096, 256), float32]) "
            "{ tanh(multiply(%x, %y)) }",
            "float4",
        ),
        # a broadcast: the row vector's element is gathered, lane by lane
        (
            "def @main(%x: Tensor[(1000, 3), float32], %y: Tensor[(3,), float32]) { add(%x, %y) }",
            "float4",
        ),
        ("def @main(%x: Tensor[(64, 48), float16]) { add(%x, %x) }", "half4"),
    ],
)
def test_elementwise_kernels_move_16_byte_vectors(text: str, vector: str) -> None:
    source = kernel_source(text)
    assert "__launch_bounds__(256)" in source
    assert re.search(rf"\*\({vector}\*\)\(\w+_ptr \+", source)  # a vector store or load


def test_a_transpose_goes_through_shared_memory() -> None:
    # a tile read along the rows of the input into shared memory (padded: rows of 33),
    # written along the rows of the output; dlight's Transpose rule for other sizes
    source = kernel_source("def @main(%x: Tensor[(4096, 4096), float16]) { transpose(%x) }")
    assert "__launch_bounds__(256)" in source  # relay's: 32 x 8 threads, 32 x 32 tiles
    assert "__shared__" in source and "__syncthreads()" in source
    assert re.search(r"p0_shared_ptr\[.*\* 33\)", source)  # rows of 33
    exe = relay.build(
        relay.parse("def @main(%x: Tensor[(64, 48), float32]) { transpose(%x) }"), target=SM90
    )
    assert "__shared__" in exe.cuda_source()


@pytest.mark.skipif(not relay.gpu_available(), reason="no CUDA GPU on this machine")
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("shape", [(64, 96), (4096, 1024), (40, 64)])
def test_transposes_on_the_gpu_match_numpy(shape: tuple[int, int], dtype: str) -> None:
    # whole 32 x 32 tiles take relay's shared-memory schedule; (40, 64) does not
    x = (np.arange(shape[0] * shape[1]) % 127).astype(dtype).reshape(shape)
    text = f"def @main(%x: Tensor[{shape}, {dtype}]) {{ transpose(%x) }}"
    got = relay.build(relay.parse(text), target="cuda")(x).numpy()
    np.testing.assert_array_equal(got, x.T)


def test_a_size_that_is_not_whole_blocks_is_guarded() -> None:
    # 3,000 elements: 750 vectors, the last of three blocks of 256 threads partly idle
    source = kernel_source(
        "def @main(%x: Tensor[(1000, 3), float32], %y: Tensor[(3,), float32]) { add(%x, %y) }"
    )
    assert "< 375)" in source  # (blockIdx.x * 128 + threadIdx.x / 2 < 375: vector < 750)


@pytest.mark.parametrize(
    "text",
    [
        # comparisons and bitwise_not, which TVM prints wrongly on vectors
        "def @main(%x: Tensor[(4096, 256), float32], %y: Tensor[(4096, 256), float32]) "
        "{ maximum(%x, %y) }",
        "def @main(%x: Tensor[(4096, 256), int32]) { bitwise_not(%x) }",
        # bool data, and sizes that are not a whole number of vectors
        "def @main(%x: Tensor[(4096, 256), bool]) { logical_not(%x) }",
        "def @main(%x: Tensor[(1023, 3), float32]) { negative(%x) }",
    ],
)
def test_other_kernels_keep_one_element_per_thread(text: str) -> None:
    source = kernel_source(text)
    assert "__launch_bounds__(1024)" in source  # dlight's Fallback
    assert not re.search(r"(float|int|half)4", source)


def test_the_schedule_settings_are_part_of_the_kernel_cache_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from relay.backend.compiler import library_key
    from relay.backend.schedule import gpu

    key = library_key(["fn"], SM90)
    assert library_key(["fn"], Target("llvm")) == library_key(["fn"], Target("llvm"))
    monkeypatch.setattr(gpu, "PER_THREAD", 2)
    assert library_key(["fn"], SM90) != key
    monkeypatch.setattr(gpu, "PER_THREAD", 1)
    monkeypatch.setattr(gpu, "MATMUL_TILES", {"block_size_x": 16})
    assert library_key(["fn"], SM90) != key
    monkeypatch.setattr(gpu, "MATMUL_TILES", {})
    assert library_key(["fn"], SM90) == key


BIG = (  # 2,162,000,000 elements: past int32
    "def @main(%x: Tensor[(46000, 47000), int8], %b: Tensor[(47000,), int8]) { add(%x, %b) }"
)


def test_tensors_past_int32_elements_are_indexed_in_int64() -> None:
    # fused into one loop of int32 indices, the add guarded its threads with a negative
    # bound (2,162,000,000 - 2^32) and computed nothing
    source = kernel_source(BIG)
    assert "int64_t" in source and not re.search(r"< -\d", source)
    total = "def @main(%x: Tensor[(46000, 47000), int8]) { sum(%x, axis=[0]) }"
    assert "int64_t" in kernel_source(total)  # (its int32 constants failed to compile)


@pytest.mark.skipif(not relay.gpu_available(), reason="no CUDA GPU on this machine")
@pytest.mark.gpu
def test_a_tensor_past_int32_elements_on_the_gpu() -> None:
    x = np.zeros((46000, 47000), np.int8)
    x[-1] = 3
    b = (np.arange(47000) % 100).astype(np.int8)
    got = relay.build(relay.parse(BIG), target="cuda")(x, b).numpy()
    np.testing.assert_array_equal(got[0], b)
    np.testing.assert_array_equal(got[-1], b + 3)
