"""Events: ``v1`` Event and ``events.k8s.io/v1`` Event, two views of one stored object.

As in Kubernetes, both are stored as core ``v1`` Events (``/core/events/...``); the
``events.k8s.io`` type converts on the way in and out and matches field selectors on the
stored form. Their Tables have no Name column.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from kubewerk.apiserver.kinds.schemas import OBJECT_REFERENCE, object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import PrinterColumn, Strategy
from kubewerk.core.meta import age, human_duration, parse_time

JSON = dict[str, Any]

# events.k8s.io/v1 Event field <-> core/v1 Event field (the two share storage)
_EVENT_FIELDS = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_EVENT_FIELDS = {v: k for k, v in _EVENT_FIELDS.items()}


def event_to_core(ev: JSON) -> JSON:
    """An events.k8s.io/v1 Event as the core/v1 Event Kubernetes stores."""
    out: JSON = {"apiVersion": "v1", "kind": "Event"}
    for key, value in ev.items():
        if key in ("apiVersion", "kind"):
            continue
        out[_EVENT_FIELDS.get(key, key)] = value
    return out


def event_from_core(ev: JSON) -> JSON:
    """A stored core/v1 Event as events.k8s.io/v1 serves it."""
    out: JSON = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for key, value in ev.items():
        if key in ("apiVersion", "kind"):
            continue
        out[_CORE_EVENT_FIELDS.get(key, key)] = value
    return out


def _object_cell(ev: JSON) -> str:
    ref = ev.get("involvedObject") or ev.get("regarding") or {}
    kind = str(ref.get("kind", "")).lower()
    return f"{kind}/{ref.get('name', '')}" if kind else str(ref.get("name", ""))


def _last_seen_cell(ev: JSON) -> str:
    for field_name in ("lastTimestamp", "eventTime", "deprecatedLastTimestamp", "firstTimestamp"):
        value = ev.get(field_name) or (ev.get("series") or {}).get("lastObservedTime")
        if isinstance(value, str):
            ts = parse_time(value)
            if ts is not None:
                return human_duration(time.time() - ts)
    return age(ev)


_COLUMNS = (
    PrinterColumn("Last Seen", "string", ".lastTimestamp"),
    PrinterColumn("Type", "string", ".type"),
    PrinterColumn("Reason", "string", ".reason"),
    PrinterColumn("Object", "string", ".involvedObject"),
    PrinterColumn("Message", "string", ".message"),
)


class EventStrategy(Strategy):
    """core ``v1`` Events: the default strategy with their Table (no Name column)."""

    name_column: ClassVar[bool] = False
    # pkg/registry/core/event/strategy.go: AllowCreateOnUpdate is true (events.k8s.io
    # Events are served from the same registry)
    allow_create_on_update = True


class EventsV1Strategy(EventStrategy):
    """``events.k8s.io/v1`` Events: stored as core Events, converted on the way in and out."""

    def to_storage(self, obj: JSON) -> JSON:
        return event_to_core(obj)

    def from_storage(self, obj: JSON, api_version: str) -> JSON:
        return event_from_core(obj)


_SOURCE: JSON = {
    "type": "object",
    "properties": {"component": {"type": "string"}, "host": {"type": "string"}},
}
_SERIES: JSON = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "lastObservedTime": {"type": "string", "format": "date-time"},
    },
}
_TIME: JSON = {"type": "string", "format": "date-time"}
_INT32: JSON = {"type": "integer", "format": "int32"}
_STRING: JSON = {"type": "string"}


def core_resource_type() -> ServedResource:
    return ServedResource(
        group="",
        resource="events",
        kind="Event",
        list_kind="EventList",
        singular="event",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        short_names=["ev"],
        strategic_kind="Event",
        strategy=EventStrategy(
            columns=_COLUMNS,
            field_key="v1/Event",
            cells=lambda o: [
                _last_seen_cell(o),
                o.get("type", ""),
                o.get("reason", ""),
                _object_cell(o),
                o.get("message", ""),
            ],
        ),
        schemas={
            "v1": object_schema(
                "Event is a report of an event somewhere in the cluster.",
                {
                    "involvedObject": OBJECT_REFERENCE,
                    "reason": _STRING,
                    "message": _STRING,
                    "type": _STRING,
                    "count": _INT32,
                    "firstTimestamp": _TIME,
                    "lastTimestamp": _TIME,
                    "eventTime": _TIME,
                    "source": _SOURCE,
                    "reportingComponent": _STRING,
                    "reportingInstance": _STRING,
                    "action": _STRING,
                    "related": OBJECT_REFERENCE,
                    "series": _SERIES,
                },
                ["metadata", "involvedObject"],
            )
        },
    )


def events_v1_resource_type() -> ServedResource:
    return ServedResource(
        group="events.k8s.io",
        resource="events",
        kind="Event",
        list_kind="EventList",
        singular="event",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        short_names=["ev"],
        strategic_kind="events.k8s.io/Event",
        storage_group="",
        strategy=EventsV1Strategy(
            columns=_COLUMNS,
            field_key="events.k8s.io/v1/Event",
            stored_field_key="v1/Event",
            cells=lambda o: [
                _last_seen_cell(o),
                o.get("type", ""),
                o.get("reason", ""),
                _object_cell(o),
                o.get("note", ""),
            ],
        ),
        schemas={
            "v1": object_schema(
                "Event is a report of an event somewhere in the cluster.",
                {
                    "regarding": OBJECT_REFERENCE,
                    "related": OBJECT_REFERENCE,
                    "reason": _STRING,
                    "note": _STRING,
                    "type": _STRING,
                    "action": _STRING,
                    "eventTime": _TIME,
                    "reportingController": _STRING,
                    "reportingInstance": _STRING,
                    "series": _SERIES,
                    "deprecatedSource": _SOURCE,
                    "deprecatedFirstTimestamp": _TIME,
                    "deprecatedLastTimestamp": _TIME,
                    "deprecatedCount": _INT32,
                },
                ["eventTime"],
            )
        },
    )
