"""Hypothesis strategies for random Relay types, constants, expressions and modules.

Two families of programs:

* *Well-scoped* programs (:func:`expressions`, :func:`functions`, :func:`modules`) use every
  construct of the IR: variables with and without annotations, globals referring to each other,
  constants of every dtype (negative, non-finite and non-scalar ones included), tuples of any
  width, projections, functions with type parameters of every kind (shape variables used in the
  parameter types), attributes, operator calls, calls of closures, globals and constructors, let
  chains, conditionals, complete and partial matches with nested patterns, references, and
  sharing (a node used twice, which prints in graph form). Every variable used is bound or
  declared free, and every type variable is bound by an enclosing definition, but nothing is
  type checked: these programs are for the printer, the parser, equality and the functors.
* *Well-typed* programs (:func:`well_typed_programs`): float32 arithmetic over tensors of one
  fixed shape with lets, conditionals, tuples, closures and global helper functions, together
  with arguments for ``main``. They evaluate without errors, so they serve as inputs for
  "transformed program == reference interpreter" tests.

Generation is top-down with a depth budget. A :class:`_Scope` records what a sub-expression may
refer to (the variables and type variables bound around it) and a pool of nodes already built in
the enclosing block, which later siblings may reuse to make the program a DAG.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any as TypingAny, Literal, NamedTuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

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
)
from relay.ir.module import Module
from relay.ir.types import (
    DTYPES,
    Any,
    Dim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)

Draw = Callable[[st.SearchStrategy[TypingAny]], TypingAny]

# -- operators --------------------------------------------------------------------------------

BINARY_OPS: tuple[str, ...] = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "power",
    "mod",
    "floor_mod",
    "maximum",
    "minimum",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
)
"""The binary operators of ``relay/op/tensor.py``."""

UNARY_OPS: tuple[str, ...] = ("negative", "logical_not")
"""The unary operators of ``relay/op/tensor.py``."""

INFIX_OPS: dict[str, str] = {
    "*": "multiply",
    "/": "divide",
    "+": "add",
    "-": "subtract",
    "<": "less",
    ">": "greater",
    "<=": "less_equal",
    ">=": "greater_equal",
    "==": "equal",
    "!=": "not_equal",
}
"""Infix operator symbols and the operators they stand for."""

INFIX_PRECEDENCE: dict[str, int] = {
    "*": 12,
    "/": 12,
    "+": 10,
    "-": 10,
    "<": 8,
    ">": 8,
    "<=": 8,
    ">=": 8,
    "==": 7,
    "!=": 7,
}
"""Relay's binding strength of each infix symbol (all are left associative)."""


# -- names --------------------------------------------------------------------------------------

VAR_NAMES: tuple[str, ...] = (
    "x",
    "y",
    "x1",
    "x_1",
    "_tmp",
    "a.b",
    "0",
    "1x",
    "",
    "v0",
    "data",
    "weight",
    "é",
)
"""Variable name hints, including ones the printer must rename (``0``, ``a.b``, ``""``) and
ones that collide with the names it invents (``x1``, ``v0``)."""

TYPE_VAR_NAMES: tuple[str, ...] = (
    "A",
    "B",
    "T",
    "n",
    "m",
    "A1",
    "",
    "_",
    "int8",
    "Tensor",
    "fn",
    "List",
    "Option",
)
"""Type variable name hints, including ones the printer must rename: ``_`` (an unknown type),
a dtype and keywords. (Not yet the name of a type definition of the module, such as ``List``:
the printer prints ``def @f[List](%z: List[List])``, which parses differently.)"""


def var_names() -> st.SearchStrategy[str]:
    """Name hints for local variables."""
    return st.sampled_from(VAR_NAMES)


def global_names() -> st.SearchStrategy[str]:
    """Names of global functions (identifiers)."""
    return st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


# -- dtypes, shapes and types -------------------------------------------------------------------

NUMPY_DTYPES: tuple[str, ...] = tuple(d for d in DTYPES if d != "bfloat16")
"""The dtypes numpy can hold (constants of these can be built)."""

INT_DTYPES: tuple[str, ...] = tuple(d for d in DTYPES if d.startswith(("int", "uint")))


def dtypes() -> st.SearchStrategy[str]:
    """Every dtype relay knows, ``bfloat16`` included."""
    return st.sampled_from(DTYPES)


def dims(shape_vars: Sequence[TypeVar] = ()) -> st.SearchStrategy[Dim]:
    """A tensor dimension: an int, one of ``shape_vars`` or ``Any``."""
    options: list[st.SearchStrategy[Dim]] = [st.integers(0, 16), st.just(Any)]
    if shape_vars:
        options.append(st.sampled_from(list(shape_vars)))
    return st.one_of(options)


