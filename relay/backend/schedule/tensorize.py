"""Tensor-core intrinsics for GPU schedules, without TVM's ``tensorize``.

TVM's ``Schedule.tensorize`` crashes this wheel (a segmentation fault in ``ToJSONGraph``,
called from its structural comparison; ``shared/notes/tvm-0.27.md``), and with it dlight's
tensor-core matmul rules. Those rules are otherwise sound, so relay runs them with
``tensorize`` replaced by :func:`tensorize` here, which does what TVM's primitive does for
the WMMA intrinsics the float16 rule uses (load an operand fragment, fill an accumulator
with zeros, multiply-accumulate, store an accumulator; 16 x 16 x 16 fragments, as
``nvcuda::wmma`` has them), in three steps:

1. **blockize**: the loop nest to tensorize becomes one block, whose read and write
   regions are the 16 x 16 tiles it touches (TVM's own ``blockize``);
2. **check**: instead of TVM's structural match of the block against the intrinsic's
   description, the checks that matter for these intrinsics: every buffer the intrinsic
   takes has exactly one region of its memory scope in the block (fragment scopes
   ``wmma.matrix_a``, ``wmma.matrix_b``, ``wmma.accumulator``; shared or global memory),
   of its dtype and 16 x 16, nothing runs under a predicate (an intrinsic computes its
   whole tile), and the block computes what the intrinsic computes: a copy
   (load, store), a zero (fill), or ``C = C + A * B`` with ``A`` and ``B`` loaded, possibly
   cast (multiply-accumulate);
3. **replace**: the block keeps its iterators, regions and annotations; its body becomes
   the intrinsic's call (:func:`wmma_intrinsic`: ``tvm_load_matrix_sync``,
   ``tvm_fill_fragment``, ``tvm_mma_sync``, ``tvm_store_matrix_sync``, which TVM's CUDA
   code generator prints as ``nvcuda::wmma`` calls), its buffers bound to the block's
   regions by ``match_buffer``, exactly as ``tensorize`` leaves it, and the schedule state
   is updated in place (``ScheduleState.replace``).

A check that fails raises ``ValueError``, as ``tensorize`` raises on a mismatch, so a rule's
fallbacks (dlight tries float32 accumulators, then float16) work unchanged. The
intrinsics' semantics are those of TVM's ``tensor_intrin/cuda.py`` and CUDA's WMMA API
(CUDA C++ Programming Guide, "Warp Matrix Functions").
"""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

_LOCK = threading.RLock()


def tensorize(sch: Any, target: Any, intrin_name: str) -> None:
    """Tensorize the loop (or block) ``target`` of schedule ``sch`` with the WMMA
    intrinsic ``intrin_name`` (see the module docstring); ``ValueError`` if it does not
    match."""
    from relay.backend.runtime import tvm

    s_tir = tvm().s_tir
    kind, params, call = wmma_intrinsic(intrin_name)
    block_rv = sch.blockize(target) if isinstance(target, s_tir.schedule.LoopRV) else target
    block = sch.get(block_rv)
    if block.init is not None:
        raise ValueError(f"tensorize {intrin_name}: the block still initializes a reduction")
    _check_computation(kind, intrin_name, block)
    if not _unconditional(_realize_of(sch, block_rv, block)):
        raise ValueError(f"tensorize {intrin_name}: the block runs under a predicate")
    regions: list[Any] = []
    for region in [*block.reads, *block.writes]:
        if not any(region.source.same_as(r.source) for r in regions):
            regions.append(region)
    matched = []
    for param in params:
        scope = str(param.scope())
        found = [r for r in regions if str(r.source.scope()) == scope]
        if len(found) != 1:
            raise ValueError(f"tensorize {intrin_name}: no single region in {scope} memory")
        region = found[0]
        if str(region.source.dtype) != str(param.dtype):
            raise ValueError(
                f"tensorize {intrin_name}: {region.source.name} is {region.source.dtype}, "
                f"not {param.dtype}"
            )
        extents = [int(r.extent) for r in region.region if int(r.extent) != 1]
        if extents != [TILE, TILE]:
            raise ValueError(f"tensorize {intrin_name}: a {extents} region, not 16 x 16")
        matched.append(s_tir.MatchBufferRegion(param, region))
    replaced = s_tir.SBlock(
        block.iter_vars,
        block.reads,
        block.writes,
        block.name_hint,
        tvm().tirx.Evaluate(call),
        None,
        block.alloc_buffers,
        matched,
        block.annotations,
    )
    sch.state.replace(sch.get_sref(block_rv), replaced, {block: replaced})


TILE = 16
"""The WMMA fragment: 16 x 16 x 16."""

_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
_SCOPES = {"shared": "shared", "shared_dyn": "shared.dyn", "global": "global"}


