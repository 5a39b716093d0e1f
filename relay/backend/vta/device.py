"""VTA operators on the simulated device: DRAM placement, packing, runs, unpacking.

A :class:`Layer` is one operator placed on a VTA device (a
:class:`~relay.backend.vta.sim.Simulator` over its own :class:`~relay.backend.vta.sim.DRAM`):
when it is made, DRAM gets a region for each packed operand (each aligned to its element
size, since LOAD and STORE address DRAM in elements) and for the micro-ops, and the program is
generated for those addresses (:mod:`.kernels`). A call packs the operands into VTA's layouts
(:mod:`.layout`; the weights and bias only when they are not the arrays of the previous call,
so a compiled program's constants are packed once), runs the program in program order or
with the token scheduler, and unpacks the int8 result. :attr:`Layer.report` keeps the
simulator's report of the last run (counters and the cycle estimate).

:func:`dense` and :func:`conv2d` make a layer and run it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from relay.backend.vta import kernels, layout
from relay.backend.vta.builder import Program
from relay.backend.vta.isa import DEFAULT, VTAConfig, encode_uops
from relay.backend.vta.layout import Array, Requantize
from relay.backend.vta.sim import DRAM, Report, Simulator
from relay.errors import VTAError

Order = Literal["program", "tokens"]

NO_REQUANTIZE = Requantize()
"""The default epilogue: no shift, the clip to int8."""


@dataclass(frozen=True)
class Result:
    """An operator's int8 output, the program that computed it and the simulator's report."""

    output: Array
    program: Program
    report: Report


def _check(name: str, x: Array, shape: tuple[int, ...], dtype: type) -> Array:
    x = np.asarray(x)
    if x.dtype != dtype:
        raise VTAError(f"VTA's {name} must be {np.dtype(dtype).name}, not {x.dtype}")
    if x.shape != shape:
        raise VTAError(f"VTA's {name} must have shape {shape}, not {x.shape}")
    return x


class Layer:
    """One VTA operator on its own simulated device (see the module docstring). Make one
    with :meth:`dense` or :meth:`conv2d`; call it with ``(data, weight, bias)``, or with an
    output array after them (the graph executor's convention)."""

    def __init__(
        self,
        op: str,
        shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
        packed: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
        out_shape: tuple[int, ...],
        program: Program,
        addrs: kernels.DenseAddrs | kernels.Conv2DAddrs,
        dram: DRAM,
        config: VTAConfig,
        order: Order,
        seed: int,
    ) -> None:
        self.op = op
        self.shapes = shapes
        self.packed_shapes = packed
        self.out_shape = out_shape
        self.addrs = addrs
        self.dram = dram
        self.config = config
        self.order: Order = order
        self.seed = seed
        c = config
        base = dram.put(encode_uops(program.uops, c), align=c.uop_elem_bytes)
        self.program = program.relocated(base // c.uop_elem_bytes)
        self.sim = Simulator(dram, config)
        self.report: Report | None = None
        self.runs = 0
        self._constants: tuple[Any, Any] = (None, None)
        self.spec: dict[str, Any] = {}
        """How the layer was made, for a saved executable
        (:func:`relay.backend.vta.build.layer_from_spec`)."""

    # -- making layers ---------------------------------------------------------------------

    @staticmethod
    def dense(
        n: int,
        features: int,
        units: int,
        rq: Requantize = NO_REQUANTIZE,
        *,
        tile: kernels.DenseTile | None = None,
        order: Order = "program",
        seed: int = 0,
        config: VTAConfig = DEFAULT,
    ) -> Layer:
        """int8 ``(n, features) x (units, features)^T`` with an int32 bias and the epilogue."""
        shape = kernels.DenseShape(n, layout.blocks(features), layout.blocks(units))
        packed = ((n, shape.ib, 16), (shape.ob, shape.ib, 16, 16), (shape.ob, 16))
        dram, addrs = _place(packed, (n, shape.ob, 16), config)
        assert isinstance(addrs, kernels.DenseAddrs)
        program = kernels.dense_program(shape, addrs, rq, tile, config)
        shapes = ((n, features), (units, features), (units,))
        return Layer(
            "vta.dense", shapes, packed, (n, units), program, addrs, dram, config, order, seed
        )

    @staticmethod
    def conv2d(
        data: tuple[int, int, int, int],
        weight: tuple[int, int, int, int],
        rq: Requantize = NO_REQUANTIZE,
        strides: tuple[int, int] = (1, 1),
        padding: tuple[int, int] = (0, 0),
        *,
        tile: kernels.Conv2DTile | None = None,
        order: Order = "program",
        seed: int = 0,
        config: VTAConfig = DEFAULT,
    ) -> Layer:
        """An int8 NCHW convolution with OIHW ``weight``, symmetric zero ``padding``, an int32
        bias and the epilogue."""
        n, ch, h, w = data
        o, wc, kh, kw = weight
        if wc != ch:
            raise VTAError(f"conv2d of shapes {data} and {weight}: the channels differ")
        shape = kernels.Conv2DShape(
            n, layout.blocks(ch), h, w, layout.blocks(o), kh, kw, strides, padding
        )
        kernels.check_conv2d(shape)
        packed = (
            (n, shape.cb, h, w, 16),
            (shape.ob, shape.cb, kh, kw, 16, 16),
            (shape.ob, 16),
        )
        dram, addrs = _place(packed, (n, shape.ob, shape.oh, shape.ow, 16), config, conv=True)
        assert isinstance(addrs, kernels.Conv2DAddrs)
        program = kernels.conv2d_program(shape, addrs, rq, tile, config)
        out = (n, o, shape.oh, shape.ow)
        return Layer(
            "vta.conv2d",
            (data, weight, (o,)),
            packed,
            out,
            program,
            addrs,
            dram,
            config,
            order,
            seed,
        )

    # -- running ---------------------------------------------------------------------------

    def __call__(self, data: Array, weight: Array, bias: Array, out: Array | None = None) -> Array:
        """Run on int8 ``data`` and ``weight`` and int32 ``bias``; the int8 result, written
        into ``out`` when given."""
        c, a = self.config, self.addrs
        x = _check("data", data, self.shapes[0], np.int8)
        if weight is not self._constants[0] or bias is not self._constants[1]:
            w = _check("weight", weight, self.shapes[1], np.int8)
            b = _check("bias", bias, self.shapes[2], np.int32)
            pw = layout.pack_dense_weight(w) if self.op == "vta.dense" else layout.pack_oihw(w)
            self.dram.write(a.wgt * c.wgt_elem_bytes, pw)
            assert a.bias is not None
            self.dram.write(a.bias * c.acc_elem_bytes, layout.pack_bias(b))
            self._constants = (weight, bias)
        packed = layout.pack_matrix(x) if self.op == "vta.dense" else layout.pack_nchw(x)
        self.dram.write(a.inp * c.inp_elem_bytes, packed)
        self.report = self.sim.run(list(self.program.insns), order=self.order, seed=self.seed)
        self.runs += 1
        o = self.dram.read(a.out * c.out_elem_bytes, _out_packed(self), np.int8)
        channels = self.out_shape[1]
        result = (
            layout.unpack_matrix(o, channels)
            if self.op == "vta.dense"
            else layout.unpack_nchw(o, channels)
        )
        if out is None:
            return result
        np.copyto(out, result)
        return out

    def run(self, data: Array, weight: Array, bias: Array | None) -> Result:
        """One run (a zero bias when ``bias`` is None): the output, program and report."""
        if bias is None:
            bias = np.zeros(self.shapes[2], np.int32)
        output = self(data, weight, bias)
        assert self.report is not None
        return Result(output, self.program, self.report)


def _out_packed(layer: Layer) -> tuple[int, ...]:
    if layer.op == "vta.dense":
        n, units = layer.out_shape
        return (n, layout.blocks(units), 16)
    n, o, oh, ow = layer.out_shape
    return (n, layout.blocks(o), oh, ow, 16)


def _place(
    packed: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
    out: tuple[int, ...],
    config: VTAConfig,
    conv: bool = False,
) -> tuple[DRAM, kernels.DenseAddrs | kernels.Conv2DAddrs]:
    """A DRAM with a region for each packed operand and the output; their element addresses."""
    c = config
    dram = DRAM()

    def region(shape: tuple[int, ...], item: int, elem: int) -> int:
        return dram.alloc(int(np.prod(shape)) * item, align=elem) // elem

    inp = region(packed[0], 1, c.inp_elem_bytes)
    wgt = region(packed[1], 1, c.wgt_elem_bytes)
    bias = region(packed[2], 4, c.acc_elem_bytes)
    o = region(out, 1, c.out_elem_bytes)
    addrs_type = kernels.Conv2DAddrs if conv else kernels.DenseAddrs
    return dram, addrs_type(inp=inp, wgt=wgt, bias=bias, out=o)


def dense(
    x: Array,
    w: Array,
    bias: Array | None = None,
    rq: Requantize = NO_REQUANTIZE,
    order: Order = "program",
    seed: int = 0,
    tile: kernels.DenseTile | None = None,
    config: VTAConfig = DEFAULT,
) -> Result:
    """``clip((x @ w.T + bias) >> shift)`` on VTA, once: int8 ``x (N, I)`` and ``w (O, I)``,
    int32 ``bias (O,)``, int8 ``(N, O)`` out."""
    x, w = np.asarray(x), np.asarray(w)
    for name, a in (("dense input", x), ("dense weight", w)):
        if a.dtype != np.int8:
            raise VTAError(f"VTA's {name} must be int8, not {a.dtype}")
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise VTAError(f"dense of shapes {x.shape} and {w.shape}: expected (N, I) and (O, I)")
    layer = Layer.dense(
        x.shape[0], x.shape[1], w.shape[0], rq, tile=tile, order=order, seed=seed, config=config
    )
    return layer.run(x, w, bias)


def conv2d(
    x: Array,
    w: Array,
    bias: Array | None = None,
    rq: Requantize = NO_REQUANTIZE,
    strides: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
    order: Order = "program",
    seed: int = 0,
    tile: kernels.Conv2DTile | None = None,
    config: VTAConfig = DEFAULT,
) -> Result:
    """An int8 NCHW convolution (OIHW weights, symmetric zero padding) with the epilogue on
    VTA, once; int8 NCHW out."""
    x, w = np.asarray(x), np.asarray(w)
    for name, a in (("conv2d input", x), ("conv2d weight", w)):
        if a.dtype != np.int8:
            raise VTAError(f"VTA's {name} must be int8, not {a.dtype}")
    if x.ndim != 4 or w.ndim != 4 or x.shape[1] != w.shape[1]:
        raise VTAError(f"conv2d of shapes {x.shape} and {w.shape}: expected NCHW and OIHW")
    layer = Layer.conv2d(
        x.shape, w.shape, rq, strides, padding, tile=tile, order=order, seed=seed, config=config
    )
    return layer.run(x, w, bias)
