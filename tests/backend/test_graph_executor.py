"""The graph executor: plans, memory reuse, argument handling, results that never alias."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import relay
from relay import Tensor, float32, int32
from relay.backend.build import build
from relay.backend.graph_executor import plan_function
from relay.errors import TypeCheckError

pytestmark = pytest.mark.tvm

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


@relay
def mlp(x: Tensor[float32, (4, 8)], w: Tensor[float32, (16, 8)], b: Tensor[float32, (16,)]):
    h = relay.nn.dense(x, w) + b
    return np.maximum(h, 0.0).sum(axis=1), np.tanh(h)


def test_dataflow_program_runs_compiled_and_matches_the_interpreter() -> None:
    exe = build(mlp)
    assert exe.kind == "graph"
    assert len(exe.kernels) >= 2
    x, w, b = rand(4, 8), rand(16, 8), rand(16)
    got, want = exe(x, w, b), mlp.interpret(x, w, b)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def test_calling_a_relay_function_compiles_it() -> None:
    x, w, b = rand(4, 8), rand(16, 8), rand(16)
    got = mlp(x, w, b)
    compiled = mlp._compiled_for((x, w, b)).runtime["executable"]
    assert compiled.kind == "graph"
    np.testing.assert_allclose(got[1], mlp.interpret(x, w, b)[1], rtol=1e-5, atol=1e-6)


def chain(depth: int) -> relay.Module:
    body = "\n".join(f"  %{i + 1} = {'tanh' if i % 2 else 'negative'}(%{i});" for i in range(depth))
    return relay.parse(
        f"""
def @main(%x: Tensor[(64, 64), float32]) -> Tensor[(64, 64), float32] {{
  %0 = add(%x, 1f);
{body}
  multiply(%{depth}, 2f)
}}"""
    )


def test_memory_plan_reuses_buffers_along_a_chain() -> None:
    exe = build(chain(10), opt_level=0)  # opt level 0: one kernel per operator
    plan = exe.graph.plan
    assert len(plan.steps) == 12
    assert len(plan.storage_bytes) == 2  # two buffers ping-pong along the chain
    assert all(n == 64 * 64 * 4 for n in plan.storage_bytes)
    x = rand(64, 64)
    np.testing.assert_allclose(exe(x), relay.interpret(chain(10), x), rtol=1e-5, atol=1e-6)


def test_plan_frees_a_buffer_only_after_its_last_reader() -> None:
    mod = relay.parse(
        """
