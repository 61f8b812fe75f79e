"""ReplicaSets and Deployments, as kube-controller-manager runs them.

ReplicaSet: keeps ``spec.replicas`` active Pods from its template (``<rs>-`` plus five
characters, a controller ownerReference with ``blockOwnerDeletion``); surplus Pods go in
kube's order (unbound first, then Pending, not ready, most recently ready); status
``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` (ready for
``minReadySeconds``) and ``observedGeneration``.

Deployment: the new ReplicaSet is ``<deployment>-<pod-template-hash>`` with the hash label
in its selector, template and labels, the Deployment's annotations (copied again at each
sync, as ``kubernetes.io/change-cause`` for ``rollout history``) and
``deployment.kubernetes.io/revision``, ``desired-replicas`` and ``max-replicas``; an old
ReplicaSet made new again by a rollback lists its earlier revisions in ``revision-history``;
the Deployment carries the newest revision. RollingUpdate steps by ``maxSurge``/
``maxUnavailable`` (``rollout``), Recreate scales the old ReplicaSets to zero and waits for
their Pods to go before scaling the new one up; old ReplicaSets at zero beyond
``revisionHistoryLimit`` are deleted, oldest first; a paused Deployment only scales. Status
as ``calculateStatus``, with the ``Available`` (``MinimumReplicasAvailable``/
``MinimumReplicasUnavailable``) and ``Progressing`` (``NewReplicaSetCreated``,
``FoundNewReplicaSet``, ``ReplicaSetUpdated``, ``NewReplicaSetAvailable``,
``DeploymentPaused``/``DeploymentResumed``) conditions and their messages.
``progressDeadlineSeconds`` is not timed out (no ``ProgressDeadlineExceeded``).
"""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.simulate import naming
from kubewerk.apiserver.simulate.clock import parse_rfc3339
from kubewerk.apiserver.simulate.engine import (
    Engine,
    changed_copy,
    is_active,
    is_pod_ready,
    owner_ref,
    set_condition,
    split_key,
)
from kubewerk.apiserver.simulate.rollout import (
    IntOrPercentError,
    RSCounts,
    fenceposts,
    new_rs_replicas,
    old_rs_scale_down,
)
from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.selectors import parse_label_selector

JSON = dict[str, Any]

RS_PREFIX = "/apps/replicasets/"
POD_PREFIX = "/core/pods/"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX = "deployment.kubernetes.io/max-replicas"
HISTORY = "deployment.kubernetes.io/revision-history"
NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        HISTORY,
        DESIRED,
        MAX,
        "deprecated.deployment.rollback.to",
    }
)
"""The Deployment annotations its ReplicaSets do not get (kube's ``annotationsToSkip``)."""
MAX_HISTORY_CHARS = 2000
"""The longest ``revision-history`` the Deployment controller writes
(``maxRevHistoryLengthInChars``)."""


def copied_annotations(d: JSON) -> dict[str, str]:
    """The Deployment's annotations its new ReplicaSet carries, whenever the controller
    syncs it (``copyDeploymentAnnotationsToReplicaSet``): a ``kubernetes.io/change-cause``
    written after the rollout began still reaches its ReplicaSet."""
    return {
        k: v for k, v in (d["metadata"].get("annotations") or {}).items() if k not in NOT_COPIED
    }


def appended_history(history: str, revision: str) -> str:
    """``revision-history`` with ``revision`` appended, the oldest entries dropped to stay
    within ``MAX_HISTORY_CHARS`` (unchanged when even that cannot make it fit)."""
    if not history:
        return revision
    old = history.split(",")
    total = len(history) + len(revision) + 1
    start = 0
    while total > MAX_HISTORY_CHARS and start < len(old):
        total -= len(old[start]) + 1
        start += 1
    return ",".join([*old[start:], revision]) if total <= MAX_HISTORY_CHARS else history


