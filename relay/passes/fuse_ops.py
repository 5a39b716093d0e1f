"""Operator fusion: group operator calls into ``Primitive=1`` functions (Relay's FuseOps).

The algorithm is TVM's ``src/relay/transforms/fuse_ops.cc`` (Chen et al., *TVM: An
Automated End-to-End Optimizing Compiler for Deep Learning*, OSDI 2018, section 3),
written again here; each global function is processed on its own.

1. **Indexed forward graph.** The nodes of the function are numbered in post-order (an
   operand before its users), and each node records its users, each with an *edge
   pattern*: the fusion pattern of the using operator (``OpPattern``, looked up in the
   operator registry), except that a ``BROADCAST`` operand whose shape equals the result's
   is an ``ELEMWISE`` edge, and a ``reshape``/``squeeze``/``expand_dims`` that only adds or
   removes dimensions of size 1 is ``ELEMWISE`` (TVM calls them injective; then
   ``squeeze(matmul(w, expand_dims(x)))``, a matrix-vector product, could not take its
   epilogue). A tuple's tensor fields are ``INJECTIVE`` edges, and so is a
   projection of a tuple of tensors. Scalar constants are ``ELEMWISE`` nodes (they are
   fused, and stay inside the primitive function); every other leaf is ``OPAQUE``. A node
   whose value escapes the dataflow region is marked *external*: the function's result, a
   ``let``'s binder, value and body, an ``if``'s condition and branches, a ``match``'s
   scrutinee and clause bodies, a reference's operands, a closure's parameters and body, the
   callee of a non-operator call, and non-tensor tuple fields.

   Unlike TVM, which numbers the whole function as one graph, the nodes are first split
   into *regions*: the function body, each function literal's body, each ``if`` branch and
   each ``match`` clause body. A node belongs to the outermost region that reaches it
   (regions are explored breadth first), and a use from another region marks it external.
   So nothing computed outside a closure or a branch is moved into it: fusion never makes
   a computation run once per call of a closure, or only in one branch of two.

2. **Post-dominator tree.** Walking the nodes in reverse post-order, a node's immediate
   post-dominator is the least common ancestor, in the tree built so far, of its users
   (none for an external node). Along the way the largest edge pattern met on the paths
   between them is recorded as the node's *dominator pattern*.

3. **Grouping** with union-find, in three phases over the nodes in post-order. A node is
   fused into its post-dominator ``d`` (every node on every path between them joins ``d``'s
   group) when the fusion keeps the group within ``max_depth`` nodes and, for every node on
   the paths, the pattern of its group satisfies a condition (TVM's ``CheckPath``):

   * phase 0: an ``OUT_ELEMWISE_FUSABLE`` anchor (``nn.conv2d``, ``nn.dense``...) whose
     dominator pattern is ``ELEMWISE`` fuses when the paths are at most ``BROADCAST``; an
     ``ELEMWISE``/``BROADCAST`` node whose dominator pattern is at most ``INJECTIVE`` or
     ``COMM_REDUCE`` fuses when the intermediate nodes are at most ``INJECTIVE`` and ``d``
     is anything but opaque (so elementwise producers join a reduction or an anchor's
     group);
     at opt level 3 (:data:`REDUCTION_EPILOGUE_LEVEL`; beyond Relay, whose reductions
     fuse into nothing) a ``COMM_REDUCE`` node whose dominator pattern is ``ELEMWISE``
     fuses too, when the paths are at most ``BROADCAST``: its epilogue computes on the
     reduced shape (a ``BROADCAST`` edge back to a larger shape, as softmax's
     ``x - max(x)``, keeps it apart), and the group takes the reduction's pattern, so that
     no second reduction or product joins it (a reduction to one value does not when the
     context's :data:`SCALAR_EPILOGUES_CONFIG` is False, as ``relay.build`` sets it for
     CUDA);
   * phase 1: ``INJECTIVE`` nodes and tuples fuse when all paths are injective;
   * phase 2: an elementwise or injective node whose post-dominator is a tuple already
     fused into an injective group joins that group.

   Nothing fuses *into* a tuple in phases 0 and 1, an ``OPAQUE`` node never fuses, and a
   group takes the pattern of an anchor fused into it. Each node is in exactly one group,
   and a group's nodes other than its root (its last node) are used only inside it, so no
   computation is duplicated.

4. **Rewriting** (TVM's ``FuseMutator``). A group holding at least one operator call
   becomes ``fn (%p0, ..., Primitive=1) -> T { ... }(args)`` at its root: the arguments are
   the values the group uses from other groups (each once), the parameters fresh variables
   of their types. A tuple that is the root of its group stays a plain tuple, and so does a
   projection of a tuple from another group.

``fuse_opt_level=0`` (or, with ``-1``, a context at opt level 0) puts every operator call
in a primitive function of its own. The maximum group size is the context's config
``relay.FuseOps.max_depth`` (256 by default), as in TVM. The pass requires types; the
graph, the tree and the groups are built with loops, so 100,000-node chains need no
deep Python stack.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from relay.ir.attrs import Attrs
from relay.ir.expr import (
    Call,
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
    children,
)
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import TensorType, TupleType, Type
from relay.op.registry import OpPattern, get_op
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo

MAX_DEPTH_CONFIG = "relay.FuseOps.max_depth"
REDUCTION_EPILOGUE_LEVEL = 3
"""The opt level from which a reduction takes its elementwise epilogue (beyond Relay)."""
SCALAR_EPILOGUES_CONFIG = "relay.FuseOps.scalar_reduction_epilogues"
"""Config: whether a reduction to a single value (0-d) takes its epilogue too (default True;
``relay.build`` for CUDA sets False: dlight's GPU reduction rules do not apply to a kernel
with a 0-d epilogue, and ``sqrt(sum(x * x))`` fell to a schedule where every thread of a
block summed all the elements)."""
DEFAULT_MAX_DEPTH = 256

_SIMPLE_CONST_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})

ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_ELEMWISE_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
TUPLE = OpPattern.TUPLE
OPAQUE = OpPattern.OPAQUE


def _is_primitive(expr: Expr) -> bool:
    return isinstance(expr, Function) and expr.attrs.get("Primitive") == 1


def _regions(body: Expr) -> dict[Expr, int]:
    """Each node's dataflow region: the outermost region (explored breadth first) that
    reaches it. Function bodies, ``if`` branches and ``match`` clause bodies start regions."""
    region: dict[Expr, int] = {}
    queue: deque[Expr] = deque([body])
    count = 0
    while queue:
        root = queue.popleft()
        r = count
        count += 1
        stack = [root]
        while stack:
            node = stack.pop()
            if node in region:
                continue
            region[node] = r
            if isinstance(node, Function):
                if not _is_primitive(node):
                    queue.append(node.body)
            elif isinstance(node, If):
                stack.append(node.cond)
                queue.append(node.true_branch)
                queue.append(node.false_branch)
            elif isinstance(node, Match):
                stack.append(node.data)
                queue.extend(c.rhs for c in node.clauses)
            else:
                stack.extend(children(node))
    return region


def _post_order(body: Expr) -> list[Expr]:
    """The nodes of ``body`` (not the insides of primitive functions), operands first."""
    order: list[Expr] = []
    done: set[Expr] = set()
    stack: list[tuple[Expr, bool]] = [(body, False)]
    while stack:
        node, expanded = stack.pop()
        if node in done:
            continue
        if expanded:
            done.add(node)
            order.append(node)
            continue
        stack.append((node, True))
        if not _is_primitive(node):
            stack.extend((c, False) for c in reversed(children(node)) if c not in done)
    return order


def _type_of(expr: Expr) -> Type | None:
    try:
        return expr.checked_type
    except ValueError:
        return None


class _Graph:
    """The indexed forward graph of one function body (step 1 of the module docs)."""

    def __init__(self, body: Expr) -> None:
        self.nodes = _post_order(body)
        self.index: dict[Expr, int] = {n: i for i, n in enumerate(self.nodes)}
        n = len(self.nodes)
        self.pattern: list[OpPattern] = [OPAQUE] * n
        self.outputs: list[list[tuple[int, OpPattern]]] = [[] for _ in range(n)]
        self.external: list[bool] = [False] * n
        self.region = _regions(body)
        self.external[self.index[body]] = True
        for i, node in enumerate(self.nodes):
            self._add(i, node)

    def _extern(self, child: Expr) -> None:
        self.external[self.index[child]] = True

    def _link(self, child: Expr, parent: int, pattern: OpPattern) -> None:
        if self.region[child] != self.region[self.nodes[parent]]:
            self._extern(child)  # a use from another region: the value must exist there
        else:
            self.outputs[self.index[child]].append((parent, pattern))

    def _add(self, i: int, node: Expr) -> None:
        if isinstance(node, Call):
            if isinstance(node.op, Op):
                pattern = get_op(node.op.name).pattern
                rtype = _type_of(node)
                if node.op.name in _UNIT_DIM_OPS and _only_unit_dims_change(node, rtype):
                    pattern = ELEMWISE
                for arg in node.args:
                    edge = pattern
                    atype = _type_of(arg)
                    if (
                        edge == BROADCAST
                        and isinstance(rtype, TensorType)
                        and isinstance(atype, TensorType)
                        and rtype.shape == atype.shape
                    ):
                        edge = ELEMWISE
                    self._link(arg, i, edge)
                self.pattern[i] = pattern
            else:
                self._extern(node.op)
                for arg in node.args:
                    self._link(arg, i, OPAQUE)
        elif isinstance(node, Tuple):
            self.pattern[i] = TUPLE
            for f in node.fields:
                if isinstance(_type_of(f), TensorType):
                    self._link(f, i, INJECTIVE)
                else:
                    self._extern(f)
        elif isinstance(node, TupleGetItem):
            ttype = _type_of(node.tuple_value)
            if isinstance(ttype, TupleType) and all(
                isinstance(t, TensorType) for t in ttype.fields
            ):
                self.pattern[i] = INJECTIVE
                self._link(node.tuple_value, i, INJECTIVE)
            else:
                self._extern(node.tuple_value)
        elif isinstance(node, Constant):
            data = node.data
            if data.ndim == 0 and str(data.dtype) in _SIMPLE_CONST_DTYPES:
                self.pattern[i] = ELEMWISE
        elif isinstance(node, Function):
            if not _is_primitive(node):
                for p in node.params:
                    self._extern(p)
                self._extern(node.body)
        elif isinstance(node, Let | If | Match | RefCreate | RefRead | RefWrite):
            for c in children(node):
                self._extern(c)


class _PostDomTree:
    """Immediate post-dominators (step 2 of the module docs)."""

    def __init__(self, g: _Graph) -> None:
        n = len(g.nodes)
        self.parent: list[int] = [-1] * n
        self.depth: list[int] = [1] * n
        self.pattern: list[OpPattern] = [OPAQUE] * n
        for i in range(n - 1, -1, -1):
            if g.external[i] or not g.outputs[i]:
                continue
            pattern = ELEMWISE
            outs = g.outputs[i]
            parent = outs[0][0]
            pattern = max(pattern, outs[0][1])
            for j, edge in outs[1:]:
                parent, pattern = self._lca(parent, j, pattern)
                pattern = max(pattern, edge)
                if parent < 0:
                    break
            self.parent[i] = parent
            self.depth[i] = self.depth[parent] + 1 if parent >= 0 else 1
            self.pattern[i] = pattern

    def _lca(self, lhs: int, rhs: int, pattern: OpPattern) -> tuple[int, OpPattern]:
        depth, parent, pat = self.depth, self.parent, self.pattern
        while lhs != rhs:
            if lhs < 0 or rhs < 0:
                return -1, pattern
            if depth[lhs] < depth[rhs]:
                pattern = max(pattern, pat[rhs])
                rhs = parent[rhs]
            elif depth[rhs] < depth[lhs]:
                pattern = max(pattern, pat[lhs])
                lhs = parent[lhs]
            else:
                pattern = max(pattern, pat[lhs], pat[rhs])
                lhs, rhs = parent[lhs], parent[rhs]
        return lhs, pattern


PathCondition = Callable[[OpPattern, bool], bool]


class _Partitioner:
    """Union-find grouping of the graph's nodes (step 3 of the module docs)."""

    def __init__(
        self, g: _Graph, opt_level: int, max_depth: int, scalar_epilogues: bool = True
    ) -> None:
        self.g = g
        self.scalar_epilogues = scalar_epilogues
        self.max_depth = max_depth
        n = len(g.nodes)
        self.parent = list(range(n))
        self.pattern: list[OpPattern] = list(g.pattern)
        # a group's pattern becomes its anchor's: a product's or, at level 3, a reduction's
        self.has_anchor = [p in (OUT_ELEMWISE_FUSABLE, COMM_REDUCE) for p in g.pattern]
        self.num_nodes = [1] * n
        self.epilogues = opt_level >= REDUCTION_EPILOGUE_LEVEL
        if opt_level > 0:
            tree = _PostDomTree(g)
            for phase in range(3):
                self._run(tree, phase)

    def find(self, i: int) -> int:
        parent = self.parent
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    def _merge(self, child: int, parent: int) -> None:
        child, parent = self.find(child), self.find(parent)
        if child == parent:
            return
        self.num_nodes[parent] += self.num_nodes[child]
        self.parent[child] = parent
        if self.has_anchor[child]:
            self.has_anchor[parent] = True
            self.pattern[parent] = max(self.pattern[child], self.pattern[parent])

    def _between(self, src: int, sink: int) -> list[int]:
        """The nodes on the paths from ``src``'s users to ``sink`` (``sink`` included)."""
        outputs = self.g.outputs
        seen = {src}
        out: list[int] = []
        stack = [j for j, _ in outputs[src]]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            out.append(node)
            if node != sink:
                stack.extend(j for j, _ in outputs[node])
        return out

    def _check_path(self, src: int, sink: int, fcond: PathCondition) -> bool:
        outputs = self.g.outputs
        seen: set[int] = set()
        stack = [j for j, _ in outputs[src]]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if not fcond(self.pattern[self.find(node)], node == sink):
                return False
            if node != sink:
                stack.extend(j for j, _ in outputs[node])
        return True

    def _commit(self, src: int, sink: int) -> None:
        target = sink
        self._merge(src, target)
        for node in self._between(src, sink):
            self._merge(node, target)

    def _fused_size(self, child: int, sink: int) -> int:
        """The size of ``sink``'s group if ``child`` and the paths to ``sink`` joined it."""
        total = self.num_nodes[self.find(sink)] + self.num_nodes[child]
        for node in self._between(child, sink):
            if node != sink:
                total += self.num_nodes[node]
        return total

    def _run(self, tree: _PostDomTree, phase: int) -> None:
        for nid in range(len(self.g.nodes)):
            dom = tree.parent[nid]
            if dom >= 0 and self._fusable(nid, dom, tree.pattern[nid], phase):
                self._commit(nid, dom)

    def _fusable(self, nid: int, dom: int, dom_pattern: OpPattern, phase: int) -> bool:
        """Whether node ``nid`` fuses into its post-dominator ``dom`` in ``phase``."""
        own = self.pattern[nid]  # as in TVM, the pattern of the node's own group record
        if own == OPAQUE or self._fused_size(nid, dom) > self.max_depth:
            return False
        if phase == 2:
            # elementwise and injective nodes join a tuple already fused into its consumer
            dom_root = self.pattern[self.find(dom)]
            return (
                own <= INJECTIVE
                and dom_root != TUPLE
                and self.pattern[dom] == TUPLE
                and dom_root <= INJECTIVE
                and self._check_path(nid, dom, _injective)
            )
        if self.find(nid) == self.find(dom) or self.pattern[dom] == TUPLE:
            return False  # already fused; nothing fuses into a tuple in phases 0 and 1
        if own == OUT_ELEMWISE_FUSABLE:
            return (
                phase == 0
                and dom_pattern == ELEMWISE
                and self._check_path(nid, dom, _at_most_broadcast)
            )
        if own <= BROADCAST:
            return (dom_pattern <= INJECTIVE or dom_pattern == COMM_REDUCE) and self._check_path(
                nid, dom, _elemwise_path
            )
        if own in (INJECTIVE, TUPLE):
            # after phase 0, so that anchors have taken their elementwise successors first
            return phase == 1 and self._check_path(nid, dom, _injective)
        # COMM_REDUCE: its inputs fuse into it; from level 3 it takes its epilogue too
        return (
            self.epilogues
            and phase == 0
            and dom_pattern == ELEMWISE
            and (self.scalar_epilogues or not _is_scalar(self.g.nodes[nid]))
            and self._check_path(nid, dom, _at_most_broadcast)
        )


