"""Strategic merge patch for the built-in kinds the embedded API server serves.

Reproduces ``k8s.io/apimachinery/pkg/util/strategicpatch`` v0.36 as kube-apiserver runs
it (``StrategicMergeMapPatch`` with ``MergeParallelList`` and ``IgnoreUnmatchedNulls``):

* maps merge key by key; ``null`` deletes; a value of another JSON type replaces;
* lists follow the field's ``patchStrategy`` tag: ``merge`` lists of objects merge
  element-wise by ``patchMergeKey``, ``merge`` lists of scalars union (deduplicated),
  lists without a strategy are replaced;
* directives: ``$patch: replace|delete`` in maps and list elements (``$patch: merge`` is
  rejected, as upstream), ``$deleteFromPrimitiveList/<field>``, ``$setElementOrder/<field>``
  and ``$retainKeys``;
* result order of merged lists: ``$setElementOrder`` first, then the patch's order, then
  the live object's order, interleaved as upstream's ``mergeSortedSlice`` does.

The patch strategies are data (``PATCH_STRATEGIES``), taken from the Go struct tags of
k8s.io/api and k8s.io/apimachinery v0.36 for Namespace, ConfigMap, Secret,
ServiceAccount, core/v1 Event, events.k8s.io/v1 Event, coordination.k8s.io/v1 Lease and
apiextensions.k8s.io/v1 CustomResourceDefinition.

Errors are ``PatchError`` (an ``ApiError``). Kubernetes answers 400 for malformed
directives (``invalid patch format of primitive list`` ...), 422 (generic message) for
lists of lists, and **500** with the library's text for everything else (a missing merge
key, ``$patch: merge``, an unknown ``$patch`` value, mixed element types). The embedded
server must never answer 5xx for bad input, so those are raised as **400 BadRequest with
the same message**; ``PatchError.upstream_code`` keeps the 500 Kubernetes would send.

Like Kubernetes, the function returns what the patch library returns: fields a typed
decode would drop (unknown fields, stray ``$``-directives inside newly added values,
``null`` members of appended list elements) are left for the caller to prune.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson

from kubewerk.core.gofmt import go_sprint, go_type, unmarshal_kind
from kubewerk.core.jsoncopy import copy_tree
from kubewerk.core.patch import PatchError
from kubewerk.core.selectors import canonical_kind_key

__all__ = [
    "PATCH_STRATEGIES",
    "STRATEGIC_KINDS",
    "FieldStrategy",
    "OpenApiPatchSchema",
    "PatchSchema",
    "StrategicPatchError",
    "TableSchema",
    "apply_strategic_patch",
    "strategic_merge_patch",
]


@dataclass(frozen=True, slots=True)
class FieldStrategy:
    """A field's ``patchStrategy`` (comma-separated, as the tag) and ``patchMergeKey``.

    ``elem_kind`` is Go's ``reflect.Kind`` name of the list element type, used in one
    error text (``cannot merge lists without merge key for struct``).
    """

    strategy: str = ""
    merge_key: str = ""
    elem_kind: str = "struct"


_OBJECT_META: Final[dict[str, FieldStrategy]] = {
    "metadata.ownerReferences": FieldStrategy("merge", "uid"),
    "metadata.finalizers": FieldStrategy("merge", "", "string"),
    # managedFields carries no patch tags: it is replaced as a whole
}

PATCH_STRATEGIES: Final[dict[str, dict[str, FieldStrategy]]] = {
    "v1/Namespace": {
        **_OBJECT_META,
        "spec.finalizers": FieldStrategy("", "", "string"),
        "status.conditions": FieldStrategy("merge", "type"),
    },
    "v1/ConfigMap": dict(_OBJECT_META),
    "v1/Secret": dict(_OBJECT_META),
    "v1/ServiceAccount": {
        **_OBJECT_META,
        "secrets": FieldStrategy("merge", "name"),
        "imagePullSecrets": FieldStrategy(""),
    },
    "v1/Event": dict(_OBJECT_META),
    "events.k8s.io/v1/Event": dict(_OBJECT_META),
    "coordination.k8s.io/v1/Lease": dict(_OBJECT_META),
    # apiextensions' types carry no patch tags: only ObjectMeta's merge, every list is replaced
    "apiextensions.k8s.io/v1/CustomResourceDefinition": dict(_OBJECT_META),
}
"""kind key (``apiVersion/Kind``) → dotted field path → strategy. List elements are
addressed as ``path[]`` (none of these kinds has tagged fields inside list elements)."""

STRATEGIC_KINDS: Final = frozenset(PATCH_STRATEGIES)

_DIRECTIVE: Final = "$patch"
_DELETE: Final = "delete"
_REPLACE: Final = "replace"
_MERGE: Final = "merge"
_RETAIN_KEYS: Final = "retainKeys"
_DELETE_PRIMITIVE: Final = "$deleteFromPrimitiveList"
_RETAIN_KEYS_DIRECTIVE: Final = "$retainKeys"
_SET_ORDER: Final = "$setElementOrder"

# mergepatch's sentinel errors and how the patch handler maps them
_ERR_PRIMITIVE_LIST: Final = "invalid patch format of primitive list"
_ERR_RETAIN_KEYS: Final = "invalid patch format of retainKeys"
_ERR_SET_ORDER: Final = "invalid patch format of setElementOrder list"
_ERR_LIST_OF_LISTS: Final = "lists of lists are not supported"
_BAD_REQUEST_ERRORS: Final = frozenset({_ERR_PRIMITIVE_LIST, _ERR_RETAIN_KEYS, _ERR_SET_ORDER})


class StrategicPatchError(PatchError):
    """A strategic merge patch Kubernetes rejects (see the module docstring for codes)."""

    def __init__(
        self, code: int, reason: str, message: str, detail: str, upstream_code: int
    ) -> None:
        super().__init__(code, reason, message, detail, {} if code == 422 else None)
        self.upstream_code = upstream_code


class _Fail(Exception):
    """An error from the patch library; ``str()`` is its Go error text."""


# ------------------------------------------------------------------ Go value rendering


def _go_type(value: Any) -> str:
    """``reflect.TypeOf(v).String()`` for a decoded JSON value, as upstream's messages
    print it with ``%s`` (a nil type prints as ``%!s(<nil>)``)."""
    return "%!s(<nil>)" if value is None else go_type(value)


def _go_percent_s(value: Any) -> str:
    """Go's ``%s`` of an ``interface{}`` holding a decoded JSON value."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    return f"%!s({_go_type(value)}={go_sprint(value)})"


