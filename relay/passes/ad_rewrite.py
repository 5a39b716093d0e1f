"""Rewriting programs over derivative-carrying values: the machinery both AD modes share.

Both the reverse mode (:mod:`relay.passes.higher_order_ad`) and the forward mode
(:mod:`relay.passes.forward_ad`) are *value rewritings* (Elliott, *The simple essence of
automatic differentiation*, ICFP 2018, section 4; Relay's ``gradient.cc``): each
floating-point tensor of the program is replaced by a pair, the value and its derivative
carrier (a reference cell holding the adjoint in reverse mode, the tangent itself in forward
mode), and every construct of the language is rewritten to compute over the pairs. Only
operator calls differ between the modes; everything else is here:

- :class:`ADTypes` rewrites types: a float tensor becomes the mode's pair, tuples,
  functions, references and type arguments are rewritten field by field, and a data type
  with a float tensor in a field gets a derived copy (``Tree_rev`` with constructors
  ``Leaf_rev``..., or ``Tree_dual`` in forward mode); a polymorphic one such as ``List[A]`` is just instantiated at the
  rewritten type. Integer and boolean tensors are left alone: no derivative flows into them.
- :class:`ValueRewriter` rewrites a function body. It emits A-normal form in the original
  evaluation order (every call, ``if``, ``match`` and reference operation bound to a
  variable as it is reached), so effects keep their order; ``if`` tests the untouched
  boolean condition, ``match`` matches the rewritten constructors, closures become
  rewritten closures, references hold rewritten values.
- :class:`GlobalRewrites` rewrites the globals a program calls on demand (``@f`` becomes
  ``@f_rev`` or ``@f_dual``, queued on first use), so recursion and mutual recursion
  through globals work and polymorphic globals stay polymorphic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from relay.errors import CompileError
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
from relay.ir.functor import ExprFunctor
from relay.ir.module import Module
from relay.ir.span import Span
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
    TypeVar,
    free_type_vars,
)

FLOAT_DTYPES = frozenset({"float16", "float32", "float64", "bfloat16"})

UNIT = TupleType(())


def is_float_tensor(ty: Type) -> bool:
    """True for a tensor type of a floating-point dtype (the values gradients flow into)."""
    return isinstance(ty, TensorType) and isinstance(ty.dtype, str) and ty.dtype in FLOAT_DTYPES


def mentions_float(ty: Type) -> bool:
    """True when a floating-point tensor type occurs anywhere in ``ty``."""
    stack = [ty]
    while stack:
        t = stack.pop()
        if is_float_tensor(t):
            return True
        if isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, FuncType):
            stack.extend(t.arg_types)
            stack.append(t.ret_type)
        elif isinstance(t, RefType):
            stack.append(t.value)
        elif isinstance(t, TypeCall):
            stack.extend(t.args)
    return False


def fresh_name(taken: set[str], base: str) -> str:
    """``base``, or ``base_1``, ``base_2``... : the first not in ``taken`` (then added)."""
    name, n = base, 1
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name


def is_data_type(ty: Type) -> bool:
    """A value of an algebraic data type: ``Tree`` or ``List[...]``."""
    return isinstance(ty, GlobalTypeVar) or (
        isinstance(ty, TypeCall) and isinstance(ty.func, GlobalTypeVar)
    )


def differentiable_type(ty: Type, data_types: bool = False) -> bool:
    """A tensor (of any dtype: integers get zero derivatives) or a tuple of such (or, with
    ``data_types``, a data type value, whose contents are checked where it is converted)."""
    if isinstance(ty, TensorType):
        return True
    if data_types and is_data_type(ty):
        return True
    return isinstance(ty, TupleType) and all(differentiable_type(f, data_types) for f in ty.fields)


def check_parameters(
    func: Function, wrt: Sequence[int], what: str, data_types: bool = False
) -> None:
    """Raise CompileError unless each parameter in ``wrt`` is a tensor or a tuple of
    tensors (or a data value, with ``data_types``), and each other parameter either is, or
    holds no floating-point tensor (the derivative would have to track values it cannot
    reach inside a function or reference value coming from outside)."""
    allowed = "tensors, tuples and data types" if data_types else "tensors and tuples of them"
    for i, p in enumerate(func.params):
        ty = p.checked_type
        if differentiable_type(ty, data_types):
            continue
        if i in wrt:
            raise CompileError(
                f"{what}: cannot differentiate with respect to the parameter %{p.name_hint} "
                f"of type {ty} (only {allowed})",
                p.span,
            )
        if mentions_float(ty):
            raise CompileError(
                f"{what}: the parameter %{p.name_hint} of type {ty} holds floating-point "
                "tensors that a value from outside cannot carry derivatives for; pass the "
                "tensors as parameters instead",
                p.span,
            )


class ADTypes:
    """The rewriting of types (see the module docstring): ``pair`` gives the type a float
    tensor type becomes; the derived data types it needs are added to ``mod`` on first use,
    named with ``suffix``."""

    def __init__(self, mod: Module, pair: Callable[[TensorType], Type], suffix: str) -> None:
        self.mod = mod
        self.pair = pair
        self.suffix = suffix
        self.data: dict[GlobalTypeVar, GlobalTypeVar] = {}
        self.ctors: dict[str, Constructor] = {}  # by the original constructor's name
        self._needs: dict[GlobalTypeVar, bool] = {}

    def __call__(self, ty: Type) -> Type:
        if isinstance(ty, TensorType):
            if not isinstance(ty.dtype, str):
                raise CompileError(
                    f"differentiation: a tensor of unknown dtype ({ty}) cannot be "
                    "differentiated; annotate its dtype"
                )
            return self.pair(ty) if ty.dtype in FLOAT_DTYPES else ty
        if isinstance(ty, TupleType):
            return TupleType(tuple(self(f) for f in ty.fields))
        if isinstance(ty, FuncType):
            return FuncType(tuple(self(a) for a in ty.arg_types), self(ty.ret_type), ty.type_params)
        if isinstance(ty, RefType):
            return RefType(self(ty.value))
        if isinstance(ty, TypeCall):
            head = self(ty.func)
            # a data type's arguments may be dimensions or dtypes (``Vec[n]``): kept as they are
            args = tuple(self(a) if isinstance(a, Type) else a for a in ty.args)
            return TypeCall(head, args)
        if isinstance(ty, GlobalTypeVar):
            return self.data_type(ty)
        if isinstance(ty, TypeVar):
            return ty
        if isinstance(ty, IncompleteType):
            raise CompileError("differentiation: the program is not fully typed")
        raise CompileError(f"differentiation: values of type {ty} cannot be differentiated")

    def canonical(self, gtv: GlobalTypeVar) -> GlobalTypeVar:
        """The module's own header for the data type named like ``gtv`` (types name data
        types; the frontend makes a header per annotation, and inference matches by name)."""
        try:
            return self.mod.get_global_type_var(gtv.name_hint)
        except KeyError:
            return gtv

    def needs_copy(self, gtv: GlobalTypeVar) -> bool:
        """True when the data type ``gtv`` (or one reachable through its fields) has a
        float tensor in a field: its values then need a derived data type."""
        gtv = self.canonical(gtv)
        found = self._needs.get(gtv)
        if found is not None:
            return found
        reach: list[GlobalTypeVar] = [gtv]
        seen = {gtv}
        floats = False
        while reach and not floats:
            data = self.mod.type_definitions.get(reach.pop())
            if data is None:
                continue
            for con in data.constructors:
                for field in con.inputs:
                    if mentions_float(field):
                        floats = True
                    stack = [field]
                    while stack:
                        t = stack.pop()
                        if isinstance(t, GlobalTypeVar) and self.canonical(t) not in seen:
                            seen.add(self.canonical(t))
                            reach.append(self.canonical(t))
                        elif isinstance(t, TypeCall):
                            stack.append(t.func)
                            stack.extend(t.args)
                        elif isinstance(t, TupleType):
                            stack.extend(t.fields)
                        elif isinstance(t, FuncType):
                            stack.extend((*t.arg_types, t.ret_type))
                        elif isinstance(t, RefType):
                            stack.append(t.value)
        self._needs[gtv] = floats
        return floats

    def data_type(self, gtv: GlobalTypeVar) -> GlobalTypeVar:
        """``gtv`` itself, or its derived copy over rewritten fields."""
        gtv = self.canonical(gtv)
        if not self.needs_copy(gtv):
            return gtv
        found = self.data.get(gtv)
        if found is not None:
            return found
        data = self.mod.type_definitions[gtv]
        taken = {g.name_hint for g in self.mod.type_definitions}
        header = GlobalTypeVar(fresh_name(taken, f"{gtv.name_hint}{self.suffix}"), gtv.kind)
        self.data[gtv] = header  # before the fields: they may mention gtv
        names = {c.name_hint for c in self.mod.constructors()}
        ctors = []
        for con in data.constructors:
            new = Constructor(
                fresh_name(names, f"{con.name_hint}{self.suffix}"),
                tuple(self(t) for t in con.inputs),
                header,
                con.tag,
            )
            self.ctors[con.name_hint] = new
            ctors.append(new)
        self.mod.add_type(TypeData(header, data.type_params, tuple(ctors)))
        return header

    def constructor(self, con: Constructor) -> Constructor:
        """The constructor building rewritten values in place of ``con``."""
        if con.belong_to is not None:
            self.data_type(con.belong_to)
        return self.ctors.get(con.name_hint, con)


class DataFunctions:
    """Base of the generated globals over data values passed in from outside (the reverse
    mode's conversions, the forward mode's pairing): one global per concrete data type and
    purpose, built by structural recursion over the constructors."""

    def __init__(self, mod: Module, types: ADTypes, what: str) -> None:
        self.mod = mod
        self.types = types
        self.what = what
        self._names = {g.name_hint for g in mod.functions}

    def start(
        self, ty: Type, cache: dict[str, GlobalVar], suffix: str
    ) -> tuple[GlobalVar, TypeData | None, dict[TypeVar, Type]]:
        """The global for ``ty`` in ``cache`` (data None: built already), or a new one, the
        type's definition and its parameters' instantiation (data given: build its body).
        The global is cached before its body is built, so recursive types work."""
        found = cache.get(str(ty))
        if found is not None:
            return found, None, {}
        if free_type_vars(ty):
            raise CompileError(f"{self.what}: a parameter of the polymorphic data type {ty}")
        head = ty.func if isinstance(ty, TypeCall) else ty
        assert isinstance(head, GlobalTypeVar)
        data = self.mod.type_definitions[self.types.canonical(head)]
        gv = GlobalVar(fresh_name(self._names, f"{head.name_hint}_{suffix}"))
        cache[str(ty)] = gv
        args = ty.args if isinstance(ty, TypeCall) else ()
        return gv, data, dict(zip(data.type_params, args, strict=True))

    def field_types(self, con: Constructor, mapping: dict[TypeVar, Type]) -> list[Type]:
        """The types of ``con``'s fields at the instantiation ``mapping``."""
        from relay.typecheck.subst import subst_type

        return [subst_type(t, mapping) for t in con.inputs]