def _is_scalar(expr: Expr) -> bool:
    t = _type_of(expr)
    return isinstance(t, TensorType) and len(t.shape) == 0


_UNIT_DIM_OPS = frozenset({"squeeze", "expand_dims", "reshape", "reshape_like"})


def _only_unit_dims_change(call: Call, rtype: Type | None) -> bool:
    """A reshape that only adds or removes dimensions of size 1: element ``i`` of the input
    is element ``i`` of the result at an index that is an affine map of the input's, so it
    is elementwise for fusion (``w @ x`` with a vector ``x`` is ``expand_dims``, the
    product and ``squeeze``, and the squeeze joins the product's epilogue)."""
    atype = _type_of(call.args[0])
    if not (isinstance(rtype, TensorType) and isinstance(atype, TensorType)):
        return False
    if not all(isinstance(d, int) for d in (*rtype.shape, *atype.shape)):
        return False
    return [d for d in rtype.shape if d != 1] == [d for d in atype.shape if d != 1]


def _injective(kind: OpPattern, is_sink: bool) -> bool:
    return kind <= INJECTIVE


def _at_most_broadcast(kind: OpPattern, is_sink: bool) -> bool:
    return kind <= BROADCAST


def _elemwise_path(kind: OpPattern, is_sink: bool) -> bool:
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= OUT_ELEMWISE_FUSABLE


