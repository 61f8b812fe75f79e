"""Findings: what ``kubewerk lint``, ``compat`` and ``validate`` report.

A :class:`Finding` names the rule that produced it, its severity, where it is (file,
line, document, CRD, version, the JSON Pointer of the schema location inside the
document and the field path of the object it concerns) and a message that says what
to do instead. Findings are plain frozen data: reports render them, configs re-grade
or suppress them, nothing mutates them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubewerk.core.patch import encode_pointer_token


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that ``ERROR > WARNING > INFO``."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """``"error"``/``"warning"``/``"info"`` (case-insensitive) to a severity."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r} (expected error, warning or info)"
            ) from None


FAIL_LEVELS = ("error", "warning", "info", "never")


def fail_threshold(level: str) -> Severity | None:
    """The lowest severity that fails a run for ``--fail-on LEVEL`` (``None``: never)."""
    if level == "never":
        return None
    return Severity.parse(level)


def pointer(parts: Iterable[str | int]) -> str:
    """RFC 6901 JSON Pointer for a sequence of keys and indexes (``""`` for the root)."""
    return "".join("/" + encode_pointer_token(str(p)) for p in parts)


_FIELD_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def field_to_location(path: str) -> tuple[str | int, ...]:
    """A Kubernetes field path (``spec.versions[0].schema.openAPIV3Schema.properties[spec]``)
    as a location (``("spec", "versions", 0, "schema", ...)``): bracketed digits are list
    indexes, anything else a key."""
    out: list[str | int] = []
    for name, index in _FIELD_SEGMENT.findall(path):
        token = name or index
        out.append(int(token) if token.isdigit() and index else token)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Suppression:
    """Why a finding was suppressed (from the config file)."""

    reason: str
    source: str  # "FILE:LINE" of the suppression entry


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding.

    ``location`` is the path (keys and list indexes) from the document root to the
    schema node or object field concerned; ``field`` is the object field path the
    finding is about in Kubernetes notation (``spec.auth.password``, ``spec.items[*]``).
    ``versions`` lists every CRD version the finding applies to when several versions
    share an identical schema; ``location`` points into the first of them.
    """

    rule: str
    severity: Severity
    message: str
    file: str
    line: int | None = None
    document: int = 0
    crd: str = ""
    versions: tuple[str, ...] = ()
    location: tuple[str | int, ...] = ()
    field: str = ""
    suppressed: Suppression | None = None
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def version(self) -> str:
        return self.versions[0] if self.versions else ""

    @property
    def pointer(self) -> str:
        return pointer(self.location)

    def with_severity(self, severity: Severity) -> Finding:
        return replace(self, severity=severity)

    def to_json(self) -> dict[str, Any]:
        """The finding as one JSON object with stable keys (see docs/govern.md)."""
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity.label,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "document": self.document,
            "crd": self.crd,
            "version": self.version,
            "versions": list(self.versions),
            "location": self.pointer,
            "field": self.field,
        }
        if self.extra:
            out["details"] = dict(self.extra)
        if self.suppressed is not None:
            out["suppressed"] = {
                "reason": self.suppressed.reason,
                "source": self.suppressed.source,
            }
        return out


def sort_key(f: Finding) -> tuple[str, int, int, str, str, str]:
    """Stable report order: file, document, line, CRD, rule, field."""
    return (f.file, f.document, f.line or 0, f.crd, f.rule, f.field)


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts for a run: by severity and by rule (suppressed findings not counted)."""

    files: int
    documents: int
    objects: int
    errors: int
    warnings: int
    infos: int
    suppressed: int
    by_rule: dict[str, int]
    fail_on: str
    failed: bool

    @classmethod
    def of(
        cls,
        findings: Sequence[Finding],
        *,
        files: int,
        documents: int,
        objects: int,
        fail_on: str,
    ) -> Summary:
        active = [f for f in findings if f.suppressed is None]
        by_rule: dict[str, int] = {}
        for f in active:
            by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        threshold = fail_threshold(fail_on)
        failed = threshold is not None and any(f.severity >= threshold for f in active)
        return cls(
            files=files,
            documents=documents,
            objects=objects,
            errors=sum(1 for f in active if f.severity is Severity.ERROR),
            warnings=sum(1 for f in active if f.severity is Severity.WARNING),
            infos=sum(1 for f in active if f.severity is Severity.INFO),
            suppressed=len(findings) - len(active),
            by_rule=dict(sorted(by_rule.items())),
            fail_on=fail_on,
            failed=failed,
        )

    def to_json(self, objects_key: str) -> dict[str, Any]:
        return {
            "files": self.files,
            "documents": self.documents,
            objects_key: self.objects,
            "findings": self.errors + self.warnings + self.infos,
            "error": self.errors,
            "warning": self.warnings,
            "info": self.infos,
            "suppressed": self.suppressed,
            "byRule": self.by_rule,
            "failOn": self.fail_on,
            "failed": self.failed,
        }
