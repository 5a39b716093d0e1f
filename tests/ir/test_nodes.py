"""IR nodes: identity of binders, structural value types, attributes, modules."""

from __future__ import annotations

import numpy as np
import pytest

from relay.ir import (
    Any,
    Attrs,
    Call,
    Constructor,
    Function,
    FuncType,
    GlobalTypeVar,
    GlobalVar,
    IncompleteType,
    Kind,
    Module,
    Op,
    Span,
    TensorType,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
    Var,
    const,
)
from relay.ir.types import free_type_vars


def test_vars_have_identity():
    a, b = Var("x"), Var("x")
    assert a != b and a == a
    assert len({a, b}) == 2


def test_spans_do_not_affect_type_equality():
    t1 = TensorType((3, 4), "float32", span=Span("a", 1, 1, 1, 2))
    t2 = TensorType((3, 4), "float32")
    assert t1 == t2 and hash(t1) == hash(t2)


def test_types_compare_structurally_binders_by_identity():
    n = TypeVar("n", Kind.SHAPE)
    assert TensorType((n, 3)) == TensorType((n, 3))
    assert TensorType((n, 3)) != TensorType((TypeVar("n", Kind.SHAPE), 3))
    assert TensorType((Any,)) == TensorType((Any,))
    assert IncompleteType() != IncompleteType()
    assert TupleType((TensorType(()),)) == TupleType((TensorType(()),))


def test_tensor_type_validation():
    with pytest.raises(ValueError, match="unknown dtype 'flaot32'"):
        TensorType((1,), "flaot32")
    with pytest.raises(TypeError, match="bad tensor dimension"):
        TensorType((1.5,), "float32")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bad tensor dimension"):
        TensorType((True,), "float32")
    t = TensorType((2, Any))
    assert not t.is_static and t.ndim == 2
    assert TensorType((2, 3)).concrete_shape() == (2, 3)


def test_free_type_vars_respect_binders():
    a, b = TypeVar("A"), TypeVar("B")
    ft = FuncType((a, b), a, (a,))
    assert free_type_vars(ft) == [b]
    lst = GlobalTypeVar("List")
    assert free_type_vars(TypeCall(lst, (b, a))) == [b, a]


def test_const_defaults():
    assert const(1.5).data.dtype == np.float32 and const(1.5).data.shape == ()
    assert const(2).data.dtype == np.int32
    assert const(True).data.dtype == np.bool_
    assert const([1.0, 2.0]).data.dtype == np.float32
    assert const(3, "int64").tensor_type == TensorType((), "int64")
    with pytest.raises(TypeError, match="numpy array"):
        from relay.ir import Constant

        Constant(1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (np.array("a"), "<U1"),
        (np.array(1j), "complex128"),
        (np.array(b"ab"), "|S2"),
        (np.array(None), "object"),
        (np.array([1.0], ">f4"), ">f4"),
        (np.array(1.0, np.longdouble), str(np.dtype(np.longdouble))),
    ],
)
def test_constant_rejects_dtypes_relay_lacks(value, name):
    from relay.ir import Constant
    from relay.ir.types import DTYPES

    with pytest.raises(TypeError) as info:
        Constant(value)
    assert str(info.value) == (
        f"Constant: unsupported dtype {name}; relay supports {', '.join(DTYPES)}"
    )
    with pytest.raises(TypeError, match=r"^Constant: unsupported dtype <U1; relay supports bool, "):
        const("a")


def test_constant_accepts_every_relay_dtype():
    import ml_dtypes

    from relay.ir import Constant
    from relay.ir.types import DTYPES

    for name in DTYPES:
        dt = np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)
        assert Constant(np.zeros((2,), dt)).tensor_type == TensorType((2,), name)


def test_checked_type_before_inference_is_an_error():
    x = Var("x")
    with pytest.raises(ValueError, match="has not been inferred"):
        _ = x.checked_type
    x.set_checked_type(TensorType(()))
    assert x.checked_type == TensorType(())


def test_attrs_are_immutable_structural_and_typed():
    a = Attrs(padding=[1, 1], layout="NHWC")
    assert a == Attrs({"padding": (1, 1), "layout": "NHWC"})
    assert hash(a) == hash(Attrs(layout="NHWC", padding=(1, 1)))
    assert Attrs(x=True) != Attrs(x=1)
    assert Attrs(x=np.int64(3))["x"] == 3 and isinstance(Attrs(x=np.int64(3))["x"], int)
    assert a.with_attr("groups", 2)["groups"] == 2 and "groups" not in a
    with pytest.raises(TypeError, match="unsupported attribute value"):
        Attrs(x=object())


def test_ops_are_interned():
    assert Op.get("add") is Op.get("add")
    assert Op.get("add").definition.name == "add"
    with pytest.raises(KeyError, match=r"unknown operator nn\.nothing"):
        Op.get("nn.nothing")


def test_function_with_attr_keeps_everything_else():
    x = Var("x")
    f = Function((x,), x, TensorType(()))
    g = f.with_attr("Primitive", 1)
    assert g.attrs["Primitive"] == 1 and g.params == f.params and g.ret_type == f.ret_type


def _list_data() -> TypeData:
    a = TypeVar("A")
    lst = GlobalTypeVar("List")
    cons = Constructor("Cons", (a, TypeCall(lst, (a,))), lst, 0)
    nil = Constructor("Nil", (), lst, 1)
    return TypeData(lst, (a,), (cons, nil))


def test_module_definitions_and_lookup():
    mod = Module()
    data = _list_data()
    mod.add_type(data)
    x = Var("x")
    gv = mod.add("id", Function((x,), x))
    assert mod["id"] is mod[gv] is mod.function("id")
    assert mod.get_global_var("id") is gv
    assert mod["List"] is data and mod[data.header] is data
    assert mod.get_constructor("Cons").tag == 0 and mod.get_constructor("Nil").tag == 1
    assert "id" in mod and gv in mod and "List" in mod and "nope" not in mod
    assert list(mod) == [gv] and len(mod) == 1
    with pytest.raises(ValueError, match="duplicate definition of @id"):
        mod.add(gv, Function((), x))
    with pytest.raises(ValueError, match="different global named @id"):
        mod.add(GlobalVar("id"), Function((), x))
    with pytest.raises(ValueError, match="duplicate definition of type List"):
        mod.add_type(_list_data())
    with pytest.raises(KeyError, match="no global function @nope"):
        mod.get_global_var("nope")
    with pytest.raises(KeyError, match="no constructor named Leaf"):
        mod.get_constructor("Leaf")
    new = Function((x,), Call(Op.get("add"), (x, x)))
    mod["id"] = new
    assert mod["id"] is new and mod.get_global_var("id") is gv
    mod.remove("id")
    assert "id" not in mod


def test_module_from_expr_closes_over_free_vars():
    x, y = Var("x"), Var("y")
    mod = Module.from_expr(Call(Op.get("add"), (x, y)))
    main = mod.function("main")
    assert main.params == (x, y)


def test_module_import_keeps_existing_definitions():
    a, b = Module(), Module()
    x = Var("x")
    fa, fb, fc = Function((x,), x), Function((), x), Function((), x)
    a["f"] = fa
    b["f"] = fb
    b["g"] = fc
    a.import_module(b)
    assert a["f"] is fa and a["g"] is fc
