"""Symbolic tensor dimensions: integer polynomials over shape variables.

A dimension of a :class:`~relay.ir.types.TensorType` is an ``int``, the
run-time-only :data:`~relay.ir.types.Any`, a shape variable (a ``TypeVar`` of
kind ``Shape``, or during inference an ``IncompleteType`` of kind ``Shape``),
or a :class:`DimExpr` computed from those by the type relations: ``n * 784``
after a reshape, ``n + m`` after a concatenate, ``(h - 3) // 2 + 1`` after a
strided convolution.

A :class:`DimExpr` is kept in a canonical form, a sum of monomials with
integer coefficients plus a constant (the normal form of the polynomial ring
Z[x1..xk], as in any computer-algebra system, e.g. TVM's arithmetic
simplifier's canonical form). An *atom* (a variable of the ring) is a shape
variable or an irreducible ``a // k`` or ``a % k`` (:class:`FloorDiv`,
:class:`FloorMod`). Because the form is canonical, two dimensions are equal
exactly when their canonical forms are, and ``a - b`` reducing to a constant
decides equality. Every operation here returns the simplest representation:
an ``int`` when the result is constant, the bare variable for ``1 * n + 0``.
Any operation involving ``Any`` gives ``Any``.

Division is floor division (``//``) and ``%`` its remainder, as in Python and
TVM's ``floordiv``/``floormod``; ``p // k`` simplifies when ``k`` divides every
coefficient of ``p`` (the constant may then leave a remainder only if it is
absorbed exactly: ``(2n + 4) // 2 = n + 2``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from relay.ir.types import Any, IncompleteType, SymbolicDim, TypeVar, _AnyDim

DimVar = TypeVar | IncompleteType
"""A variable a dimension may contain: a shape ``TypeVar`` or an inference variable."""

Dim = int | TypeVar | IncompleteType | _AnyDim | SymbolicDim


@dataclass(frozen=True, slots=True)
class FloorDiv:
    """The irreducible atom ``num // den`` (``den`` a positive constant or symbolic)."""

    num: DimExpr
    den: DimExpr


@dataclass(frozen=True, slots=True)
class FloorMod:
    """The irreducible atom ``num % den``."""

    num: DimExpr
    den: DimExpr


Atom = TypeVar | IncompleteType | FloorDiv | FloorMod
Monomial = tuple[Atom, ...]  # sorted atoms, repeated for powers; () is the constant


@dataclass(frozen=True, slots=True)
class DimExpr(SymbolicDim):
    """A polynomial dimension: ``sum(coeff * prod(atoms)) + const``, canonical.

    ``terms`` maps each non-constant monomial (sorted atoms) to its nonzero
    coefficient, in a fixed order; build values with :func:`add`, :func:`mul`,
    etc., never directly.
    """

    terms: tuple[tuple[Monomial, int], ...]
    const: int = 0

    def __str__(self) -> str:
        return dim_str(self)

    def __repr__(self) -> str:
        return f"DimExpr({dim_str(self)})"


def _atom_key(a: Atom) -> tuple[int, str, int | str]:
    if isinstance(a, TypeVar):
        return (0, a.name_hint, id(a))
    if isinstance(a, IncompleteType):
        return (1, "", id(a))
    # Distinct atoms can print alike (unknowns, or variables sharing a name): the text with
    # each variable's identity breaks the tie, so the order (and the canonical form) is total.
    return (2 if isinstance(a, FloorDiv) else 3, dim_str(a), dim_str(a, _identity_name))


def _identity_name(v: DimVar) -> str:
    return f"{v.name_hint if isinstance(v, TypeVar) else '_'}#{id(v)}"


def _mono_key(m: Monomial) -> tuple[int, list[tuple[int, str, int | str]]]:
    return (-len(m), [_atom_key(a) for a in m])


def _poly(terms: dict[Monomial, int], const: int) -> DimExpr:
    items = sorted(((m, c) for m, c in terms.items() if c != 0), key=lambda mc: _mono_key(mc[0]))
    return DimExpr(tuple(items), const)


