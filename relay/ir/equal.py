"""Structural (alpha-) equality and hashing of expressions, types and modules.

Two programs are structurally equal when they have the same shape and their
variables correspond: binders (function parameters, ``let`` variables,
pattern variables, type parameters) are paired when their binding sites are
compared, and every later use must respect the pairing, as in TVM's
``structural_equal``. Free variables are compared by identity, or, with
``map_free_vars=True``, paired one-to-one on first encounter. Globals,
type names and constructors compare by name, operators by name, constants
by dtype, shape and bytes. Spans and inferred types never matter.

The comparison runs on an explicit worklist of node pairs, so it handles
programs of any depth; a pair already compared is skipped, so shared
sub-expressions (a DAG in graph form) cost linear time.

The hash is consistent with that equality (equal implies same hash): it
hashes node kinds, names, constants and attributes, hashing every bound
variable alike and free variables by identity (or alike, under
``map_free_vars``). It is computed bottom-up with an explicit stack and
memoized per node.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from relay.ir.analysis import bound_vars
from relay.ir.attrs import Attrs
from relay.ir.expr import (
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
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
    _AnyDim,
)


@dataclass(frozen=True)
class Mismatch:
    """Where two objects first differ: a path such as ``main.body.args[1]`` and both sides."""

    path: str
    lhs: object
    rhs: object
    reason: str

    def __str__(self) -> str:
        return f"at {self.path}: {self.reason}"


# A path is a linked list (parent, label) built only when a mismatch is reported.
_Path = tuple["_Path | None", str] | None


def _render_path(path: _Path) -> str:
    labels: list[str] = []
    while path is not None:
        path, label = path
        labels.append(label)
    out = ""
    for label in reversed(labels):
        out += label if label.startswith("[") or not out else "." + label
    return out or "<root>"


class _NotEqual(Exception):
    def __init__(self, path: _Path, lhs: object, rhs: object, reason: str) -> None:
        super().__init__(reason)
        self.mismatch = Mismatch(_render_path(path), lhs, rhs, reason)


class _Comparer:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.vars: dict[object, object] = {}
        self.rvars: dict[object, object] = {}
        self.done: set[tuple[int, int]] = set()
        self.work: list[tuple[object, object, _Path]] = []
        self.keep: list[object] = []  # keeps compared nodes alive so ids are not reused

    # -- binders ---------------------------------------------------------------------------------

    def bind(self, x: object, y: object, path: _Path) -> None:
        """Pair two binders; they must not already be paired with something else."""
        if self.vars.get(x, y) is not y or self.rvars.get(y, x) is not x:
            raise _NotEqual(path, x, y, "binders are paired inconsistently")
        self.vars[x] = y
        self.rvars[y] = x

    def use(self, x: object, y: object, path: _Path, free_ok: bool = True) -> None:
        """Compare two uses of variables under the current pairing."""
        if x in self.vars or y in self.rvars:
            if self.vars.get(x) is not y:
                raise _NotEqual(path, x, y, "variables are bound at different places")
            return
        if self.map_free_vars and free_ok:
            self.bind(x, y, path)
            if isinstance(x, Var) and isinstance(y, Var):
                self.opt_type(x.type_annotation, y.type_annotation, (path, "type_annotation"))
            return
        if x is not y:
            raise _NotEqual(path, x, y, "different free variables")

    # -- types -----------------------------------------------------------------------------------

    def opt_type(self, a: Type | None, b: Type | None, path: _Path) -> None:
        if a is None or b is None:
            if a is not b:
                raise _NotEqual(path, a, b, "type annotation present on one side only")
            return
        self.type(a, b, path)

    def dim(self, a: object, b: object, path: _Path) -> None:
        if isinstance(a, TypeVar) and isinstance(b, TypeVar):
            self.type(a, b, path)
        elif isinstance(a, _AnyDim) or isinstance(b, _AnyDim):
            if a is not b:
                raise _NotEqual(path, a, b, "dimension differs")
        elif type(a) is not type(b) or a != b:
            raise _NotEqual(path, a, b, f"dimension {a} differs from {b}")

    def type(self, a: Type, b: Type, path: _Path) -> None:
        if a is b and not isinstance(a, TypeVar | IncompleteType):
            return
        if type(a) is not type(b):
            raise _NotEqual(path, a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, TypeVar) and isinstance(b, TypeVar):
            if a.kind is not b.kind:
                raise _NotEqual(path, a, b, "type variables of different kinds")
            self.use(a, b, path)
        elif isinstance(a, IncompleteType):
            self.use(a, b, path)
        elif isinstance(a, GlobalTypeVar) and isinstance(b, GlobalTypeVar):
            if a.name_hint != b.name_hint:
                raise _NotEqual(path, a, b, f"type {a.name_hint} vs {b.name_hint}")
        elif isinstance(a, TensorType) and isinstance(b, TensorType):
            if len(a.shape) != len(b.shape):
                raise _NotEqual(path, a, b, "tensor ranks differ")
            for i, (da, db) in enumerate(zip(a.shape, b.shape, strict=True)):
                self.dim(da, db, (path, f"shape[{i}]"))
            if isinstance(a.dtype, TypeVar) and isinstance(b.dtype, TypeVar):
                self.type(a.dtype, b.dtype, (path, "dtype"))
            elif a.dtype != b.dtype:
                raise _NotEqual((path, "dtype"), a, b, f"dtype {a.dtype} vs {b.dtype}")
        elif isinstance(a, TupleType) and isinstance(b, TupleType):
            self.type_seq(a.fields, b.fields, (path, "fields"))
        elif isinstance(a, TypeCall) and isinstance(b, TypeCall):
            self.type(a.func, b.func, (path, "func"))
            self.type_seq(a.args, b.args, (path, "args"))
        elif isinstance(a, RefType) and isinstance(b, RefType):
            self.type(a.value, b.value, (path, "value"))
        elif isinstance(a, FuncType) and isinstance(b, FuncType):
            # A function type's parameters scope over it alone: unbind them afterwards, so
            # the same variable may be reused (shadowed) by another binder.
            saved = [(v, self.vars.pop(v, None)) for v in a.type_params]
            rsaved = [(v, self.rvars.pop(v, None)) for v in b.type_params]
            self.type_params(a.type_params, b.type_params, (path, "type_params"))
            self.type_seq(a.arg_types, b.arg_types, (path, "arg_types"))
            self.type(a.ret_type, b.ret_type, (path, "ret_type"))
            self.type_seq(a.type_constraints, b.type_constraints, (path, "type_constraints"))
            for table, entries in ((self.vars, saved), (self.rvars, rsaved)):
                for v, old in entries:
                    table.pop(v, None)
                    if old is not None:
                        table[v] = old
        elif isinstance(a, TypeRelation) and isinstance(b, TypeRelation):
            if (a.name, a.num_inputs, a.attrs) != (b.name, b.num_inputs, b.attrs):
                raise _NotEqual(path, a, b, f"relation {a.name} vs {b.name}")
            self.type_seq(a.args, b.args, (path, "args"))
        elif isinstance(a, TypeData) and isinstance(b, TypeData):
            self.type_data(a, b, path)
        else:
            raise _NotEqual(path, a, b, f"cannot compare {type(a).__name__}")

    def type_seq(self, a: tuple[Type, ...], b: tuple[Type, ...], path: _Path) -> None:
        if len(a) != len(b):
            raise _NotEqual(path, a, b, f"{len(a)} vs {len(b)} types")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            self.type(x, y, (path, f"[{i}]"))

    def type_params(self, a: tuple[TypeVar, ...], b: tuple[TypeVar, ...], path: _Path) -> None:
        if len(a) != len(b):
            raise _NotEqual(path, a, b, f"{len(a)} vs {len(b)} type parameters")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x.kind is not y.kind:
                raise _NotEqual((path, f"[{i}]"), x, y, "type parameters of different kinds")
            self.bind(x, y, (path, f"[{i}]"))

    def type_data(self, a: TypeData, b: TypeData, path: _Path) -> None:
        self.type(a.header, b.header, (path, "header"))
        if a.is_extern != b.is_extern:
            raise _NotEqual(path, a, b, "extern on one side only")
        self.type_params(a.type_params, b.type_params, (path, "type_params"))
        if len(a.constructors) != len(b.constructors):
            raise _NotEqual(path, a, b, "different numbers of constructors")
        for i, (ca, cb) in enumerate(zip(a.constructors, b.constructors, strict=True)):
            cpath: _Path = (path, f"constructors[{i}]")
            self.constructor(ca, cb, cpath)
            self.type_seq(ca.inputs, cb.inputs, (cpath, "inputs"))

    def constructor(self, a: Constructor, b: Constructor, path: _Path) -> None:
        if a.name_hint != b.name_hint or a.tag != b.tag:
            raise _NotEqual(path, a, b, f"constructor {a.name_hint} vs {b.name_hint}")

    # -- patterns --------------------------------------------------------------------------------

    def pattern(self, a: Pattern, b: Pattern, path: _Path) -> None:
        stack: list[tuple[Pattern, Pattern, _Path]] = [(a, b, path)]
        while stack:
            pa, pb, p = stack.pop()
            if type(pa) is not type(pb):
                raise _NotEqual(p, pa, pb, f"{type(pa).__name__} vs {type(pb).__name__}")
            if isinstance(pa, PatternVar) and isinstance(pb, PatternVar):
                self.bind(pa.var, pb.var, p)
                self.opt_type(pa.var.type_annotation, pb.var.type_annotation, (p, "var"))
            elif isinstance(pa, PatternConstructor) and isinstance(pb, PatternConstructor):
                self.constructor(pa.constructor, pb.constructor, (p, "constructor"))
                self._sub_patterns(pa.patterns, pb.patterns, p, stack)
            elif isinstance(pa, PatternTuple) and isinstance(pb, PatternTuple):
                self._sub_patterns(pa.patterns, pb.patterns, p, stack)
            else:
                assert isinstance(pa, PatternWildcard)

    @staticmethod
    def _sub_patterns(
        a: tuple[Pattern, ...],
        b: tuple[Pattern, ...],
        path: _Path,
        stack: list[tuple[Pattern, Pattern, _Path]],
    ) -> None:
        if len(a) != len(b):
            raise _NotEqual(path, a, b, f"{len(a)} vs {len(b)} sub-patterns")
        for i in reversed(range(len(a))):
            stack.append((a[i], b[i], (path, f"patterns[{i}]")))

    # -- expressions -----------------------------------------------------------------------------

    def push(self, a: Expr, b: Expr, path: _Path) -> None:
        self.work.append((a, b, path))

    def push_seq(self, a: tuple[Expr, ...], b: tuple[Expr, ...], path: _Path, name: str) -> None:
        if len(a) != len(b):
            raise _NotEqual((path, name), a, b, f"{len(a)} vs {len(b)} {name}")
        for i in reversed(range(len(a))):
            self.push(a[i], b[i], (path, f"{name}[{i}]"))

    def attrs(self, a: Attrs, b: Attrs, path: _Path) -> None:
        if a != b:
            raise _NotEqual((path, "attrs"), a, b, f"attributes {dict(a)} vs {dict(b)}")

    def expr(self, a: Expr, b: Expr, path: _Path) -> None:
        self.push(a, b, path)
        while self.work:
            x, y, p = self.work.pop()
            key = (id(x), id(y))
            if key in self.done:
                continue
            self.done.add(key)
            self.keep.append((x, y))
            self.step(x, y, p)

    def step(self, x: object, y: object, p: _Path) -> None:
        if type(x) is not type(y):
            raise _NotEqual(p, x, y, f"{type(x).__name__} vs {type(y).__name__}")
        if isinstance(x, Var) and isinstance(y, Var):
            self.use(x, y, p)
        elif isinstance(x, GlobalVar) and isinstance(y, GlobalVar):
            if x.name_hint != y.name_hint:
                raise _NotEqual(p, x, y, f"@{x.name_hint} vs @{y.name_hint}")
        elif isinstance(x, Op) and isinstance(y, Op):
            if x.name != y.name:
                raise _NotEqual(p, x, y, f"operator {x.name} vs {y.name}")
        elif isinstance(x, Constructor) and isinstance(y, Constructor):
            self.constructor(x, y, p)
        elif isinstance(x, Constant) and isinstance(y, Constant):
            if not constants_equal(x.data, y.data):
                raise _NotEqual((p, "data"), x, y, "constants differ")
        elif isinstance(x, Tuple) and isinstance(y, Tuple):
            self.push_seq(x.fields, y.fields, p, "fields")
        elif isinstance(x, TupleGetItem) and isinstance(y, TupleGetItem):
            if x.index != y.index:
                raise _NotEqual((p, "index"), x, y, f"index {x.index} vs {y.index}")
            self.push(x.tuple_value, y.tuple_value, (p, "tuple_value"))
        elif isinstance(x, Function) and isinstance(y, Function):
            self.type_params(x.type_params, y.type_params, (p, "type_params"))
            if len(x.params) != len(y.params):
                raise _NotEqual((p, "params"), x, y, f"{len(x.params)} vs {len(y.params)} params")
            for i, (va, vb) in enumerate(zip(x.params, y.params, strict=True)):
                self.bind(va, vb, (p, f"params[{i}]"))
                self.opt_type(va.type_annotation, vb.type_annotation, (p, f"params[{i}]"))
            self.opt_type(x.ret_type, y.ret_type, (p, "ret_type"))
            self.attrs(x.attrs, y.attrs, p)
            self.push(x.body, y.body, (p, "body"))
        elif isinstance(x, Call) and isinstance(y, Call):
            self.attrs(x.attrs, y.attrs, p)
            self.type_seq(x.type_args, y.type_args, (p, "type_args"))
            self.push_seq(x.args, y.args, p, "args")
            self.push(x.op, y.op, (p, "op"))
        elif isinstance(x, Let) and isinstance(y, Let):
            self.bind(x.var, y.var, (p, "var"))
            self.opt_type(x.var.type_annotation, y.var.type_annotation, (p, "var"))
            self.push(x.body, y.body, (p, "body"))
            self.push(x.value, y.value, (p, "value"))
        elif isinstance(x, If) and isinstance(y, If):
            self.push(x.false_branch, y.false_branch, (p, "false_branch"))
            self.push(x.true_branch, y.true_branch, (p, "true_branch"))
            self.push(x.cond, y.cond, (p, "cond"))
        elif isinstance(x, Match) and isinstance(y, Match):
            if x.complete != y.complete:
                raise _NotEqual(p, x, y, "match vs match?")
            if len(x.clauses) != len(y.clauses):
                raise _NotEqual(p, x, y, f"{len(x.clauses)} vs {len(y.clauses)} clauses")
            for i in reversed(range(len(x.clauses))):
                ca, cb = x.clauses[i], y.clauses[i]
                self.pattern(ca.lhs, cb.lhs, (p, f"clauses[{i}].lhs"))
                self.push(ca.rhs, cb.rhs, (p, f"clauses[{i}].rhs"))
            self.push(x.data, y.data, (p, "data"))
        elif isinstance(x, RefCreate) and isinstance(y, RefCreate):
            self.push(x.value, y.value, (p, "value"))
        elif isinstance(x, RefRead) and isinstance(y, RefRead):
            self.push(x.ref, y.ref, (p, "ref"))
        elif isinstance(x, RefWrite) and isinstance(y, RefWrite):
            self.push(x.value, y.value, (p, "value"))
            self.push(x.ref, y.ref, (p, "ref"))
        else:
            raise _NotEqual(p, x, y, f"cannot compare {type(x).__name__}")

    # -- modules ---------------------------------------------------------------------------------

    def module(self, a: Module, b: Module) -> None:
        names_a = sorted(t.name_hint for t in a.type_definitions)
        names_b = sorted(t.name_hint for t in b.type_definitions)
        if names_a != names_b:
            raise _NotEqual(None, names_a, names_b, f"types {names_a} vs {names_b}")
        for name in names_a:
            self.type_data(a.get_type(name), b.get_type(name), (None, name))
        funcs_a = sorted(g.name_hint for g in a.functions)
        funcs_b = sorted(g.name_hint for g in b.functions)
        if funcs_a != funcs_b:
            raise _NotEqual(None, funcs_a, funcs_b, f"globals {funcs_a} vs {funcs_b}")
        for name in funcs_a:
            self.expr(a.function(name), b.function(name), (None, name))

    def compare(self, a: object, b: object) -> None:
        if isinstance(a, Module) and isinstance(b, Module):
            self.module(a, b)
        elif isinstance(a, Expr) and isinstance(b, Expr):
            self.expr(a, b, None)
        elif isinstance(a, Type) and isinstance(b, Type):
            self.type(a, b, None)
        elif isinstance(a, Pattern) and isinstance(b, Pattern):
            self.pattern(a, b, None)
        elif isinstance(a, Clause) and isinstance(b, Clause):
            self.pattern(a.lhs, b.lhs, (None, "lhs"))
            self.expr(a.rhs, b.rhs, (None, "rhs"))
        elif isinstance(a, Attrs) and isinstance(b, Attrs):
            self.attrs(a, b, None)
        else:
            raise _NotEqual(
                None, a, b, f"cannot compare {type(a).__name__} with {type(b).__name__}"
            )


def constants_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes (so NaNs with the same bits are equal and -0.0 != 0.0)."""
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    )


