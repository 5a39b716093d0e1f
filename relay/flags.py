"""Debugging and behaviour flags, read once from the environment.

=================  =======  ===========================================================
variable           default  meaning
=================  =======  ===========================================================
RELAY_DEBUG        0        verbosity of leveled debug prints on stderr (0 silent .. 5)
RELAY_DUMP_IR      ""       ``stderr`` or a directory: dump the IR after each pass
RELAY_CHECKS       0        1: re-check types and well-formedness after every pass, and
                            compare every compiled result with the reference interpreter
RELAY_CACHE_DIR    ""       where compiled kernels are cached ("" = the user cache dir)
RELAY_CACHE        1        0: never read or write the on-disk kernel cache
RELAY_CACHE_MB     1024     the on-disk kernel cache's size bound (least recently used go)
RELAY_FAST_MATH    1        0: exact exp/tanh/sigmoid in compiled code (no approximations)
RELAY_NATIVE_LOOPS 1        0: the VM runs loops instruction by instruction instead of
                            compiling them into one kernel (:mod:`relay.backend.vm.loops`)
RELAY_SHARE_KERNELS 0       1: matrix products of several depths share one kernel: faster
                            compilation, slower products (:mod:`relay.backend.share`)
RELAY_TIERS        1        0: a ``@relay`` function's first call compiles its specialized
                            kernels before it runs, instead of running on kernels shared
                            by products of several depths while they compile in the
                            background (:mod:`relay.backend.tiers`)
=================  =======  ===========================================================

Tests override them with :func:`override`::

    with relay.flags.override(checks=True):
        ...
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


@dataclass(frozen=True, slots=True)
class Flags:
    """The flag values in force; see the module docstring for their meaning."""

    debug: int = 0
    dump_ir: str = ""
    checks: bool = False
    cache_dir: str = ""
    cache: bool = True
    cache_mb: int = 1024
    fast_math: bool = True
    native_loops: bool = True
    share_kernels: bool = False
    tiers: bool = True

    @staticmethod
    def from_env() -> Flags:
        """Flags as set by the ``RELAY_*`` environment variables."""
        return Flags(
            debug=_env_int("RELAY_DEBUG", 0),
            dump_ir=os.environ.get("RELAY_DUMP_IR", ""),
            checks=_env_int("RELAY_CHECKS", 0) > 0,
            cache_dir=os.environ.get("RELAY_CACHE_DIR", ""),
            cache=_env_int("RELAY_CACHE", 1) > 0,
            cache_mb=_env_int("RELAY_CACHE_MB", 1024),
            fast_math=_env_int("RELAY_FAST_MATH", 1) > 0,
            native_loops=_env_int("RELAY_NATIVE_LOOPS", 1) > 0,
            share_kernels=_env_int("RELAY_SHARE_KERNELS", 0) > 0,
            tiers=_env_int("RELAY_TIERS", 1) > 0,
        )


_current = Flags.from_env()


class _Pinned(threading.local):
    flags: Flags | None = None


_pinned = _Pinned()
_pins = 0
"""How many :func:`pinned` contexts are open, on all threads: while none is, :func:`get`
reads no thread-local state (it is on the path of every call of a compiled program)."""
_pins_lock = threading.Lock()


def get() -> Flags:
    """The flags in force now (on this thread: see :func:`pinned`)."""
    if _pins:
        flags = _pinned.flags
        if flags is not None:
            return flags
    return _current


@contextmanager
def pinned(flags: Flags) -> Iterator[Flags]:
    """``flags`` in force on this thread alone, whatever :func:`override` does meanwhile:
    for work a program started and another thread does later (its second tier, its disk
    writes, the threads compiling its parts), under the flags the program was built with."""
    global _pins
    saved = _pinned.flags
    _pinned.flags = flags
    with _pins_lock:
        _pins += 1
    try:
        yield flags
    finally:
        _pinned.flags = saved
        with _pins_lock:
            _pins -= 1


@contextmanager
def override(**changes: object) -> Iterator[Flags]:
    """Temporarily replace some flags, e.g. ``override(debug=2)``."""
    global _current
    known = {f.name for f in fields(Flags)}
    unknown = set(changes) - known
    if unknown:
        raise TypeError(f"unknown relay flag(s): {', '.join(sorted(unknown))}")
    saved = _current
    _current = replace(saved, **changes)  # type: ignore[arg-type]
    try:
        yield _current
    finally:
        _current = saved


def debug_print(level: int, *parts: object) -> None:
    """Print ``parts`` on stderr when ``RELAY_DEBUG`` is at least ``level``."""
    if get().debug >= level:
        print("[relay]", *parts, file=sys.stderr)
