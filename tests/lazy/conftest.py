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
    c = lz.config()
    saved = (c.max_graph_size, c.warn_fallbacks, c.symbolic_shapes)
    yield
    lz.config(max_graph_size=saved[0], warn_fallbacks=saved[1], symbolic_shapes=saved[2])
