"""``conditions-shape``: status conditions that are not ``[]metav1.Condition``."""

from __future__ import annotations

from kubewerk.govern.crd_view import PROP, SchemaNode, as_dict, as_list
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Nodes, Rule, Section
from kubewerk.govern.rules.example import Example, Where

_METAV1_CONDITION_FIELDS = ("type", "status", "lastTransitionTime", "reason", "message")


def is_status_conditions(node: SchemaNode) -> bool:
    """Whether ``node`` is a property called ``conditions`` anywhere under status."""
    return node.top == "status" and node.step == PROP and node.key == "conditions"


class ConditionsShape(Rule):
    """An array property called `conditions` anywhere under `status` that is not
    `x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys: [type]` (so that
    server-side apply merges conditions entry by entry), whose items lack any of `type`,
    `status`, `lastTransitionTime`, `reason`, `message`, or declare `type` or `status`
    without requiring it.
    """

    id = "conditions-shape"
    severity = Severity.WARNING
    summary = "conditions that are not a map-list keyed by type with the metav1.Condition fields"
    example = Example(
        Where.STATUS_PROPERTIES,
        bad="""\
conditions:
  type: array
  items:
    type: object
    properties:
      type: {type: string}
      status: {type: string}
""",
        good="""\
conditions:
  type: array
  x-kubernetes-list-type: map
  x-kubernetes-list-map-keys: [type]
  items:
    type: object
    required: [type, status, lastTransitionTime, reason, message]
    properties:
      type: {type: string, maxLength: 316}
      status: {type: string, enum: ["True", "False", Unknown]}
      observedGeneration: {type: integer, format: int64, minimum: 0}
      lastTransitionTime: {type: string, format: date-time}
      reason: {type: string, maxLength: 1024, minLength: 1}
      message: {type: string, maxLength: 32768}
""",
        note="That is `[]metav1.Condition` with `+listType=map` and `+listMapKey=type`.",
    )
    nodes = Nodes(types=frozenset({"array"}), section=Section.STATUS)

    def visit(self, node: SchemaNode) -> None:
        if not is_status_conditions(node):
            return
        s = node.schema
        items = as_dict(s.get("items"))
        problems: list[str] = []
        if s.get("x-kubernetes-list-type") != "map" or s.get("x-kubernetes-list-map-keys") != [
            "type"
        ]:
            problems.append(
                "not a map-list keyed by type (x-kubernetes-list-type: map, "
                "x-kubernetes-list-map-keys: [type])"
            )
        props = as_dict(items.get("properties"))
        missing = [f for f in _METAV1_CONDITION_FIELDS if f not in props]
        if missing:
            problems.append("items lack " + ", ".join(missing))
        required = as_list(items.get("required"))
        not_required = [f for f in ("type", "status") if f in props and f not in required]
        if not_required:
            problems.append(", ".join(not_required) + " not required")
        if problems:
            self.report(
                node,
                f"{node.field_path()} is not shaped like []metav1.Condition: "
                + "; ".join(problems)
                + ". Use metav1.Condition (type, status, observedGeneration, "
                "lastTransitionTime, reason, message) with +listType=map +listMapKey=type",
            )
