"""Post-training int8 quantization with power-of-two scales.

The pass turns a float32 program's convolution and dense layers into int8 layers that VTA
(or the CPU) runs exactly, following the scheme of TVM's ``relay.quantize`` (annotate,
calibrate, realize; ``python/tvm/relay/quantize/``) and of Jacob et al., *Quantization and
Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference* (CVPR 2018),
restricted as VTA needs (Moreau et al., IEEE Micro 2019: int8 operands, int32 accumulators,
requantization by shift):

1. **Layers.** A layer is an ``nn.conv2d`` (NCHW/OIHW, one group, no dilation) or an
   ``nn.dense`` of float32 values whose weight is a constant (the ``params`` given are bound
   into the program first), with its epilogue when each step has no other user: a bias
   (``nn.bias_add`` on the channel axis, or ``add`` of a constant that varies along the
   channels only) and a ``nn.relu``.
2. **Calibration.** The float program runs (compiled for this CPU) on the sample inputs,
   returning every layer's input and output too; each tensor's largest magnitude ``m`` over
   the samples gives its exponent ``e = floor(log2(127 / m))``, so ``x * 2**e`` stays within
   int8 (symmetric, power-of-two scale ``2**-e``). Weights take theirs from their own
   magnitude.
3. **Realization.** With the input exponent ``ex`` and the weight exponent ``ew``, the
   accumulator holds ``acc * 2**-(ex + ew)``; the bias is rounded to int32 at that scale. The
   output exponent ``eo`` makes the requantization a right shift by ``k = ex + ew - eo``
   (with rounding: ``(acc + 2**(k-1)) >> k``), which VTA's ALU does; ``k`` is kept in 0..15
   (a larger ``k`` takes a coarser output scale, a negative one ``k = 0``). The result is
   clipped to ``[-127, 127]`` (``[0, 127]`` after a ReLU) and cast to int8::

       xq  = cast(clip(round(x * 2**ex), -127, 127), int8)
       acc = nn.conv2d(xq, wq, out_dtype="int32") + bq
       yq  = cast(clip(right_shift(acc + 2**(k-1), k), lo, 127), int8)
       y   = cast(yq, float32) * 2**-eo

   A layer whose input is the output of another layer with the same exponent takes its int8
   value directly, so consecutive layers stay in int8. Everything that is not a layer
   (pooling, flattening, softmax) stays in float32 between a dequantization and a
   quantization.

``mode="simulated"`` computes the same values in float32 (quantize-dequantize pairs, the
shift as ``floor(acc * 2**eo + 0.5)``), to measure the accuracy a quantization loses
without integer kernels; the two modes agree up to float32 rounding of the accumulator.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from relay.errors import CompileError
from relay.ir.attrs import Attrs
from relay.ir.expr import Call, Constant, Expr, Function, Tuple, Var, const
from relay.ir.functor import ExprMutator
from relay.ir.module import Module
from relay.ir.types import TensorType

Mode = Literal["int8", "simulated"]

QMAX = 127
MAX_SHIFT = 15


@dataclass(frozen=True)
class QuantizedLayer:
    """What quantization decided for one layer: the exponents of its input, weight and
    output (a value ``v`` is stored as ``round(v * 2**e)``), the requantization shift, and
    the calibrated magnitudes."""

    op: str
    input_exp: int
    weight_exp: int
    output_exp: int
    shift: int
    relu: bool
    bias: bool
    input_max: float
    output_max: float


@dataclass(frozen=True)
class Quantized:
    """The quantized program (``module``: its ``main`` is the entry function, quantized,
    taking the inputs that were not bound as parameters) and the decision for each layer,
    in program order."""

    module: Module
    layers: tuple[QuantizedLayer, ...]
    mode: Mode

    def __str__(self) -> str:
        lines = [f"{len(self.layers)} layers quantized ({self.mode})"]
        lines.append(
            f"  {'#':>2}  {'op':<10}{'in exp':>7}{'w exp':>7}{'out exp':>8}{'shift':>6}  epilogue"
        )
        for i, q in enumerate(self.layers):
            epi = "+".join(x for x, on in (("bias", q.bias), ("relu", q.relu)) if on) or "-"
            lines.append(
                f"  {i:>2}  {q.op:<10}{q.input_exp:>7}{q.weight_exp:>7}{q.output_exp:>8}"
                f"{q.shift:>6}  {epi}"
            )
        return "\n".join(lines)


@dataclass
class _Layer:
    anchor: Call
    weight: np.ndarray[Any, Any]
    bias: np.ndarray[Any, Any] | None
    relu: bool
    root: Expr
    decision: QuantizedLayer | None = field(default=None)


def _call(name: str, *args: Expr, **attrs: object) -> Call:
    from relay.op.registry import get_op

    opdef = get_op(name)
    return Call(opdef.op, tuple(args), opdef.validate_attrs(dict(attrs)))


def _scalar(value: float, dtype: str) -> Constant:
    return const(np.array(value, dtype=dtype))


# -- finding the layers -------------------------------------------------------------------------


def _type(e: Expr) -> TensorType | None:
    t = e._checked_type
    return t if isinstance(t, TensorType) else None


def _is_float_layer(call: Call) -> bool:
    name = call.op.name if hasattr(call.op, "name") else ""
    if name not in ("nn.conv2d", "nn.dense") or not isinstance(call.args[1], Constant):
        return False
    t = _type(call)
    if t is None or str(t.dtype) != "float32" or call.attrs["out_dtype"] not in ("", "float32"):
        return False
    if name == "nn.dense":
        x = _type(call.args[0])
        return x is not None and len(x.shape) == 2
    a = call.attrs
    return (
        a["groups"] == 1
        and a["dilation"] in ((1, 1), [1, 1])
        and a["data_layout"] == "NCHW"
        and a["kernel_layout"] == "OIHW"
        and a["out_layout"] in ("", "NCHW")
    )


def _users(body: Expr) -> tuple[list[Expr], dict[int, list[Expr]]]:
    """The nodes of ``body`` in post-order (operands first), and each node's users."""
    from relay.ir.expr import children

    order: list[Expr] = []
    users: dict[int, list[Expr]] = {}
    done: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(body, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in done:
            continue
        done.add(id(node))
        stack.append((node, True))
        for c in reversed(children(node)):
            users.setdefault(id(c), []).append(node)
            stack.append((c, False))
    return order, users


def _op_name(e: Expr) -> str:
    return e.op.name if isinstance(e, Call) and hasattr(e.op, "name") else ""


def channel_vector(
    value: np.ndarray[Any, Any], channels: int, rank: int
) -> np.ndarray[Any, Any] | None:
    """``value`` (in its dtype) as a vector over the ``channels`` of a rank-``rank`` result
    (channels on axis 1), when adding it to that result varies along the channels only;
    otherwise None. Shared with the VTA partitioning, which reads int32 biases."""
    if value.ndim > rank:
        return None
    shape = (1,) * (rank - value.ndim) + value.shape
    if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, channels):
        return None
    return np.ascontiguousarray(np.broadcast_to(value.reshape(-1), (channels,)))


