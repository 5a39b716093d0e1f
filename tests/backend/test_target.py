"""Targets: the CPU model chosen from the processor's features; TVM's thread count."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from relay.backend.target import Target, cpu_model, host_cpu
from relay.errors import CompileError


@pytest.mark.parametrize(
    ("vendor", "flags", "model"),
    [
        (
            "GenuineIntel",
            {"avx512f", "avx512_bf16", "amx_tile", "avx512bw", "avx512vl"},
            "sapphirerapids",
        ),
        ("AuthenticAMD", {"avx512f", "avx512_vp2intersect", "avx_vnni", "avx512_bf16"}, "znver5"),
        ("AuthenticAMD", {"avx512f", "avx512_bf16", "avx2", "fma"}, "znver4"),
        (
            "GenuineIntel",
            {"avx512f", "avx512_vnni", "avx512vbmi", "avx512bw", "avx512vl"},
            "icelake-server",
        ),
        ("GenuineIntel", {"avx512f", "avx512bw", "avx512vl", "avx2", "fma"}, "skylake-avx512"),
        ("AuthenticAMD", {"avx2", "fma", "vaes"}, "znver3"),
        ("GenuineIntel", {"avx2", "fma", "bmi2"}, "haswell"),
        ("GenuineIntel", {"avx"}, "sandybridge"),
        ("GenuineIntel", {"sse4_2"}, "nehalem"),
        ("GenuineIntel", {"sse2"}, "x86-64"),
    ],
)
def test_cpu_model_from_flags(vendor: str, flags: set[str], model: str) -> None:
    assert cpu_model(vendor, frozenset(flags)) == model


def test_host_target_is_never_generic() -> None:
    t = Target("llvm")
    assert t.mcpu == host_cpu()
    assert t.mcpu not in ("", "generic")
    assert t.key.startswith(f"llvm -mcpu={t.mcpu}")


def test_explicit_cpu_and_fast_math() -> None:
    t = Target("llvm", mcpu="skylake-avx512", fast_math=False)
    assert t.key == "llvm -mcpu=skylake-avx512"
    assert Target.of(t) is t
    assert Target.of(None).mcpu == host_cpu()
    assert "fast-math" in Target("llvm", fast_math=True).key


def test_unknown_target_kind() -> None:
    with pytest.raises(CompileError, match="unknown target 'tpu'"):
        Target("tpu")


@pytest.mark.tvm
def test_thread_pool_uses_every_core() -> None:
    # a fresh process: the pool size is fixed when the TVM runtime starts
    code = (
        "import relay.backend.runtime as r, os; r.tvm();"
        "print(os.environ['TVM_NUM_THREADS'], r.available_cores())"
    )
    env = {k: v for k, v in os.environ.items() if k != "TVM_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert out[0] == out[1] == str(len(os.sched_getaffinity(0)))
