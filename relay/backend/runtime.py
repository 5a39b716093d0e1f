"""Loading TVM, and the memory rules every compiled kernel relies on.

TVM is imported here and only here, the first time something is compiled or run
(``import tvm`` costs 0.6-0.8 s and ~190 MB). Before the import, the thread pool size is set
from the cores this process may run on: TVM's default assumes hyper-threading and takes half
the hardware threads, one thread on a 2-core machine (``TVM_NUM_THREADS`` set by the user
wins).

TVM's kernels assume every buffer is 64-byte aligned, and nothing checks it: a misaligned
pointer crashes the process. relay's kernels declare their parameters aligned to their
element size only (:func:`relay.backend.compiler.unaligned_params`), so they take any
C-contiguous, writeable array numpy calls aligned (:func:`passable`); relay's own buffers are
still allocated 64-byte aligned (:func:`aligned_empty`), and :func:`as_kernel_array` copies
anything else (copying only when needed).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

ALIGNMENT = 64
"""The byte alignment of every buffer handed to a compiled kernel."""

Array = np.ndarray[Any, np.dtype[Any]]

_tvm: Any = None


class _NotMatched:
    """The type of :data:`NOT_MATCHED`."""

    def __repr__(self) -> str:
        return "NOT_MATCHED"


NOT_MATCHED: Any = _NotMatched()
"""What a function's fast-path runner returns when the arguments are not what it takes
(:func:`relay.frontend.function.fast_call`): the call then takes the full path."""


def available_cores() -> int:
    """The number of CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def tvm() -> Any:
    """The ``tvm`` package, imported on first use with its thread pool sized to the cores."""
    global _tvm
    if _tvm is None:
        os.environ.setdefault("TVM_NUM_THREADS", str(available_cores()))
        # tvm_ffi imports torch, when it is installed, only to dodge a symbol clash on
        # Windows; that costs ~1.2 s. Unless the program already uses torch, the import is
        # made to fail for the duration of TVM's (torch imports normally afterwards).
        block = "torch" not in sys.modules and sys.platform != "win32"
        if block:
            sys.modules["torch"] = None  # type: ignore[assignment]
        try:
            import tvm as tvm_pkg
        finally:
            if block and sys.modules.get("torch", 0) is None:
                del sys.modules["torch"]
        _tvm = tvm_pkg
    return _tvm


def numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype of a Relay dtype name."""
    if dtype == "bfloat16":
        import ml_dtypes

        bf16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bf16
    return np.dtype(dtype)


def bfloat16_tensor(a: Array) -> Any:
    """The ``ml_dtypes`` bfloat16 array ``a`` (C-contiguous) as a TVM tensor over the same
    memory, which it keeps alive: a uint16 view of it through DLPack (whose numpy export has
    no bfloat16), viewed again as bfloat16."""
    import tvm_ffi

    tvm()
    raw: Any = tvm_ffi.from_dlpack(np.ascontiguousarray(a).view(np.uint16), require_alignment=0)
    return raw._create_view(tuple(a.shape), "bfloat16")  # (TVM's runtime Tensor)


def aligned_empty(shape: tuple[int, ...], dtype: Any) -> Array:
    """An uninitialised C-contiguous array whose data is 64-byte aligned (with the compact
    strides TVM insists on even when it has no elements)."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    if nbytes == 0:
        return compact_empty(raw[offset:].view(dt)[:1], shape)
    out: Array = raw[offset : offset + nbytes].view(dt).reshape(shape)
    return out


PAGE = 4096
"""The span of address bits that x86 CPUs compare first between a load and the stores in
flight before it (see :func:`page_placed_empty`)."""

PLACED_BYTES = 1 << 20
"""Buffers from this size on are placed within their page (:func:`page_placed_empty`)."""


def page_placed_empty(nbytes: int, like: Array | None) -> Array:
    """An uninitialised uint8 buffer of ``nbytes`` whose data starts at the same offset
    within a 4 KiB page as ``like``'s, rounded up to 64 bytes (:data:`ALIGNMENT`), for the
    results of a kernel that streams ``like`` from memory; a plain :func:`aligned_empty` one
    when ``like`` is None or the buffer is smaller than :data:`PLACED_BYTES`.

    "4K aliasing" (Intel's optimization manual, on store forwarding): a load whose address
    matches an older store still in flight in its low 12 bits waits as if it read the same
    memory. Where a streaming kernel's result buffer starts against its inputs modulo 4 KiB
    is then worth 10-15% of its time: ew_chain's fused kernel took 1.08-1.11 ms with its
    result 0 to 768 bytes past its inputs' page offset, 1.20-1.27 ms from 1 to 3.3 KiB
    (2-core Sapphire Rapids, 4M float32; ``x + y``, which waits on memory alone, 0.873 ms
    at every offset). Left to the allocator, a large buffer is a fresh memory map the first
    time (just past numpy's 16-byte header, as placed here) and anywhere in the heap once
    freed large arrays have raised glibc's threshold for mapping (the benchmark, which frees
    its float64 reference before timing, ran 8% slower).
    """
    if like is None or nbytes < PLACED_BYTES:
        return aligned_empty((nbytes,), np.uint8)
    target = -(-(like.ctypes.data % PAGE) // ALIGNMENT) * ALIGNMENT % PAGE
    raw = np.empty(nbytes + PAGE, dtype=np.uint8)
    offset = (target - raw.ctypes.data) % PAGE
    out: Array = raw[offset : offset + nbytes]
    return out


def compact_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The byte strides of a C-contiguous array of ``shape`` (0 where a later axis is 0)."""
    strides = []
    step = itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def compact_empty(base: Array, shape: tuple[int, ...]) -> Array:
    """An array of ``shape`` with no elements over ``base``'s data, with compact strides
    (numpy gives empty arrays strides TVM rejects)."""
    out: Array = np.lib.stride_tricks.as_strided(
        base, shape=shape, strides=compact_strides(shape, base.itemsize), writeable=True
    )
    return out


def passable(a: Array) -> bool:
    """Whether a kernel can take ``a`` as it is: C-contiguous, writeable (DLPack cannot pass
    read-only arrays) and aligned to its element size (numpy's ``aligned`` flag). Kernels
    declare their parameters aligned to the element size only
    (:func:`relay.backend.compiler.unaligned_params`), so numpy's usual 16-byte offsets pass."""
    flags = a.flags
    return bool(flags.c_contiguous and flags.writeable and flags.aligned)


def as_kernel_array(a: Array) -> Array:
    """``a`` itself when a kernel can take it (:func:`passable`), else an aligned contiguous
    copy."""
    if a.size == 0:
        return aligned_empty(a.shape, a.dtype)
    if passable(a):
        return a
    out = aligned_empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out
