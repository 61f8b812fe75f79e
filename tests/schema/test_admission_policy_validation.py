# ruff: noqa: E501  (tables of exact kube-apiserver messages)
"""ValidatingAdmissionPolicy / binding validation with kube-apiserver's paths and messages,
and the best-effort status.typeChecking."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.schema.admission_policy import type_check, validate_binding, validate_policy

V1 = "admissionregistration.k8s.io/v1"
RULE = {
    "apiGroups": ["apps"],
    "apiVersions": ["v1"],
    "operations": ["CREATE"],
    "resources": ["deployments"],
}


def pol(**spec: Any) -> dict[str, Any]:
    body = {"matchConstraints": {"resourceRules": [RULE]}, "validations": [{"expression": "true"}]}
    body.update(spec)
    return {
        "apiVersion": V1,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": body,
    }


def msgs(errs: Any) -> list[str]:
    return [e.message() for e in errs]


def test_valid_policy_and_defaults() -> None:
    assert validate_policy(pol()) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"validations": [{"expression": "object.spec.replicas <="}]},
            'spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed: '
            "ERROR: <input>:1:24: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', "
            "'!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
            " | object.spec.replicas <=\n | .......................^",
        ),
        (
            {"validations": [{"expression": "params.max > 1"}]},
            'spec.validations[0].expression: Invalid value: "params.max > 1": compilation failed: '
            "ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.max > 1\n | ^",
        ),
        (
            {"validations": [{"expression": "1 + 1"}]},
            'spec.validations[0].expression: Invalid value: "1 + 1": must evaluate to bool',
        ),
        (
            {"validations": [{"expression": "true", "messageExpression": "1"}]},
            'spec.validations[0].messageExpression: Invalid value: "1": must evaluate to string',
        ),
        (
            {"validations": [{"expression": "true", "messageExpression": "authorizer.path('/x')"}]},
            "spec.validations[0].messageExpression: Invalid value: \"authorizer.path('/x')\": compilation "
            "failed: ERROR: <input>:1:1: undeclared reference to 'authorizer' (in container '')\n"
            " | authorizer.path('/x')\n | ^",
        ),
        (
            {"validations": [{"expression": " "}]},
            "spec.validations[0].expression: Required value: expression is not specified",
        ),
        (
            {"validations": [{"expression": "true", "message": "a\nb"}]},
            'spec.validations[0].message: Invalid value: "a\\nb": message must not contain line breaks',
        ),
        (
            {"validations": [{"expression": "true", "reason": "Conflict"}]},
            'spec.validations[0].reason: Unsupported value: "Conflict": supported values: "Forbidden", '
            '"Invalid", "RequestEntityTooLarge"',
        ),
        (
            {"failurePolicy": "Never"},
            'spec.failurePolicy: Unsupported value: "Never": supported values: "Fail", "Ignore"',
        ),
        (
            {"matchConstraints": {"resourceRules": []}},
            "spec.matchConstraints.resourceRules: Required value",
        ),
        (
            {"matchConstraints": {"resourceRules": [dict(RULE, resources=["*", "pods"])]}},
            'spec.matchConstraints.resourceRules[0].resources: Invalid value: ["*","pods"]: if \'*\' is present, '
            "must not specify other resources without subresources",
        ),
        (
            {"matchConstraints": {"resourceRules": [dict(RULE, operations=["PATCH"])]}},
            'spec.matchConstraints.resourceRules[0].operations[0]: Unsupported value: "PATCH": supported values: '
            '"*", "CONNECT", "CREATE", "DELETE", "UPDATE"',
        ),
        (
            {"matchConstraints": {"resourceRules": [RULE], "matchPolicy": "Loose"}},
            'spec.matchConstraints.matchPolicy: Unsupported value: "Loose": supported values: "Equivalent", "Exact"',
        ),
        (
            {"validations": [], "auditAnnotations": []},
            "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
        ),
        (
            {"variables": [{"name": "a b", "expression": "1"}]},
            'spec.variables[0].name: Invalid value: "a b": name is not a valid CEL identifier',
        ),
        (
            {
                "variables": [
                    {"name": "a", "expression": "variables.b"},
                    {"name": "b", "expression": "1"},
                ]
            },
            'spec.variables[0].expression: Invalid value: "variables.b": compilation failed: ERROR: <input>:1:10: '
            "undefined field 'b'\n | variables.b\n | .........^",
        ),
        (
            {"matchConditions": [{"name": "", "expression": "true"}]},
            "spec.matchConditions[0].name: Required value",
        ),
        (
            {"paramKind": {"apiVersion": "v1", "kind": ""}},
            "spec.paramKind.kind: Required value",
        ),
        (
            {"auditAnnotations": [{"key": "k", "valueExpression": "1"}]},
            'spec.auditAnnotations[0].valueExpression: Invalid value: "1": must evaluate to one of [string null_type]',
        ),
    ],
)
def test_policy_errors(spec: dict[str, Any], expected: str) -> None:
    assert expected in msgs(validate_policy(pol(**spec)))


def test_params_declared_with_param_kind() -> None:
    p = pol(
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        validations=[{"expression": "object.spec.replicas <= int(params.data.max)"}],
    )
    assert validate_policy(p) == []


def binding(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"policyName": "p", "validationActions": ["Deny"]}
    body.update(spec)
    return {
        "apiVersion": V1,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"},
        "spec": body,
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"policyName": ""}, "spec.policyName: Required value"),
        (
            {"validationActions": []},
            "spec.validationActions: Required value: at least one validation action is required",
        ),
        (
            {"validationActions": ["Deny", "Warn"]},
            'spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating '
            "the same validation failure information in the API response and headers serves no purpose)",
        ),
        (
            {"validationActions": ["Deny", "Deny"]},
            'spec.validationActions[1]: Duplicate value: "Deny"',
        ),
        (
            {"paramRef": {"parameterNotFoundAction": "Deny"}},
            "spec.paramRef: Required value: one of name or selector must be specified",
        ),
        (
            {"paramRef": {"name": "a", "selector": {}}},
            "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
        ),
        (
            {"matchResources": {"matchPolicy": "Nope"}},
            'spec.matchResouces.matchPolicy: Unsupported value: "Nope": supported values: "Equivalent", "Exact"',
        ),
    ],
)
def test_binding_errors(spec: dict[str, Any], expected: str) -> None:
    assert expected in msgs(validate_binding(binding(**spec)))


def test_binding_param_ref_defaults_to_deny() -> None:
    assert validate_binding(binding(paramRef={"name": "limits"})) == []


DEPLOYMENT = {
    "type": "object",
    "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}},
}


def _resolve(group: str, version: str, resource: str) -> tuple[str, dict[str, Any]] | None:
    return (
        ("Deployment", DEPLOYMENT)
        if (group, version, resource) == ("apps", "v1", "deployments")
        else None
    )


def test_type_checking_warnings() -> None:
    p = pol(
        validations=[
            {"expression": "object.spec.replicas <= 5 && object.metadata.name != ''"},
            {"expression": "object.spec.replicass <= 5", "messageExpression": "object.spec.x"},
        ]
    )
    assert type_check(p, _resolve) == [
        {
            "fieldRef": "spec.validations[1].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'\n"
            " | object.spec.replicass <= 5\n | ...........^\n",
        },
        {
            "fieldRef": "spec.validations[1].messageExpression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'x'\n"
            " | object.spec.x\n | ...........^\n",
        },
    ]


def test_type_checking_skips_wildcards_and_unknown_kinds() -> None:
    wild = pol(
        matchConstraints={"resourceRules": [dict(RULE, apiGroups=["*"])]},
        validations=[{"expression": "object.nope"}],
    )
    assert type_check(wild, _resolve) == []
    assert type_check(pol(validations=[{"expression": "object.nope == 1"}]), lambda *a: None) == []


def test_no_static_cost_limit_on_policy_expressions() -> None:
    """kube-apiserver compiles a policy's expressions without a static cost check
    (plugin/cel/compile.go: compile, return type, program; the CRD-style "exceeds
    budget" refusal exists only for x-kubernetes-validations). With `object` typed
    dyn, the estimator rates any comprehension over the object unbounded, so such a
    check would refuse policies every cluster accepts: kubewerk accepts them too."""
    from kubewerk.schema.cel.cost import estimate_cost
    from kubewerk.schema.cel.cost_limits import STATIC_ESTIMATED_COST_LIMIT
    from kubewerk.schema.cel.cost_types import CelTypeEstimate

    nested = "object.spec.items.all(x, object.spec.items.all(y, x == y || x != y))"
    dyn = CelTypeEstimate("dyn")
    assert estimate_cost(nested, {"object": dyn}).max > STATIC_ESTIMATED_COST_LIMIT
    spec = {
        "matchConditions": [{"name": "m", "expression": nested}],
        "variables": [{"name": "v", "expression": nested}],
        "validations": [{"expression": nested, "messageExpression": f"string({nested})"}],
        "auditAnnotations": [{"key": "k", "valueExpression": f"string({nested})"}],
    }
    assert validate_policy(pol(**spec)) == []
