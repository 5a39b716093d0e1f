"""relay's GPU schedule for kernels with several outputs (schedule_outputs): a result and
the flags of its run-time checks, or a group's several results, each output a launch of
its own. Checked in the CUDA C and PTX generated without a GPU; run against numpy on one
(``-m gpu``)."""

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

DIVIDE = (
    "def @main(%x: Tensor[(64, 100), int32], %y: Tensor[(64, 100), int32]) { floor_divide(%x, %y) }"
)
TAKE = (
    "def @main(%t: Tensor[(1000, 16), float32], %i: Tensor[(37,), int32]) "
    '{ take(%t, %i, axis=0, mode="fast") }'
)
ROW_SUMS = (
    "def @main(%x: Tensor[(10, 640), int32], %y: Tensor[(10, 640), int32]) "
    "{ sum(floor_divide(%x, %y), axis=[1]) }"
)
ROW_MAXIMA = (  # relay's NaN-propagating max, which TVM cannot combine across threads
    # (uint32: a signed division has three selects, and the max, which reads its input
    # twice, would read it materialized: relay.backend.expansion)
    "def @main(%x: Tensor[(10, 640), uint32], %y: Tensor[(10, 640), uint32]) "
    '{ max(cast(divide(%x, %y), dtype="float32"), axis=[1]) }'
)
SPLIT = (  # three results and the divisors' check (dlight's Fallback takes a plain split)
    "def @main(%x: Tensor[(6, 100), int32], %y: Tensor[(6, 100), int32]) "
    "{ %0 = split(floor_divide(%x, %y), indices_or_sections=3, axis=0); (%0.0, %0.1, %0.2) }"
)
ONE_MAXIMUM = (  # one value of a reducer TVM cannot combine across threads
    "def @main(%x: Tensor[(640,), uint32], %y: Tensor[(640,), uint32]) "
    '{{ max(cast(divide(%x, %y), dtype="float32"){keep}) }}'
)


def built(text: str) -> relay.Executable:
    exe = relay.build(relay.parse(text), target=SM90)
    assert set(exe.placement.values()) == {"cuda"}
    return exe


def launches(exe: relay.Executable) -> list[str]:
    return re.findall(r"\.entry\s+(\w+)", exe.ptx())


def kernels(exe: relay.Executable) -> list[tuple[int, str]]:
    """Each kernel's threads per block and body, in the CUDA C, in order."""
    source = exe.cuda_source()
    found = list(re.finditer(r"__launch_bounds__\((\d+)\) \w+\([^)]*\) \{", source))
    ends = [m.start() for m in found[1:]] + [len(source)]
    return [(int(m.group(1)), source[m.end() : e]) for m, e in zip(found, ends, strict=True)]


def test_barriers_stay_launches_of_their_own() -> None:
    # each level reads the one below twice; the lowering materializes it every few levels
    # (relay.backend.lower.SHARED_SIZE), but dlight's Fallback inlined the barriers again:
    # a fuzzed program of 19 such bindings built 337 KB of CUDA C in 9 s (found by a
    # fuzzing review)
    e = "%x"
    for _ in range(8):
        e = f"where(less({e}, %y), add({e}, %x), %x)"
    exe = built(f"def @main(%x: Tensor[(37,), float32], %y: Tensor[(37,), float32]) {{ {e} }}")
    assert len(launches(exe)) == 4  # three barriers and the result
    assert len(exe.cuda_source()) < 20_000


@pytest.mark.parametrize("text", [DIVIDE, TAKE])
def test_a_run_time_check_is_a_launch_reduced_across_one_block(text: str) -> None:
    # the result one launch, the flag another: a block of 1024 threads, each a strided part
    # of the indicators in a register, combined by warp shuffles and written by thread 0
    exe = built(text)
    assert len(launches(exe)) == 2
    (threads, result), (flag_threads, flag) = kernels(exe)
    assert threads == 256 and "__shfl_down_sync" not in result
    assert flag_threads == 1024 and "__shfl_down_sync" in flag
    assert "in_thread_check0_local_ptr[0] = -2147483648;" in flag
    assert re.search(r"if \(\(\(int\)threadIdx\.x\) == 0\) \{\s*check0_ptr\[0\] =", flag)


def test_few_row_sums_reduce_across_a_block_each() -> None:
    exe = built(ROW_SUMS)
    assert len(launches(exe)) == 2
    (threads, sums), (flag_threads, _) = kernels(exe)
    assert (threads, flag_threads) == (256, 1024)
    assert "__shfl_down_sync" in sums and "sum_ptr[((int)blockIdx.x)] =" in sums


def test_a_reducer_tvm_cannot_combine_takes_a_thread_per_output() -> None:
    # the maxima accumulate serially in a register (no cross-thread combination), the
    # check flag still across a block
    (_, maxima), (_, flag) = kernels(built(ROW_MAXIMA))
    assert "__shfl_down_sync" not in maxima and "max_local_ptr[0] = -CUDART_INF_F;" in maxima
    assert "__shfl_down_sync" in flag