def find_layers(body: Expr) -> list[_Layer]:
    """The quantizable layers of the graph-form ``body`` (see the module docstring), in
    program order."""
    nodes, users = _users(body)

    def sole_user(e: Expr) -> Expr | None:
        us = users.get(id(e), [])
        return us[0] if len(us) == 1 and e is not body else None

    layers = []
    for n in nodes:
        if not isinstance(n, Call) or not _is_float_layer(n):
            continue
        out = _type(n)
        assert out is not None
        channels, rank = int(out.shape[1]), len(out.shape)  # type: ignore[arg-type]
        weight = n.args[1]
        assert isinstance(weight, Constant)
        root: Expr = n
        bias = None
        u = sole_user(root)
        if isinstance(u, Call) and _op_name(u) == "nn.bias_add" and u.args[0] is root:
            b = u.args[1]
            if isinstance(b, Constant) and u.attrs["axis"] in (1, 1 - rank):
                bias, root = np.asarray(b.data, np.float32), u
        elif isinstance(u, Call) and _op_name(u) == "add":
            other = u.args[1] if u.args[0] is root else u.args[0]
            if isinstance(other, Constant):
                vec = channel_vector(np.asarray(other.data), channels, rank)
                if vec is not None and _type(u) == out:
                    bias, root = vec.astype(np.float32), u
        relu = False
        u = sole_user(root)
        if isinstance(u, Call) and _op_name(u) == "nn.relu":
            relu, root = True, u
        layers.append(_Layer(n, np.asarray(weight.data, np.float32), bias, relu, root))
    return layers


