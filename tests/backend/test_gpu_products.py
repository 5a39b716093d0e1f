"""relay's SIMT product schedule for CUDA (relay.backend.schedule.gpu_matmul).

Without a GPU: which products get it, that every layout, odd size and epilogue compiles to
PTX with it, and that its settings are in the kernel cache's key. With one (tests marked
``gpu``): the results against numpy.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import relay
from relay.backend import cuda
from relay.backend.build import _device_modules
from relay.backend.schedule import gpu, gpu_matmul
from relay.backend.target import Target

pytestmark = [
    pytest.mark.tvm,
    pytest.mark.skipif(cuda.nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed"),
]

SM90 = Target("cuda", arch="sm_90")

on_gpu = pytest.mark.skipif(not relay.gpu_available(), reason="no CUDA GPU on this machine")

# (program, numpy reference): the layouts relay's products take, sizes that are not whole
# tiles (and rows that are not whole 16-byte vectors: loads of 2 and of 1 element), fused
# prologues and epilogues
PRODUCTS: dict[str, tuple[str, Any]] = {
    "matmul_rows_of_2": (
        "def @main(%x: Tensor[(300, 262), float32], %w: Tensor[(262, 200), float32]) "
        "{ nn.matmul(%x, %w) }",
        lambda x, w: x @ w,
    ),
    "dense_bias_relu_odd": (
        "def @main(%x: Tensor[(203, 141), float32], %w: Tensor[(139, 141), float32], "
        "%b: Tensor[(139,), float32]) { nn.relu(add(nn.dense(%x, %w), %b)) }",
        lambda x, w, b: np.maximum(x @ w.T + b, 0),
    ),
    "batch_matmul": (
        "def @main(%x: Tensor[(3, 128, 96), float32], %y: Tensor[(3, 96, 160), float32]) "
        "{ nn.batch_matmul(%x, %y, transpose_b=False) }",
        lambda x, y: x @ y,
    ),
    "batch_matmul_transposed": (
        "def @main(%x: Tensor[(2, 130, 64), float32], %y: Tensor[(2, 72, 64), float32]) "
        "{ nn.batch_matmul(%x, %y, transpose_b=True) }",
        lambda x, y: x @ y.transpose(0, 2, 1),
    ),
    "transposed_result": (
        "def @main(%x: Tensor[(256, 128), float32], %w: Tensor[(128, 192), float32]) "
        "{ transpose(nn.matmul(%x, %w)) }",
        lambda x, w: (x @ w).T,
    ),
    "depth_of_3": (
        "def @main(%x: Tensor[(130, 3), float32], %w: Tensor[(3, 70), float32]) "
        "{ nn.matmul(%x, %w) }",
        lambda x, w: x @ w,
    ),
    "broadcast_batch": (
        "def @main(%x: Tensor[(1, 64, 12), float32], %y: Tensor[(4, 12, 64), float32]) "
        "{ nn.batch_matmul(%x, %y, transpose_b=False) }",
        lambda x, y: x @ y,
    ),
    # the batch of one broadcast: the product's columns are the other operand's batch and
    # columns (``b * 256 + j``), its contiguous axis, read at ``j % 256``
    "broadcast_batch_whole_tiles": (
        "def @main(%x: Tensor[(1, 256, 64), float32], %y: Tensor[(2, 64, 256), float32]) "
        "{ nn.batch_matmul(%x, %y, transpose_b=False) }",
        lambda x, y: x @ y,
    ),
    "transposed_operand_broadcast_batch": (
        "def @main(%x: Tensor[(2, 64, 256), float32], %y: Tensor[(1, 64, 256), float32]) "
        "{ nn.batch_matmul(%x, %y, transpose_a=True, transpose_b=False) }",
        lambda x, y: x.transpose(0, 2, 1) @ y,
    ),
    "broadcast_prologue_and_epilogue": (
        "def @main(%x: Tensor[(256, 12), float32], %y: Tensor[(1, 12), float32], "
        "%w: Tensor[(12, 256), float32], %b: Tensor[(256, 1), float32]) "
        "{ add(nn.matmul(add(%x, %y), %w), %b) }",
        lambda x, y, w, b: (x + y) @ w + b,
    ),
    "scaled_operand": (
        "def @main(%x: Tensor[(129, 67), float32], %w: Tensor[(67, 131), float32]) "
        "{ nn.matmul(multiply(%x, 2f), %w) }",
        lambda x, w: (2 * x) @ w,
    ),
}


def shapes(text: str) -> list[list[int]]:
    params = relay.infer_type(relay.parse(text))["main"].params
    return [[int(d) for d in p.checked_type.shape] for p in params]


@pytest.fixture
def everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """relay's schedule for every float32 product, however few its tiles."""
    monkeypatch.setattr(gpu_matmul, "MIN_BLOCKS", 1)


