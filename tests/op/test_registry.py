"""The operator registry: attribute schemas, rules, registration and lookup."""

from __future__ import annotations

import numpy as np
import pytest

from relay.errors import CompileError, RelayError
from relay.ir import Attrs, Op, Span
from relay.op import (
    MissingRuleError,
    OpDef,
    OpPattern,
    attr,
    get_op,
    has_op,
    list_ops,
    register_op,
)
from relay.op.registry import AttrValidationError

PREFIX = "test_registry."


def _relation(*args: object) -> None:
    """A stand-in type relation."""


def _ensure(name: str, *args: object, **kwargs: object) -> OpDef:
    """Register a test operator once per process (tests may run in any order)."""
    full = PREFIX + name
    if has_op(full):
        return get_op(full)
    return register_op(full, *args, **kwargs)  # type: ignore[arg-type]


SCALE = _ensure(
    "scale",
    1,
    attrs=[
        attr("units", "int"),
        attr("factor", "float", 2.0),
        attr("axis", "int_or_ints", None, optional=True),
        attr("mode", "str", "fast", choices=["fast", "exact"]),
        attr("sizes", "ints", ()),
        attr("weights", "floats", (1.0,)),
        attr("flag", "bool", False),
        attr("out_dtype", "dtype", "float32"),
        attr("extra", "any", None),
    ],
    reference=lambda x, **kw: x,
    pattern=OpPattern.ELEMWISE,
    doc="A test operator with every kind of attribute.",
    type_relation=_relation,
)
PLAIN = _ensure("plain", 2)


# -- attribute schemas ---------------------------------------------------------------------


def test_defaults_are_filled_in_schema_order() -> None:
    attrs = SCALE.validate_attrs({"units": 3})
    assert isinstance(attrs, Attrs)
    assert list(attrs) == [
        "units",
        "factor",
        "axis",
        "mode",
        "sizes",
        "weights",
        "flag",
        "out_dtype",
        "extra",
    ]
    assert attrs == Attrs(
        units=3,
        factor=2.0,
        axis=None,
        mode="fast",
        sizes=(),
        weights=(1.0,),
        flag=False,
        out_dtype="float32",
        extra=None,
    )


def test_given_values_override_defaults_and_are_normalized() -> None:
    attrs = SCALE.validate_attrs(
        Attrs(units=np.int64(4), factor=3, axis=[0, 1], sizes=[2, 3], weights=[1, 2.5], flag=True)
    )
    assert attrs["units"] == 4 and type(attrs["units"]) is int
    assert attrs["factor"] == 3  # an int is a valid float
    assert attrs["axis"] == (0, 1)
    assert attrs["sizes"] == (2, 3)
    assert attrs["weights"] == (1, 2.5)
    assert attrs["flag"] is True
    assert SCALE.validate_attrs({"units": 1, "axis": 2})["axis"] == 2
    # TVM's text format writes some flags as integers (reshape's allowzero=0)
    assert SCALE.validate_attrs({"units": 1, "flag": 0})["flag"] is False
    assert SCALE.validate_attrs({"units": 1, "flag": 1})["flag"] is True


def test_required_attribute_missing() -> None:
    with pytest.raises(
        AttrValidationError, match=r"^test_registry\.scale requires attribute units$"
    ):
        SCALE.validate_attrs(None)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"units": 1.5}, "attribute units of test_registry.scale must be an int, got 1.5"),
        ({"units": True}, "attribute units of test_registry.scale must be an int, got True"),
        ({"units": "3"}, "attribute units of test_registry.scale must be an int, got '3'"),
        ({"units": None}, "attribute units of test_registry.scale must be an int, got None"),
        (
            {"units": 1, "factor": "x"},
            "attribute factor of test_registry.scale must be a number, got 'x'",
        ),
        (
            {"units": 1, "factor": False},
            "attribute factor of test_registry.scale must be a number, got False",
        ),
        (
            {"units": 1, "axis": 1.0},
            "attribute axis of test_registry.scale must be an int or a list of ints, got 1.0",
        ),
        (
            {"units": 1, "sizes": (1, 2.0)},
            "attribute sizes of test_registry.scale must be a list of ints, got (1, 2.0)",
        ),
        (
            {"units": 1, "sizes": 3},
            "attribute sizes of test_registry.scale must be a list of ints, got 3",
        ),
        (
            {"units": 1, "weights": ("a",)},
            "attribute weights of test_registry.scale must be a list of numbers, got ('a',)",
        ),
        ({"units": 1, "flag": 2}, "attribute flag of test_registry.scale must be a bool, got 2"),
        ({"units": 1, "mode": 3}, "attribute mode of test_registry.scale must be a string, got 3"),
        (
            {"units": 1, "out_dtype": 32},
            "attribute out_dtype of test_registry.scale must be a dtype name, got 32",
        ),
    ],
)
def test_wrong_kind(given: dict[str, object], message: str) -> None:
    with pytest.raises(AttrValidationError) as info:
        SCALE.validate_attrs(given)
    assert str(info.value) == message


