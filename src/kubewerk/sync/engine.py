"""``kubewerk sync``: bring clusters to a source, or a source to a cluster.

:func:`sync` takes one source and any number of target clusters and a policy:

- ``git-wins``: every target is made equal to the source (:func:`~kubewerk.sync.apply.apply_object`
  with force, foreign fields replaced away);
- ``merge``: three-way per field (:func:`~kubewerk.sync.merge3.merge3`) between the base
  recorded at the last sync (the ``sync.kubewerk.dev/last-synced`` annotation on each
  cluster object), the source and the cluster; fields changed on one side take that
  side's value, fields changed on both are conflicts, reported and left as the cluster
  has them. An object never synced before is adopted as under ``git-wins``;
- ``cluster-wins``: the cluster's state is written back as manifests into the source
  (a directory or file; one target only): changed documents are replaced in their
  files, objects only in the cluster go to new files, nothing is written to the cluster.

Manifests are placed in each target as kubectl places them (:func:`place_manifests`):
an object of a namespaced kind without a namespace goes to the target's own
``namespace`` (``kubewerk sync -n``), else its kubeconfig context's; one of a
cluster-scoped kind loses the namespace it names (see
:func:`~kubewerk.sync.compare.index_entries`). A target narrowed to a namespace refuses a
manifest of a namespaced kind in another one, as ``kubectl apply -n`` does: every
target is read and every manifest placed and checked before anything is written
anywhere, so a refusal (:class:`~kubewerk.sync.sources.SourceError`) leaves every target
unchanged.

Objects are applied in dependency order: Namespaces, then CRDs (waited for until
Established), then the rest with each object after the objects its kind's lifecycle refs
name (the CRD annotation ``kubewerk.dev/references``), else in key order. With
``prune``, objects a previous sync created (they carry the last-synced annotation) that
the source no longer holds are deleted (cluster-wins: removed from the manifests) —
of the source's kinds, the kinds of its CRDs, and (git-wins, merge) the namespaced kinds
of ``kubectl apply --prune``'s default allowlist in the namespaces the source writes to
(:data:`PRUNED_KINDS`); without it those of the source's kinds are reported as
``extra``. The cluster's defaults are no difference under any policy: ``merge`` defaults
the base and the source before merging, ``cluster-wins`` compares and writes back
through :mod:`~kubewerk.sync.defaults`. ``dry_run`` writes nothing (the
server's dry run answers for cluster writes). A second run with nothing changed reports
every object ``unchanged``.

Each target is synced on its own: one that cannot be reached (``ServerUnreachable``,
after the client's retries) is reported ``unreachable`` with the objects done so far and
the others go on; running the sync again resumes it (only what still differs is written).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kubewerk.client import Client, ServerUnreachable
from kubewerk.client.errors import ApiError, Forbidden, NotFound
from kubewerk.model import REFERENCES_ANNOTATION, parse_references
from kubewerk.sync.apply import (
    Policy,
    _in_namespace,
    apply_object,
    delete_object,
    desired_state,
    last_synced,
)
from kubewerk.sync.compare import (
    check_namespace,
    index_entries,
    key_of_group,
    manifest_namespace,
    prepare_schemas,
)
from kubewerk.sync.defaults import defaulted_state, without_defaults
from kubewerk.sync.diff import quick_equal, same_value
from kubewerk.sync.keys import GroupKind, ObjectKey
from kubewerk.sync.merge3 import merge3
from kubewerk.sync.normalize import strip_server_fields
from kubewerk.sync.schemas import KindSchemas
from kubewerk.sync.shapes import Shape
from kubewerk.sync.sources import (
    _CRD_RT,
    ClusterSource,
    Entry,
    ManifestSource,
    Source,
    SourceError,
    dump_manifests,
    parse_manifests,
)

__all__ = [
    "ObjectResult",
    "SyncReport",
    "TargetReport",
    "dependency_order",
    "place_manifests",
    "sync",
    "target_namespace",
]

_NS = GroupKind("", "Namespace")
_CRD = GroupKind("apiextensions.k8s.io", "CustomResourceDefinition")


@dataclass(slots=True)
class ObjectResult:
    """One object's outcome: ``action`` is ``created``, ``updated``, ``unchanged``,
    ``deleted``, ``extra`` (only in the cluster, not pruned), ``conflict`` (merge: fields
    left as the cluster has them, listed in ``conflicts``), ``written`` (cluster-wins:
    manifest written) or ``failed`` (``detail`` says why). An ``updated`` object that no
    sync wrote before has the detail :data:`ADOPTED`."""

    key: ObjectKey
    action: str
    detail: str = ""
    conflicts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class TargetReport:
    """One target's sync: ``status`` ``ok``, ``failed`` (some objects failed) or
    ``unreachable`` (stopped; ``results`` holds what was done before)."""

    target: str
    status: str = "ok"
    detail: str = ""
    results: list[ObjectResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.action] = out.get(r.action, 0) + 1
        return out


@dataclass(slots=True)
class SyncReport:
    """Every target's report; ``ok`` when all are ``ok``. ``warnings``: what the source or
    a target could not read and how the sync did without it (each names its cluster)."""

    policy: str
    dry_run: bool
    targets: list[TargetReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(t.status == "ok" for t in self.targets)

    @property
    def changed(self) -> bool:
        return any(r.action not in ("unchanged", "extra") for t in self.targets for r in t.results)


def _obj(entry: Entry | None) -> dict[str, Any] | None:
    return entry.obj if entry is not None else None


def _gk(obj: Mapping[str, Any]) -> GroupKind:
    return GroupKind(key_of_group(obj), str(obj.get("kind", "")))


def dependency_order(entries: Mapping[ObjectKey, Entry], schemas: KindSchemas) -> list[ObjectKey]:
    """Keys in apply order: Namespaces, CRDs, then the rest topologically by lifecycle
    refs (a ref to an object not in ``entries``, or a cycle, does not hold anything back),
    ties in key order."""
    rank = {k: (0 if k.group_kind == _NS else 1 if k.group_kind == _CRD else 2) for k in entries}
    deps: dict[ObjectKey, set[ObjectKey]] = {k: set() for k in entries}
    for key, entry in entries.items():
        crd = schemas.crd(key.group_kind)
        ann = ((crd or {}).get("metadata") or {}).get("annotations") or {}
        text = ann.get(REFERENCES_ANNOTATION)
        if not isinstance(text, str):
            continue
        try:
            refs = parse_references(text)
        except ValueError:
            continue
        for ref in refs:
            for name, ns in ref.names(entry.obj):
                target = ObjectKey(
                    ref.group, ref.kind, (ns or key.namespace) if ref.namespaced else "", name
                )
                if target in deps and target != key:
                    deps[key].add(target)
    order: list[ObjectKey] = []
    done: set[ObjectKey] = set()
    pending = sorted(entries, key=lambda k: (rank[k], k))
    while pending:
        progress = [k for k in pending if deps[k] <= done]
        if not progress:  # a cycle: take the first left in order
            progress = [pending[0]]
        first = progress[0]
        order.append(first)
        done.add(first)
        pending.remove(first)
    return order


ADOPTED: Final = "first sync of an object made otherwise: its last-synced record is written"
"""The detail of an ``updated`` result for an object no sync wrote before (it is written
even when it already equals the source, to record the last-synced state)."""


def target_namespace(target: ClusterSource) -> str:
    """The namespace a manifest without one is synced into on ``target``: its
    ``namespace`` when set, else its kubeconfig context's namespace (``default`` for a
    URL), as ``kubectl apply --context`` places it."""
    return target.namespace or target.client.namespace or "default"


def place_manifests(
    source: Source, entries: Sequence[Entry], schemas: KindSchemas, target: ClusterSource
) -> dict[ObjectKey, Entry]:
    """``source``'s entries keyed and placed for ``target`` as ``kubectl apply`` places
    them (:func:`~kubewerk.sync.compare.index_entries`) in the namespace
    :func:`~kubewerk.sync.compare.manifest_namespace` names for the pair (the target's
    own ``namespace`` first). When that namespace is enforced (the target, or a cluster
    source, is narrowed to one namespace: ``-n``), an object of a namespaced kind placed
    in another namespace raises :class:`~kubewerk.sync.sources.SourceError` naming its
    file and both namespaces; cluster-scoped objects are never refused (their namespace
    is dropped). Used by the sync and by the drift watch alike."""
    namespace, enforced = manifest_namespace(source, target)
    placed = index_entries(entries, schemas, manifests=True, default_namespace=namespace)
    if enforced:
        check_namespace(placed, namespace, "sync")
    return placed


async def _wait_established(
    target: ClusterSource, names: Sequence[str], timeout: float = 10.0
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    for name in names:
        while True:
            crd = await target.client.get(_CRD_RT, name)
            conds = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                break
            if loop.time() > deadline:
                raise TimeoutError(f"CRD {name} not Established within {timeout:.0f}s")
            await asyncio.sleep(0.05)
    target.client.forget_discovery()


@dataclass(slots=True)
class _Plan:
    """One target after the read phase: its report, and (when it could be read) the
    source's entries placed for it, its live objects and the kind knowledge."""

    target: ClusterSource
    report: TargetReport
    src: dict[ObjectKey, Entry] = field(default_factory=dict)
    live: dict[ObjectKey, Entry] = field(default_factory=dict)
    schemas: KindSchemas = field(default_factory=KindSchemas)
    readable: bool = False