def selector_matches(selector: JSON | None, labels: dict[str, str]) -> bool:
    """A ``LabelSelector`` (matchLabels and matchExpressions) against ``labels``; an
    empty or missing selector matches nothing (as workload controllers treat it)."""
    if not selector:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator")
        values = expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return bool(selector.get("matchLabels") or selector.get("matchExpressions"))


def _replicas(obj: JSON, default: int = 1) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def available(pod: JSON, min_ready: int, now: Any) -> bool:
    """``IsPodAvailable``: ready for at least ``minReadySeconds``."""
    if not is_pod_ready(pod):
        return False
    if min_ready <= 0:
        return True
    cond = next(c for c in pod["status"]["conditions"] if c.get("type") == "Ready")
    since = parse_rfc3339(str(cond.get("lastTransitionTime") or ""))
    return since is not None and (now - since).total_seconds() >= min_ready


def pod_from_template(template: JSON, owner: JSON, kind: str, api_version: str) -> JSON:
    """A Pod as a workload controller makes it from its template."""
    tmeta = template.get("metadata") or {}
    meta: JSON = {"generateName": naming.pod_prefix(owner["metadata"]["name"])}
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    meta["ownerReferences"] = [owner_ref(owner, api_version, kind)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy_json(template.get("spec") or {}),
    }


def _deletion_rank(pod: JSON) -> tuple[int, int, int, str]:
    """Which surplus Pod goes first (``ActivePods`` order, simplified): unbound, then
    Pending/Unknown before Running, not ready before ready, newest first."""
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(str(phase), 0)
    created = str(pod["metadata"].get("creationTimestamp") or "")
    inverted = "".join(chr(0x10FFFF - ord(ch)) for ch in created)
    return (1 if spec.get("nodeName") else 0, phase_rank, 1 if is_pod_ready(pod) else 0, inverted)


