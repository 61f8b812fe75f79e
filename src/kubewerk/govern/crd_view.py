"""A uniform view of a CustomResourceDefinition (``apiextensions.k8s.io/v1`` or ``v1beta1``)
and a walker over its structural schemas.

:class:`CRDView` reads what the linter and the compatibility checker need without
assuming the document is well formed: missing or mistyped parts read as absent (the
``structural-schema`` rule reports them). For ``v1beta1`` the top-level ``validation``,
``subresources`` and ``version`` apply to every version that does not override them,
and ``preserveUnknownFields`` defaults to true, as the API server treated them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubewerk.core.gvk import split_api_version

CRD_GROUP = "apiextensions.k8s.io"

Location = tuple[str | int, ...]


def is_crd(data: Any) -> bool:
    """Whether a decoded document is a CustomResourceDefinition."""
    return (
        isinstance(data, dict)
        and data.get("kind") == "CustomResourceDefinition"
        and isinstance(data.get("apiVersion"), str)
        and split_api_version(data["apiVersion"]).group == CRD_GROUP
    )


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class VersionView:
    """One version of a CRD with the schema and subresources in effect for it."""

    name: str
    index: int  # position in spec.versions (-1: v1beta1 single ``spec.version``)
    served: bool
    storage: bool
    deprecated: bool
    deprecation_warning: str | None
    schema: dict[str, Any] | None
    schema_location: Location
    subresources: dict[str, Any] | None
    subresources_location: Location

    @property
    def location(self) -> Location:
        return ("spec", "versions", self.index) if self.index >= 0 else ("spec", "version")


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+)?)?$")


def version_stability(name: str) -> str:
    """``"ga"``, ``"beta"``, ``"alpha"`` or ``"other"`` by Kubernetes' version naming."""
    m = _VERSION_RE.match(name)
    if m is None:
        return "other"
    return m.group(2) or "ga"


