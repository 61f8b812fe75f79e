"""``no-floats``: ``type: number`` fields."""

from __future__ import annotations

from kubewerk.govern.crd_view import SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Nodes, Rule
from kubewerk.govern.rules.example import Example, Where


class NoFloats(Rule):
    """`type: number`: floats do not round-trip exactly across languages and encoders."""

    id = "no-floats"
    severity = Severity.WARNING
    summary = "type: number fields"
    example = Example(
        Where.SPEC_PROPERTIES,
        bad="ratio: {type: number}\n",
        good="ratioPercent: {type: integer}\n",
        note="Or a string with a pattern (a quantity or a decimal).",
    )
    nodes = Nodes(types=frozenset({"number"}))

    def visit(self, node: SchemaNode) -> None:
        self.report(
            node,
            f"{node.field_path() or 'the root'} is type: number: floats do not "
            "round-trip exactly between languages and encoders. Use an integer with "
            "the unit in the name (e.g. timeoutSeconds, percent) or a string "
            "(a quantity or decimal with a pattern)",
        )
