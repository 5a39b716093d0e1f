"""Python ``match`` statements as Relay ``match`` expressions.

Each ``case`` becomes a clause: a class pattern of a constructor class (``Cons(x, rest)``,
``Expr.Num(v)``) a constructor pattern, a sequence pattern (``(a, b)``) a tuple pattern, a
capture a variable and ``_`` a wildcard. Python runs on past a ``match`` no case matches, so
unless the cases cover every constructor of the data type (or end with an irrefutable
pattern), a last clause ``_ => ...`` goes on with the code after the statement; an
exhaustive match has no such clause and stays checkable by the type checker's
exhaustiveness analysis.
"""

from __future__ import annotations

import ast
import functools
from typing import TYPE_CHECKING, Any as _Any

from relay.frontend.values import Ex, Py, Val
from relay.ir.expr import (
    Clause,
    Expr,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)

if TYPE_CHECKING:
    from relay.frontend.convert import Cont, FunctionConverter

__all__ = ["covers_all", "match_statement"]


def _irrefutable(p: ast.pattern) -> bool:
    """A pattern every value of its type matches: a capture, ``_``, or a tuple of them."""
    if isinstance(p, ast.MatchAs):
        return p.pattern is None
    if isinstance(p, ast.MatchSequence):
        return all(_irrefutable(q) for q in p.patterns)
    return False


def _constructor_class(c: FunctionConverter, p: ast.MatchClass, env: dict[str, _Any]) -> type:
    from relay.frontend.adt import ConstructorInstance

    cls = c.expr(p.cls, env)
    if not (
        isinstance(cls, Py)
        and isinstance(cls.value, type)
        and issubclass(cls.value, ConstructorInstance)
    ):
        raise c.error(
            "a class pattern must name a data-type constructor (a @relay.adt class or the "
            "prelude's Cons, Nil, Some, Nothing, Rose)",
            p.cls,
        )
    return cls.value


def covers_all(c: FunctionConverter, stmt: ast.Match, env: dict[str, _Any]) -> bool:
    """Whether the cases match every value without looking past the top level: an
    irrefutable case, or one case per constructor of the data type with irrefutable fields."""
    from relay.frontend.adt import ConstructorInstance

    seen: set[str] = set()
    data: type | None = None
    for case in stmt.cases:
        if case.guard is not None:
            continue
        p = case.pattern
        if _irrefutable(p):
            return True
        if isinstance(p, ast.MatchClass) and all(
            _irrefutable(q) for q in [*p.patterns, *p.kwd_patterns]
        ):
            cls = _constructor_class(c, p, env)
            assert issubclass(cls, ConstructorInstance)
            seen.add(cls.__name__)
            data = next(b for b in cls.__mro__ if b.__dict__.get("__relay_constructors__"))
    if data is None:
        return False
    return seen >= set(data.__relay_constructors__)  # type: ignore[attr-defined]


def match_statement(
    c: FunctionConverter, stmt: ast.Match, subject: Val, env: dict[str, _Any], k: Cont
) -> Expr:
    """The ``match`` expression of ``stmt`` whose clauses end with ``k``."""
    data = c.materialize(subject, stmt.subject)
    clauses: list[Clause] = []
    for case in stmt.cases:
        if case.guard is not None:
            raise c.unsupported("a guard ('if') on a case", case.guard, "test inside the case body")
        inner = dict(env)
        pattern = _pattern(c, case.pattern, inner, env)
        body = c.sub_block(functools.partial(c.block, case.body, inner, k))
        clauses.append(Clause(pattern, body, span=c.span(case.pattern)))
    if not covers_all(c, stmt, env):
        rest = c.sub_block(lambda: k.fallthrough(dict(env)))
        clauses.append(Clause(PatternWildcard(span=c.span(stmt)), rest, span=c.span(stmt)))
    return Match(data.expr, tuple(clauses), True, span=c.span(stmt))


def _pattern(
    c: FunctionConverter, p: ast.pattern, inner: dict[str, _Any], env: dict[str, _Any]
) -> Pattern:
    span = c.span(p)
    if isinstance(p, ast.MatchAs):
        if p.pattern is not None:
            raise c.unsupported("an 'as' pattern", p, "match the parts and rebuild the value")
        if p.name is None:
            return PatternWildcard(span=span)
        v = Var(p.name, span=span)
        inner[p.name] = Ex(v, None)
        return PatternVar(v, span=span)
    if isinstance(p, ast.MatchClass):
        cls = _constructor_class(c, p, env)
        made = c.builder.value_of(cls, span)
        assert made is not None
        con = made[0]
        arity = cls._arity  # type: ignore[attr-defined]
        subs: list[ast.pattern] = list(p.patterns)
        if p.kwd_attrs:
            raise c.unsupported("keyword patterns", p, "constructor fields are positional")
        if len(subs) != arity:
            raise c.error(f"{cls.__name__} has {arity} field(s), the pattern gives {len(subs)}", p)
        return PatternConstructor(con, tuple(_pattern(c, q, inner, env) for q in subs), span=span)  # type: ignore[arg-type]
    if isinstance(p, ast.MatchSequence):
        if any(isinstance(q, ast.MatchStar) for q in p.patterns):
            raise c.unsupported("a starred pattern", p)
        return PatternTuple(tuple(_pattern(c, q, inner, env) for q in p.patterns), span=span)
    kinds = {
        ast.MatchValue: "a value pattern",
        ast.MatchSingleton: "a None/True/False pattern",
        ast.MatchOr: "an or-pattern",
        ast.MatchMapping: "a mapping pattern",
    }
    raise c.unsupported(kinds.get(type(p), "this pattern"), p, "compare with if/elif instead")
