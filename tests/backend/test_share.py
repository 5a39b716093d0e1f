"""Kernels shared by matrix products of several depths (relay.backend.share)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relay
from relay.backend.compiler import _parts, function_text
from relay.backend.share import MAX_DEPTH, SHARED, share_kernels
from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Expr, Function, Var
from relay.ir.types import TensorType
from relay.op.registry import get_op
from relay.typecheck.checker import infer_type

pytestmark = pytest.mark.tvm


def call(name: str, *args: Expr, **attrs: object) -> Call:
    opdef = get_op(name)
    return Call(opdef.op, tuple(args), opdef.validate_attrs(attrs))


def dense_layer(m: int, n: int, k: int, before: str | None = None) -> Function:
    """``relu(x @ w^T + b)`` of x (m, k) and w (n, k), typed and primitive; ``before``: an
    operator applied to ``x`` first."""
    x = Var("p0", TensorType((m, k), "float32"))
    w = Var("p1", TensorType((n, k), "float32"))
    b = Var("p2", TensorType((n,), "float32"))
    lhs: Expr = call(before, x) if before else x
    body = call("nn.relu", call("add", call("nn.dense", lhs, w), b))
    out = infer_type(Function((x, w, b), body, attrs=Attrs({"Primitive": 1})))
    assert isinstance(out, Function)
    return out


def test_products_of_two_depths_share_one_function() -> None:
    a, b, c = dense_layer(128, 1024, 784), dense_layer(128, 1024, 1024), dense_layer(128, 1024, 784)
    (fa, va), (fb, vb), (fc, vc) = share_kernels([a, b, c])
    assert fa is fb is fc
    assert (va, vb, vc) == ((784,), (1024,), (784,))
    assert fa.attrs.get(SHARED) == 1 and len(fa.type_params) == 1
    assert function_text(fa).splitlines()[0] == (
        "fn [k0: Shape](%p0: Tensor[(128, k0), float32], %p1: Tensor[(1024, k0), float32], "
        "%p2: Tensor[(1024,), float32], Primitive=1, SharedSizes=1) {"
    )
    # compiled without TVM's checks of the arguments, as static kernels
    assert [p.checked for p in _parts([fa], cores=1)] == [False]


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        ((128, 1024, 784), (64, 1024, 784), "rows differ"),
        ((128, 1024, 784), (128, 512, 784), "columns differ"),
        ((4, 1024, 784), (4, 1024, 1024), "a matrix-vector product (4 rows)"),
        ((128, 10, 784), (128, 10, 1024), "10 columns"),
        ((128, 1024, 784), (128, 1024, MAX_DEPTH + 16), "beyond the largest depth"),
        ((128, 1024, 784), (128, 1024, 784), "the same function"),
    ],
)
def test_what_is_not_shared(
    first: tuple[int, int, int], second: tuple[int, int, int], why: str
) -> None:
    funcs = [dense_layer(*first), dense_layer(*second)]
    assert [f for f, _ in share_kernels(funcs)] == funcs, why


def test_an_operand_computed_in_the_kernel_is_not_shared() -> None:
    funcs = [dense_layer(128, 1024, 784, "negative"), dense_layer(128, 1024, 1024, "negative")]
    assert [f for f, _ in share_kernels(funcs)] == funcs


def test_elementwise_kernels_are_not_shared() -> None:
    def scale(n: int) -> Function:
        x = Var("p0", TensorType((n,), "float32"))
        out = infer_type(Function((x,), call("multiply", x, x), attrs=Attrs({"Primitive": 1})))
        assert isinstance(out, Function)
        return out

    funcs = [scale(100), scale(200)]
    assert share_kernels(funcs) == [(funcs[0], ()), (funcs[1], ())]


def test_members_past_the_largest_depth_leave_the_others_shared() -> None:
    funcs = [dense_layer(128, 256, k) for k in (300, MAX_DEPTH + 32, 200)]
    (f0, v0), (f1, v1), (f2, v2) = share_kernels(funcs)
    assert f0 is f2 and (v0, v2) == ((300,), (200,))
    assert (f1, v1) == (funcs[1], ())


@relay
def two_layers(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
    h = np.maximum(relay.nn.dense(x, w1) + b1, 0.0)
    return np.maximum(relay.nn.dense(h, w2) + b2, 0.0)


def layers_inputs(seed: int = 7) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    w1 = (rng.standard_normal((200, 300)) / 17).astype(np.float32)
    w2 = (rng.standard_normal((200, 200)) / 14).astype(np.float32)
    b1, b2 = (rng.standard_normal(200).astype(np.float32) for _ in range(2))
    return x, w1, b1, w2, b2


def layers_reference(x, w1, b1, w2, b2):  # type: ignore[no-untyped-def]
    h = np.maximum(x.astype(np.float64) @ w1.T + b1, 0)
    return np.maximum(h @ w2.T + b2, 0)


def test_kernels_are_shared_only_when_asked() -> None:
    # shared kernels compile faster and run slower (6-12% per product): not by default
    args = layers_inputs()
    with relay.flags.override(share_kernels=False):
        exe = relay.build(two_layers.specialize(*args))
    steps = [s for s in exe.graph.plan.steps if not s.is_alias]
    assert steps[0].kernel != steps[1].kernel and [s.values for s in steps] == [[], []]


def test_a_program_runs_its_layers_of_two_depths_on_one_kernel(tmp_path: Path) -> None:
    args = layers_inputs()
    with relay.flags.override(share_kernels=True):
        exe = relay.build(two_layers.specialize(*args))
    steps = [s for s in exe.graph.plan.steps if not s.is_alias]
    assert len(steps) == 2 and steps[0].kernel == steps[1].kernel
    assert [s.values for s in steps] == [[300], [200]]
    want = layers_reference(*args)
    np.testing.assert_allclose(exe(*args), want, rtol=2e-5, atol=2e-5)
    # the values travel with the saved plan
    exe.save(tmp_path / "layers.relay")
    again = relay.Executable.load(tmp_path / "layers.relay")
    np.testing.assert_array_equal(again(*args), exe(*args))
    # and RELAY_CHECKS replays each step on its own kernel call
    with relay.flags.override(checks=True):
        np.testing.assert_allclose(exe(*args), want, rtol=2e-5, atol=2e-5)