def _bad_arg_type(expected: str, actual: Any) -> _Fail:
    return _Fail(f"expected a {expected}, but received a {_go_type(actual)}")


def _no_merge_key(item: Mapping[str, Any], key: str) -> _Fail:
    return _Fail(f"map: {go_sprint(dict(item))} does not contain declared merge key: {key}")


def _bad_patch_type(directive: Any, item: Mapping[str, Any]) -> _Fail:
    return _Fail(f"unknown patch type: {_go_percent_s(directive)} in map: {go_sprint(dict(item))}")


def _go_equal(a: Any, b: Any) -> bool:
    """Go ``==`` on two ``interface{}`` values: same dynamic type and equal."""
    return type(a) is type(b) and a == b


def _hashable(value: Any) -> Any:
    return (type(value), value) if not isinstance(value, (dict, list)) else (type(value), id(value))


def _equality_key(value: Any) -> Any:
    """A hashable stand-in for ``value``: two scalars get equal stand-ins exactly when
    ``_go_equal`` holds. Objects and arrays (which Go cannot compare: upstream panics) stand
    for their canonical JSON, so equal content is one key. Lets the list operations look
    elements up in a dict instead of scanning: upstream's scans are quadratic, and a patch
    of 50,000 ``$setElementOrder`` entries took minutes here."""
    if isinstance(value, (dict, list)):
        try:
            return (type(value), orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
        except TypeError:  # pragma: no cover - decoded JSON always encodes
            return (type(value), id(value))
    return (type(value), value)


# ------------------------------------------------------------------------- the schema


class PatchSchema(Protocol):
    """What the merge needs to know about a position in a type: its fields' strategies.

    ``child`` answers for a struct/map field (``LookupPatchMetadataForStruct``),
    ``element`` for a list field, returning the schema of the list's elements
    (``LookupPatchMetadataForSlice``).
    """

    def child(self, key: str) -> tuple[PatchSchema, FieldStrategy]: ...

    def element(self, key: str) -> tuple[PatchSchema, FieldStrategy]: ...


class TableSchema:
    """A ``PatchSchema`` over a flat table of dotted paths (list elements as ``path[]``)."""

    __slots__ = ("path", "table")

    def __init__(self, table: Mapping[str, FieldStrategy], path: str = "") -> None:
        self.table = table
        self.path = path

    def child(self, key: str) -> tuple[PatchSchema, FieldStrategy]:
        path = f"{self.path}.{key}" if self.path else key
        return TableSchema(self.table, path), self.table.get(path, FieldStrategy())

    def element(self, key: str) -> tuple[PatchSchema, FieldStrategy]:
        path = f"{self.path}.{key}" if self.path else key
        return TableSchema(self.table, path + "[]"), self.table.get(path, FieldStrategy())


_GO_KINDS: Final = {
    ("string", ""): "string",
    ("integer", "int32"): "int32",
    ("integer", "int64"): "int64",
    ("integer", ""): "int",
    ("number", "double"): "float64",
    ("number", ""): "float64",
    ("boolean", ""): "bool",
}


class OpenApiPatchSchema:
    """A ``PatchSchema`` read from OpenAPI v2 definitions (``$ref: #/definitions/NAME``),
    as kube's published schemas carry the Go tags: ``x-kubernetes-patch-strategy`` and
    ``x-kubernetes-patch-merge-key`` on a field, at any depth, list elements included.

    ``definitions`` maps names to schemas (never modified); ``root`` names the kind's
    definition, or ``schema`` gives the position directly. A field the schema does not
    know has no strategy (its lists are replaced), as for an unknown struct field.
    """

    __slots__ = ("definitions", "schema")

    def __init__(
        self,
        definitions: Mapping[str, Mapping[str, Any]],
        root: str | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> None:
        self.definitions = definitions
        self.schema = self._resolve(
            schema if schema is not None else definitions.get(root or "") or {}
        )

    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        for _ in range(8):  # definitions never chain $refs deeper than this
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                all_of = schema.get("allOf")
                if isinstance(all_of, list) and len(all_of) == 1:
                    ref = all_of[0].get("$ref")
            if not isinstance(ref, str):
                return schema
            schema = self.definitions.get(ref.rsplit("/", 1)[-1]) or {}
        return schema

    def _field(self, key: str) -> Mapping[str, Any]:
        props = self.schema.get("properties")
        if isinstance(props, Mapping) and key in props:
            field: Mapping[str, Any] = props[key]
            return field
        extra = self.schema.get("additionalProperties")
        return extra if isinstance(extra, Mapping) else {}

    @staticmethod
    def _strategy(field: Mapping[str, Any], elem_kind: str) -> FieldStrategy:
        return FieldStrategy(
            str(field.get("x-kubernetes-patch-strategy") or ""),
            str(field.get("x-kubernetes-patch-merge-key") or ""),
            elem_kind,
        )

    def child(self, key: str) -> tuple[PatchSchema, FieldStrategy]:
        field = self._field(key)
        return (
            OpenApiPatchSchema(self.definitions, schema=field),
            self._strategy(field, "struct"),
        )

    def element(self, key: str) -> tuple[PatchSchema, FieldStrategy]:
        field = self._field(key)
        items = field.get("items")
        items = self._resolve(items) if isinstance(items, Mapping) else {}
        if "properties" in items or (
            items.get("type") == "object" and not items.get("additionalProperties")
        ):
            elem_kind = "struct"
        elif items.get("type") == "object":
            elem_kind = "map"
        else:
            key_ = (str(items.get("type") or ""), str(items.get("format") or ""))
            elem_kind = _GO_KINDS.get(key_) or _GO_KINDS.get((key_[0], ""), "struct")
        return OpenApiPatchSchema(self.definitions, schema=items), self._strategy(field, elem_kind)


def _split_strategy(meta: FieldStrategy) -> str:
    """``extractRetainKeysPatchStrategy``: the strategy other than ``retainKeys``."""
    parts = meta.strategy.split(",")
    if len(parts) == 1:
        return "" if parts[0] == _RETAIN_KEYS else parts[0]
    if len(parts) == 2:
        if parts[0] == _RETAIN_KEYS:
            return parts[1]
        if parts[1] == _RETAIN_KEYS:
            return parts[0]
    raise _Fail(f"unexpected patch strategy: [{' '.join(parts)}]")


# -------------------------------------------------------------------------- the merge


def _remove_directives(obj: Any) -> tuple[Any, bool]:
    """``removeDirectives``: drop maps carrying ``$patch`` (and list items that are)."""
    if isinstance(obj, dict):
        if _DIRECTIVE in obj:
            return None, False
        out: dict[str, Any] = {}
        for k, v in obj.items():
            nv, keep = _remove_directives(v)
            if keep:
                out[k] = nv
        return out, True
    if isinstance(obj, list):
        items: list[Any] = []
        for v in obj:
            nv, keep = _remove_directives(v)
            if keep:
                items.append(nv)
        return items, True
    return obj, True


def _discard_nulls(value: Any) -> None:
    """``discardNullValuesFromPatch``: drop ``null`` members of maps, recursively."""
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _discard_nulls(v)


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        if prefix == _DELETE_PRIMITIVE:
            raise _Fail(_ERR_PRIMITIVE_LIST)
        raise _Fail(_ERR_SET_ORDER)
    return rest


def _element_kind(*lists: list[Any]) -> str:
    """``sliceElementType``: ``map``, ``scalar:<type>``; errors as upstream."""
    prev: str | None = None
    for items in lists:
        for v in items:
            if v is None and prev is None:
                # upstream dereferences a nil reflect.Type here and panics (a 500)
                raise _Fail("no elements in any of the given slices")
            current = _go_type(v)
            if prev is None:
                prev = current
                if isinstance(v, list):
                    raise _Fail(_ERR_LIST_OF_LISTS)
            elif prev != current:
                raise _Fail(
                    "list element types are not identical: ["
                    + " ".join(go_sprint(s) for s in lists)
                    + "]"
                )
    if prev is None:
        raise _Fail("no elements in any of the given slices")
    return prev


_MAP_TYPE: Final = "map[string]interface {}"


def _key_of(item: Any, merge_key: str, is_map: bool) -> Any:
    if not is_map:
        return item
    return item.get(merge_key) if isinstance(item, dict) else None


def _positions(items: list[Any], merge_key: str, is_map: bool) -> dict[Any, int]:
    """The first index of each element's key (``_key_of``) in ``items``, by
    ``_equality_key``: ``.get(key, -1)`` is upstream's ``index`` lookup."""
    positions: dict[Any, int] = {}
    for i, item in enumerate(items):
        positions.setdefault(_equality_key(_key_of(item, merge_key, is_map)), i)
    return positions


def _validate_merge_key(merge_key: str, *lists: list[Any]) -> None:
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP_TYPE, item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)


def _normalize_slice_order(
    to_sort: list[Any], order: list[Any], merge_key: str, is_map: bool
) -> list[Any]:
    to_delete: list[Any] = []
    if is_map:
        _validate_merge_key(merge_key, to_sort, order)
        keep = [v for v in to_sort if v.get(_DIRECTIVE) != _DELETE]
        to_delete = [v for v in to_sort if v.get(_DIRECTIVE) == _DELETE]
        to_sort = keep
    big = len(order)
    positions = _positions(order, merge_key, is_map)
    ordered = sorted(
        to_sort,
        key=lambda v: positions.get(_equality_key(_key_of(v, merge_key, is_map)), big),
    )
    return ordered + to_delete


def _merge_sorted(
    left: list[Any], right: list[Any], server_order: list[Any], merge_key: str, is_map: bool
) -> list[Any]:
    out: list[Any] = []
    positions = _positions(server_order, merge_key, is_map)
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = positions.get(_equality_key(_key_of(left[i], merge_key, is_map)), -1)
            ri = positions.get(_equality_key(_key_of(right[j], merge_key, is_map)), -1)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _normalize_element_order(
    patch: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    is_map: bool,
) -> list[Any]:
    patch = _normalize_slice_order(patch, patch_order, merge_key, is_map)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, is_map)
    return _merge_sorted(server_only, patch, server_order, merge_key, is_map)


