"""Symbolic dimensions for traces (relay.lazy.shapes): the generalization policy, and traces
that come back with other sizes running without compiling."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
import relay.lazy as lz
from relay.backend.graph_executor import SymbolicGraphExecutor
from relay.ir.types import Kind, TensorType, TypeVar
from relay.lazy.barrier import clear_cache
from relay.lazy.shapes import fits, generalize, variables

pytestmark = pytest.mark.tvm

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def t(*shape: Any, dtype: str = "float32") -> TensorType:
    return TensorType(tuple(shape), dtype)


# -- the policy ----------------------------------------------------------------------------------


def test_dimensions_that_change_together_become_one_variable() -> None:
    general = generalize(
        [t(128, 196), t(128, 10), t(196, 1024)], [t(104, 196), t(104, 10), t(196, 1024)]
    )
    assert general is not None
    x, y, w = general
    assert isinstance(x, TensorType) and isinstance(y, TensorType)
    n = x.shape[0]
    assert isinstance(n, TypeVar) and n.kind == Kind.SHAPE and n.name_hint == "d0"
    assert y.shape == (n, 10) and x.shape == (n, 196)
    assert w == t(196, 1024)
    assert variables(general) == (n,)


def test_dimensions_that_change_differently_get_variables_of_their_own() -> None:
    general = generalize([t(8, 16), t(16, 8)], [t(4, 16), t(16, 2)])
    assert general is not None
    a, b = general
    assert isinstance(a, TensorType) and isinstance(b, TensorType)
    assert a.shape[0] is not b.shape[1]
    assert [v.name_hint for v in variables(general)] == ["d0", "d1"]


@pytest.mark.parametrize(
    ("before", "now"),
    [
        ([t(1, 4)], [t(3, 4)]),  # 1 broadcasts: never generalized
        ([t(3, 4)], [t(1, 4)]),
        ([t(3, 4)], [t(3, 4, 1)]),  # another rank
        ([t(3, 4)], [t(5, 4, dtype="float64")]),  # another dtype
        ([t(3, 4)], [t(3, 4)]),  # nothing changed
    ],
)
def test_what_is_not_generalized(before: list[TensorType], now: list[TensorType]) -> None:
    assert generalize(before, now) is None


def test_a_variable_with_two_sizes_is_split() -> None:
    n = TypeVar("d0", Kind.SHAPE)
    general = generalize([t(n, 4), t(n, 2)], [t(5, 4), t(6, 2)])
    assert general is not None
    a, b = general
    assert isinstance(a, TensorType) and isinstance(b, TensorType)
    assert a.shape[0] is n and isinstance(b.shape[0], TypeVar) and b.shape[0] is not n


def test_fits_binds_each_variable_to_one_size() -> None:
    n = TypeVar("n", Kind.SHAPE)
    pattern = [t(n, 4), t(n), t(4, 2)]
    assert fits(pattern, [t(7, 4), t(7), t(4, 2)])
    assert fits(pattern, [t(0, 4), t(0), t(4, 2)])
    assert not fits(pattern, [t(7, 4), t(6), t(4, 2)])
    assert not fits(pattern, [t(7, 4), t(7), t(4, 3)])
    assert not fits(pattern, [t(7, 4), t(7, dtype="int32"), t(4, 2)])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(2, 9), min_size=1, max_size=3),
    st.lists(st.integers(2, 9), min_size=1, max_size=3),
)
def test_generalized_types_fit_both_sides(a: list[int], b: list[int]) -> None:
    before, now = [t(*a), t(a[0])], [t(*b), t(b[0])]
    general = generalize(before, now)
    if len(a) != len(b) or a == b:
        assert general is None
        return
    assert general is not None
    assert fits(general, now) and fits(general, before)


# -- traces --------------------------------------------------------------------------------------


def step(x: Any, w: Any, b: Any) -> Any:
    h = np.maximum(x @ w + b, 0.0)
    return (h.sum(axis=0), h.max(axis=1), x.T @ h, h.mean())


def expected(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> Any:
    return step(x, w, b)


RNG = np.random.default_rng(0)
W = RNG.standard_normal((12, 40)).astype(np.float32)
B = RNG.standard_normal(40).astype(np.float32)


def test_a_trace_compiles_twice_for_every_batch_size() -> None:
    clear_cache()
    for rows in (32, 24, 32, 1, 57, 24, 300):
        x = RNG.standard_normal((rows, 12)).astype(np.float32)
        got = step(lz.asarray(x), lz.asarray(W), lz.asarray(B))
        lz.sync(*got)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the mean of no rows
            want = expected(x, W, B)
        for g, e in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-4, atol=1e-4)
    m = lz.metrics()
    assert (m.traces_compiled, m.traces_generalized) == (2, 1)
    assert (m.cache_misses, m.cache_hits) == (2, 5)


def test_the_first_shape_keeps_its_static_program() -> None:
    clear_cache()
    for rows in (32, 24):
        lz.asarray(np.ones((rows, 12), np.float32)).sum(axis=1).numpy()
    barrier = importlib.import_module(
        "relay.lazy.barrier"
    )  # (the package exports a function so named)
    static = [exe for exe in barrier._CACHE.values()]
    assert len(static) == 1 and static[0].graph is not None
    assert not isinstance(static[0].graph, SymbolicGraphExecutor)
    (general,) = barrier._GENERAL.values()
    assert isinstance(general[1].graph, SymbolicGraphExecutor)
    assert [str(ty) for ty in general[0]] == ["Tensor[(d0, 12), float32]"]


def test_with_symbolic_shapes_off_every_shape_compiles() -> None:
    clear_cache()
    lz.config(symbolic_shapes=False)
    for rows in (3, 4, 5):
        lz.asarray(np.ones((rows, 4), np.float32)).sum().numpy()
    assert (lz.metrics().traces_compiled, lz.metrics().traces_generalized) == (3, 0)


def test_a_size_of_one_compiles_for_its_shape() -> None:
    clear_cache()
    for rows in (3, 1, 5):
        x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
        np.testing.assert_allclose((lz.asarray(x) * 2.0).numpy(), x * 2)
    # 3 -> 1 is not generalized (1 broadcasts); 1 -> 5 is not either; 5 after 1: static
    assert (lz.metrics().traces_compiled, lz.metrics().traces_generalized) == (3, 0)


def test_a_trace_whose_kernels_need_their_sizes_keeps_compiling_per_shape() -> None:
    clear_cache()
    for rows in (3, 4, 5):
        x = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
        got = np.concatenate([lz.asarray(x), lz.asarray(x) + 1.0]).numpy()
        np.testing.assert_array_equal(got, np.concatenate([x, x + 1]))
    assert (lz.metrics().traces_compiled, lz.metrics().traces_generalized) == (3, 0)


def test_calls_of_relay_functions_are_not_generalized() -> None:
    @relay
    def double(a):  # type: ignore[no-untyped-def]
        return a * 2.0

    clear_cache()
    for rows in (3, 4, 5):
        x = np.ones((rows, 2), np.float32)
        np.testing.assert_array_equal(double(lz.asarray(x)).numpy(), x * 2)
    assert lz.metrics().traces_generalized == 0


def test_the_benchmark_training_loop_compiles_nothing_for_new_batch_sizes() -> None:
    from lazy import init, load, train_step  # benchmarks/lazy.py

    clear_cache()
    x, y = load()
    start = init()
    lazy = [(lz.asarray(w), lz.asarray(b)) for w, b in start]
    params: Any = start
    for rows in (128, 104, 128, 77, 5):
        xb, yb = x[:rows], y[:rows]
        lazy, loss = train_step(lazy, lz.asarray(xb), lz.asarray(yb), 0.05)
        lz.mark_step()
        params, want = train_step(params, xb, yb, 0.05)
        assert float(loss) == pytest.approx(float(want), rel=1e-4)
    m = lz.metrics()
    assert (m.traces_compiled, m.traces_generalized) == (2, 1)
    for (w, b), (w0, b0) in zip(lazy, params, strict=True):
        np.testing.assert_allclose(w.numpy(), w0, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(b.numpy(), b0, rtol=1e-3, atol=1e-4)


def test_a_second_generalization_names_its_variables_apart() -> None:
    clear_cache()
    for shape in [(128, 10), (104, 10), (104, 20)]:
        x = lz.asarray(np.ones(shape, np.float32))
        (np.tanh(x) + x.sum(axis=1, keepdims=True)).numpy()
    assert lz.explain_recompiles()[-1].endswith(
        "compiled for every size of d0, d1 (input 0: Tensor[(d0, d1), float32])"
    )
