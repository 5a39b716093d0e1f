"""Float16 products on the tensor cores (relay.backend.schedule.tensorize).

Without a GPU: which products compile to WMMA instructions (in the CUDA C and in nvcc's
PTX), and relay's replacement of TVM's ``tensorize`` refusing blocks that do not compute
what an intrinsic computes. With one (tests marked ``gpu``): the results against numpy.
"""

from __future__ import annotations

import re
from typing import Any

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

gpu = pytest.mark.skipif(not relay.gpu_available(), reason="no CUDA GPU on this machine")

# (program, argument shapes, numpy reference): every size over 64 (the tensor-core rule's
# threshold), odd sizes padded to whole tiles, fused epilogues
PRODUCTS: dict[str, tuple[str, list[tuple[int, ...]], Any]] = {
    "matmul_bias_relu": (
        "def @main(%x: Tensor[(256, 320), float16], %w: Tensor[(320, 192), float16], "
        "%b: Tensor[(192,), float16]) { nn.relu(add(nn.matmul(%x, %w), %b)) }",
        [(256, 320), (320, 192), (192,)],
        lambda x, w, b: np.maximum(x @ w + b, 0),
    ),
    "dense_odd": (
        "def @main(%x: Tensor[(100, 200), float16], %w: Tensor[(72, 200), float16]) "
        "{ nn.dense(%x, %w) }",
        [(100, 200), (72, 200)],
        lambda x, w: x @ w.T,
    ),
    "batch_matmul": (
        "def @main(%x: Tensor[(3, 128, 96), float16], %y: Tensor[(3, 96, 80), float16]) "
        "{ nn.batch_matmul(%x, %y, transpose_b=False) }",
        [(3, 128, 96), (3, 96, 80)],
        lambda x, y: x @ y,
    ),
}


def wmma_instructions(ptx: str) -> set[str]:
    return set(re.findall(r"\bwmma\.(load|mma|store)\b", ptx))


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_float16_products_run_on_the_tensor_cores(name: str) -> None:
    text, _, _ = PRODUCTS[name]
    exe = relay.build(relay.parse(text), target=SM90)
    assert set(exe.placement.values()) == {"cuda"}
    assert "nvcuda::wmma::mma_sync" in exe.cuda_source()
    assert wmma_instructions(exe.ptx()) == {"load", "mma", "store"}
    # a K x N operand is transposed once, by a kernel of its own (AlterProductLayout)
    transposes = [k for k in exe.kernels if k.startswith("fused_transpose")]
    assert len(transposes) == (0 if name == "dense_odd" else 1)


@pytest.mark.parametrize(
    "text",
    [
        # float32 and int8 products stay SIMT (int8 WMMA fails in TVM's code generator)
        "def @main(%x: Tensor[(256, 256), float32], %w: Tensor[(256, 256), float32]) "
        "{ nn.matmul(%x, %w) }",
        "def @main(%x: Tensor[(256, 256), int8], %w: Tensor[(256, 256), int8]) "
        '{ nn.dense(%x, %w, out_dtype="int32") }',
        # a float16 product with a size of 64 or less
        "def @main(%x: Tensor[(256, 64), float16], %w: Tensor[(64, 256), float16]) "
        "{ nn.matmul(%x, %w) }",
    ],
)
def test_other_products_stay_off_the_tensor_cores(text: str) -> None:
    exe = relay.build(relay.parse(text), target=SM90)
    assert set(exe.placement.values()) == {"cuda"}
    assert "wmma" not in exe.cuda_source()
    assert not wmma_instructions(exe.ptx())


def _copy_schedule(compute: Any) -> tuple[Any, Any]:
    """A schedule of a 16 x 16 float16 stage ``B = compute(A)`` with ``A`` read through
    a ``wmma.matrix_a`` cache, and the cache's loop to tensorize."""
    from tvm import s_tir, te

    a = te.placeholder((16, 16), "float16", name="A")
    b = te.compute((16, 16), lambda i, j: compute(a[i, j]), name="B")
    sch = s_tir.Schedule(te.create_prim_func([a, b]))
    shared = sch.cache_read(sch.get_sblock("B"), 0, "shared.dyn")
    frag = sch.cache_read(sch.get_sblock("B"), 0, "wmma.matrix_a")
    del shared
    return sch, sch.get_loops(frag)[0]