def shapes(
    shape_vars: Sequence[TypeVar] = (), max_rank: int = 4
) -> st.SearchStrategy[tuple[Dim, ...]]:
    """A tensor shape of rank 0 to ``max_rank``."""
    return st.lists(dims(shape_vars), max_size=max_rank).map(tuple)


def tensor_types(
    shape_vars: Sequence[TypeVar] = (), dtype_vars: Sequence[TypeVar] = ()
) -> st.SearchStrategy[TensorType]:
    """Tensor types (scalars included) over the given shape and base-type variables."""
    dtype: st.SearchStrategy[str | TypeVar] = dtypes()
    if dtype_vars:
        dtype = st.one_of(dtype, st.sampled_from(list(dtype_vars)))
    return st.builds(TensorType, shapes(shape_vars), dtype)


@dataclass(frozen=True)
class TypeScope:
    """What a generated type may mention: bound type variables and the module's data types."""

    type_vars: tuple[TypeVar, ...] = ()
    adts: tuple[TypeData, ...] = ()
    incomplete: bool = False

    def of_kind(self, kind: Kind) -> list[TypeVar]:
        """The bound type variables of ``kind``."""
        return [tv for tv in self.type_vars if tv.kind is kind]

    def with_type_vars(self, tvs: Sequence[TypeVar]) -> TypeScope:
        """This scope with ``tvs`` bound as well."""
        return replace(self, type_vars=self.type_vars + tuple(tvs))


def fresh_type_vars(draw: Draw, kinds: Sequence[Kind], max_size: int = 2) -> list[TypeVar]:
    """New type variables of the given kinds."""
    n = draw(st.integers(0, max_size))
    return [
        TypeVar(draw(st.sampled_from(TYPE_VAR_NAMES)), draw(st.sampled_from(list(kinds))))
        for _ in range(n)
    ]


def _adt_ref(draw: Draw, data: TypeData, arg: Callable[[], Type]) -> Type:
    """A reference to a data type: ``List[T]``; a parameterless one is its bare name."""
    if not data.type_params:
        return data.header
    return TypeCall(data.header, tuple(arg() for _ in data.type_params))


def draw_type(draw: Draw, scope: TypeScope, depth: int = 2) -> Type:
    """A random type whose variables are bound in ``scope``."""
    shape_vars = scope.of_kind(Kind.SHAPE)
    dtype_vars = scope.of_kind(Kind.BASE_TYPE)
    leaf_kinds = ["tensor", "tensor"]
    if scope.of_kind(Kind.TYPE):
        leaf_kinds.append("var")
    if scope.incomplete:
        leaf_kinds.append("incomplete")
    kinds = leaf_kinds + (["tuple", "func", "ref", "adt"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "tensor" or (kind == "adt" and not scope.adts):
        tensor: TensorType = draw(tensor_types(shape_vars, dtype_vars))
        return tensor
    if kind == "var":
        tv: TypeVar = draw(st.sampled_from(scope.of_kind(Kind.TYPE)))
        return tv
    if kind == "incomplete":
        return IncompleteType()
    if kind == "tuple":
        n = draw(st.integers(0, 3))
        return TupleType(tuple(draw_type(draw, scope, depth - 1) for _ in range(n)))
    if kind == "ref":
        return RefType(draw_type(draw, scope, depth - 1))
    if kind == "func":
        tps = fresh_type_vars(draw, [Kind.TYPE, Kind.SHAPE], max_size=2)
        inner = scope.with_type_vars(tps)
        n = draw(st.integers(0, 3))
        args = tuple(draw_type(draw, inner, depth - 1) for _ in range(n))
        return FuncType(args, draw_type(draw, inner, depth - 1), tuple(tps))
    assert kind == "adt"
    data = draw(st.sampled_from(list(scope.adts)))
    return _adt_ref(draw, data, lambda: draw_type(draw, scope, depth - 1))


@st.composite
def types(draw: Draw, scope: TypeScope | None = None, depth: int = 2) -> Type:
    """Types: tensors (with shape variables and ``?``), tuples, functions, references, ADTs."""
    if scope is None:
        tps = fresh_type_vars(draw, [Kind.TYPE, Kind.SHAPE, Kind.BASE_TYPE], max_size=3)
        scope = TypeScope(tuple(tps))
    return draw_type(draw, scope, depth)


# -- constants ----------------------------------------------------------------------------------


def _int_bounds(dtype: str) -> tuple[int, int]:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def scalar_values(dtype: str, finite: bool = False) -> st.SearchStrategy[TypingAny]:
    """Python values representable in ``dtype``: extremes, negatives and (unless ``finite``)
    NaN and infinities for floats."""
    if dtype == "bool":
        return st.booleans()
    if dtype in INT_DTYPES:
        lo, hi = _int_bounds(dtype)
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]))
    width: Literal[16, 32, 64] = 16 if dtype == "float16" else 32 if dtype == "float32" else 64
    return st.floats(
        width=width, allow_nan=not finite, allow_infinity=not finite, allow_subnormal=True
    )


