"""The Relay text printer (format version 0.0.5).

Expressions print in graph normal form, as Relay's printer did: inside a
block, every non-atomic sub-expression that is an argument (of a call, a
tuple, a projection, a reference operation) is bound to a temporary,
``%0 = add(%x, %y);``, and referred to by name; a block's result and a
``let``'s value print inline when they have a single use. Atomic expressions
(variables, globals, operators, constructors, scalar constants) always print
inline. A node used several times is bound once and named at each use, so
the text keeps the program's sharing and parses back to the same DAG.

Temporaries are scoped to the block (function body, ``if`` branch, ``match``
clause) that introduced them: a shared node first printed inside one branch
is printed again in a sibling block rather than referred to out of scope.

Names are invented at print time: variables keep their name hints, made
unique per definition (``%x``, ``%x1``, ...); temporaries count from ``%0``
in each definition. Constants that are not finite scalars go to the
``#[metadata]`` section as ``meta[relay.Constant][i]``.

Dataflow nesting is printed with an explicit stack, and ``let`` chains with a
loop, so deep programs print without recursion.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable

import numpy as np

from relay.ir.analysis import free_vars
from relay.ir.attrs import Attrs, AttrValue
from relay.ir.dim import dim_str
from relay.ir.expr import (
    ATOMIC_EXPRS,
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay.ir.module import Module
from relay.ir.types import (
    DTYPES,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    SymbolicDim,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
    _AnyDim,
)

VERSION = "0.0.5"
HEADER = f'#[version = "{VERSION}"]'

_DATAFLOW = (Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite)

_RESERVED_TYPE_NAMES = frozenset(
    {
        *DTYPES,
        "Tensor",
        "fn",
        "ref",
        "let",
        "if",
        "else",
        "match",
        "type",
        "extern",
        "def",
        "free_var",
        "meta",
        "True",
        "False",
        "None",
        "_",
    }
)

_INT_SUFFIX = {
    "int8": "i8",
    "int16": "i16",
    "int32": "",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
}
_FLOAT_SUFFIX = {"float16": "f16", "float32": "f", "float64": "f64"}


def astext(obj: object, show_types: bool = False) -> str:
    """``obj`` (a Module, expression, type or pattern) in the Relay text format.

    Modules start with the version header; expressions with free variables
    start with ``free_var`` declarations. With ``show_types``, the inferred
    type of each bound or result expression is printed as a ``/* ty=T */``
    comment.
    """
    return _Printer(show_types).top(obj)


def _indent(text: str, by: str = "  ") -> str:
    return by + text.replace("\n", "\n" + by)


def format_float(value: float, dtype: str) -> str:
    """The shortest decimal text that reads back as ``value`` in ``dtype``, without ``.0``."""
    text = repr(float(value)) if dtype == "float64" else str(np.dtype(dtype).type(value))
    if text.endswith(".0"):
        text = text[:-2]
    return text


def format_scalar(data: np.ndarray) -> str | None:
    """A rank-0 constant as a literal (``1f``, ``-3i64``, ``True``), or None if it has none."""
    if data.ndim != 0:
        return None
    dtype = str(data.dtype)
    value = data.item()
    if dtype == "bool":
        return "True" if value else "False"
    if dtype in _INT_SUFFIX:
        return f"{int(value)}{_INT_SUFFIX[dtype]}"
    if dtype in _FLOAT_SUFFIX and math.isfinite(float(value)):
        return f"{format_float(float(value), dtype)}{_FLOAT_SUFFIX[dtype]}"
    return None


def format_attr_value(value: AttrValue) -> str:
    """An attribute value: ``True``, ``3``, ``0.5f``, ``"NHWC"``, ``[1, 1]``, ``None``."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot print non-finite attribute value {value}")
        return format_float(value, "float64") + "f"
    if isinstance(value, str):
        return json.dumps(value)
    return "[" + ", ".join(format_attr_value(v) for v in value) + "]"


def _binds_type_vars(t: Type) -> bool:
    """Whether printing ``t`` binds type variables (a polymorphic function type inside)."""
    stack: list[Type] = [t]
    while stack:
        t = stack.pop()
        if isinstance(t, FuncType):
            if t.type_params:
                return True
            stack.extend((*t.arg_types, t.ret_type))
        elif isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, TypeCall):
            stack.extend(t.args)
        elif isinstance(t, RefType):
            stack.append(t.value)
    return False


def _is_inline(e: Expr) -> bool:
    """Atoms, and calls of constructors without arguments (``Nil``), always print inline."""
    return isinstance(e, ATOMIC_EXPRS) or (
        isinstance(e, Call) and isinstance(e.op, Constructor) and not e.args and not e.attrs
    )


