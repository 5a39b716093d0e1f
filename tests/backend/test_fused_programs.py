"""Random fused programs: compiled results equal the reference interpreter's."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.backend.target import Target
from relay.testing.lowering import default_target

pytestmark = pytest.mark.tvm

A, B = 6, 20  # small odd sizes: loop tails in every schedule

UNARY = ["negative", "tanh", "sigmoid", "abs", "exp", "nn.relu"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


@st.composite
def programs(draw: st.DrawFn, max_operators: int = 9) -> str:
    """A dataflow program over x: (A, B), r: (B,), c: (A, 1), w: (B, B) mixing elementwise,
    broadcast, reduction, layout and matmul operators. (``c`` broadcast along the rows is
    one value across a vectorized loop: TVM's vectorizer leaves the expressions of it
    scalar.)"""
    values: list[tuple[str, tuple[int, ...]]] = [("%x", (A, B)), ("%r", (B,)), ("%c", (A, 1))]
    lines: list[str] = []
    for i in range(draw(st.integers(2, max_operators))):
        name = f"%v{i}"
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce", "dense", "transpose"]))
        # (the last value half the time: chains of operators, as programs have)
        src, shape = draw(st.one_of(st.just(values[-1]), st.sampled_from(values)))
        if kind == "unary":
            op = draw(st.sampled_from(UNARY))
            arg = f"tanh({src})" if op == "exp" else src  # keep exp's input small
            lines.append(f"  {name} = {op}({arg});")
            values.append((name, shape))
        elif kind == "binary":
            partners = [v for v in values if _broadcasts(v[1], shape)]
            other, other_shape = draw(st.sampled_from(partners))
            op = draw(st.sampled_from(BINARY))
            lines.append(f"  {name} = {op}({src}, {other});")
            values.append((name, np.broadcast_shapes(shape, other_shape)))
        elif kind == "reduce" and len(shape) == 2:
            op = draw(st.sampled_from(["sum", "max", "mean"]))
            lines.append(f"  {name} = {op}({src}, axis=[0]);")
            values.append((name, (shape[1],)))
        elif kind == "dense" and shape == (A, B):
            lines.append(f"  {name} = nn.dense({src}, %w, units=None);")
            values.append((name, (A, B)))
        elif kind == "transpose" and len(shape) == 2 and shape[0] == shape[1]:
            lines.append(f"  {name} = transpose({src});")
            values.append((name, shape))
        else:
            lines.append(f"  {name} = negative({src});")
            values.append((name, shape))
    last = values[-1][0]
    # a second result is computed as a stage of its own; alone, the last value's whole
    # expression is inlined into one loop (a value broadcast along it stays scalar there)
    result = last
    if draw(st.booleans()):
        result = f"({last}, {draw(st.sampled_from(values[3:]))[0]})"
    body = "\n".join(lines)
    return (
        "def @main(%x: Tensor[(6, 20), float32], %r: Tensor[(20,), float32], "
        "%c: Tensor[(6, 1), float32], "
        f"%w: Tensor[(20, 20), float32]) {{\n{body}\n  {result}\n}}"
    )


def _results(value: object) -> tuple[object, ...]:
    """A program's result as a tuple of its arrays (one array alone: a 1-tuple)."""
    return value if isinstance(value, tuple) else (value,)


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether a binary operator takes operands of shapes ``a`` and ``b`` (where one is the
    other, a row of it, or a column of it), never making a value of more than two axes."""
    try:
        shape = np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return len(shape) <= 2 and shape in (a, b)


@settings(max_examples=25, deadline=None)
@given(programs(), st.sampled_from([0, 3]))
def test_compiled_equals_interpreted(text: str, opt_level: int) -> None:
    mod = relay.parse(text)
    rng = np.random.default_rng(len(text))
    x = rng.standard_normal((A, B)).astype(np.float32)
    r = rng.standard_normal(B).astype(np.float32)
    c = rng.standard_normal((A, 1)).astype(np.float32)
    w = (rng.standard_normal((B, B)) / 4).astype(np.float32)
    exe = relay.build(mod, opt_level=opt_level, target=default_target())
    assert exe.kind == "graph"
    got = exe(x, r, c, w)
    want = relay.interpret(mod, x, r, c, w)
    for g, e in zip(_results(got), _results(want), strict=True):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5, err_msg=text)


@settings(max_examples=15, deadline=None)
@given(programs(), st.sampled_from(["float16", "bfloat16"]), st.sampled_from([0, 3]))
def test_compiled_equals_interpreted_in_narrow_floats(
    text: str, dtype: str, opt_level: int
) -> None:
    """The same programs on float16 or bfloat16 values: each operator rounds its result to
    the dtype in the kernel as in the reference (which computes in float32 and rounds once
    per operator), so the results agree but for sums taken in another order and the
    approximations of fast math (float32 only: none here), an ulp of the dtype that later
    operators may carry."""
    text = text.replace("float32", dtype)
    mod = relay.parse(text)
    rng = np.random.default_rng(len(text))
    narrow = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    x = rng.standard_normal((A, B)).astype(narrow)
    r = rng.standard_normal(B).astype(narrow)
    c = rng.standard_normal((A, 1)).astype(narrow)
    w = (rng.standard_normal((B, B)) / 4).astype(narrow)
    got = relay.build(mod, opt_level=opt_level, target=default_target())(x, r, c, w)
    want = relay.interpret(mod, x, r, c, w)
    for g, e in zip(_results(got), _results(want), strict=True):
        assert g.dtype == e.dtype
        g64, e64 = g.astype(np.float64), e.astype(np.float64)
        scale = np.maximum(np.abs(e64).max(initial=0.0), 1.0)  # (cancellations: the values')
        np.testing.assert_allclose(g64, e64, rtol=2e-2, atol=2e-2 * scale, err_msg=text)


@settings(max_examples=15, deadline=None)
@given(programs())
def test_compiled_for_symbolic_sizes_equals_interpreted(text: str) -> None:
    """The same programs with the rows of ``x`` and ``c`` a shape variable: compiled once,
    run for sizes around the tiles' (1, a tile, a tile and a tail)."""
    text = text.replace("def @main(", "def @main[n: Shape](").replace(
        "%x: Tensor[(6, 20), float32]", "%x: Tensor[(n, 20), float32]"
    )
    text = text.replace("%c: Tensor[(6, 1), float32]", "%c: Tensor[(n, 1), float32]")
    mod = relay.parse(text)
    exe = relay.build(mod, target=default_target())
    assert exe.kind == "graph"
    rng = np.random.default_rng(len(text))
    r = rng.standard_normal(B).astype(np.float32)
    w = (rng.standard_normal((B, B)) / 4).astype(np.float32)
    for rows in (1, 8, 13):
        x = rng.standard_normal((rows, B)).astype(np.float32)
        c = rng.standard_normal((rows, 1)).astype(np.float32)
        got = exe(x, r, c, w)
        want = relay.interpret(mod, x, r, c, w)
        for g, e in zip(_results(got), _results(want), strict=True):
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5, err_msg=f"{rows}: {text}")


