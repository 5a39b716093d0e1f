"""Passes over modules. (The pass manager arrives with issue 5; see docs/type-system.md.)"""

from relay.passes.infer_type import InferType

__all__ = ["InferType"]
