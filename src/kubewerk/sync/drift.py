"""Drift detection: :class:`DriftController` (``kubewerk sync --watch``).

For each target cluster the controller list-watches every kind the source holds and
compares each synced object with the source as it changes (the same semantic comparison
as ``kubewerk diff``: server-managed fields ignored, defaults applied, list types and
quantities by value). An object drifted when it differs from the source or was deleted.
Each change of the drifted set is reported three ways:

- the cluster's :data:`SYNC_TARGET_CRD` object (``SyncTarget`` ``sync.kubewerk.dev/v1alpha1``,
  cluster-scoped, named ``target_name``, created if missing) gets a ``Drifted`` condition
  in its status (``True`` with reason ``ObjectsDrifted`` and the drifted objects named in
  the message and in ``status.driftedObjects``; ``False`` / ``InSync`` when none);
- an ``events.k8s.io/v1`` Event (reason ``Drifted``, Warning) regarding the object, and
  a ``Healed`` (Normal) one when self-heal reverted it;
- the gauge ``kubewerk_drift_objects{cluster,kind}``.

With ``self_heal`` the object is synced again at once under the policy (``git-wins``:
the source's state is put back; ``merge``: only the source's own changes are). A watch
that breaks is resumed (and relisted on 410) by :func:`kubewerk.client.watch.list_watch`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from kubewerk.client import Client, ResourceType
from kubewerk.client.errors import (
    AlreadyExists,
    ApiError,
    Forbidden,
    NotFound,
    ServerUnreachable,
)
from kubewerk.client.watch import Listed, list_watch
from kubewerk.runtime.events import EventRecorder
from kubewerk.sync.apply import Policy, same_in_cluster
from kubewerk.sync.compare import key_of_group, prepare_schemas
from kubewerk.sync.engine import _sync_object, place_manifests
from kubewerk.sync.keys import GroupKind, ObjectKey
from kubewerk.sync.schemas import KindSchemas
from kubewerk.sync.sources import _CRD_RT, ClusterSource, Entry, Source

__all__ = ["SYNC_TARGET", "SYNC_TARGET_CRD", "DriftController", "run_drift"]

log = logging.getLogger("kubewerk.sync.drift")

SYNC_TARGET: Final = ResourceType(
    "sync.kubewerk.dev", "v1alpha1", "SyncTarget", "synctargets", False
)
SYNC_TARGET_CRD: Final[dict[str, Any]] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "synctargets.sync.kubewerk.dev"},
    "spec": {
        "group": "sync.kubewerk.dev",
        "scope": "Cluster",
        "names": {
            "plural": "synctargets",
            "singular": "synctarget",
            "kind": "SyncTarget",
            "listKind": "SyncTargetList",
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {
                        "name": "Drifted",
                        "type": "string",
                        "jsonPath": '.status.conditions[?(@.type=="Drifted")].status',
                    },
                    {"name": "Objects", "type": "integer", "jsonPath": ".status.driftedCount"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "source": {"type": "string"},
                                    "policy": {"type": "string"},
                                    "selfHeal": {"type": "boolean"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "driftedCount": {"type": "integer"},
                                    "driftedObjects": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                    },
                                    "conditions": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["type"],
                                        "items": {
                                            "type": "object",
                                            "required": ["type", "status"],
                                            "properties": {
                                                "type": {"type": "string"},
                                                "status": {"type": "string"},
                                                "reason": {"type": "string"},
                                                "message": {"type": "string"},
                                                "lastTransitionTime": {
                                                    "type": "string",
                                                    "format": "date-time",
                                                },
                                                "observedGeneration": {"type": "integer"},
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}
"""The ``SyncTarget`` CRD the controller installs in each target cluster."""

_MAX_LISTED: Final = 20


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Target:
    """One cluster's watches and drift state."""

    def __init__(self, ctl: DriftController, cluster: ClusterSource) -> None:
        self.ctl = ctl
        self.cluster = cluster
        self.client: Client = cluster.client
        self.schemas = KindSchemas()
        self.desired: dict[ObjectKey, Entry] = {}
        self.drifted: dict[ObjectKey, str] = {}
        self.recorder = EventRecorder(self.client, "kubewerk-sync")
        self.changed = asyncio.Event()
        self._reported: dict[ObjectKey, str] | None = None
        self.has_sync_target = False
        self._kinds_seen: set[str] = set()

    async def prepare(self, source: Source, entries: list[Entry]) -> None:
        """Read the kind knowledge and place the source's manifests for this target
        (:func:`~kubewerk.sync.engine.place_manifests`: SourceError when one is refused);
        nothing is written."""
        live = [Entry(crd) for crd in await self.cluster.crds() or ()]
        self.schemas = await prepare_schemas(source, entries, self.cluster, live)
        self.desired = place_manifests(source, entries, self.schemas, self.cluster)

    async def begin(self) -> None:
        """Install the SyncTarget (CRD and object) and report the starting state. A user
        who may not install it (403) gets a warning on the cluster source and drift
        reported without it (Events, the gauge, ``run_drift``'s lines)."""
        self.has_sync_target = await self._ensure_sync_target()
        self.changed.set()  # report the starting state (in sync until a check says not)

    async def _ensure_sync_target(self) -> bool:
        """Whether the SyncTarget object is there to report on (False, with a warning,
        when this user may not create its CRD and it is not installed, or may not write
        the object)."""
        try:
            with contextlib.suppress(AlreadyExists):
                await self.client.create(SYNC_TARGET_CRD)
        except Forbidden:
            try:  # installed by someone allowed to: use it
                await self.client.resolve(SYNC_TARGET.api_version, "SyncTarget")
            except NotFound:
                self.cluster.warn(
                    "may not create the SyncTarget CRD (403 Forbidden), and it is not "
                    "installed: drift is reported without a SyncTarget"
                )
                return False
        else:
            await self._wait_established()
        body = {
            "apiVersion": SYNC_TARGET.api_version,
            "kind": "SyncTarget",
            "metadata": {"name": self.ctl.target_name},
            "spec": {
                "source": self.ctl.source.name,
                "policy": self.ctl.policy,
                "selfHeal": self.ctl.self_heal,
            },
        }
        try:
            try:
                await self.client.create(body)
            except AlreadyExists:
                await self.client.patch(SYNC_TARGET, self.ctl.target_name, {"spec": body["spec"]})
        except Forbidden:
            self.cluster.warn(
                f"may not write SyncTarget {self.ctl.target_name} (403 Forbidden): drift is "
                "reported without a SyncTarget"
            )
            return False
        return True

    async def _wait_established(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while True:
            crd = await self.client.get(_CRD_RT, SYNC_TARGET_CRD["metadata"]["name"])
            conds = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                break
            if loop.time() > deadline:
                raise TimeoutError("the SyncTarget CRD did not become Established")
            await asyncio.sleep(0.05)
        self.client.forget_discovery()

    async def check(self, key: ObjectKey, live: Mapping[str, Any] | None) -> None:
        """Compare one object with the source; heal it under self-heal."""
        entry = self.desired.get(key)
        if entry is None:
            return
        if live is None:
            reason = "deleted from the cluster"
        else:
            try:
                same = await same_in_cluster(
                    self.client, live, entry.obj, self.schemas, check_record=False
                )
            except ApiError as exc:
                log.warning("drift check of %s failed: %s", key, exc)
                return
            reason = "" if same else "differs from the source"
        if not reason:
            self._set(key, "")
            return
        if key not in self.drifted:
            self.recorder.event(
                live or entry.obj,
                "Warning",
                "Drifted",
                f"{key} {reason} ({self.ctl.source.name})",
                action="DetectDrift",
            )
        self._set(key, reason)
        if self.ctl.self_heal:
            result = await _sync_object(
                self.cluster,
                key,
                entry.obj,
                dict(live) if live else None,
                self.ctl.policy,
                self.schemas,
                False,
            )
            if result.action in ("created", "updated"):
                self.recorder.event(
                    live or entry.obj,
                    "Normal",
                    "Healed",
                    f"{key} put back to the source's state ({self.ctl.policy})",
                    action="SelfHeal",
                )
                self.ctl.healed += 1

    def _set(self, key: ObjectKey, reason: str) -> None:
        before = self.drifted.get(key)
        if reason:
            self.drifted[key] = reason
        else:
            self.drifted.pop(key, None)
        if before != (reason or None):
            self.changed.set()

    async def watch_kind(self, gk: GroupKind, api_version: str) -> None:
        try:
            rt = await self.client.resolve(api_version, gk.kind)
        except NotFound:
            return
        wanted = {k for k in self.desired if k.group_kind == gk}
        # a target narrowed to a namespace holds every wanted object of a namespaced kind
        # there (place_manifests refuses the others), so only that namespace is watched
        # (and only that namespace's rights are needed, as with kubectl -n)
        namespace = self.cluster.namespace if rt.namespaced else None
        async for ev in list_watch(self.client, rt, namespace):
            if isinstance(ev, Listed):
                seen: set[ObjectKey] = set()
                for obj in ev.items:
                    obj.setdefault("apiVersion", rt.api_version)
                    obj.setdefault("kind", rt.kind)
                    key = self._key(obj, rt)
                    if key in wanted:
                        seen.add(key)
                        await self.check(key, obj)
                for key in wanted - seen:
                    await self.check(key, None)
                continue
            if ev.type not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            obj = dict(ev.object)
            obj.setdefault("apiVersion", rt.api_version)
            obj.setdefault("kind", rt.kind)
            key = self._key(obj, rt)
            if key in wanted:
                await self.check(key, None if ev.type == "DELETED" else obj)

    @staticmethod
    def _key(obj: Mapping[str, Any], rt: ResourceType) -> ObjectKey:
        meta = obj.get("metadata") or {}
        return ObjectKey(
            rt.group,
            rt.kind,
            str(meta.get("namespace") or "") if rt.namespaced else "",
            str(meta.get("name", "")),
        )

    async def report(self) -> None:
        """Write the drifted set to the gauge and the SyncTarget status (on change)."""
        while True:
            await self.changed.wait()
            self.changed.clear()
            snapshot = dict(self.drifted)
            if snapshot == self._reported:
                continue
            self._update_gauge(snapshot)
            if not self.has_sync_target:
                self._reported = snapshot
                continue
            try:
                await self._write_status(snapshot)
            except (ApiError, ServerUnreachable) as exc:
                log.warning("cannot write SyncTarget status to %s: %s", self.cluster.name, exc)
                await asyncio.sleep(1)
                self.changed.set()
                continue
            self._reported = snapshot

    def _update_gauge(self, snapshot: Mapping[ObjectKey, str]) -> None:
        per_kind: dict[str, int] = {}
        for key in snapshot:
            per_kind[str(key.group_kind)] = per_kind.get(str(key.group_kind), 0) + 1
        for kind in self._kinds_seen | set(per_kind):
            self.ctl.gauge.labels(cluster=self.cluster.name, kind=kind).set(per_kind.get(kind, 0))
        self._kinds_seen |= set(per_kind)

    async def _write_status(self, snapshot: Mapping[ObjectKey, str]) -> None:
        names = [f"{k} ({r})" for k, r in sorted(snapshot.items())]
        drifted = bool(names)
        message = (
            f"{len(names)} object(s) drifted from {self.ctl.source.name}: "
            + "; ".join(names[:_MAX_LISTED])
            + (" ..." if len(names) > _MAX_LISTED else "")
            if drifted
            else f"every object matches {self.ctl.source.name}"
        )
        current = await self.client.get(SYNC_TARGET, self.ctl.target_name)
        conds = [
            c
            for c in (current.get("status") or {}).get("conditions") or []
            if c.get("type") != "Drifted"
        ]
        old = next(
            (
                c
                for c in (current.get("status") or {}).get("conditions") or []
                if c.get("type") == "Drifted"
            ),
            None,
        )
        status = "True" if drifted else "False"
        cond = {
            "type": "Drifted",
            "status": status,
            "reason": "ObjectsDrifted" if drifted else "InSync",
            "message": message,
            "lastTransitionTime": old["lastTransitionTime"]
            if old and old.get("status") == status
            else _now(),
        }
        await self.client.patch_status(
            SYNC_TARGET,
            self.ctl.target_name,
            {
                "status": {
                    "conditions": [*conds, cond],
                    "driftedCount": len(names),
                    "driftedObjects": [str(k) for k in sorted(snapshot)][:100],
                }
            },
        )


class DriftController:
    """Watches ``targets`` for drift from ``source`` (see the module docstring).

    ``await ctl.start()`` prepares each target (schemas, the SyncTarget CRD and object)
    and starts the watches; ``await ctl.stop()`` cancels them. ``drifted(target)`` is the
    current drifted set of one target (``ObjectKey`` → reason)."""

    def __init__(
        self,
        source: Source,
        targets: Sequence[ClusterSource],
        *,
        policy: Policy = "git-wins",
        self_heal: bool = False,
        target_name: str = "kubewerk-sync",
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self.source = source
        self.policy: Policy = policy
        self.self_heal = self_heal
        self.target_name = target_name
        self.healed = 0
        self.gauge = _gauge(registry)
        self._targets = [_Target(self, t) for t in targets]
        self._tasks: list[asyncio.Task[None]] = []

    def drifted(self, index: int = 0) -> dict[ObjectKey, str]:
        return dict(self._targets[index].drifted)

    async def start(self) -> None:
        entries = await self.source.objects()
        for t in self._targets:  # every manifest placed (and refused) before any write
            await t.prepare(self.source, entries)
        for t in self._targets:
            await t.begin()
            t.recorder.start()
            kinds: dict[GroupKind, str] = {}
            for e in entries:
                kinds.setdefault(
                    GroupKind(key_of_group(e.obj), str(e.obj.get("kind"))),
                    str(e.obj.get("apiVersion")),
                )
            for gk, av in kinds.items():
                self._tasks.append(asyncio.create_task(t.watch_kind(gk, av)))
            self._tasks.append(asyncio.create_task(t.report()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        for t in self._targets:
            await t.recorder.stop()


_GAUGES: dict[int, Gauge] = {}


def _gauge(registry: CollectorRegistry | None) -> Gauge:
    key = id(registry)
    found = _GAUGES.get(key)
    if found is None:
        found = _GAUGES[key] = Gauge(
            "kubewerk_drift_objects",
            "Objects that differ from the sync source, per target cluster and kind.",
            ["cluster", "kind"],
            registry=registry,
        )
    return found


async def run_drift(
    source: Source,
    targets: Sequence[ClusterSource],
    *,
    policy: Policy,
    self_heal: bool,
    metrics_port: int | None = None,
) -> None:
    """``kubewerk sync --watch``: run a :class:`DriftController` until cancelled, printing
    each change of a target's drifted set."""
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr="127.0.0.1")
    ctl = DriftController(source, targets, policy=policy, self_heal=self_heal)
    warned = {w for t in targets for w in t.warnings}
    await ctl.start()
    for t in targets:
        for w in t.warnings:
            if w not in warned:
                warned.add(w)
                print(f"kubewerk: warning: {w}", file=sys.stderr, flush=True)
    print("watching for drift (Ctrl-C stops)", flush=True)
    last: list[dict[ObjectKey, str]] = [{} for _ in targets]
    try:
        while True:
            await asyncio.sleep(0.5)
            for i, t in enumerate(targets):
                now = ctl.drifted(i)
                for key in now.keys() - last[i].keys():
                    print(f"{t.name}: drifted {key}: {now[key]}", flush=True)
                for key in last[i].keys() - now.keys():
                    print(f"{t.name}: in sync {key}", flush=True)
                last[i] = now
    finally:
        await ctl.stop()
