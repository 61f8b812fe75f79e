"""The typed built-in kinds served from the vendored OpenAPI definitions, one row each.

Each ``KindRow`` holds what kube-apiserver's registry declares for a resource (names,
short names, categories, scope, the status and scale subresources) and what its strategy
needs (generation, the status a create starts with). ``resource_types`` turns the rows
into ``ServedResource`` objects; ``apiserver.builtins`` registers them. A row's schema is
the vendored definition of its kind, read on first use (``LazySchemas``).

Facts come from kube-apiserver v1.33-v1.36: ``pkg/registry/<group>/<resource>/storage``
(``ShortNames``, ``Categories``) and ``.../strategy.go`` (``PrepareForCreate``: which
kinds set ``metadata.generation`` and what status a create starts with — the empty Go
status struct, encoded with its non-``omitempty`` fields).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, TypedDict

from kubewerk.apiserver.kinds import k8s_openapi
from kubewerk.apiserver.kinds.typed import KEEP_STATUS, TypedKindStrategy
from kubewerk.apiserver.registry import ScaleSpec, ServedResource
from kubewerk.apiserver.strategy import Strategy

JSON = dict[str, Any]

ALL = ("all",)
"""The category ``kubectl get all`` lists."""


@dataclass(frozen=True, slots=True)
class KindRow:
    """One built-in resource (see the module docstring)."""

    group: str
    versions: tuple[str, ...]
    """Served versions, preferred (and storage) first."""
    kind: str
    resource: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = False
    """Has the ``/status`` subresource."""
    scale: bool = False
    """Has the ``/scale`` subresource (``spec.replicas`` / ``status.replicas``)."""
    generation: bool = False
    """Tracks ``metadata.generation`` (1 on create, bumped on spec changes)."""
    created_status: JSON | str | None = None
    """The status a create starts with (None: none; ``KEEP_STATUS``: the body's)."""
    spec_fields: tuple[str, ...] | None = None
    """Top-level fields whose change bumps the generation (None: all but metadata/status)."""
    strategy: Callable[[KindRow], Strategy] | None = None
    """A kind-specific strategy factory (default: ``TypedKindStrategy``)."""
    return_deleted_object: bool = False
    deprecated: tuple[tuple[str, str], ...] = ()
    """(version, warning) for each deprecated served version: the warning every response
    for it carries (kube's API lifecycle deprecation, ``deprecation.WarningMessage``)."""


def typed_strategy(row: KindRow) -> Strategy:
    """The default strategy of a row."""
    return TypedKindStrategy.for_kind(row)


class LazySchemas(dict[str, JSON]):
    """``ServedResource.schemas`` of a vendored kind: each version's OpenAPI v3 schema,
    read from the vendored definitions the first time it is asked for."""

    def __init__(self, group: str, kind: str, versions: tuple[str, ...]) -> None:
        super().__init__()
        self._group = group
        self._kind = kind
        self._versions = versions
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for version in self._versions:
            name = k8s_openapi.definition_name(self._group, version, self._kind)
            schema = k8s_openapi.v3_definition(name) if name is not None else None
            if schema is not None:
                super().__setitem__(version, schema)

    def get(self, key: str, default: Any = None) -> Any:
        self._load()
        return super().get(key, default)

    def __getitem__(self, key: str) -> JSON:
        self._load()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._load()
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self._load()
        return super().__iter__()

    def __len__(self) -> int:
        self._load()
        return super().__len__()

    def items(self) -> Any:
        self._load()
        return super().items()

    def keys(self) -> Any:
        self._load()
        return super().keys()

    def values(self) -> Any:
        self._load()
        return super().values()


def resource_type(row: KindRow) -> ServedResource:
    """The ``ServedResource`` a row declares (a fresh one: a server owns its types)."""
    versions = list(row.versions)
    make = row.strategy or typed_strategy
    return ServedResource(
        group=row.group,
        resource=row.resource,
        kind=row.kind,
        list_kind=row.kind + "List",
        singular=row.kind.lower(),
        namespaced=row.namespaced,
        versions=versions,
        storage_version=versions[0],
        short_names=list(row.short_names),
        categories=list(row.categories),
        status_subresource=row.status,
        scale=ScaleSpec(".spec.replicas", ".status.replicas") if row.scale else None,
        strategic_kind=f"{row.group + '/' if row.group else ''}{versions[0]}/{row.kind}",
        return_deleted_object=row.return_deleted_object,
        schemas=LazySchemas(row.group, row.kind, row.versions),
        vendored_openapi=True,
        strategy=make(row),
        deprecated=dict(row.deprecated),
    )


# What kube-apiserver's registry declares for each kind (``pkg/registry/<group>/<resource>/
# storage``), a group-version at a time, in registration order: the kind, its resource, its
# short names and its traits: ``cluster`` (not namespaced), a category (``all``,
# ``api-extensions``), the ``status`` and ``scale`` subresources, and ``generation``
# (``metadata.generation`` tracked, from ``strategy.go``).
# fmt: off
_REGISTRY: Final[dict[tuple[str, tuple[str, ...]], tuple[tuple[str, str, str, str], ...]]] = {
    ("", ("v1",)): (
        # kind                    resource                  short     traits
        ("Pod",                   "pods",                   "po",     "all status generation"),
        ("Service",               "services",               "svc",    "all status"),
        ("Endpoints",             "endpoints",              "ep",     ""),
        ("PersistentVolumeClaim", "persistentvolumeclaims", "pvc",    "status"),
        ("PersistentVolume",      "persistentvolumes",      "pv",     "cluster status"),
        ("Node",                  "nodes",                  "no",     "cluster status"),
        ("ReplicationController", "replicationcontrollers", "rc",
                                                                     "all status scale generation"),
        ("LimitRange",            "limitranges",            "limits", ""),
        ("ResourceQuota",         "resourcequotas",         "quota",  "status"),
        ("PodTemplate",           "podtemplates",           "",       "generation"),
    ),
    ("apps", ("v1",)): (
        ("Deployment",         "deployments",         "deploy", "all status scale generation"),
        ("ReplicaSet",         "replicasets",         "rs",     "all status scale generation"),
        ("StatefulSet",        "statefulsets",        "sts",    "all status scale generation"),
        ("DaemonSet",          "daemonsets",          "ds",     "all status generation"),
        ("ControllerRevision", "controllerrevisions", "",       ""),
    ),
    ("batch", ("v1",)): (
        ("Job",     "jobs",     "",   "all status generation"),
        ("CronJob", "cronjobs", "cj", "all status generation"),
    ),
    ("networking.k8s.io", ("v1",)): (
        ("Ingress",       "ingresses",       "ing",    "status generation"),
        ("IngressClass",  "ingressclasses",  "",       "cluster generation"),
        ("NetworkPolicy", "networkpolicies", "netpol", "generation"),
    ),
    ("discovery.k8s.io", ("v1",)): (
        ("EndpointSlice", "endpointslices", "", "generation"),
    ),
    ("policy", ("v1",)): (
        ("PodDisruptionBudget", "poddisruptionbudgets", "pdb", "status generation"),
    ),
    ("autoscaling", ("v2", "v1")): (  # v2 stored, v1 served too
        ("HorizontalPodAutoscaler", "horizontalpodautoscalers", "hpa", "all status"),
    ),
    ("storage.k8s.io", ("v1",)): (
        ("StorageClass", "storageclasses", "sc", "cluster"),
    ),
    ("scheduling.k8s.io", ("v1",)): (
        ("PriorityClass", "priorityclasses", "pc", "cluster"),
    ),
    ("admissionregistration.k8s.io", ("v1",)): (  # issue 14: the admission chain
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "",
                                                               "cluster api-extensions generation"),
        ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", "",
                                                               "cluster api-extensions generation"),
        ("ValidatingAdmissionPolicy", "validatingadmissionpolicies", "",
                                                        "cluster api-extensions status generation"),
        ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", "",
                                                               "cluster api-extensions generation"),
    ),
}
# fmt: on

