"""The kinds' defaults and validation over HTTP, as the embedded server applies them
through its REST layer: the 422 ``Status`` kube-apiserver answers (message
``<Kind>.<group> "<name>" is invalid: ...``, one cause per field error), on create,
update and ``/status``, and a created object carrying its defaults."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
SERVICES = "/api/v1/namespaces/default/services"
MISMATCH = "`selector` does not match template `labels`"


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


def deployment(name: str, template_labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": template_labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
            **spec,
        },
    }


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> Any:
    """The Status body kube-apiserver answers for ``causes`` (reason, field, body)."""
    messages = [f"{field}: {body}" for _, field, body in causes]
    joined = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{qualified} "{name}" is invalid: {joined}',
        "reason": "Invalid",
        "code": 422,
        "details": {
            "name": name,
            **({"group": group} if group else {}),
            "kind": kind,
            "causes": [
                {"reason": reason, "message": body, "field": field}
                for reason, field, body in causes
            ],
        },
    }


async def test_a_deployment_whose_selector_misses_its_template(api: Api) -> None:
    status, body = await api.post(DEPLOYMENTS, deployment("x", {"app": "api"}))
    assert status == 422
    assert body == invalid(
        "Deployment",
        "apps",
        "x",
        [
            (
                "FieldValueInvalid",
                "spec.template.metadata.labels",
                f'Invalid value: {{"app":"api"}}: {MISMATCH}',
            )
        ],
    )


async def test_several_errors_are_one_aggregate_message(api: Api) -> None:
    body = deployment("x", {"app": "web"}, replicas=-2)
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    status, answer = await api.post(DEPLOYMENTS, body)
    assert status == 422
    assert answer == invalid(
        "Deployment",
        "apps",
        "x",
        [
            (
                "FieldValueInvalid",
                "spec.replicas",
                "Invalid value: -2: must be greater than or equal to 0",
            ),
            (
                "FieldValueNotSupported",
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
            ),
        ],
    )


async def test_a_created_deployment_carries_its_defaults(api: Api) -> None:
    status, created = await api.post(DEPLOYMENTS, deployment("web", {"app": "web"}))
    assert status == 201, created
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


async def test_a_deployments_selector_is_immutable(api: Api) -> None:
    status, created = await api.post(DEPLOYMENTS, deployment("web", {"app": "web", "v": "1"}))
    assert status == 201, created
    created["spec"]["selector"] = {"matchLabels": {"app": "web", "v": "1"}}
    status, body = await api.put(f"{DEPLOYMENTS}/web", created)
    assert status == 422
    assert body == invalid(
        "Deployment",
        "apps",
        "web",
        [
            (
                "FieldValueInvalid",
                "spec.selector",
                'Invalid value: {"matchLabels":{"app":"web","v":"1"}}: field is immutable',
            )
        ],
    )


async def test_a_status_write_with_inconsistent_counts(api: Api) -> None:
    status, created = await api.post(DEPLOYMENTS, deployment("web", {"app": "web"}))
    assert status == 201, created
    created["status"] = {"replicas": 2, "updatedReplicas": 3}
    status, body = await api.put(f"{DEPLOYMENTS}/web/status", created)
    assert status == 422
    assert body["message"] == (
        'Deployment.apps "web" is invalid: '
        "status.updatedReplicas: Invalid value: 3: cannot be greater than status.replicas"
    )


async def test_a_job_that_would_restart_its_pods(api: Api) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi"},
        "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl:5.34.0"}]}}},
    }
    status, body = await api.post(JOBS, job)
    assert status == 422
    assert body == invalid(
        "Job",
        "batch",
        "pi",
        [
            (
                "FieldValueRequired",
                "spec.template.spec.restartPolicy",
                'Required value: valid values: "OnFailure", "Never"',
            )
        ],
    )


async def test_a_service_with_an_unknown_protocol(api: Api) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "HTTP"}]},
    }
    status, body = await api.post(SERVICES, svc)
    assert status == 422
    assert body == invalid(
        "Service",
        "",
        "web",
        [
            (
                "FieldValueNotSupported",
                "spec.ports[0].protocol",
                'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
            )
        ],
    )