def _find_map(items: list[Any], key: str, value: Any) -> int:
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _Fail(f"value for key {i} is not a map")
        if key in item and _go_equal(item[key], value):
            return i
    return -1


class _MapIndex:
    """``_find_map`` over one list without scanning it: the first index of each merge-key
    value among the maps before the list's first non-map (whose index ``_find_map``'s
    error names when the value is not found before it)."""

    __slots__ = ("_first", "_key", "_non_map")

    def __init__(self, items: list[Any], key: str) -> None:
        self._key = key
        self._first: dict[Any, int] = {}
        self._non_map = -1
        self.rebuild(items)

    def rebuild(self, items: list[Any]) -> None:
        first: dict[Any, int] = {}
        self._non_map = -1
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                self._non_map = i
                break
            if self._key in item:
                first.setdefault(_equality_key(item[self._key]), i)
        self._first = first

    def find(self, value: Any) -> int:
        """``_find_map(items, key, value)``: the index, -1, or its error."""
        i = self._first.get(_equality_key(value), -1)
        if i < 0 and self._non_map >= 0:
            raise _Fail(f"value for key {self._non_map} is not a map")
        return i

    def appended(self, item: dict[str, Any], at: int) -> None:
        """``item`` was appended to the list at index ``at``."""
        if self._non_map < 0 and self._key in item:
            self._first.setdefault(_equality_key(item[self._key]), at)


