"""The VTA target: the instruction set, a functional simulator, the code generator and the
graph side (see docs/vta.md).

- :mod:`~relay.backend.vta.isa` encodes and decodes VTA's 128-bit instructions and 32-bit
  micro-ops bit-exactly (apache/tvm-vta ``include/vta/hw_spec.h``);
- :mod:`~relay.backend.vta.sim` runs instruction streams on a model of the default
  configuration, checking their dependency tokens and estimating their cycles;
- :mod:`~relay.backend.vta.builder` writes instruction streams (micro-kernels, DMA, tokens);
  :mod:`~relay.backend.vta.kernels` generates int8 dense and conv2d programs with their
  epilogue; :mod:`~relay.backend.vta.layout` packs tensors into VTA's layouts and holds the
  integer references; :mod:`~relay.backend.vta.device` runs operators on the simulator;
- :mod:`~relay.backend.vta.partition` offloads quantized layers to the VTA operators, and
  :mod:`~relay.backend.vta.build` makes the heterogeneous kernels of ``relay.build(...,
  target="vta")``.

Nothing here but the CPU part of a build needs TVM.
"""

from relay.backend.vta.isa import (
    DEFAULT,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    Insn,
    MemId,
    MemInsn,
    Module,
    Opcode,
    Uop,
    VTAConfig,
    decode,
    decode_stream,
    decode_uop,
    decode_uops,
    describe,
    encode,
    encode_stream,
    encode_uop,
    encode_uops,
    module_of,
    validate,
)
from relay.backend.vta.sim import DRAM, CycleModel, Report, Simulator, Timing, run

__all__ = [
    "DEFAULT",
    "DRAM",
    "AluInsn",
    "AluOp",
    "CycleModel",
    "FinishInsn",
    "GemmInsn",
    "Insn",
    "MemId",
    "MemInsn",
    "Module",
    "Opcode",
    "Report",
    "Simulator",
    "Timing",
    "Uop",
    "VTAConfig",
    "decode",
    "decode_stream",
    "decode_uop",
    "decode_uops",
    "describe",
    "encode",
    "encode_stream",
    "encode_uop",
    "encode_uops",
    "module_of",
    "run",
    "validate",
]
