"""Events from the simulated cluster, as its components write them on a cluster.

Two recorders, as in Kubernetes 1.33:

* ``Recorder`` — client-go's ``record.EventRecorder`` (``tools/record``), which
  kube-controller-manager's controllers and the kubelet use: a core/v1 Event named
  ``<object>.<hex Unix nanoseconds>`` in the object's namespace (``default`` for
  cluster-scoped objects), ``involvedObject`` the object's reference (with ``fieldPath``
  for a container), ``source`` ``{component, host}``, ``reportingComponent``/
  ``reportingInstance`` the same, ``firstTimestamp``/``lastTimestamp``, ``count`` 1.
  Before writing, the ``EventCorrelator`` runs: the spam filter
  (``EventSourceObjectSpamFilter``: per source and object, a token bucket of 25 events
  refilled one per 5 minutes — events beyond it are dropped) and the logger's
  deduplication (an identical event again — same source, object, type, reason and
  message — bumps the first one's ``count`` and ``lastTimestamp`` instead of making a new
  object). Both caches hold at most 4,096 entries (``maxLruCacheEntries``), least
  recently used dropped first.
* ``SchedulerRecorder`` — the ``events.k8s.io/v1`` recorder kube-scheduler uses
  (``tools/events``): ``eventTime`` (microseconds), ``action``, ``reportingComponent``
  ``default-scheduler`` and ``reportingInstance`` ``default-scheduler-<host>``, no
  ``source``, ``firstTimestamp`` or ``count``. An isomorphic event again (same object,
  action, reason, reporting controller) becomes a series: the second occurrence is
  written at once with ``series.count`` 2, later ones only counted and written every
  30 seconds (the recorder's heartbeat), and a series not seen for 6 minutes is finished.

kube-apiserver expires Events an hour after their last write (``--event-ttl``); the
embedded server keeps them, so the simulation deletes the Events it wrote
``event_ttl_seconds`` (3,600) after their last write, one timer per Event. Every write
is one create or one update through the REST layer; a write refused (the kind not
served) is dropped, as the broadcaster drops it after its retries.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubewerk.apiserver.simulate.clock import rfc3339

if TYPE_CHECKING:
    from kubewerk.apiserver.simulate.engine import Engine

JSON = dict[str, Any]

EVENT_PREFIX = "/core/events/"
MAX_CACHE = 4096
"""``maxLruCacheEntries`` of client-go's event caches."""
SPAM_BURST = 25
"""``defaultSpamBurst``: events a source may write about one object at once."""
SPAM_REFILL_SECONDS = 300.0
"""``defaultSpamQPS`` is 1/300: one more token every five minutes."""
SERIES_HEARTBEAT_SECONDS = 30.0
"""How often the events.k8s.io recorder writes its series' counts."""
SERIES_FINISH_SECONDS = 360.0
"""A series not observed for this long is finished (6 minutes)."""
SCHEDULER_INSTANCE = "default-scheduler-kubewerk"


def object_ref(obj: JSON, field_path: str | None = None) -> JSON:
    """``reference.GetReference``: the object's kind, namespace, name, uid, apiVersion
    and resourceVersion, in Go's field order (empty ones left out)."""
    meta = obj.get("metadata") or {}
    ref: JSON = {"kind": obj.get("kind", "")}
    for name, value in (
        ("namespace", meta.get("namespace")),
        ("name", meta.get("name")),
        ("uid", meta.get("uid")),
        ("apiVersion", obj.get("apiVersion")),
        ("resourceVersion", meta.get("resourceVersion")),
        ("fieldPath", field_path),
    ):
        if value:
            ref[name] = value
    return ref


def node_ref(name: str) -> JSON:
    """The kubelet's reference to its node (``kl.nodeRef``): its uid is the node's name."""
    return {"kind": "Node", "name": name, "uid": name}


def micro_time(when: dt.datetime) -> str:
    """``metav1.MicroTime`` on the wire: RFC 3339 with six fractional digits."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Seen:
    """The logger cache's memory of one event: its stored name, count and first time."""

    key: str
    count: int
    first: str


