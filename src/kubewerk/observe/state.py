"""The dashboard's picture of a cluster: the watched kinds, their objects, the Events
about them, ownership and the dependency graph, kept as changes arrive.

:class:`ClusterState` is plain data fed by :mod:`kubewerk.observe.watcher` (or, once,
by :func:`kubewerk.observe.watcher.snapshot`); it does no I/O. Guarantees:

- :meth:`ClusterState.replace` (a full list) and :meth:`ClusterState.apply` (one watch
  event) leave the objects, the owner index (uid → children) and the
  :class:`~kubewerk.lifecycle.depgraph.InstanceGraph` consistent with each other: an
  object's edges are the names its kind's refs (from the CRD's ``kubewerk.dev/references``
  annotation) hold in it, as the lifecycle kernel reads them;
- every change bumps :attr:`ClusterState.version` and wakes every waiter of
  :meth:`ClusterState.wait_change`;
- Events are kept per regarding object (the newest :data:`EVENTS_PER_OBJECT`), in both
  the ``v1`` and the ``events.k8s.io/v1`` shape; memory is bounded by the Events the
  cluster keeps (kube deletes them after an hour by default).

The views (:mod:`kubewerk.observe.views`) read it; nothing here formats for display.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from kubewerk.client.resources import ResourceType
from kubewerk.core.gvk import split_api_version
from kubewerk.lifecycle.depgraph import Edge, InstanceGraph, NodeId
from kubewerk.model.ref_fields import RefField
from kubewerk.observe.resourcenames import ServedResource

__all__ = [
    "EVENTS_PER_OBJECT",
    "ClusterState",
    "EventRecord",
    "KindInfo",
    "KindKey",
    "node_of",
]

EVENTS_PER_OBJECT: Final = 20


class KindKey(NamedTuple):
    """A kind by group and name."""

    group: str
    kind: str

    @property
    def label(self) -> str:
        """``Kind.group`` (``Kind`` for the core group)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass(slots=True)