# -- calibration ------------------------------------------------------------------------------------


def _exponent(magnitude: float, what: str) -> int:
    """The largest ``e`` with ``magnitude * 2**e <= 127``."""
    if not math.isfinite(magnitude):
        raise CompileError(f"quantize: {what} reached {magnitude} during calibration")
    if magnitude <= 0.0:
        return 0
    return math.floor(math.log2(QMAX / magnitude))


def _calibrate(
    mod: Module, func: Function, layers: list[_Layer], dataset: Iterable[Sequence[Any]]
) -> list[tuple[float, float]]:
    """Each layer's largest input and output magnitudes over ``dataset``."""
    from relay.backend.build import build

    probes = [t for layer in layers for t in (layer.anchor.args[0], layer.root)]
    probe = Function(func.params, Tuple(tuple(probes)), None, func.type_params)
    calib = mod.copy()
    calib.add("quantize_calibration", probe, update=True)
    exe = build(calib, entry="quantize_calibration")
    top = np.zeros(len(probes))
    for sample in dataset:
        outs = exe(*sample)
        for i, v in enumerate(outs):
            top[i] = max(top[i], float(np.max(np.abs(v))) if np.size(v) else 0.0)
    return [(float(top[2 * i]), float(top[2 * i + 1])) for i in range(len(layers))]


# -- realization ------------------------------------------------------------------------------------


def _decide(layer: _Layer, input_max: float, output_max: float) -> QuantizedLayer:
    ex = _exponent(input_max, "a layer input")
    ew = _exponent(float(np.max(np.abs(layer.weight))) if layer.weight.size else 0.0, "a weight")
    eo = _exponent(output_max, "a layer output")
    k = min(max(ex + ew - eo, 0), MAX_SHIFT)
    return QuantizedLayer(
        _op_name(layer.anchor),
        ex,
        ew,
        ex + ew - k,
        k,
        layer.relu,
        layer.bias is not None,
        input_max,
        output_max,
    )


def _ints(x: np.ndarray[Any, Any], e: int, lo: int, hi: int, dtype: str) -> np.ndarray[Any, Any]:
    """``round(x * 2**e)`` (halves away from zero) clipped to ``[lo, hi]``."""
    scaled = np.asarray(x, np.float64) * 2.0**e
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    out: np.ndarray[Any, Any] = np.clip(rounded, lo, hi).astype(dtype)
    return out


