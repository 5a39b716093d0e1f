"""The dataflow pattern language, its matcher, and the rewrite driver.

Patterns describe shapes of the dataflow graph and are matched against expressions, in the
spirit of TVM's ``relay.dataflow_pattern`` (``python/tvm/relay/dataflow_pattern/__init__.py``
and ``src/relay/ir/dataflow_matcher.cc``)::

    x = wildcard()
    one = is_constant()
    pat = is_op("multiply")(x, one)            # also matches multiply(1f, %a): see below
    pat.match(expr)                            # -> bool

Builders: :func:`wildcard`, :func:`is_var`, :func:`is_constant`, :func:`is_expr`,
:func:`is_op` (calling a pattern builds a call pattern), :func:`is_tuple`,
:func:`is_tuple_get_item`, :func:`is_if`, :func:`is_let`; combinators ``p1 | p2``,
``p.optional(f)`` (``p | f(p)``), ``p.has_attr({...})``, ``p.has_type(t)``,
``p.has_dtype(d)``, ``p.has_shape(s)``. The type predicates read ``checked_type``; a node
whose type has not been inferred does not match them.

Matching (TVM's ``DFPatternMatcher``) walks the pattern and the expression together. A
pattern object that occurs twice must match the *same* node both times (``add(x, x)`` with
one wildcard ``x`` matches ``add(%a, %a)`` only); the matched nodes are recorded per pattern
and undone when an alternative fails. Calls of ``add`` and ``multiply`` also match with their
two arguments swapped. ``let``-bound variables are opaque: a pattern matches the graph as
written (``%0 = ...`` bindings of the text format are dataflow edges, ``let`` is not).

Rewriting (TVM's ``PatternRewriter``): a :class:`DFPatternCallback` pairs a pattern with
``callback(pre, post, node_map)``, where ``pre`` is the node of the input, ``post`` the same
node with its children already rewritten, and ``node_map`` maps each sub-pattern to the
(post) nodes it matched. :func:`rewrite` sweeps the expression bottom-up (an explicit stack,
so 100,000-binding programs need no recursion; each node once, shared nodes once, so a DAG
stays a DAG), tries at each node the callbacks whose pattern can match that kind of node,
and repeats the sweeps until one changes nothing. Before a sweep, type inference runs when a
callback has ``require_type`` set and the program holds nodes without types (a rebuilt node
takes the type of the node it replaces, since rewrites keep types, so a sweep that only
removes nodes needs no new inference). ``max_steps`` bounds the number of sweeps: when it
is reached the driver stops and returns the program as it is (each sweep leaves a correct
program), printing a note at ``RELAY_DEBUG>=1``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from relay import flags
from relay.ir.attrs import normalize_attr_value
from relay.ir.equal import structural_equal
from relay.ir.expr import (
    Call,
    Clause,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.ir.module import Module
from relay.ir.types import TensorType, Type

__all__ = [
    "AltPattern",
    "AttrPattern",
    "CallPattern",
    "ConstantPattern",
    "DFPattern",
    "DFPatternCallback",
    "DataTypePattern",
    "ExprPattern",
    "IfPattern",
    "LetPattern",
    "ShapePattern",
    "TupleGetItemPattern",
    "TuplePattern",
    "TypePattern",
    "VarPattern",
    "WildcardPattern",
    "is_constant",
    "is_expr",
    "is_if",
    "is_let",
    "is_op",
    "is_tuple",
    "is_tuple_get_item",
    "is_var",
    "rewrite",
    "rewrite_module",
    "rule",
    "wildcard",
]

NodeMap: TypeAlias = dict["DFPattern", list[Expr]]

COMMUTATIVE_OPS = frozenset({"add", "multiply"})
"""Operators whose two arguments a call pattern also tries swapped (as TVM does)."""


# -- patterns -----------------------------------------------------------------------------------


class DFPattern:
    """Base class of dataflow patterns. Patterns compare by identity."""

    __slots__ = ()

    def __call__(self, *args: DFPattern | Expr) -> CallPattern:
        """A pattern for a call of what ``self`` matches with arguments ``args`` (an
        expression stands for :func:`is_expr` of it)."""
        return CallPattern(self, args)

    def __or__(self, other: DFPattern) -> AltPattern:
        """Either ``self`` or ``other`` (tried in that order)."""
        return AltPattern(self, other)

    def optional(self, option: Callable[[DFPattern], DFPattern]) -> AltPattern:
        """``self`` or ``option(self)``: e.g. ``p.optional(lambda x: is_op("nn.relu")(x))``
        matches ``p`` with or without a ``relu`` on top."""
        return self | option(self)

    def has_attr(self, attrs: Mapping[str, object]) -> AttrPattern:
        """``self`` where the node's attributes include ``attrs`` (a call's attributes, a
        function's attributes, or for an operator ``TOpPattern``: its fusion pattern)."""
        return AttrPattern(self, attrs)

    def has_type(self, ty: Type) -> TypePattern:
        """``self`` where the node's inferred type is ``ty``."""
        return TypePattern(self, ty)

    def has_dtype(self, dtype: str) -> DataTypePattern:
        """``self`` where the node's inferred type is a tensor of ``dtype``."""
        return DataTypePattern(self, dtype)

    def has_shape(self, shape: Sequence[Any]) -> ShapePattern:
        """``self`` where the node's inferred type is a tensor of ``shape``."""
        return ShapePattern(self, shape)

    def match(self, expr: Expr) -> bool:
        """Whether ``expr`` matches this pattern."""
        return _Matcher().match(self, expr)

    def match_map(self, expr: Expr) -> NodeMap | None:
        """The nodes each sub-pattern matched (as for a callback's ``node_map``), or None."""
        m = _Matcher()
        return dict(m.memo) if m.match(self, expr) else None

    def __repr__(self) -> str:
        return self.text()

    def text(self) -> str:
        """A readable rendering, e.g. ``multiply(*, const)``."""
        raise NotImplementedError


