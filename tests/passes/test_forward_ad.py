"""Forward-mode AD (relay.passes.forward_ad): JVPs through recursion, closures, data types,
references and branches against central differences, the generated IR, and agreement with
the reverse mode (<J v, u> = <v, J^T u>, and Hessian-vector products both ways)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.errors import CompileError
from relay.ir import Expr, Function, Module, TensorType, Var
from relay.passes.forward_ad import jvp
from relay.passes.gradient import gradient
from tests.passes.test_higher_order_ad import straight_line

HEAD = '#[version = "0.0.5"]\n'
V3 = "Tensor[(3,), float64]"

X = np.array([0.5, -1.25, 2.0])
Y = np.array([1.5, 0.75, -0.5])
VX = np.array([1.0, -2.0, 0.5])
VY = np.array([0.25, 0.5, -1.0])


def module(src: str, prelude: bool = False) -> Module:
    text = HEAD + src.replace("V3", V3)
    return relay.parse(text, module=relay.prelude()) if prelude else relay.parse(text)


def run(mod: Module, name: str, *args: object) -> object:
    return relay.interpret(mod[name], *args, mod=mod)  # type: ignore[arg-type]


def with_jvp(mod: Module, name: str = "main") -> Module:
    mod.add(f"{name}_jvp", jvp(name, mod), update=True)
    relay.infer_type(mod)
    return mod


def directional(mod: Module, name: str, xs: list[np.ndarray], vs: list[np.ndarray]) -> np.ndarray:
    h = 1e-6
    up = run(mod, name, *[x + h * v for x, v in zip(xs, vs, strict=True)])
    down = run(mod, name, *[x - h * v for x, v in zip(xs, vs, strict=True)])
    return (np.asarray(up) - np.asarray(down)) / (2 * h)


PROGRAMS = {
    "recursion": """
        def @pow(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { ones_like(%x) } else { %x * @pow(%x, %n - 1) }
        }
        def @main(%x: V3, %y: V3) -> V3 { @pow(%x, 3) * %y }
        """,
    "closures": """
        def @main(%x: V3, %y: V3) -> V3 {
          let %scale = fn (%z: V3) -> V3 { tanh(%z * %y) };
          let %twice = fn (%f: fn (V3) -> V3, %z: V3) -> V3 { %f(%f(%z)) };
          %twice(%scale, %x) + %scale(%x)
        }
        """,
    "lists": """
        def @main(%x: V3, %y: V3) -> V3 {
          let %xs = Cons(%x, Cons(%y, Cons(sin(%x) * %y, Nil)));
          let %ys = @map(fn (%v: V3) -> V3 { %v * %x }, %xs);
          @foldl(fn (%acc: V3, %v: V3) -> V3 { %acc + %v }, zeros_like(%x), %ys)
        }
        """,
    "references and branches": """
        def @main(%x: V3, %y: V3) -> V3 {
          let %r = ref(%x);
          let %a = ref_write(%r, ref_read(%r) * %y);
          let %b = if (sum(%x) > 0f64) { ref_write(%r, exp(ref_read(%r))) } else { () };
          ref_read(%r) + %x
        }
        """,
    "data type with tensors": """
        type Pair { P(V3, V3) }
        def @main(%x: V3, %y: V3) -> V3 {
          match (P(%x * %y, cos(%y))) { P(%a, %b) => %a * %b }
        }
        """,
    "tuples and reductions": """
        def @main(%x: V3, %y: V3) -> V3 {
          let %t = (%x, %y * %y);
          let %s = sum(%t.0 * %t.1, keepdims=True);
          %s * %x + max(%y)
        }
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jvp_matches_central_differences(name: str) -> None:
    mod = with_jvp(module(PROGRAMS[name], prelude=name == "lists"))
    for x, y in ((X, Y), (-X, Y)):
        value, tangent = run(mod, "main_jvp", x, y, VX, VY)  # type: ignore[misc]
        np.testing.assert_allclose(value, run(mod, "main", x, y))
        np.testing.assert_allclose(
            tangent, directional(mod, "main", [x, y], [VX, VY]), rtol=1e-6, atol=1e-8
        )


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jvp_and_vjp_are_transposes(name: str) -> None:
    # <J v, 1> = <v, J^T 1>: the forward and the reverse mode agree
    mod = module(PROGRAMS[name], prelude=name == "lists")
    with_jvp(mod)
    mod.add("main_grad", gradient("main", mod))
    relay.infer_type(mod)
    _, tangent = run(mod, "main_jvp", X, Y, VX, VY)  # type: ignore[misc]
    _, (gx, gy) = run(mod, "main_grad", X, Y)  # type: ignore[misc]
    np.testing.assert_allclose(np.sum(tangent), np.dot(gx, VX) + np.dot(gy, VY), rtol=1e-10)


