"""The GPU benchmarks: relay's CUDA target against PyTorch on the same GPU, in one run.

    python benchmarks/gpu.py [--no-compile] [--json PATH] [NAME ...]

Workloads (shared/bench/workloads.md, and issue 11's list): ``ew_chain``; ``matmul_4096``
in float32, float16 and bfloat16; ``mlp_train_step`` (relay.grad); ``conv_block``. Each runs as a
relay program built for ``target="cuda"`` with its arguments placed on the GPU once
(``relay.device_put``), as PyTorch eager and as ``torch.compile`` (``--no-compile`` leaves it
out), its result checked against the float64 reference. Times are the median over
repeats of the mean of a burst of calls, the GPU synchronized at the end of each burst, so
a call's launch overhead counts as much as its kernels. ``copy`` is the device's copy
bandwidth (a PyTorch device-to-device copy of 256 MiB), the floor for ``ew_chain``, which
moves three arrays of 16 MiB.

Ratios are reported against PyTorch in the same run (docs/performance.md, "The GPU").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads as W

import relay

REPEATS = 7


def burst_ms(call: Callable[[], Any], sync: Callable[[], None], budget_s: float = 0.25) -> float:
    """Median milliseconds per call: bursts of calls sized to ``budget_s``, synchronized at
    the end of each burst."""
    call()
    sync()
    start = time.perf_counter()
    call()
    sync()
    once = max(time.perf_counter() - start, 1e-6)
    n = max(1, min(1000, int(budget_s / once)))
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(n):
            call()
        sync()
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times) * 1e3


def matmul_inputs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    from relay.backend.runtime import numpy_dtype

    r = np.random.default_rng(9)
    a = (r.standard_normal((4096, 4096)) / 64).astype(numpy_dtype(dtype))
    b = (r.standard_normal((4096, 4096)) / 64).astype(numpy_dtype(dtype))
    return a, b


def to_torch(a: np.ndarray) -> Any:
    """``a`` as a PyTorch CUDA tensor (an ``ml_dtypes`` bfloat16 array through its bits:
    PyTorch reads no numpy bfloat16)."""
    import torch

    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(a).cuda()


def matmul_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) @ b.astype(np.float64)


def cases() -> dict[
    str, tuple[Any, Callable[[], tuple[Any, ...]], Callable[..., Any], float, float]
]:
    """name: (relay program, inputs, reference, rtol, atol)."""

    @relay
    def matmul(a, b):  # type: ignore[no-untyped-def]
        return a @ b

    progs = W.relay_programs()
    refs = {w.name: w for w in W.WORKLOADS}
    w = refs["ew_chain"]
    out: dict[str, Any] = {"ew_chain": (progs["ew_chain"], w.inputs, w.reference, w.rtol, w.atol)}
    out["matmul_4096_f32"] = (matmul, lambda: matmul_inputs("float32"), matmul_ref, 1e-3, 1e-3)
    out["matmul_4096_f16"] = (matmul, lambda: matmul_inputs("float16"), matmul_ref, 2e-2, 2e-2)
    out["matmul_4096_bf16"] = (matmul, lambda: matmul_inputs("bfloat16"), matmul_ref, 5e-2, 5e-2)
    for name in ("mlp_train_step", "conv_block"):
        w = refs[name]
        out[name] = (progs[name], w.inputs, w.reference, w.rtol, w.atol)
    return out


def torch_version(name: str) -> Callable[..., Any]:
    if name.startswith("matmul"):
        return lambda a, b: a @ b
    import torch

    f = W.torch_programs(raw=True)[name]
    if name == "mlp_train_step":
        return f  # type: ignore[no-any-return]

    def run(*args: Any) -> Any:
        with torch.inference_mode():
            return f(*args)

    return run


def first(result: Any) -> Any:
    return result[0] if isinstance(result, tuple | list) else result


def check(name: str, got: Any, ref: Any, rtol: float, atol: float) -> str:
    got, ref = np.asarray(first(got), np.float64), np.asarray(first(ref), np.float64)
    err = float(np.max(np.abs(got - ref) / (atol + rtol * np.abs(ref)))) if ref.size else 0.0
    return "ok" if err <= 1.0 else f"MISMATCH ({err:.2g} of the tolerance)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--json", default="", help="write the figures here")
    opts = ap.parse_args()

    import torch

    if not relay.gpu_available() or not torch.cuda.is_available():
        sys.exit("benchmarks/gpu.py needs a CUDA GPU (relay and PyTorch both see none)")
    dev = relay.Device("cuda").tvm_device()
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(0)}

    big = torch.empty(64 * 2**20, device="cuda")  # 256 MiB
    copy_ms = burst_ms(lambda: big.clone(), torch.cuda.synchronize)
    copy_gbs = 2 * big.numel() * 4 / copy_ms / 1e6
    results["copy_GBps"] = copy_gbs
    print(f"{results['device']}: device copy {copy_gbs:.0f} GB/s (bytes read and written)")
    print(
        f"{'workload':18} {'relay ms':>9} {'eager ms':>9} {'compile ms':>10} "
        f"{'eager/relay':>11} {'compile/relay':>13}  relay build s  check"
    )

    for name, (prog, inputs, ref, rtol, atol) in cases().items():
        if opts.names and name not in opts.names:
            continue
        args = inputs()
        want = ref(*args)
        start = time.perf_counter()
        exe = relay.build(prog.specialize(*args), target="cuda")
        build_s = time.perf_counter() - start
        dargs = [relay.device_put(a) for a in args]
        status = check(name, exe(*dargs), want, rtol, atol)
        relay_ms = burst_ms(lambda exe=exe, dargs=dargs: exe(*dargs), dev.sync)
        targs = [to_torch(a) for a in args]
        eager = torch_version(name)
        eager_ms = burst_ms(lambda eager=eager, targs=targs: eager(*targs), torch.cuda.synchronize)
        compiled_ms = float("nan")
        if not opts.no_compile and not name.startswith("matmul"):  # (a matmul is cuBLAS's)
            compiled = torch.compile(eager)
            compiled(*targs)
            compiled_ms = burst_ms(
                lambda compiled=compiled, targs=targs: compiled(*targs), torch.cuda.synchronize
            )
        row = {
            "relay_ms": relay_ms,
            "eager_ms": eager_ms,
            "compile_ms": compiled_ms,
            "build_s": build_s,
            "check": status,
            "kernels": len(exe.kernels),
        }
        if name == "ew_chain":
            floor_ms = 3 * args[0].nbytes / (copy_gbs * 1e6)
            row["copy_floor_ms"] = floor_ms
        if name.startswith("matmul"):
            row["relay_TFLOPs"] = 2 * 4096**3 / relay_ms / 1e9
            row["eager_TFLOPs"] = 2 * 4096**3 / eager_ms / 1e9
        results[name] = row
        print(
            f"{name:18} {relay_ms:9.3f} {eager_ms:9.3f} {compiled_ms:10.3f} "
            f"{eager_ms / relay_ms:11.2f} {compiled_ms / relay_ms:13.2f}  {build_s:13.1f}  {status}"
        )
        if name == "ew_chain":
            print(
                f"{'':18} copy floor {row['copy_floor_ms']:.3f} ms: relay at "
                f"{relay_ms / row['copy_floor_ms']:.2f}x of it"
            )
        if name.startswith("matmul"):
            print(
                f"{'':18} relay {row['relay_TFLOPs']:.1f} TFLOP/s, PyTorch (cuBLAS) "
                f"{row['eager_TFLOPs']:.1f} TFLOP/s: {row['relay_TFLOPs'] / row['eager_TFLOPs']:.2f}x"
            )
        try:
            for kernel, ms in sorted(exe.profile(*dargs, repeat=5), key=lambda kv: -kv[1])[:4]:
                print(f"{'':18}   {kernel}: {ms:.3f} ms")
        except Exception as err:  # the profile is a help, not a result
            print(f"{'':18}   (no profile: {err})")
    if opts.json:
        Path(opts.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
