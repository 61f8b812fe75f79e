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

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

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
    derived: dict[Hashable, Any] = field(
        init=False, default_factory=dict, compare=False, repr=False
    )
    """Values computed from this type and kept with it (admission's compiled schemas, per
    version): they live exactly as long as the type is served, so a CRD's new generation
    (served as a new ``ServedResource``) or its deletion drops them; never copied."""

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


T = TypeVar("T")


class Registry:
    """Lookup of served resources by group, version and resource name.

    Every lookup (``get``, ``lookup``, ``group``, ``by_crd``) is a dict access, whatever the
    number of served types. ``generation`` rises on every change and
    ``group_generation(g)`` is the generation of the last change in group ``g``, so a
    document of one group can be kept until that group changes. ``memo`` keeps such
    derived values: per group (dropped when that group changes) or for the whole registry
    (dropped on any change).
    """

    def __init__(self) -> None:
        self._types: dict[tuple[str, str], ServedResource] = {}
        self._by_group: dict[str, dict[str, ServedResource]] = {}
        self._by_crd: dict[str, ServedResource] = {}
        self._group_generation: dict[str, int] = {}
        self._sorted_groups: list[str] | None = None
        self._group_memo: dict[str, dict[Hashable, Any]] = {}
        self._memo: dict[Hashable, Any] = {}
        self.generation = 0
        """Bumped on every change; discovery and OpenAPI caches key on it."""

    def _changed(self, group: str) -> None:
        self.generation += 1
        self._group_generation[group] = self.generation
        self._group_memo.pop(group, None)
        self._memo.clear()

    def add(self, rtype: ServedResource) -> None:
        """Serve ``rtype``, replacing the type of the same group and resource."""
        key = (rtype.group, rtype.resource)
        old = self._types.get(key)
        if old is not None and old.crd_name is not None and self._by_crd.get(old.crd_name) is old:
            del self._by_crd[old.crd_name]
        self._types[key] = rtype
        members = self._by_group.get(rtype.group)
        if members is None:
            members = self._by_group[rtype.group] = {}
            self._sorted_groups = None
        members[rtype.resource] = rtype
        if rtype.crd_name is not None:
            self._by_crd[rtype.crd_name] = rtype
        self._changed(rtype.group)

    def remove(self, group: str, resource: str) -> None:
        """Stop serving ``group``/``resource`` (nothing when it is not served)."""
        old = self._types.pop((group, resource), None)
        if old is None:
            return
        if old.crd_name is not None and self._by_crd.get(old.crd_name) is old:
            del self._by_crd[old.crd_name]
        members = self._by_group[group]
        del members[resource]
        if not members:
            del self._by_group[group]
            self._sorted_groups = None
        self._changed(group)

    def get(self, group: str, resource: str) -> ServedResource | None:
        return self._types.get((group, resource))

    def lookup(self, group: str, version: str, resource: str) -> ServedResource | None:
        rtype = self._types.get((group, resource))
        if rtype is None or version not in rtype.versions:
            return None
        return rtype

    def by_crd(self, crd_name: str) -> ServedResource | None:
        """The type the CRD named ``crd_name`` serves, if any."""
        return self._by_crd.get(crd_name)

    def all(self) -> Iterable[ServedResource]:
        return self._types.values()

    def group_names(self) -> list[str]:
        """Served group names: core (``""``) first, then by name (sorted once per change
        of the set of groups)."""
        if self._sorted_groups is None:
            self._sorted_groups = sorted(self._by_group, key=lambda g: (g != "", g))
        return self._sorted_groups

    def group(self, group: str) -> list[ServedResource]:
        """The types of ``group`` by resource name (empty when the group is not served);
        costs the size of that group, not of the registry."""
        members = self._by_group.get(group)
        if not members:
            return []
        return self.memo(("types",), lambda: [members[r] for r in sorted(members)], group)

    def group_generation(self, group: str) -> int:
        """The registry generation of the last change to ``group`` (0: never served)."""
        return self._group_generation.get(group, 0)

    def groups(self) -> dict[str, list[ServedResource]]:
        """Types by group name, in a stable order (core first, then by name)."""
        return self.memo(("groups",), lambda: {g: self.group(g) for g in self.group_names()})

    def has_memo(self, key: Hashable, group: str | None = None) -> bool:
        """Whether ``memo(key, ..., group)`` would answer without building."""
        store = self._memo if group is None else self._group_memo.get(group, {})
        return key in store

    def memo(self, key: Hashable, build: Callable[[], T], group: str | None = None) -> T:
        """``build()``, kept under ``key`` until ``group`` changes (``group`` None: until
        anything changes). Nothing is kept for a group that is not served, so a client
        naming unknown groups cannot grow it. Callers must not mutate what it returns."""
        if group is None:
            store = self._memo
        else:
            if group not in self._by_group:
                return build()
            found = self._group_memo.get(group)
            store = found if found is not None else self._group_memo.setdefault(group, {})
        try:
            return cast(T, store[key])
        except KeyError:
            value = store[key] = build()
            return value
