"""The simulated cluster's runtime: one work queue, the indexes its controllers share,
and the only way they write (the REST layer).

Like the built-in controllers (``apiserver.controllers``), the simulation subscribes to
storage events synchronously (an index update and a queue insertion each, nothing else),
and one asyncio task works the queue: each item is a (controller, storage key) pair,
deduplicated while it waits, handled by reading the newest object from the store.
Everything the simulation writes goes through ``ResourceApi``: creates, updates and
deletes with the verbs clients use (so defaults, validation and watch events apply),
status through ``/status``; a Pod's binding, as kube-apiserver's ``pods/binding``
does, sets ``spec.nodeName`` and ``PodScheduled`` directly in storage
(``ResourceApi.write_back``). A write that loses a race is dropped: the change it raced
with queues the object again.

Memory is bounded by what is stored: the queue holds at most one item per (controller,
object), the indexes one entry per object, and each object at most one timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubewerk.apiserver.request import Target
from kubewerk.apiserver.simulate.clock import Clock, SystemClock, TimerHandle, rfc3339
from kubewerk.apiserver.simulate.config import SimulationConfig
from kubewerk.apiserver.simulate.events import Events
from kubewerk.apiserver.simulate.fit import NodeUse, is_finished, pod_requests
from kubewerk.apiserver.storage.base import Event, KeyNotFound, RevisionConflict
from kubewerk.core.errors import ApiError
from kubewerk.core.jsoncopy import copy_json

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer
    from kubewerk.apiserver.registry import ServedResource

JSON = dict[str, Any]

CONTROLLER_MANAGER = "kube-controller-manager"
"""The field manager of the simulated controllers' writes (a cluster's controllers write
with kube-controller-manager's User-Agent, which names their managedFields entries)."""
KUBELET = "kubelet"
"""The field manager of the simulated kubelets' writes (Node, its Lease, Pod status)."""
SCHEDULER = "kube-scheduler"
"""The field manager of the scheduler's status write to a Pod it cannot place."""
log = logging.getLogger("kubewerk.apiserver.simulate")

# storage key prefix -> controller queue name
_PREFIX_CONTROLLER = {
    "/core/pods/": "pod",
    "/apps/replicasets/": "replicaset",
    "/apps/deployments/": "deployment",
    "/apps/statefulsets/": "statefulset",
    "/apps/daemonsets/": "daemonset",
    "/batch/jobs/": "job",
    "/batch/cronjobs/": "cronjob",
    "/core/services/": "service",
    "/core/nodes/": "node",
    "/core/persistentvolumeclaims/": "pvc",
    "/policy/poddisruptionbudgets/": "pdb",
}
# owner kind (ownerReferences) -> (storage prefix, controller)
_OWNER_KINDS = {
    ("apps/v1", "ReplicaSet"): ("/apps/replicasets/", "replicaset"),
    ("apps/v1", "Deployment"): ("/apps/deployments/", "deployment"),
    ("apps/v1", "StatefulSet"): ("/apps/statefulsets/", "statefulset"),
    ("apps/v1", "DaemonSet"): ("/apps/daemonsets/", "daemonset"),
    ("batch/v1", "Job"): ("/batch/jobs/", "job"),
    ("batch/v1", "CronJob"): ("/batch/cronjobs/", "cronjob"),
}

