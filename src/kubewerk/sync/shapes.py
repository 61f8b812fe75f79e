"""The schema view a semantic diff needs, read from OpenAPI schemas as plain dicts.

For each position of an object a :class:`Shape` says whether it is a map (with declared
fields and/or free-form values), a list and which kind of list, or a scalar, and whether
a scalar is compared by value (an ``int-or-string`` or a ``Quantity``):

- lists follow ``x-kubernetes-list-type`` (``atomic``: ordered; ``set``: unordered
  scalars; ``map``: unordered, items identified by ``x-kubernetes-list-map-keys``);
  without it, a list whose ``x-kubernetes-patch-strategy`` contains ``merge`` is keyed by
  ``x-kubernetes-patch-merge-key`` (a set when there is none) as kube-openapi's schema
  conversion reads the built-in kinds; anything else is atomic;
- ``x-kubernetes-int-or-string``, ``format: int-or-string`` and ``$ref``\\s to
  ``...IntOrString`` or ``...resource.Quantity`` mark value-compared scalars;
- a position the schema says nothing about (``{}``, ``x-kubernetes-preserve-unknown-fields``,
  a field a struct does not declare) is :data:`ANY`: maps compared key by key, lists in
  order, scalars by equality.

Shapes are built lazily and cached per schema object, so recursive definitions cost only
what the compared objects reach.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["ANY", "Shape", "ShapeReader", "keyed_list", "struct"]

MAP: Final = "map"
LIST: Final = "list"
SCALAR: Final = "scalar"
UNKNOWN: Final = "any"

ATOMIC: Final = "atomic"
SET: Final = "set"
KEYED: Final = "map"


class Shape:
    """One position's comparison type (see the module docstring). ``kind`` is ``map``,
    ``list``, ``scalar`` or ``any``; ``list_type`` ``atomic``/``set``/``map`` with
    ``keys``; ``by_value`` for int-or-string and quantity scalars."""

    __slots__ = (
        "_element",
        "_element_of",
        "_field_of",
        "_fields",
        "by_value",
        "keys",
        "kind",
        "list_type",
    )

    def __init__(
        self,
        kind: str,
        *,
        list_type: str = ATOMIC,
        keys: tuple[str, ...] = (),
        by_value: bool = False,
        field_of: Callable[[str], Shape | None] | None = None,
        element_of: Callable[[], Shape] | None = None,
    ) -> None:
        self.kind = kind
        self.list_type = list_type
        self.keys = keys
        self.by_value = by_value
        self._field_of = field_of
        self._element_of = element_of
        self._fields: dict[str, Shape] = {}
        self._element: Shape | None = None

    def element(self) -> Shape:
        """The shape of list items or of map values that are not declared fields."""
        if self._element is None:
            self._element = self._element_of() if self._element_of is not None else ANY
        return self._element

    def member(self, name: str) -> Shape:
        """The shape of map key ``name``: the declared field's, else the element's."""
        found = self._fields.get(name)
        if found is not None:
            return found
        declared = self._field_of(name) if self._field_of is not None else None
        found = declared if declared is not None else self.element()
        self._fields[name] = found
        return found


ANY: Final = Shape(UNKNOWN)
_SCALAR: Final = Shape(SCALAR)
_BY_VALUE: Final = Shape(SCALAR, by_value=True)


def struct(fields: Mapping[str, Shape]) -> Shape:
    """A map shape with these declared fields (other keys are :data:`ANY`)."""
    table = dict(fields)
    return Shape(MAP, field_of=table.get)


def keyed_list(keys: tuple[str, ...], element: Shape = ANY) -> Shape:
    """A list of maps identified by ``keys`` (``()``: a set of scalars)."""
    return Shape(LIST, list_type=KEYED if keys else SET, keys=keys, element_of=lambda: element)


def _by_value_ref(ref: str) -> bool:
    name = ref.rsplit("/", 1)[-1]
    return name.endswith((".IntOrString", ".Quantity")) or name in ("IntOrString", "Quantity")


class ShapeReader:
    """Shapes of OpenAPI schemas given as dicts; ``definitions`` resolves ``$ref``\\s
    (``#/definitions/NAME`` or ``#/components/schemas/NAME``). Cached per schema object,
    which must stay alive and unchanged while the reader is used."""

    __slots__ = ("_cache", "definitions")

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.definitions: Mapping[str, Mapping[str, Any]] = definitions or {}
        self._cache: dict[int, tuple[Mapping[str, Any], Shape]] = {}

    def definition(self, name: str) -> Shape | None:
        """The shape of the named definition, or None if there is none."""
        found = self.definitions.get(name)
        return self.shape(found) if found is not None else None

    def shape(self, schema: Mapping[str, Any]) -> Shape:
        """The shape ``schema`` describes."""
        cached = self._cache.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        made = self._build(schema)
        self._cache[id(schema)] = (schema, made)
        return made

    def _deref(self, schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
        by_value = False
        for _ in range(8):
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                all_of = schema.get("allOf")
                if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
                    ref = all_of[0].get("$ref")
            if not isinstance(ref, str):
                return schema, by_value
            by_value = by_value or _by_value_ref(ref)
            found = self.definitions.get(ref.rsplit("/", 1)[-1])
            if found is None:
                return {}, by_value
            schema = found
        return schema, by_value

    def _build(self, outer: Mapping[str, Any]) -> Shape:
        schema, by_value = self._deref(outer)

        def ext(name: str) -> Any:
            value = outer.get(name)
            return value if value is not None else schema.get(name)

        if by_value or ext("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
            return _BY_VALUE
        kind = schema.get("type")
        items = schema.get("items")
        if kind == "array" or (kind is None and isinstance(items, dict)):
            list_type = ext("x-kubernetes-list-type")
            keys: tuple[str, ...] = ()
            if list_type == KEYED:
                keys = tuple(
                    k for k in ext("x-kubernetes-list-map-keys") or () if isinstance(k, str)
                )
            elif list_type not in (ATOMIC, SET):
                strategy = str(ext("x-kubernetes-patch-strategy") or "")
                merge_key = ext("x-kubernetes-patch-merge-key")
                if "merge" in strategy.split(","):
                    list_type = KEYED if merge_key else SET
                    keys = (str(merge_key),) if merge_key else ()
                else:
                    list_type = ATOMIC
            item_schema: Mapping[str, Any] = items if isinstance(items, dict) else {}
            return Shape(
                LIST, list_type=list_type, keys=keys, element_of=lambda: self.shape(item_schema)
            )
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if kind == "object" or isinstance(props, dict) or isinstance(extra, dict):
            table: Mapping[str, Any] = props if isinstance(props, dict) else {}

            def field_of(name: str) -> Shape | None:
                sub = table.get(name)
                return self.shape(sub) if isinstance(sub, dict) else None

            extra_schema = extra if isinstance(extra, dict) else None
            return Shape(
                MAP,
                field_of=field_of if table else None,
                element_of=(lambda: self.shape(extra_schema)) if extra_schema is not None else None,
            )
        if kind in ("string", "integer", "number", "boolean"):
            return _SCALAR
        return ANY
