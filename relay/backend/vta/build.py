"""Heterogeneous builds for ``target="vta"``: VTA layers on the simulated accelerator, the rest
on the CPU.

``relay.build(mod, target="vta")`` partitions the program first
(:func:`relay.backend.vta.partition.partition_for_vta`: quantized layers VTA can run become
``vta.conv2d`` / ``vta.dense``), then optimizes and fuses it as for the CPU. The VTA
operators are opaque, so each is a primitive function of its own. :func:`compile_functions`
splits the primitive functions: the VTA ones become :class:`~relay.backend.vta.device.Layer`
kernels (a program generated for the layer's shapes, on a simulated device of its own), the
others compile for the host CPU through the normal llvm path (and its kernel cache). The
graph executor calls both kinds alike, on numpy buffers; the int8 tensors at the boundary
are packed into and out of VTA's layouts by the layers.

:func:`report` prints, per VTA layer, the simulator's figures for the last run: cycles,
GEMM-core utilization and DRAM traffic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay.backend.compiler import Kernel, KernelLibrary
from relay.backend.target import Target
from relay.backend.vta.device import Layer
from relay.backend.vta.layout import Requantize
from relay.errors import CompileError
from relay.ir.expr import Call, Function, Op
from relay.ir.types import TensorType

OPS = ("vta.conv2d", "vta.dense")


def vta_call(func: Function) -> Call | None:
    """The VTA operator call a primitive function is made of, if it is one."""
    body = func.body
    if (
        isinstance(body, Call)
        and isinstance(body.op, Op)
        and body.op.name in OPS
        and tuple(body.args) == tuple(func.params)
    ):
        return body
    return None


def _static(t: object, what: str) -> tuple[int, ...]:
    if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
        raise CompileError(f"a VTA layer needs static shapes; its {what} is {t}")
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


def layer_of(call: Call) -> Layer:
    """The VTA layer computing ``call`` (typed)."""
    assert isinstance(call.op, Op)
    a = call.attrs
    spec: dict[str, Any] = {
        "op": call.op.name,
        "data": list(_static(call.args[0]._checked_type, "data")),
        "weight": list(_static(call.args[1]._checked_type, "weight")),
        "shift": int(a["shift"]),  # type: ignore[arg-type]
        "lo": int(a["lo"]),  # type: ignore[arg-type]
        "hi": int(a["hi"]),  # type: ignore[arg-type]
    }
    if call.op.name == "vta.conv2d":
        strides, padding = a["strides"], a["padding"]
        assert isinstance(strides, tuple) and isinstance(padding, tuple)
        spec["strides"] = [int(v) for v in strides]  # type: ignore[arg-type]
        spec["padding"] = [int(v) for v in padding]  # type: ignore[arg-type]
    return layer_from_spec(spec)


def layer_from_spec(spec: dict[str, Any]) -> Layer:
    """The layer a spec describes (what :func:`layer_of` records as ``layer.spec``, and a
    saved executable keeps): the operator, the data and weight shapes, the requantization,
    and a convolution's strides and padding."""
    rq = Requantize(shift=int(spec["shift"]), lo=int(spec["lo"]), hi=int(spec["hi"]))
    data, weight = tuple(spec["data"]), tuple(spec["weight"])
    if spec["op"] == "vta.dense":
        layer = Layer.dense(data[0], data[1], weight[0], rq)
    else:
        strides, padding = spec["strides"], spec["padding"]
        layer = Layer.conv2d(
            data,
            weight,
            rq,
            (int(strides[0]), int(strides[1])),
            (int(padding[0]), int(padding[1])),
        )
    layer.spec = dict(spec)
    return layer


def compile_functions(funcs: Sequence[Function], target: Target) -> tuple[KernelLibrary, list[str]]:
    """The kernels of ``funcs`` (typed primitive functions) for the VTA target: VTA layers
    for the VTA operators, CPU kernels for the rest (see the module docstring)."""
    from relay.backend.compiler import compile_functions as compile_cpu

    calls = [vta_call(f) for f in funcs]
    cpu = [f for f, c in zip(funcs, calls, strict=True) if c is None]
    library, cpu_symbols = compile_cpu(cpu, target.host)
    kernels = dict(library.kernels)
    symbols: list[str] = []
    cpu_iter = iter(cpu_symbols)
    for i, (f, call) in enumerate(zip(funcs, calls, strict=True)):
        if call is None:
            symbols.append(next(cpu_iter))
            continue
        assert isinstance(call.op, Op)
        name = f"{call.op.name.replace('.', '_')}_{i}"
        inputs = [p._checked_type or p.type_annotation for p in f.params]
        out = call._checked_type
        kernels[name] = Kernel(
            name,
            [t for t in inputs if isinstance(t, TensorType)],
            [out] if isinstance(out, TensorType) else [],
            anchor=call.op.name,
            func=layer_of(call),
        )
        symbols.append(name)
    return KernelLibrary(kernels, library.module, library.key + "+vta"), symbols


def layers(exe: Any) -> list[tuple[str, Layer]]:
    """The VTA layers of a built executable, in the order its graph first calls them."""
    library = exe.library
    if library is None:
        return []
    found = []
    for name in exe.kernels:
        func = library.kernels[name].func
        if isinstance(func, Layer):
            found.append((name, func))
    return found


def report(exe: Any) -> str:
    """A table of the VTA layers of ``exe`` and the simulator's figures for their last run:
    cycles (the estimate of docs/vta.md), GEMM-core utilization (GEMM uops per cycle), bytes
    loaded (inputs, weights, bias and uops) and stored, and the instruction count."""
    rows = layers(exe)
    if not rows:
        return "no VTA layers"
    head = f"{'layer':<18}{'shape':<34}{'cycles':>10}{'GEMM util':>11}{'loaded B':>11}{'stored B':>10}{'insns':>7}"
    lines = [head]
    total = 0
    for name, layer in rows:
        r = layer.report
        shape = f"{layer.shapes[0]}x{layer.shapes[1]}"
        if r is None:
            lines.append(f"{name:<18}{shape:<34}{'(not run)':>10}")
            continue
        loaded = r.inp_load_nbytes + r.wgt_load_nbytes + r.acc_load_nbytes + r.uop_load_nbytes
        total += r.cycles
        lines.append(
            f"{name:<18}{shape:<34}{r.cycles:>10}{100 * r.gemm_utilization:>10.1f}%"
            f"{loaded:>11}{r.out_store_nbytes:>10}{len(layer.program.insns):>7}"
        )
    lines.append(f"{'total':<52}{total:>10}")
    return "\n".join(lines)
