"""FuseOps: before/expected for each fusion rule (elementwise chains, anchors, reductions,
diamonds, opaque operators, tuples, the depth limit, opt level 0, let/if/closure barriers),
the interpreter before and after, random programs, a 10,000-operator chain."""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings

import relay
from relay.ir.expr import Call, Expr, Function, children
from relay.ir.module import Module
from relay.ir.types import TensorType, TupleType, Type
from relay.passes import FuseOps, InferType, PassContext
from relay.passes.fuse_ops import SCALAR_EPILOGUES_CONFIG
from tests.strategies import TypedProgram, well_typed_programs

HEAD = '#[version = "0.0.5"]\n'
T = "Tensor[(2, 3), float32]"


def arg_for(ty: Type | None) -> object:
    """An argument of type ``ty`` (tensors of small positive values, tuples of them)."""
    if isinstance(ty, TupleType):
        return tuple(arg_for(f) for f in ty.fields)
    assert isinstance(ty, TensorType)
    shape = ty.concrete_shape()
    if ty.dtype == "bool":
        return np.ones(shape, "bool")
    n = int(np.prod(shape))
    return np.linspace(0.5, 2, num=n).reshape(shape).astype(str(ty.dtype))


def assert_same(a: object, b: object) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def fuse(mod: Module, fuse_opt_level: int = -1, **ctx: object) -> Module:
    with PassContext(**ctx):  # type: ignore[arg-type]
        return FuseOps(fuse_opt_level)(InferType()(mod))


def check(before: str, expected: str, fuse_opt_level: int = -1, **ctx: object) -> Module:
    """FuseOps(before) equals expected, type-checks and computes what before computes."""
    mod = relay.parse(HEAD + before)
    out = fuse(mod, fuse_opt_level, **ctx)
    relay.assert_structural_equal(out, relay.parse(HEAD + expected))
    relay.infer_type(out)
    main = mod.function("main")
    args = [arg_for(p.type_annotation) for p in main.params]
    assert_same(relay.interpret(out, *args), relay.interpret(mod, *args))
    return out


def primitive_functions(expr: Expr) -> list[Function]:
    out: list[Function] = []
    seen: set[Expr] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, Function) and node.attrs.get("Primitive") == 1:
            out.append(node)
        stack.extend(children(node))
    return out


def test_elementwise_chain_fuses_into_one_function() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = exp(%x);
          %1 = negative(%0);
          %2 = add(%1, 1f);
          sqrt(%2)
        }}""",
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {T} {{
            %1 = exp(%p0);
            %2 = negative(%1);
            %3 = add(%2, 1f);
            sqrt(%3)
          }};
          %0(%x)
        }}""",
    )


def test_conv2d_bias_add_relu_fuse() -> None:
    x, w, b, y = (
        "Tensor[(1, 3, 8, 8), float32]",
        "Tensor[(4, 3, 3, 3), float32]",
        "Tensor[(4,), float32]",
        "Tensor[(1, 4, 8, 8), float32]",
    )
    check(
        f"""
        def @main(%x: {x}, %w: {w}, %b: {b}) -> {y} {{
          %0 = nn.conv2d(%x, %w, padding=[1, 1]);
          %1 = nn.bias_add(%0, %b);
          nn.relu(%1)
        }}""",
        f"""
        def @main(%x: {x}, %w: {w}, %b: {b}) -> {y} {{
          %0 = fn (%p0: {x}, %p1: {w}, %p2: {b}, Primitive=1) -> {y} {{
            %1 = nn.conv2d(%p0, %p1, padding=[1, 1]);
            %2 = nn.bias_add(%1, %p2);
            nn.relu(%2)
          }};
          %0(%x, %w, %b)
        }}""",
    )


def test_dense_stops_at_a_second_anchor() -> None:
    x, w, y = "Tensor[(2, 3), float32]", "Tensor[(3, 3), float32]", "Tensor[(2, 3), float32]"
    check(
        f"""
        def @main(%x: {x}, %w: {w}) -> {y} {{
          %0 = nn.dense(%x, %w);
          %1 = nn.relu(%0);
          nn.dense(%1, %w)
        }}""",
        f"""
        def @main(%x: {x}, %w: {w}) -> {y} {{
          %0 = fn (%p0: {x}, %p1: {w}, Primitive=1) -> {y} {{
            %1 = nn.dense(%p0, %p1);
            nn.relu(%1)
          }};
          %2 = %0(%x, %w);
          %3 = fn (%p0: {y}, %p1: {w}, Primitive=1) -> {y} {{
            nn.dense(%p0, %p1)
          }};
          %3(%2, %w)
        }}""",
    )


