"""The dataflow pattern language: matching, node maps, printing, and the rewrite driver."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir.expr import Call, Constant, Expr, Function, Let, Op, Tuple, Var, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.passes.pattern import (
    DFPattern,
    DFPatternCallback,
    NodeMap,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    rewrite,
    rewrite_module,
    rule,
    wildcard,
)
from tests.strategies import TypedProgram, well_typed_programs

F = "Tensor[(2, 3), float32]"


def fn(text: str) -> Function:
    e = relay.parse_expr(text)
    assert isinstance(e, Function)
    return e


def body_of(text: str) -> Expr:
    return fn(text).body


# -- matching -------------------------------------------------------------------------------------


def test_leaf_patterns() -> None:
    x = Var("x")
    c = const(1.0)
    assert wildcard().match(x) and wildcard().match(c)
    assert is_var().match(x) and is_var("x").match(x)
    assert not is_var("y").match(x) and not is_var().match(c)
    assert is_constant().match(c) and not is_constant().match(x)
    assert is_op("add").match(Op.get("add")) and not is_op("add").match(Op.get("multiply"))


def test_is_op_rejects_unknown_operators() -> None:
    with pytest.raises(KeyError):
        is_op("no_such_op")


def test_is_expr_matches_structurally() -> None:
    a = body_of(f"fn (%x: {F}) {{ add(%x, 1f) }}")
    assert isinstance(a, Call)
    same = Call(a.op, (a.args[0], const(1.0)))
    other = Call(a.op, (a.args[0], const(2.0)))
    assert is_expr(a).match(same)
    assert not is_expr(a).match(other)


def test_expressions_in_call_patterns_stand_for_is_expr() -> None:
    f = fn(f"fn (%x: {F}) {{ add(%x, 1f) }}")
    x = f.params[0]
    assert is_op("add")(x, const(1.0)).match(f.body)
    assert not is_op("add")(x, const(2.0)).match(f.body)
    assert not is_op("add")(Var("x"), const(1.0)).match(f.body)  # another variable


def test_call_pattern_arguments_and_arity() -> None:
    e = body_of(f"fn (%x: {F}) {{ add(%x, 1f) }}")
    assert is_op("add")(wildcard(), is_constant()).match(e)
    assert not is_op("add")(is_constant(), is_var("y")).match(e)
    assert not is_op("add")(wildcard()).match(e)
    assert not is_op("subtract")(wildcard(), wildcard()).match(e)


def test_add_and_multiply_match_with_arguments_swapped() -> None:
    e = body_of(f"fn (%x: {F}) {{ multiply(2f, %x) }}")
    x, c = is_var("x"), is_constant()
    m = is_op("multiply")(x, c).match_map(e)
    assert m is not None
    assert isinstance(m[x][0], Var) and isinstance(m[c][0], Constant)
    # subtract does not commute
    s = body_of(f"fn (%x: {F}) {{ subtract(2f, %x) }}")
    assert not is_op("subtract")(is_var(), is_constant()).match(s)


def test_a_pattern_used_twice_matches_one_node() -> None:
    x = wildcard()
    pat = is_op("add")(x, x)
    assert pat.match(body_of(f"fn (%a: {F}) {{ add(%a, %a) }}"))
    assert not pat.match(body_of(f"fn (%a: {F}, %b: {F}) {{ add(%a, %b) }}"))


def test_failed_alternative_leaves_no_bindings() -> None:
    x = wildcard()
    c = is_constant()
    # the left alternative binds x to %a then fails on c; the right one must see x unbound
    pat = is_op("add")(x, c) | is_op("add")(is_var("a"), x)
    e = body_of(f"fn (%a: {F}, %b: {F}) {{ add(%a, %b) }}")
    m = pat.match_map(e)
    assert m is not None
    bound = m[x][0]
    assert isinstance(bound, Var) and bound.name_hint == "b"
    assert c not in m


def test_optional_matches_with_and_without_the_option() -> None:
    pat = is_op("exp")(wildcard()).optional(lambda p: is_op("negative")(p))
    assert pat.match(body_of(f"fn (%x: {F}) {{ exp(%x) }}"))
    assert pat.match(body_of(f"fn (%x: {F}) {{ negative(exp(%x)) }}"))
    assert not pat.match(body_of(f"fn (%x: {F}) {{ negative(%x) }}"))


def test_has_attr_on_calls_operators_and_functions() -> None:
    e = body_of(f"fn (%x: {F}) {{ transpose(%x, axes=[1, 0]) }}")
    assert is_op("transpose")(wildcard()).has_attr({"axes": [1, 0]}).match(e)
    assert not is_op("transpose")(wildcard()).has_attr({"axes": [0, 1]}).match(e)
    assert not is_op("transpose")(wildcard()).has_attr({"nonexistent": 1}).match(e)
    elemwise = int(relay.op.get_op("exp").pattern)
    assert is_op("exp").has_attr({"TOpPattern": elemwise}).match(Op.get("exp"))
    assert not is_op("nn.dense").has_attr({"TOpPattern": elemwise}).match(Op.get("nn.dense"))
    f = fn(f"fn (%x: {F}) {{ %x }}").with_attr("Primitive", 1)
    assert wildcard().has_attr({"Primitive": 1}).match(f)
    assert not wildcard().has_attr({"Primitive": True}).match(f)


def test_type_predicates_need_inferred_types() -> None:
    f = fn(f"fn (%x: {F}) {{ add(%x, 1f) }}")
    add = f.body
    assert not wildcard().has_dtype("float32").match(add)  # not inferred yet
    relay.infer_type(f)
    assert wildcard().has_dtype("float32").match(add)
    assert not wildcard().has_dtype("float16").match(add)
    assert wildcard().has_shape((2, 3)).match(add)
    assert not wildcard().has_shape((3, 2)).match(add)
    assert wildcard().has_type(TensorType((2, 3), "float32")).match(add)
    assert not wildcard().has_type(TensorType((2, 3), "int32")).match(add)


def test_tuple_projection_if_and_let_patterns() -> None:
    t = body_of(f"fn (%x: {F}) {{ (%x, 1f).1 }}")
    assert is_tuple_get_item(is_tuple([is_var(), is_constant()]), 1).match(t)
    assert is_tuple_get_item(is_tuple(None)).match(t)
    assert not is_tuple_get_item(wildcard(), 0).match(t)
    assert not is_tuple([wildcard()]).match(Tuple((Var("a"), Var("b"))))
    i = body_of(f"fn (%c: bool, %x: {F}) {{ if (%c) {{ %x }} else {{ negative(%x) }} }}")
    x = is_var("x")
    assert is_if(is_var("c"), x, is_op("negative")(x)).match(i)
    assert not is_if(wildcard(), is_constant(), wildcard()).match(i)
    let = body_of(f"fn (%x: {F}) {{ let %y = exp(%x); %y }}")
    y = is_var("y")
    assert is_let(y, is_op("exp")(wildcard()), y).match(let)
    assert not is_let(y, is_constant(), y).match(let)


def test_patterns_print_readably() -> None:
    assert repr(is_op("add")(wildcard(), is_constant())) == "add(*, const)"
    assert repr(is_op("add") | is_op("multiply")) == "(add | multiply)"
    assert repr(is_tuple_get_item(is_op("nn.dropout")(is_var("x")), 0)) == "nn.dropout(%x).0"
    assert repr(wildcard().has_dtype("float32")) == "*.has_dtype('float32')"
    assert repr(wildcard().has_shape((3, 4))) == "*.has_shape((3, 4))"
    assert repr(is_op("transpose")(wildcard()).has_attr({"axes": [1, 0]})) == (
        "transpose(*).has_attr(axes=(1, 0))"
    )
    assert repr((is_op("add") | is_op("subtract"))(wildcard(), wildcard())) == (
        "(add | subtract)(*, *)"
    )


# -- rewriting ------------------------------------------------------------------------------------


class AddSelfToDouble(DFPatternCallback):
    """``add(x, x)`` -> ``multiply(x, 2f)`` (TVM style: a subclass setting ``pattern``)."""

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()
        self.pattern = is_op("add")(self.x, self.x)
        self.calls = 0

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        self.calls += 1
        return Call(Op.get("multiply"), (node_map[self.x][0], const(2.0)))


def test_rewrite_before_and_expected() -> None:
    before = fn(f"fn (%x: {F}) {{ %0 = add(%x, %x); %1 = exp(%0); add(%1, %1) }}")
    expected = fn(f"fn (%x: {F}) {{ %0 = multiply(%x, 2f); %1 = exp(%0); multiply(%1, 2f) }}")
    after = rewrite(AddSelfToDouble(), before)
    relay.assert_structural_equal(after, expected)
    x = np.arange(6, dtype="float32").reshape(2, 3) / 10
    np.testing.assert_allclose(relay.interpret(after, x), relay.interpret(before, x), rtol=1e-6)


def test_rewrite_returns_its_input_when_nothing_applies() -> None:
    before = fn(f"fn (%x: {F}, %y: {F}) {{ add(%x, %y) }}")
    assert rewrite(AddSelfToDouble(), before) is before


def test_rewrite_keeps_sharing() -> None:
    before = fn(
        f"fn (%x: {F}) {{ %0 = add(%x, %x); %1 = exp(%0); %2 = log(%0); subtract(%1, %2) }}"
    )
    cb = AddSelfToDouble()
    after = rewrite(cb, before)
    assert cb.calls == 1  # the shared node is rewritten once
    assert isinstance(after, Function) and isinstance(after.body, Call)
    exp_call, log_call = after.body.args
    assert isinstance(exp_call, Call) and isinstance(log_call, Call)
    assert exp_call.args[0] is log_call.args[0]  # still one node, used twice


def test_rewrite_reaches_a_fixed_point_across_sweeps() -> None:
    # negative(negative(x)) -> x exposes another pair above it, in the same or a later sweep
    body = "%x"
    for _ in range(6):
        body = f"negative({body})"
    before = fn(f"fn (%x: {F}) {{ {body} }}")
    inner = wildcard()

    @rule(is_op("negative")(is_op("negative")(inner)))
    def double_negation(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        return node_map[inner][0]

    after = rewrite(double_negation, before)
    relay.assert_structural_equal(after, fn(f"fn (%x: {F}) {{ %x }}"))


def test_callback_sees_pre_and_post() -> None:
    before = fn(f"fn (%x: {F}) {{ %0 = add(%x, %x); negative(%0) }}")
    seen: list[tuple[Expr, Expr]] = []
    inner = wildcard()

    @rule(is_op("negative")(inner))
    def record(pre: Expr, post: Expr, node_map: NodeMap) -> None:
        seen.append((pre, post))
        # the node map holds the rewritten child
        assert isinstance(node_map[inner][0], Call)
        assert node_map[inner][0] is (post.args[0] if isinstance(post, Call) else None)

    rewrite([AddSelfToDouble(), record], before)
    (pre, post), *_ = seen
    assert isinstance(pre, Call) and isinstance(post, Call)
    assert pre.args[0] is before.body.args[0]  # type: ignore[attr-defined]
    assert isinstance(post.args[0], Call) and post.args[0].op is Op.get("multiply")


def test_rewrite_stops_cleanly_at_the_step_limit() -> None:
    before = fn(f"fn (%x: {F}) {{ exp(%x) }}")
    x = wildcard()
    count = 0

    @rule(is_op("exp")(x))
    def forever(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        nonlocal count
        count += 1
        return Call(Op.get("exp"), (node_map[x][0],))  # a new, equal node each time

    after = rewrite(forever, before, max_steps=5)
    assert count == 5
    relay.assert_structural_equal(after, before)


def test_rewrite_rejects_non_expressions() -> None:
    @rule(is_op("exp")(wildcard()))
    def bad(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        return 42  # type: ignore[return-value]

    with pytest.raises(TypeError, match="not an expression"):
        rewrite(bad, fn(f"fn (%x: {F}) {{ exp(%x) }}"))
    with pytest.raises(TypeError):
        rewrite([object()], fn(f"fn (%x: {F}) {{ exp(%x) }}"))  # type: ignore[list-item]


def test_require_type_infers_types_before_matching() -> None:
    x = wildcard()

    @rule(is_op("exp")(x.has_shape((2, 3))), require_type=True)
    def typed(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        return Call(Op.get("log"), (node_map[x][0],))

    @rule(is_op("exp")(x.has_shape((2, 3))))
    def untyped(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        return Call(Op.get("log"), (node_map[x][0],))

    before = fn(f"fn (%x: {F}) {{ exp(%x) }}")
    assert rewrite(untyped, before) is before  # no types, no match
    relay.assert_structural_equal(rewrite(typed, before), fn(f"fn (%x: {F}) {{ log(%x) }}"))


def test_rewrite_leaves_binders_alone() -> None:
    before = fn(f"fn (%x: {F}) {{ let %y = exp(%x); %y }}")

    @rule(is_var("y"))
    def rename(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        return Var("x")  # would break a binder; only the use is replaced

    after = rewrite(rename, before)
    assert isinstance(after, Function) and isinstance(after.body, Let)
    assert after.body.var is before.body.var  # type: ignore[attr-defined]
    assert after.body.body is not before.body.body  # type: ignore[attr-defined]


def test_rewrite_module_skips_primitive_functions_and_keeps_the_input() -> None:
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        f"def @main(%x: {F}) -> {F} {{ add(%x, %x) }}\n"
        f"def @prim(%x: {F}) -> {F} {{ add(%x, %x) }}\n"
    )
    mod.update_func(mod.get_global_var("prim"), mod.function("prim").with_attr("Primitive", 1))
    text = mod.astext()
    out = rewrite_module(AddSelfToDouble(), mod)
    assert mod.astext() == text
    assert "multiply" in out.function("main").astext()
    assert out.function("prim") is mod.function("prim")
    assert rewrite_module(AddSelfToDouble(), out) is out


def chain(n: int, let: bool) -> Function:
    """``x`` through ``n`` operations ``add(v, 1f)`` / ``multiply(v, 1f)``, as a let chain or
    as nested calls."""
    x = Var("x", TensorType((2,), "float32"))
    add, mul, one = Op.get("add"), Op.get("multiply"), const(1.0)
    if not let:
        e: Expr = x
        for i in range(n):
            e = Call(mul if i % 2 else add, (e, one))
        return Function((x,), e)
    vs = [Var(f"v{i}") for i in range(n)]
    body: Expr = vs[-1]
    for i in reversed(range(n)):
        prev = vs[i - 1] if i else x
        body = Let(vs[i], Call(mul if i % 2 else add, (prev, one)), body)
    return Function((x,), body)


@pytest.mark.parametrize("let", [True, False])
def test_rewrite_100000_deep_without_recursion(let: bool) -> None:
    f = chain(100_000, let)
    x = wildcard()

    @rule(is_op("multiply")(x, is_expr(const(1.0))))
    def times_one(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        return node_map[x][0]

    limit = sys.getrecursionlimit()
    out = rewrite(times_one, f)
    assert sys.getrecursionlimit() == limit
    np.testing.assert_allclose(relay.interpret(out, np.zeros(2, "float32")), [50_000, 50_000])
    # every multiply is gone
    e = out.body if isinstance(out, Function) else out
    while isinstance(e, Let):
        assert not (isinstance(e.value, Call) and e.value.op is Op.get("multiply"))
        e = e.body
    while isinstance(e, Call):
        assert e.op is Op.get("add")
        e = e.args[0]


@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(program=well_typed_programs())
def test_rewrite_keeps_results_on_random_programs(program: TypedProgram) -> None:
    """A semantics-preserving rule set (x - y -> x + (-y), maximum(x, x) -> x) through
    random programs: same results, well-typed output."""
    a, b = wildcard(), wildcard()

    @rule(is_op("subtract")(a, b))
    def sub_to_add(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        neg = Call(Op.get("negative"), (node_map[b][0],))
        return Call(Op.get("add"), (node_map[a][0], neg))

    y = wildcard()

    @rule(is_op("maximum")(y, y))
    def max_self(pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        return node_map[y][0]

    before = relay.interpret(program.module, *program.args)
    out = rewrite_module([sub_to_add, max_self], program.module)
    relay.infer_type(out)
    after = relay.interpret(out, *program.args)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)
    assert "subtract" not in out.astext()


def test_pattern_base_needs_text() -> None:
    class Odd(DFPattern):
        __slots__ = ()

    with pytest.raises(NotImplementedError):
        repr(Odd())
    with pytest.raises(TypeError):
        Odd().match(Var("x"))


def test_module_input_not_mutated_by_rewrite() -> None:
    mod = Module()
    f = fn(f"fn (%x: {F}) {{ add(%x, %x) }}")
    mod.add("main", f)
    rewrite_module(AddSelfToDouble(), mod)
    assert mod.function("main") is f