_CATEGORIES: Final = ("all", "api-extensions")
_TRAITS: Final = frozenset({"cluster", "status", "scale", "generation", *_CATEGORIES})


class _StrategyFacts(TypedDict, total=False):
    """What a kind's strategy needs beyond the registry's facts (``KindRow``'s fields)."""

    created_status: JSON | str | None
    spec_fields: tuple[str, ...] | None
    strategy: Callable[[KindRow], Strategy] | None
    return_deleted_object: bool
    deprecated: tuple[tuple[str, str], ...]


def _replicas_status(*extra: str) -> JSON:
    return {"replicas": 0, **{k: 0 for k in extra}}


def _strategy_facts() -> dict[str, _StrategyFacts]:
    """Per kind (absent: none of these): the status a create starts with (``strategy.go``'s
    ``PrepareForCreate``: the empty Go status struct with its non-``omitempty`` fields), the
    fields whose change bumps the generation, a kind-specific strategy, whether a
    delete answers the deleted object rather than a Status (the registry's
    ``ReturnDeletedObject``: Pods and StorageClasses), and the deprecation warning of a
    deprecated version."""
    from kubewerk.apiserver.admission_chain.registration import (
        AdmissionRegistrationStrategy,
    )
    from kubewerk.apiserver.kinds import autoscaling, jobs, pods, services

    admission: _StrategyFacts = {"strategy": AdmissionRegistrationStrategy.for_kind}
    scaled: _StrategyFacts = {"strategy": autoscaling.SelectorScaledStrategy.for_kind}
    return {
        "Pod": {
            "spec_fields": ("spec",),
            "strategy": pods.PodStrategy.for_kind,
            "return_deleted_object": True,
        },
        "StorageClass": {"return_deleted_object": True},
        # KEP-4974: v1 Endpoints deprecated in 1.33 for discovery.k8s.io/v1 EndpointSlice
        "Endpoints": {
            "deprecated": (
                (
                    "v1",
                    "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
                ),
            )
        },
        "Service": {
            "created_status": {"loadBalancer": {}},
            "strategy": services.ServiceStrategy.for_kind,
        },
        "PersistentVolumeClaim": {"created_status": {}},
        "PersistentVolume": {
            "created_status": {},
            "strategy": pods.PersistentVolumeStrategy.for_kind,
        },
        "Node": {"created_status": KEEP_STATUS},
        "ReplicationController": {
            "created_status": _replicas_status(),
            "strategy": autoscaling.ReplicationControllerStrategy.for_kind,
        },
        "ResourceQuota": {"created_status": {}},
        "PodTemplate": {"spec_fields": ("template",)},
        "Deployment": {"created_status": {}, **scaled},
        "ReplicaSet": {"created_status": _replicas_status(), **scaled},
        "StatefulSet": {"created_status": _replicas_status("availableReplicas"), **scaled},
        "DaemonSet": {
            "created_status": {
                "currentNumberScheduled": 0,
                "numberMisscheduled": 0,
                "desiredNumberScheduled": 0,
                "numberReady": 0,
            }
        },
        "Job": {"created_status": {}, "strategy": jobs.JobStrategy.for_kind},
        "CronJob": {"created_status": {}},
        "Ingress": {"created_status": {"loadBalancer": {}}},
        "PodDisruptionBudget": {
            "created_status": {
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
            }
        },
        "HorizontalPodAutoscaler": {
            "created_status": {"desiredReplicas": 0},
            "strategy": autoscaling.HorizontalPodAutoscalerStrategy.for_kind,
        },
        "MutatingWebhookConfiguration": admission,
        "ValidatingWebhookConfiguration": admission,
        "ValidatingAdmissionPolicy": admission,
        "ValidatingAdmissionPolicyBinding": admission,
    }