def test_relay_tensorize_replaces_a_copy_with_the_intrinsic() -> None:
    from relay.backend.schedule.tensorize import tensorize

    sch, loop = _copy_schedule(lambda v: v)
    tensorize(sch, loop, "wmma_load_16x16x16_f16_a_shared_dyn")
    script = sch.mod.script()
    assert "T.tvm_load_matrix_sync(" in script
    assert 'scope="wmma.matrix_a"' in script and "T.match_buffer(" in script


@pytest.mark.parametrize(
    "intrin, message",
    [
        ("wmma_load_16x16x16_f16_b_shared_dyn", "no single region in wmma.matrix_b memory"),
        ("wmma_sync_16x16x16_f16f16f32", "the block does not compute wmma_sync"),
        ("mma_f16f16f32_trans_b", "relay's tensorize does not implement mma_f16f16f32_trans_b"),
    ],
)
def test_relay_tensorize_refuses_what_does_not_match(intrin: str, message: str) -> None:
    from relay.backend.schedule.tensorize import tensorize

    sch, loop = _copy_schedule(lambda v: v)
    with pytest.raises(ValueError) as err:
        tensorize(sch, loop, intrin)
    assert message in str(err.value)


def test_tvm_tensorize_is_restored_after_a_rule() -> None:
    from tvm import s_tir

    from relay.backend.schedule.tensorize import wmma_tensorize

    original = s_tir.Schedule.__dict__["tensorize"]
    with wmma_tensorize():
        assert s_tir.Schedule.__dict__["tensorize"] is not original
    assert s_tir.Schedule.__dict__["tensorize"] is original


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_tensor_core_products_match_numpy(name: str) -> None:
    text, shapes, reference = PRODUCTS[name]
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    got = relay.build(relay.parse(text), target="cuda")(*args).numpy()
    want = reference(*[a.astype(np.float64) for a in args])
    assert got.dtype == np.float16 and got.shape == want.shape
    # float16 operands, float32 accumulators, a float16 result
    err = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
    assert err < 2e-3, err


def test_tvm_intrinsic_registry_is_not_imported() -> None:
    import sys

    name = "tvm.s_tir.tensor_intrin.cuda"  # registers every target's intrinsics: 22 s
    if name in sys.modules:
        pytest.skip("imported by another test of this process")
    text, _, _ = PRODUCTS["dense_odd"]
    relay.build(relay.parse(text), target=Target("cuda", arch="sm_80"))
    assert name not in sys.modules


def test_threads_trying_the_tensor_cores_at_once_all_get_the_stand_in() -> None:
    # relay compiles parts on several threads: each must see the stand-in module, never
    # TVM's registry (a 22 s import, and a second import of it fails)
    import sys
    import threading

    from relay.backend.schedule.tensorize import wmma_intrin_group, wmma_tensorize

    name = "tvm.s_tir.tensor_intrin.cuda"
    if name in sys.modules:
        pytest.skip("imported by another test of this process")
    seen: list[object] = []

    def worker() -> None:
        for _ in range(200):
            with wmma_tensorize():
                from tvm.s_tir.tensor_intrin.cuda import get_wmma_intrin_group

                seen.append(get_wmma_intrin_group)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 800 and all(g is wmma_intrin_group for g in seen)
    assert name not in sys.modules


def test_a_tile_under_a_predicate_is_not_tensorized() -> None:
    # a 20-row operand split into tiles of 16: the second tile's rows run under a predicate,
    # and a WMMA load would read and write all 16
    from tvm import s_tir, te

    from relay.backend.schedule.tensorize import tensorize

    a = te.placeholder((20, 16), "float16", name="A")
    b = te.compute((20, 16), lambda i, j: a[i, j], name="B")
    sch = s_tir.Schedule(te.create_prim_func([a, b]))
    sch.cache_read(sch.get_sblock("B"), 0, "shared.dyn")
    frag = sch.cache_read(sch.get_sblock("B"), 0, "wmma.matrix_a")
    _, inner = sch.split(sch.get_loops(frag)[0], [2, 16])
    before = sch.mod.script()
    with pytest.raises(Exception, match=r"blockize|predicate"):
        tensorize(sch, inner, "wmma_load_16x16x16_f16_a_shared_dyn")
    assert "tvm_load_matrix_sync" not in sch.mod.script() and sch.mod.script() == before