@st.composite
def scalar_constants(draw: Draw, dtype: str | None = None, finite: bool = False) -> Constant:
    """Rank-0 constants of every numpy-representable dtype (``bfloat16`` has no numpy type)."""
    dt = dtype if dtype is not None else draw(st.sampled_from(NUMPY_DTYPES))
    value = draw(scalar_values(dt, finite))
    return Constant(np.asarray(value, dtype=dt))


@st.composite
def array_constants(draw: Draw, dtype: str | None = None, finite: bool = False) -> Constant:
    """Constants of rank 1 to 3 (empty ones included); they print in the metadata section."""
    dt = dtype if dtype is not None else draw(st.sampled_from(NUMPY_DTYPES))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    elements = scalar_values(dt, finite)
    return Constant(draw(hnp.arrays(np.dtype(dt), shape, elements=elements)))


def constants(finite: bool = False) -> st.SearchStrategy[Constant]:
    """Scalar and array constants."""
    return st.one_of(scalar_constants(finite=finite), array_constants(finite=finite))


def attr_values() -> st.SearchStrategy[TypingAny]:
    """Attribute values: ints, finite floats, strings, bools, None and nested tuples."""
    leaves = st.one_of(
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.booleans(),
        st.none(),
    )
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


def attrs(max_size: int = 3) -> st.SearchStrategy[Attrs]:
    """Attribute maps with identifier keys."""
    keys = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,7}", fullmatch=True)
    return st.dictionaries(keys, attr_values(), max_size=max_size).map(Attrs)


def function_attrs() -> st.SearchStrategy[Attrs]:
    """Attributes of functions: none (mostly), ``Primitive=1`` and friends, or arbitrary ones."""
    return st.one_of(
        st.just(Attrs()),
        st.just(Attrs(Primitive=1)),
        st.just(Attrs(Primitive=1, Compiler="ccompiler", global_symbol="f_1")),
        st.just(Attrs(Inline=True)),
        attrs(),
    )


# -- type definitions ---------------------------------------------------------------------------


def list_type() -> TypeData:
    """``type List[A] { Cons(A, List[A]), Nil }``."""
    header = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", (a, TypeCall(header, (a,))), header, 0)
    nil = Constructor("Nil", (), header, 1)
    return TypeData(header, (a,), (cons, nil))


def option_type() -> TypeData:
    """``type Option[A] { Some(A), None }``."""
    header = GlobalTypeVar("Option")
    a = TypeVar("A")
    return TypeData(
        header, (a,), (Constructor("Some", (a,), header, 0), Constructor("None", (), header, 1))
    )


@st.composite
def type_definitions(draw: Draw, max_extra: int = 2) -> list[TypeData]:
    """``List`` and ``Option``, then up to ``max_extra`` random data types (recursive, mutually
    referring, nullary, with 0 to 2 parameters) and possibly an ``extern type``."""
    defs = [list_type(), option_type()]
    n = draw(st.integers(0, max_extra))
    headers = [GlobalTypeVar(f"D{i}") for i in range(n)]
    params = [
        [TypeVar(draw(st.sampled_from(["A", "B", "T"]))) for _ in range(draw(st.integers(0, 2)))]
        for _ in range(n)
    ]
    # Build data types first without constructors so constructor fields can refer to them all.
    shells = [TypeData(h, tuple(p), ()) for h, p in zip(headers, params, strict=True)]
    if draw(st.booleans()):
        defs.append(TypeData(GlobalTypeVar("Storage"), (), (), is_extern=True))
    for i, (header, tps) in enumerate(zip(headers, params, strict=True)):
        scope = TypeScope(tuple(tps), tuple(defs + shells))
        ctors = []
        for j in range(draw(st.integers(1, 3))):
            n_inputs = draw(st.integers(0, 3))
            inputs = tuple(draw_type(draw, scope, 1) for _ in range(n_inputs))
            ctors.append(Constructor(f"C{i}_{j}", inputs, header, j))
        defs.append(TypeData(header, tuple(tps), tuple(ctors)))
    return defs


# -- well-scoped expressions --------------------------------------------------------------------


