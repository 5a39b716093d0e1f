"""``None`` (``np.newaxis``) among the other indices of a tensor, against numpy: written
cases, random index tuples (hypothesis), and the error for ``None`` with an array index."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import relay

X = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
_COUNT = itertools.count()


def compiled(index: str, tmp: Path) -> Any:
    """``relay.function`` of ``def f(x): return x[<index>]``, written to a module file (the
    frontend reads a function's source)."""
    path = tmp / f"newaxis_{next(_COUNT)}.py"
    path.write_text(
        "import numpy as np\nfrom relay import Tensor, float32\n\n"
        f"def f(x: Tensor[float32, (3, 4, 5)]):\n    return x[{index}]\n"
    )
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return relay.function(module.f)


@pytest.mark.parametrize(
    "index",
    [
        ":, None, None",
        "None, :, 1:3",
        "1, None",
        "..., None",
        "None, ..., 2",
        "None, 1, None, ::-2, None",
        "np.newaxis, -1",
        "2:, None, 0, None",
    ],
)
def test_new_axes_among_slices_and_integers(index: str, tmp_path: Path) -> None:
    want = eval(f"X[{index}]")
    got = np.asarray(compiled(index, tmp_path)(X))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


_PART = st.one_of(
    st.just("None"),
    st.just(":"),
    st.integers(-3, 2).map(str),
    st.tuples(st.integers(-3, 2), st.integers(-3, 3), st.sampled_from([1, 2, -1])).map(
        lambda t: f"{t[0]}:{t[1]}:{t[2]}"
    ),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_PART, min_size=1, max_size=5))
def test_random_indices_agree_with_numpy(parts: list[str], tmp_path: Path) -> None:
    if sum(p != "None" for p in parts) > 3 or "None" not in parts:
        return
    index = ", ".join(parts)
    want = eval(f"X[{index}]")
    got = np.asarray(compiled(index, tmp_path)(X))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_new_axes_with_an_array_index_are_refused(tmp_path: Path) -> None:
    with pytest.raises(relay.FrontendError) as info:
        compiled("np.argmax(x, axis=0)[0], None", tmp_path)
    assert info.value.message == (
        "unsupported Python construct: None (np.newaxis) mixed with array indices"
    )
