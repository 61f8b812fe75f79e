"""Three-way merge of one object: the ``merge`` policy's per-field rule.

``merge3(base, source, cluster, shape)`` walks the three states (base: the source's state
at the last sync) and per position takes the side that changed since the base: a field
only the source changed takes the source's value, one only the cluster changed keeps the
cluster's; a field both changed to different values is a **conflict**: the cluster's value
is kept and the path reported. Maps merge key by key and keyed lists item by item (by
their keys); atomic lists, sets and scalars are one value each.

It returns the merged object, the conflicting paths (JSON pointers), and the state to
record as the new base: the source's, except at conflicting paths where the old base
stays, so an unresolved conflict is reported again on the next sync.
"""

from __future__ import annotations

from typing import Any

from kubewerk.core.patch import encode_pointer_token
from kubewerk.sync.diff import _item_key, same_value
from kubewerk.sync.shapes import KEYED, LIST, Shape

__all__ = ["merge3"]

_ABSENT: Any = None


def merge3(base: Any, source: Any, cluster: Any, shape: Shape) -> tuple[Any, list[str], Any]:
    """(merged, conflicting paths, new base); ``None`` stands for an absent value."""
    conflicts: list[str] = []
    merged, record = _merge(base, source, cluster, shape, "", conflicts)
    return merged, conflicts, record


def _same(a: Any, b: Any, shape: Shape) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return same_value(a, b, shape)


def _merge(
    base: Any, ours: Any, theirs: Any, shape: Shape, path: str, conflicts: list[str]
) -> tuple[Any, Any]:
    if _same(ours, base, shape):
        return theirs, ours
    if _same(theirs, base, shape):
        return ours, ours
    if _same(ours, theirs, shape):
        return ours, ours
    if isinstance(ours, dict) and isinstance(theirs, dict) and isinstance(base, dict | None):
        b = base or {}
        merged: dict[str, Any] = {}
        record: dict[str, Any] = {}
        for k in [
            *theirs,
            *(k for k in ours if k not in theirs),
            *(k for k in b if k not in theirs and k not in ours),
        ]:
            m, r = _merge(
                b.get(k),
                ours.get(k),
                theirs.get(k),
                shape.member(k),
                f"{path}/{encode_pointer_token(k)}",
                conflicts,
            )
            if m is not None:
                merged[k] = m
            if r is not None:
                record[k] = r
        return merged, record
    if (
        isinstance(ours, list)
        and isinstance(theirs, list)
        and isinstance(base, list | None)
        and shape.kind == LIST
        and shape.list_type == KEYED
        and shape.keys
    ):
        keyed = _merge_keyed(base or [], ours, theirs, shape, path, conflicts)
        if keyed is not None:
            return keyed
    conflicts.append(path or "/")
    return theirs, base


def _merge_keyed(
    base: list[Any],
    ours: list[Any],
    theirs: list[Any],
    shape: Shape,
    path: str,
    conflicts: list[str],
) -> tuple[list[Any], list[Any]] | None:
    def index(items: list[Any]) -> dict[Any, Any] | None:
        out: dict[Any, Any] = {}
        for item in items:
            k = _item_key(item, shape.keys)
            if k is None or k in out:
                return None
            out[k] = item
        return out

    bi, oi, ti = index(base), index(ours), index(theirs)
    if bi is None or oi is None or ti is None:
        return None
    element = shape.element()
    merged: list[Any] = []
    record: list[Any] = []
    order = [*ti, *(k for k in oi if k not in ti), *(k for k in bi if k not in ti and k not in oi)]
    for n, k in enumerate(order):
        m, r = _merge(bi.get(k), oi.get(k), ti.get(k), element, f"{path}/{n}", conflicts)
        if m is not None:
            merged.append(m)
        if r is not None:
            record.append(r)
    return merged, record
