"""The prelude (relay/std/prelude.rly): it parses, prints and re-parses to an equal module, every
definition is fully annotated, and every function computes what its Python counterpart computes
under the reference interpreter (hypothesis for the list functions, hand-picked cases for the
rest), including on a 100,000-element list.

Two ways in: whole Relay text programs (the prelude's text followed by a ``@main``) run with
``relay.interpret``; and, for the hypothesis tests, one parsed module of the prelude plus a few
helper functions whose globals are called directly with values built in Python.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, strategies as st

import relay
from relay.backend.interpreter import (
    ConstructorValue,
    Interpreter,
    from_python_list,
    to_python_list,
    to_value,
)
from relay.ir.expr import Call, Constructor, Expr, Function, Op, Var, children, const
from relay.ir.module import Module
from relay.ir.types import TensorType
from relay.std import PRELUDE_SOURCE, prelude, prelude_text

TYPES = {"List": ["Cons", "Nil"], "Option": ["Some", "None"], "Tree": ["Rose"]}
FUNCTIONS = [
    "id",
    "compose",
    "flip",
    "iterate",
    "hd",
    "tl",
    "nth",
    "update",
    "length",
    "take",
    "drop",
    "map",
    "foldl",
    "foldr",
    "foldr1",
    "concat",
    "filter",
    "zip",
    "rev",
    "map_accuml",
    "map_accumr",
    "unfoldr",
    "unfoldl",
    "sum",
    "all",
    "any",
    "size",
    "tmap",
    "tensor_array",
    "tensor_array_length",
    "tensor_array_read",
    "tensor_array_write",
    "tensor_array_concat",
    "tensor_array_take",
    "tensor_array_gather",
    "tensor_array_scatter",
]

# Helper functions for the hypothesis tests, appended to the prelude's text.
HELPERS = """
def @inc(%x: int32) -> int32 {
  %x + 1
}

def @affine(%x: int32) -> int32 {
  %x * 3 - 7
}

def @positive(%x: int32) -> bool {
  %x > 0
}

def @sub(%x: int32, %y: int32) -> int32 {
  %x - %y
}

def @push(%acc: List[int32], %x: int32) -> List[int32] {
  Cons(%x, %acc)
}

def @twice_minus(%acc: int32, %x: int32) -> int32 {
  %acc * 2 - %x
}

def @minus_twice(%x: int32, %acc: int32) -> int32 {
  %x - %acc * 2
}

def @running(%acc: int32, %x: int32) -> (int32, int32) {
  (%acc + %x, %acc * %x)
}

