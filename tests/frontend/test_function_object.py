"""The RelayFunction object: specialisation and caching, the module and its text, methods
defined in classes, weakly typed literals, closures over changing variables."""

from __future__ import annotations

import numpy as np

import relay
from relay import Tensor, float32


def scale(x, k):
    y = x * 2
    return y + k


def test_unannotated_parameters_are_specialised_per_signature():
    f = relay.function(scale)
    a = f(np.ones((2,), np.float32), 1.5)
    b = f(np.ones((3, 2), np.float32), 1.5)
    c = f(np.ones((2,), np.float32), 4.0)  # same signature as the first call: cached
    np.testing.assert_array_equal(a, [3.5, 3.5])
    assert b.shape == (3, 2) and c.tolist() == [6.0, 6.0]
    assert len(f._compiled) == 2
    assert str(f.checked_type) == "fn (Tensor[(2,), float32], float32) -> Tensor[(2,), float32]"
    assert f.astext() == (
        '#[version = "0.0.5"]\n'
        "def @scale(%x: Tensor[(2,), float32], %k: float32) {\n"
        "  let %y = multiply(%x, 2f);\n"
        "  add(%y, %k)\n"
        "}\n"
    )
    assert f.astext() == str(f)


def test_specialize_types_the_function_without_running_it():
    f = relay.function(scale)
    x = np.ones((4,), np.float32)
    assert f.specialize(x, 0.5) is f and len(f._compiled) == 1
    assert str(f.checked_type) == "fn (Tensor[(4,), float32], float32) -> Tensor[(4,), float32]"
    exe = relay.build(f)  # the specialization, built without a call
    np.testing.assert_array_equal(exe(x, np.float32(0.5)), [2.5] * 4)
    from relay.backend.device import Device, device_put

    d = device_put(np.ones((2, 3), np.float32), Device("cpu"))  # device arrays type alike
    f.specialize(d, 1.0)
    assert str(f.checked_type).startswith("fn (Tensor[(2, 3), float32], float32)")


def test_integer_arguments_keep_integer_literals():
    f = relay.function(scale)
    assert f(np.arange(3, dtype=np.int32), 1).tolist() == [1, 3, 5]
    assert "multiply(%x, 2)" in str(f)


class Model:
    @relay
    def forward(x: Tensor[float32, (2, 2)]) -> Tensor[float32, (2, 2)]:
        h = x @ x
        return h - 1


def test_a_function_defined_in_a_class():
    x = np.eye(2, dtype=np.float32) * 3
    np.testing.assert_array_equal(Model.forward(x), x @ x - 1)
    assert str(Model.forward.checked_type) == (
        "fn (Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32]"
    )


def weak_in_lambda(x):
    double = lambda v: v * 2  # noqa: E731
    return double(x) + 0.5


def test_literals_in_closures_take_the_dtype_they_meet():
    f = relay.function(weak_in_lambda)
    np.testing.assert_array_equal(f(np.float32([1, 2])), [2.5, 4.5])
    text = str(f)
    assert "cast_like" not in text and "multiply(%v, 2f)" in text


def late_binding(n):
    k = 0
    total = 0
    for _ in range(n):
        k = k + 1
    g = lambda: k * 10  # noqa: E731
    k = k + 1
    return g() + total


def test_closures_see_later_assignments():
    f = relay.function(late_binding)
    assert int(f(3)) == late_binding(3) == 40


def symbolic(x: Tensor[float32, ("n", 3)]):  # noqa: F821, UP037
    total = np.zeros(3, dtype=np.float32)
    for i in range(x.shape[0]):
        total = total + x[i]
    return total, x.shape[0]


def test_symbolic_dimensions_read_at_run_time():
    f = relay.function(symbolic)
    assert str(f.checked_type) == (
        "fn [n: Shape](Tensor[(n, 3), float32]) -> (Tensor[(3,), float32], int32)"
    )
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    total, n = f(x)
    np.testing.assert_array_equal(total, x.sum(axis=0))
    assert int(n) == 4


def test_module_holds_the_prelude_and_the_function():
    @relay
    def g(x: Tensor[float32, (2,)]) -> Tensor[float32, (2,)]:
        return -x

    assert g.global_var.name_hint == "g"
    assert g.module.get_global_var("map") is not None  # the prelude is there
    np.testing.assert_array_equal(g.interpret(np.float32([1, -2])), [-1, 2])
    np.testing.assert_array_equal(
        relay.interpret(g.module[g.global_var], np.float32([3, 4]), mod=g.module), [-3, -4]
    )