def _partition_primitives(merged: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = {_hashable(v) for v in by}
    inside = [v for v in merged if _hashable(v) in present]
    outside = [v for v in merged if _hashable(v) not in present]
    return inside, outside


def _partition_maps(
    merged: list[Any], by: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    inside: list[Any] = []
    outside: list[Any] = []
    index = _MapIndex(by, merge_key)
    for v in merged:
        if not isinstance(v, dict):
            raise _bad_arg_type(_MAP_TYPE, v)
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        (inside if index.find(v[merge_key]) >= 0 else outside).append(v)
    return inside, outside


def _dedupe_scalars(items: list[Any]) -> list[Any]:
    """``deduplicateScalars``: the swap-with-last removal, same resulting order.

    Upstream compares every pair; here each value's positions wait in a heap, so step ``i``
    visits exactly the later positions that hold ``s[i]``, in the ascending order
    upstream's scan meets them (a position filled from the end is pushed back, and
    entries whose position was overwritten or cut off are skipped).
    """
    s = list(items)
    keys = [_equality_key(v) for v in s]
    waiting: dict[Any, list[int]] = {}
    for i, key in enumerate(keys):
        waiting.setdefault(key, []).append(i)  # ascending: already a heap
    if len(waiting) == len(s):
        return s
    length = len(s) - 1
    i = 0
    while i < length:
        key = keys[i]
        heap = waiting[key]
        while heap:
            j = heap[0]
            heapq.heappop(heap)
            if j <= i or j > length or keys[j] != key:
                continue  # stale: before the scan, cut off, or overwritten
            s[j] = s[length]
            keys[j] = keys[length]
            if j != length:
                heapq.heappush(waiting[keys[j]], j)
            length -= 1
        i += 1
    return s[: length + 1]


def _merge_slice(
    original: list[Any],
    patch: list[Any],
    schema: PatchSchema,
    meta: FieldStrategy,
    is_delete_list: bool,
) -> list[Any]:
    merge_key = meta.merge_key
    if not original and not patch:
        return original
    elem = _element_kind(original, patch)
    is_map = elem == _MAP_TYPE
    if not is_map:
        if is_delete_list:
            gone = {_hashable(v) for v in patch}
            return [v for v in original if _hashable(v) not in gone]
        merged = _dedupe_scalars(original + patch)
    else:
        if not merge_key:
            raise _Fail(f"cannot merge lists without merge key for {meta.elem_kind}")
        backing = original
        original, patch, shared = _merge_special_elements(backing, patch, merge_key)
        merged = _merge_plain_elements(
            original, patch, merge_key, schema, backing if shared else None
        )
    if not merge_key:
        inside, outside = _partition_primitives(merged, patch)
    else:
        inside, outside = _partition_maps(merged, patch, merge_key)
    return _normalize_element_order(inside, outside, patch, original, merge_key, is_map)


def _merge_special_elements(
    original: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any], bool]:
    """``mergeSliceWithSpecialElements``: apply ``$patch`` list elements.

    Returns (the remaining original, the patch without directives, whether the caller's
    list still shares Go's backing array). Deletions shift ``original`` in place, as Go's
    ``append(s[:i], s[i+1:]...)`` does to the shared array: the list keeps its length and
    its tail keeps stale copies, which upstream's ordering step then reads.

    When every element is a map, deletions are not done one scan and shift at a time
    (quadratic: 4,000 deletions took 4 s) but marked through an index of the elements'
    keys, and the array upstream's shifts leave is written once at the end: the survivors
    in order, then in each freed slot the element that was last when the list shrank past
    it.
    """
    length = len(original)
    plain: list[Any] = []
    replace = False
    # the fast path: positions of each key's live elements, and the deletions so far
    by_key: dict[Any, list[int]] | None = None
    all_maps = all(isinstance(item, dict) for item in original)
    deleted = [False] * length if all_maps else []
    freed: list[Any] = []  # freed[k]: what slot length-1-k keeps (k-th deletion)
    last = length - 1  # the position of the last live element (fast path)
    for v in patch:
        if _DIRECTIVE not in v:
            plain.append(v)
            continue
        directive = v[_DIRECTIVE]
        if _go_equal(directive, _DELETE):
            if merge_key not in v:
                raise _no_merge_key(v, merge_key)
            if not all_maps:
                while (idx := _find_map(original[:length], merge_key, v[merge_key])) >= 0:
                    original[idx : length - 1] = original[idx + 1 : length]
                    length -= 1
                continue
            if by_key is None:
                by_key = {}
                for pos, item in enumerate(original):
                    if merge_key in item:
                        by_key.setdefault(_equality_key(item[merge_key]), []).append(pos)
            for pos in by_key.pop(_equality_key(v[merge_key]), ()):
                freed.append(original[last])
                deleted[pos] = True
                while last >= 0 and deleted[last]:
                    last -= 1
                length -= 1
        elif _go_equal(directive, _REPLACE):
            replace = True
        elif _go_equal(directive, _MERGE):
            raise _Fail("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, v)
    if freed:
        survivors = [item for item, gone in zip(original, deleted, strict=True) if not gone]
        original[:] = survivors + freed[::-1]
    if replace:
        return plain, [], False
    return original[:length], plain, True


def _merge_plain_elements(
    view: list[Any],
    patch: list[Any],
    merge_key: str,
    schema: PatchSchema,
    backing: list[Any] | None,
) -> list[Any]:
    """``mergeSliceWithoutSpecialElements``; appends land in ``backing`` like Go's append."""
    out = list(view)
    index = _MapIndex(out, merge_key)
    for v in patch:
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        idx = index.find(v[merge_key])
        if idx >= 0:
            out[idx] = _merge_map(out[idx], v, schema)
            merged = out[idx]
            if merge_key not in merged or not _go_equal(merged[merge_key], v[merge_key]):
                index.rebuild(out)  # the merge changed the element's key (a null, say)
            if backing is not None and idx < len(backing):
                backing[idx] = out[idx]
        else:
            out.append(v)
            index.appended(v, len(out) - 1)
            if backing is not None and len(out) - 1 < len(backing):
                backing[len(out) - 1] = v
    return out


def _merge_slice_handler(
    original: Any, patch: Any, schema: PatchSchema, meta: FieldStrategy, is_delete_list: bool
) -> list[Any]:
    if not isinstance(original, list):
        raise _bad_arg_type("[]interface {}", original)
    if not isinstance(patch, list):
        raise _bad_arg_type("[]interface {}", patch)
    if _split_strategy(meta) == _MERGE or is_delete_list:
        return _merge_slice(original, patch, schema, meta, is_delete_list)
    return patch


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if _RETAIN_KEYS_DIRECTIVE not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS_DIRECTIVE)
    if not isinstance(retain, list):
        raise _Fail(_ERR_RETAIN_KEYS)
    keep = {_hashable(v) for v in retain}
    for k, v in patch.items():
        if v is None or k.startswith(_DELETE_PRIMITIVE) or k.startswith(_SET_ORDER):
            continue
        if _hashable(k) not in keep:
            raise _Fail(_ERR_RETAIN_KEYS)
    for k in [k for k in original if _hashable(k) not in keep]:
        del original[k]


def _validate_set_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    if not order or not patch_list:
        return
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP_TYPE, item)
        non_delete = [v for v in patch_list if not _go_equal(v.get(_DIRECTIVE), _DELETE)]
    else:
        non_delete = patch_list
    pi = si = 0
    while pi < len(non_delete) and si < len(order):
        item = non_delete[pi]
        if isinstance(item, dict) and _DIRECTIVE in item:
            pi += 1
            continue
        if not merge_key:
            equal = _go_equal(item, order[si])
        else:
            other = order[si]
            if not isinstance(item, dict):
                raise _bad_arg_type(_MAP_TYPE, item)
            if not isinstance(other, dict):
                raise _bad_arg_type(_MAP_TYPE, other)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            if merge_key not in other:
                raise _no_merge_key(other, merge_key)
            equal = _go_equal(item[merge_key], other[merge_key])
        if equal:
            pi += 1
        si += 1
    if pi < len(non_delete) and si >= len(order):
        raise _Fail(
            f"The order in patch list:\n{go_sprint(patch_list)}\n "
            f"doesn't match {_SET_ORDER} list:\n{go_sprint(order)}\n"
        )


