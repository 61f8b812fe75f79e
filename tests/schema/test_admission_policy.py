# ruff: noqa: E501  (tables of exact kube-apiserver messages)
"""The ValidatingAdmissionPolicy engine: a table of (policy, binding, params, request) →
verdict, code and the exact kube-apiserver message; warnings and audit annotations."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubewerk.schema.admission_policy import (
    ParamStore,
    Request,
    UserInfo,
    admit,
    compile_policy,
)

V1 = "admissionregistration.k8s.io/v1"


def policy(
    name: str = "p",
    validations: list[dict[str, Any]] | None = None,
    *,
    rules: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    mc = spec.pop("matchConstraints", None) or {
        "resourceRules": rules
        or [
            {
                "apiGroups": ["apps"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["deployments"],
            }
        ]
    }
    body: dict[str, Any] = {"matchConstraints": mc, **spec}
    if validations is not None:
        body["validations"] = validations
    return {
        "apiVersion": V1,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": body,
    }


def binding(
    name: str = "b", policy_name: str = "p", actions: list[str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": actions or ["Deny"], **spec},
    }


def deploy(
    replicas: Any = 3, name: str = "web", ns: str = "default", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {"replicas": replicas},
    }


def cm(
    name: str, ns: str, data: dict[str, str], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


PREFIX = "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
LIMIT = [{"expression": "object.spec.replicas <= 5"}]
PARAM_POLICY: dict[str, Any] = {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}
PARAM_LIMIT = [{"expression": "object.spec.replicas <= int(params.data.max)"}]
NS_TEAM = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "default", "labels": {"team": "a"}},
}


def req(
    obj: dict[str, Any] | None = None,
    op: str = "CREATE",
    old: dict[str, Any] | None = None,
    **kw: Any,
) -> Request:
    return Request.for_object(op, obj, old, **kw)


# id, policies, bindings, params, request, (allowed, code, message suffix or None)
CASES: list[
    tuple[
        str,
        list[dict[str, Any]],
        list[dict[str, Any]],
        list[dict[str, Any]],
        Request,
        tuple[bool, int, str],
    ]
] = [
    ("pass", [policy(validations=LIMIT)], [binding()], [], req(deploy(3)), (True, 0, "")),
    (
        "fail-default-message",
        [policy(validations=LIMIT)],
        [binding()],
        [],
        req(deploy(7)),
        (False, 422, "failed expression: object.spec.replicas <= 5"),
    ),
    (
        "message",
        [
            policy(
                validations=[{"expression": "object.spec.replicas <= 5", "message": " too many "}]
            )
        ],
        [binding()],
        [],
        req(deploy(7)),
        (False, 422, "too many"),
    ),
    (
        "messageExpression",
        [
            policy(
                validations=[
                    {
                        "expression": "object.spec.replicas <= 5",
                        "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 5'",
                    }
                ]
            )
        ],
        [binding()],
        [],
        req(deploy(7)),
        (False, 422, "replicas 7 > 5"),
    ),
    (
        "messageExpression-empty-falls-back",
        [
            policy(
                validations=[{"expression": "false", "message": "m", "messageExpression": "'  '"}]
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "m"),
    ),
    (
        "messageExpression-error-falls-back",
        [
            policy(
                validations=[
                    {"expression": "false", "message": "m", "messageExpression": "object.nope"}
                ]
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "m"),
    ),
    (
        "messageExpression-newline-falls-back",
        [policy(validations=[{"expression": "false", "messageExpression": "'a\\nb'"}])],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "failed expression: false"),
    ),
    (
        "reason-forbidden",
        [policy(validations=[{"expression": "false", "reason": "Forbidden", "message": "no"}])],
        [binding()],
        [],
        req(deploy()),
        (False, 403, "no"),
    ),
    (
        "reason-unauthorized",
        [policy(validations=[{"expression": "false", "reason": "Unauthorized", "message": "no"}])],
        [binding()],
        [],
        req(deploy()),
        (False, 401, "no"),
    ),
    (
        "reason-too-large",
        [
            policy(
                validations=[
                    {"expression": "false", "reason": "RequestEntityTooLarge", "message": "no"}
                ]
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 413, "no"),
    ),
    (
        "first-denial-wins",
        [
            policy(
                validations=[
                    {"expression": "true"},
                    {"expression": "false", "message": "second"},
                    {"expression": "false", "message": "third"},
                ]
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "second"),
    ),
    (
        "runtime-error-fail",
        [policy(validations=[{"expression": "object.spec.missing > 1"}])],
        [binding()],
        [],
        req(deploy()),
        (
            False,
            422,
            "expression 'object.spec.missing > 1' resulted in error: no such key: missing",
        ),
    ),
    (
        "runtime-error-ignore",
        [policy(validations=[{"expression": "object.spec.missing > 1"}], failurePolicy="Ignore")],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "not-matched-resource",
        [policy(validations=[{"expression": "false"}])],
        [binding()],
        [],
        req(cm("c", "default", {})),
        (True, 0, ""),
    ),
    (
        "not-matched-operation",
        [policy(validations=[{"expression": "false"}])],
        [binding()],
        [],
        req(None, "DELETE", deploy()),
        (True, 0, ""),
    ),
    (
        "delete-oldObject",
        [
            policy(
                validations=[
                    {
                        "expression": "object != null",
                        "messageExpression": "'deleting ' + oldObject.metadata.name",
                    }
                ],
                rules=[
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["DELETE"],
                        "resources": ["deployments"],
                    }
                ],
            )
        ],
        [binding()],
        [],
        req(None, "DELETE", deploy(3)),
        (False, 422, "deleting web"),
    ),
    (
        "update-transition",
        [
            policy(
                validations=[
                    {
                        "expression": "request.operation != 'UPDATE' || "
                        "object.spec.replicas >= oldObject.spec.replicas",
                        "message": "no scaling down",
                    }
                ]
            )
        ],
        [binding()],
        [],
        req(deploy(2), "UPDATE", deploy(4)),
        (False, 422, "no scaling down"),
    ),
    (
        "wildcard-rule",
        [
            policy(
                validations=[{"expression": "false", "message": "w"}],
                rules=[
                    {
                        "apiGroups": ["*"],
                        "apiVersions": ["*"],
                        "operations": ["*"],
                        "resources": ["*"],
                    }
                ],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "w"),
    ),
    (
        "subresource-not-matched-by-star",
        [
            policy(
                validations=[{"expression": "false"}],
                rules=[
                    {
                        "apiGroups": ["*"],
                        "apiVersions": ["*"],
                        "operations": ["*"],
                        "resources": ["*"],
                    }
                ],
            )
        ],
        [binding()],
        [],
        req(deploy(), sub_resource="scale"),
        (True, 0, ""),
    ),
    (
        "subresource-matched",
        [
            policy(
                validations=[
                    {"expression": "request.subResource == 'status' && false", "message": "s"}
                ],
                rules=[
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["deployments/status"],
                    }
                ],
            )
        ],
        [binding()],
        [],
        req(deploy(), "UPDATE", deploy(), sub_resource="status"),
        (False, 422, "s"),
    ),
    (
        "exclude-rules",
        [
            policy(
                validations=[{"expression": "false"}],
                matchConstraints={
                    "resourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["*"],
                            "resources": ["*"],
                        }
                    ],
                    "excludeResourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["*"],
                            "resources": ["deployments"],
                        }
                    ],
                },
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "resource-names",
        [
            policy(
                validations=[{"expression": "false", "message": "n"}],
                rules=[
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["*"],
                        "resources": ["deployments"],
                        "resourceNames": ["other"],
                    }
                ],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "namespace-selector-miss",
        [
            policy(
                validations=[{"expression": "false"}],
                matchConstraints={
                    "resourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["*"],
                            "resources": ["deployments"],
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"team": "b"}},
                },
            )
        ],
        [binding()],
        [],
        req(deploy(), namespace_object=NS_TEAM),
        (True, 0, ""),
    ),
    (
        "namespace-selector-hit-namespaceObject",
        [
            policy(
                validations=[
                    {
                        "expression": "namespaceObject.metadata.labels.team != 'a'",
                        "message": "team a",
                    }
                ],
                matchConstraints={
                    "resourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["*"],
                            "resources": ["deployments"],
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"team": "a"}},
                },
            )
        ],
        [binding()],
        [],
        req(deploy(), namespace_object=NS_TEAM),
        (False, 422, "team a"),
    ),
    (
        "object-selector-old-labels",
        [
            policy(
                validations=[{"expression": "false", "message": "o"}],
                matchConstraints={
                    "resourceRules": [
                        {
                            "apiGroups": ["apps"],
                            "apiVersions": ["v1"],
                            "operations": ["*"],
                            "resources": ["deployments"],
                        }
                    ],
                    "objectSelector": {"matchLabels": {"env": "prod"}},
                },
            )
        ],
        [binding()],
        [],
        req(deploy(), "UPDATE", deploy(labels={"env": "prod"})),
        (False, 422, "o"),
    ),
    (
        "binding-match-resources-narrows",
        [policy(validations=[{"expression": "false"}])],
        [binding(matchResources={"namespaceSelector": {"matchLabels": {"team": "b"}}})],
        [],
        req(deploy(), namespace_object=NS_TEAM),
        (True, 0, ""),
    ),
    (
        "binding-other-policy",
        [policy(validations=[{"expression": "false"}])],
        [binding(policy_name="q")],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "match-condition-false",
        [
            policy(
                validations=[{"expression": "false"}],
                matchConditions=[
                    {"name": "prod-only", "expression": "object.metadata.namespace == 'prod'"}
                ],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "match-condition-error-fail",
        [
            policy(
                validations=[{"expression": "true"}],
                matchConditions=[{"name": "c", "expression": "object.nope == 1"}],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "expression 'object.nope == 1' resulted in error: no such key: nope"),
    ),
    (
        "match-condition-error-ignore",
        [
            policy(
                validations=[{"expression": "false"}],
                failurePolicy="Ignore",
                matchConditions=[{"name": "c", "expression": "object.nope == 1"}],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "match-condition-false-beats-error",
        [
            policy(
                validations=[{"expression": "false"}],
                matchConditions=[
                    {"name": "c", "expression": "object.nope == 1"},
                    {"name": "d", "expression": "false"},
                ],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "variables",
        [
            policy(
                validations=[
                    {
                        "expression": "variables.replicas <= 5",
                        "messageExpression": "'got ' + string(variables.replicas)",
                    }
                ],
                variables=[{"name": "replicas", "expression": "object.spec.replicas"}],
            )
        ],
        [binding()],
        [],
        req(deploy(9)),
        (False, 422, "got 9"),
    ),
    (
        "variable-error-propagates",
        [
            policy(
                validations=[{"expression": "variables.v > 1"}],
                variables=[{"name": "v", "expression": "object.spec.nope"}],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "expression 'variables.v > 1' resulted in error: no such key: nope"),
    ),
    (
        "variable-short-circuit",
        [
            policy(
                validations=[{"expression": "true || variables.v > 1"}],
                variables=[{"name": "v", "expression": "object.spec.nope"}],
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "params-by-name",
        [policy(validations=PARAM_LIMIT, **PARAM_POLICY)],
        [binding(paramRef={"name": "limits", "namespace": "cfg"})],
        [cm("limits", "cfg", {"max": "2"})],
        req(deploy(3)),
        (False, 422, "failed expression: object.spec.replicas <= int(params.data.max)"),
    ),
    (
        "params-request-namespace",
        [policy(validations=PARAM_LIMIT, **PARAM_POLICY)],
        [binding(paramRef={"name": "limits"})],
        [cm("limits", "default", {"max": "9"}), cm("limits", "cfg", {"max": "1"})],
        req(deploy(3)),
        (True, 0, ""),
    ),
    (
        "params-not-found-deny",
        [policy(validations=PARAM_LIMIT, **PARAM_POLICY)],
        [binding(paramRef={"name": "missing", "namespace": "cfg"})],
        [cm("limits", "cfg", {"max": "9"})],
        req(deploy(3)),
        (
            False,
            422,
            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
        ),
    ),
    (
        "params-not-found-allow",
        [policy(validations=[{"expression": "false"}], **PARAM_POLICY)],
        [
            binding(
                paramRef={"name": "missing", "namespace": "cfg", "parameterNotFoundAction": "Allow"}
            )
        ],
        [],
        req(deploy(3)),
        (True, 0, ""),
    ),
    (
        "params-not-found-deny-ignore",
        [policy(validations=PARAM_LIMIT, failurePolicy="Ignore", **PARAM_POLICY)],
        [binding(paramRef={"name": "missing", "namespace": "cfg"})],
        [],
        req(deploy(3)),
        (True, 0, ""),
    ),
    (
        "params-selector-each",
        [
            policy(
                validations=[
                    {
                        "expression": "object.spec.replicas <= int(params.data.max)",
                        "messageExpression": "'limit ' + params.metadata.name",
                    }
                ],
                **PARAM_POLICY,
            )
        ],
        [binding(paramRef={"selector": {"matchLabels": {"kind": "limit"}}, "namespace": "cfg"})],
        [
            cm("a", "cfg", {"max": "9"}, {"kind": "limit"}),
            cm("b", "cfg", {"max": "1"}, {"kind": "limit"}),
            cm("c", "cfg", {"max": "0"}),
        ],
        req(deploy(3)),
        (False, 422, "limit b"),
    ),
    (
        "params-namespaced-cluster-request",
        [
            policy(
                validations=PARAM_LIMIT,
                **PARAM_POLICY,
                rules=[
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["*"],
                        "resources": ["namespaces"],
                    }
                ],
            )
        ],
        [binding(paramRef={"name": "limits"})],
        [cm("limits", "cfg", {"max": "1"})],
        req({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ""}}),
        (
            False,
            422,
            "failed to configure binding: cannot use namespaced paramRef in policy binding that matches "
            "cluster-scoped resources",
        ),
    ),
    (
        "params-null-without-paramRef",
        [policy(validations=[{"expression": "params == null", "message": "null"}], **PARAM_POLICY)],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "request-user",
        [
            policy(
                validations=[
                    {"expression": "request.userInfo.username != 'mallory'", "message": "not you"}
                ]
            )
        ],
        [binding()],
        [],
        req(deploy(), user=UserInfo("mallory", groups=("dev",))),
        (False, 422, "not you"),
    ),
    (
        "request-groups",
        [
            policy(
                validations=[
                    {"expression": "'admins' in request.userInfo.groups", "message": "admins only"}
                ]
            )
        ],
        [binding()],
        [],
        req(deploy(), user=UserInfo("bob", groups=("dev",))),
        (False, 422, "admins only"),
    ),
    (
        "request-resource-kind",
        [
            policy(
                validations=[
                    {
                        "expression": "request.resource.resource == 'deployments' && "
                        "request.kind.kind == 'Deployment' && request.name == 'web' && "
                        "request.namespace == 'default' && !request.dryRun",
                        "message": "r",
                    }
                ]
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "authorizer-no-opinion",
        [
            policy(
                validations=[
                    {
                        "expression": "authorizer.group('apps').resource('deployments')"
                        ".namespace('default').check('delete').allowed()",
                        "message": "may not delete",
                    }
                ]
            )
        ],
        [binding()],
        [],
        req(deploy()),
        (False, 422, "may not delete"),
    ),
    (
        "generate-name",
        [policy(validations=[{"expression": "false", "message": "g"}])],
        [binding()],
        [],
        req(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"generateName": "web-", "namespace": "d"},
            }
        ),
        (
            False,
            422,
            "deployments.apps \"web-\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' "
            "denied request: g",
        ),
    ),
    (
        "second-policy-denies",
        [
            policy(validations=[{"expression": "true"}]),
            policy("q", [{"expression": "false", "message": "from q"}]),
        ],
        [binding(), binding("bq", "q")],
        [],
        req(deploy()),
        (False, 422, "from q"),
    ),
    (
        "warn-only-allows",
        [policy(validations=[{"expression": "false", "message": "w"}])],
        [binding(actions=["Warn"])],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "audit-only-allows",
        [policy(validations=[{"expression": "false", "message": "a"}])],
        [binding(actions=["Audit"])],
        [],
        req(deploy()),
        (True, 0, ""),
    ),
    (
        "compile-error-stored",
        [policy(validations=[{"expression": "object.spec.replicas <="}])],
        [binding()],
        [],
        req(deploy()),
        (
            False,
            422,
            "compilation error: compilation failed: ERROR: <input>:1:24: Syntax error: "
            "mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', "
            "'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
            " | object.spec.replicas <=\n | .......................^",
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_engine_table(case: Any) -> None:
    _, policies, bindings, params, request, (allowed, code, message) = case
    result = admit(
        [compile_policy(p) for p in policies], bindings, request, params=ParamStore(params)
    )
    assert result.allowed is allowed
    if allowed:
        assert result.error is None
        return
    assert result.error is not None
    status = result.error.to_status()
    assert status["code"] == code
    if message.startswith("deployments.apps"):
        assert status["message"] == message
    elif message.startswith("failed to configure") or case[0] == "second-policy-denies":
        assert status["message"].endswith(message)
    else:
        assert status["message"] == PREFIX + message
        assert status["details"]["causes"] == [
            {"message": PREFIX.split(" is forbidden: ")[1] + message}
        ]


def test_table_has_thirty_cases() -> None:
    assert len(CASES) >= 30


def test_denial_status_body() -> None:
    result = admit([compile_policy(policy(validations=LIMIT))], [binding()], req(deploy(7)))
    assert result.error is not None
    assert result.error.to_status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": PREFIX + "failed expression: object.spec.replicas <= 5",
        "reason": "Invalid",
        "code": 422,
        "details": {
            "name": "web",
            "group": "apps",
            "kind": "deployments",
            "causes": [
                {
                    "message": "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
                    "failed expression: object.spec.replicas <= 5"
                }
            ],
        },
    }


def test_warn_and_audit_actions() -> None:
    pol = compile_policy(
        policy(validations=[{"expression": "true"}, {"expression": "false", "message": "w"}])
    )
    result = admit([pol], [binding(actions=["Warn", "Audit"])], req(deploy()))
    assert result.allowed
    assert result.warnings == [
        "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': w"
    ]
    failure = json.loads(
        result.audit_annotations["validation.policy.admission.k8s.io/validation_failure"]
    )
    assert failure == [
        {
            "message": "w",
            "policy": "p",
            "binding": "b",
            "expressionIndex": 1,
            "validationActions": ["Warn", "Audit"],
        }
    ]


def test_audit_annotations() -> None:
    pol = compile_policy(
        policy(
            validations=[{"expression": "true"}],
            auditAnnotations=[
                {
                    "key": "replicas",
                    "valueExpression": "'replicas: ' + string(object.spec.replicas)",
                },
                {"key": "none", "valueExpression": "null"},
                {"key": "blank", "valueExpression": "'  '"},
            ],
        )
    )
    result = admit([pol], [binding(), binding("b2")], req(deploy(4)))
    assert result.allowed
    assert result.audit_annotations == {"p/replicas": "replicas: 4"}


def test_audit_annotation_error_denies_under_fail() -> None:
    spec = {"auditAnnotations": [{"key": "k", "valueExpression": "object.spec.nope"}]}
    result = admit(
        [compile_policy(policy(validations=[{"expression": "true"}], **spec))],
        [binding()],
        req(deploy()),
    )
    assert result.error is not None
    assert (
        result.error.message
        == PREFIX + "expression 'object.spec.nope' resulted in error: no such key: nope"
    )
    ignored = policy(validations=[{"expression": "true"}], failurePolicy="Ignore", **spec)
    assert admit([compile_policy(ignored)], [binding()], req(deploy())).allowed


def test_authorizer_callable() -> None:
    seen: list[Any] = []

    def authorizer(attrs: Any) -> tuple[str, str]:
        seen.append(attrs)
        return ("Allow", "") if "admins" in attrs.groups else ("Deny", "not an admin")

    pol = compile_policy(
        policy(
            validations=[
                {
                    "expression": "authorizer.requestResource.check('delete').allowed()",
                    "messageExpression": "'denied'",
                }
            ]
        )
    )
    ok = admit(
        [pol],
        [binding()],
        req(deploy(), user=UserInfo("a", groups=("admins",))),
        authorizer=authorizer,
    )
    assert ok.allowed
    assert (
        seen[0].resource == "deployments"
        and seen[0].api_group == "apps"
        and seen[0].verb == "delete"
    )
    no = admit([pol], [binding()], req(deploy(), user=UserInfo("b")), authorizer=authorizer)
    assert no.error is not None and no.error.message == PREFIX + "denied"


def test_equivalent_match_policy() -> None:
    pol = policy(
        validations=[{"expression": "request.resource.version == 'v1' && false", "message": "eq"}],
        matchConstraints={
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["*"],
                    "resources": ["deployments"],
                }
            ]
        },
    )
    beta = dict(deploy(), apiVersion="apps/v1beta2")
    r = Request.for_object("CREATE", beta)
    r = Request(
        **{
            **r.__dict__,
            "equivalents": ((("apps", "v1", "deployments"), ("apps", "v1", "Deployment")),),
        }
    )
    assert admit([compile_policy(pol)], [binding()], r).error is not None
    exact = dict(
        pol,
        spec=dict(
            pol["spec"], matchConstraints=dict(pol["spec"]["matchConstraints"], matchPolicy="Exact")
        ),
    )
    assert admit([compile_policy(exact)], [binding()], r).allowed


def test_variables_evaluated_once_and_only_when_read() -> None:
    calls: list[str] = []

    def authorizer(attrs: Any) -> tuple[str, str]:
        calls.append(attrs.verb)
        return ("Allow", "")

    pol = compile_policy(
        policy(
            validations=[
                {"expression": "variables.can"},
                {"expression": "variables.can || true"},
            ],
            variables=[
                {"name": "can", "expression": "authorizer.requestResource.check('get').allowed()"},
                {
                    "name": "unused",
                    "expression": "authorizer.requestResource.check('list').allowed()",
                },
            ],
        )
    )
    assert admit([pol], [binding()], req(deploy()), authorizer=authorizer).allowed
    assert calls == ["get"]


def test_namespace_request_has_no_namespace_object() -> None:
    pol = policy(
        validations=[{"expression": "namespaceObject == null", "message": "n"}],
        rules=[
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["*"],
                "resources": ["namespaces"],
            }
        ],
    )
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    r = Request.for_object("CREATE", ns, namespace_object=ns)
    assert r.namespace == "team"
    assert admit([compile_policy(pol)], [binding()], r).allowed