def _failed(report: TargetReport, exc: Exception) -> TargetReport:
    report.status = "unreachable" if isinstance(exc, ServerUnreachable) else "failed"
    report.detail = str(exc)
    return report


PRUNED_KINDS: Final[dict[GroupKind, str]] = {
    GroupKind("", "ConfigMap"): "v1",
    GroupKind("", "Endpoints"): "v1",
    GroupKind("", "PersistentVolumeClaim"): "v1",
    GroupKind("", "Pod"): "v1",
    GroupKind("", "ReplicationController"): "v1",
    GroupKind("", "Secret"): "v1",
    GroupKind("", "Service"): "v1",
    GroupKind("batch", "Job"): "batch/v1",
    GroupKind("batch", "CronJob"): "batch/v1",
    GroupKind("networking.k8s.io", "Ingress"): "networking.k8s.io/v1",
    GroupKind("apps", "DaemonSet"): "apps/v1",
    GroupKind("apps", "Deployment"): "apps/v1",
    GroupKind("apps", "ReplicaSet"): "apps/v1",
    GroupKind("apps", "StatefulSet"): "apps/v1",
}
"""The namespaced built-in kinds ``--prune`` looks at in the namespaces the source
writes to even when the source holds none of them any more (its last ConfigMap
removed): the namespaced part of ``kubectl apply --prune``'s default allowlist, which
kubectl too prunes only in the namespaces it applied to."""