@dataclass(frozen=True)
class ProgramConfig:
    """Knobs for :func:`expressions`, :func:`functions` and :func:`modules`."""

    max_depth: int = 4
    """Nesting budget of an expression."""
    max_width: int = 3
    """Most fields, arguments, parameters, clauses and let bindings per node."""
    sharing: bool = True
    """Reuse already built nodes, making the program a DAG."""
    cross_block_sharing: bool = True
    """Also share nodes between sibling blocks (the two branches of an ``if``) and from a nested
    block (a ``let`` used as an argument) to the enclosing one. The printer binds such a node
    once, in the innermost block enclosing all its uses, so the text keeps the sharing."""
    annotations: bool = True
    """Put type annotations on binders and return types."""
    nonfinite: bool = True
    """Allow NaN and infinite float constants."""
    arrays: bool = True
    """Allow constants of rank > 0."""
    incomplete_types: bool = False
    """Allow ``_`` (IncompleteType) in annotations."""
    free_vars: bool = True
    """Let expressions use variables that are declared free (``free_var``)."""
    literal_postfix: bool = True
    """Allow a scalar literal as the tuple of a projection or as a callee (``(1).0``,
    ``(-1f)(%x)``). Ill-typed, but the printer must parenthesise them: the projection of the
    int32 literal ``1`` would otherwise print as ``1.0``, a float literal."""


@dataclass
class _Scope:
    """What an expression being generated may refer to."""

    vars: tuple[Var, ...]
    types: TypeScope
    globals: tuple[GlobalVar, ...]
    constructors: tuple[Constructor, ...]
    pool: list[Expr] = field(default_factory=list)
    outer_pool: tuple[Expr, ...] = ()

    def enter(
        self, new_vars: Sequence[Var] = (), new_tvs: Sequence[TypeVar] = (), share: bool = False
    ) -> _Scope:
        """A nested block that binds ``new_vars`` and ``new_tvs``; it sees this block's pool.

        With ``share`` (and no new binders) the nested block adds its nodes to this pool too."""
        if share and not new_vars and not new_tvs:
            return self
        return _Scope(
            self.vars + tuple(new_vars),
            self.types.with_type_vars(new_tvs),
            self.globals,
            self.constructors,
            [],
            self.outer_pool + tuple(self.pool),
        )

    def shareable(self) -> list[Expr]:
        return [*self.outer_pool, *self.pool]


_LEAF_WEIGHTS = {"var": 5, "constant": 3, "global": 2, "op": 1, "ctor": 1, "nullary": 1}
_NODE_WEIGHTS = {
    "tuple": 3,
    "getitem": 2,
    "function": 3,
    "op_call": 4,
    "call": 3,
    "ctor_call": 2,
    "let": 4,
    "if": 2,
    "match": 2,
    "ref_create": 1,
    "ref_read": 1,
    "ref_write": 1,
    "share": 3,
}


