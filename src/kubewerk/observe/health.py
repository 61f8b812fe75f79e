"""What is wrong with one object, read from the object alone (pure functions, no I/O).

An object is **stuck** when one of these holds (each is a :class:`Stuck` with a code,
the reason as the object states it, and a message):

- ``Failed``: ``status.phase`` is ``Failed`` (reason and message from the ``Ready``
  condition when it is False, else ``status.reason``/``status.message``);
- ``DependenciesNotReady``: the ``DependenciesReady`` condition is ``False`` (the
  lifecycle kernel's gate; its reason, e.g. ``DependencyCycle``, and message);
- ``FinalizersPending``: the object has a ``deletionTimestamp`` older than
  ``finalizer_grace`` seconds and still has finalizers (who holds it is named);
- ``GenerationNotObserved``: ``status.observedGeneration`` (or the ``Ready``
  condition's ``observedGeneration``) is behind ``metadata.generation`` for longer than
  the object has been around ``observe_grace`` seconds (an object whose controller has
  not caught up with its spec).

:func:`ready_of` reads the ``Ready`` condition (``True``/``False``/``Unknown``, or
``None`` when the object has none). Nothing here raises on malformed objects: a field
of the wrong type counts as absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

__all__ = [
    "SEVERITY",
    "Stuck",
    "conditions_of",
    "parse_time",
    "phase_of",
    "ready_of",
    "stuck_reasons",
]

FAILED: Final = "Failed"
DEPENDENCIES: Final = "DependenciesNotReady"
FINALIZERS: Final = "FinalizersPending"
GENERATION: Final = "GenerationNotObserved"

SEVERITY: Final = {FAILED: 0, DEPENDENCIES: 1, FINALIZERS: 2, GENERATION: 3}
"""Order of stuck codes, most severe first (how the dashboard sorts)."""


@dataclass(frozen=True, slots=True)
class Stuck:
    """Why an object is stuck: ``code`` (one of the module's four), the ``reason`` the
    object gives (a condition reason, or the code itself) and a human ``message``."""

    code: str
    reason: str
    message: str

    def to_json(self) -> dict[str, str]:
        """``{"code", "reason", "message"}``."""
        return {"code": self.code, "reason": self.reason, "message": self.message}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as Kubernetes writes it (``Z`` or an offset, optional
    fraction) as an aware datetime; None for anything else."""
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def conditions_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """``status.conditions`` entries that are mappings with a string ``type``."""
    items = _mapping(obj.get("status")).get("conditions")
    if not isinstance(items, list):
        return []
    return [c for c in items if isinstance(c, dict) and isinstance(c.get("type"), str)]


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in conditions_of(obj):
        if cond["type"] == type_:
            return cond
    return None


def phase_of(obj: dict[str, Any]) -> str | None:
    """``status.phase`` when it is a non-empty string."""
    phase = _mapping(obj.get("status")).get("phase")
    return phase if isinstance(phase, str) and phase else None


def ready_of(obj: dict[str, Any]) -> str | None:
    """The ``Ready`` condition's status (``True``, ``False``, ``Unknown``), None without one."""
    cond = _condition(obj, "Ready")
    if cond is None:
        return None
    status = cond.get("status")
    return status if status in ("True", "False", "Unknown") else "Unknown"


def stuck_reasons(
    obj: dict[str, Any],
    now: datetime | None = None,
    *,
    finalizer_grace: float = 30.0,
    observe_grace: float = 30.0,
) -> list[Stuck]:
    """Every way ``obj`` is stuck (see the module doc), most severe first; empty when
    it is not. ``now`` defaults to the current time (UTC)."""
    now = now or datetime.now(UTC)
    meta = _mapping(obj.get("metadata"))
    status = _mapping(obj.get("status"))
    found: list[Stuck] = []

    if phase_of(obj) == FAILED:
        ready = _condition(obj, "Ready")
        if ready is not None and ready.get("status") == "False":
            reason = _str(ready.get("reason")) or FAILED
            message = _str(ready.get("message"))
        else:
            reason = _str(status.get("reason")) or FAILED
            message = _str(status.get("message"))
        found.append(Stuck(FAILED, reason, message or "phase is Failed"))

    deps = _condition(obj, "DependenciesReady")
    if deps is not None and deps.get("status") == "False":
        found.append(
            Stuck(
                DEPENDENCIES,
                _str(deps.get("reason")) or DEPENDENCIES,
                _str(deps.get("message")) or "dependencies are not ready",
            )
        )

    deleting = parse_time(meta.get("deletionTimestamp"))
    finalizers = [f for f in meta.get("finalizers") or [] if isinstance(f, str)]
    if deleting is not None and finalizers:
        waited = (now - deleting).total_seconds()
        if waited >= finalizer_grace:
            found.append(
                Stuck(
                    FINALIZERS,
                    FINALIZERS,
                    f"deleted {_age(waited)} ago, still held by finalizers: "
                    + ", ".join(finalizers),
                )
            )

    generation = _int(meta.get("generation"))
    observed = _int(status.get("observedGeneration"))
    if observed is None:
        ready = _condition(obj, "Ready")
        observed = _int(ready.get("observedGeneration")) if ready is not None else None
    if generation is not None and observed is not None and observed < generation:
        since = _last_change(obj) or parse_time(meta.get("creationTimestamp"))
        if since is None or (now - since).total_seconds() >= observe_grace:
            found.append(
                Stuck(
                    GENERATION,
                    GENERATION,
                    f"generation {generation} not observed (observedGeneration {observed})",
                )
            )
    return found


def _last_change(obj: dict[str, Any]) -> datetime | None:
    """The newest time in managedFields (when the spec was last written), if any."""
    newest: datetime | None = None
    for entry in _mapping(obj.get("metadata")).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource"):
            continue
        when = parse_time(entry.get("time"))
        if when is not None and (newest is None or when > newest):
            newest = when
    return newest


def _age(seconds: float) -> str:
    """A short age, rounded down: ``45s``, ``3m``, ``2h``, ``4d``."""
    s = int(max(0, seconds))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"
