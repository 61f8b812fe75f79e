"""The lint rules as units: the registry, each rule's documented example, and the
single schema walk they share."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from typing import Any

import pytest

import kubewerk.govern.rules as rules_pkg
from kubewerk.govern.crd import CRDView, SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules import RULES, Linter, RawFinding, Rule, enabled_rules, linter
from kubewerk.govern.rules.example import Where, clean_crd, example_crd

from .helpers import crd, doc


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
    assert inspect.getdoc(rule), "the docstring says what the rule finds"
    assert rule.severity in rule.severities()
    # every rule either checks the CRD as a whole or walks its schemas (or both)
    assert rule.nodes is not None or "check_crd" in vars(rule)


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