@pytest.mark.parametrize("keep", ["", ", keepdims=True"])
def test_a_single_value_no_block_combines_is_one_thread(keep: str) -> None:
    # one thread accumulates the maximum and stores it: a wider block would have its other
    # threads store registers they never set (the fused unit loops leave the store a
    # constant index, unguarded), and the unit loop of a 0-d result goes above the
    # reduction (inside it, it was a launch per element, the accumulator a workspace)
    exe = built(ONE_MAXIMUM.format(keep=keep))
    source = exe.cuda_source()
    one = re.search(
        r'extern "C" __global__ void \w+\(float\* __restrict__ max_ptr, [^)]*\) \{', source
    )
    assert one is not None  # (one thread: no __launch_bounds__; no workspace argument)
    body = source[one.end() : source.index('extern "C"', one.end())]
    assert "threadIdx" not in body and "max_ptr[0] = max_local_ptr[0];" in body
    assert [threads for threads, _ in kernels(exe)] == [1024]  # the check


def test_a_whole_sum_is_one_block_reduced_across() -> None:
    text = "def @main(%x: Tensor[(640,), int64], %y: Tensor[(640,), int64]) { sum(divide(%x, %y)) }"
    (threads, total), (flag_threads, _) = kernels(built(text))
    assert (threads, flag_threads) == (1024, 1024)
    assert "__shfl_down_sync" in total and "sum_ptr[0] =" in total


def test_several_results_are_a_launch_each() -> None:
    exe = built(SPLIT)
    assert len(launches(exe)) == 4  # three parts and the check
    assert [threads for threads, _ in kernels(exe)] == [200, 200, 200, 1024]


BATCH_NORM = (
    "def @main(%x: Tensor[(8, 64, 7, 7), float32], %g: Tensor[(64,), float32]) "
    "{ %0 = nn.batch_norm(%x, %g, %g, %g, %g, training=True); (%0.0, %0.1, %0.2) }"
)


def test_batch_norm_in_training_is_a_launch_per_stage() -> None:
    # the channels' sums, their squared deviations (from the sums), the normalized result
    # and the two statistics: five launches, the sums in global memory between them
    # (allocated by the host), each channel's sum across a block of 256 threads
    exe = built(BATCH_NORM)
    assert len(launches(exe)) == 5
    (_, sums), (_, squares), *_ = kernels(exe)
    assert "__shfl_down_sync" in sums and "T_sum_ptr[((int)blockIdx.x)] =" in sums
    assert "T_sum_ptr[((int)blockIdx.x)] / 0x1.88p+8f" in squares  # the mean, from the sums


@pytest.mark.parametrize("shape, across", [((32, 256, 56, 56), True), ((2, 300, 4, 4), False)])
def test_long_reductions_to_many_values_reduce_across_a_block(
    shape: tuple[int, ...], across: bool
) -> None:
    # 256 channels of 100,352 elements each: a block per channel (one thread each would
    # walk a whole channel); 300 channels of 32 elements: a thread per channel
    text = BATCH_NORM.replace("(8, 64, 7, 7)", str(shape)).replace("(64,)", f"({shape[1]},)")
    (_, sums), *_ = kernels(built(text))
    assert ("__shfl_down_sync" in sums) == across


@pytest.mark.parametrize("shape", [(4096, 1024), (1000, 1024)])
def test_a_long_check_is_reduced_in_two_launches(shape: tuple[int, int]) -> None:
    # 256 blocks of partial flags (in global memory between the launches), then one block
    # combining them; a tail of each part's threads guarded (4,000 elements a part)
    exe = built(DIVIDE.replace("(64, 100)", str(shape)))
    assert len(launches(exe)) == 3
    (_, _), (part_threads, parts), (last_threads, last) = kernels(exe)
    assert (part_threads, last_threads) == (256, 1024)
    assert "check0_rf_ptr[((int)blockIdx.x)] =" in parts and "__shfl_down_sync" in parts
    assert "check0_rf_ptr[((int)threadIdx.x)]" in last and "check0_ptr[0] =" in last
    if shape == (1000, 1024):
        assert "< 125)" in parts  # (4,000 = 125 warps of 32)


def test_a_long_check_that_is_not_whole_parts_is_one_block() -> None:
    # 1,001,000 elements: with a tail of the parts and of their threads, TVM did not
    # combine the partial flags across the threads (each thread kept its own): one block
    (_, _), (threads, flag) = kernels(built(DIVIDE.replace("(64, 100)", "(1000, 1001)")))
    assert threads == 1024 and "__shfl_down_sync" in flag