class KindInfo:
    """One watched kind: how to reach it and the refs its objects hold."""

    rt: ResourceType
    refs: tuple[RefField, ...] = ()
    error: str | None = None
    """Why its objects could not be read (403 for a role without list), else None."""

    @property
    def key(self) -> KindKey:
        """Its :class:`KindKey`."""
        return KindKey(self.rt.group, self.rt.kind)

    def refs_for(self, version: str) -> tuple[RefField, ...]:
        """The refs that apply to objects read in ``version``."""
        return tuple(r for r in self.refs if r.version in (None, version))


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One Event about an object, in either API shape."""

    type: str
    reason: str
    message: str
    time: str
    """The newest timestamp the Event carries (RFC 3339), or empty."""
    count: int
    source: str
    action: str

    def to_json(self) -> dict[str, Any]:
        """Its fields as a JSON object."""
        return {
            "type": self.type,
            "reason": self.reason,
            "message": self.message,
            "time": self.time,
            "count": self.count,
            "source": self.source,
            "action": self.action,
        }


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def node_of(info: KindInfo, obj: dict[str, Any]) -> NodeId | None:
    """The graph node of ``obj`` of kind ``info`` (None without a string name)."""
    meta = _mapping(obj.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = _str(meta.get("namespace")) or None if info.rt.namespaced else None
    return NodeId(info.rt.group, info.rt.kind, namespace, name)


def _event_record(ev: dict[str, Any]) -> tuple[NodeId, EventRecord] | None:
    regarding = _mapping(ev.get("regarding") or ev.get("involvedObject"))
    kind, name = regarding.get("kind"), regarding.get("name")
    if not isinstance(kind, str) or not isinstance(name, str) or not name:
        return None
    group = split_api_version(_str(regarding.get("apiVersion"))).group
    node = NodeId(group, kind, _str(regarding.get("namespace")) or None, name)
    series = _mapping(ev.get("series"))
    times = [
        _str(series.get("lastObservedTime")),
        _str(ev.get("lastTimestamp") or ev.get("deprecatedLastTimestamp")),
        _str(ev.get("eventTime")),
        _str(ev.get("firstTimestamp") or ev.get("deprecatedFirstTimestamp")),
        _str(_mapping(ev.get("metadata")).get("creationTimestamp")),
    ]
    # RFC 3339 times of one zone compare as text once the fraction is cut off
    when = max((t[:19] + "Z" for t in times if len(t) >= 19), default="")
    count_value = series.get("count") or ev.get("count") or ev.get("deprecatedCount") or 1
    source = _str(ev.get("reportingController") or ev.get("reportingComponent"))
    if not source:
        source = _str(_mapping(ev.get("source") or ev.get("deprecatedSource")).get("component"))
    record = EventRecord(
        type=_str(ev.get("type")) or "Normal",
        reason=_str(ev.get("reason")),
        message=_str(ev.get("note") if "note" in ev else ev.get("message")),
        time=when,
        count=count_value if isinstance(count_value, int) else 1,
        source=source,
        action=_str(ev.get("action")),
    )
    return node, record


@dataclass
class ClusterState:
    """See the module doc. ``name`` is what the dashboard calls the cluster."""

    name: str = "cluster"
    kinds: dict[KindKey, KindInfo] = field(default_factory=dict)
    objects: dict[KindKey, dict[NodeId, dict[str, Any]]] = field(default_factory=dict)
    graph: InstanceGraph = field(default_factory=InstanceGraph)
    events: dict[NodeId, deque[tuple[str, EventRecord]]] = field(default_factory=dict)
    """Per object: (the Event's uid or name, its record), oldest first."""
    children: dict[str, set[NodeId]] = field(default_factory=dict)
    """Owner uid → the watched objects that name it in ownerReferences."""
    uids: dict[str, NodeId] = field(default_factory=dict)
    version: int = 0
    health_cache: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """id(object) → (the object, its phase, Ready, stuck reasons): the views' memo; an
    entry is dropped when its object is replaced or forgotten."""
    served: tuple[ServedResource, ...] = ()
    """Every resource the server serves, from discovery, in kubectl's priority order (what
    a typed kind name is resolved against); empty when not read — then the watched kinds
    stand in for it."""
    _waiters: list[asyncio.Future[None]] = field(default_factory=list)

    # -- kinds -----------------------------------------------------------------------------

    def set_kind(self, info: KindInfo) -> None:
        """Add a kind or update its refs (its objects' edges are recomputed)."""
        key = info.key
        self.kinds[key] = info
        objects = self.objects.setdefault(key, {})
        for node, obj in objects.items():
            self._set_edges(info, node, obj)
        self._bump()

    def remove_kind(self, key: KindKey) -> None:
        """Forget a kind (its CRD was deleted) and its objects."""
        for node, obj in list(self.objects.get(key, {}).items()):
            self._forget(node, obj)
        self.objects.pop(key, None)
        self.kinds.pop(key, None)
        self._bump()

    def kind_error(self, key: KindKey, error: str | None) -> None:
        """Record why a kind's objects cannot be read (None: they can again)."""
        info = self.kinds.get(key)
        if info is not None and info.error != error:
            info.error = error
            self._bump()

    # -- objects ---------------------------------------------------------------------------

    def replace(self, key: KindKey, items: list[dict[str, Any]]) -> None:
        """A full list of kind ``key``: objects absent from it are gone."""
        info = self.kinds.get(key)
        if info is None:
            return
        old = self.objects.get(key, {})
        fresh: dict[NodeId, dict[str, Any]] = {}
        for obj in items:
            node = node_of(info, obj)
            if node is not None:
                fresh[node] = obj
        for node, obj in old.items():
            if node not in fresh:
                self._forget(node, obj)
        self.objects[key] = fresh
        for node, obj in fresh.items():
            self._index(info, node, obj, old.get(node))
        self._bump()

    def apply(self, key: KindKey, event_type: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED) of kind ``key``."""
        info = self.kinds.get(key)
        if info is None:
            return
        node = node_of(info, obj)
        if node is None:
            return
        objects = self.objects.setdefault(key, {})
        previous = objects.get(node)
        if event_type == "DELETED":
            if previous is not None:
                del objects[node]
                self._forget(node, previous)
        elif event_type in ("ADDED", "MODIFIED"):
            objects[node] = obj
            self._index(info, node, obj, previous)
        else:
            return
        self._bump()

    def get(self, node: NodeId) -> dict[str, Any] | None:
        """The object at ``node`` if its kind is watched and it is there."""
        return self.objects.get(KindKey(node.group, node.kind), {}).get(node)

    def watched(self, group: str, kind: str) -> bool:
        """Whether objects of this kind are watched (absence then means missing)."""
        return KindKey(group, kind) in self.kinds

    # -- events ----------------------------------------------------------------------------

    def apply_event(self, event_type: str, ev: dict[str, Any]) -> None:
        """One Event object (from a list or a watch)."""
        found = _event_record(ev)
        if found is None:
            return
        node, record = found
        meta = _mapping(ev.get("metadata"))
        ident = _str(meta.get("uid")) or _str(meta.get("name"))
        kept = self.events.get(node)
        if event_type == "DELETED":
            if kept is not None:
                remaining = [(i, r) for i, r in kept if i != ident]
                self.events[node] = deque(remaining, maxlen=EVENTS_PER_OBJECT)
            return
        if kept is None:
            kept = self.events[node] = deque(maxlen=EVENTS_PER_OBJECT)
        entries = [(i, r) for i, r in kept if i != ident]
        entries.append((ident, record))
        entries.sort(key=lambda e: e[1].time)
        self.events[node] = deque(entries[-EVENTS_PER_OBJECT:], maxlen=EVENTS_PER_OBJECT)
        self._bump()

    def replace_events(self, items: list[dict[str, Any]]) -> None:
        """A full list of Events."""
        records: list[tuple[NodeId, str, EventRecord]] = []
        for ev in items:
            found = _event_record(ev)
            if found is not None:
                meta = _mapping(ev.get("metadata"))
                ident = _str(meta.get("uid")) or _str(meta.get("name"))
                records.append((found[0], ident, found[1]))
        records.sort(key=lambda e: e[2].time)
        self.events.clear()
        for node, ident, record in records:
            self.events.setdefault(node, deque(maxlen=EVENTS_PER_OBJECT)).append((ident, record))
        self._bump()

    def events_of(self, node: NodeId) -> list[EventRecord]:
        """The Events kept about ``node``, newest last."""
        return [r for _i, r in self.events.get(node, ())]

    # -- changes ---------------------------------------------------------------------------

    async def wait_change(self, after: int, timeout: float) -> int:
        """Wait until :attr:`version` is past ``after`` (or ``timeout`` seconds);
        answers the version then."""
        if self.version > after:
            return self.version
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), timeout)
        except TimeoutError:
            pass
        finally:
            if fut in self._waiters:
                self._waiters.remove(fut)
        return self.version

    # -- internals -------------------------------------------------------------------------

    def _bump(self) -> None:
        self.version += 1
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _set_edges(self, info: KindInfo, node: NodeId, obj: dict[str, Any]) -> None:
        version = split_api_version(_str(obj.get("apiVersion"))).version or info.rt.version
        edges: list[Edge] = []
        for ref in info.refs_for(version):
            for name, namespace in ref.names(obj):
                target_ns = (namespace or node.namespace) if ref.namespaced else None
                edges.append(
                    Edge(
                        NodeId(ref.group, ref.kind, target_ns, name), ref.field_path, ref.on_delete
                    )
                )
        if edges or node in self.graph:
            self.graph.set_edges(node, edges)

    def _index(
        self, info: KindInfo, node: NodeId, obj: dict[str, Any], previous: dict[str, Any] | None
    ) -> None:
        if previous is not None:
            self.health_cache.pop(id(previous), None)
            self._unown(node, previous)
        meta = _mapping(obj.get("metadata"))
        uid = _str(meta.get("uid"))
        if uid:
            self.uids[uid] = node
        for owner in meta.get("ownerReferences") or []:
            owner_uid = _str(_mapping(owner).get("uid"))
            if owner_uid:
                self.children.setdefault(owner_uid, set()).add(node)
        self._set_edges(info, node, obj)

    def _unown(self, node: NodeId, obj: dict[str, Any]) -> None:
        meta = _mapping(obj.get("metadata"))
        uid = _str(meta.get("uid"))
        if uid and self.uids.get(uid) == node:
            del self.uids[uid]
        for owner in meta.get("ownerReferences") or []:
            owner_uid = _str(_mapping(owner).get("uid"))
            kids = self.children.get(owner_uid)
            if kids is not None:
                kids.discard(node)
                if not kids:
                    del self.children[owner_uid]

    def _forget(self, node: NodeId, obj: dict[str, Any]) -> None:
        self.health_cache.pop(id(obj), None)
        self._unown(node, obj)
        if node in self.graph:
            self.graph.remove(node)
