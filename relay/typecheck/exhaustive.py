"""Exhaustiveness and redundancy of ``match`` clauses.

The algorithm is the usefulness check of Maranget, "Warnings for pattern
matching", Journal of Functional Programming 17(3), 2007 (§3, algorithms *U*
and *I*). A clause matrix ``P`` (one row per clause, one column per value being
matched) and a pattern vector ``q`` are given; ``q`` is *useful* for ``P`` when
some value vector matches ``q`` but no row of ``P``. Then

* a match is exhaustive exactly when the wildcard ``_`` is not useful for the
  matrix of all its clauses, and the values it misses are the witnesses of that
  usefulness;
* clause ``i`` is redundant (can never be selected) exactly when its pattern is
  not useful for the matrix of clauses ``0 .. i-1``.

The search works on the first column. If ``q`` starts with a constructor ``c``,
both ``P`` and ``q`` are *specialized* by ``c`` (rows starting with ``c`` or a
wildcard keep going, ``c``'s fields becoming new columns). If ``q`` starts with
a wildcard, the constructors heading the rows of ``P`` form a signature Σ. Every
constructor in Σ is tried by specialization; if Σ lacks some constructors of
the data type, the *default matrix* (the rows starting with a wildcard, first
column dropped) stands for all the missing ones at once, and each missing
constructor ``c`` gives a witness ``c(_, ..., _)``. An empty Σ (only wildcards,
e.g. for a tensor, which no pattern can take apart) gives the witness ``_``. A
tuple pattern is the one constructor of its tuple type.

Unlike algorithm *I*, which stops at one witness, every branch is followed, so
the witnesses returned are disjoint and together cover exactly the values no
clause matches: for ``match (%l) { Cons(%x, Nil) => ... }`` they are ``Nil``
and ``Cons(_, Cons(_, _))``. Witnesses for missing constructors come first,
then those under present constructors, each in declaration order. The search
is a depth-first walk with an explicit stack (deep patterns never recurse) and
is generated lazily, so a caller asking for five witnesses stops there.

Patterns that do not fit the scrutinee (a constructor of another data type, a
tuple of the wrong arity) are the type checker's to report; here they never
match.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, product

from relay.ir.expr import (
    Constructor,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
)
from relay.ir.module import Module
from relay.ir.types import TypeData

MAX_SHOWN = 5
"""How many missing patterns :func:`missing_patterns` lists before ending with ``...``."""

_WILD = PatternWildcard()

_CTOR, _TUPLE, _TEXT = 0, 1, 2


@dataclass(frozen=True, slots=True)
class _Head:
    """One node of a witness: a constructor or tuple with ``arity`` sub-witnesses following it
    in pre-order, or (``_TEXT``) finished text such as ``_`` or ``Nil`` or ``Cons(_, _)``."""

    kind: int
    name: str
    arity: int


_ANY_HEAD = _Head(_TEXT, "_", 0)

Row = tuple[Pattern, ...]
# A witness under construction: its decisions so far, newest first, as a linked list. Each
# decision is a tuple of alternatives (several for "any of these missing constructors").
_Prefix = tuple[tuple[_Head, ...], "_Prefix"] | None


def _is_wild(p: Pattern) -> bool:
    return isinstance(p, PatternWildcard | PatternVar)


class _Signatures:
    """Constructor facts from the module: each data type's constructors in declaration order."""

    def __init__(self, mod: Module | None) -> None:
        self.mod = mod
        self.cache: dict[str, TypeData | None] = {}

    def data(self, c: Constructor) -> TypeData | None:
        gtv = c.belong_to
        if self.mod is None or gtv is None:
            return None
        if gtv.name_hint not in self.cache:
            data = self.mod.type_definitions.get(gtv)
            if data is None:
                try:
                    data = self.mod.get_type(gtv.name_hint)
                except KeyError:
                    data = None
            self.cache[gtv.name_hint] = data
        return self.cache[gtv.name_hint]

    def arity(self, c: Constructor) -> int:
        data = self.data(c)
        if data is not None:
            for d in data.constructors:
                if d.name_hint == c.name_hint:
                    return len(d.inputs)
        return len(c.inputs)

    def all_constructors(self, c: Constructor, present: Sequence[Constructor]) -> list[_Head]:
        """The constructors of ``c``'s data type; just ``present`` when the type is unknown."""
        data = self.data(c)
        if data is None:
            ordered = sorted(present, key=lambda k: (k.tag, k.name_hint))
            return [_Head(_CTOR, k.name_hint, self.arity(k)) for k in ordered]
        return [_Head(_CTOR, d.name_hint, len(d.inputs)) for d in data.constructors]