def _crd_kinds(entries: Sequence[Entry]) -> dict[GroupKind, str]:
    """The kinds the source's CRDs define, at their storage version."""
    out: dict[GroupKind, str] = {}
    for e in entries:
        if _gk(e.obj) != _CRD:
            continue
        spec = e.obj.get("spec") or {}
        names = spec.get("names") or {}
        versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
        stored = [v for v in versions if v.get("storage")] or versions
        group, kind = spec.get("group"), names.get("kind")
        if isinstance(group, str) and isinstance(kind, str) and stored:
            out.setdefault(GroupKind(group, kind), f"{group}/{stored[0].get('name')}")
    return out


async def _prunable(
    target: ClusterSource, kinds: Mapping[GroupKind, str], namespaces: Sequence[str]
) -> list[Entry]:
    """The objects ``--prune`` reads beyond the source's own kinds (``kinds``): those of
    :data:`PRUNED_KINDS` in each of ``namespaces`` (the namespaces the source writes
    to). A kind this user may not list there is left out with a warning on ``target``."""
    out: list[Entry] = []
    for ns in namespaces:
        view = ClusterSource(target.name, target.client, owns_client=False, namespace=ns)
        for gk, av in PRUNED_KINDS.items():
            if gk in kinds:
                continue
            try:
                out.extend(await view.objects({gk: av}))
            except Forbidden:
                target.warn(f"may not list {gk} in {ns} (403 Forbidden): none is pruned there")
    return out


