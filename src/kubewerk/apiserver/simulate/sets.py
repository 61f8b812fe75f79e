"""StatefulSets and DaemonSets.

StatefulSet: Pods ``<set>-<ordinal>`` with ``hostname`` and ``subdomain``
(``serviceName``), labels ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``, one claim per
``volumeClaimTemplates`` entry (``<template>-<set>-<ordinal>``). ``OrderedReady`` (the
default) creates ordinal n only when 0..n-1 are Running and Ready, and removes the highest
ordinal first, one at a time; ``Parallel`` does both at once. A template change rolls
(``RollingUpdate``, highest ordinal first, one at a time once all are ready; ``OnDelete``
waits for the user). Revisions are ControllerRevisions ``<set>-<hash>`` when that kind is
served. Status: replicas, readyReplicas, availableReplicas, currentReplicas,
updatedReplicas, currentRevision, updateRevision, observedGeneration, collisionCount.

DaemonSet: one Pod per node it may run on (node selector and affinity; taints it does not
tolerate, after the tolerations the controller adds to every daemon Pod), pinned with a
required node affinity on ``metadata.name`` and placed by the scheduler; Pods on nodes it
may no longer run on go. Status as the DaemonSet controller's counts.
"""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.simulate import naming
from kubewerk.apiserver.simulate.engine import (
    Engine,
    changed_copy,
    is_active,
    is_pod_ready,
    owner_ref,
    split_key,
)
from kubewerk.apiserver.simulate.fit import NodeUse, filter_node
from kubewerk.apiserver.simulate.nodes import NODE_PREFIX, Nodes
from kubewerk.apiserver.simulate.workloads import POD_PREFIX, available, pod_from_template
from kubewerk.core.jsoncopy import copy_json

JSON = dict[str, Any]

REVISION_HASH = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
TEMPLATE_GENERATION = "pod-template-generation"
_DAEMON_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def _replicas(obj: JSON) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _revision(engine: Engine, owner: JSON, kind: str, template: JSON) -> str:
    """The ``<owner>-<hash>`` revision name, with its ControllerRevision made if served."""
    # the StatefulSet and DaemonSet controllers hash with a collision count of 0 when unset
    collision = int((owner.get("status") or {}).get("collisionCount") or 0)
    name = f"{owner['metadata']['name']}-{naming.pod_template_hash(template, collision)}"
    rtype = engine.rtype("apps", "controllerrevisions")
    ns = owner["metadata"].get("namespace", "")
    if rtype is not None and engine.get(rtype.key(ns, name)) is None:
        existing = [obj for _, obj in engine.owned(owner, "/apps/controllerrevisions/")]
        number = 1 + max((int(o.get("revision") or 0) for o in existing), default=0)
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels[REVISION_HASH] = name.rsplit("-", 1)[-1]
        engine.create(
            "apps",
            "controllerrevisions",
            ns,
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": labels,
                    "ownerReferences": [owner_ref(owner, "apps/v1", kind)],
                },
                "data": {"spec": {"template": {**copy_json(template), "$patch": "replace"}}},
                "revision": number,
            },
        )
    return name