class CRDView:
    """Read-only accessors over a CRD document (never raises on malformed input)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.api_version: str = str(data.get("apiVersion", ""))
        self.metadata = as_dict(data.get("metadata"))
        self.spec = as_dict(data.get("spec"))
        self.name: str = str(self.metadata.get("name") or "")
        self.group: str = str(self.spec.get("group") or "")
        self.scope: str = str(self.spec.get("scope") or "")
        self.names = as_dict(self.spec.get("names"))
        self.kind: str = str(self.names.get("kind") or "")
        self.plural: str = str(self.names.get("plural") or "")
        conversion = as_dict(self.spec.get("conversion"))
        self.conversion_strategy: str = str(conversion.get("strategy") or "None")
        self.is_v1beta1 = self.api_version == f"{CRD_GROUP}/v1beta1"
        puf = self.spec.get("preserveUnknownFields")
        self.preserve_unknown_fields: bool = puf if isinstance(puf, bool) else self.is_v1beta1
        status = as_dict(data.get("status"))
        self.stored_versions: list[str] = [
            v for v in as_list(status.get("storedVersions")) if isinstance(v, str)
        ]
        self.versions: list[VersionView] = self._versions()

    @property
    def namespaced(self) -> bool:
        return self.scope == "Namespaced"

    def _versions(self) -> list[VersionView]:
        spec = self.spec
        global_schema = as_dict(as_dict(spec.get("validation")).get("openAPIV3Schema")) or None
        global_sub = spec.get("subresources")
        out: list[VersionView] = []
        raw_versions = as_list(spec.get("versions"))
        for i, raw in enumerate(raw_versions):
            v = as_dict(raw)
            name = v.get("name")
            if not isinstance(name, str):
                continue
            schema_holder = as_dict(v.get("schema"))
            schema = schema_holder.get("openAPIV3Schema")
            if isinstance(schema, dict):
                schema_loc: Location = ("spec", "versions", i, "schema", "openAPIV3Schema")
            elif global_schema is not None:
                schema, schema_loc = global_schema, ("spec", "validation", "openAPIV3Schema")
            else:
                schema, schema_loc = None, ("spec", "versions", i)
            sub = v.get("subresources")
            if isinstance(sub, dict):
                sub_loc: Location = ("spec", "versions", i, "subresources")
            elif isinstance(global_sub, dict):
                sub, sub_loc = global_sub, ("spec", "subresources")
            else:
                sub, sub_loc = None, ("spec", "versions", i)
            warning = v.get("deprecationWarning")
            out.append(
                VersionView(
                    name=name,
                    index=i,
                    served=v.get("served") is not False,
                    storage=v.get("storage") is True,
                    deprecated=v.get("deprecated") is True,
                    deprecation_warning=warning if isinstance(warning, str) else None,
                    schema=schema,
                    schema_location=schema_loc,
                    subresources=sub,
                    subresources_location=sub_loc,
                )
            )
        if not raw_versions and self.is_v1beta1 and isinstance(spec.get("version"), str):
            out.append(
                VersionView(
                    name=spec["version"],
                    index=-1,
                    served=True,
                    storage=True,
                    deprecated=False,
                    deprecation_warning=None,
                    schema=global_schema,
                    schema_location=("spec", "validation", "openAPIV3Schema"),
                    subresources=global_sub if isinstance(global_sub, dict) else None,
                    subresources_location=("spec", "subresources"),
                )
            )
        return out

    def version(self, name: str) -> VersionView | None:
        for v in self.versions:
            if v.name == name:
                return v
        return None

    @property
    def storage_version(self) -> VersionView | None:
        for v in self.versions:
            if v.storage:
                return v
        return None


# --- schema walking ---------------------------------------------------------------

ROOT, PROP, ITEMS, ADDL = 0, 1, 2, 3


class SchemaNode:
    """A schema node reached from the root through properties, items and
    additionalProperties. Locations and field paths are computed on demand from the
    parent chain, so walking costs one small object per node."""

    __slots__ = ("depth", "key", "parent", "schema", "step", "top")

    def __init__(
        self,
        schema: dict[str, Any],
        parent: SchemaNode | None,
        step: int,
        key: str,
        top: str,
        depth: int,
    ) -> None:
        self.schema = schema
        self.parent = parent
        self.step = step  # ROOT, PROP, ITEMS or ADDL
        self.key = key  # property name for PROP, "" otherwise
        self.top = top  # the top-level property this node is under ("" for the root)
        self.depth = depth

    @property
    def name(self) -> str:
        """The nearest property name (for items, the array's name)."""
        node: SchemaNode | None = self
        while node is not None:
            if node.step == PROP:
                return node.key
            node = node.parent
        return ""

    def location(self) -> Location:
        """Path from the schema root (``openAPIV3Schema``) to this node."""
        parts: list[str | int] = []
        node: SchemaNode | None = self
        while node is not None and node.step != ROOT:
            if node.step == PROP:
                parts.append(node.key)
                parts.append("properties")
            elif node.step == ITEMS:
                parts.append("items")
            else:
                parts.append("additionalProperties")
            node = node.parent
        parts.reverse()
        return tuple(parts)

    def field_path(self) -> str:
        """Kubernetes-style field path: ``spec.rules[*].name``; map values as ``[*]``
        too (``spec.labels[*]``); the root is ``""`` (shown as ``<root>``)."""
        parts: list[str] = []
        node: SchemaNode | None = self
        while node is not None and node.step != ROOT:
            if node.step == PROP:
                parts.append("." + node.key)
            else:
                parts.append("[*]")
            node = node.parent
        parts.reverse()
        return "".join(parts).lstrip(".")

    def child_properties(self) -> dict[str, Any]:
        props = self.schema.get("properties")
        return props if isinstance(props, dict) else {}


def walk(schema: dict[str, Any], max_depth: int = 200) -> Iterator[SchemaNode]:
    """Every node of a schema in document order (pre-order), the root first.

    Follows ``properties``, ``items`` (a schema, or each schema of a legacy list)
    and ``additionalProperties`` (when a schema). Junctors (``allOf``/``anyOf``/
    ``oneOf``/``not``) declare no fields in a structural schema and are not entered.
    """
    stack: list[SchemaNode] = [SchemaNode(schema, None, ROOT, "", "", 0)]
    push = stack.append
    while stack:
        node = stack.pop()
        yield node
        depth = node.depth
        if depth >= max_depth:
            continue
        depth += 1
        s = node.schema
        top = node.top
        # children are pushed last first, so that they come out in document order
        addl = s.get("additionalProperties")
        if isinstance(addl, dict):
            push(SchemaNode(addl, node, ADDL, "", top, depth))
        items = s.get("items")
        if isinstance(items, dict):
            push(SchemaNode(items, node, ITEMS, "", top, depth))
        elif isinstance(items, list):
            for sub in reversed(items):
                if isinstance(sub, dict):
                    push(SchemaNode(sub, node, ITEMS, "", top, depth))
        props = s.get("properties")
        if isinstance(props, dict):
            for key, sub in reversed(props.items()):
                if isinstance(sub, dict):
                    push(SchemaNode(sub, node, PROP, str(key), top or key, depth))


_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_ONE = ("items", "additionalProperties", "additionalItems", "not")


def strip_descriptions(schema: Any) -> Any:
    """A copy of a schema without ``description`` keywords (for semantic comparisons);
    a *property* called ``description`` is kept."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: strip_descriptions(v) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [strip_descriptions(v) for v in value]
        elif key in _SCHEMA_ONE:
            if isinstance(value, list):
                out[key] = [strip_descriptions(v) for v in value]
            else:
                out[key] = strip_descriptions(value)
        else:
            out[key] = value
    return out