async def _read_target(
    source: Source, source_entries: list[Entry], target: ClusterSource, prune: bool = False
) -> _Plan:
    """The read phase of one target: nothing is written. A target that cannot be read is
    its own result (``unreachable`` or ``failed``); a manifest
    :func:`place_manifests` refuses raises out (:class:`SourceError`). With ``prune``,
    the kinds of the source's CRDs are read too, and :func:`_prunable`'s objects."""
    plan = _Plan(target, TargetReport(target.name))
    try:
        kinds: dict[GroupKind, str] = {}
        for e in source_entries:
            kinds.setdefault(_gk(e.obj), str(e.obj.get("apiVersion")))
        if prune:
            for gk, av in _crd_kinds(source_entries).items():
                kinds.setdefault(gk, av)
        live_entries = await target.objects(kinds)
        plan.schemas = await prepare_schemas(source, source_entries, target, live_entries)
    except (ServerUnreachable, ApiError, TimeoutError, SourceError) as exc:
        _failed(plan.report, exc)
        return plan
    plan.src = place_manifests(source, source_entries, plan.schemas, target)
    if prune:
        visited = sorted({k.namespace for k in plan.src if k.namespace})
        try:
            live_entries = [*live_entries, *await _prunable(target, kinds, visited)]
        except (ServerUnreachable, ApiError, TimeoutError) as exc:
            _failed(plan.report, exc)
            return plan
    plan.live = index_entries(live_entries, plan.schemas, manifests=False)
    plan.readable = True
    return plan


async def _sync_target(
    source: Source, plan: _Plan, policy: Policy, prune: bool, dry_run: bool
) -> TargetReport:
    """The write phase of one target read by :func:`_read_target`."""
    report, target, src, live, schemas = (
        plan.report,
        plan.target,
        plan.src,
        plan.live,
        plan.schemas,
    )
    if not plan.readable:
        return report
    try:
        if policy == "cluster-wins":
            await _write_back(source, target, src, live, schemas, prune, dry_run, report)
            return report
        crds_applied: list[str] = []
        for key in dependency_order(src, schemas):
            if key.group_kind != _CRD and crds_applied:
                if not dry_run:
                    await _wait_established(target, crds_applied)
                crds_applied = []
            result = await _sync_object(
                target, key, src[key].obj, _obj(live.get(key)), policy, schemas, dry_run, src
            )
            report.results.append(result)
            if key.group_kind == _CRD and result.action in ("created", "updated"):
                crds_applied.append(key.name)
        if crds_applied and not dry_run:
            await _wait_established(target, crds_applied)
        for key in sorted(set(live) - set(src), reverse=True):
            obj = live[key].obj
            if last_synced(obj) is None:
                continue  # never synced from a source: not ours to prune
            if prune:
                gone = await delete_object(target.client, obj, dry_run=dry_run)
                report.results.append(ObjectResult(key, "deleted" if gone else "unchanged"))
            else:
                report.results.append(ObjectResult(key, "extra", "not in the source (use --prune)"))
    except (ServerUnreachable, ApiError, TimeoutError, SourceError) as exc:
        return _failed(report, exc)
    if any(r.action == "failed" for r in report.results):
        report.status = "failed"
    return report


async def _sync_object(
    target: ClusterSource,
    key: ObjectKey,
    obj: dict[str, Any],
    live_obj: dict[str, Any] | None,
    policy: Policy,
    schemas: KindSchemas,
    dry_run: bool,
    planned: Collection[ObjectKey] = (),
) -> ObjectResult:
    """Sync one object under ``policy``. ``planned``: every key this sync writes (a
    dry run that meets a missing namespace or kind those would have made reports the
    object ``created``, saying so, instead of ``failed``)."""
    client = target.client
    try:
        desired = desired_state(obj)
        record: dict[str, Any] | None = None
        conflicts: list[str] = []
        if live_obj is not None and live_obj.get("apiVersion") != obj.get("apiVersion"):
            live_obj = await target.get(
                str(obj.get("apiVersion")), key.kind, key.name, key.namespace
            )
        if policy == "merge" and live_obj is not None:
            base = last_synced(live_obj)
            if base is not None:
                merged, conflicts, record = await _merge(
                    client, key, base, desired, live_obj, schemas
                )
                desired = merged
        result = await apply_object(
            client,
            desired,
            policy,
            live=live_obj,
            record=record if record is not None else desired_state(obj),
            schemas=schemas,
            dry_run=dry_run,
        )
    except NotFound as exc:
        made_first = _made_first(key, exc, planned, schemas) if dry_run else None
        if made_first is not None:
            return ObjectResult(key, "created", f"dry run: {exc} ({made_first})")
        return ObjectResult(key, "failed", str(exc))
    except ApiError as exc:
        return ObjectResult(key, "failed", str(exc))
    if conflicts:
        return ObjectResult(
            key, "conflict", f"{result.action}; kept the cluster's value", conflicts
        )
    if result.action == "updated" and live_obj is not None and last_synced(live_obj) is None:
        return ObjectResult(key, "updated", ADOPTED)
    return ObjectResult(key, result.action)