def test_a_reduction_tvm_leaves_uncombined_is_refused() -> None:
    # split in 256 parts with a tail, each part's threads with a tail too: TVM's
    # LowerCrossThreadReduction leaves each thread its own partial flag (no error, wrong
    # results); check_launch refuses the schedule
    import tvm

    from relay.backend.cuda import check_launch
    from relay.backend.lower import lower_primitive
    from relay.backend.schedule.cpu import Unchecked
    from relay.testing.lowering import primitive_op_function

    x = np.ones((1000, 1001), np.int32)
    lowered = lower_primitive(primitive_op_function("floor_divide", (x, x), {}), target="cuda")
    sch = Unchecked(tvm.s_tir.Schedule(lowered.prim_func.with_attr("target", SM90.tvm_target())))
    block = sch.get_sblock("check0")
    _, c0, c1 = sch.get_loops(block)
    parts, _ = sch.split(sch.fuse(c0, c1), [256, None])
    partial = sch.rfactor(parts, factor_axis=0)
    part, _, inner = sch.get_loops(partial)
    sch.bind(part, "blockIdx.x")
    sch.bind(sch.split(inner, [None, 256])[1], "threadIdx.x")
    with pytest.raises(ValueError, match="did not combine the reduction check0_rf"):
        check_launch("k", sch.mod["main"], between_launches=True)


# -- on a GPU --------------------------------------------------------------------------------

ON_A_GPU = pytest.mark.skipif(not relay.gpu_available(), reason="no CUDA GPU on this machine")


def _ints(shape: tuple[int, ...], seed: int, low: int = -50, high: int = 50) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, shape).astype(np.int32)


@ON_A_GPU
@pytest.mark.gpu
def test_checks_on_the_gpu_pass_and_fail_as_on_the_cpu() -> None:
    divide = relay.build(relay.parse(DIVIDE), target="cuda")
    x, y = _ints((64, 100), 0), _ints((64, 100), 1, 1, 50)
    np.testing.assert_array_equal(divide(x, y).numpy(), x // y)
    y[63, 99] = 0
    with pytest.raises(relay.ExecutionError, match="integer division by zero"):
        divide(x, y)
    long = relay.build(relay.parse(DIVIDE.replace("(64, 100)", "(1000, 1001)")), target="cuda")
    x, y = _ints((1000, 1001), 11), _ints((1000, 1001), 12, 1, 50)
    np.testing.assert_array_equal(long(x, y).numpy(), x // y)
    y[999, 1000] = 0
    with pytest.raises(relay.ExecutionError, match="integer division by zero"):
        long(x, y)
    take = relay.build(relay.parse(TAKE), target="cuda")
    t = np.arange(16000, dtype=np.float32).reshape(1000, 16)
    i = _ints((37,), 2, 0, 1000)
    np.testing.assert_array_equal(take(t, i).numpy(), t[i])
    i[5] = 1000
    with pytest.raises(relay.ExecutionError):
        take(t, i)


@ON_A_GPU
@pytest.mark.gpu
def test_reductions_and_several_results_on_the_gpu_match_numpy() -> None:
    x, y = _ints((10, 640), 3), _ints((10, 640), 4, 1, 50)
    got = relay.build(relay.parse(ROW_SUMS), target="cuda")(x, y).numpy()
    np.testing.assert_array_equal(got, (x // y).sum(axis=1, dtype=np.int32))
    u, v = _ints((10, 640), 3, 0, 100).astype(np.uint32), y.astype(np.uint32)
    got = relay.build(relay.parse(ROW_MAXIMA), target="cuda")(u, v).numpy()
    np.testing.assert_array_equal(got, (u // v).astype(np.float32).max(axis=1))
    x, y = _ints((6, 100), 5), _ints((6, 100), 6, 1, 50)
    parts = relay.build(relay.parse(SPLIT), target="cuda")(x, y)
    for part, want in zip(parts, np.split(x // y, 3), strict=True):
        np.testing.assert_array_equal(part.numpy(), want)
    norm = relay.build(relay.parse(BATCH_NORM), target="cuda")
    z = np.random.default_rng(9).standard_normal((8, 64, 7, 7)).astype(np.float32)
    gamma = np.random.default_rng(10).standard_normal(64).astype(np.float32)
    for got, want in zip(norm(z, gamma), norm.interpret(z, gamma), strict=True):
        np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-4, atol=1e-5)
    for keep in ("", ", keepdims=True"):
        x, y = _ints((640,), 7, 0, 50).astype(np.uint32), _ints((640,), 8, 1, 7).astype(np.uint32)
        exe = relay.build(relay.parse(ONE_MAXIMUM.format(keep=keep)), target="cuda")
        for _ in range(5):
            got = np.asarray(exe(x, y).numpy()).ravel()
            np.testing.assert_array_equal(got, [np.max((x // y).astype(np.float32))])
