"""The type inference pass: :func:`relay.infer_type` over a whole module."""

from __future__ import annotations

from relay.ir.module import Module


class InferType:
    """Infer and record the type of every expression of a module (``checked_type``).

    ``InferType()(mod)`` returns ``mod`` itself, its nodes annotated, or raises
    :class:`relay.TypeCheckError` listing every error found.
    """

    name = "InferType"
    opt_level = 0
    required: tuple[str, ...] = ()

    def __call__(self, mod: Module) -> Module:
        """Run type inference on ``mod``."""
        from relay.typecheck.checker import check_module

        return check_module(mod)

    def __repr__(self) -> str:
        return "InferType()"
