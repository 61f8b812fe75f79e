"""The status fields the lifecycle kernel maintains, and how it reads and writes them.

:class:`LifecycleStatus` is the base of a kind's status model::

    class DatabaseStatus(LifecycleStatus):
        endpoint: str | None = None

It holds ``phase`` (a string: with ``lifecycle=`` the CRD restricts it to the declared
phases), ``conditions`` (a list-map keyed by ``type``; the kernel keeps ``Ready``),
``observedGeneration`` and ``lastTransitionTime`` (when the phase last changed). The
functions below read and write those fields on typed objects and on plain dicts alike.
"""

from __future__ import annotations

import typing
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from kubewerk.model import Conditions, KubeModel
from kubewerk.model.markers import Format

__all__ = [
    "LifecycleStatus",
    "generation_of",
    "parse_time",
    "phase_of",
    "set_phase_fields",
    "status_value",
]


class LifecycleStatus(KubeModel):
    """Observed state kept by the lifecycle kernel; subclass it for a kind's status."""

    phase: str | None = None
    """The lifecycle phase of the object."""
    conditions: Conditions | None = None
    """Observations of the object's state; the kernel maintains Ready."""
    observed_generation: Annotated[int, Field(ge=0), Format("int64")] | None = None
    """The metadata.generation the status was last written for."""
    last_transition_time: datetime | None = None
    """When the phase last changed."""


def status_value(obj: Any, json_name: str) -> Any:
    """A field of ``obj``'s status by its JSON name (None when absent), from a dict or
    a typed object."""
    if isinstance(obj, dict):
        status = obj.get("status")
        return status.get(json_name) if isinstance(status, dict) else None
    status = getattr(obj, "status", None)
    if status is None:
        return None
    if isinstance(status, dict):
        return status.get(json_name)
    fields = getattr(type(status), "__pydantic_fields__", {})
    for name, info in fields.items():
        if (info.alias or name) == json_name:
            return getattr(status, name)
    return getattr(status, json_name, None)


def phase_of(obj: Any) -> str | None:
    """``status.phase`` as a string (None when unset)."""
    value = status_value(obj, "phase")
    if value is None:
        return None
    return str(value.value if hasattr(value, "value") else value)


def generation_of(obj: Any) -> int | None:
    """``metadata.generation`` (None when unset)."""
    if isinstance(obj, dict):
        gen = (obj.get("metadata") or {}).get("generation")
    else:
        gen = getattr(getattr(obj, "metadata", None), "generation", None)
    return int(gen) if gen is not None else None


def parse_time(value: Any) -> datetime | None:
    """A timestamp from a status or metadata field (a datetime or RFC 3339 text)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _typed_status(obj: Any) -> Any:
    """The typed object's status, created from its status type when it is None."""
    status = getattr(obj, "status", None)
    if status is not None:
        return status
    field = type(obj).__pydantic_fields__.get("status")
    annotation = getattr(field, "annotation", None)
    for candidate in typing.get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, KubeModel):
            status = candidate()
            obj.status = status
            return status
    raise TypeError(f"{type(obj).__name__} has no status type to hold a phase")


def _set(status: Any, json_name: str, value: Any) -> None:
    if isinstance(status, dict):
        status[json_name] = value
        return
    fields = type(status).__pydantic_fields__
    for name, info in fields.items():
        if (info.alias or name) == json_name:
            setattr(status, name, value)
            return
    raise TypeError(f"{type(status).__name__} has no field {json_name!r}")


def set_phase_fields(
    obj: Any,
    phase: str,
    *,
    generation: int | None,
    changed_at: datetime | None,
) -> None:
    """Set ``status.phase``, ``status.observedGeneration`` (when ``generation`` is
    known) and, when ``changed_at`` is given, ``status.lastTransitionTime``, on a dict
    or a typed object (whose status is created if it is None)."""
    if isinstance(obj, dict):
        status = obj.get("status")
        if not isinstance(status, dict):
            status = obj["status"] = {}
        stamp = None if changed_at is None else changed_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        status = _typed_status(obj)
        stamp = changed_at  # type: ignore[assignment]
    _set(status, "phase", phase)
    if generation is not None:
        _set(status, "observedGeneration", generation)
    if stamp is not None:
        _set(status, "lastTransitionTime", stamp)
