"""Fixtures of the lazy-tensor tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import relay.lazy as lz


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    """Nothing pending from earlier tests, counters at zero, default settings after."""
    lz.mark_step()
    lz.reset_metrics()
    saved = (lz.config().max_graph_size, lz.config().warn_fallbacks)
    yield
    lz.config(max_graph_size=saved[0], warn_fallbacks=saved[1])