class _GroupInfo:
    """The parameters of a group's function and the arguments that feed them."""

    __slots__ = ("args", "has_call", "params")

    def __init__(self) -> None:
        self.params: list[Var] = []
        self.args: list[Expr] = []
        self.has_call = False

    def param_for(self, arg: Expr, ty: Type) -> Var:
        for i, a in enumerate(self.args):
            if a is arg:
                return self.params[i]
        var = Var(f"p{len(self.params)}", ty)
        self.params.append(var)
        self.args.append(arg)
        return var


class _FuseMutator(ExprMutator):
    """Rebuilds the function with each group wrapped in a primitive function (step 4)."""

    previsit = frozenset({Call, Tuple, TupleGetItem})

    def __init__(self, g: _Graph, groups: _Partitioner) -> None:
        super().__init__()
        self.g = g
        self.groups = groups
        self.info: dict[int, _GroupInfo] = {}

    def _group(self, expr: Expr) -> int:
        return self.groups.find(self.g.index[expr])

    def _info(self, group: int) -> _GroupInfo:
        info = self.info.get(group)
        if info is None:
            info = self.info[group] = _GroupInfo()
        return info

    def _new_args(self, args: Sequence[Expr], group: int) -> tuple[Expr, ...]:
        out: list[Expr] = []
        for arg in args:
            new = self.visit(arg)
            if self._group(arg) != group:
                out.append(self._info(group).param_for(new, arg.checked_type))
            else:
                out.append(new)
        return tuple(out)

    def _is_root(self, expr: Expr, group: int) -> bool:
        return group == self.g.index[expr]

    def _make_function(self, group: int, ret_type: Type, body: Expr) -> Expr:
        info = self._info(group)
        if not info.has_call:
            # no operator to compute (e.g. a projection of a fused tuple of parameters):
            # substitute the arguments back instead of making an empty kernel
            return _Substitute(dict(zip(info.params, info.args, strict=True))).visit(body)
        func = Function(tuple(info.params), body, ret_type, attrs=Attrs({"Primitive": 1}))
        return Call(func, tuple(info.args))

    def visit_function(self, f: Function) -> Expr:
        if _is_primitive(f):
            return f
        return super().visit_function(f)

    def visit_call(self, call: Call) -> Expr:
        if not isinstance(call.op, Op):
            return super().visit_call(call)
        group = self._group(call)
        self._info(group).has_call = True
        args = self._new_args(call.args, group)
        new = Call(call.op, args, call.attrs, call.type_args, span=call.span)
        if self._is_root(call, group):
            return self._make_function(group, call.checked_type, new)
        return new

    def visit_tuple(self, t: Tuple) -> Expr:
        group = self._group(t)
        if self._is_root(t, group):
            return super().visit_tuple(t)
        return Tuple(self._new_args(t.fields, group), span=t.span)

    def visit_tuple_getitem(self, t: TupleGetItem) -> Expr:
        group = self._group(t)
        if self._is_root(t, group) and self._group(t.tuple_value) != group:
            return super().visit_tuple_getitem(t)  # a projection of another group's tuple
        (tup,) = self._new_args([t.tuple_value], group)
        new = TupleGetItem(tup, t.index, span=t.span)
        if self._is_root(t, group):
            return self._make_function(group, t.checked_type, new)
        return new