def field_of(e: Expr, i: int) -> Expr:
    """``e.i``, taken apart statically when ``e`` is a tuple expression."""
    return e.fields[i] if isinstance(e, Tuple) else TupleGetItem(e, i)


def typed(e: Expr, ty: Type) -> Expr:
    """``e`` with its checked type set to ``ty``."""
    e.set_checked_type(ty)
    return e


def typed_var(name: str, ty: Type, span: Span | None = None) -> Var:
    """A variable annotated with, and checked as, ``ty``."""
    v = Var(name, ty, span=span)
    v.set_checked_type(ty)
    return v


def is_atomic(e: Expr) -> bool:
    """A variable or constant, or a tuple of them (nothing to compute, so nothing to bind)."""
    if isinstance(e, Tuple):
        return all(is_atomic(f) for f in e.fields)
    return isinstance(e, Var | Constant)


def sequence(stmts: Sequence[Expr], last: Expr) -> Expr:
    """``let _ = s1; ...; last``."""
    out = last
    for s in reversed(stmts):
        out = Let(Var("_"), s, out)
    return out


def _operands(e: Call | Tuple | TupleGetItem) -> tuple[Expr, ...]:
    """What evaluating ``e`` evaluates first, in order (a closure callee before its
    arguments, as the interpreter does)."""
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    if isinstance(e.op, Op | GlobalVar | Constructor):
        return e.args
    return (e.op, *e.args)