def @countdown(%n: int32) -> Option[(int32, int32)] {
  if (%n > 0) {
    Some((%n - 1, %n * %n))
  } else {
    None
  }
}
"""

SMALL_INTS = st.integers(min_value=-100, max_value=100)
INT_LISTS = st.lists(SMALL_INTS, max_size=12)


# -- helpers -------------------------------------------------------------------------------------


@functools.cache
def helper_module() -> Module:
    """The prelude with HELPERS, parsed once (the tests only read it)."""
    return relay.parse(prelude_text() + HELPERS, "prelude+helpers")


@functools.cache
def interp() -> Interpreter:
    return Interpreter(helper_module())


def call(name: str, *args: object) -> Any:
    """Call global ``@name`` of the helper module on ``args`` (globals named by ``"@f"``)."""
    machine = interp()
    values = [machine.global_closure(a[1:]) if isinstance(a, str) else a for a in args]
    return machine.call(machine.global_closure(name), values)


def rlist(items: Sequence[object], mod: Module | None = None) -> ConstructorValue:
    """A Relay list value of ``items``."""
    return from_python_list(helper_module() if mod is None else mod, items)


def py(value: Any) -> Any:
    """A Relay value as plain Python: scalars via ``.item()``, arrays kept, lists as lists,
    ``Some(x)`` as ``("Some", x)``, ``None`` as None, ``Rose(v, cs)`` as ``(v, [cs...])``."""
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else value
    if isinstance(value, tuple):
        return tuple(py(v) for v in value)
    if isinstance(value, ConstructorValue):
        if value.name in ("Cons", "Nil"):
            return [py(v) for v in to_python_list(value)]
        if value.name == "Some":
            return ("Some", py(value.fields[0]))
        if value.name == "None":
            return None
        if value.name == "Rose":
            return (py(value.fields[0]), py(value.fields[1]))
    raise AssertionError(f"unexpected value {value!r}")


def run(main: str, *args: object, compiled: bool = True) -> Any:
    """Parse the prelude followed by ``main`` (a ``def @main``), interpret it, return
    ``py(result)``; the compiled program (the VM) must give the same value (unless not
    ``compiled``: a program whose types are ambiguous runs on the interpreter only)."""
    mod = relay.parse(prelude_text() + "\n" + main)
    result = py(relay.interpret(mod, *args))
    if not compiled:
        return result
    compiled_result = py(relay.build(mod)(*args))
    assert _same(compiled_result, result), (compiled_result, result)
    return result


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def rtext(items: Sequence[int]) -> str:
    """The Relay text of a list of int32 literals."""
    text = "Nil"
    for x in reversed(items):
        text = f"Cons({x}, {text})"
    return text


def definition_line(name: str, needle: str) -> int:
    """The 1-based line of the first ``needle`` after ``def @name`` in the prelude's text."""
    lines = prelude_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def @{name}["))
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


# -- the module ----------------------------------------------------------------------------------


def test_prelude_defines_its_types_and_functions() -> None:
    mod = prelude()
    assert {
        gtv.name_hint: [c.name_hint for c in data.constructors]
        for gtv, data in mod.type_definitions.items()
    } == TYPES
    assert sorted(gv.name_hint for gv in mod.functions) == sorted(FUNCTIONS)


def test_prelude_is_fresh_on_each_call() -> None:
    a, b = prelude(), prelude()
    assert a is not b
    assert not set(a.functions) & set(b.functions)
    assert not {id(f) for f in a.functions.values()} & {id(f) for f in b.functions.values()}
    assert a.get_constructor("Cons") is not b.get_constructor("Cons")
    a.remove("map")
    assert "map" not in a and "map" in b
    assert prelude_text() is prelude_text()


def test_prelude_nodes_carry_spans_in_the_prelude_source() -> None:
    span = prelude().function("length").span
    assert span is not None
    assert span.source == PRELUDE_SOURCE
    assert span.line == definition_line("length", "def @length")


def test_import_prelude_adds_everything() -> None:
    mod = Module()
    mod.import_prelude()
    assert sorted(gv.name_hint for gv in mod.functions) == sorted(FUNCTIONS)
    assert {gtv.name_hint for gtv in mod.type_definitions} == set(TYPES)


def test_printing_the_prelude_is_a_fixed_point() -> None:
    text = relay.astext(prelude())
    assert text.startswith('#[version = "0.0.5"]\ntype List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n')
    assert relay.astext(relay.parse(text)) == text


def test_prelude_round_trips_through_the_printer() -> None:
    mod = prelude()
    reparsed = relay.parse(relay.astext(mod))
    relay.assert_structural_equal(reparsed, mod)
    assert relay.structural_equal(reparsed, mod)
    assert relay.structural_hash(reparsed) == relay.structural_hash(mod)


def test_every_function_is_fully_annotated() -> None:
    mod = prelude()
    for gv, func in mod.functions.items():
        stack: list[Expr] = [func]
        while stack:
            expr = stack.pop()
            if isinstance(expr, Function):
                for param in expr.params:
                    assert param.type_annotation is not None, (gv.name_hint, param.name_hint)
                assert expr.ret_type is not None, gv.name_hint
            stack.extend(children(expr))


def test_integer_positions_are_int32_scalars() -> None:
    nth = prelude().function("nth")
    assert nth.params[1].type_annotation == TensorType((), "int32")
    assert nth.ret_type == nth.type_params[0]


def test_docs_describe_every_definition() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "prelude.md").read_text()
    for name in FUNCTIONS:
        assert f"`@{name}`" in docs, name
    for name, constructors in TYPES.items():
        assert f"`{name}[A]`" in docs, name
        for c in constructors:
            assert c in docs, c


