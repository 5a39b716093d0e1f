"""Structural equality (alpha-equivalence) and structural hashing of Relay IR.

Equality
--------
Two objects are structurally equal when they have the same shape and their
variables correspond one-to-one, in the sense of alpha-equivalence (de Bruijn,
"Lambda calculus notation with nameless dummies", 1972; the same contract as
TVM's ``StructuralEqual``). The comparison keeps a bijection between the
variables of the two sides:

* comparing two binding sites (function parameters, ``let`` binders, pattern
  variables, the type parameters of a ``Function`` or a ``TypeData``) pairs
  the two binders and compares their type annotations;
* a use of a variable must agree with the pairing made at its binder;
* an unpaired variable is free: both sides must be the same object, or, with
  ``map_free_vars=True``, the two are paired on first encounter, one-to-one
  (so ``%x + %y`` never equals ``%x + %x``). Free type variables and
  incomplete types (``_``) are treated the same way;
* the type parameters of a ``FuncType`` scope over that type only, so they are
  compared by position through a stack of frames (a de Bruijn index: frame
  depth and position in the frame).

Tensor dimensions compare by value (ints, ``?``), as type variables (shape
variables) or as incomplete types (``_``); a computed dimension
(:class:`~relay.ir.dim.DimExpr`, e.g. ``n * 2 + m``, with ``//`` and ``%``
atoms inside) compares as a polynomial, term by term in any order, with its
variables under the same pairing, so ``def @f[n: Shape](%x: Tensor[(n * 2,),
float32])`` equals the same with ``m``. With ``map_free_vars`` a computed
dimension whose free variables are not yet paired is compared at the end, once
other occurrences have paired them; the rest are paired by a search for a
correspondence that makes the polynomials equal (the most constrained first).

Globals, global type names and constructors compare by name (constructors also
by tag and data type), operators by name, constants by dtype, shape and bytes
(so NaNs with equal bits are equal and ``0.0`` differs from ``-0.0``),
attributes with ``Attrs.__eq__``. Spans and inferred types never matter. In a
module every definition is its own scope; definitions are matched by name.

The expression walk is a worklist of node pairs, so depth costs no Python stack
(types and patterns are walked with their own explicit stacks too). Pairings
are global and never undone, so comparing a pair a second time would give the
same answer: a pair already compared is skipped, which makes sharing (a DAG)
cost linear time, and a DAG equals the tree it unfolds to. Because a variable
is paired once for the whole comparison, a shared node that binds variables
(the same ``Function`` object used twice) corresponds to one binder on the
other side: it equals a tree that repeats the same variables, but not two
copies with fresh ones (Relay's well-formedness binds each variable once). Each
work item carries its path as a linked list of labels, rendered only for a
mismatch.

Hashing
-------
:func:`structural_hash` folds the object bottom-up in one iterative
depth-first walk, memoized per node identity (each distinct node is hashed
once). Variables are numbered in the order of the walk: binders when their
binding node is entered, other variables when first reached; every variable
hashes by its number and annotation (a bound one thus by a de Bruijn level
counted in binding order). The comparison pairs variables one-to-one and both
sides' walks meet corresponding nodes in the same order (a shared node is
walked once, but all its variables were numbered at its first visit), so
paired variables get equal numbers and equal objects equal hashes. A computed
dimension hashes as an unordered polynomial whose variables hash by their
number (unnumbered ones, as the comparison pairs them late, by kind only, or
by identity without ``map_free_vars``); it numbers nothing itself. Without
``map_free_vars`` the identities of the free variables (those never bound), in
number order, are mixed into the final hash. ``FuncType`` parameters hash by
frame depth and position, as they compare. Hashes build on Python's ``hash``,
so like it they differ between processes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any as TypingAny, TypeAlias, cast

import numpy as np

from relay.ir.attrs import Attrs
from relay.ir.dim import DimExpr, DimVar, FloorDiv, FloorMod, dim_vars
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
    pattern_vars,
)
from relay.ir.module import Module
from relay.ir.types import (
    Dim,
    DType,
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

__all__ = [
    "Mismatch",
    "assert_structural_equal",
    "constants_equal",
    "first_mismatch",
    "structural_equal",
    "structural_hash",
]

# A path is a linked list ``(parent, name, index)``; ``index`` is -1 for a plain field.
_Path: TypeAlias = "tuple[_Path, str, int] | None"
# The type parameters of the enclosing FuncTypes, innermost last: when hashing one side, and
# when comparing, the two sides' parameters side by side.
_Scopes: TypeAlias = tuple[tuple[TypeVar, ...], ...]
_PairScopes: TypeAlias = tuple[tuple[tuple[TypeVar, ...], tuple[TypeVar, ...]], ...]


def _render_path(path: _Path) -> str:
    labels: list[tuple[str, int]] = []
    while path is not None:
        path, name, index = path
        labels.append((name, index))
    parts: list[str] = []
    for name, index in reversed(labels):
        label = name if index < 0 else f"{name}[{index}]"
        parts.append("." + label if parts and name else label)
    return "".join(parts) or "<root>"


@dataclass(frozen=True)
class Mismatch:
    """Where two objects first differ.

    ``path`` leads from the compared objects to the differing parts, e.g.
    ``main.body.args[1].value.data`` (for a module it starts with the name of
    the definition); ``lhs`` and ``rhs`` are those parts and ``reason`` says
    how they differ.
    """

    path: str
    lhs: object
    rhs: object
    reason: str

    def __str__(self) -> str:
        return f"at {self.path}: {self.reason}"


class _NotEqual(Exception):
    def __init__(self, path: _Path, lhs: object, rhs: object, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.lhs = lhs
        self.rhs = rhs
        self.reason = reason

    def mismatch(self) -> Mismatch:
        return Mismatch(_render_path(self.path), self.lhs, self.rhs, self.reason)


def _byte_view(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def constants_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, same shape and the same bytes.

    Comparing bytes rather than values makes NaNs with the same bit pattern
    equal and ``0.0`` differ from ``-0.0``, as a constant's identity should.
    """
    if a is b:
        return True
    da, db = a.dtype, b.dtype
    if (da is not db and da != db) or a.shape != b.shape:
        return False
    if a.nbytes <= 256:
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(_byte_view(a), _byte_view(b)))


