"""``status-as-cache``: a status that does not report progress, or keeps opaque data."""

from __future__ import annotations

from kubewerk.govern.crd_view import SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import PRESERVE_UNKNOWN_FIELDS, Nodes, Rule, SchemaScope, Section
from kubewerk.govern.rules.example import Example, Where


class StatusAsCache(Rule):
    """Status declares neither `conditions` nor `observedGeneration` (clients cannot
    tell what the controller has seen or reached), or a status field keeps an opaque
    blob: an object with `x-kubernetes-preserve-unknown-fields` and no properties, an
    embedded resource, or `format: byte` data. One finding per top-level status field,
    at its first opaque node, naming up to three of the others. A status that declares
    nothing and preserves unknown fields is left to `preserve-unknown-fields`.
    """

    id = "status-as-cache"
    severity = Severity.WARNING
    summary = (
        "status with neither conditions nor observedGeneration, or opaque blobs kept in status"
    )
    example = Example(
        Where.SCHEMA_PROPERTIES,
        bad="""\
status:
  type: object
  properties:
    lastRendered: {type: object, x-kubernetes-preserve-unknown-fields: true}
""",
        good="""\
status:
  type: object
  properties:
    observedGeneration: {type: integer, format: int64}
    renderedHash: {type: string, maxLength: 64}
""",
    )
    nodes = Nodes(section=Section.STATUS, min_depth=1)

    # top-level status field → its opaque nodes, in document order
    opaque: dict[str, list[tuple[SchemaNode, str]]]

    def start(self, scope: SchemaScope) -> None:
        super().start(scope)
        self.opaque = {}

    def visit(self, node: SchemaNode) -> None:
        if node.depth == 1:
            self._progress(node)
        else:
            self._gather_opaque(node)

    def finish(self) -> None:
        for nodes in self.opaque.values():
            self._report_opaque(nodes)

    def _progress(self, node: SchemaNode) -> None:
        if node.key != "status":
            return
        props = node.child_properties()
        if node.schema.get(PRESERVE_UNKNOWN_FIELDS) is True and not props:
            return  # nothing declared: the preserve-unknown-fields rule reports it
        if "conditions" not in props and "observedGeneration" not in props:
            self.report(
                node,
                "status has neither conditions nor observedGeneration: clients cannot tell "
                "whether the controller has seen the latest spec or what state it reached. "
                "Report conditions ([]metav1.Condition) and observedGeneration; keep data "
                "the controller can recompute out of status",
            )

    def _gather_opaque(self, node: SchemaNode) -> None:
        s = node.schema
        kind = None
        if s.get("x-kubernetes-embedded-resource") is True:
            kind = "a whole embedded object"
        elif (
            s.get(PRESERVE_UNKNOWN_FIELDS) is True
            and not node.child_properties()
            and "items" not in s
        ):
            if node.parent is not None and node.parent.schema.get(PRESERVE_UNKNOWN_FIELDS) is True:
                return  # reported at the outermost opaque node
            kind = "an opaque blob (x-kubernetes-preserve-unknown-fields, no properties)"
        elif s.get("type") == "string" and s.get("format") == "byte":
            kind = "binary data (format: byte)"
        if kind is None:
            return
        section = node
        while section.parent is not None and section.depth > 2:
            section = section.parent
        self.opaque.setdefault(section.key, []).append((node, kind))

    def _report_opaque(self, nodes: list[tuple[SchemaNode, str]]) -> None:
        """One finding per status field: its first opaque node, and how many more."""
        node, kind = nodes[0]
        more = ""
        if len(nodes) > 1:
            others = ", ".join(n.field_path() for n, _ in nodes[1:4])
            etc = ", ..." if len(nodes) > 4 else ""
            more = f" (and {len(nodes) - 1} more opaque field(s) there: {others}{etc})"
        self.report(
            node,
            f"{node.field_path()} keeps {kind} in status{more}: status should report observed "
            "state compactly, and caches belong in the controller (or a ConfigMap/Secret it "
            "owns). Declare the fields clients need, or drop it from status",
        )
