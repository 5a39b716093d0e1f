"""Symbolic dimension arithmetic (relay.ir.dim): canonical forms, decisions, solving, printing.

The properties check the arithmetic against Python's own integers: a random expression built
with relay.ir.dim and then evaluated at random values of its shape variables equals the same
expression evaluated with Python ints; and printing a dimension then parsing it gives it back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any as TypingAny

import pytest
from hypothesis import assume, given, settings, strategies as st

import relay
from relay.ir import dim as D
from relay.ir.dim import DimExpr, FloorDiv, FloorMod
from relay.ir.parser import parse_type
from relay.ir.types import Any, IncompleteType, Kind, TensorType, TypeVar

n = TypeVar("n", Kind.SHAPE)
m = TypeVar("m", Kind.SHAPE)
k = TypeVar("k", Kind.SHAPE)
VARS = (n, m, k)
BY_NAME = {v.name_hint: v for v in VARS}


# -- canonical forms --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: D.add(n, 0), n),
        (lambda: D.sub(n, n), 0),
        (lambda: D.mul(n, 1), n),
        (lambda: D.mul(n, 0), 0),
        (lambda: D.add(D.sub(n, 1), 1), n),
        (lambda: D.add(3, 4), 7),
        (lambda: D.mul(-2, 4), -8),
        (lambda: D.sub(D.mul(n, m), D.mul(m, n)), 0),
        (lambda: D.product([]), 1),
        (lambda: D.product([2, 3, 4]), 24),
        (lambda: D.floordiv(n, 1), n),
        (lambda: D.floordiv(n, n), 1),
        (lambda: D.floormod(n, n), 0),
        (lambda: D.floormod(n, 1), 0),
        (lambda: D.floordiv(D.mul(n, 4), 4), n),
        (lambda: D.floordiv(7, 2), 3),
        (lambda: D.floordiv(-7, 2), -4),
        (lambda: D.floormod(-7, 2), 1),
        (lambda: D.floormod(D.add(D.mul(n, 4), 6), 4), 2),
        (lambda: D.floormod(D.add(D.mul(n, 4), -1), 4), 3),
        (lambda: D.ceildiv(10, 4), 3),
        (lambda: D.add(Any, n), Any),
        (lambda: D.mul(n, Any), Any),
        (lambda: D.floordiv(Any, 2), Any),
        (lambda: D.floormod(n, Any), Any),
    ],
)
def test_simplifies_to_int_variable_or_any(build: Callable[[], D.Dim], expected: D.Dim) -> None:
    assert build() is expected or build() == expected


@pytest.mark.parametrize(
    ("build", "text"),
    [
        (lambda: D.add(n, n), "n * 2"),
        (lambda: D.add(m, n), "m + n"),
        (lambda: D.add(n, m), "m + n"),
        (lambda: D.sub(n, 1), "n - 1"),
        (lambda: D.sub(1, n), "-n + 1"),
        (lambda: D.neg(n), "-n"),
        (lambda: D.mul(D.add(n, 1), D.sub(n, 1)), "n * n - 1"),
        (lambda: D.mul(D.add(n, m), D.add(n, m)), "m * m + m * n * 2 + n * n"),
        (lambda: D.product([n, 784]), "n * 784"),
        (lambda: D.product([m, n, 3]), "m * n * 3"),
        (lambda: D.add(D.mul(n, 3), D.mul(m, -2)), "-m * 2 + n * 3"),
        (lambda: D.floordiv(D.add(D.mul(n, 4), 8), 4), "n + 2"),
        (lambda: D.floordiv(D.add(D.mul(n, 4), 6), 4), "n + 1"),
        (lambda: D.floordiv(D.add(D.mul(n, 4), -1), 4), "n - 1"),
        (lambda: D.floordiv(D.add(D.mul(n, 4), 2), 2), "n * 2 + 1"),
        (lambda: D.floordiv(n, 2), "n // 2"),
        (lambda: D.floordiv(D.add(n, 1), 2), "(n + 1) // 2"),
        (lambda: D.floordiv(D.mul(n, 2), 4), "(n * 2) // 4"),
        (lambda: D.floordiv(n, -2), "n // (-2)"),
        (lambda: D.floordiv(-5, n), "(-5) // n"),
        (lambda: D.floordiv(n, m), "n // m"),
        (lambda: D.floormod(n, 3), "n % 3"),
        (lambda: D.floormod(D.add(D.mul(n, 4), 6), 8), "(n * 4 + 6) % 8"),
        (lambda: D.ceildiv(n, 2), "(n + 1) // 2"),
        (lambda: D.add(D.floordiv(D.sub(n, 3), 2), 1), "(n - 3) // 2 + 1"),
        (lambda: D.mul(m, D.floordiv(D.sub(n, 3), 2)), "m * ((n - 3) // 2)"),
        (lambda: D.mul(D.floordiv(n, 2), 2), "(n // 2) * 2"),
        (lambda: D.sub(1, D.floordiv(n, 2)), "-(n // 2) + 1"),
        (lambda: D.neg(D.floormod(n, 3)), "-(n % 3)"),
        (lambda: D.mul(D.floordiv(n, 2), -3), "-(n // 2) * 3"),
        (lambda: D.sub(m, D.floordiv(n, 2)), "m - n // 2"),
        (lambda: D.floordiv(D.floordiv(n, 2), 3), "n // 2 // 3"),
        (lambda: D.floordiv(m, D.floordiv(n, 2)), "m // (n // 2)"),
        (lambda: D.floordiv(D.neg(n), 2), "(-n) // 2"),
        (lambda: D.floormod(D.mul(n, m), D.add(m, 1)), "(m * n) % (m + 1)"),
    ],
)
def test_canonical_form_prints(build: Callable[[], D.Dim], text: str) -> None:
    d = build()
    assert isinstance(d, DimExpr)
    assert D.dim_str(d) == text
    assert str(d) == text
    assert repr(d) == f"DimExpr({text})"


def test_canonical_form_is_independent_of_construction_order() -> None:
    a = D.add(D.mul(n, 3), D.add(m, D.floordiv(k, 2)))
    b = D.add(D.floordiv(k, 2), D.add(m, D.mul(3, n)))
    assert a == b
    assert hash(a) == hash(b)


def test_floordiv_and_floormod_atoms() -> None:
    q = D.floordiv(D.add(n, 1), 2)
    r = D.floormod(D.add(n, 1), 2)
    assert isinstance(q, DimExpr) and isinstance(r, DimExpr)
    ((mono_q, coeff_q),) = q.terms
    ((mono_r, coeff_r),) = r.terms
    assert mono_q == (FloorDiv(D.as_poly(D.add(n, 1)), D.as_poly(2)),)
    assert mono_r == (FloorMod(D.as_poly(D.add(n, 1)), D.as_poly(2)),)
    assert (coeff_q, coeff_r) == (1, 1)
    # the division identity a == (a // b) * b + a % b, symbolically
    assert D.add(D.mul(q, 2), r) != D.add(n, 1)  # atoms are opaque to the ring...
    assert D.substitute(D.add(D.mul(q, 2), r), lambda v: 7) == 8  # ...but agree on values


def test_division_by_zero_raises() -> None:
    with pytest.raises(ZeroDivisionError, match="dimension divided by zero"):
        D.floordiv(n, 0)
    with pytest.raises(ZeroDivisionError, match="dimension divided by zero"):
        D.floormod(D.add(n, 1), 0)


def test_as_poly_rejects_non_dimensions() -> None:
    with pytest.raises(TypeError, match="bad dimension True"):
        D.as_poly(True)
    with pytest.raises(TypeError, match="bad dimension 'x'"):
        D.as_poly("x")  # type: ignore[arg-type]


# -- decisions and solving --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (3, 3, True),
        (3, 4, False),
        (n, n, True),
        (n, m, None),
        (D.add(n, 1), n, False),
        (D.mul(n, 2), D.add(n, n), True),
        (D.floordiv(n, 2), D.floordiv(n, 2), True),
        (D.floordiv(n, 2), D.floordiv(n, 3), None),
        (D.mul(n, m), D.mul(m, n), True),
        (Any, 3, None),
        (n, Any, None),
        (Any, Any, None),
    ],
)
def test_equal_decides_when_it_can(a: D.Dim, b: D.Dim, expected: bool | None) -> None:
    assert D.equal(a, b) is expected


def test_equal_with_incomplete_types() -> None:
    u = IncompleteType(Kind.SHAPE)
    assert D.equal(D.add(u, 1), D.add(1, u)) is True
    assert D.equal(u, IncompleteType(Kind.SHAPE)) is None


@pytest.mark.parametrize(
    ("lhs", "rhs", "expected"),
    [
        (D.mul(n, 3), 12, 4),
        (D.add(D.mul(n, 2), 1), 7, 3),
        (12, D.mul(n, 3), 4),
        (D.add(n, m), D.mul(m, 3), D.mul(m, 2)),
        (D.mul(n, 4), D.mul(m, 8), D.mul(m, 2)),
        (D.sub(n, 5), 0, 5),
        (D.mul(n, 2), 7, None),  # not integral
        (D.mul(n, 2), D.add(m, 1), None),
        (D.mul(n, m), 6, None),  # not linear in n
        (D.mul(n, n), 4, None),
        (D.floordiv(n, 2), 3, None),  # n inside an atom
        (D.add(n, D.floordiv(n, 2)), 3, None),
        (5, 5, None),  # n does not occur
        (Any, 3, None),
        (n, Any, None),
    ],
)
def test_solve_for(lhs: D.Dim, rhs: D.Dim, expected: D.Dim | None) -> None:
    assert D.solve_for(lhs, rhs, n) == expected


def test_solve_for_an_incomplete_type() -> None:
    u = IncompleteType(Kind.SHAPE)
    assert D.solve_for(D.mul(u, 28), D.mul(m, 784), u) == D.mul(m, 28)


def test_dim_vars_and_substitute() -> None:
    d = D.add(D.mul(m, D.floordiv(D.sub(n, 3), 2)), k)
    assert str(d) == "m * ((n - 3) // 2) + k"
    assert D.dim_vars(d) == [m, n, k]  # in printing order
    assert D.dim_vars(7) == []
    assert D.dim_vars(n) == [n]
    values: dict[D.DimVar, D.Dim] = {n: 9, m: 2, k: 1}
    assert D.substitute(d, values.__getitem__) == 7
    assert D.substitute(d, lambda v: v if v is not n else D.add(k, 3)) == D.add(
        D.mul(m, D.floordiv(k, 2)), k
    )
    assert D.substitute(5, lambda v: 1) == 5
    assert D.substitute(Any, lambda v: 1) is Any


@pytest.mark.parametrize(
    ("d", "expected"),
    [(n, True), (D.add(n, 1), True), (IncompleteType(Kind.SHAPE), True), (3, False), (Any, False)],
)
def test_is_symbolic(d: D.Dim, expected: bool) -> None:
    assert D.is_symbolic(d) is expected


def test_dim_str_of_leaves_and_custom_names() -> None:
    u = IncompleteType(Kind.SHAPE)
    assert D.dim_str(7) == "7"
    assert D.dim_str(n) == "n"
    assert D.dim_str(u) == "_"
    assert D.dim_str(D.add(u, 1)) == "_ + 1"
    names: dict[D.DimVar, str] = {n: "width", m: "batch"}
    # terms and factors are ordered by their printed names
    assert D.dim_str(D.add(D.mul(n, m), n), names.__getitem__) == "batch * width + width"


# -- properties -------------------------------------------------------------------------------------

# An expression tree: ("int", c), ("var", i), (op, a, b) for + - *, ("//" | "%", a, c) with a
# positive constant c, ("neg", a).
Tree = tuple[TypingAny, ...]

_leaves: st.SearchStrategy[Tree] = st.one_of(
    st.integers(-6, 12).map(lambda c: ("int", c)),
    st.integers(0, len(VARS) - 1).map(lambda i: ("var", i)),
)


def _extend(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*"]), children, children),
        st.tuples(st.sampled_from(["//", "%"]), children, st.integers(1, 7)),
        st.tuples(st.just("neg"), children),
    )


trees = st.recursive(_leaves, _extend, max_leaves=8)


def _extend_any_divisor(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
    """As ``_extend``, and divisions by any expression (symbolic or negative)."""
    return st.one_of(_extend(children), st.tuples(st.sampled_from(["//", "%"]), children, children))


any_divisor_trees = st.recursive(_leaves, _extend_any_divisor, max_leaves=8)
values = st.tuples(*(st.integers(-30, 60) for _ in VARS))


def build(t: Tree) -> D.Dim:
    """``t`` computed with relay.ir.dim."""
    op = t[0]
    if op == "int":
        return int(t[1])
    if op == "var":
        return VARS[t[1]]
    if op == "neg":
        return D.neg(build(t[1]))
    a = build(t[1])
    b = t[2] if isinstance(t[2], int) else build(t[2])
    fn = {"+": D.add, "-": D.sub, "*": D.mul, "//": D.floordiv, "%": D.floormod}[str(op)]
    return fn(a, b)


def evaluate(t: Tree, env: tuple[int, ...]) -> int:
    """``t`` computed with Python ints, the variables taking the values ``env``."""
    op = t[0]
    if op == "int":
        return int(t[1])
    if op == "var":
        return env[t[1]]
    if op == "neg":
        return -evaluate(t[1], env)
    a = evaluate(t[1], env)
    b = t[2] if op in ("//", "%") else evaluate(t[2], env)
    assert isinstance(b, int)
    results = {"+": a + b, "-": a - b, "*": a * b}
    if op == "//":
        return a // b
    if op == "%":
        return a % b
    return results[str(op)]


@settings(max_examples=300, deadline=None)
@given(trees, values)
def test_symbolic_value_agrees_with_python_ints(t: Tree, env: tuple[int, ...]) -> None:
    d = build(t)
    by_var: dict[D.DimVar, D.Dim] = dict(zip(VARS, env, strict=True))
    assert D.substitute(d, by_var.__getitem__) == evaluate(t, env)


@settings(max_examples=200, deadline=None)
@given(trees, trees, trees)
def test_ring_laws_hold_on_canonical_forms(ta: Tree, tb: Tree, tc: Tree) -> None:
    a, b, c = build(ta), build(tb), build(tc)
    assert D.add(a, b) == D.add(b, a)
    assert D.mul(a, b) == D.mul(b, a)
    assert D.add(D.add(a, b), c) == D.add(a, D.add(b, c))
    assert D.mul(D.mul(a, b), c) == D.mul(a, D.mul(b, c))
    assert D.mul(a, D.add(b, c)) == D.add(D.mul(a, b), D.mul(a, c))
    assert D.sub(a, a) == 0
    assert D.equal(a, a) is True
    assert D.equal(D.add(a, 1), a) is False


@settings(max_examples=300, deadline=None)
@given(any_divisor_trees)
def test_printing_then_parsing_gives_an_equal_dim(t: Tree) -> None:
    try:
        d = build(t)
    except ZeroDivisionError:
        assume(False)
    assume(not (isinstance(d, int) and d < 0))  # a negative constant is not a valid dimension
    for text in (f"Tensor[({D.dim_str(d)},), float32]", relay.astext(TensorType((d,)))):
        parsed = parse_type(text)
        assert isinstance(parsed, TensorType)
        (back,) = parsed.shape
        # the parser makes its own shape variables; by name they are ours again
        assert D.substitute(back, lambda v: BY_NAME[str(v)]) == d
        assert relay.structural_equal(parsed, TensorType((d,)), map_free_vars=True)
        assert relay.structural_hash(parsed, map_free_vars=True) == relay.structural_hash(
            TensorType((d,)), map_free_vars=True
        )
        assert relay.astext(parsed) == relay.astext(TensorType((d,)))


def test_products_of_divisions_of_unknowns_are_canonical() -> None:
    u, v = IncompleteType(Kind.SHAPE), IncompleteType(Kind.SHAPE)
    a, b = D.floordiv(u, 2), D.floordiv(v, 2)
    assert D.equal(D.mul(a, b), D.mul(b, a)) is True