def _constant_difference(a: np.ndarray, b: np.ndarray) -> str:
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    return "values differ"


_VarKey: TypeAlias = Callable[[DimVar], Hashable]


def _poly_key(p: DimExpr, var_key: _VarKey) -> Hashable:
    """``p`` as a value independent of the order of its terms and of their atoms.

    Each variable is replaced by ``var_key(v)``; ``//`` and ``%`` atoms by the
    keys of their operands. Two polynomials in canonical form are equal under a
    correspondence of variables exactly when their keys are equal with keys
    that follow it.
    """
    terms: dict[Hashable, int] = {}
    for mono, coeff in p.terms:
        atoms: dict[Hashable, int] = {}
        for atom in mono:
            k = _atom_key(atom, var_key)
            atoms[k] = atoms.get(k, 0) + 1
        term = (frozenset(atoms.items()), coeff)
        terms[term] = terms.get(term, 0) + 1
    return (frozenset(terms.items()), p.const)


def _atom_key(a: DimVar | FloorDiv | FloorMod, var_key: _VarKey) -> Hashable:
    if isinstance(a, FloorDiv):
        return ("//", _poly_key(a.num, var_key), _poly_key(a.den, var_key))
    if isinstance(a, FloorMod):
        return ("%", _poly_key(a.num, var_key), _poly_key(a.den, var_key))
    return var_key(a)


def _same_sort(x: DimVar, y: DimVar) -> bool:
    """Whether two dimension variables may be paired: same class (type variable or unknown), kind."""
    return type(x) is type(y) and x.kind is y.kind


_TypeWork: TypeAlias = tuple[Type, Type, _Path, _PairScopes]
# A computed dimension whose comparison waits for its free variables to be paired elsewhere.
_DimWork: TypeAlias = tuple[DimExpr, DimExpr, _Path, _PairScopes]
_PatternWork: TypeAlias = tuple[Pattern, Pattern, _Path]