def _rows() -> tuple[KindRow, ...]:
    facts = _strategy_facts()
    built: list[KindRow] = []
    for (group, versions), kinds in _REGISTRY.items():
        for kind, resource, short, traits in kinds:
            words = set(traits.split())
            if not words <= _TRAITS:
                raise ValueError(f"{kind}: unknown traits {sorted(words - _TRAITS)}")
            built.append(
                KindRow(
                    group,
                    versions,
                    kind,
                    resource,
                    namespaced="cluster" not in words,
                    short_names=tuple(short.split()),
                    categories=tuple(c for c in _CATEGORIES if c in words),
                    status="status" in words,
                    scale="scale" in words,
                    generation="generation" in words,
                    **facts.get(kind, {}),
                )
            )
    strays = facts.keys() - {row.kind for row in built}
    if strays:
        raise ValueError(f"strategy facts for kinds not in the registry table: {sorted(strays)}")
    return tuple(built)


def rows() -> tuple[KindRow, ...]:
    """Every row, in registration order."""
    return _rows()


def declarations() -> tuple[Callable[[], ServedResource], ...]:
    """One ``ServedResource`` factory per row (``apiserver.builtins.BUILTIN_KINDS``)."""
    return tuple((lambda row=row: resource_type(row)) for row in _rows())