def test_matrix_vector_product_with_its_epilogue() -> None:
    # w @ x with a vector x is expand_dims, a one-column product and squeeze: the squeeze
    # and what follows run in the product's kernel
    text = """
    def @main(%w: Tensor[(48, 64), float32], %x: Tensor[(64,), float32]) {
      %0 = expand_dims(%x, axis=1);
      %1 = nn.matmul(%w, %0);
      %2 = squeeze(%1, axis=[1]);
      %3 = tanh(%2);
      subtract(1f, multiply(%3, %3))
    }"""
    mod = relay.parse(text)
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((48, 64)) / 8).astype(np.float32)
    x = rng.standard_normal(64).astype(np.float32)
    exe = relay.build(mod, target=default_target())
    # (the expand_dims is no kernel: see the graph executor's reshapes)
    assert [k.split("_", 1)[1].rsplit("_", 1)[0] for k in exe.kernels] == [
        "matmul_squeeze_tanh_multiply_subtract"
    ]
    np.testing.assert_allclose(exe(w, x), relay.interpret(mod, w, x), rtol=2e-5, atol=2e-5)


def test_uniform_constants_are_not_kernel_inputs() -> None:
    # a scalar broadcast by constant folding is a uniform constant: the kernel computes it
    text = """
    def @main(%x: Tensor[(4, 5), float32]) {
      %0 = broadcast_to(-0.25f, shape=[4, 5]);
      %1 = broadcast_to(divide(0f, 0f), shape=[4, 5]);
      %2 = multiply(%x, %0);
      (%2, add(%2, %1))
    }"""
    mod = relay.parse(text)
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    exe = relay.build(mod, target=default_target())
    assert all(k.constants == [] for k in exe.library.kernels.values())
    got = exe(x)
    np.testing.assert_array_equal(got[0], x * np.float32(-0.25))
    assert np.isnan(got[1]).all()