def test_choices() -> None:
    assert SCALE.validate_attrs({"units": 1, "mode": "exact"})["mode"] == "exact"
    with pytest.raises(AttrValidationError) as info:
        SCALE.validate_attrs({"units": 1, "mode": "slow"})
    assert str(info.value) == (
        "attribute mode of test_registry.scale must be one of 'fast', 'exact', got 'slow'"
    )


def test_unknown_attributes_are_named() -> None:
    with pytest.raises(AttrValidationError) as info:
        SCALE.validate_attrs({"units": 1, "zeta": 1, "alpha": 2})
    assert str(info.value) == "test_registry.scale has no attribute alpha, zeta"
    with pytest.raises(AttrValidationError, match=r"test_registry\.plain has no attribute padding"):
        PLAIN.validate_attrs({"padding": [1, 1]})


def test_operator_without_schema_validates_to_empty_attrs() -> None:
    assert PLAIN.validate_attrs(None) == Attrs()
    assert len(get_op("add").validate_attrs({})) == 0


def test_optional_attribute_accepts_none_and_any_accepts_anything() -> None:
    attrs = SCALE.validate_attrs({"units": 1, "axis": None, "extra": ("a", 1, None)})
    assert attrs["axis"] is None and attrs["extra"] == ("a", 1, None)


def test_attr_declaration() -> None:
    field = attr("k", "int", 3)
    assert field.name == "k" and field.kind == "int" and field.default == 3
    assert not field.required and attr("k", "int").required
    assert attr("m", "str", "a", choices=["a", "b"]).choices == ("a", "b")
    with pytest.raises(ValueError, match="unknown attribute kind 'complex'"):
        attr("z", "complex")
    assert AttrValidationError.__mro__[1] is ValueError


# -- rules ---------------------------------------------------------------------------------


def test_present_rule_is_returned() -> None:
    assert SCALE.rule("type_relation") is _relation
    assert SCALE.rule("reference") is SCALE.reference


@pytest.mark.parametrize("slot", ["gradient", "jvp", "lowering"])
def test_missing_rule_names_op_and_rule(slot: str) -> None:
    span = Span("m.rly", 4, 2, 4, 9)
    with pytest.raises(MissingRuleError) as info:
        SCALE.rule(slot, span)
    err = info.value
    assert err.message == f"operator test_registry.scale has no {slot} rule"
    assert err.span == span
    assert isinstance(err, CompileError) and isinstance(err, RelayError)


def test_missing_reference_is_a_missing_rule() -> None:
    with pytest.raises(
        MissingRuleError, match=r"operator test_registry\.plain has no reference rule"
    ):
        PLAIN.rule("reference")


# -- registration and lookup ---------------------------------------------------------------


def test_registered_entry_holds_everything() -> None:
    assert SCALE.name == "test_registry.scale" and SCALE.num_inputs == 1
    assert SCALE.pattern is OpPattern.ELEMWISE
    assert SCALE.doc == "A test operator with every kind of attribute."
    assert SCALE.type_relation is _relation
    assert SCALE.gradient is None and SCALE.jvp is None and SCALE.lowering is None
    assert PLAIN.pattern is OpPattern.OPAQUE and PLAIN.reference is None
    assert isinstance(SCALE.op, Op) and SCALE.op.name == SCALE.name


def test_op_nodes_are_unique_per_name() -> None:
    assert Op.get("add") is get_op("add").op is Op.get("add")
    assert Op.get("test_registry.scale").definition is SCALE


def test_duplicate_registration_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^operator add is already registered$"):
        register_op("add", 2)
    with pytest.raises(ValueError, match=r"operator test_registry\.scale is already registered"):
        register_op("test_registry.scale", 1)
    assert get_op("add").reference is not None  # the original entry is untouched


def test_unknown_rule_keyword_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"^unknown operator rule\(s\): fusion, grad$"):
        register_op(PREFIX + "bad_rules", 1, grad=_relation, fusion=_relation)
    assert not has_op(PREFIX + "bad_rules")


def test_unknown_operator_lookup() -> None:
    with pytest.raises(KeyError, match="unknown operator no_such_operator"):
        get_op("no_such_operator")
    with pytest.raises(KeyError, match="unknown operator no_such_operator"):
        Op.get("no_such_operator")
    assert not has_op("no_such_operator") and has_op("add")


def test_list_ops_is_sorted_and_complete() -> None:
    names = list_ops()
    assert names == sorted(set(names))
    expected = {
        "add",
        "subtract",
        "multiply",
        "divide",
        "floor_divide",
        "power",
        "mod",
        "floor_mod",
        "maximum",
        "minimum",
        "negative",
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "logical_xor",
        "logical_not",
        "test_registry.scale",
        "test_registry.plain",
    }
    assert expected <= set(names)
    assert all(has_op(n) for n in names)


def test_op_pattern_order_matches_relay() -> None:
    assert [p.value for p in OpPattern] == [0, 1, 2, 3, 4, 7, 8]
    assert OpPattern.ELEMWISE < OpPattern.BROADCAST < OpPattern.INJECTIVE < OpPattern.OPAQUE
