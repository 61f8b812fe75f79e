"""Markers: schema facts attached to fields with ``typing.Annotated``.

Bounds, lengths, patterns and defaults are written with pydantic's own ``Field`` (or
``annotated_types``) so that pydantic enforces them when a model is parsed and an IDE
understands them; the CRD generator reads the same constraints. What pydantic has no
word for is expressed with the small frozen dataclasses below, e.g.::

    replicas: Annotated[int, Field(ge=0, le=100), Immutable()] = 1
    ports: Annotated[list[Port], ListType.MAP, ListMapKeys("name", "protocol")]
    labels: Annotated[dict[str, str] | None, MapType.ATOMIC] = None

Markers that make no sense for a field's type (``ListMapKeys`` on a string, ``Format``
on a list) make class creation fail with a message naming the field.

Object-level markers (CEL rules over several fields, one-of groups) are given as the
``rules=`` class keyword of a :class:`~kubewerk.model.KubeModel`::

    class Source(KubeModel, rules=[ExactlyOneOf("git", "oci")]): ...
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "AtMostOneOf",
    "EmbeddedResource",
    "ExactlyOneOf",
    "Format",
    "Immutable",
    "ListMapKeys",
    "ListType",
    "MapType",
    "Nullable",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Rule",
    "Scale",
    "Selectable",
    "Title",
]

RULE_REASONS: Final = frozenset(
    {"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}
)
"""The reasons Kubernetes accepts in ``x-kubernetes-validations[].reason``."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A CEL validation rule (one entry of ``x-kubernetes-validations``).

    On a field (``Annotated[..., Rule("self >= 0")]``) ``self`` is the field's value; as a
    ``rules=`` class keyword ``self`` is the object. A rule that mentions ``oldSelf`` is a
    transition rule: the API server evaluates it only on updates, and only where the old
    value can be correlated with the new one (not below atomic lists or sets); the CRD
    generator refuses transition rules in places that cannot be correlated.
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: str | None = None
    field_path: str | None = None
    optional_old_self: bool | None = None

    def __post_init__(self) -> None:
        if not self.rule.strip():
            raise ValueError("Rule: the rule may not be empty")
        if self.reason is not None and self.reason not in RULE_REASONS:
            raise ValueError(
                f"Rule: reason must be one of {sorted(RULE_REASONS)}, not {self.reason!r}"
            )
        if self.message is not None and ("\n" in self.message or not self.message.strip()):
            raise ValueError("Rule: message must be non-empty and may not contain line breaks")
        if self.optional_old_self is not None and not self.is_transition:
            raise ValueError("Rule: optional_old_self may only be set on rules that use oldSelf")
        if self.field_path is not None and not self.field_path.startswith("."):
            raise ValueError(f"Rule: field_path must start with '.', got {self.field_path!r}")

    def to_schema(self) -> dict[str, Any]:
        """The ``x-kubernetes-validations`` entry."""
        out: dict[str, Any] = {"rule": self.rule}
        if self.message is not None:
            out["message"] = self.message
        if self.message_expression is not None:
            out["messageExpression"] = self.message_expression
        if self.reason is not None:
            out["reason"] = self.reason
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.optional_old_self is not None:
            out["optionalOldSelf"] = self.optional_old_self
        return out

    @property
    def is_transition(self) -> bool:
        """True when the rule reads ``oldSelf`` (a transition rule)."""
        return "oldSelf" in self.rule


@dataclass(frozen=True, slots=True)
class Immutable:
    """The field may not change once set: ``self == oldSelf`` on the field.

    For an optional field the generator adds a rule on the parent object as well, so the
    field can neither be removed once set nor added after creation. ``message`` overrides
    the default ``"<field> is immutable"``.
    """

    message: str | None = None


@dataclass(frozen=True, slots=True)
class _OneOf:
    fields: tuple[str, ...]
    message: str | None = None

    def __init__(self, *fields: str, message: str | None = None) -> None:
        if len(fields) < 2:
            raise ValueError(f"{type(self).__name__} needs at least two field names")
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "message", message)


class ExactlyOneOf(_OneOf):
    """Class-level rule: exactly one of the named (optional) fields is set.

    Field names may be given as Python names or JSON names. Generates the same CEL rule
    and message as controller-gen's ``+kubebuilder:validation:ExactlyOneOf``.
    """

    __slots__ = ()