def _type_name(c: Constructor) -> str | None:
    return c.belong_to.name_hint if c.belong_to is not None else None


def _head_of(p: Pattern, sigs: _Signatures) -> _Head:
    if isinstance(p, PatternTuple):
        return _Head(_TUPLE, "", len(p.patterns))
    assert isinstance(p, PatternConstructor)
    return _Head(_CTOR, p.constructor.name_hint, sigs.arity(p.constructor))


def _fits(p: Pattern, head: _Head) -> bool:
    """Whether non-wildcard pattern ``p`` is headed by ``head``."""
    if head.kind == _TUPLE:
        return isinstance(p, PatternTuple) and len(p.patterns) == head.arity
    return isinstance(p, PatternConstructor) and p.constructor.name_hint == head.name


def _fields(p: Pattern, arity: int) -> tuple[Pattern, ...]:
    """The sub-patterns of ``p``, padded or cut to ``arity`` (a wrong count is a type error)."""
    assert isinstance(p, PatternConstructor | PatternTuple)
    subs = tuple(p.patterns[:arity])
    return subs + (_WILD,) * (arity - len(subs))


def _specialize(row: Row, head: _Head) -> Row | None:
    """``S(c, row)``: the row with its first column replaced by ``c``'s fields, or None."""
    first = row[0]
    if _is_wild(first):
        return (_WILD,) * head.arity + row[1:]
    if _fits(first, head):
        return _fields(first, head.arity) + row[1:]
    return None


def _preorder(q: Row, sigs: _Signatures) -> list[tuple[_Head, ...]]:
    """The decisions spelling pattern vector ``q`` (variables as ``_``), in pre-order."""
    out: list[tuple[_Head, ...]] = []
    stack = list(reversed(q))
    while stack:
        p = stack.pop()
        if _is_wild(p):
            out.append((_ANY_HEAD,))
        else:
            head = _head_of(p, sigs)
            out.append((head,))
            stack.extend(reversed(_fields(p, head.arity)))
    return out


def _witnesses(rows: list[Row], q: Row, sigs: _Signatures) -> Iterator[list[tuple[_Head, ...]]]:
    """The witnesses of the usefulness of ``q`` for ``rows``, each as pre-order decisions.

    Each decision is a tuple of alternatives; a witness stands for every choice of one
    alternative per decision.
    """
    stack: list[tuple[list[Row], Row, _Prefix]] = [(rows, q, None)]
    while stack:
        rows, q, prefix = stack.pop()
        if not rows:
            decisions: list[tuple[_Head, ...]] = []
            while prefix is not None:
                decisions.append(prefix[0])
                prefix = prefix[1]
            decisions.reverse()
            decisions.extend(_preorder(q, sigs))
            yield decisions
            continue
        if not q or any(all(_is_wild(p) for p in row) for row in rows):
            continue  # a row matching everything left: nothing escapes it
        first = q[0]
        if not _is_wild(first):
            head = _head_of(first, sigs)
            spec = [r for r in (_specialize(row, head) for row in rows) if r is not None]
            stack.append((spec, _fields(first, head.arity) + q[1:], ((head,), prefix)))
            continue
        heads = [row[0] for row in rows if not _is_wild(row[0])]
        default = [row[1:] for row in rows if _is_wild(row[0])]
        if not heads:
            stack.append((default, q[1:], ((_ANY_HEAD,), prefix)))
            continue
        lead = heads[0]
        branches: list[tuple[list[Row], Row, _Prefix]] = []
        if isinstance(lead, PatternTuple):
            signature = [_Head(_TUPLE, "", len(lead.patterns))]
            missing: list[_Head] = []
        else:
            assert isinstance(lead, PatternConstructor)
            type_name = _type_name(lead.constructor)
            present = [
                h.constructor
                for h in heads
                if isinstance(h, PatternConstructor) and _type_name(h.constructor) == type_name
            ]
            names = {c.name_hint for c in present}
            every = sigs.all_constructors(lead.constructor, present)
            signature = [h for h in every if h.name in names]
            missing = [h for h in every if h.name not in names]
        if missing:
            shown = tuple(_Head(_TEXT, _filled(h), 0) for h in missing)
            branches.append((default, q[1:], (shown, prefix)))
        for head in signature:
            spec = [r for r in (_specialize(row, head) for row in rows) if r is not None]
            branches.append((spec, (_WILD,) * head.arity + q[1:], ((head,), prefix)))
        stack.extend(reversed(branches))


