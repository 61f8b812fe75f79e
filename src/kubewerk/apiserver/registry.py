"""What the server serves: one ``ServedResource`` per group/resource, with its versions.

A served resource is the data that names and shapes a kind (group, versions, scope,
subresources, schemas) plus its ``Strategy`` (``apiserver.strategy``): the kind's behaviour,
which the REST layer calls through hooks. (The client's ``ResourceType`` is another thing:
one group version of a kind and its URL.) Built-in kinds are declared in ``kinds/`` and
listed in ``builtins``; a custom resource is derived from its Established CRD
(``kinds.custom``). The registry is the single place the REST layer, discovery, OpenAPI
and the built-in controllers look a resource up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubewerk.apiserver.strategy import Strategy
from kubewerk.core.gvk import format_api_version, qualified

JSON = dict[str, Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ScaleSpec:
    """A CRD's ``subresources.scale`` paths (dotted JSON paths, leading ``.``)."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass(slots=True)
class ServedResource:
    """One served group/resource (all its versions share one storage key space)."""

    group: str
    resource: str
    kind: str
    list_kind: str
    singular: str
    namespaced: bool
    versions: list[str]
    """Served versions, preferred (storage for CRDs) first."""
    storage_version: str
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    verbs: tuple[str, ...] = ALL_VERBS
    status_subresource: bool = False
    scale: ScaleSpec | None = None
    builtin: bool = True
    """Compiled into the server (typed decoding), as opposed to declared by a CRD."""
    strategic_kind: str | None = None
    """Key into ``kubewerk.core.strategic`` patch strategies; None: no strategic merge."""
    return_deleted_object: bool = False
    schemas: dict[str, JSON] = field(default_factory=dict)
    """Per version: the openAPIV3Schema (CRDs) or a hand-written schema (built-ins)."""
    vendored_openapi: bool = False
    """Served in OpenAPI documents with the vendored Kubernetes definition of the kind
    (``kinds.k8s_openapi``) rather than ``schemas``."""
    deprecated: dict[str, str] = field(default_factory=dict)
    """Per deprecated version: the warning every response for it carries."""
    crd_name: str | None = None
    crd_uid: str | None = None
    crd_generation: int = 0
    storage_group: str | None = None
    """Set when the objects live in another group's storage (events.k8s.io Events are
    core/v1 Events, as in Kubernetes); the strategy converts them."""
    strategy: Strategy = field(default_factory=Strategy)
    """The kind's behaviour in the REST layer (default: a plain built-in kind)."""

    key_prefix: str = field(init=False, default="")
    """``/<storage group or "core">/<resource>/``: where this type's objects live."""

    def __post_init__(self) -> None:
        group = self.group if self.storage_group is None else self.storage_group
        self.key_prefix = f"/{group or 'core'}/{self.resource}/"

    def key(self, namespace: str, name: str) -> str:
        return f"{self.key_prefix}{namespace}/{name}"

    def ns_prefix(self, namespace: str | None) -> str:
        if namespace is None or not self.namespaced:
            return self.key_prefix
        return f"{self.key_prefix}{namespace}/"

    def api_version(self, version: str) -> str:
        """The ``apiVersion`` of this type in ``version``."""
        return format_api_version(self.group, version)

    @property
    def qualified(self) -> str:
        """``resource.group`` (``GroupResource.String``)."""
        return qualified(self.resource, self.group)


class Registry:
    """Lookup of served resources by group, version and resource name."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str], ServedResource] = {}
        self.generation = 0
        """Bumped on every change; discovery and OpenAPI caches key on it."""

    def add(self, rtype: ServedResource) -> None:
        self._types[(rtype.group, rtype.resource)] = rtype
        self.generation += 1

    def remove(self, group: str, resource: str) -> None:
        if self._types.pop((group, resource), None) is not None:
            self.generation += 1

    def get(self, group: str, resource: str) -> ServedResource | None:
        return self._types.get((group, resource))

    def lookup(self, group: str, version: str, resource: str) -> ServedResource | None:
        rtype = self._types.get((group, resource))
        if rtype is None or version not in rtype.versions:
            return None
        return rtype

    def all(self) -> Iterable[ServedResource]:
        return self._types.values()

    def groups(self) -> dict[str, list[ServedResource]]:
        """Types by group name, in a stable order (core first, then by name)."""
        out: dict[str, list[ServedResource]] = {}
        for rtype in sorted(
            self._types.values(), key=lambda r: (r.group != "", r.group, r.resource)
        ):
            out.setdefault(rtype.group, []).append(rtype)
        return out
