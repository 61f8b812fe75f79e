"""The schema view server-side apply needs: for each position of an object, whether it is
a scalar, a map (struct fields and/or free-form keys; granular or atomic) or a list
(atomic, a set, or a map keyed by some of its items' fields).

``OpenApiTypes`` reads it from OpenAPI schemas as plain dicts — a CRD's structural
``openAPIV3Schema``, or the built-in kinds' published definitions (``$ref`` to
``#/definitions/NAME`` or ``#/components/schemas/NAME``) — the way kube-openapi's
``schemaconv`` turns them into structured-merge-diff schemas:

- ``x-kubernetes-list-type``: ``atomic`` / ``set`` / ``map`` with
  ``x-kubernetes-list-map-keys``; without it a list whose ``x-kubernetes-patch-strategy``
  has ``merge`` is keyed by ``x-kubernetes-patch-merge-key`` (a set if it has none),
  anything else is atomic;
- ``x-kubernetes-map-type: atomic`` makes a map or struct one leaf; ``granular`` (the
  default) lets each field have its own owner;
- a schema that says nothing (``x-kubernetes-preserve-unknown-fields``, ``{}``) and
  fields a struct does not declare are *deduced* from the value: objects are granular
  maps, lists atomic, the rest scalars;
- a struct is *closed* (``TypeNode.closed``: a field it does not declare is an error
  when an applied configuration is typed) when it declares properties and has no
  ``additionalProperties``, or has ``additionalProperties: false``, unless it or an
  ancestor in the same inlined schema says ``x-kubernetes-preserve-unknown-fields``
  (schemaconv hands that flag down to inlined descendants, not through a ``$ref``);
- an ``x-kubernetes-embedded-resource`` object also declares ``apiVersion`` and
  ``kind`` (strings) and ``metadata`` (the ``object_meta`` type given), as
  kube-apiserver's CRD OpenAPI builder adds them.

Nodes are built lazily and cached, so recursive definitions (``JSONSchemaProps``) cost
only what an object actually reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["DEDUCED", "OpenApiTypes", "TypeNode"]

SCALAR = "scalar"
MAP = "map"
LIST = "list"
UNTYPED = "deduced"

ATOMIC = "atomic"
GRANULAR = "granular"
SET = "set"
KEYED = "map"


class TypeNode:
    """One position's type. ``kind`` is ``scalar``, ``map``, ``list`` or ``deduced``;
    ``relation`` is ``atomic`` or ``granular`` for maps and ``atomic``, ``set`` or ``map``
    for lists; ``keys`` the key fields of a keyed list."""

    __slots__ = (
        "_default_of",
        "_element",
        "_element_of",
        "_field_of",
        "_fields",
        "closed",
        "keys",
        "kind",
        "relation",
    )

    def __init__(
        self,
        kind: str,
        relation: str = GRANULAR,
        keys: tuple[str, ...] = (),
        field_of: Callable[[str], TypeNode | None] | None = None,
        element_of: Callable[[], TypeNode] | None = None,
        default_of: Callable[[str], Any] | None = None,
        closed: bool = False,
    ) -> None:
        self.kind = kind
        # a map whose undeclared fields are an error when a configuration is typed
        self.closed = closed
        self._default_of = default_of
        self.relation = relation
        self.keys = keys
        self._field_of = field_of
        self._element_of = element_of
        self._fields: dict[str, TypeNode | None] = {}
        self._element: TypeNode | None = None

    def declared(self, name: str) -> TypeNode | None:
        """The type of the struct field ``name``, or None if the struct does not declare
        it (free-form map keys are never declared)."""
        if self._field_of is None:
            return None
        try:
            return self._fields[name]
        except KeyError:
            found = self._fields[name] = self._field_of(name)
            return found

    def field_default(self, name: str) -> Any:
        """The schema's default for struct field ``name`` (None if it has none): what a
        keyed list item that omits a key field is identified by."""
        return self._default_of(name) if self._default_of is not None else None

    def element(self) -> TypeNode:
        """The type of list items, or of map values not declared as fields."""
        if self._element is None:
            self._element = self._element_of() if self._element_of is not None else DEDUCED
        return self._element

    def member(self, name: str) -> TypeNode:
        """The type of map key ``name``: the declared field's, else the element type."""
        declared = self.declared(name)
        return declared if declared is not None else self.element()

    def with_fields(self, overrides: Mapping[str, TypeNode]) -> TypeNode:
        """This map type with some fields' types replaced (or added)."""
        base = self

        def field_of(name: str) -> TypeNode | None:
            found = overrides.get(name)
            return found if found is not None else base.declared(name)

        return TypeNode(
            self.kind,
            self.relation,
            self.keys,
            field_of,
            self.element,
            self._default_of,
            self.closed,
        )

    def resolve(self, value: Any) -> TypeNode:
        """The concrete node for ``value`` (a deduced type becomes what the value is)."""
        if self.kind != UNTYPED:
            return self
        if isinstance(value, dict):
            return _DEDUCED_MAP
        if isinstance(value, list):
            return _DEDUCED_LIST
        return _SCALAR


DEDUCED = TypeNode(UNTYPED)
_SCALAR = TypeNode(SCALAR)
_DEDUCED_MAP = TypeNode(MAP, GRANULAR, (), None, lambda: DEDUCED)
_DEDUCED_LIST = TypeNode(LIST, ATOMIC, (), None, lambda: DEDUCED)


def scalar() -> TypeNode:
    return _SCALAR


