"""What the ASGI app wires between the layers, called in-process: the admission chain's
counts on ``/metrics``, Warning headers sent with an error response, the User-Agent as
the manager of writes without ``fieldManager``, and a storage failure answered as kube's
500 without a traceback."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import MemoryStore
from kubewerk.apiserver.storage.encryption import UndecryptableValue
from kubewerk.core.errors import ApiError

AR = "/apis/admissionregistration.k8s.io/v1"


async def call(
    app: ApiServer,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, list[str]], Any]:
    """One request through the ASGI app: (status, headers by lowercased name, body)."""
    raw = orjson.dumps(body) if body is not None else b""
    path, _, query = path.partition("?")
    hdrs = {"content-type": "application/json", "host": "127.0.0.1", **(headers or {})}
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in hdrs.items()],
        "server": ("127.0.0.1", 6443),
    }
    sent: list[dict[str, Any]] = []
    done = False

    async def receive() -> dict[str, Any]:
        nonlocal done
        if done:
            return {"type": "http.disconnect"}
        done = True
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    out: dict[str, list[str]] = {}
    for k, v in start["headers"]:
        out.setdefault(k.decode().lower(), []).append(v.decode())
    payload = b"".join(m.get("body", b"") for m in sent[1:])
    if out.get("content-type", [""])[0].startswith("application/json") and payload:
        return start["status"], out, orjson.loads(payload)
    return start["status"], out, payload.decode()


@pytest.fixture
async def app() -> Any:
    server = ApiServer(MemoryStore())
    try:
        yield server
    finally:
        await server.stop()


POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "no-big"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["configmaps"],
                }
            ]
        },
        "validations": [{"expression": "!has(object.data) || !('big' in object.data)"}],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "no-big-binding"},
    "spec": {"policyName": "no-big", "validationActions": ["Deny"]},
}


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_admission_counts_reach_metrics(app: ApiServer) -> None:
    assert app.chain.metrics is app.metrics.admission
    for path, obj in (
        (f"{AR}/validatingadmissionpolicies", POLICY),
        (f"{AR}/validatingadmissionpolicybindings", BINDING),
    ):
        status, _, body = await call(app, "POST", path, obj)
        assert status == 201, body
    status, _, body = await call(
        app, "POST", "/api/v1/namespaces/default/configmaps", configmap("x", big="1")
    )
    assert status == 422, body
    status, _, rendered = await call(app, "GET", "/metrics")
    assert status == 200
    line = (
        'apiserver_validating_admission_policy_check_total{enforcement_action="deny",'
        'error_type="invalid_error",policy="no-big",policy_binding="no-big-binding"} 1.0'
    )
    assert line in rendered


async def test_warnings_carried_by_an_error_are_sent_with_it(
    app: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def denied(*args: Any, **kwargs: Any) -> Any:
        err = ApiError(403, "Forbidden", "denied")
        err.warnings = ["first", "second"]  # type: ignore[attr-defined]
        raise err

    monkeypatch.setattr(app.chain, "active", lambda target: True)
    monkeypatch.setattr(app.chain, "create", denied)
    status, headers, body = await call(
        app, "POST", "/api/v1/namespaces/default/configmaps", configmap("w")
    )
    assert (status, body["message"]) == (403, "denied")
    assert headers["warning"] == ['299 - "first"', '299 - "second"']


async def test_a_deprecation_warning_goes_with_an_error(app: ApiServer) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "olds.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "olds", "singular": "old", "kind": "Old", "listKind": "OldList"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "deprecated": True,
                    "deprecationWarning": "example.com/v1 Old is going away",
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    status, _, body = await call(
        app, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
    )
    assert status == 201, body
    path = "/apis/example.com/v1/namespaces/default/olds"
    for _ in range(200):
        status, headers, body = await call(app, "GET", f"{path}/missing")
        if body.get("message") == 'olds.example.com "missing" not found':
            break
        await asyncio.sleep(0.01)
    assert status == 404, body
    assert headers["warning"] == ['299 - "example.com/v1 Old is going away"']
    # and with a success as before
    status, headers, _ = await call(app, "GET", path)
    assert status == 200
    assert headers["warning"] == ['299 - "example.com/v1 Old is going away"']


async def test_writes_without_field_manager_are_managed_by_the_user_agent(
    app: ApiServer,
) -> None:
    ua = "kubectl/v1.32.4 (linux/amd64) kubernetes/abcdef"
    status, _, body = await call(
        app,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        configmap("ua", a="1"),
        {"User-Agent": ua},
    )
    assert status == 201, body
    assert [e["manager"] for e in body["metadata"]["managedFields"]] == ["kubectl"]
    status, _, body = await call(
        app,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/ua",
        {"data": {"b": "2"}},
        {"User-Agent": "my-operator/1.0", "Content-Type": "application/merge-patch+json"},
    )
    assert status == 200, body
    managers = sorted(e["manager"] for e in body["metadata"]["managedFields"])
    assert managers == ["kubectl", "my-operator"]
    # an explicit fieldManager wins over the User-Agent
    status, _, body = await call(
        app,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldManager=mine",
        configmap("fm"),
        {"User-Agent": ua},
    )
    assert [e["manager"] for e in body["metadata"]["managedFields"]] == ["mine"]


async def test_an_undecryptable_value_is_a_500_without_traceback(
    app: ApiServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    status, _, _ = await call(
        app, "POST", "/api/v1/namespaces/default/configmaps", configmap("sealed")
    )
    assert status == 201
    key = "/core/configmaps/default/sealed"

    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise UndecryptableValue(key, "no matching prefix found")

    monkeypatch.setattr(app.store, "get", unreadable)
    app.reads.enabled = False
    with caplog.at_level(logging.INFO, logger="kubewerk.apiserver"):
        status, _, body = await call(app, "GET", "/api/v1/namespaces/default/configmaps/sealed")
    message = f'unable to transform key "{key}": no matching prefix found'
    assert (status, body["reason"], body["message"]) == (
        500,
        "InternalError",
        f"Internal error occurred: {message}",
    )
    assert body["details"] == {"causes": [{"message": message}]}
    assert all(r.exc_info is None for r in caplog.records)
    assert any(message in r.getMessage() for r in caplog.records)