class _Substitute(ExprMutator):
    def __init__(self, subst: dict[Var, Expr]) -> None:
        super().__init__()
        self.subst = subst

    def visit_var(self, var: Var) -> Expr:
        return self.subst.get(var, var)


def fuse_ops(
    func: Function,
    opt_level: int = 2,
    max_depth: int = DEFAULT_MAX_DEPTH,
    scalar_epilogues: bool = True,
) -> Function:
    """``func`` (typed) with its operator calls fused into primitive functions (see the
    module docs); ``opt_level=0`` makes each call a primitive function of its own;
    ``scalar_epilogues``: see :data:`SCALAR_EPILOGUES_CONFIG`."""
    if _is_primitive(func):
        return func
    g = _Graph(func.body)
    groups = _Partitioner(g, opt_level, max_depth, scalar_epilogues)
    body = _FuseMutator(g, groups).visit(func.body)
    if body is func.body:
        return func
    return Function(func.params, body, func.ret_type, func.type_params, func.attrs, span=func.span)


def _typed(mod: Module) -> bool:
    return all(_type_of(f.body) is not None for f in mod.functions.values() if not _is_primitive(f))


def FuseOps(fuse_opt_level: int = -1) -> Pass:
    """Fuse operator calls into ``Primitive=1`` functions, as TVM's ``FuseOps`` (see
    :mod:`relay.passes.fuse_ops`). ``fuse_opt_level=-1`` takes the context's opt level;
    at level 0 each call is a primitive function of its own. Requires ``InferType``
    (and infers types itself when called directly on an untyped module)."""

    def run(mod: Module, ctx: PassContext) -> Module:
        if not _typed(mod):
            from relay.passes.infer_type import InferType

            mod = InferType()(mod)
        level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
        max_depth = int(ctx.config.get(MAX_DEPTH_CONFIG, DEFAULT_MAX_DEPTH))
        scalar = bool(ctx.config.get(SCALAR_EPILOGUES_CONFIG, True))
        for gv, func in list(mod.functions.items()):
            new = fuse_ops(func, level, max_depth, scalar)
            if new is not func:
                mod.update_func(gv, new)  # the manager handed this pass a copy
        return mod

    return ModulePass(run, PassInfo("FuseOps", 0, ("InferType",)))


__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_DEPTH_CONFIG",
    "SCALAR_EPILOGUES_CONFIG",
    "FuseOps",
    "fuse_ops",
]
