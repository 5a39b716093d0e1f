"""The standard optimization pipeline, by optimization level.

As in TVM's ``relay.build`` (``src/relay/backend/utils.cc``, ``GetPassPrefix``), the passes
of the pipeline each carry an opt level and the :class:`PassContext` in force decides which
run: level 0 only makes the program typed, level 1 adds the simplifications that never cost
anything, level 2 (the default) adds the algebraic ones, level 3 the more aggressive ones.
"""

from __future__ import annotations

from relay.passes.manager import Pass, Sequential, resolve_pass

# (pass name, opt level at which it joins the pipeline), in running order
STANDARD: tuple[tuple[str, int], ...] = (("InferType", 0),)


def standard_pipeline(opt_level: int = 2) -> Sequential:
    """The standard passes up to ``opt_level``, in order (a :class:`Sequential`)."""
    passes: list[Pass] = [resolve_pass(name) for name, level in STANDARD if level <= opt_level]
    return Sequential(passes, name=f"StandardPipeline-O{opt_level}")