def test_unit_dimension_reshapes_join_a_product_epilogue() -> None:
    # w @ x with a vector x: the squeeze and the reshape only drop and add dimensions of
    # size 1, so they are elementwise for fusion; a transposing reshape is not
    w, x, v = "Tensor[(4, 4), float32]", "Tensor[(4, 1), float32]", "Tensor[(1, 4), float32]"
    check(
        f"""
        def @main(%w: {w}, %x: {x}) -> {v} {{
          %0 = nn.matmul(%w, %x);
          %1 = squeeze(%0, axis=[1]);
          %2 = tanh(%1);
          reshape(%2, newshape=[1, 4])
        }}""",
        f"""
        def @main(%w: {w}, %x: {x}) -> {v} {{
          %0 = fn (%p0: {w}, %p1: {x}, Primitive=1) -> {v} {{
            %1 = nn.matmul(%p0, %p1);
            %2 = squeeze(%1, axis=[1]);
            %3 = tanh(%2);
            reshape(%3, newshape=[1, 4])
          }};
          %0(%w, %x)
        }}""",
    )
    m = "Tensor[(4, 2), float32]"
    check(
        f"""
        def @main(%w: {w}, %y: {m}) -> Tensor[(8,), float32] {{
          %0 = nn.matmul(%w, %y);
          %1 = reshape(%0, newshape=[2, 4]);
          %2 = tanh(%1);
          reshape(%2, newshape=[8])
        }}""",
        f"""
        def @main(%w: {w}, %y: {m}) -> Tensor[(8,), float32] {{
          %0 = fn (%p0: {w}, %p1: {m}, Primitive=1) -> {m} {{
            nn.matmul(%p0, %p1)
          }};
          %1 = %0(%w, %y);
          %2 = fn (%p0: {m}, Primitive=1) -> Tensor[(8,), float32] {{
            %3 = reshape(%p0, newshape=[2, 4]);
            %4 = tanh(%3);
            reshape(%4, newshape=[8])
          }};
          %2(%1)
        }}""",
    )


def test_reduction_takes_its_elementwise_inputs() -> None:
    r = "Tensor[(2,), float32]"
    check(
        f"""
        def @main(%x: {T}) -> {r} {{
          %0 = exp(%x);
          %1 = multiply(%0, 2f);
          %2 = sum(%1, axis=[1]);
          sqrt(%2)
        }}""",
        f"""
        def @main(%x: {T}) -> {r} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {r} {{
            %1 = exp(%p0);
            %2 = multiply(%1, 2f);
            sum(%2, axis=[1])
          }};
          %3 = %0(%x);
          %4 = fn (%p0: {r}, Primitive=1) -> {r} {{
            sqrt(%p0)
          }};
          %4(%3)
        }}""",
    )


def test_at_level_3_a_reduction_takes_its_elementwise_epilogue() -> None:
    # beyond Relay: the epilogue computed on the reduced shape joins the reduction's group
    r = "Tensor[(2,), float32]"
    check(
        f"""
        def @main(%x: {T}, %b: {r}) -> {r} {{
          %0 = exp(%x);
          %1 = sum(%0, axis=[1]);
          %2 = multiply(0.01f, %1);
          %3 = subtract(%b, %2);
          sqrt(%3)
        }}""",
        f"""
        def @main(%x: {T}, %b: {r}) -> {r} {{
          %0 = fn (%p0: {T}, %p1: {r}, Primitive=1) -> {r} {{
            %1 = exp(%p0);
            %2 = sum(%1, axis=[1]);
            %3 = multiply(0.01f, %2);
            %4 = subtract(%p1, %3);
            sqrt(%4)
          }};
          %0(%x, %b)
        }}""",
        opt_level=3,
    )