def first_mismatch(a: object, b: object, map_free_vars: bool = False) -> Mismatch | None:
    """The first place where ``a`` and ``b`` differ structurally, or None if they are equal."""
    try:
        _Comparer(map_free_vars).compare(a, b)
    except _NotEqual as e:
        return e.mismatch
    return None


def structural_equal(a: object, b: object, map_free_vars: bool = False) -> bool:
    """Alpha-equivalence of expressions, types, patterns, attributes or modules."""
    return first_mismatch(a, b, map_free_vars) is None


def _show(obj: object) -> str:
    if isinstance(obj, Expr | Type | Module | Pattern):
        from relay.ir.printer import astext

        try:
            return astext(obj)
        except (TypeError, ValueError):
            return repr(obj)
    return repr(obj)


def assert_structural_equal(a: object, b: object, map_free_vars: bool = False) -> None:
    """Raise ``AssertionError`` naming the first mismatch (path, reason, both sides)."""
    mismatch = first_mismatch(a, b, map_free_vars)
    if mismatch is not None:
        raise AssertionError(
            f"not structurally equal {mismatch}\n"
            f"--- lhs at {mismatch.path}:\n{_show(mismatch.lhs)}\n"
            f"--- rhs at {mismatch.path}:\n{_show(mismatch.rhs)}"
        )


