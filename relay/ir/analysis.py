"""Simple analyses over expressions: free and bound variables, global references.

All walks are iterative (explicit stacks), so they work on programs of any depth.
"""

from __future__ import annotations

from relay.ir.expr import (
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Var,
    children,
    pattern_vars,
)


def sub_expressions(expr: Expr) -> list[Expr]:
    """Every distinct sub-expression of ``expr`` in pre-order (shared nodes once)."""
    seen: set[int] = set()
    order: list[Expr] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(reversed(children(node)))
    return order


def bound_vars(expr: Expr) -> list[Var]:
    """Variables bound inside ``expr`` (parameters, let binders, pattern variables), in order."""
    return _binders(sub_expressions(expr))


def _binders(nodes: list[Expr]) -> list[Var]:
    out: list[Var] = []
    for node in nodes:
        if isinstance(node, Function):
            out.extend(node.params)
        elif isinstance(node, Let):
            out.append(node.var)
        elif isinstance(node, Match):
            for clause in node.clauses:
                out.extend(pattern_vars(clause.lhs))
    return out


def free_vars(expr: Expr) -> list[Var]:
    """Variables used in ``expr`` but not bound in it, in order of first use."""
    nodes = sub_expressions(expr)
    bound = set(_binders(nodes))
    out: list[Var] = []
    seen: set[Var] = set()
    for node in nodes:
        if isinstance(node, Var) and node not in bound and node not in seen:
            seen.add(node)
            out.append(node)
    return out


def all_vars(expr: Expr) -> list[Var]:
    """Every variable occurring in ``expr``, bound or free, in order."""
    out: list[Var] = []
    seen: set[Var] = set()
    for v in [*bound_vars(expr), *(n for n in sub_expressions(expr) if isinstance(n, Var))]:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def global_vars(expr: Expr) -> list[GlobalVar]:
    """The globals ``expr`` refers to, in order of first reference."""
    out: list[GlobalVar] = []
    for node in sub_expressions(expr):
        if isinstance(node, GlobalVar) and node not in out:
            out.append(node)
    return out