class _Realize(ExprMutator):
    def __init__(self, layers: list[_Layer], mode: Mode) -> None:
        super().__init__()
        self.by_root = {id(layer.root): layer for layer in layers}
        self.mode = mode
        self.int8: dict[int, tuple[Expr, int]] = {}  # dequantized output -> (int8 value, exp)

    def visit_call(self, call: Call) -> Expr:
        layer = self.by_root.get(id(call))
        if layer is None:
            return super().visit_call(call)
        return self._layer(layer)  # (its input was visited with the call's operands)

    def _quantized_input(self, x: Expr, e: int) -> Expr:
        if self.mode == "int8":
            known = self.int8.get(id(x))
            if known is not None and known[1] == e:
                return known[0]
        scaled = _call("round", _call("multiply", x, _scalar(2.0**e, "float32")))
        clipped = _call("clip", scaled, a_min=float(-QMAX), a_max=float(QMAX))
        if self.mode == "int8":
            return _call("cast", clipped, dtype="int8")
        return _call("multiply", clipped, _scalar(2.0**-e, "float32"))

    def _layer(self, layer: _Layer) -> Expr:
        q = layer.decision
        assert q is not None
        anchor = layer.anchor
        x = self._quantized_input(self.visit(anchor.args[0]), q.input_exp)
        wq = _ints(layer.weight, q.weight_exp, -QMAX, QMAX, "int8")
        int8 = self.mode == "int8"
        attrs = (
            dict(anchor.attrs.items()) if isinstance(anchor.attrs, Attrs) else dict(anchor.attrs)
        )
        attrs["out_dtype"] = "int32" if int8 else ""
        w = (
            const(wq)
            if int8
            else const((wq.astype(np.float64) * 2.0**-q.weight_exp).astype(np.float32))
        )
        acc: Expr = _call(q.op, x, w, **attrs)
        if layer.bias is not None:
            bq = _ints(layer.bias, q.input_exp + q.weight_exp, -(2**31), 2**31 - 1, "int32")
            shape = (-1, 1, 1) if q.op == "nn.conv2d" else (-1,)
            if int8:
                b = const(bq.reshape(shape))
            else:
                scale = 2.0 ** -(q.input_exp + q.weight_exp)
                b = const((bq.astype(np.float64) * scale).astype(np.float32).reshape(shape))
            acc = _call("add", acc, b)
        lo = 0 if layer.relu else -QMAX
        if int8:
            if q.shift:
                rounded = _call("add", acc, _scalar(2 ** (q.shift - 1), "int32"))
                acc = _call("right_shift", rounded, _scalar(q.shift, "int32"))
            yq = _call("cast", _call("clip", acc, a_min=float(lo), a_max=float(QMAX)), dtype="int8")
            out = _call(
                "multiply",
                _call("cast", yq, dtype="float32"),
                _scalar(2.0**-q.output_exp, "float32"),
            )
            self.int8[id(out)] = (yq, q.output_exp)
            return out
        scaled = _call("multiply", acc, _scalar(2.0**q.output_exp, "float32"))
        level = _call("floor", _call("add", scaled, _scalar(0.5, "float32")))
        clipped = _call("clip", level, a_min=float(lo), a_max=float(QMAX))
        return _call("multiply", clipped, _scalar(2.0**-q.output_exp, "float32"))


# -- the pass -----------------------------------------------------------------------------------


def _inlined(mod: Module, name: str) -> Function:
    """Function ``name`` of ``mod`` with the calls of the other (non-recursive) globals
    inlined, so that the layers of every ``@relay`` function it calls are its own."""
    from relay.passes.inline import inline

    marked = mod.copy()
    for g in marked.global_vars():
        f = marked[g]
        if g.name_hint != name and isinstance(f, Function):
            marked.update_func(
                g, Function(f.params, f.body, f.ret_type, f.type_params, Attrs(f.attrs, Inline=1))
            )
    func = inline(marked)[name]
    assert isinstance(func, Function)
    return func


def _typed_for(program: Any, params: Mapping[str, Any], sample: Sequence[Any]) -> Any:
    """An unannotated ``@relay`` function specialized for its parameters and a calibration
    sample (in the order of its parameters: the named ones from ``params``, the others
    from ``sample``), so that it can be type-checked without having been called; anything
    else as it is."""
    from relay.frontend.function import RelayFunction

    if not isinstance(program, RelayFunction) or program._annotated:
        return program
    rest = iter(sample)
    args = []
    for name in program.__signature__.parameters:
        if name in params:
            args.append(params[name])
        else:
            args.append(next(rest, None))
    if any(a is None for a in args) or next(rest, None) is not None:
        return program  # (the arity mismatch is reported by _specialize, with the names)
    return program.specialize(*args)