_BlockKey = tuple[Expr, object] | None
"""A block of printed text: ``None`` for the outermost, else the node that opens it and which
of its parts (``"body"`` of a function, ``"then"``/``"else"`` of an if, a clause index of a
match, ``"paren"`` for a let printed in parentheses)."""


def _place(root: Expr) -> tuple[dict[Expr, int], dict[Expr, _BlockKey]]:
    """Use counts, and the block each node is printed in: the innermost enclosing all its uses.

    Nodes are visited parents first (reverse post-order), so a node's block is final before
    its children are placed; the block of a child is the lowest common ancestor, in the tree
    of blocks, of the blocks its uses occur in.
    """
    uses = _count_uses(root)
    order: list[Expr] = []
    seen: set[Expr] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            stack.extend((c, False) for c in children(node) if c not in seen)
    home: dict[Expr, _BlockKey] = {root: None}
    depth: dict[_BlockKey, int] = {None: 0}
    chained: set[Let] = set()
    if isinstance(root, Let):
        chained.add(root)

    def parent(key: _BlockKey) -> _BlockKey:
        assert key is not None
        return home[key[0]]

    def lca(a: _BlockKey, b: _BlockKey) -> _BlockKey:
        while depth[a] > depth[b]:
            a = parent(a)
        while depth[b] > depth[a]:
            b = parent(b)
        while a != b:
            a, b = parent(a), parent(b)
        return a

    def opens(node: Expr, part: object, child: Expr) -> _BlockKey:
        key: _BlockKey = (node, part)
        depth[key] = depth[home[node]] + 1
        if isinstance(child, Let) and uses.get(child, 0) <= 1:
            chained.add(child)
        return key

    for node in reversed(order):
        if node not in home:  # a binder (parameter or let variable): printed where it binds
            continue
        here = home[node]
        slots: list[tuple[Expr, _BlockKey]]
        if isinstance(node, Function):
            slots = [(node.body, opens(node, "body", node.body))]
        elif isinstance(node, If):
            slots = [
                (node.cond, here),
                (node.true_branch, opens(node, "then", node.true_branch)),
                (node.false_branch, opens(node, "else", node.false_branch)),
            ]
        elif isinstance(node, Match):
            slots = [(node.data, here)]
            slots += [(c.rhs, opens(node, i, c.rhs)) for i, c in enumerate(node.clauses)]
        elif isinstance(node, Let):
            inner = here if node in chained else opens(node, "paren", node)
            if isinstance(node.body, Let) and uses.get(node.body, 0) <= 1:
                chained.add(node.body)
            slots = [(node.value, inner), (node.body, inner)]
        else:
            slots = [(c, here) for c in children(node)]
        for child, key in slots:
            home[child] = lca(home[child], key) if child in home else key
    return uses, home


def _count_uses(root: Expr) -> dict[Expr, int]:
    """How many times each node is referred to as a child (its in-degree in the DAG)."""
    uses: dict[Expr, int] = {}
    seen: set[Expr] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for c in children(node):
            uses[c] = uses.get(c, 0) + 1
            stack.append(c)
    return uses


