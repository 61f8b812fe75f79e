"""The federation's three layers as kubewerk models (group ``federation.kubewerk.dev``,
version ``v1alpha1``; each class is also its CRD, committed under ``crds/``):

- :class:`ClusterSet` — the member clusters, each reached through a kubeconfig held in a
  Secret of the set's namespace, with labels (what placements select on) and taints;
  its status says which members answer and since when one does not.
- :class:`Placement` — which members of one ClusterSet a workload goes to: a label
  selector, ``Spread`` (every selected member) or ``PickN`` (``numberOfClusters`` of
  them, chosen stably), and tolerations of taints (the controller's own
  ``federation.kubewerk.dev/unreachable`` taint included); its status holds the decision.
- :class:`FederatedObject` — one object of any kind (``spec.template``) placed by a
  Placement, with per-cluster RFC 6902 overrides; its status aggregates each member's
  copy (``status.clusters[]``) into the ``Propagated`` and ``Degraded`` conditions.

One generic ``FederatedObject`` kind (``template.apiVersion``/``kind`` say what it holds)
rather than a generated ``Federated<Kind>`` CRD per kind: nothing to generate or install
when a new kind is federated, one RBAC rule covers all of them, and the members' own
API servers validate the rendered objects (a refusal is reported per cluster). What it
gives up: the host does not validate the template against the kind's schema.

All three kinds are namespaced: a Placement names a ClusterSet, and a FederatedObject a
Placement, of its own namespace; the kubeconfig Secrets live there too.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from kubewerk.model import (
    Conditions,
    EmbeddedResource,
    KubeModel,
    LabelSelector,
    ListMapKeys,
    ListType,
    PreserveUnknownFields,
    PrinterColumn,
    Resource,
    Rule,
)

__all__ = [
    "GROUP",
    "KINDS",
    "UNREACHABLE_TAINT",
    "VERSION",
    "ClusterOverride",
    "ClusterSet",
    "ClusterSetSpec",
    "ClusterSetStatus",
    "ClusterState",
    "FederatedObject",
    "FederatedObjectSpec",
    "FederatedObjectStatus",
    "KubeconfigSecretRef",
    "Member",
    "MemberStatus",
    "PlacedCluster",
    "Placement",
    "PlacementDecision",
    "PlacementSpec",
    "PlacementStatus",
    "PlacementStrategy",
    "Taint",
    "Toleration",
]

GROUP: Final = "federation.kubewerk.dev"
VERSION: Final = "v1alpha1"
UNREACHABLE_TAINT: Final = "federation.kubewerk.dev/unreachable"
"""The taint the ClusterSet controller puts on a member that does not answer (its
``timeAdded`` is when it stopped answering); a Placement selects such a member only
while one of its tolerations matches it."""

_NAME = Annotated[str, Field(min_length=1, max_length=253)]
_AGE = PrinterColumn("Age", json_path=".metadata.creationTimestamp", type="date")


class Taint(KubeModel):
    """A taint on a member: placements select the member only when they tolerate it
    (effect ``NoSelect``, the only effect)."""

    key: Annotated[str, Field(min_length=1, max_length=316)]
    """The taint's key, e.g. ``example.com/maintenance``."""
    value: Annotated[str, Field(max_length=63)] | None = None
    """The taint's value (matched by tolerations with operator ``Equal``)."""
    effect: Literal["NoSelect"] = "NoSelect"
    """What the taint does: ``NoSelect``, no new or kept selection without a toleration."""
    time_added: datetime | None = None
    """When the taint was added (set by the controller on its own taints); a toleration's
    ``tolerationSeconds`` counts from here."""


class Toleration(KubeModel):
    """Tolerates the taints it matches (the rules of a pod's toleration): an empty
    ``key`` with ``Exists`` matches every taint; ``Exists`` matches any value, ``Equal``
    (the default) the same value; an empty ``effect`` matches every effect."""

    key: Annotated[str, Field(max_length=316)] | None = None
    """The taint key matched; empty with operator Exists: every key."""
    operator: Literal["Exists", "Equal"] = "Equal"
    """``Exists`` (any value) or ``Equal`` (``value`` must equal the taint's)."""
    value: Annotated[str, Field(max_length=63)] | None = None
    """The value compared under ``Equal``."""
    effect: Literal["NoSelect"] | None = None
    """The effect matched; empty matches every effect."""
    toleration_seconds: Annotated[int, Field(ge=0)] | None = None
    """How long after the taint's ``timeAdded`` it stays tolerated (unset: for ever). Only
    taints with a ``timeAdded`` (the controller's) expire."""