def @main(%x: Tensor[(32,), float32]) -> Tensor[(32,), float32] {
  %0 = negative(%x);
  %1 = tanh(%0);
  %2 = exp(%1);
  %3 = add(%0, %2);
  multiply(%3, %1)
}"""
    )
    exe = build(mod, opt_level=0)
    plan = exe.graph.plan
    live = {}
    for i, step in enumerate(plan.steps):
        for s in step.outputs:
            if s in plan.storage_of:
                sid = plan.storage_of[s]
                holder = live.get(sid)
                if holder is not None:  # the previous holder must be dead by now
                    later = [j for j, st in enumerate(plan.steps) if holder in st.inputs]
                    assert max(later, default=-1) < i
                live[sid] = s
    x = rand(32)
    np.testing.assert_allclose(exe(x), relay.interpret(mod, x), rtol=1e-5, atol=1e-6)


RESHAPES = """
def @main(%x: Tensor[(6,), float32], %w: Tensor[(4, 6), float32]) {
  %0 = expand_dims(%x, axis=1);
  %1 = nn.matmul(%w, %0);
  %2 = negative(%1);
  %3 = reshape(%2, newshape=[2, 2]);
  %4 = nn.matmul(%3, %3);
  %5 = reshape(%4, newshape=[4]);
  (%5, %4)
}"""


def test_reshape_only_functions_run_no_kernel(tmp_path: Path) -> None:
    mod = relay.parse(RESHAPES)
    exe = build(mod)
    plan = exe.graph.plan  # type: ignore[union-attr]
    kinds = ["alias" if s.is_alias else "kernel" for s in plan.steps]
    # expand_dims of an argument (a view made at each call) and reshape of an intermediate
    # (a view made once) are aliases; the reshape of a result is a kernel, since results
    # never share memory
    assert kinds == ["alias", "kernel", "alias", "kernel", "kernel"]
    assert len(exe.graph._steps) == 4  # type: ignore[union-attr]
    x, w = rand(6), rand(4, 6)
    for _ in range(2):
        got = exe(x, w)
        want = relay.interpret(mod, x, w)
        for g, e in zip(got, want, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    assert not np.shares_memory(got[0], got[1])
    # the aliased intermediate keeps its buffer until its last reader through the alias
    sliced = plan.storage_of[plan.steps[1].outputs[0]]
    later = [plan.storage_of.get(s) for step in plan.steps[2:] for s in step.outputs]
    assert sliced not in later
    exe.save(tmp_path / "r.relay")
    loaded = relay.backend.build.load(tmp_path / "r.relay")
    assert [s.is_alias for s in loaded.graph.plan.steps] == [k == "alias" for k in kinds]  # type: ignore[union-attr]
    np.testing.assert_array_equal(loaded(x, w)[0], got[0])


def test_results_never_alias_a_later_call() -> None:
    exe = build(chain(3))
    x1, x2 = rand(64, 64), rand(64, 64)
    r1 = exe(x1)
    keep = r1.copy()
    r2 = exe(x2)
    np.testing.assert_array_equal(r1, keep)
    assert not np.shares_memory(r1, r2)
    view = r2[3:]
    del r2
    r3 = exe(x1)  # r2's buffer is still reachable through the view: not reused
    assert not np.shares_memory(view, r3)


def test_dropped_results_are_recycled() -> None:
    exe = build(chain(3))
    x = rand(64, 64)
    ptrs = set()
    for _ in range(8):
        out = exe(x)
        ptrs.add(out.ctypes.data)
    assert len(ptrs) <= 3


def test_small_results_are_new_arrays_and_large_ones_recycled_chunks() -> None:
    from relay.backend.graph_executor import SMALL_RESULTS

    small = build(relay.parse("def @main(%x: Tensor[(5,), float32]) { (tanh(%x), negative(%x)) }"))
    assert small.graph._small is not None  # 40 bytes of results
    runs = [small(np.full(5, float(i), np.float32)) for i in range(3)]
    for i, (t, n) in enumerate(runs):  # each call's results its own arrays, kept intact
        assert t.flags.owndata and n.flags.owndata
        np.testing.assert_array_equal(n, np.full(5, -float(i), np.float32))
        np.testing.assert_allclose(t, np.tanh(np.full(5, float(i))), rtol=1e-6)
    large = build(chain(3))
    out = large(rand(64, 64))
    assert large.graph._small is None and out.nbytes > SMALL_RESULTS
    assert not out.flags.owndata  # (a view of a recycled chunk)


@pytest.mark.parametrize(("offset", "placed"), [(0, 0), (16, 64), (64, 64), (100, 128), (4080, 0)])
def test_page_placed_buffers_start_at_their_input_s_page_offset(offset: int, placed: int) -> None:
    from relay.backend.runtime import ALIGNMENT, PAGE, PLACED_BYTES, page_placed_empty

    raw = np.empty(2 * PAGE + 64, np.uint8)
    start = (offset - raw.ctypes.data) % PAGE
    like = raw[start : start + 64]
    assert like.ctypes.data % PAGE == offset
    big = page_placed_empty(PLACED_BYTES, like)
    assert big.nbytes == PLACED_BYTES and big.ctypes.data % PAGE == placed
    small = page_placed_empty(PLACED_BYTES - 1, like)  # (not placed: a plain aligned buffer)
    assert small.nbytes == PLACED_BYTES - 1 and small.ctypes.data % ALIGNMENT == 0
    assert page_placed_empty(PLACED_BYTES, None).ctypes.data % ALIGNMENT == 0


@pytest.mark.parametrize("offset", [16, 2048 + 64])
def test_large_results_are_placed_as_their_first_large_input(offset: int) -> None:
    # a result buffer's page offset against its inputs' decides how often the kernel's
    # loads wait on its stores (4K aliasing, relay.backend.runtime.page_placed_empty)
    from relay.backend.runtime import PAGE

    n = 1 << 19  # 2 MiB of float32 each
    mod = relay.parse(
        f"def @main(%x: Tensor[({n},), float32], %y: Tensor[({n},), float32]) "
        "{ subtract(tanh(%x), %y) }"
    )
    exe = build(mod)
    raw = [np.empty(n + PAGE, np.float32) for _ in range(2)]
    x, y = (r[(offset - r.ctypes.data) % PAGE // 4 :][:n] for r in raw)
    x[:], y[:] = rand(n), rand(n)
    out = exe(x, y)
    assert out.ctypes.data % PAGE == -(-offset // 64) * 64
    np.testing.assert_allclose(out, np.tanh(x) - y, rtol=1e-6, atol=1e-6)


def test_identity_and_duplicate_results_are_copies() -> None:
    mod = relay.parse(
        """
