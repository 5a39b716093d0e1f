"""The relay demo: parse a program in the Relay text format, print it back, and run it.

It grows with the project: today it shows the text format, the prelude and the
reference interpreter; later it will type-check, differentiate and compile.
"""

from __future__ import annotations

import numpy as np

import relay
from relay.backend.interpreter import to_python_list

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
    """Parse, print and interpret the demo program."""
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
