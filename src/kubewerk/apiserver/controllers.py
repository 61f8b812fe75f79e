"""The built-in controllers of the embedded control plane.

- CRDs: establish (names accepted, ``Established``), serve/unserve their resource types,
  clean up instances when a CRD is deleted (``customresourcecleanup`` finalizer).
- Garbage collector: ownerReferences with Background, Foreground (``foregroundDeletion``,
  ``blockOwnerDeletion``) and Orphan (``orphan``) propagation; dependents of absent owners.
- Namespaces: a deleted namespace turns Terminating, its contents are deleted, then the
  ``kubernetes`` finalizer is removed and the namespace goes.
- OpenAPI: when nothing else is queued for ``WARM_QUIET`` seconds after the registry
  changed, the v3 documents and the v2 parts of the changed types are built, one group
  per slice of the event loop, and the v2 document is assembled (kube-apiserver's CRD
  OpenAPI controllers build a CRD's spec when it changes), so ``kubectl`` after a burst
  of CRD changes does not wait for them. Not at each CRD's establishment: measured with
  5,000 CRDs, building each v2 part there cost a quarter of the registration rate
  (583 -> 443 CRDs/s) to save ~2 s on a ``/openapi/v2`` asked for within the first
  seconds after the burst (see benchmarks/README.md, scale).

- Others added with ``add`` (``SubController``) share the queue and task: the
  ServiceAccount tokens controller (``sa_tokens``).

They react to storage events (subscribed synchronously, work queued) and act on one
asyncio task. They read the store and write only through ``ResourceApi``: deletes and
the create of a namespace's default ServiceAccount take the verbs clients get, so
finalizers are honoured; their own status, finalizer and owner-reference changes go
through ``ResourceApi.write_back``, where a deletion completes by the same rule as a
client's update.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import Any, Protocol

from kubewerk.apiserver import openapi, openapi_v2
from kubewerk.apiserver.kinds.crds import CRD_CLEANUP_FINALIZER
from kubewerk.apiserver.kinds.custom import crd_to_type
from kubewerk.apiserver.kinds.namespaces import NAMESPACE_FINALIZER
from kubewerk.apiserver.registry import Registry
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.rest import FOREGROUND, ORPHAN, ResourceApi
from kubewerk.apiserver.storage.base import Event, KeyNotFound, RevisionConflict, Store
from kubewerk.apiserver.watch import WatchHub
from kubewerk.core import meta as metautil
from kubewerk.core.errors import ApiError
from kubewerk.core.jsoncopy import copy_json

JSON = dict[str, Any]
log = logging.getLogger("kubewerk.apiserver.controllers")

CRD_PREFIX = "/apiextensions.k8s.io/customresourcedefinitions/"
NS_PREFIX = "/core/namespaces/"
CONFIGMAP_PREFIX = "/core/configmaps/"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
"""The ConfigMap kube-controller-manager's root CA publisher keeps in every namespace."""
ROOT_CA_DESCRIPTION_ANNOTATION = "kubernetes.io/description"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
CONTROLLER_MANAGER = "kube-controller-manager"
"""The field manager of the writes kube-controller-manager makes."""
WARM_QUIET = 1.0
"""Seconds without controller work before the OpenAPI documents of changed groups are
built ahead of requests."""


def _condition(ctype: str, status: str, reason: str, message: str, old: list[JSON]) -> JSON:
    prev = next((c for c in old if c.get("type") == ctype), None)
    when = (
        prev["lastTransitionTime"]
        if prev and prev.get("status") == status and prev.get("lastTransitionTime")
        else (metautil.now_rfc3339())
    )
    return {
        "type": ctype,
        "status": status,
        "lastTransitionTime": when,
        "reason": reason,
        "message": message,
    }


class SubController(Protocol):
    """A controller run on the queue and task of ``Controllers`` (see ``add``): told of
    every storage event, it names the work items it wants (``(kind, key)`` pairs, each
    queued once until processed), and processes those of its kinds."""

    def work_for(self, ev: Event) -> Iterable[tuple[str, str]]:
        """The work ``ev`` calls for; called for every committed change, so it must be
        cheap for the events it does not care about."""
        ...

    def initial_work(self) -> Iterable[tuple[str, str]]:
        """The work what storage already holds calls for (when added)."""
        ...

    def process(self, kind: str, key: str) -> None:
        """Do one work item (exceptions are logged, the item dropped)."""
        ...