def test_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "prelude.md").read_text()
    blocks = [b.split("```", 1)[0] for b in docs.split("```python\n")[1:]]
    example = next(b for b in blocks if "relay.interpret" in b)
    exec(compile(example, "docs/prelude.md", "exec"), {})
    assert capsys.readouterr().out == "14.0\n"


def test_parse_time_is_modest() -> None:
    prelude()
    start = time.perf_counter()
    for _ in range(5):
        prelude()
    assert (time.perf_counter() - start) / 5 < 0.5


# -- functions on functions ----------------------------------------------------------------------


def test_id() -> None:
    assert run("def @main() -> (int32, float32) { @id((3, 2.5f)) }") == (3, 2.5)


def test_compose() -> None:
    main = """
def @main(%x: int32) -> int32 {
  let %inc = fn (%a: int32) -> int32 { %a + 1 };
  let %double = fn (%a: int32) -> int32 { %a * 2 };
  @compose(%inc, %double)(%x)
}
"""
    assert run(main, 5) == 11


def test_flip() -> None:
    main = """
def @main() -> int32 {
  let %sub = fn (%a: int32, %b: int32) -> int32 { %a - %b };
  @flip(%sub)(1, 10)
}
"""
    assert run(main) == 9


def test_iterate() -> None:
    main = """
def @main(%n: int32) -> float32 {
  @iterate(fn (%x: float32) -> float32 { %x * 2f }, %n)(1.5f)
}
"""
    assert run(main, 4) == 24.0


@given(n=st.integers(min_value=-3, max_value=40), x=SMALL_INTS)
def test_iterate_applies_n_times(n: int, x: int) -> None:
    assert py(interp().call(call("iterate", "@inc", n), [x])) == x + max(n, 0)


# -- list access ---------------------------------------------------------------------------------


def test_hd_tl() -> None:
    assert run(f"def @main() -> int32 {{ @hd({rtext([5, 6, 7])}) }}") == 5
    assert run(f"def @main() -> List[int32] {{ @tl({rtext([5, 6, 7])}) }}") == [6, 7]


def test_hd_of_nil_fails_at_the_partial_match() -> None:
    mod = Module()
    mod.import_prelude()
    mod["main"] = Function((), Call(mod.get_global_var("hd"), (Call(mod.get_constructor("Nil")),)))
    with pytest.raises(relay.ExecutionError) as info:
        relay.interpret(mod)
    line = definition_line("hd", "match?")
    span = info.value.span
    assert span is not None
    assert (span.source, span.line, span.column) == (PRELUDE_SOURCE, line, 3)
    assert str(info.value).splitlines()[:3] == [
        f"{PRELUDE_SOURCE}:{line}:3: no clause of the match matched the value Nil",
        "  match? (%xs) {",
        "  " + "^" * len("match? (%xs) {"),
    ]


def test_tl_of_nil_fails() -> None:
    with pytest.raises(relay.ExecutionError, match="no clause of the match matched the value Nil"):
        call("tl", rlist([]))


def test_nth_and_update_text() -> None:
    xs = rtext([5, 6, 7])
    assert run(f"def @main(%i: int32) -> int32 {{ @nth({xs}, %i) }}", 2) == 7
    assert run(f"def @main() -> List[int32] {{ @update({xs}, 1, 0) }}") == [5, 0, 7]


