"""The VTA target's graph side: partitioning quantized layers, heterogeneous builds (VTA
layers and CPU kernels), the per-layer report, and the digits network end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relay
from relay.backend.vta import build as vta_build
from relay.backend.vta.device import Layer
from relay.backend.vta.partition import partition_for_vta
from relay.ir.expr import Call, Function, GlobalVar, Op
from relay.ir.module import Module

RNG = np.random.default_rng(7)


def _module(text: str, **constants: np.ndarray) -> Module:
    """``@main`` of ``text`` with the parameters named in ``constants`` bound to them."""
    from relay.passes.quantize import _bind_params

    func = relay.parse(text)["main"]
    assert isinstance(func, Function)
    return Module({GlobalVar("main"): _bind_params(func, constants)})


def _ops(mod: Module) -> list[str]:
    from relay.ir.analysis import sub_expressions

    main = mod["main"]
    assert isinstance(main, Function)
    return sorted(
        e.op.name
        for e in sub_expressions(main.body)
        if isinstance(e, Call) and isinstance(e.op, Op)
    )


CONV = """
def @main(%x: Tensor[(2, {c}, 6, 6), int8], %w: Tensor[({o}, {c}, {k}, {k}), int8],
          %b: Tensor[({o}, 1, 1), int32]) {{
  %0 = nn.conv2d(%x, %w, strides=[{s}, {s}], padding={pad}, out_dtype="int32");
  %1 = add(%0, %b);
  %2 = add(%1, 64);
  %3 = right_shift(%2, 7);
  %4 = clip(%3, a_min=0f, a_max=127f);
  cast(%4, dtype="int8")
}}
"""

DENSE = """
def @main(%x: Tensor[(3, {i}), int8], %w: Tensor[({o}, {i}), int8], %b: Tensor[({o},), int32]) {{
  %0 = nn.dense(%x, %w, out_dtype="int32");
  %1 = add(%b, %0);
  %2 = clip(%1, a_min=-100f, a_max=100f);
  cast(%2, dtype="int8")
}}
"""


def _conv(c: int = 16, o: int = 32, k: int = 3, s: int = 1, pad: str = "[1, 1]") -> Module:
    w = RNG.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    b = RNG.integers(-5000, 5000, (o, 1, 1), dtype=np.int32)
    return _module(CONV.format(c=c, o=o, k=k, s=s, pad=pad), w=w, b=b)


def _dense(i: int = 48, o: int = 10) -> Module:
    w = RNG.integers(-128, 128, (o, i), dtype=np.int8)
    b = RNG.integers(-5000, 5000, (o,), dtype=np.int32)
    return _module(DENSE.format(i=i, o=o), w=w, b=b)


# -- partitioning ---------------------------------------------------------------------------


def test_a_quantized_conv_becomes_one_vta_call() -> None:
    mod = partition_for_vta(relay.infer_type(_conv()))
    assert _ops(mod) == ["vta.conv2d"]
    main = mod["main"]
    assert isinstance(main, Function) and isinstance(main.body, Call)
    attrs = dict(main.body.attrs)
    assert attrs == {"strides": (1, 1), "padding": (1, 1), "shift": 7, "lo": 0, "hi": 127}
    bias = main.body.args[2]
    assert bias.data.shape == (32,) and bias.data.dtype == np.int32  # type: ignore[attr-defined]


def test_a_dense_without_shift_and_with_the_bias_first_is_offloaded() -> None:
    mod = partition_for_vta(relay.infer_type(_dense()))
    assert _ops(mod) == ["vta.dense"]
    main = mod["main"]
    assert isinstance(main, Function) and isinstance(main.body, Call)
    assert dict(main.body.attrs) == {"shift": 0, "lo": -100, "hi": 100}


@pytest.mark.parametrize(
    ("why", "mod"),
    [
        ("8 input channels", lambda: _conv(c=8)),
        ("a 5x5 kernel", lambda: _conv(k=5, pad="[2, 2]")),
        ("asymmetric padding", lambda: _conv(pad="[1, 1, 0, 0]")),
        ("padding as large as the kernel", lambda: _conv(k=1, pad="[1, 1]")),
        ("dense over 40 features", lambda: _dense(i=40)),
    ],
)
def test_layers_vta_cannot_run_stay_on_the_cpu(why: str, mod: object) -> None:
    typed = relay.infer_type(mod())  # type: ignore[operator]
    assert partition_for_vta(typed) is typed, why


def test_a_wrong_rounding_constant_is_not_a_vta_layer() -> None:
    text = CONV.format(c=16, o=16, k=3, s=1, pad="[1, 1]").replace("add(%1, 64)", "add(%1, 63)")
    w = RNG.integers(-128, 128, (16, 16, 3, 3), dtype=np.int8)
    typed = relay.infer_type(_module(text, w=w, b=np.zeros((16, 1, 1), np.int32)))
    assert partition_for_vta(typed) is typed


# -- heterogeneous builds ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: _conv(),
        lambda: _conv(c=32, o=20, k=1, s=2, pad="[0, 0]"),
        lambda: _conv(o=16, s=2),
        lambda: _dense(),
        lambda: _dense(i=64, o=33),
    ],
)
def test_vta_builds_equal_the_cpu_and_the_interpreter(make: object) -> None:
    mod = make()  # type: ignore[operator]
    main = mod["main"]
    x_type = main.params[0].type_annotation
    x = RNG.integers(-128, 128, tuple(x_type.shape), dtype=np.int8)
    exe = relay.build(mod, target="vta")
    assert [name.split("_")[1] for name in exe.kernels] == [
        "conv2d" if "conv" in relay.astext(main) else "dense"
    ]
    got = exe(x)
    np.testing.assert_array_equal(got, relay.build(mod)(x))
    np.testing.assert_array_equal(got, relay.interpret(mod, x))


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(1, 3),
    c=st.sampled_from([16, 32]),
    o=st.integers(1, 40),
    hw=st.integers(1, 7),
    k=st.sampled_from([1, 3]),
    shift=st.integers(1, 15),
    relu=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_quantized_convolutions_on_vta(
    n: int, c: int, o: int, hw: int, k: int, shift: int, relu: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    pad = k // 2
    lo = 0 if relu else -127
    text = f"""
    def @main(%x: Tensor[({n}, {c}, {hw}, {hw}), int8], %w: Tensor[({o}, {c}, {k}, {k}), int8],
              %b: Tensor[({o}, 1, 1), int32]) {{
      %0 = nn.conv2d(%x, %w, padding=[{pad}, {pad}], out_dtype="int32");
      %1 = add(%0, %b);
      %2 = add(%1, {1 << (shift - 1)});
      %3 = right_shift(%2, {shift});
      %4 = clip(%3, a_min={lo}f, a_max=127f);
      cast(%4, dtype="int8")
    }}
    """
    w = rng.integers(-128, 128, (o, c, k, k), dtype=np.int8)
    b = rng.integers(-(2**18), 2**18, (o, 1, 1), dtype=np.int32)
    mod = _module(text, w=w, b=b)
    x = rng.integers(-128, 128, (n, c, hw, hw), dtype=np.int8)
    exe = relay.build(mod, target="vta")
    assert len(vta_build.layers(exe)) == 1
    np.testing.assert_array_equal(exe(x), relay.interpret(mod, x))


def test_a_program_mixing_vta_layers_and_cpu_operators() -> None:
    """conv (VTA) -> dequantize, max pool, requantize (CPU) -> dense (VTA) -> float (CPU)."""
    w1 = RNG.integers(-128, 128, (16, 16, 3, 3), dtype=np.int8)
    w2 = RNG.integers(-128, 128, (10, 64), dtype=np.int8)
    text = """
    def @main(%x: Tensor[(2, 16, 4, 4), int8], %w1: Tensor[(16, 16, 3, 3), int8],
              %w2: Tensor[(10, 64), int8]) {
      %0 = nn.conv2d(%x, %w1, padding=[1, 1], out_dtype="int32");
      %1 = right_shift(add(%0, 512), 10);
      %2 = cast(clip(%1, a_min=0f, a_max=127f), dtype="int8");
      %3 = nn.max_pool2d(cast(%2, dtype="float32"), pool_size=[2, 2], strides=[2, 2]);
      %4 = cast(nn.batch_flatten(%3), dtype="int8");
      %5 = nn.dense(%4, %w2, out_dtype="int32");
      %6 = cast(clip(right_shift(add(%5, 64), 7), a_min=-127f, a_max=127f), dtype="int8");
      multiply(cast(%6, dtype="float32"), 0.25f)
    }
    """
    mod = _module(text, w1=w1, w2=w2)
    x = RNG.integers(-128, 128, (2, 16, 4, 4), dtype=np.int8)
    exe = relay.build(mod, target="vta")
    assert [name for name, _ in vta_build.layers(exe)] == ["vta_conv2d_0", "vta_dense_4"]
    assert len(exe.kernels) == 6  # two VTA layers, four CPU kernels around them
    np.testing.assert_array_equal(exe(x), relay.build(mod)(x))
    np.testing.assert_array_equal(exe(x), relay.interpret(mod, x))
    table = vta_build.report(exe).splitlines()
    assert table[0].split() == [
        "layer",
        "shape",
        "cycles",
        "GEMM",
        "util",
        "loaded",
        "B",
        "stored",
        "B",
        "insns",
    ]
    conv = vta_build.layers(exe)[0][1]
    assert conv.runs == 2 and conv.report is not None
    assert table[1].startswith("vta_conv2d_0      (2, 16, 4, 4)x(16, 16, 3, 3)")
    assert f"{conv.report.cycles:>10}" in table[1]
    assert table[-1].split() == [
        "total",
        str(sum(lay.report.cycles for _, lay in vta_build.layers(exe))),
    ]  # type: ignore[union-attr]


def test_a_vta_executable_is_saved_and_loaded_in_a_fresh_process(tmp_path: Path) -> None:
    mod = _dense()
    exe = relay.build(mod, target="vta")
    x = RNG.integers(-128, 128, (3, 48), dtype=np.int8)
    want = exe(x)
    path = tmp_path / "dense.relay"
    exe.save(path)
    loaded = relay.Executable.load(path)
    assert loaded.target.kind == "vta" and loaded.kernels == exe.kernels
    ((name, layer),) = vta_build.layers(loaded)
    assert layer.spec == vta_build.layers(exe)[0][1].spec and layer.spec["op"] == "vta.dense"
    np.testing.assert_array_equal(loaded(x), want)
    assert layer.runs == 1 and vta_build.report(loaded).splitlines()[1].startswith(name)
    np.save(tmp_path / "x.npy", x)
    script = (
        "import numpy as np, relay; "
        f"exe = relay.Executable.load({str(path)!r}); "
        f"print(exe(np.load({str(tmp_path / 'x.npy')!r})).tolist())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(want.tolist())


def test_a_layer_is_made_again_from_its_spec() -> None:
    exe = relay.build(_conv(s=2), target="vta")
    ((_, layer),) = vta_build.layers(exe)
    assert layer.spec["strides"] == [2, 2] and layer.spec["padding"] == [1, 1]
    again = vta_build.layer_from_spec(layer.spec)
    assert again.spec == layer.spec and again.shapes == layer.shapes
    assert list(again.program.insns) == list(layer.program.insns)


def test_a_layer_packs_its_constants_once() -> None:
    layer = Layer.dense(2, 32, 16)
    x = RNG.integers(-128, 128, (2, 32), dtype=np.int8)
    w = RNG.integers(-128, 128, (16, 32), dtype=np.int8)
    b = np.zeros(16, np.int32)
    first = layer(x, w, b)
    layer.dram.write(layer.addrs.wgt * 256, np.zeros(2 * 256, np.int8))  # clobber the weights
    # the same arrays: not packed again, so the product reads the zeros
    np.testing.assert_array_equal(layer(x, w, b), np.zeros_like(first))
    np.testing.assert_array_equal(layer(x, w.copy(), b), first)  # new arrays: packed again
    assert np.any(first != 0)
