"""Higher-order reverse-mode AD (relay.passes.higher_order_ad through relay.passes.gradient):
recursion, closures, data types, references, branches, interprocedural calls and grad of
grad, each checked against analytic derivatives or central differences; the generated IR
is well typed and survives the standard pipeline."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.errors import CompileError
from relay.ir import Expr, Function, Let, Module, TensorType, Var
from relay.passes import PassContext, standard_pipeline
from relay.passes.gradient import Gradient, gradient, is_first_order
from relay.testing import numerical_gradient

HEAD = '#[version = "0.0.5"]\n'
V3 = "Tensor[(3,), float64]"


def module(src: str, prelude: bool = False) -> Module:
    text = HEAD + src.replace("V3", V3)
    return relay.parse(text, module=relay.prelude()) if prelude else relay.parse(text)


def grad_of(mod: Module, name: str = "main", mode: str = "higher_order", **kw: object) -> Function:
    g = gradient(name, mod, mode=mode, **kw)  # type: ignore[arg-type]
    mod.add(f"{name}_grad", g, update=True)
    relay.infer_type(mod)
    return mod[f"{name}_grad"]  # type: ignore[return-value]


def run(mod: Module, name: str, *args: object) -> object:
    return relay.interpret(mod[name], *args, mod=mod)  # type: ignore[arg-type]


def numeric(mod: Module, name: str, *args: np.ndarray) -> list[np.ndarray]:
    def f(*xs: np.ndarray) -> float:
        return float(np.sum(run(mod, name, *xs)))  # type: ignore[arg-type]

    return numerical_gradient(f, list(args), range(len(args)))


X = np.array([0.5, -1.25, 2.0])
Y = np.array([1.5, 0.75, -0.5])


def test_power_by_recursion() -> None:
    mod = module(
        """
        def @pow(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { ones_like(%x) } else { %x * @pow(%x, %n - 1) }
        }
        def @main(%x: V3) -> V3 { @pow(%x, 4) }
        """
    )
    grad_of(mod)
    value, (dx,) = run(mod, "main_grad", X)  # type: ignore[misc]
    np.testing.assert_allclose(value, X**4)
    np.testing.assert_allclose(dx, 4 * X**3)
    assert "pow_rev" in {g.name_hint for g in mod.functions}


def test_the_recursive_global_is_rewritten_once_with_the_tape_first() -> None:
    mod = module(
        """
        def @pow(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { ones_like(%x) } else { %x * @pow(%x, %n - 1) }
        }
        def @main(%x: V3) -> V3 { @pow(%x, 2) }
        """
    )
    grad_of(mod)
    rev = mod["pow_rev"]
    assert isinstance(rev, Function)
    assert [p.name_hint for p in rev.params] == ["bp", "x", "n"]
    assert str(rev.checked_type) == (
        "fn (ref(fn () -> ()), (Tensor[(3,), float64], ref(Tensor[(3,), float64])), int32) "
        "-> (Tensor[(3,), float64], ref(Tensor[(3,), float64]))"
    )


def test_mutual_recursion_and_data_dependent_branches() -> None:
    # even/odd alternate sin and cos steps; the branch depends on a tensor's value
    mod = module(
        """
        def @even(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { %x } else { @odd(sin(%x), %n - 1) }
        }
        def @odd(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { %x } else {
            if (sum(%x) > 0f64) { @even(cos(%x) * %x, %n - 1) } else { @even(%x * %x, %n - 1) }
          }
        }
        def @main(%x: V3) -> V3 { @even(%x, 5) }
        """
    )
    grad_of(mod)
    value, (dx,) = run(mod, "main_grad", X)  # type: ignore[misc]
    np.testing.assert_allclose(value, run(mod, "main", X))
    np.testing.assert_allclose(dx, numeric(mod, "main", X)[0], rtol=1e-6, atol=1e-8)


def test_closures_created_and_called_inside() -> None:
    mod = module(
        """
        def @main(%x: V3, %y: V3) -> V3 {
          let %scale = fn (%z: V3) -> V3 { %z * %y };
          let %twice = fn (%f: fn (V3) -> V3, %z: V3) -> V3 { %f(%f(%z)) };
          %twice(%scale, tanh(%x)) + %scale(%x)
        }
        """
    )
    grad_of(mod)
    value, (dx, dy) = run(mod, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(value, np.tanh(X) * Y * Y + X * Y)
    np.testing.assert_allclose(dx, (1 - np.tanh(X) ** 2) * Y * Y + Y)
    np.testing.assert_allclose(dy, 2 * np.tanh(X) * Y + X)


def test_summing_over_a_list_and_mapping_a_closure() -> None:
    mod = module(
        """
        def @main(%x: V3, %y: V3) -> V3 {
          let %xs = Cons(%x, Cons(%y, Cons(%x * %y, Nil)));
          let %ys = @map(fn (%v: V3) -> V3 { %v * %x }, %xs);
          @foldl(fn (%acc: V3, %v: V3) -> V3 { %acc + %v }, zeros_like(%x), %ys)
        }
        """,
        prelude=True,
    )
    grad_of(mod)
    value, (dx, dy) = run(mod, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(value, X * X + Y * X + X * Y * X)
    np.testing.assert_allclose(dx, 2 * X + Y + 2 * X * Y)
    np.testing.assert_allclose(dy, X + X * X)
    # List is polymorphic: it is instantiated at the rewritten type, not copied
    assert "List_rev" not in {g.name_hint for g in mod.type_definitions}


def test_a_data_type_with_tensor_fields_gets_a_derived_copy() -> None:
    mod = module(
        """
        type Tree {
          Leaf(V3),
          Node(Tree, Tree),
        }
        def @total(%t: Tree) -> V3 {
          match (%t) {
            Leaf(%v) => %v,
            Node(%l, %r) => @total(%l) * @total(%r),
          }
        }
        def @main(%x: V3, %y: V3) -> V3 {
          @total(Node(Leaf(%x), Node(Leaf(%y), Leaf(sin(%x)))))
        }
        """
    )
    grad_of(mod)
    value, (dx, dy) = run(mod, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(value, X * Y * np.sin(X))
    np.testing.assert_allclose(dx, Y * np.sin(X) + X * Y * np.cos(X))
    np.testing.assert_allclose(dy, X * np.sin(X))
    names = {g.name_hint for g in mod.type_definitions}
    assert "Tree_rev" in names
    assert [c.name_hint for c in mod.get_type("Tree_rev").constructors] == ["Leaf_rev", "Node_rev"]


def test_references_hold_differentiable_values() -> None:
    mod = module(
        """
        def @main(%x: V3) -> V3 {
          let %r = ref(%x);
          let %a = ref_write(%r, ref_read(%r) * %x);
          let %b = ref_write(%r, ref_read(%r) * %x);
          ref_read(%r) + %x
        }
        """
    )
    grad_of(mod)
    value, (dx,) = run(mod, "main_grad", X)  # type: ignore[misc]
    np.testing.assert_allclose(value, X**3 + X)
    np.testing.assert_allclose(dx, 3 * X**2 + 1)


def test_integer_values_and_comparisons_carry_no_gradient() -> None:
    mod = module(
        """
        def @main(%x: V3, %k: Tensor[(3,), int32]) -> V3 {
          let %w = cast(%k, dtype="float64");
          where(%x > 0f64, %x * %w, %x * %x)
        }
        """
    )
    grad_of(mod)
    k = np.array([2, 3, 4], "int32")
    _, (dx, dk) = run(mod, "main_grad", X, k)  # type: ignore[misc]
    np.testing.assert_allclose(dx, np.where(X > 0, k, 2 * X))
    assert dk.dtype == np.int32 and not dk.any()


@pytest.mark.parametrize("order", [1, 2, 3])
def test_grad_of_grad_through_recursion(order: int) -> None:
    mod = module(
        """
        def @pow(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { ones_like(%x) } else { %x * @pow(%x, %n - 1) }
        }
        def @d0(%x: V3) -> V3 { @pow(%x, 4) }
        """
    )
    for k in range(1, order + 1):
        grad_of(mod, f"d{k - 1}")
        extra = relay.parse(
            HEAD + f"def @d{k}(%x: {V3}) -> {V3} {{ @d{k - 1}_grad(%x).1.0 }}", module=mod
        )
        mod = extra
    relay.infer_type(mod)
    want = [X**4, 4 * X**3, 12 * X**2, 24 * X]
    np.testing.assert_allclose(run(mod, f"d{order}", X), want[order])  # type: ignore[arg-type]


def test_hessian_vector_product_by_reverse_over_reverse() -> None:
    # f(x) = sum(sin(x) * x); H v = d/dx <grad f(x), v>
    mod = module(
        """
        def @f(%x: V3) -> V3 { sin(%x) * %x }
        def @main(%x: V3, %v: V3) -> V3 { @f(%x) * %v }
        """
    )
    grad_of(mod, "f", mode="higher_order")
    mod = relay.parse(
        HEAD + f"def @gv(%x: {V3}, %v: {V3}) -> {V3} {{ @f_grad(%x).1.0 * %v }}", module=mod
    )
    grad_of(mod, "gv", argnums=0)
    _, hv = run(mod, "gv_grad", X, Y)  # type: ignore[misc]
    hessian_diag = 2 * np.cos(X) - X * np.sin(X)
    np.testing.assert_allclose(hv, hessian_diag * Y)


def test_auto_mode_takes_the_first_order_mode_for_straight_line_code() -> None:
    straight = module("def @main(%x: V3, %y: V3) -> V3 { let %t = %x * %y; tanh(%t) + %x }")
    assert is_first_order(straight["main"])  # type: ignore[arg-type]
    g = gradient("main", straight)
    text = relay.astext(g)
    assert "ref" not in text and "fn ()" not in text
    branchy = module("def @main(%x: V3) -> V3 { if (sum(%x) > 0f64) { %x } else { -%x } }")
    assert not is_first_order(branchy["main"])  # type: ignore[arg-type]
    assert "ref(" in relay.astext(gradient("main", branchy))


@st.composite
def straight_line(draw: st.DrawFn) -> str:
    """A random straight-line program over two vectors (smooth operators only)."""
    names = ["%x", "%y"]
    lines = []
    for i in range(draw(st.integers(1, 6))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        op = draw(st.sampled_from(["add", "subtract", "multiply", "sin", "tanh", "sigmoid"]))
        expr = f"{op}({a}, {b})" if op in ("add", "subtract", "multiply") else f"{op}({a})"
        lines.append(f"let %t{i} = {expr};")
        names.append(f"%t{i}")
    return f"def @main(%x: V3, %y: V3) -> V3 {{ {' '.join(lines)} {names[-1]} }}"


@settings(max_examples=25, deadline=None)
@given(straight_line())
def test_both_modes_agree_on_random_straight_line_programs(src: str) -> None:
    first = module(src)
    grad_of(first, mode="first_order")
    higher = module(src)
    grad_of(higher, mode="higher_order")
    v1, g1 = run(first, "main_grad", X, Y)  # type: ignore[misc]
    v2, g2 = run(higher, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(v1, v2)
    for a, b in zip(g1, g2, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@st.composite
def branchy(draw: st.DrawFn) -> str:
    """A random program with a data-dependent branch, a closure and a loop by recursion."""
    body = draw(straight_line()).split("{ ", 1)[1].rsplit(" }", 1)[0]
    n = draw(st.integers(0, 3))
    return f"""
        def @loop(%f: fn (V3) -> V3, %v: V3, %n: int32) -> V3 {{
          if (%n == 0) {{ %v }} else {{ @loop(%f, %f(%v), %n - 1) }}
        }}
        def @main(%x: V3, %y: V3) -> V3 {{
          let %step = fn (%v: V3) -> V3 {{ tanh(%v * %y) }};
          let %h = @loop(%step, %x, {n});
          if (sum(%h) > 0f64) {{ %h * %x }} else {{
            let %x = %h; {body}
          }}
        }}
        """


@settings(max_examples=20, deadline=None)
@given(branchy(), st.integers(0, 2**31 - 1))
def test_random_higher_order_programs_match_central_differences(src: str, seed: int) -> None:
    mod = module(src)
    grad_of(mod)
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    value, grads = run(mod, "main_grad", x, y)  # type: ignore[misc]
    np.testing.assert_allclose(value, run(mod, "main", x, y))
    for got, want in zip(grads, numeric(mod, "main", x, y), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_the_gradient_pass_and_the_standard_pipeline() -> None:
    mod = module(
        """
        def @pow(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { ones_like(%x) } else { %x * @pow(%x, %n - 1) }
        }
        def @main(%x: V3) -> V3 { @pow(%x, 3) }
        """
    )
    out = Gradient()(mod)
    assert "main_grad" in out and "main_grad" not in mod
    with PassContext(opt_level=3):
        optimized = standard_pipeline(["main_grad"])(out)
    assert "main" not in optimized
    _, (dx,) = relay.interpret(optimized["main_grad"], X, mod=optimized)  # type: ignore[arg-type,misc]
    np.testing.assert_allclose(dx, 3 * X**2)


def test_unused_gradients_are_removed_by_dead_code_elimination() -> None:
    mod = module("def @main(%x: V3, %y: V3) -> V3 { tanh(%x) * exp(%y) }")
    out = Gradient(argnums=(0,), mode="first_order")(mod)
    with PassContext(opt_level=3):
        optimized = standard_pipeline(["main_grad"])(out)
    text = relay.astext(optimized["main_grad"])
    assert "tanh" in text and text.count("exp(") == 1  # no adjoint computed for %y


def test_argnums() -> None:
    mod = module("def @main(%x: V3, %y: V3) -> V3 { %x * %y * %y }")
    mod.add("g1", gradient("main", mod, argnums=1))
    mod.add("g0", gradient("main", mod, argnums=(-2,)))
    relay.infer_type(mod)
    _, dy = run(mod, "g1", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(dy, 2 * X * Y)
    _, (dx,) = run(mod, "g0", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(dx, Y * Y)
    with pytest.raises(CompileError, match=r"argnums 2 is out of range for a function of 2"):
        gradient("main", mod, argnums=2)
    with pytest.raises(CompileError, match=r"argnums \(0, -2\) repeats a parameter"):
        gradient("main", mod, argnums=(0, -2))


def test_errors() -> None:
    ints = module("def @main(%x: Tensor[(3,), int32]) -> Tensor[(3,), int32] { %x + %x }")
    with pytest.raises(CompileError, match=r"must return a floating-point tensor, got"):
        gradient("main", ints, mode="higher_order")
    fparam = module("def @main(%f: fn (V3) -> V3, %x: V3) -> V3 { %f(%x) }")
    with pytest.raises(CompileError, match=r"cannot differentiate with respect to the param"):
        gradient("main", fparam)
    floor = module(
        "def @main(%x: V3) -> V3 { if (sum(%x) > 0f64) { floor_divide(%x, %x) } else { %x } }"
    )
    with pytest.raises(relay.RelayError, match=r"cannot differentiate through floor_divide"):
        gradient("main", floor)
    with pytest.raises(ValueError, match=r"gradient mode must be one of"):
        gradient("main", floor, mode="sideways")


def test_long_programs_need_no_recursion() -> None:
    # each binding is a backward step on the tape; the tape runs as tail calls
    n = 3000
    x = Var("x", TensorType((2,), "float64"))
    names = [Var(f"v{i}") for i in range(n)]
    body: Expr = names[-1]
    for i in reversed(range(n)):
        prev = names[i - 1] if i else x
        body = Let(names[i], relay.op.multiply(prev, relay.const(np.float64(1.001))), body)
    limit = sys.getrecursionlimit()
    mod = Module()
    g = gradient(Function((x,), body), mod, mode="higher_order")
    assert sys.getrecursionlimit() == limit
    value, (gx,) = relay.interpret(g, np.ones(2), mod=mod)  # type: ignore[misc]
    np.testing.assert_allclose(value, np.full(2, 1.001**n))
    np.testing.assert_allclose(gx, np.full(2, 1.001**n))


def test_deep_dataflow_without_lets_needs_no_recursion() -> None:
    x = Var("x", TensorType((2,), "float64"))
    body: Expr = x
    for _ in range(3000):
        body = relay.op.multiply(body, relay.const(np.float64(1.001)))
    mod = Module()
    g = gradient(Function((x,), body), mod, mode="higher_order")
    _, (gx,) = relay.interpret(g, np.ones(2), mod=mod)  # type: ignore[misc]
    np.testing.assert_allclose(gx, np.full(2, 1.001**3000))


def test_a_shared_effectful_node_runs_at_each_use() -> None:
    # graph form: %r's cell is written by %w, then read; the interpreter evaluates shared
    # nodes at each use, and the derivative must describe that same program
    src = """
        def @main(%x: V3, %y: V3) -> V3 {
          %r = ref(%x);
          %w = ref_write(%r, %y);
          (%w, ref_read(%r)).1
        }
        """
    mod = module(src)
    grad_of(mod)
    np.testing.assert_allclose(run(mod, "main", X, Y), X)  # a fresh cell at each use
    value, (dx, dy) = run(mod, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(value, X)
    np.testing.assert_allclose(dx, np.ones(3))
    np.testing.assert_allclose(dy, np.zeros(3))


def test_a_polymorphic_global_used_as_a_value() -> None:
    # the prelude's @iterate returns @id (polymorphic) as a value for n = 0
    mod = module(
        """
        def @main(%x: V3, %y: V3) -> V3 {
          let %f = @iterate(fn (%v: V3) -> V3 { sin(%v) * %y }, 3);
          %f(%x)
        }
        """,
        prelude=True,
    )
    grad_of(mod)
    value, grads = run(mod, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(value, run(mod, "main", X, Y))
    for got, want in zip(grads, numeric(mod, "main", X, Y), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_a_data_type_over_a_shape_parameter() -> None:
    mod = module(
        """
        type Vec[n: Shape] { MkV(Tensor[(n,), float64]) }
        def @un(%v: Vec[n]) -> Tensor[(n,), float64] { match (%v) { MkV(%t) => %t } }
        def @main(%x: V3, %y: V3) -> V3 { @un(MkV(%x * %y)) * %x }
        """
    )
    grad_of(mod)
    _, (dx, dy) = run(mod, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(dx, 2 * X * Y)
    np.testing.assert_allclose(dy, X * X)
    assert "Vec_rev" in {g.name_hint for g in mod.type_definitions}


def test_gradient_with_respect_to_a_data_value() -> None:
    mod = module(
        """
        type Tree {
          Leaf(V3, int32),
          Node(Tree, Tree),
        }
        def @total(%t: Tree, %x: V3) -> V3 {
          match (%t) {
            Leaf(%v, %k) => %v * %x,
            Node(%l, %r) => @total(%l, %x) * @total(%r, %x),
          }
        }
        def @main(%t: Tree, %x: V3) -> V3 { @total(%t, %x) }
        """
    )
    grad_of(mod)
    tree_t = mod.get_type("Tree")
    leaf, node = tree_t.constructors
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    from relay.backend.interpreter.values import ConstructorValue

    one, two = np.array(1, "int32"), np.array(2, "int32")
    tree = ConstructorValue(
        node, (ConstructorValue(leaf, (a, one)), ConstructorValue(leaf, (b, two)))
    )
    value, (gt, gx) = run(mod, "main_grad", tree, X)  # type: ignore[misc]
    np.testing.assert_allclose(value, a * X * b * X)
    np.testing.assert_allclose(gx, 2 * a * b * X)
    (ga, ka), (gb, kb) = (leaf_value.fields for leaf_value in gt.fields)
    np.testing.assert_allclose(ga, X * b * X)
    np.testing.assert_allclose(gb, a * X * X)
    assert ka == 0 and kb == 0  # integers get zero gradients
    names = {g.name_hint for g in mod.functions}
    assert {"Tree_rev_lift", "Tree_adjoint", "total_rev"} <= names


def test_data_parameters_need_the_higher_order_mode_and_no_closures() -> None:
    lst = module("def @main(%l: List[V3], %x: V3) -> V3 { %x * %x }", prelude=True)
    with pytest.raises(CompileError, match=r"only tensors and tuples of them\)"):
        gradient("main", lst, mode="first_order")
    from relay.backend.interpreter.values import ConstructorValue

    nil = ConstructorValue(lst.get_constructor("Nil"))
    _, (_, gx) = relay.interpret(gradient("main", lst), nil, X, mod=lst)  # type: ignore[misc]
    np.testing.assert_allclose(gx, 2 * X)
    fns = module("def @main(%l: List[fn (V3) -> V3], %x: V3) -> V3 { %x }", prelude=True)
    with pytest.raises(CompileError, match=r"cannot carry adjoints from outside"):
        gradient("main", fns)