@given(xs=INT_LISTS, data=st.data())
def test_nth_update(xs: list[int], data: st.DataObject) -> None:
    if xs:
        i = data.draw(st.integers(0, len(xs) - 1))
        v = data.draw(SMALL_INTS)
        assert py(call("nth", rlist(xs), i)) == xs[i]
        assert py(call("update", rlist(xs), i, v)) == [*xs[:i], v, *xs[i + 1 :]]
    with pytest.raises(relay.ExecutionError):
        call("nth", rlist(xs), len(xs))
    with pytest.raises(relay.ExecutionError):
        call("update", rlist(xs), len(xs), 0)


def test_length_text() -> None:
    assert run(f"def @main() -> int32 {{ @length({rtext([1, 2, 3, 4])}) }}") == 4
    # Nil's element type is left open: relay.build's type checker rejects it
    assert run("def @main() -> int32 { @length(Nil) }", compiled=False) == 0


@given(xs=INT_LISTS)
def test_length(xs: list[int]) -> None:
    result = call("length", rlist(xs))
    assert result.dtype == np.int32 and result.shape == ()
    assert py(result) == len(xs)


def test_take_drop_text() -> None:
    xs = rtext([5, 6, 7])
    assert run(f"def @main() -> List[int32] {{ @take({xs}, 2) }}") == [5, 6]
    assert run(f"def @main() -> List[int32] {{ @drop({xs}, 2) }}") == [7]


@given(xs=INT_LISTS, n=st.integers(min_value=-2, max_value=15))
def test_take_drop(xs: list[int], n: int) -> None:
    assert py(call("take", rlist(xs), n)) == xs[: max(n, 0)]
    assert py(call("drop", rlist(xs), n)) == xs[max(n, 0) :]


# -- transformations and folds -------------------------------------------------------------------


def test_map_text() -> None:
    main = f"""
def @main() -> List[float32] {{
  @map(fn (%x: int32) -> float32 {{ if (%x > 1) {{ 1f }} else {{ 0.5f }} }}, {rtext([1, 2, 3])})
}}
"""
    assert run(main) == [0.5, 1.0, 1.0]


@given(xs=INT_LISTS)
def test_map(xs: list[int]) -> None:
    assert py(call("map", "@affine", rlist(xs))) == [x * 3 - 7 for x in xs]


def test_foldl_foldr_text() -> None:
    xs = rtext([1, 2])
    sub = "fn (%a: int32, %b: int32) -> int32 { %a - %b }"
    assert run(f"def @main() -> int32 {{ @foldl({sub}, 10, {xs}) }}") == 7
    assert run(f"def @main() -> int32 {{ @foldr({sub}, 10, {xs}) }}") == 9
    assert run(f"def @main() -> int32 {{ @foldr1({sub}, {rtext([1, 2, 3])}) }}") == 2


@given(xs=INT_LISTS, z=SMALL_INTS)
def test_foldl(xs: list[int], z: int) -> None:
    assert py(call("foldl", "@twice_minus", z, rlist(xs))) == functools.reduce(
        lambda acc, x: acc * 2 - x, xs, z
    )
    assert py(call("foldl", "@push", rlist([z]), rlist(xs))) == [*reversed(xs), z]


@given(xs=INT_LISTS, z=SMALL_INTS)
def test_foldr(xs: list[int], z: int) -> None:
    assert py(call("foldr", "@minus_twice", z, rlist(xs))) == functools.reduce(
        lambda acc, x: x - acc * 2, reversed(xs), z
    )


@given(xs=INT_LISTS.filter(bool))
def test_foldr1(xs: list[int]) -> None:
    expected = functools.reduce(lambda acc, x: x - acc, reversed(xs[:-1]), xs[-1])
    assert py(call("foldr1", "@sub", rlist(xs))) == expected


def test_foldr1_of_nil_fails() -> None:
    with pytest.raises(relay.ExecutionError, match="matched the value Nil"):
        call("foldr1", "@sub", rlist([]))