class KubeconfigSecretRef(KubeModel):
    """Where a member's kubeconfig is: a key of a Secret in the ClusterSet's namespace."""

    name: _NAME
    """Name of the Secret."""
    key: Annotated[str, Field(min_length=1, max_length=253)] = "kubeconfig"
    """Key of the Secret's data holding the kubeconfig YAML."""


class Member(KubeModel):
    """One member cluster."""

    name: Annotated[
        str, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    ]
    """The member's name within the set (a DNS label)."""
    kubeconfig_secret_ref: KubeconfigSecretRef
    """The Secret holding the kubeconfig that reaches the member."""
    context: Annotated[str, Field(min_length=1, max_length=253)] | None = None
    """The kubeconfig context to use (default: its current-context)."""
    labels: dict[str, str] | None = None
    """Labels placements select on, e.g. ``region: eu``."""
    taints: Annotated[list[Taint], ListType.ATOMIC] | None = None
    """Taints: placements that do not tolerate one do not select the member."""


class ClusterSetSpec(KubeModel):
    """The member clusters."""

    clusters: Annotated[list[Member], ListType.MAP, ListMapKeys("name")] = Field(
        default_factory=list
    )
    """The members, by name."""
    probe_interval_seconds: Annotated[float, Field(gt=0, le=3600)] = 10.0
    """How often the controller checks that each member answers."""


class MemberStatus(KubeModel):
    """What the controller last saw of one member."""

    name: str
    """The member's name."""
    reachable: bool
    """Whether the member answered the last probe."""
    message: str | None = None
    """Why it did not, when it did not."""
    last_transition_time: datetime | None = None
    """When ``reachable`` last changed."""
    taints: Annotated[list[Taint], ListType.ATOMIC] | None = None
    """The controller's taints on the member (the unreachable taint while it does not answer)."""


class ClusterSetStatus(KubeModel):
    """The members as the controller sees them."""

    observed_generation: int | None = None
    """The ``metadata.generation`` this status describes."""
    clusters: Annotated[list[MemberStatus], ListType.MAP, ListMapKeys("name")] | None = None
    """One entry per member."""
    ready_clusters: int | None = None
    """How many members answer."""
    conditions: Conditions | None = None
    """``Ready``: True when every member answers."""


class ClusterSet(
    Resource[ClusterSetSpec, ClusterSetStatus],
    group=GROUP,
    version=VERSION,
    categories=("federation",),
    printer_columns=(
        PrinterColumn("Ready", json_path=".status.readyClusters", type="integer"),
        PrinterColumn(
            "Status", json_path='.status.conditions[?(@.type=="Ready")].status', type="string"
        ),
        _AGE,
    ),
):
    """A set of member clusters, each reached through a kubeconfig in a Secret."""


class PlacementStrategy(enum.StrEnum):
    """How many of the selected members a placement takes."""

    SPREAD = "Spread"
    PICK_N = "PickN"


class PlacementSpec(
    KubeModel,
    rules=(
        Rule(
            "self.strategy != 'PickN' || has(self.numberOfClusters)",
            message="numberOfClusters is required with strategy PickN",
            field_path=".numberOfClusters",
        ),
    ),
):
    """Which members of a ClusterSet a workload goes to."""

    cluster_set: _NAME
    """The ClusterSet (in this namespace) whose members are chosen from."""
    cluster_selector: LabelSelector | None = None
    """Members whose labels match (unset or empty: every member)."""
    strategy: PlacementStrategy = PlacementStrategy.SPREAD
    """``Spread``: every selected member; ``PickN``: ``numberOfClusters`` of them."""
    number_of_clusters: Annotated[int, Field(ge=1, le=1000)] | None = None
    """How many members ``PickN`` takes (required with it)."""
    tolerations: Annotated[list[Toleration], ListType.ATOMIC] | None = None
    """Taints tolerated. Without one for the unreachable taint, a member that stopped
    answering stays selected for 300 s (as a pod's default toleration)."""


class PlacementDecision(KubeModel):
    """One member the placement selected."""

    cluster_name: str
    """The member's name."""


class PlacementStatus(KubeModel):
    """The decision."""

    observed_generation: int | None = None
    """The ``metadata.generation`` the decision was made for."""
    decisions: Annotated[list[PlacementDecision], ListType.ATOMIC] | None = None
    """The selected members, in name order."""
    number_of_selected_clusters: int | None = None
    """``len(decisions)``."""
    next_review_time: datetime | None = None
    """When a toleration expires and the decision is made again (unset: none pending)."""
    conditions: Conditions | None = None
    """``Satisfied``: True when the strategy got all the members it asks for."""


