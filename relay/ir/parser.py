"""The Relay text-format parser (version 0.0.5).

Parsing runs in three stages:

1. **Comments out.** ``// line`` and nested ``/* block */`` comments are
   replaced by spaces (newlines kept), so every later position is a position
   in the original text.
2. **Syntax.** lark's LALR(1) parser with its contextual lexer reads the
   grammar in ``grammar.lark`` (shipped next to this module) and builds a
   parse tree. The tree keeps every token, so each node knows where it starts
   and ends; the grammar keeps long constructs flat (a block is a list of
   bindings followed by its result, an infix expression a list of operands
   and operators), so a 100,000-binding program is a wide tree, not a deep
   one. lark's errors become :class:`~relay.errors.ParseError` naming what
   was found and what was expected.
3. **Meaning.** A builder walks the tree, resolves names through scopes
   (locals and graph bindings per block, type variables per function,
   globals, types and constructors per module) and builds the IR, giving
   every node a :class:`~relay.ir.span.Span`. Modules are read in two passes,
   so a definition may refer to globals, types and constructors defined later
   in the text. The walk is a trampoline: each handler is a generator that
   yields the sub-trees it needs and receives their IR, and one loop drives
   the generators with an explicit stack, so nesting depth is never limited
   by Python's recursion limit.

Infix operators are resolved by precedence climbing over the flat operand
list (Relay's table: ``* /`` 12, ``+ -`` 10, ``< > <= >=`` 8, ``== !=`` 7, all
left-associative).

A shape entry is a dimension expression over integers and shape variables
(``Tensor[(n * 784, (h - 3) // 2 + 1), float32]``): ``* // %`` bind tighter
than ``+ -``, unary minus tightest, as in Python. Each operation is performed
with :mod:`relay.ir.dim`, so the dimension read is in canonical form and
equals the one the printer was given. Inside a shape ``//`` is floor division,
so the comment stripper leaves it there (use ``/* */`` for a comment inside a
shape).
"""

from __future__ import annotations

import base64
import binascii
import gc
import importlib.resources
import json
import re
import sys
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import GeneratorType
from typing import TYPE_CHECKING, Any as TypingAny, TypeAlias, cast

import numpy as np

from relay.errors import ParseError
from relay.ir import dim as dimension
from relay.ir.attrs import EMPTY_ATTRS, Attrs, AttrValue
from relay.ir.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.ir.module import Module
from relay.ir.span import Span, register_source, source_text
from relay.ir.types import (
    DTYPES,
    Any,
    Dim,
    DType,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)

if TYPE_CHECKING:
    from lark import Lark, Token
    from lark.exceptions import UnexpectedInput

VERSION = "0.0.5"
"""The text-format version this parser reads."""

__all__ = ["VERSION", "parse", "parse_expr", "parse_type", "strip_comments"]


# ---- public entry points ------------------------------------------------------------------------


def parse(text: str, source_name: str = "<string>", *, module: Module | None = None) -> Module:
    """Parse a module: optional ``#[version = "0.0.5"]`` header, definitions, metadata.

    ``module``, if given, supplies types, constructors and globals the text may
    use; the result is a copy of it with the text's definitions added.
    Raises :class:`~relay.errors.ParseError` on any malformed input.
    """
    tree = _syntax(text, source_name, "module")
    with _gc_paused():
        builder = _Builder(source_name, module, text=text)
        result = builder.run(builder.module(tree))
    assert isinstance(result, Module)
    return result


def parse_expr(text: str, source_name: str = "<string>", *, module: Module | None = None) -> Expr:
    """Parse an expression, optionally preceded by ``free_var %x: T;`` declarations.

    Globals (``@f``) are taken from ``module`` if given, otherwise a fresh
    :class:`~relay.ir.expr.GlobalVar` is made per name; constructors and
    types come from ``module``. A trailing ``#[metadata]`` section is read.
    """
    tree = _syntax(text, source_name, "expr_text")
    with _gc_paused():
        builder = _Builder(source_name, module, new_globals=module is None, text=text)
        result = builder.run(builder.expr_text(tree))
    assert isinstance(result, Expr)
    return result


def parse_type(text: str, source_name: str = "<string>", *, module: Module | None = None) -> Type:
    """Parse a type such as ``Tensor[(n, 3), float32]`` or ``fn [A](A) -> List[A]``.

    Shape identifiers that are not bound are free shape variables (one per
    name); type names come from ``module``.
    """
    tree = _syntax(text, source_name, "type_text")
    builder = _Builder(source_name, module, text=text)
    result = builder.run(builder.type(tree.children[0]))
    assert isinstance(result, Type)
    return result


# ---- stage 1: comments --------------------------------------------------------------------------

# The start of a tensor type's shape (``Tensor[(``), where ``//`` is floor division.
_SHAPE_START = r"(?<![A-Za-z0-9_.%@])Tensor[ \t\r\n\f]*\[[ \t\r\n\f]*\("
# The start of a data type's arguments (``V[``), where ``//`` is floor division too: a
# dimension may be a type argument (``V[n // 2]``).
_TYPE_ARGS_START = r"(?<![A-Za-z0-9_.%@])[A-Za-z_][A-Za-z0-9_]*[ \t\r\n\f]*\["
_METADATA_HEADER = r"#\[[ \t]*metadata[ \t]*\]"
_COMMENT_OR_STRING = re.compile(
    rf'"|//|/\*|{_METADATA_HEADER}|(?P<shape>{_SHAPE_START})|(?P<args>{_TYPE_ARGS_START})'
)
# What matters inside a shape: its parentheses and block comments (``//`` is an operator there).
_IN_SHAPE = re.compile(rf'[()"]|/\*|{_METADATA_HEADER}')
# ... and inside type arguments: their brackets and block comments.
_IN_TYPE_ARGS = re.compile(rf'[\[\]"]|/\*|{_METADATA_HEADER}')
_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\.)*"')
_BLOCK_DELIM = re.compile(r"/\*|\*/")


def _blank(segment: str) -> str:
    """``segment`` with everything but newlines turned into spaces."""
    return re.sub(r"[^\n]", " ", segment)


