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
from typing import Any

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
    )


def _replicas_status(*extra: str) -> JSON:
    return {"replicas": 0, **{k: 0 for k in extra}}


def _rows() -> tuple[KindRow, ...]:
    from kubewerk.apiserver.admission_chain.registration import (
        AdmissionRegistrationStrategy,
    )
    from kubewerk.apiserver.kinds import autoscaling, jobs, pods, services

    admission = AdmissionRegistrationStrategy.for_kind
    return (
        # core/v1
        KindRow(
            "",
            ("v1",),
            "Pod",
            "pods",
            short_names=("po",),
            categories=ALL,
            status=True,
            generation=True,
            spec_fields=("spec",),
            strategy=pods.PodStrategy.for_kind,
        ),
        KindRow(
            "",
            ("v1",),
            "Service",
            "services",
            short_names=("svc",),
            categories=ALL,
            status=True,
            created_status={"loadBalancer": {}},
            strategy=services.ServiceStrategy.for_kind,
        ),
        KindRow("", ("v1",), "Endpoints", "endpoints", short_names=("ep",)),
        KindRow(
            "",
            ("v1",),
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            short_names=("pvc",),
            status=True,
            created_status={},
        ),
        KindRow(
            "",
            ("v1",),
            "PersistentVolume",
            "persistentvolumes",
            namespaced=False,
            short_names=("pv",),
            status=True,
            created_status={},
            strategy=pods.PersistentVolumeStrategy.for_kind,
        ),
        KindRow(
            "",
            ("v1",),
            "Node",
            "nodes",
            namespaced=False,
            short_names=("no",),
            status=True,
            created_status=KEEP_STATUS,
        ),
        KindRow(
            "",
            ("v1",),
            "ReplicationController",
            "replicationcontrollers",
            short_names=("rc",),
            categories=ALL,
            status=True,
            scale=True,
            generation=True,
            created_status=_replicas_status(),
            strategy=autoscaling.ReplicationControllerStrategy.for_kind,
        ),
        KindRow("", ("v1",), "LimitRange", "limitranges", short_names=("limits",)),
        KindRow(
            "",
            ("v1",),
            "ResourceQuota",
            "resourcequotas",
            short_names=("quota",),
            status=True,
            created_status={},
        ),
        KindRow(
            "",
            ("v1",),
            "PodTemplate",
            "podtemplates",
            generation=True,
            spec_fields=("template",),
        ),
        # apps/v1
        KindRow(
            "apps",
            ("v1",),
            "Deployment",
            "deployments",
            short_names=("deploy",),
            categories=ALL,
            status=True,
            scale=True,
            generation=True,
            created_status={},
            strategy=autoscaling.SelectorScaledStrategy.for_kind,
        ),
        KindRow(
            "apps",
            ("v1",),
            "ReplicaSet",
            "replicasets",
            short_names=("rs",),
            categories=ALL,
            status=True,
            scale=True,
            generation=True,
            created_status=_replicas_status(),
            strategy=autoscaling.SelectorScaledStrategy.for_kind,
        ),
        KindRow(
            "apps",
            ("v1",),
            "StatefulSet",
            "statefulsets",
            short_names=("sts",),
            categories=ALL,
            status=True,
            scale=True,
            generation=True,
            created_status=_replicas_status("availableReplicas"),
            strategy=autoscaling.SelectorScaledStrategy.for_kind,
        ),
        KindRow(
            "apps",
            ("v1",),
            "DaemonSet",
            "daemonsets",
            short_names=("ds",),
            categories=ALL,
            status=True,
            generation=True,
            created_status={
                "currentNumberScheduled": 0,
                "numberMisscheduled": 0,
                "desiredNumberScheduled": 0,
                "numberReady": 0,
            },
        ),
        KindRow("apps", ("v1",), "ControllerRevision", "controllerrevisions"),
        # batch/v1
        KindRow(
            "batch",
            ("v1",),
            "Job",
            "jobs",
            categories=ALL,
            status=True,
            generation=True,
            created_status={},
            strategy=jobs.JobStrategy.for_kind,
        ),
        KindRow(
            "batch",
            ("v1",),
            "CronJob",
            "cronjobs",
            short_names=("cj",),
            categories=ALL,
            status=True,
            generation=True,
            created_status={},
        ),
        # networking.k8s.io/v1
        KindRow(
            "networking.k8s.io",
            ("v1",),
            "Ingress",
            "ingresses",
            short_names=("ing",),
            status=True,
            generation=True,
            created_status={"loadBalancer": {}},
        ),
        KindRow(
            "networking.k8s.io",
            ("v1",),
            "IngressClass",
            "ingressclasses",
            namespaced=False,
            generation=True,
        ),
        KindRow(
            "networking.k8s.io",
            ("v1",),
            "NetworkPolicy",
            "networkpolicies",
            short_names=("netpol",),
            generation=True,
        ),
        # discovery.k8s.io/v1
        KindRow(
            "discovery.k8s.io",
            ("v1",),
            "EndpointSlice",
            "endpointslices",
            generation=True,
        ),
        # policy/v1
        KindRow(
            "policy",
            ("v1",),
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            short_names=("pdb",),
            status=True,
            generation=True,
            created_status={
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
            },
        ),
        # autoscaling/v2 (stored) and v1
        KindRow(
            "autoscaling",
            ("v2", "v1"),
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            short_names=("hpa",),
            categories=ALL,
            status=True,
            created_status={"desiredReplicas": 0},
            strategy=autoscaling.HorizontalPodAutoscalerStrategy.for_kind,
        ),
        # storage.k8s.io/v1, scheduling.k8s.io/v1
        KindRow(
            "storage.k8s.io",
            ("v1",),
            "StorageClass",
            "storageclasses",
            namespaced=False,
            short_names=("sc",),
        ),
        KindRow(
            "scheduling.k8s.io",
            ("v1",),
            "PriorityClass",
            "priorityclasses",
            namespaced=False,
            short_names=("pc",),
        ),
        # admissionregistration.k8s.io/v1 (issue 14): the admission chain's configuration
        KindRow(
            "admissionregistration.k8s.io",
            ("v1",),
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
            strategy=admission,
        ),
        KindRow(
            "admissionregistration.k8s.io",
            ("v1",),
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
            strategy=admission,
        ),
        KindRow(
            "admissionregistration.k8s.io",
            ("v1",),
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            namespaced=False,
            categories=("api-extensions",),
            status=True,
            generation=True,
            strategy=admission,
        ),
        KindRow(
            "admissionregistration.k8s.io",
            ("v1",),
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            namespaced=False,
            categories=("api-extensions",),
            generation=True,
            strategy=admission,
        ),
    )


def rows() -> tuple[KindRow, ...]:
    """Every row, in registration order."""
    return _rows()


def declarations() -> tuple[Callable[[], ServedResource], ...]:
    """One ``ServedResource`` factory per row (``apiserver.builtins.BUILTIN_KINDS``)."""
    return tuple((lambda row=row: resource_type(row)) for row in _rows())
