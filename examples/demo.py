"""The relay demo: a Python function compiled with @relay, and a program in the Relay text
format, printed back and run.

It grows with the project: today it shows the decorator, type inference, the text format,
the prelude and the reference interpreter; later it will differentiate and compile.
"""

from __future__ import annotations

import numpy as np

import relay
from relay import Tensor, float32
from relay.backend.interpreter import to_python_list


@relay
def softmax_regression(
    x: Tensor[float32, ("n", 4)],  # noqa: F821, UP037 - "n" is a shape variable
    w: Tensor[float32, (4, 4)],
    steps: int,
) -> Tensor[float32, (4, 4)]:
    """A few steps of gradient descent on a softmax classifier of the points ``x`` whose
    labels are their quadrant, written as ordinary numpy code."""
    labels = (x[:, 0] > 0).astype(np.int32) + 2 * (x[:, 1] > 0).astype(np.int32)
    onehot = (np.expand_dims(labels, 1) == np.arange(4)).astype(np.float32)
    for _ in range(steps):
        logits = x @ w
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        w = w - 0.5 * (x.T @ (p - onehot)) / x.shape[0]
    return w


SOURCE = """
#[version = "0.0.5"]

// A polynomial with coefficients in a list, evaluated by Horner's rule with the prelude's foldl.
def @horner(%coeffs: List[float32], %x: Tensor[(n), float32]) -> Tensor[(n), float32] {
  @foldl(fn (%acc: Tensor[(n), float32], %c: float32) { %acc * %x + %c }, %x * 0f, %coeffs)
}

// A counter kept in a reference cell, bumped by a closure passed to @map.
def @count_calls(%xs: List[float32]) -> (List[float32], int32) {
  let %calls = ref(0);
  let %twice = fn (%v: float32) {
    let %_ = ref_write(%calls, ref_read(%calls) + 1);
    %v * 2f
  };
  let %ys = @map(%twice, %xs);
  (%ys, ref_read(%calls))
}

def @main(%x: Tensor[(4), float32]) {
  let %cs = Cons(1f, Cons(-2f, Cons(0.5f, Nil)));       // 1 x^2 - 2 x + 0.5
  let %counted = @count_calls(%cs);
  (@horner(%cs, %x), @length(%cs), %counted.0, %counted.1, @rev(%cs))
}
"""


def main() -> None:
    """Run the decorated function; parse, print and interpret the text program."""
    print(softmax_regression.checked_type)
    rng = np.random.default_rng(0)
    points = rng.standard_normal((32, 4)).astype("float32")
    w0 = np.zeros((4, 4), dtype="float32")
    w = softmax_regression(points, w0, 20)
    w_numpy = softmax_regression.__wrapped__(points, w0, 20)
    print("trained weights agree with numpy:", bool(np.allclose(w, w_numpy, atol=1e-5)))
    assert np.allclose(w, w_numpy, atol=1e-5)
    print()

    mod = relay.parse(SOURCE, "demo.rly", module=relay.prelude())
    ours = relay.Module(
        {mod.get_global_var(n): mod.function(n) for n in ("horner", "count_calls", "main")}
    )
    print(relay.astext(ours))

    x = np.array([0.0, 1.0, 2.0, 3.0], dtype="float32")
    poly, length, doubled, calls, reversed_ = relay.interpret(mod, x)
    print("x                 =", x)
    print("x^2 - 2x + 0.5    =", poly, "(numpy:", np.polyval([1.0, -2.0, 0.5], x), ")")
    print("length            =", int(length))
    print(
        "map (* 2)         =",
        [float(v) for v in to_python_list(doubled)],
        "in",
        int(calls),
        "calls",
    )
    print("rev               =", [float(v) for v in to_python_list(reversed_)])
    assert np.allclose(poly, np.polyval([1.0, -2.0, 0.5], x))


if __name__ == "__main__":
    main()