class StatefulSets:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.events = engine.events.recorder("statefulset-controller")
        engine.handlers["statefulset"] = self.reconcile

    def _pod_event(self, sts: JSON, verb: str, pod: str) -> None:
        """``recordPodEvent``: ``Successful<Verb>``, ``<verb> Pod P in StatefulSet S
        successful``."""
        self.events.normal(
            sts,
            f"Successful{verb.title()}",
            f"{verb} Pod {pod} in StatefulSet {sts['metadata']['name']} successful",
        )

    def reconcile(self, key: str) -> None:
        engine = self.engine
        sts = engine.get(key)
        if sts is None or sts["metadata"].get("deletionTimestamp"):
            return
        ns, name = split_key(key)
        spec = sts.get("spec") or {}
        template = spec.get("template") or {}
        revision = _revision(engine, sts, "StatefulSet", template)
        want = _replicas(sts)
        parallel = spec.get("podManagementPolicy") == "Parallel"
        pods: dict[int, JSON] = {}
        for _, pod in engine.owned(sts, POD_PREFIX):
            ordinal = naming.ordinal_of(name, pod["metadata"]["name"])
            if ordinal is not None:
                pods[ordinal] = pod
        # create missing ordinals below the wanted count
        for ordinal in range(want):
            existing = pods.get(ordinal)
            if existing is not None:
                if not parallel and not (is_active(existing) and is_pod_ready(existing)):
                    break
                continue
            self._create_pod(sts, ordinal, revision)
            if not parallel:
                break
        # remove ordinals beyond it, highest first
        extra = sorted((o for o in pods if o >= want), reverse=True)
        for ordinal in extra:
            pod = pods[ordinal]
            if not pod["metadata"].get("deletionTimestamp") and engine.delete(
                f"{POD_PREFIX}{ns}/{pod['metadata']['name']}"
            ):
                self._pod_event(sts, "delete", pod["metadata"]["name"])
            if not parallel:
                break
        # roll the template
        strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
        in_range = [pods[o] for o in sorted(pods) if o < want]
        if (
            strategy == "RollingUpdate"
            and len(in_range) == want
            and all(is_active(p) and is_pod_ready(p) for p in in_range)
        ):
            for pod in reversed(in_range):
                if (pod["metadata"].get("labels") or {}).get(REVISION_HASH) != revision:
                    if engine.delete(f"{POD_PREFIX}{ns}/{pod['metadata']['name']}"):
                        self._pod_event(sts, "delete", pod["metadata"]["name"])
                    break
        self._status(key, revision)

    def _create_pod(self, sts: JSON, ordinal: int, revision: str) -> None:
        engine = self.engine
        ns = sts["metadata"].get("namespace", "")
        name = naming.stateful_pod_name(sts["metadata"]["name"], ordinal)
        spec = sts.get("spec") or {}
        body = pod_from_template(spec.get("template") or {}, sts, "StatefulSet", "apps/v1")
        meta = body["metadata"]
        del meta["generateName"]
        meta["name"] = name
        labels = meta.setdefault("labels", {})
        labels[POD_NAME_LABEL] = name
        labels[POD_INDEX_LABEL] = str(ordinal)
        labels[REVISION_HASH] = revision
        body["spec"]["hostname"] = name
        if spec.get("serviceName"):
            body["spec"]["subdomain"] = spec["serviceName"]
        volumes = [v for v in body["spec"].get("volumes") or []]
        for tmpl in spec.get("volumeClaimTemplates") or []:
            tname = (tmpl.get("metadata") or {}).get("name", "")
            claim = naming.stateful_claim_name(tname, sts["metadata"]["name"], ordinal)
            self._ensure_claim(sts, tmpl, claim, name)
            volumes = [v for v in volumes if v.get("name") != tname]
            volumes.append({"name": tname, "persistentVolumeClaim": {"claimName": claim}})
        if volumes:
            body["spec"]["volumes"] = volumes
        if engine.create("", "pods", ns, body) is not None:
            self._pod_event(sts, "create", name)

    def _ensure_claim(self, sts: JSON, tmpl: JSON, claim: str, pod: str) -> None:
        engine = self.engine
        ns = sts["metadata"].get("namespace", "")
        if engine.get(f"/core/persistentvolumeclaims/{ns}/{claim}") is not None:
            return
        meta = copy_json(tmpl.get("metadata") or {})
        meta["name"] = claim
        meta["namespace"] = ns
        labels = meta.setdefault("labels", {})
        labels.update(((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
        policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenDeleted") == "Delete":
            meta["ownerReferences"] = [{**owner_ref(sts, "apps/v1", "StatefulSet")}]
        made = engine.create(
            "",
            "persistentvolumeclaims",
            ns,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": meta,
                "spec": copy_json(tmpl.get("spec") or {}),
            },
        )
        if made is not None:
            # recordClaimEvent
            self.events.normal(
                sts,
                "SuccessfulCreate",
                f"create Claim {claim} Pod {pod} in StatefulSet {sts['metadata']['name']} success",
            )

    def _status(self, key: str, revision: str) -> None:
        engine = self.engine
        sts = engine.get(key)
        if sts is None:
            return
        pods = [p for _, p in engine.owned(sts, POD_PREFIX) if is_active(p)]
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        now = engine.clock.now()
        ready = [p for p in pods if is_pod_ready(p)]
        updated = [
            p for p in pods if (p["metadata"].get("labels") or {}).get(REVISION_HASH) == revision
        ]
        old = sts.get("status") or {}
        current_revision = old.get("currentRevision") or revision
        if len(updated) == len(pods) == _replicas(sts):
            current_revision = revision
        current = [
            p
            for p in pods
            if (p["metadata"].get("labels") or {}).get(REVISION_HASH) == current_revision
        ]
        status: JSON = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(pods),
            "readyReplicas": len(ready),
            "availableReplicas": sum(1 for p in ready if available(p, min_ready, now)),
            "currentReplicas": len(current),
            "updatedReplicas": len(updated),
            "currentRevision": current_revision,
            "updateRevision": revision,
            "collisionCount": int(old.get("collisionCount") or 0),
        }
        for field in ("readyReplicas", "currentReplicas", "updatedReplicas"):
            if status[field] == 0:
                del status[field]
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        if status != old:
            new = changed_copy(sts)
            new["status"] = status
            engine.update(key, new, status=True)


class DaemonSets:
    def __init__(self, engine: Engine, nodes: Nodes) -> None:
        self.engine = engine
        self.nodes = nodes
        self.events = engine.events.recorder("daemonset-controller")
        engine.handlers["daemonset"] = self.reconcile

    def _delete(self, ds: JSON, ns: str, pod: JSON) -> None:
        name = pod["metadata"]["name"]
        if self.engine.delete(f"{POD_PREFIX}{ns}/{name}"):
            self.events.normal(ds, "SuccessfulDelete", f"Deleted pod: {name}")

    @staticmethod
    def _daemon_pod(ds: JSON) -> JSON:
        body = pod_from_template(
            (ds.get("spec") or {}).get("template") or {}, ds, "DaemonSet", "apps/v1"
        )
        tolerations = list(body["spec"].get("tolerations") or [])
        for tol in _DAEMON_TOLERATIONS:
            if not any(
                t.get("key") == tol["key"] and t.get("effect") == tol["effect"] for t in tolerations
            ):
                tolerations.append(dict(tol))
        body["spec"]["tolerations"] = tolerations
        return body

    def reconcile(self, key: str) -> None:
        engine = self.engine
        ds = engine.get(key)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return
        ns, _ = split_key(key)
        template = (ds.get("spec") or {}).get("template") or {}
        revision = _revision(engine, ds, "DaemonSet", template)
        revision_hash = revision.rsplit("-", 1)[-1]
        probe = self._daemon_pod(ds)
        eligible: list[str] = []
        for _, node_obj in engine.items_under(NODE_PREFIX):
            reasons, resolvable = filter_node(probe, node_obj, NodeUse())
            if not reasons or resolvable:
                eligible.append(node_obj["metadata"]["name"])
        by_node: dict[str, list[JSON]] = {}
        for _, pod in engine.owned(ds, POD_PREFIX):
            target = _pinned_node(pod)
            by_node.setdefault(target, []).append(pod)
        for node in eligible:
            pods = [p for p in by_node.get(node, []) if is_active(p)]
            if not pods:
                body = self._daemon_pod(ds)
                labels = body["metadata"].setdefault("labels", {})
                labels[REVISION_HASH] = revision_hash
                labels[TEMPLATE_GENERATION] = str(ds["metadata"].get("generation", 1))
                body["spec"]["affinity"] = {
                    **(body["spec"].get("affinity") or {}),
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": [node]}
                                    ]
                                }
                            ]
                        }
                    },
                }
                made = engine.create("", "pods", ns, body)
                if made is not None:
                    self.events.normal(
                        ds, "SuccessfulCreate", f"Created pod: {made['metadata']['name']}"
                    )
            else:
                for extra in pods[1:]:
                    self._delete(ds, ns, extra)
                old = [
                    p
                    for p in pods
                    if (p["metadata"].get("labels") or {}).get(REVISION_HASH) != revision_hash
                ]
                if old and (
                    ((ds.get("spec") or {}).get("updateStrategy") or {}).get(
                        "type", "RollingUpdate"
                    )
                    == "RollingUpdate"
                ):
                    self._delete(ds, ns, old[0])
        for node, pods in by_node.items():
            if node not in eligible:
                for pod in pods:
                    if is_active(pod):
                        self._delete(ds, ns, pod)
        self._status(key, eligible, revision_hash)

    def _status(self, key: str, eligible: list[str], revision_hash: str) -> None:
        engine = self.engine
        ds = engine.get(key)
        if ds is None:
            return
        pods = [p for _, p in engine.owned(ds, POD_PREFIX) if is_active(p)]
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = engine.clock.now()
        on_eligible = [p for p in pods if _pinned_node(p) in eligible]
        ready = [p for p in on_eligible if is_pod_ready(p)]
        avail = [p for p in ready if available(p, min_ready, now)]
        scheduled = {_pinned_node(p) for p in on_eligible if (p.get("spec") or {}).get("nodeName")}
        status: JSON = {
            "currentNumberScheduled": len(scheduled),
            "desiredNumberScheduled": len(eligible),
            "numberMisscheduled": len({_pinned_node(p) for p in pods} - set(eligible)),
            "numberReady": len(ready),
            "observedGeneration": ds["metadata"].get("generation", 1),
            "updatedNumberScheduled": sum(
                1
                for p in on_eligible
                if (p["metadata"].get("labels") or {}).get(REVISION_HASH) == revision_hash
            ),
            "numberAvailable": len(avail),
            "numberUnavailable": max(0, len(eligible) - len(avail)),
        }
        for field in ("updatedNumberScheduled", "numberAvailable", "numberUnavailable"):
            if status[field] == 0:
                del status[field]
        old = ds.get("status") or {}
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        if status != old:
            new = changed_copy(ds)
            new["status"] = status
            engine.update(key, new, status=True)


def _pinned_node(pod: JSON) -> str:
    """The node a daemon Pod is for: its binding, else its required affinity's name."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for expr in term.get("matchFields") or []:
            if expr.get("key") == "metadata.name" and expr.get("values"):
                return str(expr["values"][0])
    return ""
