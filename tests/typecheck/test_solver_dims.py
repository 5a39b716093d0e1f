"""Dimensions solved backwards: an unknown is never given a negative or fractional size, and an
unknown that only ever met ``?`` is ``?``."""

from __future__ import annotations

import pytest

import relay
from relay.errors import TypeCheckError
from relay.ir.types import Any, IncompleteType, Kind
from relay.typecheck.solver import NegativeDimError, Solver, UnifyError

ONES5 = 'ones(shape=[5], dtype="float32")'


def expr_error(src: str) -> TypeCheckError:
    with pytest.raises(TypeCheckError) as info:
        relay.infer_type(relay.parse_expr(src))
    return info.value


@pytest.mark.parametrize(
    ("body", "dim", "detail"),
    [
        (f"concatenate((%x, {ONES5}), axis=0)", "_ + 5", "would be negative (-2)"),
        (f"concatenate(({ONES5}, %x), axis=0)", "_ + 5", "would be negative (-2)"),
        ("concatenate((%x, %x), axis=0)", "_ * 2", "would be 3/2, not a whole number"),
    ],
)
def test_an_impossible_size_is_an_error_at_the_relation(body: str, dim: str, detail: str) -> None:
    src = f"fn (%x: Tensor[(_,), float32]) -> Tensor[(3,), float32] {{ {body} }}"
    err = expr_error(src)
    assert [e.message for e in err.errors] == [
        f"cannot unify Tensor[(3,), float32] with Tensor[({dim},), float32]: "
        f"dimension 0 differs (3 vs {dim}): an unknown dimension {detail}"
    ]
    assert err.span is not None and err.span.column == 59  # the concatenate call


def test_a_relation_dimension_equation_names_the_negative_size() -> None:
    src = (
        "fn (%x: Tensor[(_,), float32], %w: Tensor[(2, 3), float32]) {"
        f" let %c = concatenate((%x, {ONES5}), axis=0);"
        " nn.dense(reshape(%c, newshape=[1, -1]), %w) }"
    )
    assert expr_error(src).message == (
        "nn.dense: data has _ + 5 features but weight expects 3: "
        "an unknown dimension would be negative (-2)"
    )


def test_solving_forwards_and_positive_sizes_still_work() -> None:
    e = relay.parse_expr(
        f"fn (%x: Tensor[(_,), float32]) -> Tensor[(8,), float32] "
        f"{{ concatenate((%x, {ONES5}), axis=0) }}"
    )
    relay.infer_type(e)
    assert str(e.checked_type) == "fn (Tensor[(3,), float32]) -> Tensor[(8,), float32]"
    e = relay.parse_expr(
        "fn (%x: Tensor[(_,), float32]) -> Tensor[(5,), float32] "
        f"{{ concatenate((%x, {ONES5}), axis=0) }}"
    )
    relay.infer_type(e)  # a zero size is a size
    assert str(e.checked_type) == "fn (Tensor[(0,), float32]) -> Tensor[(5,), float32]"


def test_the_solver_refuses_to_bind_a_negative_dimension() -> None:
    s = Solver()
    u = IncompleteType(Kind.SHAPE)
    with pytest.raises(NegativeDimError, match=r"would be negative \(-1\)"):
        s.unify_dim(u, -1)
    with pytest.raises(UnifyError, match=r"would be negative \(-4\)"):
        s.unify_dim(relay.ir.dim.add(u, 7), 3)
    assert isinstance(s.find(u), IncompleteType)
    s.unify_dim(relay.ir.dim.add(u, 7), 9)
    assert s.find(u) == 2


def test_an_unknown_that_only_met_a_run_time_dimension_is_one() -> None:
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @f(%x: Tensor[(n,), float32]) -> Tensor[(n,), float32] { %x }\n"
        "def @main(%x: Tensor[(?,), float32], %y: Tensor[(3,), float32]) "
        "{ (@f(%x), add(@f(%x), %y)) }\n"
    )
    relay.infer_type(mod)
    assert str(mod.get_global_var("main").checked_type) == (
        "fn (Tensor[(?,), float32], Tensor[(3,), float32]) "
        "-> (Tensor[(?,), float32], Tensor[(3,), float32])"
    )
    # ... but one fixed by anything else keeps that
    s = Solver()
    u = IncompleteType(Kind.SHAPE)
    s.unify_dim(u, Any)
    s.unify_dim(u, 4)
    s.solve()
    assert s.find(u) == 4