class WildcardPattern(DFPattern):
    """Matches any expression."""

    __slots__ = ()

    def text(self) -> str:
        return "*"


class VarPattern(DFPattern):
    """Matches a variable, named ``name`` unless ``name`` is empty."""

    __slots__ = ("name",)

    def __init__(self, name: str = "") -> None:
        self.name = name

    def text(self) -> str:
        return f"%{self.name or '*'}"


class ConstantPattern(DFPattern):
    """Matches any constant."""

    __slots__ = ()

    def text(self) -> str:
        return "const"


class ExprPattern(DFPattern):
    """Matches ``expr`` itself: an operator by identity, anything else structurally."""

    __slots__ = ("expr",)

    def __init__(self, expr: Expr) -> None:
        if not isinstance(expr, Expr):
            raise TypeError(f"is_expr takes an expression, got {type(expr).__name__}")
        self.expr = expr

    def text(self) -> str:
        if isinstance(self.expr, Op):
            return self.expr.name
        text = " ".join(str(self.expr).split())
        return f"is_expr({text if len(text) <= 40 else text[:37] + '...'})"


class CallPattern(DFPattern):
    """Matches a call whose callee matches ``op`` and arguments match ``args`` (any
    arguments when ``args`` is None)."""

    __slots__ = ("args", "op")

    def __init__(self, op: DFPattern | Expr, args: Sequence[DFPattern | Expr] | None) -> None:
        self.op = _as_pattern(op)
        self.args = None if args is None else tuple(_as_pattern(a) for a in args)

    def text(self) -> str:
        args = "..." if self.args is None else ", ".join(a.text() for a in self.args)
        return f"{self.op.text()}({args})"


