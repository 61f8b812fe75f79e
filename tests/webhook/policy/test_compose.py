# ruff: noqa: E501
"""Policies as data: composition semantics, compiled YAML validated by the engine, the
Secret reference allow-list policy."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.model import KubeModel, Resource, SecretRef, crd_for
from kubewerk.schema.admission_policy import (
    ParamStore,
    Request,
    admit,
    compile_policy,
    validate_binding,
    validate_policy,
)
from kubewerk.webhook.policy import (
    ConfigMapParams,
    Policy,
    PolicyDefinitionError,
    all_of,
    allowlist_configmap,
    any_of,
    chain,
    check,
    not_,
    policy_from_data,
    rule,
    secret_ref_denials,
    secret_ref_policy,
)


def deploy(spec: dict[str, Any], ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": spec,
    }


def run(p: Policy, obj: dict[str, Any], params: list[dict[str, Any]] | None = None) -> str | None:
    vap, binding = p.to_objects()
    assert validate_policy(vap) == []
    assert validate_binding(binding) == []
    result = admit(
        [compile_policy(vap)],
        [binding],
        Request.for_object("CREATE", obj),
        params=ParamStore(params or []),
    )
    if result.error is None:
        return None
    return result.error.message.split("denied request: ", 1)[1]


def pol(node: Any, **kw: Any) -> Policy:
    return Policy(name="p", match=[rule("apps", "v1", "deployments")], check=node, **kw)


def test_all_of_top_level_each_its_message() -> None:
    p = pol(
        all_of(check("has(object.spec.a)", "a missing"), check("has(object.spec.b)", "b missing"))
    )
    assert len(p.to_policy()["spec"]["validations"]) == 2
    assert run(p, deploy({"a": 1})) == "b missing"
    assert run(p, deploy({"b": 1})) == "a missing"
    assert run(p, deploy({"a": 1, "b": 1})) is None


def test_any_of_and_not() -> None:
    p = pol(any_of(check("object.spec.x == 1", "x is 1"), check("object.spec.y == 1", "y is 1")))
    assert run(p, deploy({"x": 2, "y": 2})) == "x is 1 or y is 1"
    assert run(p, deploy({"x": 2, "y": 1})) is None
    n = pol(not_(check("object.spec.x == 1"), "x must not be 1"))
    assert run(n, deploy({"x": 1})) == "x must not be 1"
    assert run(n, deploy({"x": 2})) is None


def test_chain_first_denial_wins_and_later_steps_do_not_run() -> None:
    p = pol(
        chain(
            check("has(object.spec.limits)", "spec.limits is required"),
            check("object.spec.limits.cpu != ''", "spec.limits.cpu must not be empty"),
        )
    )
    # without the guard, the second step would fail with "no such key: limits"
    assert run(p, deploy({})) == "spec.limits is required"
    assert run(p, deploy({"limits": {"cpu": ""}})) == "spec.limits.cpu must not be empty"
    assert run(p, deploy({"limits": {"cpu": "1"}})) is None


def test_nested_composites() -> None:
    p = pol(
        chain(
            any_of("object.spec.a == 1", "object.spec.b == 1", message="a or b"),
            not_("object.spec.c == 1", "no c"),
        )
    )
    assert run(p, deploy({"a": 2, "b": 2, "c": 1})) == "a or b"
    assert run(p, deploy({"a": 1, "c": 1})) == "no c"


def test_params_from_configmap() -> None:
    p = pol(
        check(
            "object.spec.replicas <= int(params.data.max)",
            message_expression="'at most ' + params.data.max",
        ),
        params=ConfigMapParams("limits", namespace="policy"),
    )
    cms = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "limits", "namespace": "policy"},
            "data": {"max": "2"},
        }
    ]
    assert run(p, deploy({"replicas": 3}), cms) == "at most 2"
    cms[0]["data"]["max"] = "5"  # a changed ConfigMap decides the next request
    assert run(p, deploy({"replicas": 3}), cms) is None


def test_yaml_form_equals_python_form() -> None:
    data = {
        "name": "p",
        "match": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
        "check": {
            "chain": [
                {"expression": "has(object.spec.a)", "message": "a missing"},
                {"not": {"expression": "object.spec.a == 0"}, "message": "a is 0"},
            ]
        },
    }
    py = pol(
        chain(check("has(object.spec.a)", "a missing"), not_(check("object.spec.a == 0"), "a is 0"))
    )
    assert policy_from_data(data).to_objects() == py.to_objects()


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"match": []}, "policy.name: required"),
        ({"name": "p", "match": [{"apiGroups": ["apps"]}]}, "policy 'p'.check: required"),
        (
            {"name": "p", "match": [{}], "check": {"all_of": "x"}},
            "policy 'p'.check.all_of: expected a list of checks",
        ),
        (
            {"name": "p", "match": [{}], "check": {"not": "x"}},
            "policy 'p'.check: not_ needs a message",
        ),
        (
            {"name": "p", "match": [{}], "check": {"expression": "a", "chain": []}},
            "policy 'p'.check: expected exactly one of",
        ),
    ],
)
def test_yaml_errors(data: dict[str, Any], error: str) -> None:
    with pytest.raises(PolicyDefinitionError) as exc:
        policy_from_data(data)
    assert str(exc.value).startswith(error)


def test_secret_ref_policy() -> None:
    p = secret_ref_policy(
        "secret-refs", [rule("example.com", "v1", "databases")], ["spec.passwordSecretRef.name"]
    )
    allowed = {
        "metadata": {
            "name": "app-db",
            "namespace": "team",
            "labels": {"kubewerk.io/secret-ref-allowed": "true"},
        }
    }
    unlabelled = {"metadata": {"name": "root", "namespace": "team"}}
    cm = allowlist_configmap("team", [allowed, unlabelled], listed=["legacy"])
    assert cm["data"] == {"allowedSecrets": "app-db,legacy"}

    def db(secret: str | None) -> dict[str, Any]:
        spec = {"passwordSecretRef": {"name": secret, "key": "pw"}} if secret else {}
        return {
            "apiVersion": "example.com/v1",
            "kind": "Database",
            "metadata": {"name": "db", "namespace": "team"},
            "spec": spec,
        }

    assert run(p, db("app-db"), [cm]) is None
    assert run(p, db("legacy"), [cm]) is None
    assert run(p, db(None), [cm]) is None
    assert run(p, db("root"), [cm]) == (
        'spec.passwordSecretRef.name: Secret "root" is not allowed: reference only Secrets labelled '
        "kubewerk.io/secret-ref-allowed=true or listed in ConfigMap secret-ref-allowlist"
    )
    secrets = {("team", "app-db"): allowed, ("team", "root"): unlabelled}
    assert (
        secret_ref_denials(
            db("app-db"), ["spec.passwordSecretRef.name"], lambda ns, n: secrets.get((ns, n))
        )
        == []
    )
    assert secret_ref_denials(
        db("gone"), ["spec.passwordSecretRef.name"], lambda ns, n: secrets.get((ns, n))
    ) == [
        'spec.passwordSecretRef.name: Secret "gone" is not allowed: reference only Secrets labelled '
        "kubewerk.io/secret-ref-allowed=true or listed in ConfigMap secret-ref-allowlist"
    ]


def test_secret_ref_model_marker_schema() -> None:
    class DbSpec(KubeModel):
        """Spec."""

        password_secret_ref: SecretRef

    class Db(Resource[DbSpec, None], group="example.com"):
        """A database."""

    schema = crd_for(Db)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    ref = schema["properties"]["spec"]["properties"]["passwordSecretRef"]
    assert ref["type"] == "object"
    assert set(ref["properties"]) == {"name", "key"}
    assert ref["properties"]["name"]["type"] == ref["properties"]["key"]["type"] == "string"
    assert ref["x-kubernetes-map-type"] == "atomic"


def test_secret_ref_is_what_plaintext_credential_recommends() -> None:
    from tests.govern.helpers import lint

    class PlainSpec(KubeModel):
        """Spec."""

        password: str

    class Plain(Resource[PlainSpec, None], group="example.com"):
        """Plain."""

    class RefSpec(KubeModel):
        """Spec."""

        password_secret_ref: SecretRef

    class Reffed(Resource[RefSpec, None], group="example.com"):
        """Reffed."""

    assert [f.rule for f in lint(crd_for(Plain), "plaintext-credential")] == [
        "plaintext-credential"
    ]
    assert lint(crd_for(Reffed), "plaintext-credential") == []