def test_the_generated_ir() -> None:
    mod = with_jvp(module("def @main(%x: V3, %y: V3) -> V3 { sin(%x) * %y }"))
    assert relay.astext(mod["main_jvp"]) == (
        "fn (%x: Tensor[(3,), float64], %y: Tensor[(3,), float64], %dx: Tensor[(3,), float64], "
        "%dy: Tensor[(3,), float64]) -> (Tensor[(3,), float64], Tensor[(3,), float64]) {\n"
        "  let %v: Tensor[(3,), float64] = sin(%x);\n"
        "  %0 = cos(%x);\n"
        "  let %dv: Tensor[(3,), float64] = multiply(%dx, %0);\n"
        "  let %v1: Tensor[(3,), float64] = multiply(%v, %y);\n"
        "  %1 = multiply(%dv, %y);\n"
        "  %2 = multiply(%dy, %v);\n"
        "  let %dv1: Tensor[(3,), float64] = add(%1, %2);\n"
        "  (%v1, %dv1)\n"
        "}"
    )


def test_rewritten_globals_and_data_types() -> None:
    mod = with_jvp(module(PROGRAMS["recursion"]))
    assert str(mod["pow_dual"].checked_type) == (  # type: ignore[union-attr]
        "fn ((Tensor[(3,), float64], Tensor[(3,), float64]), int32) "
        "-> (Tensor[(3,), float64], Tensor[(3,), float64])"
    )
    mod = with_jvp(module(PROGRAMS["data type with tensors"]))
    assert [c.name_hint for c in mod.get_type("Pair_dual").constructors] == ["P_dual"]


def hvp_module() -> Module:
    # f(x) = sum(sin(x) * x * x) by way of a recursive helper
    return module(
        """
        def @pow(%x: V3, %n: int32) -> V3 {
          if (%n == 0) { ones_like(%x) } else { %x * @pow(%x, %n - 1) }
        }
        def @f(%x: V3) -> V3 { sin(%x) * @pow(%x, 2) }
        """
    )


def hessian_times(v: np.ndarray) -> np.ndarray:
    # d^2/dx^2 (sin x * x^2) = -sin x * x^2 + 4 x cos x + 2 sin x (a diagonal Hessian)
    return (-np.sin(X) * X**2 + 4 * X * np.cos(X) + 2 * np.sin(X)) * v


def test_forward_over_reverse_hessian_vector_product() -> None:
    mod = hvp_module()
    mod.add("f_grad", gradient("f", mod, argnums=0))
    mod = relay.parse(HEAD + f"def @g(%x: {V3}) -> {V3} {{ @f_grad(%x).1 }}", module=mod)
    with_jvp(mod, "g")
    _, hv = run(mod, "g_jvp", X, VX)  # type: ignore[misc]
    np.testing.assert_allclose(hv, hessian_times(VX))


def test_reverse_over_forward_hessian_vector_product() -> None:
    mod = hvp_module()
    with_jvp(mod, "f")
    mod = relay.parse(
        HEAD + f"def @d(%x: {V3}, %v: {V3}) -> {V3} {{ @f_jvp(%x, %v).1 }}", module=mod
    )
    mod.add("d_grad", gradient("d", mod, argnums=0))
    relay.infer_type(mod)
    _, hv = run(mod, "d_grad", X, VX)  # type: ignore[misc]
    np.testing.assert_allclose(hv, hessian_times(VX))


