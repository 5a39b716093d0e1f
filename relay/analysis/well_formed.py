"""Well-formedness of expressions and modules.

A program is *well formed* when

1. every variable is bound at most once in the whole program (expression or
   module). Binding sites are function parameters, ``let`` binders and pattern
   variables;
2. every use of a variable lies in the scope of its binding: parameters scope
   over the function's body, a ``let`` binder over its value (Relay's ``let``
   may define a recursive closure, as TVM's checker allows) and its body, and
   pattern variables over their clause's right-hand side. A global function
   has no free variables; a bare expression may use free variables (its
   inputs), but a variable bound somewhere in it must not also occur free;
3. every global a function refers to is defined in the module, and every
   constructor belongs to a data type of the module that declares it (checked
   when a module is at hand).

Expressions are DAGs: a node may be shared by several parents (the graph form
``%0 = ...`` of the text format). A shared binder is one binding, not one per
parent, and the scope rule holds at every parent: the variables occurring
free in a shared node must be in scope wherever it is used.

The algorithm is one depth-first walk with an explicit stack (so 100,000-deep
programs are fine) that keeps the set of variables in scope: it binds on entry
to a binder and unbinds on exit. Each shared node is walked once; at its other
parents, its free variables (computed bottom-up, memoized) are checked against
the scope there. Uses out of scope are collected during the walk and judged at
the end, when every binding site is known. Same rules as TVM's
``well_formed.cc`` (Relay's ``WellFormed``), with messages that name the
variable and the place.
"""

from __future__ import annotations

from collections.abc import Sequence

from relay.errors import TypeCheckError
from relay.ir.expr import (
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    Var,
    children,
    pattern_vars,
)
from relay.ir.module import Module
from relay.ir.span import Span
from relay.ir.types import TypeData

_ENTER, _BIND, _UNBIND = 0, 1, 2
_EMPTY: frozenset[Var] = frozenset()


def _span(*nodes: object) -> Span | None:
    """The span of the first node that has one, preferring nodes other than variables.

    A ``Var`` node is shared by its binding and all its uses, so its span is where it is
    bound; the enclosing expression locates a use better.
    """
    fallback: Span | None = None
    for n in nodes:
        s = getattr(n, "span", None)
        if isinstance(s, Span):
            if not isinstance(n, Var | GlobalVar | Constructor | Op):
                return s
            if fallback is None:
                fallback = s
    return fallback


def _sorted(errors: list[TypeCheckError]) -> list[TypeCheckError]:
    """Errors in source order (stable); those without a span last."""

    def key(e: TypeCheckError) -> tuple[int, str, int, int]:
        s = e.span
        return (0, s.source, s.line, s.column) if s is not None else (1, "", 0, 0)

    return sorted(errors, key=key)


def _type_data(c: Constructor, mod: Module) -> TypeData | None:
    """The data type declaring ``c`` in ``mod`` (by identity, else by name)."""
    gtv = c.belong_to
    if gtv is None:
        return None
    data = mod.type_definitions.get(gtv)
    if data is None:
        try:
            data = mod.get_type(gtv.name_hint)
        except KeyError:
            return None
    return data


