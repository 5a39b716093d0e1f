"""Type inference and checking: unification, type relations, polymorphism, ADTs."""

from relay.typecheck.calls import infer_call_type
from relay.typecheck.relation import RelationError, Reporter, forward, identity_rel

__all__ = ["RelationError", "Reporter", "forward", "identity_rel", "infer_call_type"]