def _filled(head: _Head) -> str:
    """A missing constructor with wildcard fields: ``Nil``, ``Cons(_, _)``."""
    if head.arity == 0:
        return head.name
    return f"{head.name}({', '.join('_' for _ in range(head.arity))})"


def _render(heads: Sequence[_Head]) -> str:
    """The text of one pattern given in pre-order (no recursion: patterns may be deep)."""
    parts: list[str] = []
    open_: list[list[int]] = []  # [kind, arity, children done] of each unfinished node
    for h in heads:
        if open_ and open_[-1][2]:
            parts.append(", ")
        if h.kind == _TEXT or (h.kind == _CTOR and h.arity == 0):
            parts.append(h.name)
        elif h.kind == _TUPLE and h.arity == 0:
            parts.append("()")
        else:
            parts.append(h.name + "(")
            open_.append([h.kind, h.arity, 0])
            continue
        while open_:
            top = open_[-1]
            top[2] += 1
            if top[2] < top[1]:
                break
            parts.append(",)" if top[0] == _TUPLE and top[1] == 1 else ")")
            open_.pop()
    return "".join(parts)


def _expand(witnesses: Iterator[list[tuple[_Head, ...]]]) -> Iterator[str]:
    for decisions in witnesses:
        for choice in product(*decisions):
            yield _render(choice)


def uncovered(patterns: Sequence[Pattern], mod: Module | None) -> Iterator[str]:
    """Every pattern (as text, ``_`` for anything) matched by no pattern of ``patterns``.

    The patterns are disjoint and together cover exactly the unmatched values. Constructors
    come from ``mod``'s data types (without a module, only those present count). Lazy.
    """
    sigs = _Signatures(mod)
    return _expand(_witnesses([(p,) for p in patterns], (_WILD,), sigs))


def missing_patterns(
    patterns: Sequence[Pattern], mod: Module | None, limit: int = MAX_SHOWN
) -> list[str]:
    """The values a ``match`` with clause ``patterns`` misses, as patterns; ``[]`` if exhaustive.

    ``match (%l) { Cons(%x, Nil) => ... }`` on a ``List`` misses ``["Nil", "Cons(_, Cons(_,
    _))"]``. At most ``limit`` patterns are listed; when there are more, a final ``"..."``
    says so. Order: missing constructors first, then deeper misses, in declaration order.
    """
    found = list(islice(uncovered(patterns, mod), limit + 1))
    if len(found) > limit:
        found[limit:] = ["..."]
    return found


def redundant_clauses(patterns: Sequence[Pattern], mod: Module | None) -> list[int]:
    """The indices of the clauses that can never be selected: earlier clauses match all
    their values (e.g. anything after a ``_`` clause)."""
    sigs = _Signatures(mod)
    rows: list[Row] = []
    out: list[int] = []
    for i, p in enumerate(patterns):
        if next(_witnesses(list(rows), (p,), sigs), None) is None:
            out.append(i)
        rows.append((p,))
    return out


def is_exhaustive(patterns: Sequence[Pattern], mod: Module | None) -> bool:
    """Whether every value of the scrutinee's type matches one of ``patterns``."""
    return next(uncovered(patterns, mod), None) is None


__all__ = ["MAX_SHOWN", "is_exhaustive", "missing_patterns", "redundant_clauses", "uncovered"]
