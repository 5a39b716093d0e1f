"""Graph drivers (relay/backend/driver.py) and a function's lean fast path
(GraphExecutor.matched_runner): a static plan's kernels called by TVM's virtual machine."""

from __future__ import annotations

import gc
import mmap
import threading
import weakref
from typing import Any

import numpy as np
import pytest

import relay
from relay import Tensor, float32, int32
from relay.backend.build import build
from relay.backend.driver import driver_arguments
from relay.backend.runtime import NOT_MATCHED
from relay.errors import ExecutionError, TypeCheckError

pytestmark = pytest.mark.tvm

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def mlp_ref(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    h = np.maximum(x.astype(np.float64) @ w1.T.astype(np.float64) + b1, 0)
    return h @ w2.T.astype(np.float64)


def make_mlp() -> Any:
    @relay
    def mlp(
        x: Tensor[float32, (2, 16)],
        w1: Tensor[float32, (32, 16)],
        b1: Tensor[float32, (32,)],
        w2: Tensor[float32, (8, 32)],
    ):
        return relay.nn.dense(relay.nn.relu(relay.nn.dense(x, w1) + b1), w2)

    return mlp


def test_driver_arguments_are_each_slot_once_in_order_of_first_use() -> None:
    assert driver_arguments([(3, 1, 5), (5, 2, 6), (6, 1, 3, 7)]) == [3, 1, 5, 2, 6, 7]
    assert driver_arguments([]) == []


def test_a_plan_of_several_kernels_runs_through_its_driver() -> None:
    exe = build(make_mlp())
    graph = exe.graph
    assert len(exe.kernels) == 2
    run, fixed, fill = graph._driver  # type: ignore[union-attr]
    assert not hasattr(run, "kernel")  # the virtual machine's function, not a kernel
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    np.testing.assert_allclose(exe(x, w1, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
    # the inputs and the result are given at each call; the intermediate buffer is fixed
    given = {slot for _, slot in fill}
    assert set(graph.plan.input_slots) <= given  # type: ignore[union-attr]
    assert sum(a is not None for a in fixed) == len(fixed) - len(fill) >= 1


def test_driver_and_python_loop_agree() -> None:
    exe = build(make_mlp())
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    with_driver = exe(x, w1, b1, w2)
    graph = exe.graph
    saved = graph._driver  # type: ignore[union-attr]
    graph._driver = None  # type: ignore[union-attr]
    try:
        np.testing.assert_array_equal(exe(x, w1, b1, w2), with_driver)
    finally:
        graph._driver = saved  # type: ignore[union-attr]


def test_a_single_kernel_is_its_own_driver() -> None:
    exe = build(relay.parse("def @main(%x: Tensor[(8,), float32]) { tanh(%x) * 2f }"))
    (symbol,) = exe.kernels
    assert exe.graph._driver[0] is exe.graph.library.kernels[symbol].func  # type: ignore[union-attr]


def test_a_reshaped_argument_reaches_the_driver_at_each_call() -> None:
    mod = relay.parse(
        """
def @main(%x: Tensor[(4, 6), float32], %w: Tensor[(5, 24), float32]) {
  %0 = reshape(%x, newshape=[1, 24]);
  %1 = nn.dense(%0, %w);
  tanh(%1) + 1f
}"""
    )
    exe = build(mod)
    assert exe.graph._driver is not None  # type: ignore[union-attr]
    w = rand(5, 24)
    for _ in range(3):
        x = rand(4, 6)
        want = np.tanh(x.reshape(1, 24).astype(np.float64) @ w.T.astype(np.float64)) + 1
        np.testing.assert_allclose(exe(x, w), want, rtol=1e-5, atol=1e-5)


def test_plans_with_run_time_checks_keep_the_python_loop() -> None:
    @relay
    def div(a: Tensor[int32, (6,)], b: Tensor[int32, (6,)]):
        return (a // b) * 2 + a

    exe = build(div)
    assert exe.graph._driver is None  # type: ignore[union-attr]
    a, b = np.arange(6, dtype=np.int32), np.array([1, 2, 0, 1, 1, 1], np.int32)
    with pytest.raises(ExecutionError, match="division by zero"):
        div(a, b)
    b[2] = 3
    np.testing.assert_array_equal(div(a, b), (a // b) * 2 + a)


# -- the lean fast path of a @relay function -------------------------------------------------------


def test_the_function_calls_take_the_lean_runner() -> None:
    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    mlp(x, w1, b1, w2)
    lean = mlp._fast[None]
    assert getattr(lean, "exact", False)
    for _ in range(3):
        x = rand(2, 16)
        np.testing.assert_allclose(mlp(x, w1, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
    assert lean(x, w1, b1) is NOT_MATCHED  # a wrong arity is not its call
    assert lean(x.astype(np.float64), w1, b1, w2) is NOT_MATCHED
    assert lean(rand(3, 16), w1, b1, w2) is NOT_MATCHED


def test_changes_made_in_place_between_calls_are_seen() -> None:
    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    for _ in range(3):
        np.testing.assert_allclose(mlp(x, w1, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
    w1 *= 2.0
    b1[:] = 1.5
    np.testing.assert_allclose(mlp(x, w1, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)


def test_arguments_are_not_held_after_the_call() -> None:
    mlp = make_mlp()
    x, b1, w2 = rand(2, 16), rand(32), rand(8, 32)
    w1 = rand(32, 16)
    ref = weakref.ref(w1)
    for _ in range(3):
        mlp(x, w1, b1, w2)
    del w1
    gc.collect()
    assert ref() is None
    # so an argument can be resized, and a memory map under one closed
    w = rand(32, 16)
    for _ in range(3):
        mlp(x, w, b1, w2)
    w.resize((64, 16))
    raw = mmap.mmap(-1, 32 * 16 * 4)
    mapped = np.frombuffer(raw, np.float32).reshape(32, 16)
    mapped[...] = 1.0
    for _ in range(3):
        np.testing.assert_allclose(
            mlp(x, mapped, b1, w2), mlp_ref(x, mapped, b1, w2), rtol=1e-4, atol=1e-4
        )
    del mapped
    gc.collect()
    raw.close()


def test_an_argument_reallocated_in_place_is_read_where_it_now_is() -> None:
    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    for _ in range(3):
        mlp(x, w1, b1, w2)
    w1.resize((1 << 18, 16), refcheck=False)  # moves its data, then back to its shape
    w1.resize((32, 16), refcheck=False)
    w1[...] = 0.5
    junk = [np.full(1 << 20, 7.0, np.float32) for _ in range(4)]  # (reuse the freed memory)
    np.testing.assert_allclose(mlp(x, w1, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
    del junk


def test_arrays_reshaped_or_restrided_in_place_between_calls() -> None:
    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    for _ in range(3):
        mlp(x, w1, b1, w2)
    w1.shape = (16, 32)  # in place: the same array object, another type
    with pytest.raises(TypeCheckError):
        mlp(x, w1, b1, w2)
    w1.shape = (32, 16)
    np.testing.assert_allclose(mlp(x, w1, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
    big = np.zeros((2, 32), np.float32)
    big[:, ::2] = x
    xs = big[:, ::2]  # the same shape, not contiguous: staged, never misread
    for _ in range(3):
        np.testing.assert_allclose(
            mlp(xs, w1, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4
        )
    with pytest.warns(DeprecationWarning):
        w1.strides = (4, 128)  # (numpy 2.4 deprecates this, but still does it)
    np.testing.assert_allclose(
        mlp(x, w1, b1, w2), mlp_ref(x, np.ascontiguousarray(w1), b1, w2), rtol=1e-4, atol=1e-4
    )


def test_read_only_and_misaligned_arguments_on_the_lean_path() -> None:
    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    mlp(x, w1, b1, w2)
    frozen = w1.copy()
    frozen.flags.writeable = False
    raw = np.zeros(32 * 16 + 1, np.float32)
    shifted = raw[1:].reshape(32, 16)
    shifted[...] = w1
    for w in (frozen, shifted, frozen, shifted):
        np.testing.assert_allclose(mlp(x, w, b1, w2), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)


def test_results_of_the_lean_path_are_fresh_arrays() -> None:
    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    first = mlp(x, w1, b1, w2)
    keep = first.copy()
    second = mlp(x * 2, w1, b1, w2)
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, keep)


def test_tuple_results_on_the_lean_path() -> None:
    @relay
    def two(x: Tensor[float32, (3, 4)], w: Tensor[float32, (5, 4)]):
        h = relay.nn.dense(x, w)
        return np.tanh(h), h.sum(axis=1), (h * 2.0, x + 1.0)

    x, w = rand(3, 4), rand(5, 4)
    for _ in range(3):
        t, s, (d, p) = two(x, w)
    assert getattr(two._fast.get(None), "exact", False)
    h = x.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(t, np.tanh(h), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, h.sum(axis=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(d, 2 * h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p, x + 1, rtol=1e-6)


def test_lazy_tensors_of_a_known_type_are_recorded_not_run() -> None:
    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    mlp(x, w1, b1, w2)
    mlp(x, w1, b1, w2)
    lx = relay.lazy.asarray(x)
    out = mlp(lx, w1, b1, w2)
    assert isinstance(out, relay.lazy.Tensor)
    np.testing.assert_allclose(np.asarray(out), mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)


def test_checks_mode_compares_calls_on_the_lean_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import relay.backend.checks as checks

    mlp = make_mlp()
    x, w1, b1, w2 = rand(2, 16), rand(32, 16), rand(32), rand(8, 32)
    mlp(x, w1, b1, w2)
    mlp(x, w1, b1, w2)
    seen: list[Any] = []
    monkeypatch.setattr(checks, "compare_with_interpreter", lambda *a: seen.append(a))
    with relay.flags.override(checks=True):
        mlp(x, w1, b1, w2)
    assert len(seen) == 1


def test_concurrent_calls_on_the_lean_path() -> None:
    mlp = make_mlp()
    w1, b1, w2 = rand(32, 16), rand(32), rand(8, 32)
    xs = [rand(2, 16) for _ in range(8)]
    mlp(xs[0], w1, b1, w2)
    errors: list[BaseException] = []

    def work(x: np.ndarray) -> None:
        try:
            for _ in range(50):
                got = mlp(x, w1, b1, w2)
                np.testing.assert_allclose(got, mlp_ref(x, w1, b1, w2), rtol=1e-4, atol=1e-4)
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