def as_poly(d: Dim | FloorDiv | FloorMod) -> DimExpr:
    """``d`` as a polynomial (``Any`` has none: callers check for it first)."""
    if isinstance(d, DimExpr):
        return d
    if isinstance(d, bool):
        raise TypeError(f"bad dimension {d!r}")
    if isinstance(d, int):
        return DimExpr((), d)
    if isinstance(d, TypeVar | IncompleteType | FloorDiv | FloorMod):
        return DimExpr((((d,), 1),), 0)
    raise TypeError(f"bad dimension {d!r}")


def simplify(p: DimExpr) -> Dim:
    """The simplest representation of ``p``: an int, a bare variable, or ``p``."""
    if not p.terms:
        return p.const
    if p.const == 0 and len(p.terms) == 1:
        (mono, coeff) = p.terms[0]
        if coeff == 1 and len(mono) == 1 and isinstance(mono[0], TypeVar | IncompleteType):
            return mono[0]
    return p


def _add_into(acc: dict[Monomial, int], p: DimExpr, scale: int) -> None:
    for m, c in p.terms:
        acc[m] = acc.get(m, 0) + c * scale


def add(a: Dim, b: Dim) -> Dim:
    """``a + b``."""
    if isinstance(a, _AnyDim) or isinstance(b, _AnyDim):
        return Any
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    pa, pb = as_poly(a), as_poly(b)
    acc: dict[Monomial, int] = {}
    _add_into(acc, pa, 1)
    _add_into(acc, pb, 1)
    return simplify(_poly(acc, pa.const + pb.const))


def neg(a: Dim) -> Dim:
    """``-a``."""
    return mul(a, -1)


def sub(a: Dim, b: Dim) -> Dim:
    """``a - b``."""
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return add(a, neg(b))


def mul(a: Dim, b: Dim) -> Dim:
    """``a * b``."""
    if isinstance(a, _AnyDim) or isinstance(b, _AnyDim):
        return Any
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    pa, pb = as_poly(a), as_poly(b)
    acc: dict[Monomial, int] = {}
    left = [*pa.terms, ((), pa.const)]
    right = [*pb.terms, ((), pb.const)]
    const = 0
    for ma, ca in left:
        for mb, cb in right:
            if ca == 0 or cb == 0:
                continue
            m = tuple(sorted((*ma, *mb), key=_atom_key))
            if m:
                acc[m] = acc.get(m, 0) + ca * cb
            else:
                const += ca * cb
    return simplify(_poly(acc, const))


def product(dims: Iterator[Dim] | list[Dim] | tuple[Dim, ...]) -> Dim:
    """The product of ``dims`` (1 for none)."""
    out: Dim = 1
    for d in dims:
        out = mul(out, d)
    return out


