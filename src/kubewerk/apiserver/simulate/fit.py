"""The scheduler's filters, as pure functions over Pods and Nodes.

The default kube-scheduler profile filters nodes in this order, stopping at the first
failure on each node: NodeUnschedulable, TaintToleration, NodeAffinity (``nodeSelector``
and required node affinity), NodeResourcesFit (pods count, then each requested resource).
An unschedulable Pod's ``PodScheduled`` condition gets kube's ``FitError`` message: a
histogram of the reasons over all nodes (``0/3 nodes are available: 3 Insufficient cpu.``)
then the default preemption plugin's verdict. Preemption itself is not simulated: every
reason from resources counts as "No preemption victims found for incoming pod" (true when
no running Pod has a lower priority), the rest as "Preemption is not helpful for
scheduling".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubewerk.schema.cel.library import parse_quantity

JSON = dict[str, Any]

NO_NODES = "no nodes available to schedule pods"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_UNRESOLVABLE = "Preemption is not helpful for scheduling"
_NO_VICTIMS = "No preemption victims found for incoming pod"
_RESOURCE_ORDER = ("cpu", "memory", "ephemeral-storage")


def quantity(text: Any) -> Fraction:
    """A resource quantity's exact value (0 for anything that is not one)."""
    if isinstance(text, bool):
        return Fraction(0)
    if isinstance(text, (int, float)):
        return Fraction(text)
    value = parse_quantity(str(text)) if text is not None else None
    return value if value is not None else Fraction(0)


def _container_requests(container: JSON) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = dict(resources.get("requests") or {})
    for name, value in limits.items():  # the API defaults requests to limits
        requests.setdefault(name, value)
    return {name: quantity(value) for name, value in requests.items()}


def pod_requests(pod: JSON) -> dict[str, Fraction]:
    """What a Pod asks of a node: its containers' requests summed, at least each init
    container's (they run one at a time), plus ``spec.overhead``."""
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        for name, value in _container_requests(container).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in spec.get("initContainers") or []:
        for name, value in _container_requests(container).items():
            if value > total.get(name, Fraction(0)):
                total[name] = value
    for name, value in (spec.get("overhead") or {}).items():
        total[name] = total.get(name, Fraction(0)) + quantity(value)
    return total


@dataclass
class NodeUse:
    """What is allocated on one node: requests of its unfinished Pods, and their count."""

    requested: dict[str, Fraction] = field(default_factory=dict)
    pods: int = 0

    def add(self, requests: dict[str, Fraction], sign: int = 1) -> None:
        self.pods += sign
        for name, value in requests.items():
            self.requested[name] = self.requested.get(name, Fraction(0)) + sign * value


def tolerates(tolerations: list[JSON], taint: JSON) -> bool:
    """``Toleration.ToleratesTaint`` for any of ``tolerations``."""
    for tol in tolerations:
        effect = tol.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = tol.get("key") or ""
        op = tol.get("operator") or "Equal"
        if key and key != taint.get("key"):
            continue
        if op == "Exists":
            return True
        if op == "Equal" and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _expression_matches(expr: JSON, labels: dict[str, str]) -> bool:
    key = expr.get("key", "")
    op = expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def matches_node_affinity(pod: JSON, node: JSON) -> bool:
    """``nodeSelector`` (all pairs) and required node affinity (any term; all of a term's
    ``matchExpressions`` and ``matchFields`` on ``metadata.name``)."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    fields = {"metadata.name": (node.get("metadata") or {}).get("name", "")}
    for term in terms:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(_expression_matches(e, labels) for e in exprs) and all(
            _expression_matches(e, fields) for e in field_exprs
        ):
            return True
    return False


def node_allocatable(node: JSON) -> dict[str, Fraction]:
    status = node.get("status") or {}
    source = status.get("allocatable") or status.get("capacity") or {}
    return {name: quantity(value) for name, value in source.items()}


def filter_node(pod: JSON, node: JSON, use: NodeUse) -> tuple[list[str], bool]:
    """Why ``pod`` cannot go on ``node`` (empty: it fits), and whether the reasons are
    ones preemption could resolve (resources only)."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    node_spec = node.get("spec") or {}
    if node_spec.get("unschedulable") and not tolerates(
        tolerations, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    ):
        return ["node(s) were unschedulable"], False
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not tolerates(tolerations, taint):
            shown = f"{taint.get('key', '')}: {taint.get('value', '')}"
            return [f"node(s) had untolerated taint {{{shown}}}"], False
    if not matches_node_affinity(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"], False
    allocatable = node_allocatable(node)
    reasons = []
    if use.pods + 1 > allocatable.get("pods", Fraction(0)):
        reasons.append("Too many pods")
    requests = pod_requests(pod)
    names = [n for n in _RESOURCE_ORDER if n in requests] + sorted(
        n for n in requests if n not in _RESOURCE_ORDER
    )
    for name in names:
        want = requests[name]
        if want == 0:
            continue
        free = allocatable.get(name, Fraction(0)) - use.requested.get(name, Fraction(0))
        if want > free:
            reasons.append(f"Insufficient {name}")
    return reasons, True


def fit_error(failures: dict[str, tuple[list[str], bool]], node_count: int) -> str:
    """The ``PodScheduled=False`` message for a Pod no node took (``FitError.Error``
    followed by the preemption plugin's message)."""
    if node_count == 0:
        return NO_NODES
    reasons: Counter[str] = Counter()
    preemption: Counter[str] = Counter()
    for why, resolvable in failures.values():
        reasons.update(why)
        preemption[_NO_VICTIMS if resolvable else _UNRESOLVABLE] += 1
    histogram = ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))
    victims = ", ".join(sorted(f"{n} {r}" for r, n in preemption.items()))
    return (
        f"0/{node_count} nodes are available: {histogram}. "
        f"preemption: 0/{node_count} nodes are available: {victims}."
    )


def is_finished(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def qos_class(pod: JSON) -> str:
    """``GetPodQOS``: Guaranteed (every container limits cpu and memory, requests equal),
    BestEffort (no requests or limits anywhere), else Burstable."""
    containers = [
        *((pod.get("spec") or {}).get("containers") or []),
        *((pod.get("spec") or {}).get("initContainers") or []),
    ]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        limits = {k: quantity(v) for k, v in (resources.get("limits") or {}).items()}
        requests = {k: quantity(v) for k, v in (resources.get("requests") or {}).items()}
        if any(v != 0 for v in (*limits.values(), *requests.values())):
            any_set = True
        for name in ("cpu", "memory"):
            if (
                name not in limits
                or limits[name] == 0
                or (name in requests and requests[name] != limits[name])
            ):
                guaranteed = False
        for name, value in requests.items():
            if name in ("cpu", "memory") and limits.get(name) != value:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
