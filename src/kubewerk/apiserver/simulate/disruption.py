"""The disruption controller: each PodDisruptionBudget's status, as kube-controller-manager
computes it (``pkg/controller/disruption/disruption.go``), so that ``pods/eviction`` (and
``kubectl drain``) can spend the budgets.

For a budget, the Pods of its namespace its selector matches (``{}`` matches them all,
no selector none) give:

* ``expectedPods`` and ``desiredHealthy`` (``getExpectedPodCount``): with
  ``minAvailable`` an integer, the number of matching Pods and that integer; with
  ``maxUnavailable`` (integer or percent) or a percent ``minAvailable``, the sum of the
  scales of the Pods' controllers (a ReplicaSet's ``spec.replicas``, or its Deployment's
  when a Deployment controls it; a StatefulSet's, a ReplicationController's, or any kind
  whose ``/scale`` the server serves; a controller kind without one, a DaemonSet or a
  Job, is the sync error ``daemonsets.apps does not implement the scale subresource``),
  and ``expected - maxUnavailable`` (floored at 0) or
  ``minAvailable`` of it, percentages rounded up as ``GetScaledValueFromIntOrPercent(..,
  true)``. Pods without a controller are left out of that sum, with the
  ``UnmanagedPods`` Warning event; a Pod whose controller is not found is the sync error
  ``found no controllers for pod "NAME"``.
* ``disruptedPods``: the entries the eviction API wrote whose Pod still exists, is not
  being deleted, and whose ``DeletionTimeout`` (2 minutes) has not passed; the budget is
  checked again when the earliest one expires.
* ``currentHealthy`` (``countHealthyPods``): matching Pods not being deleted, not in
  ``disruptedPods``, and Ready.
* ``disruptionsAllowed``: ``currentHealthy - desiredHealthy``, and 0 when that is not
  positive or no Pod is expected.
* ``observedGeneration``, and the ``DisruptionAllowed`` condition
  (``UpdateDisruptionAllowedCondition``): True ``SufficientPods`` when a disruption is
  allowed, else False ``InsufficientPods``. A sync that fails (``failSafe``) keeps the
  rest of the status, sets ``disruptionsAllowed`` to 0 and the condition to False
  ``SyncFailed`` with the error as its message, and records the
  ``CalculateExpectedPodCountFailed`` Warning event.

The status is written (through ``/status``) only when one of those changed, as
``updatePdbStatus``. A budget is recomputed when it changes and when a Pod of its
namespace changes (the engine queues them), on the simulation's clock.
``unhealthyPodEvictionPolicy`` is the eviction API's to apply (``kinds/eviction.py``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from kubewerk.apiserver.simulate.clock import parse_rfc3339
from kubewerk.apiserver.simulate.engine import (
    Engine,
    changed_copy,
    controller_ref,
    is_pod_ready,
)
from kubewerk.apiserver.simulate.rollout import IntOrPercentError, scaled_value
from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict

JSON = dict[str, Any]

PDB_PREFIX = "/policy/poddisruptionbudgets/"
DELETION_TIMEOUT = 120.0
"""``DeletionTimeout``: how long an evicted Pod may take to start deleting before the
budget counts it again."""
DISRUPTION_ALLOWED = "DisruptionAllowed"


class SyncError(Exception):
    """A budget's status cannot be computed (its message is the condition's)."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _replicas(obj: JSON) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _path_value(obj: JSON, path: str) -> Any:
    value: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def set_status_condition(conditions: list[JSON], new: JSON, now: str) -> list[JSON]:
    """``apimeta.SetStatusCondition``: a new condition appended with ``now`` as its
    transition time; an existing one takes the new reason, message and
    observedGeneration, and a new transition time only when its status changes."""
    out: list[JSON] = []
    found = False
    for cond in conditions:
        if isinstance(cond, dict) and cond.get("type") == new["type"]:
            found = True
            since = cond.get("lastTransitionTime") or now
            if cond.get("status") != new["status"]:
                since = now
            out.append({**new, "lastTransitionTime": since})
        else:
            out.append(cond)
    if not found:
        out.append({**new, "lastTransitionTime": now})
    return [_ordered_condition(c) for c in out]


