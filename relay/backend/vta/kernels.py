"""int8 dense and conv2d as VTA programs: tiling, double buffering, the ALU epilogue.

Both operators are output-stationary loops over tiles of the output (Moreau et al., *A
Hardware-Software Blueprint for Flexible Deep Learning Specialization*, IEEE Micro 2019,
section "VTA code generation"; TVM's VTA schedules ``vta/python/vta/top/vta_conv2d.py`` and
``vta_dense.py`` tiled the same way, with ``env.gemm`` tensorized). For each output tile:

1. the compute module zeroes the tile's accumulator rows (a GEMM with ``reset``);
2. for each tile of the reduction (input channels), the load module DMAs the input tile (with
   the convolution's zero padding made by LOAD's pads) and the weight tile, and the compute
   module runs one GEMM instruction per reduction element (per input-channel block, and per
   kernel row and column of a convolution), each a micro-kernel of one uop per output block
   looped over the tile's rows and columns;
3. the epilogue runs on the ALU over the tile: the bias (a LOAD ACC of its 16-channel blocks,
   added row by row), ``+ 2**(shift-1)`` and a right shift (requantization), MIN and MAX
   (the clip to int8, and the ReLU); STORE wraps to int8, so the clip is what keeps values
   exact;
4. the store module writes the tile to DRAM.

**Two virtual threads.** The input and weight buffers are split in halves used by alternate
reduction steps, and the accumulator in halves used by alternate output tiles. Tokens order
each reuse of a half after the work that last used it: the load module pops a compute->load
token before overwriting a half (pushed when the GEMMs of the step two back are done), and the
compute module pops a store->compute token before resetting an accumulator half (pushed when
the store of the tile two back is done). So the loads of step ``s + 1`` overlap the GEMMs of
step ``s``, and the store of one tile the computation of the next.

**The accumulator hazard.** A GEMM uop may not write the accumulator row that either of the
two uops before it wrote (the hardware pipeline reads the row before the earlier write lands).
Consecutive uops here write distinct rows of the tile; when a tile has fewer than 3 rows, the
GEMMs alternate between ``ceil(3 / rows)`` copies of the tile's rows (partial sums), which the
ALU adds together before the epilogue.

**Tiles** are chosen by :func:`dense_tiles` / :func:`conv2d_tiles`: among the tilings that fit
half of each buffer, the one moving the fewest bytes from DRAM (inputs are reloaded once per
tile of output channels, weights once per tile of output pixels), then the fewest
instructions.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from relay.backend.vta.builder import Program, StreamBuilder
from relay.backend.vta.isa import DEFAULT, AluOp, MemId, Module, Uop, VTAConfig
from relay.backend.vta.layout import Requantize
from relay.errors import VTAError

# -- the token protocol of the two virtual threads ----------------------------------------------


class _Pipeline:
    """The dependency tokens of the double-buffered loop (module docstring): ``steps`` load
    and GEMM steps alternate between the input/weight halves, ``tiles`` output tiles between
    the accumulator halves."""

    def __init__(self, b: StreamBuilder, steps: int, tiles: int) -> None:
        self.b = b
        self.steps, self.tiles = steps, tiles
        self.step = self.tile = -1

    def load_step(self) -> int:
        """Start the next step's loads; the half they use."""
        self.step += 1
        if self.step >= 2:
            self.b.pop(Module.COMPUTE, Module.LOAD)
        return self.step % 2

    def loads_done(self) -> None:
        self.b.push(Module.LOAD, Module.COMPUTE)

    def compute_step(self) -> None:
        self.b.pop(Module.LOAD, Module.COMPUTE)

    def compute_step_done(self) -> None:
        if self.step + 2 < self.steps:
            self.b.push(Module.COMPUTE, Module.LOAD)

    def compute_tile(self) -> int:
        """Start the next output tile on the compute module; the accumulator half."""
        self.tile += 1
        if self.tile >= 2:
            self.b.pop(Module.STORE, Module.COMPUTE)
        return self.tile % 2

    def tile_done(self) -> None:
        self.b.push(Module.COMPUTE, Module.STORE)
        self.b.pop(Module.COMPUTE, Module.STORE)

    def stored(self) -> None:
        if self.tile + 2 < self.tiles:
            self.b.push(Module.STORE, Module.COMPUTE)