class AtMostOneOf(_OneOf):
    """Class-level rule: at most one of the named (optional) fields is set."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Format:
    """``format`` of a string (or integer/number) schema, e.g. ``Format("uri")``.

    Kubernetes validates a fixed set of string formats (date-time, uuid, hostname,
    ipv4, ipv6, cidr, mac, uri, email, byte, duration, …); others are accepted and
    ignored by the API server.
    """

    format: str


@dataclass(frozen=True, slots=True)
class Title:
    """``title`` of the field's schema."""

    title: str


class _Flag:
    """A marker without arguments; usable as ``Nullable`` or ``Nullable()``."""

    __slots__ = ()
    _instance: Any = None

    def __new__(cls) -> Any:
        if cls.__dict__.get("_instance") is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __call__(self) -> Any:
        return self

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_")


class _Nullable(_Flag):
    """``nullable: true``: an explicit JSON ``null`` is kept (and dumped) for this field.

    The field's type must admit ``None``. Without this marker ``X | None`` only means
    the field is optional, and a ``None`` value is left out when the model is dumped,
    as the API server would prune it.
    """

    __slots__ = ()


class _PreserveUnknownFields(_Flag):
    """``x-kubernetes-preserve-unknown-fields: true`` on the field's schema.

    On a ``dict``/``Any`` field the value is kept as is; on a model-typed field the
    model must itself be declared with ``preserve_unknown_fields=True`` (its unknown
    keys then survive parsing and dumping).
    """

    __slots__ = ()


class _EmbeddedResource(_Flag):
    """``x-kubernetes-embedded-resource: true``: the value is a complete object.

    Allowed on ``dict[str, Any]`` fields (any kind, unknown fields preserved) and on
    fields typed with a :class:`~kubewerk.model.Resource` subclass (typed template); the
    API server checks apiVersion, kind and metadata of the embedded object.
    """

    __slots__ = ()


class _Selectable(_Flag):
    """Adds the field's JSON path to the version's ``selectableFields``.

    Only string, integer and boolean fields can be selectable (Kubernetes' rule).
    """

    __slots__ = ()


Nullable: Final = _Nullable()
PreserveUnknownFields: Final = _PreserveUnknownFields()
EmbeddedResource: Final = _EmbeddedResource()
Selectable: Final = _Selectable()


class ListType(enum.Enum):
    """``x-kubernetes-list-type`` of a list field."""

    ATOMIC = "atomic"
    SET = "set"
    MAP = "map"


@dataclass(frozen=True, slots=True)
class ListMapKeys:
    """``x-kubernetes-list-map-keys`` (implies ``ListType.MAP``).

    The keys are Python or JSON field names of the item model; each must be a scalar
    field that is required or has a default, as Kubernetes demands.
    """

    keys: tuple[str, ...]

    def __init__(self, *keys: str) -> None:
        if not keys:
            raise ValueError("ListMapKeys needs at least one key")
        object.__setattr__(self, "keys", tuple(keys))


class MapType(enum.Enum):
    """``x-kubernetes-map-type`` of an object field."""

    ATOMIC = "atomic"
    GRANULAR = "granular"


ColumnType = Literal["integer", "number", "string", "boolean", "date"]


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """An ``additionalPrinterColumns`` entry.

    As a field marker, ``json_path`` and ``type`` are derived from the field (its path
    from the object root and its schema type). As an entry of a resource's
    ``printer_columns=`` class keyword, ``json_path`` is required.
    """

    name: str
    json_path: str | None = None
    type: ColumnType | None = None
    format: str | None = None
    description: str | None = None
    priority: int = 0

    def to_schema(self, json_path: str, type_: str) -> dict[str, Any]:
        out: dict[str, Any] = {"jsonPath": json_path, "name": self.name, "type": type_}
        if self.format:
            out["format"] = self.format
        if self.description:
            out["description"] = self.description
        if self.priority:
            out["priority"] = self.priority
        return out


@dataclass(frozen=True, slots=True)
class Scale:
    """The scale subresource: JSON paths of the replica counts and the label selector."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None

    def to_schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "specReplicasPath": self.spec_replicas_path,
            "statusReplicasPath": self.status_replicas_path,
        }
        if self.label_selector_path:
            out["labelSelectorPath"] = self.label_selector_path
        return out