class _ExprGen:
    """Random well-scoped expressions; one instance per drawn example."""

    def __init__(self, draw: Draw, config: ProgramConfig) -> None:
        self.draw = draw
        self.config = config

    # Small helpers ---------------------------------------------------------------------------

    def int_(self, lo: int, hi: int) -> int:
        n: int = self.draw(st.integers(lo, hi))
        return n

    def pick(self, items: Sequence[TypingAny]) -> TypingAny:
        return self.draw(st.sampled_from(list(items)))

    def flag(self) -> bool:
        b: bool = self.draw(st.booleans())
        return b

    def weighted(self, weights: dict[str, int]) -> str:
        names = [k for k, w in weights.items() for _ in range(w)]
        kind: str = self.pick(names)
        return kind

    def annotation(self, scope: _Scope) -> Type | None:
        if not self.config.annotations or not self.flag():
            return None
        return draw_type(self.draw, replace(scope.types, incomplete=self.config.incomplete_types))

    def fresh_var(self, scope: _Scope) -> Var:
        return Var(self.pick(VAR_NAMES), self.annotation(scope))

    # Expressions -----------------------------------------------------------------------------

    def leaf(self, scope: _Scope) -> Expr:
        weights = dict(_LEAF_WEIGHTS)
        ctors_with_args = [c for c in scope.constructors if c.inputs]
        if not scope.vars:
            del weights["var"]
        if not scope.globals:
            del weights["global"]
        if not ctors_with_args:
            del weights["ctor"]
        if not any(not c.inputs for c in scope.constructors):
            del weights["nullary"]
        kind = self.weighted(weights)
        if kind == "var":
            v: Var = self.pick(scope.vars)
            return v
        if kind == "global":
            gv: GlobalVar = self.pick(scope.globals)
            return gv
        if kind == "op":
            return Op.get(self.pick(BINARY_OPS + UNARY_OPS))
        if kind == "ctor":
            # A bare constructor used as a function value; a nullary one would print like a call.
            c: Constructor = self.pick(ctors_with_args)
            return c
        if kind == "nullary":
            return Call(self.pick([c for c in scope.constructors if not c.inputs]))
        return self.constant()

    def constant(self) -> Constant:
        finite = not self.config.nonfinite
        if self.config.arrays and self.int_(0, 5) == 0:
            c: Constant = self.draw(array_constants(finite=finite))
        else:
            c = self.draw(scalar_constants(finite=finite))
        return c

    def expr(self, scope: _Scope, depth: int) -> Expr:
        if depth <= 0 or self.int_(0, 4) == 0:
            return self.leaf(scope)
        weights = dict(_NODE_WEIGHTS)
        shareable = scope.shareable()
        if not (self.config.sharing and shareable):
            del weights["share"]
        if not any(c.inputs for c in scope.constructors):
            del weights["ctor_call"]
        kind = self.weighted(weights)
        if kind == "share":
            shared: Expr = self.pick(shareable)
            return shared
        e = getattr(self, "gen_" + kind)(scope, depth - 1)
        assert isinstance(e, Expr)
        if not isinstance(e, Var | GlobalVar | Constant | Op | Constructor):
            scope.pool.append(e)
        return e

    def exprs(self, scope: _Scope, depth: int, lo: int = 0) -> tuple[Expr, ...]:
        return tuple(self.expr(scope, depth) for _ in range(self.int_(lo, self.config.max_width)))

    def gen_tuple(self, scope: _Scope, depth: int) -> Expr:
        return Tuple(self.exprs(scope, depth))

    def postfix_operand(self, scope: _Scope, depth: int) -> Expr:
        e = self.expr(scope, depth)
        if isinstance(e, Constant) and not self.config.literal_postfix:
            return Tuple((e,))
        return e

    def gen_getitem(self, scope: _Scope, depth: int) -> Expr:
        return TupleGetItem(self.postfix_operand(scope, depth), self.int_(0, 3))

    def gen_op_call(self, scope: _Scope, depth: int) -> Expr:
        name = self.pick(BINARY_OPS + UNARY_OPS)
        arity = 2 if name in BINARY_OPS else 1
        return Call(Op.get(name), tuple(self.expr(scope, depth) for _ in range(arity)))

    def gen_call(self, scope: _Scope, depth: int) -> Expr:
        # Arguments first: the printer binds them before the callee, and generating in print
        # order keeps shared nodes printed first in the block that owns them.
        args = self.exprs(scope, depth)
        if scope.globals and self.flag():
            callee: Expr = self.pick(scope.globals)
        else:
            callee = self.postfix_operand(scope, depth)
            if isinstance(callee, Call) and isinstance(callee.op, Constructor) and not callee.args:
                # Calling the value ``Nil`` prints as ``Nil()``, the constructor call itself.
                callee = self.gen_function(scope, depth)
        if isinstance(callee, Constructor):  # the parser checks a constructor call's arity
            args = tuple(self.expr(scope, depth) for _ in callee.inputs)
        return Call(callee, args)

    def gen_ctor_call(self, scope: _Scope, depth: int) -> Expr:
        c: Constructor = self.pick([c for c in scope.constructors if c.inputs])
        return Call(c, tuple(self.expr(scope, depth) for _ in c.inputs))

    def gen_function(self, scope: _Scope, depth: int) -> Function:
        tps = fresh_type_vars(self.draw, [Kind.TYPE, Kind.SHAPE, Kind.SHAPE, Kind.BASE_TYPE])
        inner_types = scope.enter(new_tvs=tps)
        params = [self.fresh_var(inner_types) for _ in range(self.int_(0, self.config.max_width))]
        ret = self.annotation(inner_types)
        attrs_: Attrs = self.draw(function_attrs())
        body = self.expr(scope.enter(params, tps), depth)
        return Function(tuple(params), body, ret, tuple(tps), attrs_)

    def gen_let(self, scope: _Scope, depth: int) -> Expr:
        # A let below an argument position prints as a parenthesised block of its own.
        scope = scope.enter(share=self.config.cross_block_sharing)
        bindings: list[tuple[Var, Expr]] = []
        for _ in range(self.int_(1, self.config.max_width)):
            value = self.expr(scope, depth)
            var = self.fresh_var(scope)
            bindings.append((var, value))
            scope = scope.enter([var])
        body = self.expr(scope, depth)
        for var, value in reversed(bindings):
            body = Let(var, value, body)
        return body

    def gen_if(self, scope: _Scope, depth: int) -> Expr:
        cond = self.expr(scope, depth)
        share = self.config.cross_block_sharing
        then = self.expr(scope.enter(share=share), depth)
        return If(cond, then, self.expr(scope.enter(share=share), depth))

    def pattern(self, scope: _Scope, depth: int, bound: list[Var]) -> Pattern:
        kinds = ["wildcard", "var"]
        if depth > 0:
            kinds += ["tuple"] + (["ctor", "ctor"] if scope.constructors else [])
        kind = self.pick(kinds)
        if kind == "wildcard":
            return PatternWildcard()
        if kind == "var":
            v = self.fresh_var(scope)
            bound.append(v)
            return PatternVar(v)
        if kind == "tuple":
            n = self.int_(0, self.config.max_width)
            return PatternTuple(tuple(self.pattern(scope, depth - 1, bound) for _ in range(n)))
        c: Constructor = self.pick(scope.constructors)
        return PatternConstructor(c, tuple(self.pattern(scope, depth - 1, bound) for _ in c.inputs))

    def gen_match(self, scope: _Scope, depth: int) -> Expr:
        data = self.expr(scope, depth)
        clauses = []
        for _ in range(self.int_(1, self.config.max_width)):
            bound: list[Var] = []
            lhs = self.pattern(scope, 2, bound)
            clauses.append(Clause(lhs, self.expr(scope.enter(bound), depth)))
        return Match(data, tuple(clauses), complete=self.flag())

    def gen_ref_create(self, scope: _Scope, depth: int) -> Expr:
        return RefCreate(self.expr(scope, depth))

    def gen_ref_read(self, scope: _Scope, depth: int) -> Expr:
        return RefRead(self.expr(scope, depth))

    def gen_ref_write(self, scope: _Scope, depth: int) -> Expr:
        return RefWrite(self.expr(scope, depth), self.expr(scope, depth))