class _Comparer:
    """One comparison: the pairing of variables and the pairs already compared."""

    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.fwd: dict[object, object] = {}  # lhs variable -> its rhs partner
        self.bwd: dict[object, object] = {}  # rhs variable -> its lhs partner
        self.done: set[tuple[object, object]] = set()
        self.deferred: list[_DimWork] = []
        # Expression and clause pairs still to compare (typed loosely: the steps narrow them).
        self.work: list[tuple[TypingAny, TypingAny, _Path]] = []
        # Var, Op and Constant are compared inline in expr(), without memoizing the pair.
        self.steps: dict[type, Callable[[TypingAny, TypingAny, _Path], None]] = {
            GlobalVar: self.global_var,
            Constructor: self.constructor,
            Tuple: self.tuple,
            TupleGetItem: self.tuple_get_item,
            Function: self.function,
            Call: self.call,
            Let: self.let,
            If: self.if_,
            Match: self.match,
            Clause: self.clause,
            RefCreate: self.ref_create,
            RefRead: self.ref_read,
            RefWrite: self.ref_write,
        }

    # -- variables -------------------------------------------------------------------------------

    def bind(self, x: object, y: object, path: _Path) -> None:
        """Pair two binders; neither may already be paired with something else."""
        fx = self.fwd.get(x)
        by = self.bwd.get(y)
        if fx is None and by is None:
            self.fwd[x] = y
            self.bwd[y] = x
        elif fx is not y or by is not x:
            raise _NotEqual(path, x, y, "binder is already paired with another variable")

    def use(self, x: object, y: object, path: _Path) -> None:
        """Compare two occurrences of (term or type) variables under the current pairing."""
        fx = self.fwd.get(x)
        if fx is y:
            return
        if fx is not None or y in self.bwd:
            raise _NotEqual(path, x, y, "variables are bound at different places")
        if self.map_free_vars:
            self.fwd[x] = y
            self.bwd[y] = x
            if isinstance(x, Var) and isinstance(y, Var):
                self.opt_type(x.type_annotation, y.type_annotation, (path, "type_annotation", -1))
        elif x is not y:
            raise _NotEqual(path, x, y, "different free variables")

    def binder(self, x: Var, y: Var, path: _Path) -> None:
        self.bind(x, y, path)
        self.opt_type(x.type_annotation, y.type_annotation, (path, "type_annotation", -1))

    def type_params(self, a: Sequence[TypeVar], b: Sequence[TypeVar], path: _Path) -> None:
        if len(a) != len(b):
            raise _NotEqual(path, a, b, f"{len(a)} vs {len(b)} type parameters")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x.kind is not y.kind:
                raise _NotEqual((path, "", i), x, y, "type parameters of different kinds")
            self.bind(x, y, (path, "", i))

    # -- types -----------------------------------------------------------------------------------

    def opt_type(self, a: Type | None, b: Type | None, path: _Path) -> None:
        if a is None or b is None:
            if a is not b:
                raise _NotEqual(path, a, b, "type annotation on one side only")
        else:
            self.type(a, b, path)

    def type(self, a: Type, b: Type, path: _Path) -> None:
        stack: list[_TypeWork] = [(a, b, path, ())]
        while stack:
            self.type_step(*stack.pop(), stack)

    def type_step(
        self, a: Type, b: Type, p: _Path, sc: _PairScopes, stack: list[_TypeWork]
    ) -> None:
        if type(a) is not type(b):
            raise _NotEqual(p, a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, TensorType) and isinstance(b, TensorType):
            if len(a.shape) != len(b.shape):
                raise _NotEqual((p, "shape", -1), a, b, f"rank {len(a.shape)} vs {len(b.shape)}")
            for i, (da, db) in enumerate(zip(a.shape, b.shape, strict=True)):
                if type(da) is not int or da != db:
                    self.dim(da, db, (p, "shape", i), sc)
            self.dtype(a, b, a.dtype, b.dtype, (p, "dtype", -1), sc)
        elif isinstance(a, TypeVar) and isinstance(b, TypeVar):
            self.type_var(a, b, p, sc)
        elif isinstance(a, IncompleteType) and isinstance(b, IncompleteType):
            self.incomplete(a, b, p)
        elif isinstance(a, GlobalTypeVar) and isinstance(b, GlobalTypeVar):
            if a.name_hint != b.name_hint:
                raise _NotEqual(p, a, b, f"type {a.name_hint} vs {b.name_hint}")
        elif isinstance(a, TupleType) and isinstance(b, TupleType):
            self.push_types(a.fields, b.fields, p, "fields", sc, stack)
        elif isinstance(a, TypeCall) and isinstance(b, TypeCall):
            self.type_call_args(a, b, p, sc, stack)
            stack.append((a.func, b.func, (p, "func", -1), sc))
        elif isinstance(a, RefType) and isinstance(b, RefType):
            stack.append((a.value, b.value, (p, "value", -1), sc))
        elif isinstance(a, FuncType) and isinstance(b, FuncType):
            tpath: _Path = (p, "type_params", -1)
            if len(a.type_params) != len(b.type_params):
                n, m = len(a.type_params), len(b.type_params)
                raise _NotEqual(tpath, a, b, f"{n} vs {m} type parameters")
            for i, (x, y) in enumerate(zip(a.type_params, b.type_params, strict=True)):
                if x.kind is not y.kind:
                    raise _NotEqual(
                        (p, "type_params", i), x, y, "type parameters of different kinds"
                    )
            inner = (*sc, (a.type_params, b.type_params))
            self.push_types(
                a.type_constraints, b.type_constraints, p, "type_constraints", inner, stack
            )
            stack.append((a.ret_type, b.ret_type, (p, "ret_type", -1), inner))
            self.push_types(a.arg_types, b.arg_types, p, "arg_types", inner, stack)
        elif isinstance(a, TypeRelation) and isinstance(b, TypeRelation):
            if (a.name, a.num_inputs) != (b.name, b.num_inputs):
                raise _NotEqual(p, a, b, f"relation {a.name} vs {b.name}")
            if a.attrs != b.attrs:
                raise _NotEqual((p, "attrs", -1), a.attrs, b.attrs, "relation attributes differ")
            self.push_types(a.args, b.args, p, "args", sc, stack)
        elif isinstance(a, TypeData) and isinstance(b, TypeData):
            self.type_data(a, b, p)
        else:
            raise _NotEqual(p, a, b, f"cannot compare {type(a).__name__}")

    @staticmethod
    def push_types(
        a: Sequence[Type],
        b: Sequence[Type],
        path: _Path,
        name: str,
        scopes: _PairScopes,
        stack: list[_TypeWork],
    ) -> None:
        if len(a) != len(b):
            raise _NotEqual((path, name, -1), a, b, f"{len(a)} vs {len(b)} {name}")
        for i in reversed(range(len(a))):
            stack.append((a[i], b[i], (path, name, i), scopes))

    def type_call_args(
        self, a: TypeCall, b: TypeCall, p: _Path, sc: _PairScopes, stack: list[_TypeWork]
    ) -> None:
        """A data type's arguments: types, or dimensions (``V[4]``) and dtypes (``W[float32]``)."""
        if len(a.args) != len(b.args):
            raise _NotEqual((p, "args", -1), a, b, f"{len(a.args)} vs {len(b.args)} args")
        for i in reversed(range(len(a.args))):
            # the field is typed as types, but holds dimensions and dtypes too
            x: object = a.args[i]
            y: object = b.args[i]
            path: _Path = (p, "args", i)
            if isinstance(x, Type) and isinstance(y, Type):
                stack.append((x, y, path, sc))
            elif isinstance(x, str) or isinstance(y, str):
                if x != y:
                    raise _NotEqual(path, a, b, f"argument {x} vs {y}")
            else:
                self.dim(cast(Dim, x), cast(Dim, y), path, sc)

    def type_var(self, a: TypeVar, b: TypeVar, path: _Path, scopes: _PairScopes) -> None:
        if a.kind is not b.kind:
            raise _NotEqual(path, a, b, f"type variables of kinds {a.kind.value}, {b.kind.value}")
        # The innermost FuncType binding either variable must bind both, at the same position.
        for frame_a, frame_b in reversed(scopes):
            in_a, in_b = a in frame_a, b in frame_b
            if in_a or in_b:
                if in_a and in_b and frame_a.index(a) == frame_b.index(b):
                    return
                raise _NotEqual(path, a, b, "type variables bound at different places")
        self.use(a, b, path)

    def incomplete(self, a: IncompleteType, b: IncompleteType, path: _Path) -> None:
        if a.kind is not b.kind:
            raise _NotEqual(path, a, b, "incomplete types of different kinds")
        self.use(a, b, path)

    def dtype(
        self, ta: TensorType, tb: TensorType, a: DType, b: DType, path: _Path, sc: _PairScopes
    ) -> None:
        if isinstance(a, TypeVar) and isinstance(b, TypeVar):
            self.type_var(a, b, path, sc)
        elif isinstance(a, IncompleteType) and isinstance(b, IncompleteType):
            self.incomplete(a, b, path)
        elif not (isinstance(a, str) and isinstance(b, str) and a == b):
            raise _NotEqual(path, ta, tb, f"dtype {a} vs {b}")

    # -- dimensions ------------------------------------------------------------------------------

    def dim(self, a: Dim, b: Dim, path: _Path, scopes: _PairScopes) -> None:
        if isinstance(a, TypeVar) and isinstance(b, TypeVar):
            self.type_var(a, b, path, scopes)
        elif isinstance(a, IncompleteType) and isinstance(b, IncompleteType):
            self.incomplete(a, b, path)
        elif isinstance(a, DimExpr) and isinstance(b, DimExpr):
            if self.map_free_vars and (self.unpaired(a, scopes, 0) or self.unpaired(b, scopes, 1)):
                self.deferred.append((a, b, path, scopes))
            elif self.dim_key(a, scopes, 0) != self.dim_key(b, scopes, 1):
                raise _NotEqual(path, a, b, f"dimension {a} vs {b}")
        elif type(a) is not type(b) or a != b:  # ints, and `?` (a singleton)
            raise _NotEqual(path, a, b, f"dimension {a} vs {b}")

    def var_key(
        self, v: DimVar, scopes: _PairScopes, side: int, tentative: dict[DimVar, DimVar]
    ) -> Hashable:
        """How a variable of side 0 (lhs) or 1 (rhs) of a computed dimension compares.

        Parameters of an enclosing ``FuncType`` by position; other variables by
        the identity of their rhs partner (``tentative`` pairs tried before
        they are made), an rhs variable by its own; an unpaired lhs variable
        matches only itself, and only where it is not paired on the rhs.
        """
        if isinstance(v, TypeVar):
            for depth, frames in enumerate(reversed(scopes)):
                frame = frames[side]
                if v in frame:
                    return ("scoped", depth, frame.index(v))
        if side == 1:
            return ("var", id(v))
        partner: object = tentative.get(v)
        if partner is None:
            partner = self.fwd.get(v)
        if partner is not None:
            return ("var", id(partner))
        if self.map_free_vars or v in self.bwd:
            return ("unpaired", id(v))
        return ("var", id(v))

    def dim_key(
        self,
        d: DimExpr,
        scopes: _PairScopes,
        side: int,
        tentative: dict[DimVar, DimVar] | None = None,
    ) -> Hashable:
        pairs = tentative or {}
        return _poly_key(d, lambda v: self.var_key(v, scopes, side, pairs))

    def unpaired(self, d: DimExpr, scopes: _PairScopes, side: int) -> list[DimVar]:
        """The variables of ``d`` (on ``side``) that are neither scoped nor paired yet."""
        paired = self.fwd if side == 0 else self.bwd
        out = []
        for v in dim_vars(d):
            if v in paired:
                continue
            if isinstance(v, TypeVar) and any(v in frames[side] for frames in scopes):
                continue
            out.append(v)
        return out

    def pairings(
        self, a: DimExpr, b: DimExpr, scopes: _PairScopes
    ) -> Iterator[dict[DimVar, DimVar]]:
        """Each one-to-one pairing of the unpaired variables of ``a`` and ``b`` making them equal.

        A variable can only pair with one of the same sort and the same
        signature: the polynomial seen from it (itself marked, the other
        unpaired variables anonymous), which prunes nearly every candidate.
        """
        ua, ub = self.unpaired(a, scopes, 0), self.unpaired(b, scopes, 1)
        if len(ua) != len(ub):
            return
        target = self.dim_key(b, scopes, 1)

        def signature(d: DimExpr, side: int, me: DimVar, unpaired: list[DimVar]) -> Hashable:
            def key(v: DimVar) -> Hashable:
                if v is me:
                    return ("me",)
                if any(v is u for u in unpaired):
                    return ("free", type(v).__name__, v.kind)
                return self.var_key(v, scopes, side, {})

            return _poly_key(d, key)

        sig_b = [signature(b, 1, y, ub) for y in ub]
        candidates: list[tuple[DimVar, list[DimVar]]] = []
        for x in ua:
            sig = signature(a, 0, x, ua)
            ys = [y for y, sy in zip(ub, sig_b, strict=True) if _same_sort(x, y) and sy == sig]
            candidates.append((x, ys))
        candidates.sort(key=lambda c: len(c[1]))
        tentative: dict[DimVar, DimVar] = {}
        taken: set[int] = set()

        def search(i: int) -> Iterator[dict[DimVar, DimVar]]:
            if i == len(candidates):
                if self.dim_key(a, scopes, 0, tentative) == target:
                    yield dict(tentative)
                return
            x, ys = candidates[i]
            for y in ys:
                if id(y) in taken:
                    continue
                tentative[x] = y
                taken.add(id(y))
                yield from search(i + 1)
                del tentative[x]
                taken.discard(id(y))

        yield from search(0)

    def finish(self) -> None:
        """Compare the deferred dimensions, pairing their remaining free variables.

        The dimension admitting a single pairing goes first (it is forced), so
        that ambiguous ones (``n + m`` against ``a + b``) are decided last,
        constrained by the pairs already made.
        """
        pending = self.deferred
        while pending:
            choice: tuple[int, dict[DimVar, DimVar]] | None = None
            for i, (a, b, path, scopes) in enumerate(pending):
                found = list(itertools.islice(self.pairings(a, b, scopes), 2))
                if not found:
                    raise _NotEqual(path, a, b, f"dimension {a} vs {b}")
                if choice is None or len(found) == 1:
                    choice = (i, found[0])
                    if len(found) == 1:
                        break
            assert choice is not None
            index, pairs = choice
            pending.pop(index)
            for x, y in pairs.items():
                self.fwd[x] = y
                self.bwd[y] = x

    def type_data(self, a: TypeData, b: TypeData, path: _Path) -> None:
        if a.header.name_hint != b.header.name_hint:
            raise _NotEqual((path, "header", -1), a.header, b.header, "different type names")
        if a.is_extern != b.is_extern:
            raise _NotEqual(path, a, b, "extern type on one side only")
        self.type_params(a.type_params, b.type_params, (path, "type_params", -1))
        if len(a.constructors) != len(b.constructors):
            raise _NotEqual(
                (path, "constructors", -1),
                a.constructors,
                b.constructors,
                f"{len(a.constructors)} vs {len(b.constructors)} constructors",
            )
        for i, (ca, cb) in enumerate(zip(a.constructors, b.constructors, strict=True)):
            cpath: _Path = (path, "constructors", i)
            self.constructor(ca, cb, cpath)
            stack: list[_TypeWork] = []
            self.push_types(ca.inputs, cb.inputs, cpath, "inputs", (), stack)
            while stack:
                self.type_step(*stack.pop(), stack)

    # -- patterns --------------------------------------------------------------------------------

    def pattern(self, a: Pattern, b: Pattern, path: _Path) -> None:
        stack: list[_PatternWork] = [(a, b, path)]
        while stack:
            pa, pb, p = stack.pop()
            if type(pa) is not type(pb):
                raise _NotEqual(p, pa, pb, f"{type(pa).__name__} vs {type(pb).__name__}")
            if isinstance(pa, PatternVar) and isinstance(pb, PatternVar):
                self.binder(pa.var, pb.var, (p, "var", -1))
            elif isinstance(pa, PatternConstructor) and isinstance(pb, PatternConstructor):
                self.constructor(pa.constructor, pb.constructor, (p, "constructor", -1))
                self.push_patterns(pa.patterns, pb.patterns, p, stack)
            elif isinstance(pa, PatternTuple) and isinstance(pb, PatternTuple):
                self.push_patterns(pa.patterns, pb.patterns, p, stack)
            elif not isinstance(pa, PatternWildcard):
                raise _NotEqual(p, pa, pb, f"cannot compare {type(pa).__name__}")

    @staticmethod
    def push_patterns(
        a: Sequence[Pattern], b: Sequence[Pattern], path: _Path, stack: list[_PatternWork]
    ) -> None:
        if len(a) != len(b):
            raise _NotEqual((path, "patterns", -1), a, b, f"{len(a)} vs {len(b)} sub-patterns")
        for i in reversed(range(len(a))):
            stack.append((a[i], b[i], (path, "patterns", i)))

    # -- expressions -----------------------------------------------------------------------------

    def expr(self, a: object, b: object, path: _Path) -> None:
        """Compare two expressions (or clauses) and everything below them."""
        work, done, steps, fwd = self.work, self.done, self.steps, self.fwd
        work.append((a, b, path))
        while work:
            x, y, p = work.pop()
            tx = type(x)
            if tx is not type(y):
                raise _NotEqual(p, x, y, f"{tx.__name__} vs {type(y).__name__}")
            if tx is Var:
                if fwd.get(x) is not y:
                    self.use(x, y, p)
                continue
            if tx is Op:
                if x is not y:
                    self.op(x, y, p)
                continue
            if tx is Constant:
                self.constant(x, y, p)
                continue
            key = (x, y)
            if key in done:
                continue
            done.add(key)
            step = steps.get(tx)
            if step is None:
                raise _NotEqual(p, x, y, f"cannot compare {tx.__name__}")
            step(x, y, p)

    def push_exprs(self, a: Sequence[Expr], b: Sequence[Expr], path: _Path, name: str) -> None:
        if len(a) != len(b):
            raise _NotEqual((path, name, -1), a, b, f"{len(a)} vs {len(b)} {name}")
        work = self.work
        for i in range(len(a) - 1, -1, -1):
            work.append((a[i], b[i], (path, name, i)))

    def attrs(self, a: Attrs, b: Attrs, path: _Path) -> None:
        if a is not b and a != b:
            raise _NotEqual((path, "attrs", -1), a, b, f"attributes {dict(a)} vs {dict(b)}")

    def global_var(self, x: GlobalVar, y: GlobalVar, p: _Path) -> None:
        if x.name_hint != y.name_hint:
            raise _NotEqual(p, x, y, f"@{x.name_hint} vs @{y.name_hint}")

    def op(self, x: Op, y: Op, p: _Path) -> None:
        if x.name != y.name:
            raise _NotEqual(p, x, y, f"operator {x.name} vs {y.name}")

    def constructor(self, x: Constructor, y: Constructor, p: _Path) -> None:
        if x.name_hint != y.name_hint:
            raise _NotEqual(p, x, y, f"constructor {x.name_hint} vs {y.name_hint}")
        if x.tag != y.tag:
            raise _NotEqual(p, x, y, f"constructor {x.name_hint} has tags {x.tag} vs {y.tag}")
        owner_x = x.belong_to.name_hint if x.belong_to is not None else None
        owner_y = y.belong_to.name_hint if y.belong_to is not None else None
        if owner_x != owner_y:
            raise _NotEqual(p, x, y, f"constructor {x.name_hint} of {owner_x} vs {owner_y}")

    def constant(self, x: Constant, y: Constant, p: _Path) -> None:
        if not constants_equal(x.data, y.data):
            raise _NotEqual((p, "data", -1), x, y, _constant_difference(x.data, y.data))

    def tuple(self, x: Tuple, y: Tuple, p: _Path) -> None:
        self.push_exprs(x.fields, y.fields, p, "fields")

    def tuple_get_item(self, x: TupleGetItem, y: TupleGetItem, p: _Path) -> None:
        if x.index != y.index:
            raise _NotEqual((p, "index", -1), x, y, f"index {x.index} vs {y.index}")
        self.work.append((x.tuple_value, y.tuple_value, (p, "tuple_value", -1)))

    def function(self, x: Function, y: Function, p: _Path) -> None:
        self.type_params(x.type_params, y.type_params, (p, "type_params", -1))
        if len(x.params) != len(y.params):
            raise _NotEqual((p, "params", -1), x, y, f"{len(x.params)} vs {len(y.params)} params")
        for i, (va, vb) in enumerate(zip(x.params, y.params, strict=True)):
            self.binder(va, vb, (p, "params", i))
        self.opt_type(x.ret_type, y.ret_type, (p, "ret_type", -1))
        self.attrs(x.attrs, y.attrs, p)
        self.work.append((x.body, y.body, (p, "body", -1)))

    def call(self, x: Call, y: Call, p: _Path) -> None:
        self.attrs(x.attrs, y.attrs, p)
        if x.type_args or y.type_args:
            stack: list[_TypeWork] = []
            self.push_types(x.type_args, y.type_args, p, "type_args", (), stack)
            while stack:
                self.type_step(*stack.pop(), stack)
        self.push_exprs(x.args, y.args, p, "args")
        self.work.append((x.op, y.op, (p, "op", -1)))

    def let(self, x: Let, y: Let, p: _Path) -> None:
        self.binder(x.var, y.var, (p, "var", -1))
        self.work.append((x.body, y.body, (p, "body", -1)))
        self.work.append((x.value, y.value, (p, "value", -1)))

    def if_(self, x: If, y: If, p: _Path) -> None:
        self.work.append((x.false_branch, y.false_branch, (p, "false_branch", -1)))
        self.work.append((x.true_branch, y.true_branch, (p, "true_branch", -1)))
        self.work.append((x.cond, y.cond, (p, "cond", -1)))

    def match(self, x: Match, y: Match, p: _Path) -> None:
        if x.complete != y.complete:
            raise _NotEqual(p, x, y, "match vs match?" if x.complete else "match? vs match")
        if len(x.clauses) != len(y.clauses):
            n, m = len(x.clauses), len(y.clauses)
            raise _NotEqual((p, "clauses", -1), x, y, f"{n} vs {m} clauses")
        for i in range(len(x.clauses) - 1, -1, -1):
            self.work.append((x.clauses[i], y.clauses[i], (p, "clauses", i)))
        self.work.append((x.data, y.data, (p, "data", -1)))

    def clause(self, x: Clause, y: Clause, p: _Path) -> None:
        self.pattern(x.lhs, y.lhs, (p, "lhs", -1))
        self.work.append((x.rhs, y.rhs, (p, "rhs", -1)))

    def ref_create(self, x: RefCreate, y: RefCreate, p: _Path) -> None:
        self.work.append((x.value, y.value, (p, "value", -1)))

    def ref_read(self, x: RefRead, y: RefRead, p: _Path) -> None:
        self.work.append((x.ref, y.ref, (p, "ref", -1)))

    def ref_write(self, x: RefWrite, y: RefWrite, p: _Path) -> None:
        self.work.append((x.value, y.value, (p, "value", -1)))
        self.work.append((x.ref, y.ref, (p, "ref", -1)))


