"""Test configuration: hypothesis profiles, and a private kernel cache directory.

Under CI (``CI`` set) hypothesis is derandomized, so a run is reproducible and a
property failure is never a coin toss; locally it explores new examples each run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# compiled kernels are cached in memory only (linking a shared object for the disk cache costs
# 0.1-0.2 s per program; the cache's own tests turn it on), in a directory private to this
# test session (set before relay reads flags; pytest-xdist workers inherit it from the
# controller, which removes it at the end)
os.environ.setdefault("RELAY_CACHE", "0")
if "RELAY_CACHE_DIR" not in os.environ:
    _cache_dir = tempfile.mkdtemp(prefix="relay-test-cache-")
    os.environ["RELAY_CACHE_DIR"] = _cache_dir
    atexit.register(shutil.rmtree, _cache_dir, ignore_errors=True)

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