class _Checker:
    """The walk: scope bookkeeping and the errors found."""

    def __init__(self, mod: Module | None) -> None:
        self.mod = mod
        self.errors: list[TypeCheckError] = []
        self.bound: set[Var] = set()  # every variable bound anywhere so far
        self.scope: dict[Var, int] = {}  # variables in scope (a count: ill-formed code may nest)
        self.walked: set[int] = set()  # ids of composite nodes already walked
        self.free_memo: dict[int, frozenset[Var]] = {}
        # (variable, global it was used in or None) -> span of its first use out of scope
        self.out_of_scope: dict[tuple[Var, str | None], Span | None] = {}
        self.reported: set[tuple[str, str]] = set()

    # -- the walk ---------------------------------------------------------------------------------

    def walk(self, root: Expr, global_name: str | None) -> None:
        """Walk ``root`` (the body of global ``global_name``, or a bare expression if None)."""
        stack: list[tuple[int, object, object]] = [(_ENTER, root, None)]
        while stack:
            action, node, parent = stack.pop()
            if action == _UNBIND:
                assert isinstance(node, list)
                for v in node:
                    self.unbind(v)
                continue
            if action == _BIND:
                assert isinstance(node, list)
                self.bind(node, parent)
                continue
            if isinstance(node, Var):
                if not self.scope.get(node):
                    self.out_of_scope.setdefault((node, global_name), _span(parent, node))
                continue
            if isinstance(node, GlobalVar):
                self.check_global(node, parent)
                continue
            if isinstance(node, Constructor):
                self.check_constructor(node, parent)
                continue
            assert isinstance(node, Expr)
            if isinstance(node, Constant | Op):
                continue
            if id(node) in self.walked:
                self.check_shared(node, parent, global_name)
                continue
            self.walked.add(id(node))
            if isinstance(node, Function):
                params = list(node.params)
                self.bind(params, node)
                stack.append((_UNBIND, params, node))
                stack.append((_ENTER, node.body, node))
            elif isinstance(node, Let):
                binder = [node.var]
                self.bind(binder, node)
                stack.append((_UNBIND, binder, node))
                stack.append((_ENTER, node.body, node))
                stack.append((_ENTER, node.value, node))
            elif isinstance(node, Match):
                for clause in reversed(node.clauses):
                    bound = pattern_vars(clause.lhs)
                    stack.append((_UNBIND, bound, clause))
                    stack.append((_ENTER, clause.rhs, node))
                    stack.append((_BIND, bound, clause.lhs))
                    self.check_pattern(clause.lhs, node)
                stack.append((_ENTER, node.data, node))
            else:
                for child in reversed(children(node)):
                    stack.append((_ENTER, child, node))

    def bind(self, variables: Sequence[Var], site: object) -> None:
        """Bring ``variables`` into scope at binding site ``site`` (a node or pattern)."""
        for v in variables:
            if v in self.bound:
                where = site
                if isinstance(site, Pattern):
                    where = next(
                        (
                            p
                            for p in _pattern_nodes(site)
                            if isinstance(p, PatternVar) and p.var is v
                        ),
                        site,
                    )
                self.error(f"variable %{v.name_hint} is bound more than once", where, v)
            self.bound.add(v)
            self.scope[v] = self.scope.get(v, 0) + 1

    def unbind(self, v: Var) -> None:
        n = self.scope[v] - 1
        if n:
            self.scope[v] = n
        else:
            del self.scope[v]

    def check_shared(self, node: Expr, parent: object, global_name: str | None) -> None:
        """A node walked before, reached again from ``parent``: its free variables in scope?"""
        for v in self.free_in(node):
            if not self.scope.get(v):
                self.out_of_scope.setdefault((v, global_name), _span(parent, node))

    def free_in(self, root: Expr) -> frozenset[Var]:
        """The variables occurring free in ``root`` (bottom-up, memoized on node identity)."""
        memo = self.free_memo
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in memo:
                continue
            if isinstance(node, Var):
                memo[id(node)] = frozenset((node,))
                continue
            subs = _scope_children(node)
            if not ready:
                stack.append((node, True))
                stack.extend((c, False) for c in subs if id(c) not in memo)
                continue
            memo[id(node)] = _free_of(node, memo)
        return memo[id(root)]

    # -- globals and constructors -------------------------------------------------------------------

    def check_global(self, gv: GlobalVar, parent: object) -> None:
        mod = self.mod
        if mod is None or gv in mod.functions:
            return
        name = gv.name_hint
        try:
            mod.get_global_var(name)
        except KeyError:
            if ("global", name) not in self.reported:
                self.reported.add(("global", name))
                self.error(f"unknown global @{name}", parent, gv)

    def check_constructor(self, c: Constructor, site: object) -> None:
        if self.mod is None:
            return
        data = _type_data(c, self.mod)
        known = data is not None and any(
            d is c or d.name_hint == c.name_hint for d in data.constructors
        )
        if not known and ("constructor", c.name_hint) not in self.reported:
            self.reported.add(("constructor", c.name_hint))
            self.error(f"unknown constructor {c.name_hint}", site, c)

    def check_pattern(self, pattern: Pattern, match: Match) -> None:
        for p in _pattern_nodes(pattern):
            if isinstance(p, PatternConstructor):
                self.check_constructor(p.constructor, p if p.span is not None else match)

    # -- errors -------------------------------------------------------------------------------------

    def error(self, message: str, *nodes: object) -> None:
        self.errors.append(TypeCheckError(message, _span(*nodes)))

    def finish(self) -> list[TypeCheckError]:
        """Judge the uses out of scope (now that every binding is known); all errors, sorted."""
        for (v, global_name), span in self.out_of_scope.items():
            if v in self.bound:
                message = f"variable %{v.name_hint} is used outside its scope"
            elif global_name is not None:
                message = f"free variable %{v.name_hint} in global @{global_name}"
            else:
                continue
            self.errors.append(TypeCheckError(message, span))
        return _sorted(self.errors)