class _Printer:
    def __init__(self, show_types: bool) -> None:
        self.show_types = show_types
        self.meta: list[Constant] = []
        self.meta_index: dict[Constant, int] = {}
        self.type_names: frozenset[str] = frozenset()
        self._reset_names()

    def _reset_names(self) -> None:
        self.var_names: dict[Var, str] = {}
        self.type_var_names: dict[TypeVar, str] = {}
        self.used: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.temps = 0
        self.uses: dict[Expr, int] = {}
        self.home: dict[Expr, _BlockKey] = {}
        self.names: dict[Expr, str] = {}
        self.open_blocks: dict[_BlockKey, tuple[list[str], list[Expr]]] = {}
        self.block_stack: list[_BlockKey] = []

    # -- entry points ----------------------------------------------------------------------------

    def top(self, obj: object) -> str:
        if isinstance(obj, Module):
            text = self.module(obj)
        elif isinstance(obj, Expr):
            text = self.top_expr(obj)
        elif isinstance(obj, TypeData):
            text = self.type_data(obj)
        elif isinstance(obj, Type):
            text = self.type(obj)
        elif isinstance(obj, Pattern):
            text = self.pattern(obj)
        else:
            raise TypeError(f"cannot print {type(obj).__name__} as Relay text")
        return text + self.metadata()

    def module(self, mod: Module) -> str:
        self.type_names = frozenset(t.name_hint for t in mod.type_definitions)
        parts = []
        for data in mod.type_definitions.values():
            self._reset_names()
            parts.append(self.type_data(data))
        for gv, func in mod.functions.items():
            self._reset_names()
            self.uses, self.home = _place(func)
            parts.append(self.function(func, prefix=f"def @{gv.name_hint}"))
        return HEADER + "\n" + "\n\n".join(parts) + ("\n" if parts else "")

    def top_expr(self, expr: Expr) -> str:
        self.uses, self.home = _place(expr)
        decls = []
        for v in free_vars(expr):
            decls.append(f"free_var {self.bind_var(v)};")
        body = self.scope(expr, None)
        return "\n".join([*decls, body])

    def metadata(self) -> str:
        if not self.meta:
            return ""
        entries = [
            {
                "dtype": str(c.data.dtype),
                "shape": list(c.data.shape),
                "data": base64.b64encode(
                    np.ascontiguousarray(c.data).astype(c.data.dtype.newbyteorder("<")).tobytes()
                ).decode("ascii"),
            }
            for c in self.meta
        ]
        return "\n#[metadata]\n" + json.dumps({"relay.Constant": entries}) + "\n"

    # -- names -----------------------------------------------------------------------------------

    def _unique(self, base: str) -> str:
        name = base
        if name in self.used:
            i = self.next_suffix.get(base, 1)
            while f"{base}{i}" in self.used:
                i += 1
            self.next_suffix[base] = i + 1
            name = f"{base}{i}"
        self.used.add(name)
        return name

    @staticmethod
    def _clean(hint: str, prefix: str) -> str:
        cleaned = "".join(
            ch if (ch.isascii() and ch.isalnum()) or ch == "_" else "_" for ch in hint
        )
        if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
            cleaned = prefix + cleaned
        return cleaned

    def var_name(self, v: Var) -> str:
        name = self.var_names.get(v)
        if name is None:
            name = "%" + self._unique(self._clean(v.name_hint, "v"))
            self.var_names[v] = name
        return name

    def bind_var(self, v: Var) -> str:
        """Allocate a name for a binder and return its declaration (with its annotation)."""
        name = "%" + self._unique(self._clean(v.name_hint, "v"))
        self.var_names[v] = name
        if v.type_annotation is not None:
            return f"{name}: {self.type(v.type_annotation)}"
        return name

    def _type_var_base(self, hint: str) -> str:
        base = self._clean(hint, "t")
        # a type variable must not read back as a dtype, a keyword or a defined type
        reserved = base in _RESERVED_TYPE_NAMES or base in self.type_names
        return base + "_" if reserved else base

    def bind_type_var(self, tv: TypeVar) -> str:
        name = self._unique(self._type_var_base(tv.name_hint))
        self.type_var_names[tv] = name
        return name if tv.kind is Kind.TYPE else f"{name}: {tv.kind.value}"

    def type_var_name(self, tv: TypeVar) -> str:
        name = self.type_var_names.get(tv)
        if name is None:
            name = self._unique(self._type_var_base(tv.name_hint))
            self.type_var_names[tv] = name
        return name

    # -- blocks ----------------------------------------------------------------------------------

    def _lookup(self, e: Expr) -> str | None:
        return self.names.get(e)

    def scope(self, expr: Expr, key: _BlockKey, enter: Let | None = None) -> str:
        """A block body: the temporaries and lets it needs, then its result.

        ``key`` names the block (see :func:`_place`); ``enter`` is a shared let printed
        as its own block (inside parentheses)."""
        lines: list[str] = []
        bound: list[Expr] = []
        self.open_blocks[key] = (lines, bound)
        self.block_stack.append(key)
        try:
            # A let shared with another use is printed once, as a temporary, not re-walked.
            while isinstance(expr, Let) and (
                expr is enter or (self._lookup(expr) is None and self.uses.get(expr, 0) <= 1)
            ):
                binder = self.bind_var(expr.var)
                value = self.expr(expr.value, inline_ok=True)
                lines.append(f"let {binder} = {value}{self.type_comment(expr.value)};")
                expr = expr.body
            result = self.expr(expr, inline_ok=True)
            lines.append(result + self.type_comment(expr))
        finally:
            self.block_stack.pop()
            del self.open_blocks[key]
            for node in bound:
                del self.names[node]
        return "\n".join(lines)

    def block(self, expr: Expr, key: _BlockKey) -> str:
        return "{\n" + _indent(self.scope(expr, key)) + "\n}"

    def type_comment(self, e: Expr) -> str:
        if not self.show_types or e._checked_type is None or isinstance(e, Var | GlobalVar | Op):
            return ""
        ty = e._checked_type
        if not _binds_type_vars(ty):
            return f" /* ty={self.type(ty)} */"
        # Names bound inside a comment must not shift the program's own names.
        saved = (dict(self.type_var_names), set(self.used), dict(self.next_suffix))
        try:
            return f" /* ty={self.type(ty)} */"
        finally:
            self.type_var_names, self.used, self.next_suffix = saved

    # -- expressions -----------------------------------------------------------------------------

    def expr(self, e: Expr, inline_ok: bool = False) -> str:
        """The text referring to ``e``: inline text, or a temporary bound in the current block."""
        hit = self._lookup(e)
        if hit is not None:
            return hit
        if isinstance(e, ATOMIC_EXPRS):
            return self.atom(e)
        if _is_inline(e):
            return self.render(e)
        # Print dataflow descendants bottom-up without recursion.
        stack: list[Expr] = [e]
        while stack:
            node = stack[-1]
            if node is not e and (_is_inline(node) or self._lookup(node) is not None):
                stack.pop()
                continue
            if isinstance(node, _DATAFLOW):
                pending = [
                    c
                    for c in self._print_order(node)
                    if not _is_inline(c) and self._lookup(c) is None
                ]
                if pending:
                    stack.extend(reversed(pending))
                    continue
            stack.pop()
            if node is not e:
                self._bind_temp(node, self.render(node))
        text = self.render(e)
        if inline_ok and self.uses.get(e, 0) <= 1:
            return text
        return self._bind_temp(e, text)

    def _bind_temp(self, e: Expr, text: str) -> str:
        name = f"%{self.temps}"
        self.temps += 1
        # Bind in the innermost block enclosing every use, so each use sees the name.
        key = self.home.get(e, self.block_stack[-1])
        lines, bound = self.open_blocks.get(key) or self.open_blocks[self.block_stack[-1]]
        lines.append(f"{name} = {text}{self.type_comment(e)};")
        bound.append(e)
        self.names[e] = name
        return name

    @staticmethod
    def _print_order(e: Expr) -> Iterable[Expr]:
        if isinstance(e, Call):
            return (*e.args, e.op)  # arguments are bound before the callee, as Relay did
        return children(e)

    def atom(self, e: Expr) -> str:
        if isinstance(e, Var):
            return self.var_name(e)
        if isinstance(e, GlobalVar):
            return f"@{e.name_hint}"
        if isinstance(e, Op):
            return e.name
        if isinstance(e, Constructor):
            return e.name_hint
        assert isinstance(e, Constant)
        literal = format_scalar(e.data)
        if literal is not None:
            return literal
        index = self.meta_index.get(e)
        if index is None:
            index = len(self.meta)
            self.meta.append(e)
            self.meta_index[e] = index
        return f"meta[relay.Constant][{index}]"

    def render(self, e: Expr) -> str:
        """The text of a non-atomic node (its children already printed or scoped)."""
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Tuple):
            fields = [self.expr(f) for f in e.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        if isinstance(e, TupleGetItem):
            tup = self.expr(e.tuple_value)
            if tup[0].isdigit() or tup[0] == "-":  # `1.0` would read as a float literal
                tup = f"({tup})"
            return f"{tup}.{e.index}"
        if isinstance(e, RefCreate):
            return f"ref({self.expr(e.value)})"
        if isinstance(e, RefRead):
            return f"ref_read({self.expr(e.ref)})"
        if isinstance(e, RefWrite):
            return f"ref_write({self.expr(e.ref)}, {self.expr(e.value)})"
        if isinstance(e, Function):
            return self.function(e, prefix="fn ")
        if isinstance(e, If):
            cond = self.expr(e.cond)
            then = self.block(e.true_branch, (e, "then"))
            return f"if ({cond}) {then} else {self.block(e.false_branch, (e, 'else'))}"
        if isinstance(e, Match):
            return self.match(e)
        if isinstance(e, Let):
            return "(\n" + _indent(self.scope(e, (e, "paren"), enter=e)) + "\n)"
        raise TypeError(f"cannot print {type(e).__name__}")

    def call(self, e: Call) -> str:
        args = [self.expr(a) for a in e.args]
        args.extend(self.attrs(e.attrs))
        if isinstance(e.op, Constructor) and not e.args and not e.attrs:
            return e.op.name_hint
        return f"{self.expr(e.op)}({', '.join(args)})"

    def attrs(self, attrs: Attrs) -> list[str]:
        return [f"{k}={format_attr_value(v)}" for k, v in attrs.items()]

    def function(self, f: Function, prefix: str) -> str:
        head = prefix
        if f.type_params:
            head += "[" + ", ".join(self.bind_type_var(tv) for tv in f.type_params) + "]"
        params = [self.bind_var(p) for p in f.params]
        params.extend(self.attrs(f.attrs))
        head += "(" + ", ".join(params) + ") "
        if f.ret_type is not None:
            head += f"-> {self.type(f.ret_type)} "
        return head + self.block(f.body, (f, "body"))

    def match(self, m: Match) -> str:
        data = self.expr(m.data)
        clauses = [self.clause(c, (m, i)) for i, c in enumerate(m.clauses)]
        keyword = "match" if m.complete else "match?"
        body = "".join("\n" + _indent(c) for c in clauses)
        return f"{keyword} ({data}) {{{body}\n}}"

    def clause(self, c: Clause, key: _BlockKey) -> str:
        lhs = self.pattern(c.lhs)
        rhs = self.scope(c.rhs, key)
        if "\n" in rhs:
            return f"{lhs} => {{\n{_indent(rhs)}\n}},"
        return f"{lhs} => {rhs},"

    def pattern(self, p: Pattern) -> str:
        if isinstance(p, PatternWildcard):
            return "_"
        if isinstance(p, PatternVar):
            return self.bind_var(p.var)
        if isinstance(p, PatternConstructor):
            if not p.patterns:
                return p.constructor.name_hint
            inner = ", ".join(self.pattern(s) for s in p.patterns)
            return f"{p.constructor.name_hint}({inner})"
        assert isinstance(p, PatternTuple)
        inner = ", ".join(self.pattern(s) for s in p.patterns)
        return "(" + inner + ("," if len(p.patterns) == 1 else "") + ")"

    # -- types -----------------------------------------------------------------------------------

    def dim(self, d: object) -> str:
        if isinstance(d, _AnyDim):
            return "?"
        if isinstance(d, TypeVar):
            return self.type_var_name(d)
        if isinstance(d, IncompleteType):
            return "_"
        if isinstance(d, SymbolicDim):
            return dim_str(d, self.dim_var_name)
        return str(d)

    def dim_var_name(self, v: TypeVar | IncompleteType) -> str:
        return self.type_var_name(v) if isinstance(v, TypeVar) else "_"

    def type(self, t: Type) -> str:
        if isinstance(t, TensorType):
            dtype = t.dtype if isinstance(t.dtype, str) else self.dim_var_name(t.dtype)
            if not t.shape and isinstance(t.dtype, str):
                return dtype
            dims = ", ".join(self.dim(d) for d in t.shape)
            return f"Tensor[({dims}{',' if len(t.shape) == 1 else ''}), {dtype}]"
        if isinstance(t, TupleType):
            fields = [self.type(f) for f in t.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        if isinstance(t, TypeVar):
            return self.type_var_name(t)
        if isinstance(t, GlobalTypeVar):
            return t.name_hint
        if isinstance(t, TypeCall):
            return f"{self.type(t.func)}[{', '.join(self.type_arg(a) for a in t.args)}]"
        if isinstance(t, FuncType):
            head = "fn "
            if t.type_params:
                head += "[" + ", ".join(self.bind_type_var(tv) for tv in t.type_params) + "]"
            args = ", ".join(self.type(a) for a in t.arg_types)
            return f"{head}({args}) -> {self.type(t.ret_type)}"
        if isinstance(t, RefType):
            return f"ref({self.type(t.value)})"
        if isinstance(t, IncompleteType):
            return "_"
        if isinstance(t, TypeRelation):
            return f"{t.name}({', '.join(self.type(a) for a in t.args)})"
        if isinstance(t, TypeData):
            return self.type_data(t)
        raise TypeError(f"cannot print type {type(t).__name__}")

    def type_arg(self, a: object) -> str:
        """A data type's argument: a type, or a dimension or dtype for a Shape or BaseType
        parameter (``V[4]``, ``V[n * 2]``, ``V[float32]``)."""
        if isinstance(a, Type):
            return self.type(a)
        if isinstance(a, str):
            return a
        return self.dim(a)

    def type_data(self, d: TypeData) -> str:
        head = d.header.name_hint
        if d.type_params:
            head += "[" + ", ".join(self.bind_type_var(tv) for tv in d.type_params) + "]"
        if d.is_extern:
            return f"extern type {head}"
        lines = []
        for c in d.constructors:
            if c.inputs:
                lines.append(f"{c.name_hint}({', '.join(self.type(t) for t in c.inputs)}),")
            else:
                lines.append(f"{c.name_hint},")
        body = "".join("\n  " + line for line in lines)
        return f"type {head} {{{body}\n}}"
