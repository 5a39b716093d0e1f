"""AlterProductLayout: before/expected for each product form, the products it leaves alone,
and the interpreter before and after."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay.ir.expr import Call, Constant, Function, Var
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.op.registry import get_op
from relay.passes import InferType
from relay.passes.alter_layout import AlterProductLayout


def altered(text: str, dtypes: tuple[str, ...] = ("float16",)) -> Module:
    return InferType()(AlterProductLayout(dtypes)(InferType()(relay.parse(text))))


def body(mod: Module) -> str:
    text = mod.function("main").astext()
    return text[text.index("{") + 1 : text.rindex("}")].strip()


def test_matmul_reads_its_second_operand_transposed() -> None:
    mod = altered(
        "def @main(%x: Tensor[(128, 96), float16], %w: Tensor[(96, 80), float16]) "
        "{ nn.matmul(%x, %w) }"
    )
    assert body(mod) == (
        "%0 = transpose(%w, axes=[1, 0]);\n"
        '  nn.matmul(%x, %0, units=None, out_dtype="", transpose_a=False, transpose_b=True)'
    )


def test_a_transposed_first_operand_is_transposed_back() -> None:
    mod = altered(
        "def @main(%x: Tensor[(96, 128), float16], %w: Tensor[(80, 96), float16]) "
        "{ nn.matmul(%x, %w, transpose_a=True, transpose_b=True) }"
    )
    assert body(mod) == (
        "%0 = transpose(%x, axes=[1, 0]);\n"
        '  nn.matmul(%0, %w, units=None, out_dtype="", transpose_a=False, transpose_b=True)'
    )


def test_batch_matmul_transposes_the_last_two_axes() -> None:
    mod = altered(
        "def @main(%x: Tensor[(2, 128, 96), float16], %y: Tensor[(2, 96, 80), float16]) "
        "{ nn.batch_matmul(%x, %y, transpose_b=False) }"
    )
    assert body(mod).startswith("%0 = transpose(%y, axes=[0, 2, 1]);\n  nn.batch_matmul(%x, %0")
    assert "transpose_b=True" in body(mod)


def test_a_constant_operand_is_transposed_at_compile_time() -> None:
    w = np.arange(96 * 80, dtype=np.float16).reshape(96, 80)
    x = Var("x", TensorType((128, 96), "float16"))
    matmul = get_op("nn.matmul")
    product = Call(matmul.op, (x, Constant(w)), matmul.validate_attrs({}))
    mod = InferType()(AlterProductLayout()(InferType()(Module.from_expr(Function((x,), product)))))
    call = mod.function("main").body
    assert "transpose(" not in mod.astext()
    assert dict(call.attrs.items())["transpose_b"] is True
    np.testing.assert_array_equal(call.args[1].data, w.T)


@pytest.mark.parametrize(
    "text",
    [
        # already along K; float32 (not asked for); a size of 64 or less; a ? dimension
        "def @main(%x: Tensor[(128, 96), float16], %w: Tensor[(80, 96), float16]) "
        "{ nn.dense(%x, %w) }",
        "def @main(%x: Tensor[(128, 96), float32], %w: Tensor[(96, 80), float32]) "
        "{ nn.matmul(%x, %w) }",
        "def @main(%x: Tensor[(128, 64), float16], %w: Tensor[(64, 80), float16]) "
        "{ nn.matmul(%x, %w) }",
        "def @main(%x: Tensor[(?, 96), float16], %w: Tensor[(96, 80), float16]) "
        "{ nn.matmul(%x, %w) }",
    ],
)
def test_other_products_are_left_alone(text: str) -> None:
    assert body(altered(text)) == body(InferType()(relay.parse(text)))


def test_the_results_are_unchanged() -> None:
    text = (
        "def @main(%x: Tensor[(3, 80, 72), float32], %y: Tensor[(3, 72, 70), float32]) "
        "{ nn.relu(nn.batch_matmul(%x, %y, transpose_b=False)) }"
    )
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 80, 72)).astype(np.float32)
    y = rng.standard_normal((3, 72, 70)).astype(np.float32)
    before = relay.build(relay.parse(text), target=None).interpret(x, y)
    mod = altered(text, ("float32",))
    assert "transpose(%y" in body(mod)
    after = relay.build(mod, target=None).interpret(x, y)
    np.testing.assert_allclose(np.asarray(after), np.asarray(before), rtol=1e-6)


def test_an_operand_of_several_products_is_transposed_once() -> None:
    mod = altered(
        "def @main(%x: Tensor[(128, 96), float16], %y: Tensor[(128, 96), float16], "
        "%w: Tensor[(96, 80), float16]) { add(nn.matmul(%x, %w), nn.matmul(%y, %w)) }"
    )
    assert body(mod).count("transpose(%w") == 1
    assert body(mod).count("transpose_b=True") == 2
