"""CEL cost as kube-apiserver estimates it: figures derived by hand from cel-go's and
Kubernetes' documented cost rules, CRD refusals with kube's messages, the corpus."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.schema import validate_crd
from kubewerk.schema._structural import Structural
from kubewerk.schema.cel.cost import CostError, CostEstimate, estimate_cost, estimate_rule
from kubewerk.schema.cel.cost_limits import cost_error_message, schema_costs
from kubewerk.schema.cel.cost_types import list_of, scalar, schema_type

HINT = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
    "arrays, maps, and strings are declared)"
)
RULE = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"


def rule_cost(schema: dict[str, Any], rule: str) -> int:
    node = Structural(schema)
    root = schema_type(node)
    assert root is not None
    return estimate_rule(node, root, rule).max


def crd(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


def nested(bound: int | None, length: int | None) -> dict[str, Any]:
    leaf: dict[str, Any] = {"type": "string"}
    if length is not None:
        leaf["maxLength"] = length
    node = leaf
    for _ in range(3):
        node = {"type": "array", "items": node}
        if bound is not None:
            node["maxItems"] = bound
    return {
        "type": "object",
        "properties": {"l": node},
        "x-kubernetes-validations": [{"rule": "self.l.all(a, a.all(b, b.all(c, c.size() > 1)))"}],
    }


# --- the estimator against cel-go's rules ------------------------------------------


def test_unbounded_int_list_all() -> None:
    # ints take at least 1 byte + a comma: (3 MiB - 2) / 2 = 1,572,863 items; per item
    # @not_strictly_false(@result) = 2 and @result && true = 1; plus self and the result
    assert rule_cost({"type": "array", "items": {"type": "integer"}}, "self.all(x, true)") == (
        1_572_863 * 3 + 2
    )


def test_bounded_string_list_starts_with() -> None:
    schema = {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 5}}
    # maxLength 5 -> 20 (4 bytes a rune): startsWith costs ceil(size("a") * 0.1) = 1 with
    # the argument sizes; per item: cond 2 + (@result 1 + x 1 + startsWith 1) = 5
    assert rule_cost(schema, "self.all(x, x.startsWith('a'))") == 10 * 5 + 2


def test_object_fields_cost_a_select_each() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    }
    # self (1) + .a on a struct (1), twice, + the comparison (1); has() is free
    assert rule_cost(schema, "self.a <= self.b") == 5
    assert rule_cost(schema, "has(self.a)") == 1


def test_string_traversal_uses_max_length_times_four() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 100}}}
    # contains: ceil(400 * 0.1) * ceil(3 * 0.1) = 40, + self.s (2) + literal (0)
    assert rule_cost(schema, "self.s.contains('abc')") == 42
    # matches: ceil(401 * 0.1) * ceil(3 * 0.25) = 41
    assert rule_cost(schema, "self.s.matches('a.c')") == 43


def test_comprehension_over_map_keys_and_bind() -> None:
    schema = {
        "type": "object",
        "maxProperties": 4,
        "additionalProperties": {"type": "string", "maxLength": 8},
    }
    # keys of a map have size 0 (kube's key type has no bound of its own), so != costs
    # nothing beyond its arguments; per key: cond 2 + (@result 1 + k 1)
    assert rule_cost(schema, "self.all(k, k != '')") == 4 * (2 + 2) + 2
    # cel.bind: the empty range (10) + the binding (1) + the body (x + 1: 2, then > : 1)
    assert rule_cost({"type": "integer"}, "cel.bind(x, self, x + 1 > 0)") == 14


def test_estimate_cost_over_declared_variables() -> None:
    got = estimate_cost(
        "object.items.all(i, i.startsWith('x'))",
        {"object": schema_type(Structural(_items_schema(7, 10))) or scalar("dyn")},
    )
    # range object.items 2; per item: cond 2 + @result 1 + i 1 + startsWith 1; result 1
    assert got.max == 7 * (2 + 1 + 1 + 1) + 2 + 1
    assert isinstance(got, CostEstimate) and got.min <= got.max
    assert estimate_cost("v.size() > 2", {"v": list_of(scalar("int"), 3)}).max == 3
    with pytest.raises(CostError):
        estimate_cost("nope(", {})


def _items_schema(n: int, length: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "maxItems": n,
                "items": {"type": "string", "maxLength": length},
            }
        },
    }


# --- limits and messages -------------------------------------------------------------


def test_cost_error_message_factor_formats() -> None:
    assert "factor of 1.200000x " in cost_error_message("estimated rule cost", 12, 10)
    assert "factor of 2.5x " in cost_error_message("estimated rule cost", 25, 10)
    assert "factor of more than 100x " in cost_error_message("x", 1011, 10)
    assert cost_error_message("estimated rule cost", 12, 10).endswith(HINT)


def test_triple_nested_all_over_unbounded_lists_is_refused() -> None:
    errs = [e.message() for e in validate_crd(crd(nested(None, None)))]
    assert errs == [
        f"{RULE}.rule: Forbidden: estimated rule cost exceeds budget by factor of more "
        f"than 100x {HINT}",
        f"{RULE}.rule: Forbidden: contributed to estimated rule cost total exceeding cost "
        "limit for entire OpenAPIv3 schema",
        "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated "
        f"rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more "
        f"than 100x {HINT}",
    ]


def test_the_same_rule_with_bounds_is_accepted() -> None:
    assert validate_crd(crd(nested(10, 10))) == []


def test_rule_under_an_unbounded_list_is_multiplied_by_its_cardinality() -> None:
    spec = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"s": {"type": "string", "maxLength": 10}},
                    "x-kubernetes-validations": [{"rule": "self.s.startsWith('abc')"}],
                },
            }
        },
    }
    costs = schema_costs(
        Structural(crd(spec)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]), "s"
    )
    (r,) = costs.rules
    # an object item is at least {} (2 bytes): 3 MiB / 3 evaluations
    assert r.cardinality == 3 * 1024 * 1024 // 3
    assert r.cost == r.per_call * r.cardinality
    assert validate_crd(crd(spec)) == []  # 4 * 1,048,576 is within 10,000,000


def test_message_expression_cost_is_reported_on_its_field() -> None:
    spec = {
        "type": "object",
        "properties": {
            "l": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}
        },
        "x-kubernetes-validations": [
            {
                "rule": "true",
                "messageExpression": "self.l.map(a, a.map(b, b + b)).size() > 0 ? 'x' : 'y'",
            }
        ],
    }
    msgs = [e.message() for e in validate_crd(crd(spec))]
    assert (
        f"{RULE}.messageExpression: Forbidden: estimated messageExpression cost exceeds "
        f"budget by factor of more than 100x {HINT}"
    ) in msgs


def test_unchanged_version_is_held_to_the_total_only_on_update() -> None:
    # 20,000 items x (cond 2 + @result 1 + x 1 + self.l[0] 3 + startsWith 10,000 x 0.1):
    # ~20M, over the per-rule limit and within the per-CRD total
    spec = {
        "type": "object",
        "properties": {
            "l": {
                "type": "array",
                "maxItems": 20000,
                "items": {"type": "string", "maxLength": 2500},
            }
        },
        "x-kubernetes-validations": [{"rule": "self.l.all(x, x.startsWith(self.l[0]))"}],
    }
    new = crd(spec)
    create = [e.message() for e in validate_crd(new)]
    assert len(create) == 1 and "estimated rule cost exceeds budget by factor of" in create[0]
    old = copy.deepcopy(new)
    old["status"] = {"storedVersions": ["v1"]}
    assert validate_crd(new, old) == []


def test_corpus_crd_history_is_all_accepted_for_cost(corpus_dir: Path) -> None:
    """The earlier versions of the corpus CRDs: their rules stay within the budgets.
    (The current ones go through the whole CRD acceptance, cost included, in
    tests/schema/test_crd.py::test_corpus_accepted_and_compiles.)"""
    seen = 0
    for f in sorted((corpus_dir / "crd-history").rglob("*.yaml")):
        for doc in yaml.load_all(f.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            if doc.get("apiVersion") != "apiextensions.k8s.io/v1":
                continue
            spec = doc.get("spec")
            versions = spec.get("versions") if isinstance(spec, dict) else None
            for i, v in enumerate(versions or []):
                root = ((v or {}).get("schema") or {}).get("openAPIV3Schema")
                if not isinstance(root, dict):
                    continue
                seen += 1
                errs = schema_costs(Structural(root), f"v{i}").errors(f"v{i}")
                assert errs == [], (f, [e.message() for e in errs])
    assert seen > 100