class TuplePattern(DFPattern):
    """Matches a tuple whose fields match ``fields`` (any fields when None)."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[DFPattern] | None) -> None:
        self.fields = None if fields is None else tuple(_as_pattern(f) for f in fields)

    def text(self) -> str:
        if self.fields is None:
            return "(...)"
        if len(self.fields) == 1:
            return f"({self.fields[0].text()},)"
        return "(" + ", ".join(f.text() for f in self.fields) + ")"


class TupleGetItemPattern(DFPattern):
    """Matches ``t.index`` with ``t`` matching ``tuple_value`` (any index when None)."""

    __slots__ = ("index", "tuple_value")

    def __init__(self, tuple_value: DFPattern, index: int | None = None) -> None:
        self.tuple_value = _as_pattern(tuple_value)
        self.index = index

    def text(self) -> str:
        return f"{self.tuple_value.text()}.{'*' if self.index is None else self.index}"


class IfPattern(DFPattern):
    """Matches ``if (cond) {true_branch} else {false_branch}``."""

    __slots__ = ("cond", "false_branch", "true_branch")

    def __init__(self, cond: DFPattern, true_branch: DFPattern, false_branch: DFPattern) -> None:
        self.cond = _as_pattern(cond)
        self.true_branch = _as_pattern(true_branch)
        self.false_branch = _as_pattern(false_branch)

    def text(self) -> str:
        t, f = self.true_branch.text(), self.false_branch.text()
        return f"if ({self.cond.text()}) {{ {t} }} else {{ {f} }}"


class LetPattern(DFPattern):
    """Matches ``let var = value; body``."""

    __slots__ = ("body", "value", "var")

    def __init__(self, var: DFPattern, value: DFPattern, body: DFPattern) -> None:
        self.var = _as_pattern(var)
        self.value = _as_pattern(value)
        self.body = _as_pattern(body)

    def text(self) -> str:
        return f"let {self.var.text()} = {self.value.text()}; {self.body.text()}"


class AltPattern(DFPattern):
    """Matches what ``left`` matches, else what ``right`` matches."""

    __slots__ = ("left", "right")

    def __init__(self, left: DFPattern, right: DFPattern) -> None:
        self.left = _as_pattern(left)
        self.right = _as_pattern(right)

    def text(self) -> str:
        return f"({self.left.text()} | {self.right.text()})"


class AttrPattern(DFPattern):
    """Matches what ``pattern`` matches when the node's attributes include ``attrs``."""

    __slots__ = ("attrs", "pattern")

    def __init__(self, pattern: DFPattern, attrs: Mapping[str, object]) -> None:
        self.pattern = _as_pattern(pattern)
        self.attrs = {k: normalize_attr_value(v) for k, v in attrs.items()}

    def text(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"{self.pattern.text()}.has_attr({inner})"


class TypePattern(DFPattern):
    """Matches what ``pattern`` matches when the node's inferred type is ``type``."""

    __slots__ = ("pattern", "type")

    def __init__(self, pattern: DFPattern, ty: Type) -> None:
        self.pattern = _as_pattern(pattern)
        self.type = ty

    def text(self) -> str:
        return f"{self.pattern.text()}.has_type({self.type})"


class DataTypePattern(DFPattern):
    """Matches what ``pattern`` matches when the node is a tensor of ``dtype``."""

    __slots__ = ("dtype", "pattern")

    def __init__(self, pattern: DFPattern, dtype: str) -> None:
        self.pattern = _as_pattern(pattern)
        self.dtype = dtype

    def text(self) -> str:
        return f"{self.pattern.text()}.has_dtype({self.dtype!r})"


class ShapePattern(DFPattern):
    """Matches what ``pattern`` matches when the node is a tensor of ``shape``."""

    __slots__ = ("pattern", "shape")

    def __init__(self, pattern: DFPattern, shape: Sequence[Any]) -> None:
        self.pattern = _as_pattern(pattern)
        self.shape = tuple(shape)

    def text(self) -> str:
        return f"{self.pattern.text()}.has_shape({self.shape!r})"


def _as_pattern(p: object) -> DFPattern:
    if isinstance(p, DFPattern):
        return p
    if isinstance(p, Expr):
        return ExprPattern(p)
    raise TypeError(f"expected a pattern, got {type(p).__name__}")


# -- builders -----------------------------------------------------------------------------------


def wildcard() -> WildcardPattern:
    """A pattern matching any expression."""
    return WildcardPattern()


def is_var(name: str = "") -> VarPattern:
    """A pattern matching a variable (named ``name``, if given)."""
    return VarPattern(name)


def is_constant() -> ConstantPattern:
    """A pattern matching any constant."""
    return ConstantPattern()


def is_expr(expr: Expr) -> ExprPattern:
    """A pattern matching ``expr`` (structurally; an operator by identity)."""
    return ExprPattern(expr)


def is_op(name: str) -> ExprPattern:
    """A pattern matching the operator ``name``; call it to match calls:
    ``is_op("add")(wildcard(), is_constant())``. Raises ``KeyError`` for an unknown op."""
    return ExprPattern(Op.get(name))


def is_tuple(fields: Sequence[DFPattern] | None) -> TuplePattern:
    """A pattern matching a tuple with these fields (any fields when None)."""
    return TuplePattern(fields)


def is_tuple_get_item(tuple_value: DFPattern, index: int | None = None) -> TupleGetItemPattern:
    """A pattern matching ``t.index`` (any index when None)."""
    return TupleGetItemPattern(tuple_value, index)


def is_if(cond: DFPattern, true_branch: DFPattern, false_branch: DFPattern) -> IfPattern:
    """A pattern matching a conditional."""
    return IfPattern(cond, true_branch, false_branch)


def is_let(var: DFPattern, value: DFPattern, body: DFPattern) -> LetPattern:
    """A pattern matching a ``let``."""
    return LetPattern(var, value, body)


# -- the matcher --------------------------------------------------------------------------------


def _type_of(expr: Expr) -> Type | None:
    """The inferred type of ``expr``, or None when inference has not reached it."""
    return expr._checked_type


class _Matcher:
    """One match attempt: ``memo`` maps each pattern to the nodes it matched; ``trail``
    records the order, so a failed alternative can be undone."""

    __slots__ = ("memo", "trail")

    def __init__(self) -> None:
        self.memo: NodeMap = {}
        self.trail: list[DFPattern] = []

    def match(self, pattern: DFPattern, expr: Expr) -> bool:
        self.memo.clear()
        self.trail.clear()
        return self.visit(pattern, expr)

    def _undo(self, mark: int) -> None:
        trail, memo = self.trail, self.memo
        while len(trail) > mark:
            p = trail.pop()
            nodes = memo[p]
            nodes.pop()
            if not nodes:
                del memo[p]

    def visit(self, pattern: DFPattern, expr: Expr) -> bool:
        seen = self.memo.get(pattern)
        if seen is not None:
            return seen[0] is expr
        mark = len(self.trail)
        if self._visit(pattern, expr):
            self.memo.setdefault(pattern, []).append(expr)
            self.trail.append(pattern)
            return True
        self._undo(mark)
        return False

    def _visit(self, p: DFPattern, e: Expr) -> bool:
        if isinstance(p, WildcardPattern):
            return True
        if isinstance(p, CallPattern):
            return isinstance(e, Call) and self._call(p, e)
        if isinstance(p, ExprPattern):
            if isinstance(p.expr, Op) or isinstance(e, Op):
                return p.expr is e
            return p.expr is e or structural_equal(p.expr, e)
        if isinstance(p, ConstantPattern):
            return isinstance(e, Constant)
        if isinstance(p, VarPattern):
            return isinstance(e, Var) and (not p.name or e.name_hint == p.name)
        if isinstance(p, AltPattern):
            return self.visit(p.left, e) or self.visit(p.right, e)
        if isinstance(p, TuplePattern):
            if not isinstance(e, Tuple):
                return False
            if p.fields is None:
                return True
            return len(p.fields) == len(e.fields) and all(
                self.visit(fp, fe) for fp, fe in zip(p.fields, e.fields, strict=True)
            )
        if isinstance(p, TupleGetItemPattern):
            return (
                isinstance(e, TupleGetItem)
                and (p.index is None or p.index == e.index)
                and self.visit(p.tuple_value, e.tuple_value)
            )
        if isinstance(p, IfPattern):
            return (
                isinstance(e, If)
                and self.visit(p.cond, e.cond)
                and self.visit(p.true_branch, e.true_branch)
                and self.visit(p.false_branch, e.false_branch)
            )
        if isinstance(p, LetPattern):
            return (
                isinstance(e, Let)
                and self.visit(p.var, e.var)
                and self.visit(p.value, e.value)
                and self.visit(p.body, e.body)
            )
        if isinstance(p, AttrPattern):
            return _has_attrs(e, p.attrs) and self.visit(p.pattern, e)
        if isinstance(p, TypePattern):
            ty = _type_of(e)
            return ty is not None and ty == p.type and self.visit(p.pattern, e)
        if isinstance(p, DataTypePattern):
            ty = _type_of(e)
            return isinstance(ty, TensorType) and ty.dtype == p.dtype and self.visit(p.pattern, e)
        if isinstance(p, ShapePattern):
            ty = _type_of(e)
            return isinstance(ty, TensorType) and ty.shape == p.shape and self.visit(p.pattern, e)
        raise TypeError(f"unknown pattern {type(p).__name__}")

    def _call(self, p: CallPattern, e: Call) -> bool:
        if not self.visit(p.op, e.op):
            return False
        if p.args is None:
            return True
        if len(p.args) != len(e.args):
            return False
        mark = len(self.trail)
        if all(self.visit(ap, ae) for ap, ae in zip(p.args, e.args, strict=True)):
            return True
        self._undo(mark)
        if len(e.args) == 2 and isinstance(e.op, Op) and e.op.name in COMMUTATIVE_OPS:
            return self.visit(p.args[0], e.args[1]) and self.visit(p.args[1], e.args[0])
        return False


def _has_attrs(e: Expr, attrs: Mapping[str, object]) -> bool:
    if isinstance(e, Op):
        pattern = e.definition.pattern
        for k, v in attrs.items():
            if k not in ("TOpPattern", "pattern") or v != int(pattern):
                return False
        return True
    if isinstance(e, Call | Function):
        have = e.attrs
        return all(k in have and _attr_equal(have[k], v) for k, v in attrs.items())
    return False


def _attr_equal(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


# -- callbacks ----------------------------------------------------------------------------------


class DFPatternCallback:
    """A rewrite rule: ``pattern`` and ``callback(pre, post, node_map) -> Expr``.

    Subclasses set ``self.pattern`` (usually in ``__init__``) and define ``callback``; it
    returns the replacement of ``post``, or ``post`` (or None) to leave it. The replacement
    must have the type of the node it replaces (the driver relies on it to keep types on
    rebuilt nodes). ``require_type``: types are inferred before a sweep of :func:`rewrite`
    when some node lacks one, so the pattern's type predicates and the callback
    (``pre.checked_type``) can read them; nodes a callback builds get their types in the
    next sweep.
    """

    pattern: DFPattern

    def __init__(self, require_type: bool = False) -> None:
        self.require_type = require_type

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
        """The replacement of ``post`` (``pre`` is the node before its children were
        rewritten); ``node_map`` maps each sub-pattern to the nodes it matched."""
        raise NotImplementedError

    def rewrite(self, expr: Expr, mod: Module | None = None) -> Expr:
        """:func:`rewrite` with this callback alone."""
        return rewrite(self, expr, mod)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self, 'pattern', '?')!r})"