def _closed_type_scope(defs: Sequence[TypeData] = ()) -> TypeScope:
    return TypeScope((), tuple(defs))


@st.composite
def expressions(
    draw: Draw,
    config: ProgramConfig = ProgramConfig(),
    type_defs: Sequence[TypeData] = (),
    global_vars: Sequence[GlobalVar] = (),
) -> Expr:
    """A well-scoped expression, possibly with free variables (declared ``free_var``).

    Without ``type_defs`` and ``global_vars`` it mentions no constructor and no global, so
    it can be printed and parsed on its own (``relay.parse_expr``).
    """
    free: list[Var] = []
    if config.free_vars:
        for _ in range(draw(st.integers(0, 3))):
            ty = draw(st.none() | types(_closed_type_scope(type_defs)))
            free.append(Var(draw(var_names()), ty))
    ctors = tuple(c for d in type_defs for c in d.constructors)
    scope = _Scope(tuple(free), _closed_type_scope(type_defs), tuple(global_vars), ctors)
    gen = _ExprGen(draw, config)
    return gen.expr(scope, config.max_depth)


@st.composite
def functions(
    draw: Draw,
    config: ProgramConfig = ProgramConfig(),
    type_defs: Sequence[TypeData] = (),
    global_vars: Sequence[GlobalVar] = (),
) -> Function:
    """A closed function (a global's definition) with random type parameters and attributes."""
    ctors = tuple(c for d in type_defs for c in d.constructors)
    scope = _Scope((), _closed_type_scope(type_defs), tuple(global_vars), ctors)
    gen = _ExprGen(draw, config)
    return gen.gen_function(scope, config.max_depth)


@st.composite
def modules(draw: Draw, config: ProgramConfig = ProgramConfig(), max_globals: int = 4) -> Module:
    """A module with data types (``List``, ``Option``, random ones) and 1 to ``max_globals``
    global functions that may call each other (and themselves)."""
    defs = draw(type_definitions())
    names = draw(st.lists(global_names(), min_size=1, max_size=max_globals, unique=True))
    gvs = [GlobalVar(n) for n in names]
    no_free = replace(config, free_vars=False)
    funcs = [draw(functions(no_free, defs, gvs)) for _ in gvs]
    mod = Module()
    for d in defs:
        mod.add_type(d)
    for gv, f in zip(gvs, funcs, strict=True):
        mod.add(gv, f)
    return mod


# -- infix text ---------------------------------------------------------------------------------