def test_a_scalar_reduction_keeps_its_epilogue_apart_when_configured() -> None:
    # relay.build sets this for CUDA: dlight's reduction rules do not take a 0-d epilogue
    s, r = "float32", "Tensor[(2,), float32]"
    check(
        f"""
        def @main(%x: {T}) -> ({s}, {r}) {{
          %0 = sum(%x);
          %1 = sum(%x, axis=[1]);
          (sqrt(%0), sqrt(%1))
        }}""",
        f"""
        def @main(%x: {T}) -> ({s}, {r}) {{
          %0 = fn (%p0: {T}, Primitive=1) -> {s} {{
            sum(%p0)
          }};
          %1 = %0(%x);
          %2 = fn (%p0: {s}, Primitive=1) -> {s} {{
            sqrt(%p0)
          }};
          %3 = fn (%p0: {T}, Primitive=1) -> {r} {{
            %4 = sum(%p0, axis=[1]);
            sqrt(%4)
          }};
          (%2(%1), %3(%x))
        }}""",
        opt_level=3,
        config={SCALAR_EPILOGUES_CONFIG: False},
    )


def test_a_reduction_broadcast_back_keeps_its_consumer_apart() -> None:
    # x - max(x): the consumer runs over the input's shape, not the reduced one
    k = "Tensor[(2, 1), float32]"
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = max(%x, axis=[1], keepdims=True);
          subtract(%x, %0)
        }}""",
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {k} {{
            max(%p0, axis=[1], keepdims=True)
          }};
          %1 = %0(%x);
          %2 = fn (%p0: {T}, %p1: {k}, Primitive=1) -> {T} {{
            subtract(%p0, %p1)
          }};
          %2(%x, %1)
        }}""",
        opt_level=3,
    )


def test_one_reduction_per_epilogue() -> None:
    # two reductions meeting in one epilogue: the first takes it, the second stays apart
    r = "Tensor[(2,), float32]"
    check(
        f"""
        def @main(%x: {T}) -> {r} {{
          %0 = sum(%x, axis=[1]);
          %1 = max(%x, axis=[1]);
          add(%0, %1)
        }}""",
        f"""
        def @main(%x: {T}) -> {r} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {r} {{
            max(%p0, axis=[1])
          }};
          %1 = %0(%x);
          %2 = fn (%p0: {T}, %p1: {r}, Primitive=1) -> {r} {{
            %3 = sum(%p0, axis=[1]);
            add(%3, %p1)
          }};
          %2(%x, %1)
        }}""",
        opt_level=3,
    )


def test_a_product_never_joins_a_reduction_and_its_epilogue() -> None:
    m, r = "Tensor[(3, 3), float32]", "Tensor[(3,), float32]"
    check(
        f"""
        def @main(%x: {m}, %w: {m}) -> {r} {{
          %0 = nn.dense(%x, %w, units=None);
          %1 = sum(%0, axis=[1]);
          tanh(%1)
        }}""",
        f"""
        def @main(%x: {m}, %w: {m}) -> {r} {{
          %0 = fn (%p0: {m}, %p1: {m}, Primitive=1) -> {m} {{
            nn.dense(%p0, %p1, units=None)
          }};
          %1 = %0(%x, %w);
          %2 = fn (%p0: {m}, Primitive=1) -> {r} {{
            %3 = sum(%p0, axis=[1]);
            tanh(%3)
          }};
          %2(%1)
        }}""",
        opt_level=3,
    )


def test_diamond_fuses_entirely() -> None:
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = exp(%x);
          %1 = log(%x);
          add(%0, %1)
        }}""",
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {T} {{
            %1 = exp(%p0);
            %2 = log(%p0);
            add(%1, %2)
          }};
          %0(%x)
        }}""",
    )


