"""Programs the VM tests share: a loop and a recursion over a list."""

LOOP = """
def @main(%n: int32, %x: Tensor[(4,), float32]) -> Tensor[(4,), float32] {
  let %loop = fn (%i: int32, %acc: Tensor[(4,), float32]) -> Tensor[(4,), float32] {
    if (%i < %n) { %loop(%i + 1, %acc * 2f) } else { %acc }
  };
  %loop(0, %x)
}"""

TOTAL = """
def @total(%l: List[Tensor[(3,), float32]], %z: Tensor[(3,), float32]) -> Tensor[(3,), float32] {
  match (%l) {
    Cons(%h, %t) => add(%h, @total(%t, %z)),
    Nil => %z,
  }
}
def @main(%l: List[Tensor[(3,), float32]], %z: Tensor[(3,), float32]) -> Tensor[(3,), float32] {
  @total(%l, %z)
}"""
"""The sum of a list of vectors, by non-tail recursion (needs the prelude)."""
