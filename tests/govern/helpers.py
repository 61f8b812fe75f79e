"""Helpers for the govern tests: build CRDs in a few lines, lint them, run the CLI."""

from __future__ import annotations

import argparse
import copy
import io
import sys
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from kubewerk.cli import UsageError
from kubewerk.govern.compat import compare_documents
from kubewerk.govern.findings import Finding
from kubewerk.govern.lint import lint_documents
from kubewerk.govern.loader import Document, Source
from kubewerk.govern.rules import RULES


def crd(
    spec_props: dict[str, Any] | None = None,
    *,
    status_props: dict[str, Any] | None = None,
    root: dict[str, Any] | None = None,
    scope: str = "Namespaced",
    versions: Sequence[str] = ("v1",),
    subresources: dict[str, Any] | None = None,
    api_version: str = "apiextensions.k8s.io/v1",
    name: str = "widgets.example.com",
    **spec_extra: Any,
) -> dict[str, Any]:
    """A valid v1 CRD for kind Widget whose schema has the given spec/status properties."""
    schema: dict[str, Any] = (
        root
        if root is not None
        else {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": spec_props or {}},
            },
        }
    )
    if status_props is not None:
        schema["properties"]["status"] = {"type": "object", "properties": status_props}
    vs = []
    for i, v in enumerate(versions):
        entry: dict[str, Any] = {
            "name": v,
            "served": True,
            "storage": i == len(versions) - 1,
            "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
        }
        sub = (
            subresources
            if subresources is not None
            else ({"status": {}} if status_props is not None else None)
        )
        if sub is not None:
            entry["subresources"] = sub
        vs.append(entry)
    return {
        "apiVersion": api_version,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": name.split(".", 1)[1],
            "names": {
                "kind": "Widget",
                "plural": name.split(".")[0],
                "singular": "widget",
                "listKind": "WidgetList",
            },
            "scope": scope,
            "versions": vs,
            **spec_extra,
        },
    }


GOOD_STATUS = {
    "observedGeneration": {"type": "integer", "format": "int64"},
    "conditions": {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["type", "status", "lastTransitionTime", "reason", "message"],
            "properties": {
                "type": {"type": "string", "maxLength": 316},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "observedGeneration": {"type": "integer"},
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "reason": {"type": "string", "maxLength": 1024},
                "message": {"type": "string", "maxLength": 32768},
            },
        },
    },
}


def doc(data: dict[str, Any], name: str = "mem.yaml") -> Document:
    return Document(Source(name, name, ""), 0, data)


def lint(data: dict[str, Any], rule: str | None = None) -> list[Finding]:
    """Lint one CRD with every rule but structural-schema; keep one rule's findings."""
    enabled = frozenset(RULES) - {"structural-schema"}
    found = lint_documents([doc(data)], enabled).findings
    return [f for f in found if rule is None or f.rule == rule]


def compat(old: dict[str, Any], new: dict[str, Any], check: str | None = None) -> list[Finding]:
    found = compare_documents([doc(old, "old.yaml")], [doc(new, "new.yaml")]).findings
    return [f for f in found if check is None or f.rule == check]


def run_cli(argv: Sequence[str], stdin: bytes = b"") -> tuple[int, str, str]:
    """Run a govern subcommand as ``kubewerk.cli.main`` would; returns (code, out, err)."""
    from kubewerk.cli import govern

    parser = argparse.ArgumentParser(prog="kubewerk")
    govern.register(parser.add_subparsers(dest="command"))
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                args = parser.parse_args(list(argv))
                code = int(args.func(args))
            except UsageError as exc:
                print(f"kubewerk: error: {exc}", file=sys.stderr)
                code = 2
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()