class GlobalRewrites:
    """The globals of ``mod`` rewritten on demand: :meth:`rewrite` names the rewritten
    global (``@f`` plus ``suffix``), queueing it; :meth:`finish` builds every queued one
    (which may queue more) with a fresh rewriter from ``make_rewriter``."""

    def __init__(
        self,
        mod: Module,
        types: ADTypes,
        suffix: str,
        make_rewriter: Callable[[], ValueRewriter],
    ) -> None:
        self.mod = mod
        self.types = types
        self.suffix = suffix
        self.make_rewriter = make_rewriter
        self.globals: dict[GlobalVar, GlobalVar] = {}
        self._todo: list[GlobalVar] = []
        self._names = {g.name_hint for g in mod.functions}

    def rewrite(self, gv: GlobalVar) -> GlobalVar:
        """The global computing ``gv`` over rewritten values."""
        found = self.globals.get(gv)
        if found is None:
            if gv not in self.mod.functions:
                raise CompileError(
                    f"differentiation: no global @{gv.name_hint} in the module", gv.span
                )
            found = GlobalVar(fresh_name(self._names, f"{gv.name_hint}{self.suffix}"))
            self.globals[gv] = found
            self._todo.append(gv)
        return found

    def finish(self) -> None:
        """Build the queued rewritten globals."""
        while self._todo:
            gv = self._todo.pop()
            func = self.mod.functions[gv]
            rw = self.make_rewriter()
            params = [rw.param(p) for p in func.params]
            ret = func.checked_type
            assert isinstance(ret, FuncType)
            new = Function(
                (*rw.extra_params(), *params),
                rw.block(func.body),
                self.types(ret.ret_type),
                func.type_params,
                span=func.span,
            )
            self.mod.add(self.globals[gv], new)


