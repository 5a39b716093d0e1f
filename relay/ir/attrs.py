"""Attributes of calls and functions: an immutable, hashable mapping.

Values are Python scalars (``bool``, ``int``, ``float``, ``str``), ``None``,
or tuples of values (lists are converted to tuples), so attributes compare
and hash structurally: ``padding=[1, 1]`` equals ``padding=(1, 1)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeAlias

AttrValue: TypeAlias = bool | int | float | str | tuple["AttrValue", ...] | None


def normalize_attr_value(value: object) -> AttrValue:
    """``value`` as an attribute value: lists become tuples, numpy scalars Python scalars."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return tuple(normalize_attr_value(v) for v in value)
    item = getattr(value, "item", None)
    if callable(item):  # numpy scalar
        return normalize_attr_value(item())
    raise TypeError(f"unsupported attribute value {value!r} of type {type(value).__name__}")


class Attrs(Mapping[str, AttrValue]):
    """An immutable mapping from attribute names to values, in insertion order."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, object] | None = None, **kwargs: object) -> None:
        merged: dict[str, AttrValue] = {}
        for source in (items or {}, kwargs):
            for k, v in source.items():
                merged[k] = normalize_attr_value(v)
        self._items = merged
        self._hash: int | None = None

    def __getitem__(self, key: str) -> AttrValue:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attrs):
            return _eq_items(self._items, other._items)
        if isinstance(other, Mapping):
            return _eq_items(self._items, dict(Attrs(other)._items))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(sorted((k, _hash_key(v)) for k, v in self._items.items())))
        return self._hash

    def with_attr(self, key: str, value: object) -> Attrs:
        """A copy with ``key`` set to ``value``."""
        return Attrs({**self._items, key: value})

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._items.items())
        return f"Attrs({inner})"


def _hash_key(v: AttrValue) -> object:
    # bool and int hash alike in Python; keep the type so True != 1 in attributes
    if isinstance(v, tuple):
        return tuple(_hash_key(x) for x in v)
    return (type(v).__name__, v)


def _eq_items(a: dict[str, AttrValue], b: dict[str, AttrValue]) -> bool:
    return a.keys() == b.keys() and all(_hash_key(a[k]) == _hash_key(b[k]) for k in a)


EMPTY_ATTRS = Attrs()
