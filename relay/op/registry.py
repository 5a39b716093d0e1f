"""The operator registry: one entry per primitive operator, holding all its rules.

An :class:`OpDef` gathers everything the compiler knows about an operator:
its attribute schema (typed, with defaults, validated), its numpy reference
implementation (the interpreter's semantics and every test's oracle), and the
slots that the type checker, AD, fusion and code generation read: the type
relation, the gradient and JVP, the fusion pattern and the TVM lowering.
A transformation that needs a rule the operator lacks gets
:class:`MissingRuleError` naming the operator and the rule.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from relay.errors import CompileError
from relay.ir.attrs import EMPTY_ATTRS, Attrs, AttrValue, normalize_attr_value
from relay.ir.expr import Call, Expr, Op
from relay.ir.span import Span


class OpPattern(enum.IntEnum):
    """How an operator may fuse with its neighbours (Relay's OpPatternKind)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class MissingRuleError(CompileError):
    """An operator lacks the rule a transformation needs (e.g. no gradient for ``argmax``)."""


_ATTR_KINDS: dict[str, Callable[[AttrValue], bool]] = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "ints": lambda v: (
        isinstance(v, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    ),
    "floats": lambda v: (
        isinstance(v, tuple)
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)
    ),
    "int_or_ints": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v))
    ),
    "dtype": lambda v: isinstance(v, str),
    "any": lambda v: True,
}

_KIND_NOUNS = {
    "int": "an int",
    "float": "a number",
    "bool": "a bool",
    "str": "a string",
    "ints": "a list of ints",
    "floats": "a list of numbers",
    "int_or_ints": "an int or a list of ints",
    "dtype": "a dtype name",
    "any": "anything",
}
"""How error messages describe each attribute kind."""

_REQUIRED = object()


@dataclass(frozen=True, slots=True)
class AttrField:
    """One attribute of an operator: its name, kind (a key of the kinds table), default.

    ``kind`` is one of ``int``, ``float``, ``bool``, ``str``, ``ints``, ``floats``,
    ``int_or_ints``, ``dtype``, ``any``; ``optional`` allows ``None``;
    ``choices`` restricts string values.
    """

    name: str
    kind: str
    default: object = _REQUIRED
    optional: bool = False
    choices: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        """True when the attribute has no default."""
        return self.default is _REQUIRED


def attr(
    name: str,
    kind: str,
    default: object = _REQUIRED,
    optional: bool = False,
    choices: Sequence[str] = (),
) -> AttrField:
    """Declare an operator attribute (see :class:`AttrField`)."""
    if kind not in _ATTR_KINDS:
        raise ValueError(f"unknown attribute kind {kind!r}")
    return AttrField(name, kind, default, optional, tuple(choices))


class AttrValidationError(ValueError):
    """Attributes that do not fit an operator's schema; callers add a span and re-raise."""


@dataclass(slots=True, eq=False)
class OpDef:
    """Everything known about one operator. Slots left ``None`` are filled by later issues."""

    name: str
    num_inputs: int
    op: Op
    attrs_schema: tuple[AttrField, ...] = ()
    reference: Callable[..., Any] | None = None
    type_relation: Callable[..., Any] | None = None
    gradient: Callable[..., Any] | None = None
    jvp: Callable[..., Any] | None = None
    pattern: OpPattern = OpPattern.OPAQUE
    lowering: Callable[..., Any] | None = None
    doc: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def validate_attrs(self, attrs: Attrs | dict[str, object] | None) -> Attrs:
        """``attrs`` checked against the schema, with defaults filled in, in schema order."""
        if not self.attrs_schema and not attrs:
            return attrs if isinstance(attrs, Attrs) else EMPTY_ATTRS
        given = dict(attrs or {})
        out: dict[str, object] = {}
        for f in self.attrs_schema:
            if f.name in given:
                value = normalize_attr_value(given.pop(f.name))
                if f.kind == "bool" and type(value) is int and value in (0, 1):
                    value = bool(value)  # TVM's text writes some flags as 0 and 1
                if not ((value is None and f.optional) or _ATTR_KINDS[f.kind](value)):
                    raise AttrValidationError(
                        f"attribute {f.name} of {self.name} must be {_KIND_NOUNS[f.kind]}, "
                        f"got {value!r}"
                    )
                if f.choices and value not in f.choices:
                    choices = ", ".join(repr(c) for c in f.choices)
                    raise AttrValidationError(
                        f"attribute {f.name} of {self.name} must be one of {choices}, got {value!r}"
                    )
                out[f.name] = value
            elif f.required:
                raise AttrValidationError(f"{self.name} requires attribute {f.name}")
            else:
                out[f.name] = f.default
        if given:
            raise AttrValidationError(f"{self.name} has no attribute {', '.join(sorted(given))}")
        if isinstance(attrs, Attrs) and list(attrs.items()) == list(out.items()):
            return attrs  # already complete and normalized (a parsed call's attributes)
        return Attrs(out)

    def rule(self, slot: str, span: Span | None = None) -> Callable[..., Any]:
        """The rule in ``slot`` (e.g. ``"gradient"``), or :class:`MissingRuleError`."""
        value = getattr(self, slot, None)
        if value is None:
            raise MissingRuleError(f"operator {self.name} has no {slot} rule", span)
        assert callable(value)
        rule: Callable[..., Any] = value
        return rule


