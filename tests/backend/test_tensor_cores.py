"""Float16 and bfloat16 products on the tensor cores (relay.backend.schedule.tensorize).

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


DTYPES = ["float16", "bfloat16"]


def product(name: str, dtype: str) -> str:
    """The text of product ``name`` with ``dtype`` operands."""
    return PRODUCTS[name][0].replace("float16", dtype)


def wmma_instructions(ptx: str) -> set[str]:
    return set(re.findall(r"\bwmma\.(load|mma|store)\b", ptx))


def wmma_products(ptx: str) -> set[str]:
    """The types of the WMMA multiply-adds in ``ptx``: the result's and the addend's, with
    the operands' between them where they are not float16 (``f32.bf16.bf16.f32``)."""
    return set(re.findall(r"\bwmma\.mma\.sync\.aligned\.\w+\.\w+\.m16n16k16\.([\w.]+)\s", ptx))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_float16_and_bfloat16_products_run_on_the_tensor_cores(name: str, dtype: str) -> None:
    exe = relay.build(relay.parse(product(name, dtype)), target=SM90)
    assert set(exe.placement.values()) == {"cuda"}
    assert "nvcuda::wmma::mma_sync" in exe.cuda_source()
    assert wmma_instructions(exe.ptx()) == {"load", "mma", "store"}
    types = {"float16": "f32.f32", "bfloat16": "f32.bf16.bf16.f32"}[dtype]
    assert wmma_products(exe.ptx()) == {types}  # float32 accumulators
    # a K x N operand is transposed once, by a kernel of its own (AlterProductLayout)
    transposes = [k for k in exe.kernels if k.startswith("fused_transpose")]
    assert len(transposes) == (0 if name == "dense_odd" else 1)


def test_bfloat16_products_need_sm_80() -> None:
    # WMMA takes bfloat16 from sm_80 on: before, the product is SIMT and its operand is
    # not transposed for the tensor cores
    text = product("matmul_bias_relu", "bfloat16")
    exe = relay.build(relay.parse(text), target=Target("cuda", arch="sm_75"))
    assert set(exe.placement.values()) == {"cuda"}
    assert "wmma" not in exe.cuda_source() and not wmma_instructions(exe.ptx())
    assert not [k for k in exe.kernels if k.startswith("fused_transpose")]
    exe = relay.build(relay.parse(text), target=Target("cuda", arch="sm_80"))
    assert wmma_products(exe.ptx()) == {"f32.bf16.bf16.f32"}
    # float16 from sm_70 on (this nvcc's oldest is sm_75)
    text = product("matmul_bias_relu", "float16")
    exe = relay.build(relay.parse(text), target=Target("cuda", arch="sm_75"))
    assert wmma_products(exe.ptx()) == {"f32.f32"}


def test_the_bfloat16_context_restores_dlight_and_the_intrinsics() -> None:
    import importlib
    import sys

    from relay.backend.schedule.tensorize import (
        bfloat16_intrin_group,
        wmma_intrin_group,
        wmma_tensorize,
    )

    rules = importlib.import_module("tvm.s_tir.dlight.gpu.matmul")
    before = rules.get_in_out_dtypes
    loaded = sys.modules.get("tvm.s_tir.tensor_intrin.cuda")
    with wmma_tensorize("bfloat16"):
        from tvm.s_tir.tensor_intrin.cuda import get_wmma_intrin_group

        assert get_wmma_intrin_group is bfloat16_intrin_group
        assert rules.get_in_out_dtypes is not before
    assert rules.get_in_out_dtypes is before
    assert sys.modules.get("tvm.s_tir.tensor_intrin.cuda") is loaded
    with wmma_tensorize():
        from tvm.s_tir.tensor_intrin.cuda import get_wmma_intrin_group

        assert loaded is not None or get_wmma_intrin_group is wmma_intrin_group
        assert rules.get_in_out_dtypes is before


def test_a_product_of_float16_and_bfloat16_operands_stays_simt() -> None:
    text = (
        "def @main(%x: Tensor[(128, 128), float16], %w: Tensor[(128, 128), bfloat16]) "
        '{ nn.matmul(cast(%x, dtype="float32"), cast(%w, dtype="float32")) }'
    )
    exe = relay.build(relay.parse(text), target=SM90)
    assert set(exe.placement.values()) == {"cuda"}
    assert "wmma" not in exe.cuda_source()


def test_bfloat16_intrinsic_names() -> None:
    from relay.backend.schedule.tensorize import bfloat16_intrin_group, wmma_intrinsic

    # dlight's float16 rule asks for float16 intrinsics; a bfloat16 product gets these
    group = bfloat16_intrin_group("shared.dyn", "shared.dyn", "float16", "float32", True)
    assert group == {
        "init": "wmma_fill_16x16x16_f32",
        "load_a": "wmma_load_16x16x16_bf16_a_shared_dyn",
        "load_b": "wmma_load_16x16x16_bf16_b_trans_shared_dyn",
        "compute": "wmma_sync_16x16x16_bf16bf16f32_trans",
        "store": "wmma_store_16x16x16_f32_shared_dyn",
    }
    for name in group.values():
        wmma_intrinsic(name)
    _, (src, dst), _ = wmma_intrinsic("wmma_load_16x16x16_bf16_b_trans_shared_dyn")
    assert (str(src.dtype), str(dst.dtype), dst.scope()) == (
        "bfloat16",
        "bfloat16",
        "wmma.matrix_b",
    )
    # WMMA has no bfloat16 accumulator: dlight's float16-accumulator retry is refused
    with pytest.raises(ValueError, match="does not implement wmma_sync_16x16x16_bf16bf16f16"):
        wmma_intrinsic("wmma_sync_16x16x16_bf16bf16f16")


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
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_tensor_core_products_match_numpy(name: str, dtype: str) -> None:
    from relay.backend.runtime import numpy_dtype

    _, shapes, reference = PRODUCTS[name]
    np_dtype = numpy_dtype(dtype)
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s).astype(np_dtype) for s in shapes]
    exe = relay.build(relay.parse(product(name, dtype)), target="cuda")
    got = exe(*args).numpy()
    want = reference(*[a.astype(np.float64) for a in args])
    assert got.dtype == np_dtype and got.shape == want.shape
    # 16-bit operands, float32 accumulators, a 16-bit result: its rounding (float16 keeps
    # 11 bits, bfloat16 8) bounds the error
    err = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
    assert err < (2e-3 if dtype == "float16" else 8e-3), err


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