def _made_first(
    key: ObjectKey, exc: NotFound, planned: Collection[ObjectKey], schemas: KindSchemas
) -> str | None:
    """Why a dry-run write of ``key`` met ``exc`` although the sync would succeed: the
    namespace it goes to, or the CRD serving its kind, is among ``planned`` (created
    earlier by the same sync, which a dry run does not do). None when neither is: the
    real sync would fail the same way."""
    details = exc.details or {}
    if details.get("kind") == "namespaces" and key.namespace:
        if ObjectKey("", "Namespace", "", key.namespace) in planned:
            return f"its namespace {key.namespace} is created first"
        return None
    crd = schemas.crd(key.group_kind)
    name = ((crd or {}).get("metadata") or {}).get("name")
    if isinstance(name, str) and ObjectKey(_CRD.group, _CRD.kind, "", name) in planned:
        return "its CRD is created first"
    return None


async def _merge(
    client: Client,
    key: ObjectKey,
    base: dict[str, Any],
    desired: dict[str, Any],
    live: dict[str, Any],
    schemas: KindSchemas,
) -> tuple[dict[str, Any], list[str], dict[str, Any] | None]:
    """The merge policy's three states merged (merged object, conflicting paths, the
    state to record). The cluster's copy carries every default its server applied, so
    the base and the source are compared with it *as that cluster would store them*
    (:func:`~kubewerk.sync.defaults.defaulted_state`): a field only defaulting filled in
    is not a change on the cluster's side (nor a conflict with a source that sets it).
    When the source has not changed since the base nothing needs defaulting (the cluster
    keeps its own state). Without conflicts the source's own state (as written) is
    recorded; with them merge3's record, which keeps the old base at the conflicts."""
    theirs = desired_state(live)
    shape = schemas.shape(str(desired.get("apiVersion", "")), key.kind)
    if key.namespace:  # a record written before manifests were placed names none
        base = _in_namespace(base, key.namespace)
    if quick_equal(base, desired):
        return theirs, [], None
    base_d = await defaulted_state(client, base, live, schemas)
    ours_d = await defaulted_state(client, desired, live, schemas)
    merged, conflicts, record = merge3(base_d, ours_d, theirs, shape)
    return merged, conflicts, (record if conflicts else None)


async def _write_back(
    source: Source,
    target: ClusterSource,
    src: dict[ObjectKey, Entry],
    live: dict[ObjectKey, Entry],
    schemas: KindSchemas,
    prune: bool,
    dry_run: bool,
    report: TargetReport,
) -> None:
    """cluster-wins: the cluster's objects written into the source's manifests."""
    if not isinstance(source, ManifestSource) or source.root is None or not source.writable:
        raise SourceError(
            f"{source.name}: cluster-wins writes manifests; the source must be a directory or file"
        )
    edits: dict[str, dict[int, dict[str, Any] | None]] = {}
    new_objects: list[tuple[ObjectKey, dict[str, Any]]] = []

    for key in sorted(set(src) | set(live)):
        s, c = src.get(key), live.get(key)
        if c is not None:
            cobj = c.obj
            if s is not None and s.obj.get("apiVersion") != cobj.get("apiVersion"):
                version = str(s.obj.get("apiVersion"))
                cobj = await target.get(version, key.kind, key.name, key.namespace) or cobj
            state = desired_state(cobj)
            if s is not None:
                shape = schemas.shape(str(state["apiVersion"]), key.kind)
                written = strip_server_fields(s.obj)
                if same_value(written, state, shape):
                    report.results.append(ObjectResult(key, "unchanged"))
                    continue
                # the manifest as this cluster would store it: what only the cluster's
                # defaulting added is neither a change nor written back
                wanted = await defaulted_state(
                    target.client, s.obj, cobj, schemas, warn=target.warn
                )
                if same_value(wanted, state, shape):
                    report.results.append(ObjectResult(key, "unchanged"))
                    continue
                assert s.path is not None
                edits.setdefault(s.path, {})[s.index] = await _written_back(
                    target, state, s.obj, wanted, cobj, schemas, shape
                )
            else:
                new_objects.append((key, state))
            report.results.append(ObjectResult(key, "written"))
        elif s is not None:
            if prune:
                assert s.path is not None
                edits.setdefault(s.path, {})[s.index] = None
                report.results.append(ObjectResult(key, "deleted", f"removed from {s.path}"))
            else:
                report.results.append(
                    ObjectResult(key, "extra", "not in the cluster (use --prune)")
                )
    if dry_run:
        return
    for path, changes in edits.items():
        text = Path(path).read_bytes()
        docs = parse_manifests(text, path)
        kept = [_as_written(changes[i], d) if i in changes else d for i, d in enumerate(docs)]
        Path(path).write_text(dump_manifests(d for d in kept if d is not None))
    if new_objects:
        root = source.root
        for key, state in new_objects:
            if root.is_dir():
                parts = [key.kind.lower(), key.namespace, key.name]
                out = root / ("-".join(p for p in parts if p) + ".yaml")
                out.write_text(dump_manifests([state]))
            else:
                with root.open("a") as fh:
                    fh.write("---\n" + dump_manifests([state]))


