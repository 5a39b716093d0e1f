"""numpy's views on lazy tensors: in-place updates reach the base and every view."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relay.lazy as lz

pytestmark = pytest.mark.tvm


def start(mod: Any) -> Any:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    return lz.asarray(x) if mod is lz else x


def iadd(t: Any, v: Any) -> None:
    t += v


def assign(t: Any, key: Any, v: Any) -> None:
    t[key] = v


CASES: dict[str, Callable[[Any], Any]] = {
    "a row sees its base's +=": lambda x: (lambda v: (iadd(x, 1), v)[1])(x[1]),
    "writing a row writes the base": lambda x: (lambda v: (assign(v, slice(None), 0), x)[1])(x[1]),
    "writing the transpose writes the base": lambda x: (lambda v: (assign(v, (0, 2), 100), x)[1])(
        x.T
    ),
    "+= on a reshape": lambda x: (lambda v: (iadd(v, 5), x)[1])(x.reshape(2, 6)),
    "a view of a view": lambda x: (lambda v: (assign(v, 0, -1), x)[1])(x[1:][:, ::2]),
    "a column sees a write to a row": lambda x: (lambda a, b: (assign(a, slice(None), 7), b)[1])(
        x[0], x[:, 0]
    ),
    "np.transpose and np.ravel are views": lambda x: (
        lambda t, r: (assign(t, (1, 0), -5), iadd(r, 1), x)[2]
    )(np.transpose(x), np.ravel(x)),
    "a squeezed view": lambda x: (lambda v: (iadd(v, 2), x)[1])(x[None, 1:2].squeeze(0)),
    "rebinding is not in place": lambda x: (lambda v: (x + 1, v)[1])(x[0]),
    "an integer-array index is a copy": lambda x: (lambda v: (iadd(x, 1), v)[1])(x[[0, 2]]),
    "astype is a copy": lambda x: (lambda v: (iadd(x, 1), v)[1])(x.astype(np.float32)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_views_share_updates_as_numpys_do(name: str) -> None:
    want = CASES[name](start(np))
    got = CASES[name](start(lz))
    assert isinstance(got, lz.Tensor)
    np.testing.assert_array_equal(got.numpy(), want)
