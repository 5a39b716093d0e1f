"""relay's standard library: the prelude, written in the Relay text format.

``prelude.rly`` (beside this file) defines ``List``, ``Option`` and ``Tree``
and the usual functions over them; docs/prelude.md lists them. The text is
read once, through :mod:`importlib.resources` so that it is found inside an
installed package (a wheel or a zip) as well as in a source checkout, and
kept. Every call to :func:`prelude` parses it again: the result is a new
Module with its own nodes, so a caller that mutates it, or type inference
recording ``checked_type`` on its nodes, cannot affect any other caller.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relay.ir.module import Module

PRELUDE_SOURCE = "relay/std/prelude.rly"
"""The source name that spans (and so error messages) inside the prelude carry."""


@functools.cache
def prelude_text() -> str:
    """The text of ``prelude.rly``, read from the installed package on first use."""
    return resources.files("relay.std").joinpath("prelude.rly").read_text(encoding="utf-8")


def prelude() -> Module:
    """A fresh module holding the standard prelude (List, Option, Tree and their functions).

    Each call returns an independent module (its own globals, constructors and
    expression nodes).

    >>> mod = prelude()
    >>> sorted(t.name_hint for t in mod.type_definitions)
    ['List', 'Option', 'Tree']
    """
    from relay.ir.parser import parse

    return parse(prelude_text(), PRELUDE_SOURCE)


__all__ = ["PRELUDE_SOURCE", "prelude", "prelude_text"]