_REGISTRY: dict[str, OpDef] = {}


def register_op(
    name: str,
    num_inputs: int,
    *,
    attrs: Sequence[AttrField] = (),
    reference: Callable[..., Any] | None = None,
    pattern: OpPattern = OpPattern.OPAQUE,
    doc: str = "",
    **rules: Callable[..., Any] | None,
) -> OpDef:
    """Register operator ``name`` taking ``num_inputs`` arguments (-1: variadic).

    ``rules`` may set ``type_relation``, ``gradient``, ``jvp`` and ``lowering``.
    """
    if name in _REGISTRY:
        raise ValueError(f"operator {name} is already registered")
    unknown = set(rules) - {"type_relation", "gradient", "jvp", "lowering"}
    if unknown:
        raise TypeError(f"unknown operator rule(s): {', '.join(sorted(unknown))}")
    opdef = OpDef(
        name=name,
        num_inputs=num_inputs,
        op=Op(name),
        attrs_schema=tuple(attrs),
        reference=reference,
        pattern=pattern,
        doc=doc,
        type_relation=rules.get("type_relation"),
        gradient=rules.get("gradient"),
        jvp=rules.get("jvp"),
        lowering=rules.get("lowering"),
    )
    _REGISTRY[name] = opdef
    return opdef


def _ensure_loaded() -> None:
    import relay.op  # noqa: F401  (registers the operator definitions)


def get_op(name: str) -> OpDef:
    """The registered operator ``name``; raises ``KeyError`` if unknown."""
    if name not in _REGISTRY:
        _ensure_loaded()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown operator {name}") from None


def has_op(name: str) -> bool:
    """Whether an operator called ``name`` is registered."""
    _ensure_loaded()
    return name in _REGISTRY


def list_ops() -> list[str]:
    """The names of all registered operators, sorted."""
    _ensure_loaded()
    return sorted(_REGISTRY)


class OpBuilder:
    """``relay.op.<name>``: builds calls of the operator ``name``.

    ``relay.op.add(x, y)`` is ``Call(Op("add"), (x, y))``; positional arguments fill the
    operator's inputs, then its attributes in schema order; keywords name attributes. Inside
    a ``@relay`` function the same spelling calls the operator."""

    __slots__ = ("__relay_op__",)

    def __init__(self, name: str) -> None:
        self.__relay_op__ = name

    def __call__(self, *args: object, **attrs: object) -> object:
        from relay.ir.expr import Call, Expr

        opdef = get_op(self.__relay_op__)
        n = opdef.num_inputs if opdef.num_inputs >= 0 else len(args)
        inputs, rest = args[:n], args[n:]
        names = [f.name for f in opdef.attrs_schema]
        if len(rest) > len(names):
            raise TypeError(f"{self.__relay_op__} takes {n} inputs and {len(names)} attributes")
        merged = dict(zip(names, rest, strict=False))
        merged.update(attrs)
        for a in inputs:
            if not isinstance(a, Expr):
                raise TypeError(f"{self.__relay_op__}: inputs must be Relay expressions, got {a!r}")
        return Call(opdef.op, tuple(inputs), opdef.validate_attrs(merged))  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"relay.op.{self.__relay_op__}"


def op_call(name: str, *args: Expr, **attrs: object) -> Call:
    """A call of the registered operator ``name`` with validated attributes: how rules
    (gradients, JVPs) build the IR they return."""
    opdef = get_op(name)
    return Call(opdef.op, args, opdef.validate_attrs(dict(attrs)))


# -- gradient rules ------------------------------------------------------------------------------
#
# A gradient rule is ``rule(call, out_grad) -> [adjoint of each argument]``: ``call`` is the
# primal call (its arguments are the primal inputs, and ``call`` itself stands for the primal
# output), ``out_grad`` an expression of the output's type holding the adjoint flowing into the
# result (a tuple for tuple-valued operators). Each adjoint is an expression of its argument's
# type (broadcasting undone with ``collapse_sum_like``), or None when no gradient flows to that
# argument (integer indices, a condition, a shape). Reverse-mode AD calls a rule only when a
# nonzero adjoint reaches the call's result.

GradientRule = Callable[..., Any]


def gradient_rule(*names: str) -> Callable[[GradientRule], GradientRule]:
    """Register the decorated function as the gradient rule of the operators ``names``."""

    def wrap(rule: GradientRule) -> GradientRule:
        for name in names:
            get_op(name).gradient = rule
        return rule

    return wrap


