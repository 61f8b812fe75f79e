"""ServiceAccount token Secrets over HTTPS, as kube-controller-manager's tokens controller
fills and removes them (pkg/controller/serviceaccount/tokens_controller.go) and as
kube-apiserver's legacy-token validator accepts their tokens
(pkg/serviceaccount/legacy.go)."""

from __future__ import annotations

import base64
import http.client
import ssl
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer

API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ADMIN = {"Authorization": "Bearer adm"}
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
TR = "/apis/authentication.k8s.io/v1/tokenreviews"
TOKEN_TYPE = "kubernetes.io/service-account-token"
DEADLINE = 10.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """A TLS server (so it has a CA to publish) with an admin static token."""
    tmp = tmp_path_factory.mktemp("satokens")
    tokens = tmp / "tokens.csv"
    tokens.write_text('adm,admin,uid-adm,"system:masters"\n')
    srv = EmbeddedServer(tls=True, token_auth_file=tokens, pki_dir=tmp / "pki")
    srv.start_in_thread()
    try:
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
    host, port = url.hostname or "127.0.0.1", url.port
    if server.tls:
        assert server.pki is not None
        context = ssl.create_default_context(cadata=server.pki.ca_pem.decode())
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=10, context=context
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request(
            method,
            path,
            body=orjson.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json", **(ADMIN if headers is None else headers)},
        )
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, orjson.loads(raw) if raw else None
    finally:
        conn.close()


def poll(what: str, check: Callable[[], Any]) -> Any:
    """``check()``'s first truthy answer, within ``DEADLINE`` seconds."""
    end = time.monotonic() + DEADLINE
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def namespace(server: EmbeddedServer) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    status, body = call(server, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    return name


def create(server: EmbeddedServer, ns: str, resource: str, body: dict[str, Any]) -> Any:
    status, got = call(server, "POST", f"/api/v1/namespaces/{ns}/{resource}", body)
    assert status == 201, got
    return got


def token_secret(name: str, account: str, **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "annotations": {"kubernetes.io/service-account.name": account, **annotations},
        },
        "type": TOKEN_TYPE,
    }


def patch(server: EmbeddedServer, ns: str, resource: str, name: str, body: Any) -> Any:
    status, got = call(
        server,
        "PATCH",
        f"/api/v1/namespaces/{ns}/{resource}/{name}",
        body,
        headers={**ADMIN, "Content-Type": "application/merge-patch+json"},
    )
    assert status == 200, got
    return got


def get(server: EmbeddedServer, ns: str, resource: str, name: str) -> Any:
    status, body = call(server, "GET", f"/api/v1/namespaces/{ns}/{resource}/{name}")
    return body if status == 200 else None


def filled(server: EmbeddedServer, ns: str, name: str) -> Any:
    """The Secret once the controller has put a token in it."""

    def check() -> Any:
        secret = get(server, ns, "secrets", name)
        return secret if secret and (secret.get("data") or {}).get("token") else None

    return poll(f"token in {ns}/{name}", check)


def gone(server: EmbeddedServer, ns: str, resource: str, name: str) -> None:
    poll(f"{resource} {ns}/{name} deleted", lambda: get(server, ns, resource, name) is None)


