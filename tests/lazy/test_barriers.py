"""Lazy execution: barriers, the trace cache, recompile explanations, graph cuts, fallbacks,
metrics, and one training function run unchanged on numpy arrays and on lazy tensors."""

from __future__ import annotations

import gc
import inspect
import itertools
from typing import Any

import numpy as np
import pytest

import relay
import relay.lazy as lz
import relay.lazy.numpy as lnp
from relay.lazy.barrier import clear_cache

pytestmark = pytest.mark.tvm


def line() -> int:
    """The caller's line number."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno


X = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
Y = np.linspace(-1, 1, 4, dtype=np.float32)


def test_recording_computes_nothing_until_a_barrier() -> None:
    x = lz.asarray(X)
    z = np.tanh(x * 2.0) + Y
    assert z.pending and z.shape == (3, 4) and z.dtype == np.float32
    assert lz.metrics().traces_run == 0
    out = z.numpy()
    assert not z.pending and lz.metrics().traces_run == 1
    np.testing.assert_allclose(out, np.tanh(X * 2.0) + Y, rtol=1e-5, atol=1e-6)
    assert lz.metrics().barriers == {"numpy()": 1}


@pytest.mark.parametrize(
    ("read", "reason"),
    [
        (lambda t: t.numpy(), "numpy()"),
        (lambda t: np.asarray(t), "np.asarray"),
        (lambda t: float(t.sum()), "float()"),
        (lambda t: int(t.sum()), "int()"),
        (lambda t: bool(t.sum() > 0), "bool()"),
        (lambda t: t.sum().item(), "item()"),
        (lambda t: repr(t), "print"),
        (lambda t: str(t), "print"),
        (lambda t: t.tolist(), "tolist()"),
    ],
)
def test_reading_a_value_is_a_barrier_counted_by_reason(read: Any, reason: str) -> None:
    t = lz.asarray(X) + 1.0
    read(t)
    assert lz.metrics().barriers[reason] == 1 and lz.metrics().traces_run == 1


def test_a_barrier_computes_every_live_tensor_in_one_trace_and_forgets_the_operations() -> None:
    x = lz.asarray(X)
    a = x * 2.0
    b = np.exp(a)
    c = a.sum(axis=0)
    lz.mark_step()
    assert not (a.pending or b.pending or c.pending)
    assert lz.metrics().traces_run == 1 and lz.metrics().graph_sizes == [3]
    np.testing.assert_allclose(b.numpy(), np.exp(X * 2.0), rtol=1e-5)
    np.testing.assert_allclose(c.numpy(), (X * 2.0).sum(axis=0), rtol=1e-6)
    assert b.node.inputs == () and b.node.op is None  # the graph is dropped
    assert lz.metrics().traces_run == 1  # reading computed values runs nothing


def test_sync_computes_only_the_tensors_named() -> None:
    x = lz.asarray(X)
    a, b = x + 1.0, x * 3.0
    lz.sync(a)
    assert not a.pending and b.pending
    np.testing.assert_array_equal(a.numpy(), X + 1)
    assert lz.metrics().barriers == {"sync": 1}  # a.numpy() had nothing left to compute


def test_a_dead_tensor_is_not_computed() -> None:
    x = lz.asarray(X)
    kept = x + 1.0
    dropped = np.exp(x)
    del dropped
    gc.collect()
    lz.mark_step()
    assert lz.metrics().graph_sizes == [1]
    np.testing.assert_array_equal(kept.numpy(), X + 1)


def test_the_same_trace_on_new_data_and_new_scalars_compiles_once() -> None:
    clear_cache()
    for step in range(4):
        x = lz.asarray(X + step)
        lr = 0.1 * (step + 1)  # a Python number is a parameter, not a constant
        where = line() + 1
        out = (x * lr - 1.0).numpy()
        np.testing.assert_allclose(out, (X + step) * np.float32(lr) - 1, rtol=1e-6)
    m = lz.metrics()
    assert (m.traces_compiled, m.cache_misses, m.cache_hits) == (1, 1, 3)
    assert lz.explain_recompiles() == [
        f"compile 1 (numpy() at {__file__}:{where}): new operations (2 operations, 3 inputs)"
    ]


@pytest.mark.parametrize("symbolic", [True, False])
def test_a_recompile_is_explained_by_the_input_types_that_changed(symbolic: bool) -> None:
    clear_cache()
    lz.config(symbolic_shapes=symbolic)
    for rows in (32, 32, 48):
        x = lz.asarray(np.ones((rows, 8), np.float32))
        where = line() + 1
        float((x * 2.0).sum())
    assert lz.metrics().traces_compiled == 2
    first, second = lz.explain_recompiles()
    assert first.endswith("new operations (2 operations, 2 inputs)")
    generalized = " -- compiled for every size of d0 (input 0: Tensor[(d0, 8), float32])"
    assert second == (
        f"compile 2 (float() at {__file__}:{where}): "
        "input 0: Tensor[(32, 8), float32] before, Tensor[(48, 8), float32] now"
        + (generalized if symbolic else "")
    )


def test_the_pending_graph_prints_as_relay_text() -> None:
    x = lz.asarray(X)
    y = np.maximum(x @ np.ones((4, 2), np.float32), 0.0)
    assert lz.pending_ir(y) == (
        "fn (%p0: Tensor[(3, 4), float32], %p1: Tensor[(4, 2), float32], %p2: float32) {\n"
        "  let %x0: Tensor[(3, 2), float32] = nn.matmul(%p0, %p1, units=None, "
        'out_dtype="", transpose_a=False, transpose_b=False);\n'
        "  let %x1: Tensor[(3, 2), float32] = maximum(%x0, %p2);\n"
        "  (%x1,)\n"
        "}"
    )
    y.numpy()
    assert lz.pending_ir(y) == ""


def test_a_graph_growing_past_the_limit_is_cut_and_reported() -> None:
    lz.config(max_graph_size=50)
    x = lz.asarray(np.zeros(4, np.float32))
    for _ in range(120):  # a loop without mark_step
        x = x + 1.0
    assert lz.metrics().graph_cuts == 2 and lz.metrics().barriers["graph size limit"] == 2
    assert max(lz.metrics().graph_sizes) <= 51
    np.testing.assert_array_equal(x.numpy(), np.full(4, 120, np.float32))


def test_a_fallback_runs_numpy_on_computed_values_and_is_counted() -> None:
    x = lz.asarray(X)
    y = np.cumsum(x * 2.0, axis=1)  # relay has no cumsum
    assert isinstance(y, lz.Tensor) and not y.pending
    np.testing.assert_allclose(y.numpy(), np.cumsum(X * 2.0, axis=1), rtol=1e-6)
    assert lz.metrics().fallbacks == {"cumsum": 1}
    assert lz.metrics().barriers["fallback"] == 1
    lz.config(warn_fallbacks=True)
    with pytest.warns(RuntimeWarning, match="relay.lazy: sort runs in numpy"):
        lnp.sort(x)


def test_a_shape_error_is_reported_at_the_line_that_recorded_it() -> None:
    x = lz.asarray(X)
    with pytest.raises(relay.TypeCheckError) as info:
        where = line() + 1
        x + np.ones(5, np.float32)  # the error's line
    err = info.value
    assert err.span is not None and err.span.line == where and err.span.source == __file__
    assert "x + np.ones(5, np.float32)  # the error's line\n" in str(err)
    assert "^" in str(err)


def test_metrics_report_times_and_barrier_lines() -> None:
    x = lz.asarray(X)
    where = line() + 1
    float(x.sum())
    m = lz.metrics()
    assert m.compile_time >= 0 and m.execute_time > 0
    assert m.barrier_lines == {f"{__file__}:{where}": 1}
    text = str(m)
    assert "traces run 1" in text and "barriers: float() 1" in text


def init(rng: np.random.Generator, sizes: list[int]) -> list[tuple[Any, Any]]:
    return [
        (
            (rng.standard_normal((m, n)) * np.sqrt(2.0 / m)).astype(np.float32),
            np.zeros(n, np.float32),
        )
        for m, n in itertools.pairwise(sizes)
    ]


def train_step(params: list[tuple[Any, Any]], x: Any, y: Any, lr: float) -> tuple[Any, Any]:
    """One SGD step of an MLP, written against numpy only."""
    acts = [x]
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = np.maximum(h, 0.0)
        acts.append(h)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.sum(y * np.log(p + 1e-7), axis=1))
    g = (p - y) / x.shape[0]
    new = []
    for i in range(len(params) - 1, -1, -1):
        w, b = params[i]
        gw, gb = acts[i].T @ g, g.sum(axis=0)
        if i:
            g = (g @ w.T) * (acts[i] > 0)
        new.append((w - lr * gw, b - lr * gb))
    return new[::-1], loss


def test_the_same_training_function_gives_the_same_losses_under_numpy_and_lazy() -> None:
    clear_cache()
    rng = np.random.default_rng(0)
    params = init(rng, [20, 16, 5])
    xs = rng.standard_normal((64, 20)).astype(np.float32)
    ys = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 64)]

    def train(params: list[tuple[Any, Any]], wrap: Any) -> list[float]:
        losses = []
        for step in range(6):
            i = (step * 16) % 64
            params, loss = train_step(params, wrap(xs[i : i + 16]), wrap(ys[i : i + 16]), 0.1)
            losses.append(float(loss))
        return losses

    expected = train(params, lambda a: a)
    lazy = [(lz.asarray(w), lz.asarray(b)) for w, b in params]
    got = train(lazy, lz.asarray)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert lz.metrics().traces_compiled == 1 and lz.metrics().cache_hits == 5


@relay
def rnn(xs, w, b):  # type: ignore[no-untyped-def]
    h = np.zeros(4, dtype=np.float32)
    for t in range(6):
        h = np.tanh(w @ xs[t] + h + b)
    return h, np.sum(h)


def test_a_relay_function_on_lazy_tensors_is_recorded_as_one_call() -> None:
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((6, 4)).astype(np.float32)
    w = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    b = np.full(4, 0.1, np.float32)
    h, total = rnn(lz.asarray(xs) * 2.0, w, b)
    assert isinstance(h, lz.Tensor) and h.shape == (4,) and total.shape == ()
    text = lz.pending_ir(h, total)
    assert "  let %x1: (Tensor[(4,), float32], float32) = @rnn(%x0, %p2, %p3);\n" in text
    assert text.count("tanh") == 0  # the loop is inside @rnn, not unrolled into the trace
    want_h, want_total = rnn(xs * 2.0, w, b)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(total), want_total, rtol=1e-5)
    # specialized to the arguments' types, as a call on numpy arrays: the error is in rnn
    with pytest.raises(relay.TypeCheckError, match=r"have inner dimensions 3 and 4") as info:
        rnn(lz.asarray(xs), lz.asarray(np.ones((3, 3), np.float32)), b)
    assert "h = np.tanh(w @ xs[t] + h + b)" in str(info.value)


def test_numpy_operands_are_copied_in_and_left_writable() -> None:
    a = np.ones(4, np.float32)
    t = lz.asarray(np.zeros(4, np.float32)) + a
    a[:] = 5.0  # after recording: the trace keeps the value it saw
    assert a.flags.writeable
    np.testing.assert_array_equal(t.numpy(), np.ones(4, np.float32))


def test_a_value_that_failed_to_compute_raises_where_needed_and_spares_other_barriers() -> None:
    x = lz.asarray(np.arange(6, dtype=np.float32))
    bad = x[lz.asarray(np.array([0, 6]))]  # an index out of range, known only at the barrier
    with pytest.raises(relay.ExecutionError, match="out of range for axis 0 of size 6"):
        bad.numpy()
    assert not bad.pending
    good = x * 2.0
    np.testing.assert_array_equal(good.numpy(), np.arange(6) * 2.0)  # bad is left out
    with pytest.raises(relay.ExecutionError, match="out of range"):
        float(bad.sum())  # a value computed from it fails the same way
    np.testing.assert_array_equal((x + 1.0).numpy(), np.arange(6) + 1.0)  # nothing poisoned
