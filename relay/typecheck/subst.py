"""Substitution of type variables: instantiation of polymorphic types.

``subst_type(t, mapping)`` replaces each free ``TypeVar`` of ``t`` found in
``mapping`` by its value: a type for a ``Type`` variable, a dimension for a
``Shape`` variable (re-simplifying any arithmetic it occurs in), a dtype for a
``BaseType`` variable. The type parameters of a nested ``FuncType`` shadow the
mapping inside it (capture-avoiding, as the values never mention them).
"""

from __future__ import annotations

from collections.abc import Mapping

from relay.ir import dim
from relay.ir.dim import Dim
from relay.ir.types import (
    FuncType,
    RefType,
    SymbolicDim,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeRelation,
    TypeVar,
)


def subst_dim(d: Dim, mapping: Mapping[TypeVar, object]) -> Dim:
    """A dimension with the shape variables in ``mapping`` replaced."""
    if isinstance(d, TypeVar):
        value = mapping.get(d, d)
        return value  # type: ignore[return-value]
    if isinstance(d, SymbolicDim):
        return dim.substitute(
            d,
            lambda v: mapping.get(v, v) if isinstance(v, TypeVar) else v,  # type: ignore[arg-type,return-value]
        )
    return d


def subst_type(t: Type, mapping: Mapping[TypeVar, object]) -> Type:
    """``t`` with the type variables in ``mapping`` replaced by their values."""
    if not mapping:
        return t
    if isinstance(t, TypeVar):
        value = mapping.get(t, t)
        assert isinstance(value, Type)
        return value
    if isinstance(t, TensorType):
        dtype = mapping.get(t.dtype, t.dtype) if isinstance(t.dtype, TypeVar) else t.dtype
        return TensorType(
            tuple(subst_dim(d, mapping) for d in t.shape),
            dtype,  # type: ignore[arg-type]
            span=t.span,
        )
    if isinstance(t, TupleType):
        return TupleType(tuple(subst_type(f, mapping) for f in t.fields), span=t.span)
    if isinstance(t, FuncType):
        inner = {k: v for k, v in mapping.items() if k not in t.type_params}
        return FuncType(
            tuple(subst_type(a, inner) for a in t.arg_types),
            subst_type(t.ret_type, inner),
            t.type_params,
            tuple(subst_relation(c, inner) for c in t.type_constraints),
            span=t.span,
        )
    if isinstance(t, TypeCall):
        return TypeCall(
            subst_type(t.func, mapping), tuple(_subst_arg(a, mapping) for a in t.args), span=t.span
        )
    if isinstance(t, RefType):
        return RefType(subst_type(t.value, mapping), span=t.span)
    if isinstance(t, TypeRelation):
        return subst_relation(t, mapping)
    return t


def _subst_arg(a: object, mapping: Mapping[TypeVar, object]) -> Type:
    """A data type's argument substituted: a type, or a dimension (``V[n * 2]``) or dtype."""
    if isinstance(a, Type):
        return subst_type(a, mapping)
    if isinstance(a, SymbolicDim):
        return subst_dim(a, mapping)  # type: ignore[return-value]
    return a  # type: ignore[return-value]  # an int, ?, or a dtype name


def subst_relation(r: TypeRelation, mapping: Mapping[TypeVar, object]) -> TypeRelation:
    """A type relation with its argument types substituted."""
    return TypeRelation(
        r.name,
        r.func,
        tuple(subst_type(a, mapping) for a in r.args),
        r.num_inputs,
        r.attrs,
        span=r.span,
    )