def struct(fields: Mapping[str, TypeNode], atomic: bool = False, closed: bool = False) -> TypeNode:
    """A struct type with these fields (undeclared fields are deduced; an error when
    typing a configuration if ``closed``)."""
    table = dict(fields)
    return TypeNode(
        MAP, ATOMIC if atomic else GRANULAR, (), table.get, lambda: DEDUCED, None, closed
    )


def map_of(element: TypeNode, atomic: bool = False) -> TypeNode:
    return TypeNode(MAP, ATOMIC if atomic else GRANULAR, (), None, lambda: element)


def list_of(element: TypeNode, list_type: str = ATOMIC, keys: tuple[str, ...] = ()) -> TypeNode:
    return TypeNode(LIST, list_type, keys, None, lambda: element)


class OpenApiTypes:
    """Type nodes for OpenAPI schemas given as dicts (see the module docstring).

    ``definitions`` resolves ``$ref``s (never modified); ``node`` is cached per schema
    object (and whether an ancestor preserves unknown fields), which must stay alive
    and unchanged while this instance is used. ``object_meta``: the type of
    ``metadata`` in embedded resources (None: deduced)."""

    __slots__ = ("_cache", "definitions", "key_defaults", "object_meta")

    def __init__(
        self,
        definitions: Mapping[str, Mapping[str, Any]] | None = None,
        key_defaults: Mapping[str, Any] | None = None,
        object_meta: TypeNode | None = None,
    ) -> None:
        self.definitions: Mapping[str, Mapping[str, Any]] = definitions or {}
        # defaults of struct fields the schemas leave undeclared (kube's built-in SSA
        # schema defaults every ``protocol`` list-map key to "TCP"; the published
        # definitions only say so in prose)
        self.key_defaults: Mapping[str, Any] = key_defaults or {}
        self.object_meta = object_meta
        self._cache: dict[tuple[int, bool], tuple[Mapping[str, Any], TypeNode]] = {}

    def _deref(self, schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
        """The schema ``schema`` refers to (itself if no ``$ref``), and whether it was
        reached through a ``$ref`` (a named type: it does not inherit preserve)."""
        named = False
        for _ in range(8):
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                all_of = schema.get("allOf")
                if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
                    ref = all_of[0].get("$ref")
            if not isinstance(ref, str):
                return schema, named
            found = self.definitions.get(ref.rsplit("/", 1)[-1])
            if found is None:
                return {}, True
            schema = found
            named = True
        return schema, named

    def definition(self, name: str) -> TypeNode | None:
        found = self.definitions.get(name)
        return self.node(found) if found is not None else None

    def node(self, schema: Mapping[str, Any], preserve: bool = False) -> TypeNode:
        """The type ``schema`` describes; ``preserve``: an ancestor in the same inlined
        schema has ``x-kubernetes-preserve-unknown-fields: true``."""
        key = (id(schema), preserve)
        cached = self._cache.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        made = self._build(schema, preserve)
        self._cache[key] = (schema, made)
        return made

    def _build(self, outer: Mapping[str, Any], preserve: bool) -> TypeNode:
        schema, named = self._deref(outer)
        if named:
            preserve = False
        if schema.get("x-kubernetes-preserve-unknown-fields") is True:
            preserve = True

        def ext(name: str) -> Any:
            value = outer.get(name)
            return value if value is not None else schema.get(name)

        kind = schema.get("type")
        if kind == "array" or (kind is None and isinstance(schema.get("items"), dict)):
            items = schema.get("items")
            list_type = ext("x-kubernetes-list-type")
            keys: tuple[str, ...] = ()
            if list_type == KEYED:
                raw_keys = ext("x-kubernetes-list-map-keys")
                keys = tuple(k for k in raw_keys or () if isinstance(k, str))
            elif list_type not in (ATOMIC, SET):
                strategy = str(ext("x-kubernetes-patch-strategy") or "")
                merge_key = ext("x-kubernetes-patch-merge-key")
                if "merge" in strategy.split(","):
                    list_type = KEYED if merge_key else SET
                    keys = (str(merge_key),) if merge_key else ()
                else:
                    list_type = ATOMIC
            item_schema: Mapping[str, Any] = items if isinstance(items, dict) else {}
            return TypeNode(LIST, list_type, keys, None, lambda: self.node(item_schema, preserve))
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if kind == "object" or isinstance(props, dict) or isinstance(extra, dict):
            relation = ATOMIC if ext("x-kubernetes-map-type") == ATOMIC else GRANULAR
            table: Mapping[str, Any] = props if isinstance(props, dict) else {}
            embedded: dict[str, TypeNode] = {}
            if schema.get("x-kubernetes-embedded-resource") is True:
                embedded = {"apiVersion": _SCALAR, "kind": _SCALAR}
                embedded["metadata"] = self.object_meta or DEDUCED

            def field_of(name: str) -> TypeNode | None:
                found = embedded.get(name)
                if found is not None:
                    return found
                sub = table.get(name)
                return self.node(sub, preserve) if isinstance(sub, dict) else None

            def default_of(name: str) -> Any:
                sub = table.get(name)
                found = sub.get("default") if isinstance(sub, dict) else None
                return found if found is not None else self.key_defaults.get(name)

            extra_schema: Mapping[str, Any] | None = extra if isinstance(extra, dict) else None
            closed = extra is False or (extra is None and not preserve and bool(table or embedded))
            return TypeNode(
                MAP,
                relation,
                (),
                field_of if table or embedded else None,
                (lambda: self.node(extra_schema, preserve)) if extra_schema is not None else None,
                default_of if table else None,
                closed,
            )
        if kind in ("string", "integer", "number", "boolean") or schema.get(
            "x-kubernetes-int-or-string"
        ):
            return _SCALAR
        return DEDUCED