def product_kernel(exe: Any) -> str:
    source = exe.cuda_source()
    kernels = re.split(r"(?=extern \"C\" __global__)", source)
    found = [k for k in kernels if re.search(r"_(matmul|dense|batch_matmul)\w*_kernel\(", k)]
    assert found, source[:2000]
    return found[-1]


def test_a_large_float32_product_gets_relays_schedule() -> None:
    text = (
        "def @main(%x: Tensor[(2048, 512), float32], %w: Tensor[(512, 2048), float32]) "
        "{ nn.matmul(%x, %w) }"
    )
    exe = relay.build(relay.parse(text), target=SM90)
    kernel = product_kernel(exe)
    # 16 x 16 threads, 8 x 8 accumulators each, 128 x 8 tiles of both operands in shared
    # memory, read into registers 4 at a time
    assert "__launch_bounds__(256)" in kernel
    assert re.search(r"float \w+_local_ptr\[64\];", kernel)
    assert len(re.findall(r"__shared__ alignas\(64\) float \w+\[1024\];", kernel)) == 2
    assert re.search(r"= \*\(float4\*\)\(p0_reindex_shared_ptr", kernel)
    assert "ld.shared.v4.f32" in exe.ptx()


@pytest.mark.parametrize(
    ("rows", "accumulators"),
    [
        (512, 16),  # 32 tiles of 128 x 128, too few: 128 tiles of 64 x 64, 4 x 4 per thread
        (128, 16),  # 32 tiles of 64 x 64
        (16, None),  # 16 tiles of 64 x 64, each 3/4 empty: dlight's 32 x 64 tiles
    ],
)
def test_smaller_products_get_smaller_tiles(rows: int, accumulators: int | None) -> None:
    text = (
        f"def @main(%x: Tensor[({rows}, 1024), float32], %w: Tensor[(1024, 1024), float32]) "
        "{ nn.matmul(%x, %w) }"
    )
    kernel = product_kernel(relay.build(relay.parse(text), target=SM90))
    if accumulators is None:
        assert "__launch_bounds__(128)" in kernel
    else:
        assert "__launch_bounds__(256)" in kernel
        assert re.search(rf"float \w+_local_ptr\[{accumulators}\];", kernel)


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_every_layout_and_odd_size_compiles(name: str, everywhere: None) -> None:
    text, _ = PRODUCTS[name]
    exe = relay.build(relay.parse(text), target=SM90)
    assert set(exe.placement.values()) == {"cuda"}
    assert "__launch_bounds__(256)" in product_kernel(exe)
    assert ".target sm_90" in exe.ptx()


def test_two_rows_times_a_wide_matrix_are_not_tiled() -> None:
    # 256 tiles of 128 x 128, each with two rows of 128: dlight's rule takes it
    text = (
        "def @main(%x: Tensor[(2, 1024), float32], %w: Tensor[(1024, 32768), float32]) "
        "{ nn.matmul(%x, %w) }"
    )
    kernel = product_kernel(relay.build(relay.parse(text), target=SM90))
    assert not re.search(r"float \w+_local_ptr\[64\];", kernel)


def test_loads_are_as_wide_as_the_rows_allow(everywhere: None) -> None:
    # rows of 262 floats are whole 8-byte vectors, not 16-byte ones; rows of 141, neither
    def loads(name: str) -> set[str]:
        kernel = product_kernel(relay.build(relay.parse(PRODUCTS[name][0]), target=SM90))
        return set(re.findall(r"\*\((float\d)\*\)\(p0_ptr", kernel))

    assert loads("matmul_rows_of_2") == {"float2"}
    assert loads("dense_bias_relu_odd") == set()