@pytest.mark.parametrize("op", ["tanh", "sigmoid", "exp", "abs"])
def test_deep_chains_of_binding_operators_compile_and_agree(op: str) -> None:
    # fast tanh, sigmoid and exp bind their input with a Let; nested in one kernel, TVM's
    # compile time doubled per level (7 tanh did not finish): the lowering materializes
    # the value after every MAX_BOUND_DEPTH of them, and the fast exp and sigmoid, which
    # bind a chain of values (CHAIN_BINDINGS), read another chain's result materialized
    # (sigmoid(sigmoid(x)) took 6.7 s to compile)
    from relay.backend.lower import BARRIER, MAX_BOUND_DEPTH, lower_primitive

    depth = 12
    arg = "multiply(%{i}, -0.5f)" if op == "exp" else "%{i}"  # keep exp's values small
    body = "\n".join(f"  %{i + 1} = {op}({arg.format(i=i)});" for i in range(depth))
    text = f"def @main(%0: Tensor[(37, 40), float32]) {{\n{body}\n  %{depth}\n}}"
    mod = relay.parse(text)
    exe = relay.build(mod, target=default_target())
    assert len(exe.kernels) == 1
    (prim,) = [f for f in _primitives(exe.module)]
    stages = [b for b in lower_primitive(prim).prim_func.script().split("\n") if "sblock(" in b]
    barriers = sum(f'"{BARRIER}' in b for b in stages)
    # (the last value is the result: nothing reads it, so no barrier after it)
    assert barriers == {"abs": 0, "tanh": (depth - 1) // MAX_BOUND_DEPTH}.get(op, depth - 1)
    x = np.random.default_rng(1).standard_normal((37, 40)).astype(np.float32)
    np.testing.assert_allclose(exe(x), relay.interpret(mod, x), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize(
    ("body", "barriers"),
    [
        ("sigmoid(add(sigmoid(%x), 1f))", 1),  # a chain read through an add
        # tanh binds two values, not a chain; exp's value is the result: no barrier after it
        ("exp(multiply(tanh(%x), 2f))", 0),
        ("tanh(exp(tanh(%x)))", 1),  # the second tanh reads a value two binders deep
        ("subtract(multiply(sigmoid(%x), exp(%y)), exp(%x))", 0),  # chains side by side
    ],
)
def test_a_chain_of_bindings_reads_another_chain_materialized(body: str, barriers: int) -> None:
    from relay.backend.lower import BARRIER, lower_primitive

    t = "Tensor[(64, 33), float32]"
    mod = relay.parse(f"def @main(%x: {t}, %y: {t}) {{ {body} }}")
    exe = relay.build(mod, target=default_target())
    (prim,) = _primitives(exe.module)
    script = lower_primitive(prim).prim_func.script()
    assert script.count(f'sblock("{BARRIER}') == barriers
    rng = np.random.default_rng(2)
    x, y = (rng.standard_normal((64, 33)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(exe(x, y), relay.interpret(mod, x, y), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_exp_folds_a_negation_only_of_a_bound_argument(dtype: str) -> None:
    # exp(-v) reads v, its negation folded, where its argument is bound (a Let): unbound (a
    # bfloat16 kernel), the approximation repeats its argument, and the lowering materializes
    # a repeated argument by the reads of the call's own: exp(-exp(-x)) of a bfloat16 x took
    # 38 s to compile with the negation folded (found by a fuzzing review). The printed
    # kernel names relay's scalef operator (no printer warning).
    from relay.backend.lower import lower_primitive

    mod = relay.parse(
        f"def @main(%x: Tensor[(64,), {dtype}]) {{\n"
        '  %y = cast(%x, dtype="float32");\n'
        "  exp(negative(exp(negative(%y))))\n}"
    )
    exe = relay.build(mod, target=default_target())
    (prim,) = _primitives(exe.module)
    script = lower_primitive(prim).prim_func.script()
    stages = re.findall(r'sblock\("([a-z_0-9]+)"\)', script)
    # float32: the inner exp reads %y (its negative is gone), the outer one the barrier that
    # the chain rule puts on the inner chain's negation; bfloat16: both negations stay
    assert stages.count("negative") + stages.count("negative_1") == (1 if dtype == "float32" else 2)
    if Target().vector_ldexp:
        assert "relay_x86_scalef" in script
    x = np.linspace(-5, 5, 64).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    # (the inner exp's 1e-7 relative error grows by the outer one's argument, up to e^5)
    np.testing.assert_allclose(exe(x), exe.interpret(x), rtol=3e-5, atol=0)


@pytest.mark.parametrize("mcpu", ["skylake-avx512", "haswell"])
@pytest.mark.parametrize(
    "body",
    [
        "add(multiply(exp(%c), 2f), %x)",
        "add(multiply(sigmoid(%c), %c), %x)",
        "add(negative(exp(tanh(%c))), %x)",
        "%e = exp(%c); where(greater(%e, negative(%e)), %e, %x)",
        "subtract(%x, multiply(exp(%c), exp(%c)))",
        "subtract(negative(tanh(maximum(%c, %c))), %x)",  # (llvm.maximum under tanh's Lets)
    ],
)
def test_bound_values_broadcast_along_the_vector_loop_compile(body: str, mcpu: str) -> None:
    # exp(c) with c one value across the vectorized loop is a scalar expression there, and
    # TVM's vectorizer visits the operands of a product of scalars twice if they changed at
    # the first visit; a call_llvm_pure_intrin always did (llvm.fma, llvm.lrint,
    # llvm.maximum), so the Lets of a fast exp, sigmoid or tanh were bound twice and the
    # vectorizer rejected the kernel ("Let cannot bind the same var to two different
    # values"; found by a fuzzing review)
    mod = relay.parse(
        f"def @main(%x: Tensor[(3, 250), float32], %c: Tensor[(3, 1), float32]) {{ {body} }}"
    )
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 250)).astype(np.float32)
    c = rng.standard_normal((3, 1)).astype(np.float32)
    for opt_level in (0, 3):
        exe = relay.build(mod, opt_level=opt_level, target=Target("llvm", mcpu=mcpu))
        np.testing.assert_allclose(exe(x, c), relay.interpret(mod, x, c), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize(
    "body",
    [
        "%1 = floor_mod(%c, %c); %2 = nn.gelu(%1); add(%2, %x)",  # erf is not vectorized
        "%1 = floor_mod(%c, 0.7f); add(multiply(%1, 2f), %x)",
        "%1 = sigmoid(floor_mod(%c, %c)); add(nn.gelu(%1), %x)",
        '%1 = cast(%c, dtype="float16"); %2 = nn.gelu(floor_mod(%1, %1)); '
        'add(cast(%2, dtype="float32"), %x)',
    ],
)
def test_a_bound_value_broadcast_along_the_vector_loop_is_materialized(body: str) -> None:
    # a Let-bound value scalar in the vectorized loop, under a product whose operands TVM's
    # vectorizer revisits (a call it does not vectorize, erf, counts as changed), was bound
    # twice and rejected; it is computed in a stage of its own (found by a fuzzing review)
    mod = relay.parse(
        "def @main(%x: Tensor[(3, 17), float32], %c: Tensor[(3, 1), float32]) { " + body + " }"
    )
    x = np.arange(51, dtype=np.float32).reshape(3, 17) / 7
    c = np.array([[2.5], [-1.25], [0.75]], np.float32)
    for opt_level in (0, 3):
        got = relay.build(mod, opt_level=opt_level, target=default_target())(x, c)
        np.testing.assert_allclose(got, relay.interpret(mod, x, c), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("rows", [1, 4, 20])
def test_a_shared_bool_value_in_a_vectorized_select_compiles(rows: int) -> None:
    # a materialized bool read in a select reached LLVM as a vector of i8 for a condition
    # ("Invalid operands for select instruction"); a bool barrier is stored as int8 and read
    # back as != 0 (found by a fuzzing review)
    t = f"Tensor[({rows}, 16), int32]"
    mod = relay.parse(
        f"def @main(%x: {t}, %r: {t}) {{ %5 = less(%r, floor_mod(%r, 3)); "
        "where(logical_and(%5, %5), %x, 1) }"
    )
    x = np.arange(rows * 16, dtype=np.int32).reshape(rows, 16)
    r = x - 30
    for opt_level in (0, 3):
        got = relay.build(mod, opt_level=opt_level, target=default_target())(x, r)
        np.testing.assert_array_equal(got, relay.interpret(mod, x, r), strict=True)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_normalizations_compute_float16_in_float32_as_their_references(dtype: str) -> None:
    # SimplifyInference made layer_norm float16 operators, each rounded: up to 5 float16
    # ulps (2%) off the reference, which computes in float32 and rounds once (found by a
    # fuzzing review)
    rng = np.random.default_rng(686)
    r = (rng.standard_normal(65) * 3).astype(dtype)
    mod = relay.parse(
        f"def @main(%r: Tensor[(65,), {dtype}]) {{ "
        "nn.layer_norm(%r, %r, %r, axis=-1, epsilon=1e-5f) }"
    )
    x = (rng.standard_normal((2, 3, 4, 5)) * 2).astype(dtype)
    g, b, m = (rng.standard_normal(3).astype(dtype) for _ in range(3))
    v = np.abs(rng.standard_normal(3)).astype(dtype)
    c = f"Tensor[(3,), {dtype}]"
    bn = relay.parse(
        f"def @main(%x: Tensor[(2, 3, 4, 5), {dtype}], %g: {c}, %b: {c}, %m: {c}, %v: {c}) {{ "
        "%0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=1, epsilon=1e-5f); %0.0 }"
    )
    for program, args in ((mod, (r,)), (bn, (x, g, b, m, v))):
        want = relay.interpret(program, *args)
        for opt_level in (0, 3):
            got = relay.build(program, opt_level=opt_level, target=default_target())(*args)
            if dtype == "float16":  # (float32 rounded once: the same float16)
                np.testing.assert_array_equal(got, want, strict=True)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _primitives(mod: relay.Module) -> list[relay.ir.Function]:
    from relay.ir.analysis import sub_expressions
    from relay.ir.expr import Function

    out = []
    for func in mod.functions.values():
        out += [
            e
            for e in sub_expressions(func.body)
            if isinstance(e, Function) and e.attrs.get("Primitive")
        ]
    return out


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_a_value_read_twice_is_materialized_once_it_is_big(dtype: str) -> None:
    # each level reads the one below twice, doubling the inlined expression; TVM's
    # simplifier is worse than linear in its size (int32, 4 deep: 8.3 s; 5 deep: over a
    # minute; found by a fuzzing review): from SHARED_SIZE operators it is materialized
    from relay.backend.lower import BARRIER, SHARED_SIZE, lower_primitive

    depth, e = 8, "%x"
    for _ in range(depth):
        e = f"where(less({e}, %y), add({e}, %x), %x)"
    t = f"Tensor[(37,), {dtype}]"
    mod = relay.parse(f"def @main(%x: {t}, %y: {t}) {{ {e} }}")
    exe = relay.build(mod, target=default_target())
    (prim,) = _primitives(exe.module)
    script = lower_primitive(prim).prim_func.script()
    assert SHARED_SIZE == 8 and script.count(f'sblock("{BARRIER}') == 3
    rng = np.random.default_rng(4)
    x, y = (rng.integers(-9, 9, 37).astype(dtype) for _ in range(2))
    np.testing.assert_array_equal(exe(x, y), relay.interpret(mod, x, y), strict=True)


def test_nested_integer_divisors_are_materialized() -> None:
    # an integer division's guards read its divisor five times: a divisor computed in the
    # kernel is materialized (floor_mod(x, floor_mod(x, floor_mod(x, x))) of int32 took
    # over a minute to compile)
    from relay.backend.lower import BARRIER, lower_primitive

    e = "%y"
    for _ in range(6):
        e = f"add(floor_mod(%x, {e}), %y)"  # (>= 1 for x >= 0 and y >= 1: no zero divisor)
    mod = relay.parse(f"def @main(%x: Tensor[(37,), int32], %y: Tensor[(37,), int32]) {{ {e} }}")
    exe = relay.build(mod, target=default_target())
    (prim,) = _primitives(exe.module)
    script = lower_primitive(prim).prim_func.script()
    assert script.count(f'sblock("{BARRIER}') == 5
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 1000, 37, dtype=np.int32), rng.integers(1, 9, 37, dtype=np.int32)
    np.testing.assert_array_equal(exe(x, y), relay.interpret(mod, x, y), strict=True)


def test_a_shared_bool_value_is_not_materialized() -> None:
    # a bool barrier read in a vectorized select failed in TVM (found by a fuzzing review)
    body = "".join(f"%{i + 1} = add(%{i}, {i + 1});" for i in range(7))
    mod = relay.parse(
        f"def @main(%0: Tensor[(20000,), int32]) {{ {body} %8 = less(%7, 0); where(%8, %8, True) }}"
    )
    x = np.arange(-10000, 10000, dtype=np.int32)
    np.testing.assert_array_equal(relay.build(mod)(x), relay.interpret(mod, x), strict=True)


@pytest.mark.parametrize(
    ("body", "barriers"),
    [
        ("sign(sign(sign(sign(%x))))", 1),  # sign^2 (6 selects) read twice by the third
        ("argmin(sign(sign(sign(%x))), axis=[0])", 1),  # (sign^3 has 2 selects then)
        ("argmin(sign(floor_divide(%x, %y)), axis=[0])", 1),
        ("argmin(floor_divide(%x, %y), axis=[0])", 1),  # (3 guards and the floordiv)
        ("argmax(sign(%x), axis=[1])", 0),  # 2 selects: repeated
        ("abs(abs(abs(abs(%x))))", 1),  # abs reads x three times; abs^2 has 4 selects
        ("argmin(where(where(%x, %y, %x), where(%x, %y, %x), %y), axis=[0])", 1),  # 3 selects
    ],
)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_an_expression_an_operator_repeats_is_materialized_once_it_is_big(
    body: str, barriers: int, dtype: str
) -> None:
    # sign reads its argument twice, argmin's combiner five times: nested in one kernel,
    # the inlined expression doubled per level, and TVM's simplifier took 19 s to compile
    # sign four deep in int32, 60 s argmin(sign(sign(sign(x)))) (found by a fuzzing review)
    from relay.backend.expansion import REPEAT_SELECTS
    from relay.backend.lower import BARRIER, lower_primitive

    t = f"Tensor[(5, 37), {dtype}]"
    mod = relay.parse(f"def @main(%x: {t}, %y: {t}) {{ {body} }}")
    exe = relay.build(mod, target=default_target())
    (prim,) = _primitives(exe.module)
    script = lower_primitive(prim).prim_func.script()
    assert REPEAT_SELECTS == 3 and script.count(f'sblock("{BARRIER}') == barriers
    rng = np.random.default_rng(6)
    x = rng.integers(-9, 9, (5, 37)).astype(dtype)
    y = (rng.integers(1, 4, (5, 37)) * rng.choice([-1, 1], (5, 37))).astype(dtype)
    np.testing.assert_array_equal(exe(x, y), relay.interpret(mod, x, y), strict=True)


def test_expanded_selects_and_reads_count_the_inlined_expression() -> None:
    from tvm import te, tirx

    from relay.backend.expansion import expanded_selects, reads

    x = te.placeholder((8,), "int32", name="x")

    def sign(v: te.Tensor) -> te.Tensor:
        return te.compute(
            (8,), lambda i: tirx.Select(v[i] > 0, 1, tirx.Select(v[i] < 0, -1, 0)), name="s"
        )

    s1 = sign(x)
    s2 = sign(s1)
    s3 = sign(s2)
    assert [expanded_selects(t) for t in (x, s1, s2, s3)] == [0, 2, 6, 14]
    assert [reads(t, x) for t in (s1, s2, s3)] == [2, 4, 8]
    assert reads(s3, s1) == 4 and reads(s3, s1, frozenset({s2.op})) == 0
    k = te.reduce_axis((0, 8), name="k")
    total = te.compute((1,), lambda i: te.sum(s1[k] * s1[k], axis=k), name="total")
    assert expanded_selects(total) == 0 and reads(total, x) == 4  # (a reduction: not inlined)
    argmax = te.comm_reducer(
        lambda a, b: tirx.Select(a > b, a, b) + tirx.Select(a > b, 0, b * 0), lambda t: -1
    )
    best = te.compute((1,), lambda i: argmax(x[k], axis=k), name="best")
    assert reads(best, x) == 3  # (b three times in the combiner)


@pytest.mark.parametrize(
    ("dtype", "fast", "body"),
    [
        ("float32", False, "%v0 = tanh(%b); add(multiply(tanh(%v0), tanh(fast_tanh(%a))), %v0)"),
        ("float16", True, "multiply(tanh(tanh(%a)), tanh(sigmoid(%a)))"),
        ("float64", True, "multiply(tanh(tanh(%a)), tanh(sigmoid(%b)))"),
    ],
)
def test_libm_tanh_of_a_bound_value_compiles(dtype: str, fast: bool, body: str) -> None:
    # libm's tanh is a call TVM's vectorizer leaves scalar; two of them in a product, one
    # reading a bound value (fast_tanh's, sigmoid's), had that Let bound twice ("Let cannot
    # bind the same var to two different values", found by a fuzzing review): the value is
    # materialized
    t = f"Tensor[(6, 20), {dtype}]"
    mod = relay.parse(f"def @main(%a: {t}, %b: {t}) {{ {body} }}")
    exe = relay.build(mod, target=Target("llvm", fast_math=fast))
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((6, 20)).astype(dtype) for _ in range(2))
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(exe(a, b), relay.interpret(mod, a, b), rtol=tol, atol=tol)
