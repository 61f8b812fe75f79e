"""The federation controllers on :mod:`kubewerk.runtime`: :class:`Federation`.

``Federation(manager)`` adds three controllers to a :class:`~kubewerk.runtime.Manager`
talking to the host cluster (where ClusterSets, Placements and FederatedObjects live):

- **clusterset**: probes each member (``/version``, through the
  :class:`~kubewerk.sync.federation.members.MemberPool`) every ``probeIntervalSeconds``
  and writes ``status.clusters[]`` (``reachable``, ``message``, ``lastTransitionTime``,
  and the :data:`~kubewerk.sync.federation.models.UNREACHABLE_TAINT` taint with the time
  the member stopped answering), ``readyClusters`` and the ``Ready`` condition;
- **placement**: makes the decision of :func:`~kubewerk.sync.federation.placement.decide`
  from the ClusterSet's spec and status, writes it to ``status.decisions`` with the
  ``Satisfied`` condition, and decides again when a toleration expires;
- **federatedobject**: renders the template for every decided member
  (:func:`~kubewerk.sync.federation.render.render`) and applies it there
  (:func:`kubewerk.sync.apply_object`: server-side apply with the field manager
  ``kubewerk-federation``, forced, foreign fields removed; an unchanged copy is not
  written); deletes its copy from every other member of the set; writes one
  ``status.clusters[]`` entry per member that holds or should hold a copy, the copies'
  own ``status`` included, and the conditions ``Propagated`` (True when every selected
  member holds the current copy) and ``Degraded`` (True while some member failed; the
  message names each with its reason). Members are handled concurrently; one that does
  not answer is reported ``Unreachable`` and retried after the pool's backoff, never
  delaying the others. A finalizer (:data:`FINALIZER`) deletes every copy before the
  FederatedObject goes; the annotation :data:`ORPHAN_ANNOTATION` = ``"true"`` leaves the
  copies instead. Copies are re-read every ``resync_seconds`` so their status is fresh.

A member's object of the same name that is not this FederatedObject's copy (its
:data:`~kubewerk.sync.federation.render.OWNER_ANNOTATION` names another owner, or none)
is left alone and reported ``Conflict`` unless ``spec.conflictResolution`` is
``Overwrite``; removal only ever deletes this FederatedObject's own copies.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from kubewerk.client import Client, ResourceType
from kubewerk.client.errors import ApiError, NotFound
from kubewerk.client.resources import resource_type_of
from kubewerk.runtime import Context, Manager, Result, has_finalizer, is_deleting, set_condition
from kubewerk.runtime.predicates import Predicate
from kubewerk.sync.apply import apply_object
from kubewerk.sync.federation.members import MemberPool, MemberUnavailable
from kubewerk.sync.federation.models import (
    UNREACHABLE_TAINT,
    ClusterSet,
    FederatedObject,
    Placement,
)
from kubewerk.sync.federation.placement import PlacementError, decide
from kubewerk.sync.federation.render import RenderError, check_template, owner_of, render

__all__ = [
    "CLUSTER_SET",
    "FEDERATED_OBJECT",
    "FIELD_MANAGER",
    "FINALIZER",
    "ORPHAN_ANNOTATION",
    "PLACEMENT",
    "Federation",
]

CLUSTER_SET: Final[ResourceType] = resource_type_of(ClusterSet)
PLACEMENT: Final[ResourceType] = resource_type_of(Placement)
FEDERATED_OBJECT: Final[ResourceType] = resource_type_of(FederatedObject)
FINALIZER: Final = "federation.kubewerk.dev/cleanup"
ORPHAN_ANNOTATION: Final = "federation.kubewerk.dev/orphan"
FIELD_MANAGER: Final = "kubewerk-federation"

_BY_CLUSTER_SET: Final = "federation.kubewerk.dev/clusterSet"
_BY_PLACEMENT: Final = "federation.kubewerk.dev/placement"

Obj = dict[str, Any]


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


class _SpecOrMetaChanged(Predicate):
    """Passes an update unless only status (and the bookkeeping that comes with a status
    write: resourceVersion, managedFields) changed: the federated object's own status
    writes do not trigger another round of calls to every member."""

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        if old.get("spec") != new.get("spec"):
            return True
        om, nm = _meta(old), _meta(new)
        return any(
            om.get(f) != nm.get(f)
            for f in ("generation", "deletionTimestamp", "finalizers", "annotations", "labels")
        )


def _fo_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


class Federation:
    """The three federation controllers on ``manager`` (see the module docstring).

    ``resync_seconds``: how often each FederatedObject's copies are re-read (status
    aggregation); ``member_timeout``: per-request timeout towards members;
    ``backoff_base``/``backoff_cap``: a member's backoff after failures;
    ``max_concurrent_reconciles``: FederatedObjects reconciled at once.
    """

    def __init__(
        self,
        manager: Manager,
        *,
        resync_seconds: float = 30.0,
        member_timeout: float = 10.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 60.0,
        max_concurrent_reconciles: int = 4,
    ) -> None:
        self.manager = manager
        self.resync_seconds = resync_seconds
        self.member_timeout = member_timeout
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self._pool: MemberPool | None = None
        manager.index(
            PLACEMENT,
            _BY_CLUSTER_SET,
            lambda o: [_fo_key(str(_meta(o).get("namespace")), str(_spec(o).get("clusterSet")))],
        )
        manager.index(
            FEDERATED_OBJECT,
            _BY_PLACEMENT,
            lambda o: [_fo_key(str(_meta(o).get("namespace")), str(_spec(o).get("placement")))],
        )
        self.cluster_sets = (
            manager.controller(CLUSTER_SET)
            .named("federation-clusterset")
            .with_options(max_concurrent_reconciles=2)
            .complete(self.reconcile_cluster_set)
        )
        self.placements = (
            manager.controller(PLACEMENT)
            .named("federation-placement")
            .watches(CLUSTER_SET, self._placements_of_set)
            .complete(self.reconcile_placement)
        )
        self.federated = (
            manager.controller(FEDERATED_OBJECT)
            .named("federation-federatedobject")
            .with_predicates(_SpecOrMetaChanged())
            .watches(PLACEMENT, self._objects_of_placement)
            .watches(CLUSTER_SET, self._objects_of_set)
            .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
            .complete(self.reconcile_federated)
        )
        manager.add_runnable(self._close_pool_on_stop, needs_leader=False)

    # -- plumbing ---------------------------------------------------------------------

    def pool(self, host: Client) -> MemberPool:
        """The member pool (made on first use, on the manager's client)."""
        if self._pool is None:
            self._pool = MemberPool(
                host,
                timeout=self.member_timeout,
                backoff_base=self.backoff_base,
                backoff_cap=self.backoff_cap,
            )
        return self._pool

    async def _close_pool_on_stop(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            pool, self._pool = self._pool, None
            if pool is not None:
                await pool.close()

    def _cache_get(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        cache = self.manager.cache
        if cache is None:
            return None
        return cache.informer(rt).get(name, namespace)

    def _placements_of_set(self, cs: Obj) -> list[str]:
        cache = self.manager.cache
        if cache is None:
            return []
        key = _fo_key(str(_meta(cs).get("namespace")), str(_meta(cs).get("name")))
        return cache.informer(PLACEMENT).keys_by_index(_BY_CLUSTER_SET, key)

    def _objects_of_placement(self, placement: Obj) -> list[str]:
        cache = self.manager.cache
        if cache is None:
            return []
        key = _fo_key(str(_meta(placement).get("namespace")), str(_meta(placement).get("name")))
        return cache.informer(FEDERATED_OBJECT).keys_by_index(_BY_PLACEMENT, key)

    def _objects_of_set(self, cs: Obj) -> list[str]:
        cache = self.manager.cache
        if cache is None:
            return []
        out: list[str] = []
        for pkey in self._placements_of_set(cs):
            out.extend(cache.informer(FEDERATED_OBJECT).keys_by_index(_BY_PLACEMENT, pkey))
        return out

    # -- ClusterSet -------------------------------------------------------------------

    async def reconcile_cluster_set(self, cs: Obj, ctx: Context) -> Result:
        """Probe every member; write reachability, taints and ``Ready``."""
        interval = float(_spec(cs).get("probeIntervalSeconds") or 10.0)
        if is_deleting(cs):
            return Result.done()
        pool = self.pool(ctx.client)
        ns = ctx.namespace or ""
        members = [m for m in _spec(cs).get("clusters") or [] if isinstance(m, Mapping)]
        whys = await asyncio.gather(*(pool.probe(pool.key(ns, m)) for m in members))
        before = {
            e.get("name"): e for e in _status(cs).get("clusters") or [] if isinstance(e, Mapping)
        }
        now = _now()
        entries: list[Obj] = []
        for member, why in zip(members, whys, strict=True):
            name = str(member.get("name"))
            old = before.get(name) or {}
            reachable = why is None
            entry: Obj = {"name": name, "reachable": reachable}
            if old.get("reachable") == reachable and old.get("lastTransitionTime"):
                entry["lastTransitionTime"] = old["lastTransitionTime"]
            else:
                entry["lastTransitionTime"] = _stamp(now)
            if not reachable:
                entry["message"] = why
                entry["taints"] = [
                    {
                        "key": UNREACHABLE_TAINT,
                        "effect": "NoSelect",
                        "timeAdded": entry["lastTransitionTime"],
                    }
                ]
            entries.append(entry)
        ready = sum(1 for e in entries if e["reachable"])
        status = dict(_status(cs))
        status.update(
            observedGeneration=_meta(cs).get("generation"),
            clusters=entries,
            readyClusters=ready,
        )
        cs["status"] = status
        down = [f"{e['name']}: {e['message']}" for e in entries if not e["reachable"]]
        if down:
            set_condition(cs, "Ready", False, "MembersUnreachable", "; ".join(down))
        else:
            set_condition(cs, "Ready", True, "AllReachable", f"{ready} members answer")
        await ctx.patch_status(cs)
        return Result.after(interval)

    # -- Placement --------------------------------------------------------------------

    @staticmethod
    def members_of(cs: Mapping[str, Any]) -> list[Obj]:
        """The set's members with their spec taints and the controller's taints merged."""
        seen = {
            e.get("name"): e for e in _status(cs).get("clusters") or [] if isinstance(e, Mapping)
        }
        out: list[Obj] = []
        for m in _spec(cs).get("clusters") or []:
            if not isinstance(m, Mapping):
                continue
            taints = [
                *(m.get("taints") or []),
                *((seen.get(m.get("name")) or {}).get("taints") or []),
            ]
            out.append({**m, "taints": taints})
        return out

    async def reconcile_placement(self, placement: Obj, ctx: Context) -> Result:
        """Decide which members the placement selects; write the decision."""
        if is_deleting(placement):
            return Result.done()
        ns = ctx.namespace or ""
        spec = _spec(placement)
        cs = self._cache_get(CLUSTER_SET, ns, str(spec.get("clusterSet")))
        status = dict(_status(placement))
        status["observedGeneration"] = _meta(placement).get("generation")
        after: float | None = None
        if cs is None:
            clusters: tuple[str, ...] = ()
            ok, reason, message = (
                False,
                "ClusterSetNotFound",
                (f'ClusterSet "{spec.get("clusterSet")}" not found in namespace "{ns}"'),
            )
            status.pop("nextReviewTime", None)
        else:
            previous = [
                str(d.get("clusterName"))
                for d in status.get("decisions") or []
                if isinstance(d, Mapping)
            ]
            now = datetime.now(UTC)
            try:
                decision = decide(
                    self.members_of(cs), spec, identity=ctx.key, now=now, previous=previous
                )
            except PlacementError as exc:
                clusters, ok, reason, message = (), False, "InvalidSelector", str(exc)
                status.pop("nextReviewTime", None)
            else:
                clusters, ok, message = decision.clusters, decision.satisfied, decision.message
                reason = "AllSelected" if ok else "NotEnoughClusters"
                if decision.review_at is not None:
                    status["nextReviewTime"] = _stamp(decision.review_at)
                    after = max(0.5, (decision.review_at - now).total_seconds() + 0.5)
                else:
                    status.pop("nextReviewTime", None)
        status["decisions"] = [{"clusterName": c} for c in clusters]
        status["numberOfSelectedClusters"] = len(clusters)
        placement["status"] = status
        set_condition(placement, "Satisfied", ok, reason, message)
        await ctx.patch_status(placement)
        return Result.after(after) if after is not None else Result.done()

    # -- FederatedObject --------------------------------------------------------------

    async def _propagate(
        self,
        pool: MemberPool,
        fo: Mapping[str, Any],
        member: Mapping[str, Any],
    ) -> Obj:
        meta, spec = _meta(fo), _spec(fo)
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        owner = _fo_key(ns, name)
        template = spec.get("template") or {}
        member_name = str(member.get("name"))
        key = pool.key(ns, member)

        async def op(client: Client) -> Obj:
            rt = await client.resolve(str(template.get("apiVersion")), str(template.get("kind")))
            obj = render(
                template,
                owner_namespace=ns,
                owner_name=name,
                namespaced=rt.namespaced,
                member=member_name,
                labels=member.get("labels") or {},
                overrides=spec.get("overrides") or [],
            )
            obj_ns = obj["metadata"].get("namespace")
            if rt.namespaced:
                await pool.ensure_namespace(key, client, str(obj_ns))
            try:
                live: Obj | None = await client.get(rt, str(obj["metadata"]["name"]), obj_ns)
            except NotFound:
                live = None
            if (
                live is not None
                and owner_of(live) != owner
                and spec.get("conflictResolution", "Abort") != "Overwrite"
            ):
                theirs = owner_of(live)
                return {
                    "name": member_name,
                    "state": "Conflict",
                    "message": f"{rt.kind} {obj['metadata']['name']} exists in the member and "
                    + (f"belongs to {theirs}" if theirs else "was not placed by federation"),
                }
            result = await apply_object(
                client, obj, "git-wins", live=live, field_manager=FIELD_MANAGER
            )
            entry: Obj = {"name": member_name, "state": "Propagated"}
            gen = _meta(result.object).get("generation")
            if gen is not None:
                entry["generation"] = gen
            remote = result.object.get("status")
            if isinstance(remote, Mapping) and remote:
                entry["remoteStatus"] = remote
            return entry

        try:
            return await pool.call(key, op)
        except MemberUnavailable as exc:
            return {
                "name": member_name,
                "state": "Unreachable",
                "message": exc.why,
                "_retry": exc.retry_in,
            }
        except RenderError as exc:
            return {"name": member_name, "state": "Failed", "message": str(exc)}
        except ApiError as exc:
            return {"name": member_name, "state": "Failed", "message": exc.message, "_retry": None}

    async def _remove(
        self,
        pool: MemberPool,
        fo: Mapping[str, Any],
        member: Mapping[str, Any],
        listed: bool,
    ) -> Obj | None:
        """Delete this FederatedObject's copy from ``member``; None when it is gone (or
        was never there), else a ``Removing`` entry saying why not yet."""
        meta, spec = _meta(fo), _spec(fo)
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        owner = _fo_key(ns, name)
        template = spec.get("template") or {}
        member_name = str(member.get("name"))
        key = pool.key(ns, member)

        async def op(client: Client) -> None:
            rt = await client.resolve(str(template.get("apiVersion")), str(template.get("kind")))
            obj_name = str(_meta(template).get("name"))
            obj_ns = ns if rt.namespaced else None
            try:
                live = await client.get(rt, obj_name, obj_ns)
            except NotFound:
                return
            if owner_of(live) != owner:
                return
            with contextlib.suppress(NotFound):
                await client.delete(rt, obj_name, obj_ns, propagation_policy="Background")

        try:
            await pool.call(key, op)
        except MemberUnavailable as exc:
            if not listed:
                return None
            return {
                "name": member_name,
                "state": "Removing",
                "message": f"not selected; removal waits: {exc.why}",
                "_retry": exc.retry_in,
            }
        except ApiError as exc:
            if exc.code == 404 or not listed:
                return None  # the kind is not served there: nothing of ours can be there
            return {
                "name": member_name,
                "state": "Removing",
                "message": f"not selected; removal failed: {exc.message}",
                "_retry": None,
            }
        return None

    def _events(self, ctx: Context, before: Mapping[str, Any], entries: list[Obj]) -> None:
        for e in entries:
            old = before.get(e["name"]) or {}
            if old.get("state") == e["state"]:
                continue
            if e["state"] == "Propagated":
                ctx.event("Normal", "Propagated", f"propagated to {e['name']}", action="Propagate")
            else:
                ctx.event(
                    "Warning",
                    f"Cluster{e['state']}",
                    f"{e['name']}: {e.get('message', '')}",
                    action="Propagate",
                )

    async def _finish(
        self,
        fo: Obj,
        ctx: Context,
        entries: list[Obj],
        selected: list[str],
        *,
        cluster_set: str | None,
        reason_none: tuple[str, str] | None = None,
    ) -> Result:
        before = {
            str(e.get("name")): e
            for e in _status(fo).get("clusters") or []
            if isinstance(e, Mapping)
        }
        retries = [e["_retry"] for e in entries if e.get("_retry") is not None]
        failed_api = any("_retry" in e and e["_retry"] is None for e in entries)
        clean = [{k: v for k, v in e.items() if k != "_retry"} for e in entries]
        clean.sort(key=lambda e: e["name"])
        self._events(ctx, before, clean)
        status = dict(_status(fo))
        status["observedGeneration"] = _meta(fo).get("generation")
        status["clusters"] = clean
        if cluster_set is not None:
            status["clusterSet"] = cluster_set
        fo["status"] = status
        failing = [e for e in clean if e["state"] != "Propagated"]
        propagated = [e["name"] for e in clean if e["state"] == "Propagated"]
        if reason_none is not None:
            set_condition(fo, "Propagated", False, *reason_none)
        elif not selected:
            set_condition(
                fo, "Propagated", False, "NoClustersSelected", "the placement selects no member"
            )
        elif not failing:
            set_condition(
                fo, "Propagated", True, "AllPropagated", "propagated to " + ", ".join(propagated)
            )
        else:
            set_condition(
                fo,
                "Propagated",
                False,
                "NotAllPropagated",
                f"{len(propagated)} of {len(selected)} selected members hold the current copy",
            )
        if failing:
            set_condition(
                fo,
                "Degraded",
                True,
                "ClustersFailing",
                "; ".join(f"{e['name']}: {e['state']}: {e.get('message', '')}" for e in failing),
            )
        else:
            set_condition(fo, "Degraded", False, "AllHealthy", "no member is failing")
        await ctx.patch_status(fo)
        if retries:
            return Result.after(max(0.05, min(retries)))
        if failed_api:
            return Result.again()
        return Result.after(self.resync_seconds)

    async def reconcile_federated(self, fo: Obj, ctx: Context) -> Result:
        """Propagate to the decided members, remove elsewhere, aggregate status."""
        ns = ctx.namespace or ""
        spec = _spec(fo)
        pool = self.pool(ctx.client)
        placement = self._cache_get(PLACEMENT, ns, str(spec.get("placement")))
        set_name = (
            str(_spec(placement).get("clusterSet"))
            if placement is not None
            else _status(fo).get("clusterSet")
        )
        cs = self._cache_get(CLUSTER_SET, ns, str(set_name)) if set_name else None
        members = {str(m.get("name")): m for m in self.members_of(cs)} if cs is not None else {}
        listed = {
            str(e.get("name")) for e in _status(fo).get("clusters") or [] if isinstance(e, Mapping)
        }
        if is_deleting(fo):
            return await self._finalize(fo, ctx, pool, members, listed, cs is not None)
        await ctx.ensure_finalizer(fo, FINALIZER)
        try:
            check_template(spec.get("template") or {})
        except RenderError as exc:
            return await self._finish(
                fo, ctx, [], [], cluster_set=None, reason_none=("InvalidTemplate", str(exc))
            )
        if placement is None:
            selected: list[str] = []
            why: tuple[str, str] | None = (
                "PlacementNotFound",
                f'Placement "{spec.get("placement")}" not found in namespace "{ns}"',
            )
        else:
            decided = [
                str(d.get("clusterName"))
                for d in _status(placement).get("decisions") or []
                if isinstance(d, Mapping)
            ]
            selected = [c for c in decided if c in members]
            why = None
        others = [m for n, m in members.items() if n not in selected]
        results = await asyncio.gather(
            *(self._propagate(pool, fo, members[c]) for c in selected),
            *(self._remove(pool, fo, m, str(m.get("name")) in listed) for m in others),
        )
        entries = [r for r in results if r is not None]
        gone = sorted(listed - set(members))
        if gone and cs is not None:
            ctx.event(
                "Warning",
                "MemberLeft",
                f"{', '.join(gone)} left the ClusterSet; copies there are no longer managed",
            )
        return await self._finish(
            fo,
            ctx,
            entries,
            selected,
            cluster_set=str(set_name) if set_name else None,
            reason_none=why,
        )

    async def _finalize(
        self,
        fo: Obj,
        ctx: Context,
        pool: MemberPool,
        members: Mapping[str, Mapping[str, Any]],
        listed: set[str],
        have_set: bool,
    ) -> Result:
        if not has_finalizer(fo, FINALIZER):
            return Result.done()
        orphan = (_meta(fo).get("annotations") or {}).get(ORPHAN_ANNOTATION) == "true"
        if not orphan and not have_set and listed:
            ctx.event(
                "Warning",
                "ClusterSetNotFound",
                f"the ClusterSet is gone; copies may remain in {', '.join(sorted(listed))}",
                action="Finalize",
            )
        if not orphan and have_set:
            results = await asyncio.gather(
                *(self._remove(pool, fo, m, True) for m in members.values())
            )
            left = [r for r in results if r is not None]
            if left:
                return await self._finish(
                    fo,
                    ctx,
                    left,
                    [],
                    cluster_set=None,
                    reason_none=("Deleting", "removing the copies from every member"),
                )
        await ctx.remove_finalizer(fo, FINALIZER)
        return Result.done()