@dataclass
class _Series:
    key: str
    count: int
    last: dt.datetime
    dirty: bool = False
    manager: str = "kube-scheduler"


class Events:
    """The simulation's event sink: correlation, writes and expiry (see the module
    docstring). One per ``Engine``; components write through ``recorder(...)``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, ...], tuple[float, dt.datetime]] = OrderedDict()
        self._series: dict[tuple[str, ...], _Series] = {}
        self._last_nanos = 0
        self.written = 0
        """Event writes (creates and updates) so far."""
        self.dropped = 0
        """Events the spam filter dropped."""
        engine.handlers["event-expire"] = self._expire
        engine.handlers["event-series"] = self._flush_series

    def recorder(self, component: str, host: str = "") -> Recorder:
        return Recorder(self, component, host)

    # -- the core/v1 path ------------------------------------------------------------------

    def _name(self, ref: JSON, now: dt.datetime) -> str:
        """``<name>.<hex nanos>``, the nanoseconds bumped past the last name's so that
        events at one instant of a manual clock do not collide."""
        nanos = int(now.timestamp()) * 1_000_000_000 + now.microsecond * 1000
        nanos = max(nanos, self._last_nanos + 1)
        self._last_nanos = nanos
        return f"{ref.get('name', '')}.{nanos:x}"

    def _allow(self, spam_key: tuple[str, ...], now: dt.datetime) -> bool:
        """The spam filter's token bucket for ``spam_key``."""
        tokens, last = self._buckets.pop(spam_key, (float(SPAM_BURST), now))
        tokens = min(float(SPAM_BURST), tokens + (now - last).total_seconds() / SPAM_REFILL_SECONDS)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        self._buckets[spam_key] = (tokens, now)
        if len(self._buckets) > MAX_CACHE:
            self._buckets.popitem(last=False)
        return allowed

    def emit(
        self,
        ref: JSON,
        etype: str,
        reason: str,
        message: str,
        component: str,
        host: str = "",
    ) -> None:
        """Correlate and write one core/v1 event about ``ref``."""
        engine = self.engine
        if engine.stopped or engine.rtype("", "events") is None:
            return
        now_dt = engine.clock.now()
        spam_key = (
            component,
            host,
            *(str(ref.get(f, "")) for f in ("kind", "namespace", "name", "uid", "apiVersion")),
            etype,
        )
        if not self._allow(spam_key, now_dt):
            self.dropped += 1
            return
        now = rfc3339(now_dt)
        ns = ref.get("namespace") or "default"
        dedup_key = (*spam_key, str(ref.get("fieldPath", "")), reason, message)
        seen = self._seen.pop(dedup_key, None)
        if seen is not None:
            stored = engine.get(seen.key)
            if stored is not None:
                new = dict(stored)
                new["count"] = seen.count + 1
                new["lastTimestamp"] = now
                if engine.update(seen.key, new, manager=_manager(component)) is not None:
                    self.written += 1
                    seen.count += 1
                    self._remember(dedup_key, seen)
                    engine.after(engine.config.event_ttl_seconds, "event-expire", seen.key)
                    return
        name = self._name(ref, now_dt)
        source: JSON = {"component": component}
        if host:
            source["host"] = host
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": dict(ref),
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": etype,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": host,
        }
        if engine.create("", "events", ns, body, manager=_manager(component)) is None:
            return
        self.written += 1
        key = f"{EVENT_PREFIX}{ns}/{name}"
        self._remember(dedup_key, _Seen(key, 1, now))
        engine.after(engine.config.event_ttl_seconds, "event-expire", key)

    def _remember(self, dedup_key: tuple[str, ...], seen: _Seen) -> None:
        self._seen[dedup_key] = seen
        if len(self._seen) > MAX_CACHE:
            self._seen.popitem(last=False)

    # -- the events.k8s.io/v1 path ---------------------------------------------------------

    def emit_series(
        self,
        ref: JSON,
        etype: str,
        reason: str,
        action: str,
        note: str,
        controller: str,
        instance: str,
        manager: str = "kube-scheduler",
    ) -> None:
        """Write (or count in a series) one events.k8s.io/v1 event about ``ref``, as field
        manager ``manager``."""
        engine = self.engine
        if engine.stopped or engine.rtype("", "events") is None:
            return
        now_dt = engine.clock.now()
        iso_key = (
            *(str(ref.get(f, "")) for f in ("kind", "namespace", "name", "uid", "apiVersion")),
            action,
            reason,
            controller,
        )
        series = self._series.get(iso_key)
        if series is not None and engine.get(series.key) is not None:
            series.count = max(series.count + 1, 2)
            series.last = now_dt
            if series.count == 2:
                self._write_series(series, manager)
            else:
                series.dirty = True
                if not engine.has_timer("event-series", "flush"):
                    engine.after(SERIES_HEARTBEAT_SECONDS, "event-series", "flush")
            return
        ns = ref.get("namespace") or "default"
        name = self._name(ref, now_dt)
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": dict(ref),
            "reason": reason,
            "message": note,
            "source": {},
            "firstTimestamp": None,
            "lastTimestamp": None,
            "type": etype,
            "eventTime": micro_time(now_dt),
            "action": action,
            "reportingComponent": controller,
            "reportingInstance": instance,
        }
        if engine.create("", "events", ns, body, manager=manager) is None:
            return
        self.written += 1
        key = f"{EVENT_PREFIX}{ns}/{name}"
        self._series[iso_key] = _Series(key, 1, now_dt, manager=manager)
        if len(self._series) > MAX_CACHE:
            del self._series[next(iter(self._series))]
        engine.after(engine.config.event_ttl_seconds, "event-expire", key)
        if not engine.has_timer("event-series", "flush"):
            engine.after(SERIES_HEARTBEAT_SECONDS, "event-series", "flush")

    def _write_series(self, series: _Series, manager: str | None = None) -> None:
        engine = self.engine
        stored = engine.get(series.key)
        if stored is None:
            return
        new = dict(stored)
        new["series"] = {"count": series.count, "lastObservedTime": micro_time(series.last)}
        if engine.update(series.key, new, manager=manager or series.manager):
            self.written += 1
            series.dirty = False
            engine.after(engine.config.event_ttl_seconds, "event-expire", series.key)

    def _flush_series(self, _key: str) -> None:
        """The recorder's heartbeat: write the counted series, finish the quiet ones."""
        now = self.engine.clock.now()
        for iso_key, series in list(self._series.items()):
            if series.dirty:
                self._write_series(series)
            if (now - series.last).total_seconds() >= SERIES_FINISH_SECONDS:
                del self._series[iso_key]
        if self._series and not self.engine.stopped:
            self.engine.after(SERIES_HEARTBEAT_SECONDS, "event-series", "flush")

    # -- expiry ----------------------------------------------------------------------------

    def _expire(self, key: str) -> None:
        """The event TTL: the Event goes ``event_ttl_seconds`` after its last write."""
        if self.engine.get(key) is not None:
            self.engine.delete(key)


def _manager(component: str) -> str:
    return "kubelet" if component == "kubelet" else "kube-controller-manager"


class Recorder:
    """One component's ``EventRecorder``: ``normal``/``warning`` about an object."""

    def __init__(self, events: Events, component: str, host: str = "") -> None:
        self.events = events
        self.component = component
        self.host = host

    def normal(self, obj: JSON, reason: str, message: str, field_path: str | None = None) -> None:
        self.events.emit(
            object_ref(obj, field_path), "Normal", reason, message, self.component, self.host
        )

    def warning(self, obj: JSON, reason: str, message: str, field_path: str | None = None) -> None:
        self.events.emit(
            object_ref(obj, field_path), "Warning", reason, message, self.component, self.host
        )

    def on(self, host: str) -> Recorder:
        """The same component on ``host`` (a kubelet's node)."""
        return Recorder(self.events, self.component, host)