def non_differentiable(*names: str, reason: str) -> None:
    """Mark ``names`` as having no derivative: reverse- or forward-mode AD that needs their
    gradient or JVP rule raises :class:`MissingRuleError` naming the operator and ``reason``."""

    for name in names:

        def rule(call: Any, _seed: Any, _name: str = name) -> Any:
            # one rule serves both slots: the second argument is the output adjoint
            # (gradient) or the argument tangents (JVP), unused either way
            raise MissingRuleError(
                f"cannot differentiate through {_name}: {reason}", getattr(call, "span", None)
            )

        opdef = get_op(name)
        opdef.gradient = rule
        opdef.jvp = rule
        opdef.extra["non_differentiable"] = reason


# -- JVP rules -----------------------------------------------------------------------------------
#
# A JVP (forward-mode) rule is ``rule(call, tangents) -> tangent of the result``: ``call`` is the
# primal call (its arguments are the primal inputs, with ``checked_type`` set; ``call`` itself
# stands for the primal output; ``call.attrs`` are its attributes), ``tangents`` a list with one
# entry per argument: an expression of that argument's type holding its tangent (for a tuple
# argument, an expression of the tuple type), or None when the tangent is zero (integer inputs,
# constants). The rule returns the result's tangent as an expression of the result's type (for
# a tuple result, an expression of the tuple type, e.g. a Tuple of the fields' tangents with
# ``zeros_like`` where a field's is zero), or None when it is zero. Forward-mode AD calls a rule
# only when at least one tangent is not None and the result contains a floating-point tensor.
# Linear operators apply themselves to the tangents; the others multiply by their derivative,
# with the same conventions at kinks and ties as their gradient rule, so that a JVP and the
# gradient are transposes of each other: <ct, J v> == <J^T ct, v>.

JvpRule = Callable[..., Any]


def jvp_rule(*names: str) -> Callable[[JvpRule], JvpRule]:
    """Register the decorated function as the JVP rule of the operators ``names``."""

    def wrap(rule: JvpRule) -> JvpRule:
        for name in names:
            get_op(name).jvp = rule
        return rule

    return wrap


# -- lowering rules ------------------------------------------------------------------------------
#
# A lowering rule is ``rule(call: LoweringCall) -> TE value``: it builds the operator's tensor
# expression (``tvm.te``) from its arguments' (``call.args``: a ``te.Tensor`` per tensor
# argument, a tuple of them per tuple argument) and returns a ``te.Tensor`` for a tensor
# result or a tuple of them for a tuple result, of exactly ``call.out_type``'s shapes and
# dtypes. Rules import ``tvm`` inside their body (``import relay`` never loads TVM), compute
# what the operator's numpy reference computes (the interpreter's semantics), use topi's
# compute definitions where they agree with it, and leave scheduling to the backend.


@dataclass(frozen=True, slots=True)
class LoweringCall:
    """What a lowering rule gets: the call's attributes, its lowered arguments, their Relay
    types and the result type (all static shapes), and the compilation options in force
    (``fast_math``: approximate exp/tanh/sigmoid for float32; see docs/backend.md)."""

    name: str
    attrs: Attrs
    args: tuple[Any, ...]
    arg_types: tuple[Any, ...]
    out_type: Any
    fast_math: bool = True
    span: Span | None = None
    checks: list[tuple[Any, str]] = field(default_factory=list)
    materialized: set[int] = field(default_factory=set)
    bound_depths: tuple[int, ...] = ()
    """Per argument, the binding operators nested in its expression where it is computed in
    the kernel (0 for an input or a barrier; see :data:`relay.backend.lower.MAX_BOUND_DEPTH`);
    empty where the caller does not say."""

    def materialize(self, index: int) -> None:
        """Ask for argument ``index``, where it is computed in the kernel, to be computed
        into a buffer of its own (a barrier stage, see :mod:`relay.backend.lower`) rather
        than inlined into this operator's expression: for a rule that uses the argument
        many times, where repeating its computation would multiply the kernel's size. The
        lowering then applies the rule again, to the materialized argument."""
        self.materialized.add(index)

    def require(self, violated: Any, message: str) -> None:
        """Check at run time what the reference checks: ``violated`` is a ``te.Tensor`` (any
        shape, bool or integer) that is nonzero where the operator's reference raises; the
        kernel computes it beside its results, and the executor raises ExecutionError with
        ``message`` at the call's span when any element is nonzero."""
        self.checks.append((violated, message))


LoweringRule = Callable[[LoweringCall], Any]


def lowering_rule(*names: str) -> Callable[[LoweringRule], LoweringRule]:
    """Register the decorated function as the TVM lowering rule of the operators ``names``."""

    def wrap(rule: LoweringRule) -> LoweringRule:
        for name in names:
            get_op(name).lowering = rule
        return rule

    return wrap