def floordiv(a: Dim, b: Dim) -> Dim:
    """``a // b`` (floor division); raises ``ZeroDivisionError`` for a zero constant ``b``."""
    if isinstance(a, _AnyDim) or isinstance(b, _AnyDim):
        return Any
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("dimension divided by zero")
        if isinstance(a, int):
            return a // b
        if b == 1:
            return a
        pa = as_poly(a)
        if all(c % b == 0 for _, c in pa.terms) and b > 0:
            # (b*q(x) + c) // b == q(x) + c // b, exactly.
            return simplify(_poly({m: c // b for m, c in pa.terms}, pa.const // b))
    pb = as_poly(b)
    pa = as_poly(a)
    if pa == pb:
        return 1
    return simplify(as_poly(FloorDiv(pa, pb)))


def floormod(a: Dim, b: Dim) -> Dim:
    """``a % b`` (the remainder of floor division)."""
    if isinstance(a, _AnyDim) or isinstance(b, _AnyDim):
        return Any
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("dimension divided by zero")
        if isinstance(a, int):
            return a % b
        if b == 1:
            return 0
        pa = as_poly(a)
        if all(c % b == 0 for _, c in pa.terms) and b > 0:
            return pa.const % b
    pa, pb = as_poly(a), as_poly(b)
    if pa == pb:
        return 0
    return simplify(as_poly(FloorMod(pa, pb)))


def ceildiv(a: Dim, b: Dim) -> Dim:
    """``ceil(a / b)``, i.e. ``(a + b - 1) // b`` for positive ``b``."""
    return floordiv(sub(add(a, b), 1), b)


def is_symbolic(d: object) -> bool:
    """Whether ``d`` is a dimension that is neither an int nor ``Any``."""
    return isinstance(d, TypeVar | IncompleteType | SymbolicDim)


def dim_vars(d: Dim) -> list[DimVar]:
    """The variables in ``d``, in order of first occurrence."""
    out: list[DimVar] = []

    def walk(x: object) -> None:
        if isinstance(x, TypeVar | IncompleteType):
            if not any(x is y for y in out):
                out.append(x)
        elif isinstance(x, DimExpr):
            for m, _ in x.terms:
                for a in m:
                    walk(a)
        elif isinstance(x, FloorDiv | FloorMod):
            walk(x.num)
            walk(x.den)

    walk(d)
    return out


def substitute(d: Dim, fn: Callable[[DimVar], Dim]) -> Dim:
    """``d`` with every variable ``v`` replaced by ``fn(v)``, re-simplified."""
    if isinstance(d, TypeVar | IncompleteType):
        return fn(d)
    if not isinstance(d, DimExpr):
        return d
    out: Dim = d.const
    for m, c in d.terms:
        term: Dim = c
        for a in m:
            term = mul(term, _subst_atom(a, fn))
        out = add(out, term)
    return out


def _subst_atom(a: Atom, fn: Callable[[DimVar], Dim]) -> Dim:
    if isinstance(a, TypeVar | IncompleteType):
        return fn(a)
    num, den = substitute(a.num, fn), substitute(a.den, fn)
    return floordiv(num, den) if isinstance(a, FloorDiv) else floormod(num, den)


def equal(a: Dim, b: Dim) -> bool | None:
    """Whether ``a == b`` is decided: True, False, or None (depends on variables or ``Any``)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, _AnyDim) or isinstance(b, _AnyDim):
        return None
    diff = sub(a, b)
    if isinstance(diff, int):
        return diff == 0
    return None


def solve_for(lhs: Dim, rhs: Dim, var: DimVar) -> Dim | None:
    """The value of ``var`` making ``lhs == rhs``, when the equation is linear in it.

    ``var`` must occur in ``lhs - rhs`` only as ``c * var`` (not inside a
    division or multiplied by another variable) and ``c`` must divide the rest
    exactly; otherwise None.
    """
    if isinstance(lhs, _AnyDim) or isinstance(rhs, _AnyDim):
        return None
    diff = as_poly(sub(lhs, rhs))
    coeff = 0
    rest: dict[Monomial, int] = {}
    for m, c in diff.terms:
        if m == (var,):
            coeff = c
        elif any(_contains(a, var) for a in m):
            return None
        else:
            rest[m] = c
    if coeff == 0:
        return None
    # coeff * var + rest == 0  =>  var == -rest / coeff
    if any(c % coeff for c in rest.values()) or diff.const % coeff:
        return None
    return simplify(_poly({m: -c // coeff for m, c in rest.items()}, -diff.const // coeff))


def _contains(a: Atom, var: DimVar) -> bool:
    if a is var:
        return True
    if isinstance(a, FloorDiv | FloorMod):
        return any(v is var for v in dim_vars(a.num)) or any(v is var for v in dim_vars(a.den))
    return False


# -- printing ---------------------------------------------------------------------------------------


def dim_str(d: object, var_name: Callable[[DimVar], str] | None = None) -> str:
    """``d`` in the text format: ``n * 784``, ``n + m - 1``, ``(h - 3) // 2 + 1``.

    ``var_name`` names the variables (default: a shape variable's name hint,
    ``_`` for an unknown). The text parses back (:mod:`relay.ir.parser`) to
    an equal dimension: operands are parenthesized where Python's precedence
    needs it (``-(n // 2)``, ``(n * 2) // 4``, ``m // (n // 2)``), and terms
    and factors are ordered by their printed names, which is the canonical
    order of the dimension read back, so that printing it again gives the
    same text.
    """
    return _DimPrinter(var_name or _default_name).dim(d)


def _default_name(v: DimVar) -> str:
    return v.name_hint if isinstance(v, TypeVar) else "_"


class _DimPrinter:
    """Prints one dimension, remembering the text of each ``//`` or ``%`` atom.

    An atom's text is both printed and used to order the terms, so without
    the memo nested divisions would be printed a number of times exponential
    in their depth.
    """

    def __init__(self, names: Callable[[DimVar], str]) -> None:
        self.names = names
        self.atoms: dict[int, str] = {}  # id of a FloorDiv/FloorMod (alive in the dim) -> text

    def dim(self, d: object) -> str:
        return self.sum(d) if isinstance(d, DimExpr) else self.atom(d, False)

    def atom(self, a: object, in_product: bool) -> str:
        if isinstance(a, TypeVar | IncompleteType):
            return self.names(a)
        if isinstance(a, FloorDiv | FloorMod):
            text = self.atoms.get(id(a))
            if text is None:
                sym = "//" if isinstance(a, FloorDiv) else "%"
                text = f"{self.operand(a.num)} {sym} {self.operand(a.den, strict=True)}"
                self.atoms[id(a)] = text
            return f"({text})" if in_product else text
        if isinstance(a, DimExpr):
            return f"({self.sum(a)})"
        return str(a)

    def operand(self, p: DimExpr, strict: bool = False) -> str:
        """An operand of ``//`` or ``%``; ``strict`` for the right one (``a // (b // c)``)."""
        d = simplify(p)
        if isinstance(d, int):
            return str(d) if d >= 0 else f"({d})"
        if isinstance(d, TypeVar | IncompleteType):
            return self.names(d)
        assert isinstance(d, DimExpr)
        single = not d.const and len(d.terms) == 1 and d.terms[0][1] == 1
        if single and not strict and len(d.terms[0][0]) == 1:
            # `//` and `%` are left-associative: `n // 2 // 3` is `(n // 2) // 3`
            return self.atom(d.terms[0][0][0], False)
        return f"({self.sum(d)})"

    def atom_key(self, a: Atom) -> tuple[int, str]:
        if isinstance(a, TypeVar):
            return (0, self.names(a))
        if isinstance(a, IncompleteType):
            return (1, self.names(a))
        return (2 if isinstance(a, FloorDiv) else 3, self.atom(a, False))

    def mono_key(self, m: Monomial) -> tuple[int, list[tuple[int, str]]]:
        return (-len(m), sorted(self.atom_key(a) for a in m))

    def mono(self, m: Monomial, coeff: int, negated: bool = False) -> str:
        # Unary minus binds tighter than `//` and `%` (as in Python): `-(n // 2)`, not `-n // 2`.
        in_product = len(m) > 1 or coeff != 1 or negated
        parts = [self.atom(a, in_product) for a in sorted(m, key=self.atom_key)]
        if coeff != 1:
            parts.append(str(coeff))
        return " * ".join(parts)

    def sum(self, p: DimExpr) -> str:
        # Ordered by printed names: the canonical order of the dimension parsed back (the
        # canonical order itself breaks ties between equal names by identity).
        terms = sorted(p.terms, key=lambda mc: self.mono_key(mc[0]))
        out = ""
        for i, (m, c) in enumerate(terms):
            if i == 0:
                out = self.mono(m, c) if c > 0 else "-" + self.mono(m, -c, negated=True)
            else:
                out += f" + {self.mono(m, c)}" if c > 0 else f" - {self.mono(m, -c)}"
        if p.const > 0:
            out += f" + {p.const}"
        elif p.const < 0:
            out += f" - {-p.const}"
        return out


def evaluate(d: Dim, values: Callable[[DimVar], int]) -> int:
    """The value of ``d`` with each variable ``v`` worth ``values(v)`` (``Any`` has none)."""
    out = substitute(d, values)
    if not isinstance(out, int):
        raise TypeError(f"dimension {dim_str(d)} has no value")
    return out


def parse_dim(text: str, variables: Callable[[str], Dim]) -> Dim:
    """The dimension written ``text`` by :func:`dim_str` (integers, names, ``+ - * // %``,
    parentheses), each name read as ``variables(name)``; a ValueError for anything else."""
    import ast

    def walk(node: ast.expr) -> Dim:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return variables(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return neg(walk(node.operand))
        if isinstance(node, ast.BinOp):
            a, b = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                return add(a, b)
            if isinstance(node.op, ast.Sub):
                return sub(a, b)
            if isinstance(node.op, ast.Mult):
                return mul(a, b)
            if isinstance(node.op, ast.FloorDiv):
                return floordiv(a, b)
            if isinstance(node.op, ast.Mod):
                return floormod(a, b)
        raise ValueError(f"not a dimension: {text!r}")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"not a dimension: {text!r}") from None
    return walk(tree.body)
