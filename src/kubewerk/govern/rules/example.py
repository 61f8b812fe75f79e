"""A rule's documented example: a bad and a good CRD fragment, and where each goes.

The fragments are YAML text, shown verbatim in docs/lint-rules.md. :func:`example_crd`
puts a fragment into :func:`clean_crd` (a small CRD that no rule reports and the API
server accepts), so the tests can check each example: the rule finds the bad one and
not the good one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import yaml


class Where(enum.Enum):
    """Where a fragment goes; the value is how docs/lint-rules.md says it."""

    SPEC_PROPERTIES = "the `spec` schema's `properties`"
    STATUS_PROPERTIES = "the `status` schema's `properties`"
    SCHEMA_PROPERTIES = "`openAPIV3Schema.properties` (replacing `spec` or `status`)"
    VERSION = "a `spec.versions[*]` entry (the only version)"
    CRD_SPEC = "the CRD's `spec` (replacing the keys it sets)"
    CRD = "the CRD's top level"


@dataclass(frozen=True, slots=True)
class Example:
    """A bad and a good fragment (YAML mappings) for :class:`Where` they go, and an
    optional note printed after them."""

    where: Where
    bad: str
    good: str
    note: str = ""


def clean_crd() -> dict[str, Any]:
    """A namespaced v1 CRD (``widgets.example.com``, one version ``v1`` with a status
    subresource) that no lint rule reports."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {
                "kind": "Widget",
                "listKind": "WidgetList",
                "plural": "widgets",
                "singular": "widget",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {"type": "object", "properties": {}},
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "observedGeneration": {"type": "integer", "format": "int64"}
                                    },
                                },
                            },
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def example_crd(where: Where, fragment: str) -> dict[str, Any]:
    """:func:`clean_crd` with ``fragment`` (YAML text of a mapping) put where it goes."""
    part = yaml.safe_load(fragment)
    if not isinstance(part, dict):
        raise ValueError(f"an example fragment must be a YAML mapping: {fragment!r}")
    crd = clean_crd()
    spec = crd["spec"]
    schema = spec["versions"][0]["schema"]["openAPIV3Schema"]
    if where is Where.SPEC_PROPERTIES:
        schema["properties"]["spec"]["properties"].update(part)
    elif where is Where.STATUS_PROPERTIES:
        schema["properties"]["status"]["properties"].update(part)
    elif where is Where.SCHEMA_PROPERTIES:
        schema["properties"].update(part)
    elif where is Where.VERSION:
        spec["versions"] = [part]
    elif where is Where.CRD_SPEC:
        spec.update(part)
    else:
        crd.update(part)
    return crd
