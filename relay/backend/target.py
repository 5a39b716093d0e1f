"""Compilation targets: which machine the kernels are generated for.

``Target("cuda")`` is the NVIDIA GPU of this machine (its architecture, ``sm_90`` for an
H100, read from the device); without a GPU the architecture is named
(``Target("cuda", arch="sm_90")``), and programs compile all the way to device code
(docs/backend.md, "The CUDA target") but cannot run. The host code of a CUDA program is
compiled for this CPU.

``Target("llvm")`` is the CPU this process runs on. LLVM's generic x86-64 code uses SSE2
only, and asking for ``mcpu=native`` in TVM's wheel logs an error and falls back to the
generic model, so the CPU model name is chosen here from the processor's feature flags
(``/proc/cpuinfo``): the newest model whose instruction sets the processor has. The name
is part of every kernel cache key, so kernels built for another machine are never loaded.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from relay.errors import CompileError

# (LLVM CPU name, vendor or "" for any, flags it needs), most capable first
_X86_MODELS: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("sapphirerapids", "GenuineIntel", frozenset({"avx512f", "avx512_bf16", "amx_tile"})),
    ("znver5", "AuthenticAMD", frozenset({"avx512f", "avx512_vp2intersect", "avx_vnni"})),
    ("znver4", "AuthenticAMD", frozenset({"avx512f", "avx512_bf16"})),
    ("icelake-server", "GenuineIntel", frozenset({"avx512f", "avx512_vnni", "avx512vbmi"})),
    ("cascadelake", "GenuineIntel", frozenset({"avx512f", "avx512_vnni"})),
    ("skylake-avx512", "", frozenset({"avx512f", "avx512bw", "avx512vl"})),
    ("znver3", "AuthenticAMD", frozenset({"avx2", "fma", "vaes"})),
    ("znver2", "AuthenticAMD", frozenset({"avx2", "fma"})),
    ("haswell", "", frozenset({"avx2", "fma", "bmi2"})),
    ("sandybridge", "", frozenset({"avx"})),
    ("nehalem", "", frozenset({"sse4_2"})),
)


AVX512_MODELS = frozenset(
    {name for name, _, needed in _X86_MODELS if "avx512f" in needed}
    | {"icelake-client", "tigerlake", "cooperlake", "rocketlake", "cannonlake"}
    | {"graniterapids", "emeraldrapids", "x86-64-v4"}
)
"""LLVM CPU names with AVX-512 (whose ``vscalefps`` scales a vector by powers of two)."""


def cpu_model(vendor: str, flags: frozenset[str]) -> str:
    """The LLVM CPU name for an x86 processor with ``flags`` (from ``/proc/cpuinfo``)."""
    for name, need_vendor, needed in _X86_MODELS:
        if (not need_vendor or need_vendor == vendor) and needed <= flags:
            return name
    return "x86-64"


@cache
def host_cpu() -> str:
    """The LLVM CPU name of the processor this process runs on."""
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        return "neoverse-n1"
    vendor, flags = "", frozenset[str]()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif key == "flags":
                    flags = frozenset(value.split())
                    break
    except OSError:  # pragma: no cover - no /proc
        return "x86-64-v2"
    return cpu_model(vendor, flags)


KINDS = ("llvm", "cuda", "vta")
"""The target kinds relay compiles for."""


@cache
def sm_version(arch: str) -> int:
    """The compute capability of the CUDA architecture ``arch`` as a number (``sm_90a``: 90)."""
    return int(re.sub(r"\D", "", arch) or 0)


def cuda_arch() -> str | None:
    """The architecture (``sm_<major><minor>``) of this machine's first CUDA device, or None
    without one."""
    from relay.backend.runtime import tvm

    try:
        device = tvm().cuda(0)
        if not device.exist:
            return None
        return "sm_" + str(device.compute_version).replace(".", "")
    except Exception:  # a runtime without CUDA
        return None


@dataclass(frozen=True)
class Target:
    """Where compiled code runs: ``Target("llvm")`` (this CPU, model from its features) or
    ``Target("llvm", mcpu="skylake-avx512")``, or a GPU: ``Target("cuda")`` (the device's
    architecture) or ``Target("cuda", arch="sm_90")``, or ``Target("vta")`` (quantized layers
    on the simulated VTA accelerator, the rest on this CPU; docs/vta.md); ``fast_math`` (default: the
    ``RELAY_FAST_MATH`` flag, on) lets exp, tanh and sigmoid of float32 use polynomial
    approximations (relative error below 1e-6, see docs/backend.md)."""

    kind: str = "llvm"
    mcpu: str = ""
    fast_math: bool | None = None  # None: the RELAY_FAST_MATH flag decides
    arch: str = ""
    """A CUDA target's architecture, ``sm_<major><minor>`` (``sm_90``)."""
    _tvm: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise CompileError(f"unknown target {self.kind!r} (known: 'llvm', 'cuda', 'vta')")
        if self.kind == "cuda":
            arch = self.arch or cuda_arch()
            if arch is None:
                raise CompileError(
                    "no CUDA device here to take the architecture from: name it, as in "
                    "relay.Target('cuda', arch='sm_90')"
                )
            if not re.fullmatch(r"sm_\d{2,3}a?", arch):
                raise CompileError(f"invalid CUDA architecture {arch!r} (expected e.g. 'sm_90')")
            object.__setattr__(self, "arch", arch)
        elif self.arch:
            raise CompileError("arch is a CUDA target's setting; an llvm target has mcpu")
        if not self.mcpu:
            object.__setattr__(self, "mcpu", host_cpu())
        if self.fast_math is None:
            from relay import flags

            object.__setattr__(self, "fast_math", flags.get().fast_math)

    @staticmethod
    def of(target: str | Target | None) -> Target:
        """``target`` as a Target (``None`` and ``"llvm"`` mean this CPU, ``"cuda"`` this
        machine's GPU)."""
        if isinstance(target, Target):
            return target
        return Target(target or "llvm")

    @property
    def is_gpu(self) -> bool:
        """Whether kernels run on a GPU (their host code on this CPU)."""
        return self.kind == "cuda"

    @property
    def vector_ldexp(self) -> bool:
        """Whether LLVM turns a vector ``llvm.ldexp`` into vector instructions for this
        CPU: with AVX-512 one ``vscalefps``; without, a call of libm's ``ldexpf`` per lane,
        which the fast ``exp`` avoids (relay.op.lowering.elemwise._ldexp)."""
        return self.host.mcpu in AVX512_MODELS

    @property
    def host(self) -> Target:
        """The CPU target of the code that does not run on the device (for ``llvm``, the
        target itself)."""
        if self.kind == "llvm":
            return self
        return Target("llvm", mcpu=self.mcpu, fast_math=self.fast_math)

    def tvm_target(self, opt_level: int = 3) -> Any:
        """The ``tvm.target.Target``, with LLVM's optimization level for the CPU code (built
        once each); a CUDA target's host is this CPU."""
        found = self._tvm.get(opt_level)
        if found is None:
            from relay.backend.runtime import tvm

            cpu = {"kind": "llvm", "mcpu": self.mcpu, "opt-level": opt_level}
            if self.is_gpu:
                found = tvm().target.Target({"kind": "cuda", "arch": self.arch}, host=cpu)
            else:
                found = tvm().target.Target(cpu)
            self._tvm[opt_level] = found
        return found

    @property
    def key(self) -> str:
        """What distinguishes this target's kernels in the cache."""
        fast = " fast-math" if self.fast_math else ""
        if self.is_gpu:
            return f"cuda -arch={self.arch} -host={self.mcpu}{fast}"
        if self.kind == "vta":
            return f"vta -host={self.mcpu}{fast}"
        return f"{self.kind} -mcpu={self.mcpu}{fast}"

    def __str__(self) -> str:
        return self.key
