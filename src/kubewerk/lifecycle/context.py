"""The reconcile context of a kind with a lifecycle: ``ctx.transition(obj, phase)``.

:class:`LifecycleContext` is a :class:`~kubewerk.runtime.Context` (everything a
reconcile has: client, cache, logger, events, guarded writes) with the lifecycle's
helpers. :meth:`LifecycleContext.transition` guarantees:

- the phase the object leaves is the one *stored* (``status.phase`` of the object as the
  reconcile read it or last wrote it), the lifecycle's initial phase when unset;
- the move is checked against the lifecycle's table and the transition's guard before
  anything is written; a refused move raises :class:`~kubewerk.lifecycle.IllegalTransition`
  (a terminal error: not retried until the object changes), records a Warning Event
  ``IllegalTransition`` and publishes an ``IllegalTransition`` bus event — and writes
  nothing;
- an allowed move is ONE status write guarded by the object's resourceVersion (a merge
  patch of ``/status``, with whatever else the reconcile changed in the status):
  ``status.phase``, the ``Ready`` condition (True in the lifecycle's ready phases, False
  otherwise, with the move's reason and message), ``status.observedGeneration`` and
  ``status.lastTransitionTime``. A concurrent change makes the write fail with 409
  Conflict (the controller retries with fresh data); nothing is counted then;
- only after the write succeeded: ``kubewerk_phase_transitions_total`` and
  ``kubewerk_phase_duration_seconds`` are updated, a Normal Event ``PhaseChanged``
  ("Pending → Active: Provisioned") is recorded and a ``PhaseChanged`` bus event is
  published (its ``trace_id`` is the reconcile id's hex digits).

Moving to the phase the object is already in is no transition: nothing is counted or
published; the ``Ready`` condition and ``observedGeneration`` are brought up to date
(written only if they changed). Recording the initial phase on an object that has none
is not a transition either.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from kubewerk.lifecycle.errors import IllegalTransition
from kubewerk.lifecycle.metrics import LifecycleMetrics
from kubewerk.lifecycle.phases import Lifecycle
from kubewerk.lifecycle.status import (
    generation_of,
    parse_time,
    phase_of,
    set_phase_fields,
    status_value,
)
from kubewerk.runtime import conditions
from kubewerk.runtime.controller import Context, Controller

__all__ = ["READY", "LifecycleContext", "Publisher", "TransitionRecord"]

log = logging.getLogger("kubewerk.lifecycle")

READY: Final = "Ready"
"""The condition type that follows the phase."""

_REASON: Final = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")


class Publisher(Protocol):
    """Publishes one lifecycle event (the platform's bus behind it)."""

    def __call__(
        self,
        event_type: str,
        kind: str,
        key: str,
        from_phase: str | None,
        to_phase: str | None,
        reason: str,
        message: str,
        trace_id: str,
    ) -> Awaitable[None]: ...


class TransitionRecord:
    """What one :meth:`LifecycleContext.transition` did (``ctx.transitions`` lists them)."""

    __slots__ = ("reason", "source", "target")

    def __init__(self, source: str, target: str, reason: str) -> None:
        self.source = source
        self.target = target
        self.reason = reason

    def __repr__(self) -> str:
        return f"{self.source} → {self.target} ({self.reason})"


class LifecycleContext(Context):
    """A reconcile's context for a kind with a lifecycle (see the module doc)."""

    def __init__(
        self,
        controller: Controller[Any],
        key: str,
        snapshot: dict[str, Any] | bytes,
        lifecycle: Lifecycle[Any],
        *,
        kind: str,
        metrics: LifecycleMetrics | None = None,
        publish: Publisher | None = None,
    ) -> None:
        super().__init__(controller, key, snapshot)
        self.lifecycle: Lifecycle[Any] = lifecycle
        self.kind_label = kind
        """``Kind.group``, as metrics and bus events name the kind."""
        self.metrics = metrics
        self.publish = publish
        self.transitions: list[TransitionRecord] = []
        """The transitions this reconcile wrote, in order."""
        self.requeue: float | None = None
        """Set by :meth:`requeue_after`: the platform reconciles again after this delay."""
        self.written_versions: list[str] = []
        """The resourceVersions of this reconcile's writes, in order."""

    def _refresh(self, obj: Any, written: dict[str, Any]) -> None:
        super()._refresh(obj, written)
        version = (written.get("metadata") or {}).get("resourceVersion")
        if version:
            self.written_versions.append(str(version))

    # -- reading ------------------------------------------------------------------------

    @property
    def stored(self) -> dict[str, Any]:
        """The object as read or last written (the context's own copy: do not edit)."""
        return self._snapshot

    @property
    def deleting(self) -> bool:
        """Whether the stored object has a ``deletionTimestamp``."""
        return bool((self._snapshot.get("metadata") or {}).get("deletionTimestamp"))

    @property
    def finalizers(self) -> list[str]:
        """The stored object's finalizers."""
        return list((self._snapshot.get("metadata") or {}).get("finalizers") or [])

    @property
    def recorded_phase(self) -> str | None:
        """``status.phase`` as stored (None when the object has none yet)."""
        return phase_of(self._snapshot)

    @property
    def phase(self) -> Any:
        """The stored phase as a member of the lifecycle's enum: the initial phase when
        none is recorded, None when the stored value is not a declared phase."""
        recorded = self.recorded_phase
        if recorded is None:
            return self.lifecycle.initial
        return self.lifecycle.parse(recorded)

    @property
    def spec_changed(self) -> bool:
        """True when ``metadata.generation`` is not the status' ``observedGeneration``
        (the spec changed since the status was last written, or it never was)."""
        snap = self._snapshot
        return bool(generation_of(snap) != status_value(snap, "observedGeneration"))

    def requeue_after(self, seconds: float) -> None:
        """Ask the platform to reconcile this object again after ``seconds``."""
        if seconds < 0:
            raise ValueError("requeue_after: seconds must be >= 0")
        self.requeue = seconds if self.requeue is None else min(self.requeue, seconds)

    # -- writing ------------------------------------------------------------------------

    async def transition(
        self, obj: Any, to: Any, *, reason: str | None = None, message: str | None = None
    ) -> bool:
        """Move ``obj`` to phase ``to`` (a member of the lifecycle's enum or its value)
        in one guarded status write; True when the phase changed. See the module doc.

        ``reason`` (CamelCase; default: the transition's trigger, else the target
        phase) and ``message`` (default empty) go into the ``Ready`` condition, the
        Event and the bus event. Staying in the current phase keeps the condition's
        reason and message unless they are given.
        """
        lc = self.lifecycle
        target = lc.phase(to)
        recorded = self.recorded_phase
        source = lc.initial if recorded is None else lc.parse(recorded)
        if source == target:
            if recorded is None:  # recording the initial phase
                self._apply(obj, target, reason or target.value, message or "", self._created())
            else:
                ready = conditions.get_condition(self._snapshot, READY) or {}
                self._apply(
                    obj,
                    target,
                    reason or ready.get("reason") or target.value,
                    message if message is not None else str(ready.get("message", "")),
                    None,
                )
            await self.patch_status(obj)
            return False
        source_text = recorded if recorded is not None else lc.initial.value
        declared = lc.transition(source, target) if source is not None else None
        if reason is None:
            reason = (declared.trigger if declared is not None else None) or target.value
        message = message or ""
        if source is not None:
            # a stored phase the lifecycle does not declare may go anywhere (as the
            # CRD rule allows), so objects never get stuck after the lifecycle changed
            if declared is None:
                await self._refuse(source_text, target.value, None)
            elif not await declared.allows(obj, self):
                await self._refuse(source_text, target.value, declared.guard_name)
        entered = parse_time(status_value(self._snapshot, "lastTransitionTime"))
        entered = entered or self._created()
        self._apply(obj, target, reason, message, datetime.now(UTC).replace(microsecond=0))
        await self.patch_status(obj)
        self.transitions.append(TransitionRecord(source_text, target.value, reason))
        if self.metrics is not None:
            spent = None if entered is None else max(0.0, time.time() - entered.timestamp())
            self.metrics.transitioned(self.kind_label, source_text, target.value, spent)
        note = f"{source_text} → {target.value}: {reason}"
        self.event(
            "Normal",
            "PhaseChanged",
            f"{note} ({message})" if message else note,
            # one Event per kind of move: isomorphic Events (same action) form a series
            action=f"{source_text}To{target.value}",
        )
        await self._publish("PhaseChanged", source_text, target.value, reason, message)
        return True

    async def settle(self, obj: Any) -> bool:
        """Bring the lifecycle's status fields up to date without a transition: record
        the initial phase when there is none (``Ready`` False), else refresh
        ``observedGeneration`` (of the status and of the ``Ready`` condition). Writes
        the status (with whatever else the reconcile changed in it) only if something
        changed; True when it wrote."""
        recorded = self.recorded_phase
        if recorded is None:
            initial = self.lifecycle.initial
            self._apply(obj, initial, initial.value, "", self._created())
        else:
            generation = generation_of(obj)
            set_phase_fields(obj, recorded, generation=generation, changed_at=None)
            ready = conditions.get_condition(self._snapshot, READY)
            parsed = self.lifecycle.parse(recorded)
            if ready is not None:
                conditions.set_condition(
                    obj,
                    READY,
                    ready.get("status", "Unknown"),
                    str(ready.get("reason") or recorded),
                    str(ready.get("message", "")),
                )
            elif parsed is not None:  # a phase written by someone else: Ready follows it
                conditions.set_condition(
                    obj, READY, self.lifecycle.is_ready(parsed), parsed.value, ""
                )
        return await self.patch_status(obj)

    def _apply(
        self, obj: Any, target: Any, reason: str, message: str, changed_at: datetime | None
    ) -> None:
        if not _REASON.fullmatch(reason) or len(reason) > 1024:
            raise ValueError(f"transition reason {reason!r} must be CamelCase (a condition reason)")
        set_phase_fields(obj, target.value, generation=generation_of(obj), changed_at=changed_at)
        conditions.set_condition(obj, READY, self.lifecycle.is_ready(target), reason, message)

    def _created(self) -> datetime | None:
        meta = self._snapshot.get("metadata") or {}
        return parse_time(meta.get("creationTimestamp"))

    async def _refuse(self, source: str, target: str, guard: str | None) -> None:
        lc = self.lifecycle
        parsed = lc.parse(source)
        allowed = [t.value for t in lc.targets(parsed)] if parsed is not None else []
        exc = IllegalTransition(self.kind_label, self.key, source, target, allowed, guard=guard)
        self.event("Warning", "IllegalTransition", exc.detail, action="Transition")
        await self._publish("IllegalTransition", source, target, "IllegalTransition", exc.detail)
        raise exc

    async def _publish(
        self, event_type: str, source: str | None, target: str | None, reason: str, message: str
    ) -> None:
        if self.publish is None:
            return
        try:
            await self.publish(
                event_type,
                self.kind_label,
                self.key,
                source,
                target,
                reason,
                message,
                self.reconcile_id.replace("-", ""),
            )
        except Exception:  # the write happened; a bus failure must not undo or repeat it
            self.log.exception("publishing %s on the lifecycle bus failed", event_type)