def _parts(rows: int) -> int:
    """Copies of a tile's accumulator rows the GEMMs alternate between (the hazard)."""
    return -(-3 // rows)


@dataclass
class _Halves:
    inp: int
    wgt: int
    acc: int

    @staticmethod
    def of(config: VTAConfig) -> _Halves:
        return _Halves(config.inp_depth // 2, config.wgt_depth // 2, config.acc_depth // 2)


class _Tile:
    """The accumulator rows of one output tile: ``parts`` copies of ``rows`` rows at
    ``base``, then the bias rows; GEMMs take the copies in turn."""

    def __init__(self, b: StreamBuilder, base: int, rows: int, channels: int) -> None:
        self.b, self.base, self.rows, self.channels = b, base, rows, channels
        self.parts = _parts(rows)
        self.bias_base = base + self.parts * rows
        self.gemms = 0

    def reset(self) -> None:
        n = self.parts * self.rows
        self.b.gemm([Uop(self.base)], loops=(n, 1), dst=(1, 0), reset=True)

    def next_part(self) -> int:
        """The first row of the copy the next GEMM accumulates into."""
        part = self.gemms % self.parts
        self.gemms += 1
        return self.base + part * self.rows

    def epilogue(
        self, rq: Requantize, bias_dram: int | None, bias_rows: tuple[int, int, int]
    ) -> None:
        """The partial sums added, then the ALU epilogue over the tile's rows. ``bias_dram``:
        the DRAM element of the tile's first bias block, or None; ``bias_rows = (block,
        count, step)``: output block ``o``'s rows are ``o * block + k * step`` for ``k <
        count``."""
        b, rows, base = self.b, self.rows, self.base
        for q in range(1, self.parts):
            b.alu(AluOp.ADD, [Uop(base, base + q * rows)], loops=(rows, 1), dst=(1, 0), src=(1, 0))
        if bias_dram is not None:
            block, count, step = bias_rows
            b.load(MemId.ACC, self.bias_base, bias_dram, 1, self.channels, self.channels)
            uops = [Uop(base + o * block, self.bias_base + o) for o in range(self.channels)]
            b.alu(AluOp.ADD, uops, loops=(count, 1), dst=(step, 0))
        every = [Uop(base)]
        if rq.shift:
            b.alu(AluOp.ADD, every, loops=(rows, 1), dst=(1, 0), imm=1 << (rq.shift - 1))
            b.alu(AluOp.SHR, every, loops=(rows, 1), dst=(1, 0), imm=rq.shift)
        b.alu(AluOp.MIN, every, loops=(rows, 1), dst=(1, 0), imm=rq.hi)
        b.alu(AluOp.MAX, every, loops=(rows, 1), dst=(1, 0), imm=rq.low)


def _ranges(total: int, tile: int) -> Iterator[tuple[int, int]]:
    """``(start, size)`` of each tile of ``tile`` along ``total``."""
    for start in range(0, total, tile):
        yield start, min(tile, total - start)


# -- dense --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DenseShape:
    """``(N, I) x (O, I)^T``, in 16-channel blocks: ``ib = I/16``, ``ob = O/16``."""

    n: int
    ib: int
    ob: int


@dataclass(frozen=True)
class DenseTile:
    """Rows ``n``, output blocks ``o``, input blocks ``i`` per tile."""

    n: int
    o: int
    i: int


@dataclass(frozen=True)
class DenseAddrs:
    """DRAM element addresses (in each buffer's element size) of the packed operands: input
    ``(N, IB, 16)`` int8, weight ``(OB, IB, 16, 16)`` int8, bias ``(OB, 16)`` int32 (or None),
    output ``(N, OB, 16)`` int8."""

    inp: int
    wgt: int
    bias: int | None
    out: int


def dense_fits(shape: DenseShape, tile: DenseTile, config: VTAConfig = DEFAULT) -> bool:
    """Whether ``tile`` fits half of each buffer."""
    h = _Halves.of(config)
    rows = tile.n * tile.o
    return (
        tile.n * tile.i <= h.inp
        and tile.o * tile.i <= h.wgt
        and _parts(rows) * rows + tile.o <= h.acc
    )


def dense_tiles(shape: DenseShape, config: VTAConfig = DEFAULT) -> DenseTile:
    """The tiling of ``shape`` with the least DRAM traffic (module docstring)."""
    best: tuple[tuple[int, int], DenseTile] | None = None
    for n, o, i in itertools.product(
        _candidates(shape.n), _candidates(shape.ob), _candidates(shape.ib)
    ):
        tile = DenseTile(n, o, i)
        if not dense_fits(shape, tile, config):
            continue
        tn, to, ti = (-(-total // t) for total, t in ((shape.n, n), (shape.ob, o), (shape.ib, i)))
        traffic = to * shape.n * shape.ib * 16 + tn * shape.ob * shape.ib * 256
        insns = tn * to * (ti * (2 + i) + 8)
        key = (traffic, insns)
        if best is None or key < best[0]:
            best = (key, tile)
    if best is None:
        raise VTAError(f"no dense tiling of {shape} fits VTA's buffers")
    return best[1]


def _candidates(total: int) -> list[int]:
    """Tile sizes worth trying along an axis of ``total``: powers of two, the whole axis, and
    the even splits of it."""
    sizes = {total}
    p = 1
    while p < total:
        sizes.add(p)
        p *= 2
    sizes.update(-(-total // k) for k in range(1, min(total, 16) + 1))
    return sorted(sizes)


def dense_program(
    shape: DenseShape,
    addrs: DenseAddrs,
    rq: Requantize,
    tile: DenseTile | None = None,
    config: VTAConfig = DEFAULT,
) -> Program:
    """The VTA program of an int8 dense layer with its epilogue (module docstring)."""
    tile = tile or dense_tiles(shape, config)
    if not dense_fits(shape, tile, config):
        raise VTAError(f"the dense tile {tile} does not fit VTA's buffers")
    h = _Halves.of(config)
    b = StreamBuilder(0, config)
    n_tiles = list(_ranges(shape.n, tile.n))
    o_tiles = list(_ranges(shape.ob, tile.o))
    i_tiles = list(_ranges(shape.ib, tile.i))
    pipe = _Pipeline(b, len(n_tiles) * len(o_tiles) * len(i_tiles), len(n_tiles) * len(o_tiles))
    for (n0, tn), (o0, to) in itertools.product(n_tiles, o_tiles):
        acc = _Tile(b, pipe.compute_tile() * h.acc, tn * to, to)
        acc.reset()
        for i0, ti in i_tiles:
            half = pipe.load_step()
            inp, wgt = half * h.inp, half * h.wgt
            b.load(MemId.INP, inp, addrs.inp + n0 * shape.ib + i0, tn, ti, shape.ib)
            b.load(MemId.WGT, wgt, addrs.wgt + o0 * shape.ib + i0, to, ti, shape.ib)
            pipe.loads_done()
            pipe.compute_step()
            for i in range(ti):
                b.gemm(
                    [Uop(acc.next_part(), inp + i, wgt + i)],
                    loops=(tn, to),
                    dst=(to, 1),
                    src=(ti, 0),
                    wgt=(0, ti),
                )
            pipe.compute_step_done()
        # rows are (n, o), o fastest: bias block o goes to rows o, o + to, o + 2 to, ...
        acc.epilogue(rq, None if addrs.bias is None else addrs.bias + o0, (1, tn, to))
        pipe.tile_done()
        b.store(acc.base, addrs.out + n0 * shape.ob + o0, tn, to, shape.ob)
        pipe.stored()
    return b.finish()


# -- conv2d -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conv2DShape:
    """An NCHW convolution in 16-channel blocks: input ``(n, cb, h, w)``, ``ob`` output
    blocks, a ``kh x kw`` kernel, ``strides`` and zero ``padding`` ``(ph, pw)`` on both
    sides."""

    n: int
    cb: int
    h: int
    w: int
    ob: int
    kh: int
    kw: int
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)

    @property
    def oh(self) -> int:
        """Output rows."""
        return (self.h + 2 * self.padding[0] - self.kh) // self.strides[0] + 1

    @property
    def ow(self) -> int:
        """Output columns."""
        return (self.w + 2 * self.padding[1] - self.kw) // self.strides[1] + 1


@dataclass(frozen=True)
class Conv2DTile:
    """Output rows ``h``, output columns ``w``, output blocks ``o``, input blocks ``c`` per
    tile."""

    h: int
    w: int
    o: int
    c: int


@dataclass(frozen=True)
class Conv2DAddrs:
    """DRAM element addresses of the packed operands: input ``(N, CB, H, W, 16)``, weight
    ``(OB, CB, KH, KW, 16, 16)``, bias ``(OB, 16)`` int32 (or None), output ``(N, OB, OH, OW,
    16)``."""

    inp: int
    wgt: int
    bias: int | None
    out: int


def _window(out: int, stride: int, kernel: int) -> int:
    """Input extent read by ``out`` outputs."""
    return (out - 1) * stride + kernel


def conv2d_fits(shape: Conv2DShape, tile: Conv2DTile, config: VTAConfig = DEFAULT) -> bool:
    """Whether ``tile`` fits half of each buffer (and the loop factors their fields)."""
    h = _Halves.of(config)
    sh, sw = shape.strides
    th_in, tw_in = _window(tile.h, sh, shape.kh), _window(tile.w, sw, shape.kw)
    rows = tile.o * tile.h * tile.w
    return (
        tile.c * th_in * tw_in <= h.inp
        and tile.o * tile.c * shape.kh * shape.kw <= h.wgt
        and _parts(rows) * rows + tile.o <= h.acc
        and sh * tw_in < 1 << config.log_inp_depth
    )


def check_conv2d(shape: Conv2DShape) -> None:
    """A VTAError unless VTA can run ``shape``: LOAD pads at most 15 elements, and every
    output window must overlap the input (padding below the kernel size)."""
    for what, pad, k in (
        ("rows", shape.padding[0], shape.kh),
        ("columns", shape.padding[1], shape.kw),
    ):
        if pad > 15:
            raise VTAError(f"conv2d padding of {pad} {what}: VTA's LOAD pads at most 15")
        if pad >= k:
            raise VTAError(
                f"conv2d padding of {pad} {what} with a kernel of {k}: VTA needs the padding "
                "below the kernel size"
            )
    if shape.oh < 1 or shape.ow < 1:
        raise VTAError(f"conv2d {shape}: the kernel is larger than the padded input")


def conv2d_tiles(shape: Conv2DShape, config: VTAConfig = DEFAULT) -> Conv2DTile:
    """The tiling of ``shape`` with the least DRAM traffic (module docstring)."""
    sh, sw = shape.strides
    best: tuple[tuple[int, int], Conv2DTile] | None = None
    for th, tw, to, tc in itertools.product(
        _candidates(shape.oh), _candidates(shape.ow), _candidates(shape.ob), _candidates(shape.cb)
    ):
        tile = Conv2DTile(th, tw, to, tc)
        if not conv2d_fits(shape, tile, config):
            continue
        nh, nw = -(-shape.oh // th), -(-shape.ow // tw)
        no, nc = -(-shape.ob // to), -(-shape.cb // tc)
        window = _window(th, sh, shape.kh) * _window(tw, sw, shape.kw)
        traffic = shape.n * (
            no * nh * nw * shape.cb * window * 16
            + nh * nw * shape.ob * shape.cb * shape.kh * shape.kw * 256
        )
        insns = shape.n * nh * nw * no * (nc * (tc * (1 + shape.kh * shape.kw) + 1) + 8 + to)
        key = (traffic, insns)
        if best is None or key < best[0]:
            best = (key, tile)
    if best is None:
        raise VTAError(f"no conv2d tiling of {shape} fits VTA's buffers")
    return best[1]


def conv2d_program(
    shape: Conv2DShape,
    addrs: Conv2DAddrs,
    rq: Requantize,
    tile: Conv2DTile | None = None,
    config: VTAConfig = DEFAULT,
) -> Program:
    """The VTA program of an int8 NCHW convolution with its epilogue (module docstring)."""
    check_conv2d(shape)
    tile = tile or conv2d_tiles(shape, config)
    if not conv2d_fits(shape, tile, config):
        raise VTAError(f"the conv2d tile {tile} does not fit VTA's buffers")
    h = _Halves.of(config)
    b = StreamBuilder(0, config)
    (sh, sw), (ph, pw) = shape.strides, shape.padding
    kk = shape.kh * shape.kw
    spatial = [
        (n, r, c)
        for n in range(shape.n)
        for r in _ranges(shape.oh, tile.h)
        for c in _ranges(shape.ow, tile.w)
    ]
    o_tiles = list(_ranges(shape.ob, tile.o))
    c_tiles = list(_ranges(shape.cb, tile.c))
    tiles = len(spatial) * len(o_tiles)
    pipe = _Pipeline(b, tiles * len(c_tiles), tiles)
    for (n, (oy0, th), (ox0, tw)), (o0, to) in itertools.product(spatial, o_tiles):
        pixels = th * tw
        acc = _Tile(b, pipe.compute_tile() * h.acc, to * pixels, to)
        acc.reset()
        th_in, tw_in = _window(th, sh, shape.kh), _window(tw, sw, shape.kw)
        iy0, ix0 = oy0 * sh - ph, ox0 * sw - pw  # the window's corner, padding included
        y_lo, y_hi = max(iy0, 0), min(iy0 + th_in, shape.h)
        x_lo, x_hi = max(ix0, 0), min(ix0 + tw_in, shape.w)
        pad = (y_lo - iy0, iy0 + th_in - y_hi, x_lo - ix0, ix0 + tw_in - x_hi)
        for c0, tc in c_tiles:
            half = pipe.load_step()
            inp, wgt = half * h.inp, half * h.wgt
            for c in range(tc):
                dram = addrs.inp + ((n * shape.cb + c0 + c) * shape.h + y_lo) * shape.w + x_lo
                b.load(
                    MemId.INP, inp + c * th_in * tw_in, dram, y_hi - y_lo, x_hi - x_lo, shape.w, pad
                )
            dram = addrs.wgt + (o0 * shape.cb + c0) * kk
            b.load(MemId.WGT, wgt, dram, to, tc * kk, shape.cb * kk)
            pipe.loads_done()
            pipe.compute_step()
            for c, ky, kx in itertools.product(range(tc), range(shape.kh), range(shape.kw)):
                first = acc.next_part()
                src = inp + c * th_in * tw_in + ky * tw_in + kx
                w = wgt + c * kk + ky * shape.kw + kx
                uops = [Uop(first + o * pixels, src, w + o * tc * kk) for o in range(to)]
                b.gemm(uops, loops=(th, tw), dst=(tw, 1), src=(sh * tw_in, sw))
            pipe.compute_step_done()
        acc.epilogue(rq, None if addrs.bias is None else addrs.bias + o0, (pixels, pixels, 1))
        pipe.tile_done()
        for o in range(to):
            dram = addrs.out + ((n * shape.ob + o0 + o) * shape.oh + oy0) * shape.ow + ox0
            b.store(acc.base + o * pixels, dram, th, tw, shape.ow)
        pipe.stored()
    return b.finish()
