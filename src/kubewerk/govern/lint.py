"""``kubewerk lint``: run the rules over every CRD in the inputs.

Documents that are not CRDs are skipped (counted in the summary). Findings carry the
file and the line of the schema location they concern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kubewerk.govern.crd import CRDView, Location, is_crd
from kubewerk.govern.findings import Finding, Severity
from kubewerk.govern.loader import Document
from kubewerk.govern.rules import RULES, RawFinding, lint_crd

_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def field_to_location(path: str) -> Location:
    """A Kubernetes field path (``spec.versions[0].schema.openAPIV3Schema.properties[spec]``)
    as a location (``("spec", "versions", 0, "schema", ...)``)."""
    out: list[str | int] = []
    for name, index in _SEGMENT.findall(path):
        token = name or index
        out.append(int(token) if token.isdigit() and index else token)
    return tuple(out)


def structural_findings(crd: dict[str, object]) -> list[RawFinding]:
    """What the API server would reject when this CRD is created (schema engine)."""
    from kubewerk.schema import validate_crd

    out: list[RawFinding] = []
    try:
        errors = validate_crd(crd)
    except Exception as exc:  # an engine bug must not hide every other finding
        return [
            RawFinding(
                "structural-schema",
                f"kubewerk could not check this CRD (internal error in the schema engine: "
                f"{type(exc).__name__}: {exc}); please report it",
                (),
            )
        ]
    for err in errors:
        out.append(
            RawFinding(
                "structural-schema",
                f"the API server rejects this CRD: {err.message()}",
                field_to_location(err.field),
                err.field,
            )
        )
    return out


@dataclass(slots=True)
class LintResult:
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
        lint_crd(view, enabled, raws.append)
        if "structural-schema" in enabled:
            raws.extend(structural_findings(doc.data))
        findings.extend(_bind(doc, view, raws, overrides))
    return LintResult(findings, count, crds)


def _bind(
    doc: Document,
    view: CRDView,
    raws: Iterable[RawFinding],
    overrides: dict[str, Severity],
) -> Iterable[Finding]:
    for raw in raws:
        severity = overrides.get(raw.rule) or raw.severity or RULES[raw.rule].severity
        yield Finding(
            rule=raw.rule,
            severity=severity,
            message=raw.message,
            file=doc.source.name,
            line=doc.line_of(raw.location),
            document=doc.index,
            crd=view.name,
            versions=raw.versions,
            location=(*doc.base, *raw.location),
            field=raw.field,
            extra=raw.extra,
        )
