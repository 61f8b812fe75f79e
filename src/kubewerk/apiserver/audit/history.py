"""An object's history read back from an audit log, and its spec replayed to any version.

``read_history(lines, target)`` picks, from audit events (JSON lines as the ``LogWriter``
writes them), the ``ResponseComplete`` events of the writes committed to one object (those
carrying ``kubewerk.dev/spec-patch``: writes to custom resources logged at level
``Metadata`` or above), in log order, which is commit order. ``replay(writes, n)`` applies
the first ``n`` spec patches from ``{}`` and gives the object's spec document as it was
after the ``n``-th write (None when the object did not exist then); ``version_at`` finds
the write in force at a resourceVersion or a time.

Lines that are not JSON objects, or not audit events, are skipped (a log being written
may end in a partial line); a patch that does not apply raises ``HistoryError`` naming the
write (the log is incomplete: events were dropped or the level changed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from kubewerk.apiserver.audit.auditor import (
    ANNOTATION_EVENT,
    ANNOTATION_RV,
    ANNOTATION_SPEC_PATCH,
    ANNOTATION_TRACE_ID,
)
from kubewerk.core.errors import ApiError
from kubewerk.core.patch import json_patch

__all__ = [
    "HistoryError",
    "Target",
    "Write",
    "parse_target",
    "read_history",
    "replay",
    "version_at",
]

JSON = dict[str, Any]


class HistoryError(ValueError):
    """The history cannot be read or replayed; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Target:
    """Which object: ``resource`` (plural, or a singular/Kind matched loosely), an
    optional API group, name and optional namespace."""

    resource: str
    name: str
    group: str | None = None
    namespace: str | None = None

    def matches(self, ref: JSON) -> bool:
        if ref.get("name") != self.name:
            return False
        if self.namespace is not None and ref.get("namespace", "") != self.namespace:
            return False
        if self.group is not None and ref.get("apiGroup", "") != self.group:
            return False
        plural = str(ref.get("resource", ""))
        want = self.resource.lower()
        return plural in (want, want + "s", want + "es") or (
            want.endswith("y") and plural == want[:-1] + "ies"
        )


def parse_target(text: str, namespace: str | None = None) -> Target:
    """``RESOURCE[.GROUP]/NAME`` (``databases/db1``, ``databases.demo.kubewerk.dev/db1``)."""
    kind, sep, name = text.partition("/")
    if not sep or not kind or not name or "/" in name:
        raise HistoryError(f"expected KIND/NAME (e.g. databases/db1), got {text!r}")
    resource, dot, group = kind.partition(".")
    return Target(resource, name, group if dot else None, namespace)


@dataclass(frozen=True, slots=True)
class Write:
    """One committed write of the object, from its ``ResponseComplete`` audit event."""

    resource_version: int
    storage_event: str
    patch: list[JSON]
    verb: str
    user: str
    time: str
    audit_id: str
    trace_id: str
    code: int
    event: JSON

    def to_json(self) -> JSON:
        return {
            "resourceVersion": str(self.resource_version),
            "storageEvent": self.storage_event,
            "verb": self.verb,
            "user": self.user,
            "time": self.time,
            "auditID": self.audit_id,
            "traceID": self.trace_id,
            "code": self.code,
            "specPatch": self.patch,
        }


def read_history(lines: Iterable[bytes | str], target: Target) -> list[Write]:
    """The writes of ``target`` in the log, in commit order (see the module doc).

    Lines that are not audit events are skipped (a log cut short by a crash ends in half a
    line), but a log with text and not one audit event is refused: it is some other file."""
    writes: list[Write] = []
    text_lines = events = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        text_lines += 1
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(ev, dict) or ev.get("kind") != "Event":
            continue
        events += 1
        if ev.get("stage") != "ResponseComplete":
            continue
        ref = ev.get("objectRef")
        notes = ev.get("annotations") or {}
        if not isinstance(ref, dict) or ANNOTATION_SPEC_PATCH not in notes:
            continue
        if not target.matches(ref):
            continue
        try:
            patch = orjson.loads(notes[ANNOTATION_SPEC_PATCH])
            rv = int(str(notes.get(ANNOTATION_RV, ref.get("resourceVersion", "0"))))
        except (orjson.JSONDecodeError, ValueError, TypeError) as e:
            raise HistoryError(f"line {number}: unreadable spec patch: {e}") from e
        if not isinstance(patch, list):
            raise HistoryError(f"line {number}: the spec patch is not a list of operations")
        writes.append(
            Write(
                resource_version=rv,
                storage_event=str(notes.get(ANNOTATION_EVENT, "")),
                patch=patch,
                verb=str(ev.get("verb", "")),
                user=str((ev.get("user") or {}).get("username", "")),
                time=str(ev.get("stageTimestamp", "")),
                audit_id=str(ev.get("auditID", "")),
                trace_id=str(notes.get(ANNOTATION_TRACE_ID, "")),
                code=int((ev.get("responseStatus") or {}).get("code", 0)),
                event=ev,
            )
        )
    if text_lines and not events:
        raise HistoryError("not an audit log: no line is an audit.k8s.io Event")
    writes.sort(key=lambda w: w.resource_version)
    return writes


def replay(writes: list[Write], count: int) -> JSON | None:
    """The spec document (``{"spec": ...}``) after the first ``count`` writes; None when
    the object did not exist then."""
    doc: JSON | None = None
    for w in writes[:count]:
        try:
            doc = json_patch(doc if doc is not None else {}, w.patch)
        except ApiError as e:
            raise HistoryError(
                f"the spec patch of resourceVersion {w.resource_version} ({w.verb}) does not "
                f"apply to the replayed spec: {e.message}; the log misses a write of this "
                "object"
            ) from e
        if w.storage_event == "DELETED":
            doc = None
    return doc


def version_at(writes: list[Write], at: str) -> int:
    """How many writes were in force at ``at``: a resourceVersion (digits) or an RFC 3339
    time; ``HistoryError`` for anything else."""
    if at.isdigit():
        rv = int(at)
        return sum(1 for w in writes if w.resource_version <= rv)
    when = _parse_time(at)
    return sum(1 for w in writes if _parse_time(w.time) <= when)


def _parse_time(text: str) -> datetime:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise HistoryError(
            f"--at {text!r} is neither a resourceVersion nor an RFC 3339 time "
            "(e.g. 2024-05-01T12:00:00Z)"
        ) from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)
