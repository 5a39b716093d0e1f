"""Programs with shape variables on the graph executor: kernels compiled once for symbolic
sizes, run for every size the arguments give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.backend import compiler
from relay.backend.build import load
from relay.backend.graph_executor import SymbolicGraphExecutor
from relay.errors import TypeCheckError

pytestmark = pytest.mark.tvm

MLP = """
def @main[n: Shape](%x: Tensor[(n, 16), float32], %w: Tensor[(16, 40), float32],
                    %b: Tensor[(40,), float32]) {
  %0 = maximum(add(nn.matmul(%x, %w), %b), 0f);
  (sum(%0, axis=[0]), max(%0, axis=[1]), nn.matmul(%x, %0, transpose_a=True), mean(%0),
   reshape(%0, newshape=[-1]), nn.softmax(%0))
}
"""

RNG = np.random.default_rng(1)
W = RNG.standard_normal((16, 40)).astype(np.float32)
B = RNG.standard_normal(40).astype(np.float32)


def reference(x: np.ndarray) -> tuple[Any, ...]:
    h = np.maximum(x @ W + B, 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    mean = h.mean() if h.size else np.float32(np.nan)
    return (h.sum(0), h.max(1), x.T @ h, mean, h.reshape(-1), e / e.sum(1, keepdims=True))


@pytest.fixture(scope="module")
def mlp() -> Any:
    return relay.build(relay.parse(MLP))


def check(exe: Any, rows: int) -> None:
    x = RNG.standard_normal((rows, 16)).astype(np.float32)
    got = exe(x, W, B)
    for g, e in zip(got, reference(x), strict=True):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_a_function_with_a_shape_variable_runs_on_the_graph_executor(mlp: Any) -> None:
    assert mlp.kind == "graph"
    assert isinstance(mlp.graph, SymbolicGraphExecutor)
    assert [v.name_hint for v in mlp.graph.plan.shape_vars] == ["n"]


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 300))
def test_every_size_gives_numpys_results(mlp: Any, rows: int) -> None:
    check(mlp, rows)


def test_new_sizes_compile_nothing(mlp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    check(mlp, 8)
    calls: list[Any] = []
    monkeypatch.setattr(compiler, "_compile_lowered", lambda *a: calls.append(a))
    for rows in (1, 2, 3, 17, 129, 0):
        check(mlp, rows)
    assert calls == []


def test_instances_are_kept_for_the_last_sizes(mlp: Any) -> None:
    graph = mlp.graph
    last = graph.INSTANCES + 12
    for rows in range(1, last):
        check(mlp, rows)
    assert list(graph._instances) == [(rows,) for rows in range(last - graph.INSTANCES, last)]


def test_an_argument_that_does_not_fit_names_the_size_it_was_given(mlp: Any) -> None:
    with pytest.raises(TypeCheckError) as err:
        mlp(np.zeros((3, 15), np.float32), W, B)
    assert str(err.value) == (
        "@main: expected an argument of type Tensor[(n, 16), float32] (with n = 3), "
        "got an array of shape (3, 15)"
    )
    with pytest.raises(TypeCheckError) as err:
        mlp(np.zeros((3, 16), np.float32), W[:, :39], B)
    assert str(err.value) == (
        "@main: expected an argument of type Tensor[(16, 40), float32] (with n = 3), "
        "got an array of shape (16, 39)"
    )


def test_a_variable_shared_by_arguments_must_agree() -> None:
    exe = relay.build(
        relay.parse(
            "def @main[n: Shape](%a: Tensor[(n, 4), float32], %b: Tensor[(n, 4), float32]) "
            "{ add(%a, %b) }"
        )
    )
    a = np.ones((5, 4), np.float32)
    np.testing.assert_array_equal(exe(a, a), a + a)
    with pytest.raises(TypeCheckError) as err:
        exe(a, np.ones((6, 4), np.float32))
    assert str(err.value) == (
        "@main: expected an argument of type Tensor[(n, 4), float32] (with n = 5), "
        "got an array of shape (6, 4)"
    )


def test_two_variables_and_a_product_of_both() -> None:
    exe = relay.build(
        relay.parse(
            "def @main[n: Shape, m: Shape](%a: Tensor[(n, 24), float32], "
            "%b: Tensor[(m, 24), float32]) { tanh(nn.matmul(%a, %b, transpose_b=True)) }"
        )
    )
    assert isinstance(exe.graph, SymbolicGraphExecutor)
    for n, m in [(1, 1), (7, 33), (64, 5), (0, 3)]:
        a = RNG.standard_normal((n, 24)).astype(np.float32)
        b = RNG.standard_normal((m, 24)).astype(np.float32)
        np.testing.assert_allclose(exe(a, b), np.tanh(a @ b.T), rtol=1e-4, atol=1e-5)


def test_dimension_expressions_reach_the_kernels() -> None:
    exe = relay.build(
        relay.parse(
            "def @main[n: Shape](%a: Tensor[(n, 3, 4), float32]) "
            "{ %0 = reshape(%a, newshape=[-1, 4]); sum(exp(%0), axis=[1]) }"
        )
    )
    assert isinstance(exe.graph, SymbolicGraphExecutor)
    assert str(exe.graph.plan.slot_types[-1]) == "Tensor[(n * 3,), float32]"
    for n in (1, 5, 9):
        a = RNG.standard_normal((n, 3, 4)).astype(np.float32)
        np.testing.assert_allclose(exe(a), np.exp(a.reshape(-1, 4)).sum(1), rtol=1e-5)


@pytest.mark.parametrize(
    ("body", "reference"),
    [
        ("concatenate((%a, %a), axis=0)", lambda a: np.concatenate([a, a])),  # needs sizes
        ("argmax(%a, axis=[0])", lambda a: a.argmax(0)),  # TVM's int64 rewrite fails on it
    ],
)
def test_a_kernel_that_cannot_be_symbolic_sends_the_program_to_the_vm(
    body: str, reference: Any
) -> None:
    exe = relay.build(relay.parse(f"def @main[n: Shape](%a: Tensor[(n, 2), float32]) {{ {body} }}"))
    assert exe.kind == "vm"
    for rows in (3, 5):
        a = RNG.standard_normal((rows, 2)).astype(np.float32)
        np.testing.assert_array_equal(exe(a), reference(a))


def test_a_symbolic_kernel_called_directly_reads_its_sizes(mlp: Any) -> None:
    kernel = next(
        k for k in mlp.library.kernels.values() if k.anchor == "nn.matmul" and len(k.inputs) == 3
    )
    x = RNG.standard_normal((6, 16)).astype(np.float32)
    (out,) = kernel(x, W, B)
    np.testing.assert_allclose(out, np.maximum(x @ W + B, 0), rtol=1e-5, atol=1e-5)


def test_a_program_of_symbolic_sizes_saves_and_loads(mlp: Any, tmp_path: Path) -> None:
    path = tmp_path / "mlp.zip"
    mlp.save(path)
    again = load(path)
    assert isinstance(again.graph, SymbolicGraphExecutor)
    for rows in (4, 31):
        check(again, rows)


def test_the_product_of_a_symbolic_number_of_rows_is_padded_to_whole_tiles() -> None:
    from relay.backend.build import optimize
    from relay.backend.lower import lower_primitive
    from relay.backend.runtime import tvm
    from relay.backend.schedule.cpu import Unchecked
    from relay.backend.schedule.matmul import schedule_matmul_group
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Call, Function

    mod = relay.infer_type(relay.parse(MLP))
    fused = optimize(mod, mod.get_global_var("main"))
    body = fused.functions[fused.get_global_var("main")].body
    prims = [
        n.op for n in sub_expressions(body) if isinstance(n, Call) and isinstance(n.op, Function)
    ]
    product = next(p for p in prims if "nn.matmul" in str(p) and "add" in str(p))
    lowered = lower_primitive(product)
    sch = Unchecked(tvm().s_tir.Schedule(lowered.prim_func))
    schedule_matmul_group(sch, lowered)
    script = sch.mod["main"].script()
    assert "p0_pad" in script  # the rows padded to a multiple of the tile
    assert "T.vectorized" in script and "T.parallel" in script
    assert "T.where(" in script  # the write-back skips the padding


@settings(max_examples=12, deadline=None)
@given(
    depth=st.sampled_from([3, 12, 16, 33]),
    columns=st.sampled_from([1, 5, 40, 64, 100]),
    layout=st.sampled_from(["NN", "NT", "TN"]),
    epilogue=st.booleans(),
)
def test_products_of_a_symbolic_size_against_numpy(
    depth: int, columns: int, layout: str, epilogue: bool
) -> None:
    """Every layout, with static sizes that are and are not whole tiles: the symbolic
    dimension is the rows (NN, NT) or the depth (TN)."""
    a_type = f"Tensor[(n, {depth}), float32]"
    b_shape = (columns, depth) if layout == "NT" else ((depth, columns) if layout == "NN" else None)
    if layout == "TN":
        b_type = f"Tensor[(n, {columns}), float32]"
        call = "nn.matmul(%a, %b, transpose_a=True)"
    else:
        assert b_shape is not None
        b_type = f"Tensor[({b_shape[0]}, {b_shape[1]}), float32]"
        call = "nn.matmul(%a, %b, transpose_b=True)" if layout == "NT" else "nn.matmul(%a, %b)"
    body = f"tanh(add({call}, 1f))" if epilogue else call
    exe = relay.build(relay.parse(f"def @main[n: Shape](%a: {a_type}, %b: {b_type}) {{ {body} }}"))
    assert isinstance(exe.graph, SymbolicGraphExecutor)
    for rows in (0, 1, 7, 8, 9, 57):
        a = RNG.standard_normal((rows, depth)).astype(np.float32)
        if layout == "TN":
            b = RNG.standard_normal((rows, columns)).astype(np.float32)
            want = a.T @ b
        else:
            assert b_shape is not None
            b = RNG.standard_normal(b_shape).astype(np.float32)
            want = a @ (b.T if layout == "NT" else b)
        if epilogue:
            want = np.tanh(want + 1)
        np.testing.assert_allclose(exe(a, b), want, rtol=1e-4, atol=1e-4)


def test_results_of_every_size_stay_valid_while_instances_share_memory(mlp: Any) -> None:
    xs = [RNG.standard_normal((rows, 16)).astype(np.float32) for rows in (5, 9, 5, 3, 12, 9)]
    kept = [mlp(x, W, B) for x in xs]
    for x, got in zip(xs, kept, strict=True):
        for g, e in zip(got, reference(x), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)
    arenas = {id(inst._storage[0].base) for inst in mlp.graph._instances.values() if inst._storage}
    assert len(arenas) < 4  # fewer arenas than the 4 sizes: instances share them


def test_run_time_checks_pass_at_size_zero() -> None:
    """A kernel's run-time check reduces over a symbolic extent: with none, it is clear."""
    div = relay.build(
        relay.parse(
            "def @main[n: Shape](%x: Tensor[(n,), int32], %y: Tensor[(n,), int32]) "
            "{ floor_divide(%x, %y) }"
        )
    )
    assert isinstance(div.graph, SymbolicGraphExecutor)
    empty = np.zeros(0, np.int32)
    assert div(empty, empty).shape == (0,)
    np.testing.assert_array_equal(div(np.array([7], np.int32), np.array([2], np.int32)), [3])
    with pytest.raises(relay.ExecutionError, match="integer division by zero"):
        div(np.array([7], np.int32), np.array([0], np.int32))