async def _written_back(
    target: ClusterSource,
    state: dict[str, Any],
    manifest: Mapping[str, Any],
    wanted: dict[str, Any],
    live: Mapping[str, Any],
    schemas: KindSchemas,
    shape: Shape,
) -> dict[str, Any]:
    """The document written back for a changed object: the cluster's ``state`` without
    what defaulting alone added to ``manifest`` (:func:`without_defaults`), provided the
    cluster stores that document as ``state`` again (checked the way ``diff`` compares,
    one more dry run for a built-in kind); else ``state`` whole. A server that does more
    than default (a Secret's ``stringData`` becomes ``data``) must not lose a field."""
    reduced: dict[str, Any] = without_defaults(state, strip_server_fields(manifest), wanted, shape)
    if reduced == state:
        return state
    again = await defaulted_state(target.client, reduced, live, schemas, warn=target.warn)
    return reduced if same_value(again, state, shape) else state


def _as_written(state: dict[str, Any] | None, doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """A cluster's ``state`` replacing manifest ``doc``, without the namespace the
    manifest left to placement (``-n`` or the context namespace) when it named none."""
    if state is None:
        return None
    meta = doc.get("metadata")
    if isinstance(meta, Mapping) and not meta.get("namespace"):
        placed = state.get("metadata")
        if isinstance(placed, dict) and "namespace" in placed:
            state = {**state, "metadata": {k: v for k, v in placed.items() if k != "namespace"}}
    return state


async def sync(
    source: Source,
    targets: Sequence[ClusterSource],
    policy: Policy = "git-wins",
    *,
    prune: bool = False,
    dry_run: bool = False,
) -> SyncReport:
    """Sync ``targets`` with ``source`` under ``policy`` (see the module docstring);
    targets are read concurrently, then synced concurrently and independently. A
    manifest a target narrowed to a namespace refuses (:func:`place_manifests`) raises
    :class:`~kubewerk.sync.sources.SourceError` (the first in target order) before any
    target is written."""
    if policy not in ("git-wins", "cluster-wins", "merge"):
        raise ValueError(f"unknown policy {policy!r}: expected git-wins, cluster-wins or merge")
    if policy == "cluster-wins" and len(targets) != 1:
        raise ValueError("cluster-wins writes one cluster's state back: give exactly one target")
    entries = await source.objects()
    read = await asyncio.gather(
        *(_read_target(source, entries, t, prune and policy != "cluster-wins") for t in targets),
        return_exceptions=True,
    )
    plans: list[_Plan] = []
    for outcome in read:
        if isinstance(outcome, BaseException):
            raise outcome
        plans.append(outcome)
    reports = await asyncio.gather(
        *(_sync_target(source, p, policy, prune, dry_run) for p in plans)
    )
    warnings: list[str] = []
    for side in (source, *targets):
        if isinstance(side, ClusterSource):
            warnings.extend(w for w in side.warnings if w not in warnings)
    return SyncReport(policy, dry_run, list(reports), warnings)
