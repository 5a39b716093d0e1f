"""Gradient rules of relay/op/tensor.py and relay/op/elemwise.py against central differences.

Each rule is checked by ``relay.testing.check_op_gradient`` (its adjoints type-check against
the arguments and match float64 central differences of the numpy reference) at inputs away
from the operator's kinks, over several shapes, broadcasting shapes and attributes; the
broadcasting arithmetic also runs under hypothesis over random broadcastable shapes. The
operators without a gradient must say why, and every operator of the two families must have
a rule or be marked non-differentiable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from relay.ir import Call, Var
from relay.ir.attrs import Attrs
from relay.ir.types import TensorType
from relay.op import get_op, list_ops
from relay.op.registry import MissingRuleError
from relay.testing import check_op_gradient

Array = np.ndarray[Any, np.dtype[Any]]
Maker = Callable[[np.random.Generator], list[Array]]

# -- input makers: float64 values away from each operator's kinks ------------------------------


def _normal(*shapes: tuple[int, ...]) -> Maker:
    return lambda rng: [rng.standard_normal(s) for s in shapes]


def _positive(*shapes: tuple[int, ...]) -> Maker:
    return lambda rng: [rng.uniform(0.5, 2.0, s) for s in shapes]


def _nonzero(shape: tuple[int, ...]) -> Callable[[np.random.Generator], Array]:
    """Values with 0.2 <= |x| <= 2, so no kink at 0 is crossed by a difference step."""
    return lambda rng: rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def _divide(sa: tuple[int, ...], sb: tuple[int, ...]) -> Maker:
    return lambda rng: [rng.standard_normal(sa), _nonzero(sb)(rng)]


def _power(sa: tuple[int, ...], sb: tuple[int, ...]) -> Maker:
    return lambda rng: [rng.uniform(0.5, 2.0, sa), rng.uniform(-2.0, 2.0, sb)]


def _apart(sa: tuple[int, ...], sb: tuple[int, ...]) -> Maker:
    """a = k + f with f in [0.2, 0.8], b integral: no max/min ties within 0.2."""
    return lambda rng: [
        rng.integers(-3, 3, sa) + rng.uniform(0.2, 0.8, sa),
        rng.integers(-3, 3, sb).astype(np.float64),
    ]


def _modulo(sa: tuple[int, ...], sb: tuple[int, ...]) -> Maker:
    """a = k + f with f in [0.2, 0.4] and b in {-2, -1, 1, 2}: a / b stays at least 0.1
    from the integers, where the remainder jumps."""
    return lambda rng: [
        rng.integers(-4, 4, sa) + rng.uniform(0.2, 0.4, sa),
        rng.choice([-2.0, -1.0, 1.0, 2.0], sb),
    ]


def _off_integers(shape: tuple[int, ...]) -> Maker:
    """Values k + f with f in [0.1, 0.4] or [0.6, 0.9]: no rounding step nearby."""

    def make(rng: np.random.Generator) -> list[Array]:
        k = rng.integers(-4, 4, shape)
        f = rng.uniform(0.1, 0.4, shape) + rng.choice([0.0, 0.5], shape)
        return [k + f]

    return make


# -- the table ------------------------------------------------------------------------------------

S0: tuple[int, ...] = ()
S1 = (5,)
S2 = (2, 3)
S3 = (2, 1, 3)

_CASES: list[tuple[str, Maker, dict[str, object]]] = []


def _case(op: str, maker: Maker, **attrs: object) -> None:
    _CASES.append((op, maker, attrs))


for _sa, _sb in [(S2, S2), (S2, (3,)), ((2, 1), (1, 3)), (S0, S2), (S3, (4, 1)), (S1, S0)]:
    for _op in ("add", "subtract", "multiply"):
        _case(_op, _normal(_sa, _sb))
    _case("divide", _divide(_sa, _sb))
    _case("power", _power(_sa, _sb))
    _case("maximum", _apart(_sa, _sb))
    _case("minimum", _apart(_sa, _sb))
for _sa, _sb in [(S2, S2), (S2, (3,)), (S1, S0)]:
    _case("mod", _modulo(_sa, _sb))
    _case("floor_mod", _modulo(_sa, _sb))

for _shape in (S0, S1, S2, S3):
    _case("negative", _normal(_shape))
    for _op in ("exp", "fast_exp", "sigmoid", "tanh", "fast_tanh", "erf", "sin", "cos", "copy"):
        _case(_op, _normal(_shape))
    for _op in ("log", "log2", "log10", "sqrt", "rsqrt"):
        _case(_op, _positive(_shape))
    _case("abs", lambda rng, s=_shape: [_nonzero(s)(rng)])
    _case("sign", lambda rng, s=_shape: [_nonzero(s)(rng)])
    for _op in ("floor", "ceil", "round", "trunc"):
        _case(_op, _off_integers(_shape))
    # bounds at k + 0.5 never meet values k + f with f in [0.1, 0.4] or [0.6, 0.9]
    _case("clip", _off_integers(_shape), a_min=-1.5, a_max=1.5)
    _case("clip", _off_integers(_shape), a_min=-math.inf, a_max=0.5)
    _case("clip", _off_integers(_shape), a_min=0.5, a_max=-0.5)  # all a_min: no gradient
    _case("cast", _normal(_shape), dtype="float64")


@pytest.mark.parametrize(
    ("op", "maker", "attrs"),
    _CASES,
    ids=[f"{op}-{i}" for i, (op, _, _) in enumerate(_CASES)],
)
def test_gradient_matches_central_differences(
    op: str, maker: Maker, attrs: dict[str, object]
) -> None:
    args = maker(np.random.default_rng(len(op)))
    check_op_gradient(op, args, attrs)


def test_the_adjoint_of_a_broadcast_argument_is_summed_to_its_shape() -> None:
    x, y = np.ones((2, 3)), np.full((3,), 2.0)
    gx, gy = check_op_gradient("multiply", [x, y])
    assert gx is not None and gy is not None
    assert gx.shape == (2, 3) and gy.shape == (3,)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (np.array([0.0, 1.5, 2.0]), np.array([2.0, 0.0, 3.0])),  # a == 0 and b == 0
        (np.array([0.0, 0.0]), np.array([3.0, 2.0])),
    ],
)
def test_power_is_finite_where_the_base_or_exponent_is_zero(a: Array, b: Array) -> None:
    grads = check_op_gradient("power", [a, b])
    assert all(g is not None and np.all(np.isfinite(g)) for g in grads)


def test_maximum_and_minimum_send_ties_to_the_first_argument() -> None:
    a, b = np.array([1.0, 2.0]), np.array([1.0, 3.0])
    ga, gb = check_op_gradient("maximum", [a, b], wrt=[])
    assert ga is not None and gb is not None
    gmin_a, gmin_b = check_op_gradient("minimum", [a, b], wrt=[])
    assert gmin_a is not None and gmin_b is not None
    # a tie passes the whole adjoint to a and none to b
    assert gb[0] == 0.0 and gmin_b[0] == 0.0
    np.testing.assert_allclose(ga + gb, gmin_a + gmin_b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cast_casts_the_adjoint_back_to_the_input_dtype(dtype: str) -> None:
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    # a float32 result is too coarse for central differences: check the adjoint's type only
    wrt = [0] if dtype == "float64" else []
    (g,) = check_op_gradient("cast", [x], {"dtype": dtype}, wrt=wrt)
    assert g is not None and g.dtype == np.float32


def test_cast_like_gives_no_adjoint_to_the_dtype_source() -> None:
    x = np.random.default_rng(1).standard_normal((2, 3))
    like = np.zeros((4,), dtype=np.float32)
    gx, glike = check_op_gradient("cast_like", [x, like], wrt=[0])
    assert gx is not None and glike is None


@pytest.mark.parametrize(
    ("sc", "sx", "sy"),
    [(S2, S2, S2), ((3,), S2, (1,)), ((2, 1), (3,), S0), (S0, S1, S1)],
)
def test_where_splits_the_adjoint_between_its_branches(
    sc: tuple[int, ...], sx: tuple[int, ...], sy: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(2)
    cond = rng.integers(0, 2, sc).astype(bool)
    gc, gx, gy = check_op_gradient(
        "where", [cond, rng.standard_normal(sx), rng.standard_normal(sy)]
    )
    assert gc is None and gx is not None and gy is not None


@pytest.mark.parametrize("op", ["zeros_like", "ones_like"])
def test_the_like_constructors_give_no_adjoint(op: str) -> None:
    (g,) = check_op_gradient(op, [np.ones((2, 3))], wrt=[])
    assert g is None


@pytest.mark.parametrize("op", ["zeros", "ones"])
def test_the_constructors_without_inputs_give_no_adjoints(op: str) -> None:
    assert check_op_gradient(op, [], {"shape": (2, 3), "dtype": "float64"}) == []


@pytest.mark.parametrize(
    ("fill", "attrs"),
    [
        (np.array(1.5), {"shape": (2, 3), "dtype": "float64"}),
        (np.array(-0.5), {"shape": (4,), "dtype": ""}),
        (np.array(2.0), {"shape": (), "dtype": "float64"}),
        (np.array(2.0, dtype=np.float32), {"shape": (3, 2), "dtype": "float64"}),
    ],
)
def test_full_sums_the_adjoint_into_the_fill_value(fill: Array, attrs: dict[str, object]) -> None:
    (g,) = check_op_gradient("full", [fill], attrs)
    assert g is not None and g.shape == () and g.dtype == fill.dtype


@pytest.mark.parametrize("shape", [S0, S1, S2, S3])
def test_full_like_sums_the_adjoint_into_the_fill_value(shape: tuple[int, ...]) -> None:
    data = np.zeros(shape)
    gdata, gfill = check_op_gradient("full_like", [data, np.array(0.25)], wrt=[1])
    assert gdata is None and gfill is not None and gfill.shape == ()


@pytest.mark.parametrize(
    ("start", "stop", "step"),
    [(0.0, 5.5, 1.0), (1.25, 4.0, 0.5), (3.0, -2.0, -0.75), (0.5, 7.3, 2.0)],
)
def test_arange_differentiates_start_and_step_but_not_stop(
    start: float, stop: float, step: float
) -> None:
    args = [np.array(v) for v in (start, stop, step)]
    gstart, gstop, gstep = check_op_gradient("arange", args, {"dtype": "float64"}, wrt=[0, 2])
    assert gstop is None and gstart is not None and gstep is not None


# -- hypothesis: the broadcasting arithmetic over random broadcastable shapes ---------------------


@settings(max_examples=30, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    op=st.sampled_from(["add", "subtract", "multiply", "divide", "power", "maximum", "minimum"]),
    seed=st.integers(0, 2**16),
)
def test_binary_gradients_over_random_broadcast_shapes(shapes: Any, op: str, seed: int) -> None:
    sa, sb = shapes.input_shapes
    makers: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], Maker]] = {
        "divide": _divide,
        "power": _power,
        "maximum": _apart,
        "minimum": _apart,
    }
    maker = makers.get(op, lambda a, b: _normal(a, b))(sa, sb)
    check_op_gradient(op, maker(np.random.default_rng(seed)), seed=seed)


# -- operators without a gradient -----------------------------------------------------------------

_NON_DIFFERENTIABLE: dict[str, tuple[str, int, str]] = {
    "floor_divide": ("float64", 2, "its result is piecewise constant"),
    **{
        name: ("float64", 2, "its result is a bool comparison")
        for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
    },
    **{
        name: ("bool", 2, "its result is bool")
        for name in ("logical_and", "logical_or", "logical_xor")
    },
    "logical_not": ("bool", 1, "its result is bool"),
    **{
        name: ("int32", 2, "it computes on the bits of integers")
        for name in ("right_shift", "left_shift", "bitwise_and", "bitwise_or", "bitwise_xor")
    },
    "bitwise_not": ("int32", 1, "it computes on the bits of integers"),
    "isnan": ("float64", 1, "its result is bool"),
    "isfinite": ("float64", 1, "its result is bool"),
}


@pytest.mark.parametrize("op", sorted(_NON_DIFFERENTIABLE))
def test_non_differentiable_operators_say_why(op: str) -> None:
    dtype, arity, reason = _NON_DIFFERENTIABLE[op]
    args = tuple(Var(f"x{i}", TensorType((2, 3), dtype)) for i in range(arity))
    call = Call(get_op(op).op, args, Attrs({}))
    with pytest.raises(MissingRuleError, match=f"cannot differentiate through {op}: {reason}"):
        get_op(op).rule("gradient")(call, Var("g", TensorType((2, 3), "bool")))
    assert get_op(op).extra["non_differentiable"].startswith(reason)


_FAMILY_MODULES = ("relay.op.tensor", "relay.op.elemwise")


def _family() -> list[str]:
    return [
        name
        for name in list_ops()
        if getattr(get_op(name).reference, "__module__", None) in _FAMILY_MODULES
    ]


def test_the_family_is_found() -> None:
    names = set(_family())
    assert {"add", "floor_divide", "logical_not", "exp", "clip", "where", "arange"} <= names
    assert len(names) == 60


def test_every_operator_of_the_family_has_a_gradient_rule_or_says_why_not() -> None:
    missing = [name for name in _family() if get_op(name).gradient is None]
    assert missing == []
    tested = {op for op, _, _ in _CASES} | set(_NON_DIFFERENTIABLE)
    tested |= {"cast_like", "where", "zeros_like", "ones_like", "zeros", "ones"}
    tested |= {"full", "full_like", "arange"}
    assert set(_family()) <= tested


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize(
    ("op", "maker", "attrs"),
    [c for c in _CASES if c[0] != "cast"][::5],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_adjoints_keep_narrower_float_dtypes(
    dtype: str, op: str, maker: Maker, attrs: dict[str, object]
) -> None:
    args = [a.astype(dtype) for a in maker(np.random.default_rng(3))]
    grads = check_op_gradient(op, args, attrs, wrt=[])  # the types are checked, not the values
    assert all(g is None or g.dtype == np.dtype(dtype) for g in grads)


_I = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)


@pytest.mark.parametrize(
    ("op", "args", "attrs", "expected"),
    [
        ("cast", [_I], {"dtype": "float64"}, [None]),
        ("cast", [_I.astype(bool)], {"dtype": "float32"}, [None]),
        ("cast_like", [_I, np.zeros(2)], {}, [None, None]),
        ("full", [np.array(3, dtype=np.int32)], {"shape": (2,), "dtype": "float64"}, [None]),
        ("full_like", [np.zeros(3), np.array(True)], {}, [None, None]),
        ("arange", [np.array(v, dtype=np.int32) for v in (0, 7, 2)], {"dtype": "int32"}, None),
        ("power", [_I, np.array(2, dtype=np.int32)], {}, "base only"),
    ],
)
def test_no_adjoint_flows_into_integer_or_bool_inputs(
    op: str, args: list[Array], attrs: dict[str, object], expected: object
) -> None:
    grads = check_op_gradient(op, args, attrs, wrt=[])
    if expected == "base only":
        assert grads[0] is not None and grads[1] is None
    else:
        assert grads == (expected or [None] * len(args))


def test_an_argument_of_unknown_type_carries_a_gradient() -> None:
    from relay.op.tensor import carries_gradient

    assert carries_gradient(Var("x"))
    assert carries_gradient(Var("x", TensorType((2,), "bfloat16")))
    assert not carries_gradient(Var("x", TensorType((2,), "int8")))