class _FunctionCallback(DFPatternCallback):
    def __init__(
        self,
        pattern: DFPattern,
        fn: Callable[[Expr, Expr, NodeMap], Expr | None],
        require_type: bool,
        name: str,
    ) -> None:
        super().__init__(require_type)
        self.pattern = pattern
        self.fn = fn
        self.name = name

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr | None:
        """The rule's function."""
        return self.fn(pre, post, node_map)

    def __repr__(self) -> str:
        return f"rule {self.name}: {self.pattern!r}"


def rule(
    pattern: DFPattern, require_type: bool = False, name: str | None = None
) -> Callable[[Callable[[Expr, Expr, NodeMap], Expr | None]], DFPatternCallback]:
    """Make a callback of a function ``fn(pre, post, node_map)``::

    @rule(is_op("negative")(is_op("negative")(wildcard())))
    def double_negation(pre, post, node_map): ...
    """

    def wrap(fn: Callable[[Expr, Expr, NodeMap], Expr | None]) -> DFPatternCallback:
        return _FunctionCallback(pattern, fn, require_type, name or fn.__name__)

    return wrap


# -- the rewrite driver -------------------------------------------------------------------------

_Key: TypeAlias = type | str


def _root_keys(p: DFPattern) -> set[_Key] | None:
    """What kinds of node ``p`` can match at its root: node classes, or operator names for
    calls of an operator (None: anything)."""
    if isinstance(p, CallPattern):
        names = _op_names(p.op)
        return {Call} if names is None else set(names)
    if isinstance(p, AltPattern):
        left, right = _root_keys(p.left), _root_keys(p.right)
        return None if left is None or right is None else left | right
    if isinstance(p, AttrPattern | TypePattern | DataTypePattern | ShapePattern):
        return _root_keys(p.pattern)
    if isinstance(p, ExprPattern):
        return {type(p.expr)}
    simple: dict[type, type] = {
        VarPattern: Var,
        ConstantPattern: Constant,
        TuplePattern: Tuple,
        TupleGetItemPattern: TupleGetItem,
        IfPattern: If,
        LetPattern: Let,
    }
    cls = simple.get(type(p))
    return None if cls is None else {cls}