def _compare_modules(a: Module, b: Module, map_free_vars: bool) -> None:
    """Match definitions by name; each definition is its own scope (a fresh comparer)."""
    types_a = {t.name_hint: d for t, d in a.type_definitions.items()}
    types_b = {t.name_hint: d for t, d in b.type_definitions.items()}
    _same_names(types_a, types_b, "type ")
    for name in sorted(types_a):
        comparer = _Comparer(map_free_vars)
        comparer.type_data(types_a[name], types_b[name], (None, name, -1))
        comparer.finish()
    funcs_a = {g.name_hint: f for g, f in a.functions.items()}
    funcs_b = {g.name_hint: f for g, f in b.functions.items()}
    _same_names(funcs_a, funcs_b, "@")
    for name in sorted(funcs_a):
        comparer = _Comparer(map_free_vars)
        comparer.expr(funcs_a[name], funcs_b[name], (None, name, -1))
        comparer.finish()


def _same_names(a: dict[str, TypingAny], b: dict[str, TypingAny], prefix: str) -> None:
    for name in sorted(a.keys() ^ b.keys()):
        side = "lhs" if name in a else "rhs"
        reason = f"{prefix}{name} is defined only in the {side} module"
        raise _NotEqual((None, name, -1), a.get(name), b.get(name), reason)


