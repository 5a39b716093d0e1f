"""Normal forms: A-normal form, graph normal form and basic-block normal form.

Relay programs come in two shapes (Roesch et al., "Relay: A High-Level Compiler for Deep
Learning", 2019, section 3.1). In *graph normal form* (GNF) a program is a DAG: a node used
twice is the same object at both uses, and the text format prints it once as ``%0 = ...``.
In *A-normal form* (ANF; Flanagan, Sabry, Duba and Felleisen, "The Essence of Compiling
with Continuations", PLDI 1993) every non-atomic sub-expression is bound by a ``let``, so
evaluation order and sharing are explicit::

    atom     ::= %var | @global | constant | op | Constructor | fn (...) { anf }
    value    ::= atom | call(atom, atom, ...) | (atom, ...) | atom.i
               | ref(atom) | ref_read(atom) | ref_write(atom, atom)
               | if (atom) { anf } else { anf } | match (atom) { pattern => anf, ... }
    anf      ::= let %var = value; anf | atom

:func:`is_a_normal_form` checks this grammar (and that no non-atomic node is shared).

**To ANF** follows TVM's ``src/relay/transforms/to_a_normal_form.cc``. The program is split
into *blocks* (scopes): the top level, each function body, each ``if`` branch and each
``match`` clause. A first walk, over the DAG in topological order (users before used), gives
each node the block it is bound in: the lowest common ancestor, in the block tree, of the
blocks of all its uses, i.e. the innermost block that dominates every use (TVM's
``CalcScope`` over its ``DependencyGraph``). A second walk, in evaluation order, emits each
node once, after its operands, into its block's list of bindings; a block's expression is its
bindings wrapped around its result. Emitting in evaluation order keeps calls and reference
operations in their original order; a pure node shared by several blocks is evaluated once,
at its first use, in the block that dominates them all.

Shared nodes with effects need care: the interpreter (the reference semantics) evaluates a
shared node at each use, so binding a shared ``ref_read(%r)`` once would change what the
program reads. TVM ignores this; here a shared node whose evaluation may have an effect is
*copied*: emitted afresh at each use, in the user's block (its pure operands are still
bound once). Only nodes that open no block and bind nothing (no ``if``, ``match``, ``let``
or function evaluated with them) are copied, since a copy of a binder would bind its
variables twice; other effectful shared nodes are bound once. Copies of copies can multiply
(``%1 = (%0, %0); %2 = (%1, %1); ...``); past a budget linear in the program's size nothing
is copied, so the pass stays linear. A ``let`` in the input keeps its variable: the value is
bound to it directly rather than to a temporary and then copied, so ANF is idempotent
(``ANF(ANF(e))`` is ``ANF(e)`` up to alpha-equivalence). Functions are atoms, normalized
inside; a function used more than once is bound, to keep the program a tree. Functions
marked ``Primitive=1`` (fused kernels) are left untouched, as in TVM, and so is a node
their bodies share with the rest of the program (it is bound as it is).

**To basic-block normal form** (BBNF; TVM's ``to_basic_block_normal_form.cc``) uses the same
two walks but binds only what must be bound: a node used in more than one block (bound in
the block dominating its uses, as above), and a node whose evaluation has an effect (a
reference operation, a call to a function that may have one, an ``if`` or ``match`` whose
branches may have one), so that effects keep their order relative to the nodes that are
bound. Shared effects are copied as in ANF (their pure operands are bound, being shared
by the copies). Everything else stays in graph form inside its block. TVM binds only the shared
nodes and can reorder effects; this version does not.
:func:`is_basic_block_normal_form` checks that no non-atomic node is used in two blocks.

**To GNF** (TVM's ``to_graph_normal_form.cc``) replaces each let-bound variable by the value
it is bound to, producing a DAG in which the value is shared by all the variable's uses. TVM
inlines every ``let``; here a ``let`` stays when its value may have an effect (inlining it
would run the effect at each use, or not at all, since the interpreter evaluates a shared
node at each use) and when it binds a recursive function (its variable occurs in its value).
A pure ``let`` whose variable is never used disappears.

Effects are judged by :class:`EffectAnalysis`: reference operations have effects, calls to
operators and constructors do not, a call to a global does when the global's body may have
one (a greatest fixed point over the module, :func:`pure_globals`), a call to a function
literal, or to a variable a ``let`` binds to one, when its body may (a recursive call is
assumed to), and a call to anything else (a parameter, say) is assumed to.

All walks use explicit stacks; programs of any depth (100,000-binding chains, 100,000-node
DAGs) are transformed without recursion, in time linear in the program's size (times the
depth of block nesting, for the common-ancestor steps).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence

from relay.ir.analysis import free_vars
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
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.passes.manager import FunctionPass, Pass, PassContext, PassInfo

_ATOMS = (Var, GlobalVar, Constant, Op, Constructor)
_BLOCKS = (If, Match, Let, Function)

# -- effects --------------------------------------------------------------------------------------


def _is_primitive(e: Expr) -> bool:
    return isinstance(e, Function) and e.attrs.get("Primitive") == 1


def _eval_children(e: Expr) -> Sequence[Expr]:
    """The sub-expressions evaluated when ``e`` is (a function's body is not)."""
    if isinstance(e, Function):
        return ()
    return children(e)


class EffectAnalysis:
    """Which expressions may have an effect when evaluated (memoized, iterative).

    An effect is a reference operation (``ref``, ``ref_read``, ``ref_write``) or a call to a
    function that may perform one. ``pure`` names the globals known to be pure (see
    :func:`pure_globals`); calls to other globals, and to local variables, are assumed to
    have effects. Creating a closure has none.
    """

    def __init__(self, pure: frozenset[GlobalVar] = frozenset()) -> None:
        self.pure = pure
        self.memo: dict[Expr, bool] = {}
        self.bound: dict[Var, Expr] = {}
        self._active: set[Function] = set()
        self._opens: dict[Expr, bool] = {}

    def note_let(self, let: Let) -> None:
        """Remember what a ``let`` binds, so that calls through its variable are judged by
        the callee it names (walks from an enclosing expression do this)."""
        self.bound[let.var] = let.value

    def callee_is_pure(self, callee: Expr) -> bool:
        """Whether calling ``callee`` (an operator, constructor, global or function, or a
        let-bound variable naming one) is pure."""
        seen: set[Var] = set()
        while True:
            while isinstance(callee, Let):  # the bindings are operands, judged on their own
                callee = callee.body
            if not isinstance(callee, Var):
                break
            value = self.bound.get(callee)
            if value is None or callee in seen:  # a parameter, say: assume effects
                return False
            seen.add(callee)
            callee = value
        if isinstance(callee, Op | Constructor):
            return True
        if isinstance(callee, GlobalVar):
            return callee in self.pure
        if isinstance(callee, Function):
            if _is_primitive(callee):
                return True
            if callee in self._active:  # a recursive call: assume effects
                return False
            self._active.add(callee)
            try:
                return not self.may_have_effects(callee.body)
            finally:
                self._active.discard(callee)
        return False

    def has_direct_effect(self, e: Expr) -> bool:
        """Whether evaluating ``e`` has an effect beyond those of evaluating its operands.

        True for reference operations, calls to functions that may have effects, and
        ``if``/``match`` expressions whose branches may have effects."""
        if isinstance(e, RefCreate | RefRead | RefWrite):
            return True
        if isinstance(e, Call):
            return not self.callee_is_pure(e.op)
        if isinstance(e, If):
            return self.may_have_effects(e.true_branch) or self.may_have_effects(e.false_branch)
        if isinstance(e, Match):
            return any(self.may_have_effects(c.rhs) for c in e.clauses)
        return False

    def may_have_effects(self, expr: Expr) -> bool:
        """Whether evaluating ``expr`` may have an effect."""
        memo = self.memo
        if expr in memo:
            return memo[expr]
        opens = self._opens
        stack = [expr]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            if isinstance(node, _ATOMS):
                stack.pop()
                memo[node] = opens[node] = False
                continue
            if isinstance(node, Let):
                self.note_let(node)
            # All children first: function bodies are needed for calls to function literals.
            kids = () if _is_primitive(node) else children(node)
            deps = [c for c in kids if c not in memo and not isinstance(c, _ATOMS)]
            if deps:
                stack.extend(deps)
                continue
            stack.pop()
            if isinstance(node, Function):
                memo[node] = False
                opens[node] = True
                continue
            memo[node] = self.has_direct_effect(node) or any(memo.get(c, False) for c in kids)
            opens[node] = isinstance(node, _BLOCKS) or any(opens.get(c, False) for c in kids)
        return memo[expr]

    def copyable(self, expr: Expr) -> bool:
        """Whether ``expr`` may have an effect and can be emitted afresh at each use: it
        opens no block and binds nothing (no ``if``, ``match``, ``let`` or function is
        evaluated with it)."""
        return self.may_have_effects(expr) and not self._opens[expr]


def pure_globals(mod: Module) -> frozenset[GlobalVar]:
    """The globals of ``mod`` whose calls are pure (no reference operations, directly or
    through the functions they call).

    The greatest fixed point: every global starts pure, and a global whose body may have an
    effect under the current assumption is removed, until nothing changes (so a recursive
    function without reference operations is pure)."""
    pure = set(mod.functions)
    while True:
        effects = EffectAnalysis(frozenset(pure))
        impure = {gv for gv in pure if effects.may_have_effects(mod.functions[gv].body)}
        if not impure:
            return frozenset(pure)
        pure -= impure


class _PureCache:
    """The pure globals of the last module seen (a function pass calls once per global)."""

    def __init__(self) -> None:
        self.mod: Module | None = None
        self.pure: frozenset[GlobalVar] = frozenset()

    def get(self, mod: Module) -> frozenset[GlobalVar]:
        if self.mod is not mod:
            self.mod, self.pure = mod, pure_globals(mod)
        return self.pure


# -- blocks and where each node is bound ----------------------------------------------------------


class _Block:
    """A scope: the top level, a function body, an ``if`` branch or a ``match`` clause."""

    __slots__ = ("bindings", "depth", "parent")

    def __init__(self, parent: _Block | None) -> None:
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        # (variable, value, the input let it comes from, if any)
        self.bindings: list[tuple[Var, Expr, Let | None]] = []

    def wrap(self, result: Expr) -> Expr:
        """The block's expression: its bindings (in order) around ``result``; an input
        ``let`` whose value and body are unchanged is reused."""
        for var, value, origin in reversed(self.bindings):
            if origin is not None and origin.value is value and origin.body is result:
                result = origin
            else:
                span = None if origin is None else origin.span
                result = Let(var, value, result, span=span)
        self.bindings = []
        return result


def _lca(a: _Block, b: _Block) -> _Block:
    while a.depth > b.depth:
        assert a.parent is not None
        a = a.parent
    while b.depth > a.depth:
        assert b.parent is not None
        b = b.parent
    while a is not b:
        assert a.parent is not None and b.parent is not None
        a, b = a.parent, b.parent
    return a


def _inside(primitives: list[Function]) -> set[Expr]:
    """The nodes inside the bodies of ``primitives``: left as they are, wherever else they
    are used too."""
    frozen: set[Expr] = set()
    stack: list[Expr] = [f.body for f in primitives]
    while stack:
        node = stack.pop()
        if isinstance(node, _ATOMS) or node in frozen:
            continue
        frozen.add(node)
        stack.extend(children(node))
    return frozen


def _post_order(root: Expr) -> tuple[list[Expr], set[Expr]]:
    """The non-atomic nodes under ``root`` (shared ones once), children before parents,
    except those inside primitive functions; and those (see :func:`_inside`)."""
    order: list[Expr] = []
    if isinstance(root, _ATOMS):
        return order, set()
    primitives: list[Function] = []
    done: set[Expr] = set()
    entered: set[Expr] = set()
    stack = [root]
    while stack:
        node = stack[-1]
        if node in done:
            stack.pop()
            continue
        if node not in entered:
            entered.add(node)
            if isinstance(node, Function) and _is_primitive(node):
                primitives.append(node)
            else:
                stack.extend(c for c in reversed(children(node)) if not isinstance(c, _ATOMS))
            continue
        stack.pop()
        done.add(node)
        order.append(node)
    if not primitives:
        return order, set()
    frozen = _inside(primitives)
    return [n for n in order if n not in frozen], frozen


def _frozen(root: Expr) -> set[Expr]:
    return _post_order(root)[1]


class _Placement:
    """For each non-atomic node: its block (dominating all uses), use count, whether it is
    used in more than one block, and the blocks it opens (branches, clauses, body).

    With ``effects``, also the nodes to *copy*: a node whose evaluation may have an effect,
    that opens no block and binds nothing (no ``if``, ``match``, ``let`` or function among
    the nodes evaluated with it), and that is evaluated more than once (it is shared, or
    part of a node that is copied). The interpreter evaluates a shared node at each use,
    so such a node is emitted at each use, in the user's block, rather than bound once.
    ``under_copy`` holds the other (pure) operands of copied nodes."""

    def __init__(self, root: Expr, effects: EffectAnalysis | None = None) -> None:
        self.root_block = _Block(None)
        self.block: dict[Expr, _Block] = {}
        self.uses: dict[Expr, int] = {}
        self.cross: set[Expr] = set()
        self.inner: dict[Expr, tuple[_Block, ...]] = {}
        self.copied: set[Expr] = set()
        self.under_copy: set[Expr] = set()
        order, self.frozen = _post_order(root)
        if order:
            self.block[root] = self.root_block
        # How many times each copied node is emitted: the sum over its uses of the times
        # its users are; past a budget (exponential blow-up), nothing is copied.
        times: dict[Expr, int] = {}
        budget = 4 * len(order) + 1000
        for node in reversed(order):  # users before what they use
            b = self.block[node]
            edges: list[tuple[Expr, _Block]]
            if _is_primitive(node) or node in self.frozen:
                continue
            if effects is not None:
                if isinstance(node, Let):
                    effects.note_let(node)
                if (node in self.copied or self.uses.get(node, 0) > 1) and effects.copyable(node):
                    self.copied.add(node)
                    budget -= times[node]
                    for c in children(node):
                        if not isinstance(c, _ATOMS) and c not in self.frozen:
                            if effects.copyable(c):
                                self.copied.add(c)
                            else:
                                self.under_copy.add(c)
            if isinstance(node, If):
                t, f = _Block(b), _Block(b)
                self.inner[node] = (t, f)
                edges = [(node.cond, b), (node.true_branch, t), (node.false_branch, f)]
            elif isinstance(node, Match):
                blocks = tuple(_Block(b) for _ in node.clauses)
                self.inner[node] = blocks
                edges = [(node.data, b)]
                edges += [(c.rhs, cb) for c, cb in zip(node.clauses, blocks, strict=True)]
            elif isinstance(node, Function):
                fb = _Block(b)
                self.inner[node] = (fb,)
                edges = [(node.body, fb)]
            else:
                edges = [(c, b) for c in children(node)]
            n = times.get(node, 1) if node in self.copied else 1
            for child, use in edges:
                if isinstance(child, _ATOMS):
                    continue
                times[child] = times.get(child, 0) + n
                self.uses[child] = self.uses.get(child, 0) + 1
                prev = self.block.get(child)
                if prev is None:
                    self.block[child] = use
                elif prev is not use:
                    self.block[child] = _lca(prev, use)
                    self.cross.add(child)
        if budget < 0:
            self.copied.clear()
            self.under_copy.clear()


# -- emitting bindings ----------------------------------------------------------------------------

_Request = tuple[Expr, Var | None, _Block]
_Emit = Generator[_Request, Expr, Expr]


def _rebuild(node: Expr, kids: list[Expr], copy: bool = False) -> Expr:
    """``node`` with new children (in the order of :func:`children`); ``node`` itself if
    they are the same, unless ``copy`` asks for a new node."""
    if not copy and all(a is b for a, b in zip(kids, children(node), strict=True)):
        return node
    if isinstance(node, Call):
        return Call(kids[0], tuple(kids[1:]), node.attrs, node.type_args, span=node.span)
    if isinstance(node, Tuple):
        return Tuple(tuple(kids), span=node.span)
    if isinstance(node, TupleGetItem):
        return TupleGetItem(kids[0], node.index, span=node.span)
    if isinstance(node, RefCreate):
        return RefCreate(kids[0], span=node.span)
    if isinstance(node, RefRead):
        return RefRead(kids[0], span=node.span)
    if isinstance(node, RefWrite):
        return RefWrite(kids[0], kids[1], span=node.span)
    raise TypeError(f"unexpected {type(node).__name__} node")


class _Filler:
    """The second walk: emit each node once into its block, binding it when ``bind`` says so.

    Written as generators driven by an explicit stack (:meth:`run`): a generator yields
    ``(expr, want)`` to have a sub-expression emitted and receives what stands for it (an
    atom, or an expression left inline). ``want`` is a variable the node may be bound to
    instead of a fresh one (the variable of the ``let`` whose only use is this node)."""

    def __init__(
        self, root: Expr, bind: Callable[[_Placement, Expr], bool], effects: EffectAnalysis
    ) -> None:
        self.place = _Placement(root, effects)
        self.bind = bind
        self.memo: dict[Expr, Expr] = {}
        self.root = root
        self.origin: dict[Var, Let] = {}  # the input let of each variable offered as ``want``

    def run(self) -> Expr:
        """The normalized expression."""
        root = self.root
        if isinstance(root, _ATOMS):
            return root
        return self.place.root_block.wrap(self._drive(root))

    def _drive(self, root: Expr) -> Expr:
        memo = self.memo
        copied = self.place.copied
        block = self.place.block
        stack: list[_Emit] = [self._emit(root, None, self.place.root_block)]
        value: Expr | None = None
        while stack:
            try:
                request = stack[-1].send(value)  # type: ignore[arg-type]
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                continue
            sub, sub_want, use_block = request
            if isinstance(sub, _ATOMS):
                value = sub
                continue
            if sub in copied:  # emitted afresh at each use, in the user's block
                stack.append(self._emit(sub, sub_want, use_block))
                value = None
                continue
            got = memo.get(sub)
            if got is not None:
                value = got
                continue
            stack.append(self._emit(sub, sub_want, block[sub]))
            value = None
        assert value is not None
        return value

    def _want(self, expr: Expr, var: Var | None) -> Var | None:
        """``var`` if ``expr`` may be bound to it: a non-atom whose only use is the asker."""
        if var is None or isinstance(expr, _ATOMS) or self.place.uses.get(expr) != 1:
            return None
        return var

    def _finish(self, node: Expr, new: Expr, want: Var | None, block: _Block) -> Expr:
        if self.bind(self.place, node) and not isinstance(new, _ATOMS):
            var = want if want is not None else Var("x")
            block.bindings.append((var, new, self.origin.get(var)))
            new = var
        self.memo[node] = new
        return new

    def _emit(self, node: Expr, want: Var | None, block: _Block) -> _Emit:
        """Emit ``node`` into ``block`` (its own block, or the user's for a copied node)."""
        place = self.place
        if _is_primitive(node) or node in place.frozen:
            return self._finish(node, node, want, block)
        if isinstance(node, Let):
            # Walk the chain with a loop; stop at a let used elsewhere too (a DAG).
            chain = [node]
            while isinstance(chain[-1].body, Let) and place.uses.get(chain[-1].body) == 1:
                nxt = chain[-1].body
                assert isinstance(nxt, Let)
                chain.append(nxt)
            for let in chain:
                self.origin[let.var] = let
                value = yield (let.value, self._want(let.value, let.var), block)
                if value is not let.var:
                    block.bindings.append((let.var, value, let))
            body = chain[-1].body
            result = yield (body, self._want(body, want), block)
            if result is want:
                self.memo[node] = result
                return result
            return self._finish(node, result, want, block)
        if isinstance(node, If):
            t_block, f_block = place.inner[node]
            cond = yield (node.cond, None, block)
            t = t_block.wrap((yield (node.true_branch, None, t_block)))
            f = f_block.wrap((yield (node.false_branch, None, f_block)))
            if cond is node.cond and t is node.true_branch and f is node.false_branch:
                return self._finish(node, node, want, block)
            return self._finish(node, If(cond, t, f, span=node.span), want, block)
        if isinstance(node, Match):
            data = yield (node.data, None, block)
            clauses: list[Clause] = []
            for clause, c_block in zip(node.clauses, place.inner[node], strict=True):
                rhs = c_block.wrap((yield (clause.rhs, None, c_block)))
                clauses.append(
                    clause if rhs is clause.rhs else Clause(clause.lhs, rhs, span=clause.span)
                )
            if data is node.data and all(
                a is b for a, b in zip(clauses, node.clauses, strict=True)
            ):
                return self._finish(node, node, want, block)
            return self._finish(
                node, Match(data, tuple(clauses), node.complete, span=node.span), want, block
            )
        if isinstance(node, Function):
            (body_block,) = place.inner[node]
            body = body_block.wrap((yield (node.body, None, body_block)))
            if body is node.body:
                return self._finish(node, node, want, block)
            func = Function(
                node.params, body, node.ret_type, node.type_params, node.attrs, span=node.span
            )
            return self._finish(node, func, want, block)
        kids: list[Expr] = []
        for child in children(node):
            kids.append((yield (child, None, block)))
        new = _rebuild(node, kids, copy=node in place.copied)
        return self._finish(node, new, want, block)


# -- A-normal form --------------------------------------------------------------------------------


def _bind_for_anf(place: _Placement, node: Expr) -> bool:
    if isinstance(node, Function):
        return place.uses.get(node, 0) > 1
    return True


def to_a_normal_form(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` in A-normal form: every non-atomic sub-expression bound by a ``let``.

    A node shared by several uses is bound once, in the innermost block (function body,
    ``if`` branch, ``match`` clause) that dominates all of them; evaluation order is kept.
    A shared node with an effect is bound at each use instead (it runs at each use, as in
    the interpreter); ``mod`` tells which globals are pure. A function stays a function
    (its body normalized). See the module docs."""
    return _to_anf(expr, _effects(mod))


def _effects(mod: Module | None) -> EffectAnalysis:
    return EffectAnalysis(pure_globals(mod) if mod is not None else frozenset())


def _to_anf(expr: Expr, effects: EffectAnalysis) -> Expr:
    return _Filler(expr, _bind_for_anf, effects).run()


def is_a_normal_form(expr: Expr) -> bool:
    """Whether ``expr`` follows the ANF grammar of the module docs, with no non-atomic node
    reachable twice. Primitive functions are not looked into, and nodes they share with
    the rest of the program (left as they are by :func:`to_a_normal_form`) may be bound
    as they are."""
    frozen = _frozen(expr)
    seen: set[Expr] = set()
    # Work items: (expr, role) with role "anf", "value" or "atom".
    work: list[tuple[Expr, str]] = [(expr, "anf")]
    while work:
        e, role = work.pop()
        if isinstance(e, _ATOMS):
            continue
        if e in frozen:
            if role != "value" and not isinstance(e, Function):
                return False
            continue
        if e in seen:
            return False
        seen.add(e)
        if isinstance(e, Function):
            if not _is_primitive(e):
                work.append((e.body, "anf"))
            continue
        if role == "atom":
            return False
        if isinstance(e, Let):
            if role != "anf":
                return False
            work.append((e.value, "value"))
            work.append((e.body, "anf"))
            continue
        if role != "value":
            return False
        if isinstance(e, If):
            work += [(e.cond, "atom"), (e.true_branch, "anf"), (e.false_branch, "anf")]
        elif isinstance(e, Match):
            work.append((e.data, "atom"))
            work += [(c.rhs, "anf") for c in e.clauses]
        else:
            work += [(c, "atom") for c in children(e)]
    return True


# -- basic-block normal form ----------------------------------------------------------------------


def to_basic_block_normal_form(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` in basic-block normal form: graph form inside each block, and a ``let`` for
    each node used in several blocks (in the block dominating its uses) and for each node
    with an effect (so effects keep their order). ``mod`` tells which globals are pure."""
    return _to_bbnf(expr, _effects(mod))


def _to_bbnf(expr: Expr, effects: EffectAnalysis) -> Expr:
    def bind(place: _Placement, node: Expr) -> bool:
        return node in place.cross or node in place.under_copy or effects.has_direct_effect(node)

    return _Filler(expr, bind, effects).run()


def is_basic_block_normal_form(expr: Expr) -> bool:
    """Whether no non-atomic node of ``expr`` is used in more than one block."""
    return not _Placement(expr).cross


# -- graph normal form ----------------------------------------------------------------------------


class _GraphNormalizer(ExprMutator):
    """Substitutes let-bound variables by their values, keeping effectful and recursive lets."""

    def __init__(self, effects: EffectAnalysis) -> None:
        super().__init__()
        self.effects = effects
        self.subst: dict[Var, Expr] = {}

    def visit_var(self, var: Var) -> Expr:
        return self.subst.get(var, var)

    def _keep(self, let: Let) -> bool:
        if self.effects.may_have_effects(let.value):
            return True
        return isinstance(let.value, Function) and let.var in free_vars(let.value)

    def visit_let(self, let: Let) -> Expr:
        # The chain is walked with a loop; a link already visited (a let shared by another
        # parent) ends it, and each link's result is memoized, so a shared let is rebuilt
        # once and its variable stays bound once.
        chain = [let]
        while isinstance(chain[-1].body, Let) and chain[-1].body not in self.memo:
            chain.append(chain[-1].body)
        kept: list[tuple[Let, Expr | None]] = []
        for link in chain:
            self.effects.note_let(link)
            value = self.visit(link.value)
            if self._keep(link):
                kept.append((link, value))
            else:
                self.subst[link.var] = value
                kept.append((link, None))
        out = self.visit(chain[-1].body)
        for link, new_value in reversed(kept):
            if new_value is not None:
                if new_value is link.value and out is link.body:
                    out = link
                else:
                    out = Let(link.var, new_value, out, span=link.span)
            self.memo[link] = out
        return out


def to_graph_normal_form(expr: Expr, mod: Module | None = None) -> Expr:
    """``expr`` in graph normal form: each let-bound variable replaced by its value (now
    shared by its uses), except for lets whose value may have an effect and lets binding
    recursive functions. ``mod`` tells which globals are pure. See the module docs."""
    return _GraphNormalizer(_effects(mod)).visit(expr)


# -- passes ---------------------------------------------------------------------------------------


def _as_function(out: Expr) -> Function:
    if not isinstance(out, Function):
        raise TypeError(f"normalizing a function gave a {type(out).__name__}")
    return out


def ToANormalForm() -> Pass:
    """The pass putting each global function in A-normal form (:func:`to_a_normal_form`)."""

    cache = _PureCache()

    def fn(func: Function, mod: Module, ctx: PassContext) -> Function:
        return _as_function(_to_anf(func, EffectAnalysis(cache.get(mod))))

    return FunctionPass(fn, PassInfo("ToANormalForm", 1))


def ToGraphNormalForm() -> Pass:
    """The pass putting each global function in graph normal form
    (:func:`to_graph_normal_form`)."""
    cache = _PureCache()

    def fn(func: Function, mod: Module, ctx: PassContext) -> Function:
        effects = EffectAnalysis(cache.get(mod))
        return _as_function(_GraphNormalizer(effects).visit(func))

    return FunctionPass(fn, PassInfo("ToGraphNormalForm", 1))


def ToBasicBlockNormalForm() -> Pass:
    """The pass putting each global function in basic-block normal form
    (:func:`to_basic_block_normal_form`)."""
    cache = _PureCache()

    def fn(func: Function, mod: Module, ctx: PassContext) -> Function:
        return _as_function(_to_bbnf(func, EffectAnalysis(cache.get(mod))))

    return FunctionPass(fn, PassInfo("ToBasicBlockNormalForm", 1))


__all__ = [
    "EffectAnalysis",
    "ToANormalForm",
    "ToBasicBlockNormalForm",
    "ToGraphNormalForm",
    "is_a_normal_form",
    "is_basic_block_normal_form",
    "pure_globals",
    "to_a_normal_form",
    "to_basic_block_normal_form",
    "to_graph_normal_form",
]
