"""The type inference pass: :func:`relay.infer_type` over a whole module."""

from __future__ import annotations

from relay.ir.module import Module
from relay.passes.manager import Pass, PassContext, PassInfo


class InferType(Pass):
    """Infer and record the type of every expression of a module (``checked_type``).

    ``InferType()(mod)`` returns ``mod`` itself, its nodes annotated, or raises
    :class:`relay.TypeCheckError` listing every error found. It is the one standard pass
    that annotates its input rather than building a new module: types are annotations, not
    a change of the program.
    """

    info = PassInfo("InferType", 0)

    def transform(self, mod: Module, ctx: PassContext) -> Module:
        """Run type inference on ``mod``."""
        from relay.typecheck.checker import check_module

        return check_module(mod)

    def __repr__(self) -> str:
        return "InferType()"
