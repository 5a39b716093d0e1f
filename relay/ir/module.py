"""The Module: a program's global functions and type definitions.

Globals are keyed by :class:`GlobalVar` (``@name``) and algebraic data types
by :class:`GlobalTypeVar`; both are also found by name. A module is mutable
(definitions are added and updated), like Relay's IRModule; passes return
new modules rather than mutating their input.
"""

from __future__ import annotations

from collections.abc import Iterator

from relay.ir.expr import Constructor, Expr, Function, GlobalVar
from relay.ir.types import GlobalTypeVar, TypeData


class Module:
    """Global functions (``@f``) and type definitions (``type List[A] {...}``)."""

    def __init__(
        self,
        functions: dict[GlobalVar, Function] | None = None,
        type_definitions: dict[GlobalTypeVar, TypeData] | None = None,
    ) -> None:
        self.functions: dict[GlobalVar, Function] = {}
        self.type_definitions: dict[GlobalTypeVar, TypeData] = {}
        self._global_vars: dict[str, GlobalVar] = {}
        self._global_type_vars: dict[str, GlobalTypeVar] = {}
        self._constructors: dict[str, Constructor] = {}
        for data in (type_definitions or {}).values():
            self.add_type(data)
        for gv, func in (functions or {}).items():
            self.add(gv, func)

    @staticmethod
    def from_expr(
        expr: Expr,
        functions: dict[GlobalVar, Function] | None = None,
        type_definitions: dict[GlobalTypeVar, TypeData] | None = None,
    ) -> Module:
        """A module whose ``main`` is ``expr`` (wrapped in a function of its free variables)."""
        mod = Module(functions, type_definitions)
        if not isinstance(expr, Function):
            from relay.ir.analysis import free_vars

            expr = Function(tuple(free_vars(expr)), expr, span=expr.span)
        mod["main"] = expr
        return mod

    # -- functions ---------------------------------------------------------------------------

    def add(self, gv: GlobalVar | str, func: Function, update: bool = False) -> GlobalVar:
        """Define ``gv`` as ``func``; an existing definition is replaced only if ``update``."""
        if isinstance(gv, str):
            gv = self._global_vars.get(gv) or GlobalVar(gv)
        existing = self._global_vars.get(gv.name_hint)
        if existing is not None and existing is not gv:
            raise ValueError(f"module already has a different global named @{gv.name_hint}")
        if gv in self.functions and not update:
            raise ValueError(f"duplicate definition of @{gv.name_hint}")
        if not isinstance(func, Function):
            raise TypeError(f"a global must be a Function, got {type(func).__name__}")
        self._global_vars[gv.name_hint] = gv
        self.functions[gv] = func
        return gv

    def update_func(self, gv: GlobalVar | str, func: Function) -> GlobalVar:
        """Replace the definition of an existing global."""
        return self.add(self.get_global_var(gv) if isinstance(gv, str) else gv, func, update=True)

    def remove(self, gv: GlobalVar | str) -> None:
        """Delete a global function."""
        gv = self.get_global_var(gv) if isinstance(gv, str) else gv
        del self.functions[gv]
        del self._global_vars[gv.name_hint]

    def get_global_var(self, name: str) -> GlobalVar:
        """The global named ``name``; raises ``KeyError`` if there is none."""
        try:
            return self._global_vars[name]
        except KeyError:
            raise KeyError(f"no global function @{name} in the module") from None

    def global_vars(self) -> list[GlobalVar]:
        """The globals, in definition order."""
        return list(self.functions)

    def __getitem__(self, key: str | GlobalVar | GlobalTypeVar) -> Function | TypeData:
        if isinstance(key, GlobalTypeVar):
            return self.type_definitions[key]
        if isinstance(key, str):
            if key in self._global_vars:
                return self.functions[self._global_vars[key]]
            if key in self._global_type_vars:
                return self.type_definitions[self._global_type_vars[key]]
            raise KeyError(f"no global function or type named {key!r} in the module")
        return self.functions[key]

    def function(self, key: str | GlobalVar) -> Function:
        """The function defined as ``key`` (typed accessor for ``mod[key]``)."""
        gv = self.get_global_var(key) if isinstance(key, str) else key
        return self.functions[gv]

    def __setitem__(self, key: str | GlobalVar, func: Function) -> None:
        self.add(key, func, update=True)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            return key in self._global_vars or key in self._global_type_vars
        if isinstance(key, GlobalVar):
            return key in self.functions
        if isinstance(key, GlobalTypeVar):
            return key in self.type_definitions
        return False

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    # -- types ---------------------------------------------------------------------------------

    def add_type(self, data: TypeData, update: bool = False) -> GlobalTypeVar:
        """Define an algebraic data type (or an ``extern type``)."""
        name = data.header.name_hint
        existing = self._global_type_vars.get(name)
        if existing is not None and not update:
            raise ValueError(f"duplicate definition of type {name}")
        if existing is not None and existing is not data.header:
            raise ValueError(f"module already has a different type named {name}")
        for c in data.constructors:
            owner = self._constructors.get(c.name_hint)
            if owner is not None and owner.belong_to is not data.header:
                raise ValueError(f"duplicate constructor {c.name_hint}")
        self._global_type_vars[name] = data.header
        self.type_definitions[data.header] = data
        for c in data.constructors:
            self._constructors[c.name_hint] = c
        return data.header

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        """The type named ``name``; raises ``KeyError`` if there is none."""
        try:
            return self._global_type_vars[name]
        except KeyError:
            raise KeyError(f"no type named {name} in the module") from None

    def get_type(self, name: str) -> TypeData:
        """The definition of the type named ``name``."""
        return self.type_definitions[self.get_global_type_var(name)]

    def get_constructor(self, name: str) -> Constructor:
        """The constructor named ``name``; raises ``KeyError`` if there is none."""
        try:
            return self._constructors[name]
        except KeyError:
            raise KeyError(f"no constructor named {name} in the module") from None

    def constructors(self) -> list[Constructor]:
        """Every constructor of every type, in definition order."""
        return list(self._constructors.values())

    # -- whole-module operations -----------------------------------------------------------------

    def copy(self) -> Module:
        """A shallow copy: same nodes, independent tables."""
        return Module(dict(self.functions), dict(self.type_definitions))

    def import_module(self, other: Module) -> None:
        """Add ``other``'s types and functions that this module does not define yet."""
        for gtv, data in other.type_definitions.items():
            if gtv.name_hint not in self._global_type_vars:
                self.add_type(data)
        for gv, func in other.functions.items():
            if gv.name_hint not in self._global_vars:
                self.add(gv, func)

    def import_prelude(self) -> None:
        """Add the standard prelude (List, Option, Tree and their functions)."""
        from relay.std import prelude

        self.import_module(prelude())

    def astext(self, show_types: bool = False) -> str:
        """The module in the Relay text format."""
        from relay.ir.printer import astext

        return astext(self, show_types=show_types)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        names = ", ".join(f"@{gv.name_hint}" for gv in self.functions)
        return f"Module({names})"