class Placement(
    Resource[PlacementSpec, PlacementStatus],
    group=GROUP,
    version=VERSION,
    categories=("federation",),
    printer_columns=(
        PrinterColumn("ClusterSet", json_path=".spec.clusterSet", type="string"),
        PrinterColumn("Selected", json_path=".status.numberOfSelectedClusters", type="integer"),
        PrinterColumn(
            "Satisfied",
            json_path='.status.conditions[?(@.type=="Satisfied")].status',
            type="string",
        ),
        _AGE,
    ),
):
    """Selects members of a ClusterSet by labels and taints."""


class ClusterOverride(
    KubeModel,
    rules=(
        Rule(
            "has(self.clusterName) != has(self.clusterSelector)",
            message="exactly one of clusterName and clusterSelector is required",
        ),
    ),
):
    """RFC 6902 operations applied to the template for some members."""

    cluster_name: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    """The member this override is for (with ``clusterSelector`` unset)."""
    cluster_selector: LabelSelector | None = None
    """Or: every member whose labels match."""
    patch: Annotated[list[dict[str, Any]], ListType.ATOMIC]
    """The JSON patch (``[{op, path, value}]``) applied to the rendered object; it may not
    change apiVersion, kind, metadata.name or metadata.namespace."""


class FederatedObjectSpec(KubeModel):
    """An object to place on members, and how it differs per member."""

    placement: _NAME
    """The Placement (in this namespace) that says which members get the object."""
    template: Annotated[dict[str, Any], EmbeddedResource]
    """The object: any kind the members serve. A namespaced one goes to this namespace."""
    overrides: Annotated[list[ClusterOverride], ListType.ATOMIC] | None = None
    """Per-member JSON patches, applied in order to the template for the members they name."""
    conflict_resolution: Literal["Abort", "Overwrite"] = "Abort"
    """An object of the same name a member already holds that is not this one's copy:
    ``Abort`` leaves it and reports a conflict, ``Overwrite`` takes it over."""


class ClusterState(enum.StrEnum):
    """Where one member's copy stands."""

    PROPAGATED = "Propagated"
    FAILED = "Failed"
    UNREACHABLE = "Unreachable"
    CONFLICT = "Conflict"
    REMOVING = "Removing"


class PlacedCluster(KubeModel):
    """One member's copy."""

    name: str
    """The member."""
    state: ClusterState
    """``Propagated``, ``Failed`` (refused), ``Unreachable`` (retried with backoff),
    ``Conflict`` (a foreign object of that name), ``Removing`` (no longer selected; the
    copy is still to be deleted)."""
    message: str | None = None
    """Why, when not propagated."""
    generation: int | None = None
    """The copy's ``metadata.generation``."""
    remote_status: Annotated[dict[str, Any], PreserveUnknownFields] | None = None
    """The copy's ``status`` as the member reports it."""


class FederatedObjectStatus(KubeModel):
    """Each member's copy, aggregated."""

    observed_generation: int | None = None
    """The ``metadata.generation`` this status describes."""
    cluster_set: str | None = None
    """The ClusterSet the copies were placed from (what deletion removes them from when
    the Placement is already gone)."""
    clusters: Annotated[list[PlacedCluster], ListType.MAP, ListMapKeys("name")] | None = None
    """One entry per member holding, or meant to hold, a copy."""
    conditions: Conditions | None = None
    """``Propagated`` (every selected member holds the current copy) and ``Degraded``
    (some member failed; its message names them)."""


class FederatedObject(
    Resource[FederatedObjectSpec, FederatedObjectStatus],
    group=GROUP,
    version=VERSION,
    categories=("federation",),
    short_names=("fo",),
    printer_columns=(
        PrinterColumn("Kind", json_path=".spec.template.kind", type="string"),
        PrinterColumn("Placement", json_path=".spec.placement", type="string"),
        PrinterColumn(
            "Propagated",
            json_path='.status.conditions[?(@.type=="Propagated")].status',
            type="string",
        ),
        PrinterColumn(
            "Degraded",
            json_path='.status.conditions[?(@.type=="Degraded")].status',
            type="string",
        ),
        _AGE,
    ),
):
    """One object of any kind placed onto the members a Placement selects."""


KINDS: Final = (ClusterSet, Placement, FederatedObject)
"""The federation's kinds, in dependency order."""