class ReplicaSets:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.events = engine.events.recorder("replicaset-controller")
        engine.handlers["replicaset"] = self.reconcile

    def reconcile(self, key: str) -> None:
        engine = self.engine
        rs = engine.get(key)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        spec = rs.get("spec") or {}
        pods = [p for _, p in engine.owned(rs, POD_PREFIX)]
        active = [p for p in pods if is_active(p)]
        want = _replicas(rs)
        if len(active) < want:
            for _ in range(want - len(active)):
                ns, _name = split_key(key)
                body = pod_from_template(spec.get("template") or {}, rs, "ReplicaSet", "apps/v1")
                created = engine.create("", "pods", ns, body)
                if created is None:
                    break
                self.events.normal(
                    rs, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}"
                )
        elif len(active) > want:
            surplus = sorted(active, key=_deletion_rank)[: len(active) - want]
            for pod in surplus:
                ns = pod["metadata"].get("namespace", "")
                if engine.delete(f"{POD_PREFIX}{ns}/{pod['metadata']['name']}"):
                    self.events.normal(
                        rs, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}"
                    )
        self.update_status(key)

    def update_status(self, key: str) -> None:
        engine = self.engine
        rs = engine.get(key)
        if rs is None:
            return
        spec = rs.get("spec") or {}
        pods = [p for _, p in engine.owned(rs, POD_PREFIX) if is_active(p)]
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = engine.clock.now()
        ready = [p for p in pods if is_pod_ready(p)]
        avail = [p for p in ready if available(p, min_ready, now)]
        status = dict(rs.get("status") or {})
        new_status: JSON = {
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(
                1
                for p in pods
                if all(
                    ((p["metadata"].get("labels") or {}).get(k) == v)
                    for k, v in template_labels.items()
                )
            ),
            "readyReplicas": len(ready),
            "availableReplicas": len(avail),
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if status.get("conditions"):
            new_status["conditions"] = status["conditions"]
        for name in ("readyReplicas", "availableReplicas", "fullyLabeledReplicas"):
            if new_status[name] == 0:
                del new_status[name]
        if len(ready) > len(avail) and min_ready > 0:
            engine.after(float(min_ready), "replicaset", key)
        if new_status != status:
            new = changed_copy(rs)
            new["status"] = new_status
            engine.update(key, new, status=True)


class Deployments:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.events = engine.events.recorder("deployment-controller")
        engine.handlers["deployment"] = self.reconcile

    def reconcile(self, key: str) -> None:
        engine = self.engine
        d = engine.get(key)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return
        spec = d.get("spec") or {}
        ns, _name = split_key(key)
        desired = _replicas(d)
        template = copy_json(spec.get("template") or {})
        status = d.get("status") or {}
        collision = status.get("collisionCount")
        template_hash = naming.pod_template_hash(template, collision)
        all_rs = [rs for _, rs in engine.owned(d, RS_PREFIX)]
        new_rs = self._find_new(all_rs, template)
        olds = [rs for rs in all_rs if rs is not new_rs]
        revisions = [
            int(v)
            for rs in all_rs
            if str(v := (rs["metadata"].get("annotations") or {}).get(REVISION, "")).isdigit()
        ]
        max_old = max((r for rs, r in self._revs(olds)), default=0)
        strategy = spec.get("strategy") or {}
        rolling = strategy.get("type", "RollingUpdate") != "Recreate"
        ru = strategy.get("rollingUpdate") or {}
        try:
            surge, unavailable = (
                fenceposts(ru.get("maxSurge", "25%"), ru.get("maxUnavailable", "25%"), desired)
                if rolling
                else (0, 0)
            )
        except IntOrPercentError:
            return  # validation refuses these; nothing to do with one stored anyway
        progressing_reason: tuple[str, str] | None = None
        if new_rs is None and not spec.get("paused"):
            revision = max(revisions, default=0) + 1
            new_rs = self._create_rs(d, template, template_hash, revision, desired, surge, olds)
            if new_rs is None:
                return
            progressing_reason = (
                "NewReplicaSetCreated",
                f'Created new replica set "{new_rs["metadata"]["name"]}"',
            )
        elif new_rs is not None:
            self._sync_rs_annotations(new_rs, d, max_old, desired, surge)
        if new_rs is not None:
            new_rs = engine.get(self._rs_key(ns, new_rs)) or new_rs
        if spec.get("paused"):
            self._scale_paused(d, new_rs, olds, desired, surge)
        elif rolling and new_rs is not None:
            self._rolling(d, new_rs, olds, desired, surge, unavailable)
        elif new_rs is not None:
            self._recreate(d, new_rs, olds, desired)
        self._cleanup(d, olds)
        self._sync_revision(key, new_rs)
        self._status(key, new_rs, desired, unavailable, progressing_reason)

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def _rs_key(ns: str, rs: JSON) -> str:
        return f"{RS_PREFIX}{ns}/{rs['metadata']['name']}"

    @staticmethod
    def _revs(rss: list[JSON]) -> list[tuple[JSON, int]]:
        out = []
        for rs in rss:
            text = str((rs["metadata"].get("annotations") or {}).get(REVISION, ""))
            out.append((rs, int(text) if text.isdigit() else 0))
        return out

    @staticmethod
    def _find_new(all_rs: list[JSON], template: JSON) -> JSON | None:
        """``FindNewReplicaSet``: the oldest ReplicaSet whose template equals the
        Deployment's, the hash label aside."""
        matches = []
        for rs in all_rs:
            rs_template = copy_json((rs.get("spec") or {}).get("template") or {})
            labels = (rs_template.get("metadata") or {}).get("labels") or {}
            labels.pop(naming.POD_TEMPLATE_HASH, None)
            if not labels and "metadata" in rs_template:
                rs_template["metadata"].pop("labels", None)
            tmeta = template.get("metadata") or {}
            if (
                rs_template.get("spec") == template.get("spec")
                and ((rs_template.get("metadata") or {}).get("labels") or {})
                == (tmeta.get("labels") or {})
                and ((rs_template.get("metadata") or {}).get("annotations") or {})
                == (tmeta.get("annotations") or {})
            ):
                matches.append(rs)
        matches.sort(
            key=lambda r: (str(r["metadata"].get("creationTimestamp")), r["metadata"]["name"])
        )
        return matches[0] if matches else None

    def _create_rs(
        self,
        d: JSON,
        template: JSON,
        template_hash: str,
        revision: int,
        desired: int,
        surge: int,
        olds: list[JSON],
    ) -> JSON | None:
        engine = self.engine
        ns = d["metadata"].get("namespace", "")
        spec = d.get("spec") or {}
        rs_template = copy_json(template)
        rs_template.setdefault("metadata", {}).setdefault("labels", {})[
            naming.POD_TEMPLATE_HASH
        ] = template_hash
        selector = copy_json(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[naming.POD_TEMPLATE_HASH] = template_hash
        annotations = copied_annotations(d)
        annotations[DESIRED] = str(desired)
        annotations[MAX] = str(desired + surge)
        annotations[REVISION] = str(revision)
        rolling = (spec.get("strategy") or {}).get("type", "RollingUpdate") != "Recreate"
        # a brand-new rollout with no old pods starts at full size (NewRSNewReplicas
        # grows it by the surge budget; with nothing old that is all of it)
        old_total = sum(_replicas(rs, 0) for rs in olds)
        start = 0
        if rolling:
            start = max(0, min(desired, desired + surge - old_total))
        elif old_total == 0:
            start = desired
        body: JSON = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": naming.replicaset_name(d["metadata"]["name"], template_hash),
                "namespace": ns,
                "labels": dict(rs_template["metadata"]["labels"]),
                "annotations": annotations,
                "ownerReferences": [owner_ref(d, "apps/v1", "Deployment")],
            },
            "spec": {
                "replicas": start,
                "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                "selector": selector,
                "template": rs_template,
            },
        }
        created = engine.create("apps", "replicasets", ns, body)
        if created is not None and start > 0:
            self._scaled(d, created["metadata"]["name"], 0, start)
        if created is None:
            existing = engine.get(f"{RS_PREFIX}{ns}/{body['metadata']['name']}")
            if existing is not None and not any(
                r.get("uid") == d["metadata"]["uid"]
                for r in existing["metadata"].get("ownerReferences") or []
            ):
                # a hash collision with someone else's ReplicaSet: bump collisionCount
                new = changed_copy(d)
                status = new.setdefault("status", {})
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                engine.update(f"/apps/deployments/{ns}/{d['metadata']['name']}", new, status=True)
        return created

    def _sync_rs_annotations(
        self, rs: JSON, d: JSON, max_old: int, desired: int, surge: int
    ) -> None:
        annotations = dict(rs["metadata"].get("annotations") or {})
        wanted = {**annotations, **copied_annotations(d)}
        current_rev = str(annotations.get(REVISION, ""))
        if not current_rev.isdigit() or int(current_rev) <= max_old:
            wanted[REVISION] = str(max_old + 1)
            if current_rev.isdigit():
                # an old ReplicaSet made new again (a rollback) keeps its past revisions
                wanted[HISTORY] = appended_history(wanted.get(HISTORY, ""), current_rev)
        wanted[DESIRED] = str(desired)
        wanted[MAX] = str(desired + surge)
        if wanted != annotations:
            new = changed_copy(rs)
            new["metadata"]["annotations"] = wanted
            self.engine.update(self._rs_key(d["metadata"].get("namespace", ""), rs), new)

    def _scale(self, d: JSON, rs: JSON, replicas: int) -> None:
        if _replicas(rs, 0) == replicas:
            return
        ns = d["metadata"].get("namespace", "")
        key = self._rs_key(ns, rs)
        current = self.engine.get(key)
        if current is None:
            return
        new = changed_copy(current)
        new["spec"]["replicas"] = replicas
        annotations = new["metadata"].setdefault("annotations", {})
        annotations[DESIRED] = str(_replicas(d))
        if self.engine.update(key, new) is not None:
            self._scaled(d, rs["metadata"]["name"], _replicas(current, 0), replicas)

    def _scaled(self, d: JSON, rs_name: str, old: int, new: int) -> None:
        """``scaleReplicaSet``'s event (and ``getNewReplicaSet``'s for a new one)."""
        self.events.normal(
            d,
            "ScalingReplicaSet",
            f"Scaled {'up' if new > old else 'down'} replica set {rs_name} from {old} to {new}",
        )

    def _counts(self, rs: JSON) -> RSCounts:
        return RSCounts(
            rs["metadata"]["name"],
            _replicas(rs, 0),
            int((rs.get("status") or {}).get("availableReplicas") or 0),
            str(rs["metadata"].get("creationTimestamp") or ""),
        )

    def _rolling(
        self, d: JSON, new_rs: JSON, olds: list[JSON], desired: int, surge: int, unavailable: int
    ) -> None:
        new_counts = self._counts(new_rs)
        old_counts = [self._counts(rs) for rs in olds]
        grow_to = new_rs_replicas(desired, surge, new_counts, [new_counts, *old_counts])
        if grow_to != new_counts.replicas:
            self._scale(d, new_rs, grow_to)
            new_counts = RSCounts(
                new_counts.name, grow_to, new_counts.available, new_counts.created
            )
        for name, replicas in old_rs_scale_down(
            desired, unavailable, new_counts, old_counts
        ).items():
            rs = next(r for r in olds if r["metadata"]["name"] == name)
            self._scale(d, rs, replicas)

    def _recreate(self, d: JSON, new_rs: JSON, olds: list[JSON], desired: int) -> None:
        for rs in olds:
            if _replicas(rs, 0):
                self._scale(d, rs, 0)
        old_pods = [p for rs in olds for _, p in self.engine.owned(rs, POD_PREFIX)]
        if old_pods:
            return  # wait for every old pod to be gone
        self._scale(d, new_rs, desired)

    def _scale_paused(
        self, d: JSON, new_rs: JSON | None, olds: list[JSON], desired: int, surge: int
    ) -> None:
        active = [rs for rs in ([new_rs] if new_rs else []) + olds if _replicas(rs, 0) > 0]
        if len(active) == 1 and _replicas(active[0], 0) != desired:
            self._scale(d, active[0], desired)

    def _cleanup(self, d: JSON, olds: list[JSON]) -> None:
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        if not isinstance(limit, int):
            limit = 10
        idle = [
            rs
            for rs in olds
            if _replicas(rs, 0) == 0
            and not (rs.get("status") or {}).get("replicas")
            and not rs["metadata"].get("deletionTimestamp")
        ]
        excess = len(idle) - limit
        if excess <= 0:
            return
        idle.sort(key=lambda rs: (self._revs([rs])[0][1], rs["metadata"].get("creationTimestamp")))
        ns = d["metadata"].get("namespace", "")
        for rs in idle[:excess]:
            self.engine.delete(self._rs_key(ns, rs))

    def _sync_revision(self, key: str, new_rs: JSON | None) -> None:
        if new_rs is None:
            return
        d = self.engine.get(key)
        rs = self.engine.get(self._rs_key(split_key(key)[0], new_rs))
        if d is None or rs is None:
            return
        revision = (rs["metadata"].get("annotations") or {}).get(REVISION)
        if revision and (d["metadata"].get("annotations") or {}).get(REVISION) != revision:
            new = changed_copy(d)
            new["metadata"].setdefault("annotations", {})[REVISION] = revision
            self.engine.update(key, new)

    def _status(
        self,
        key: str,
        new_rs: JSON | None,
        desired: int,
        unavailable: int,
        created: tuple[str, str] | None,
    ) -> None:
        engine = self.engine
        d = engine.get(key)
        if d is None:
            return
        ns = split_key(key)[0]
        all_rs = [rs for _, rs in engine.owned(d, RS_PREFIX)]
        new_rs = engine.get(self._rs_key(ns, new_rs)) if new_rs is not None else None

        def total(field: str) -> int:
            return sum(int((rs.get("status") or {}).get(field) or 0) for rs in all_rs)

        spec_total = sum(_replicas(rs, 0) for rs in all_rs)
        available_count = total("availableReplicas")
        old_status = d.get("status") or {}
        status: JSON = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": total("replicas"),
            "updatedReplicas": int(((new_rs or {}).get("status") or {}).get("replicas") or 0),
            "readyReplicas": total("readyReplicas"),
            "availableReplicas": available_count,
            "unavailableReplicas": max(0, spec_total - available_count),
        }
        if "collisionCount" in old_status:
            status["collisionCount"] = old_status["collisionCount"]
        now = engine.now()
        conditions = list(old_status.get("conditions") or [])
        if available_count >= desired - unavailable:
            conditions = set_condition(
                conditions,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                now,
                update_time=True,
            )
        else:
            conditions = set_condition(
                conditions,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                now,
                update_time=True,
            )
        spec = d.get("spec") or {}
        rs_name = new_rs["metadata"]["name"] if new_rs is not None else ""
        complete = (
            status["updatedReplicas"] == desired
            and status["replicas"] == desired
            and available_count == desired
            and status["observedGeneration"] >= d["metadata"].get("generation", 1)
        )
        progressing = next((c for c in conditions if c.get("type") == "Progressing"), None)
        if spec.get("paused"):
            conditions = set_condition(
                conditions,
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused",
                now,
                update_time=True,
            )
        elif progressing is not None and progressing.get("reason") == "DeploymentPaused":
            conditions = set_condition(
                conditions,
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed",
                now,
                update_time=True,
            )
        elif complete and new_rs is not None:
            conditions = _move_last(
                set_condition(
                    conditions,
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    f'ReplicaSet "{rs_name}" has successfully progressed.',
                    now,
                    update_time=True,
                ),
                "Progressing",
            )
        elif created is not None:
            conditions = _move_last(
                set_condition(
                    conditions, "Progressing", "True", created[0], created[1], now, update_time=True
                ),
                "Progressing",
            )
        elif new_rs is not None and self._progressed(old_status, status):
            conditions = _move_last(
                set_condition(
                    conditions,
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    f'ReplicaSet "{rs_name}" is progressing.',
                    now,
                    update_time=True,
                ),
                "Progressing",
            )
        elif progressing is None and new_rs is not None:
            conditions = _move_last(
                set_condition(
                    conditions,
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    f'Found new replica set "{rs_name}"',
                    now,
                    update_time=True,
                ),
                "Progressing",
            )
        status["conditions"] = conditions
        for field in (
            "readyReplicas",
            "availableReplicas",
            "unavailableReplicas",
            "updatedReplicas",
            "replicas",
        ):
            if status[field] == 0:
                del status[field]
        if status != old_status:
            new = changed_copy(d)
            new["status"] = status
            engine.update(key, new, status=True)

    @staticmethod
    def _progressed(old: JSON, new: JSON) -> bool:
        """``DeploymentProgressing``: more updated, ready or available Pods, or fewer old."""

        def get(s: JSON, k: str) -> int:
            return int(s.get(k) or 0)

        old_old = get(old, "replicas") - get(old, "updatedReplicas")
        new_old = get(new, "replicas") - get(new, "updatedReplicas")
        return (
            get(new, "updatedReplicas") > get(old, "updatedReplicas")
            or new_old < old_old
            or get(new, "readyReplicas") > get(old, "readyReplicas")
            or get(new, "availableReplicas") > get(old, "availableReplicas")
        )


def _move_last(conditions: list[JSON], ctype: str) -> list[JSON]:
    """kube sets a Progressing condition by removing it and appending it."""
    keep = [c for c in conditions if c.get("type") != ctype]
    moved = [c for c in conditions if c.get("type") == ctype]
    return keep + moved


__all__ = ["Deployments", "ReplicaSets", "parse_label_selector", "selector_matches"]