def wmma_intrinsic(name: str) -> tuple[str, list[Any], Any]:
    """The WMMA intrinsic ``name`` (named as ``tvm.s_tir.tensor_intrin.cuda`` names
    them, ``get_wmma_intrin_group``): its family, the buffers it takes (16 x 16, with
    their strides and offsets free, to be bound by ``match_buffer``) and the call that
    implements it. ``ValueError`` for anything but float16 and bfloat16 products (a
    bfloat16 product accumulates in float32: WMMA has no bfloat16 accumulator)."""
    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    m = re.fullmatch(
        r"wmma_(load)_16x16x16_(f16|bf16)_(a|b)(_trans)?_(shared|shared_dyn)"
        r"|wmma_(fill)_16x16x16_(f16|f32)"
        r"|wmma_(sync)_16x16x16_(f16f16(?:f16|f32)|bf16bf16f32)(_trans)?"
        r"|wmma_(store)_16x16x16_(f16|f32)_(shared|shared_dyn|global)",
        name,
    )
    if m is None:
        raise ValueError(f"relay's tensorize does not implement {name}")

    def buffer(dtype: str, scope: str) -> Any:
        stride = tirx.Var("stride", "int32")
        return tirx.decl_buffer(
            (TILE, TILE),
            dtype,
            name=scope.replace(".", "_"),
            strides=[stride, tirx.Var("one", "int32")],
            scope=scope,
            data_alignment=64,
            offset_factor=TILE,
        )

    def fragment(buf: Any) -> Any:  # the fragment's index in its array of fragments
        offset, stride = buf.elem_offset, buf.strides[0]
        return offset // stride // TILE * (stride // TILE) + offset % stride // TILE

    if m.group(1):  # load a (or b) operand from shared memory into its fragment
        layout = "col_major" if m.group(4) else "row_major"
        operand = _DTYPES[m.group(2)]
        src = buffer(operand, _SCOPES[m.group(5)])
        dst = buffer(operand, f"wmma.matrix_{m.group(3)}")
        ptr = src.access_ptr("r", ptr_type=operand)
        call = tirx.tvm_load_matrix_sync(
            dst.data, TILE, TILE, TILE, fragment(dst), ptr, src.strides[0], layout
        )
        return "wmma_load", [src, dst], call
    if m.group(6):
        acc = buffer(_DTYPES[m.group(7)], "wmma.accumulator")
        zero = tirx.const(0.0, "float32")
        return (
            "wmma_fill",
            [acc],
            tirx.tvm_fill_fragment(acc.data, TILE, TILE, TILE, fragment(acc), zero),
        )
    if m.group(8):
        operand = "bfloat16" if m.group(9).startswith("bf16") else "float16"
        a = buffer(operand, "wmma.matrix_a")
        b = buffer(operand, "wmma.matrix_b")
        acc = buffer(_DTYPES[m.group(9)[-3:]], "wmma.accumulator")
        call = tirx.tvm_mma_sync(
            acc.data,
            fragment(acc),
            a.data,
            fragment(a),
            b.data,
            fragment(b),
            acc.data,
            fragment(acc),
        )
        return "wmma_sync", [a, b, acc], call
    acc = buffer(_DTYPES[m.group(12)], "wmma.accumulator")
    dst = buffer(_DTYPES[m.group(12)], _SCOPES[m.group(13)])
    ptr = dst.access_ptr("w", ptr_type=str(dst.dtype))
    call = tirx.tvm_store_matrix_sync(
        acc.data, TILE, TILE, TILE, fragment(acc), ptr, dst.strides[0], "row_major"
    )
    return "wmma_store", [acc, dst], call


def _realize_of(sch: Any, block_rv: Any, block: Any) -> Any:
    """The ``SBlockRealize`` of ``block`` (its bindings and predicate)."""
    from relay.backend.runtime import tvm

    tirx = tvm().tirx
    stack = [sch.get_sref(block_rv).parent.stmt.body]  # (a loop's or a block's)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, tirx.SeqStmt):
            stack.extend(stmt.seq)
        elif getattr(stmt, "block", None) is not None and stmt.block.same_as(block):
            return stmt
    raise ValueError("tensorize: the block's realization was not found")


def _unconditional(realize: Any) -> bool:
    """Whether ``realize`` runs its block everywhere (its predicate is the constant true):
    an intrinsic computes its whole 16 x 16 tile."""
    predicate = realize.predicate
    return hasattr(predicate, "value") and bool(predicate.value)


def _check_computation(kind: str, intrin_name: str, block: Any) -> None:
    """That the innermost block under blockized ``block`` computes what intrinsic family
    ``kind`` computes."""
    from relay.backend.runtime import tvm

    tirx, s_tir = tvm().tirx, tvm().s_tir
    load = tvm().ir.expr.TensorLoad  # what ``tirx.BufferLoad`` makes
    inner = block.body
    while not isinstance(inner, tirx.BufferStore):
        if isinstance(inner, s_tir.SBlockRealize):
            if not _unconditional(inner):
                raise ValueError(f"tensorize {intrin_name}: the block runs under a predicate")
            inner = inner.block.body
        elif isinstance(inner, tirx.For):
            inner = inner.body
        else:
            raise ValueError(f"tensorize {intrin_name}: not a single store in the block")
    value = inner.value

    def loaded(e: Any) -> bool:
        if isinstance(e, tirx.Cast):
            e = e.value
        return isinstance(e, load)

    if kind in ("wmma_load", "wmma_store"):
        ok = isinstance(value, load)
    elif kind == "wmma_fill":
        ok = isinstance(value, tirx.IntImm | tirx.FloatImm) and float(value.value) == 0.0
    else:  # C = C + A * B
        ok = (
            isinstance(value, tirx.Add)
            and isinstance(value.a, load)
            and value.a.source.same_as(inner.buffer)
            and isinstance(value.b, tirx.Mul)
            and loaded(value.b.a)
            and loaded(value.b.b)
        )
    if not ok:
        raise ValueError(f"tensorize {intrin_name}: the block does not compute {kind}")