def @main(%x: Tensor[(5,), float32]) -> (Tensor[(5,), float32], Tensor[(5,), float32]) {
  %0 = negative(%x);
  (%x, %0)
}"""
    )
    exe = build(mod)
    x = rand(5)
    a, b = exe(x)
    assert not np.shares_memory(a, x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, -x)


@pytest.mark.parametrize("layout", ["misaligned", "strided", "fortran", "readonly", "aligned"])
def test_argument_layouts(layout: str) -> None:
    exe = build(chain(2))
    base = rand(64, 64)
    if layout == "misaligned":
        raw = np.empty(64 * 64 + 1, np.float32)
        x = raw[1:].reshape(64, 64)
        x[...] = base
        assert x.ctypes.data % 64 != 0
    elif layout == "strided":
        big = np.zeros((64, 128), np.float32)
        big[:, ::2] = base
        x = big[:, ::2]
    elif layout == "fortran":
        x = np.asfortranarray(base)
    elif layout == "readonly":  # aligned but read-only: DLPack refuses those
        from relay.backend.runtime import aligned_empty

        x = aligned_empty((64, 64), np.float32)
        x[...] = base
        x.flags.writeable = False
    else:
        from relay.backend.runtime import aligned_empty

        x = aligned_empty((64, 64), np.float32)
        x[...] = base
    before = x.copy()
    np.testing.assert_allclose(exe(x), relay.interpret(chain(2), base), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, before)  # the argument is never written
    # only the layouts a kernel cannot take are staged: a misaligned (16 or 4 bytes off)
    # contiguous array is passed as it is
    staged = exe.graph._staging  # type: ignore[union-attr]
    assert bool(staged) == (layout in ("strided", "fortran", "readonly"))


def test_arguments_off_by_any_element_multiple_run_unstaged() -> None:
    exe = build(chain(3))
    raw = np.zeros(64 * 64 + 16, np.float32)
    for offset in range(1, 16):  # 4 to 60 bytes off a 64-byte boundary
        x = raw[offset : offset + 64 * 64].reshape(64, 64)
        x[...] = rand(64, 64)
        np.testing.assert_allclose(exe(x), relay.interpret(chain(3), x), rtol=1e-5, atol=1e-6)
    assert not exe.graph._staging  # type: ignore[union-attr]
    # data not aligned to the element size (numpy's aligned flag off) is copied
    odd = np.zeros(64 * 64 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(64, 64)
    assert not odd.flags.aligned and odd.flags.writeable and odd.flags.c_contiguous
    odd[...] = rand(64, 64)
    np.testing.assert_allclose(exe(odd), relay.interpret(chain(3), odd), rtol=1e-5, atol=1e-6)
    assert exe.graph._staging  # type: ignore[union-attr]


def test_wrong_dtype_and_shape_are_clear_errors() -> None:
    exe = build(chain(1))
    with pytest.raises(
        TypeCheckError, match=r"expected an argument of type .*float32.*dtype float64"
    ):
        exe(np.zeros((64, 64)))
    with pytest.raises(TypeCheckError, match=r"shape \(64, 63\)"):
        exe(np.zeros((64, 63), np.float32))
    with pytest.raises(relay.ExecutionError, match="takes 1 arguments, got 2"):
        exe(np.zeros((64, 64), np.float32), 1)


def test_annotated_function_reports_bad_arguments_with_the_parameter() -> None:
    with pytest.raises(TypeCheckError, match="argument 0 of mlp"):
        mlp(np.zeros((4, 9), np.float32), rand(16, 8), rand(16))


def test_scalars_tuples_and_constants() -> None:
    mod = relay.parse(
        """