def _compare(a: object, b: object, map_free_vars: bool) -> None:
    for obj in (a, b):
        if not isinstance(obj, _SUPPORTED):
            raise TypeError(f"cannot compare {type(obj).__name__} structurally")
    if isinstance(a, Module) and isinstance(b, Module):
        _compare_modules(a, b, map_free_vars)
        return
    comparer = _Comparer(map_free_vars)
    if isinstance(a, Expr | Clause) and isinstance(b, Expr | Clause):
        comparer.expr(a, b, None)
    elif isinstance(a, Type) and isinstance(b, Type):
        comparer.type(a, b, None)
    elif isinstance(a, Pattern) and isinstance(b, Pattern):
        comparer.pattern(a, b, None)
    elif isinstance(a, Attrs) and isinstance(b, Attrs):
        comparer.attrs(a, b, None)
    else:
        raise _NotEqual(None, a, b, f"{type(a).__name__} vs {type(b).__name__}")
    comparer.finish()


_SUPPORTED = (Expr, Type, Pattern, Clause, Attrs, Module)


def first_mismatch(a: object, b: object, map_free_vars: bool = False) -> Mismatch | None:
    """The first place where ``a`` and ``b`` differ structurally, or None if they are equal.

    Raises ``TypeError`` for objects that are not IR (expressions, types,
    patterns, clauses, attributes or modules).
    """
    try:
        _compare(a, b, map_free_vars)
    except _NotEqual as e:
        return e.mismatch()
    return None