def _ordered_condition(cond: JSON) -> JSON:
    """A ``metav1.Condition`` with its fields in Go's order (message always present)."""
    if not isinstance(cond, dict):
        return cond
    out: JSON = {"type": cond.get("type"), "status": cond.get("status")}
    if cond.get("observedGeneration"):
        out["observedGeneration"] = cond["observedGeneration"]
    for name in ("lastTransitionTime", "reason"):
        out[name] = cond.get(name)
    out["message"] = cond.get("message") or ""
    return out


def conditions_up_to_date(pdb: JSON) -> bool:
    """``ConditionsAreUpToDate``: the condition says what ``disruptionsAllowed`` says,
    for the current generation."""
    status = pdb.get("status") or {}
    cond = next(
        (
            c
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("type") == DISRUPTION_ALLOWED
        ),
        None,
    )
    if cond is None:
        return False
    if _int(status.get("observedGeneration")) != _int(pdb["metadata"].get("generation")):
        return False
    if _int(status.get("disruptionsAllowed")) > 0:
        return cond.get("status") == "True" and cond.get("reason") == "SufficientPods"
    return cond.get("status") == "False" and cond.get("reason") in (
        "InsufficientPods",
        "SyncFailed",
    )


class Disruption:
    """The disruption controller of the simulated cluster (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.events = engine.events.recorder("controllermanager")
        engine.handlers["pdb"] = self.reconcile

    # -- one budget ---------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        engine = self.engine
        pdb = engine.get(key)
        if pdb is None or pdb["metadata"].get("deletionTimestamp"):
            return
        try:
            self._sync(key, pdb)
        except SyncError as exc:
            self._fail_safe(key, pdb, str(exc))

    def _pods(self, pdb: JSON) -> list[JSON]:
        """``getPodsForPdb``: the namespace's Pods the budget's selector matches."""
        ns = pdb["metadata"].get("namespace", "")
        try:
            selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
        except LabelSelectorError as exc:
            raise SyncError(str(exc)) from None
        if selector.nothing:
            return []
        return [
            pod
            for _, pod in self.engine.items_under(f"/core/pods/{ns}/")
            if selector.matches((pod.get("metadata") or {}).get("labels") or {})
        ]

    def _sync(self, key: str, pdb: JSON) -> None:
        engine = self.engine
        pods = self._pods(pdb)
        events = self.events
        if not pods:
            events.normal(pdb, "NoPods", "No matching pods found")
        expected, desired, unmanaged = self.expected_pod_count(pdb, pods)
        if unmanaged:
            selector = (pdb.get("spec") or {}).get("selector")
            events.warning(
                pdb,
                "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: {go_selector(selector)}) "
                "were found to be unmanaged. As a result, the status of the PDB cannot be "
                "calculated correctly, which may result in undefined behavior. To account "
                'for these pods please set ".spec.minAvailable" field of the PDB to an '
                "integer value.",
            )
        now = engine.clock.now()
        disrupted, recheck = self._disrupted(pdb, pods, now)
        healthy = count_healthy(pods, disrupted, now)
        self._update(key, pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            engine.after(max(0.0, (recheck - now).total_seconds()), "pdb", key)

    def expected_pod_count(self, pdb: JSON, pods: list[JSON]) -> tuple[int, int, list[str]]:
        """``getExpectedPodCount``: (expectedPods, desiredHealthy, unmanaged Pod names)."""
        spec = pdb.get("spec") or {}
        max_unavailable = spec.get("maxUnavailable")
        min_available = spec.get("minAvailable")
        try:
            if max_unavailable is not None:
                expected, unmanaged = self.expected_scale(pods)
                allowed = scaled_value(max_unavailable, expected, True)
                return expected, max(0, expected - allowed), unmanaged
            if isinstance(min_available, int) and not isinstance(min_available, bool):
                return len(pods), min_available, []
            if isinstance(min_available, str):
                expected, unmanaged = self.expected_scale(pods)
                return expected, scaled_value(min_available, expected, True), unmanaged
        except IntOrPercentError as exc:
            raise SyncError(str(exc)) from None
        return 0, 0, []

    def expected_scale(self, pods: list[JSON]) -> tuple[int, list[str]]:
        """``getExpectedScale``: the sum of the scales of the Pods' controllers (each
        counted once), and the names of the Pods without a controller."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_ref(pod)
            name = str(pod["metadata"].get("name", ""))
            if ref is None:
                unmanaged.append(name)
                continue
            if str(ref.get("uid")) in scales:
                continue
            found = self._controller_scale(ref, str(pod["metadata"].get("namespace", "")))
            if found is None:
                raise SyncError(f'found no controllers for pod "{name}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), unmanaged

    def _controller_scale(self, ref: JSON, ns: str) -> tuple[str, int] | None:
        """The finders, in kube's order: ReplicationController, a ReplicaSet no Deployment
        controls, the Deployment of a ReplicaSet, a StatefulSet, then any ``/scale``."""
        engine = self.engine
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        uid, name = str(ref.get("uid", "")), str(ref.get("name", ""))

        def read(g: str, resource: str, obj_name: str, want_uid: str) -> JSON | None:
            rtype = engine.rtype(g, resource)
            if rtype is None:
                return None
            obj = engine.get(rtype.key(ns, obj_name))
            if obj is None or obj["metadata"].get("uid") != want_uid:
                return None
            return obj

        if (group, kind) == ("", "ReplicationController"):
            rc = read("", "replicationcontrollers", name, uid)
            return (uid, _replicas(rc)) if rc is not None else None
        if (group, kind) == ("apps", "ReplicaSet"):
            rs = read("apps", "replicasets", name, uid)
            if rs is None:
                return None
            owner = controller_ref(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                d = read("apps", "deployments", str(owner.get("name")), str(owner.get("uid")))
                return (str(owner.get("uid")), _replicas(d)) if d is not None else None
            return uid, _replicas(rs)
        if (group, kind) == ("apps", "StatefulSet"):
            sts = read("apps", "statefulsets", name, uid)
            return (uid, _replicas(sts)) if sts is not None else None
        for rtype in engine.registry.all():
            if rtype.group != group or rtype.kind != kind:
                continue
            scale = rtype.scale_of(rtype.storage_version)
            if scale is None:
                resource = f"{rtype.resource}.{group}" if group else rtype.resource
                raise SyncError(f"{resource} does not implement the scale subresource")
            obj = engine.get(rtype.key(ns if rtype.namespaced else "", name))
            if obj is None or obj["metadata"].get("uid") != uid:
                return None
            return uid, _int(_path_value(obj, scale.spec_replicas_path))
        return None

    def _disrupted(
        self, pdb: JSON, pods: list[JSON], now: dt.datetime
    ) -> tuple[dict[str, str], dt.datetime | None]:
        """``buildDisruptedPodMap``: the entries still waiting for their Pod's deletion,
        and when the earliest of them expires."""
        listed = (pdb.get("status") or {}).get("disruptedPods") or {}
        out: dict[str, str] = {}
        recheck: dt.datetime | None = None
        if not isinstance(listed, dict) or not listed:
            return out, None
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            stamp = listed.get(meta.get("name"))
            if stamp is None:
                continue
            when = parse_rfc3339(str(stamp))
            if when is None:
                continue
            expires = when + dt.timedelta(seconds=DELETION_TIMEOUT)
            if expires < now:
                ns = pdb["metadata"].get("namespace", "")
                # kube's message names the namespace twice (pdb.Namespace, pdb.Namespace)
                self.events.warning(
                    pod,
                    "NotDeleted",
                    f"Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't",
                )
                continue
            if recheck is None or expires < recheck:
                recheck = expires
            out[str(meta["name"])] = str(stamp)
        return out, recheck

    def _update(
        self,
        key: str,
        pdb: JSON,
        healthy: int,
        desired: int,
        expected: int,
        disrupted: dict[str, str],
    ) -> None:
        """``updatePdbStatus``: write the status when any part of it changed."""
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        status = pdb.get("status") or {}
        generation = _int(pdb["metadata"].get("generation"))
        if (
            _int(status.get("currentHealthy")) == healthy
            and _int(status.get("desiredHealthy")) == desired
            and _int(status.get("expectedPods")) == expected
            and _int(status.get("disruptionsAllowed")) == allowed
            and (status.get("disruptedPods") or {}) == disrupted
            and _int(status.get("observedGeneration")) == generation
            and conditions_up_to_date(pdb)
            and "currentHealthy" in status
        ):
            return
        new_status: JSON = {}
        if generation:
            new_status["observedGeneration"] = generation
        if disrupted:
            new_status["disruptedPods"] = disrupted
        new_status.update(
            {
                "disruptionsAllowed": allowed,
                "currentHealthy": healthy,
                "desiredHealthy": desired,
                "expectedPods": expected,
            }
        )
        wanted: JSON = (
            {"type": DISRUPTION_ALLOWED, "status": "True", "reason": "SufficientPods"}
            if allowed > 0
            else {"type": DISRUPTION_ALLOWED, "status": "False", "reason": "InsufficientPods"}
        )
        wanted["observedGeneration"] = generation
        wanted["message"] = ""
        new_status["conditions"] = set_status_condition(
            list(status.get("conditions") or []), wanted, self.engine.now()
        )
        new = changed_copy(pdb)
        new["status"] = new_status
        self.engine.update(key, new, status=True)

    def _fail_safe(self, key: str, pdb: JSON, message: str) -> None:
        """``failSafe``: the status kept, no disruption allowed, ``SyncFailed``."""
        self.events.warning(
            pdb,
            "CalculateExpectedPodCountFailed",
            f"Failed to calculate the number of expected pods: {message}",
        )
        status = dict(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        for name in ("currentHealthy", "desiredHealthy", "expectedPods"):
            status.setdefault(name, 0)
        status["conditions"] = set_status_condition(
            list(status.get("conditions") or []),
            {
                "type": DISRUPTION_ALLOWED,
                "status": "False",
                "reason": "SyncFailed",
                "message": message,
                "observedGeneration": _int(status.get("observedGeneration")),
            },
            self.engine.now(),
        )
        if status != (pdb.get("status") or {}):
            new = changed_copy(pdb)
            new["status"] = status
            self.engine.update(key, new, status=True)


def count_healthy(pods: list[JSON], disrupted: dict[str, str], now: dt.datetime) -> int:
    """``countHealthyPods``: Ready Pods neither being deleted nor recently evicted."""
    healthy = 0
    for pod in pods:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        stamp = disrupted.get(str(meta.get("name")))
        if stamp is not None:
            when = parse_rfc3339(stamp)
            if when is not None and when + dt.timedelta(seconds=DELETION_TIMEOUT) > now:
                continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def go_selector(selector: Any) -> str:
    """A ``*metav1.LabelSelector`` as Go's ``%v`` prints it in the UnmanagedPods event
    (the generated ``String()``: ``&LabelSelector{MatchLabels:map[string]string{app: web,},
    MatchExpressions:[]LabelSelectorRequirement{},}``)."""
    if not isinstance(selector, dict):
        return "nil"
    labels = selector.get("matchLabels") or {}
    pairs = "".join(f"{k}: {v}," for k, v in sorted(labels.items()))
    exprs = "".join(
        "LabelSelectorRequirement{"
        f"Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or []
        if isinstance(e, dict)
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