# -- hashing ---------------------------------------------------------------------------------------

_BOUND = hash("relay.bound-var")
_FREE = hash("relay.free-var")


class _Hasher:
    def __init__(self, map_free_vars: bool, bound: set[Var]) -> None:
        self.map_free_vars = map_free_vars
        self.bound = bound
        self.memo: dict[int, int] = {}
        self.keep: list[object] = []

    def type(self, t: Type | None) -> int:
        if t is None:
            return 0
        if isinstance(t, TypeVar):
            return hash(("tv", t.kind))
        if isinstance(t, IncompleteType):
            return hash(("incomplete", t.kind))
        if isinstance(t, GlobalTypeVar):
            return hash(("gtv", t.name_hint))
        if isinstance(t, TensorType):
            dims = tuple(
                ("tv", d.kind)
                if isinstance(d, TypeVar)
                else ("any",)
                if isinstance(d, _AnyDim)
                else d
                for d in t.shape
            )
            dtype = t.dtype if isinstance(t.dtype, str) else ("tv", t.dtype.kind)
            return hash(("tensor", dims, dtype))
        if isinstance(t, TupleType):
            return hash(("tuple", *map(self.type, t.fields)))
        if isinstance(t, TypeCall):
            return hash(("call", self.type(t.func), *map(self.type, t.args)))
        if isinstance(t, RefType):
            return hash(("ref", self.type(t.value)))
        if isinstance(t, FuncType):
            return hash(
                ("fn", len(t.type_params), self.type(t.ret_type), *map(self.type, t.arg_types))
            )
        if isinstance(t, TypeRelation):
            return hash(("rel", t.name, t.num_inputs, *map(self.type, t.args)))
        if isinstance(t, TypeData):
            return hash(
                (
                    "data",
                    t.header.name_hint,
                    len(t.type_params),
                    tuple((c.name_hint, c.tag, *map(self.type, c.inputs)) for c in t.constructors),
                )
            )
        return hash(type(t).__name__)

    def pattern(self, p: Pattern) -> int:
        if isinstance(p, PatternVar):
            return hash(("pvar", self.type(p.var.type_annotation)))
        if isinstance(p, PatternConstructor):
            return hash(("pcons", p.constructor.name_hint, *map(self.pattern, p.patterns)))
        if isinstance(p, PatternTuple):
            return hash(("ptuple", *map(self.pattern, p.patterns)))
        return hash("pwild")

    def leaf(self, e: Expr) -> int:
        if isinstance(e, Var):
            if e in self.bound or self.map_free_vars:
                return hash((_BOUND, self.type(e.type_annotation)))
            return hash((_FREE, id(e)))
        if isinstance(e, GlobalVar):
            return hash(("global", e.name_hint))
        if isinstance(e, Op):
            return hash(("op", e.name))
        if isinstance(e, Constructor):
            return hash(("cons", e.name_hint, e.tag))
        assert isinstance(e, Constant)
        data = np.ascontiguousarray(e.data)
        return hash(("const", str(data.dtype), data.shape, data.tobytes()))

    def node(self, e: Expr, kids: list[int]) -> int:
        if isinstance(e, Function):
            params = tuple(self.type(p.type_annotation) for p in e.params)
            return hash(
                ("fn", len(e.type_params), params, self.type(e.ret_type), hash(e.attrs), *kids)
            )
        if isinstance(e, Call):
            type_args = tuple(map(self.type, e.type_args))
            return hash(("call", hash(e.attrs), type_args, *kids))
        if isinstance(e, TupleGetItem):
            return hash(("proj", e.index, *kids))
        if isinstance(e, Let):
            return hash(("let", self.type(e.var.type_annotation), *kids))
        if isinstance(e, Match):
            pats = tuple(self.pattern(c.lhs) for c in e.clauses)
            return hash(("match", e.complete, pats, *kids))
        return hash((type(e).__name__, *kids))

    def expr(self, root: Expr) -> int:
        memo = self.memo
        stack: list[Expr] = [root]
        while stack:
            e = stack[-1]
            if id(e) in memo:
                stack.pop()
                continue
            kids = children(e)
            if not kids:
                stack.pop()
                memo[id(e)] = (
                    self.leaf(e)
                    if not isinstance(e, Tuple | Function | Call)
                    else (self.node(e, []))
                )
                self.keep.append(e)
                continue
            pending = [k for k in kids if id(k) not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            memo[id(e)] = self.node(e, [memo[id(k)] for k in kids])
            self.keep.append(e)
        return memo[id(root)]


def _hash_iter(obj: object, map_free_vars: bool) -> Iterator[int]:
    if isinstance(obj, Module):
        for name in sorted(t.name_hint for t in obj.type_definitions):
            yield _Hasher(map_free_vars, set()).type(obj.get_type(name))
        for name in sorted(g.name_hint for g in obj.functions):
            func = obj.function(name)
            yield hash(name)
            yield _Hasher(map_free_vars, set(bound_vars(func))).expr(func)
    elif isinstance(obj, Expr):
        yield _Hasher(map_free_vars, set(bound_vars(obj))).expr(obj)
    elif isinstance(obj, Type):
        yield _Hasher(map_free_vars, set()).type(obj)
    elif isinstance(obj, Pattern):
        yield _Hasher(map_free_vars, set()).pattern(obj)
    elif isinstance(obj, Attrs):
        yield hash(obj)
    else:
        raise TypeError(f"cannot hash {type(obj).__name__} structurally")


def structural_hash(obj: object, map_free_vars: bool = False) -> int:
    """A hash of ``obj`` consistent with :func:`structural_equal` (equal => same hash)."""
    return hash(("relay", type(obj).__name__, *_hash_iter(obj, map_free_vars)))
