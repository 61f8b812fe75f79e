"""``TokenReview`` (``authentication.k8s.io/v1``): the server says who a bearer token is,
as kube-apiserver's ``pkg/registry/authentication/tokenreview`` does (what kr8s's
``whoami`` and delegated authenticators such as kube-rbac-proxy ask)."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer

TR = "/apis/authentication.k8s.io/v1/tokenreviews"
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ADMIN = {"Authorization": "Bearer adm"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """A plain-HTTP server with static tokens (an admin in system:masters, and alice
    who may create nothing) and RBAC on, with ServiceAccount ``default/robot``."""
    tmp = tmp_path_factory.mktemp("tokenreview")
    tokens = tmp / "tokens.csv"
    tokens.write_text('adm,admin,uid-adm,"system:masters"\nt-alice,alice,uid-a,"dev"\n')
    srv = EmbeddedServer(token_auth_file=tokens, authorizer="RBAC").start_in_thread()
    try:
        status, _ = call(
            srv,
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            {"metadata": {"name": "robot"}},
        )
        assert status == 201
        yield srv
    finally:
        srv.stop_thread()


def call(
    server: EmbeddedServer,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    url = urlsplit(server.url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
    try:
        conn.request(
            method,
            path,
            body=orjson.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json", **(headers or ADMIN)},
        )
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, orjson.loads(raw) if raw else None
    finally:
        conn.close()


def review(server: EmbeddedServer, spec: dict[str, Any], **kw: Any) -> tuple[int, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
    return call(server, "POST", TR, body, **kw)


def sa_token(server: EmbeddedServer, *audiences: str) -> str:
    spec = {"audiences": list(audiences)} if audiences else {}
    status, body = call(
        server,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/robot/token",
        {"spec": spec},
    )
    assert status == 201, body
    token: str = body["status"]["token"]
    return token


def test_a_static_token_is_its_user_with_the_api_audiences(server: EmbeddedServer) -> None:
    status, body = review(server, {"token": "t-alice"})
    assert status == 201, body
    assert body["kind"] == "TokenReview" and body["apiVersion"] == "authentication.k8s.io/v1"
    assert body["spec"] == {"token": "t-alice"}
    assert body["status"] == {
        "authenticated": True,
        "user": {"username": "alice", "uid": "uid-a", "groups": ["dev", "system:authenticated"]},
        "audiences": [API_AUDIENCE],
    }


def test_a_service_account_token_is_its_service_account(server: EmbeddedServer) -> None:
    status, body = review(server, {"token": sa_token(server)})
    assert status == 201, body
    got = body["status"]
    assert got["authenticated"] is True and got["audiences"] == [API_AUDIENCE]
    user = got["user"]
    assert user["username"] == "system:serviceaccount:default:robot"
    assert user["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert user["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")


def test_spec_audiences_replace_the_api_audiences(server: EmbeddedServer) -> None:
    vault = sa_token(server, "vault", "other")
    status, body = review(server, {"token": vault, "audiences": ["vault"]})
    assert status == 201, body
    assert body["status"]["authenticated"] is True
    assert body["status"]["audiences"] == ["vault"]
    # the same token for the API's audiences: kube's ServiceAccount authenticator's error
    status, body = review(server, {"token": vault})
    assert status == 201, body
    assert body["status"] == {
        "user": {},
        "error": f'token audiences ["vault" "other"] is invalid for the target audiences '
        f'["{API_AUDIENCE}"]',
    }
    # a static token is audience-agnostic: accepted only for the API's own audiences
    status, body = review(server, {"token": "t-alice", "audiences": ["vault"]})
    assert status == 201, body
    assert body["status"] == {"user": {}, "error": "invalid bearer token"}
    status, body = review(server, {"token": "t-alice", "audiences": ["vault", API_AUDIENCE]})
    assert body["status"]["authenticated"] is True
    assert body["status"]["audiences"] == [API_AUDIENCE]


def test_an_unknown_token_is_not_authenticated(server: EmbeddedServer) -> None:
    status, body = review(server, {"token": "nope"})
    assert status == 201, body
    # authenticated: false is omitted, as kube's omitempty does; user is an empty struct
    assert body["status"] == {"user": {}, "error": "invalid bearer token"}


def test_refusals(server: EmbeddedServer) -> None:
    status, body = review(server, {})
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        "token is required for TokenReview in authentication",
    )
    # alice may not create tokenreviews (system:auth-delegator grants it)
    status, body = review(server, {"token": "adm"}, headers={"Authorization": "Bearer t-alice"})
    assert status == 403, body
    assert body["message"] == (
        'tokenreviews.authentication.k8s.io is forbidden: User "alice" cannot create '
        'resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope'
    )
    status, body = call(server, "GET", TR)
    assert status == 405, body
    status, body = call(
        server, "POST", TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "Pod"}
    )
    assert status == 400, body


def test_discovery_lists_tokenreviews_create_only(server: EmbeddedServer) -> None:
    status, body = call(server, "GET", "/apis/authentication.k8s.io/v1")
    assert status == 200
    found = {r["name"]: r for r in body["resources"]}
    assert found["tokenreviews"]["verbs"] == ["create"]
    assert found["tokenreviews"]["kind"] == "TokenReview"
    assert found["tokenreviews"]["namespaced"] is False


def test_without_authentication_the_review_comes_back_unanswered() -> None:
    srv = EmbeddedServer().start_in_thread()
    try:
        status, body = review(srv, {"token": "anything"}, headers={})
        assert status == 201, body
        assert body["spec"] == {"token": "anything"}
        assert "status" not in body or body["status"] == {}
    finally:
        srv.stop_thread()
