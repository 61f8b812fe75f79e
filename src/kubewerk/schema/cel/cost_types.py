"""The types and size bounds Kubernetes gives CEL for a structural schema.

:class:`CelTypeEstimate` is kube-apiserver's ``DeclType`` as the cost estimator reads
it: the kind of value, its fields / element / key types, ``max_elements`` (the largest
``size()`` the value can have: a list's items, a map's entries, a string's characters)
and ``min_serialized_size`` (the fewest JSON bytes it can take). :func:`schema_type`
builds it from a structural schema node the way ``SchemaDeclType`` does:

- ``maxItems`` / ``maxProperties`` bound lists and maps; without them the bound is how
  many of the smallest possible items fit in a 3 MiB request:
  ``(3 MiB - 2) / (minItemSize + 1)`` for lists, ``(3 MiB - 2) / (minValueSize + 6)``
  for maps (``estimateMaxArrayItemsFromMinSize``,
  ``estimateMaxAdditionalPropertiesFromMinSize``);
- a string's bound is ``maxLength * 4`` (runes may take 4 bytes), else the longest
  ``enum`` value (bytes), else ``3 MiB - 2``; ``format: byte`` strings are bytes
  bounded by ``maxLength``; ``duration`` (32), ``date`` (12) and ``date-time`` (32)
  have fixed bounds (``estimateMaxStringLengthPerRequest``);
- ``x-kubernetes-int-or-string`` is ``dyn`` bounded like a string;
- the minimum sizes: ``""`` 2, ``true`` 4, a number 1, ``[]``/``{}`` 2, an object 2
  plus, for each required property without a default, ``len(name) + min + 4``;
- at a resource root (the CRD's schema root and every
  ``x-kubernetes-embedded-resource``), ``apiVersion``, ``kind`` and ``metadata``
  (``name``, ``generateName``) are unbounded strings unless the schema already
  declares them so (``WithTypeAndObjectMeta``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from .._structural import _NO_DEFAULT
from .rules import escape_name

if TYPE_CHECKING:
    from .._structural import Structural

__all__ = [
    "MAX_REQUEST_SIZE_BYTES",
    "CelTypeEstimate",
    "list_of",
    "map_of",
    "scalar",
    "schema_type",
]

MAX_REQUEST_SIZE_BYTES: Final = 3 * 1024 * 1024
_MAX_STRING: Final = MAX_REQUEST_SIZE_BYTES - 2
_MIN_STRING: Final = 2
_MIN_BOOL: Final = 4
_MIN_NUMBER: Final = 1


@dataclass(slots=True)
class CelTypeEstimate:
    """A CEL type with the size bounds the cost estimator uses (kube's ``DeclType``).

    ``kind``: object (fields), map, list, string, bytes, int, uint, double, bool,
    duration, timestamp, null or dyn. ``max_elements`` is the largest ``size()``;
    scalars carry 0, as kube's do.
    """

    kind: str
    max_elements: int = 0
    min_serialized_size: int = 1
    fields: dict[str, CelTypeEstimate] = field(default_factory=dict)
    elem: CelTypeEstimate | None = None
    key: CelTypeEstimate | None = None

    def child(self, step: str) -> CelTypeEstimate | None:
        """The type one path step below: a field name, ``@items``/``@values`` (element)
        or ``@keys``; None when there is none."""
        if step in ("@items", "@values"):
            return self.elem
        if step == "@keys":
            return self.key
        return self.fields.get(step)


def scalar(kind: str, max_elements: int = 0) -> CelTypeEstimate:
    """A scalar type (``string`` and ``bytes`` with a bound on their length)."""
    mins = {"string": _MIN_STRING, "bytes": _MIN_STRING, "bool": _MIN_BOOL, "null": 4}
    return CelTypeEstimate(kind, max_elements, mins.get(kind, _MIN_NUMBER))


def list_of(elem: CelTypeEstimate, max_items: int | None = None) -> CelTypeEstimate:
    """A list; without ``max_items``, as many minimal items as fit in a request."""
    n = max_items if max_items is not None else _MAX_STRING // (elem.min_serialized_size + 1)
    return CelTypeEstimate("list", max(0, n), 2, elem=elem)


def map_of(value: CelTypeEstimate, max_properties: int | None = None) -> CelTypeEstimate:
    """A map with string keys; without ``max_properties``, as many minimal entries as
    fit in a request."""
    n = (
        max_properties
        if max_properties is not None
        else _MAX_STRING // (value.min_serialized_size + 6)
    )
    return CelTypeEstimate("map", max(0, n), 2, elem=value, key=scalar("string"))


def _string_type(node: Structural) -> CelTypeEstimate:
    fmt = node.format
    if fmt == "byte":
        n = max(0, node.max_length) if node.max_length is not None else _MAX_STRING
        return CelTypeEstimate("bytes", n, _MIN_STRING)
    if fmt == "duration":
        return CelTypeEstimate("duration", 32, 3)
    if fmt == "date":
        return CelTypeEstimate("timestamp", 12, 12)
    if fmt == "date-time":
        return CelTypeEstimate("timestamp", 32, 21)
    if node.max_length is not None:
        n = max(0, node.max_length) * 4
    elif node.enum:
        n = max((len(v.encode()) for v in node.enum if isinstance(v, str)), default=0)
    else:
        n = _MAX_STRING
    return CelTypeEstimate("string", n, _MIN_STRING)


_META_NAMES: Final = ("name", "generateName")


def _has_type_and_meta(node: Structural) -> bool:
    p = node.properties
    meta = p.get("metadata")
    return (
        p.get("kind") is not None
        and p["kind"].type == "string"
        and p.get("apiVersion") is not None
        and p["apiVersion"].type == "string"
        and meta is not None
        and meta.type == "object"
        and all(meta.properties.get(n) is not None for n in _META_NAMES)
        and all(meta.properties[n].type == "string" for n in _META_NAMES)
    )


def _plain_string() -> CelTypeEstimate:
    return CelTypeEstimate("string", _MAX_STRING, _MIN_STRING)


def schema_type(
    node: Structural | None, resource_root: bool = False, depth: int = 0
) -> CelTypeEstimate | None:
    """kube's ``SchemaDeclType``: the CEL type of ``node`` with its size bounds, or None
    where the schema is not visible to CEL (no type, an array without items)."""
    if node is None or depth > 64:
        return None
    if node.int_or_string:
        n = max(0, node.max_length) * 4 if node.max_length is not None else _MAX_STRING
        return CelTypeEstimate("dyn", n, 1)
    t = node.type
    if t == "array":
        if node.items is None:
            return None
        items = schema_type(node.items, node.items.embedded, depth + 1)
        if items is None:
            return None
        return list_of(items, node.max_items)
    if t == "object":
        if node.additional is not None:
            values = schema_type(node.additional, node.additional.embedded, depth + 1)
            if values is None:
                return None
            return map_of(values, node.max_properties)
        fields: dict[str, CelTypeEstimate] = {}
        min_size = 2
        required = _required(node)
        for name, prop in node.properties.items():
            ft = schema_type(prop, prop.embedded, depth + 1)
            if ft is None:
                continue
            escaped = escape_name(name)
            if escaped is not None:
                fields[escaped] = ft
            if name in required and prop.default is _NO_DEFAULT:
                min_size += len(name) + ft.min_serialized_size + 4
        if resource_root and not _has_type_and_meta(node):
            fields["kind"] = _plain_string()
            fields["apiVersion"] = _plain_string()
            fields["metadata"] = CelTypeEstimate(
                "object", 0, 2, fields={n: _plain_string() for n in _META_NAMES}
            )
        return CelTypeEstimate("object", 0, min_size, fields=fields)
    if t == "string":
        return _string_type(node)
    if t == "boolean":
        return CelTypeEstimate("bool", 0, _MIN_BOOL)
    if t == "number":
        return CelTypeEstimate("double", 0, _MIN_NUMBER)
    if t == "integer":
        return CelTypeEstimate("int", 0, _MIN_NUMBER)
    return None


def _required(node: Structural) -> set[str]:
    req = node.raw.get("required")
    return {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()