def _op_names(p: DFPattern) -> set[str] | None:
    """The operators a callee pattern can match (None: not only operators)."""
    if isinstance(p, ExprPattern) and isinstance(p.expr, Op):
        return {p.expr.name}
    if isinstance(p, AltPattern):
        left, right = _op_names(p.left), _op_names(p.right)
        return None if left is None or right is None else left | right
    if isinstance(p, AttrPattern):
        return _op_names(p.pattern)
    return None


class _Dispatch:
    """The callbacks worth trying at each kind of node, in the order given."""

    def __init__(self, callbacks: Sequence[DFPatternCallback]) -> None:
        self.callbacks = callbacks
        self.keys = [_root_keys(cb.pattern) for cb in callbacks]
        self.cache: dict[_Key, list[DFPatternCallback]] = {}

    def for_node(self, e: Expr) -> list[DFPatternCallback]:
        key: _Key = e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else type(e)
        found = self.cache.get(key)
        if found is None:
            wanted: set[_Key] = {key, Call} if isinstance(key, str) else {key}
            found = [
                cb
                for cb, keys in zip(self.callbacks, self.keys, strict=True)
                if keys is None or keys & wanted
            ]
            self.cache[key] = found
        return found


def _children(e: Expr) -> tuple[Expr, ...]:
    """The sub-expressions the driver rewrites (binders excluded: they stay as they are)."""
    if isinstance(e, Call):
        return (e.op, *e.args)
    if isinstance(e, Let):
        return (e.value, e.body)
    if isinstance(e, Function):
        return (e.body,)
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    if isinstance(e, If):
        return (e.cond, e.true_branch, e.false_branch)
    if isinstance(e, Match):
        return (e.data, *(c.rhs for c in e.clauses))
    if isinstance(e, RefCreate):
        return (e.value,)
    if isinstance(e, RefRead):
        return (e.ref,)
    if isinstance(e, RefWrite):
        return (e.ref, e.value)
    return ()