def test_concat_filter_zip_rev_text() -> None:
    assert run(f"def @main() -> List[int32] {{ @concat({rtext([1])}, {rtext([2, 3])}) }}") == [
        1,
        2,
        3,
    ]
    keep_odd = "fn (%x: int32) -> bool { %x != 2 }"
    assert run(f"def @main() -> List[int32] {{ @filter({keep_odd}, {rtext([1, 2, 3])}) }}") == [
        1,
        3,
    ]
    zipped = run(
        "def @main() -> List[(int32, bool)] { @zip(Cons(1, Cons(2, Nil)), Cons(True, Nil)) }"
    )
    assert zipped == [(1, True)]
    assert run(f"def @main() -> List[int32] {{ @rev({rtext([1, 2, 3])}) }}") == [3, 2, 1]


@given(xs=INT_LISTS, ys=INT_LISTS)
def test_concat(xs: list[int], ys: list[int]) -> None:
    assert py(call("concat", rlist(xs), rlist(ys))) == xs + ys


@given(xs=INT_LISTS)
def test_filter(xs: list[int]) -> None:
    assert py(call("filter", "@positive", rlist(xs))) == [x for x in xs if x > 0]


@given(xs=INT_LISTS, ys=st.lists(st.booleans(), max_size=12))
def test_zip(xs: list[int], ys: list[bool]) -> None:
    assert py(call("zip", rlist(xs), rlist(ys))) == list(zip(xs, ys, strict=False))


@given(xs=INT_LISTS)
def test_rev(xs: list[int]) -> None:
    assert py(call("rev", rlist(xs))) == xs[::-1]


def py_map_accuml(
    f: Callable[[int, int], tuple[int, int]], acc: int, xs: list[int]
) -> tuple[int, list[int]]:
    out = []
    for x in xs:
        acc, y = f(acc, x)
        out.append(y)
    return acc, out


def running(acc: int, x: int) -> tuple[int, int]:
    return acc + x, acc * x


@given(xs=INT_LISTS, z=SMALL_INTS)
def test_map_accuml(xs: list[int], z: int) -> None:
    assert py(call("map_accuml", "@running", z, rlist(xs))) == py_map_accuml(running, z, xs)


@given(xs=INT_LISTS, z=SMALL_INTS)
def test_map_accumr(xs: list[int], z: int) -> None:
    acc, out = py_map_accuml(running, z, xs[::-1])
    assert py(call("map_accumr", "@running", z, rlist(xs))) == (acc, out[::-1])


def test_map_accum_text() -> None:
    step = "fn (%a: int32, %x: int32) -> (int32, int32) { (%a + %x, %a + %x) }"
    xs = rtext([1, 2, 3])
    ty = "(int32, List[int32])"
    assert run(f"def @main() -> {ty} {{ @map_accuml({step}, 0, {xs}) }}") == (6, [1, 3, 6])
    assert run(f"def @main() -> {ty} {{ @map_accumr({step}, 0, {xs}) }}") == (6, [6, 5, 3])


def test_unfold_text() -> None:
    down = """fn (%n: int32) -> Option[(int32, int32)] {
    if (%n > 0) { Some((%n - 1, %n)) } else { None }
  }"""
    assert run(f"def @main() -> List[int32] {{ @unfoldr({down}, 3) }}") == [3, 2, 1]
    assert run(f"def @main() -> List[int32] {{ @unfoldl({down}, 3) }}") == [1, 2, 3]


@given(n=st.integers(min_value=-2, max_value=30))
def test_unfold(n: int) -> None:
    expected = [k * k for k in range(n, 0, -1)]
    assert py(call("unfoldr", "@countdown", n)) == expected
    assert py(call("unfoldl", "@countdown", n)) == expected[::-1]


# -- lists of scalars ----------------------------------------------------------------------------