def @main(%p: (Tensor[(3,), float32], Tensor[(), float32]), %k: Tensor[(), int32]) {
  %0 = %p.0;
  %1 = %p.1;
  %2 = multiply(%0, %1);
  (%2, add(%k, 1))
}"""
    )
    exe = build(mod)
    v, s = np.array([1, 2, 3], np.float32), np.float32(2)
    got = exe((v, s), 4)
    np.testing.assert_array_equal(got[0], [2, 4, 6])
    assert got[1] == 5 and got[1].dtype == np.int32


@relay
def scaled(x: Tensor[float32, (2,)], s: Tensor[float32, ()], k: Tensor[int32, ()]):
    return x * s, k + 1


def test_numbers_for_scalar_parameters_convert_as_on_the_relay_path() -> None:
    exe = build(scaled)
    x = np.ones(2, np.float32)
    for s in [0.5, 0.1, 0.3, float("inf"), np.float32(0.1), np.float64(0.5), np.int64(3), 2]:
        got, want = exe(x, s, 1), scaled(x, s, 1)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[0], x * np.float32(s))
    assert np.isnan(exe(x, float("nan"), 1)[0]).all()
    assert np.isnan(exe(x, np.float64("nan"), 1)[0]).all()
    expected = "scaled: expected an argument of type Tensor[(), {}]: {}"
    for s, k, why in [
        (1.0, 2**40, "1099511627776 does not fit in int32"),
        (1.0, -(2**31) - 1, "-2147483649 does not fit in int32"),
        (1.0, 2.0, "cannot pass the float 2.0 as int32"),
        (1e40, 1, "1e+40 does not fit in float32"),
        (-1e40, 1, "-1e+40 does not fit in float32"),
        (10**400, 1, f"{10**400} does not fit in float32"),
        (np.float64(0.1), 1, "the float64 value 0.1 does not fit in float32"),
        (1.0, np.int64(2**40), "the int64 value 1099511627776 does not fit in int32"),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no numpy overflow warning either)
            with pytest.raises(TypeCheckError) as info:
                exe(x, s, k)
        dtype = "int32" if why.endswith("int32") else "float32"
        assert info.value.message == expected.format(dtype, why)
    assert exe(x, 1.0, -(2**31))[1] == -(2**31) + 1


def test_tensor_constants_are_bound_once() -> None:
    c = relay.const(np.arange(6, dtype=np.float32).reshape(2, 3))
    x = relay.ir.Var("x", relay.ir.types.TensorType((2, 3), "float32"))
    func = relay.ir.Function((x,), relay.op.add(relay.op.multiply(x, c), c))
    exe = build(func)
    plan = exe.graph.plan
    assert len(plan.constants) == 1
    xv = rand(2, 3)
    # (x * c + c is one fused multiply-add in the kernel: near zero, numpy's two roundings
    # differ from it by a few ulps of the terms, not of the result)
    np.testing.assert_allclose(exe(xv), xv * c.data + c.data, rtol=1e-6, atol=1e-5)


def test_control_flow_runs_on_the_vm() -> None:
    mod = relay.parse(
        """
def @main(%x: Tensor[(3,), float32], %c: bool) -> Tensor[(3,), float32] {
  if (%c) { negative(%x) } else { %x }
}"""
    )
    exe = build(mod)
    assert exe.kind == "vm" and exe.graph is None
    x = rand(3)
    np.testing.assert_array_equal(exe(x, True), -x)


def test_plan_rejects_non_dataflow() -> None:
    from relay.backend.build import optimize
    from relay.backend.graph_executor import NotDataflow

    mod = relay.parse(
        """
def @main(%x: Tensor[(3,), float32]) -> Tensor[(3,), float32] {
  let %f = fn (%y: Tensor[(3,), float32]) { negative(%y) };
  %f(%f(%x))
}"""
    )
    opt = optimize(relay.infer_type(mod), mod.get_global_var("main"), opt_level=0)
    with pytest.raises(NotDataflow):
        plan_function(opt.functions[opt.get_global_var("main")])


def test_bfloat16_arrays_cross_the_kernel_boundary() -> None:
    # numpy's DLPack export has no bfloat16: the kernels get such arrays as TVM tensors over
    # the same memory (a BufferError before), in, out and between kernels (opt level 2
    # keeps the cast and the max apart, and the max of two kernels in one at level 3)
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    between = relay.parse(
        "def @main(%x: Tensor[(8, 16), float32]) {"
        ' %0 = cast(%x, dtype="bfloat16"); %1 = max(%0, axis=[1]); cast(%1, dtype="float32") }'
    )
    for level, kernels in ((2, 2), (3, 1)):
        exe = relay.build(between, opt_level=level)
        assert len(exe.kernels) == kernels
        np.testing.assert_array_equal(exe(x), x.astype(bf16).astype(np.float32).max(axis=1))
    through = relay.build(
        relay.parse(
            "def @main(%x: Tensor[(8, 16), bfloat16]) { %0 = max(%x, axis=[1]); multiply(%0, %0) }"
        )
    )
    xb = x.astype(bf16)
    got = through(xb)
    m = xb.astype(np.float32).max(axis=1)
    assert got.dtype == bf16
    np.testing.assert_array_equal(got.astype(np.float32), (m * m).astype(bf16).astype(np.float32))
