"""Structured-merge-diff's operations on objects under a type (``types.TypeNode``):
the field set of an object, the comparison of two objects, the merge of an applied
configuration into a live object, and the removal of a set's items.

Objects are decoded JSON (dicts, lists, scalars); nothing here changes its arguments.
A value whose shape does not fit its type (a list where the schema wants an object) is
treated as one leaf: validating it is admission's job, not the field manager's.
``ListItemError`` is raised for list items that cannot be identified (a keyed list's
item without its keys, a map in a set, duplicates in an applied configuration).
"""

from __future__ import annotations

from typing import Any

import orjson

from kubewerk.core.fieldpath.fieldset import FieldSet
from kubewerk.core.fieldpath.path import (
    FIELD,
    Path,
    PathElement,
    encode_element,
    field,
    freeze,
    key_element,
    path_string,
    value_element,
)
from kubewerk.core.fieldpath.types import ATOMIC, LIST, MAP, TypeNode
from kubewerk.core.gofmt import go_quote

__all__ = [
    "Comparison",
    "ListItemError",
    "compare",
    "ensure_named_fields_are_members",
    "entry_fields_v1",
    "equal",
    "merge",
    "new_fields_v1",
    "remove_items",
    "to_field_set",
]

_MISSING: Any = object()


class ListItemError(ValueError):
    """A list item that cannot be given a path element, or a duplicate in an applied
    configuration; ``str()`` is structured-merge-diff's message prefixed with the list's
    path (``.spec.ports: element 0: ...``, ``.spec.ports: duplicate entries for key
    [name="a"]``)."""


def equal(a: Any, b: Any) -> bool:
    """JSON equality as structured-merge-diff's ``value.Equals`` (1 == 1.0, true != 1)."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is tb and ta in (str, int, float):
        return bool(a == b)
    if ta is dict and tb is dict:
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if ta is list and tb is list:
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if (ta is bool) != (tb is bool):
        return False
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    return bool(ta is tb and a == b)


def _shape(node: TypeNode, value: Any) -> TypeNode | None:
    """The map or list node to walk ``value`` with, or None when it is one leaf."""
    node = node.resolve(value)
    if node.kind == MAP and type(value) is dict and node.relation != ATOMIC:
        return node
    if node.kind == LIST and type(value) is list and node.relation != ATOMIC:
        return node
    return None


def item_element(node: TypeNode, item: Any, index: int, path: Path) -> PathElement:
    """The path element of a list item (``k:`` for keyed lists, ``v:`` for sets)."""
    if node.keys:
        if item is None:
            raise _item_error(path, index, "associative list with keys may not have a null element")
        if type(item) is not dict:
            raise _item_error(
                path, index, "associative list with keys may not have non-map elements"
            )
        elem_type = node.element()
        pairs: list[tuple[str, Any]] = []
        for key in node.keys:
            if key in item:
                pairs.append((key, item[key]))
            else:
                default = elem_type.field_default(key)
                if default is not None:
                    pairs.append((key, default))
        if not pairs:
            raise _item_error(
                path,
                index,
                "associative list with keys has an element that omits all key fields "
                f"{_go_quoted_list(node.keys)} (and doesn't have default values for any key "
                "fields)",
            )
        return key_element(pairs)
    if type(item) is dict:
        raise _item_error(
            path, index, "associative list without keys has an element that's a map type"
        )
    if type(item) is list:
        raise _item_error(path, index, "not supported: associative list with lists as elements")
    if item is None:
        raise _item_error(
            path, index, "associative list without keys has an element that's an explicit null"
        )
    return value_element(item)


def _item_error(path: Path, index: int, message: str) -> ListItemError:
    """structured-merge-diff's ``<list path>: element <index>: <message>`` (the message
    alone when ``path`` is empty: the caller prefixes it)."""
    return ListItemError(f"{path_string(path)}: element {index}: {message}" if path else message)


def _go_quoted_list(names: tuple[str, ...]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["name" "port"]``."""
    return "[" + " ".join(go_quote(n) for n in names) + "]"


# -- field sets ---------------------------------------------------------------------------