def strip_comments(text: str, source_name: str = "<string>") -> str:
    """``text`` with ``//`` and nested ``/* */`` comments blanked, keeping every position.

    String literals are respected, and scanning stops at a ``#[metadata]``
    section (its JSON is not Relay text). Inside the shape of a tensor type
    (from ``Tensor[(`` to its closing parenthesis) and inside the arguments of a
    data type (from ``Name[`` to its closing bracket) ``//`` is floor division,
    not a comment. An unterminated block comment is a
    :class:`~relay.errors.ParseError`.
    """
    if "/" not in text:
        return text
    out: list[str] = []
    pos = 0
    depth = 0  # parentheses (in a shape) or brackets (in type arguments) open; 0 outside
    inside = _IN_SHAPE  # what is scanned for while depth > 0
    while True:
        m = (inside if depth else _COMMENT_OR_STRING).search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        kind = m.group()
        if kind.startswith("#"):
            out.append(text[pos:])
            break
        if kind == '"':
            end_m = _STRING_BODY.match(text, m.end())
            end = end_m.end() if end_m else m.end()
            out.append(text[pos:end])
            pos = end
            continue
        opened = m.lastgroup if not depth else None
        if opened is not None or kind in ("(", ")", "[", "]"):
            if opened is not None:
                inside = _IN_SHAPE if opened == "shape" else _IN_TYPE_ARGS
            depth += -1 if kind in (")", "]") else 1
            out.append(text[pos : m.end()])
            pos = m.end()
            continue
        out.append(text[pos : m.start()])
        if kind == "//":
            end = text.find("\n", m.end())
            end = len(text) if end < 0 else end
        else:
            nesting = 1
            scan = m.end()
            while nesting:
                d = _BLOCK_DELIM.search(text, scan)
                if d is None:
                    raise ParseError(
                        "unterminated block comment", _span_at(text, source_name, m.start(), 2)
                    )
                nesting += 1 if d.group() == "/*" else -1
                scan = d.end()
            end = scan
        out.append(_blank(text[m.start() : end]))
        pos = end
    return "".join(out)


def _span_at(text: str, source: str, offset: int, length: int) -> Span:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Span(source, line, col, line, col + length)


# ---- stage 2: syntax ----------------------------------------------------------------------------


class _Node:
    """A parse-tree node that knows the region of text it covers (lark ``tree_class``)."""

    __slots__ = ("children", "column", "data", "end_column", "end_line", "line")

    def __init__(self, data: str, children: list[TypingAny]) -> None:
        self.data = data
        self.children: list[_Node | Token] = children
        if children:
            first, last = children[0], children[-1]
            self.line: int = first.line
            self.column: int = first.column
            self.end_line: int = last.end_line
            self.end_column: int = last.end_column
        else:  # an empty module
            self.line = self.column = self.end_line = self.end_column = 1

    def __repr__(self) -> str:
        return f"_Node({self.data!r}, {self.children!r})"


_Child: TypeAlias = "_Node | Token"


@cache
def _lark() -> Lark:
    """The lark parser, built once per process on first use."""
    from lark import Lark

    grammar = importlib.resources.files("relay.ir").joinpath("grammar.lark").read_text("utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start=["module", "expr_text", "type_text"],
        keep_all_tokens=True,
        maybe_placeholders=False,
        tree_class=_Node,
    )


_TERMINAL_NAMES: dict[str, str] = {
    "LOCAL": "a local variable",
    "GLOBAL": "a global",
    "IDENT": "an identifier",
    "NUMBER": "a number",
    "NEG_NUMBER": "a negative number",
    "INDEX": "a tuple index",
    "STRING": "a string",
    "BINOP": "an operator",
    "DIM_OP": "an operator",
    "VERSION": "a version header",
    "METADATA": "a metadata section",
    "$END": "end of input",
}

_EXPR_START = frozenset(
    {
        "a local variable",
        "a global",
        "an identifier",
        "a number",
        "a negative number",
        '"True"',
        '"False"',
        '"("',
        '"-"',
        '"fn"',
        '"if"',
        '"match"',
        '"match?"',
        '"ref"',
        '"ref_read"',
        '"ref_write"',
        '"meta"',
    }
)
_TYPE_START = frozenset({'"Tensor"', '"("', '"fn"', '"ref"', '"_"', "an identifier"})


@cache
def _terminal_display() -> dict[str, str]:
    """How each terminal is named in error messages: ``")"``, ``a local variable``, ..."""
    from lark.lexer import PatternStr

    out = dict(_TERMINAL_NAMES)
    for term in _lark().terminals:
        if isinstance(term.pattern, PatternStr):
            out[term.name] = json.dumps(term.pattern.value)
    return out


def _describe_expected(names: set[str]) -> str:
    display = _terminal_display()
    shown = {display.get(n, n) for n in names if not n.startswith("__IGNORE")}
    for group, label in ((_EXPR_START, "an expression"), (_TYPE_START, "a type")):
        if group <= shown:
            shown = (shown - group) | {label}
    items = sorted(shown, key=lambda s: (not s.startswith('"'), s))
    if len(items) == 1:
        return f"expected {items[0]}"
    return "expected one of: " + ", ".join(items)


def _quote(text: str) -> str:
    """``text`` in double quotes (single quotes if it holds a double quote)."""
    if not text.isprintable():
        return repr(text)
    return f"'{text}'" if '"' in text else f'"{text}"'


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    return _quote(str(tok))


def _syntax(text: str, source_name: str, start: str) -> _Node:
    """Parse ``text`` from rule ``start`` into a tree, or raise a ParseError."""
    from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

    register_source(source_name, text)
    clean = strip_comments(text, source_name)
    try:
        with _gc_paused():
            tree = cast("_Node", _lark().parse(clean, start=start))
    except UnexpectedToken as exc:
        tok = exc.token
        if tok.type == "$END":
            span = _end_span(clean, source_name)
        else:
            span = Span(source_name, tok.line, tok.column, tok.end_line, tok.end_column)
        expected = _describe_expected(_acceptable(exc, exc.expected))
        raise ParseError(f"unexpected {_describe_token(tok)}; {expected}", span) from None
    except UnexpectedCharacters as exc:
        span = Span(source_name, exc.line, exc.column, exc.line, exc.column + 1)
        rest = clean[exc.pos_in_stream :]
        first_line = rest.split("\n", 1)[0]
        if rest.startswith("#["):
            header = first_line[: first_line.find("]") + 1] if "]" in first_line else "#["
            span = Span(source_name, exc.line, exc.column, exc.line, exc.column + len(header))
            message = (
                f'unsupported header {header}; expected #[version = "{VERSION}"] or #[metadata]'
            )
        elif rest.startswith('"'):
            message = "unterminated string"
        else:
            message = f"unexpected character {_quote(exc.char)}"
            allowed = _acceptable(exc, exc.allowed or set())
            if allowed:
                message += "; " + _describe_expected(allowed)
        raise ParseError(message, span) from None
    except UnexpectedInput as exc:  # pragma: no cover - LALR raises the two above
        line, col = getattr(exc, "line", 1), getattr(exc, "column", 1)
        raise ParseError(
            f"syntax error: {exc}", Span(source_name, line, col, line, col + 1)
        ) from None
    except LarkError as exc:  # pragma: no cover - grammar or configuration failure
        raise ParseError(f"parser failure: {exc}") from None
    return tree


def _acceptable(exc: UnexpectedInput, fallback: Collection[str]) -> set[str]:
    """The terminals the parser would really accept where it failed.

    The LALR tables merge states, so the terminals listed in a state can
    include some that a reduction would then reject; lark's interactive
    parser tries each one.
    """
    interactive = getattr(exc, "interactive_parser", None)
    if interactive is not None:
        accepted: set[str] = interactive.accepts()
        return accepted
    return set(fallback)  # pragma: no cover - lark always attaches the interactive parser


