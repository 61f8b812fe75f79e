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

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from kubewerk.apiserver.strategy import Strategy
from kubewerk.core.gvk import qualified

JSON = dict[str, Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ScaleSpec:
    """A CRD's ``subresources.scale`` paths (dotted JSON paths, leading ``.``)."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass(frozen=True, slots=True)
class VersionSubresources:
    """The ``status`` and ``scale`` subresources one version of a CRD declares
    (``spec.versions[].subresources``): kube serves them per version."""

    status: bool = False
    scale: ScaleSpec | None = None


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
    """Every version has the status subresource (a built-in kind's declaration); read it
    through ``has_status``, which also answers for a CRD's per-version subresources."""
    scale: ScaleSpec | None = None
    """Every version has this scale subresource; read it through ``scale_of``."""
    version_subresources: dict[str, VersionSubresources] | None = None
    """Per served version, its own subresources (a CRD's); when set, it alone decides
    (a version missing from it has none) and ``status_subresource``/``scale`` are
    ignored."""
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

    def has_status(self, version: str) -> bool:
        """Whether ``version`` serves ``/status`` (and its main endpoint then keeps the
        stored status and leaves ``status`` out of the generation)."""
        per_version = self.version_subresources
        if per_version is None:
            return self.status_subresource
        found = per_version.get(version)
        return found is not None and found.status

    def scale_of(self, version: str) -> ScaleSpec | None:
        """The scale subresource ``version`` serves (None: no ``/scale`` there)."""
        per_version = self.version_subresources
        if per_version is None:
            return self.scale
        found = per_version.get(version)
        return None if found is None else found.scale

    def api_version(self, version: str) -> str:
        """The ``apiVersion`` of this type in ``version`` (``format_api_version``, written
        out: read several times per request)."""
        group = self.group
        return f"{group}/{version}" if group else version

    @property
    def qualified(self) -> str:
        """``resource.group`` (``GroupResource.String``)."""
        return qualified(self.resource, self.group)


T = TypeVar("T")

# -- discovery priorities -----------------------------------------------------------

CRD_PRIORITY = (1000, 100)
"""``(GroupPriorityMinimum, VersionPriority)`` of the APIService kube-apiserver registers for
a CRD's group version (its crdregistration controller): below every built-in group, and
versions of one CRD group ordered by Kubernetes' version order alone."""

_GROUP_PRIORITY: dict[str, int] = {
    "": 18000,
    "apps": 17800,
    "events.k8s.io": 17750,
    "authentication.k8s.io": 17700,
    "authorization.k8s.io": 17600,
    "autoscaling": 17500,
    "batch": 17400,
    "certificates.k8s.io": 17300,
    "networking.k8s.io": 17200,
    "policy": 17100,
    "rbac.authorization.k8s.io": 17000,
    "storage.k8s.io": 16800,
    "apiextensions.k8s.io": 16700,
    "admissionregistration.k8s.io": 16700,
    "scheduling.k8s.io": 16600,
    "coordination.k8s.io": 16500,
    "node.k8s.io": 16300,
    "discovery.k8s.io": 16200,
    "resource.k8s.io": 16200,
    "flowcontrol.apiserver.k8s.io": 16100,
    "internal.apiserver.k8s.io": 16000,
    "storagemigration.k8s.io": 15800,
}
_VERSION_PRIORITY: dict[str, dict[str, int]] = {
    "": {"v1": 1},
    "apps": {"v1": 15},
    "events.k8s.io": {"v1": 15, "v1beta1": 5},
    "authentication.k8s.io": {"v1": 15, "v1beta1": 9, "v1alpha1": 1},
    "authorization.k8s.io": {"v1": 15},
    "autoscaling": {"v2": 30, "v1": 15, "v2beta1": 9, "v2beta2": 1},
    "batch": {"v1": 15, "v1beta1": 9, "v2alpha1": 9},
    "certificates.k8s.io": {"v1": 15, "v1beta1": 9, "v1alpha1": 1},
    "networking.k8s.io": {"v1": 15, "v1beta1": 9},
    "policy": {"v1": 15, "v1beta1": 9},
    "rbac.authorization.k8s.io": {"v1": 15},
    "storage.k8s.io": {"v1": 15, "v1beta1": 9, "v1alpha1": 1},
    "apiextensions.k8s.io": {"v1": 15},
    "admissionregistration.k8s.io": {"v1": 15, "v1beta1": 12, "v1alpha1": 9},
    "scheduling.k8s.io": {"v1": 15},
    "coordination.k8s.io": {"v1": 15, "v1beta1": 13, "v1alpha2": 12},
    "node.k8s.io": {"v1": 15, "v1beta1": 9, "v1alpha1": 1},
    "discovery.k8s.io": {"v1": 15, "v1beta1": 12},
    "resource.k8s.io": {"v1beta2": 15, "v1beta1": 9, "v1alpha3": 1},
    "flowcontrol.apiserver.k8s.io": {
        "v1": 21,
        "v1beta3": 18,
        "v1beta2": 15,
        "v1beta1": 12,
        "v1alpha1": 9,
    },
    "internal.apiserver.k8s.io": {"v1alpha1": 9},
    "storagemigration.k8s.io": {"v1alpha1": 9},
}
"""kube-apiserver 1.33's priorities of its built-in APIServices (``apiVersionPriorities``,
kept in ``pkg/controlplane/apiserver/aggregator.go`` and ``cmd/kube-apiserver/app``): per
group its ``GroupPriorityMinimum`` (higher first), per group version its
``VersionPriority`` (higher first inside the group)."""


def builtin_priority(group: str, version: str) -> tuple[int, int] | None:
    """``(GroupPriorityMinimum, VersionPriority)`` of kube-apiserver's built-in APIService
    for ``group``/``version``; None when kube-apiserver has none for it."""
    versions = _VERSION_PRIORITY.get(group)
    if versions is None or version not in versions:
        return None
    return (_GROUP_PRIORITY[group], versions[version])


def _order_key(group: str, served: Counter[tuple[str, bool]]) -> tuple[int, str]:
    """``(-GroupPriorityMinimum, first APIService name)`` of a group serving the versions
    counted in ``served``: the group priority is the highest of its versions'; the name
    (``version.group``) the smallest among the versions at that priority (a group serving
    no version, which discovery does not list, sorts as a CRD group named ``.group``).
    Costs the number of (version, built-in) pairs of the group."""
    keys = [
        (-_api_service_priority(group, version, served)[0], f"{version}.{group}")
        for version, _ in served
    ]
    return min(keys) if keys else (-CRD_PRIORITY[0], f".{group}")


def _api_service_priority(
    group: str, version: str, served: Counter[tuple[str, bool]]
) -> tuple[int, int]:
    if served[(version, True)] > 0:
        found = builtin_priority(group, version)
        if found is not None:
            return found
    return CRD_PRIORITY


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
        self._served: dict[str, Counter[tuple[str, bool]]] = {}
        """Per group: how many of its types serve each (version, built-in) pair."""
        self._order_keys: dict[str, tuple[int, str]] = {}
        """Per group: ``(-GroupPriorityMinimum, first APIService name)``."""
        self._sorted_groups: list[str] | None = None
        self._sorted_groups_by_service: list[str] | None = None
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
            self._served[rtype.group] = Counter()
        members[rtype.resource] = rtype
        if rtype.crd_name is not None:
            self._by_crd[rtype.crd_name] = rtype
        served = self._served[rtype.group]
        moved = old is not None and self._count(served, old, -1)
        if self._count(served, rtype, 1) or moved or len(members) == 1:
            self._reorder(rtype.group)
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
        moved = self._count(self._served[group], old, -1)
        if not members:
            del self._by_group[group]
            del self._served[group]
        if moved or not members:
            self._reorder(group)
        self._changed(group)

    @staticmethod
    def _count(served: Counter[tuple[str, bool]], rtype: ServedResource, delta: int) -> bool:
        """Count ``rtype``'s versions in (``delta`` 1) or out (-1) of ``served``; whether a
        (version, built-in) pair came or went (only then can the group's order move)."""
        changed = False
        for version in set(rtype.versions):
            entry = (version, rtype.builtin)
            count = served[entry] + delta
            if count > 0:
                changed = changed or entry not in served
                served[entry] = count
            else:
                served.pop(entry, None)
                changed = True
        return changed

    def _reorder(self, group: str) -> None:
        """Recompute ``group``'s order key (the size of its set of versions); the sorted
        group lists are dropped only when a group came, went or moved."""
        served = self._served.get(group)
        old = self._order_keys.pop(group, None)
        new = None if served is None else _order_key(group, served)
        if new is not None:
            self._order_keys[group] = new
        if new != old:
            self._sorted_groups = None
            self._sorted_groups_by_service = None

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
        """Served group names in kube-apiserver's discovery order, as its aggregated
        discovery lists them: by group priority, highest first (the highest
        ``GroupPriorityMinimum`` of the group's versions: core, then apps, events.k8s.io,
        ... as ``builtin_priority`` says; every CRD-only group 1000), equal priorities by
        group name. Sorted once per change of the set of groups or of a group's priority;
        callers must not mutate the list."""
        if self._sorted_groups is None:
            keys = self._order_keys
            self._sorted_groups = sorted(self._by_group, key=lambda g: (keys[g][0], g))
        return self._sorted_groups

    def group_names_by_service(self) -> list[str]:
        """Served group names in the order of the ``/apis`` ``APIGroupList`` (kube-aggregator
        sorts APIServices, then lists each group where its first APIService falls): by group
        priority as ``group_names``, equal priorities by the smallest APIService name
        (``version.group``) among the group's versions at its priority, so ``v1.b.io``
        comes before ``v2.a.io``. Cached as ``group_names``."""
        if self._sorted_groups_by_service is None:
            keys = self._order_keys
            self._sorted_groups_by_service = sorted(self._by_group, key=keys.__getitem__)
        return self._sorted_groups_by_service

    def api_service_priority(self, group: str, version: str) -> tuple[int, int]:
        """``(GroupPriorityMinimum, VersionPriority)`` kube-apiserver's APIService for
        ``group``/``version`` carries: the built-in one (``builtin_priority``) when a
        built-in type serves that version, else ``CRD_PRIORITY``."""
        served = self._served.get(group)
        if served is None:
            return CRD_PRIORITY
        return _api_service_priority(group, version, served)

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
        """Types by group name, in ``group_names`` order."""
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