def test_sum_text() -> None:
    assert run("def @main() -> float32 { @sum(Cons(1f, Cons(2.5f, Nil))) }") == 3.5
    assert run("def @main() -> float32 { @sum(Nil) }") == 0.0


@given(xs=st.lists(st.floats(-1e6, 1e6, width=32), max_size=12))
def test_sum(xs: list[float]) -> None:
    expected = np.float32(0)
    for x in xs:
        expected = np.float32(expected + np.float32(x))
    result = call("sum", rlist([np.float32(x) for x in xs]))
    assert result.dtype == np.float32
    assert result == expected


def test_all_any_text() -> None:
    assert run("def @main() -> bool { @all(Cons(True, Cons(False, Nil))) }") is False
    assert run("def @main() -> bool { @any(Cons(False, Cons(True, Nil))) }") is True
    assert run("def @main() -> bool { @all(Nil) }") is True
    assert run("def @main() -> bool { @any(Nil) }") is False


@given(xs=st.lists(st.booleans(), max_size=12))
def test_all_any(xs: list[bool]) -> None:
    assert py(call("all", rlist(xs))) is all(xs)
    assert py(call("any", rlist(xs))) is any(xs)


# -- trees ---------------------------------------------------------------------------------------

PyTree = tuple[int, list[Any]]

TREES: st.SearchStrategy[PyTree] = st.recursive(
    st.builds(lambda v: (v, []), SMALL_INTS),
    lambda children: st.tuples(SMALL_INTS, st.lists(children, max_size=3)),
    max_leaves=20,
)


def tree_value(tree: PyTree) -> ConstructorValue:
    """The Relay value of a Python tree (recursion bounded by the strategy's depth)."""
    mod = helper_module()
    value, subtrees = tree
    return ConstructorValue(
        mod.get_constructor("Rose"), (to_value(value), rlist([tree_value(t) for t in subtrees]))
    )


def tree_size(tree: PyTree) -> int:
    return 1 + sum(tree_size(t) for t in tree[1])


def tree_map(f: Callable[[int], int], tree: PyTree) -> PyTree:
    return (f(tree[0]), [tree_map(f, t) for t in tree[1]])


def test_size_tmap_text() -> None:
    tree = "Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)))"
    assert run(f"def @main() -> int32 {{ @size({tree}) }}") == 4
    main = f"def @main() -> Tree[bool] {{ @tmap(fn (%x: int32) -> bool {{ %x > 2 }}, {tree}) }}"
    assert run(main) == (False, [(False, []), (True, [(True, [])])])


@given(tree=TREES)
def test_size(tree: PyTree) -> None:
    assert py(call("size", tree_value(tree))) == tree_size(tree)


@given(tree=TREES)
def test_tmap(tree: PyTree) -> None:
    assert py(call("tmap", "@affine", tree_value(tree))) == tree_map(lambda x: x * 3 - 7, tree)


# -- tensor arrays -------------------------------------------------------------------------------


def test_tensor_array_text() -> None:
    main = """
def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  let %ta = @tensor_array(3, %a);
  let %ta = @tensor_array_write(%ta, 1, %b);
  let %ta = @tensor_array_concat(%ta, Cons(%b + %b, Nil));
  let %n = @tensor_array_length(%ta);
  let %picked = @tensor_array_gather(%ta, Cons(%n - 1, Cons(1, Nil)));
  let %window = @tensor_array_take(%ta, 1, 3);
  let %ta = @tensor_array_scatter(%ta, Cons(0, Nil), Cons(@tensor_array_read(%window, 1), Nil));
  @tensor_array_read(%ta, 0) + @hd(%picked) * @tensor_array_read(%picked, 1)
}
"""
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.full((2, 3), 0.5, dtype="float32")
    np.testing.assert_array_equal(run(main, a, b), a + (b + b) * b)


def tensors(n: int) -> list[np.ndarray[Any, Any]]:
    return [np.full((2, 2), float(i), dtype="float32") for i in range(n)]