def _pattern_nodes(pattern: Pattern) -> list[Pattern]:
    """The sub-patterns of ``pattern`` in pre-order."""
    out: list[Pattern] = []
    stack = [pattern]
    while stack:
        p = stack.pop()
        out.append(p)
        if isinstance(p, PatternConstructor | PatternTuple):
            stack.extend(reversed(p.patterns))
    return out


def _scope_children(node: Expr) -> Sequence[Expr]:
    """The children whose free variables can be free in ``node`` (binders excluded)."""
    if isinstance(node, Function):
        return (node.body,)
    if isinstance(node, Let):
        return (node.value, node.body)
    if isinstance(node, Match):
        return (node.data, *(c.rhs for c in node.clauses))
    return children(node)


def _free_of(node: Expr, memo: dict[int, frozenset[Var]]) -> frozenset[Var]:
    """The free variables of ``node`` from those of its children (all in ``memo``)."""
    if isinstance(node, Function):
        body = memo[id(node.body)]
        return body.difference(node.params) if body else _EMPTY
    if isinstance(node, Let):
        both = memo[id(node.value)] | memo[id(node.body)]
        return both - {node.var} if both else _EMPTY
    if isinstance(node, Match):
        out = set(memo[id(node.data)])
        for c in node.clauses:
            rhs = memo[id(c.rhs)]
            if rhs:
                out.update(rhs.difference(pattern_vars(c.lhs)))
        return frozenset(out) if out else _EMPTY
    sets = [memo[id(c)] for c in _scope_children(node)]
    nonempty = [s for s in sets if s]
    if not nonempty:
        return _EMPTY
    if len(nonempty) == 1:
        return nonempty[0]
    return frozenset().union(*nonempty)


def well_formed_errors(obj: Expr | Module, mod: Module | None = None) -> list[TypeCheckError]:
    """Every well-formedness violation in ``obj`` (a module or an expression), in source order.

    For an expression, globals and constructors are checked against ``mod`` when it is
    given; a module is its own. An empty list means ``obj`` is well formed.
    """
    if isinstance(obj, Module):
        checker = _Checker(obj)
        for gv, func in obj.functions.items():
            checker.walk(func, gv.name_hint)
        return checker.finish()
    if isinstance(obj, Expr):
        checker = _Checker(mod)
        checker.walk(obj, None)
        return checker.finish()
    raise TypeError(f"well_formed expects a Module or an Expr, got {type(obj).__name__}")


def well_formed(obj: Expr | Module, mod: Module | None = None) -> bool:
    """True when ``obj`` is well formed (see the module docstring for the rules)."""
    return not well_formed_errors(obj, mod)


def check_well_formed(obj: Expr | Module, mod: Module | None = None) -> None:
    """Raise :class:`TypeCheckError` (listing every violation in ``errors``) unless well formed.

    For example, one ``Var`` object ``x`` as the parameter of two functions,
    ``(fn (%x) { %x }, fn (%x) { %x })``, gives "variable %x is bound more than once"
    at the second function.
    """
    errors = well_formed_errors(obj, mod)
    if errors:
        raise TypeCheckError.combine(errors)
