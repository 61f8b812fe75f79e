"""Typed forms of the metav1 types every custom resource uses.

``ObjectMeta`` (with ``OwnerReference`` and ``ManagedFieldsEntry``), ``Condition`` with
the same constraints ``metav1.Condition`` carries in generated CRDs, ``LabelSelector``,
and the ``IntOrString`` and ``Quantity`` field types. Timestamps are ``datetime`` values
in UTC; they print back as ``2024-05-01T10:00:00Z``, the way the API server writes them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from kubewerk.model.base import KubeModel
from kubewerk.model.markers import Format, ListMapKeys, ListType, MapType

__all__ = [
    "Condition",
    "Conditions",
    "Int32",
    "Int64",
    "IntOrString",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ManagedFieldsEntry",
    "ObjectMeta",
    "OwnerReference",
    "Quantity",
]

Int32 = Annotated[int, Format("int32")]
"""An integer documented as 32-bit (``format: int32``), as Go's ``int32`` fields are."""
Int64 = Annotated[int, Format("int64")]
"""An integer documented as 64-bit (``format: int64``)."""

IntOrString = int | str
"""A field that holds an integer or a string (``x-kubernetes-int-or-string: true``)."""

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
Quantity = int | Annotated[str, Field(pattern=QUANTITY_PATTERN)]
"""A ``resource.Quantity``: an integer or a quantity string such as ``500m`` or ``1Gi``."""


class OwnerReference(KubeModel):
    """A reference to an owner of this object (metav1.OwnerReference)."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ManagedFieldsEntry(KubeModel):
    """One manager's record in ``metadata.managedFields`` (server-side apply)."""

    manager: str | None = None
    operation: str | None = None
    api_version: str | None = None
    time: datetime | None = None
    fields_type: str | None = None
    fields_v1: dict[str, Any] | None = Field(default=None, alias="fieldsV1")
    subresource: str | None = None


class ObjectMeta(KubeModel):
    """Standard object metadata (metav1.ObjectMeta).

    Every field is optional; only the fields that were set are dumped, so a manifest
    written as ``ObjectMeta(name="x")`` stays ``{"name": "x"}``. In a CRD schema a
    metadata field is ``{type: object}``: the API server validates metadata itself.
    """

    __kube_object_meta__: ClassVar[bool] = True

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    self_link: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[ManagedFieldsEntry] | None = None


class LabelSelectorRequirement(KubeModel):
    """One set-based label selector requirement."""

    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KubeModel, map_type=MapType.ATOMIC):
    """A label selector (metav1.LabelSelector): ``matchLabels`` and ``matchExpressions``."""

    match_labels: dict[str, str] | None = None
    match_expressions: Annotated[list[LabelSelectorRequirement], ListType.ATOMIC] | None = None


CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class Condition(KubeModel):
    """Condition contains details for one aspect of the current state of this object.

    Fields and constraints are those of metav1.Condition.
    """

    type: Annotated[str, Field(max_length=316, pattern=CONDITION_TYPE_PATTERN)]
    """Type of the condition, in CamelCase or foo.example.com/CamelCase."""
    status: Literal["True", "False", "Unknown"]
    """Status of the condition: True, False or Unknown."""
    observed_generation: Annotated[int, Field(ge=0), Format("int64")] | None = None
    """The .metadata.generation the condition was set based upon."""
    last_transition_time: datetime
    """When the condition last changed from one status to another."""
    reason: Annotated[str, Field(min_length=1, max_length=1024, pattern=CONDITION_REASON_PATTERN)]
    """Programmatic identifier (CamelCase) for the condition's last transition."""
    message: Annotated[str, Field(max_length=32768)]
    """Human-readable details about the transition; may be empty."""

    @classmethod
    def make(
        cls,
        type: str,
        status: bool | Literal["True", "False", "Unknown"],
        reason: str,
        message: str = "",
        observed_generation: int | None = None,
        now: datetime | None = None,
    ) -> Condition:
        """A condition stamped with the current time (seconds precision, UTC)."""
        text: Literal["True", "False", "Unknown"] = (
            ("True" if status else "False") if isinstance(status, bool) else status
        )
        stamp = (now or datetime.now(UTC)).replace(microsecond=0)
        kwargs: dict[str, Any] = {}
        if observed_generation is not None:
            kwargs["observed_generation"] = observed_generation
        return cls(
            type=type,
            status=text,
            reason=reason,
            message=message,
            last_transition_time=stamp,
            **kwargs,
        )


Conditions = Annotated[list[Condition], ListType.MAP, ListMapKeys("type")]
"""The recommended ``conditions`` field type: a list-map keyed by ``type``."""