def test_opaque_operator_stops_fusion() -> None:
    x, s = "Tensor[(4,), float32]", "Tensor[(1,), int32]"
    check(
        f"""
        def @main(%x: {x}) -> {x} {{
          %0 = exp(%x);
          %1 = shape_of(%0);
          %2 = cast(%1, dtype="float32");
          add(%0, %2)
        }}""",
        f"""
        def @main(%x: {x}) -> {x} {{
          %0 = fn (%p0: {x}, Primitive=1) -> {x} {{
            exp(%p0)
          }};
          %1 = %0(%x);
          %2 = fn (%p0: {x}, Primitive=1) -> {s} {{
            shape_of(%p0)
          }};
          %3 = %2(%1);
          %4 = fn (%p0: {s}, %p1: {x}, Primitive=1) -> {x} {{
            %5 = cast(%p0, dtype="float32");
            add(%p1, %5)
          }};
          %4(%3, %1)
        }}""",
    )


def test_tuple_and_concatenate_fuse_with_their_fields() -> None:
    y = "Tensor[(4, 3), float32]"
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {y} {{
          %0 = exp(%x);
          %1 = negative(%y);
          %2 = (%0, %1);
          %3 = concatenate(%2);
          sqrt(%3)
        }}""",
        f"""
        def @main(%x: {T}, %y: {T}) -> {y} {{
          %0 = fn (%p0: {T}, %p1: {T}, Primitive=1) -> {y} {{
            %1 = exp(%p0);
            %2 = negative(%p1);
            %3 = (%1, %2);
            %4 = concatenate(%3);
            sqrt(%4)
          }};
          %0(%x, %y)
        }}""",
    )


def test_tuple_get_item_ends_a_group() -> None:
    check(
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = exp(%x);
          %1 = (%0, %y);
          %1.0
        }}""",
        f"""
        def @main(%x: {T}, %y: {T}) -> {T} {{
          %0 = fn (%p0: {T}, %p1: {T}, Primitive=1) -> {T} {{
            %1 = exp(%p0);
            %2 = (%1, %p1);
            %2.0
          }};
          %0(%x, %y)
        }}""",
    )


def test_a_returned_tuple_stays_outside_the_groups() -> None:
    check(
        f"""
        def @main(%x: {T}) -> ({T}, {T}) {{
          %0 = exp(%x);
          %1 = negative(%0);
          (%0, %1)
        }}""",
        f"""
        def @main(%x: {T}) -> ({T}, {T}) {{
          %0 = fn (%p0: {T}, Primitive=1) -> {T} {{
            exp(%p0)
          }};
          %1 = %0(%x);
          %2 = fn (%p0: {T}, Primitive=1) -> {T} {{
            negative(%p0)
          }};
          (%1, %2(%1))
        }}""",
    )


def test_max_depth_splits_a_long_chain() -> None:
    before = f"""
        def @main(%x: {T}) -> {T} {{
          %0 = negative(%x);
          %1 = exp(%0);
          %2 = negative(%1);
          %3 = exp(%2);
          %4 = negative(%3);
          %5 = exp(%4);
          %6 = negative(%5);
          %7 = exp(%6);
          %8 = negative(%7);
          exp(%8)
        }}"""
    expected = f"""
        def @main(%x: {T}) -> {T} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {T} {{
            %1 = negative(%p0);
            %2 = exp(%1);
            %3 = negative(%2);
            exp(%3)
          }};
          %4 = %0(%x);
          %5 = fn (%p0: {T}, Primitive=1) -> {T} {{
            %6 = negative(%p0);
            %7 = exp(%6);
            %8 = negative(%7);
            exp(%8)
          }};
          %9 = %5(%4);
          %10 = fn (%p0: {T}, Primitive=1) -> {T} {{
            %11 = negative(%p0);
            exp(%11)
          }};
          %10(%9)
        }}"""
    check(before, expected, config={"relay.FuseOps.max_depth": 4})


SINGLETONS = f"""
    def @main(%x: {T}) -> {T} {{
      %0 = fn (%p0: {T}, Primitive=1) -> {T} {{
        exp(%p0)
      }};
      %1 = %0(%x);
      %2 = fn (%p0: {T}, %p1: float32, Primitive=1) -> {T} {{
        add(%p0, %p1)
      }};
      %2(%1, 1f)
    }}"""

CHAIN = f"""
    def @main(%x: {T}) -> {T} {{
      %0 = exp(%x);
      add(%0, 1f)
    }}"""


def test_fuse_opt_level_0_makes_singletons() -> None:
    check(CHAIN, SINGLETONS, fuse_opt_level=0, opt_level=3)