def _rebuild(e: Expr, new: list[Expr]) -> Expr:
    """``e`` with its rewritable children replaced by ``new`` (in :func:`_children` order)."""
    if isinstance(e, Call):
        return Call(new[0], tuple(new[1:]), e.attrs, e.type_args, span=e.span)
    if isinstance(e, Let):
        return Let(e.var, new[0], new[1], span=e.span)
    if isinstance(e, Function):
        return Function(e.params, new[0], e.ret_type, e.type_params, e.attrs, span=e.span)
    if isinstance(e, Tuple):
        return Tuple(tuple(new), span=e.span)
    if isinstance(e, TupleGetItem):
        return TupleGetItem(new[0], e.index, span=e.span)
    if isinstance(e, If):
        return If(new[0], new[1], new[2], span=e.span)
    if isinstance(e, Match):
        clauses = tuple(
            c if c.rhs is rhs else Clause(c.lhs, rhs, span=c.span)
            for c, rhs in zip(e.clauses, new[1:], strict=True)
        )
        return Match(new[0], clauses, e.complete, span=e.span)
    if isinstance(e, RefCreate):
        return RefCreate(new[0], span=e.span)
    if isinstance(e, RefRead):
        return RefRead(new[0], span=e.span)
    if isinstance(e, RefWrite):
        return RefWrite(new[0], new[1], span=e.span)
    raise AssertionError(f"{type(e).__name__} has no children to rebuild")


