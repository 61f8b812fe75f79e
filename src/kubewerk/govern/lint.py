"""``kubewerk lint``: run the rules over every CRD in the inputs.

Documents that are not CRDs are skipped (counted in the summary). Findings carry the
file and the line of the schema location they concern.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kubewerk.govern.crd_view import CRDView, is_crd
from kubewerk.govern.findings import Finding, Severity, field_to_location
from kubewerk.govern.loader import Document
from kubewerk.govern.rules import RULES, Linter, RawFinding, enabled_rules
from kubewerk.govern.rules.structural_schema import structural_findings

__all__ = ["LintResult", "field_to_location", "lint_documents", "structural_findings"]


@dataclass(slots=True)
class LintResult:
    """The findings of a run, and how many documents and CRDs it read."""

    findings: list[Finding]
    documents: int
    crds: int


def lint_documents(
    docs: Iterable[Document],
    enabled: frozenset[str],
    severities: dict[str, Severity] | None = None,
) -> LintResult:
    """Lint every CRD among ``docs`` with the enabled rules.

    ``severities`` overrides a rule's default severity (a config's ``rules:``); rules
    with several checks (``version-discipline``) keep their per-check severity unless
    overridden.
    """
    overrides = severities or {}
    linter = Linter(enabled_rules(enabled))
    findings: list[Finding] = []
    crds = 0
    count = 0
    for doc in docs:
        count += 1
        if not is_crd(doc.data):
            continue
        crds += 1
        view = CRDView(doc.data)
        raws: list[RawFinding] = []
        linter.lint(view, raws.append)
        findings.extend(_bind(doc, view, raws, overrides))
    return LintResult(findings, count, crds)


def _bind(
    doc: Document,
    view: CRDView,
    raws: Iterable[RawFinding],
    overrides: dict[str, Severity],
) -> Iterable[Finding]:
    for raw in raws:
        yield doc.finding(
            raw.rule,
            overrides.get(raw.rule) or raw.severity or RULES[raw.rule].severity,
            raw.message,
            raw.location,
            crd=view.name,
            versions=raw.versions,
            field=raw.field,
            extra=raw.extra,
        )
