"""``immutable: true`` ConfigMaps and Secrets, and a Secret's ``type``, as kube-apiserver's
ValidateConfigMapUpdate / ValidateSecretUpdate hold them (pkg/apis/core/validation)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call

CM = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
JSON_CT = {"content-type": "application/json"}
MERGE_CT = {"content-type": "application/merge-patch+json"}
FORBIDDEN = "Forbidden: field is immutable when `immutable` is set"


@pytest.fixture
def app() -> ApiServer:
    return ApiServer(open_store("memory"))


async def call(app: ApiServer, method: str, path: str, body: Any, ctype: dict[str, str]) -> Any:
    status, _, payload = await asgi_call(app, method, path, "", ctype, orjson.dumps(body))
    return status, orjson.loads(payload)


async def test_an_immutable_configmap_keeps_its_data_and_flag(app: ApiServer) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    cm |= {"data": {"a": "1"}, "immutable": True}
    assert (await call(app, "POST", CM, cm, JSON_CT))[0] == 201
    status, body = await call(app, "PATCH", CM + "/c", {"data": {"a": "2"}}, MERGE_CT)
    assert status == 422
    assert body["message"] == f'ConfigMap "c" is invalid: data: {FORBIDDEN}'
    status, body = await call(
        app, "PATCH", CM + "/c", {"immutable": False, "binaryData": {"b": "eA=="}}, MERGE_CT
    )
    assert status == 422
    assert body["message"] == (
        f'ConfigMap "c" is invalid: [immutable: {FORBIDDEN}, binaryData: {FORBIDDEN}]'
    )
    # labels may still change
    status, body = await call(
        app, "PATCH", CM + "/c", {"metadata": {"labels": {"x": "y"}}}, MERGE_CT
    )
    assert status == 200 and body["data"] == {"a": "1"}


async def test_a_mutable_configmap_may_become_immutable(app: ApiServer) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}, "data": {"a": "1"}}
    assert (await call(app, "POST", CM, cm, JSON_CT))[0] == 201
    status, body = await call(
        app, "PATCH", CM + "/m", {"data": {"a": "2"}, "immutable": True}, MERGE_CT
    )
    assert status == 200 and body["immutable"] is True


async def test_an_immutable_secret_and_a_secrets_type(app: ApiServer) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    secret |= {"stringData": {"k": "v"}, "immutable": True}
    assert (await call(app, "POST", SECRETS, secret, JSON_CT))[0] == 201
    status, body = await call(app, "PATCH", SECRETS + "/s", {"stringData": {"k": "w"}}, MERGE_CT)
    assert status == 422
    assert body["message"] == f'Secret "s" is invalid: data: {FORBIDDEN}'
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "data": {}}
    assert (await call(app, "POST", SECRETS, plain, JSON_CT))[0] == 201
    status, body = await call(app, "PATCH", SECRETS + "/t", {"type": "kubernetes.io/tls"}, MERGE_CT)
    assert status == 422
    assert body["message"] == (  # ValidateSecretUpdate runs ValidateSecret's type rules too
        'Secret "t" is invalid: [type: Invalid value: "kubernetes.io/tls": field is immutable, '
        "data[tls.crt]: Required value, data[tls.key]: Required value]"
    )
    # a PUT without type is defaulted to Opaque again: no change
    got = (await call(app, "GET", SECRETS + "/t", None, JSON_CT))[1]
    del got["type"]
    got["data"] = {"n": "eA=="}
    status, body = await call(app, "PUT", SECRETS + "/t", got, JSON_CT)
    assert status == 200 and body["type"] == "Opaque"