def _merge_set_element_order(
    original: dict[str, Any], patch: dict[str, Any], schema: PatchSchema
) -> None:
    for key in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        field = _extract_key(key, _SET_ORDER)
        found_original = field in original
        found_patch = field in patch
        original_list: list[Any] = []
        patch_list: list[Any] = []
        if found_original:
            if not isinstance(original[field], list):
                raise _bad_arg_type("[]interface {}", original[field])
            original_list = original[field]
        if found_patch:
            if not isinstance(patch[field], list):
                raise _bad_arg_type("[]interface {}", patch[field])
            patch_list = patch[field]
        sub, meta = schema.element(field)
        _split_strategy(meta)
        merge_key = meta.merge_key
        _validate_set_order(patch_list, order, merge_key)
        if found_original and not found_patch:
            merged = original_list
        elif found_patch and not found_original:
            merged, _ = _remove_directives(patch_list)
        elif found_original and found_patch:
            merged = _merge_slice_handler(original_list, patch_list, sub, meta, False)
        else:
            continue
        if not merge_key:
            inside, outside = _partition_primitives(merged, order)
        else:
            inside, outside = _partition_maps(merged, order, merge_key)
        is_map = _element_kind(original_list, patch_list) == _MAP_TYPE
        original[field] = _normalize_element_order(
            inside, outside, order, original_list, merge_key, is_map
        )
        patch.pop(field, None)