def _specialize(func: Function, sample: Sequence[Any]) -> Function:
    """``func`` with its parameters typed as the arrays of ``sample`` (a calibration input):
    the quantized program has the static shapes of the data it was calibrated on."""
    from relay.passes.inline import substitute

    if len(sample) != len(func.params):
        names = ", ".join(p.name_hint for p in func.params)
        raise CompileError(
            f"quantize: a calibration sample has {len(sample)} arrays for the {len(func.params)} "
            f"inputs left after binding the parameters ({names})"
        )
    fresh = tuple(
        Var(p.name_hint, TensorType(np.shape(a), str(np.asarray(a).dtype)), span=p.span)
        for p, a in zip(func.params, sample, strict=True)
    )
    body = substitute(func.body, dict(zip(func.params, fresh, strict=True)))
    return Function(fresh, body, None, (), func.attrs)


def _bind_params(func: Function, params: Mapping[str, Any]) -> Function:
    from relay.passes.inline import substitute

    names = [p.name_hint for p in func.params]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise CompileError(
            f"quantize: the program has no parameter {unknown[0]!r} (it has {', '.join(names)})"
        )
    subst: dict[Var, Expr] = {}
    keep = []
    for p in func.params:
        if p.name_hint in params:
            subst[p] = const(np.asarray(params[p.name_hint]))
        else:
            keep.append(p)
    return Function(
        tuple(keep), substitute(func.body, subst), func.ret_type, func.type_params, func.attrs
    )


def quantize(
    program: Any,
    params: Mapping[str, Any],
    dataset: Iterable[Sequence[Any]],
    *,
    mode: Mode = "int8",
    skip: Sequence[int] = (),
    entry: str = "main",
) -> Quantized:
    """Quantize ``program`` (a Module's ``entry``, a ``@relay`` function or a Function; see the
    module docstring) with its parameters ``params`` (by name, bound as constants), calibrated
    on ``dataset`` (each item the remaining arguments, in order). ``skip``: the indices (in
    program order) of layers to leave in float32."""
    from relay.backend.build import _entry_of
    from relay.passes.normal_form import to_graph_normal_form
    from relay.typecheck.checker import infer_type

    if mode not in ("int8", "simulated"):
        raise CompileError(f"quantize: unknown mode {mode!r} (expected 'int8' or 'simulated')")
    samples = [tuple(s) if isinstance(s, list | tuple) else (s,) for s in dataset]
    if not samples:
        raise CompileError("quantize: the calibration dataset is empty")
    program = _typed_for(program, params, samples[0])
    mod, gv, _ = _entry_of(program, entry)
    main = mod[gv]
    assert isinstance(main, Function)
    typed_in = mod.copy()
    typed_in.add(gv.name_hint, _specialize(_bind_params(main, params), samples[0]), update=True)
    bound = _inlined(typed_in, gv.name_hint)
    graph = to_graph_normal_form(bound, mod)
    assert isinstance(graph, Function)
    typed = infer_type(graph, mod)
    assert isinstance(typed, Function)
    layers = [layer for i, layer in enumerate(find_layers(typed.body)) if i not in set(skip)]
    out = mod.copy()
    if layers:
        stats = _calibrate(mod, typed, layers, samples)
        for layer, (lo, hi) in zip(layers, stats, strict=True):
            layer.decision = _decide(layer, lo, hi)
        body = _Realize(layers, mode).visit(typed.body)
        typed = Function(typed.params, body, None, typed.type_params, typed.attrs)
    out.add("main", typed, update=True)  # (the entry of relay.build)
    checked = infer_type(out)
    assert isinstance(checked, Module)
    decisions = tuple(layer.decision for layer in layers if layer.decision is not None)
    return Quantized(checked, decisions, mode)
