"""The audit Policy evaluated as kube-apiserver's policy evaluator does, and validated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.audit.auditor import trace_id
from kubewerk.apiserver.audit.policy import AuditPolicyError, load_policy, parse_policy
from kubewerk.apiserver.audit.specpatch import spec_patch
from kubewerk.apiserver.auth.types import Attributes, UserInfo
from kubewerk.core.patch import json_patch

ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))
BOB = UserInfo("bob", groups=("ops",))


def doc(*rules: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **top}


def res(verb: str, resource: str, *, user: UserInfo = ALICE, **kw: Any) -> Attributes:
    return Attributes(user, verb, resource=resource, **kw)


def url(verb: str, path: str, user: UserInfo = ALICE) -> Attributes:
    return Attributes(user, verb, path=path, resource_request=False)


POLICY = parse_policy(
    doc(
        {"level": "None", "users": ["system:kube-proxy"]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/version"]},
        {"level": "RequestResponse", "userGroups": ["ops"], "verbs": ["delete"]},
        {"level": "Metadata", "resources": [{"group": "", "resources": ["secrets", "configmaps"]}]},
        {
            "level": "Request",
            "resources": [{"group": "", "resources": ["pods/log", "pods/status"]}],
        },
        {"level": "RequestResponse", "resources": [{"group": "apps", "resources": ["*/scale"]}]},
        {
            "level": "Request",
            "resources": [
                {"group": "", "resources": ["services"], "resourceNames": ["kubernetes"]}
            ],
        },
        {"level": "Metadata", "namespaces": ["kube-system", ""], "omitStages": ["RequestReceived"]},
        {"level": "Request", "resources": [{"group": "example.com"}]},
        {"level": "Metadata", "nonResourceURLs": ["/metrics"]},
        omitStages=["ResponseStarted"],
        omitManagedFields=True,
    )
)


@pytest.mark.parametrize(
    ("attrs", "level"),
    [
        (res("get", "pods", user=UserInfo("system:kube-proxy")), "None"),
        (url("get", "/healthz/etcd"), "None"),
        (url("get", "/version"), "None"),
        (url("get", "/versions"), "None"),  # no rule matches
        (url("get", "/metrics"), "Metadata"),
        (res("delete", "pods", user=BOB, namespace="a"), "RequestResponse"),
        (res("delete", "pods", namespace="a"), "None"),
        (res("get", "secrets", namespace="a", name="s"), "Metadata"),
        (res("list", "configmaps", namespace="a"), "Metadata"),
        (res("get", "secrets", namespace="a", api_group="other"), "None"),
        (res("get", "pods", subresource="log", namespace="a"), "Request"),
        (res("get", "pods", namespace="a"), "None"),  # "pods/log" does not name pods
        (res("update", "deployments", api_group="apps", subresource="scale"), "RequestResponse"),
        (res("update", "deployments", api_group="apps", namespace="a"), "None"),
        (res("get", "services", name="kubernetes", namespace="default"), "Request"),
        (res("get", "services", name="other", namespace="default"), "None"),
        (res("list", "pods", namespace="kube-system"), "Metadata"),
        (res("list", "nodes"), "Metadata"),  # cluster-scoped: namespace ""
        (res("create", "widgets", api_group="example.com", namespace="a"), "Request"),
    ],
)
def test_first_matching_rule_decides(attrs: Attributes, level: str) -> None:
    assert POLICY.evaluate(attrs).level == level


def test_stages_and_managed_fields() -> None:
    d = POLICY.evaluate(res("list", "pods", namespace="kube-system"))
    assert d.omit_stages == {"ResponseStarted", "RequestReceived"}
    assert d.omit_managed_fields is True
    p = parse_policy(doc({"level": "Request", "omitManagedFields": False}, omitManagedFields=True))
    assert p.evaluate(res("get", "pods")).omit_managed_fields is False


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"verbs": ["get"]}], "rules[0].level: Required value"),
        ([{"level": "Everything"}], 'rules[0].level: Unsupported value: "Everything"'),
        (
            [{"level": "Metadata", "omitStages": ["Sometime"]}],
            'rules[0].omitStages[0]: Unsupported value: "Sometime"',
        ),
        (
            [{"level": "Metadata", "nonResourceURLs": ["/x"], "namespaces": ["a"]}],
            "rules cannot apply to both regular resources and non-resource URLs",
        ),
        ([{"level": "Metadata", "nonResourceURLs": ["/a*/b"]}], "* only allowed at the end"),
        (
            [{"level": "Metadata", "resources": [{"resources": ["*"], "resourceNames": ["x"]}]}],
            "using resource names with wildcard resources is not allowed",
        ),
        ([], "rules: Required value"),
    ],
)
def test_invalid_policies(rules: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(AuditPolicyError) as err:
        parse_policy(doc(*rules), source="policy.yaml")
    assert message in str(err.value) and "policy.yaml" in str(err.value)


def test_policy_file(tmp_path: Path) -> None:
    f = tmp_path / "policy.yaml"
    f.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    assert load_policy(f).evaluate(url("get", "/anything")).level == "Metadata"
    with pytest.raises(AuditPolicyError, match="cannot read audit policy file"):
        load_policy(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, {"spec": {"a": 1}}),
        ({"spec": {"a": 1}}, None),
        ({"spec": {"a": 1, "b": [1, 2, 3]}}, {"spec": {"a": 1.0, "b": [1, 5]}}),
        ({"spec": {"b": [1]}}, {"spec": {"b": [1, {"x": True}, 3], "c/d~e": None}}),
        ({"spec": {"n": {"m": {"o": 1}}}}, {"spec": {"n": {"m": {"o": True, "p": []}}}}),
        ({"metadata": {}}, {"spec": 1}),
        ({"spec": [1, [2, [3]]]}, {"spec": [1, [2, [4, 5]]]}),
    ],
)
def test_spec_patch_applies(old: Any, new: Any) -> None:
    ops = spec_patch(old, new)
    start = {"spec": old["spec"]} if old and "spec" in old else {}
    end = {"spec": new["spec"]} if new and "spec" in new else {}
    result = json_patch(start, ops)
    assert result == end and type(result.get("spec")) is type(end.get("spec"))
    spec = end.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("a"), float):
        assert type(result["spec"]["a"]) is float  # 1 -> 1.0 is a change


def test_trace_id() -> None:
    assert trace_id("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == (
        "4bf92f3577b34da6a3ce929d0e0e4736"
    )
    assert trace_id("00-00000000000000000000000000000000-00f067aa0ba902b7-01") == ""
    assert trace_id("garbage") == ""
