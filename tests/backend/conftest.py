"""Fixtures shared by the backend tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import relay
from relay.backend.cache import kernel_cache


@pytest.fixture
def cache_dir(tmp_path: Path) -> Iterator[Path]:
    """The disk cache on, in a fresh directory, with nothing loaded in memory; pending
    writes are waited for afterwards."""
    with relay.flags.override(cache_dir=str(tmp_path / "kernels"), cache=True):
        kernel_cache().clear_memory()
        yield tmp_path / "kernels"
        kernel_cache().flush()
        kernel_cache().clear_memory()
