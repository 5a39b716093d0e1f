"""Errors at decoration time (unsupported Python, type errors at the Python line) and at
call time (wrong arguments)."""

from __future__ import annotations

import numpy as np
import pytest

import relay
from relay import Tensor, float32

HERE = __file__


def error_of(fn, kind=relay.FrontendError):
    with pytest.raises(kind) as info:
        relay.function(fn)
    return info.value


def line_of(text: str) -> int:
    """The line of this file containing ``text`` (once)."""
    with open(HERE) as fh:
        lines = fh.read().splitlines()
    found = [
        i + 1
        for i, line in enumerate(lines)
        if line.rstrip().endswith(text) and '"' + text not in line
    ]
    assert len(found) == 1, (text, found)
    return found[0]


def test_with_statement():
    def f(x: Tensor[float32, (3,)]):
        with open("x"):  # MARK-with
            return x

    err = error_of(f)
    line = line_of("# MARK-with")
    assert err.message == "unsupported Python construct: 'with' statement"
    assert (err.span.source, err.span.line, err.span.column) == (HERE, line, 9)
    text = str(err).splitlines()
    assert text[0] == f"{HERE}:{line}:9: unsupported Python construct: 'with' statement"
    assert text[1] == '        with open("x"):  # MARK-with'
    assert text[2] == "        " + "^" * len('with open("x"):  # MARK-with')
    assert text[-1] == "move the context manager outside the @relay function"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("try_stmt", "unsupported Python construct: 'try' statement"),
        ("list_comp", "unsupported Python construct: list comprehension"),
        ("while_else", "unsupported Python construct: 'else' on a loop"),
        (
            "for_list",
            "unsupported Python construct: a for loop over something other than range(...)",
        ),
        ("setitem", "unsupported Python construct: assignment to an element or attribute"),
        ("star_args", "unsupported Python construct: *args and **kwargs parameters"),
        ("defaults", "unsupported Python construct: default parameter values"),
        ("global_stmt", "unsupported Python construct: 'global' statement"),
    ],
)
def test_unsupported_constructs(source, message):
    err = error_of(UNSUPPORTED[source])
    assert err.message == message
    assert err.span is not None and err.span.source == HERE


def _try_stmt(x: Tensor[float32, (3,)]):
    try:
        return x
    except ValueError:
        return x


def _list_comp(x: Tensor[float32, (3,)]):
    return [x for _ in range(3)]


def _while_else(x: Tensor[float32, (3,)]):
    while x.sum() > 0:
        x = x - 1
    else:
        x = x + 1
    return x


def _for_list(x: Tensor[float32, (3,)]):
    for v in [1, 2]:
        x = x + v
    return x


def _setitem(x: Tensor[float32, (3,)]):
    x[0] = 1.0
    return x


def _star_args(*xs):
    return xs


def _defaults(x: Tensor[float32, (3,)], y: float = 1.0):
    return x * y


COUNTER = 0


def _global_stmt(x: Tensor[float32, (3,)]):
    global COUNTER
    return x


UNSUPPORTED = {
    "try_stmt": _try_stmt,
    "list_comp": _list_comp,
    "while_else": _while_else,
    "for_list": _for_list,
    "setitem": _setitem,
    "star_args": _star_args,
    "defaults": _defaults,
    "global_stmt": _global_stmt,
}


def test_type_errors_point_at_the_python_expression():
    def f(x: Tensor[float32, (3, 4)], w: Tensor[float32, (5, 2)]):
        h = np.tanh(x)
        return h @ w  # MARK-matmul

    err = error_of(f, relay.TypeCheckError)
    line = line_of("# MARK-matmul")
    assert err.message == (
        "nn.matmul: tensor_a Tensor[(3, 4), float32] and tensor_b Tensor[(5, 2), float32] "
        "have inner dimensions 4 and 5"
    )
    assert (err.span.line, err.span.column) == (line, 16)
    assert str(err).splitlines()[1:] == [
        "        return h @ w  # MARK-matmul",
        "               ^^^^^",
    ]


def test_every_independent_error_is_reported():
    def f(x: Tensor[float32, (3,)], y: Tensor[float32, (4,)]):
        a = x + y  # MARK-first
        b = x.reshape(2, 2)  # MARK-second
        return a, b

    err = error_of(f, relay.TypeCheckError)
    lines = [(e.span.line, e.message) for e in err.errors]
    assert lines == [
        (
            line_of("# MARK-first"),
            "broadcast: incompatible dimensions 3 and 4 in Tensor[(3,), float32] and Tensor[(4,), float32]",
        ),
        (
            line_of("# MARK-second"),
            "reshape: cannot reshape Tensor[(3,), float32] (3 elements) to (2, 2) (4 elements)",
        ),
    ]


def test_calling_a_plain_python_function():
    def helper(v):
        return v

    def f(x: Tensor[float32, (3,)]):
        return helper(x)

    err = error_of(f)
    assert (
        err.message
        == "cannot call the Python function test_calling_a_plain_python_function.<locals>.helper from a @relay function"
    )
    assert err.notes == ("decorate it with @relay too, or use a numpy / relay.op operator",)


def test_an_undefined_name_is_reported_at_the_first_call():
    def f(x: Tensor[float32, (3,)]):
        return not_defined_anywhere(x)  # noqa: F821

    rf = relay.function(f)  # may be defined later in the file: no error yet
    with pytest.raises(relay.FrontendError) as info:
        rf(np.ones(3, np.float32))
    assert info.value.message == "name not_defined_anywhere is not defined"


def test_grad_of_a_function_returning_a_tuple():
    @relay
    def f(x: Tensor[float32, (3,)], c: bool):
        if c:
            return x * x, x
        return x, x

    with pytest.raises(relay.CompileError) as info:
        relay.grad(f)(np.ones(3, "float32"), True)
    assert info.value.message == (
        "gradient: the function must return a floating-point tensor, got "
        "(Tensor[(3,), float32], Tensor[(3,), float32])"
    )


def test_lambda_cannot_be_decorated():
    with pytest.raises(relay.FrontendError, match="cannot read the source of a lambda"):
        relay.function(lambda x: x)


def test_splicing_a_tensor():
    def f(x: Tensor[float32, (3,)]):
        return (*x, 1.0)  # MARK-splice

    err = error_of(f)
    assert err.message == (
        "cannot splice *x: only a tuple whose length is known statically can be spliced"
    )
    assert (err.span.line, err.span.column) == (line_of("# MARK-splice"), 17)
