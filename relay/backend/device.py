"""Devices and arrays that live in a device's memory.

A program compiled for a GPU (``relay.build(f, target="cuda")``) takes and returns
:class:`DeviceArray` values: arrays in the GPU's memory, which stay there from call to call
until the program's user asks for their values (``.numpy()``, ``np.asarray``). Parameters
are placed on the device once with :func:`device_put` and are then passed as they are; a
numpy argument is copied to the device at each call. Arrays of other GPU frameworks (CuPy,
PyTorch CUDA tensors) are exchanged without a copy through DLPack, in both directions:
:func:`from_dlpack` (or passing them straight to a program) and ``__dlpack__``
(``torch.from_dlpack(result)``).

Kernels run in the order they are launched on the device's default stream, which orders
them with every copy relay makes, so relay synchronizes only where a value is needed on the
host: reading an array (``.numpy()``), and a kernel's run-time checks (a failed bound check
is read back after the kernel that made it).

Memory: a result's tensor goes back to a per-device pool (by shape and dtype) when its
:class:`DeviceArray` is dropped, and the next call's results reuse it, as the caching
allocators of PyTorch and CuPy do, because freeing CUDA memory synchronizes the whole
device. A tensor whose array was handed to another framework through DLPack never goes
back: that framework may still use it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay.backend.runtime import numpy_dtype, tvm
from relay.errors import ExecutionError

Array = np.ndarray[Any, np.dtype[Any]]

_DLPACK_KIND = {1: "cpu", 2: "cuda"}
"""DLPack device types (``kDLCPU``, ``kDLCUDA``) relay runs on."""


@dataclass(frozen=True)
class Device:
    """A device: ``Device("cuda", 0)`` (the first GPU) or ``Device("cpu")``."""

    kind: str = "cpu"
    index: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("cpu", "cuda"):
            raise ExecutionError(f"unknown device {self.kind!r} (known: 'cpu', 'cuda')")

    def tvm_device(self) -> Any:
        """The TVM device."""
        return tvm().device(self.kind, self.index)

    @property
    def exists(self) -> bool:
        """Whether this machine has the device (and the runtime can reach it)."""
        try:
            return bool(self.tvm_device().exist)
        except Exception:  # a runtime built without CUDA
            return False

    def __str__(self) -> str:
        return f"{self.kind}:{self.index}"


def cpu() -> Device:
    """The host CPU."""
    return Device("cpu")


def cuda(index: int = 0) -> Device:
    """The CUDA GPU ``index``."""
    return Device("cuda", index)


def gpu_available() -> bool:
    """Whether a CUDA GPU can run relay's kernels here."""
    return cuda().exists


class _Pool:
    """Free tensors of one device's memory, by shape and dtype (see the module docstring)."""

    KEEP = 8
    """Free tensors kept per shape and dtype; more are released."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.kind = _DLPACK_KIND.get(int(device.dlpack_device_type()), "cpu")
        self.where = Device(self.kind, int(device.index))
        self.free: dict[tuple[tuple[int, ...], str], list[Any]] = {}
        # reentrant: a collection inside ``give`` may drop another array of this pool
        self.lock = threading.RLock()

    def take(self, key: tuple[tuple[int, ...], str]) -> Any:
        with self.lock:
            tensors = self.free.get(key)
            if tensors:
                return tensors.pop()
        return tvm().runtime.empty(key[0], key[1], self.device)

    def give(self, key: tuple[tuple[int, ...], str], tensor: Any) -> None:
        with self.lock:
            tensors = self.free.setdefault(key, [])
            if len(tensors) < self.KEEP:
                tensors.append(tensor)


_POOLS: dict[str, _Pool] = {}
_POOLS_LOCK = threading.Lock()


def empty_cache() -> None:
    """Release the device memory the pools keep for reuse (the tensors no array holds)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for pool in pools:
        with pool.lock:
            pool.free.clear()


def _pool(device: Any) -> _Pool:
    key = str(device)
    with _POOLS_LOCK:
        found = _POOLS.get(key)
        if found is None:
            found = _POOLS[key] = _Pool(device)
        return found