def _end_span(text: str, source: str) -> Span:
    """A one-character span just after the last non-blank character of ``text``."""
    stripped = text.rstrip()
    if not stripped:
        return Span(source, 1, 1, 1, 2)
    offset = len(stripped)
    span = _span_at(text, source, offset, 1)
    return span


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic structures.

    Parsing allocates millions of short-lived objects; the collector would
    otherwise scan them repeatedly (the trees hold no cycles it could free).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ---- literals -----------------------------------------------------------------------------------

_NUMBER_PARTS = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(.*)", re.DOTALL)

_SUFFIXES: dict[str, str] = {
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f": "float32",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "bf16": "bfloat16",
}

_INT_RANGES: dict[str, tuple[int, int]] = {
    name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
}

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _numpy_dtype(dtype: str) -> np.dtype[TypingAny]:
    if dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - ml_dtypes comes with TVM
            raise ValueError("bfloat16 constants need the ml_dtypes package") from None
        bf16: np.dtype[TypingAny] = np.dtype(ml_dtypes.bfloat16)
        return bf16
    return np.dtype(dtype)


@dataclass(frozen=True, slots=True)
class _Literal:
    """A numeric literal split into its digits, its dtype and whether it is integral."""

    digits: str
    dtype: str
    integral: bool


@lru_cache(maxsize=4096)
def _split_number(text: str) -> _Literal:
    """Classify ``text`` (``1``, ``-`` excluded, ``2.5f16``, ``3i64``); ValueError if malformed."""
    m = _NUMBER_PARTS.fullmatch(text)
    if m is None:  # pragma: no cover - the lexer only produces matching text
        raise ValueError(f"invalid number {text}")
    digits, suffix = m.group(1), m.group(2)
    is_float_text = "." in digits or "e" in digits or "E" in digits
    if suffix == "":
        return _Literal(digits, "float32" if is_float_text else "int32", not is_float_text)
    dtype = _SUFFIXES.get(suffix)
    if dtype is None:
        raise ValueError(f"unknown literal suffix {suffix} in {text}")
    if is_float_text and dtype in _INT_RANGES:
        raise ValueError(f"integer suffix {suffix} on non-integral literal {digits}")
    return _Literal(digits, dtype, dtype in _INT_RANGES)


def _literal_array(lit: _Literal, negative: bool) -> np.ndarray:
    """The rank-0 array of a literal; ValueError (with the message to report) if out of range."""
    text = ("-" if negative else "") + lit.digits
    if lit.integral:
        value = int(text)
        lo, hi = _INT_RANGES[lit.dtype]
        if not lo <= value <= hi:
            raise ValueError(f"literal {text} out of range for {lit.dtype}")
        return np.array(value, dtype=lit.dtype)
    fvalue = float(text)
    if lit.dtype == "float32" and abs(fvalue) <= _FLOAT32_MAX:
        return np.array(fvalue, dtype="float32")
    with np.errstate(all="ignore"):
        arr = np.array(fvalue, dtype=_numpy_dtype(lit.dtype))
    if not np.isfinite(float(arr)):
        raise ValueError(f"literal {text} out of range for {lit.dtype}")
    return arr


def _metadata_constant(entry: dict[str, TypingAny]) -> np.ndarray:
    """One ``{"dtype", "shape", "data"}`` entry of the metadata section as an array."""
    if not isinstance(entry, dict):
        raise TypeError("expected a JSON object")
    dtype_name = str(entry["dtype"])
    if dtype_name not in DTYPES:
        raise ValueError(f"unknown dtype {dtype_name}")
    dtype = _numpy_dtype(dtype_name)
    shape = tuple(int(d) for d in entry["shape"])
    raw = base64.b64decode(entry["data"], validate=True)
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise ValueError(
            f"{len(raw)} bytes of data for a {dtype_name} tensor of shape {list(shape)} "
            f"(expected {expected})"
        )
    arr = np.frombuffer(raw, dtype=dtype)
    if sys.byteorder == "big":  # pragma: no cover - the data is little-endian
        arr = arr.byteswap()
    return arr.reshape(shape).copy()


# ---- stage 3: meaning ---------------------------------------------------------------------------

Task: TypeAlias = Generator[TypingAny, TypingAny, TypingAny]
"""A handler: yields sub-tasks (or finished values) and returns its result."""

_PRECEDENCE: dict[str, int] = {
    "*": 12,
    "/": 12,
    "+": 10,
    "-": 10,
    "<": 8,
    ">": 8,
    "<=": 8,
    ">=": 8,
    "==": 7,
    "!=": 7,
}

_INFIX_OPS: dict[str, str] = {
    "*": "multiply",
    "/": "divide",
    "+": "add",
    "-": "subtract",
    "<": "less",
    ">": "greater",
    "<=": "less_equal",
    ">=": "greater_equal",
    "==": "equal",
    "!=": "not_equal",
}

_DIM_PRECEDENCE: dict[str, int] = {"*": 12, "//": 12, "%": 12, "+": 10, "-": 10}

_DIM_OPS: dict[str, Callable[[Dim, Dim], Dim]] = {
    "*": dimension.mul,
    "//": dimension.floordiv,
    "%": dimension.floormod,
    "+": dimension.add,
    "-": dimension.sub,
}

_KINDS: dict[str, Kind] = {"Type": Kind.TYPE, "Shape": Kind.SHAPE, "BaseType": Kind.BASE_TYPE}


@dataclass(slots=True)
class _FunctionFrame:
    """The type scope of an outermost function and the shape variables it binds implicitly."""

    type_scope: dict[str, TypeVar]
    implicit: list[TypeVar] = field(default_factory=list)


