"""Rendering findings: text (short, colour only on a terminal), JSON and SARIF 2.1.0.

The JSON document is stable: ``{"tool", "command", "findings", "suppressed",
"unusedSuppressions", "summary"}``; keys are only ever added. SARIF output is one run
whose driver lists every rule of the command, with results carrying a physical
location (file, line), a logical location (CRD/version/field), a partial fingerprint
that survives line moves, and config suppressions as SARIF suppressions.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import orjson

from kubewerk.govern.config import SuppressRule
from kubewerk.govern.findings import Finding, Severity, Summary, sort_key

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_URI = "https://github.com/kubewerk/kubewerk"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_COLOURS = {Severity.ERROR: "\x1b[31m", Severity.WARNING: "\x1b[33m", Severity.INFO: "\x1b[36m"}


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never with ``NO_COLOR`` set."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _where(f: Finding) -> str:
    return f"{f.file}:{f.line}" if f.line else f.file


def render_text(
    findings: Sequence[Finding],
    summary: Summary,
    unused: Sequence[SuppressRule],
    *,
    colour: bool,
    objects: str,
) -> str:
    lines: list[str] = []
    for f in sorted(findings, key=sort_key):
        if f.suppressed is not None:
            continue
        sev = f.severity.label
        if colour:
            sev = f"{_COLOURS[f.severity]}{sev}\x1b[0m"
        subject = " ".join(p for p in (f.crd, ",".join(f.versions), f.field) if p)
        lines.append(f"{_where(f)}: {sev} [{f.rule}] {subject}: {f.message}")
    for s in unused:
        lines.append(
            f"{s.source}: note: suppression of {s.rule} for {s.crd} {s.path} matched nothing"
        )
    total = summary.errors + summary.warnings + summary.infos
    tail = (
        f"{total} finding(s): {summary.errors} error(s), {summary.warnings} warning(s), "
        f"{summary.infos} info; {summary.suppressed} suppressed; "
        f"{summary.objects} {objects} in {summary.files} file(s)"
    )
    lines.append(tail)
    return "\n".join(lines) + "\n"


def render_json(
    command: str,
    findings: Sequence[Finding],
    summary: Summary,
    unused: Sequence[SuppressRule],
    *,
    objects: str,
) -> str:
    from kubewerk import __version__

    ordered = sorted(findings, key=sort_key)
    doc = {
        "tool": {"name": "kubewerk", "version": __version__},
        "command": command,
        "findings": [f.to_json() for f in ordered if f.suppressed is None],
        "suppressed": [f.to_json() for f in ordered if f.suppressed is not None],
        "unusedSuppressions": [
            {"rule": s.rule, "crd": s.crd, "path": s.path, "source": s.source} for s in unused
        ],
        "summary": summary.to_json(objects),
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"


def _fingerprint(f: Finding) -> str:
    key = "\0".join((f.rule, f.crd, ",".join(f.versions), f.field, f.pointer))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


# where each command's rules are documented: lint rules have an anchor each in
# docs/lint-rules.md; compat's checks and validate's findings are tables in docs/govern.md
HELP_PAGES = {
    "lint": "docs/lint-rules.md#{rule}",
    "compat": "docs/govern.md#compat",
    "validate": "docs/govern.md#validate",
}


def render_sarif(
    findings: Sequence[Finding],
    rules: Mapping[str, tuple[Severity, str]],
    uris: Mapping[str, str],
    command: str = "lint",
) -> str:
    """SARIF 2.1.0: ``rules`` maps rule id → (default severity, summary); ``uris`` maps
    a finding's file name to its artifact URI (relative to the working directory);
    ``command`` (lint, compat, validate) picks the documentation each rule's ``helpUri``
    points at."""
    from kubewerk import __version__

    rule_ids = sorted(rules)
    index = {r: i for i, r in enumerate(rule_ids)}
    driver_rules = [
        {
            "id": r,
            "name": "".join(w.capitalize() for w in r.split("-")),
            "shortDescription": {"text": rules[r][1]},
            "helpUri": f"{TOOL_URI}/blob/main/" + HELP_PAGES[command].format(rule=r),
            "defaultConfiguration": {"level": _SARIF_LEVEL[rules[r][0]]},
        }
        for r in rule_ids
    ]
    results: list[dict[str, Any]] = []
    for f in sorted(findings, key=sort_key):
        physical: dict[str, Any] = {
            "artifactLocation": {"uri": uris.get(f.file, f.file)},
            "region": {"startLine": f.line or 1},
        }
        logical_name = "/".join(p for p in (f.crd, f.version, f.field) if p) or f.crd or f.file
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": physical,
                    "logicalLocations": [{"fullyQualifiedName": logical_name, "kind": "member"}],
                }
            ],
            "partialFingerprints": {"kubewerkFinding/v1": _fingerprint(f)},
            "properties": {
                "crd": f.crd,
                "versions": list(f.versions),
                "field": f.field,
                "location": f.pointer,
            },
        }
        if f.rule in index:
            result["ruleIndex"] = index[f.rule]
        if f.suppressed is not None:
            result["suppressions"] = [
                {"kind": "external", "justification": f.suppressed.reason, "status": "accepted"}
            ]
        results.append(result)
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kubewerk",
                        "informationUri": TOOL_URI,
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": driver_rules,
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": results,
            }
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