class DeviceArray:
    """An array in a device's memory: what a program compiled for a GPU returns, and what
    :func:`device_put` makes. ``np.asarray(a)`` or ``a.numpy()`` copies it to the host
    (waiting for the kernels that compute it); ``a.shape``, ``a.dtype`` and ``a.device``
    need no copy; DLPack hands it to another framework without a copy."""

    __slots__ = ("_device", "_dtype", "_escaped", "_key", "_pool", "_shape", "_tensor")

    def __init__(
        self,
        tensor: Any,
        pool: _Pool | None = None,
        key: tuple[tuple[int, ...], str] | None = None,
        dtype: np.dtype[Any] | None = None,
    ) -> None:
        """``tensor`` (a TVM tensor); from ``pool`` under ``key`` (shape, dtype name) when
        it goes back there once this array is dropped."""
        self._tensor = tensor
        self._pool = pool
        self._key = key
        self._escaped = pool is None
        if key is not None and dtype is not None:  # (known: no queries of the tensor)
            self._shape, self._dtype = key[0], dtype
        else:
            self._shape = tuple(int(d) for d in tensor.shape)
            self._dtype = numpy_dtype(str(tensor.dtype))
        self._device: Device | None = pool.where if pool is not None else None

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The array's numpy dtype."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """The size of the data in bytes."""
        return self.size * self._dtype.itemsize

    @property
    def device(self) -> Device:
        """Where the array lives."""
        if self._device is None:
            dev = self._tensor.device
            kind = _DLPACK_KIND.get(int(dev.dlpack_device_type()), "cpu")
            self._device = Device(kind, int(dev.index))
        return self._device

    def numpy(self) -> Array:
        """The values, copied to a new numpy array (synchronizes with the device)."""
        out: Array = self._tensor.numpy()
        return out

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Array:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name}, device={self.device})"

    def tvm_tensor(self) -> Any:
        """The TVM tensor holding the data (its memory is then never reused by relay)."""
        self._escaped = True
        return self._tensor

    def __dlpack__(self, **kwargs: Any) -> Any:
        self._escaped = True  # the other framework may hold the memory beyond this array
        return self._tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        result: tuple[int, int] = self._tensor.__dlpack_device__()
        return result

    def __del__(self) -> None:
        pool = self._pool
        if pool is not None and not self._escaped:
            assert self._key is not None
            pool.give(self._key, self._tensor)


def pooled(shape: tuple[int, ...], dtype: np.dtype[Any], device: Any) -> DeviceArray:
    """A new uninitialized :class:`DeviceArray` on TVM device ``device``, from its pool."""
    pool = _pool(device)
    key = (shape, dtype.name)
    return DeviceArray(pool.take(key), pool, key, dtype)


def uploaded(a: Any, device: Any) -> Any:
    """Host array ``a`` copied into a new TVM tensor of its own on TVM device ``device``
    (outside the pools: for what lives as long as an executor or a machine)."""
    from relay.backend.runtime import as_kernel_array

    a = np.asarray(a)
    out = tvm().runtime.empty(a.shape, a.dtype.name, device)
    if a.size:
        out.copyfrom(as_kernel_array(a))
    return out


def _default_device() -> Device:
    return cuda() if gpu_available() else cpu()


def device_put(x: Any, device: Device | None = None) -> DeviceArray:
    """``x`` (an array, anything ``np.asarray`` takes, or a DeviceArray) in ``device``'s
    memory (default: the first GPU, or the CPU without one). Parameters placed there once
    stay there: pass the result to a GPU program at every call and nothing is copied."""
    device = device or _default_device()
    if isinstance(x, DeviceArray) and x.device == device:
        return x
    dev = device.tvm_device()
    if not device.exists:
        raise ExecutionError(f"device {device} is not available on this machine")
    if isinstance(x, DeviceArray):
        out = pooled(x.shape, x.dtype, dev)
        out._tensor.copyfrom(x._tensor)
        return out
    a = np.asarray(x)
    if not a.flags.c_contiguous:  # (np.ascontiguousarray would make a scalar 1-d)
        a = a.copy(order="C")
    if a.dtype.kind not in "biuf" or a.dtype.itemsize > 8:
        raise ExecutionError(f"device_put: arrays of dtype {a.dtype} cannot go to a device")
    out = pooled(a.shape, a.dtype, dev)
    if a.size:
        out._tensor.copyfrom(a)
    return out


def from_dlpack(obj: Any) -> DeviceArray:
    """A DeviceArray sharing the memory of ``obj``, an array of another framework that
    supports DLPack (a CuPy array, a PyTorch tensor, a numpy array), without a copy (a
    program it is passed to copies it only if it is not 64-byte aligned, as its kernels
    assume)."""
    tvm()  # (loads the runtime tvm_ffi's tensors belong to)
    import tvm_ffi

    try:
        tensor = tvm_ffi.from_dlpack(obj, require_contiguous=True)
    except Exception as err:
        raise ExecutionError(f"from_dlpack: {type(obj).__name__} cannot be shared: {err}") from None
    return DeviceArray(tensor)


def dlpack_device(obj: Any) -> Device | None:
    """The device of an object that supports DLPack, or None (numpy arrays included, which
    relay reads as host arrays)."""
    if isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack_device__"):
        return None
    kind, index = obj.__dlpack_device__()
    name = _DLPACK_KIND.get(int(kind))
    return Device(name, int(index)) if name else None


__all__ = [
    "Device",
    "DeviceArray",
    "cpu",
    "cuda",
    "device_put",
    "dlpack_device",
    "empty_cache",
    "from_dlpack",
    "gpu_available",
]