class Controllers:
    """CRD establishment, garbage collection and namespace deletion over one store.

    ``api`` is the REST layer over ``store`` and ``registry`` (every write goes through
    it); ``registry`` is where Established CRDs are served; ``hub`` ends the watches of a
    resource that goes away.
    """

    def __init__(self, store: Store, registry: Registry, api: ResourceApi, hub: WatchHub) -> None:
        self.store = store
        self.registry = registry
        self.api = api
        self.hub = hub
        self._pending: dict[tuple[str, str], None] = {}
        self._warmed = -1
        """The registry generation whose OpenAPI documents are all built."""
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        # garbage-collector graph
        self._uid_to_key: dict[str, str] = {}
        self._dependents: dict[str, set[str]] = {}
        self._owners_of: dict[str, set[str]] = {}
        self._subs: dict[str, SubController] = {}
        self._sub_list: list[SubController] = []
        self.root_ca: str | None = None
        """The CA bundle (PEM) published as ``kube-root-ca.crt`` in every active namespace,
        as kube-controller-manager's root CA publisher does; None publishes nothing (a
        server without TLS has no CA to publish)."""
        self._unsubscribe = self.store.subscribe(self._on_event)

    # -- wiring --------------------------------------------------------------

    def bootstrap(self) -> None:
        """Index what storage already holds (restart) and queue unfinished work."""
        items, _, _ = self.store.list("/")
        for key, obj in items:
            self._index(key, obj, None)
            self._classify(key, obj)

    def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())
        if self._pending:
            self._wakeup.set()

    def stop(self) -> None:
        self._unsubscribe()
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def add(self, kinds: Iterable[str], sub: SubController) -> None:
        """Run ``sub`` here: its work of ``kinds`` is queued and processed with the rest;
        what storage holds now is given to it at once."""
        for kind in kinds:
            self._subs[kind] = sub
        self._sub_list.append(sub)
        for kind, key in sub.initial_work():
            self._enqueue(kind, key)

    def _enqueue(self, kind: str, key: str) -> None:
        self._pending[(kind, key)] = None
        if self._wakeup is not None:
            self._wakeup.set()

    def _on_event(self, ev: Event) -> None:
        for sub in self._sub_list:
            for kind, key in sub.work_for(ev):
                self._enqueue(kind, key)
        if ev.type == "DELETED":
            self._index(ev.key, None, ev.obj)
        else:
            self._index(ev.key, ev.obj, ev.prev)
        if ev.type == "DELETED":
            uid = (ev.obj.get("metadata") or {}).get("uid")
            if ev.key.startswith(CRD_PREFIX):
                self._enqueue("crd-gone", ev.key)
            for dep in self._dependents.get(uid or "", ()):
                self._enqueue("gc", dep)
            ns = (ev.obj.get("metadata") or {}).get("namespace")
            if ns:
                self._enqueue("namespace", f"{NS_PREFIX}/{ns}")
            # owners in foreground deletion wait for this one
            for owner_uid in self._owner_uids(ev.obj):
                owner_key = self._uid_to_key.get(owner_uid)
                if owner_key:
                    self._enqueue("owner", owner_key)
            return
        self._classify(ev.key, ev.obj)

    def _classify(self, key: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        if key.startswith(CRD_PREFIX):
            self._enqueue("crd", key)
        elif key.startswith(NS_PREFIX):
            self._enqueue("namespace", key)
        elif (
            self.root_ca is not None
            and key.startswith(CONFIGMAP_PREFIX)
            and key.endswith("/" + ROOT_CA_CONFIGMAP)
        ):
            # changed by someone: the publisher puts its data back
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns:
                self._enqueue("namespace", f"{NS_PREFIX}/{ns}")
        if meta.get("ownerReferences"):
            self._enqueue("gc", key)
        if meta.get("deletionTimestamp") and (
            FOREGROUND in (meta.get("finalizers") or []) or ORPHAN in (meta.get("finalizers") or [])
        ):
            self._enqueue("owner", key)

    @staticmethod
    def _owner_uids(obj: JSON | None) -> set[str]:
        if not obj:
            return set()
        refs = (obj.get("metadata") or {}).get("ownerReferences") or []
        return {str(r.get("uid")) for r in refs if isinstance(r, dict) and r.get("uid")}

    def _index(self, key: str, obj: JSON | None, prev: JSON | None) -> None:
        if prev is not None and (prev.get("metadata") or {}).get("ownerReferences"):
            for uid in self._owner_uids(prev) - self._owner_uids(obj):
                deps = self._dependents.get(uid)
                if deps is not None:
                    deps.discard(key)
                    if not deps:
                        del self._dependents[uid]
        if obj is None:
            if prev is not None:
                gone = (prev.get("metadata") or {}).get("uid")
                if gone and self._uid_to_key.get(gone) == key:
                    del self._uid_to_key[gone]
            return
        meta = obj.get("metadata") or {}
        own = meta.get("uid")
        if own:
            self._uid_to_key[own] = key
        if meta.get("ownerReferences"):
            for owner in self._owner_uids(obj):
                self._dependents.setdefault(owner, set()).add(key)

    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            if self._warmed != self.registry.generation:
                # idle with documents to build: after WARM_QUIET seconds without new work
                # (asyncio.timeout, not wait_for: Python 3.11's wait_for loses a
                # cancellation that arrives as the event is set, and this loop then
                # never ends — the server's shutdown hung on it)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WARM_QUIET):
                        await self._wakeup.wait()
                if not self._wakeup.is_set():
                    await self._warm_documents()
                    continue
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._pending:
                (kind, key) = next(iter(self._pending))
                del self._pending[(kind, key)]
                try:
                    self._process(kind, key)
                except Exception:
                    log.exception("controller %s failed on %s", kind, key)
                await asyncio.sleep(0)

    async def _warm_documents(self) -> None:
        """Build the OpenAPI documents of every changed group, one group at a time with
        the event loop free in between; stop as soon as other work is queued (the rest
        is built at the next quiet moment, or on request)."""
        registry = self.registry
        generation = registry.generation
        for group in list(registry.group_names()):
            if self._wakeup is not None and self._wakeup.is_set():
                return
            if registry.generation != generation:
                return
            built = openapi_v2.warm_group(registry, group)
            built = openapi.warm_group(registry, group) or built
            if built:
                await asyncio.sleep(0)
        if registry.generation == generation:
            openapi_v2.encoded(registry).protobuf()
            self._warmed = generation

    def _process(self, kind: str, key: str) -> None:
        if kind == "crd":
            self._reconcile_crd(key)
        elif kind == "crd-gone":
            name = key.rsplit("/", 1)[-1]
            rtype = self.registry.by_crd(name)
            if rtype is not None:
                self.registry.remove(rtype.group, rtype.resource)
                # kube-apiserver ends the watches of a resource whose storage goes away
                self.hub.close_under(rtype.key_prefix)
        elif kind == "gc":
            self._gc_dependent(key)
        elif kind == "owner":
            self._gc_owner(key)
        elif kind == "namespace":
            self._reconcile_namespace(key)
        elif kind in self._subs:
            self._subs[kind].process(kind, key)

    # -- helpers ---------------------------------------------------------------

    def _delete(self, key: str, policy: str) -> None:
        target = self.api.target_for_key(key)
        if target is None:
            return
        try:
            self.api.delete(target, {"propagationPolicy": policy}, {})
        except ApiError as exc:
            if exc.code != 404:
                log.warning("delete of %s failed: %s", key, exc.message)

    def _write(self, key: str, obj: JSON) -> None:
        """Write back ``obj`` (a changed copy of the current object); a write that raced
        with another change is dropped, as that change's own event requeues the work."""
        try:
            self.api.write_back(key, obj)
        except (KeyNotFound, RevisionConflict):
            log.debug("write of %s raced with another change", key)

    # -- CRDs --------------------------------------------------------------------

    def _reconcile_crd(self, key: str) -> None:
        crd = self.store.get(key)
        if crd is None:
            return
        meta = crd["metadata"]
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        names.setdefault("singular", str(names.get("kind", "")).lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        status = crd.get("status") or {}
        old_conditions = list(status.get("conditions") or [])
        registry = self.registry
        if meta.get("deletionTimestamp"):
            self._cleanup_crd(key, crd, old_conditions)
            return
        conflict = None
        for other in registry.group(str(spec.get("group", ""))):
            if other.crd_name == meta.get("name"):
                continue
            if other.kind == names.get("kind"):
                conflict = f'"{names.get("kind")}" is already in use'
            elif other.resource == names.get("plural"):
                conflict = f'"{names.get("plural")}" is already in use'
            elif set(other.short_names) & set(names.get("shortNames") or []):
                conflict = (
                    f'"{sorted(set(other.short_names) & set(names.get("shortNames") or []))[0]}" '
                    "is already in use"
                )
        versions = spec.get("versions") or []
        storage = next(
            (v.get("name") for v in versions if isinstance(v, dict) and v.get("storage")), None
        )
        stored = list(status.get("storedVersions") or [])
        if storage and storage not in stored:
            stored.append(storage)
        if conflict:
            conditions = [
                _condition("NamesAccepted", "False", "AlreadyInUse", conflict, old_conditions),
                _condition(
                    "Established",
                    "False",
                    "NotAccepted",
                    "not all names are accepted",
                    old_conditions,
                ),
            ]
            accepted = status.get("acceptedNames") or {"plural": "", "kind": ""}
        else:
            established_before = any(
                c.get("type") == "Established" and c.get("status") == "True" for c in old_conditions
            )
            conditions = [
                _condition(
                    "NamesAccepted", "True", "NoConflicts", "no conflicts found", old_conditions
                ),
                _condition(
                    "Established",
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                    old_conditions,
                )
                if not established_before
                else next(c for c in old_conditions if c.get("type") == "Established"),
            ]
            accepted = {
                k: v
                for k, v in names.items()
                if k in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
            }
        new_status = {"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored}
        if new_status != status:
            new = copy_json(crd)
            new["status"] = new_status
            self._write(key, new)
            crd = self.store.get(key) or crd
        if not conflict:
            served = registry.by_crd(str(meta.get("name", "")))
            if (
                served is not None
                and served.crd_uid == meta.get("uid")
                and served.crd_generation == int(meta.get("generation", 0) or 0)
                and registry.get(served.group, served.resource) is served
            ):
                # a status or metadata write: the spec (all a served type is made of) is
                # the one already served, so discovery and OpenAPI stay as they are
                return
            rtype = crd_to_type(crd)
            if rtype is not None:
                if served is not None and (served.group, served.resource) != (
                    rtype.group,
                    rtype.resource,
                ):
                    registry.remove(served.group, served.resource)
                registry.add(rtype)
            else:
                registry.remove(spec.get("group", ""), names.get("plural", ""))

    def _cleanup_crd(self, key: str, crd: JSON, old_conditions: list[JSON]) -> None:
        spec = crd.get("spec") or {}
        group = spec.get("group", "")
        plural = (spec.get("names") or {}).get("plural", "")
        prefix = f"/{group}/{plural}/"
        items, _, _ = self.store.list(prefix)
        if not any(c.get("type") == "Terminating" for c in old_conditions):
            new = copy_json(crd)
            conds = [c for c in old_conditions if c.get("type") != "Terminating"]
            conds.append(
                _condition(
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                    old_conditions,
                )
            )
            new.setdefault("status", {})["conditions"] = conds
            self._write(key, new)
            crd = self.store.get(key) or crd
        for item_key, _ in items:
            self._delete(item_key, "Background")
        remaining, _, _ = self.store.list(prefix)
        if remaining:
            return  # retried when the last instance goes (its DELETED event requeues the CRD)
        finalizers = [
            f for f in crd["metadata"].get("finalizers") or [] if f != CRD_CLEANUP_FINALIZER
        ]
        if finalizers != (crd["metadata"].get("finalizers") or []):
            new = copy_json(crd)
            new["metadata"]["finalizers"] = finalizers
            self._write(key, new)

    # -- garbage collector -------------------------------------------------------

    def _owner_state(self, ref: JSON) -> str:
        """``solid``, ``dangling`` (absent) or ``waiting`` (owner in foreground deletion)."""
        key = self._uid_to_key.get(str(ref.get("uid")))
        owner = self.store.get(key) if key else None
        if owner is None or (owner.get("metadata") or {}).get("uid") != ref.get("uid"):
            return "dangling"
        meta = owner.get("metadata") or {}
        if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
            return "waiting"
        return "solid"

    def _gc_dependent(self, key: str) -> None:
        obj = self.store.get(key)
        if obj is None:
            return
        meta = obj.get("metadata") or {}
        refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
        if not refs or meta.get("deletionTimestamp"):
            return
        states = [(r, self._owner_state(r)) for r in refs]
        solid = [r for r, s in states if s == "solid"]
        if solid:
            if len(solid) != len(refs) and all(s == "dangling" for _, s in states if s != "solid"):
                new = copy_json(obj)
                new["metadata"]["ownerReferences"] = solid
                self._write(key, new)
            return
        waiting = any(s == "waiting" for _, s in states)
        self._delete(key, "Foreground" if waiting else "Background")

    def _gc_owner(self, key: str) -> None:
        owner = self.store.get(key)
        if owner is None:
            return
        meta = owner.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            return
        finalizers = list(meta.get("finalizers") or [])
        uid = meta.get("uid", "")
        dependents = sorted(self._dependents.get(uid, ()))
        if ORPHAN in finalizers:
            for dep_key in dependents:
                dep = self.store.get(dep_key)
                if dep is None:
                    continue
                new = copy_json(dep)
                new["metadata"]["ownerReferences"] = [
                    r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid
                ]
                if not new["metadata"]["ownerReferences"]:
                    del new["metadata"]["ownerReferences"]
                self._write(dep_key, new)
            new = copy_json(owner)
            new["metadata"]["finalizers"] = [f for f in finalizers if f != ORPHAN]
            self._write(key, new)
            return
        if FOREGROUND in finalizers:
            blocking = False
            for dep_key in dependents:
                dep = self.store.get(dep_key)
                if dep is None:
                    continue
                dep_meta = dep.get("metadata") or {}
                ref: JSON = next(
                    (r for r in dep_meta.get("ownerReferences") or [] if r.get("uid") == uid), {}
                )
                if ref.get("blockOwnerDeletion"):
                    blocking = True
                if not dep_meta.get("deletionTimestamp"):
                    # the dependent goes too, unless another owner still holds it
                    others = [
                        r for r in dep_meta.get("ownerReferences") or [] if r.get("uid") != uid
                    ]
                    if others and any(self._owner_state(r) == "solid" for r in others):
                        new = copy_json(dep)
                        new["metadata"]["ownerReferences"] = others
                        self._write(dep_key, new)
                        continue
                    self._delete(dep_key, "Foreground")
            if blocking:
                # wait: each blocking dependent's DELETED event requeues this owner
                still = [
                    d
                    for d in dependents
                    if self.store.get(d) is not None
                    and any(
                        r.get("uid") == uid and r.get("blockOwnerDeletion")
                        for r in (self.store.get(d) or {})
                        .get("metadata", {})
                        .get("ownerReferences")
                        or []
                    )
                ]
                if still:
                    return
            owner = self.store.get(key)
            if owner is None:
                return
            new = copy_json(owner)
            new["metadata"]["finalizers"] = [
                f for f in new["metadata"].get("finalizers") or [] if f != FOREGROUND
            ]
            self._write(key, new)

    # -- namespaces ----------------------------------------------------------------

    def _reconcile_namespace(self, key: str) -> None:
        ns = self.store.get(key)
        if ns is None:
            return
        if not (ns.get("metadata") or {}).get("deletionTimestamp"):
            self._ensure_default_service_account(ns["metadata"]["name"])
            self._publish_root_ca(ns["metadata"]["name"])
            return
        name = ns["metadata"]["name"]
        counts: dict[str, int] = {}
        finalizer_counts: dict[str, int] = {}
        seen: set[str] = set()
        for rtype in list(self.registry.all()):
            if not rtype.namespaced:
                continue
            items, _, _ = self.store.list(rtype.ns_prefix(name))
            for item_key, item in items:
                if item_key in seen:  # events.k8s.io Events are core Events
                    continue
                seen.add(item_key)
                meta = item.get("metadata") or {}
                if not meta.get("deletionTimestamp"):
                    self._delete(item_key, "Background")
                if self.store.get(item_key) is None:
                    continue
                counts[rtype.qualified] = counts.get(rtype.qualified, 0) + 1
                for finalizer in (self.store.get(item_key) or {}).get("metadata", {}).get(
                    "finalizers"
                ) or []:
                    finalizer_counts[finalizer] = finalizer_counts.get(finalizer, 0) + 1
        ns = self.store.get(key)
        if ns is None:
            return
        new = copy_json(ns)
        new.setdefault("status", {})["conditions"] = self._namespace_conditions(
            ns.get("status", {}).get("conditions") or [], counts, finalizer_counts
        )
        if not counts:
            finalizers = [
                f
                for f in (ns.get("spec") or {}).get("finalizers") or []
                if f != NAMESPACE_FINALIZER
            ]
            new.setdefault("spec", {})["finalizers"] = finalizers
            if not finalizers:
                new["spec"].pop("finalizers")
        if new != ns:
            self._write(key, new)
        # otherwise each DELETED event in this namespace requeues it

    @staticmethod
    def _namespace_conditions(
        old: list[JSON], counts: dict[str, int], finalizers: dict[str, int]
    ) -> list[JSON]:
        """The conditions the namespace controller reports while a namespace terminates."""
        if counts:
            remaining = ", ".join(
                f"{r} has {n} resource instances" for r, n in sorted(counts.items())
            )
            content = ("True", "SomeResourcesRemain", f"Some resources are remaining: {remaining}")
        else:
            content = ("False", "ContentRemoved", "All content successfully removed")
        if finalizers:
            listed = ", ".join(
                f"{f} in {n} resource instances" for f, n in sorted(finalizers.items())
            )
            held = (
                "True",
                "SomeFinalizersRemain",
                f"Some content in the namespace has finalizers remaining: {listed}",
            )
        else:
            held = ("False", "ContentHasNoFinalizers", "All content-preserving finalizers finished")
        wanted = [
            (
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            (
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            ("NamespaceContentRemaining", *content),
            ("NamespaceFinalizersRemaining", *held),
        ]
        out = []
        for ctype, status, reason, message in wanted:
            prev = next((c for c in old if c.get("type") == ctype), None)
            if prev and (prev.get("status"), prev.get("reason"), prev.get("message")) == (
                status,
                reason,
                message,
            ):
                out.append(prev)
            else:
                out.append(_condition(ctype, status, reason, message, old))
        return out

    def _ensure_default_service_account(self, namespace: str) -> None:
        """The ServiceAccount controller's job: every active namespace has ``default``."""
        rtype = self.registry.get("", "serviceaccounts")
        if rtype is None or self.store.get(rtype.key(namespace, "default")) is not None:
            return
        target = Target(rtype, rtype.storage_version, namespace)
        try:
            self.api.create(
                target,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": namespace},
                },
                {},
            )
        except ApiError as exc:
            if exc.code != 409:
                log.warning(
                    "create of the default ServiceAccount in %s failed: %s", namespace, exc.message
                )

    def _publish_root_ca(self, namespace: str) -> None:
        """The root CA publisher's job (kube-controller-manager): ``kube-root-ca.crt`` in
        every active namespace holds ``ca.crt`` (the server's CA) and the description
        annotation; it is created when missing, and its data and that annotation are put
        back when changed (other labels and annotations are kept)."""
        bundle = self.root_ca
        rtype = self.registry.get("", "configmaps")
        if bundle is None or rtype is None:
            return
        data = {"ca.crt": bundle}
        current = self.store.get(rtype.key(namespace, ROOT_CA_CONFIGMAP))
        query = {"fieldManager": CONTROLLER_MANAGER}
        target = Target(rtype, rtype.storage_version, namespace)
        try:
            if current is None:
                self.api.create(
                    target,
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": ROOT_CA_CONFIGMAP,
                            "namespace": namespace,
                            "annotations": {ROOT_CA_DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION},
                        },
                        "data": data,
                    },
                    query,
                )
                return
            annotations = (current.get("metadata") or {}).get("annotations") or {}
            if current.get("data") == data and annotations.get(ROOT_CA_DESCRIPTION_ANNOTATION):
                return
            new = copy_json(current)
            new["data"] = data
            new["metadata"].setdefault("annotations", {})[ROOT_CA_DESCRIPTION_ANNOTATION] = (
                ROOT_CA_DESCRIPTION
            )
            self.api.update(
                Target(rtype, rtype.storage_version, namespace, ROOT_CA_CONFIGMAP), new, query
            )
        except ApiError as exc:
            # gone, terminating, or written meanwhile (its event requeues the namespace)
            if exc.code not in (403, 404, 409):
                log.warning(
                    "publishing %s in %s failed: %s", ROOT_CA_CONFIGMAP, namespace, exc.message
                )
