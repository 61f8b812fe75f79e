"""Semantic comparison of two objects, with an RFC 6902 patch from one to the other.

:func:`diff_objects` compares two objects of the same identity position by position
under a :class:`~kubewerk.sync.shapes.Shape`:

- maps key by key; a key holding ``null`` is the same as an absent key (a typed decode
  drops both);
- ``atomic`` lists (and lists the schema says nothing about) in order; ``set`` lists as
  unordered collections; ``map`` lists as unordered collections of items identified by
  their key fields (a list whose items repeat a key, or a set of maps, falls back to
  order);
- scalars by JSON equality (``1`` and ``1.0`` are the same number, ``true`` is never
  ``1``); int-or-string and quantity positions by value (``1Gi`` equals ``1024Mi``, ``2``
  equals ``"2"``).

The patch turns the first object into one semantically equal to the second: it is valid
RFC 6902 applied in order (matched list items are addressed by their index in the
first object; removals follow in descending index order, additions are appended with
``/-``), and an equal pair has an empty patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import orjson

from kubewerk.core.patch import encode_pointer_token
from kubewerk.sync.shapes import ANY, KEYED, LIST, MAP, SET, Shape

__all__ = ["ObjectDiff", "diff_objects", "diff_values", "quick_equal", "same_value"]

_SORT = orjson.OPT_SORT_KEYS


def quick_equal(a: Any, b: Any) -> bool:
    """Exact JSON equality (key order ignored); True implies semantic equality."""
    if a is b:
        return True
    try:
        return orjson.dumps(a, option=_SORT) == orjson.dumps(b, option=_SORT)
    except TypeError:
        return False


def _parse_quantity(value: Any) -> Fraction | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, str):
        from kubewerk.schema.cel.library import parse_quantity

        return parse_quantity(value.strip()) if value else None
    return None


def _scalar_equal(a: Any, b: Any, by_value: bool) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is type(b) and a == b:
        return True
    if by_value:
        qa, qb = _parse_quantity(a), _parse_quantity(b)
        return qa is not None and qa == qb
    return False


def same_value(a: Any, b: Any, shape: Shape = ANY) -> bool:
    """Whether ``a`` and ``b`` are semantically equal under ``shape``."""
    if quick_equal(a, b):
        return True
    ops: list[dict[str, Any]] = []
    diff_values(a, b, shape, "", ops)
    return not ops


def _item_key(item: Any, keys: tuple[str, ...]) -> tuple[Any, ...] | None:
    if not isinstance(item, Mapping):
        return None
    try:
        out = tuple(orjson.dumps(item.get(k), option=_SORT) for k in keys)
    except TypeError:
        return None
    return out


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return orjson.dumps(value, option=_SORT)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", float(value))
    return value


def diff_values(a: Any, b: Any, shape: Shape, path: str, ops: list[dict[str, Any]]) -> None:
    """Append to ``ops`` the RFC 6902 operations turning ``a`` (at JSON pointer ``path``)
    into a value semantically equal to ``b`` under ``shape``."""
    if isinstance(a, dict) and isinstance(b, dict) and shape.kind in (MAP, "any"):
        for k, av in a.items():
            child = f"{path}/{encode_pointer_token(k)}"
            bv = b.get(k)
            if bv is None:
                if av is not None:
                    ops.append({"op": "remove", "path": child})
            elif av is None:
                ops.append({"op": "replace", "path": child, "value": bv})
            else:
                diff_values(av, bv, shape.member(k), child, ops)
        for k, bv in b.items():
            if k not in a and bv is not None:
                ops.append({"op": "add", "path": f"{path}/{encode_pointer_token(k)}", "value": bv})
        return
    if isinstance(a, list) and isinstance(b, list):
        unordered = shape.kind == LIST and shape.list_type in (SET, KEYED)
        if unordered and _diff_unordered(a, b, shape, path, ops):
            return
        _diff_ordered(a, b, shape.element() if shape.kind == LIST else ANY, path, ops)
        return
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        if not quick_equal(a, b):
            ops.append({"op": "replace", "path": path, "value": b})
        return
    if not _scalar_equal(a, b, shape.by_value):
        ops.append({"op": "replace", "path": path, "value": b})


def _diff_ordered(
    a: list[Any], b: list[Any], element: Shape, path: str, ops: list[dict[str, Any]]
) -> None:
    if len(a) != len(b):
        if not quick_equal(a, b):
            ops.append({"op": "replace", "path": path, "value": b})
        return
    inner: list[dict[str, Any]] = []
    for i, (av, bv) in enumerate(zip(a, b, strict=True)):
        diff_values(av, bv, element, f"{path}/{i}", inner)
    ops.extend(inner)


def _diff_unordered(
    a: list[Any], b: list[Any], shape: Shape, path: str, ops: list[dict[str, Any]]
) -> bool:
    """Diff as a set or keyed list; False when the items cannot be keyed (use order)."""
    element = shape.element()
    if shape.list_type == KEYED and shape.keys:
        ka = [_item_key(x, shape.keys) for x in a]
        kb = [_item_key(x, shape.keys) for x in b]
    else:
        if any(isinstance(x, dict | list) for x in a) or any(isinstance(x, dict | list) for x in b):
            return False
        ka = [_hashable(x) for x in a]
        kb = [_hashable(x) for x in b]
    if None in ka or None in kb or len(set(ka)) != len(ka) or len(set(kb)) != len(kb):
        return False
    index_a = {k: i for i, k in enumerate(ka)}
    index_b = {k: i for i, k in enumerate(kb)}
    for k, ia in index_a.items():
        ib = index_b.get(k)
        if ib is not None and shape.list_type == KEYED:
            diff_values(a[ia], b[ib], element, f"{path}/{ia}", ops)
    for ia in sorted((i for k, i in index_a.items() if k not in index_b), reverse=True):
        ops.append({"op": "remove", "path": f"{path}/{ia}"})
    for k, ib in index_b.items():
        if k not in index_a:
            ops.append({"op": "add", "path": f"{path}/-", "value": b[ib]})
    return True


@dataclass(slots=True)
class ObjectDiff:
    """The comparison of one object on two sides: ``patch`` (RFC 6902, from ``left`` to
    ``right``) is empty exactly when they are semantically equal."""

    left: dict[str, Any] | None
    right: dict[str, Any] | None
    patch: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``added`` (only on the right), ``removed`` (only on the left), ``changed`` or
        ``equal``."""
        if self.left is None:
            return "added"
        if self.right is None:
            return "removed"
        return "changed" if self.patch else "equal"


def diff_objects(
    left: Mapping[str, Any] | None, right: Mapping[str, Any] | None, shape: Shape = ANY
) -> ObjectDiff:
    """Compare two (already normalized) objects under ``shape`` (see the module
    docstring). Either side may be None: the object exists only on the other side."""
    lo = dict(left) if left is not None else None
    ro = dict(right) if right is not None else None
    out = ObjectDiff(lo, ro)
    if lo is None or ro is None or quick_equal(lo, ro):
        return out
    diff_values(lo, ro, shape, "", out.patch)
    return out