def test_forward_over_forward_second_directional_derivative() -> None:
    mod = hvp_module()
    with_jvp(mod, "f")
    mod = relay.parse(
        HEAD + f"def @d(%x: {V3}, %v: {V3}) -> {V3} {{ @f_jvp(%x, %v).1 }}", module=mod
    )
    with_jvp(mod, "d")
    _, second = run(mod, "d_jvp", X, VX, VX, np.zeros(3))  # type: ignore[misc]
    np.testing.assert_allclose(second, hessian_times(VX) * VX)


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A random straight-line body under a data-dependent branch."""
    body = draw(straight_line()).split("{ ", 1)[1].rsplit(" }", 1)[0]
    return f"""
        def @main(%x: V3, %y: V3) -> V3 {{
          if (sum(%x) > 0f64) {{ {body} }} else {{ %x * %y }}
        }}"""


@settings(max_examples=25, deadline=None)
@given(programs(), st.integers(0, 2**31 - 1))
def test_random_programs(src: str, seed: int) -> None:
    mod = with_jvp(module(src))
    rng = np.random.default_rng(seed)
    x, y, vx, vy = (rng.standard_normal(3) for _ in range(4))
    _, tangent = run(mod, "main_jvp", x, y, vx, vy)  # type: ignore[misc]
    np.testing.assert_allclose(
        tangent, directional(mod, "main", [x, y], [vx, vy]), rtol=1e-5, atol=1e-7
    )


def test_integer_inputs_get_no_tangent() -> None:
    mod = with_jvp(
        module(
            'def @main(%x: V3, %k: Tensor[(3,), int32]) -> V3 { %x * cast(%k, dtype="float64") }'
        )
    )
    k = np.array([1, 2, 3], "int32")
    _, tangent = run(mod, "main_jvp", X, k, VX, np.array([7, 7, 7], "int32"))  # type: ignore[misc]
    np.testing.assert_allclose(tangent, VX * k)


def test_errors() -> None:
    floor = module("def @main(%x: V3) -> V3 { floor_divide(%x, %x) }")
    with pytest.raises(relay.RelayError, match=r"cannot differentiate through floor_divide"):
        jvp("main", floor)
    fparam = module("def @main(%f: fn (V3) -> V3, %x: V3) -> V3 { %f(%x) }")
    with pytest.raises(
        CompileError, match=r"jvp: cannot differentiate with respect to the parameter %f of type fn"
    ):
        jvp("main", fparam)


def test_deep_dataflow_without_lets_needs_no_recursion() -> None:
    x = Var("x", TensorType((2,), "float64"))
    body: Expr = x
    for _ in range(3000):
        body = relay.op.multiply(body, relay.const(np.float64(1.001)))
    mod = Module()
    f = jvp(Function((x,), body), mod)
    _, tangent = relay.interpret(f, np.ones(2), np.array([1.0, 2.0]), mod=mod)  # type: ignore[misc]
    np.testing.assert_allclose(tangent, np.array([1.0, 2.0]) * 1.001**3000)


def test_a_data_value_with_its_tangent() -> None:
    from relay.backend.interpreter.values import ConstructorValue

    mod = with_jvp(
        module(
            """
            def @dot(%ws: List[V3], %x: V3) -> V3 {
              match (%ws) {
                Cons(%w, %rest) => tanh(%w * @dot(%rest, %x)),
                Nil => %x,
              }
            }
            def @main(%ws: List[V3], %x: V3) -> V3 { @dot(%ws, %x) }
            """,
            prelude=True,
        )
    )
    cons, nil = mod.get_constructor("Cons"), mod.get_constructor("Nil")

    def as_list(*items: np.ndarray) -> object:
        out: object = ConstructorValue(nil)
        for item in reversed(items):
            out = ConstructorValue(cons, (item, out))
        return out

    w0, w1 = np.array([0.5, 1.0, -1.0]), np.array([2.0, 0.3, 0.1])
    t0, t1 = np.array([1.0, 0.0, 2.0]), np.array([0.5, -1.0, 0.0])
    _, tangent = run(mod, "main_jvp", as_list(w0, w1), X, as_list(t0, t1), VX)  # type: ignore[misc]
    h = 1e-6

    def f(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.tanh(a * np.tanh(b * x))

    want = (f(w0 + h * t0, w1 + h * t1, X + h * VX) - f(w0 - h * t0, w1 - h * t1, X - h * VX)) / (
        2 * h
    )
    np.testing.assert_allclose(tangent, want, rtol=1e-6)
    assert "List_dual_pair" in {g.name_hint for g in mod.functions}
    with pytest.raises(relay.ExecutionError):  # a tangent of another structure
        run(mod, "main_jvp", as_list(w0, w1), X, as_list(t0), VX)