def to_field_set(value: Any, node: TypeNode) -> FieldSet:
    """The set of fields ``value`` sets (structured-merge-diff's ``ToFieldSet``): every
    scalar, every atomic map or list, every list item, every free-form map key, and every
    struct field whose value is null or ``{}``; a struct field with content is not a
    member itself (its contents are)."""
    out = FieldSet()
    _field_set(value, node, out, ())
    return out


def _field_set(value: Any, node: TypeNode, out: FieldSet, path: Path) -> None:
    walk = _shape(node, value)
    if walk is None:
        out.insert(path)
        return
    if walk.kind == MAP:
        for key, sub in value.items():
            pe = field(key)
            declared = walk.declared(key)
            _field_set(sub, declared if declared is not None else walk.element(), out, (*path, pe))
            if sub is None or (type(sub) is dict and not sub) or declared is None:
                out.insert((*path, pe))
        return
    elem = walk.element()
    elements = [item_element(walk, item, i, path) for i, item in enumerate(value)]
    seen: set[PathElement] = set()
    dups: set[PathElement] = set()
    for pe in elements:
        if pe in seen:
            dups.add(pe)
        seen.add(pe)
    for pe, item in zip(elements, value, strict=True):
        if pe in dups:
            out.insert((*path, pe))
            continue
        _field_set(item, elem, out, (*path, pe))
        out.insert((*path, pe))


# -- comparison ---------------------------------------------------------------------------


