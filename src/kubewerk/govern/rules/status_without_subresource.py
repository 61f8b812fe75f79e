"""``status-without-subresource``: a status that any writer of the object can set."""

from __future__ import annotations

from kubewerk.govern.crd_view import SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Nodes, Rule
from kubewerk.govern.rules.example import Example, Where


class StatusWithoutSubresource(Rule):
    """The schema has `status` but the version has no `subresources.status`: every
    writer of the object can set status, and status writes bump `metadata.generation`.
    """

    id = "status-without-subresource"
    severity = Severity.WARNING
    summary = "a schema with status but no status subresource"
    example = Example(
        Where.VERSION,
        bad="""\
name: v1
served: true
storage: true
schema:
  openAPIV3Schema:
    type: object
    properties:
      spec: {type: object}
      status: {type: object, properties: {observedGeneration: {type: integer}}}
""",
        good="""\
name: v1
served: true
storage: true
schema:
  openAPIV3Schema:
    type: object
    properties:
      spec: {type: object}
      status: {type: object, properties: {observedGeneration: {type: integer}}}
subresources: {status: {}}
""",
    )
    nodes = Nodes(max_depth=0)  # the root

    def visit(self, node: SchemaNode) -> None:
        if "status" not in node.child_properties():
            return
        sub = self.scope.version.subresources
        if isinstance(sub, dict) and "status" in sub:
            return
        self.scope.emit(
            self.id,
            ("properties", "status"),
            "status",
            f"{self.scope.crd.kind or 'the resource'} has a status but no status "
            "subresource: any user who can update the object can write its "
            "status, and status writes bump metadata.generation. Add "
            "subresources: {status: {}} to this version",
        )