def decoded(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def whoami(server: EmbeddedServer, token: str) -> tuple[int, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    return call(server, "POST", SSR, body, headers={"Authorization": f"Bearer {token}"})


def review(server: EmbeddedServer, token: str, audiences: list[str] | None = None) -> Any:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
    status, got = call(server, "POST", TR, body)
    assert status == 201, got
    return got["status"]


def claims(token: str) -> Any:
    payload = token.split(".")[1]
    return orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_a_token_secret_is_filled_and_its_token_is_the_service_account(
    server: EmbeddedServer,
) -> None:
    ns = namespace(server)
    account = create(server, ns, "serviceaccounts", {"metadata": {"name": "robot"}})
    create(server, ns, "secrets", token_secret("robot-token", "robot"))
    secret = filled(server, ns, "robot-token")
    assert server.pki is not None
    assert decoded(secret, "ca.crt") == server.pki.ca_pem
    assert decoded(secret, "namespace") == ns.encode()
    uid = account["metadata"]["uid"]
    assert secret["metadata"]["annotations"] == {
        "kubernetes.io/service-account.name": "robot",
        "kubernetes.io/service-account.uid": uid,
    }
    token = decoded(secret, "token").decode()
    assert claims(token) == {  # kube's LegacyClaims: no aud, no exp, no iat
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": ns,
        "kubernetes.io/serviceaccount/secret.name": "robot-token",
        "kubernetes.io/serviceaccount/service-account.name": "robot",
        "kubernetes.io/serviceaccount/service-account.uid": uid,
        "sub": f"system:serviceaccount:{ns}:robot",
    }
    status, body = whoami(server, token)
    assert status == 201, body
    assert body["status"]["userInfo"] == {
        "username": f"system:serviceaccount:{ns}:robot",
        "uid": uid,
        "groups": [
            "system:serviceaccounts",
            f"system:serviceaccounts:{ns}",
            "system:authenticated",
        ],
    }
    # the use is recorded on the Secret, once a day (UTC)
    secret = get(server, ns, "secrets", "robot-token")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert secret["metadata"]["labels"] == {"kubernetes.io/legacy-token-last-used": today}
    assert whoami(server, token)[0] == 201
    again = get(server, ns, "secrets", "robot-token")
    assert again["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]
    # a legacy token stands for the API audiences, and only for them
    got = review(server, token)
    assert got["authenticated"] is True and got["audiences"] == [API_AUDIENCE]
    assert review(server, token, ["vault"]) == {
        "user": {},
        "error": f'token audiences ["{API_AUDIENCE}"] is invalid for the target audiences '
        '["vault"]',
    }


def test_a_token_lives_as_long_as_its_secret_holds_it(server: EmbeddedServer) -> None:
    ns = namespace(server)
    create(
        server,
        ns,
        "serviceaccounts",
        {"metadata": {"name": "robot"}, "secrets": [{"name": "tok"}, {"name": "other"}]},
    )
    create(server, ns, "secrets", token_secret("tok", "robot"))
    secret = filled(server, ns, "tok")
    token = decoded(secret, "token").decode()
    assert whoami(server, token)[0] == 201

    # marked invalid: refused with kube's message, accepted again once the label goes
    invalid = {"kubernetes.io/legacy-token-invalid-since": "2026-01-01"}
    patch(server, ns, "secrets", "tok", {"metadata": {"labels": invalid}})
    assert whoami(server, token)[0] == 401
    assert review(server, token)["error"] == (
        f"the token in secret {ns}/tok for service account {ns}/robot has been marked invalid. "
        "Use tokens from the TokenRequest API or manually created secret-based tokens, or "
        "remove the 'kubernetes.io/legacy-token-invalid-since' label from the secret to "
        "temporarily allow use of this token"
    )
    valid = {"kubernetes.io/legacy-token-invalid-since": None}
    patch(server, ns, "secrets", "tok", {"metadata": {"labels": valid}})
    assert whoami(server, token)[0] == 201

    # the Secret's token replaced: the old one no longer matches
    other = base64.b64encode(b"something-else").decode()
    patch(server, ns, "secrets", "tok", {"data": {"token": other}})
    assert whoami(server, token)[0] == 401
    assert review(server, token)["error"] == "Token does not match server's copy"

    # the Secret deleted: the token is dead and the ServiceAccount forgets the Secret
    status, _ = call(server, "DELETE", f"/api/v1/namespaces/{ns}/secrets/tok")
    assert status == 200
    assert whoami(server, token)[0] == 401
    assert review(server, token)["error"] == "Token has been invalidated"
    poll(
        "secret reference removed",
        lambda: get(server, ns, "serviceaccounts", "robot")["secrets"] == [{"name": "other"}],
    )


def test_deleting_the_service_account_deletes_its_token_secrets(server: EmbeddedServer) -> None:
    ns = namespace(server)
    create(server, ns, "serviceaccounts", {"metadata": {"name": "robot"}})
    create(server, ns, "serviceaccounts", {"metadata": {"name": "keeper"}})
    create(server, ns, "secrets", token_secret("a", "robot"))
    create(server, ns, "secrets", token_secret("b", "robot"))
    create(server, ns, "secrets", token_secret("k", "keeper"))
    create(server, ns, "secrets", {"metadata": {"name": "plain"}, "stringData": {"x": "y"}})
    token = decoded(filled(server, ns, "a"), "token").decode()
    filled(server, ns, "b")
    filled(server, ns, "k")
    status, _ = call(server, "DELETE", f"/api/v1/namespaces/{ns}/serviceaccounts/robot")
    assert status == 200
    gone(server, ns, "secrets", "a")
    gone(server, ns, "secrets", "b")
    assert get(server, ns, "secrets", "k") is not None
    assert get(server, ns, "secrets", "plain") is not None
    assert whoami(server, token)[0] == 401


def test_a_secret_naming_a_missing_or_replaced_service_account_is_deleted(
    server: EmbeddedServer,
) -> None:
    ns = namespace(server)
    create(server, ns, "secrets", token_secret("orphan", "ghost"))
    gone(server, ns, "secrets", "orphan")
    # the uid annotation names another ServiceAccount of that name
    create(server, ns, "serviceaccounts", {"metadata": {"name": "robot"}})
    stale = {"kubernetes.io/service-account.uid": "0000-not-robot"}
    create(server, ns, "secrets", token_secret("stale", "robot", **stale))
    gone(server, ns, "secrets", "stale")


def test_the_ca_is_put_back_and_a_server_without_tls_puts_none(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    ns = namespace(server)
    create(server, ns, "serviceaccounts", {"metadata": {"name": "robot"}})
    create(server, ns, "secrets", token_secret("tok", "robot"))
    secret = filled(server, ns, "tok")
    token = secret["data"]["token"]
    patch(server, ns, "secrets", "tok", {"data": {"ca.crt": base64.b64encode(b"x").decode()}})
    assert server.pki is not None
    poll(
        "ca.crt put back",
        lambda: decoded(get(server, ns, "secrets", "tok"), "ca.crt") == server.pki.ca_pem,  # type: ignore[union-attr]
    )
    assert get(server, ns, "secrets", "tok")["data"]["token"] == token  # not reissued

    tokens = tmp_path / "tokens.csv"
    tokens.write_text('adm,admin,uid-adm,"system:masters"\n')
    with EmbeddedServer(token_auth_file=tokens) as plain:
        create(plain, "default", "serviceaccounts", {"metadata": {"name": "robot"}})
        create(plain, "default", "secrets", token_secret("tok", "robot"))
        secret = filled(plain, "default", "tok")
        assert sorted(secret["data"]) == ["namespace", "token"]


def test_after_a_restart_tokens_still_work_and_orphaned_secrets_are_deleted(
    tmp_path: Path,
) -> None:
    from kubewerk.apiserver.storage import open_store

    tokens = tmp_path / "tokens.csv"
    tokens.write_text('adm,admin,uid-adm,"system:masters"\n')
    spec = f"sqlite:{tmp_path / 'db.sqlite'}"
    with EmbeddedServer(spec, token_auth_file=tokens) as first:
        create(first, "default", "serviceaccounts", {"metadata": {"name": "robot"}})
        create(first, "default", "secrets", token_secret("tok", "robot"))
        token = decoded(filled(first, "default", "tok"), "token").decode()
    with EmbeddedServer(spec, token_auth_file=tokens) as second:
        assert whoami(second, token)[0] == 201  # the signing key is kept beside the store
    # the ServiceAccount goes while no server runs: the next one deletes its Secret
    store = open_store(spec)
    try:
        store.delete("/core/serviceaccounts/default/robot")
    finally:
        store.close()
    with EmbeddedServer(spec, token_auth_file=tokens) as third:
        gone(third, "default", "secrets", "tok")
        assert whoami(third, token)[0] == 401


def forged(server: EmbeddedServer, claims: dict[str, Any]) -> str:
    """A JWT of ``claims`` signed with ``server``'s own key."""
    key = server.app.service_accounts.key

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    head = b64(orjson.dumps({"alg": "RS256", "kid": key.kid}))
    body = b64(orjson.dumps(claims))
    return f"{head}.{body}.{b64(key.sign(f'{head}.{body}'.encode()))}"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"sub": None}, "sub claim is missing"),
        ({"kubernetes.io/serviceaccount/namespace": ""}, "namespace claim is missing"),
        ({"kubernetes.io/serviceaccount/secret.name": None}, "secretName claim is missing"),
        (
            {"kubernetes.io/serviceaccount/service-account.name": ""},
            "serviceAccountName claim is missing",
        ),
        (
            {"kubernetes.io/serviceaccount/service-account.uid": None},
            "serviceAccountUID claim is missing",
        ),
        ({"sub": "system:serviceaccount:other:robot"}, "sub claim is invalid"),
    ],
)
def test_legacy_claims_are_checked_as_kube_does(
    server: EmbeddedServer, change: dict[str, Any], error: str
) -> None:
    claims = {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/secret.name": "tok",
        "kubernetes.io/serviceaccount/service-account.name": "robot",
        "kubernetes.io/serviceaccount/service-account.uid": "u",
        "sub": "system:serviceaccount:default:robot",
    }
    for key, value in change.items():
        if value is None:
            del claims[key]
        else:
            claims[key] = value
    assert review(server, forged(server, claims))["error"] == error


@pytest.mark.parametrize(
    ("times", "error"),
    [
        ({"exp": -61}, "service account token has expired"),
        ({"nbf": 61}, "service account token is not valid yet"),
        ({"iat": 61}, "service account token is issued in the future"),
    ],
)
def test_bound_token_times_are_refused_with_kubes_reasons(
    server: EmbeddedServer, times: dict[str, int], error: str
) -> None:
    now = int(time.time())
    claims = {
        "aud": [API_AUDIENCE],
        "exp": now + 600,
        "iat": now,
        "iss": API_AUDIENCE,  # the default issuer
        "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "x", "uid": "u"}},
        "nbf": now,
        "sub": "system:serviceaccount:default:x",
    }
    claims.update({k: now + v for k, v in times.items()})
    assert review(server, forged(server, claims))["error"] == error
    # within the 60 s leeway the times hold (the ServiceAccount is what is missing then)
    claims.update({k: now + v + (-60 if v > 0 else 60) for k, v in times.items()})
    assert review(server, forged(server, claims))["error"] == 'serviceaccounts "x" not found'