class Comparison:
    """What changed from one object to another: ``added``, ``modified``, ``removed``."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added = FieldSet()
        self.modified = FieldSet()
        self.removed = FieldSet()

    def same(self) -> bool:
        return self.added.empty() and self.modified.empty() and self.removed.empty()

    def exclude(self, ignored: FieldSet) -> Comparison:
        """This comparison without paths in or below ``ignored``."""
        if ignored.empty():
            return self
        out = Comparison()
        out.added = self.added.recursive_difference(ignored)
        out.modified = self.modified.recursive_difference(ignored)
        out.removed = self.removed.recursive_difference(ignored)
        return out


def compare(old: Any, new: Any, node: TypeNode) -> Comparison:
    """The fields ``new`` added, modified and removed relative to ``old``
    (structured-merge-diff's ``Compare``): a container that appears or disappears is
    itself added or removed, as are all its contents; atomic values are single leaves."""
    out = Comparison()
    _compare(old, new, node, (), out)
    return out


def _compare(lhs: Any, rhs: Any, node: TypeNode, path: Path, out: Comparison) -> None:
    ref = rhs if rhs is not _MISSING else lhs
    walk = _shape(node, ref)
    other = lhs if rhs is not _MISSING else _MISSING
    if walk is not None and other is not _MISSING and _shape(walk, other) is not walk:
        walk = None  # the two sides have different shapes: one leaf
    if walk is not None:
        empty_l = lhs is _MISSING or not lhs
        empty_r = rhs is _MISSING or not rhs
        if empty_l and empty_r:
            walk = None
        elif other is not _MISSING and lhs is not _MISSING and _same(lhs, rhs):
            return  # an unchanged subtree: nothing added, modified or removed below
    if walk is None:
        if lhs is _MISSING:
            out.added.insert(path)
        elif rhs is _MISSING:
            out.removed.insert(path)
        elif not equal(lhs, rhs):
            out.modified.insert(path)
        return
    if walk.kind == MAP:
        left: dict[str, Any] = lhs if lhs is not _MISSING else {}
        right: dict[str, Any] = rhs if rhs is not _MISSING else {}
        member = walk.member
        for key, rv in right.items():
            lv = left.get(key, _MISSING)
            if lv is rv:
                continue
            kind = type(rv)
            if kind is type(lv):
                if kind is str or kind is int or kind is bool or kind is float:
                    if lv == rv:
                        continue
                elif (kind is dict or kind is list) and _same(lv, rv):
                    continue
            _compare(lv, rv, member(key), (*path, (FIELD, key)), out)
        for key, lv in left.items():
            if key not in right:
                _compare(lv, _MISSING, member(key), (*path, (FIELD, key)), out)
    else:
        _compare_lists(
            lhs if lhs is not _MISSING else [], rhs if rhs is not _MISSING else [], walk, path, out
        )
    if lhs is _MISSING:
        out.added.insert(path)
    elif rhs is _MISSING:
        out.removed.insert(path)


def _same(lhs: Any, rhs: Any) -> bool:
    """Whether two containers are the same JSON (so ``equal``): the same object, or
    equal to Python and encoding to the same bytes (Python's ``==`` alone takes
    ``true`` for ``1``; the bytes tell them apart). False negatives (key order,
    ``1`` vs ``1.0``) only cost the walk."""
    if lhs is rhs:
        return True
    return bool(lhs == rhs) and orjson.dumps(lhs) == orjson.dumps(rhs)


def _group(items: list[Any], node: TypeNode, path: Path) -> dict[PathElement, list[Any]]:
    groups: dict[PathElement, list[Any]] = {}
    for i, item in enumerate(items):
        groups.setdefault(item_element(node, item, i, path), []).append(item)
    return groups


def _compare_lists(
    lhs: list[Any], rhs: list[Any], node: TypeNode, path: Path, out: Comparison
) -> None:
    left = _group(lhs, node, path)
    right = _group(rhs, node, path)
    elem = node.element()
    for pe in [*left, *(pe for pe in right if pe not in left)]:
        ls = left.get(pe, [])
        rs = right.get(pe, [])
        sub = (*path, pe)
        if len(ls) <= 1 and len(rs) <= 1:
            _compare(ls[0] if ls else _MISSING, rs[0] if rs else _MISSING, elem, sub, out)
        elif len(ls) >= 2 and len(rs) >= 2:
            if len(ls) != len(rs) or not all(equal(a, b) for a, b in zip(ls, rs, strict=True)):
                out.modified.insert(sub)
        elif len(ls) >= 2:
            if rs:
                _compare(_MISSING, rs[0], elem, sub, out)
            out.removed.insert(sub)
        else:
            if ls:
                _compare(ls[0], _MISSING, elem, sub, out)
            out.added.insert(sub)


# -- the fields of a new object -----------------------------------------------------------

_encoded: dict[PathElement, str] = {}


def encoded_element(pe: PathElement) -> str:
    """``encode_element`` remembered per element (list item keys repeat on every write
    of an object)."""
    text = _encoded.get(pe)
    if text is None:
        if len(_encoded) >= 8192:
            _encoded.clear()
        text = _encoded[pe] = encode_element(pe)
    return text


def new_fields_v1(value: Any, node: TypeNode, path: Path = ()) -> dict[str, Any]:
    """The ``fieldsV1`` of ``compare(<absent>, value, node).added`` below ``value`` (its
    own path not included), made in one walk: every map field, list item and leaf of
    ``value``, a container that has content marked ``"."`` and holding its contents; a
    duplicated list item is only itself. Keys in ``to_fields_v1``'s order. Raises
    ``ListItemError`` as ``compare`` does."""
    walk = _shape(node, value)
    out: dict[str, Any] = {}
    if walk is not None and value:
        _fill_v1(out, value, walk, path)
    return out


def entry_fields_v1(value: Any, node: TypeNode, path: Path) -> dict[str, Any]:
    """The ``fieldsV1`` value of a field or item that holds ``value`` in a new object:
    ``{}`` for a leaf or an empty container, else ``"."`` and its contents."""
    walk = _shape(node, value)
    if walk is None or not value:
        return {}
    if walk.kind == MAP:
        flat = _flat_entry(value)
        if flat is not None:
            return flat
    out: dict[str, Any] = {".": {}}
    _fill_v1(out, value, walk, path)
    return out


_FLAT_LIMIT = 4096
_flat_entries: dict[tuple[str, ...], dict[str, Any]] = {}
"""``entry_fields_v1`` of maps whose values are all leaves, by the map's keys in order:
such an entry depends on the keys alone (``{".": {}, "f:<key>": {}, ...}``, keys
sorted), so one dict serves every map with those keys. Shared like every encoded
``fieldsV1`` (never changed once made). Emptied when full."""


def _flat_entry(value: dict[str, Any]) -> dict[str, Any] | None:
    """The entry of ``value`` (a non-empty map walked as a map) if none of its values is a
    non-empty dict or list; None otherwise (then the caller walks it)."""
    for sub in value.values():
        kind = type(sub)
        if (kind is dict or kind is list) and sub:
            return None
    keys = tuple(value)
    found = _flat_entries.get(keys)
    if found is None:
        found = {".": {}}
        for key in sorted(value):
            found["f:" + key] = {}
        if len(_flat_entries) >= _FLAT_LIMIT:
            _flat_entries.clear()
        _flat_entries[keys] = found
    return found


def _fill_v1(out: dict[str, Any], value: Any, walk: TypeNode, path: Path) -> None:
    """Add the entries of ``value``'s contents (``walk`` its map or list node) to ``out``.

    A value that is neither a dict nor a list, or an empty one, is a leaf (``{}``)
    whatever its type says (``_shape`` walks only non-empty dicts and lists): such
    values are answered without looking their type up."""
    if walk.kind == MAP:
        member = walk.member
        for key in sorted(value):
            sub = value[key]
            kind = type(sub)
            if (kind is dict or kind is list) and sub:
                out["f:" + key] = entry_fields_v1(sub, member(key), (*path, (FIELD, key)))
            else:
                out["f:" + key] = {}
        return
    elem = walk.element()
    pes = [item_element(walk, item, i, path) for i, item in enumerate(value)]
    counts: dict[PathElement, int] = {}
    for pe in pes:
        counts[pe] = counts.get(pe, 0) + 1
    rows: list[tuple[PathElement, Any]] = []
    for pe, item in zip(pes, value, strict=True):
        seen = counts[pe]
        if seen == 1:
            rows.append((pe, item))
        elif seen > 1:
            rows.append((pe, _MISSING))  # duplicated: the item only, listed once
            counts[pe] = 0
    rows.sort(key=lambda row: row[0])
    for pe, item in rows:
        kind = type(item)
        out[encoded_element(pe)] = (
            entry_fields_v1(item, elem, (*path, pe))
            if (kind is dict or kind is list) and item
            else {}
        )


# -- merge --------------------------------------------------------------------------------


def merge(live: Any, config: Any, node: TypeNode) -> Any:
    """``config`` merged into ``live`` (structured-merge-diff's ``Merge`` with the applied
    side winning): maps merge key by key, keyed lists and sets item by item (live order,
    new items placed as the configuration orders them), atomic values are replaced.
    Returns a new value sharing unchanged subtrees with its arguments."""
    return _merge(live, config, node, ())


def _merge(lhs: Any, rhs: Any, node: TypeNode, path: Path) -> Any:
    if rhs is _MISSING:
        return lhs
    if lhs is _MISSING:
        # validate the configuration's list items (duplicates, keys) on the way
        _check_config(rhs, node, path)
        return rhs
    walk = _shape(node, rhs)
    if walk is None or _shape(walk, lhs) is not walk or (not lhs and not rhs):
        _check_config(rhs, node, path)
        return rhs
    if walk.kind == MAP:
        out: dict[str, Any] = {}
        for key, value in lhs.items():
            if key in rhs:
                out[key] = _merge(value, rhs[key], walk.member(key), (*path, field(key)))
            else:
                out[key] = value
        for key, value in rhs.items():
            if key not in lhs:
                out[key] = _merge(_MISSING, value, walk.member(key), (*path, field(key)))
        return out
    return _merge_lists(lhs, rhs, walk, path)


def _check_config(value: Any, node: TypeNode, path: Path) -> None:
    walk = _shape(node, value)
    if walk is None:
        return
    if walk.kind == MAP:
        for key, sub in value.items():
            _check_config(sub, walk.member(key), (*path, field(key)))
        return
    seen: set[PathElement] = set()
    elem = walk.element()
    for i, item in enumerate(value):
        pe = item_element(walk, item, i, path)
        if pe in seen:
            raise ListItemError(
                f"{path_string(path)}: duplicate entries for key {path_string((pe,))}"
            )
        seen.add(pe)
        _check_config(item, elem, (*path, pe))


def _merge_lists(lhs: list[Any], rhs: list[Any], node: TypeNode, path: Path) -> list[Any]:
    elem = node.element()
    r_pes: list[PathElement] = []
    r_items: dict[PathElement, Any] = {}
    for i, item in enumerate(rhs):
        pe = item_element(node, item, i, path)
        if pe in r_items:
            raise ListItemError(
                f"{path_string(path)}: duplicate entries for key {path_string((pe,))}"
            )
        r_items[pe] = item
        r_pes.append(pe)
    l_pes: list[PathElement] = []
    l_items: dict[PathElement, Any] = {}
    for i, item in enumerate(lhs):
        pe = item_element(node, item, i, path)
        l_items[pe] = _MISSING if pe in l_items else item  # a duplicate has no single value
        l_pes.append(pe)
    shared = [pe for pe in r_pes if pe in l_items]
    shared_at = 0
    merged: set[PathElement] = set()
    out: list[Any] = []

    def merged_item(pe: PathElement) -> Any:
        return _merge(l_items.get(pe, _MISSING), r_items[pe], elem, (*path, pe))

    li = ri = 0
    while li < len(l_pes) or ri < len(r_pes):
        nxt = shared[shared_at] if shared_at < len(shared) else None
        if li < len(l_pes) and ri < len(r_pes):
            pe = l_pes[li]
            if pe == r_pes[ri]:
                merged.add(pe)
                out.append(merged_item(pe))
                li += 1
                ri += 1
                shared_at += 1
                continue
            if pe in r_items and nxt is not None and nxt != pe:
                li += 1
                continue
        if li < len(l_pes):
            pe = l_pes[li]
            if pe not in r_items:
                out.append(lhs[li])
                li += 1
                continue
            if pe in merged:
                li += 1
        if ri < len(r_pes):
            pe = r_pes[ri]
            merged.add(pe)
            out.append(merged_item(pe))
            ri += 1
            if nxt is not None and nxt == pe:
                shared_at += 1
    return out


# -- removal ------------------------------------------------------------------------------


def remove_items(value: Any, remove: FieldSet, node: TypeNode) -> Any:
    """``value`` without the map fields and list items whose paths ``remove`` holds
    (structured-merge-diff's ``RemoveItems``); a map or list left empty by the removal is
    removed too (returned as ``_MISSING`` internally, ``None`` at the top)."""
    out = _remove(value, remove, node)
    return None if out is _MISSING else out


def _remove(value: Any, remove: FieldSet, node: TypeNode) -> Any:
    walk = _shape(node, value)
    if walk is None or not value:
        return value
    if walk.kind == MAP:
        out: dict[str, Any] = {}
        for key, sub in value.items():
            pe = field(key)
            if pe in remove.members:
                continue
            child = remove.children.get(pe)
            if child is not None and not child.empty():
                sub = _remove(sub, child, walk.member(key))
                if sub is _MISSING:
                    continue
            out[key] = sub
        return out if out else _MISSING
    elem = walk.element()
    items: list[Any] = []
    for i, item in enumerate(value):
        pe = item_element(walk, item, i, ())
        if pe in remove.members:
            continue
        child = remove.children.get(pe)
        if child is not None and not child.empty():
            item = _remove(item, child, elem)
            if item is _MISSING:
                continue
        items.append(item)
    return items if items else _MISSING


def ensure_named_fields_are_members(fields: FieldSet, node: TypeNode) -> FieldSet:
    """``fields`` plus every struct field some path goes through (not free-form map keys):
    what pruning needs to remove a struct field whose contents nobody owns any more."""
    out = FieldSet()
    out.members = set(fields.members)
    walk = node if node.kind != "deduced" else None
    for pe, child in fields.children.items():
        sub_node: TypeNode
        if pe[0] == FIELD:
            if walk is not None and walk.kind == MAP and walk.declared(pe[1]) is not None:
                out.members.add(pe)
            sub_node = walk.member(pe[1]) if walk is not None and walk.kind == MAP else node
        else:
            sub_node = walk.element() if walk is not None and walk.kind == LIST else node
        out.children[pe] = ensure_named_fields_are_members(child, sub_node)
    return out


def frozen_equal(a: Any, b: Any) -> bool:
    """Equality through ``path.freeze`` (for values of any JSON shape)."""
    return freeze(a) == freeze(b)
