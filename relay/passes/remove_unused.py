"""Removing the global functions that the entry functions cannot reach.

After TVM's ``RemoveUnusedFunctions`` (``src/relay/backend/vm/removed_unused_funcs.cc``): a
global is kept when an entry function (``main`` by default) refers to it, or a kept global
refers to it, through a call or any other occurrence of its ``GlobalVar`` (a global passed as
a value, stored in a tuple, captured by a closure). Everything else is dropped; type
definitions are kept. A module without any of the entry functions is left as it is. The walk is a graph search over the globals, each body scanned once,
so the pass is linear in the size of the module.
"""

from __future__ import annotations

from collections.abc import Iterable

from relay.ir.analysis import global_vars
from relay.ir.expr import GlobalVar
from relay.ir.module import Module
from relay.passes.manager import ModulePass, Pass, PassContext, PassInfo

__all__ = ["RemoveUnusedFunctions", "reachable_globals", "remove_unused_functions"]


def reachable_globals(mod: Module, entries: Iterable[str | GlobalVar]) -> list[GlobalVar]:
    """The globals of ``mod`` reachable from ``entries`` (entries missing from ``mod`` are
    ignored), in the module's order: never in a set's, which follows the globals' addresses
    and so changed from one process to the next (a module built from them printed its
    functions in another order, and missed the program cache)."""
    stack: list[GlobalVar] = []
    for e in entries:
        if isinstance(e, GlobalVar):
            if e in mod.functions:
                stack.append(e)
        else:
            try:
                stack.append(mod.get_global_var(e))
            except KeyError:
                continue
    seen: set[GlobalVar] = set()
    while stack:
        gv = stack.pop()
        if gv in seen or gv not in mod.functions:
            continue
        seen.add(gv)
        stack.extend(g for g in global_vars(mod.functions[gv]) if g not in seen)
    return [g for g in mod.functions if g in seen]


def remove_unused_functions(
    mod: Module, entry_functions: Iterable[str | GlobalVar] = ("main",)
) -> Module:
    """A copy of ``mod`` without the globals unreachable from ``entry_functions``.

    A module that defines none of the entry functions (a library of globals) is returned
    unchanged: nothing in it is an entry, so reachability says nothing about what is used.
    """
    keep = reachable_globals(mod, entry_functions)
    if not keep:
        return mod.copy()
    out = mod.copy()
    for gv in list(out.functions):
        if gv not in keep:
            out.remove(gv)
    return out


def RemoveUnusedFunctions(entry_functions: Iterable[str] = ("main",)) -> Pass:
    """The pass: drop the globals that ``entry_functions`` cannot reach (opt level 1)."""
    entries = tuple(entry_functions)

    def run(mod: Module, ctx: PassContext) -> Module:
        return remove_unused_functions(mod, entries)

    return ModulePass(run, PassInfo("RemoveUnusedFunctions", 1))