def structural_equal(a: object, b: object, map_free_vars: bool = False) -> bool:
    """Alpha-equivalence of expressions, types, patterns, attributes or modules.

    Bound variables correspond by binding position; free variables must be
    identical, or with ``map_free_vars`` correspond one-to-one. Spans and
    inferred types are ignored. See the module docstring for the full rules.
    """
    return first_mismatch(a, b, map_free_vars) is None


_MAX_SHOWN_LINES = 30


def _show(obj: object) -> str:
    text = repr(obj)
    if isinstance(obj, Expr | Type | Module | Pattern):
        try:
            from relay.ir.printer import astext

            text = astext(obj)
        except Exception:  # the printer failing must not hide the mismatch itself
            text = repr(obj)
    lines = text.splitlines()
    if len(lines) > _MAX_SHOWN_LINES:
        more = len(lines) - _MAX_SHOWN_LINES
        lines = [*lines[:_MAX_SHOWN_LINES], f"... ({more} more lines)"]
    return "\n".join(lines)


def _short_path(path: str, limit: int = 200) -> str:
    if len(path) <= limit:
        return path
    half = limit // 2
    return f"{path[:half]}...{path[-half:]}"


def assert_structural_equal(a: object, b: object, map_free_vars: bool = False) -> None:
    """Raise ``AssertionError`` naming the first mismatch: its path, why, and both sides.

    The message reads ``not structurally equal at <path>: <reason>`` followed by
    the two differing parts in the text format (at most 30 lines each).
    """
    mismatch = first_mismatch(a, b, map_free_vars)
    if mismatch is not None:
        path = _short_path(mismatch.path)
        raise AssertionError(
            f"not structurally equal at {path}: {mismatch.reason}\n"
            f"--- lhs at {path}:\n{_show(mismatch.lhs)}\n"
            f"--- rhs at {path}:\n{_show(mismatch.rhs)}"
        )