def test_the_context_opt_level_0_makes_singletons() -> None:
    check(CHAIN, SINGLETONS, opt_level=0)


def test_fusion_stays_inside_let_values_and_branches() -> None:
    check(
        f"""
        def @main(%x: {T}, %c: bool) -> {T} {{
          %0 = exp(%x);
          let %a = negative(%0);
          let %b = sqrt(%a);
          %1 = if (%c) {{
            %2 = exp(%b);
            negative(%2)
          }} else {{
            %3 = log(%0);
            negative(%3)
          }};
          add(%1, %b)
        }}""",
        f"""
        def @main(%x: {T}, %c: bool) -> {T} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {T} {{
            exp(%p0)
          }};
          %1 = %0(%x);
          let %a = fn (%p0: {T}, Primitive=1) -> {T} {{
            negative(%p0)
          }}(%1);
          let %b = fn (%p0: {T}, Primitive=1) -> {T} {{
            sqrt(%p0)
          }}(%a);
          %2 = if (%c) {{
            %3 = fn (%p0: {T}, Primitive=1) -> {T} {{
              %4 = exp(%p0);
              negative(%4)
            }};
            %3(%b)
          }} else {{
            %5 = fn (%p0: {T}, Primitive=1) -> {T} {{
              %6 = log(%p0);
              negative(%6)
            }};
            %5(%1)
          }};
          %7 = fn (%p0: {T}, %p1: {T}, Primitive=1) -> {T} {{
            add(%p0, %p1)
          }};
          %7(%2, %b)
        }}""",
    )


def test_nothing_moves_into_a_closure() -> None:
    # %0 is used outside the closure too, so it is computed there, once
    check(
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = exp(%x);
          %1 = fn (%y: {T}) -> {T} {{
            %2 = add(%0, %y);
            negative(%2)
          }};
          %1(%0)
        }}""",
        f"""
        def @main(%x: {T}) -> {T} {{
          %0 = fn (%p0: {T}, Primitive=1) -> {T} {{
            exp(%p0)
          }};
          %1 = %0(%x);
          %2 = fn (%y: {T}) -> {T} {{
            %3 = fn (%p0: {T}, %p1: {T}, Primitive=1) -> {T} {{
              %4 = add(%p0, %p1);
              negative(%4)
            }};
            %3(%1, %y)
          }};
          %2(%1)
        }}""",
    )


def test_already_fused_functions_are_left_alone() -> None:
    mod = fuse(relay.parse(HEAD + CHAIN))
    again = FuseOps()(InferType()(mod))
    relay.assert_structural_equal(again, mod)


def test_an_untyped_module_is_typed_first() -> None:
    mod = relay.parse(HEAD + CHAIN)
    out = FuseOps()(mod)
    assert len(primitive_functions(out.function("main"))) == 1


def test_10000_operator_chain() -> None:
    n = 10_000
    body = "".join(f"  %{i} = negative({'%x' if i == 0 else f'%{i - 1}'});\n" for i in range(n))
    mod = relay.parse(f"{HEAD}def @main(%x: {T}) -> {T} {{\n{body}  %{n - 1}\n}}\n")
    limit = sys.getrecursionlimit()
    out = fuse(mod)
    assert sys.getrecursionlimit() == limit
    funcs = primitive_functions(out.function("main"))
    assert len(funcs) == -(-n // 256)
    x = arg_for(TensorType((2, 3), "float32"))
    assert_same(relay.interpret(out, x), x)


def close(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.dtype == b.dtype and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
    return bool(a == b)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(program=well_typed_programs())
def test_random_programs_keep_their_result_and_types(program: TypedProgram) -> None:
    before = relay.interpret(program.module, *program.args)
    for level in (-1, 0):
        out = fuse(program.module, level)
        relay.infer_type(out)
        assert relay.analysis.well_formed(out)
        assert close(before, relay.interpret(out, *program.args)), level
        for func in out.functions.values():
            for prim in primitive_functions(func):
                assert any(isinstance(n, Call) for n in _nodes(prim.body))


def _nodes(expr: Expr) -> list[Expr]:
    out, seen, stack = [], set(), [expr]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            out.append(node)
            stack.extend(children(node))
    return out