def same_tensors(value: Any, expected: list[np.ndarray[Any, Any]]) -> bool:
    got = to_python_list(value)
    return len(got) == len(expected) and all(
        isinstance(g, np.ndarray) and g.dtype == e.dtype and np.array_equal(g, e)
        for g, e in zip(got, expected, strict=True)
    )


@given(n=st.integers(min_value=-1, max_value=6))
def test_tensor_array_create_and_length(n: int) -> None:
    init = np.ones((2, 2), dtype="float32")
    ta = call("tensor_array", n, init)
    assert same_tensors(ta, [init] * max(n, 0))
    assert py(call("tensor_array_length", ta)) == max(n, 0)


@given(n=st.integers(min_value=1, max_value=6), data=st.data())
def test_tensor_array_read_write(n: int, data: st.DataObject) -> None:
    ts = tensors(n)
    i = data.draw(st.integers(0, n - 1))
    v = np.full((2, 2), -1.0, dtype="float32")
    np.testing.assert_array_equal(call("tensor_array_read", rlist(ts), i), ts[i])
    assert same_tensors(call("tensor_array_write", rlist(ts), i, v), [*ts[:i], v, *ts[i + 1 :]])


@given(n=st.integers(0, 5), m=st.integers(0, 5), lower=st.integers(0, 6), upper=st.integers(0, 6))
def test_tensor_array_concat_take(n: int, m: int, lower: int, upper: int) -> None:
    xs, ys = tensors(n), tensors(m)
    assert same_tensors(call("tensor_array_concat", rlist(xs), rlist(ys)), xs + ys)
    assert same_tensors(call("tensor_array_take", rlist(xs), lower, upper), xs[lower:upper])


@given(n=st.integers(1, 5), data=st.data())
def test_tensor_array_gather_scatter(n: int, data: st.DataObject) -> None:
    ts = tensors(n)
    indices = data.draw(st.lists(st.integers(0, n - 1), max_size=6))
    gathered = call("tensor_array_gather", rlist(ts), rlist(indices))
    assert same_tensors(gathered, [ts[i] for i in indices])
    values = [np.full((2, 2), 10.0 + k, dtype="float32") for k in range(len(indices))]
    expected = list(ts)
    for i, v in zip(indices, values, strict=True):
        expected[i] = v
    scattered = call("tensor_array_scatter", rlist(ts), rlist(indices), rlist(values))
    assert same_tensors(scattered, expected)


# -- deep lists ----------------------------------------------------------------------------------

DEEP = 100_000


def deep_program(name: str, make_args: Callable[[Module, Expr], Sequence[Expr]]) -> Module:
    """A module with the prelude whose ``main`` calls ``@name`` on the list [0, 1, ..., DEEP-1],
    built as nested ``Cons`` calls in Python (a loop, not recursion)."""
    mod = Module()
    mod.import_prelude()
    cons: Constructor = mod.get_constructor("Cons")
    xs: Expr = Call(mod.get_constructor("Nil"), ())
    for i in reversed(range(DEEP)):
        xs = Call(cons, (const(i), xs))
    mod["main"] = Function((), Call(mod.get_global_var(name), tuple(make_args(mod, xs))))
    return mod


def test_length_of_a_100000_element_list() -> None:
    mod = deep_program("length", lambda mod, xs: [xs])
    result = relay.interpret(mod)
    assert result.dtype == np.int32
    assert py(result) == DEEP


def test_map_and_rev_of_a_100000_element_list() -> None:
    x = Var("x", TensorType((), "int32"))
    double = Function((x,), Call(Op.get("multiply"), (x, const(2))), TensorType((), "int32"))
    assert py(relay.interpret(deep_program("map", lambda mod, xs: [double, xs]))) == [
        2 * i for i in range(DEEP)
    ]
    assert py(relay.interpret(deep_program("rev", lambda mod, xs: [xs]))) == list(
        reversed(range(DEEP))
    )