def test_the_tiles_are_in_the_kernel_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gpu.settings()
    monkeypatch.setattr(gpu_matmul, "TILES", gpu_matmul.Tiles(step=16))
    assert gpu.settings() != before
    monkeypatch.setattr(gpu_matmul, "TILES", gpu_matmul.Tiles())
    monkeypatch.setattr(gpu_matmul, "MIN_BLOCKS", 1)
    assert gpu.settings() != before
    monkeypatch.setattr(gpu_matmul, "MIN_BLOCKS", 128)
    monkeypatch.setattr(gpu_matmul, "SMALL_TILES", gpu_matmul.Tiles(step=16))
    assert gpu.settings() != before


@on_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_match_numpy_on_the_gpu(name: str, everywhere: None) -> None:
    text, reference = PRODUCTS[name]
    rng = np.random.default_rng(11)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes(text)]
    got = relay.build(relay.parse(text), target="cuda")(*args).numpy()
    want = reference(*[a.astype(np.float64) for a in args])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@on_gpu
@pytest.mark.gpu
def test_a_large_product_with_its_epilogue_matches_numpy_on_the_gpu() -> None:
    text = (
        "def @main(%x: Tensor[(2048, 520), float32], %w: Tensor[(2000, 520), float32], "
        "%b: Tensor[(2000,), float32]) { nn.relu(add(nn.dense(%x, %w), %b)) }"
    )
    rng = np.random.default_rng(12)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in shapes(text))
    got = relay.build(relay.parse(text), target="cuda")(x, w, b).numpy()
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(("offset", "vector"), [(0, "float4"), (2, "float2"), (1, None)])
def test_a_fused_prologue_off_the_vector_boundary_gets_narrower_loads(
    offset: int, vector: str | None
) -> None:
    # A's copy reads x[i, k + offset] through an elementwise prologue: a 16-byte load
    # there would be misaligned (CUDA faults on it)
    from relay.backend.runtime import tvm

    te, s_tir = tvm().te, tvm().s_tir
    x = te.placeholder((256, 260), "float32", name="x")
    w = te.placeholder((256, 256), "float32", name="w")
    scaled = te.compute((256, 256), lambda i, k: x[i, k + offset] * 2.0, name="scaled")
    k = te.reduce_axis((0, 256), name="k")
    out = te.compute((256, 256), lambda i, j: te.sum(scaled[i, k] * w[k, j], axis=k), name="out")
    target = SM90.tvm_target()
    func = te.create_prim_func([x, w, out]).with_attr("target", target)
    sch = s_tir.Schedule(func)
    assert gpu_matmul.schedule_product(sch, gpu_matmul.Tiles())
    library = tvm().compile(sch.mod, target=target)
    source = "".join(str(m.inspect_source("cuda")) for m in _device_modules(library))
    loads = set(re.findall(r"\*\((float\d)\*\)\(x_ptr", source))
    assert loads == ({vector} if vector else set())


def staged(kernel: str) -> set[str]:
    """The operands a kernel prefetches through registers (``p0_local``, ``p1_local``)."""
    return set(re.findall(r"\b(p\d)_local_ptr\[", kernel))


def test_operands_are_prefetched_through_registers() -> None:
    text = (
        "def @main(%x: Tensor[(2048, 512), float32], %w: Tensor[(512, 2048), float32]) "
        "{ nn.matmul(%x, %w) }"
    )
    assert staged(product_kernel(relay.build(relay.parse(text), target=SM90))) == {"p0", "p1"}


@pytest.mark.parametrize(
    "name",
    [
        "depth_of_3",
        "broadcast_batch",
        "broadcast_batch_whole_tiles",
        "transposed_operand_broadcast_batch",
    ],
)
def test_no_register_prefetch_where_it_would_not_match_the_shared_copy(
    name: str, everywhere: None
) -> None:
    # TVM clips a register stage to the operand's bounds (a depth under one step, fewer
    # columns than one tile) or spans it over a broadcast batch and the columns: its
    # elements are then not those the thread stores to shared memory (a CPU emulation of
    # these kernels gave wrong results for every output); the product is prefetched
    # through shared memory alone. An operand read along a broadcast batch fused with its
    # rows (``j % 256``) is not staged either: TVM failed to compile the staged copy, and
    # the kernel ran on the CPU
    kernel = product_kernel(relay.build(relay.parse(PRODUCTS[name][0]), target=SM90))
    assert "__launch_bounds__(256)" in kernel
    assert staged(kernel) == set()
