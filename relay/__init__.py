"""relay: a typed, higher-order, functional IR for machine-learning programs.

``import relay`` is cheap: the text parser (lark) and TVM load on first use.
"""

from __future__ import annotations

import sys as _sys
import types as _types
from typing import TYPE_CHECKING, Any as _Any

from relay import flags
from relay.errors import (
    CompileError,
    ExecutionError,
    FrontendError,
    ParseError,
    RelayError,
    TypeCheckError,
)
from relay.frontend.annotations import DType as _DType, Tensor
from relay.ir import Any, Module, const
from relay.ir.types import DTYPES as _DTYPES

if TYPE_CHECKING:
    from relay.ir.expr import Expr


def astext(obj: object, show_types: bool = False) -> str:
    """``obj`` (a Module, expression or type) in the Relay text format; ``str(obj)`` is the same.

    With ``show_types``, inferred types are printed as ``/* ty=... */`` comments."""
    from relay.ir.printer import astext as _astext

    return _astext(obj, show_types=show_types)


def structural_equal(a: object, b: object, map_free_vars: bool = False) -> bool:
    """Alpha-equivalence of expressions, types or modules (see ``relay.ir.equal``)."""
    from relay.ir.equal import structural_equal as _structural_equal

    return _structural_equal(a, b, map_free_vars=map_free_vars)


def structural_hash(a: object, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal`."""
    from relay.ir.equal import structural_hash as _structural_hash

    return _structural_hash(a, map_free_vars=map_free_vars)


def assert_structural_equal(a: object, b: object, map_free_vars: bool = False) -> None:
    """Raise ``AssertionError`` naming the path of the first mismatch unless ``a`` equals ``b``."""
    from relay.ir.equal import assert_structural_equal as _assert

    _assert(a, b, map_free_vars=map_free_vars)


def parse(text: str, source_name: str = "<string>", *, module: Module | None = None) -> Module:
    """Parse a module in the Relay text format (``#[version = "0.0.5"]`` header optional).

    ``module`` (e.g. ``relay.prelude()``) supplies definitions the text may use; the
    result is a copy of it with the text's definitions added."""
    from relay.ir.parser import parse as _parse

    return _parse(text, source_name, module=module)


def parse_expr(text: str, source_name: str = "<string>", *, module: Module | None = None) -> Expr:
    """Parse a single expression in the Relay text format (globals, types and
    constructors it names come from ``module``)."""
    from relay.ir.parser import parse_expr as _parse_expr

    return _parse_expr(text, source_name, module=module)


def interpret(program: Module | Expr, *args: _Any, mod: Module | None = None) -> _Any:
    """Run ``program`` (a module's ``main``, a function or a closed expression) on ``args``
    with the reference interpreter; numpy arrays in, numpy arrays (tuples, ADT values) out.
    A function or expression that calls globals finds them in ``mod``."""
    from relay.backend.interpreter import interpret as _interpret

    return _interpret(program, *args, mod=mod)


def infer_type(obj: Module | Expr, mod: Module | None = None) -> _Any:
    """``obj`` (a Module or an expression) with ``checked_type`` set on every expression.

    Raises :class:`TypeCheckError` listing every independent error (``.errors``).
    An expression may use the globals and data types of ``mod``."""
    from relay.typecheck.checker import infer_type as _infer_type

    return _infer_type(obj, mod)


def build(
    program: _Any,
    target: _Any = "llvm",
    opt_level: int = 3,
    entry: str = "main",
    *,
    tiered: bool = False,
) -> _Any:
    """Compile ``program`` (a Module's ``entry`` function, a ``@relay`` function or a closed
    Function) for ``target`` (``"llvm"`` or a :class:`Target`): an :class:`Executable`,
    callable on numpy arrays, that can be saved (``.save(path)``) and loaded
    (``relay.Executable.load(path)``) in another process without compiling again.
    ``tiered=True``: it starts on kernels that compile faster, and its specialized kernels
    take over when they have compiled in the background, with the same results (what a
    ``@relay`` function's first call does; docs/backend.md, "Tiered compilation")."""
    from relay.backend.build import build as _build

    return _build(program, target, opt_level, entry, tiered=tiered)


def prelude() -> Module:
    """A fresh module holding the standard prelude (List, Option, Tree and their functions)."""
    from relay.std import prelude as _prelude

    return _prelude()


for _name in _DTYPES:
    if _name != "bool":  # relay.bool_, so that the builtin is not shadowed here
        globals()[_name] = _DType(_name)
del _name
# the names the loop above defines, spelled out for readers and type checkers
float16: _DType
float32: _DType
float64: _DType
bfloat16: _DType
int8: _DType
int16: _DType
int32: _DType
int64: _DType
uint8: _DType
uint16: _DType
uint32: _DType
uint64: _DType
bool_: _DType = _DType("bool")

_SUBMODULES = frozenset({"analysis", "frontend", "lazy", "op", "passes", "typecheck", "std"})
_FRONTEND = frozenset(
    {
        "function",
        "grad",
        "jvp",
        "Derivative",
        "adt",
        "RelayFunction",
        "List",
        "Cons",
        "Nil",
        "Option",
        "Some",
        "Nothing",
        "Tree",
        "Rose",
    }
)

_DEVICE = frozenset({"Device", "DeviceArray", "device_put", "from_dlpack", "gpu_available"})


def __getattr__(name: str) -> _Any:
    """Import the subpackages ``relay.analysis``, ``relay.passes``, ... and the frontend's
    names (``relay.function``, ``relay.grad``, ``relay.adt``) on first access."""
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"relay.{name}")
    if name in _FRONTEND:
        return getattr(importlib.import_module("relay.frontend"), name)
    if name == "nn":
        return importlib.import_module("relay.op.nn")
    if name == "Target":
        return importlib.import_module("relay.backend.target").Target
    if name == "Executable":
        return importlib.import_module("relay.backend.build").Executable
    if name in _DEVICE:
        return getattr(importlib.import_module("relay.backend.device"), name)
    raise AttributeError(f"module 'relay' has no attribute {name!r}")


class _CallableModule(_types.ModuleType):
    """``relay`` itself is the decorator: ``@relay`` is ``@relay.function``."""

    def __call__(self, fn: _Any) -> _Any:
        from relay.frontend import function

        return function(fn)


_sys.modules[__name__].__class__ = _CallableModule


__all__ = [
    "Any",
    "CompileError",
    "ExecutionError",
    "FrontendError",
    "Module",
    "ParseError",
    "RelayError",
    "Tensor",
    "TypeCheckError",
    "assert_structural_equal",
    "astext",
    "build",
    "const",
    "flags",
    "infer_type",
    "interpret",
    "parse",
    "parse_expr",
    "prelude",
    "structural_equal",
    "structural_hash",
]
