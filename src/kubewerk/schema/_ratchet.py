"""CRD validation ratcheting (KEP-4008): which parts of an update are unchanged.

Kubernetes correlates the new object with the old one while it validates an update
(``k8s.io/apiserver/pkg/cel/common.CorrelatedObject``): a child is correlated to an old
value through an object property or a map key present in both, through a
``x-kubernetes-list-type: map`` list by its keys, and through a list without a list
type by index; items of ``atomic`` and ``set`` lists are not correlated. A correlated
node whose value is "unchanged" (``CachedDeepEqual``) has its OpenAPI errors dropped and
its non-transition CEL rule failures dropped.

``unchanged`` mirrors ``CachedDeepEqual`` exactly, quirks included: a map-list compares
items by key (order does not matter), an object with a key its schema neither declares
nor covers with an ``additionalProperties`` schema is never unchanged, and scalars compare
like Go's ``reflect.DeepEqual`` on decoded JSON (``1``, ``1.0`` and ``true`` differ).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from kubewerk.core.gofmt import INT64_MAX, INT64_MIN, go_deep_equal, go_json

if TYPE_CHECKING:
    from ._structural import Structural

MISSING: Final = object()
"""No correlated old value."""


def _scalar(v: Any) -> tuple[str, Any] | None:
    """A key value as Go's ``map[interface{}]`` sees it: only scalars, typed."""
    t = type(v)
    if t is str:
        return ("s", v)
    if t is bool:
        return ("b", v)
    if t is int:
        return ("i", v) if INT64_MIN <= v <= INT64_MAX else ("f", float(v))
    if t is float:
        return ("f", v)
    return None


def map_list_key(node: Structural, item: Any) -> Any:
    """``CompositeKeyFor``: the key of a map-list item, or None when it has none.

    Every key field must be present with a scalar value; one key is compared by typed
    value, several by a composite string (floats printed with Go's ``%f``).
    """
    keys = node.list_map_keys
    if type(item) is not dict or not keys:
        return None
    if len(keys) == 1:
        k = keys[0]
        return _scalar(item[k]) if k in item else None
    parts: list[str] = []
    for k in keys:
        if k not in item:
            return None
        sv = _scalar(item[k])
        if sv is None:
            return None
        tag, v = sv
        if tag == "b":
            parts.append("true" if v else "false")
        elif tag == "f":
            parts.append(f"{v:f}")
        elif tag == "i":
            parts.append(str(v))
        else:
            parts.append(go_json(v))
    return "\x00" + "\x00".join(parts)


def map_list_index(node: Structural, old: list[Any]) -> dict[Any, Any]:
    """The old items of a ``list-type: map`` list by their key (``MakeMapList``).

    Items that are not objects or have no key are not keyed; with duplicate keys the
    first item wins.
    """
    out: dict[Any, Any] = {}
    if not node.list_map_keys or node.type != "array":
        return out
    for item in old:
        key = map_list_key(node, item)
        if key is not None and key not in out:
            out[key] = item
    return out


def correlate_items(node: Structural | None, new: list[Any], old: Any) -> list[Any] | None:
    """The old value correlated to each item of ``new`` (``CorrelatedObject.Index``;
    ``MISSING`` where none), or None when no item can be correlated."""
    if node is None or node.items is None or type(old) is not list:
        return None
    lt = node.list_type
    if lt == "set" or lt == "atomic":
        return None
    if lt == "map":
        index = map_list_index(node, old)
        if not index:
            return None
        out: list[Any] = []
        for item in new:
            key = map_list_key(node, item)
            found = index.get(key, MISSING) if key is not None else MISSING
            out.append(MISSING if found is None else found)
        return out
    n = len(old)
    return [MISSING if i >= n or old[i] is None else old[i] for i in range(len(new))]


def correlate_key(node: Structural | None, new: dict[str, Any], old: Any, key: str) -> Any:
    """The old value correlated to ``new[key]`` (``CorrelatedObject.Key``), or ``MISSING``."""
    if node is None or type(old) is not dict or key not in old or key not in new:
        return MISSING
    if key not in node.properties and node.additional is None:
        return MISSING
    return old[key]


def unchanged(node: Structural | None, new: Any, old: Any) -> bool:
    """``CorrelatedObject.CachedDeepEqual`` of ``new`` and its correlated ``old`` value."""
    if new is None or old is None:
        return new is None and old is None
    tn = type(new)
    to = type(old)
    if tn is list or to is list:
        if tn is not to or len(new) != len(old):
            return False
        if not new:
            return True
        items = node.items if node is not None else None
        if node is None or items is None:
            return go_deep_equal(new, old)
        lt = node.list_type
        if lt == "map":
            index = map_list_index(node, old)
            for v in new:
                key = map_list_key(node, v)
                o = index.get(key, None) if key is not None else None
                if o is None or not unchanged(items, v, o):
                    return False
            return True
        if lt == "set" or lt == "atomic":
            return go_deep_equal(new, old)
        for v, o in zip(new, old, strict=True):
            if o is None:
                return go_deep_equal(new, old)
            if not unchanged(items, v, o):
                return False
        return True
    if tn is dict or to is dict:
        if tn is not to or len(new) != len(old):
            return False
        if not new:
            return True
        if node is None:
            return False
        props = node.properties
        addl = node.additional
        for k, v in new.items():
            if k not in old:
                return False
            sub = props.get(k)
            if sub is None:
                sub = addl
                if sub is None:
                    return False
            if not unchanged(sub, v, old[k]):
                return False
        return True
    return go_deep_equal(new, old)