Handler = Callable[[str], None]


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a storage key (namespace "" for cluster-scoped objects)."""
    parts = key.split("/", 4)
    return parts[3], parts[4]


def controller_ref(obj: JSON) -> JSON | None:
    """The ownerReference with ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owner_ref(owner: JSON, api_version: str, kind: str) -> JSON:
    """The controller ownerReference a workload controller puts on what it makes."""
    meta = owner["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


class Engine:
    """The shared machinery of the simulated cluster (see the module docstring)."""

    def __init__(self, server: ApiServer, config: SimulationConfig) -> None:
        self.server = server
        self.api = server.api
        self.store = server.store
        self.registry = server.registry
        self.config = config
        self.clock: Clock = config.clock or SystemClock()
        self.handlers: dict[str, Handler] = {}
        self._pending: dict[tuple[str, str], None] = {}
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._timers: dict[tuple[str, str], TimerHandle] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self.stopped = False
        # indexes
        self.children: dict[str, set[str]] = {}
        """owner uid -> storage keys of objects with an ownerReference to it"""
        self.node_use: dict[str, NodeUse] = {}
        self._pod_place: dict[str, tuple[str, Any]] = {}
        self.unschedulable: dict[str, None] = {}
        """Pods the scheduler could not place (tried again when room may have appeared)"""
        self.retried: set[str] = set()
        """unschedulable Pods queued for another attempt (not for their own status write)"""
        self.writes = 0
        self.services: dict[str, set[str]] = {}
        """namespace -> storage keys of its Services"""
        self.event_hooks: list[Callable[[Event], None]] = []
        self.budgets: dict[str, set[str]] = {}
        """namespace -> storage keys of its PodDisruptionBudgets"""
        self.events = Events(self)
        """the simulated components' event sink (``events``)"""

    # -- wiring -------------------------------------------------------------------

    def subscribe(self) -> None:
        self._unsubscribe = self.store.subscribe(self._on_event)

    def bootstrap(self) -> None:
        """Index and queue what storage already holds (a restart over a durable store)."""
        for prefix in (*_PREFIX_CONTROLLER, "/storage.k8s.io/storageclasses/"):
            for key, obj in self.items_under(prefix):
                self._on_event(Event("ADDED", key, 0, obj, None))

    def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kubewerk-simulate")
        if self._pending:
            self._wakeup.set()

    async def stop(self) -> None:
        self.stopped = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def enqueue(self, controller: str, key: str) -> None:
        if self.stopped:
            return
        self._pending[(controller, key)] = None
        if self._wakeup is not None:
            self._wakeup.set()

    def after(self, delay: float, controller: str, key: str) -> None:
        """Queue (controller, key) in ``delay`` seconds of the clock (one timer per pair:
        a new one replaces the old)."""
        if self.stopped:
            return
        pair = (controller, key)
        old = self._timers.pop(pair, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            self._timers.pop(pair, None)
            self.enqueue(controller, key)

        self._timers[pair] = self.clock.call_later(delay, fire)

    def has_timer(self, controller: str, key: str) -> bool:
        return (controller, key) in self._timers

    @property
    def idle(self) -> bool:
        """Nothing queued (timers may still be waiting)."""
        return not self._pending

    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            done = 0
            while self._pending:
                pair = next(iter(self._pending))
                del self._pending[pair]
                handler = self.handlers.get(pair[0])
                if handler is not None:
                    try:
                        handler(pair[1])
                    except Exception:
                        log.exception("simulated %s controller failed on %s", *pair)
                done += 1
                if done % 8 == 0:
                    await asyncio.sleep(0)  # let requests in between
            await asyncio.sleep(0)

    # -- events ---------------------------------------------------------------------

    def _on_event(self, ev: Event) -> None:
        key = ev.key
        obj = None if ev.type == "DELETED" else ev.obj
        self._index_owners(key, obj, ev.prev if ev.type != "DELETED" else ev.obj)
        prefix = key[: key.index("/", key.index("/", 1) + 1) + 1]
        controller = _PREFIX_CONTROLLER.get(prefix)
        if controller == "pod":
            self._index_pod(key, obj)
        if controller is not None:
            self.enqueue(controller, key)
        source = ev.obj
        ref = controller_ref(source)
        if ref is not None:
            owner = _OWNER_KINDS.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
            if owner is not None:
                ns = (source.get("metadata") or {}).get("namespace") or ""
                self.enqueue(owner[1], f"{owner[0]}{ns}/{ref.get('name')}")
        if controller == "pod":
            ns = (source.get("metadata") or {}).get("namespace") or ""
            for svc_key in self.service_keys(ns):
                self.enqueue("service", svc_key)
            for pdb_key in self.budgets.get(ns, ()):
                self.enqueue("pdb", pdb_key)
        elif controller == "node":
            for ds_key in self.keys_under("/apps/daemonsets/"):
                self.enqueue("daemonset", ds_key)
            self.retry_unschedulable()
        elif prefix == "/storage.k8s.io/storageclasses/":
            for pvc_key in self.keys_under("/core/persistentvolumeclaims/"):
                self.enqueue("pvc", pvc_key)
        elif controller == "service":
            ns, _ = split_key(key)
            if obj is None:
                self.services.get(ns, set()).discard(key)
            else:
                self.services.setdefault(ns, set()).add(key)
        elif controller == "pdb":
            ns, _ = split_key(key)
            if obj is None:
                self.budgets.get(ns, set()).discard(key)
            else:
                self.budgets.setdefault(ns, set()).add(key)
        for extra in self.event_hooks:
            extra(ev)

    def _index_owners(self, key: str, obj: JSON | None, prev: JSON | None) -> None:
        def uids(o: JSON | None) -> set[str]:
            if not o:
                return set()
            refs = (o.get("metadata") or {}).get("ownerReferences") or []
            return {str(r.get("uid")) for r in refs if isinstance(r, dict) and r.get("uid")}

        new, old = uids(obj), uids(prev)
        for uid in old - new:
            keys = self.children.get(uid)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.children[uid]
        for uid in new:
            self.children.setdefault(uid, set()).add(key)

    def _index_pod(self, key: str, pod: JSON | None) -> None:
        """Keep each node's allocated requests: bound, unfinished Pods count."""
        place = None
        if pod is not None and not is_finished(pod):
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                place = (node, pod_requests(pod))
        old = self._pod_place.pop(key, None)
        if old is not None:
            self.node_use.setdefault(old[0], NodeUse()).add(old[1], -1)
        if place is not None:
            self._pod_place[key] = place
            self.node_use.setdefault(place[0], NodeUse()).add(place[1])
        if old is not None and place is None:
            self.retry_unschedulable()  # room was freed
        if pod is None:
            self.unschedulable.pop(key, None)
            self.retried.discard(key)

    def pods_on_node(self, node: str) -> list[str]:
        """Storage keys of the unfinished Pods bound to ``node``."""
        return sorted(k for k, (name, _) in self._pod_place.items() if name == node)

    def retry_unschedulable(self) -> None:
        """Queue the Pods the scheduler could not place (something changed that may
        make room): each is a new scheduling attempt."""
        for key in list(self.unschedulable):
            self.retried.add(key)
            self.enqueue("pod", key)

    # -- reads ------------------------------------------------------------------------

    def rtype(self, group: str, resource: str) -> ServedResource | None:
        return self.registry.get(group, resource)

    def get(self, key: str) -> JSON | None:
        return self.store.get(key)

    def keys_under(self, prefix: str) -> list[str]:
        items, _, _ = self.store.list(prefix)
        return [k for k, _ in items]

    def items_under(self, prefix: str) -> list[tuple[str, JSON]]:
        items, _, _ = self.store.list(prefix)
        return list(items)

    def service_keys(self, namespace: str) -> list[str]:
        return sorted(self.services.get(namespace, ()))

    def owned(self, owner: JSON, prefix: str) -> list[tuple[str, JSON]]:
        """Objects under ``prefix`` whose controller ownerReference is ``owner``."""
        uid = owner["metadata"].get("uid")
        out = []
        for key in sorted(self.children.get(uid, ())):
            if not key.startswith(prefix):
                continue
            obj = self.store.get(key)
            if obj is None:
                continue
            ref = controller_ref(obj)
            if ref is not None and ref.get("uid") == uid:
                out.append((key, obj))
        return out

    def now(self) -> str:
        return rfc3339(self.clock.now())

    # -- writes ---------------------------------------------------------------------------

    def _target(self, key: str, subresource: str | None = None) -> Target | None:
        target = self.api.target_for_key(key)
        if target is None:
            return None
        target.subresource = subresource
        return target

    def create(
        self,
        group: str,
        resource: str,
        namespace: str | None,
        body: JSON,
        manager: str = CONTROLLER_MANAGER,
    ) -> JSON | None:
        """Create through the REST layer as field manager ``manager``; None when the kind
        is not served or the write is refused (logged) or exists."""
        rtype = self.registry.get(group, resource)
        if rtype is None:
            return None
        target = Target(rtype, rtype.storage_version, namespace if rtype.namespaced else None)
        try:
            self.writes += 1
            return self.api.create(target, body, {"fieldManager": manager}).body
        except ApiError as exc:
            if exc.code != 409:
                log.warning(
                    "simulation: create of %s %s/%s refused: %s",
                    rtype.kind,
                    namespace or "",
                    (body.get("metadata") or {}).get("name")
                    or (body.get("metadata") or {}).get("generateName"),
                    exc.message,
                )
            return None

    def update(
        self, key: str, obj: JSON, status: bool = False, manager: str = CONTROLLER_MANAGER
    ) -> JSON | None:
        """Update ``obj`` (a changed copy of the stored object, with its resourceVersion)
        through the main endpoint or ``/status``, as field manager ``manager``; None if it
        raced (the racing change requeues it), is gone, or was refused (logged)."""
        target = self._target(key, "status" if status else None)
        if target is None:
            return None
        _ns, name = split_key(key)
        target.name = name
        try:
            self.writes += 1
            return self.api.update(target, obj, {"fieldManager": manager}).body
        except ApiError as exc:
            if exc.code not in (404, 409):
                log.warning("simulation: update of %s refused: %s", key, exc.message)
            return None

    def write_back(self, key: str, obj: JSON) -> bool:
        """A storage-level write (``pods/binding``, the node lifecycle controller's
        pod marks); False if it raced or the object is gone."""
        try:
            self.writes += 1
            self.api.write_back(key, obj)
            return True
        except (KeyNotFound, RevisionConflict):
            return False

    def delete(self, key: str, options: JSON | None = None) -> bool:
        target = self._target(key)
        if target is None:
            return False
        target.name = split_key(key)[1]
        try:
            self.writes += 1
            self.api.delete(target, options or {}, {})
            return True
        except ApiError as exc:
            if exc.code not in (404, 409):
                log.warning("simulation: delete of %s refused: %s", key, exc.message)
            return False


def changed_copy(obj: JSON) -> JSON:
    """A copy to change and write back (it keeps the resourceVersion it was read at)."""
    copied: JSON = copy_json(obj)
    return copied


def set_condition(
    conditions: list[JSON],
    ctype: str,
    status: str,
    reason: str | None,
    message: str | None,
    now: str,
    *,
    probe_times: bool = False,
    update_time: bool = False,
) -> list[JSON]:
    """``conditions`` with ``ctype`` set: lastTransitionTime kept while the status stays;
    an unchanged condition is left exactly as it was. ``probe_times`` adds
    ``lastProbeTime: null`` (Pod conditions); ``update_time`` ``lastUpdateTime``
    (Deployment conditions)."""
    out = []
    old = None
    for cond in conditions:
        if cond.get("type") == ctype:
            old = cond
        else:
            out.append(cond)
    if (
        old is not None
        and old.get("status") == status
        and old.get("reason") == reason
        and old.get("message") == message
    ):
        return conditions
    new: JSON = {"type": ctype, "status": status}
    if probe_times:
        new["lastProbeTime"] = None
    if update_time:
        new["lastUpdateTime"] = now
    new["lastTransitionTime"] = (
        old["lastTransitionTime"]
        if old is not None and old.get("status") == status and old.get("lastTransitionTime")
        else now
    )
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    if old is not None:
        index = conditions.index(old)
        return [*conditions[:index], new, *conditions[index + 1 :]]
    out.append(new)
    return out


def get_condition(obj: JSON, ctype: str) -> JSON | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == ctype:
            return cond
    return None


def is_pod_ready(pod: JSON) -> bool:
    cond = get_condition(pod, "Ready")
    return cond is not None and cond.get("status") == "True"


def is_active(pod: JSON) -> bool:
    """``controller.IsPodActive``: not finished and not being deleted."""
    return not is_finished(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")