# -- hashing ---------------------------------------------------------------------------------------


class _Hasher:
    """One hash computation: the numbering of variables and the memo of node hashes.

    Every variable hashes by its number; which variables are free is known only
    at the end (a malformed program may use a variable before its binder), so
    :meth:`finish` mixes in the identity of each free one, unless
    ``map_free_vars``.
    """

    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.number: dict[object, int] = {}  # variables (term and type) in order of the walk
        self.bound: set[object] = set()  # variables with a binding site
        self.memo: dict[Expr, int] = {}

    def bind(self, vs: Iterable[object]) -> None:
        number = self.number
        for v in vs:
            self.bound.add(v)
            number.setdefault(v, len(number))

    def finish(self, h: int) -> int:
        """``h`` combined with the identities of the free variables (unless mapped)."""
        if self.map_free_vars:
            return h
        free = tuple((n, id(v)) for v, n in self.number.items() if v not in self.bound)
        return hash((h, free)) if free else h

    # -- types -----------------------------------------------------------------------------------

    def opt_type(self, t: Type | None) -> int:
        return 0 if t is None else self.type(t)

    def type(self, root: Type, scopes: _Scopes = ()) -> int:
        """Post-order over the type with a stack of pending nodes and a stack of values."""
        number = self.number
        values: list[int] = []
        stack: list[tuple[Type, _Scopes, int]] = [(root, scopes, -1)]
        while stack:
            t, sc, arity = stack.pop()
            if arity >= 0:
                kids = values[len(values) - arity :]
                del values[len(values) - arity :]
                values.append(hash((self.type_head(t, sc), *kids)))
            elif isinstance(t, TypeVar):
                values.append(self.type_var(t, sc))
            elif isinstance(t, IncompleteType):
                values.append(hash(("incomplete", t.kind, number.setdefault(t, len(number)))))
            elif isinstance(t, GlobalTypeVar):
                values.append(hash(("gtv", t.name_hint)))
            else:
                if isinstance(t, TypeData):
                    self.bind(t.type_params)
                kids_of, inner = self.type_children(t, sc)
                stack.append((t, sc, len(kids_of)))
                stack.extend((k, inner, -1) for k in reversed(kids_of))
        return values[0]

    def type_var(self, v: TypeVar, scopes: _Scopes) -> int:
        for depth in range(len(scopes)):
            frame = scopes[-1 - depth]
            if v in frame:
                return hash(("scoped", v.kind, depth, frame.index(v)))
        number = self.number
        return hash(("tv", v.kind, number.setdefault(v, len(number))))

    @staticmethod
    def type_children(t: Type, scopes: _Scopes) -> tuple[list[Type], _Scopes]:
        if isinstance(t, TensorType):
            kids: list[Type] = [d for d in t.shape if isinstance(d, TypeVar | IncompleteType)]
            if isinstance(t.dtype, TypeVar | IncompleteType):
                kids.append(t.dtype)
            return kids, scopes
        if isinstance(t, TupleType):
            return list(t.fields), scopes
        if isinstance(t, TypeCall):  # dimension and dtype arguments hash in its head
            return [t.func, *(a for a in t.args if isinstance(a, Type))], scopes
        if isinstance(t, RefType):
            return [t.value], scopes
        if isinstance(t, FuncType):
            kids = [*t.arg_types, t.ret_type, *t.type_constraints]
            return kids, (*scopes, t.type_params)
        if isinstance(t, TypeRelation):
            return list(t.args), scopes
        if isinstance(t, TypeData):
            return [*t.type_params, *(i for c in t.constructors for i in c.inputs)], scopes
        raise TypeError(f"cannot hash {type(t).__name__} structurally")

    def type_head(self, t: Type, scopes: _Scopes) -> object:
        if isinstance(t, TensorType):
            dims = tuple(d if type(d) is int else self.dim_head(d, scopes) for d in t.shape)
            return ("tensor", dims, t.dtype if isinstance(t.dtype, str) else "v")
        if isinstance(t, TupleType):
            return ("tuple", len(t.fields))
        if isinstance(t, TypeCall):
            args = tuple(self.type_arg_head(a, scopes) for a in t.args)
            return ("type-call", args)
        if isinstance(t, RefType):
            return "ref"
        if isinstance(t, FuncType):
            kinds = tuple(v.kind for v in t.type_params)
            return ("fn", kinds, len(t.arg_types), len(t.type_constraints))
        if isinstance(t, TypeRelation):
            return ("relation", t.name, t.num_inputs, hash(t.attrs), len(t.args))
        assert isinstance(t, TypeData)
        ctors = tuple((c.name_hint, c.tag, len(c.inputs)) for c in t.constructors)
        return ("data", t.header.name_hint, t.is_extern, len(t.type_params), ctors)

    def type_arg_head(self, a: object, scopes: _Scopes) -> Hashable:
        """A data type's argument's part of the head: types hash as children."""
        if isinstance(a, Type):
            return "t"
        return a if isinstance(a, str) else self.dim_head(cast(Dim, a), scopes)

    def dim_head(self, d: Dim, scopes: _Scopes) -> Hashable:
        """A dimension's own part of its tensor's hash (variables are hashed as children)."""
        if isinstance(d, int):
            return d
        if isinstance(d, _AnyDim):
            return "?"
        if not isinstance(d, DimExpr):
            return "v"
        number = self.number

        def key(v: DimVar) -> Hashable:
            if isinstance(v, TypeVar):
                for depth in range(len(scopes)):
                    frame = scopes[-1 - depth]
                    if v in frame:
                        return ("scoped", v.kind, depth, frame.index(v))
            n = number.get(v)
            if n is not None:
                return ("var", n)
            # Not numbered here: the comparison may pair it later (see the module docstring).
            return ("free", type(v).__name__, v.kind) if self.map_free_vars else ("id", id(v))

        return ("dim", _poly_key(d, key))

    # -- patterns --------------------------------------------------------------------------------

    def pattern(self, root: Pattern) -> int:
        """Post-order over the pattern; its variables must already be numbered (bound)."""
        values: list[int] = []
        stack: list[tuple[Pattern, bool]] = [(root, False)]
        while stack:
            p, leaving = stack.pop()
            if isinstance(p, PatternConstructor | PatternTuple):
                if not leaving:
                    stack.append((p, True))
                    stack.extend((q, False) for q in reversed(p.patterns))
                    continue
                n = len(p.patterns)
                kids = values[len(values) - n :]
                del values[len(values) - n :]
                if isinstance(p, PatternConstructor):
                    values.append(hash(("pcons", _constructor_key(p.constructor), *kids)))
                else:
                    values.append(hash(("ptuple", *kids)))
            elif isinstance(p, PatternVar):
                var = p.var
                ann = self.opt_type(var.type_annotation)
                values.append(hash(("pvar", self.number[var], ann)))
            else:
                values.append(hash("pwild"))
        return values[0]

    # -- expressions -----------------------------------------------------------------------------

    def expr(self, root: Expr) -> int:
        """Post-order over the distinct nodes: binders numbered on entry, hashes on exit."""
        memo, number, bind = self.memo, self.number, self.bind
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            e, leaving = stack.pop()
            if leaving:
                memo[e] = self.node(e)
                continue
            if e in memo:
                continue
            t = type(e)
            if t is Var:
                assert isinstance(e, Var)
                n = number.setdefault(e, len(number))
                memo[e] = hash(("var", n, self.opt_type(e.type_annotation)))
                continue
            if t is Constant:
                assert isinstance(e, Constant)
                data = e.data
                memo[e] = hash(("const", data.dtype.str, data.shape, data.tobytes()))
                continue
            if t is Op:
                assert isinstance(e, Op)
                memo[e] = hash(("op", e.name))
                continue
            if t is Function:
                assert isinstance(e, Function)
                bind(e.type_params)
                bind(e.params)
            elif t is Let:
                assert isinstance(e, Let)
                bind((e.var,))
            elif t is Match:
                assert isinstance(e, Match)
                for clause in e.clauses:
                    bind(pattern_vars(clause.lhs))
            kids = children(e)
            if not kids:
                memo[e] = self.node(e)
                continue
            stack.append((e, True))
            for kid in reversed(kids):
                if kid not in memo:
                    stack.append((kid, False))
        return memo[root]

    def node(self, e: Expr) -> int:
        """The hash of ``e`` from its own fields and its children's hashes."""
        memo = self.memo
        if isinstance(e, Call):
            type_args = tuple(self.type(t) for t in e.type_args)
            args = tuple(memo[a] for a in e.args)
            return hash(("call", memo[e.op], args, hash(e.attrs), type_args))
        if isinstance(e, Let):
            return hash(("let", memo[e.var], memo[e.value], memo[e.body]))
        if isinstance(e, Tuple):
            return hash(("tuple", *(memo[f] for f in e.fields)))
        if isinstance(e, TupleGetItem):
            return hash(("proj", e.index, memo[e.tuple_value]))
        if isinstance(e, Function):
            return hash(
                (
                    "fn",
                    tuple((v.kind, self.number[v]) for v in e.type_params),
                    tuple(memo[v] for v in e.params),
                    self.opt_type(e.ret_type),
                    hash(e.attrs),
                    memo[e.body],
                )
            )
        if isinstance(e, If):
            return hash(("if", memo[e.cond], memo[e.true_branch], memo[e.false_branch]))
        if isinstance(e, Match):
            clauses = tuple((self.pattern(c.lhs), memo[c.rhs]) for c in e.clauses)
            return hash(("match", e.complete, memo[e.data], clauses))
        if isinstance(e, GlobalVar):
            return hash(("global", e.name_hint))
        if isinstance(e, Constructor):
            return hash(("constructor", _constructor_key(e)))
        if isinstance(e, RefCreate):
            return hash(("ref", memo[e.value]))
        if isinstance(e, RefRead):
            return hash(("ref_read", memo[e.ref]))
        if isinstance(e, RefWrite):
            return hash(("ref_write", memo[e.ref], memo[e.value]))
        raise TypeError(f"cannot hash {type(e).__name__} structurally")


