"""``preserve-unknown-fields``: pruning turned off where it matters."""

from __future__ import annotations

from kubewerk.govern.crd_view import CRDView, SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import PRESERVE_UNKNOWN_FIELDS, Emit, Nodes, Rule
from kubewerk.govern.rules.example import Example, Where


class PreserveUnknownFields(Rule):
    """`x-kubernetes-preserve-unknown-fields: true` on the schema root, `spec` or
    `status`, or `spec.preserveUnknownFields: true` (the `v1beta1` default): unknown and
    misspelled fields are stored silently instead of pruned. Deeper free-form subtrees
    (Helm values, raw config) are not flagged.
    """

    id = "preserve-unknown-fields"
    severity = Severity.WARNING
    summary = "pruning disabled on the root, spec or status"
    example = Example(
        Where.SCHEMA_PROPERTIES,
        bad="spec: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
        good="""\
spec:
  type: object
  properties:
    replicas: {type: integer}
    values: {type: object, x-kubernetes-preserve-unknown-fields: true}
""",
    )
    nodes = Nodes(max_depth=1)

    @classmethod
    def check_crd(cls, crd: CRDView, emit: Emit) -> None:
        if not crd.preserve_unknown_fields:
            return
        why = (
            "apiextensions.k8s.io/v1beta1 defaults spec.preserveUnknownFields to true"
            if "preserveUnknownFields" not in crd.spec
            else "spec.preserveUnknownFields is true"
        )
        emit(
            cls.finding(
                f"{why}: unknown fields are stored instead of pruned. Set "
                "spec.preserveUnknownFields: false and mark only the subtrees that really are "
                "free-form with x-kubernetes-preserve-unknown-fields",
                ("spec", "preserveUnknownFields"),
            )
        )

    def visit(self, node: SchemaNode) -> None:
        if node.depth == 1 and node.key not in ("spec", "status"):
            return
        if node.schema.get(PRESERVE_UNKNOWN_FIELDS) is not True:
            return
        where = "the root" if node.depth == 0 else node.key
        self.report(
            node,
            f"x-kubernetes-preserve-unknown-fields: true on {where} turns pruning off: "
            "misspelled and unknown fields are stored silently. Declare the properties, and "
            "keep x-kubernetes-preserve-unknown-fields only on the free-form subtrees",
            suffix=(PRESERVE_UNKNOWN_FIELDS,),
        )