def _map_directive(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    if _go_equal(directive, _REPLACE):
        return {k: v for k, v in patch.items() if k != _DIRECTIVE}
    if _go_equal(directive, _DELETE):
        return {}
    raise _bad_patch_type(directive, patch)


def _merge_map(
    original: dict[str, Any] | None, patch: dict[str, Any], schema: PatchSchema
) -> dict[str, Any]:
    if _DIRECTIVE in patch:
        return _map_directive(patch[_DIRECTIVE], patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_set_element_order(original, patch, schema)
    for key, patch_v in list(patch.items()):
        k = key
        is_delete_list = False
        if key.startswith(_DELETE_PRIMITIVE):
            k = _extract_key(key, _DELETE_PRIMITIVE)
            is_delete_list = True
        if patch_v is None:
            original.pop(k, None)
            continue
        if k not in original or _go_type(original[k]) != _go_type(patch_v):
            if not is_delete_list:
                _discard_nulls(patch_v)
                value, keep = _remove_directives(patch_v)
                if keep:
                    original[k] = value
                else:
                    original.pop(k, None)
            continue
        current = original[k]
        if isinstance(current, dict):
            sub, meta = schema.child(k)
            if _split_strategy(meta) != _REPLACE:
                original[k] = _merge_map(current, patch_v, sub)
            else:
                original[k] = patch_v
        elif isinstance(current, list):
            sub, meta = schema.element(k)
            original[k] = _merge_slice_handler(current, patch_v, sub, meta, is_delete_list)
        else:
            value, keep = _remove_directives(patch_v)
            if keep:
                original[k] = value
            else:
                del original[k]
    return original


def _classify(text: str) -> StrategicPatchError:
    if text in _BAD_REQUEST_ERRORS:
        return StrategicPatchError(400, "BadRequest", text, text, 400)
    if text == _ERR_LIST_OF_LISTS:
        return StrategicPatchError(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            text,
            422,
        )
    return StrategicPatchError(400, "BadRequest", text, text, 500)


def strategic_merge_patch(doc: Mapping[str, Any], patch: Any, kind_key: str) -> dict[str, Any]:
    """Apply a decoded strategic merge patch to ``doc`` of built-in kind ``kind_key``.

    ``kind_key`` is ``apiVersion/Kind`` (``v1/ServiceAccount``,
    ``coordination.k8s.io/v1/Lease``; see ``STRATEGIC_KINDS``), or ``group/Kind`` / a bare
    core ``Kind`` (``ServiceAccount``, ``events.k8s.io/Event``, ``Lease``). A ``null`` patch changes
    nothing; a non-object patch is 400 with Go's decoding message. Neither argument is
    modified and the result shares no containers with them. Raises
    ``StrategicPatchError``; raises ``KeyError`` for a kind without a strategy table
    (custom resources have none: the handler answers 415 before patching).
    """
    return apply_strategic_patch(
        doc, patch, TableSchema(PATCH_STRATEGIES[canonical_kind_key(kind_key)])
    )


def apply_strategic_patch(
    doc: Mapping[str, Any], patch: Any, schema: PatchSchema
) -> dict[str, Any]:
    """``strategic_merge_patch`` against any ``PatchSchema`` (same guarantees and errors)."""
    if patch is None:
        return dict(copy_tree(doc))
    if not isinstance(patch, dict):
        text = (
            f"json: cannot unmarshal {unmarshal_kind(patch)} "
            "into Go value of type map[string]interface {}"
        )
        raise StrategicPatchError(400, "BadRequest", text, text, 400)
    try:
        return _merge_map(copy_tree(dict(doc)), copy_tree(patch), schema)
    except _Fail as err:
        raise _classify(str(err)) from None