class ValueRewriter(ExprFunctor[Expr]):
    """Rewrites one function body over derivative-carrying values (see the module
    docstring). A mode supplies :meth:`zero_carrier`, :meth:`op_call` and
    :meth:`extra_params` (what rewritten globals take first, e.g. the reverse mode's tape).

    Every node kind is overridden, so the memo is the functor's own and is scoped to the
    block a node was rewritten in; ``let`` chains are walked in a loop."""

    def __init__(self, globals_: GlobalRewrites) -> None:
        super().__init__()
        self.globals = globals_
        self.types = globals_.types
        self.vars: dict[Var, Expr] = {}
        self.blocks: list[list[tuple[Var, Expr]]] = []
        self._scopes: list[list[Expr]] = []
        self._once: dict[Expr, list[Expr]] = {}  # rewritten effectful nodes, one per use
        self._purity: dict[Expr, bool] = {}

    # -- the mode ------------------------------------------------------------------------------

    def extra_params(self) -> tuple[Var, ...]:
        """The parameters a rewritten global takes before the rewritten ones."""
        return ()

    def zero_carrier(self, x: Expr, ty: TensorType) -> Expr:
        """The derivative carrier of the float tensor ``x`` when its derivative is zero."""
        raise NotImplementedError

    def lift(self, x: Expr, ty: Type) -> Expr:
        """The rewritten value of the plain value ``x`` of type ``ty`` (a zero derivative)."""
        if is_float_tensor(ty):
            assert isinstance(ty, TensorType)
            return Tuple((x, self.zero_carrier(x, ty)))
        if isinstance(ty, TupleType) and mentions_float(ty):
            return Tuple(tuple(self.lift(field_of(x, i), f) for i, f in enumerate(ty.fields)))
        return x

    def primal(self, x: Expr, ty: Type) -> Expr:
        """The plain value inside the rewritten value ``x`` (of plain type ``ty``)."""
        if is_float_tensor(ty):
            return field_of(x, 0)
        if isinstance(ty, TupleType) and mentions_float(ty):
            return Tuple(tuple(self.primal(field_of(x, i), f) for i, f in enumerate(ty.fields)))
        return x

    def op_call(self, call: Call, op: Op, args: list[Expr], primals: list[Var | Constant]) -> Expr:
        """The rewritten value of the operator call ``call``: ``args`` are its rewritten
        arguments, ``primals`` their plain values (typed variables, or constants)."""
        raise NotImplementedError

    # -- blocks ------------------------------------------------------------------------------

    def open(self) -> None:
        """Start a block of bindings."""
        self.blocks.append([])
        self._scopes.append([])

    def close(self, result: Expr) -> Expr:
        """End the current block: its bindings wrapped around ``result``."""
        binds = self.blocks.pop()
        for e in self._scopes.pop():
            self.memo.pop(e, None)  # bound in this block only: not visible outside it
        for v, value in reversed(binds):
            result = Let(v, value, result)
        return result

    def block(self, e: Expr) -> Expr:
        """``e`` rewritten as a self-contained expression (its bindings inside it)."""
        self.open()
        return self.close(self.visit(e))

    def visit(self, expr: Expr) -> Expr:
        """The rewritten ``expr``. The dataflow under it (calls, tuples, projections,
        evaluated in the current block) is rewritten first, operands before their users in
        evaluation order, with an explicit stack: a deep expression needs no recursion.

        A pure node shared by several users (graph form) is rewritten once and reused;
        one that may have an effect (a reference operation, a call of a function, a
        branch) is rewritten at each use, since the interpreter evaluates it at each use."""
        memo, once = self.memo, self._once
        if expr in memo:
            return memo[expr]
        if once.get(expr):
            return once[expr].pop()
        stack: list[tuple[Expr, bool]] = [(expr, False)]
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            if not ready and isinstance(node, Call | Tuple | TupleGetItem):
                stack.append((node, True))
                stack.extend((k, False) for k in reversed(_operands(node)) if k not in memo)
                continue
            out = self._dispatch(node)
            if self._is_pure(node):
                memo[node] = out
                if self._scopes:
                    self._scopes[-1].append(node)
            else:
                once.setdefault(node, []).insert(0, out)  # consumed by the next use
        return memo[expr] if expr in memo else once[expr].pop()

    def _is_pure(self, e: Expr) -> bool:
        """No effect can happen evaluating ``e``: variables, constants, globals,
        constructors, closures (creating one runs nothing), and operator or constructor
        calls, tuples and projections of pure operands."""
        cache = self._purity
        stack: list[tuple[Expr, bool]] = [(e, False)]
        while stack:
            node, done = stack.pop()
            if node in cache:
                continue
            if isinstance(node, Var | GlobalVar | Constant | Constructor | Op | Function):
                cache[node] = True
            elif isinstance(node, Tuple | TupleGetItem) or (
                isinstance(node, Call) and isinstance(node.op, Op | Constructor)
            ):
                kids = _operands(node)
                if done:
                    cache[node] = all(cache[k] for k in kids)
                else:
                    stack.append((node, True))
                    stack.extend((k, False) for k in kids if k not in cache)
            else:
                cache[node] = False
        return cache[e]

    def emit(self, value: Expr, ty: Type, hint: str = "t") -> Var:
        """Bind ``value`` (of type ``ty``) in the current block; its variable."""
        v = Var(hint, ty)
        v.set_checked_type(ty)
        self.blocks[-1].append((v, value))
        return v

    def effect(self, value: Expr) -> None:
        """Bind ``value`` in the current block for its effect."""
        self.blocks[-1].append((Var("_"), value))

    def param(self, p: Var) -> Var:
        """The rewritten binder of ``p``."""
        new = Var(p.name_hint, self.types(p.checked_type), span=p.span)
        self.vars[p] = new
        return new

    # -- expressions ---------------------------------------------------------------------------

    def visit_var(self, var: Var) -> Expr:
        found = self.vars.get(var)
        if found is None:
            raise CompileError(f"differentiation: free variable %{var.name_hint}", var.span)
        return found

    def visit_global_var(self, gv: GlobalVar) -> Expr:
        # a global used as a value: a closure passing the extra parameters along
        ft = gv.checked_type
        assert isinstance(ft, FuncType)
        if ft.type_params:  # polymorphic: left for inference to instantiate at the use
            params = tuple(Var(f"a{i}") for i in range(len(ft.arg_types)))
            call = Call(self.globals.rewrite(gv), (*self.extra_params(), *params))
            return Function(params, call)
        params = tuple(Var(f"a{i}", self.types(t)) for i, t in enumerate(ft.arg_types))
        call = Call(self.globals.rewrite(gv), (*self.extra_params(), *params))
        return Function(params, call, self.types(ft.ret_type))

    def visit_constant(self, c: Constant) -> Expr:
        return self.lift(c, c.checked_type)

    def visit_op(self, op: Op) -> Expr:
        raise CompileError(
            f"differentiation: the operator {op.name} is used as a value; call it in a lambda",
            op.span,
        )

    def visit_constructor(self, c: Constructor) -> Expr:
        return self.types.constructor(c)

    def visit_tuple(self, t: Tuple) -> Expr:
        return Tuple(tuple(self.visit(f) for f in t.fields), span=t.span)

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        return field_of(self.visit(t.tuple_value), t.index)

    def visit_function(self, f: Function) -> Expr:
        params = tuple(self.param(p) for p in f.params)
        ft = f.checked_type
        assert isinstance(ft, FuncType)
        return Function(
            params, self.block(f.body), self.types(ft.ret_type), f.type_params, span=f.span
        )

    def visit_let(self, let: Let) -> Expr:
        e: Expr = let
        while isinstance(e, Let):
            var, value = e.var, e.value
            ty = self.types(var.checked_type)
            if isinstance(value, Function):
                new = Var(var.name_hint, ty, span=var.span)  # bound first: it may recur
                self.vars[var] = new
                self.blocks[-1].append((new, self.visit(value)))
            else:
                out = self.visit(value)
                # atoms, and tuples of them, are not bound again: a pair ``(y, dy)`` stays
                # visible as one, so a tangent known to be zero is still known after a let
                if isinstance(out, GlobalVar | Constructor) or is_atomic(out):
                    self.vars[var] = out
                else:
                    self.vars[var] = self.emit(out, ty, var.name_hint)
            e = e.body
        return self.visit(e)

    def visit_if(self, i: If) -> Expr:
        cond = self.visit(i.cond)
        new = If(cond, self.block(i.true_branch), self.block(i.false_branch), span=i.span)
        return self.emit(new, self.types(i.checked_type), "if")

    def _pattern(self, p: Pattern) -> Pattern:
        if isinstance(p, PatternVar):
            return PatternVar(self.param(p.var), span=p.span)
        if isinstance(p, PatternConstructor):
            return PatternConstructor(
                self.types.constructor(p.constructor),
                tuple(self._pattern(q) for q in p.patterns),
                span=p.span,
            )
        if isinstance(p, PatternTuple):
            return PatternTuple(tuple(self._pattern(q) for q in p.patterns), span=p.span)
        assert isinstance(p, PatternWildcard)
        return p

    def visit_match(self, m: Match) -> Expr:
        data = self.visit(m.data)
        clauses = tuple(
            Clause(self._pattern(c.lhs), self.block(c.rhs), span=c.span) for c in m.clauses
        )
        new = Match(data, clauses, m.complete, span=m.span)
        return self.emit(new, self.types(m.checked_type), "match")

    def visit_ref_create(self, r: RefCreate) -> Expr:
        new = RefCreate(self.visit(r.value), span=r.span)
        return self.emit(new, self.types(r.checked_type), "ref")

    def visit_ref_read(self, r: RefRead) -> Expr:
        new = RefRead(self.visit(r.ref), span=r.span)
        return self.emit(new, self.types(r.checked_type), "read")

    def visit_ref_write(self, r: RefWrite) -> Expr:
        new = RefWrite(self.visit(r.ref), self.visit(r.value), span=r.span)
        return self.emit(new, UNIT, "_")

    def visit_call(self, call: Call) -> Expr:
        callee = call.op
        fn = None if isinstance(callee, Op | GlobalVar | Constructor) else self.visit(callee)
        args = [self.visit(a) for a in call.args]
        if isinstance(call.op, Op):
            primals: list[Var | Constant] = []
            for a, arg in zip(args, call.args, strict=True):
                ty = arg.checked_type
                p = self.primal(a, ty)
                v = p if isinstance(p, Var | Constant) else self.emit(p, ty, "p")
                v.set_checked_type(ty)
                primals.append(v)
            return self.op_call(call, call.op, args, primals)
        ty = self.types(call.checked_type)
        type_args = tuple(self.types(t) for t in call.type_args)
        if isinstance(call.op, GlobalVar):
            target = self.globals.rewrite(call.op)
            new = Call(target, (*self.extra_params(), *args), type_args=type_args, span=call.span)
            return self.emit(new, ty, "call")
        if isinstance(call.op, Constructor):
            con = self.types.constructor(call.op)
            return self.emit(Call(con, tuple(args), span=call.span), ty, "data")
        assert fn is not None
        return self.emit(Call(fn, tuple(args), type_args=type_args, span=call.span), ty, "call")


__all__ = [
    "FLOAT_DTYPES",
    "UNIT",
    "ADTypes",
    "GlobalRewrites",
    "ValueRewriter",
    "field_of",
    "fresh_name",
    "is_atomic",
    "is_data_type",
    "is_float_tensor",
    "mentions_float",
    "sequence",
    "typed",
    "typed_var",
]