def _constructor_key(c: Constructor) -> tuple[str, int, str | None]:
    return (c.name_hint, c.tag, c.belong_to.name_hint if c.belong_to is not None else None)


def _hash(obj: object, map_free_vars: bool) -> int:
    if isinstance(obj, Module):
        # Each definition is its own scope, hashed with its own numbering.
        types = []
        for gtv, data in obj.type_definitions.items():
            hasher = _Hasher(map_free_vars)
            types.append((gtv.name_hint, hasher.finish(hasher.type(data))))
        funcs = []
        for gv, func in obj.functions.items():
            hasher = _Hasher(map_free_vars)
            funcs.append((gv.name_hint, hasher.finish(hasher.expr(func))))
        return hash(("module", tuple(sorted(types)), tuple(sorted(funcs))))
    hasher = _Hasher(map_free_vars)
    if isinstance(obj, Expr):
        return hasher.finish(hash(("expr", hasher.expr(obj))))
    if isinstance(obj, Type):
        return hasher.finish(hash(("type", hasher.type(obj))))
    if isinstance(obj, Pattern):
        hasher.bind(pattern_vars(obj))
        return hasher.finish(hash(("pattern", hasher.pattern(obj))))
    if isinstance(obj, Clause):
        hasher.bind(pattern_vars(obj.lhs))
        lhs = hasher.pattern(obj.lhs)
        return hasher.finish(hash(("clause", lhs, hasher.expr(obj.rhs))))
    if isinstance(obj, Attrs):
        return hash(("attrs", hash(obj)))
    raise TypeError(f"cannot hash {type(obj).__name__} structurally")


def structural_hash(obj: object, map_free_vars: bool = False) -> int:
    """A hash of ``obj`` consistent with :func:`structural_equal`.

    Objects that are structurally equal (with the same ``map_free_vars``) get
    the same hash. Raises ``TypeError`` for objects that are not IR.
    """
    return _hash(obj, map_free_vars)