@st.composite
def infix_programs(draw: Draw, depth: int = 4) -> tuple[str, Expr, tuple[Var, ...]]:
    """Infix arithmetic text with the fewest parentheses Relay's precedence allows, and the
    expression it denotes: ``(text, expr, free_vars)``; the text declares the free variables."""
    free = tuple(Var(n) for n in ("a", "b", "c"))

    def gen(d: int) -> tuple[str, Expr, int]:
        # Returns (text, expr, precedence of the text's top-level operator; 100 = atom).
        if d == 0 or draw(st.integers(0, 3)) == 0:
            if draw(st.booleans()):
                v = draw(st.sampled_from(free))
                return f"%{v.name_hint}", v, 100
            value = draw(st.integers(0, 9))
            return str(value), Constant(np.asarray(value, dtype="int32")), 100
        sym = draw(st.sampled_from(list(INFIX_OPS)))
        prec = INFIX_PRECEDENCE[sym]
        lt, le, lp = gen(d - 1)
        rt, re, rp = gen(d - 1)
        if lp < prec:
            lt = f"({lt})"
        if rp <= prec:  # left associative: an equal-precedence right operand needs parentheses
            rt = f"({rt})"
        return f"{lt} {sym} {rt}", Call(Op.get(INFIX_OPS[sym]), (le, re)), prec

    text, expr, _ = gen(depth)
    decls = "".join(f"free_var %{v.name_hint};\n" for v in free)
    return decls + text, expr, free


# -- well-typed programs ------------------------------------------------------------------------


class TypedProgram(NamedTuple):
    """A well-typed module and arguments for its ``main``."""

    module: Module
    args: tuple[np.ndarray, ...]


@dataclass
class _TypedScope:
    vars: list[tuple[Var, Type]]
    globals: list[tuple[GlobalVar, FuncType]]

    def with_var(self, v: Var, ty: Type) -> _TypedScope:
        return _TypedScope([*self.vars, (v, ty)], self.globals)


class _TypedGen:
    """Random well-typed float32 programs over tensors of a fixed shape.

    Types used: the tensor type ``T``, the float32 scalar ``S``, the bool scalar ``B``, tuples
    of those and first-order functions from ``T``s to ``T``. Every operation broadcasts ``T``
    and ``S`` to ``T``; constants are small so nothing overflows.
    """

    def __init__(self, draw: Draw, shape: tuple[int, ...], references: bool = False) -> None:
        self.draw = draw
        self.shape = shape
        self.references = references
        self.t = TensorType(shape, "float32")
        self.s = TensorType((), "float32")
        self.b = TensorType((), "bool")

    def int_(self, lo: int, hi: int) -> int:
        n: int = self.draw(st.integers(lo, hi))
        return n

    def small_floats(self) -> st.SearchStrategy[float]:
        # No subnormals: compiled kernels may flush them to zero where numpy does not.
        return st.floats(-2, 2, width=32).map(lambda x: 0.0 if abs(x) < 1e-3 else x)

    def const(self, ty: TensorType) -> Constant:
        if ty == self.b:
            return Constant(np.asarray(self.draw(st.booleans())))
        shape = ty.concrete_shape()
        data = self.draw(hnp.arrays(np.float32, shape, elements=self.small_floats()))
        return Constant(np.asarray(data, dtype="float32"))

    def random_type(self, depth: int) -> Type:
        kind = self.draw(
            st.sampled_from(["t", "t", "s", "b", "tuple", "func"][: 6 if depth else 4])
        )
        if kind == "t":
            return self.t
        if kind == "s":
            return self.s
        if kind == "b":
            return self.b
        if kind == "tuple":
            return TupleType(tuple(self.random_type(depth - 1) for _ in range(self.int_(0, 3))))
        return FuncType(tuple(self.t for _ in range(self.int_(0, 2))), self.t)

    def expr(self, ty: Type, scope: _TypedScope, depth: int) -> Expr:
        options = ["var"] * 3 if any(t == ty for _, t in scope.vars) else []
        if depth > 0:
            options += ["let", "let", "if", "project"]
        if isinstance(ty, TensorType):
            options += ["leaf"]
            if depth > 0:
                options += ["op"] * 4
                if ty == self.t:
                    options += ["call"] + (["global_call"] * 2 if scope.globals else [])
                    if self.references:
                        cells = [v for v, t in scope.vars if t == RefType(self.t)]
                        options += ["cell"] + (["read", "write"] if cells else [])
        elif isinstance(ty, TupleType):
            options.append("tuple")
        else:
            assert isinstance(ty, FuncType)
            options.append("fn")
        kind = self.draw(st.sampled_from(options))
        d = depth - 1
        if kind == "var":
            v: Var = self.draw(st.sampled_from([v for v, t in scope.vars if t == ty]))
            return v
        if kind == "leaf":
            assert isinstance(ty, TensorType)
            return self.const(ty)
        if kind == "let":
            vty = self.random_type(1)
            var = Var(self.draw(var_names()), vty if self.draw(st.booleans()) else None)
            value = self.expr(vty, scope, d)
            return Let(var, value, self.expr(ty, scope.with_var(var, vty), d))
        if kind == "if":
            cond = self.expr(self.b, scope, d)
            return If(cond, self.expr(ty, scope, d), self.expr(ty, scope, d))
        if kind == "project":
            fields = [self.random_type(0) for _ in range(self.int_(0, 2))]
            index = self.int_(0, len(fields))
            fields.insert(index, ty)
            return TupleGetItem(self.expr(TupleType(tuple(fields)), scope, d), index)
        if kind == "tuple":
            assert isinstance(ty, TupleType)
            return Tuple(tuple(self.expr(f, scope, d) for f in ty.fields))
        if kind == "fn":
            assert isinstance(ty, FuncType)
            params = [Var(self.draw(var_names()), a) for a in ty.arg_types]
            inner = scope
            for p, a in zip(params, ty.arg_types, strict=True):
                inner = inner.with_var(p, a)
            return Function(tuple(params), self.expr(ty.ret_type, inner, d), ty.ret_type)
        if kind == "call":
            fty = FuncType(tuple(self.t for _ in range(self.int_(0, 2))), self.t)
            callee = self.expr(fty, scope, d)
            return Call(callee, tuple(self.expr(self.t, scope, d) for _ in fty.arg_types))
        if kind == "global_call":
            gv, gty = self.draw(st.sampled_from(scope.globals))
            return Call(gv, tuple(self.expr(a, scope, d) for a in gty.arg_types))
        if kind == "cell":  # a reference cell, written, then the rest sees it
            cell = Var(self.draw(var_names()), RefType(self.t))
            inner = scope.with_var(cell, RefType(self.t))
            rest = self.expr(ty, inner, d)
            written = Let(Var("w"), RefWrite(cell, self.expr(self.t, inner, d)), rest)
            return Let(cell, RefCreate(self.expr(self.t, scope, d)), written)
        if kind in ("read", "write"):
            refs = [v for v, t in scope.vars if t == RefType(self.t)]
            cell = self.draw(st.sampled_from(refs))
            if kind == "read":
                return RefRead(cell)
            value = self.expr(self.t, scope, d)
            return Let(Var("w"), RefWrite(cell, value), self.expr(ty, scope, d))
        assert kind == "op" and isinstance(ty, TensorType)
        if ty == self.b:
            name = self.draw(st.sampled_from(["less", "greater", "less_equal", "equal"]))
            return Call(Op.get(name), (self.expr(self.s, scope, d), self.expr(self.s, scope, d)))
        if self.draw(st.integers(0, 4)) == 0:
            return Call(Op.get("negative"), (self.expr(ty, scope, d),))
        name = self.draw(st.sampled_from(["add", "subtract", "multiply", "maximum", "minimum"]))
        # Broadcasting: a T result may combine a T with an S (either side).
        lhs_ty, rhs_ty = ty, ty
        if ty == self.t:
            lhs_ty, rhs_ty = self.draw(
                st.sampled_from([(self.t, self.t), (self.t, self.s), (self.s, self.t)])
            )
        return Call(Op.get(name), (self.expr(lhs_ty, scope, d), self.expr(rhs_ty, scope, d)))

    def function(self, arg_types: Sequence[Type], scope: _TypedScope, depth: int) -> Function:
        params = [Var(self.draw(var_names()), a) for a in arg_types]
        inner = scope
        for p, a in zip(params, arg_types, strict=True):
            inner = inner.with_var(p, a)
        return Function(tuple(params), self.expr(self.t, inner, depth), self.t)