class _Builder:
    """Turns parse trees into IR: name resolution, literals, spans, error reporting."""

    def __init__(
        self, source: str, base: Module | None, new_globals: bool = False, text: str = ""
    ) -> None:
        self.source = source
        self.text = text  # the source text (comments blanked), quoted in some messages
        self.base = base
        self.new_globals = new_globals
        self.scopes: list[dict[str, Expr]] = [{}]
        self.type_scopes: list[dict[str, TypeVar]] = []
        self.frames: list[_FunctionFrame] = []
        self.free_shape_vars: dict[str, TypeVar] = {}
        self.globals: dict[str, GlobalVar] = {}
        self.types: dict[str, GlobalTypeVar] = {}
        self.type_arity: dict[str, int] = {}
        self.type_kinds: dict[str, tuple[Kind, ...]] = {}  # the kinds of each type's parameters
        self.ctors: dict[str, Constructor] = {}
        self.ops: dict[str, Expr] = {}
        self.meta: list[np.ndarray] | None = None
        self.meta_nodes: dict[int, Constant] = {}
        if base is not None:
            self.globals.update({gv.name_hint: gv for gv in base.functions})
            for header, data in base.type_definitions.items():
                self.types[header.name_hint] = header
                self.type_arity[header.name_hint] = len(data.type_params)
                self.type_kinds[header.name_hint] = tuple(p.kind for p in data.type_params)
                for c in data.constructors:
                    self.ctors[c.name_hint] = c
        self.dispatch: dict[str, Callable[[_Node], Task | Expr]] = {
            "chain": self.chain,
            "neg": self.neg,
            "call": self.call,
            "proj": self.proj,
            "unit": self.unit,
            "paren": self.paren,
            "tuple": self.tuple,
            "fn_expr": self.function,
            "if_expr": self.if_expr,
            "match_expr": self.match,
            "ref_create": self.ref_create,
            "ref_read": self.ref_read,
            "ref_write": self.ref_write,
            "meta_ref": self.meta_ref,
        }
        self.type_dispatch: dict[str, Callable[[_Node], Task | Type]] = {
            "tensor_type": self.tensor_type,
            "tuple_type": self.tuple_type,
            "func_type": self.func_type,
            "ref_type": self.ref_type,
            "incomplete_type": self.incomplete_type,
            "named_type": self.named_type,
        }

    # -- driver -----------------------------------------------------------------------------------

    @staticmethod
    def run(task: object) -> TypingAny:
        """Drive ``task`` and the sub-tasks it yields to completion, without recursion.

        A task is a generator; anything else is an already finished value.
        """
        if type(task) is not GeneratorType:
            return task
        stack: list[Task] = [task]
        value: TypingAny = None
        while True:
            try:
                sub = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                if not stack:
                    return value
                continue
            if type(sub) is GeneratorType:
                stack.append(sub)
                value = None
            else:
                value = sub

    # -- spans and errors -------------------------------------------------------------------------

    def span(self, node: _Child) -> Span:
        return Span(self.source, node.line, node.column, node.end_line, node.end_column)  # type: ignore[arg-type]

    def span2(self, first: _Child, last: _Child) -> Span:
        return Span(self.source, first.line, first.column, last.end_line, last.end_column)  # type: ignore[arg-type]

    def error(self, message: str, where: _Child | Span) -> ParseError:
        span = where if isinstance(where, Span) else self.span(where)
        return ParseError(message, span)

    # -- modules ----------------------------------------------------------------------------------

    def check_header(self, children: Sequence[_Child]) -> list[_Child]:
        """Check the version header, load the metadata section; the remaining children."""
        rest = list(children)
        if rest and _is_token(rest[0], "VERSION"):
            tok = rest.pop(0)
            version = str(tok).split("=", 1)[1].strip().rstrip("]").strip().strip('"')
            if version != VERSION:
                raise self.error(
                    f'unsupported text format version "{version}"; relay reads version "{VERSION}"',
                    tok,
                )
        if rest and _is_token(rest[-1], "METADATA"):
            self.meta = self.load_metadata(_as_token(rest.pop()))
        return rest

    def module(self, tree: _Node) -> Task:
        defs = self.check_header(tree.children)
        mod = self.base.copy() if self.base is not None else Module()
        type_defs: list[_Node] = []
        func_defs: list[tuple[GlobalVar, _Node]] = []
        # Pass 1: every name, so that definitions may refer to later ones.
        for d in defs:
            assert isinstance(d, _Node)
            if d.data == "func_def":
                name_tok = d.children[1]
                name = str(name_tok)[1:]
                if name in self.globals:
                    raise self.error(f"duplicate definition of global @{name}", name_tok)
                gv = GlobalVar(name, span=self.span(name_tok))
                self.globals[name] = gv
                func_defs.append((gv, d))
            else:
                name_tok = d.children[2] if d.data == "extern_type_def" else d.children[1]
                name = str(name_tok)
                if name in self.types:
                    raise self.error(f"duplicate definition of type {name}", name_tok)
                self.types[name] = GlobalTypeVar(name, span=self.span(name_tok))
                params = _find(d, "type_params")
                self.type_arity[name] = len(params.children[1:-1:2]) if params else 0
                self.type_kinds[name] = _param_kinds(params)
                type_defs.append(d)
        seen_ctors = set(self.ctors)
        for d in type_defs:
            ctor_list = _find(d, "ctor_list")
            for ctor in ctor_list.children[1:-1:2] if ctor_list else ():
                assert isinstance(ctor, _Node)
                ctor_tok = ctor.children[0]
                if str(ctor_tok) in seen_ctors:
                    raise self.error(f"duplicate definition of constructor {ctor_tok}", ctor_tok)
                seen_ctors.add(str(ctor_tok))
        # Pass 2: type definitions (constructor fields refer only to type names).
        for d in type_defs:
            data = yield self.type_def(d)
            mod.add_type(data)
        # Pass 3: functions.
        for gv, d in func_defs:
            func = yield self.function(d)
            mod.add(gv, func)
        return mod

    def type_def(self, node: _Node) -> Task:
        is_extern = node.data == "extern_type_def"
        name_tok = node.children[2] if is_extern else node.children[1]
        header = self.types[str(name_tok)]
        scope: dict[str, TypeVar] = {}
        self.type_scopes.append(scope)
        params = self.type_params(_find(node, "type_params"), scope)
        ctors: list[Constructor] = []
        ctor_list = _find(node, "ctor_list")
        for tag, ctor in enumerate(ctor_list.children[1:-1:2] if ctor_list else ()):
            assert isinstance(ctor, _Node)
            inputs: list[Type] = []
            if len(ctor.children) > 1:
                fields = ctor.children[1]
                assert isinstance(fields, _Node)
                for f in fields.children[1:-1:2]:
                    inputs.append((yield self.type(f)))
            c = Constructor(str(ctor.children[0]), tuple(inputs), header, tag, span=self.span(ctor))
            self.ctors[c.name_hint] = c
            ctors.append(c)
        self.type_scopes.pop()
        return TypeData(header, params, tuple(ctors), is_extern, span=self.span(node))

    def type_params(self, node: _Node | None, scope: dict[str, TypeVar]) -> tuple[TypeVar, ...]:
        """Bind the type parameters ``[A, n: Shape]`` in ``scope``."""
        if node is None:
            return ()
        out: list[TypeVar] = []
        for p in node.children[1:-1:2]:
            assert isinstance(p, _Node)
            name_tok = p.children[0]
            kind = Kind.TYPE
            if len(p.children) == 3:
                kind_tok = p.children[2]
                found = _KINDS.get(str(kind_tok))
                if found is None:
                    raise self.error(
                        f"unknown kind {kind_tok}; expected Type, Shape or BaseType", kind_tok
                    )
                kind = found
            name = str(name_tok)
            if name in scope:
                raise self.error(f"duplicate type parameter {name}", name_tok)
            tv = TypeVar(name, kind, span=self.span(p))
            scope[name] = tv
            out.append(tv)
        return tuple(out)

    # -- expression texts -------------------------------------------------------------------------

    def expr_text(self, tree: _Node) -> Task:
        items = self.check_header(tree.children)
        free: dict[str, Expr] = {}
        self.scopes.append(free)
        for item in items[:-1]:
            assert isinstance(item, _Node)
            name_tok = item.children[1]
            name = str(name_tok)[1:]
            if name in free:
                raise self.error(f"duplicate free variable %{name}", name_tok)
            ann = (yield self.type(item.children[3])) if len(item.children) == 5 else None
            free[name] = Var(name, ann, span=self.span(name_tok))
        block = items[-1]
        assert isinstance(block, _Node)
        return (yield self.block(block))

    # -- blocks -----------------------------------------------------------------------------------

    def block(self, node: _Node) -> Task:
        """Bindings then a result; ``let``s nest around the result, graph bindings only name."""
        scope: dict[str, Expr] = {}
        self.scopes.append(scope)
        lets: list[tuple[Var, Expr, _Node]] = []
        items = node.children
        for i in range(len(items) - 1):
            item = items[i]
            assert isinstance(item, _Node)
            ch = item.children
            kind = item.data
            if kind == "graph_binding":
                value = yield self.expr(ch[2])
                scope[str(ch[0])[1:]] = value
            elif kind == "let_binding":
                name_tok = ch[1]
                ann = (yield self.type(ch[3])) if len(ch) == 7 else None
                var = Var(str(name_tok)[1:], ann, span=self.span(name_tok))
                value_node = ch[-2]
                # A function value may refer to itself (a recursive closure); any
                # other value sees the enclosing binding of the same name.
                if isinstance(value_node, _Node) and value_node.data == "fn_expr":
                    scope[var.name_hint] = var
                    value = yield self.expr(value_node)
                else:
                    value = yield self.expr(value_node)
                    scope[var.name_hint] = var
                lets.append((var, value, item))
            else:  # seq_item: `e;` evaluates e for its effect
                value = yield self.expr(ch[0])
                lets.append((Var("", span=self.span(ch[0])), value, item))
        last = items[-1]
        body = yield self.expr(last)
        self.scopes.pop()
        for var, value, item in reversed(lets):
            body = Let(var, value, body, span=self.span2(item, last))
        return body

    # -- expressions ------------------------------------------------------------------------------

    def expr(self, node: _Child) -> Task | Expr:
        """The IR of an expression node: a finished Expr for a token, else a task."""
        if isinstance(node, _Node):
            return self.dispatch[node.data](node)
        return self.token_expr(node)

    def token_expr(self, tok: Token) -> Expr:
        kind = tok.type
        if kind == "LOCAL":
            return self.lookup_local(tok)
        if kind == "NUMBER":
            return self.number(tok, None)
        if kind == "NEG_NUMBER":
            return self.number(tok, tok)
        if kind == "GLOBAL":
            return self.lookup_global(tok)
        if kind == "IDENT":
            return self.ident_value(tok)
        if kind in ("TRUE", "FALSE"):
            return Constant(np.array(kind == "TRUE"), span=self.span(tok))
        raise self.error(f"unexpected {tok}", tok)  # pragma: no cover - grammar prevents it

    def lookup_local(self, tok: Token) -> Expr:
        name = str(tok)[1:]
        for scope in reversed(self.scopes):
            hit = scope.get(name)
            if hit is not None:
                return hit
        raise self.error(f"unknown variable %{name}", tok)

    def lookup_global(self, tok: Token) -> GlobalVar:
        name = str(tok)[1:]
        gv = self.globals.get(name)
        if gv is None:
            if not self.new_globals:
                raise self.error(f"unknown global @{name}", tok)
            gv = GlobalVar(name, span=self.span(tok))
            self.globals[name] = gv
        return gv

    def ident_value(self, tok: Token) -> Expr:
        """A bare identifier: a constructor (0-arity ones are applied) or an operator."""
        ctor = self.ctors.get(str(tok))
        if ctor is not None:
            if not ctor.inputs:
                return Call(ctor, (), span=self.span(tok))
            return ctor
        return self.lookup_op(tok)

    def lookup_op(self, tok: Token) -> Expr:
        name = str(tok)
        op = self.ops.get(name)
        if op is None:
            from relay.op.registry import get_op, has_op

            if not has_op(name):
                what = "constructor" if name[:1].isupper() and "." not in name else "operator"
                raise self.error(f"unknown {what} {name}", tok)
            op = get_op(name).op
            self.ops[name] = op
        return op

    def number(self, tok: Token, minus: Token | None) -> Constant:
        """A literal; ``minus`` is the ``-`` before it (the token itself for ``NEG_NUMBER``)."""
        span = self.span2(minus, tok) if minus is not None else self.span(tok)
        try:
            data = _literal_array(_split_number(str(tok).lstrip("-")), minus is not None)
        except ValueError as exc:
            raise self.error(str(exc), span) from None
        return Constant(data, span=span)

    def chain(self, node: _Node) -> Task:
        """Infix operators by precedence climbing over the flat operand/operator list."""
        ch = node.children
        # Each operand with the first and last parse-tree pieces it covers (for spans).
        operands: list[tuple[Expr, _Child, _Child]] = []
        ops: list[Token] = []

        def reduce() -> None:
            op_tok = ops.pop()
            rhs, _, last = operands.pop()
            lhs, first, _ = operands.pop()
            op = self.lookup_op_name(_INFIX_OPS[str(op_tok)], op_tok)
            operands.append((Call(op, (lhs, rhs), span=self.span2(first, last)), first, last))

        for i in range(0, len(ch), 2):
            if i:
                op_tok = _as_token(ch[i - 1])
                prec = _PRECEDENCE[str(op_tok)]
                while ops and _PRECEDENCE[str(ops[-1])] >= prec:
                    reduce()
                ops.append(op_tok)
            value = yield self.expr(ch[i])
            operands.append((value, ch[i], ch[i]))
        while ops:
            reduce()
        return operands[0][0]

    def lookup_op_name(self, name: str, where: _Child) -> Expr:
        op = self.ops.get(name)
        if op is None:
            from relay.op.registry import get_op, has_op

            if not has_op(name):
                raise self.error(f"unknown operator {name}", where)
            op = get_op(name).op
            self.ops[name] = op
        return op

    def neg(self, node: _Node) -> Task:
        minus, operand = node.children
        assert not isinstance(minus, _Node)
        if not isinstance(operand, _Node) and operand.type == "NUMBER":
            return self.number(operand, minus)
        value = yield self.expr(operand)
        op = self.lookup_op_name("negative", minus)
        return Call(op, (value,), span=self.span(node))

    def call(self, node: _Node) -> Task:
        callee, args_node = node.children
        assert isinstance(args_node, _Node)
        ctor: Constructor | None = None
        op_name: str | None = None
        if not isinstance(callee, _Node) and callee.type == "IDENT":
            ctor = self.ctors.get(str(callee))
            if ctor is None:
                fn: Expr = self.lookup_op(callee)
                op_name = str(callee)
            else:
                fn = ctor
        else:
            fn = yield self.expr(callee)
        args: list[Expr] = []
        attrs: dict[str, AttrValue] = {}
        attr_nodes: dict[str, _Node] = {}
        for item in args_node.children[1:-1:2]:
            if isinstance(item, _Node) and item.data == "attr":
                name_tok = item.children[0]
                name = str(name_tok)
                if name in attrs:
                    raise self.error(f"duplicate attribute {name}", name_tok)
                attrs[name] = yield self.attr_value(item.children[2])
                attr_nodes[name] = item
            else:
                if attrs:
                    raise self.error("positional argument after attributes", item)
                args.append((yield self.expr(item)))
        span = self.span(node)
        if ctor is not None and len(args) != len(ctor.inputs):
            raise self.error(
                f"constructor {ctor.name_hint} takes {_plural(len(ctor.inputs), 'argument')}, "
                f"got {len(args)}",
                span,
            )
        if op_name is not None:
            return Call(
                fn, tuple(args), self.validate_attrs(op_name, attrs, attr_nodes, callee), span=span
            )
        return Call(fn, tuple(args), self.make_attrs(attrs, node), span=span)

    def validate_attrs(
        self, op_name: str, attrs: dict[str, AttrValue], nodes: dict[str, _Node], callee: _Child
    ) -> Attrs:
        """``attrs`` checked against ``op_name``'s schema; errors point at the attribute."""
        from relay.op.registry import AttrValidationError, get_op

        opdef = get_op(op_name)
        if not attrs and not opdef.attrs_schema:
            return EMPTY_ATTRS
        try:
            return opdef.validate_attrs(self.make_attrs(attrs, callee))
        except AttrValidationError as exc:
            message = str(exc)
            where: _Child = callee
            for name, attr_node in nodes.items():
                if re.search(rf"\battribute {re.escape(name)}\b", message) or re.search(
                    rf"has no attribute .*\b{re.escape(name)}\b", message
                ):
                    where = attr_node
                    break
            raise self.error(message, where) from None

    def make_attrs(self, attrs: dict[str, AttrValue], where: _Child) -> Attrs:
        """``attrs`` as an :class:`Attrs` (whose normalisation recurses into nested lists)."""
        if not attrs:
            return EMPTY_ATTRS
        try:
            return Attrs(attrs)
        except RecursionError:
            raise self.error("attribute value nested too deeply", where) from None

    def attr_value(self, node: _Child) -> Task | AttrValue:
        """An attribute value: number, string, bool, None or a (nested) list."""
        if isinstance(node, _Node):
            if node.data == "neg_number":
                _, num = node.children
                assert not isinstance(num, _Node)
                return self.attr_number(num, negative=True, where=node)
            return self.attr_list(node)
        kind = node.type
        if kind in ("NUMBER", "NEG_NUMBER"):
            return self.attr_number(node, negative=kind == "NEG_NUMBER", where=node)
        if kind == "STRING":
            try:
                text: str = json.loads(str(node))
            except json.JSONDecodeError as exc:
                raise self.error(f"invalid string literal: {exc.msg}", node) from None
            return text
        if kind in ("TRUE", "FALSE"):
            return kind == "TRUE"
        if str(node) == "None":
            return None
        raise self.error(f"invalid attribute value {node}", node)

    def attr_list(self, node: _Node) -> Task:
        values: list[AttrValue] = []
        for item in node.children[1:-1:2]:
            values.append((yield self.attr_value(item)))
        return tuple(values)

    def attr_number(self, tok: Token, negative: bool, where: _Child) -> int | float:
        try:
            lit = _split_number(str(tok).lstrip("-"))
        except ValueError as exc:
            raise self.error(str(exc), where) from None
        text = ("-" if negative else "") + lit.digits
        return int(text) if lit.integral else float(text)

    def proj(self, node: _Node) -> Task:
        value = yield self.expr(node.children[0])
        return TupleGetItem(value, int(str(node.children[2])), span=self.span(node))

    def unit(self, node: _Node) -> Expr:
        return Tuple((), span=self.span(node))

    def paren(self, node: _Node) -> Task:
        inner = node.children[1]
        assert isinstance(inner, _Node)
        return (yield self.block(inner))

    def tuple(self, node: _Node) -> Task:
        fields: list[Expr] = []
        for f in node.children[1:-1:2]:
            fields.append((yield self.expr(f)))
        return Tuple(tuple(fields), span=self.span(node))

    def function(self, node: _Node) -> Task:
        """``fn [T](%x: T, Attr=v) -> R { body }`` and ``def @f...`` (the same after the name)."""
        tscope: dict[str, TypeVar] = {}
        self.type_scopes.append(tscope)
        outermost = not self.frames
        frame = _FunctionFrame(tscope) if outermost else self.frames[0]
        self.frames.append(frame)
        type_params: tuple[TypeVar, ...] = ()
        params: list[Var] = []
        attrs: dict[str, AttrValue] = {}
        ret_type: Type | None = None
        body: Expr | None = None
        scope: dict[str, Expr] = {}
        self.scopes.append(scope)
        for part in node.children:
            if not isinstance(part, _Node):
                continue
            kind = part.data
            if kind == "type_params":
                type_params = self.type_params(part, tscope)
            elif kind == "param_list":
                for p in part.children[1:-1:2]:
                    assert isinstance(p, _Node)
                    name_tok = p.children[0]
                    name = str(name_tok)
                    if p.data == "attr":
                        if name in attrs:
                            raise self.error(f"duplicate attribute {name}", name_tok)
                        attrs[name] = yield self.attr_value(p.children[2])
                        continue
                    if attrs:
                        raise self.error(f"parameter {name} after attributes", p)
                    if name[1:] in scope:
                        raise self.error(f"duplicate parameter {name}", name_tok)
                    ann = (yield self.type(p.children[2])) if len(p.children) == 3 else None
                    var = Var(name[1:], ann, span=self.span(name_tok))
                    scope[name[1:]] = var
                    params.append(var)
            elif kind == "ret_type":
                ret_type = yield self.type(part.children[1])
            elif kind == "block":
                body = yield self.block(part)
        assert body is not None
        self.scopes.pop()
        self.frames.pop()
        self.type_scopes.pop()
        if outermost:
            type_params += tuple(frame.implicit)
        fn_attrs = self.make_attrs(attrs, node)
        return Function(tuple(params), body, ret_type, type_params, fn_attrs, span=self.span(node))

    def if_expr(self, node: _Node) -> Task:
        ch = node.children
        cond = yield self.block(_as_node(ch[2]))
        then = yield self.block(_as_node(ch[5]))
        other = yield self.block(_as_node(ch[9]))
        return If(cond, then, other, span=self.span(node))

    def match(self, node: _Node) -> Task:
        ch = node.children
        complete = _as_token(ch[0]).type == "MATCH"
        data = yield self.expr(ch[1])
        clauses: list[Clause] = []
        for c in ch[3:-1:2]:
            assert isinstance(c, _Node)
            self.scopes.append({})
            pattern = yield self.pattern(c.children[0], set())
            rhs_node = _as_node(c.children[2])
            if rhs_node.data == "braced_block":
                rhs_node = _as_node(rhs_node.children[1])
            rhs = yield self.block(rhs_node)
            self.scopes.pop()
            clauses.append(Clause(pattern, rhs, span=self.span(c)))
        return Match(data, tuple(clauses), complete, span=self.span(node))

    def ref_create(self, node: _Node) -> Task:
        value = yield self.expr(node.children[2])
        return RefCreate(value, span=self.span(node))

    def ref_read(self, node: _Node) -> Task:
        ref = yield self.expr(node.children[2])
        return RefRead(ref, span=self.span(node))

    def ref_write(self, node: _Node) -> Task:
        ref = yield self.expr(node.children[2])
        value = yield self.expr(node.children[4])
        return RefWrite(ref, value, span=self.span(node))

    # -- metadata ---------------------------------------------------------------------------------

    def load_metadata(self, tok: Token) -> list[np.ndarray]:
        """The constants of a ``#[metadata]`` section (JSON after the header line)."""
        text = str(tok)
        body_start = text.index("]") + 1
        body = text[body_start:]
        header = self.span(tok)
        where = Span(
            self.source, header.line, header.column, header.line, header.column + body_start
        )
        try:
            table = json.loads(body) if body.strip() else {}
        except json.JSONDecodeError as exc:
            offset = (tok.start_pos or 0) + body_start + exc.pos
            full = source_text(self.source) or ""
            raise self.error(
                f"invalid metadata section: {exc.msg}", _span_at(full, self.source, offset, 1)
            ) from None
        if not isinstance(table, dict):
            raise self.error("invalid metadata section: expected a JSON object", where)
        unknown = sorted(set(table) - {"relay.Constant"})
        if unknown:
            raise self.error(f"unsupported metadata kind {unknown[0]}", where)
        out: list[np.ndarray] = []
        for i, entry in enumerate(table.get("relay.Constant", [])):
            try:
                out.append(_metadata_constant(entry))
            except (KeyError, TypeError, ValueError, binascii.Error) as exc:
                raise self.error(f"invalid metadata constant {i}: {exc}", where) from None
        return out

    def meta_ref(self, node: _Node) -> Expr:
        ch = node.children
        kind, index = str(ch[2]), int(str(ch[5]))
        if kind != "relay.Constant":
            raise self.error(f"unsupported metadata kind {kind}", ch[2])
        if self.meta is None:
            raise self.error(f"meta[{kind}][{index}] used without a #[metadata] section", node)
        if index >= len(self.meta):
            raise self.error(
                f"meta[{kind}][{index}] is out of range: the metadata section has "
                f"{_plural(len(self.meta), 'constant')}",
                node,
            )
        # One node per entry: the printer numbers constants by identity, so sharing the node
        # keeps print -> parse -> print stable (the node carries its first reference's span).
        const = self.meta_nodes.get(index)
        if const is None:
            const = Constant(self.meta[index], span=self.span(node))
            self.meta_nodes[index] = const
        return const

    # -- patterns ---------------------------------------------------------------------------------

    def pattern(self, node: _Child, bound: set[str]) -> Task:
        assert isinstance(node, _Node)
        kind = node.data
        span = self.span(node)
        if kind == "pwild":
            return PatternWildcard(span=span)
        if kind == "pvar":
            name_tok = node.children[0]
            name = str(name_tok)[1:]
            if name in bound:
                raise self.error(f"duplicate pattern variable %{name}", name_tok)
            bound.add(name)
            ann = (yield self.type(node.children[2])) if len(node.children) == 3 else None
            var = Var(name, ann, span=self.span(name_tok))
            self.scopes[-1][name] = var
            return PatternVar(var, span=span)
        if kind == "ptuple":
            subs = []
            for p in _as_node(node.children[0]).children[1:-1:2]:
                subs.append((yield self.pattern(p, bound)))
            return PatternTuple(tuple(subs), span=span)
        name_tok = node.children[0]
        ctor = self.ctors.get(str(name_tok))
        if ctor is None:
            raise self.error(f"unknown constructor {name_tok}", name_tok)
        subs = []
        if len(node.children) == 2:
            for p in _as_node(node.children[1]).children[1:-1:2]:
                subs.append((yield self.pattern(p, bound)))
        if len(subs) != len(ctor.inputs):
            raise self.error(
                f"constructor {ctor.name_hint} takes {_plural(len(ctor.inputs), 'argument')}, "
                f"got {len(subs)}",
                span,
            )
        return PatternConstructor(ctor, tuple(subs), span=span)

    # -- types ------------------------------------------------------------------------------------

    def type(self, node: _Child) -> Task | Type:
        assert isinstance(node, _Node)
        return self.type_dispatch[node.data](node)

    def lookup_type_var(self, name: str) -> TypeVar | None:
        for scope in reversed(self.type_scopes):
            hit = scope.get(name)
            if hit is not None:
                return hit
        return self.free_shape_vars.get(name)

    def shape_var(self, tok: Token) -> TypeVar:
        """A shape identifier: bound, or implicitly a shape parameter of the outermost function."""
        name = str(tok)
        tv = self.lookup_type_var(name)
        if tv is not None:
            return tv
        tv = TypeVar(name, Kind.SHAPE, span=self.span(tok))
        if self.frames:
            frame = self.frames[0]
            frame.type_scope[name] = tv
            frame.implicit.append(tv)
        else:
            self.free_shape_vars[name] = tv
        return tv

    def tensor_type(self, node: _Node) -> Task:
        shape_node = _as_node(node.children[2])
        dims: list[Dim] = []
        for d in shape_node.children[1:-1:2]:
            value = yield self.dim(d)
            if isinstance(value, int) and value < 0:
                raise self.error(
                    f"invalid dimension {self.source_slice(d, d)}: dimensions cannot be negative", d
                )
            dims.append(value)
        dtype_tok = _as_token(node.children[4])
        return TensorType(tuple(dims), self.dtype(dtype_tok), span=self.span(node))

    # -- dimensions -------------------------------------------------------------------------------

    def dim(self, node: _Child) -> Task | Dim:
        """A shape entry: a number, ``?``, ``_``, a shape variable, or arithmetic over them."""
        if isinstance(node, _Node):
            kind = node.data
            if kind == "dim_unknown":
                return IncompleteType(Kind.SHAPE, span=self.span(node))
            if kind == "dim_paren":
                return self.dim(node.children[1])
            if kind == "dim_neg":
                return self.dim_neg(node)
            if kind == "dim_arg_paren":
                return self.dim_operators(node.children[1:-1])
            assert kind == "dim_chain", kind
            return self.dim_chain(node)
        if node.type == "ANY":
            return Any
        if node.type == "IDENT":
            return self.dim_var(node)
        try:
            lit = _split_number(str(node))
        except ValueError:
            lit = _Literal(str(node), "float32", False)
        if not lit.integral:
            raise self.error(f"invalid dimension {node}", node)
        return int(lit.digits)

    def dim_var(self, tok: Token) -> TypeVar:
        """A shape variable used as a dimension; other kinds of type variable are rejected."""
        tv = self.lookup_type_var(str(tok))
        if tv is not None and tv.kind is not Kind.SHAPE:
            raise self.error(
                f"type variable {tok} has kind {tv.kind.value}; "
                "only Shape variables can be used in dimensions",
                tok,
            )
        return self.shape_var(tok)

    def dim_operand(self, node: _Child) -> Task:
        """A dimension inside arithmetic: ``?`` has no value to compute with."""
        value = yield self.dim(node)
        if value is Any:
            raise self.error(
                "? (a dimension known only at run time) cannot be part of a dimension expression",
                node,
            )
        return value

    def dim_neg(self, node: _Node) -> Task:
        operand = yield self.dim_operand(node.children[1])
        return dimension.neg(operand)

    def dim_chain(self, node: _Node) -> Task:
        """Dimension arithmetic by precedence climbing over the flat operand/operator list."""
        return self.dim_operators(node.children)

    def dim_operators(self, ch: Sequence[_Child]) -> Task:
        """The value of ``operand (operator operand)*``, by precedence climbing."""
        operands: list[tuple[Dim, _Child, _Child]] = []
        ops: list[Token] = []

        def reduce() -> None:
            op_tok = ops.pop()
            rhs, _, last = operands.pop()
            lhs, first, _ = operands.pop()
            try:
                value = _DIM_OPS[str(op_tok)](lhs, rhs)
            except ZeroDivisionError:
                text = self.source_slice(first, last)
                raise self.error(
                    f"division by zero in dimension {text}", self.span2(first, last)
                ) from None
            operands.append((value, first, last))

        for i in range(0, len(ch), 2):
            if i:
                op_tok = _as_token(ch[i - 1])
                prec = _DIM_PRECEDENCE[str(op_tok)]
                while ops and _DIM_PRECEDENCE[str(ops[-1])] >= prec:
                    reduce()
                ops.append(op_tok)
            value = yield self.dim_operand(ch[i])
            operands.append((value, ch[i], ch[i]))
        while ops:
            reduce()
        return operands[0][0]

    def source_slice(self, first: _Child, last: _Child) -> str:
        """The text from the start of ``first`` to the end of ``last`` (for messages)."""
        start = _first_token(first).start_pos
        end = _last_token(last).end_pos
        if start is None or end is None:  # pragma: no cover - lark records every position
            return ""
        return self.text[start:end]

    def dtype(self, tok: Token) -> DType:
        name = str(tok)
        if name in DTYPES:
            return name
        tv = self.lookup_type_var(name)
        if tv is not None and tv.kind is Kind.BASE_TYPE:
            return tv
        raise self.error(f"unknown dtype {name}", tok)

    def tuple_type(self, node: _Node) -> Task:
        fields: list[Type] = []
        for f in node.children[1:-1:2]:
            fields.append((yield self.type(f)))
        return TupleType(tuple(fields), span=self.span(node))

    def func_type(self, node: _Node) -> Task:
        ch = node.children
        scope: dict[str, TypeVar] = {}
        self.type_scopes.append(scope)
        start = 1
        type_params: tuple[TypeVar, ...] = ()
        if isinstance(ch[1], _Node):
            type_params = self.type_params(ch[1], scope)
            start = 2
        args: list[Type] = []
        for a in ch[start + 1 : -3 : 2]:
            args.append((yield self.type(a)))
        ret = yield self.type(ch[-1])
        self.type_scopes.pop()
        return FuncType(tuple(args), ret, type_params, span=self.span(node))

    def ref_type(self, node: _Node) -> Task:
        value = yield self.type(node.children[2])
        return RefType(value, span=self.span(node))

    def incomplete_type(self, node: _Node) -> Type:
        return IncompleteType(span=self.span(node))

    def named_type(self, node: _Node) -> Task:
        """A dtype (scalar tensor), a type variable, an ADT name, or an ADT applied to types."""
        name_tok = _as_token(node.children[0])
        name = str(name_tok)
        has_args = len(node.children) > 1
        span = self.span(node)
        head: Type
        if name in DTYPES:
            if has_args:
                raise self.error(f"dtype {name} takes no type arguments", node)
            return TensorType((), name, span=span)
        tv = self.lookup_type_var(name)
        if tv is not None:
            head = tv
        else:
            gtv = self.types.get(name)
            if gtv is None:
                raise self.error(f"unknown type {name}", name_tok)
            head = gtv
        if not has_args:
            return head
        arg_nodes = node.children[2:-1:2]
        kinds = self.type_kinds.get(name) if isinstance(head, GlobalTypeVar) else None
        if kinds is None or len(kinds) != len(arg_nodes):
            kinds = (Kind.TYPE,) * len(arg_nodes)
        args: list[Type] = []
        for a, k in zip(arg_nodes, kinds, strict=True):
            args.append((yield self.type_arg(a, k)))
        arity = self.type_arity.get(name) if isinstance(head, GlobalTypeVar) else None
        if arity is not None and arity != len(args):
            raise self.error(
                f"type {name} takes {_plural(arity, 'type argument')}, got {len(args)}", node
            )
        return TypeCall(head, tuple(args), span=span)

    def type_arg(self, node: _Child, kind: Kind) -> Task:
        """A type argument for a parameter of ``kind``: a type, a dimension or a dtype.

        A dimension with arithmetic or a number (``4``, ``n * 2``) is one whatever the kind
        (the type checker reports a misplaced one); a bare name or ``_`` is a shape variable
        or an unknown dimension for a ``Shape`` parameter, a dtype or dtype variable for a
        ``BaseType`` parameter, else a type.
        """
        assert isinstance(node, _Node)
        if node.data == "dim_arg":
            ch = node.children
            value = yield (self.dim(ch[0]) if len(ch) == 1 else self.dim_operators(ch))
            if isinstance(value, int) and value < 0:
                text = self.source_slice(node, node)
                raise self.error(f"invalid dimension {text}: dimensions cannot be negative", node)
            return value
        bare = node.data == "named_type" and len(node.children) == 1
        if node.data == "incomplete_type" and kind in (Kind.SHAPE, Kind.BASE_TYPE):
            return IncompleteType(kind, span=self.span(node))
        if bare and kind is Kind.SHAPE:
            return self.dim_var(_as_token(node.children[0]))
        if bare and kind is Kind.BASE_TYPE:
            name = str(node.children[0])
            tv = self.lookup_type_var(name)
            if name in DTYPES:
                return name
            if tv is not None and tv.kind is Kind.BASE_TYPE:
                return tv
        return (yield self.type(node))