class _Sweep:
    """One bottom-up pass of the callbacks over an expression."""

    def __init__(self, dispatch: _Dispatch) -> None:
        self.dispatch = dispatch
        self.matcher = _Matcher()
        self.changed = False
        self.untyped = False  # a callback introduced nodes without types

    def run(self, root: Expr) -> Expr:
        memo: dict[Expr, Expr] = {}
        # (node, None): not yet expanded; (node, children): children done, rebuild the node
        stack: list[tuple[Expr, tuple[Expr, ...] | None]] = [(root, None)]
        while stack:
            node, kids = stack.pop()
            if node in memo:
                continue
            if kids is None:
                kids = _children(node)
                if kids:
                    stack.append((node, kids))
                    stack.extend((c, None) for c in reversed(kids) if c not in memo)
                else:
                    memo[node] = self._apply(node, node)
                continue
            post = node
            for c in kids:
                if memo[c] is not c:
                    post = _rebuild(node, [memo[k] for k in kids])
                    ty = node._checked_type
                    if ty is not None:  # rewrites keep types
                        post.set_checked_type(ty)
                    break
            memo[node] = self._apply(node, post)
        return memo[root]

    def _apply(self, pre: Expr, post: Expr) -> Expr:
        for cb in self.dispatch.for_node(post):
            if not self.matcher.match(cb.pattern, post):
                continue
            out = cb.callback(pre, post, dict(self.matcher.memo))
            if out is None or out is post:
                continue
            if not isinstance(out, Expr):
                raise TypeError(f"{cb!r} returned {type(out).__name__}, not an expression")
            self.changed = True
            if out._checked_type is None:
                self.untyped = True
                ty = pre._checked_type
                if ty is not None:
                    out.set_checked_type(ty)
            post = out
        return post


def _callbacks(
    callbacks: DFPatternCallback | Iterable[DFPatternCallback],
) -> list[DFPatternCallback]:
    out = [callbacks] if isinstance(callbacks, DFPatternCallback) else list(callbacks)
    for cb in out:
        if not isinstance(cb, DFPatternCallback) or not isinstance(
            getattr(cb, "pattern", None), DFPattern
        ):
            raise TypeError(f"rewrite takes callbacks with a pattern, got {cb!r}")
    return out


def _note_limit(max_steps: int) -> None:
    if flags.get().debug >= 1:
        print(
            f"relay rewrite: stopped after {max_steps} sweeps without reaching a fixed point",
            file=sys.stderr,
        )


def rewrite(
    callbacks: DFPatternCallback | Iterable[DFPatternCallback],
    expr: Expr,
    mod: Module | None = None,
    max_steps: int = 100,
) -> Expr:
    """``expr`` with the callbacks applied bottom-up until none applies (see the module docs).

    ``mod`` supplies the globals that type inference needs. At most ``max_steps`` sweeps
    run; at the limit the current expression is returned as it is. ``expr`` itself is
    returned when nothing applies.
    """
    cbs = _callbacks(callbacks)
    dispatch = _Dispatch(cbs)
    need_types = any(cb.require_type for cb in cbs)
    typed = expr._checked_type is not None
    for _ in range(max_steps):
        if need_types and not typed:
            from relay.typecheck.checker import infer_type

            infer_type(expr, mod)
        sweep = _Sweep(dispatch)
        expr = sweep.run(expr)
        if not sweep.changed:
            return expr
        typed = not sweep.untyped
    _note_limit(max_steps)
    return expr


def rewrite_module(
    callbacks: DFPatternCallback | Iterable[DFPatternCallback],
    mod: Module,
    max_steps: int = 100,
) -> Module:
    """A copy of ``mod`` with :func:`rewrite` applied to each global function (``Primitive=1``
    functions excepted), inferring the types of the whole module once per sweep when needed.
    ``mod`` itself is returned when nothing applies."""
    cbs = _callbacks(callbacks)
    dispatch = _Dispatch(cbs)
    need_types = any(cb.require_type for cb in cbs)
    out = mod
    typed = all(f._checked_type is not None for f in mod.functions.values())
    for _ in range(max_steps):
        if need_types and not typed:
            from relay.typecheck.checker import check_module

            check_module(out)
        changed = False
        typed = True
        for gv, func in list(out.functions.items()):
            if func.attrs.get("Primitive") == 1:
                continue
            sweep = _Sweep(dispatch)
            new = sweep.run(func)
            if new is func:
                continue
            if not isinstance(new, Function):
                raise TypeError(f"a rewrite replaced @{gv.name_hint} with a non-function")
            if out is mod:
                out = mod.copy()
            out.update_func(gv, new)
            changed = True
            typed = typed and not sweep.untyped
        if not changed:
            return out
    _note_limit(max_steps)
    return out
