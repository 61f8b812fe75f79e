"""Typed decoding of built-in bodies, unsupported subresources and resources kubewerk
does not serve, over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


def deployment(**spec: Any) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
            **spec,
        },
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"replicas": "3"},
            "json: cannot unmarshal string into Go struct field "
            "DeploymentSpec.spec.replicas of type int32",
        ),
        (
            {"replicas": 1.5},
            "json: cannot unmarshal number 1.5 into Go struct field "
            "DeploymentSpec.spec.replicas of type int32",
        ),
        (
            {"paused": "yes"},
            "json: cannot unmarshal string into Go struct field "
            "DeploymentSpec.spec.paused of type bool",
        ),
        (
            {"template": {"spec": {"containers": "nginx"}}},
            "json: cannot unmarshal string into Go struct field "
            "PodSpec.spec.template.spec.containers of type []v1.Container",
        ),
        (
            {
                "template": {
                    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}
                }
            },
            "json: cannot unmarshal string into Go struct field "
            "ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
        ),
        (
            {"selector": {"matchLabels": {"app": 1}}},
            "json: cannot unmarshal number into Go struct field "
            "LabelSelector.spec.selector.matchLabels of type string",
        ),
    ],
)
async def test_wrong_types_are_400_with_go_messages(
    api: Api, body: dict[str, Any], message: str
) -> None:
    status, out = await api.post(DEPLOYMENTS, deployment(**body))
    assert status == 400, out
    assert out["reason"] == "BadRequest"
    assert out["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: ' + message
    )


async def test_quantities_and_int_or_strings_take_numbers_and_strings(api: Api) -> None:
    body = deployment(strategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}})
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": 1, "memory": "1Gi"}}
    status, out = await api.post(DEPLOYMENTS, body)
    assert status == 201, out
    assert out["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": "25%"}


async def test_unknown_fields_follow_field_validation(api: Api) -> None:
    body = deployment(bogus=1)
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    status, out = await api.post(DEPLOYMENTS + "?fieldValidation=Strict", body)
    assert status == 400
    assert out["message"] == (
        "strict decoding error: "
        'unknown field "spec.template.spec.containers[0].imagePullPolicyy", '
        'unknown field "spec.bogus"'
    )
    status, out = await api.post(DEPLOYMENTS, body)
    assert status == 201
    assert "bogus" not in out["spec"]
    assert "imagePullPolicyy" not in out["spec"]["template"]["spec"]["containers"][0]
    status, _ = await api.delete(DEPLOYMENTS + "/web")
    status, out = await api.request("POST", DEPLOYMENTS + "?fieldValidation=Warn", body, headers={})
    assert status == 201


async def test_unknown_fields_are_warned_about(aserver: EmbeddedServer) -> None:
    import aiohttp
    import orjson

    body = deployment(bogus=1)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            aserver.url + DEPLOYMENTS,
            data=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
        ) as resp,
    ):
        assert resp.status == 201
        warnings = resp.headers.getall("Warning", [])
    assert any(
        'unknown field \\"spec.bogus\\"' in w or 'unknown field "spec.bogus"' in w for w in warnings
    ), warnings


async def test_unsupported_subresources_say_so(api: Api) -> None:
    status, _ = await api.post(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    assert status == 201
    for sub in ("log", "exec", "attach", "portforward", "proxy"):
        status, out = await api.get(f"{PODS}/p/{sub}")
        assert status == 405, (sub, out)
        assert out["reason"] == "MethodNotAllowed"
        assert out["message"].startswith(f"pods/{sub} is not supported by kubewerk: ")
    status, out = await api.get(f"{PODS}/p/nosuchthing")
    assert status == 404


async def test_resources_not_served_are_named(api: Api) -> None:
    for path, group, resource in (
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            "rbac.authorization.k8s.io",
            "clusterroles",
        ),
        ("/api/v1/namespaces/default/bindings", "", "bindings"),
        ("/apis/apps/v1/namespaces/default/widgets", "apps", "widgets"),
    ):
        status, out = await api.get(path)
        assert status == 404 and out["reason"] == "NotFound", out
        assert out["details"]["kind"] == resource
        assert out["details"].get("group", "") == group
        assert "is not served by kubewerk" in out["details"]["causes"][0]["message"]
    # a subresource of the served Namespace type is not mistaken for a resource
    status, out = await api.get("/api/v1/namespaces/default/status")
    assert status == 200 and out["kind"] == "Namespace"


def test_string_maps_are_checked_per_kind() -> None:
    """Only the fields a kind's schema declares ``map[string]string`` must hold strings:
    a ``data`` of another shape in another kind is that kind's business."""
    from kubewerk.apiserver.admission import Admission, AdmissionRequest
    from kubewerk.apiserver.kinds import configmaps
    from kubewerk.apiserver.registry import ServedResource
    from kubewerk.core.errors import ApiError

    admission = Admission()
    cm = configmaps.resource_type()
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": 1}}
    with pytest.raises(ApiError, match="cannot unmarshal number into Go struct field"):
        admission.prune_builtin(AdmissionRequest("CREATE", cm, "v1", bad, None, "Ignore"))
    raw = ServedResource(
        group="example.com",
        resource="revisions",
        kind="Revision",
        list_kind="RevisionList",
        singular="revision",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        schemas={"v1": {"type": "object", "properties": {"data": {"type": "object"}}}},
    )
    obj: dict[str, Any] = {"data": {"spec": {"x": 1}}}
    admission.prune_builtin(AdmissionRequest("CREATE", raw, "v1", obj, None, "Ignore"))
    assert obj["data"] == {"spec": {"x": 1}}