# ---- helpers ------------------------------------------------------------------------------------


def _is_token(node: _Child, kind: str) -> bool:
    return not isinstance(node, _Node) and node.type == kind


def _as_node(node: _Child) -> _Node:
    assert isinstance(node, _Node)
    return node


def _as_token(node: _Child) -> Token:
    assert not isinstance(node, _Node)
    return node


def _first_token(node: _Child) -> Token:
    while isinstance(node, _Node):
        node = node.children[0]
    return node


def _last_token(node: _Child) -> Token:
    while isinstance(node, _Node):
        node = node.children[-1]
    return node


def _find(node: _Node, data: str) -> _Node | None:
    for c in node.children:
        if isinstance(c, _Node) and c.data == data:
            return c
    return None


def _param_kinds(params: _Node | None) -> tuple[Kind, ...]:
    """The kinds of the type parameters ``[A, n: Shape]`` (an unknown kind counts as Type:
    it is reported when the parameters are bound)."""
    if params is None:
        return ()
    kinds: list[Kind] = []
    for p in params.children[1:-1:2]:
        assert isinstance(p, _Node)
        kinds.append(
            _KINDS.get(str(p.children[2]), Kind.TYPE) if len(p.children) == 3 else Kind.TYPE
        )
    return tuple(kinds)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
