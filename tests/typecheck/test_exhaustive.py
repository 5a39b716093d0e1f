"""relay.typecheck.exhaustive: the patterns a match misses and the clauses it can never select.

Exact answers for hand-written matches over the prelude's List, Option and Tree, tuples and
tensors; then properties on random clause sets, against brute-force enumeration of all small
values and against the reference interpreter (a ``match?`` that raises "no clause of the match
matched" exactly on the values the reported patterns describe).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice, product
from typing import TypeAlias

import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.errors import ExecutionError
from relay.ir.expr import (
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)
from relay.ir.module import Module
from relay.typecheck.exhaustive import (
    MAX_SHOWN,
    is_exhaustive,
    missing_patterns,
    redundant_clauses,
    uncovered,
)

PRELUDE = relay.prelude()
COLORS = relay.parse(
    "type Color { Red, Green, Blue, Cyan, Magenta, Yellow, Black }\n"
    "type Pair[A, B] { MkPair(A, B) }",
    module=PRELUDE,
)


def clauses_of(src: str, mod: Module = COLORS) -> list[Pattern]:
    e = relay.parse_expr(src, module=mod)
    assert isinstance(e, Match)
    return [c.lhs for c in e.clauses]


def missing(scrutinee: str, *clauses: str, mod: Module = COLORS) -> list[str]:
    body = ", ".join(f"{c} => {i}" for i, c in enumerate(clauses))
    return missing_patterns(clauses_of(f"{scrutinee} match? (%v) {{ {body} }}", mod), mod)


def redundant(scrutinee: str, *clauses: str) -> list[int]:
    body = ", ".join(f"{c} => {i}" for i, c in enumerate(clauses))
    return redundant_clauses(clauses_of(f"{scrutinee} match? (%v) {{ {body} }}"), COLORS)


LIST = "free_var %v: List[int32];"
LIST_OPT = "free_var %v: List[Option[int32]];"
OPT2 = "free_var %v: (Option[int32], Option[int32]);"
TREE = "free_var %v: Tree[int32];"
TENSOR = "free_var %v: Tensor[(3,), float32];"
COLOR = "free_var %v: Color;"

MISSING = [
    (LIST, ["Cons(%x, Nil)"], ["Nil", "Cons(_, Cons(_, _))"]),
    (LIST, ["Cons(_, _)"], ["Nil"]),
    (LIST, ["Nil"], ["Cons(_, _)"]),
    (LIST, ["Nil", "Cons(_, _)"], []),
    (LIST, ["%xs"], []),
    (LIST, [], ["_"]),
    (LIST, ["Nil", "Cons(_, Nil)"], ["Cons(_, Cons(_, _))"]),
    (LIST, ["Cons(_, Cons(_, %r))", "Nil"], ["Cons(_, Nil)"]),
    (LIST_OPT, ["Cons(Some(_), _)", "Nil"], ["Cons(None, _)"]),
    (
        LIST_OPT,
        ["Cons(Some(%x), Cons(_, Nil))"],
        ["Nil", "Cons(None, _)", "Cons(Some(_), Nil)", "Cons(Some(_), Cons(_, Cons(_, _)))"],
    ),
    (OPT2, ["(Some(_), Some(_))"], ["(None, _)", "(Some(_), None)"]),
    (OPT2, ["(None, _)", "(_, None)"], ["(Some(_), Some(_))"]),
    (OPT2, ["(None, _)", "(_, None)", "(Some(_), Some(_))"], []),
    (OPT2, ["(_, _)"], []),
    (TREE, ["Rose(_, Nil)"], ["Rose(_, Cons(_, _))"]),
    (TREE, ["Rose(_, Cons(Rose(_, _), _))", "Rose(_, Nil)"], []),
    # a tensor can only be matched by a variable or a wildcard
    (TENSOR, ["%t"], []),
    (TENSOR, ["_"], []),
    (TENSOR, [], ["_"]),
    ("free_var %v: (int32, List[int32]);", ["(_, Nil)"], ["(_, Cons(_, _))"]),
    ("free_var %v: (int32,);", ["(%a,)"], []),
    ("free_var %v: ((), Option[int32]);", ["((), Some(_))"], ["((), None)"]),
    (
        "free_var %v: Pair[Color, Option[int32]];",
        ["MkPair(Red, _)"],
        [
            "MkPair(Green, _)",
            "MkPair(Blue, _)",
            "MkPair(Cyan, _)",
            "MkPair(Magenta, _)",
            "MkPair(Yellow, _)",
            "...",
        ],
    ),
    (COLOR, ["Green", "Black"], ["Red", "Blue", "Cyan", "Magenta", "Yellow"]),
    # at most MAX_SHOWN, then "..."
    (COLOR, ["Black"], ["Red", "Green", "Blue", "Cyan", "Magenta", "..."]),
]


@pytest.mark.parametrize(("scrutinee", "clauses", "expected"), MISSING)
def test_missing_patterns(scrutinee: str, clauses: list[str], expected: list[str]) -> None:
    assert missing(scrutinee, *clauses) == expected
    pats = clauses_of(f"{scrutinee} match? (%v) {{ {', '.join(f'{c} => 0' for c in clauses)} }}")
    assert is_exhaustive(pats, COLORS) == (expected == [])


def test_limit() -> None:
    pats = clauses_of(f"{COLOR} match? (%v) {{ Black => 0 }}")
    assert MAX_SHOWN == 5
    assert missing_patterns(pats, COLORS, limit=2) == ["Red", "Green", "..."]
    assert missing_patterns(pats, COLORS, limit=6) == [
        "Red",
        "Green",
        "Blue",
        "Cyan",
        "Magenta",
        "Yellow",
    ]
    assert list(uncovered(pats, COLORS)) == ["Red", "Green", "Blue", "Cyan", "Magenta", "Yellow"]


REDUNDANT = [
    (LIST, ["_", "Nil"], [1]),
    (LIST, ["Nil", "Cons(_, _)", "_"], [2]),
    (LIST, ["Cons(_, Nil)", "Cons(%x, _)", "Cons(_, Nil)", "Nil"], [2]),
    (LIST, ["Nil", "Nil"], [1]),
    (LIST, ["Cons(_, Cons(_, _))", "Cons(_, Nil)", "Cons(_, _)", "Nil"], [2]),
    (OPT2, ["(Some(_), _)", "(_, Some(_))", "(Some(_), Some(_))", "(None, None)"], [2]),
    (OPT2, ["(None, None)"], []),
    (TENSOR, ["%a", "_"], [1]),
    (LIST, [], []),
]


@pytest.mark.parametrize(("scrutinee", "clauses", "expected"), REDUNDANT)
def test_redundant_clauses(scrutinee: str, clauses: list[str], expected: list[int]) -> None:
    assert redundant(scrutinee, *clauses) == expected


def test_patterns_built_directly() -> None:
    cons, nil = PRELUDE.get_constructor("Cons"), PRELUDE.get_constructor("Nil")
    pats: list[Pattern] = [
        PatternConstructor(cons, (PatternVar(Var("x")), PatternConstructor(nil)))
    ]
    assert missing_patterns(pats, PRELUDE) == ["Nil", "Cons(_, Cons(_, _))"]
    # Without the module only the constructors present are known: nothing seems missing.
    assert missing_patterns([PatternConstructor(nil)], None) == []
    assert (
        missing_patterns([PatternTuple((PatternWildcard(), PatternConstructor(nil)))], None) == []
    )


def test_ill_typed_patterns_do_not_crash() -> None:
    # The type checker reports these; here a pattern that cannot fit never matches.
    some = PRELUDE.get_constructor("Some")
    nil = PRELUDE.get_constructor("Nil")
    cons = PRELUDE.get_constructor("Cons")
    pats: list[Pattern] = [PatternConstructor(nil), PatternConstructor(some, (PatternWildcard(),))]
    assert missing_patterns(pats, PRELUDE) == ["Cons(_, _)"]
    assert redundant_clauses(pats, PRELUDE) == []  # Some(_) is judged against its own type
    # wrong field counts are padded with wildcards or cut
    short = PatternConstructor(cons, (PatternWildcard(),))
    assert missing_patterns([short, PatternConstructor(nil)], PRELUDE) == []
    tuples: list[Pattern] = [PatternTuple((PatternWildcard(),)), PatternTuple(())]
    assert missing_patterns(tuples, PRELUDE) == []
    assert redundant_clauses(tuples, PRELUDE) == []


# -- deep patterns -------------------------------------------------------------------------------

DEEP = 10_000


def _exact_list(n: int) -> Pattern:
    """``Cons(_, Cons(_, ... Nil))`` matching exactly the lists of length ``n``."""
    cons, nil = PRELUDE.get_constructor("Cons"), PRELUDE.get_constructor("Nil")
    p: Pattern = PatternConstructor(nil)
    for _ in range(n):
        p = PatternConstructor(cons, (PatternWildcard(), p))
    return p


def test_deep_patterns() -> None:
    deep = _exact_list(DEEP)
    nil = PatternConstructor(PRELUDE.get_constructor("Nil"))
    any_cons = clauses_of(f"{LIST} match? (%v) {{ Cons(_, _) => 0 }}")[0]
    assert missing_patterns([deep], PRELUDE) == [
        "Nil",
        "Cons(_, Nil)",
        "Cons(_, Cons(_, Nil))",
        "Cons(_, Cons(_, Cons(_, Nil)))",
        "Cons(_, Cons(_, Cons(_, Cons(_, Nil))))",
        "...",
    ]
    assert is_exhaustive([deep, any_cons, nil], PRELUDE)
    assert redundant_clauses([deep, any_cons, nil], PRELUDE) == []
    assert redundant_clauses([any_cons, nil, deep], PRELUDE) == [2]
    # the last missing pattern of [Nil, exact(n)] is a list longer than n: render it deep
    n = 1_000
    last = list(uncovered([nil, _exact_list(n)], PRELUDE))
    assert len(last) == n
    assert last[-1] == "Cons(_, " * (n + 1) + "_" + ")" * (n + 1)


# -- properties -----------------------------------------------------------------------------------

# Types of scrutinees: ("tensor",), ("List", T), ("Option", T), ("Tree", T), ("tuple", (T, ...)).
Ty: TypeAlias = tuple[object, ...]
TENSOR_T: Ty = ("tensor",)
CTORS: dict[str, list[tuple[str, int]]] = {
    "List": [("Cons", 2), ("Nil", 0)],
    "Option": [("Some", 1), ("None", 0)],
    "Tree": [("Rose", 2)],
}
SCRUTINEE_TYPES: list[Ty] = [
    ("List", ("Option", TENSOR_T)),
    ("tuple", (("Option", TENSOR_T), ("List", TENSOR_T))),
    ("Option", ("tuple", (("List", TENSOR_T), ("Option", TENSOR_T)))),
    ("Tree", ("Option", TENSOR_T)),
    ("tuple", (TENSOR_T, ("Option", ("Option", TENSOR_T)))),
    TENSOR_T,
]


def field_types(t: Ty, ctor: str) -> list[Ty]:
    if t[0] == "tuple":
        return list(t[1])
    elem = t[1]
    assert isinstance(elem, tuple)
    return {"Cons": [elem, t], "Nil": [], "Some": [elem], "None": [], "Rose": [elem, ("List", t)]}[
        ctor
    ]


def type_text(t: Ty) -> str:
    if t[0] == "tensor":
        return "int32"
    if t[0] == "tuple":
        return "(" + ", ".join(type_text(f) for f in t[1]) + ")"
    return f"{t[0]}[{type_text(t[1])}]"


@st.composite
def pattern_texts(draw: st.DrawFn, t: Ty, depth: int, names: list[int]) -> str:
    """A random pattern for a value of type ``t`` (variables named uniquely via ``names``)."""
    choices = ["wild", "var"]
    if depth > 0 and t[0] != "tensor":
        choices += ["ctor"] * 5
    choice = draw(st.sampled_from(choices))
    if choice == "wild":
        return "_"
    if choice == "var":
        names[0] += 1
        return f"%p{names[0]}"
    if t[0] == "tuple":
        subs = [draw(pattern_texts(f, depth - 1, names)) for f in field_types(t, "")]
        return "(" + ", ".join(subs) + ("," if len(subs) == 1 else "") + ")"
    name, arity = draw(st.sampled_from(CTORS[str(t[0])]))
    if arity == 0:
        return name
    subs = [draw(pattern_texts(f, depth - 1, names)) for f in field_types(t, name)]
    return f"{name}({', '.join(subs)})"


@st.composite
def matches(draw: st.DrawFn) -> tuple[Ty, list[str]]:
    t = draw(st.sampled_from(SCRUTINEE_TYPES))
    names = [0]
    n = draw(st.integers(0, 5))
    return t, [draw(pattern_texts(t, 3, names)) for _ in range(n)]


# A value: ("t",) for a tensor (the number 1), (name, fields) for a constructor or "tuple".
Value: TypeAlias = tuple[object, ...]


def minimal(t: Ty) -> Value:
    if t[0] == "tensor":
        return ("t", ())
    if t[0] == "tuple":
        return ("tuple", tuple(minimal(f) for f in field_types(t, "")))
    name, _ = next((c for c in CTORS[str(t[0])] if c[1] == 0), CTORS[str(t[0])][0])
    return (name, tuple(minimal(f) for f in field_types(t, name)))


def values(t: Ty, depth: int) -> list[Value]:
    """Every value of ``t`` whose constructors up to ``depth`` levels are chosen freely (below
    that, the smallest value); patterns of depth <= ``depth`` cannot tell the rest apart."""
    if depth == 0 or t[0] == "tensor":
        return [minimal(t)]
    if t[0] == "tuple":
        fields = [values(f, depth - 1) for f in field_types(t, "")]
        return [("tuple", combo) for combo in product(*fields)]
    out: list[Value] = []
    for name, _ in CTORS[str(t[0])]:
        fields = [values(f, depth - 1) for f in field_types(t, name)]
        out.extend((name, combo) for combo in product(*fields))
    return out


def matches_value(p: Pattern, v: Value) -> bool:
    if isinstance(p, PatternWildcard | PatternVar):
        return True
    if isinstance(p, PatternTuple):
        fields = v[1]
        assert isinstance(fields, tuple)
        return all(matches_value(s, f) for s, f in zip(p.patterns, fields, strict=True))
    assert isinstance(p, PatternConstructor)
    if v[0] != p.constructor.name_hint:
        return False
    fields = v[1]
    assert isinstance(fields, tuple)
    return all(matches_value(s, f) for s, f in zip(p.patterns, fields, strict=True))


def value_text(v: Value) -> str:
    if v[0] == "t":
        return "1"
    fields = v[1]
    assert isinstance(fields, tuple)
    subs = [value_text(f) for f in fields]
    if v[0] == "tuple":
        return "(" + ", ".join(subs) + ("," if len(subs) == 1 else "") + ")"
    return str(v[0]) + (f"({', '.join(subs)})" if subs else "")


def parse_patterns(t: Ty, texts: Sequence[str]) -> list[Pattern]:
    body = ", ".join(f"{p} => {i}" for i, p in enumerate(texts))
    return clauses_of(f"free_var %v: {type_text(t)}; match? (%v) {{ {body} }}", PRELUDE)


def pattern_depth(p: Pattern) -> int:
    if isinstance(p, PatternConstructor | PatternTuple):
        return 1 + max((pattern_depth(s) for s in p.patterns), default=0)
    return 0


@settings(max_examples=300)
@given(matches())
def test_against_brute_force(case: tuple[Ty, list[str]]) -> None:
    t, texts = case
    pats = parse_patterns(t, texts)
    witnesses = list(islice(uncovered(pats, PRELUDE), 500))
    assert len(witnesses) < 500
    assert len(set(witnesses)) == len(witnesses)
    depth = max((pattern_depth(p) for p in pats), default=0) + 1
    universe = values(t, depth)
    first = [next((i for i, p in enumerate(pats) if matches_value(p, v)), None) for v in universe]
    # exhaustive exactly when every value is matched
    assert is_exhaustive(pats, PRELUDE) == all(i is not None for i in first)
    assert (missing_patterns(pats, PRELUDE) == []) == all(i is not None for i in first)
    # the reported patterns are disjoint and cover exactly the values no clause matches
    wpats = parse_patterns(t, witnesses) if witnesses else []
    for v, i in zip(universe, first, strict=True):
        hits = sum(matches_value(w, v) for w in wpats)
        assert hits == (1 if i is None else 0), (value_text(v), witnesses)
    # a clause is redundant exactly when no value selects it
    selected = {i for i in first if i is not None}
    assert redundant_clauses(pats, PRELUDE) == [i for i in range(len(pats)) if i not in selected]


@settings(max_examples=60)
@given(matches(), st.data())
def test_against_interpreter(case: tuple[Ty, list[str]], data: st.DataObject) -> None:
    t, texts = case
    pats = parse_patterns(t, texts)
    depth = max((pattern_depth(p) for p in pats), default=0) + 1
    v = data.draw(st.sampled_from(values(t, depth)))
    body = ", ".join(f"{p} => {i}" for i, p in enumerate(texts))
    e = relay.parse_expr(f"match? ({value_text(v)}) {{ {body} }}", module=PRELUDE)
    expected = next((i for i, p in enumerate(pats) if matches_value(p, v)), None)
    missing_now = missing_patterns(pats, PRELUDE, limit=1000)
    try:
        result = relay.interpret(e, mod=PRELUDE)
    except ExecutionError as err:
        assert err.message.startswith("no clause of the match matched the value")
        assert expected is None
        assert missing_now != []
        assert any(matches_value(w, v) for w in parse_patterns(t, missing_now))
    else:
        assert int(result) == expected
