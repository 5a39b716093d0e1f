"""A tour of relay's foundation, from scratch, in one runnable file.

Run it with ``.venv/bin/python docs/tour.py``; the test suite runs it too
(tests/test_docs.py), so every statement here is checked.

1. Build a program by hand from IR nodes.
2. Print it in the Relay text format, parse it back, compare structurally.
3. Write a pass as an ExprMutator.
4. Run programs on the reference interpreter, with the prelude.
"""

from __future__ import annotations

import numpy as np

import relay
from relay.ir import Call, Constant, Function, Let, Op, TensorType, Var, const
from relay.ir.functor import ExprMutator

# -- 1. Nodes ----------------------------------------------------------------------------------------
# Variables are identities with a name hint and an optional type annotation. Operators are
# looked up in the registry, which holds each operator's attributes and numpy semantics.
vec = TensorType((3,), "float32")
x = Var("x", vec)
y = Var("y", vec)
add, mul = Op.get("add"), Op.get("multiply")
s = Var("s")
f = Function((x, y), Let(s, Call(add, (x, y)), Call(mul, (s, Call(add, (const(1.0), const(1.0)))))))

# -- 2. Text ---------------------------------------------------------------------------------------
# str() is the text format; non-atomic arguments are bound to temporaries (graph form).
text = str(f)
print(text)
assert text == (
    "fn (%x: Tensor[(3,), float32], %y: Tensor[(3,), float32]) {\n"
    "  let %s = add(%x, %y);\n"
    "  %0 = add(1f, 1f);\n"
    "  multiply(%s, %0)\n"
    "}"
)
# Parsing gives new nodes (new variables); structural equality is alpha-equivalence.
g = relay.parse_expr(text)
assert g is not f and relay.structural_equal(f, g)
assert relay.structural_hash(f) == relay.structural_hash(g)
# Infix operators and literal suffixes are accepted on input.
h = relay.parse_expr("fn (%a: Tensor[(3,), float32], %b: Tensor[(3,), float32]) { %a * 2f + %b }")
print(h)


# -- 3. A pass ---------------------------------------------------------------------------------------
# Mutators rebuild only what changed and return the same node otherwise. This one folds
# operator calls whose arguments are all constants, using the operators' numpy references.
class FoldConstants(ExprMutator):
    """Evaluate calls of operators on constants at compile time."""

    def visit_call(self, call: Call) -> relay.ir.Expr:
        new = super().visit_call(call)
        assert isinstance(new, Call)
        if isinstance(new.op, Op) and all(isinstance(a, Constant) for a in new.args):
            reference = new.op.definition.reference
            assert reference is not None
            return Constant(reference(*(a.data for a in new.args if isinstance(a, Constant))))
        return new


folded = FoldConstants().visit(f)
print(folded)
assert "multiply(%s, 2f)" in str(folded)
assert FoldConstants().visit(folded) is folded  # already folded: nothing changes
assert FoldConstants().visit(x) is x  # nothing to change: the same node comes back

# -- 4. Running ----------------------------------------------------------------------------------------
a = np.array([1.0, 2.0, 3.0], dtype="float32")
b = np.array([10.0, 20.0, 30.0], dtype="float32")
out = relay.interpret(f, a, b)
assert np.array_equal(out, (a + b) * 2)
assert np.array_equal(relay.interpret(folded, a, b), out)

# The prelude is a module written in the text format: lists, options, rose trees.
mod = relay.parse(
    """
    def @main(%n: int32) -> int32 {
      let %xs = @iterate(fn (%l: List[int32]) { Cons(@length(%l), %l) }, %n)(Nil);
      @foldl(fn (%acc: int32, %v: int32) { %acc + %v }, 0, %xs)
    }
    """,
    module=relay.prelude(),
)
total = relay.interpret(mod, np.int32(5))
print("0 + 1 + 2 + 3 + 4 =", total)
assert int(total) == 10

# Errors point at the source.
try:
    relay.parse_expr("fn (%a) { %a + %b }", "tour.rly")
except relay.ParseError as err:
    print(err)
    assert str(err).splitlines()[0] == "tour.rly:1:16: unknown variable %b"