@st.composite
def well_typed_programs(
    draw: Draw,
    shape: tuple[int, ...] = (2, 3),
    max_depth: int = 4,
    max_helpers: int = 2,
    references: bool = False,
) -> TypedProgram:
    """A module whose ``main`` maps float32 tensors (``shape``) and scalars to a tensor of
    ``shape``, calling up to ``max_helpers`` global helpers (each may call earlier ones), and
    arguments for it: finite values in [-2, 2]. With ``references``, the programs also make
    reference cells, write them (in closures too, which run when called) and read them."""
    gen = _TypedGen(draw, shape, references)
    mod = Module()
    scope = _TypedScope([], [])
    for i in range(draw(st.integers(0, max_helpers))):
        arg_types = [gen.t for _ in range(draw(st.integers(1, 2)))]
        func = gen.function(arg_types, scope, max_depth - 1)
        gv = mod.add(f"helper{i}", func)
        scope.globals.append((gv, FuncType(tuple(arg_types), gen.t)))
    main_args: list[Type] = [gen.t for _ in range(draw(st.integers(1, 3)))]
    main_args += [gen.s for _ in range(draw(st.integers(0, 1)))]
    mod.add("main", gen.function(main_args, scope, max_depth))
    args = []
    for ty in main_args:
        assert isinstance(ty, TensorType)
        arr = draw(hnp.arrays(np.float32, ty.concrete_shape(), elements=gen.small_floats()))
        args.append(np.asarray(arr, dtype="float32"))
    return TypedProgram(mod, tuple(args))