def wmma_intrin_group(
    load_scope: str, store_scope: str, in_dtype: str, out_dtype: str, trans_b: bool
) -> dict[str, str]:
    """The names of the WMMA intrinsics of a product, as dlight's rules ask
    ``tvm.s_tir.tensor_intrin.cuda.get_wmma_intrin_group`` for them (same arguments, same
    names)."""
    short = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "int8": "s8", "int32": "s32"}
    i, o = short[in_dtype], short[out_dtype]
    load, store = load_scope.replace(".", "_"), store_scope.replace(".", "_")
    trans = "_trans" if trans_b else ""
    return {
        "init": f"wmma_fill_16x16x16_{o}",
        "load_a": f"wmma_load_16x16x16_{i}_a_{load}",
        "load_b": f"wmma_load_16x16x16_{i}_b{trans}_{load}",
        "compute": f"wmma_sync_16x16x16_{i}{i}{o}{trans}",
        "store": f"wmma_store_16x16x16_{o}_{store}",
    }


_INTRINSICS = "tvm.s_tir.tensor_intrin.cuda"


def bfloat16_intrin_group(
    load_scope: str, store_scope: str, in_dtype: str, out_dtype: str, trans_b: bool
) -> dict[str, str]:
    """:func:`wmma_intrin_group` for a bfloat16 product scheduled by dlight's float16 rule,
    which asks for float16 operands: the names of the bfloat16 intrinsics instead."""
    operands = "bfloat16" if in_dtype == "float16" else in_dtype
    return wmma_intrin_group(load_scope, store_scope, operands, out_dtype, trans_b)


_MATMUL_RULES = "tvm.s_tir.dlight.gpu.matmul"


@contextlib.contextmanager
def wmma_tensorize(operands: str = "float16") -> Iterator[None]:
    """While in this context, ``tvm.s_tir.Schedule.tensorize`` is :func:`tensorize`, for
    dlight's tensor-core rules, which call it on schedules they create themselves. Those
    rules also import ``get_wmma_intrin_group`` from ``tvm.s_tir.tensor_intrin.cuda``, whose
    package registers every intrinsic of every target when imported (22 s here); unless it
    is loaded already, the rules get :func:`wmma_intrin_group` instead, from a module
    standing in for it while the context lasts. The context holds a lock: one thread at a
    time tries the tensor cores (relay compiles parts on several threads).

    ``operands="bfloat16"``: dlight's tensor-core rule is written for float16 operands
    (its ``Matmul`` takes it for float16 products only, and it asks for the float16
    intrinsics). Here it schedules a bfloat16 product as it would a float16 one (the same
    tiles, shared memory and fragments of 16 x 16 x 16), ``Matmul`` reading the product's
    operands as float16 and the rule getting the bfloat16 intrinsics'
    names (:func:`bfloat16_intrin_group`), from the stand-in or from TVM's module alike."""
    from relay.backend.runtime import tvm

    schedule = tvm().s_tir.Schedule

    def replacement(self: Any, block_or_loop: Any, tensor_intrin: str, *_: Any) -> None:
        tensorize(self, block_or_loop, tensor_intrin)

    with _LOCK:  # (relay schedules on several threads: one stand-in, installed once)
        stand_in = None
        if _INTRINSICS not in sys.modules:
            stand_in = types.ModuleType(_INTRINSICS)
            stand_in.get_wmma_intrin_group = wmma_intrin_group  # type: ignore[attr-defined]
            sys.modules[_INTRINSICS] = stand_in
        restore: list[tuple[Any, str, Any]] = []
        if operands == "bfloat16":
            rules = importlib.import_module(_MATMUL_RULES)
            dtypes = rules.get_in_out_dtypes

            def as_float16(block: Any) -> tuple[str, str]:
                i, o = dtypes(block)
                return ("float16" if i == "bfloat16" else i), o

            restore += [
                (sys.modules[_INTRINSICS], "get_wmma_intrin_group", bfloat16_intrin_group),
                (rules, "get_in_out_dtypes", as_float16),
            ]
        restore.append((schedule, "tensorize", replacement))
        originals = [(owner, attr, owner.__dict__[attr]) for owner, attr, _ in restore]
        for owner, attr, value in restore:
            setattr(owner, attr, value)
        try:
            yield
        finally:
            for owner, attr, value in reversed(originals):
                setattr(owner, attr, value)
            if stand_in is not None and sys.modules.get(_INTRINSICS) is stand_in:
                del sys.modules[_INTRINSICS]
