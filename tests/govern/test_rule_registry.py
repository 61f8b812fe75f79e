"""The lint rules as units: the registry, docs/lint-rules.md against the rules, each
rule's documented example, and the single schema walk they share."""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kubewerk.govern.rules as rules_pkg
from kubewerk.govern.crd_view import CRDView, SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules import RULES, Linter, RawFinding, Rule, enabled_rules, linter
from kubewerk.govern.rules.doc import render, severity_text
from kubewerk.govern.rules.example import Where, clean_crd, example_crd

from .helpers import crd, doc

DOC = Path(__file__).resolve().parents[2] / "docs" / "lint-rules.md"


def _lint(data: dict[str, Any], enabled: frozenset[str] = frozenset(RULES)) -> list[RawFinding]:
    found: list[RawFinding] = []
    Linter(enabled_rules(enabled)).lint(CRDView(data), found.append)
    return found


# --- the registry -------------------------------------------------------------------


def _rule_classes() -> Iterator[type[Rule]]:
    for info in pkgutil.iter_modules(rules_pkg.__path__):
        module = importlib.import_module(f"{rules_pkg.__name__}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__:
                yield obj


def test_every_rule_class_is_registered_once_under_its_id() -> None:
    defined = sorted(cls.__name__ for cls in _rule_classes())
    assert defined == sorted(cls.__name__ for cls in RULES.values())
    assert all(rule_id == cls.id for rule_id, cls in RULES.items())


@pytest.mark.parametrize("rule", RULES.values(), ids=list(RULES))
def test_rule_identity(rule: type[Rule]) -> None:
    assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.id)
    assert isinstance(rule.severity, Severity)
    assert rule.summary and "|" not in rule.summary and "\n" not in rule.summary
    assert inspect.getdoc(rule), "the docstring is the rule's section of docs/lint-rules.md"
    assert rule.severity in rule.severities()
    # every rule either checks the CRD as a whole or walks its schemas (or both)
    assert rule.nodes is not None or "check_crd" in vars(rule)


# --- docs/lint-rules.md against the rules ----------------------------------------------


def test_lint_rules_doc_is_generated_from_the_rules() -> None:
    expected = render()
    actual = DOC.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    actual.splitlines(keepends=True),
                    expected.splitlines(keepends=True),
                    "docs/lint-rules.md",
                    "the rules",
                )
            )[:60]
        )
        pytest.fail(
            "docs/lint-rules.md is out of date; regenerate it with "
            "`.venv/bin/python -m kubewerk.govern.rules.doc > docs/lint-rules.md`\n" + diff
        )


_ROW = re.compile(r"^\| \[`([^`]+)`\]\(#([^)]+)\) \| ([a-z /]+) \| (.+) \|$", re.M)


def test_doc_table_and_sections_list_each_rule_with_its_severities() -> None:
    """Read from the file itself, independently of the generator."""
    text = DOC.read_text(encoding="utf-8")
    rows = _ROW.findall(text)
    assert [row[0] for row in rows] == list(RULES), "the table lists the rules in order"
    for rule_id, anchor, severities, summary in rows:
        rule = RULES[rule_id]
        assert anchor == rule_id
        assert severities.split(" / ") == [s.label for s in rule.severities()]
        assert summary == rule.summary
    assert re.findall(r"^## (\S+)$", text, re.M) == list(RULES)


def test_multi_severity_rule_shows_all_its_severities() -> None:
    assert severity_text(RULES["version-discipline"]) == "error / warning / info"
    assert severity_text(RULES["no-floats"]) == "warning"


# --- each rule's documented example --------------------------------------------------


def test_the_example_base_crd_is_clean() -> None:
    assert _lint(clean_crd()) == []


@pytest.mark.parametrize("rule", RULES.values(), ids=list(RULES))
def test_rule_finds_its_bad_example_and_not_its_good_one(rule: type[Rule]) -> None:
    example = rule.example
    bad = _lint(example_crd(example.where, example.bad))
    assert rule.id in {f.rule for f in bad}, f"{rule.id} misses its bad example"
    good = _lint(example_crd(example.where, example.good))
    assert rule.id not in {f.rule for f in good}, f"{rule.id} reports its good example"
    # a good example is a CRD the API server accepts
    assert "structural-schema" not in {f.rule for f in good}


def test_example_fragments_go_where_they_say() -> None:
    data = example_crd(Where.SPEC_PROPERTIES, "a: {type: string}\n")
    schema = data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["properties"] == {"a": {"type": "string"}}
    data = example_crd(Where.CRD, "apiVersion: apiextensions.k8s.io/v1beta1\n")
    assert data["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    with pytest.raises(ValueError, match="mapping"):
        example_crd(Where.CRD, "- not a mapping\n")


# --- one walk per distinct schema -----------------------------------------------------


def test_one_walk_per_distinct_schema_whatever_the_number_of_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked: list[int] = []
    real_walk = linter.walk

    def counting_walk(schema: dict[str, Any], max_depth: int = 200) -> Iterator[SchemaNode]:
        walked.append(id(schema))
        return real_walk(schema, max_depth)

    monkeypatch.setattr(linter, "walk", counting_walk)
    data = crd({"password": {"type": "string"}}, versions=("v1alpha1", "v1beta1", "v1"))
    data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "ratio"
    ] = {"type": "number"}
    found = _lint(data)
    assert len(walked) == 2  # v1beta1 and v1 share a schema
    by_rule = {f.rule: f.versions for f in found if f.rule in ("no-floats",)}
    assert by_rule == {"no-floats": ("v1alpha1",)}
    credentials = sorted(f.versions for f in found if f.rule == "plaintext-credential")
    assert credentials == [("v1alpha1",), ("v1beta1", "v1")]
    walked.clear()
    _lint(data, frozenset({"deprecated-api", "version-discipline"}))
    assert walked == []  # no rule that looks at schema nodes: no walk


def test_a_linter_keeps_no_state_between_schemas() -> None:
    """Rules that gather per schema (status-as-cache, unbounded-cel-input) start afresh."""
    status = {"blob": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    data = crd({}, status_props={"observedGeneration": {"type": "integer"}, **status})
    lint = Linter(enabled_rules(frozenset({"status-as-cache"})))
    for _ in range(2):
        found: list[RawFinding] = []
        lint.lint(CRDView(data), found.append)
        assert [f.field for f in found] == ["status.blob"]
        assert "more" not in found[0].message


def test_rules_skip_what_the_api_server_defines() -> None:
    data = clean_crd()
    schema = data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"password": {"type": "string"}, "ratio": {"type": "number"}},
    }
    assert _lint(data, frozenset(RULES) - {"structural-schema"}) == []


def test_lint_documents_runs_the_registered_rules() -> None:
    """The registry is what lint_documents runs: every finding names a registered rule."""
    from kubewerk.govern.lint import lint_documents

    data = crd({"password": {"type": "string"}, "ratio": {"type": "number"}})
    found = lint_documents([doc(data)], frozenset(RULES)).findings
    assert {f.rule for f in found} == {"plaintext-credential", "no-floats"}
    assert all(f.severity is RULES[f.rule].severity for f in found)
