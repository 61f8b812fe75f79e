"""``list-type-missing``: arrays that server-side apply treats as atomic by default."""

from __future__ import annotations

from kubewerk.govern.crd_view import SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Nodes, Rule
from kubewerk.govern.rules.conditions_shape import is_status_conditions
from kubewerk.govern.rules.example import Example, Where


class ListTypeMissing(Rule):
    """An array without `x-kubernetes-list-type` is atomic for server-side apply: two
    managers setting entries overwrite each other. The message suggests `map` with
    `x-kubernetes-list-map-keys` for lists of objects, `set` (if items are unique) or
    `atomic` for strings and integers, `atomic` otherwise. (`conditions` under `status`
    is left to `conditions-shape`.)
    """

    id = "list-type-missing"
    severity = Severity.INFO
    summary = "arrays without x-kubernetes-list-type (server-side apply cannot merge them)"
    example = Example(
        Where.SPEC_PROPERTIES,
        bad="""\
ports:
  type: array
  items:
    type: object
    properties:
      port: {type: integer}
""",
        good="""\
ports:
  type: array
  x-kubernetes-list-type: map
  x-kubernetes-list-map-keys: [port]
  items:
    type: object
    required: [port]
    properties:
      port: {type: integer}
""",
    )
    nodes = Nodes(types=frozenset({"array"}))

    def visit(self, node: SchemaNode) -> None:
        if "x-kubernetes-list-type" in node.schema or is_status_conditions(node):
            return
        items = node.schema.get("items")
        item_type = items.get("type") if isinstance(items, dict) else None
        if item_type == "object":
            hint = "map with x-kubernetes-list-map-keys naming the item's key field(s)"
        elif item_type in ("string", "integer"):
            hint = "set (if items are unique) or atomic"
        else:
            hint = "atomic"
        self.report(
            node,
            f"{node.field_path()} has no x-kubernetes-list-type, so server-side apply treats it "
            f"as atomic and field managers overwrite each other's entries. Set "
            f"x-kubernetes-list-type: {hint}",
        )
