"""Edge cases of the frontend's semantics: indexing bounds, counting bools, late-binding
closures, weakly typed numbers through joins, loops and cells, argument conversion, and the
messages for what is not supported."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import relay
from relay import Tensor, float32

F3 = np.float32([1.0, 2.0, 3.0])
I3 = np.int32([1, 2, 4])


def index_dynamic(x, i):
    return x[i]


def index_static_out_of_range(x: Tensor[float32, (3,)]):
    return x[3]


def count(x):
    return np.sum(x > 1), (x > 1).sum(axis=0)


def late_loop_closure(x):
    g = lambda: x  # noqa: E731
    for i in range(3):
        if i == 0:
            g = lambda: x + i  # noqa: E731, B023 - late binding is what is tested
    return g()


V64 = np.array([2**40, 1])


def captured_int64(x):
    return x + V64


def weak_after_if(x, c):
    k = 0
    if c > 0:
        k += 1
    return x - k


def reciprocal(x):
    return 1 / x


def weak_in_closure(x):
    a = 1
    g = lambda y: y + a  # noqa: E731
    a = 5
    return g(x)


def int64_bound(x, n):
    for _ in range(n):
        x = x * 2
    return x


def dead_join(x):
    b = x
    k = 0
    if np.sum(x) < 0:
        return x
    else:
        if k < 1:
            return b
        b = x - 1.0
    return b


def scale(x: Tensor[float32, (3,)], k: float):
    return x * k + True


def lists(xs):
    match xs:
        case relay.Cons(h, _):
            return h
    return np.zeros(3, dtype=np.float32)


def tuple_match(t):
    match t:
        case (a, b):
            return a - b


def numpy_extras(x):
    return x[None], np.flip(x), np.repeat(x, 2), np.argmax(x, axis=1, keepdims=True)


@relay
def two(a, b):
    return a + b


def loop_local(x):
    for i in range(3):
        y = x * i
    return y


def test_dynamic_indices_count_from_the_end_and_are_checked():
    f = relay.function(index_dynamic)
    assert float(f(F3, np.int32(-1))) == 3.0
    assert float(f(F3, np.int32(1))) == 2.0
    with pytest.raises(relay.ExecutionError, match="out of range"):
        f(F3, np.int32(7))


def test_static_index_out_of_range():
    with pytest.raises(relay.FrontendError) as info:
        relay.function(index_static_out_of_range)
    assert info.value.message == "index 3 is out of bounds for axis 0 with size 3"


def test_sum_of_bools_counts():
    total, per = relay.function(count)(np.float32([[0, 2], [3, 4]]))
    assert int(total) == 3 and per.tolist() == [1, 2]


def test_closures_read_loop_variables_late():
    np.testing.assert_array_equal(relay.function(late_loop_closure)(F3), late_loop_closure(F3))


def test_captured_int64_that_does_not_fit():
    with pytest.raises(relay.FrontendError, match="do not fit in int32"):
        relay.function(captured_int64)(np.int32([0, 0]))


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (weak_after_if, (F3, 1)),
        (weak_after_if, (F3, -1)),
        (reciprocal, (I3,)),
        (weak_in_closure, (F3,)),
        (int64_bound, (F3, np.int64(3))),
        (dead_join, (F3,)),
        (lists, (relay.Cons(F3, relay.Cons(F3 * 2, relay.Nil())),)),
        (tuple_match, ((F3, F3 * 2),)),
        (numpy_extras, (np.float32([[1, 5], [7, 2]]),)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_agrees_with_python(fn, args):
    got, want = relay.function(fn)(*args), fn(*args)
    for g, w in zip(
        got if isinstance(want, tuple) else (got,),
        want if isinstance(want, tuple) else (want,),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-6)


def test_python_numbers_take_the_parameter_dtype():
    f = relay.function(scale)
    assert f(F3, 2).tolist() == [3.0, 5.0, 7.0]  # the int 2 passed as the float32 parameter k
    with pytest.raises(relay.TypeCheckError) as info:
        f(F3, "two")
    assert (
        info.value.message
        == "argument 1 of scale (%k): cannot convert a str to a Relay value: 'two'"
    )
    assert f(k=1.0, x=F3).tolist() == [2.0, 3.0, 4.0]


def test_numbers_that_do_not_fit():
    with pytest.raises(relay.TypeCheckError) as info:
        two(1, 2**40)
    assert info.value.message == "argument 1 of two (%b): 1099511627776 does not fit in int32"
    f = relay.function(scale)
    for k, why in [
        (1e40, "1e+40 does not fit in float32"),
        (-1e40, "-1e+40 does not fit in float32"),
        (np.float64(0.1), "the float64 value 0.1 does not fit in float32"),
    ]:
        for call in (f, f.interpret):
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # (no numpy overflow warning either)
                with pytest.raises(relay.TypeCheckError) as info:
                    call(F3, k)
            assert info.value.message == f"argument 1 of scale (%k): {why}"


def test_floats_are_rounded_to_the_parameter_dtype():
    f = relay.function(scale)
    for call in (f, f.interpret):
        assert call(F3, 0.1).tolist() == (F3 * np.float32(0.1) + 1).tolist()
        assert np.isnan(call(F3, float("nan"))).all()
        assert call(F3, float("-inf")).tolist() == [-np.inf] * 3
        # a numpy float64 is strongly typed: taken when float32 holds it exactly
        assert call(F3, np.float64(0.5)).tolist() == [1.5, 2.0, 2.5]
        assert np.isnan(call(F3, np.float64("nan"))).all()
    assert np.isnan(two(1.0, float("nan")))  # (unannotated: b is float32)


def caller(x):
    return two(x)


def tuple_add(x):
    return (x,) + (x,)  # noqa: RUF005 - unsupported on purpose


def test_messages_for_unsupported_uses():
    with pytest.raises(relay.FrontendError, match="two takes 2 arguments, got 1"):
        relay.function(caller)
    with pytest.raises(relay.FrontendError, match="tuple arithmetic"):
        relay.function(tuple_add)
    with pytest.raises(relay.FrontendError) as info:
        relay.function(loop_local)
    assert info.value.message.startswith("y is assigned only inside the loop at line")


def splices(x: Tensor[float32, (3,)], pair: tuple[Tensor[float32, (3,)], Tensor[float32, (3,)]]):
    local = (x + 1.0, x * 2.0)
    return (*local, *pair, *[x - 1.0], *(), 4.0)


def test_starred_items_splice_tuples_of_known_length():
    p = (F3 * 10, F3 * 100)
    out = relay.function(splices)(F3, p)
    expected = (F3 + 1, F3 * 2, p[0], p[1], F3 - 1, np.float32(4.0))
    assert len(out) == len(expected)
    for got, want in zip(out, expected, strict=True):
        np.testing.assert_array_equal(got, want)
